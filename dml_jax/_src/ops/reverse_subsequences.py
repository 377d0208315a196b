"""DML_OPERATOR_REVERSE_SUBSEQUENCES: reverses the first L elements of each lane.

For each lane along Axis, with L = min(length, Sizes[Axis]):
out[i] = input[L - 1 - i] for i < L, and input[i] otherwise.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, SupportsIndex

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, indexing, kernels, natural, placement, registry, rules
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
from dml_jax._src.integers import as_int
from dml_jax._src.kernels import reverse_subsequences_strips_mosaic
from dml_jax._src.kernels.partitioning import Roles, Shaped, around_axis
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc, packed_strides
from dml_jax._src.words import Words

_UINT32 = (DataType.UINT32,)
_Lowering = Callable[[jax.Array, jax.Array], jax.Array]  # of (input, lengths)
_ROW_WORD_BYTES = 4  # rows of narrower lanes move as words of this many bytes
_SUPPORT = SupportTable(
  "REVERSE_SUBSEQUENCES",
  {
    FeatureLevel.FL_2_1: {
      "InputTensor": support(4, UP_TO_32_BIT),
      "SequenceLengthsTensor": support(4, _UINT32),
      "OutputTensor": support(4, UP_TO_32_BIT),
    },
    FeatureLevel.FL_3_0: {
      "InputTensor": support((4, 5), UP_TO_32_BIT),
      "SequenceLengthsTensor": support((4, 5), _UINT32),
      "OutputTensor": support((4, 5), UP_TO_32_BIT),
    },
    FeatureLevel.FL_4_0: {
      "InputTensor": support((1, 8), UP_TO_32_BIT),
      "SequenceLengthsTensor": support((1, 8), _UINT32),
      "OutputTensor": support((1, 8), UP_TO_32_BIT),
    },
    FeatureLevel.FL_5_0: {
      "InputTensor": support((1, 8), ALL_DATA),
      "SequenceLengthsTensor": support((1, 8), (DataType.UINT64, DataType.UINT32)),
      "OutputTensor": support((1, 8), ALL_DATA),
    },
  },
)


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class ReverseSubsequencesDesc(OperatorDesc):
  """`DML_REVERSE_SUBSEQUENCES_OPERATOR_DESC`.

  Attributes:
    input_tensor: InputTensor.
    sequence_lengths_tensor: SequenceLengthsTensor, the input's sizes with 1
      on `axis`: one length per lane.
    axis: Axis, in [0, DimensionCount).
    output_tensor: OutputTensor; None infers it (same as the input).

  Examples:
    >>> desc = ReverseSubsequencesDesc(TensorDesc("FLOAT32", (1, 1, 3, 4)),
    ...                                TensorDesc("UINT32", (1, 1, 3, 1)), axis=3)
    >>> print(desc)
    DML_OPERATOR_REVERSE_SUBSEQUENCES(InputTensor=FLOAT32[1,1,3,4], SequenceLengthsTensor=UINT32[1,1,3,1], Axis=3) -> FLOAT32[1,1,3,4]
  """

  OPERATOR = "REVERSE_SUBSEQUENCES"
  SUPPORT = _SUPPORT
  FUNCTION = "reverse_subsequences"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  sequence_lengths_tensor: TensorDesc = dml_field(
    "SequenceLengthsTensor", FieldKind.TENSOR, index=True
  )
  axis: int = dml_field("Axis", FieldKind.UINT)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      sequence_lengths_tensor: TensorDesc,
      axis: SupportsIndex,
      output_tensor: TensorDesc | None = None,
    ) -> None: ...

  def infer_output(self) -> TensorDesc:
    return TensorDesc(self.input_tensor.data_type, self.input_tensor.sizes)

  def check_rules(self, check: Checker) -> None:
    data, lengths = self.input_tensor, self.sequence_lengths_tensor
    ranks_ok = rules.check_same_rank(
      check, ("InputTensor", data), ("SequenceLengthsTensor", lengths)
    )
    if rules.check_axis(check, "Axis", self.axis, data.dimension_count) and ranks_ok:
      expected = _lengths_sizes(data.sizes, self.axis)
      check.expect(
        lengths.sizes == expected,
        "SequenceLengthsTensor.Sizes",
        f"must be InputTensor.Sizes with 1 on Axis: {braced(expected)}",
        lengths.sizes,
        hint="to share a length across dimensions, give them Strides 0; the functional API"
        " does so for a lengths array with 1 there",
      )

  def explain_output(self) -> list[str]:
    data, axis = self.input_tensor, self.axis
    lines = [
      f"OutputTensor.Sizes = InputTensor.Sizes = {braced(data.sizes)}; OutputTensor.DataType ="
      f" InputTensor.DataType = {data.data_type}."
    ]
    if 0 <= axis < data.dimension_count:
      size = data.sizes[axis]
      lengths = _lengths_sizes(data.sizes, axis)
      lines += [
        f"Lanes run along Axis {axis}, {size} element(s) each; there are {math.prod(lengths)}"
        f" lane(s), one length per lane: SequenceLengthsTensor.Sizes = InputTensor.Sizes with 1"
        f" on Axis = {braced(lengths)}.",
        f"In each lane, with L = min(length, {size}): out[i] = in[L - 1 - i] for i < L and"
        f" out[i] = in[i] for i >= L. Lengths 0 and 1 leave the lane unchanged; lengths above"
        f" {size} reverse the whole lane.",
      ]
    return lines

  def lower(self, input: jax.Array, sequence_lengths: jax.Array) -> jax.Array:
    size = self.input_tensor.sizes[self.axis]
    index_dtype = np.dtype(np.int32 if size <= 2**31 else sequence_lengths.dtype)
    lengths = jnp.minimum(sequence_lengths, np.asarray(size, sequence_lengths.dtype))
    lengths = lax.convert_element_type(lengths, index_dtype)
    lanes = functools.partial(_reverse_lanes, axis=self.axis)
    if math.prod(input.shape[self.axis + 1 :]) <= 1:  # lanes are single elements: no rows
      return lanes(input, lengths)
    if all(n == 1 for n in lengths.shape[self.axis + 1 :]):  # one length a row (zero strides)
      lengths = jnp.broadcast_to(lengths, input.shape[: self.axis] + lengths.shape[self.axis :])
      return _reverse_rows(input, lengths, self.axis)
    lengths = jnp.broadcast_to(lengths, _lengths_sizes(input.shape, self.axis))
    # Each conditional gets callables of its own: JAX traces a callable it has traced once
    # from its cache, so the CPU's and the GPU's branches would share jaxprs.
    fresh_rows = lambda: functools.partial(_reverse_rows, axis=self.axis)
    cpu = gpu_rows = None
    if placement.one_device("cpu"):
      cpu = _cpu_lowering(input.shape, self.axis, lanes=functools.partial(lanes), rows=fresh_rows())
    if placement.one_device("cuda"):
      gpu_rows = functools.partial(_rows_where_shared, rows=fresh_rows(), axis=self.axis)
    return _per_lane(
      input,
      lengths,
      axis=self.axis,
      lanes=lanes,
      cpu=cpu or functools.partial(lanes),
      rows_where_shared=gpu_rows,
    )


def _cpu_lowering(
  shape: tuple[int, ...], axis: int, *, lanes: _Lowering, rows: _Lowering
) -> _Lowering:
  """The CPU's lowering on a process with one CPU device: XLA:CPU copies whole rows several
  times faster than it gathers elements (benchmark case `reverse_subsequences_equal`), so rows whose lanes share one length,
  checked at run time (the common per-batch case), take `rows`; else, where a row holds several
  sub-rows (`_sub_row_start`) whose lanes share one length, those move together; else `lanes`.
  The result is the same either way.

  Over several devices the operator takes `lanes` alone: a run-time check over all the lengths
  feeds a `lax.cond`, whose predicate a sharded program would have to all-reduce.
  """
  rest = lanes
  start = _sub_row_start(shape, axis)
  if start is not None:  # lanes sharing a length along the last dimension(s) move together
    moved = functools.partial(_reverse_sub_rows, axis=axis)
    rest = functools.partial(_sub_rows_where_shared, math.prod(shape[start:]), moved, lanes)
  return _rows_where_shared(rest, rows=rows, axis=axis)


def _rows_where_shared(other: _Lowering, *, rows: _Lowering, axis: int) -> _Lowering:
  """`rows` where the lanes of every row (the dimensions after `axis`) share one length,
  checked at run time, else `other`: a lowering of (input, lengths)."""

  def lowering(input: jax.Array, lengths: jax.Array) -> jax.Array:
    lanes = lengths.reshape(input.shape[:axis] + (-1,))
    shared = jnp.all(lanes == lanes[..., :1])
    return lax.cond(shared, rows, other, input, lengths)

  return lowering


def _sub_rows_where_shared(
  size: int,
  moved: _Lowering,
  other: _Lowering,
  input: jax.Array,
  lengths: jax.Array,
) -> jax.Array:
  """`moved(input, lengths)` where every run of `size` lanes at the end of a row (a sub-row)
  shares one length, checked at run time, else `other(input, lengths)`."""
  runs = lengths.reshape(-1, size)
  return lax.cond(jnp.all(runs == runs[:, :1]), moved, other, input, lengths)


def _reverse_lanes(input: jax.Array, lengths: jax.Array, axis: int) -> jax.Array:
  """Every element gathered along `axis` from its lane's source position (lengths clamped)."""
  lengths = jnp.broadcast_to(lengths, input.shape)
  position = lax.broadcasted_iota(lengths.dtype, input.shape, axis)
  mirrored = lengths - np.asarray(1, lengths.dtype) - position
  return indexing.gather_along_axis(input, lax.select(position < lengths, mirrored, position), axis)


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def _reverse_rows(input: jax.Array, lengths: jax.Array, axis: int) -> jax.Array:
  """The same when every lane of a row (the dimensions after `axis`) has one length: whole
  rows gathered by the first lane's source positions. Rows of narrow types move as 32-bit
  words (XLA's gather moves an element a thread: int8 rows ran at 0.55 of a copy on an H100);
  the tangent moves unpacked, since a bitcast has no transpose."""
  rows = input.reshape(input.shape[: axis + 1] + (math.prod(input.shape[axis + 1 :]),))
  words = _row_words(rows)
  if words is None:
    return _gather_rows(rows, lengths, axis).reshape(input.shape)
  out = _gather_rows(words.pack(rows), lengths, axis)
  return words.unpack(out, input.dtype).reshape(input.shape)


