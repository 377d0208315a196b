"""Hypothesis strategies: valid operator descriptors at any feature level, and mutants.

`valid_case(op)` draws a feature level at which the operator exists, then a
descriptor that level's tables accept (ranks, data types, index types), with
small sizes, and input data with in-range, negative and out-of-range indices.
`invalid_case(op)` draws a valid case and breaks exactly one rule, returning
the DML field that the error must name.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import DataType, FeatureLevel, FieldKind, TensorDesc
from dml_jax._src import reference, registry
from dml_jax._src.fields import dml_fields

DESCS = dict(registry.operators())
OPERATORS = tuple(DESCS)


@dataclasses.dataclass
class Case:
  """A descriptor, the level it is valid at, its input arrays and how to run it."""

  desc: Any
  level: FeatureLevel
  arrays: list[np.ndarray]
  run: Callable[..., Any]  # the functional API, given the arrays and the level
  expected: Callable[[], np.ndarray]  # the NumPy reference's output


GATHER_ND_DESCS = (dml.GatherNdDesc, dml.GatherNd1Desc)
RESAMPLE_DESCS = (dml.ResampleDesc, dml.Resample1Desc, dml.Resample2Desc)
SELECTION_DESCS = (
  dml.CastDesc,
  dml.ElementWiseIfDesc,
  dml.DiagonalMatrixDesc,
  dml.DiagonalMatrix1Desc,
  dml.NonzeroCoordinatesDesc,
)


def _table(desc_type, level):
  return desc_type.SUPPORT.at(level)


def _rank_range(table, level):
  low = max(row.dimension_counts[0] for row in table.values())
  high = min(min(row.dimension_counts[1] for row in table.values()), level.max_dimension_count)
  return low, high


@st.composite
def levels(draw, op):
  desc_type = DESCS[op]
  return draw(st.sampled_from([lv for lv in FeatureLevel if _table(desc_type, lv)]))


def _data(draw, data_type: DataType, shape):
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  dtype = data_type.numpy_dtype
  if data_type.is_float:
    return rng.standard_normal(shape).astype(dtype)
  info = np.iinfo(dtype)
  return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def _indices(draw, data_type: DataType, shape, size_of):
  """Indices around [-size - 2, size + 2) plus extremes of the type; size_of(pos) -> size."""
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  dtype = data_type.numpy_dtype
  info = np.iinfo(dtype)
  out = np.empty(shape, dtype)
  extremes = [info.min, info.max, 2**31 - 1, 2**32 + 1, -(2**31)]
  for pos in np.ndindex(*shape):
    size = size_of(pos)
    kind = rng.integers(0, 10)
    if kind == 0:
      value = int(rng.choice(extremes))
    elif kind <= 2:
      value = int(rng.integers(-size - 2, size + 3))
    else:
      value = int(rng.integers(0, size))
      if data_type.is_signed_integer and rng.integers(0, 2):
        value -= size
    out[pos] = min(max(value, info.min), info.max)
  return out


def _sizes(draw, rank, max_elements=96):
  sizes = []
  for _ in range(rank):
    room = max(1, max_elements // max(1, math.prod(sizes)))
    sizes.append(draw(st.integers(1, min(4, room))))
  return tuple(sizes)


@st.composite
def gather_elements_case(draw):
  level = draw(levels("GATHER_ELEMENTS"))
  table = _table(dml.GatherElementsDesc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  index_type = draw(st.sampled_from(table["IndicesTensor"].data_types))
  sizes = _sizes(draw, n)
  axis = draw(st.integers(0, n - 1))
  index_sizes = sizes[:axis] + (draw(st.integers(1, 4)),) + sizes[axis + 1 :]
  x = _data(draw, data_type, sizes)
  i = _indices(draw, index_type, index_sizes, lambda pos: sizes[axis])
  desc = dml.GatherElementsDesc(
    TensorDesc(data_type, sizes), TensorDesc(index_type, index_sizes), axis=axis
  )
  return Case(
    desc,
    level,
    [x, i],
    lambda x, i, level: dml.gather_elements(x, i, axis=axis, feature_level=level),
    lambda: reference.gather_elements(x, i, axis=axis),
  )


@st.composite
def gather_nd_case(draw, op="GATHER_ND"):
  """GATHER_ND, or GATHER_ND1 with or without batch dimensions."""
  batched = op == "GATHER_ND1" and draw(st.booleans())
  level = draw(levels(op))
  table = DESCS[op].SUPPORT.at(level)
  low, high = _rank_range(table, level)
  n = draw(st.integers(max(low, 2 if batched else 1), high))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  index_type = draw(st.sampled_from(table["IndicesTensor"].data_types))
  b = draw(st.integers(1, n - 1)) if batched else 0
  m = draw(st.integers(b + 1, n))
  t = draw(st.integers(1, m - b))
  # q - 1 + m - b - t <= n, q > b, q <= n
  q = draw(st.integers(b + 1, min(n, n + 1 - (m - b - t))))
  logical_in = _sizes(draw, m, max_elements=64)
  logical_idx = logical_in[:b] + _sizes(draw, q - 1 - b, max_elements=8) + (t,)
  in_sizes = (1,) * (n - m) + logical_in
  idx_sizes = (1,) * (n - q) + logical_idx
  x = _data(draw, data_type, in_sizes)
  i = _indices(draw, index_type, idx_sizes, lambda pos: logical_in[b + pos[-1]])
  kwargs = dict(input_dimension_count=m, indices_dimension_count=q, batch_dimension_count=b)
  tensors = TensorDesc(data_type, in_sizes), TensorDesc(index_type, idx_sizes)
  if op == "GATHER_ND1":
    desc = dml.GatherNd1Desc(*tensors, **kwargs)
  else:
    desc = dml.GatherNdDesc(*tensors, input_dimension_count=m, indices_dimension_count=q)
  return Case(
    desc,
    level,
    [x, i],
    lambda x, i, level: dml.gather_nd(x, i, feature_level=level, **kwargs),
    lambda: reference.gather_nd(x, i, **kwargs),
  )


@st.composite
def gather_case(draw):
  """GATHER: q = IndexDimensions in [0, n], leading index dims 1, and the logical output's
  sizes that right alignment crops (its first q - 1) set to 1."""
  level = draw(levels("GATHER"))
  table = _table(dml.GatherDesc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  index_type = draw(st.sampled_from(table["IndicesTensor"].data_types))
  axis = draw(st.integers(0, n - 1))
  q = draw(st.integers(0, n))
  sizes = list(_sizes(draw, n, max_elements=48))
  logical_indices = list(_sizes(draw, q, max_elements=8))
  for k in range(max(q - 1, 0)):  # the cropped sizes: input sizes before the axis, then J's
    if k < axis:
      sizes[k] = 1
    else:
      logical_indices[k - axis] = 1
  sizes, index_sizes = tuple(sizes), (1,) * (n - q) + tuple(logical_indices)
  x = _data(draw, data_type, sizes)
  i = _indices(draw, index_type, index_sizes, lambda pos: sizes[axis])
  # None is the default count (n); pass it that way now and then.
  count = None if q == n and draw(st.booleans()) else q
  desc = dml.GatherDesc(
    TensorDesc(data_type, sizes),
    TensorDesc(index_type, index_sizes),
    axis=axis,
    index_dimensions=count,
  )
  return Case(
    desc,
    level,
    [x, i],
    # Through the functional API with the count set: unset, it reads the call as np.take.
    lambda x, i, level: dml.gather(x, i, axis=axis, index_dimensions=q, feature_level=level),
    lambda: reference.gather(x, i, axis=axis, index_dimensions=count),
  )


@st.composite
def reverse_subsequences_case(draw):
  level = draw(levels("REVERSE_SUBSEQUENCES"))
  table = _table(dml.ReverseSubsequencesDesc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  length_type = draw(st.sampled_from(table["SequenceLengthsTensor"].data_types))
  sizes = _sizes(draw, n)
  axis = draw(st.integers(0, n - 1))
  length_sizes = sizes[:axis] + (1,) + sizes[axis + 1 :]
  x = _data(draw, data_type, sizes)
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  info = np.iinfo(length_type.numpy_dtype)
  lengths = rng.integers(0, sizes[axis] + 3, length_sizes).astype(length_type.numpy_dtype)
  lengths.flat[0] = draw(st.sampled_from([0, 1, sizes[axis], int(info.max), 2**32 - 1]))
  desc = dml.ReverseSubsequencesDesc(
    TensorDesc(data_type, sizes), TensorDesc(length_type, length_sizes), axis=axis
  )
  return Case(
    desc,
    level,
    [x, lengths],
    lambda x, n, level: dml.reverse_subsequences(x, n, axis=axis, feature_level=level),
    lambda: reference.reverse_subsequences(x, lengths, axis=axis),
  )


@st.composite
def join_case(draw):
  level = draw(levels("JOIN"))
  table = _table(dml.JoinDesc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensors"].data_types))
  sizes = _sizes(draw, n, max_elements=48)
  axis = draw(st.integers(0, n - 1))
  count = draw(st.integers(1, 4))
  shapes = [sizes[:axis] + (draw(st.integers(1, 3)),) + sizes[axis + 1 :] for _ in range(count)]
  xs = [_data(draw, data_type, s) for s in shapes]
  desc = dml.JoinDesc(tuple(TensorDesc(data_type, s) for s in shapes), axis=axis)
  return Case(
    desc,
    level,
    xs,
    lambda *args: dml.join(list(args[:-1]), axis=axis, feature_level=args[-1]),
    lambda: reference.join(xs, axis=axis),
  )


@st.composite
def tile_case(draw):
  level = draw(levels("TILE"))
  table = _table(dml.TileDesc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  sizes = _sizes(draw, n, max_elements=24)
  repeats = tuple(draw(st.integers(1, 3)) for _ in range(n))
  x = _data(draw, data_type, sizes)
  desc = dml.TileDesc(TensorDesc(data_type, sizes), repeats=repeats)
  return Case(
    desc,
    level,
    [x],
    lambda x, level: dml.tile(x, repeats=repeats, feature_level=level),
    lambda: reference.tile(x, repeats=repeats),
  )


_SCALES = (0.5, -3.25, 1e-3, 0.1, 7.0)
_BIASES = (0.0, -0.0, 1.5, 0.3, -2.0)


@st.composite
def element_wise_identity_case(draw):
  level = draw(levels("ELEMENT_WISE_IDENTITY"))
  table = _table(dml.ElementWiseIdentityDesc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  sizes = _sizes(draw, n, max_elements=48)
  scale_bias = None
  if data_type.is_float and draw(st.booleans()):
    scale_bias = dml.ScaleBias(draw(st.sampled_from(_SCALES)), draw(st.sampled_from(_BIASES)))
  x = _data(draw, data_type, sizes)
  desc = dml.ElementWiseIdentityDesc(TensorDesc(data_type, sizes), scale_bias=scale_bias)
  return Case(
    desc,
    level,
    [x],
    lambda x, level: dml.element_wise_identity(x, scale_bias=scale_bias, feature_level=level),
    lambda: reference.element_wise_identity(x, scale_bias=scale_bias),
  )


_DEPTH_SPACE_DESCS = {
  "DEPTH_TO_SPACE": (dml.DepthToSpaceDesc, "depth_to_space"),
  "DEPTH_TO_SPACE1": (dml.DepthToSpace1Desc, "depth_to_space1"),
  "SPACE_TO_DEPTH": (dml.SpaceToDepthDesc, "space_to_depth"),
  "SPACE_TO_DEPTH1": (dml.SpaceToDepth1Desc, "space_to_depth1"),
}


@st.composite
def depth_space_case(draw, op="DEPTH_TO_SPACE"):
  """DEPTH_TO_SPACE(1) or SPACE_TO_DEPTH(1): a small NCHW input of whole blocks, either order
  for the numbered operators."""
  desc_type, function = _DEPTH_SPACE_DESCS[op]
  level = draw(levels(op))
  data_type = draw(st.sampled_from(_table(desc_type, level)["InputTensor"].data_types))
  b = draw(st.integers(1, 3))
  n, c, h, w = (draw(st.integers(1, 2)) for _ in range(4))
  to_space = op.startswith("DEPTH")
  sizes = (n, c * b * b, h, w) if to_space else (n, c, h * b, w * b)
  x = _data(draw, data_type, sizes)
  attributes = dict(block_size=b)
  if op.endswith("1"):
    attributes["order"] = draw(st.sampled_from(list(dml.DepthSpaceOrder)))
  desc = desc_type(TensorDesc(data_type, sizes), **attributes)
  return Case(
    desc,
    level,
    [x],
    lambda x, level: getattr(dml, function)(x, **attributes, feature_level=level),
    lambda: getattr(reference, function)(x, **attributes),
  )


@st.composite
def split_case(draw):
  level = draw(levels("SPLIT"))
  table = _table(dml.SplitDesc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  axis = draw(st.integers(0, n - 1))
  split_sizes = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=4)))
  sizes = list(_sizes(draw, n, max_elements=48))
  sizes[axis] = sum(split_sizes)
  x = _data(draw, data_type, tuple(sizes))
  pieces = tuple(
    TensorDesc(data_type, tuple(sizes[:axis]) + (s,) + tuple(sizes[axis + 1 :]))
    for s in split_sizes
  )
  desc = dml.SplitDesc(TensorDesc(data_type, tuple(sizes)), pieces, axis=axis)
  return Case(
    desc,
    level,
    [x],
    lambda x, level: dml.split(x, axis=axis, split_sizes=split_sizes, feature_level=level),
    lambda: reference.split(x, axis=axis, split_sizes=split_sizes),
  )


@st.composite
def padding_case(draw, op="PADDING"):
  """PADDING or PADDING1: every mode the level has, pads up to 3 times the input (folding),
  and padding values at the edges of the conversions (NaN, -0.0, truncation, saturation,
  64-bit integers beyond 2**53)."""
  desc_type = DESCS[op]
  level = draw(levels(op))
  table = _table(desc_type, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  sizes = _sizes(draw, n, max_elements=24)
  modes = [m for m in dml.PaddingMode if m.introduced <= level]
  mode = draw(st.sampled_from(modes))
  start = [draw(st.integers(0, 3 * s + 1)) for s in sizes]
  end = [draw(st.integers(0, 3 * s + 1)) for s in sizes]
  while math.prod(s + lo + hi for s, lo, hi in zip(sizes, start, end, strict=True)) > 400:
    widest = max(range(n), key=lambda d: start[d] + end[d])  # halve the widest padding
    start[widest] //= 2
    end[widest] //= 2
  x = _data(draw, data_type, sizes)
  if op == "PADDING":
    value = draw(
      st.sampled_from([0.0, -0.0, 9.0, 10.6, -10.6, -1.0, 300.5, 1e10, -1e10, math.nan, math.inf])
      | st.floats(allow_nan=False, width=32)
    )
    desc = dml.PaddingDesc(
      TensorDesc(data_type, sizes),
      padding_mode=mode,
      start_padding=start,
      end_padding=end,
      padding_value=value,
    )
    function, oracle = dml.padding, reference.padding
  else:
    if data_type.is_float:
      value = draw(
        st.sampled_from([0.0, -0.0, 0.1, 65504.0, 1e6, math.nan, -math.inf]) | st.floats()
      )
    else:
      info = np.iinfo(data_type.numpy_dtype)
      low, high = int(info.min), int(info.max)
      value = draw(st.sampled_from([low, high, 0, 2**53 + 1, 7]) | st.integers(low, high))
      value = min(max(value, low), high)
    desc = dml.Padding1Desc(
      TensorDesc(data_type, sizes),
      padding_mode=mode,
      start_padding=start,
      end_padding=end,
      padding_value=value,
    )
    function, oracle = dml.padding1, reference.padding1
  kwargs = dict(padding_mode=mode, padding_value=value, start_padding=start, end_padding=end)
  return Case(
    desc,
    level,
    [x],
    lambda x, level: function(x, feature_level=level, **kwargs),
    lambda: oracle(x, **kwargs),
  )


@st.composite
def slice_case(draw):
  level = draw(levels("SLICE"))
  table = _table(dml.SliceDesc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  shape = tuple(
    draw(st.integers(1, 5)) if d >= n - 3 else draw(st.integers(1, 2)) for d in range(n)
  )
  offsets, sizes, strides = [], [], []
  for extent in shape:
    offset = draw(st.integers(0, extent - 1))
    stride = draw(st.integers(1, 3))
    offsets.append(offset)
    strides.append(stride)
    sizes.append(draw(st.integers(1, (extent - 1 - offset) // stride + 1)))
  x = _data(draw, data_type, shape)
  attributes = dict(offsets=tuple(offsets), sizes=tuple(sizes), strides=tuple(strides))
  desc = dml.SliceDesc(TensorDesc(data_type, shape), **attributes)
  return Case(
    desc,
    level,
    [x],
    lambda x, level: dml.slice(x, **attributes, feature_level=level),
    lambda: reference.slice(x, **attributes),
  )


@st.composite
def slice1_case(draw):
  level = draw(levels("SLICE1"))
  table = _table(dml.Slice1Desc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  shape = tuple(
    draw(st.integers(1, 5)) if d >= n - 3 else draw(st.integers(1, 2)) for d in range(n)
  )
  offsets, sizes, strides, walks = [], [], [], []
  for extent in shape:
    offset = draw(st.integers(0, extent - 1))
    size = draw(st.integers(1, extent - offset))
    stride = draw(st.sampled_from([-3, -2, -1, 1, 2, 3]))
    offsets.append(offset)
    sizes.append(size)
    strides.append(stride)
    walks.append((size - 1) // abs(stride) + 1)
  prefix = draw(st.booleans())
  # A prefix of the walks, whole in the last dimension (so that the generic mutant with one
  # more element there is invalid).
  output_sizes = (
    tuple(draw(st.integers(1, w)) for w in walks[:-1]) + (walks[-1],) if prefix else None
  )
  x = _data(draw, data_type, shape)
  attributes = dict(
    input_window_offsets=tuple(offsets),
    input_window_sizes=tuple(sizes),
    input_window_strides=tuple(strides),
  )
  desc = dml.Slice1Desc(
    TensorDesc(data_type, shape),
    **attributes,
    output_tensor=None if output_sizes is None else TensorDesc(data_type, output_sizes),
  )
  return Case(
    desc,
    level,
    [x],
    lambda x, level: dml.slice1(x, **attributes, output_sizes=output_sizes, feature_level=level),
    lambda: reference.slice1(x, **attributes, output_sizes=output_sizes),
  )


@st.composite
def scatter_elements_case(draw):
  """SCATTER_ELEMENTS: small lanes, so that the indices (in range, negative, past either end,
  extreme) repeat targets often."""
  level = draw(levels("SCATTER_ELEMENTS"))
  table = _table(dml.ScatterElementsDesc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  index_type = draw(st.sampled_from(table["IndicesTensor"].data_types))
  sizes = _sizes(draw, n)
  axis = draw(st.integers(0, n - 1))
  index_sizes = sizes[:axis] + (draw(st.integers(1, 5)),) + sizes[axis + 1 :]
  x = _data(draw, data_type, sizes)
  i = _indices(draw, index_type, index_sizes, lambda pos: sizes[axis])
  u = _data(draw, data_type, index_sizes)
  desc = dml.ScatterElementsDesc(
    TensorDesc(data_type, sizes),
    TensorDesc(index_type, index_sizes),
    TensorDesc(data_type, index_sizes),
    axis=axis,
  )
  return Case(
    desc,
    level,
    [x, i, u],
    lambda x, i, u, level: dml.scatter_elements(x, i, u, axis=axis, feature_level=level),
    lambda: reference.scatter_elements(x, i, u, axis=axis),
  )


@st.composite
def scatter_nd_case(draw):
  """SCATTER_ND: counts DirectML accepts, leading 1s outside them, tuples that repeat and
  leave the input."""
  level = draw(levels("SCATTER_ND"))
  table = _table(dml.ScatterNdDesc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  index_type = draw(st.sampled_from(table["IndicesTensor"].data_types))
  m = draw(st.integers(1, n))
  t = draw(st.integers(1, m))
  q = draw(st.integers(1, min(n, n + 1 - (m - t))))  # q - 1 + m - t <= n
  logical_in = _sizes(draw, m, max_elements=64)
  logical_idx = _sizes(draw, q - 1, max_elements=8) + (t,)
  in_sizes = (1,) * (n - m) + logical_in
  idx_sizes = (1,) * (n - q) + logical_idx
  logical_updates = logical_idx[:-1] + logical_in[t:]
  upd_sizes = (1,) * (n - len(logical_updates)) + logical_updates
  x = _data(draw, data_type, in_sizes)
  i = _indices(draw, index_type, idx_sizes, lambda pos: logical_in[pos[-1]])
  u = _data(draw, data_type, upd_sizes)
  counts = dict(input_dimension_count=m, indices_dimension_count=q)
  desc = dml.ScatterNdDesc(
    TensorDesc(data_type, in_sizes),
    TensorDesc(index_type, idx_sizes),
    TensorDesc(data_type, upd_sizes),
    **counts,
  )
  return Case(
    desc,
    level,
    [x, i, u],
    lambda x, i, u, level: dml.scatter_nd(x, i, u, feature_level=level, **counts),
    lambda: reference.scatter_nd(x, i, u, **counts),
  )


@st.composite
def one_hot_case(draw):
  """ONE_HOT: any axis, a depth of 1 to 5, values of any sizes with at least 2 elements (OffValue
  and OnValue first in row-major order), and indices in range, negative, past either end and at
  the extremes of their type (UINT32 0xFFFFFFFF, 64-bit 2**32 + 1, ...)."""
  level = draw(levels("ONE_HOT"))
  table = _table(dml.OneHotDesc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["ValuesTensor"].data_types))
  index_type = draw(st.sampled_from(table["IndicesTensor"].data_types))
  axis = draw(st.integers(0, n - 1))
  depth = draw(st.integers(1, 5))
  index_sizes = list(_sizes(draw, n, max_elements=24))
  index_sizes[axis] = 1
  value_sizes = list(_sizes(draw, n, max_elements=6))
  if math.prod(value_sizes) < 2:
    value_sizes[draw(st.integers(0, n - 1))] = 2
  output_sizes = tuple(index_sizes[:axis] + [depth] + index_sizes[axis + 1 :])
  i = _indices(draw, index_type, tuple(index_sizes), lambda pos: depth)
  v = _data(draw, data_type, tuple(value_sizes))
  desc = dml.OneHotDesc(
    TensorDesc(index_type, tuple(index_sizes)),
    TensorDesc(data_type, tuple(value_sizes)),
    TensorDesc(data_type, output_sizes),
    axis=axis,
  )
  return Case(
    desc,
    level,
    [i, v],
    lambda i, v, level: dml.one_hot(i, v, axis=axis, depth=depth, feature_level=level),
    lambda: reference.one_hot(i, v, axis=axis, depth=depth),
  )


# -- CAST, ELEMENT_WISE_IF, DIAGONAL_MATRIX(1), NONZERO_COORDINATES ---------------------------


def _cast_data(draw, data_type: DataType, shape):
  """Values a conversion can get wrong: halfway cases, overflow, subnormals, -0.0, infinities,
  NaNs with payloads, integer extremes."""
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  dtype = data_type.numpy_dtype
  count = math.prod(shape)
  if data_type.is_float:
    scales = np.array([1.0, 1e3, 7e4, 3e9, 2e19, 1e-6, 1e-30, 1e300], np.float64)
    with np.errstate(over="ignore"):
      values = (rng.standard_normal(count) * rng.choice(scales, count)).astype(dtype)
      specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65520.0, 255.5, -0.5], dtype)
    width = dtype.itemsize * 8
    bits = np.dtype(f"u{dtype.itemsize}")
    payload = bits.type((1 << (width - 1)) - 1)  # every exponent bit and payload bit set
    nans = np.array([payload, payload - bits.type(12345)], bits).view(dtype)
    pool = np.concatenate([specials, nans])
    pick = rng.integers(0, 4, count) == 0
    values[pick] = rng.choice(pool, int(pick.sum()))
    return values.reshape(shape)
  info = np.iinfo(dtype)
  values = rng.integers(info.min, info.max, count, dtype=dtype, endpoint=True)
  pick = rng.integers(0, 4, count) == 0
  values[pick] = rng.choice(np.array([info.min, info.max, 0, 1], dtype), int(pick.sum()))
  return values.reshape(shape)


@st.composite
def cast_case(draw):
  """CAST: any pair of the level's types, values at the conversions' edges."""
  level = draw(levels("CAST"))
  table = _table(dml.CastDesc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  source = draw(st.sampled_from(table["InputTensor"].data_types))
  target = draw(st.sampled_from(table["OutputTensor"].data_types))
  sizes = _sizes(draw, n, max_elements=24)
  x = _cast_data(draw, source, sizes)
  desc = dml.CastDesc(TensorDesc(source, sizes), TensorDesc(target, sizes))
  return Case(
    desc,
    level,
    [x],
    lambda x, level: dml.cast(x, data_type=target, feature_level=level),
    lambda: reference.cast(x, data_type=target.name),
  )


@st.composite
def element_wise_if_case(draw):
  """ELEMENT_WISE_IF: a UINT8 condition with zeros and several nonzero values."""
  level = draw(levels("ELEMENT_WISE_IF"))
  table = _table(dml.ElementWiseIfDesc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["ATensor"].data_types))
  sizes = _sizes(draw, n)
  rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
  condition = rng.choice(np.array([0, 0, 1, 2, 255], np.uint8), sizes)
  a, b = _data(draw, data_type, sizes), _data(draw, data_type, sizes)
  desc = dml.ElementWiseIfDesc(
    *(TensorDesc(t, sizes) for t in (DataType.UINT8, data_type, data_type))
  )
  return Case(
    desc,
    level,
    [condition, a, b],
    lambda c, a, b, level: dml.element_wise_if(c, a, b, feature_level=level),
    lambda: reference.element_wise_if(condition, a, b),
  )


_INTS = st.one_of(st.integers(-6, 6), st.sampled_from([-(2**31), 2**31 - 1]))


@st.composite
def diagonal_matrix_case(draw):
  """DIAGONAL_MATRIX: any output the level allows, offsets near and far, values to truncate."""
  level = draw(levels("DIAGONAL_MATRIX"))
  table = _table(dml.DiagonalMatrixDesc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["OutputTensor"].data_types))
  sizes = _sizes(draw, n)
  offset = draw(_INTS)
  value = draw(st.sampled_from([1.0, 10.6, -10.6, 2.5, -0.0, 300.0, 1e10, float("nan")]))
  desc = dml.DiagonalMatrixDesc(TensorDesc(data_type, sizes), offset=offset, value=value)
  params = dict(sizes=sizes, data_type=data_type.name, offset=offset, value=value)
  return Case(
    desc,
    level,
    [],
    lambda level: dml.diagonal_matrix(**params, feature_level=level),
    lambda: reference.diagonal_matrix(**params),
  )


@st.composite
def diagonal_matrix1_case(draw):
  """DIAGONAL_MATRIX1: with and without an input, bands in either order, exact values."""
  level = draw(levels("DIAGONAL_MATRIX1"))
  table = _table(dml.DiagonalMatrix1Desc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["OutputTensor"].data_types))
  sizes = _sizes(draw, n)
  begin, end = draw(_INTS), draw(_INTS)
  if data_type.is_float:
    value: int | float = draw(st.sampled_from([1.0, -0.0, 7.5, 1e-7, 65504.0]))
  else:
    info = np.iinfo(data_type.numpy_dtype)
    value = draw(st.sampled_from([int(info.min), int(info.max), 0, 1]))
  with_input = draw(st.booleans())
  x = _data(draw, data_type, sizes) if with_input else None
  desc = dml.DiagonalMatrix1Desc(
    TensorDesc(data_type, sizes) if with_input else None,
    TensorDesc(data_type, sizes),
    value=value,
    diagonal_fill_begin=begin,
    diagonal_fill_end=end,
  )
  params = dict(value=value, diagonal_fill_begin=begin, diagonal_fill_end=end)
  if not with_input:
    params.update(sizes=sizes, data_type=data_type.name)
  return Case(
    desc,
    level,
    [x] if with_input else [],
    lambda *arrays: dml.diagonal_matrix1(*arrays[:-1], **params, feature_level=arrays[-1]),
    lambda: reference.diagonal_matrix1(x, **params),
  )


@st.composite
def nonzero_coordinates_case(draw):
  """NONZERO_COORDINATES: mostly zeros (-0.0 among them), N from the effective rank up."""
  level = draw(levels("NONZERO_COORDINATES"))
  table = _table(dml.NonzeroCoordinatesDesc, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  sizes = _sizes(draw, n, max_elements=48)
  if draw(st.booleans()):  # leading 1s: an effective rank below the DimensionCount
    k = draw(st.integers(0, n - 1))
    sizes = (1,) * k + sizes[k:]
  rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
  x = _data(draw, data_type, sizes)
  x[rng.integers(0, 3, sizes) != 0] = 0
  if data_type.is_float:
    x[rng.integers(0, 4, sizes) == 0] = -0.0
  low = n - next((i for i, s in enumerate(sizes) if s != 1), n)  # the effective rank
  coordinate_size = draw(st.integers(max(low, 1), n))
  coordinates_rank = max(n, 2)
  desc = dml.NonzeroCoordinatesDesc(
    TensorDesc(data_type, sizes),
    TensorDesc(DataType.UINT32, (1,) * n),
    TensorDesc(
      DataType.UINT32, (1,) * (coordinates_rank - 2) + (math.prod(sizes), coordinate_size)
    ),
  )
  return Case(
    desc,
    level,
    [x],
    lambda x, level: dml.nonzero_coordinates(
      x, coordinate_size=coordinate_size, feature_level=level
    ),
    lambda: reference.nonzero_coordinates(x, coordinate_size=coordinate_size),
  )


@st.composite
def fill_value_case(draw, op="FILL_VALUE_CONSTANT"):
  """FILL_VALUE_CONSTANT or FILL_VALUE_SEQUENCE: any data type the level has, values at the
  edges of their type (NaN, -0.0 and infinities for the constant; integers at their bounds,
  steps in either reading of their bits), finite floats for the sequence."""
  desc_type = DESCS[op]
  level = draw(levels(op))
  table = _table(desc_type, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["OutputTensor"].data_types))
  sizes = _sizes(draw, n, max_elements=48)
  sequence = op == "FILL_VALUE_SEQUENCE"

  def scalar(step=False):
    if data_type.is_float:
      width = 16 if data_type == DataType.FLOAT16 else 32
      finite = st.floats(allow_nan=False, allow_infinity=False, width=width)
      if sequence:
        return draw(st.sampled_from([0.0, -0.0, 0.1, -2.5]) | finite)
      return draw(st.sampled_from([0.0, -0.0, 0.1, 1e300, math.nan, math.inf, -math.inf]) | finite)
    info = np.iinfo(data_type.numpy_dtype)
    low = -(2 ** (data_type.size_in_bits - 1)) if step else int(info.min)
    return draw(st.sampled_from([low, int(info.max), 0, 1]) | st.integers(low, int(info.max)))

  output = TensorDesc(data_type, sizes)
  if sequence:
    values = dict(value_start=scalar(), value_delta=scalar(step=True))
    function, oracle = dml.fill_value_sequence, reference.fill_value_sequence
  else:
    values = dict(value=scalar())
    function, oracle = dml.fill_value_constant, reference.fill_value_constant
  desc = desc_type(output, data_type, **values)
  kwargs = dict(sizes=sizes, value_data_type=data_type, **values)
  return Case(
    desc,
    level,
    [],
    lambda level: function(**kwargs, feature_level=level),
    lambda: oracle(**kwargs),
  )


def _selection_data(draw, data_type: DataType, shape):
  """Values with many ties: a few distinct values, and for floats -0.0, 0.0, +-inf and NaNs
  of both signs and two payloads (all of which rank as one value above +inf)."""
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  dtype = data_type.numpy_dtype
  if data_type.is_float:
    nans = np.array([np.nan, -np.nan], dtype)
    other_payload = (nans.view(f"u{dtype.itemsize}") | np.array(1, f"u{dtype.itemsize}")).view(
      dtype
    )
    numbers = np.array([-2.5, -1, -0.0, 0.0, 1, 3, np.inf, -np.inf], dtype)
    pool = np.concatenate([numbers, nans, other_payload])
  else:
    info = np.iinfo(dtype)
    pool = np.array([info.min, info.max, 0, 1, 2, 3, info.max - 1], dtype)
  return rng.choice(pool, size=shape)


@st.composite
def arg_min_max_case(draw, op="ARGMAX"):
  """ARGMIN or ARGMAX: any non-empty set of axes in any order, either direction, any index
  type of the output, and values with many ties, signed zeros and NaNs."""
  desc_type = DESCS[op]
  level = draw(levels(op))
  table = _table(desc_type, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  output_type = draw(st.sampled_from(table["OutputTensor"].data_types))
  sizes = _sizes(draw, n, max_elements=48)
  axes = tuple(draw(st.permutations(range(n)))[: draw(st.integers(1, n))])
  direction = draw(st.sampled_from(list(dml.AxisDirection)))
  x = _selection_data(draw, data_type, sizes)
  reduced = tuple(1 if d in axes else size for d, size in enumerate(sizes))
  desc = desc_type(
    TensorDesc(data_type, sizes), axes, TensorDesc(output_type, reduced), axis_direction=direction
  )
  function, oracle = getattr(dml, desc_type.FUNCTION), getattr(reference, desc_type.FUNCTION)
  return Case(
    desc,
    level,
    [x],
    lambda x, level: function(
      x, axes=axes, axis_direction=direction, output_data_type=output_type, feature_level=level
    ),
    lambda: oracle(x, axes=axes, axis_direction=direction.name, output_data_type=output_type.name),
  )


@st.composite
def top_k_case(draw, op="TOP_K"):
  """TOP_K or TOP_K1: any axis, K from 1 to the lane's length, either direction (TOP_K1), any
  index type of the level, and values with many ties, signed zeros and NaNs."""
  desc_type = DESCS[op]
  level = draw(levels(op))
  table = _table(desc_type, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  index_type = draw(st.sampled_from(table["OutputIndexTensor"].data_types))
  sizes = _sizes(draw, n, max_elements=48)
  axis = draw(st.integers(0, n - 1))
  k = draw(st.integers(1, sizes[axis]))
  extra = {}
  if op == "TOP_K1":
    extra["axis_direction"] = draw(st.sampled_from(list(dml.AxisDirection)))
  x = _selection_data(draw, data_type, sizes)
  out_sizes = sizes[:axis] + (k,) + sizes[axis + 1 :]
  desc = desc_type(
    TensorDesc(data_type, sizes),
    axis,
    k,
    TensorDesc(data_type, out_sizes),
    TensorDesc(index_type, out_sizes),
    **extra,
  )
  function, oracle = getattr(dml, desc_type.FUNCTION), getattr(reference, desc_type.FUNCTION)
  named = {key: value.name for key, value in extra.items()}
  return Case(
    desc,
    level,
    [x],
    lambda x, level: function(
      x, axis=axis, k=k, index_data_type=index_type, feature_level=level, **extra
    ),
    lambda: oracle(x, axis=axis, k=k, index_data_type=index_type.name, **named),
  )


# Dyadic scales and offsets and small whole numbers: pictures a reader can check by hand
# (tests/ops/test_resample.py compares general fields too).
_RESAMPLE_SCALES = (0.25, 0.5, 1.0, 2.0, 4.0)
_RESAMPLE_OFFSETS = (0.0, 0.5, -0.5, 0.25, 1.0)


def _resample_data(draw, data_type, sizes):
  rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
  low, high = (0, 64) if data_type is DataType.UINT8 else (-64, 64)
  return rng.integers(low, high, sizes).astype(data_type.numpy_dtype)


@st.composite
def resample_case(draw, op="RESAMPLE"):
  """RESAMPLE, RESAMPLE1 or RESAMPLE2: either mode, free output sizes, dyadic fields."""
  desc_type = DESCS[op]
  level = draw(levels(op))
  table = _table(desc_type, level)
  n = draw(st.integers(*_rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  sizes = _sizes(draw, n, max_elements=24)
  out = _sizes(draw, n, max_elements=24)
  mode = draw(st.sampled_from(["NEAREST_NEIGHBOR", "LINEAR"]))
  scales = tuple(draw(st.sampled_from(_RESAMPLE_SCALES)) for _ in range(n))
  offsets = lambda: tuple(draw(st.sampled_from(_RESAMPLE_OFFSETS)) for _ in range(n))  # noqa: E731
  x = _resample_data(draw, data_type, sizes)
  inputs, output = TensorDesc(data_type, sizes), TensorDesc(data_type, out)
  kwargs: dict = {"interpolation_mode": mode, "scales": scales, "output_sizes": out}
  if op == "RESAMPLE":
    desc = dml.ResampleDesc(inputs, output, mode, scales)
  else:
    kwargs["input_pixel_offsets"], kwargs["output_pixel_offsets"] = offsets(), offsets()
    fields = (kwargs["input_pixel_offsets"], kwargs["output_pixel_offsets"])
    if op == "RESAMPLE1":
      desc = dml.Resample1Desc(inputs, output, mode, scales, *fields)
    else:
      kwargs["rounding_direction"] = draw(st.sampled_from(["DECREASING", "INCREASING"]))
      desc = dml.Resample2Desc(inputs, output, mode, kwargs["rounding_direction"], scales, *fields)
  function, oracle = getattr(dml, op.lower()), getattr(reference, op.lower())
  return Case(
    desc,
    level,
    [x],
    lambda x, level: function(x, feature_level=level, **kwargs),
    lambda: oracle(x, **kwargs),
  )


@st.composite
def upsample_2d_case(draw):
  level = draw(levels("UPSAMPLE_2D"))
  n = draw(st.integers(4, 5))
  data_type = draw(st.sampled_from([DataType.FLOAT32, DataType.FLOAT16]))
  sizes = _sizes(draw, n, max_elements=12)
  scale = {"Width": draw(st.integers(1, 3)), "Height": draw(st.integers(1, 3))}
  mode = draw(st.sampled_from(["NEAREST_NEIGHBOR", "LINEAR"]))
  x = _resample_data(draw, data_type, sizes)
  desc = dml.Upsample2dDesc(TensorDesc(data_type, sizes), scale, interpolation_mode=mode)
  return Case(
    desc,
    level,
    [x],
    lambda x, level: dml.upsample_2d(
      x, scale_size=scale, interpolation_mode=mode, feature_level=level
    ),
    lambda: reference.upsample_2d(x, scale_size=scale, interpolation_mode=mode),
  )


VALID = {
  "ELEMENT_WISE_IDENTITY": element_wise_identity_case,
  "GATHER": gather_case,
  "GATHER_ELEMENTS": gather_elements_case,
  "GATHER_ND": gather_nd_case,
  "GATHER_ND1": lambda: gather_nd_case(op="GATHER_ND1"),
  "REVERSE_SUBSEQUENCES": reverse_subsequences_case,
  "JOIN": join_case,
  "TILE": tile_case,
  "DEPTH_TO_SPACE": depth_space_case,
  "DEPTH_TO_SPACE1": lambda: depth_space_case(op="DEPTH_TO_SPACE1"),
  "SPACE_TO_DEPTH": lambda: depth_space_case(op="SPACE_TO_DEPTH"),
  "SPACE_TO_DEPTH1": lambda: depth_space_case(op="SPACE_TO_DEPTH1"),
  "SPLIT": split_case,
  "PADDING": padding_case,
  "PADDING1": lambda: padding_case(op="PADDING1"),
  "SLICE": slice_case,
  "SLICE1": slice1_case,
  "ONE_HOT": one_hot_case,
  "SCATTER_ELEMENTS": scatter_elements_case,
  "SCATTER_ND": scatter_nd_case,
  "CAST": cast_case,
  "ELEMENT_WISE_IF": element_wise_if_case,
  "DIAGONAL_MATRIX": diagonal_matrix_case,
  "DIAGONAL_MATRIX1": diagonal_matrix1_case,
  "NONZERO_COORDINATES": nonzero_coordinates_case,
  "FILL_VALUE_CONSTANT": fill_value_case,
  "FILL_VALUE_SEQUENCE": lambda: fill_value_case(op="FILL_VALUE_SEQUENCE"),
  "ARGMIN": lambda: arg_min_max_case(op="ARGMIN"),
  "ARGMAX": arg_min_max_case,
  "TOP_K": top_k_case,
  "TOP_K1": lambda: top_k_case(op="TOP_K1"),
  "RESAMPLE": resample_case,
  "RESAMPLE1": lambda: resample_case(op="RESAMPLE1"),
  "RESAMPLE2": lambda: resample_case(op="RESAMPLE2"),
  "UPSAMPLE_2D": upsample_2d_case,
}


# -- mutants ---------------------------------------------------------------------------------


def _replace_tensor(tensor: TensorDesc, **changes) -> TensorDesc:
  return dataclasses.replace(tensor, **changes)


def _mutated_fields(desc):
  """The tensor fields the generic mutants change: the inputs, or the outputs of an operator
  that reads no tensor (the fills)."""
  inputs = [f for f in dml_fields(desc) if f.kind.is_tensor and not f.output]
  return inputs or [f for f in dml_fields(desc) if f.output]


def _replace_input(desc, position, **changes):
  """`desc` with its `position`-th input tensor (in `dml_inputs` order) changed; for an
  operator without inputs, its `position`-th output."""
  values, k = {}, 0
  for field in _mutated_fields(desc):
    value = getattr(desc, field.name)
    if field.kind is FieldKind.TENSOR:
      if k == position:
        values[field.name] = _replace_tensor(value, **changes)
      k += 1
      continue
    if k <= position < k + len(value):
      tensors = list(value)
      tensors[position - k] = _replace_tensor(tensors[position - k], **changes)
      values[field.name] = tuple(tensors)
    k += len(value)
  return dataclasses.replace(desc, **values)


def _with_input(desc, **changes):
  return _replace_input(desc, 0, **changes)


def _input_name(desc):
  return desc.dml_inputs()[0][0]


def _mutations(desc, level, draw):
  """Yields (name, mutant descriptor, field the error must name)."""
  table = desc.SUPPORT.at(level)
  inputs = list(desc.dml_inputs())
  if not inputs:  # an operator with no input (DIAGONAL_MATRIX): its output's own rules
    yield from _output_only_mutations(desc, level, draw)
    return
  name, row, tensor = inputs[0]
  n = tensor.dimension_count
  # Forbidden data types per role at this level.
  for position, (field, role, _) in enumerate(inputs[:2]):
    forbidden = [t for t in DataType if t not in table[role].data_types and t.numpy_dtype]
    if forbidden:
      bad = draw(st.sampled_from(forbidden))
      yield "data type", _replace_input(desc, position, data_type=bad), f"{field}.DataType"
  yield (
    "unknown type",
    _with_input(desc, data_type=DataType.UNKNOWN),
    f"{_input_name(desc)}.DataType",
  )
  # A rank the level does not allow: every tensor gets it (so only the rank is wrong).
  low, high = table[inputs[0][1]].dimension_counts
  wrong = [r for r in range(1, 10) if not low <= r <= high and r <= 9]
  if wrong:
    yield (
      "rank",
      _with_rank(desc, draw(st.sampled_from(wrong))),
      f"{_input_name(desc)}.DimensionCount",
    )
  # Zero sizes and too many elements.
  yield "zero size", _with_input(desc, sizes=(0,) + tensor.sizes[1:]), f"{_input_name(desc)}.Sizes"
  yield (
    "too many elements",
    _with_input(desc, sizes=(2**16, 2**16) + tensor.sizes[2:] if n >= 2 else (2**32,)),
    f"{_input_name(desc)}.Sizes",
  )
  # Strides, total size, alignment, flags.
  yield "strides length", _with_input(desc, strides=(1,) * (n + 1)), f"{_input_name(desc)}.Strides"
  yield (
    "total size",
    _with_input(desc, total_tensor_size_in_bytes=tensor.minimum_size_in_bytes - 4),
    f"{_input_name(desc)}.TotalTensorSizeInBytes",
  )
  yield (
    "alignment",
    _with_input(desc, guaranteed_base_offset_alignment=3),
    f"{_input_name(desc)}.GuaranteedBaseOffsetAlignment",
  )
  yield "flags", _with_input(desc, flags=2), f"{_input_name(desc)}.Flags"
  if isinstance(desc, dml.NonzeroCoordinatesDesc):  # two output tensors: see its mutations
    pass
  elif not hasattr(desc, "output_tensor"):  # OutputTensors (SPLIT): see _output_array_mutations
    yield from _output_array_mutations(desc)
  else:
    output = desc.output
    yield (
      "owned output",
      dataclasses.replace(desc, output_tensor=_replace_tensor(output, flags=1)),
      "OutputTensor.Flags",
    )
    # Output sizes and data type.
    bigger = _bigger_output_sizes(desc, output.sizes)
    if bigger is not None:
      yield (
        "output sizes",
        dataclasses.replace(desc, output_tensor=_replace_tensor(output, sizes=bigger)),
        "OutputTensor.Sizes",
      )
    other = DataType.INT8 if output.data_type != DataType.INT8 else DataType.UINT8
    retyped = dataclasses.replace(desc, output_tensor=_replace_tensor(output, data_type=other))
    if retyped.infer_outputs()[0].data_type != other:  # not CAST's, which any type may be
      yield ("output type", retyped, "OutputTensor.DataType")
  # Axis out of range.
  if hasattr(desc, "axis"):
    yield "axis", dataclasses.replace(desc, axis=n + draw(st.integers(0, 3))), "Axis"
  yield from _operator_mutations(desc, level, draw)


def _output_only_mutations(desc, level, draw):
  """The mutants of an operator whose one tensor is its OutputTensor (DIAGONAL_MATRIX, and
  DIAGONAL_MATRIX1 without an input): a type or rank the level lacks, the tensor layer."""
  table = desc.SUPPORT.at(level)
  output = desc.output_tensor
  row = table["OutputTensor"]
  forbidden = [t for t in DataType if t not in row.data_types and t.numpy_dtype]
  if forbidden:
    bad = _replace_tensor(output, data_type=draw(st.sampled_from(forbidden)))
    yield "output type", _rebuild_output(desc, bad), "OutputTensor.DataType"
  low, high = row.dimension_counts
  wrong = [r for r in range(1, 10) if not low <= r <= high]
  rank = draw(st.sampled_from(wrong))
  sizes = (output.sizes + (1,) * 9)[:rank]
  yield (
    "rank",
    _rebuild_output(desc, _replace_tensor(output, sizes=sizes)),
    ("OutputTensor.DimensionCount"),
  )
  zero = _replace_tensor(output, sizes=(0,) + output.sizes[1:])
  yield "zero size", _rebuild_output(desc, zero), "OutputTensor.Sizes"
  yield "flags", _rebuild_output(desc, _replace_tensor(output, flags=1)), "OutputTensor.Flags"
  yield from _operator_mutations(desc, level, draw)


def _rebuild_output(desc, output):
  """`desc` with `output` as its OutputTensor, a value that must follow its type following."""
  changes = {"output_tensor": output}
  if isinstance(desc, dml.DiagonalMatrix1Desc):
    changes["value_data_type"] = None
    changes["value"] = 0
  return dataclasses.replace(desc, **changes)


def _bigger_output_sizes(desc, sizes):
  """`sizes` with one more element in the last dimension the inputs fix, or None where they fix
  none: ONE_HOT's size on Axis is the depth, which only the OutputTensor holds, so any value
  there is valid."""
  free = {desc.axis} if isinstance(desc, dml.OneHotDesc) else set()
  if isinstance(desc, RESAMPLE_DESCS):  # given, never inferred
    free = set(range(len(sizes)))
  if not desc.dml_inputs():  # an operator without inputs (the fills): no size is fixed
    free = set(range(len(sizes)))
  fixed = [d for d in range(len(sizes)) if d not in free]
  if not fixed:
    return None
  d = fixed[-1]
  return sizes[:d] + (sizes[d] + 1,) + sizes[d + 1 :]


def _output_array_mutations(desc):
  """The generic output mutants for given OutputTensors, or for the first of several outputs
  (TOP_K's values and indices): owned or retyped. (Which field wrong output sizes break
  depends on the operator: see _operator_mutations.)"""
  output_fields = [f for f in dml_fields(desc) if f.output]
  field = output_fields[0]
  if field.kind is FieldKind.TENSOR:
    given = {f.name: t for f, t in zip(output_fields, desc.outputs, strict=True)}
    output = desc.outputs[0]
    for name, changes, rule in (
      ("owned output", {"flags": 1}, "Flags"),
      ("output type", {"data_type": _other_type(output.data_type)}, "DataType"),
    ):
      mutant = {**given, field.name: _replace_tensor(output, **changes)}
      yield name, dataclasses.replace(desc, **mutant), f"{field.dml_name}.{rule}"
    return
  outputs = getattr(desc, field.name)

  def first(**changes):
    return dataclasses.replace(
      desc, **{field.name: (_replace_tensor(outputs[0], **changes), *outputs[1:])}
    )

  yield "owned output", first(flags=1), f"{field.dml_name}[0].Flags"
  other = DataType.INT8 if outputs[0].data_type != DataType.INT8 else DataType.UINT8
  yield "output type", first(data_type=other), f"{field.dml_name}[0].DataType"


def _other_type(data_type):
  return DataType.INT8 if data_type != DataType.INT8 else DataType.UINT8


def _with_rank(desc, rank):
  """Every tensor given `rank` dimensions; axes 0 and counts computed again (from the new
  ranks), so that mostly the rank is wrong."""

  def fit(t: TensorDesc):
    sizes = (t.sizes + (1,) * 9)[:rank] if rank > t.dimension_count else t.sizes[-rank:]
    return _replace_tensor(t, sizes=(1,) * (rank - len(sizes)) + sizes)

  changes = {}
  for field in dml_fields(desc):
    value = getattr(desc, field.name)
    if field.kind is FieldKind.TENSOR and not field.output:
      changes[field.name] = fit(value)
    elif field.kind is FieldKind.TENSOR_ARRAY and not field.output:
      changes[field.name] = tuple(fit(t) for t in value)
    elif field.output and not field.optional:  # required outputs: OutputTensors, ONE_HOT's
      changes[field.name] = fit(value) if field.kind is FieldKind.TENSOR else tuple(map(fit, value))
    elif field.derive is not None:
      changes[field.name] = None
    elif field.dml_name == "Axis":
      changes[field.name] = 0
  return _rebuild(desc, changes)


def _rebuild(desc, changes):
  fields = {f.name: getattr(desc, f.name) for f in dataclasses.fields(desc)}
  fields.update(changes)
  for field in dml_fields(desc):  # an output that can be inferred is, from the changed fields
    if field.output and field.optional:
      fields[field.name] = None
  desc_type = type(desc)
  if isinstance(desc, GATHER_ND_DESCS):  # the batch count picks GATHER_ND or GATHER_ND1
    b = fields.pop("batch_dimension_count", 0)
    desc_type = dml.GatherNd1Desc if b else dml.GatherNdDesc
    fields.update({"batch_dimension_count": b} if b else {})
  return desc_type(**fields)


def _resample_mutations(desc, draw):
  n = desc.input_tensor.dimension_count
  count = "scale_count" if isinstance(desc, dml.ResampleDesc) else "dimension_count"
  yield "scale count", _rebuild(desc, {count: n + 1}), count.title().replace("_", "")
  bad = draw(st.sampled_from([0.0, -1.0, float("inf"), float("nan")]))
  yield "bad scale", _rebuild(desc, {"scales": (bad,) + desc.scales[1:]}), "Scales"
  yield "short scales", _rebuild(desc, {"scales": desc.scales + (1.0,), count: None}), "Scales"
  output = _replace_tensor(desc.output_tensor, sizes=desc.output_tensor.sizes + (1,))
  yield "output rank", _rebuild(desc, {"output_tensor": output}), "OutputTensor.DimensionCount"
  if not isinstance(desc, dml.ResampleDesc):
    offsets = (float("inf"),) + desc.input_pixel_offsets[1:]
    yield "bad offset", _rebuild(desc, {"input_pixel_offsets": offsets}), "InputPixelOffsets"


def _operator_mutations(desc, level, draw):
  if isinstance(desc, RESAMPLE_DESCS):
    yield from _resample_mutations(desc, draw)
  elif isinstance(desc, dml.Upsample2dDesc):
    yield "zero scale", _rebuild(desc, {"scale_size": {"Width": 0, "Height": 1}}), "ScaleSize.Width"
  elif isinstance(desc, SELECTION_DESCS):
    yield from _select_mutations(desc, level, draw)
  elif isinstance(desc, dml.ArgMinDesc | dml.ArgMaxDesc):
    n = desc.input_tensor.dimension_count
    yield "no axes", _rebuild(desc, {"axes": (), "axis_count": None}), "Axes"
    yield "axis count", _rebuild(desc, {"axis_count": len(desc.axes) + 1}), "AxisCount"
    yield "repeated axis", _rebuild(desc, {"axes": desc.axes + desc.axes[:1]}), "Axes"
    yield "axis out of range", _rebuild(desc, {"axes": (n + draw(st.integers(0, 3)),)}), "Axes"
  elif isinstance(desc, dml.TopKDesc | dml.TopK1Desc):
    length = desc.input_tensor.sizes[desc.axis]
    yield "k 0", _rebuild(desc, {"k": 0}), "K"
    yield "k past the lane", _rebuild(desc, {"k": length + draw(st.integers(1, 3))}), "K"
    values, indices = desc.outputs
    yield (
      "signed indices",
      dataclasses.replace(
        desc,
        output_value_tensor=values,
        output_index_tensor=_replace_tensor(indices, data_type=DataType.INT32),
      ),
      "OutputIndexTensor.DataType",
    )
    yield (
      "values rank",
      dataclasses.replace(
        desc,
        output_value_tensor=_replace_tensor(values, sizes=(1,) + values.sizes),
        output_index_tensor=indices,
      ),
      "OutputValueTensor.DimensionCount",
    )
  elif isinstance(desc, dml.ElementWiseIdentityDesc):
    table = desc.SUPPORT.at(level)
    integers = [t for t in table["InputTensor"].data_types if not t.is_float]
    if integers:
      data_type = draw(st.sampled_from(integers))
      yield (
        "scale and bias on integer data",
        dml.ElementWiseIdentityDesc(
          _replace_tensor(desc.input_tensor, data_type=data_type, total_tensor_size_in_bytes=None),
          scale_bias=(2.0, 1.0),
        ),
        "ScaleBias",
      )
  elif isinstance(desc, dml.GatherElementsDesc):
    n = desc.input_tensor.dimension_count
    others = [d for d in range(n) if d != desc.axis]
    if others:
      d = draw(st.sampled_from(others))
      sizes = list(desc.indices_tensor.sizes)
      sizes[d] += 1
      yield (
        "indices sizes",
        _rebuild(
          desc, {"indices_tensor": _replace_tensor(desc.indices_tensor, sizes=tuple(sizes))}
        ),
        "IndicesTensor.Sizes",
      )
    yield (
      "rank mismatch",
      _rebuild(
        desc,
        {
          "indices_tensor": _replace_tensor(
            desc.indices_tensor, sizes=(1,) + desc.indices_tensor.sizes
          )
        },
      ),
      "IndicesTensor.DimensionCount",
    )
  elif isinstance(desc, dml.GatherDesc):
    n, q, axis = desc.input_tensor.dimension_count, desc.index_dimensions, desc.axis
    indices = desc.indices_tensor
    yield (
      "index dimensions",
      _rebuild(desc, {"index_dimensions": draw(st.sampled_from([n + 1, n + 2, -1]))}),
      "IndexDimensions",
    )
    yield (
      "rank mismatch",
      _rebuild(desc, {"indices_tensor": _replace_tensor(indices, sizes=(1,) + indices.sizes)}),
      "IndicesTensor.DimensionCount",
    )
    if q < n:  # a leading (padding) index dimension that is not 1
      sizes = list(indices.sizes)
      sizes[draw(st.integers(0, n - q - 1))] = 2
      yield (
        "leading index size",
        _rebuild(desc, {"indices_tensor": _replace_tensor(indices, sizes=tuple(sizes))}),
        "IndicesTensor.Sizes",
      )
    if q >= 2:  # the first size that right alignment crops is not 1
      if axis > 0:
        data = desc.input_tensor
        changes = {"input_tensor": _replace_tensor(data, sizes=(2,) + data.sizes[1:])}
      else:
        sizes = list(indices.sizes)
        sizes[n - q] = 2
        changes = {"indices_tensor": _replace_tensor(indices, sizes=tuple(sizes))}
      yield "cropped size", _rebuild(desc, changes), "OutputTensor.DimensionCount"
  elif isinstance(desc, GATHER_ND_DESCS):
    n, m, q, b = (
      desc.input_tensor.dimension_count,
      desc.input_dimension_count,
      desc.indices_dimension_count,
      getattr(desc, "batch_dimension_count", 0),
    )
    yield (
      "input count",
      _rebuild(desc, {"input_dimension_count": draw(st.sampled_from([0, n + 1]))}),
      "InputDimensionCount",
    )
    yield (
      "indices count",
      _rebuild(desc, {"indices_dimension_count": draw(st.sampled_from([0, n + 1]))}),
      "IndicesDimensionCount",
    )
    # A batch count on a level without GATHER_ND1 is reported as the operator missing.
    no_nd1 = level < FeatureLevel.FL_3_0
    yield (
      "batch count",
      _rebuild(desc, {"batch_dimension_count": min(m, q)}),
      ("DML_OPERATOR_TYPE" if no_nd1 else "BatchDimensionCount"),
    )
    t_bad = m - b + 1
    sizes = desc.indices_tensor.sizes[:-1] + (t_bad,)
    yield (
      "tuple size",
      _rebuild(desc, {"indices_tensor": _replace_tensor(desc.indices_tensor, sizes=sizes)}),
      "IndicesTensor.Sizes",
    )
    if b:
      sizes = list(desc.indices_tensor.sizes)
      sizes[n - q] += 1
      yield (
        "batch sizes",
        _rebuild(
          desc, {"indices_tensor": _replace_tensor(desc.indices_tensor, sizes=tuple(sizes))}
        ),
        "IndicesTensor.Sizes",
      )
  elif isinstance(desc, dml.ScatterElementsDesc | dml.ScatterNdDesc):
    yield from _scatter_mutations(desc, draw)
  elif isinstance(desc, dml.FillValueConstantDesc | dml.FillValueSequenceDesc):
    data_type = desc.value_data_type
    if not data_type.is_float:
      field = "value" if isinstance(desc, dml.FillValueConstantDesc) else "value_start"
      too_big = int(np.iinfo(data_type.numpy_dtype).max) + 1
      yield "value range", dataclasses.replace(desc, **{field: too_big}), _dml_name(desc, field)
      if isinstance(desc, dml.FillValueSequenceDesc):
        low = -(2 ** (data_type.size_in_bits - 1)) - 1
        yield "step range", dataclasses.replace(desc, value_delta=low), "ValueDelta"
    yield (
      "value type",
      dataclasses.replace(
        desc, value_data_type=DataType.UINT8 if data_type != DataType.UINT8 else DataType.INT8
      ),
      "ValueDataType",
    )
  elif isinstance(desc, dml.ReverseSubsequencesDesc):
    sizes = list(desc.sequence_lengths_tensor.sizes)
    sizes[desc.axis] += 1
    yield (
      "lengths sizes",
      _rebuild(
        desc,
        {
          "sequence_lengths_tensor": _replace_tensor(
            desc.sequence_lengths_tensor, sizes=tuple(sizes)
          )
        },
      ),
      "SequenceLengthsTensor.Sizes",
    )
  elif isinstance(desc, dml.OneHotDesc):
    indices, values, output, axis = (
      desc.indices_tensor,
      desc.values_tensor,
      desc.output_tensor,
      desc.axis,
    )
    sizes = list(indices.sizes)
    sizes[axis] = 2
    yield (
      "indices on axis",
      _rebuild(desc, {"indices_tensor": _replace_tensor(indices, sizes=tuple(sizes))}),
      "IndicesTensor.Sizes",
    )
    yield (
      "one value",
      _rebuild(desc, {"values_tensor": _replace_tensor(values, sizes=(1,) * len(values.sizes))}),
      "ValuesTensor.Sizes",
    )
    yield (
      "values rank",
      _rebuild(desc, {"values_tensor": _replace_tensor(values, sizes=(1,) + values.sizes)}),
      "ValuesTensor.DimensionCount",
    )
    yield (
      "output rank",
      _rebuild(desc, {"output_tensor": _replace_tensor(output, sizes=(1,) + output.sizes)}),
      "OutputTensor.DimensionCount",
    )
  elif isinstance(desc, dml.SplitDesc):
    outputs, axis = desc.output_tensors, desc.axis
    yield "empty", dml.SplitDesc(desc.input_tensor, (), axis=0), "OutputCount"
    yield "output count", _rebuild(desc, {"output_count": len(outputs) + 1}), "OutputCount"
    k = draw(st.integers(0, len(outputs) - 1))

    def resized(d, delta):
      sizes = list(outputs[k].sizes)
      sizes[d] += delta
      changed = list(outputs)
      changed[k] = _replace_tensor(outputs[k], sizes=tuple(sizes))
      return _rebuild(desc, {"output_tensors": tuple(changed)})

    yield "axis sum", resized(axis, 1), "OutputTensors.Sizes"
    off = [d for d in range(desc.input_tensor.dimension_count) if d != axis]
    if off:
      yield "off-axis sizes", resized(draw(st.sampled_from(off)), 1), f"OutputTensors[{k}].Sizes"
    taller = _replace_tensor(outputs[k], sizes=(1,) + outputs[k].sizes)
    yield (
      "output rank",
      _rebuild(desc, {"output_tensors": outputs[:k] + (taller,) + outputs[k + 1 :]}),
      f"OutputTensors[{k}].DimensionCount",
    )
  elif isinstance(desc, dml.JoinDesc):
    yield "empty", dml.JoinDesc((), axis=0), "InputCount"
    yield "input count", _rebuild(desc, {"input_count": len(desc.input_tensors) + 1}), "InputCount"
    first = desc.input_tensors[0]
    other = DataType.INT8 if first.data_type != DataType.INT8 else DataType.UINT8
    mixed = desc.input_tensors + (_replace_tensor(first, data_type=other),)
    yield (
      "mixed types",
      _rebuild(desc, {"input_tensors": mixed}),
      f"InputTensors[{len(mixed) - 1}].DataType",
    )
    n = first.dimension_count
    off = [d for d in range(n) if d != desc.axis]
    if off:
      d = draw(st.sampled_from(off))
      sizes = list(first.sizes)
      sizes[d] += 1
      extra = desc.input_tensors + (_replace_tensor(first, sizes=tuple(sizes)),)
      yield (
        "off-axis sizes",
        _rebuild(desc, {"input_tensors": extra}),
        f"InputTensors[{len(extra) - 1}].Sizes",
      )
  elif isinstance(desc, tuple(t for t, _ in _DEPTH_SPACE_DESCS.values())):
    yield "block size 0", _rebuild(desc, {"block_size": 0}), "BlockSize"
    b = desc.block_size + 1  # a block edge the input's sizes are not all multiples of
    n, c, h, w = desc.input_tensor.sizes
    sizes = (n, b * b * c + 1, h, w) if desc.OPERATOR.startswith("DEPTH") else (n, c, h, b * w + 1)
    yield (
      "partial blocks",
      _rebuild(
        desc, {"block_size": b, "input_tensor": _replace_tensor(desc.input_tensor, sizes=sizes)}
      ),
      "InputTensor.Sizes",
    )

  elif isinstance(desc, dml.SliceDesc):
    n = desc.input_tensor.dimension_count
    d = draw(st.integers(0, n - 1))
    sizes = list(desc.sizes)
    sizes[d] = (desc.input_tensor.sizes[d] - desc.offsets[d] - 1) // desc.strides[d] + 2
    yield "read outside", _rebuild(desc, {"sizes": tuple(sizes)}), "Offsets"
    strides = list(desc.strides)
    strides[d] = 0
    yield "zero stride", _rebuild(desc, {"strides": tuple(strides)}), "Strides"
    yield "sizes length", _rebuild(desc, {"sizes": desc.sizes + (1,)}), "Sizes"
    yield "dimension count", _rebuild(desc, {"dimension_count": n + 1}), "DimensionCount"
  elif isinstance(desc, dml.Slice1Desc):
    n = desc.input_tensor.dimension_count
    d = draw(st.integers(0, n - 1))
    sizes = list(desc.input_window_sizes)
    sizes[d] = desc.input_tensor.sizes[d] - desc.input_window_offsets[d] + 1
    yield (
      "window outside",
      _rebuild(desc, {"input_window_sizes": tuple(sizes)}),
      "InputWindowOffsets",
    )
    strides = list(desc.input_window_strides)
    strides[d] = 0
    yield (
      "zero stride",
      _rebuild(desc, {"input_window_strides": tuple(strides)}),
      "InputWindowStrides",
    )
    yield (
      "strides length",
      _rebuild(desc, {"input_window_strides": desc.input_window_strides + (1,)}),
      "InputWindowStrides",
    )
    yield (
      "dimension count",
      _rebuild(desc, {"dimension_count": n + 1}),
      "DimensionCount",
    )


def _select_mutations(desc, level, draw):
  """CAST, ELEMENT_WISE_IF, DIAGONAL_MATRIX(1) and NONZERO_COORDINATES's own rules."""
  del level
  if isinstance(desc, dml.ElementWiseIfDesc):
    a = desc.a_tensor
    other = DataType.INT8 if a.data_type != DataType.INT8 else DataType.UINT8
    yield (
      "B type",
      dataclasses.replace(desc, b_tensor=_replace_tensor(desc.b_tensor, data_type=other)),
      "BTensor.DataType",
    )
    sizes = a.sizes[:-1] + (a.sizes[-1] + 1,)
    yield (
      "condition sizes",
      dataclasses.replace(
        desc,
        condition_tensor=_replace_tensor(
          desc.condition_tensor, sizes=sizes, total_tensor_size_in_bytes=None
        ),
      ),
      "ConditionTensor.Sizes",
    )
  elif isinstance(desc, dml.DiagonalMatrixDesc):
    offset = draw(st.sampled_from([2**31, -(2**31) - 1]))
    yield "offset range", dataclasses.replace(desc, offset=offset), "Offset"
  elif isinstance(desc, dml.DiagonalMatrix1Desc):
    end = draw(st.sampled_from([2**31, -(2**31) - 1]))
    yield "end range", dataclasses.replace(desc, diagonal_fill_end=end), "DiagonalFillEnd"
    output_type = desc.output_tensor.data_type
    other = DataType.INT8 if output_type != DataType.INT8 else DataType.UINT8
    yield (
      "value type",
      dataclasses.replace(desc, value_data_type=other, value=0),
      "ValueDataType",
    )
    if not output_type.is_float:
      too_big = int(np.iinfo(output_type.numpy_dtype).max) + 1
      yield "value range", dataclasses.replace(desc, value=too_big), "Value"
  elif isinstance(desc, dml.NonzeroCoordinatesDesc):
    coordinates, count = desc.output_coordinates_tensor, desc.output_count_tensor
    rank = desc.input_tensor.dimension_count
    m, n = coordinates.sizes[-2:]
    wide = coordinates.sizes[:-1] + (rank + 1,)
    yield (
      "N past the rank",
      dataclasses.replace(desc, output_coordinates_tensor=_replace_tensor(coordinates, sizes=wide)),
      "OutputCoordinatesTensor.Sizes",
    )
    rows = coordinates.sizes[:-2] + (m + 1, n)
    yield (
      "M not the element count",
      dataclasses.replace(desc, output_coordinates_tensor=_replace_tensor(coordinates, sizes=rows)),
      "OutputCoordinatesTensor.Sizes",
    )
    bigger = count.sizes[:-1] + (2,)
    yield (
      "count not a scalar",
      dataclasses.replace(desc, output_count_tensor=_replace_tensor(count, sizes=bigger)),
      "OutputCountTensor.Sizes",
    )
    yield (
      "count type",
      dataclasses.replace(
        desc, output_count_tensor=_replace_tensor(count, data_type=DataType.INT32)
      ),
      "OutputCountTensor.DataType",
    )


