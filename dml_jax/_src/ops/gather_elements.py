"""DML_OPERATOR_GATHER_ELEMENTS: out[o] = input[o with o[Axis] := indices[o]]."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

from dml_jax._src import checked, indexing, kernels
from dml_jax._src.dtypes import ALL_DATA, INDEX_TYPES, UP_TO_32_BIT, DataType
from dml_jax._src.errors import Checker
from dml_jax._src.feature_level import FeatureLevel, SupportTable, support
from dml_jax._src.ops import _base
from dml_jax._src.tensor_desc import TensorDesc

_SUPPORT = SupportTable(
  "GATHER_ELEMENTS",
  {
    FeatureLevel.FL_2_1: {
      "InputTensor": support(4, UP_TO_32_BIT),
      "IndicesTensor": support(4, (DataType.UINT32,)),
      "OutputTensor": support(4, UP_TO_32_BIT),
    },
    FeatureLevel.FL_3_0: {
      "InputTensor": support((1, 8), UP_TO_32_BIT),
      "IndicesTensor": support((1, 8), INDEX_TYPES),
      "OutputTensor": support((1, 8), UP_TO_32_BIT),
    },
    FeatureLevel.FL_4_1: {
      "InputTensor": support((1, 8), ALL_DATA),
      "IndicesTensor": support((1, 8), INDEX_TYPES),
      "OutputTensor": support((1, 8), ALL_DATA),
    },
  },
)


@dataclasses.dataclass(frozen=True, repr=False)
class GatherElementsDesc(_base.OperatorDesc):
  """`DML_GATHER_ELEMENTS_OPERATOR_DESC`.

  Attributes:
    input_tensor: InputTensor, the data to read.
    indices_tensor: IndicesTensor, one index along `axis` per output element;
      same sizes as the input except on `axis`.
    axis: Axis, in [0, DimensionCount).
    output_tensor: OutputTensor; None infers it (the indices' sizes, the
      input's data type).

  Examples:
    >>> GatherElementsDesc(TensorDesc("FLOAT32", (3, 3)), TensorDesc("UINT32", (2, 3)), axis=0)
    GatherElementsDesc(input=FLOAT32[3,3], indices=UINT32[2,3], axis=0) -> FLOAT32[2,3]
  """

  OPERATOR = "GATHER_ELEMENTS"
  SUPPORT = _SUPPORT

  input_tensor: TensorDesc
  indices_tensor: TensorDesc
  axis: int
  output_tensor: TensorDesc | None = None

  def __post_init__(self):
    _base.as_tensor(self.input_tensor, "InputTensor")
    _base.as_tensor(self.indices_tensor, "IndicesTensor")
    if self.output_tensor is not None:
      _base.as_tensor(self.output_tensor, "OutputTensor")
    object.__setattr__(self, "axis", _base.as_attribute(self.axis, "Axis"))

  def _inputs(self):
    yield "InputTensor", "InputTensor", self.input_tensor
    yield "IndicesTensor", "IndicesTensor", self.indices_tensor

  def _infer_output(self) -> TensorDesc | None:
    return TensorDesc(self.input_tensor.data_type, self.indices_tensor.sizes)

  def _check_fields(self, check: Checker) -> None:
    data, indices = self.input_tensor, self.indices_tensor
    n = data.dimension_count
    axis_ok = _base.check_axis(check, "Axis", self.axis, n)
    rank_ok = _base.check_same_rank(check, ("InputTensor", data), ("IndicesTensor", indices))
    if axis_ok and rank_ok:
      mismatched = [d for d in range(n) if d != self.axis and indices.sizes[d] != data.sizes[d]]
      if mismatched:
        check.fail(
          "IndicesTensor.Sizes",
          f"must equal InputTensor.Sizes {_base._sizes(data.sizes)} in every dimension"
          f" but Axis ({self.axis}); dimension {mismatched[0]} differs",
          indices.sizes,
        )

  def lower(self, input: jax.Array, indices: jax.Array) -> jax.Array:
    size = self.input_tensor.sizes[self.axis]
    checked.check_indices(self.OPERATOR, indices, size, self.axis)

    def gather(input, indices):
      return indexing.gather_along_axis(input, indexing.clamp_indices(indices, size), self.axis)

    return kernels.gather_elements(input, indices, self.axis, fallback=gather)

  def _fields_repr(self) -> str:
    return f"input={self.input_tensor!r}, indices={self.indices_tensor!r}, axis={self.axis}"


def gather_elements(input: Any, indices: Any, *, axis: int, feature_level: Any = None) -> jax.Array:
  """DML_OPERATOR_GATHER_ELEMENTS: gathers along `axis`, one index per output element.

  ``out[o] = input[o with o[axis] := indices[o]]``. `input` and `indices` have
  the same rank and equal sizes except on `axis`; the output has the indices'
  sizes and the input's dtype.

  Unlike ``jnp.take_along_axis``: indices must match the input's sizes off
  `axis` (no broadcasting); negative indices count from the end only for signed
  index types; out-of-range indices are clamped into the input, and 64-bit
  indices are clamped before any narrowing.

  Args:
    input: InputTensor.
    indices: IndicesTensor (int32, int64, uint32 or uint64).
    axis: Axis, in [0, input.ndim).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer indices or axis, or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> x = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    >>> gather_elements(x, np.array([[1, 2, 0], [2, 0, 0]], np.uint32), axis=0)
    Array([[4., 8., 3.],
           [7., 2., 3.]], dtype=float32)
  """
  input, indices, types = _base.input_and_indices(input, indices, "IndicesTensor")
  level = _base.as_level(feature_level)
  return _gather_elements((level, types, _base.as_attribute(axis, "Axis")), input, indices)


def _describe_gather_elements(types, shapes, axis) -> GatherElementsDesc:
  return GatherElementsDesc(
    TensorDesc(types[0], shapes[0]), TensorDesc(types[1], shapes[1]), axis=axis
  )


_gather_elements = _base.operator_function(
  _describe_gather_elements, _base.index_roles("IndicesTensor")
)
