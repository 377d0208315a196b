"""DML_OPERATOR_ONE_HOT: one OnValue per sequence, at the position its index names.

A sequence is one line of OutputTensor along Axis, of D = OutputTensor.Sizes[Axis]
elements. IndicesTensor has the output's rank and sizes with 1 on Axis: one index
v per sequence. With OffValue and OnValue the first two elements of ValuesTensor
in row-major order (whatever its shape; the rest are unused):

    out[o] = OnValue if o[Axis] == v' else OffValue

where v' = v + D for a negative v of a signed index type (INT32, INT64, which
DirectML allows from FL 3_0), else v' = v. An index with v' outside [0, D) (v >= D,
v < -D, or any value of an unsigned type at or above D, such as UINT32 0xFFFFFFFF)
leaves its whole sequence OffValue. DirectML defines this, so unlike the gathers
nothing is clamped and `dml.checked` has nothing to report. The comparison happens
in the index's own width: a 64-bit index is never narrowed before it is judged, so
2**32 + 1 is out of range for any D, not position 1.

D lives only in OutputTensor, so `OneHotDesc` requires it (it is never inferred)
and validation checks it against IndicesTensor; the functional API takes it as
`depth`.

The lowering normalizes each index to a position (the rule above, in the index's
own width, narrowed to int32 only after every value at or above D became D) and
writes the output in one compare and select against an iota, which XLA fuses
into a single pass. On CUDA GPUs, outputs of at least 32 MiB whose tiles have
long rows take a Pallas kernel instead (`kernels.one_hot_tiles_triton`): the same
select, written in wide tiles, where XLA's pass reaches 0.80 of a copy's write
bandwidth on an H200. Every other platform, and the gradient with respect to the
values, takes the lax form.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any, SupportsIndex

import jax
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, kernels, natural, registry, rules
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
from dml_jax._src.kernels import one_hot_tiles_triton
from dml_jax._src.kernels.partitioning import Roles, Shaped, around_axis, dims, factors
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc


def _table(dimension_counts, index_types, data_types):
  values = support(dimension_counts, data_types)
  return {
    "IndicesTensor": support(dimension_counts, index_types),
    "ValuesTensor": values,
    "OutputTensor": values,
  }


_UINT32 = (DataType.UINT32,)
_SUPPORT = SupportTable(
  "ONE_HOT",
  {
    FeatureLevel.FL_2_0: _table(4, _UINT32, (DataType.FLOAT32, DataType.FLOAT16)),
    FeatureLevel.FL_2_1: _table(4, _UINT32, UP_TO_32_BIT),
    FeatureLevel.FL_3_0: _table((1, 8), INDEX_TYPES, UP_TO_32_BIT),
    FeatureLevel.FL_4_1: _table((1, 8), INDEX_TYPES, ALL_DATA),
  },
)


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class OneHotDesc(OperatorDesc):
  """`DML_ONE_HOT_OPERATOR_DESC`.

  Attributes:
    indices_tensor: IndicesTensor, one index per sequence: the output's sizes
      with 1 on `axis`.
    values_tensor: ValuesTensor, of any sizes with at least 2 elements: the
      first is OffValue, the second (in row-major order) OnValue.
    output_tensor: OutputTensor, required: its size on `axis` is the depth D,
      which no other field holds, so it is never inferred. Its data type is
      ValuesTensor's.
    axis: Axis, in [0, DimensionCount): the dimension the sequences run along.

  Examples:
    >>> desc = OneHotDesc(TensorDesc("UINT32", (1, 1, 3, 1)), TensorDesc("FLOAT32", (1, 1, 1, 2)),
    ...                   TensorDesc("FLOAT32", (1, 1, 3, 4)), axis=3)
    >>> desc
    OneHotDesc(indices_tensor=TensorDesc("UINT32", (1, 1, 3, 1)), values_tensor=TensorDesc("FLOAT32", (1, 1, 1, 2)), output_tensor=TensorDesc("FLOAT32", (1, 1, 3, 4)), axis=3)
    >>> print(desc)
    DML_OPERATOR_ONE_HOT(IndicesTensor=UINT32[1,1,3,1], ValuesTensor=FLOAT32[1,1,1,2], Axis=3) -> FLOAT32[1,1,3,4]
    >>> desc.depth
    4
  """

  OPERATOR = "ONE_HOT"
  SUPPORT = _SUPPORT
  FUNCTION = "one_hot"
  OUTPUT_DATA_TYPE_FROM = "ValuesTensor"
  OUT_OF_RANGE_INDICES = (
    "DirectML defines them: after the negative-index rule, an index outside [0, D) leaves its"
    " whole sequence OffValue (nothing is clamped, and dml.checked reports nothing)."
  )

  indices_tensor: TensorDesc = dml_field("IndicesTensor", FieldKind.TENSOR, index=True)
  values_tensor: TensorDesc = dml_field("ValuesTensor", FieldKind.TENSOR)
  output_tensor: TensorDesc = dml_field("OutputTensor", FieldKind.TENSOR, output=True)
  axis: int = dml_field("Axis", FieldKind.UINT)

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      indices_tensor: TensorDesc,
      values_tensor: TensorDesc,
      output_tensor: TensorDesc,
      axis: SupportsIndex,
    ) -> None: ...

  @property
  def depth(self) -> int | None:
    """D = OutputTensor.Sizes[Axis], the length of every sequence (None: Axis is outside
    the output's dimensions)."""
    sizes = self.output_tensor.sizes
    return sizes[self.axis] if 0 <= self.axis < len(sizes) else None

  def _expected_output_sizes(self) -> tuple[int, ...] | None:
    """IndicesTensor.Sizes with Axis's size replaced by the depth (None: they do not fit)."""
    indices, depth = self.indices_tensor.sizes, self.depth
    if depth is None or len(indices) != self.output_tensor.dimension_count:
      return None
    return indices[: self.axis] + (depth,) + indices[self.axis + 1 :]

  def infer_output(self) -> TensorDesc | None:
    # Nothing is inferred but the data type: the output the indices, the values and the
    # given depth call for, which validation compares with the given one.
    sizes = self._expected_output_sizes()
    return None if sizes is None else TensorDesc(self.values_tensor.data_type, sizes)

  def check_rules(self, check: Checker) -> None:
    # The output's rank, data type and sizes off Axis are checked with every given output
    # (validation.py), against infer_output.
    indices, values = self.indices_tensor, self.values_tensor
    n = indices.dimension_count
    rules.check_same_rank(check, ("IndicesTensor", indices), ("ValuesTensor", values))
    check.expect(
      values.element_count >= 2,
      "ValuesTensor.Sizes",
      f"must hold at least 2 elements (OffValue, then OnValue); it holds {values.element_count}",
      values.sizes,
    )
    if rules.check_axis(check, "Axis", self.axis, n):
      check.expect(
        indices.sizes[self.axis] == 1,
        "IndicesTensor.Sizes",
        f"must be 1 on Axis ({self.axis}): one index per sequence",
        indices.sizes,
        hint="the indices keep the output's rank; unlike ONNX OneHot no axis is inserted",
      )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return (
      f"must equal IndicesTensor.Sizes {braced(self.indices_tensor.sizes)} in every dimension"
      f" but Axis ({self.axis}), whose size is the depth: {braced(expected)}"
    )

  def lower(self, indices: jax.Array, values: jax.Array) -> jax.Array:
    depth = self.output_tensor.sizes[self.axis]
    position = _on_positions(indices, depth)
    return kernels.lower(KERNELS, (self.axis, depth), self._select, position, values)

  def _select(self, position: jax.Array, values: jax.Array) -> jax.Array:
    """The lax form: one compare and select over the output, which XLA fuses into a single pass
    writing it."""
    shape, axis = self.output_tensor.sizes, self.axis
    along = lax.broadcasted_iota(position.dtype, shape, axis)
    hot = along == lax.broadcast_in_dim(position, shape, tuple(range(len(shape))))
    flat = values.reshape(-1)
    off = lax.broadcast(lax.slice(flat, (0,), (1,)).reshape(()), shape)
    on = lax.broadcast(lax.slice(flat, (1,), (2,)).reshape(()), shape)
    return lax.select(hot, on, off)

  def explain_output(self) -> list[str]:
    indices, values, output, axis = (
      self.indices_tensor,
      self.values_tensor,
      self.output_tensor,
      self.axis,
    )
    depth, expected = self.depth, self._expected_output_sizes()
    if depth is None or expected is None:
      return [
        f"Axis {axis} or the ranks do not fit (IndicesTensor has {indices.dimension_count}"
        f" dimension(s), OutputTensor {output.dimension_count}): no sequence can be placed."
      ]
    lines = [
      f"A sequence is a line of OutputTensor along Axis {axis}: D = OutputTensor.Sizes[{axis}]"
      f" = {depth} element(s). The depth D is given by OutputTensor alone, which is therefore"
      f" required.",
      f"IndicesTensor.Sizes {braced(indices.sizes)} hold one index v per sequence (size 1 on"
      f" Axis {axis}): out[o] = OnValue where o[{axis}] = v', else OffValue.",
    ]
    if indices.data_type.is_signed_integer:
      rule = f"v' = v + {depth} for a negative v ({indices.data_type} is signed), else v"
    else:
      rule = f"v' = v ({indices.data_type} is unsigned: indices never count from the end)"
    lines.append(
      f"{rule}; where v' is outside [0, {depth}) the whole sequence is OffValue (DirectML"
      f" defines this: nothing is clamped)."
    )
    count = values.element_count
    unused = f"; the other {count - 2} are unused" if count > 2 else ""
    lines += [
      f"OffValue = element 0 and OnValue = element 1 of ValuesTensor {braced(values.sizes)} in"
      f" row-major order ({count} element(s){unused}).",
      f"OutputTensor.Sizes = IndicesTensor.Sizes with Axis {axis} set to D = {depth}:"
      f" {braced(expected)}.",
      f"OutputTensor.DataType = ValuesTensor.DataType = {values.data_type} (not the index type"
      f" {indices.data_type}).",
    ]
    return lines


def _on_positions(indices: jax.Array, depth: int) -> jax.Array:
  """Each sequence's OnValue position, or `depth` where there is none.

  The negative-index rule and the range test run in the index's own width (as its unsigned
  counterpart, so nothing overflows: |v| of a negative v is ~v + 1); every value at or above
  `depth` becomes `depth`, and only then is the result narrowed to int32 (when `depth` fits).
  """
  dtype = np.dtype(indices.dtype)
  unsigned = np.dtype(f"u{dtype.itemsize}")
  size = lax.full_like(indices, depth, unsigned)
  position = lax.convert_element_type(indices, unsigned)
  if np.issubdtype(dtype, np.signedinteger):
    magnitude = lax.convert_element_type(lax.bitwise_not(indices), unsigned) + np.asarray(
      1, unsigned
    )
    from_end = lax.select(magnitude <= size, size - magnitude, size)
    position = lax.select(indices < np.asarray(0, dtype), from_end, position)
  position = lax.min(position, size)
  return lax.convert_element_type(position, np.int32) if depth < 2**31 else position


def one_hot(
  indices: ArrayLike,
  values: ArrayLike,
  *,
  axis: int,
  depth: int,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_ONE_HOT: OnValue at each sequence's index along `axis`, OffValue elsewhere.

  `indices` has the output's rank, with size 1 on `axis` (one index per
  sequence); the output has its shape with `depth` on `axis`, and the dtype of
  `values`, whose first two elements in row-major order are OffValue and OnValue
  (`values` has the same rank, any sizes, at least 2 elements). A negative index
  of a signed dtype counts from the end (v + depth); an index still outside
  [0, depth) gives a sequence of OffValue only (defined by DirectML, so nothing
  is clamped and `dml.checked` reports nothing). 64-bit indices are compared in
  their own width.

  Unlike ``jax.nn.one_hot``: no axis is inserted (the indices carry it, with size
  1), off and on values come from `values` and so does the dtype, and negative
  indices of signed dtypes count from the end instead of giving all zeros.

  Args:
    indices: IndicesTensor (int32, int64, uint32 or uint64).
    values: ValuesTensor: OffValue, OnValue and any unused elements after them.
    axis: Axis, in [-n, n) for the common rank n (negative: from the end).
    depth: OutputTensor.Sizes[axis], the length of every sequence (>= 1).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer indices, axis or depth, or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> indices = np.array([[0], [3], [-1], [7]], np.int32)
    >>> one_hot(indices, np.array([[0, 1]], np.float32), axis=1, depth=4)
    Array([[1., 0., 0., 0.],
           [0., 0., 0., 1.],
           [0., 0., 0., 1.],
           [0., 0., 0., 0.]], dtype=float32)

    Along axis 0, with off and on values from a column of three (the third unused):

    >>> one_hot(np.array([[2, 0]], np.uint32), np.array([[5], [9], [7]], np.int8), axis=0, depth=3)
    Array([[5, 9],
           [5, 5],
           [9, 5]], dtype=int8)
  """
  (indices, values), types = arguments.tensor_operands(OneHotDesc, indices, values)
  level = as_level(feature_level)
  static = (level, types, as_int(axis, "Axis"), as_int(depth, "depth"))
  return _one_hot(static, indices, values)


def _describe_one_hot(
  types: tuple[DataType, ...], shapes: tuple[tuple[int, ...], ...], axis: int, depth: int
) -> OneHotDesc:
  sizes = shapes[0]
  if 0 <= axis < len(sizes):  # else validation names the Axis; the output keeps the sizes
    sizes = sizes[:axis] + (depth,) + sizes[axis + 1 :]
  return OneHotDesc(
    TensorDesc(types[0], shapes[0]),
    TensorDesc(types[1], shapes[1]),
    TensorDesc(types[1], sizes),
    axis=axis,
  )


_one_hot = dispatch.operator_function(
  _describe_one_hot,
  OneHotDesc,
  natural.Ranks(names=("axis", "depth"), axes=((0, 0),)),
  moves_bits=True,
)


# -- kernels ---------------------------------------------------------------------------------
# `fields`: (axis, depth). The operands: the normalized positions (int32, `depth` where a
# sequence has no OnValue) and the values; the gradient (with respect to the values) is the
# lax form's.


def _tiles_roles(fields: tuple[int, int], config: Any, position: Shaped, values: Shaped) -> Roles:
  """Every dimension of the positions but `axis` passes through; the output's `axis` (the
  depth) and the two values are needed whole."""
  axis, _ = fields
  values_dims = factors("v", values.ndim)
  rule = (
    f"{around_axis(position.ndim, axis, 'one')}, {dims(values_dims)}"
    f" -> {around_axis(position.ndim, axis, 'depth')}"
  )
  return Roles(rule, whole=("one", "depth", *values_dims))


def _tiles_apply(fields: tuple[int, int], config: Any, position: Shaped, values: Shaped) -> bool:
  """The output of at least 32 MiB, tiles of long rows (`one_hot_tiles_triton.applies`)."""
  axis, depth = fields
  shape = position.shape[:axis] + (depth,) + position.shape[axis + 1 :]
  return one_hot_tiles_triton.applies(shape, axis, values.dtype, config)


KERNELS = (
  kernels.Kernel(
    "one_hot_tiles_triton",
    "cuda",
    applies=_tiles_apply,
    roles=_tiles_roles,
    call=lambda fields, config, interpret, p, v: functools.partial(
      one_hot_tiles_triton.one_hot_tiles,
      axis=fields[0],
      depth=fields[1],
      config=config,
      interpret=interpret,
    ),
  ),
)
"""ONE_HOT's kernel (`kernels.forms` chooses): the output written in wide tiles."""
