"""DML_OPERATOR_TOP_K and DML_OPERATOR_TOP_K1: the K largest (or smallest) values of each lane.

A lane (DirectML: a sequence) is the line of input elements along Axis through one
coordinate. OutputValueTensor holds, in each lane, the K largest values in descending
order (TOP_K, and TOP_K1 with AxisDirection DECREASING) or the K smallest in ascending
order (TOP_K1 with INCREASING); OutputIndexTensor holds their positions in the lane.
Equal values keep ascending positions in either direction. Both outputs have the
input's sizes with K on Axis; the values have the input's data type, the indices an
unsigned index type (UINT32, or UINT64 from FL 5_0; the functional API's default is
UINT32, the type of DirectML's examples).

K is at least 1 and at most the lane's length. DirectML's pages say "less than" the
lane's length, but K equal to it (a sorted copy of every lane) is what ONNX TopK allows
and ONNX Runtime's DirectML provider passes through, so dml_jax accepts it.

Values rank in the order ARGMIN and ARGMAX use (`axis_direction`): -0.0 equals 0.0, and
every NaN ranks above +inf (so NaNs come first in DECREASING order and last in
INCREASING order). The output values are the input's own elements, bit for bit: a -0.0
stays -0.0 and a NaN keeps its payload.

The lowering ranks keys with `lax.top_k`, which keeps equal keys in ascending positions, and
gathers the values at the positions it finds (the gradient of the values is that gather's).
The keys of data that float32 holds exactly are float32 with canonical zeros and NaNs, whose
order XLA takes from their bits, and which its TopK handles in its fast paths; 32- and 64-bit
integers rank through integer keys (`_ranking_keys`). Off the CPU, where XLA's TopK sorts
whole lanes, a long lane is first pruned to the few groups of elements that can hold its K
first (`_pruned_top_k`), with the same result. On the CPU, 32- and 64-bit data of 8 KiB or
more takes a native partial selection instead (`KERNELS`, `kernels.top_k_cpu`), with the same
bits and the lax form's gradient.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, SupportsIndex

import jax
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, indexing, natural, registry, rules
from dml_jax._src.axis_direction import AxisDirection, canonical_bits, ordered_keys
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import FLOAT_AND_INT_16_32, UP_TO_32_BIT, DataType, DataTypeLike
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
from dml_jax._src.kernels import forms, top_k_cpu
from dml_jax._src.kernels.partitioning import Roles, around_axis
from dml_jax._src.ops.arg_min_max import index_dtype
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

_UINT32 = (DataType.UINT32,)
_FROM_5_0 = (
  DataType.FLOAT32,
  DataType.FLOAT16,
  DataType.INT64,
  DataType.INT32,
  DataType.INT16,
  DataType.INT8,
  DataType.UINT64,
  DataType.UINT32,
  DataType.UINT16,
  DataType.UINT8,
)


def _table(
  dimension_counts: Any, data_types: tuple[DataType, ...], index_types: tuple[DataType, ...]
) -> dict[str, Any]:
  values = support(dimension_counts, data_types)
  return {
    "InputTensor": values,
    "OutputValueTensor": values,
    "OutputIndexTensor": support(dimension_counts, index_types),
  }


_LATER_TABLES = {
  FeatureLevel.FL_2_1: _table(4, UP_TO_32_BIT, _UINT32),
  FeatureLevel.FL_3_1: _table((1, 8), UP_TO_32_BIT, _UINT32),
  FeatureLevel.FL_5_0: _table((1, 8), _FROM_5_0, (DataType.UINT64, DataType.UINT32)),
}
_TOP_K_SUPPORT = SupportTable(
  "TOP_K",
  {FeatureLevel.FL_2_0: _table(4, FLOAT_AND_INT_16_32[:2], _UINT32), **_LATER_TABLES},
)
# TOP_K1's page (introduced at 2_1) repeats TOP_K's tables from 2_1 on.
_TOP_K1_SUPPORT = SupportTable("TOP_K1", dict(_LATER_TABLES))


class _TopKDesc(OperatorDesc):
  """The fields, rules and lowering TOP_K and TOP_K1 share."""

  input_tensor: TensorDesc
  axis: int
  k: int
  output_value_tensor: TensorDesc | None
  output_index_tensor: TensorDesc | None

  @property
  def descending(self) -> bool:
    """Whether the K largest values are kept, largest first (else the K smallest, smallest
    first): always for TOP_K."""
    return True

  def _output_sizes(self) -> tuple[int, ...] | None:
    sizes = self.input_tensor.sizes
    if not 0 <= self.axis < len(sizes):
      return None
    return sizes[: self.axis] + (self.k,) + sizes[self.axis + 1 :]

  def infer_outputs(self) -> tuple[TensorDesc | None, ...] | None:
    # The values have the input's data type; the indices' type is free among the index types
    # (UINT32 when inferred, the type of DirectML's examples; a given one is kept).
    sizes = self._output_sizes()
    if sizes is None:
      return None
    given = self.output_index_tensor
    index_type = DataType.UINT32 if given is None else given.data_type
    return TensorDesc(self.input_tensor.data_type, sizes), TensorDesc(index_type, sizes)

  def check_rules(self, check: Checker) -> None:
    data = self.input_tensor
    if not rules.check_axis(check, "Axis", self.axis, data.dimension_count):
      return
    length = data.sizes[self.axis]
    check.expect(
      1 <= self.k <= length,
      "K",
      f"must be in [1, InputTensor.Sizes[Axis]] = [1, {length}]",
      self.k,
      hint=(
        "K = 0 selects nothing; DirectML requires at least one element"
        if self.k < 1
        else f"a lane along Axis {self.axis} has {length} element(s)"
      ),
    )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return (
      f"must equal InputTensor.Sizes {braced(self.input_tensor.sizes)} with K ({self.k}) on"
      f" Axis ({self.axis}): {braced(expected)}"
    )

  def lower(self, input: jax.Array) -> tuple[jax.Array, jax.Array]:
    _, indices_desc = self.outputs
    dtype = index_dtype(indices_desc.data_type, "OutputIndexTensor")
    selection = Selection(self.axis, self.k, self.descending, np.dtype(dtype))
    return forms.lower(KERNELS, selection, functools.partial(_lax_form, selection), input)

  def explain_output(self) -> list[str]:
    data, axis, k = self.input_tensor, self.axis, self.k
    sizes = self._output_sizes()
    if sizes is None:
      return [f"Axis {axis} is not a dimension of the {data.dimension_count}-D input."]
    which = "largest, in descending" if self.descending else "smallest, in ascending"
    return [
      f"A lane is the line of {data.sizes[axis]} input element(s) along Axis {axis}:"
      f" OutputValueTensor holds each lane's {k} {which} order, OutputIndexTensor their"
      f" positions in the lane.",
      "Equal values keep ascending positions. -0.0 equals 0.0 and NaN ranks above +inf"
      " (dml_jax's order, shared with ARGMIN and ARGMAX); the values are copied bit for bit.",
      f"Both outputs have InputTensor.Sizes with K on Axis {axis}: {braced(sizes)}.",
      f"OutputValueTensor.DataType = InputTensor.DataType = {data.data_type};"
      f" OutputIndexTensor.DataType is UINT32 (or UINT64 from FL 5_0), UINT32 if left out.",
    ]


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class TopKDesc(_TopKDesc):
  """`DML_TOP_K_OPERATOR_DESC`: the K largest values of each lane along Axis, largest first.

  Attributes:
    input_tensor: InputTensor, the values.
    axis: Axis, in [0, DimensionCount): the dimension the lanes run along.
    k: K, in [1, InputTensor.Sizes[Axis]].
    output_value_tensor: OutputValueTensor; None infers it (the input's sizes with K on
      Axis, its data type).
    output_index_tensor: OutputIndexTensor; None infers it (the same sizes, UINT32).

  Examples:
    >>> desc = TopKDesc(TensorDesc("FLOAT32", (1, 1, 3, 4)), axis=3, k=2)
    >>> desc
    TopKDesc(input_tensor=TensorDesc("FLOAT32", (1, 1, 3, 4)), axis=3, k=2)
    >>> print(desc)
    DML_OPERATOR_TOP_K(InputTensor=FLOAT32[1,1,3,4], Axis=3, K=2) -> (FLOAT32[1,1,3,2], UINT32[1,1,3,2])
  """

  OPERATOR = "TOP_K"
  SUPPORT = _TOP_K_SUPPORT
  FUNCTION = "top_k"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  axis: int = dml_field("Axis", FieldKind.UINT)
  k: int = dml_field("K", FieldKind.UINT)
  output_value_tensor: TensorDesc | None = dml_field(
    "OutputValueTensor", FieldKind.TENSOR, output=True, default=None
  )
  output_index_tensor: TensorDesc | None = dml_field(
    "OutputIndexTensor", FieldKind.TENSOR, output=True, index=True, default=None
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      axis: SupportsIndex,
      k: SupportsIndex,
      output_value_tensor: TensorDesc | None = None,
      output_index_tensor: TensorDesc | None = None,
    ) -> None: ...


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class TopK1Desc(_TopKDesc):
  """`DML_TOP_K1_OPERATOR_DESC`: TOP_K with a choice of end (AxisDirection).

  Attributes:
    input_tensor: InputTensor, the values.
    axis: Axis, in [0, DimensionCount): the dimension the lanes run along.
    k: K, in [1, InputTensor.Sizes[Axis]].
    output_value_tensor: OutputValueTensor; None infers it (the input's sizes with K on
      Axis, its data type).
    output_index_tensor: OutputIndexTensor; None infers it (the same sizes, UINT32).
    axis_direction: AxisDirection: DECREASING (the default, TOP_K's) keeps the K largest
      values, largest first; INCREASING the K smallest, smallest first.

  Examples:
    >>> desc = TopK1Desc(TensorDesc("FLOAT32", (1, 1, 3, 4)), axis=3, k=3, axis_direction="INCREASING")
    >>> desc
    TopK1Desc(input_tensor=TensorDesc("FLOAT32", (1, 1, 3, 4)), axis=3, k=3, axis_direction=AxisDirection.INCREASING)
    >>> print(desc)
    DML_OPERATOR_TOP_K1(InputTensor=FLOAT32[1,1,3,4], Axis=3, K=3, AxisDirection=INCREASING) -> (FLOAT32[1,1,3,3], UINT32[1,1,3,3])
  """

  OPERATOR = "TOP_K1"
  SUPPORT = _TOP_K1_SUPPORT
  FUNCTION = "top_k1"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  axis: int = dml_field("Axis", FieldKind.UINT)
  k: int = dml_field("K", FieldKind.UINT)
  output_value_tensor: TensorDesc | None = dml_field(
    "OutputValueTensor", FieldKind.TENSOR, output=True, default=None
  )
  output_index_tensor: TensorDesc | None = dml_field(
    "OutputIndexTensor", FieldKind.TENSOR, output=True, index=True, default=None
  )
  axis_direction: AxisDirection = dml_field(
    "AxisDirection", FieldKind.ENUM, enum_type=AxisDirection, default=AxisDirection.DECREASING
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      axis: SupportsIndex,
      k: SupportsIndex,
      output_value_tensor: TensorDesc | None = None,
      output_index_tensor: TensorDesc | None = None,
      axis_direction: AxisDirection | str | int = AxisDirection.DECREASING,
    ) -> None: ...

  @property
  def descending(self) -> bool:
    return self.axis_direction is AxisDirection.DECREASING


@dataclasses.dataclass(frozen=True)
class Selection:
  """What a lowering of TOP_K or TOP_K1 selects: each lane's `k` first elements along `axis`,
  largest first where `descending` (else smallest first), positions as `index_dtype`."""

  axis: int
  k: int
  descending: bool
  index_dtype: np.dtype


def _lax_form(selection: Selection, input: jax.Array) -> tuple[jax.Array, jax.Array]:
  """The values and positions by `lax.top_k` of the ranking keys (`_top_positions`), the values
  gathered at the positions (the gradient of every form)."""
  axis = selection.axis
  positions = _top_positions(input, selection.k, axis, selection.descending)
  values = indexing.gather_along_axis(input, positions, axis)
  return values, lax.convert_element_type(positions, selection.index_dtype)


# Data that float32 holds exactly: ranked as float32, which XLA's TopK handles in its fast
# paths (on the CPU a partial sort; other types take a full sort there, far slower).
_AS_FLOAT32 = frozenset(map(np.dtype, ("float32", "float16", "int16", "uint16", "int8", "uint8")))


def _top_positions(input: jax.Array, k: int, axis: int, descending: bool) -> jax.Array:
  """The positions along `axis` of each lane's `k` first elements in the selection order (or
  its reverse), equal keys in ascending positions: `lax.top_k` of the ranking keys, or, on
  long lanes off the CPU, of the candidates `_pruned_top_k` leaves."""
  plain = lambda input: lax.top_k(_ranking_keys(input, descending), k, axis=axis)[1]
  group = _group_size(input.shape[axis], k)
  if group is None:
    return plain(input)
  # XLA:CPU's TopK is a partial sort, which the pruning only slows down.
  return forms.on_platforms(
    {"cpu": plain}, lambda input: _pruned_positions(input, k, axis, descending, group), input
  )


def _pruned_positions(
  input: jax.Array, k: int, axis: int, descending: bool, group: int
) -> jax.Array:
  """`_pruned_top_k` along `axis` of the input's integer ranking keys."""
  if np.dtype(input.dtype) in _AS_FLOAT32:
    input = lax.convert_element_type(input, np.float32)
  keys = ordered_keys(input)
  keys = keys if descending else lax.bitwise_not(keys)
  last = input.ndim - 1
  order = (*range(axis), *range(axis + 1, input.ndim), axis)
  positions = _pruned_top_k(lax.transpose(keys, order) if axis != last else keys, k, group)
  return positions if axis == last else lax.transpose(positions, tuple(np.argsort(order)))