def _dml_name(desc, name):
  return next(f.dml_name for f in dml_fields(desc) if f.name == name)


def _scatter_mutations(desc, draw):
  """The scatters' own rules: updates of another type or size, indices of the wrong sizes,
  counts out of range, tuples too long."""
  updates, indices = desc.updates_tensor, desc.indices_tensor
  other = DataType.INT8 if updates.data_type != DataType.INT8 else DataType.UINT8
  yield (
    "updates type",
    _rebuild(desc, {"updates_tensor": _replace_tensor(updates, data_type=other)}),
    "UpdatesTensor.DataType",
  )
  d = draw(st.integers(0, updates.dimension_count - 1))
  sizes = list(updates.sizes)
  sizes[d] += 1
  yield (
    "updates sizes",
    _rebuild(desc, {"updates_tensor": _replace_tensor(updates, sizes=tuple(sizes))}),
    "UpdatesTensor.Sizes",
  )
  yield (
    "updates rank",
    _rebuild(desc, {"updates_tensor": _replace_tensor(updates, sizes=(1,) + updates.sizes)}),
    "UpdatesTensor.DimensionCount",
  )
  if isinstance(desc, dml.ScatterElementsDesc):
    n = desc.input_tensor.dimension_count
    others = [d for d in range(n) if d != desc.axis]
    if others:
      d = draw(st.sampled_from(others))
      sizes = list(indices.sizes)
      sizes[d] += 1
      changed = _replace_tensor(indices, sizes=tuple(sizes))
      yield (
        "indices sizes",
        _rebuild(
          desc,
          {
            "indices_tensor": changed,
            "updates_tensor": _replace_tensor(changed, data_type=updates.data_type),
          },
        ),
        "IndicesTensor.Sizes",
      )
    return
  n, m = desc.input_tensor.dimension_count, desc.input_dimension_count
  yield (
    "input count",
    _rebuild(desc, {"input_dimension_count": draw(st.sampled_from([0, n + 1]))}),
    "InputDimensionCount",
  )
  yield (
    "indices count",
    _rebuild(desc, {"indices_dimension_count": draw(st.sampled_from([0, n + 1]))}),
    "IndicesDimensionCount",
  )
  yield (
    "tuple size",
    _rebuild(
      desc, {"indices_tensor": _replace_tensor(indices, sizes=indices.sizes[:-1] + (m + 1,))}
    ),
    "IndicesTensor.Sizes",
  )


@st.composite
def invalid_case(draw, op):
  """(valid case, mutation name, mutant descriptor, DML field the error must name)."""
  case = draw(VALID[op]())
  mutants = list(_mutations(case.desc, case.level, draw))
  name, mutant, field = draw(st.sampled_from(mutants))
  return case, name, mutant, field
