"""DML_OPERATOR_GATHER_ELEMENTS: out[o] = input[o with o[Axis] := indices[o]]."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import TYPE_CHECKING, Any, SupportsIndex

import jax
from jax.typing import ArrayLike

from dml_jax._src import arguments, checked, dispatch, indexing, kernels, natural, registry, rules
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import ALL_DATA, INDEX_TYPES, UP_TO_32_BIT, DataType
from dml_jax._src.errors import Checker
from dml_jax._src.feature_level import (
  FeatureLevel,
  FeatureLevelLike,
  SupportTable,
  as_level,
  support,
)
from dml_jax._src.fields import FieldKind, dml_field
from dml_jax._src.integers import as_int
from dml_jax._src.kernels import (
  _triton,
  gather_elements_rows_triton,
  gather_elements_strips_triton,
)
from dml_jax._src.kernels.partitioning import Roles, Shaped, around_axis, dims, factors
from dml_jax._src.rules import braced
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


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class GatherElementsDesc(OperatorDesc):
  """`DML_GATHER_ELEMENTS_OPERATOR_DESC`.

  Attributes:
    input_tensor: InputTensor, the data to read.
    indices_tensor: IndicesTensor, one index along `axis` per output element;
      same sizes as the input except on `axis`.
    axis: Axis, in [0, DimensionCount).
    output_tensor: OutputTensor; None infers it (the indices' sizes, the
      input's data type).

  Examples:
    >>> desc = GatherElementsDesc(TensorDesc("FLOAT32", (3, 3)), TensorDesc("UINT32", (2, 3)), axis=0)
    >>> desc
    GatherElementsDesc(input_tensor=TensorDesc("FLOAT32", (3, 3)), indices_tensor=TensorDesc("UINT32", (2, 3)), axis=0)
    >>> print(desc)
    DML_OPERATOR_GATHER_ELEMENTS(InputTensor=FLOAT32[3,3], IndicesTensor=UINT32[2,3], Axis=0) -> FLOAT32[2,3]
  """

  OPERATOR = "GATHER_ELEMENTS"
  SUPPORT = _SUPPORT
  FUNCTION = "gather_elements"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  indices_tensor: TensorDesc = dml_field("IndicesTensor", FieldKind.TENSOR, index=True)
  axis: int = dml_field("Axis", FieldKind.UINT)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      indices_tensor: TensorDesc,
      axis: SupportsIndex,
      output_tensor: TensorDesc | None = None,
    ) -> None: ...

  def infer_output(self) -> TensorDesc | None:
    return TensorDesc(self.input_tensor.data_type, self.indices_tensor.sizes)

  def check_rules(self, check: Checker) -> None:
    data, indices = self.input_tensor, self.indices_tensor
    axis_ok = rules.check_axis(check, "Axis", self.axis, data.dimension_count)
    rank_ok = rules.check_same_rank(check, ("InputTensor", data), ("IndicesTensor", indices))
    if axis_ok and rank_ok:
      rules.check_sizes_off_axis(
        check, "IndicesTensor.Sizes", indices.sizes, ("InputTensor.Sizes", data.sizes), self.axis
      )

  def lower(self, input: jax.Array, indices: jax.Array) -> jax.Array:
    size = self.input_tensor.sizes[self.axis]
    checked.check_indices(self.OPERATOR, indices, size, self.axis)

    def gather(input, indices):
      return indexing.gather_along_axis(input, indexing.clamp_indices(indices, size), self.axis)

    return kernels.lower(KERNELS, self.axis, gather, input, indices)

  def explain_output(self) -> list[str]:
    data, indices, axis = self.input_tensor, self.indices_tensor, self.axis
    lines = [
      f"out[o] = InputTensor[o with o[{axis}] := IndicesTensor[o]]: every output element reads"
      f" one input element of its own lane along Axis {axis}.",
      f"OutputTensor.Sizes = IndicesTensor.Sizes = {braced(indices.sizes)}: one output element"
      f" per index.",
    ]
    if 0 <= axis < data.dimension_count == indices.dimension_count:
      lines.append(
        f"IndicesTensor.Sizes must equal InputTensor.Sizes {braced(data.sizes)} off Axis {axis};"
        f" on Axis {axis} it is free: {indices.sizes[axis]} index(es) per lane of"
        f" {data.sizes[axis]} element(s)."
      )
    lines.append(
      f"OutputTensor.DataType = InputTensor.DataType = {data.data_type} (not the index type"
      f" {indices.data_type})."
    )
    return lines


def gather_elements(
  input: ArrayLike, indices: ArrayLike, *, axis: int, feature_level: FeatureLevelLike = None
) -> jax.Array:
  """DML_OPERATOR_GATHER_ELEMENTS: gathers along `axis`, one index per output element.

  ``out[o] = input[o with o[axis] := indices[o]]``. `input` and `indices` have
  the same rank and equal sizes except on `axis`; the output has the indices'
  sizes and the input's dtype.

  Unlike ``jnp.take_along_axis``: indices must match the input's sizes off
  `axis` (no broadcasting); negative indices count from the end only for signed
  index types; out-of-range indices are clamped into the input, and 64-bit
  indices are clamped before any narrowing.

  See also: `gather_nd` (whole sub-blocks named by index tuples).

  Args:
    input: InputTensor.
    indices: IndicesTensor (int32, int64, uint32 or uint64).
    axis: Axis, in [-n, n) for the common rank n (negative: from the end).
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
  (input, indices), types = arguments.tensor_operands(GatherElementsDesc, input, indices)
  level = as_level(feature_level)
  return _gather_elements((level, types, as_int(axis, "Axis")), input, indices)


def _describe_gather_elements(
  types: tuple[DataType, ...], shapes: tuple[tuple[int, ...], ...], axis: int
) -> GatherElementsDesc:
  return GatherElementsDesc(
    TensorDesc(types[0], shapes[0]), TensorDesc(types[1], shapes[1]), axis=axis
  )


_gather_elements = dispatch.operator_function(
  _describe_gather_elements,
  GatherElementsDesc,
  natural.Ranks(names=("axis",), axes=((0, None),)),
  moves_bits=True,
)


# -- kernels ---------------------------------------------------------------------------------
# `fields`: the axis. The operands: the input and the raw indices (the kernels normalize and
# clamp them, as the lax lowering does).


def _rows_roles(axis: int, config: Any, x: Shaped, i: Shaped) -> Roles:
  """Along the last axis: the leading dimensions and the indices' last pass through (shards of
  a power-of-two width); the input's last is needed whole."""
  lead = factors("l", x.ndim - 1)
  return Roles(
    f"{dims(lead, 'n')}, {dims(lead, 'm')} -> {dims(lead, 'm')}",
    whole=("n",),
    fits=lambda x, i: _triton.power_of_two(i.shape[-1]),
  )


def _strips_roles(axis: int, config: Any, x: Shaped, i: Shaped) -> Roles:
  """Along an earlier axis: every dimension but the input's `axis` passes through, where the
  strips still tile the shards."""
  config = gather_elements_strips_triton.DEFAULT if config is None else config

  def fits(x, i):
    return (
      math.prod(i.shape[axis + 1 :]) % config.width == 0 and i.shape[axis] % config.min_rows == 0
    )

  read, written = around_axis(x.ndim, axis, "n"), around_axis(x.ndim, axis, "m")
  return Roles(f"{read}, {written} -> {written}", whole=("n",), fits=fits)


KERNELS = (
  kernels.Kernel(
    "gather_elements_rows_triton",
    "cuda",
    applies=lambda axis, config, x, i: gather_elements_rows_triton.applies(
      x.shape, i.shape, x.dtype, axis, config
    ),
    roles=_rows_roles,
    call=lambda axis, config, interpret, x, i: functools.partial(
      gather_elements_rows_triton.gather_along_last_axis, config=config, interpret=interpret
    ),
  ),
  kernels.Kernel(
    "gather_elements_strips_triton",
    "cuda",
    applies=lambda axis, config, x, i: gather_elements_strips_triton.applies(
      x.shape, i.shape, x.dtype, axis, config
    ),
    roles=_strips_roles,
    call=lambda axis, config, interpret, x, i: functools.partial(
      gather_elements_strips_triton.gather_in_strips, axis=axis, config=config, interpret=interpret
    ),
  ),
)
"""GATHER_ELEMENTS's kernels (`kernels.forms` chooses): a program a row along the last axis,
column strips along an earlier one."""
