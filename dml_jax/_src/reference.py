"""Slow, obviously-correct NumPy reference implementations (the test oracle).

Every function in this module is a direct transcription of DirectML's definition of
its operator (the operators' docstrings and the README state them in the project's
words): it loops over output coordinates with :func:`numpy.ndindex` and computes each
element on its own. Nothing here is vectorised or clever, so that a reader can check
the code against the definitions line by line. The functions are meant for tests
only: they are fine for tensors of a few thousand elements and far too slow for
anything bigger.

The module depends on NumPy and the standard library only (never on JAX), so it
stays an independent oracle for the JAX implementation.

Conventions shared by all functions:

* All tensors of one operator have the same rank ``n`` (DirectML pads logical
  shapes with leading 1s). This is asserted, not silently fixed.
* The output dtype is exactly the input (data) dtype; it is never promoted.
* Index values are read one at a time as Python ints (``int(indices[pos])``),
  so 64-bit values such as ``uint64`` ``2**64 - 1`` or ``int64`` ``-2**63`` are
  never truncated or wrapped.
* Whether an index may be negative depends only on the index dtype: signed
  integer types count negative values from the end of the axis; unsigned types
  never wrap.
* Out-of-range indices (undocumented in DirectML) follow dml_jax's documented
  policy: after the negative-index rule, a gather clamps them into
  ``[0, size - 1]`` and a scatter drops their update. ONE_HOT is the
  exception: DirectML defines an out-of-range index (its sequence is all
  OffValue), and its oracle says so.
* Duplicate scatter targets (undefined in DirectML) follow dml_jax's policy: the
  scatters write their updates one by one in row-major order, so the last one wins.
* Descriptors are not validated beyond ``assert`` statements; this module is a
  value oracle, not a validator.
"""

from __future__ import annotations

import builtins  # `slice` below is SLICE's oracle; Python's slice is builtins.slice
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = [
  "cast",
  "argmax",
  "argmin",
  "cumulative_product",
  "cumulative_summation",
  "depth_to_space",
  "depth_to_space1",
  "diagonal_matrix",
  "diagonal_matrix1",
  "element_wise_identity",
  "element_wise_if",
  "fill_value_constant",
  "fill_value_sequence",
  "gather",
  "gather_elements",
  "gather_nd",
  "gather_nd_output_sizes",
  "gather_output_sizes",
  "join",
  "max_unpooling",
  "nonzero_coordinates",
  "normalize_index",
  "one_hot",
  "padding",
  "padding1",
  "resample",
  "resample1",
  "resample2",
  "reverse_subsequences",
  "scatter_elements",
  "scatter_nd",
  "scatter_nd_updates_sizes",
  "scatter_target",
  "space_to_depth",
  "space_to_depth1",
  "slice",
  "slice1",
  "slice_grad",
  "split",
  "tile",
  "top_k",
  "top_k1",
  "unfold",
  "unfold_blocks_per_dimension",
  "upsample_2d",
]


# --------------------------------------------------------------------------- #
# Index rule
# --------------------------------------------------------------------------- #


def normalize_index(index: int, size: int, *, signed: bool) -> int:
  """Maps one raw index value to the element DirectML reads.

  Applies DirectML's negative-index rule (FL >= 3.0, signed index types only)
  and then dml_jax's out-of-range policy (clamp inside the axis). Works on
  Python ints, so there is no overflow whatever the index width.

  Args:
    index: The raw index value, as read from the indices tensor.
    size: The size of the indexed axis (at least 1).
    signed: Whether the indices tensor has a signed integer type. Only signed
      indices may count from the end; an unsigned value is always taken as a
      (possibly huge) non-negative number.

  Returns:
    An index in ``[0, size - 1]``.
  """
  index = int(index)
  size = int(size)
  assert size >= 1, f"axis size must be at least 1, got {size}"
  if signed and index < 0:
    index += size
  return min(max(index, 0), size - 1)


def _is_signed(dtype: np.dtype) -> bool:
  """Returns whether an index dtype is a signed integer type."""
  assert np.issubdtype(dtype, np.integer), f"indices must be integers, got {dtype}"
  return bool(np.issubdtype(dtype, np.signedinteger))


def _check_axis(axis: int, rank: int) -> int:
  """Asserts that ``axis`` is a valid (non-negative, DML-style) axis."""
  axis = int(axis)
  assert 0 <= axis < rank, f"axis {axis} out of range for rank {rank}"
  return axis


def _replace(coords: tuple[int, ...], position: int, value: int) -> tuple[int, ...]:
  """Returns ``coords`` with the entry at ``position`` replaced by ``value``."""
  return coords[:position] + (value,) + coords[position + 1 :]


# --------------------------------------------------------------------------- #
# GATHER_ELEMENTS
# --------------------------------------------------------------------------- #


def gather_elements(input: np.ndarray, indices: np.ndarray, *, axis: int) -> np.ndarray:
  """Reference DML_OPERATOR_GATHER_ELEMENTS.

  ``out[o] = input[o with o[axis] := normalize(indices[o])]`` for every output
  coordinate ``o``.

  Args:
    input: The data tensor, rank n.
    indices: Integer index tensor, rank n. Its sizes equal the input's in
      every dimension except ``axis``.
    axis: The dimension of ``input`` to gather along, in ``[0, n)``.

  Returns:
    An array with the shape of ``indices`` and the dtype of ``input``.
  """
  input = np.asarray(input)
  indices = np.asarray(indices)
  rank = input.ndim
  assert indices.ndim == rank, "input and indices must have the same rank"
  axis = _check_axis(axis, rank)
  for dim in range(rank):
    if dim != axis:
      assert indices.shape[dim] == input.shape[dim], (
        f"indices size {indices.shape[dim]} != input size {input.shape[dim]} in dimension {dim}"
      )
  signed = _is_signed(indices.dtype)
  axis_size = input.shape[axis]

  output = np.empty(indices.shape, dtype=input.dtype)
  for out_coords in np.ndindex(*indices.shape):
    source = normalize_index(int(indices[out_coords]), axis_size, signed=signed)
    output[out_coords] = input[_replace(out_coords, axis, source)]
  return output


# --------------------------------------------------------------------------- #
# GATHER_ND / GATHER_ND1
# --------------------------------------------------------------------------- #


def _logical_shape(sizes: Sequence[int], count: int, what: str) -> tuple[int, ...]:
  """Returns the trailing ``count`` sizes; asserts the leading ones are 1."""
  sizes = tuple(int(s) for s in sizes)
  assert 1 <= count <= len(sizes), f"{what} dimension count {count} not in [1, {len(sizes)}]"
  leading = sizes[: len(sizes) - count]
  assert all(s == 1 for s in leading), (
    f"{what} sizes {sizes}: dims outside the last {count} must be 1"
  )
  return sizes[len(sizes) - count :]