def _group_size(length: int, k: int) -> int | None:
  """The group size for `_pruned_top_k` on lanes of `length`, or None where a plain
  `lax.top_k` is as good (short lanes, or K a large part of the lane).

  Groups of about sqrt(length / K) elements balance the two small rankings that follow (of
  length / group maxima, and of K x group candidates); case top_k in benchmarks/cases.
  """
  if length < 4096:
    return None
  group = 1 << max(3, min(8, int(math.isqrt(length // k)).bit_length() - 1))
  return group if 4 * k * group <= length else None


def _pruned_top_k(keys: jax.Array, k: int, group: int) -> jax.Array:
  """`lax.top_k(keys, k)[1]` along the last axis of integer keys, on a fraction of the lane.

  The lane is cut into groups of `group` elements (the last one padded with the smallest
  key) and ranked by their largest key; only the K best groups can hold the K best keys.
  Every key above the K-th best group maximum M lies in one of those groups, and for keys
  equal to M, the chosen groups hold at least as many as are needed, each one before any
  unchosen group holding M (equal maxima keep ascending groups), so the earliest ones are
  there. The chosen groups, back in lane order, are ranked by a `lax.top_k` of K x group
  candidates, which keeps equal keys in ascending positions as the lane would.
  """
  *batch, length = keys.shape
  pad = -length % group
  if pad:
    lowest = np.iinfo(np.dtype(keys.dtype)).min
    keys = lax.pad(keys, np.asarray(lowest, keys.dtype), [(0, 0, 0)] * len(batch) + [(0, pad, 0)])
  groups = keys.reshape(*batch, (length + pad) // group, group)
  last = len(batch)
  _, chosen = lax.top_k(lax.reduce_max(groups, (last + 1,)), k)
  chosen = lax.sort(chosen, dimension=last)
  candidates = indexing.gather_slices_along_axis(groups, chosen, last)
  _, best = lax.top_k(candidates.reshape(*batch, k * group), k)
  size = lax.full_like(best, group)
  start = indexing.gather_along_axis(chosen, lax.div(best, size), last)
  return lax.add(lax.mul(start, size), lax.rem(best, size))


def _ranking_keys(input: jax.Array, descending: bool) -> jax.Array:
  """Keys whose order in `lax.top_k` (largest first) is the selection order, or its reverse.

  Data that float32 holds exactly becomes float32 with canonical zeros and NaNs
  (`canonical_bits`): XLA ranks floats by their bits (its total order), so the keys rank as the
  selection order does; flipping their sign bit reverses that order exactly (every NaN becomes
  the one smallest key). Other data (32- and 64-bit integers, FLOAT64) ranks through
  `ordered_keys`, reversed by the bitwise complement, which cannot overflow.
  """
  if np.dtype(input.dtype) in _AS_FLOAT32:
    bits = canonical_bits(lax.convert_element_type(input, np.float32))
    if not descending:
      bits = lax.bitwise_xor(bits, lax.full_like(bits, np.int32(-(2**31))))
    return lax.bitcast_convert_type(bits, np.float32)
  keys = ordered_keys(input)
  return keys if descending else lax.bitwise_not(keys)


def top_k(
  input: ArrayLike,
  *,
  axis: int,
  k: int,
  index_data_type: DataTypeLike = DataType.UINT32,
  feature_level: FeatureLevelLike = None,
) -> tuple[jax.Array, jax.Array]:
  """DML_OPERATOR_TOP_K: the `k` largest values of each lane along `axis`, and their positions.

  Returns ``(values, indices)``, both of the input's shape with `k` on `axis`:
  each lane's `k` largest values in descending order, and their positions in the
  lane. Equal values keep ascending positions; -0.0 equals 0.0 and NaN ranks above
  every number. The values are the input's elements, bit for bit.

  Unlike ``jax.lax.top_k``: any `axis`, UINT32 indices by default, and -0.0 ties
  with 0.0 (kept in position order).

  Args:
    input: InputTensor.
    axis: Axis, in [-input.ndim, input.ndim) (a negative one counts from the end).
    k: K, in [1, input.shape[axis]].
    index_data_type: OutputIndexTensor.DataType: UINT32 (default) or UINT64 (FL 5_0,
      jax_enable_x64).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    (OutputValueTensor, OutputIndexTensor).

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for a non-integer axis or k, a dtype DirectML lacks, or UINT64 with x64 off.

  Examples:
    >>> import numpy as np
    >>> x = np.array([[1, 2, 2, 3], [6, 6, 6, 6]], np.float32)
    >>> values, indices = top_k(x, axis=1, k=3)
    >>> values
    Array([[3., 2., 2.],
           [6., 6., 6.]], dtype=float32)
    >>> indices
    Array([[3, 1, 2],
           [0, 1, 2]], dtype=uint32)
  """
  static = _static(TopKDesc, input, axis, k, index_data_type, feature_level)
  return _top_k(static[0], *static[1])


def top_k1(
  input: ArrayLike,
  *,
  axis: int,
  k: int,
  axis_direction: AxisDirection | str | int = AxisDirection.DECREASING,
  index_data_type: DataTypeLike = DataType.UINT32,
  feature_level: FeatureLevelLike = None,
) -> tuple[jax.Array, jax.Array]:
  """DML_OPERATOR_TOP_K1: the `k` largest or smallest values of each lane, and their positions.

  Returns ``(values, indices)``, both of the input's shape with `k` on `axis`.
  DECREASING keeps each lane's `k` largest values in descending order (TOP_K),
  INCREASING its `k` smallest in ascending order. Equal values keep ascending
  positions in either direction; -0.0 equals 0.0 and NaN ranks above every number
  (last in INCREASING order). The values are the input's elements, bit for bit.

  Args:
    input: InputTensor.
    axis: Axis, in [-input.ndim, input.ndim) (a negative one counts from the end).
    k: K, in [1, input.shape[axis]].
    axis_direction: AxisDirection, ``"DECREASING"`` (default) or ``"INCREASING"``.
    index_data_type: OutputIndexTensor.DataType: UINT32 (default) or UINT64 (FL 5_0,
      jax_enable_x64).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    (OutputValueTensor, OutputIndexTensor).

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for a non-integer axis or k, a dtype DirectML lacks, or UINT64 with x64 off.

  Examples:
    >>> import numpy as np
    >>> x = np.array([[3, 4, 5, 5], [6, 6, 6, 6]], np.int32)
    >>> top_k1(x, axis=1, k=3, axis_direction="INCREASING")
    (Array([[3, 4, 5],
           [6, 6, 6]], dtype=int32), Array([[0, 1, 2],
           [0, 1, 2]], dtype=uint32))
  """
  static = _static(TopK1Desc, input, axis, k, index_data_type, feature_level)
  level, types, *attributes = static[0]
  direction = AxisDirection.from_any(axis_direction)
  return _top_k1((level, types, *attributes, direction), *static[1])


def _static(
  desc_type: type[OperatorDesc],
  input: ArrayLike,
  axis: int,
  k: int,
  index_data_type: DataTypeLike,
  feature_level: FeatureLevelLike,
) -> tuple[tuple[Any, ...], Any]:
  (input,), types = arguments.tensor_operands(desc_type, input)
  static = (
    as_level(feature_level),
    types,
    as_int(axis, "Axis"),
    as_int(k, "K"),
    DataType.from_any(index_data_type),
  )
  return static, (input,)


def _describe(
  desc_type: type[_TopKDesc],
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  axis: int,
  k: int,
  index_data_type: DataType,
  *direction: AxisDirection,
) -> _TopKDesc:
  extra: dict[str, Any] = {"axis_direction": direction[0]} if direction else {}
  sizes = shapes[0]
  if 0 <= axis < len(sizes):  # else validation names the Axis
    output_sizes = sizes[:axis] + (k,) + sizes[axis + 1 :]
    extra["output_value_tensor"] = TensorDesc(types[0], output_sizes)
    extra["output_index_tensor"] = TensorDesc(index_data_type, output_sizes)
  return desc_type(TensorDesc(types[0], sizes), axis, k, **extra)  # type: ignore[call-arg]


def _describe_top_k(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  axis: int,
  k: int,
  index_data_type: DataType,
) -> _TopKDesc:
  return _describe(TopKDesc, types, shapes, axis, k, index_data_type)


def _describe_top_k1(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  axis: int,
  k: int,
  index_data_type: DataType,
  direction: AxisDirection,
) -> _TopKDesc:
  return _describe(TopK1Desc, types, shapes, axis, k, index_data_type, direction)


# Axis counted on the input as given, a negative one from its end.
_NAMES = ("axis", "k", "index_data_type")
_top_k = dispatch.operator_function(
  _describe_top_k, TopKDesc, natural.Ranks(names=_NAMES, axes=((0, None),))
)
_top_k1 = dispatch.operator_function(
  _describe_top_k1, TopK1Desc, natural.Ranks(names=(*_NAMES, "axis_direction"), axes=((0, None),))
)


# -- kernels ---------------------------------------------------------------------------------


def _lanes_roles(selection: Selection, config: Any, x: Any) -> Roles:
  """Every dimension but the axis passes through per shard; the axis is needed whole (K of it
  in both outputs)."""
  selected = around_axis(x.ndim, selection.axis, "k")
  return Roles(
    f"{around_axis(x.ndim, selection.axis, 'n')} -> {selected}, {selected}", whole=("n", "k")
  )


def _native_top_k(
  selection: Selection, config: Any, interpret: bool, x: Any
) -> Callable[[jax.Array], tuple[jax.Array, jax.Array]]:
  def call(input: jax.Array) -> tuple[jax.Array, jax.Array]:
    values, positions = top_k_cpu.top_k(
      input, axis=selection.axis, k=selection.k, descending=selection.descending
    )
    return values, lax.convert_element_type(positions, selection.index_dtype)

  return call


KERNELS = (
  forms.Kernel(
    "top_k_cpu",
    "cpu",
    applies=lambda selection, config, x: top_k_cpu.applies(
      x.shape, selection.axis, x.dtype, config
    ),
    roles=_lanes_roles,
    call=_native_top_k,
    native="top_k.cc",
  ),
)
"""TOP_K's and TOP_K1's kernels (`kernels.forms` chooses): on the CPU, the native partial
selection (32- and 64-bit data, inputs of 8 KiB or more); the rest keeps the lax form."""