@_reverse_rows.defjvp
def _reverse_rows_jvp(axis, primals, tangents):
  input, lengths = primals
  return _reverse_rows(input, lengths, axis), _gather_rows(tangents[0], lengths, axis)


def _row_words(rows: jax.Array) -> Words | None:
  """32-bit words of 2 or 4 lanes where a row of narrow lanes holds whole words, else None."""
  itemsize = rows.dtype.itemsize
  if itemsize < _ROW_WORD_BYTES and rows.shape[-1] * itemsize % _ROW_WORD_BYTES == 0:
    return Words(itemsize, _ROW_WORD_BYTES)
  return None


def _gather_rows(input: jax.Array, lengths: jax.Array, axis: int) -> jax.Array:
  """`input`'s rows (everything after `axis`, moved whole) from the sources that the first
  lane's length of each row gives."""
  leading = input.shape[:axis]
  first = lengths.reshape(leading + (-1,))[..., :1]
  position = lax.broadcasted_iota(lengths.dtype, leading + (input.shape[axis],), axis)
  mirrored = first - np.asarray(1, lengths.dtype) - position
  source = lax.select(position < first, mirrored, position)
  return indexing.gather_slices_along_axis(input, source, axis)


def _sub_row_start(shape: tuple[int, ...], axis: int) -> int | None:
  """Where a sub-row starts: the input's last dimension above 1 (a sub-row is it and the 1s
  after it), where a row (everything after `axis`) holds several sub-rows; else None (a
  sub-row would be a whole row, or one element), as where int32 cannot number the sub-rows."""
  after = [d for d in range(axis + 1, len(shape)) if shape[d] > 1]
  if len(after) < 2 or math.prod(shape[: after[-1]]) > 2**31 - 1:
    return None
  return after[-1]


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def _reverse_sub_rows(input: jax.Array, lengths: jax.Array, axis: int) -> jax.Array:
  """The same when the lanes of every sub-row (`_sub_row_start`: the last dimension above 1,
  and any 1s after it) share one length: the input viewed as a column of sub-rows, each moved
  whole from the sub-row that its first lane's length mirrors it to. One gather of rows with no
  batch dimensions, which XLA:CPU compiles to vector copies (a gather of elements moves one at
  a time). Narrow lanes move as 32-bit words, as in `_reverse_rows`."""
  start = _sub_row_start(input.shape, axis)
  assert start is not None
  sub_rows = input.reshape(-1, math.prod(input.shape[start:]))
  words = _row_words(sub_rows)
  if words is None:
    return _gather_sub_rows(sub_rows, lengths, input.shape[:start], axis).reshape(input.shape)
  out = _gather_sub_rows(words.pack(sub_rows), lengths, input.shape[:start], axis)
  return words.unpack(out, input.dtype).reshape(input.shape)