def _gather_nd_logical_shapes(
  input_sizes: Sequence[int],
  indices_sizes: Sequence[int],
  input_dimension_count: int,
  indices_dimension_count: int,
  batch_dimension_count: int,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
  """Computes the logical input, indices and output shapes of GATHER_ND(1).

  Returns:
    ``(I, X, logical_out)`` where ``I``/``X`` are the meaningful trailing
    input/indices sizes and ``logical_out = X[:-1] ++ I[B + t:]``.
  """
  assert len(input_sizes) == len(indices_sizes), "input and indices must have the same rank"
  logical_input = _logical_shape(input_sizes, input_dimension_count, "input")
  logical_indices = _logical_shape(indices_sizes, indices_dimension_count, "indices")
  batch = int(batch_dimension_count)
  assert 0 <= batch < len(logical_input), "batch count must be < InputDimensionCount"
  assert batch < len(logical_indices), "batch count must be < IndicesDimensionCount"
  assert logical_input[:batch] == logical_indices[:batch], (
    f"batch sizes differ: {logical_input[:batch]} vs {logical_indices[:batch]}"
  )
  tuple_size = logical_indices[-1]
  assert 1 <= tuple_size <= len(logical_input) - batch, (
    f"index tuple size {tuple_size} must be in [1, {len(logical_input) - batch}]"
  )
  # Note: the DML pages write the trailing part as the last `tuple_size` input
  # dims, which contradicts their own examples. The rule
  # below (skip the batch and indexed dims) is the one the examples follow.
  logical_output = logical_indices[:-1] + logical_input[batch + tuple_size :]
  return logical_input, logical_indices, logical_output


def _right_align(logical_sizes: tuple[int, ...], rank: int) -> tuple[int, ...]:
  """Pads ``logical_sizes`` with leading 1s up to ``rank`` dimensions."""
  assert len(logical_sizes) <= rank, (
    f"logical output rank {len(logical_sizes)} exceeds tensor rank {rank}"
  )
  return (1,) * (rank - len(logical_sizes)) + logical_sizes


def gather_nd_output_sizes(
  input_sizes: Sequence[int],
  indices_sizes: Sequence[int],
  *,
  input_dimension_count: int,
  indices_dimension_count: int,
  batch_dimension_count: int = 0,
) -> tuple[int, ...]:
  """Output sizes of DML_OPERATOR_GATHER_ND(1).

  ``X[:-1] ++ I[B + t:]`` right-aligned to the common rank with leading 1s,
  where ``I``/``X`` are the logical input/indices sizes, ``B`` the batch
  dimension count and ``t = X[-1]`` the index tuple length.

  Args:
    input_sizes: ``InputTensor.Sizes`` (length n).
    indices_sizes: ``IndicesTensor.Sizes`` (length n).
    input_dimension_count: ``InputDimensionCount``, in ``[1, n]``.
    indices_dimension_count: ``IndicesDimensionCount``, in ``[1, n]``.
    batch_dimension_count: ``BatchDimensionCount`` (GATHER_ND1; 0 for GATHER_ND).

  Returns:
    The expected ``OutputTensor.Sizes`` as a tuple of n ints.
  """
  _, _, logical_output = _gather_nd_logical_shapes(
    input_sizes,
    indices_sizes,
    input_dimension_count,
    indices_dimension_count,
    batch_dimension_count,
  )
  return _right_align(logical_output, len(input_sizes))


def gather_nd(
  input: np.ndarray,
  indices: np.ndarray,
  *,
  input_dimension_count: int | None = None,
  indices_dimension_count: int | None = None,
  batch_dimension_count: int = 0,
) -> np.ndarray:
  """Reference DML_OPERATOR_GATHER_ND and GATHER_ND1.

  On logical shapes: ``out[b, p, r] = in[b, idx[b, p, 0], ..., idx[b, p, t-1], r]``
  where ``b`` runs over the ``B`` batch dims, ``p`` over the remaining index
  positions, ``r`` over the copied trailing input dims ``I[B + t:]``, and
  tuple component ``j`` is normalized against ``I[B + j]``.

  Args:
    input: The data tensor, rank n.
    indices: Integer index tensor, rank n; its last dimension is the tuple
      length ``t``.
    input_dimension_count: Number of meaningful trailing input dims
      (``None`` means n).
    indices_dimension_count: Number of meaningful trailing indices dims,
      tuple dim included (``None`` means n).
    batch_dimension_count: Number of leading logical dims shared as batches.

  Returns:
    An array of rank n (the logical output right-aligned with leading 1s)
    with the dtype of ``input``.
  """
  input = np.asarray(input)
  indices = np.asarray(indices)
  rank = input.ndim
  assert indices.ndim == rank, "input and indices must have the same rank"
  if input_dimension_count is None:
    input_dimension_count = rank
  if indices_dimension_count is None:
    indices_dimension_count = rank
  logical_input, logical_indices, logical_output = _gather_nd_logical_shapes(
    input.shape,
    indices.shape,
    input_dimension_count,
    indices_dimension_count,
    batch_dimension_count,
  )
  batch = int(batch_dimension_count)
  tuple_size = logical_indices[-1]
  signed = _is_signed(indices.dtype)
  # Leading dims outside the counts are 1, so reshaping them away is lossless.
  data = input.reshape(logical_input)
  index_tuples = indices.reshape(logical_indices)
  # Output dims [0, position_end) come from the indices; the rest are `r`.
  position_end = len(logical_indices) - 1

  output = np.empty(logical_output, dtype=input.dtype)
  for out_coords in np.ndindex(*logical_output):
    batch_coords = out_coords[:batch]
    position = out_coords[:position_end]  # batch dims included
    trailing = out_coords[position_end:]
    gathered = tuple(
      normalize_index(
        int(index_tuples[position + (j,)]),
        logical_input[batch + j],
        signed=signed,
      )
      for j in range(tuple_size)
    )
    output[out_coords] = data[batch_coords + gathered + trailing]
  return output.reshape(_right_align(logical_output, rank))


# --------------------------------------------------------------------------- #
# GATHER
# --------------------------------------------------------------------------- #


def _gather_logical_shapes(
  input_sizes: Sequence[int], indices_sizes: Sequence[int], axis: int, index_dimensions: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
  """Returns ``(J, logical_out)`` of GATHER.

  ``J`` is the trailing ``index_dimensions`` sizes of the indices (the sizes
  before them must be 1) and ``logical_out = input[:axis] ++ J ++ input[axis + 1:]``.
  """
  input_sizes = tuple(int(s) for s in input_sizes)
  indices_sizes = tuple(int(s) for s in indices_sizes)
  rank = len(input_sizes)
  assert len(indices_sizes) == rank, "input and indices must have the same rank"
  axis = _check_axis(axis, rank)
  count = int(index_dimensions)
  assert 0 <= count <= rank, f"index dimension count {count} not in [0, {rank}]"
  padding = indices_sizes[: rank - count]
  assert all(s == 1 for s in padding), (
    f"indices sizes {indices_sizes}: dims outside the last {count} must be 1"
  )
  logical_indices = indices_sizes[rank - count :]
  return logical_indices, input_sizes[:axis] + logical_indices + input_sizes[axis + 1 :]


def _right_align_or_crop(logical_sizes: tuple[int, ...], rank: int) -> tuple[int, ...]:
  """Pads ``logical_sizes`` with leading 1s to ``rank`` dims, or drops leading 1s down to it."""
  if len(logical_sizes) <= rank:
    return (1,) * (rank - len(logical_sizes)) + logical_sizes
  dropped = logical_sizes[: len(logical_sizes) - rank]
  assert all(s == 1 for s in dropped), (
    f"logical output {logical_sizes} does not fit rank {rank}: only leading 1s may be cropped"
  )
  return logical_sizes[len(logical_sizes) - rank :]


def gather_output_sizes(
  input_sizes: Sequence[int],
  indices_sizes: Sequence[int],
  *,
  axis: int,
  index_dimensions: int,
) -> tuple[int, ...]:
  """Output sizes of DML_OPERATOR_GATHER.

  ``input[:axis] ++ J ++ input[axis + 1:]`` (``J``: the trailing
  ``index_dimensions`` indices sizes) right-aligned to the common rank: leading
  1s added, or leading 1s cropped.
  """
  _, logical = _gather_logical_shapes(input_sizes, indices_sizes, axis, index_dimensions)
  return _right_align_or_crop(logical, len(input_sizes))


def gather(
  input: np.ndarray,
  indices: np.ndarray,
  *,
  axis: int,
  index_dimensions: int | None = None,
) -> np.ndarray:
  """Reference DML_OPERATOR_GATHER.

  On logical shapes: ``out[a, j, b] = input[a, normalize(idx[j]), b]``, where
  ``a`` runs over the input dims before ``axis``, ``j`` over the logical
  indices ``J`` (the trailing ``index_dimensions`` dims of ``indices``) and
  ``b`` over the input dims after ``axis``.

  Args:
    input: The data tensor, rank n.
    indices: Integer index tensor, rank n; the dims before its trailing
      ``index_dimensions`` ones are 1.
    axis: The input dimension the indices select along, in ``[0, n)``.
    index_dimensions: The number of meaningful trailing indices dims, in
      ``[0, n]`` (``None`` means n).

  Returns:
    An array of rank n (the logical output right-aligned: leading 1s added or
    cropped) with the dtype of ``input``.
  """
  input = np.asarray(input)
  indices = np.asarray(indices)
  rank = input.ndim
  if index_dimensions is None:
    index_dimensions = rank
  logical_indices, logical_output = _gather_logical_shapes(
    input.shape, indices.shape, axis, index_dimensions
  )
  count = len(logical_indices)
  signed = _is_signed(indices.dtype)
  axis_size = input.shape[axis]
  index_values = indices.reshape(logical_indices)

  output = np.empty(logical_output, dtype=input.dtype)
  for out_coords in np.ndindex(*logical_output):
    before = out_coords[:axis]
    position = out_coords[axis : axis + count]
    after = out_coords[axis + count :]
    source = normalize_index(int(index_values[position]), axis_size, signed=signed)
    output[out_coords] = input[before + (source,) + after]
  return output.reshape(_right_align_or_crop(logical_output, rank))


# --------------------------------------------------------------------------- #
# REVERSE_SUBSEQUENCES
# --------------------------------------------------------------------------- #


def reverse_subsequences(
  input: np.ndarray,
  sequence_lengths: np.ndarray,
  *,
  axis: int,
) -> np.ndarray:
  """Reference DML_OPERATOR_REVERSE_SUBSEQUENCES.

  For every lane along ``axis`` with ``L = min(length, S)`` (``S`` the axis
  size): ``out[i] = in[L - 1 - i]`` for ``i < L`` and ``out[i] = in[i]``
  otherwise. Lengths 0 and 1 leave the lane unchanged.

  Args:
    input: The data tensor, rank n.
    sequence_lengths: Unsigned integer tensor with the input's shape except
      size 1 at ``axis``: one length per lane.
    axis: The dimension to reverse along, in ``[0, n)``.

  Returns:
    An array with the shape and dtype of ``input``.
  """
  input = np.asarray(input)
  sequence_lengths = np.asarray(sequence_lengths)
  rank = input.ndim
  assert sequence_lengths.ndim == rank, "input and lengths must have the same rank"
  axis = _check_axis(axis, rank)
  expected_lengths_shape = _replace(input.shape, axis, 1)
  assert sequence_lengths.shape == expected_lengths_shape, (
    f"lengths shape {sequence_lengths.shape} != {expected_lengths_shape}"
  )
  assert np.issubdtype(sequence_lengths.dtype, np.unsignedinteger), (
    f"sequence lengths must be unsigned, got {sequence_lengths.dtype}"
  )
  axis_size = input.shape[axis]

  # Whole arrays at once (the kernels' tests run this on lanes of thousands): `i` is each
  # element's position along the axis, `length` its lane's L (unsigned, so never negative).
  i = np.arange(axis_size).reshape(_replace((1,) * rank, axis, axis_size))
  length = np.minimum(sequence_lengths.astype(np.uint64), axis_size).astype(np.int64)
  source = np.where(i < length, length - 1 - i, i)
  return np.take_along_axis(input, source, axis=axis)


# --------------------------------------------------------------------------- #
# JOIN
# --------------------------------------------------------------------------- #


def join(inputs: Sequence[np.ndarray], *, axis: int) -> np.ndarray:
  """Reference DML_OPERATOR_JOIN.

  Input ``k`` is copied into the output at axis offset ``sum(sizes[:k])``.
  Built from explicit slab copies (not ``np.concatenate``) so that it stays
  independent of the NumPy function tests compare it with.

  Args:
    inputs: One or more tensors of equal rank and dtype whose sizes agree in
      every dimension except ``axis``.
    axis: The dimension to join along, in ``[0, n)``.

  Returns:
    The joined array, with the common dtype of ``inputs``.
  """
  arrays = [np.asarray(x) for x in inputs]
  assert arrays, "JOIN needs at least one input"
  first = arrays[0]
  rank = first.ndim
  axis = _check_axis(axis, rank)
  for array in arrays:
    assert array.ndim == rank, "all inputs must have the same rank"
    assert array.dtype == first.dtype, "all inputs must have the same dtype"
    assert _replace(array.shape, axis, 0) == _replace(first.shape, axis, 0), (
      f"sizes {array.shape} and {first.shape} differ outside axis {axis}"
    )

  total = sum(array.shape[axis] for array in arrays)
  output = np.empty(_replace(first.shape, axis, total), dtype=first.dtype)
  offset = 0
  for array in arrays:
    extent = array.shape[axis]
    slab = (builtins.slice(None),) * axis + (builtins.slice(offset, offset + extent),)
    output[slab] = array
    offset += extent
  return output


# --------------------------------------------------------------------------- #
# ELEMENT_WISE_IDENTITY
# --------------------------------------------------------------------------- #


def element_wise_identity(input: np.ndarray, *, scale_bias: object = None) -> np.ndarray:
  """Reference DML_OPERATOR_ELEMENT_WISE_IDENTITY: ``out[c] = input[c]``, or with a scale
  and bias ``input[c] * Scale + Bias`` (float data only).

  Scale and Bias are FLOATs (float32). The arithmetic is done one element at a time on
  NumPy scalars, each operation rounded: in float64 for float64 data, else in float32,
  the product rounded before the sum is taken; float16 results are rounded from that
  float32 sum. NaN results are NaN; their payloads are not part of the definition.

  Args:
    input: The tensor.
    scale_bias: None, a (scale, bias) pair, a mapping with "Scale" and "Bias", or an
      object with ``scale`` and ``bias`` attributes.

  Returns:
    An array of the input's shape and dtype.
  """
  input = np.asarray(input)
  output = np.empty(input.shape, dtype=input.dtype)
  if scale_bias is None:
    for position in np.ndindex(*input.shape):
      output[position] = input[position]
    return output
  if isinstance(scale_bias, dict):
    scale, bias = scale_bias["Scale"], scale_bias["Bias"]
  elif isinstance(scale_bias, tuple | list):
    scale, bias = scale_bias
  else:
    scale, bias = scale_bias.scale, scale_bias.bias  # type: ignore[attr-defined]
  assert input.dtype.kind == "f", "a scale and bias apply to float data only"
  work = np.float64 if input.dtype == np.float64 else np.float32
  with np.errstate(over="ignore", invalid="ignore"):
    s, b = work(np.float32(scale)), work(np.float32(bias))
    for position in np.ndindex(*input.shape):
      product = work(input[position]) * s  # a NumPy scalar operation: rounded to `work`
      output[position] = (product + b).astype(input.dtype)
  return output


# --------------------------------------------------------------------------- #
# TILE
# --------------------------------------------------------------------------- #


def tile(input: np.ndarray, *, repeats: Sequence[int]) -> np.ndarray:
  """Reference DML_OPERATOR_TILE: ``out[o] = input[o mod input.shape]``.

  Every output coordinate is reduced modulo the input's sizes, one element at a
  time (not ``np.tile``, which the tests compare it with).

  Args:
    input: The tensor to repeat.
    repeats: One count >= 1 per dimension of ``input``.

  Returns:
    An array of shape ``input.shape[i] * repeats[i]`` and the input's dtype.
  """
  input = np.asarray(input)
  assert len(repeats) == input.ndim, "one repeat count per dimension"
  assert all(int(r) >= 1 for r in repeats), "every repeat count must be >= 1"
  shape = tuple(s * int(r) for s, r in zip(input.shape, repeats, strict=True))
  output = np.empty(shape, dtype=input.dtype)
  for position in np.ndindex(*shape):
    source = tuple(c % s for c, s in zip(position, input.shape, strict=True))
    output[position] = input[source]
  return output


# --------------------------------------------------------------------------- #
# DEPTH_TO_SPACE, DEPTH_TO_SPACE1, SPACE_TO_DEPTH, SPACE_TO_DEPTH1
# --------------------------------------------------------------------------- #

_DEPTH_SPACE_ORDERS = ("DEPTH_COLUMN_ROW", "COLUMN_ROW_DEPTH")  # by DML_DEPTH_SPACE_ORDER value


def _depth_space_order(order: str | int) -> str:
  """An order's name from its name (with or without DML_DEPTH_SPACE_ORDER_) or its value."""
  if isinstance(order, str):
    name = order.upper().removeprefix("DML_DEPTH_SPACE_ORDER_")
    assert name in _DEPTH_SPACE_ORDERS, f"unknown order {order!r}"
    return name
  return _DEPTH_SPACE_ORDERS[int(order)]


def _depth_channel(order: str, c: int, i: int, j: int, channels: int, b: int) -> int:
  """The depth-side channel that holds channel c's pixel (i, j) of a b x b block."""
  if order == "DEPTH_COLUMN_ROW":  # channel fastest, then block column, block row slowest
    return (i * b + j) * channels + c
  return (c * b + i) * b + j  # block column fastest, then block row, channel slowest


def depth_to_space1(input: np.ndarray, *, block_size: int, order: str | int) -> np.ndarray:
  """Reference DML_OPERATOR_DEPTH_TO_SPACE1.

  ``out[n, c, h*b + i, w*b + j] = input[n, k, h, w]`` with k = ``(i*b + j)*C + c``
  (DEPTH_COLUMN_ROW) or ``c*b*b + i*b + j`` (COLUMN_ROW_DEPTH), one output element
  at a time.

  Args:
    input: A 4-D (NCHW) tensor whose channel count is a multiple of b*b.
    block_size: b >= 1.
    order: "DEPTH_COLUMN_ROW" or "COLUMN_ROW_DEPTH" (optionally with the
      DML_DEPTH_SPACE_ORDER_ prefix), or its value 0 or 1.

  Returns:
    An array {N, C, H*b, W*b} of the input's dtype.
  """
  input = np.asarray(input)
  b, name = int(block_size), _depth_space_order(order)
  assert input.ndim == 4 and b >= 1 and input.shape[1] % (b * b) == 0
  n, depth, h, w = input.shape
  channels = depth // (b * b)
  output = np.empty((n, channels, h * b, w * b), dtype=input.dtype)
  for batch, c, y, x in np.ndindex(*output.shape):
    h_in, i = divmod(y, b)
    w_in, j = divmod(x, b)
    output[batch, c, y, x] = input[batch, _depth_channel(name, c, i, j, channels, b), h_in, w_in]
  return output


def depth_to_space(input: np.ndarray, *, block_size: int) -> np.ndarray:
  """Reference DML_OPERATOR_DEPTH_TO_SPACE: DEPTH_TO_SPACE1 with DEPTH_COLUMN_ROW."""
  return depth_to_space1(input, block_size=block_size, order="DEPTH_COLUMN_ROW")


def space_to_depth1(input: np.ndarray, *, block_size: int, order: str | int) -> np.ndarray:
  """Reference DML_OPERATOR_SPACE_TO_DEPTH1, the inverse of DEPTH_TO_SPACE1.

  ``out[n, k, h, w] = input[n, c, h*b + i, w*b + j]`` with k as in
  `depth_to_space1`, one output element at a time: each output channel k is
  decoded into (c, i, j).

  Args:
    input: A 4-D (NCHW) tensor whose height and width are multiples of b.
    block_size: b >= 1.
    order: as for `depth_to_space1`.

  Returns:
    An array {N, C*b*b, H/b, W/b} of the input's dtype.
  """
  input = np.asarray(input)
  b, name = int(block_size), _depth_space_order(order)
  assert input.ndim == 4 and b >= 1 and input.shape[2] % b == 0 and input.shape[3] % b == 0
  n, channels, height, width = input.shape
  output = np.empty((n, channels * b * b, height // b, width // b), dtype=input.dtype)
  for batch, k, y, x in np.ndindex(*output.shape):
    if name == "DEPTH_COLUMN_ROW":
      block, c = divmod(k, channels)
      i, j = divmod(block, b)
    else:
      c, block = divmod(k, b * b)
      i, j = divmod(block, b)
    output[batch, k, y, x] = input[batch, c, y * b + i, x * b + j]
  return output


def space_to_depth(input: np.ndarray, *, block_size: int) -> np.ndarray:
  """Reference DML_OPERATOR_SPACE_TO_DEPTH: SPACE_TO_DEPTH1 with DEPTH_COLUMN_ROW."""
  return space_to_depth1(input, block_size=block_size, order="DEPTH_COLUMN_ROW")


# SPLIT
# --------------------------------------------------------------------------- #


def split(input: np.ndarray, *, axis: int, split_sizes: Sequence[int]) -> list[np.ndarray]:
  """Reference DML_OPERATOR_SPLIT: output ``k`` is the input's ``k``-th slab along ``axis``.

  Every element of output ``k`` reads the input at the same coordinates, but
  ``offset_k`` further along ``axis``, where ``offset_k`` is the sum of the
  earlier sizes; one element at a time (not ``np.split``, which the tests
  compare it with).

  Args:
    input: The tensor to cut.
    axis: The dimension to cut along, in ``[0, n)``.
    split_sizes: Each output's size along ``axis``, each >= 1, summing to
      ``input.shape[axis]``.

  Returns:
    The outputs in order, each with the input's dtype.
  """
  input = np.asarray(input)
  axis = _check_axis(axis, input.ndim)
  sizes = [int(s) for s in split_sizes]
  assert sizes, "SPLIT needs at least one output"
  assert all(s >= 1 for s in sizes), "every output size must be >= 1"
  assert sum(sizes) == input.shape[axis], "the sizes must add up to the axis"
  outputs, offset = [], 0
  for size in sizes:
    output = np.empty(_replace(input.shape, axis, size), dtype=input.dtype)
    for position in np.ndindex(*output.shape):
      source = list(position)
      source[axis] += offset
      output[position] = input[tuple(source)]
    outputs.append(output)
    offset += size
  return outputs


# --------------------------------------------------------------------------- #
# PADDING / PADDING1
# --------------------------------------------------------------------------- #

_PADDING_MODES = ("CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC", "WRAP")  # by their values


def _padding_mode_name(mode: object) -> str:
  """A padding mode given as an enum member, its value or its (prefixed) name, as a name."""
  if isinstance(mode, str):
    name = mode.upper().removeprefix("DML_PADDING_MODE_")
  elif hasattr(mode, "name"):
    name = mode.name
  else:
    name = _PADDING_MODES[int(mode)]  # type: ignore[call-overload]
  assert name in _PADDING_MODES, f"unknown padding mode {mode!r}"
  return name


def _fold(k: int, size: int, mode: str) -> int | None:
  """The input coordinate that coordinate ``k`` of one dimension reads, or None (CONSTANT
  padding). Mirrors are folded one reflection at a time until ``k`` lands inside."""
  if 0 <= k < size:
    return k
  if mode == "CONSTANT":
    return None
  if mode == "EDGE":
    return 0 if k < 0 else size - 1
  if mode == "WRAP":
    while k < 0:
      k += size
    while k >= size:
      k -= size
    return k
  if mode == "REFLECTION" and size == 1:
    return 0  # no mirror image: the one element (dml_jax's choice)
  while not 0 <= k < size:
    if mode == "REFLECTION":  # the mirror through the edge element: -1 -> 1, size -> size - 2
      k = -k if k < 0 else 2 * (size - 1) - k
    else:  # SYMMETRIC, the mirror beside the edge element: -1 -> 0, size -> size - 1
      k = -k - 1 if k < 0 else 2 * size - 1 - k
  return k


def _padded(
  input: np.ndarray,
  mode: object,
  constant: object,
  start_padding: Sequence[int],
  end_padding: Sequence[int],
) -> np.ndarray:
  input = np.asarray(input)
  assert len(start_padding) == input.ndim == len(end_padding), "one pad per dimension"
  assert all(int(p) >= 0 for p in (*start_padding, *end_padding)), "pads are >= 0"
  name = _padding_mode_name(mode)
  shape = tuple(
    s + int(lo) + int(hi) for s, lo, hi in zip(input.shape, start_padding, end_padding, strict=True)
  )
  output = np.empty(shape, dtype=input.dtype)
  for position in np.ndindex(*shape):
    source = [
      _fold(j - int(lo), s, name)
      for j, lo, s in zip(position, start_padding, input.shape, strict=True)
    ]
    output[position] = constant if None in source else input[tuple(source)]
  return output


def padding(
  input: np.ndarray,
  *,
  padding_mode: object,
  padding_value: float = 0.0,
  start_padding: Sequence[int],
  end_padding: Sequence[int],
) -> np.ndarray:
  """Reference DML_OPERATOR_PADDING, one output element at a time.

  Output coordinate ``j`` reads input coordinate ``k = j - start`` of each dimension,
  folded into the input by the mode; CONSTANT writes ``padding_value`` wherever any
  coordinate is outside. ``padding_value`` is a float32 (DirectML's FLOAT); integer outputs
  take it truncated toward zero and saturated to the type's range, NaN as 0.

  Args:
    input: The tensor to pad.
    padding_mode: CONSTANT, EDGE, REFLECTION, SYMMETRIC or WRAP (a name, prefixed or not,
      an enum member or its value).
    padding_value: CONSTANT mode's value.
    start_padding: Elements added before each dimension.
    end_padding: Elements added after each dimension.

  Returns:
    An array of shape ``input.shape[i] + start_padding[i] + end_padding[i]``.
  """
  input = np.asarray(input)
  with np.errstate(over="ignore"):  # beyond a float type's range: +-inf
    single = float(np.float32(padding_value))
    constant = np.float32(single).astype(input.dtype) if input.dtype.kind == "f" else None
  if constant is None:
    info = np.iinfo(input.dtype)
    if single != single:  # NaN
      whole = 0
    elif single in (float("inf"), float("-inf")):
      whole = int(info.max) if single > 0 else int(info.min)
    else:
      whole = int(single)  # Python's int() truncates toward zero
    constant = input.dtype.type(min(max(whole, int(info.min)), int(info.max)))
  return _padded(input, padding_mode, constant, start_padding, end_padding)


def padding1(
  input: np.ndarray,
  *,
  padding_mode: object,
  padding_value: int | float = 0,
  start_padding: Sequence[int],
  end_padding: Sequence[int],
) -> np.ndarray:
  """Reference DML_OPERATOR_PADDING1: ``padding`` with the value in the input's type.

  Integer types take ``padding_value`` exactly (asserted in range, never wrapped: Python ints
  keep 64-bit values); float types take it rounded to nearest even.

  Args:
    input: The tensor to pad.
    padding_mode: as for ``padding``.
    padding_value: CONSTANT mode's value, in the input's data type.
    start_padding: Elements added before each dimension.
    end_padding: Elements added after each dimension.

  Returns:
    An array of shape ``input.shape[i] + start_padding[i] + end_padding[i]``.
  """
  input = np.asarray(input)
  if input.dtype.kind == "f":
    with np.errstate(over="ignore"):
      constant = np.array(float(padding_value), dtype=input.dtype)[()]
  else:
    whole = int(padding_value)
    assert whole == padding_value, "an integer type takes an integer value"
    info = np.iinfo(input.dtype)
    assert int(info.min) <= whole <= int(info.max), "the value must fit the type"
    constant = input.dtype.type(whole)
  return _padded(input, padding_mode, constant, start_padding, end_padding)


# --------------------------------------------------------------------------- #
# FILL_VALUE_CONSTANT and FILL_VALUE_SEQUENCE
# --------------------------------------------------------------------------- #

_DATA_TYPES = {
  "FLOAT64": np.float64,
  "FLOAT32": np.float32,
  "FLOAT16": np.float16,
  "INT64": np.int64,
  "INT32": np.int32,
  "INT16": np.int16,
  "INT8": np.int8,
  "UINT64": np.uint64,
  "UINT32": np.uint32,
  "UINT16": np.uint16,
  "UINT8": np.uint8,
}


def _data_type(value_data_type: object) -> np.dtype:
  """A DML_TENSOR_DATA_TYPE name ("FLOAT32", prefixed or not) or a member whose str is one."""
  name = str(value_data_type).upper().removeprefix("DML_TENSOR_DATA_TYPE_")
  return np.dtype(_DATA_TYPES[name])


def _union_element(value: int | float, dtype: np.dtype, *, wraps: bool = False) -> int | float:
  """A DML_SCALAR_UNION's value in `dtype`: an exact Python int for integer types (with
  `wraps`, either reading of the bits, taken modulo 2**bits), else a float of `dtype`."""
  if dtype.kind == "f":
    with np.errstate(over="ignore"):
      return float(np.array(float(value), dtype))  # rounded to `dtype`, then exact in a float
  whole = int(value)
  assert whole == value, "an integer type takes an integer value"
  info = np.iinfo(dtype)
  if wraps:
    bits = dtype.itemsize * 8
    assert -(2 ** (bits - 1)) <= whole < 2**bits, "a step is one reading of the type's bits"
    return whole % 2**bits
  assert int(info.min) <= whole <= int(info.max), "the value must fit the type"
  return whole


def _as_type(whole: int, dtype: np.dtype) -> int:
  """`whole` modulo 2**bits, as the value of the integer of `dtype` with those bits."""
  bits = dtype.itemsize * 8
  wrapped = whole % 2**bits
  signed = dtype.kind == "i" and wrapped >= 2 ** (bits - 1)
  return wrapped - 2**bits if signed else wrapped


def fill_value_constant(
  *, sizes: Sequence[int], value_data_type: object, value: int | float
) -> np.ndarray:
  """Reference DML_OPERATOR_FILL_VALUE_CONSTANT: ``out[c] = Value`` for every coordinate.

  Integer types take ``value`` exactly (asserted in range); float types rounded to nearest
  even (beyond the range: +-inf).
  """
  dtype = _data_type(value_data_type)
  constant = _union_element(value, dtype)
  output = np.empty(tuple(int(s) for s in sizes), dtype)
  for position in np.ndindex(*output.shape):
    output[position] = constant
  return output


def fill_value_sequence(
  *,
  sizes: Sequence[int],
  value_data_type: object,
  value_start: int | float,
  value_delta: int | float,
) -> np.ndarray:
  """Reference DML_OPERATOR_FILL_VALUE_SEQUENCE: ``out[i] = ValueStart + i * ValueDelta`` at
  the i-th element in row-major order.

  Integers: Python ints, the result taken modulo 2**bits (ValueDelta may be either reading
  of its bits: -2 or 254 for UINT8). FLOAT32 and FLOAT16: ValueStart and ValueDelta as
  elements of the type, then float32 arithmetic one operation at a time (NumPy float32
  scalars: i as float32, the product rounded, then the sum rounded); FLOAT16 rounded to
  nearest even at the end.
  """
  dtype = _data_type(value_data_type)
  assert dtype != np.float64, "DirectML has no FLOAT64 sequence"
  start = _union_element(value_start, dtype)
  delta = _union_element(value_delta, dtype, wraps=True)
  output = np.empty(tuple(int(s) for s in sizes), dtype)
  for i, position in enumerate(np.ndindex(*output.shape)):
    if dtype.kind == "f":
      with np.errstate(over="ignore", invalid="ignore"):
        product = np.float32(i) * np.float32(delta)
        output[position] = (product + np.float32(start)).astype(dtype)
    else:
      output[position] = _as_type(int(start) + i * int(delta), dtype)
  return output


# --------------------------------------------------------------------------- #
# SLICE and SLICE1
# --------------------------------------------------------------------------- #


def slice(
  input: np.ndarray, *, offsets: Sequence[int], sizes: Sequence[int], strides: Sequence[int]
) -> np.ndarray:
  """Reference DML_OPERATOR_SLICE: ``out[o] = input[offsets + strides * o]``.

  Each output coordinate is mapped to its input coordinate on its own, and the
  read is asserted to lie inside the input (DirectML permits no other).

  Args:
    input: The tensor to slice.
    offsets: The first element read per dimension (>= 0).
    sizes: The output's sizes (>= 1 each).
    strides: The step per dimension (>= 1).

  Returns:
    An array of shape ``sizes`` and the input's dtype.
  """
  input = np.asarray(input)
  n = input.ndim
  assert len(offsets) == len(sizes) == len(strides) == n, "one value per dimension"
  assert all(int(s) >= 1 for s in sizes) and all(int(t) >= 1 for t in strides)
  output = np.empty(tuple(int(s) for s in sizes), dtype=input.dtype)
  for position in np.ndindex(*output.shape):
    source = tuple(int(o) + int(t) * c for o, t, c in zip(offsets, strides, position, strict=True))
    assert all(0 <= s < size for s, size in zip(source, input.shape, strict=True)), source
    output[position] = input[source]
  return output


def slice1(
  input: np.ndarray,
  *,
  input_window_offsets: Sequence[int],
  input_window_sizes: Sequence[int],
  input_window_strides: Sequence[int],
  output_sizes: Sequence[int] | None = None,
) -> np.ndarray:
  """Reference DML_OPERATOR_SLICE1: each window walked from its start, or from its end for a
  negative stride: ``out[o] = input[start + strides * o]``.

  ``start[i]`` is ``offset[i]`` for a positive stride and ``offset[i] + size[i] - 1``
  for a negative one. The whole walk of a window of ``size`` elements with step
  ``|stride|`` has ``ceil(size / |stride|)`` elements (computed here by counting
  the window positions the walk visits); `output_sizes` may take a prefix of it.

  Args:
    input: The tensor to slice.
    input_window_offsets: Where each window starts.
    input_window_sizes: Each window's extent (>= 1); it must lie inside the input.
    input_window_strides: Signed steps, never 0.
    output_sizes: The output's sizes; None: every walk whole.

  Returns:
    An array of shape ``output_sizes`` (or the whole walks) and the input's dtype.
  """
  input = np.asarray(input)
  n = input.ndim
  offsets = [int(o) for o in input_window_offsets]
  sizes = [int(s) for s in input_window_sizes]
  strides = [int(t) for t in input_window_strides]
  assert len(offsets) == len(sizes) == len(strides) == n, "one value per dimension"
  starts, walks = [], []
  for o, s, t, extent in zip(offsets, sizes, strides, input.shape, strict=True):
    assert s >= 1 and t != 0 and 0 <= o and o + s <= extent, "a window inside the input"
    start = o if t > 0 else o + s - 1
    starts.append(start)
    walks.append(sum(1 for k in range(s) if k % abs(t) == 0))
  shape = tuple(walks) if output_sizes is None else tuple(int(s) for s in output_sizes)
  assert all(1 <= s <= w for s, w in zip(shape, walks, strict=True)), "a prefix of each walk"
  output = np.empty(shape, dtype=input.dtype)
  for position in np.ndindex(*shape):
    source = tuple(b + t * c for b, t, c in zip(starts, strides, position, strict=True))
    output[position] = input[source]
  return output


# --------------------------------------------------------------------------- #
# ONE_HOT
# --------------------------------------------------------------------------- #


def slice_grad(
  input_gradient: np.ndarray,
  *,
  output_gradient_sizes: Sequence[int],
  input_window_offsets: Sequence[int],
  input_window_sizes: Sequence[int],
  input_window_strides: Sequence[int],
) -> np.ndarray:
  """Reference DML_OPERATOR_SLICE_GRAD: zeros of ``output_gradient_sizes``, with each input
  gradient element written where SLICE1 with the same windows reads:
  ``out[start + strides * o] = input_gradient[o]``, ``start`` as in `slice1`.

  ``input_gradient`` has SLICE1's output shape, a prefix of each walk.
  """
  input_gradient = np.asarray(input_gradient)
  target = tuple(int(s) for s in output_gradient_sizes)
  offsets = [int(o) for o in input_window_offsets]
  sizes = [int(s) for s in input_window_sizes]
  strides = [int(t) for t in input_window_strides]
  n = input_gradient.ndim
  assert len(target) == len(offsets) == len(sizes) == len(strides) == n, "one value per dimension"
  starts = []
  for o, s, t, extent, walked in zip(
    offsets, sizes, strides, target, input_gradient.shape, strict=True
  ):
    assert s >= 1 and t != 0 and 0 <= o and o + s <= extent, "a window inside the output"
    assert 1 <= walked <= sum(1 for k in range(s) if k % abs(t) == 0), "a prefix of the walk"
    starts.append(o if t > 0 else o + s - 1)
  output = np.zeros(target, dtype=input_gradient.dtype)
  for position in np.ndindex(*input_gradient.shape):
    destination = tuple(b + t * c for b, t, c in zip(starts, strides, position, strict=True))
    output[destination] = input_gradient[position]
  return output


def _running(
  input: np.ndarray, axis: int, axis_direction: object, exclusive: bool, product: bool
) -> np.ndarray:
  """The running tally along ``axis``, one position at a time in walking order, each step
  computed on whole slices in the input's dtype (integers wrap; floats round once per step).
  The tally starts as the walk's first element itself; an exclusive scan writes the tally
  before each element, the empty one (0 or 1) first."""
  input = np.asarray(input)
  axis = _check_axis(axis, input.ndim)
  length = input.shape[axis]
  order = range(length)
  if _direction_name(axis_direction) == "DECREASING":
    order = range(length - 1, -1, -1)
  output = np.empty_like(input)
  tally = None
  for position in order:
    element = np.take(input, [position], axis=axis)
    before = tally
    with np.errstate(over="ignore", invalid="ignore"):  # floats overflow to inf, as IEEE says
      tally = element.copy() if tally is None else (tally * element if product else tally + element)
    if exclusive:
      written = np.full_like(element, 1 if product else 0) if before is None else before
    else:
      written = tally
    index = [builtins.slice(None)] * input.ndim
    index[axis] = builtins.slice(position, position + 1)
    output[tuple(index)] = written
  return output


def cumulative_summation(
  input: np.ndarray,
  *,
  axis: int,
  axis_direction: object = "INCREASING",
  has_exclusive_sum: bool = False,
) -> np.ndarray:
  """Reference DML_OPERATOR_CUMULATIVE_SUMMATION: each element the running sum of its lane
  along ``axis``, walked from the lane's first element (INCREASING) or its last
  (DECREASING), including the element itself unless ``has_exclusive_sum``."""
  return _running(input, axis, axis_direction, bool(has_exclusive_sum), product=False)


def cumulative_product(
  input: np.ndarray,
  *,
  axis: int,
  axis_direction: object = "INCREASING",
  has_exclusive_product: bool = False,
) -> np.ndarray:
  """Reference DML_OPERATOR_CUMULATIVE_PRODUCT: each element the running product of its
  lane along ``axis``, walked from the lane's first element (INCREASING) or its last
  (DECREASING), including the element itself unless ``has_exclusive_product``."""
  return _running(input, axis, axis_direction, bool(has_exclusive_product), product=True)


def one_hot(indices: np.ndarray, values: np.ndarray, *, axis: int, depth: int) -> np.ndarray:
  """Reference DML_OPERATOR_ONE_HOT.

  A sequence is the line of output elements along ``axis`` through a
  coordinate; its index ``v`` sits at the same coordinates in ``indices`` with
  ``axis`` coordinate 0. A negative ``v`` of a signed index dtype counts from
  the end (``v + depth``); then ``out[o]`` is OnValue where ``o[axis] == v``
  and OffValue elsewhere, so a ``v`` outside ``[0, depth)`` (never clamped)
  gives a sequence of OffValue only. OffValue and OnValue are the elements at
  flat positions 0 and 1 of ``values`` in row-major order, whatever its shape.

  Args:
    indices: Integer tensor, rank n, size 1 on ``axis``.
    values: Tensor of rank n with at least 2 elements.
    axis: The dimension the sequences run along, in ``[0, n)``.
    depth: The output's size on ``axis`` (at least 1).

  Returns:
    An array of the indices' shape with ``depth`` on ``axis``, with the dtype of
    ``values``.
  """
  indices = np.asarray(indices)
  values = np.asarray(values)
  rank = indices.ndim
  axis = _check_axis(axis, rank)
  depth = int(depth)
  assert depth >= 1, f"depth must be at least 1, got {depth}"
  assert values.ndim == rank, "indices and values must have the same rank"
  assert indices.shape[axis] == 1, "indices have size 1 on the axis"
  assert values.size >= 2, "values hold OffValue and OnValue"
  signed = _is_signed(indices.dtype)
  row_major = values.reshape(-1)
  off, on = row_major[0], row_major[1]

  # Whole arrays at once: `position` is each output element's coordinate along the axis,
  # compared with its sequence's index in a type that holds every index exactly (int64 for
  # signed indices, whose negative values move up by `depth`; uint64 for unsigned ones).
  position = np.arange(depth).reshape(_replace((1,) * rank, axis, depth))
  if signed:
    index = indices.astype(np.int64)
    index = np.where(index < 0, index + depth, index)
  else:
    index = indices.astype(np.uint64)
    position = position.astype(np.uint64)
  return np.where(position == index, on, off).astype(values.dtype)


# --------------------------------------------------------------------------- #
# SCATTER_ELEMENTS (= SCATTER) and SCATTER_ND
# --------------------------------------------------------------------------- #


def scatter_target(index: int, size: int, *, signed: bool) -> int | None:
  """The element a scatter index writes, or None when its update is dropped.

  The negative-index rule (signed index types only), then dml_jax's policy for the
  rest: an index outside ``[0, size)`` writes nothing. Python ints: no overflow.
  """
  index = int(index)
  if signed and index < 0:
    index += int(size)
  return index if 0 <= index < size else None


def scatter_elements(
  input: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, axis: int
) -> np.ndarray:
  """Reference DML_OPERATOR_SCATTER_ELEMENTS (= DML_OPERATOR_SCATTER).

  ``out = input``, then for every position ``u`` of ``updates`` in row-major
  order: ``out[u with u[axis] := indices[u]] = updates[u]``. Written one update at
  a time in that order, so of several updates with one target the last wins; an
  index out of range (after the negative-index rule) skips its update.

  Args:
    input: The initial output, rank n.
    indices: Integer index tensor, rank n, the input's sizes except on ``axis``.
    updates: The values, the shape of ``indices`` and the dtype of ``input``.
    axis: The dimension the indices address, in ``[0, n)``.

  Returns:
    An array with the shape and dtype of ``input``.
  """
  input, indices, updates = np.asarray(input), np.asarray(indices), np.asarray(updates)
  rank = input.ndim
  assert indices.ndim == rank and updates.shape == indices.shape, "ranks and sizes must agree"
  assert updates.dtype == input.dtype, "updates must have the input's dtype"
  axis = _check_axis(axis, rank)
  for dim in range(rank):
    if dim != axis:
      assert indices.shape[dim] == input.shape[dim], f"indices differ in dimension {dim}"
  signed = _is_signed(indices.dtype)
  output = input.copy()
  for position in np.ndindex(*indices.shape):
    target = scatter_target(int(indices[position]), input.shape[axis], signed=signed)
    if target is not None:
      output[_replace(position, axis, target)] = updates[position]
  return output


def scatter_nd_updates_sizes(
  input_sizes: Sequence[int],
  indices_sizes: Sequence[int],
  *,
  input_dimension_count: int,
  indices_dimension_count: int,
) -> tuple[int, ...]:
  """UpdatesTensor.Sizes of DML_OPERATOR_SCATTER_ND: what GATHER_ND would output.

  ``X[:-1] ++ I[t:]`` right-aligned into n dimensions with leading 1s.
  """
  _, _, logical_updates = _gather_nd_logical_shapes(
    input_sizes, indices_sizes, input_dimension_count, indices_dimension_count, 0
  )
  return _right_align(logical_updates, len(input_sizes))


def scatter_nd(
  input: np.ndarray,
  indices: np.ndarray,
  updates: np.ndarray,
  *,
  input_dimension_count: int | None = None,
  indices_dimension_count: int | None = None,
) -> np.ndarray:
  """Reference DML_OPERATOR_SCATTER_ND.

  On logical shapes (``I``, ``X`` and ``t = X[-1]`` as for GATHER_ND): ``out =
  input``, then for every index position ``p`` of ``X[:-1]`` in row-major order
  and every ``r`` of ``I[t:]``: ``out[idx[p, 0], ..., idx[p, t - 1], r] =
  updates[p, r]``. One tuple at a time in that order, so the last tuple with a
  target wins; a tuple with any coordinate out of range (after the negative-index
  rule, each against its own dimension) writes nothing.

  Args:
    input: The initial output, rank n.
    indices: Integer index tensor, rank n; its last dimension is ``t``.
    updates: Rank n, sizes ``X[:-1] ++ I[t:]`` right-aligned, the input's dtype.
    input_dimension_count: Meaningful trailing input dims (``None``: n).
    indices_dimension_count: Meaningful trailing indices dims (``None``: n).

  Returns:
    An array with the shape and dtype of ``input``.
  """
  input, indices, updates = np.asarray(input), np.asarray(indices), np.asarray(updates)
  rank = input.ndim
  assert indices.ndim == rank == updates.ndim, "input, indices and updates must share a rank"
  assert updates.dtype == input.dtype, "updates must have the input's dtype"
  m = rank if input_dimension_count is None else int(input_dimension_count)
  q = rank if indices_dimension_count is None else int(indices_dimension_count)
  logical_input, logical_indices, logical_updates = _gather_nd_logical_shapes(
    input.shape, indices.shape, m, q, 0
  )
  assert updates.shape == _right_align(logical_updates, rank), (
    f"updates sizes {updates.shape} != {_right_align(logical_updates, rank)}"
  )
  signed = _is_signed(indices.dtype)
  tuple_size = logical_indices[-1]
  output = input.copy().reshape(logical_input)
  tuples = indices.reshape(logical_indices)
  values = updates.reshape(logical_updates)
  for position in np.ndindex(*logical_indices[:-1]):
    target = [
      scatter_target(int(tuples[position + (j,)]), logical_input[j], signed=signed)
      for j in range(tuple_size)
    ]
    if any(c is None for c in target):
      continue
    for within in np.ndindex(*logical_input[tuple_size:]):
      output[tuple(target) + within] = values[position + within]
  return output.reshape(input.shape)


# --------------------------------------------------------------------------- #
# CAST, ELEMENT_WISE_IF, DIAGONAL_MATRIX, DIAGONAL_MATRIX1, NONZERO_COORDINATES
# --------------------------------------------------------------------------- #

# (significand bits without the implicit one, exponent bits) of each float type.
_FLOAT_FORMATS = {np.dtype(np.float16): (10, 5), np.dtype(np.float32): (23, 8)}
_FLOAT_FORMATS[np.dtype(np.float64)] = (52, 11)


def _dtype_of(data_type: object) -> np.dtype:
  """A DML data type name ("UINT8"), enum member or NumPy dtype as a NumPy dtype."""
  name = getattr(data_type, "name", data_type)
  if isinstance(name, str):
    return np.dtype(name.upper().removeprefix("DML_TENSOR_DATA_TYPE_").lower())
  return np.dtype(data_type)  # type: ignore[call-overload]


def _float_bits(value: Any) -> int:
  width = value.dtype.itemsize * 8
  return int(np.asarray(value).view(np.dtype(f"u{width // 8}")))


def _float_from_bits(bits: int, dtype: np.dtype) -> np.ndarray:
  return np.array(bits, np.dtype(f"u{dtype.itemsize}")).view(dtype)


def _round_to_float(value: Fraction, dtype: np.dtype) -> np.ndarray:
  """The exact rational `value` rounded to nearest, ties to even, in `dtype` (0-d array);
  beyond the largest finite value by half an ulp or more: infinity."""
  mantissa, exponent_bits = _FLOAT_FORMATS[dtype]
  bias = 2 ** (exponent_bits - 1) - 1
  negative, magnitude = value < 0, abs(value)
  if magnitude == 0:
    return np.array(-0.0 if negative else 0.0, dtype)
  exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
  if Fraction(2) ** exponent > magnitude:
    exponent -= 1  # now 2**exponent <= magnitude < 2**(exponent + 1)
  exponent = max(exponent, 1 - bias)  # subnormals share the smallest normal's spacing
  ulp = Fraction(2) ** (exponent - mantissa)
  steps = round(magnitude / ulp)  # Python rounds a Fraction half to even
  rounded = steps * ulp
  if rounded >= Fraction(2) ** (bias + 1):
    result = np.array(np.inf, dtype)
  else:
    result = np.array(float(rounded), dtype)  # exact: every such value is a float64
  return -result if negative else result


def _cast_element(value: Any, target: np.dtype) -> np.ndarray:
  """One element of CAST, by dml_jax's rules (see dml_jax/_src/ops/cast.py)."""
  source = value.dtype
  if source == target:
    return np.array(value, target)
  if target.kind in "iu":
    info = np.iinfo(target)
    if source.kind == "f":
      if np.isnan(value):
        return np.array(0, target)
      if np.isinf(value):
        return np.array(info.max if value > 0 else info.min, target)
      whole = int(Fraction(float(value)))  # int() of a Fraction truncates toward zero
      return np.array(min(max(whole, int(info.min)), int(info.max)), target)
    bits = int(value) % 2 ** (target.itemsize * 8)  # two's complement: the low bits
    if target.kind == "i" and bits > info.max:
      bits -= 2 ** (target.itemsize * 8)
    return np.array(bits, target)
  if source.kind in "iu":
    return _round_to_float(Fraction(int(value)), target)
  if np.isnan(value):  # the sign, quiet, the payload's leading bits
    (source_mantissa, _), (target_mantissa, target_exponent) = (
      _FLOAT_FORMATS[source],
      _FLOAT_FORMATS[target],
    )
    bits = _float_bits(value)
    sign = bits >> (source.itemsize * 8 - 1)
    payload = bits & (2**source_mantissa - 1)
    shift = target_mantissa - source_mantissa
    payload = payload << shift if shift >= 0 else payload >> -shift
    width = target.itemsize * 8
    nan = (sign << (width - 1)) | ((2**target_exponent - 1) << target_mantissa)
    nan |= 1 << (target_mantissa - 1) | payload
    return _float_from_bits(nan, target)
  if np.isinf(value):
    return np.array(value, target)
  if value == 0:
    return np.array(-0.0 if np.signbit(value) else 0.0, target)
  return _round_to_float(Fraction(float(value)), target)


def cast(input: np.ndarray, *, data_type: object) -> np.ndarray:
  """Reference DML_OPERATOR_CAST, one element at a time, with exact rational arithmetic.

  Float and integer to float: the exact value rounded to nearest, ties to even (infinity
  beyond the range); a NaN keeps its sign and its payload's leading bits and is quiet; the
  same type copies the bits. Integer to integer: the low bits (two's complement). Float to
  integer: truncated toward zero, saturated, NaN gives 0.

  Args:
    input: InputTensor.
    data_type: OutputTensor.DataType (a name such as "UINT8", or a dtype).

  Returns:
    An array of ``input``'s shape and ``data_type``.
  """
  input = np.asarray(input)
  target = _dtype_of(data_type)
  output = np.empty(input.shape, target)
  for position in np.ndindex(*input.shape):
    output[position] = _cast_element(input[position], target)
  return output


def element_wise_if(condition: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
  """Reference DML_OPERATOR_ELEMENT_WISE_IF: ``a[c]`` where ``condition[c] != 0``, else ``b[c]``.

  The condition is UINT8; the three arrays have one shape (DirectML broadcasts through
  strides, which this oracle does not model).
  """
  condition, a, b = np.asarray(condition), np.asarray(a), np.asarray(b)
  assert condition.dtype == np.uint8, "ConditionTensor is UINT8"
  assert condition.shape == a.shape == b.shape and a.dtype == b.dtype
  output = np.empty(a.shape, a.dtype)
  for position in np.ndindex(*a.shape):
    output[position] = a[position] if int(condition[position]) != 0 else b[position]
  return output


def _float_value_as(value: float, target: np.dtype) -> np.ndarray:
  """A FLOAT attribute (a float32) as an element of `target`: float types round to nearest
  even; integer types truncate toward zero and saturate, NaN giving 0."""
  with np.errstate(over="ignore"):
    single = np.float32(value)
  return _cast_element(single, target)


def diagonal_matrix(
  *, sizes: Sequence[int], data_type: object = "FLOAT32", offset: int = 0, value: float = 1.0
) -> np.ndarray:
  """Reference DML_OPERATOR_DIAGONAL_MATRIX: Value where x == y + Offset, else 0.

  The last two dimensions are y (rows) and x (columns); the rest are a batch. Value is a
  FLOAT: integer outputs take it truncated toward zero (10.6 becomes 10).
  """
  target = _dtype_of(data_type)
  fill = _float_value_as(value, target)
  output = np.empty(tuple(sizes), target)
  for position in np.ndindex(*output.shape):
    y, x = position[-2], position[-1]
    output[position] = fill if y + int(offset) == x else 0
  return output


def diagonal_matrix1(
  input: np.ndarray | None = None,
  *,
  value: int | float,
  diagonal_fill_begin: int,
  diagonal_fill_end: int,
  value_data_type: object = None,
  sizes: Sequence[int] | None = None,
  data_type: object = None,
) -> np.ndarray:
  """Reference DML_OPERATOR_DIAGONAL_MATRIX1, the page's pseudocode element by element:

  ``topX = x - y``; ``useValue = (End >= Begin) ^ (topX >= Begin) ^ (topX < End)``; the
  output is Value where useValue, else the input's element (or 0 without an input).
  Value is exact in the output's type (integers) or rounded to nearest even (floats).
  """
  if input is not None:
    input = np.asarray(input)
    shape, target = input.shape, input.dtype
  else:
    assert sizes is not None
    shape = tuple(sizes)
    target = _dtype_of(data_type if data_type is not None else value_data_type)
  if value_data_type is not None:
    assert _dtype_of(value_data_type) == target, "ValueDataType is the output's data type"
  if target.kind == "f":
    fill = _round_to_float(Fraction(value), target)
  else:
    fill = np.array(int(value), target)
  begin, end = int(diagonal_fill_begin), int(diagonal_fill_end)
  output = np.empty(shape, target)
  for position in np.ndindex(*shape):
    top_x = position[-1] - position[-2]
    use_value = (end >= begin) ^ (top_x >= begin) ^ (top_x < end)
    if use_value:
      output[position] = fill
    else:
      output[position] = input[position] if input is not None else 0
  return output


def nonzero_coordinates(
  input: np.ndarray, *, coordinate_size: int | None = None
) -> list[np.ndarray]:
  """Reference DML_OPERATOR_NONZERO_COORDINATES: [count, coordinates].

  count: UINT32 of shape (1,) * rank, the number of nonzero elements (-0.0 is zero).
  coordinates: UINT32 of shape (1, .., 1, M, N) (rank dimensions, at least 2), M the
  element count; row k holds the k-th nonzero element's coordinates in row-major order,
  the last N of them (coordinates of leading dimensions before the input's are 0); rows
  past the count hold 0 (dml_jax's fill; DirectML leaves them undefined).
  """
  input = np.asarray(input)
  rank = input.ndim
  n = rank if coordinate_size is None else int(coordinate_size)
  m = input.size
  rows = np.zeros((m, n), np.uint32)
  count = 0
  for position in np.ndindex(*input.shape):
    if input[position] != 0:  # -0.0 == 0 in IEEE comparison; NaN != 0
      padded = (0,) * max(0, n - rank) + tuple(position)
      rows[count] = padded[len(padded) - n :]
      count += 1
  coordinates_shape = (1,) * max(0, rank - 2) + (m, n)
  return [np.full((1,) * rank, count, np.uint32), rows.reshape(coordinates_shape)]


# --------------------------------------------------------------------------- #
# ARGMIN, ARGMAX, TOP_K, TOP_K1
# --------------------------------------------------------------------------- #
#
# One ranking of values for all four, dml_jax's choice where DirectML says nothing:
# numbers by value with -0.0 equal to 0.0, and every NaN above +inf, all NaNs equal.


def _rank(value: object) -> tuple[int, float | int]:
  """A sort key for one element in the selection order: (0, number) or (1, 0) for NaN."""
  if isinstance(value, np.floating):
    number = float(value)
    if number != number:  # NaN
      return (1, 0)
    return (0, number + 0.0)  # -0.0 + 0.0 is 0.0: the zeros tie
  return (0, int(value))  # type: ignore[call-overload]


def _direction_name(direction: object) -> str:
  """AxisDirection as a name: INCREASING (0) or DECREASING (1), with or without the prefix."""
  names = {0: "INCREASING", 1: "DECREASING"}
  if isinstance(direction, str):
    name = direction.upper().removeprefix("DML_AXIS_DIRECTION_")
  else:
    name = names[int(direction)]  # type: ignore[call-overload]
  assert name in names.values(), f"unknown AxisDirection {direction!r}"
  return name


def _arg_extreme(
  input: np.ndarray,
  axes: Sequence[int],
  axis_direction: object,
  output_data_type: str,
  largest: bool,
) -> np.ndarray:
  input = np.asarray(input)
  reduced = sorted(_check_axis(a, input.ndim) for a in axes)
  assert reduced and len(set(reduced)) == len(reduced), "Axes: distinct axes, at least one"
  last_wins = _direction_name(axis_direction) == "DECREASING"
  out_shape = tuple(1 if d in reduced else size for d, size in enumerate(input.shape))
  output = np.empty(out_shape, dtype=np.dtype(output_data_type.lower()))
  for out_coords in np.ndindex(*out_shape):
    best_position, best_rank = -1, None
    # the reduced coordinates in row-major order of the reduced axes: position 0, 1, ...
    for position, inner in enumerate(np.ndindex(*(input.shape[d] for d in reduced))):
      coords = list(out_coords)
      for d, c in zip(reduced, inner, strict=True):
        coords[d] = c
      rank = _rank(input[tuple(coords)])
      if best_rank is None:
        better = True
      elif rank == best_rank:
        better = last_wins
      else:
        better = rank > best_rank if largest else rank < best_rank
      if better:
        best_position, best_rank = position, rank
    output[out_coords] = best_position
  return output


def argmin(
  input: np.ndarray,
  *,
  axes: Sequence[int],
  axis_direction: object = "INCREASING",
  output_data_type: str = "UINT32",
) -> np.ndarray:
  """Reference DML_OPERATOR_ARGMIN, one output element at a time.

  Each output element (the input's sizes with 1 on every axis of ``axes``) is the
  position of the smallest of the input elements that share its other coordinates,
  counted in row-major order of the reduced axes (in increasing dimension order).
  Equal values: INCREASING keeps the first position, DECREASING the last. -0.0
  equals 0.0; NaN ranks above every number.
  """
  return _arg_extreme(input, axes, axis_direction, output_data_type, largest=False)


def argmax(
  input: np.ndarray,
  *,
  axes: Sequence[int],
  axis_direction: object = "INCREASING",
  output_data_type: str = "UINT32",
) -> np.ndarray:
  """Reference DML_OPERATOR_ARGMAX: as `argmin`, for the largest value."""
  return _arg_extreme(input, axes, axis_direction, output_data_type, largest=True)


def top_k1(
  input: np.ndarray,
  *,
  axis: int,
  k: int,
  axis_direction: object = "DECREASING",
  index_data_type: str = "UINT32",
) -> tuple[np.ndarray, np.ndarray]:
  """Reference DML_OPERATOR_TOP_K1, one lane at a time.

  A lane is the line of elements along ``axis``. Its positions are sorted by value
  (largest first for DECREASING, smallest first for INCREASING) with a stable sort,
  so equal values keep ascending positions either way; the first ``k`` give the
  output positions, and the values are the input's elements at them.
  """
  input = np.asarray(input)
  axis = _check_axis(axis, input.ndim)
  length = input.shape[axis]
  assert 1 <= k <= length, f"K must be in [1, {length}], got {k}"
  descending = _direction_name(axis_direction) == "DECREASING"
  out_shape = _replace(input.shape, axis, k)
  values = np.empty(out_shape, dtype=input.dtype)
  indices = np.empty(out_shape, dtype=np.dtype(index_data_type.lower()))
  lane_starts = _replace(input.shape, axis, 1)
  for start in np.ndindex(*lane_starts):
    lane = [input[_replace(start, axis, i)] for i in range(length)]
    # Python's sort is stable, also with reverse=True: equal ranks keep ascending positions.
    order = sorted(range(length), key=lambda i: _rank(lane[i]), reverse=descending)
    for j, position in enumerate(order[:k]):
      values[_replace(start, axis, j)] = lane[position]
      indices[_replace(start, axis, j)] = position
  return values, indices


def top_k(
  input: np.ndarray, *, axis: int, k: int, index_data_type: str = "UINT32"
) -> tuple[np.ndarray, np.ndarray]:
  """Reference DML_OPERATOR_TOP_K: TOP_K1 with AxisDirection DECREASING."""
  return top_k1(input, axis=axis, k=k, axis_direction="DECREASING", index_data_type=index_data_type)


# --------------------------------------------------------------------------- #
# MAX_UNPOOLING and UNFOLD
# --------------------------------------------------------------------------- #


def max_unpooling(
  input: np.ndarray, indices: np.ndarray, *, output_sizes: Sequence[int]
) -> np.ndarray:
  """Reference DML_OPERATOR_MAX_UNPOOLING.

  ``out = zeros(output_sizes)``; for every position ``u`` of ``input`` in row-major order,
  ``flat(out)[indices[u]] = input[u]``, ``flat(out)`` being the output as one contiguous array.
  An index at or past the output's element count writes nothing (the page says so); of
  several indices naming one element the last one wins (dml_jax's choice where DirectML
  leaves the value undefined). Whole-array: each element's winner is the last position
  naming it.

  Args:
    input: The values (4-D in DirectML; any rank here).
    indices: Unsigned flat output positions, the shape of ``input``.
    output_sizes: OutputTensor.Sizes.

  Returns:
    An array of ``output_sizes`` with the dtype of ``input``.
  """
  input, indices = np.asarray(input), np.asarray(indices)
  assert indices.shape == input.shape, "one index per value"
  assert indices.dtype.kind == "u", "MAX_UNPOOLING's indices are unsigned"
  total = int(np.prod(output_sizes, dtype=np.int64))
  flat_indices = indices.reshape(-1).astype(np.uint64)
  values = input.reshape(-1)
  kept = np.flatnonzero(flat_indices < np.uint64(total))
  # The last position naming each target: the first one found in reverse order.
  reversed_kept = kept[::-1]
  targets, first = np.unique(flat_indices[reversed_kept], return_index=True)
  output = np.zeros(total, input.dtype)
  output[targets.astype(np.int64)] = values[reversed_kept[first]]
  return output.reshape(tuple(output_sizes))


def unfold_blocks_per_dimension(
  spatial_sizes: Sequence[int],
  *,
  window_sizes: Sequence[int],
  strides: Sequence[int],
  dilations: Sequence[int],
  start_padding: Sequence[int],
  end_padding: Sequence[int],
) -> tuple[int, ...]:
  """UNFOLD's BlocksPerDimension, as its page writes it:
  ``(size + start + end - dilation * (window - 1) - 1) / stride + 1``."""
  counts = []
  for size, w, s, d, lo, hi in zip(
    spatial_sizes, window_sizes, strides, dilations, start_padding, end_padding, strict=True
  ):
    reach = size + lo + hi - d * (w - 1) - 1
    assert reach >= 0, "a window must fit its padded dimension"
    counts.append(reach // s + 1)
  return tuple(counts)


def unfold(
  input: np.ndarray,
  *,
  window_sizes: Sequence[int],
  strides: Sequence[int] | None = None,
  dilations: Sequence[int] | None = None,
  start_padding: Sequence[int] | None = None,
  end_padding: Sequence[int] | None = None,
) -> np.ndarray:
  """Reference DML_OPERATOR_UNFOLD: im2col.

  ``out[n, c * prod(W) + w, b] = input[n, c, p]`` with ``p_d = b_d * strides[d] + w_d *
  dilations[d] - start_padding[d]`` (w the window point, b the window, each numbered in
  row-major order of its coordinates), zero where p lies outside the input. The output is
  {N, C * prod(window_sizes), BlockCount}, 3-D. Whole-array: one fancy-indexed read of
  every (point, window) pair.
  """
  input = np.asarray(input)
  k = len(window_sizes)
  assert input.ndim == k + 2, "the input is {N, C} and one size per spatial dimension"
  strides = tuple(strides or (1,) * k)
  dilations = tuple(dilations or (1,) * k)
  start_padding = tuple(start_padding or (0,) * k)
  end_padding = tuple(end_padding or (0,) * k)
  blocks = unfold_blocks_per_dimension(
    input.shape[2:],
    window_sizes=window_sizes,
    strides=strides,
    dilations=dilations,
    start_padding=start_padding,
    end_padding=end_padding,
  )
  points = np.indices(tuple(window_sizes)).reshape(k, -1)  # (k, prod(W)), row-major
  windows = np.indices(blocks).reshape(k, -1)  # (k, L), row-major
  coordinates, inside = [], np.ones((points.shape[1], windows.shape[1]), bool)
  for d in range(k):
    p = windows[d][None, :] * strides[d] + points[d][:, None] * dilations[d] - start_padding[d]
    inside &= (p >= 0) & (p < input.shape[2 + d])
    coordinates.append(np.clip(p, 0, input.shape[2 + d] - 1))
  read = input[(builtins.slice(None), builtins.slice(None), *coordinates)]  # (N, C, prod(W), L)
  out = np.where(inside, read, np.zeros((), input.dtype))
  n, c = input.shape[:2]
  return out.reshape(n, c * points.shape[1], windows.shape[1])


# RESAMPLE, RESAMPLE1, RESAMPLE2, UPSAMPLE_2D
# --------------------------------------------------------------------------- #


def _resample_coordinate(o: int, scale: float, input_offset: float, output_offset: float) -> Any:
  """x = (o - OutputPixelOffset) / Scale - InputPixelOffset, one float32 operation at a time."""
  f32 = np.float32
  return (f32(o) - f32(output_offset)) / f32(scale) - f32(input_offset)


def _nearest_index(x: Any, rounding: str, size: int) -> int:
  """The input index of coordinate `x`: rounded per `rounding`, then clamped into the axis."""
  if rounding == "HALF_DOWN":  # RESAMPLE, RESAMPLE1: the nearest index, a tie to the smaller
    index = int(np.ceil(x - np.float32(0.5)))
  elif rounding == "DECREASING":  # RESAMPLE2: floor
    index = int(np.floor(x))
  else:  # RESAMPLE2 INCREASING: ceil
    index = int(np.ceil(x))
  return min(max(index, 0), size - 1)


def _resampled(
  input: np.ndarray,
  output_sizes: Sequence[int],
  mode: str,
  rounding: str,
  scales: Sequence[float],
  input_offsets: Sequence[float],
  output_offsets: Sequence[float],
) -> np.ndarray:
  """The RESAMPLE family's definition, one output element at a time."""
  input = np.asarray(input)
  n = input.ndim
  assert len(scales) == len(input_offsets) == len(output_offsets) == len(output_sizes) == n
  output = np.empty(tuple(output_sizes), dtype=input.dtype)
  if mode == "NEAREST_NEIGHBOR":
    for position in np.ndindex(*output.shape):
      source = tuple(
        _nearest_index(_resample_coordinate(o, *fields), rounding, size)
        for o, fields, size in zip(
          position,
          zip(scales, input_offsets, output_offsets, strict=True),
          input.shape,
          strict=True,
        )
      )
      output[position] = input[source]
    return output
  data = input.astype(np.float32)

  def neighbours(o: int, d: int) -> tuple[int, int, Any, Any]:
    # x clamped into [0, size - 1]; i = floor(x), j = min(i + 1, size - 1), w = x - i.
    size = input.shape[d]
    x = _resample_coordinate(o, scales[d], input_offsets[d], output_offsets[d])
    x = min(max(x, np.float32(0)), np.float32(size - 1))
    i = int(np.floor(x))
    w = np.float32(x - np.float32(i))
    return i, min(i + 1, size - 1), np.float32(np.float32(1) - w), w

  def value(k: int, coordinates: tuple[int, ...], position: tuple[int, ...]) -> Any:
    # Dimensions < k are interpolated (in order, the first first); `coordinates` holds the
    # input coordinates of dimensions >= k.
    if k == 0:
      return data[coordinates]
    d = k - 1
    i, j, keep, w = neighbours(position[d], d)
    a = value(d, coordinates[:d] + (i,) + coordinates[d + 1 :], position)
    if w == 0:
      return a
    b = value(d, coordinates[:d] + (j,) + coordinates[d + 1 :], position)
    return np.float32(np.float32(a * keep) + np.float32(b * w))

  for position in np.ndindex(*output.shape):
    result = value(n, tuple(position), tuple(position))
    if np.issubdtype(input.dtype, np.integer):
      info = np.iinfo(input.dtype)
      result = min(max(np.round(result), info.min), info.max)  # ties to even
    output[position] = result
  return output


def _default_sizes(shape: Sequence[int], scales: Sequence[float]) -> tuple[int, ...]:
  return tuple(
    max(1, int(np.floor(np.float32(n) * np.float32(s)))) for n, s in zip(shape, scales, strict=True)
  )


def resample(
  input: np.ndarray,
  *,
  interpolation_mode: str,
  scales: Sequence[float],
  output_sizes: Sequence[int] | None = None,
) -> np.ndarray:
  """Reference DML_OPERATOR_RESAMPLE: RESAMPLE1 with offsets 0.5 and -0.5 (pixel centres).

  Output element o samples the input at x = (o + 0.5) / Scale - 0.5 (float32).
  NEAREST_NEIGHBOR takes ceil(x - 0.5), clamped (a tie goes to the smaller index);
  LINEAR interpolates the two neighbours of the clamped x, the first dimension first.
  """
  n = len(scales)
  return resample1(
    input,
    interpolation_mode=interpolation_mode,
    scales=scales,
    input_pixel_offsets=(0.5,) * n,
    output_pixel_offsets=(-0.5,) * n,
    output_sizes=output_sizes,
  )


def resample1(
  input: np.ndarray,
  *,
  interpolation_mode: str,
  scales: Sequence[float],
  input_pixel_offsets: Sequence[float] | None = None,
  output_pixel_offsets: Sequence[float] | None = None,
  output_sizes: Sequence[int] | None = None,
) -> np.ndarray:
  """Reference DML_OPERATOR_RESAMPLE1 (see `resample`): x = (o - OutputPixelOffset) / Scale
  - InputPixelOffset in float32; NEAREST_NEIGHBOR's ties go to the smaller index."""
  input = np.asarray(input)
  n = len(scales)
  return _resampled(
    input,
    _default_sizes(input.shape, scales) if output_sizes is None else output_sizes,
    str(interpolation_mode).upper().removeprefix("DML_INTERPOLATION_MODE_"),
    "HALF_DOWN",
    scales,
    (0.5,) * n if input_pixel_offsets is None else input_pixel_offsets,
    (-0.5,) * n if output_pixel_offsets is None else output_pixel_offsets,
  )


def resample2(
  input: np.ndarray,
  *,
  interpolation_mode: str,
  rounding_direction: str,
  scales: Sequence[float],
  input_pixel_offsets: Sequence[float] | None = None,
  output_pixel_offsets: Sequence[float] | None = None,
  output_sizes: Sequence[int] | None = None,
) -> np.ndarray:
  """Reference DML_OPERATOR_RESAMPLE2: RESAMPLE1 with NEAREST_NEIGHBOR rounding x down
  (RoundingDirection DECREASING, floor) or up (INCREASING, ceil)."""
  input = np.asarray(input)
  n = len(scales)
  direction = str(rounding_direction).upper().removeprefix("DML_AXIS_DIRECTION_")
  assert direction in ("DECREASING", "INCREASING")
  return _resampled(
    input,
    _default_sizes(input.shape, scales) if output_sizes is None else output_sizes,
    str(interpolation_mode).upper().removeprefix("DML_INTERPOLATION_MODE_"),
    direction,
    scales,
    (0.5,) * n if input_pixel_offsets is None else input_pixel_offsets,
    (-0.5,) * n if output_pixel_offsets is None else output_pixel_offsets,
  )


def upsample_2d(
  input: np.ndarray, *, scale_size: Any, interpolation_mode: str = "NEAREST_NEIGHBOR"
) -> np.ndarray:
  """Reference DML_OPERATOR_UPSAMPLE_2D: RESAMPLE with scales (1, ..., 1, Height, Width).

  `scale_size` is {"Width": w, "Height": h} (or an object with `width` and `height`).
  """
  input = np.asarray(input)
  if isinstance(scale_size, dict):
    width, height = int(scale_size["Width"]), int(scale_size["Height"])
  else:
    width, height = int(scale_size.width), int(scale_size.height)
  scales = (1,) * (input.ndim - 2) + (height, width)
  sizes = input.shape[:-2] + (input.shape[-2] * height, input.shape[-1] * width)
  return resample(input, interpolation_mode=interpolation_mode, scales=scales, output_sizes=sizes)
