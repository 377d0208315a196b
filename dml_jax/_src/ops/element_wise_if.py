"""DML_OPERATOR_ELEMENT_WISE_IF: out[c] = ATensor[c] if ConditionTensor[c] != 0 else BTensor[c].

The condition is UINT8 at every level; any nonzero byte selects ATensor. The four
tensors have the same sizes: DirectML broadcasts only through strides (a stride of
0 repeats a dimension), which `dml.execute` reads from bound buffers; the
functional API takes arrays of equal shapes.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import jax
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, registry, rules
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import ALL_DATA, UP_TO_32_BIT, DataType
from dml_jax._src.errors import Checker
from dml_jax._src.feature_level import (
  FeatureLevel,
  FeatureLevelLike,
  SupportTable,
  as_level,
  support,
)
from dml_jax._src.fields import FieldKind, dml_field
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

_UINT8 = (DataType.UINT8,)


def _table(dimension_counts, data_types):
  values = support(dimension_counts, data_types)
  return {
    "ConditionTensor": support(dimension_counts, _UINT8),
    "ATensor": values,
    "BTensor": values,
    "OutputTensor": values,
  }


_SUPPORT = SupportTable(
  "ELEMENT_WISE_IF",
  {
    FeatureLevel.FL_2_0: _table(4, (DataType.FLOAT16,)),
    FeatureLevel.FL_3_0: _table((1, 8), UP_TO_32_BIT),
    FeatureLevel.FL_5_0: _table((1, 8), ALL_DATA),
  },
)


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class ElementWiseIfDesc(OperatorDesc):
  """`DML_ELEMENT_WISE_IF_OPERATOR_DESC`.

  Attributes:
    condition_tensor: ConditionTensor (UINT8): nonzero selects ATensor.
    a_tensor: ATensor, read where the condition is nonzero.
    b_tensor: BTensor, read where it is zero; ATensor's data type.
    output_tensor: OutputTensor; None infers it (ATensor's data type, the common sizes).

  Examples:
    >>> desc = ElementWiseIfDesc(TensorDesc("UINT8", (2, 2)), TensorDesc("FLOAT32", (2, 2)),
    ...                          TensorDesc("FLOAT32", (2, 2)))
    >>> print(desc)
    DML_OPERATOR_ELEMENT_WISE_IF(ConditionTensor=UINT8[2,2], ATensor=FLOAT32[2,2], BTensor=FLOAT32[2,2]) -> FLOAT32[2,2]
  """

  OPERATOR = "ELEMENT_WISE_IF"
  SUPPORT = _SUPPORT
  FUNCTION = "element_wise_if"
  OUTPUT_DATA_TYPE_FROM = "ATensor"

  condition_tensor: TensorDesc = dml_field("ConditionTensor", FieldKind.TENSOR)
  a_tensor: TensorDesc = dml_field("ATensor", FieldKind.TENSOR)
  b_tensor: TensorDesc = dml_field("BTensor", FieldKind.TENSOR)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      condition_tensor: TensorDesc,
      a_tensor: TensorDesc,
      b_tensor: TensorDesc,
      output_tensor: TensorDesc | None = None,
    ) -> None: ...

  def infer_output(self) -> TensorDesc | None:
    return TensorDesc(self.a_tensor.data_type, self.a_tensor.sizes)

  def check_rules(self, check: Checker) -> None:
    condition, a, b = self.condition_tensor, self.a_tensor, self.b_tensor
    check.expect(
      b.data_type == a.data_type,
      "BTensor.DataType",
      f"must equal ATensor.DataType ({a.data_type})",
      b.data_type,
    )
    if rules.check_same_rank(check, ("ATensor", a), ("ConditionTensor", condition), ("BTensor", b)):
      for name, tensor in (("ConditionTensor", condition), ("BTensor", b)):
        check.expect(
          tensor.sizes == a.sizes,
          f"{name}.Sizes",
          f"must equal ATensor.Sizes {braced(a.sizes)}",
          tensor.sizes,
          hint="DirectML broadcasts through strides only: give the smaller tensor the common"
          " sizes and a stride of 0 in each repeated dimension",
        )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return f"must equal ATensor.Sizes {braced(expected)}"

  def lower(self, condition: jax.Array, a: jax.Array, b: jax.Array) -> jax.Array:
    return lax.select(condition != np.zeros((), condition.dtype), a, b)

  def explain_output(self) -> list[str]:
    a = self.a_tensor
    return [
      "out[c] = ATensor[c] where ConditionTensor[c] != 0, else BTensor[c]: any nonzero UINT8"
      " selects ATensor.",
      f"OutputTensor.Sizes = ATensor.Sizes = {braced(a.sizes)}, which ConditionTensor and"
      " BTensor share (broadcasting goes through strides of 0 only).",
      f"OutputTensor.DataType = ATensor.DataType = BTensor.DataType = {a.data_type}.",
    ]


def element_wise_if(
  condition: ArrayLike, a: ArrayLike, b: ArrayLike, *, feature_level: FeatureLevelLike = None
) -> jax.Array:
  """DML_OPERATOR_ELEMENT_WISE_IF: `a` where `condition` is nonzero, else `b`.

  `condition` is uint8 (DirectML's only condition type; any nonzero value is true);
  `a` and `b` share a dtype; all three have one shape, the output's. The selection
  copies bits (NaN payloads, -0.0). Gradients flow to `a` and `b`.

  Unlike ``jnp.where``: the condition must be uint8 (cast a bool mask with
  ``mask.astype(np.uint8)``), and nothing broadcasts: DirectML repeats a dimension only
  through a stride of 0, which `dml.execute` reads from bound buffers.

  Args:
    condition: ConditionTensor (uint8).
    a: ATensor.
    b: BTensor, of `a`'s dtype.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator (a condition that is not
      UINT8, different sizes or data types, a type the level lacks).
    TypeError: for a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> element_wise_if(np.array([[1, 0], [7, 0]], np.uint8),
    ...                 np.array([[1, 2], [3, 4]], np.float32), np.array([[9, 8], [7, 6]], np.float32))
    Array([[1., 8.],
           [3., 6.]], dtype=float32)
  """
  (condition, a, b), types = arguments.tensor_operands(ElementWiseIfDesc, condition, a, b)
  return _element_wise_if((as_level(feature_level), types), condition, a, b)


def _describe_element_wise_if(
  types: tuple[DataType, ...], shapes: tuple[tuple[int, ...], ...]
) -> ElementWiseIfDesc:
  return ElementWiseIfDesc(*(TensorDesc(t, s) for t, s in zip(types, shapes, strict=True)))


_element_wise_if = dispatch.operator_function(_describe_element_wise_if, ElementWiseIfDesc)