@_reverse_sub_rows.defjvp
def _reverse_sub_rows_jvp(axis, primals, tangents):
  input, lengths = primals
  start = _sub_row_start(input.shape, axis)
  assert start is not None
  tangent = tangents[0].reshape(-1, math.prod(input.shape[start:]))
  moved = _gather_sub_rows(tangent, lengths, input.shape[:start], axis)
  return _reverse_sub_rows(input, lengths, axis), moved.reshape(input.shape)


def _gather_sub_rows(
  sub_rows: jax.Array, lengths: jax.Array, grid: tuple[int, ...], axis: int
) -> jax.Array:
  """`sub_rows`, the input as (sub-rows, elements) with the sub-rows numbered over `grid` (the
  input's dimensions before a sub-row), gathered whole: output sub-row g from sub-row g with its
  coordinate on `axis` mirrored by g's first lane's length (int32: the grid fits it)."""
  lanes = grid[:axis] + (1,) + grid[axis + 1 :]
  first = lengths.reshape(lanes + (-1,))[..., 0]
  first = jnp.broadcast_to(lax.convert_element_type(first, np.int32), grid)
  position = lax.broadcasted_iota(np.int32, grid, axis)
  # A step along `axis` is a step of this many sub-rows.
  stride = np.int32(math.prod(grid[axis + 1 :]))
  flat = lax.iota(np.int32, math.prod(grid)).reshape(grid)
  moved = flat + (first - np.int32(1) - position - position) * stride
  source = lax.select(position < first, moved, flat)
  return indexing.gather_slices_along_axis(sub_rows, source.reshape(-1), 0)


def reverse_subsequences(
  input: ArrayLike,
  sequence_lengths: ArrayLike,
  *,
  axis: int,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_REVERSE_SUBSEQUENCES: reverses the first `length` elements of each lane.

  `sequence_lengths` has the input's shape with size 1 on `axis` (one length
  per lane). A length above the axis size reverses the whole lane; 0 and 1
  leave it unchanged; elements past the length are copied in place. Size 1 on
  another dimension shares one length across it (DirectML's stride 0): with 1
  on every dimension after `axis`, whole rows move, known from the shapes.

  Unlike ONNX ReverseSequence the lengths are not a 1-D batch vector, and any
  axis may be reversed; unlike ``jnp.flip`` only a prefix of each lane moves.

  Args:
    input: InputTensor.
    sequence_lengths: SequenceLengthsTensor (uint32; uint64 from FL 5_0), or
      an array with 1 where a length is shared (zero strides).
    axis: Axis, in [-n, n) for the common rank n (negative: from the end).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor: same shape and dtype as `input`.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer lengths or axis, or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> x = np.arange(8, dtype=np.int32).reshape(2, 4)
    >>> reverse_subsequences(x, np.array([[3], [9]], np.uint32), axis=1)
    Array([[2, 1, 0, 3],
           [7, 6, 5, 4]], dtype=int32)

    One length per batch entry, shared across the last axis:

    >>> rows = np.arange(8, dtype=np.int32).reshape(1, 4, 2)
    >>> reverse_subsequences(rows, np.array([[[3]]], np.uint32), axis=1)[0]
    Array([[4, 5],
           [2, 3],
           [0, 1],
           [6, 7]], dtype=int32)
  """
  (input, lengths), types = arguments.tensor_operands(
    ReverseSubsequencesDesc, input, sequence_lengths
  )
  level = as_level(feature_level)
  return _reverse_subsequences((level, types, as_int(axis, "Axis")), input, lengths)


def _describe_reverse_subsequences(
  types: tuple[DataType, ...], shapes: tuple[tuple[int, ...], ...], axis: int
) -> ReverseSubsequencesDesc:
  return ReverseSubsequencesDesc(
    TensorDesc(types[0], shapes[0]), _lengths_desc(types[1], shapes, axis), axis=axis
  )


def _lengths_sizes(input_sizes: tuple[int, ...], axis: int) -> tuple[int, ...]:
  """SequenceLengthsTensor.Sizes: the input's with 1 on `axis`."""
  return input_sizes[:axis] + (1,) + input_sizes[axis + 1 :]


def _lengths_desc(data_type: DataType, shapes: tuple, axis: int) -> TensorDesc:
  """The SequenceLengthsTensor of a lengths array. An array with 1 where the input's sizes (1 on
  `axis`) are larger describes them with zero strides there, DirectML's way of sharing one
  length (per batch entry, say); any other shape is taken as given, for validation to judge."""
  input_shape, shape = shapes
  if not (isinstance(axis, int) and 0 <= axis < len(input_shape) == len(shape)):
    return TensorDesc(data_type, shape)
  sizes = _lengths_sizes(input_shape, axis)
  if shape == sizes or any(n not in (1, size) for n, size in zip(shape, sizes, strict=True)):
    return TensorDesc(data_type, shape)
  packed = packed_strides(shape)
  strides = tuple(0 if n != size else d for n, size, d in zip(shape, sizes, packed, strict=True))
  return TensorDesc(data_type, sizes, strides=strides)


_reverse_subsequences = dispatch.operator_function(
  _describe_reverse_subsequences,
  ReverseSubsequencesDesc,
  natural.Ranks(names=("axis",), axes=((0, None),)),
  moves_bits=True,
)


# -- kernels ---------------------------------------------------------------------------------
# `fields`: the axis. The operands: the input and a length per lane (the input's shape with 1
# on `axis`, clamped to [0, size], int32 where the size allows).


def _per_lane(
  input: jax.Array,
  lengths: jax.Array,
  *,
  axis: int,
  lanes: _Lowering,
  cpu: _Lowering,
  rows_where_shared: Callable[[_Lowering], _Lowering] | None = None,
) -> jax.Array:
  """REVERSE_SUBSEQUENCES with a length per lane, in the form each backend runs fastest.

  `lanes(input, lengths)` gathers every element from its lane's source position: the default,
  and the gradient. `cpu(input, lengths)` is the CPU's lowering (`_cpu_lowering`). On CUDA
  GPUs where the strip kernel applies (`KERNELS`): `rows_where_shared(strips)`, which moves
  whole rows where the lanes of every row share one length (checked at run time) and runs the
  kernel otherwise, or the kernel alone where `rows_where_shared` is None.

  Examples:
    >>> def lanes(x, n):  # every element from its lane's source position
    ...   t = jnp.arange(x.shape[1])[:, None]
    ...   return jnp.take_along_axis(x, jnp.where(t < n, n - 1 - t, t), axis=1)
    >>> x = np.arange(8, dtype=np.float32).reshape(1, 4, 2)
    >>> n = np.array([[[3, 0]]], np.int32)
    >>> _per_lane(x, n, axis=1, lanes=lanes, cpu=lanes)[0]
    Array([[4., 1.],
           [2., 3.],
           [0., 5.],
           [6., 7.]], dtype=float32)
  """
  default = lanes
  strips = kernels.chosen(KERNELS, axis, input, lengths).get("cuda")
  if strips is not None:
    gpu = strips if rows_where_shared is None else rows_where_shared(strips)
    default = functools.partial(kernels.on_cuda, gpu, lanes)
  return lax.platform_dependent(input, lengths, cpu=cpu, default=default)


def _strips_roles(axis: int, config: Any, x: Shaped, n: Shaped) -> Roles:
  """Every dimension but `axis` passes through, where the strips still plan on the shards."""

  def fits(x, n):
    plan = reverse_subsequences_strips_mosaic.plan(
      x.shape, np.dtype(x.dtype).itemsize, axis, config
    )
    return plan is not None

  lanes, lengths = around_axis(x.ndim, axis, "n"), around_axis(x.ndim, axis, "one")
  return Roles(f"{lanes}, {lengths} -> {lanes}", whole=("n", "one"), fits=fits)


KERNELS = (
  kernels.Kernel(
    "reverse_subsequences_strips_mosaic",
    "cuda",
    applies=lambda axis, config, x, n: reverse_subsequences_strips_mosaic.applies(
      x.shape, x.dtype, axis, config
    ),
    roles=_strips_roles,
    call=lambda axis, config, interpret, x, n: functools.partial(
      reverse_subsequences_strips_mosaic.reverse_lanes, axis=axis, config=config
    ),
  ),
)
"""REVERSE_SUBSEQUENCES's kernel (`kernels.forms` chooses): strips of lanes staged in shared
memory by TMA (GPUs with TMA)."""
