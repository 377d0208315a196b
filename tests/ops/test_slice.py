"""SLICE and SLICE1: the operators' own rules and pinned cases.

Their support tables written out from DirectML's pages (SLICE: 1_0 4 to 5 dimensions of
16/32-bit types, 2_1 8-bit types, 3_0 1 to 8 dimensions, 4_1 64-bit types; SLICE1 from
2_1 with the same steps), their rules (one value per dimension and DimensionCount equal
to the rank, reads and windows inside the input, strides never 0, sizes at least 1, a
SLICE1 output any prefix of each window's walk), the NumPy references against numpy
indexing, the functional API under jit, vmap and grad, and the property that SLICE is
SLICE1 with windows of (Sizes - 1) * Strides + 1 elements. What every operator shares is
tested in tests/test_contract.py and the cross-cutting files.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import TensorDesc
from dml_jax._src import reference
from tests import sharding_cases, strategies
from tests.helpers import CROSS_CHECK_SEEDS, assert_bits_equal, assert_rejected, assert_valid

T = dml.TensorDesc

X44 = T("FLOAT32", (1, 1, 4, 4))


def _slice(tensor=X44, offsets=(0, 0, 1, 2), sizes=(1, 1, 3, 2), strides=(1, 1, 1, 1), **kw):
  return dml.SliceDesc(tensor, offsets=offsets, sizes=sizes, strides=strides, **kw)


def _slice1(tensor=X44, offsets=(0, 0, 0, 1), sizes=(1, 1, 4, 3), strides=(1, 1, -2, 2), **kw):
  return dml.Slice1Desc(
    tensor,
    input_window_offsets=offsets,
    input_window_sizes=sizes,
    input_window_strides=strides,
    **kw,
  )


# -- support tables ------------------------------------------------------------------------


@pytest.mark.parametrize(
  "level, rank, data_type, valid",
  [
    ("1_0", 4, "FLOAT16", True),
    ("1_0", 5, "UINT16", True),
    ("1_0", 4, "INT8", False),  # 8-bit types from 2_1
    ("1_0", 3, "FLOAT32", False),  # 4 to 5 dimensions before 3_0
    ("2_1", 4, "UINT8", True),
    ("2_1", 6, "INT32", False),
    ("3_0", 1, "INT8", True),
    ("3_0", 8, "UINT32", True),
    ("3_0", 4, "FLOAT64", False),  # 64-bit types from 4_1
    ("4_1", 2, "FLOAT64", True),
    ("4_1", 2, "INT64", True),
    ("6_4", 3, "UINT64", True),
  ],
)
def test_slice_support_tables(level, rank, data_type, valid):
  desc = dml.SliceDesc(T(data_type, (2,) * rank), (0,) * rank, (2,) * rank, (1,) * rank)
  fields = [v.field for v in desc.violations(level)]
  assert (fields == []) is valid, fields
  if not valid:
    assert set(fields) <= {"InputTensor.DataType", "InputTensor.DimensionCount"}


@pytest.mark.parametrize(
  "level, rank, data_type, valid",
  [
    ("2_1", 4, "INT8", True),
    ("2_1", 5, "FLOAT16", True),
    ("2_1", 3, "FLOAT32", False),  # 4 to 5 dimensions before 3_0
    ("3_0", 1, "UINT8", True),
    ("3_0", 8, "INT16", True),
    ("3_0", 2, "INT64", False),  # 64-bit types from 4_1
    ("4_1", 2, "UINT64", True),
    ("6_4", 2, "FLOAT64", True),
  ],
)
def test_slice1_support_tables(level, rank, data_type, valid):
  desc = dml.Slice1Desc(T(data_type, (2,) * rank), (0,) * rank, (2,) * rank, (-1,) * rank)
  fields = [v.field for v in desc.violations(level)]
  assert (fields == []) is valid, fields
  if not valid:
    assert set(fields) <= {"InputTensor.DataType", "InputTensor.DimensionCount"}


def test_introduction_levels():
  assert dml.SliceDesc.SUPPORT.introduced == dml.FeatureLevel.FL_1_0
  assert dml.Slice1Desc.SUPPORT.introduced == dml.FeatureLevel.FL_2_1
  assert_valid(_slice(), "1_0")
  assert [v.field for v in _slice1().violations("2_0")] == ["DML_OPERATOR_TYPE"]
  assert_valid(_slice1(), "2_1")


# -- SLICE's rules ---------------------------------------------------------------------------


def test_slice_output_is_sizes_and_dimension_count_is_counted():
  desc = _slice()
  assert desc.output == T("FLOAT32", (1, 1, 3, 2))
  assert desc.dimension_count == 4
  assert desc.dml_attributes() == (
    ("Offsets", (0, 0, 1, 2)),
    ("Sizes", (1, 1, 3, 2)),
    ("Strides", (1, 1, 1, 1)),
    ("DimensionCount", 4),
  )


def test_slice_dimension_count_must_count_the_offsets():
  assert_rejected(
    _slice(dimension_count=3), None, "DimensionCount", "must equal the number of Offsets (4)", "3"
  )


def test_slice_arrays_hold_one_value_per_dimension():
  desc = _slice(sizes=(1, 3, 2), strides=(1, 1, 1, 1, 1))
  error = assert_rejected(
    desc, None, "Sizes", "must hold DimensionCount (4) values, one per dimension", "{1,3,2}"
  )
  assert [v.field for v in error.violations] == ["Sizes", "Strides"]
  with pytest.raises(dml.DmlValidationError):
    desc.output  # noqa: B018  (no output without one size per dimension)


def test_slice_dimension_count_must_be_the_rank():
  desc = _slice(offsets=(0, 1, 2), sizes=(1, 3, 2), strides=(1, 1, 1))
  assert_rejected(
    desc,
    None,
    "DimensionCount",
    "must equal InputTensor.DimensionCount (4)",
    "3",
    hint="pad the arrays for leading dimensions of size 1 with offset 0, size 1, stride 1",
  )


def test_slice_reads_must_lie_inside_the_input():
  assert_rejected(
    _slice(offsets=(0, 0, 1, 1), sizes=(1, 1, 2, 2), strides=(1, 1, 2, 3)),
    None,
    "Offsets",
    "every element read must lie inside InputTensor.Sizes {1,1,4,4}: Offsets + (Sizes - 1) *"
    " Strides must be < InputTensor.Sizes; dimension 3 reads 1 + (2 - 1) * 3 = 4",
    "{0,0,1,1}",
    hint="DirectML never clips a slice",
  )
  assert_valid(_slice(offsets=(0, 0, 1, 0), sizes=(1, 1, 2, 2), strides=(1, 1, 2, 3)), None)


def test_slice_strides_are_at_least_1():
  # DirectML's SLICE page does not say whether 0 replicates one element; dml_jax rejects it,
  # as SLICE1 does.
  assert_rejected(
    _slice(strides=(1, 1, 0, 1)), None, "Strides", "every stride must be >= 1", "{1,1,0,1}"
  )


def test_slice_sizes_are_at_least_1_and_offsets_uints():
  error = assert_rejected(
    _slice(offsets=(0, 0, -1, 0), sizes=(1, 1, 0, 2)),
    None,
    "Sizes",
    "every size must be >= 1 (DirectML has no empty tensors)",
    "{1,1,0,2}",
  )
  assert [v.field for v in error.violations] == ["Offsets", "Sizes"]
  assert "every offset must be a UINT (>= 0)" in str(error)


def test_slice_given_output_must_equal_sizes():
  assert_rejected(
    _slice(output_tensor=T("FLOAT32", (1, 1, 2, 2))),
    None,
    "OutputTensor.Sizes",
    "must equal Sizes: {1,1,3,2}",
    "{1,1,2,2}",
  )


def test_every_violation_at_once():
  desc = _slice(offsets=(0, 0, 3, 0), sizes=(1, 1, 2, 2), strides=(1, 1, 1, 0), dimension_count=5)
  fields = [v.field for v in desc.violations()]
  assert fields == ["DimensionCount", "Sizes", "Strides", "DimensionCount", "Strides"]


# -- SLICE1's rules --------------------------------------------------------------------------


def test_slice1_output_is_the_whole_walk_of_each_window():
  # ceil(size / |stride|): window 4 step -2 -> 2, window 3 step 2 -> 2, window 3 step 3 -> 1.
  assert _slice1().output == T("FLOAT32", (1, 1, 2, 2))
  assert _slice1(sizes=(1, 1, 3, 3), strides=(1, 1, 3, -1)).output.sizes == (1, 1, 1, 3)
  assert _slice1().walk_sizes() == (1, 1, 2, 2)


def test_slice1_output_may_be_any_prefix_of_each_walk():
  for sizes in ((1, 1, 1, 1), (1, 1, 2, 1), (1, 1, 1, 2)):
    assert_valid(_slice1(output_tensor=T("FLOAT32", sizes)), None)
  assert_rejected(
    _slice1(output_tensor=T("FLOAT32", (1, 1, 3, 1))),
    None,
    "OutputTensor.Sizes",
    "each size must be in [1, 1 + (InputWindowSizes - 1) // |InputWindowStrides|], at most"
    " {1,1,2,2} (a prefix of each window's walk)",
    "{1,1,3,1}",
  )


def test_slice1_strides_are_never_0():
  assert_rejected(
    _slice1(strides=(1, 1, 0, 2)),
    None,
    "InputWindowStrides",
    "no stride may be 0",
    "{1,1,0,2}",
    hint="use 1 to walk a window forwards, -1 backwards",
  )


def test_slice1_strides_are_ints():
  assert_rejected(
    _slice1(strides=(1, 1, 2**31, 2)),
    None,
    "InputWindowStrides",
    "every stride must be an INT (in [-2**31, 2**31 - 1])",
    "{1,1,2147483648,2}",
  )


def test_slice1_windows_must_lie_inside_the_input():
  assert_rejected(
    _slice1(offsets=(0, 0, 1, 1)),
    None,
    "InputWindowOffsets",
    "every window must lie inside InputTensor.Sizes {1,1,4,4}: InputWindowOffsets +"
    " InputWindowSizes must be <= InputTensor.Sizes; dimension 2 ends at 1 + 4 = 5",
    "{0,0,1,1}",
    hint="DirectML never clips a window",
  )


def test_slice1_windows_are_not_empty():
  assert_rejected(
    _slice1(sizes=(1, 1, 0, 3)),
    None,
    "InputWindowSizes",
    "every window size must be >= 1 (no empty windows)",
    "{1,1,0,3}",
  )


def test_slice1_arrays_hold_one_value_per_dimension():
  error = assert_rejected(
    _slice1(sizes=(1, 4, 3), dimension_count=4),
    None,
    "InputWindowSizes",
    "must hold DimensionCount (4) values, one per dimension",
    "{1,4,3}",
  )
  assert [v.field for v in error.violations] == ["InputWindowSizes"]
  assert_rejected(
    _slice1(dimension_count=2),
    None,
    "DimensionCount",
    "must equal the number of InputWindowOffsets (4)",
    "2",
  )


def test_arguments_must_be_integers():
  x = np.zeros((2,), np.float32)
  with pytest.raises(TypeError, match=r"Offsets\[0\] must be an integer; got float 0\.0"):
    dml.slice(x, offsets=(0.0,), sizes=(1,), strides=(1,))
  with pytest.raises(TypeError, match="InputWindowStrides must be a sequence of integers"):
    dml.slice1(x, input_window_offsets=(0,), input_window_sizes=(2,), input_window_strides=-1)
  with pytest.raises(TypeError, match=r"OutputTensor\.Sizes\[0\] must be an integer"):
    dml.slice1(
      x,
      input_window_offsets=(0,),
      input_window_sizes=(2,),
      input_window_strides=(1,),
      output_sizes=(1.5,),
    )


# -- values --------------------------------------------------------------------------------


def test_pinned_cases():
  x = np.arange(1, 17, dtype=np.int16).reshape(4, 4)
  got = dml.slice(x, offsets=(1, 0), sizes=(2, 2), strides=(2, 3))
  assert_bits_equal(got, np.array([[5, 8], [13, 16]], np.int16))
  # A negative stride starts at the window's last element (offset + size - 1), not at
  # its offset and not at the end of the tensor.
  got = dml.slice1(
    x, input_window_offsets=(0, 1), input_window_sizes=(3, 2), input_window_strides=(-1, -1)
  )
  assert_bits_equal(got, np.array([[11, 10], [7, 6], [3, 2]], np.int16))
  got = dml.slice1(
    x,
    input_window_offsets=(0, 0),
    input_window_sizes=(4, 4),
    input_window_strides=(-3, 2),
    output_sizes=(1, 2),
  )
  assert_bits_equal(got, np.array([[13, 15]], np.int16))


def test_unlike_numpy_negative_steps_start_at_the_window_end_and_nothing_is_clipped():
  x = np.arange(10, dtype=np.uint8)
  # numpy's x[1:8:-3] is empty, x[7:0:-3] starts at 7; SLICE1's window [1, 8) starts at 7.
  got = dml.slice1(
    x, input_window_offsets=(1,), input_window_sizes=(7,), input_window_strides=(-3,)
  )
  assert_bits_equal(got, x[7:0:-3])
  assert x[2:20].shape == (8,)  # numpy clips ends
  with pytest.raises(dml.DmlValidationError, match="every element read must lie inside"):
    dml.slice(x, offsets=(2,), sizes=(18,), strides=(1,))


@pytest.mark.parametrize("seed", CROSS_CHECK_SEEDS)
def test_references_agree_with_numpy_indexing(seed):
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 5))
  shape = tuple(int(n) for n in rng.integers(1, 6, rank))
  x = rng.standard_normal(shape).astype(np.float32)
  offsets, sizes, strides, window_sizes, signed = [], [], [], [], []
  for n in shape:
    o, t = int(rng.integers(0, n)), int(rng.integers(1, 4))
    offsets.append(o)
    strides.append(t)
    sizes.append(int(rng.integers(1, (n - 1 - o) // t + 2)))
    window_sizes.append(int(rng.integers(1, n - o + 1)))
    signed.append(t if rng.integers(0, 2) else -t)
  expected = x[
    tuple(
      np.s_[o : o + (s - 1) * t + 1 : t] for o, s, t in zip(offsets, sizes, strides, strict=True)
    )
  ]
  got = reference.slice(x, offsets=offsets, sizes=sizes, strides=strides)
  assert_bits_equal(got, expected)
  views = []
  for o, s, t in zip(offsets, window_sizes, signed, strict=True):
    window = np.arange(o, o + s)
    views.append(window[::t] if t > 0 else window[::-1][::-t])
  expected = x[np.ix_(*views)]
  got = reference.slice1(
    x, input_window_offsets=offsets, input_window_sizes=window_sizes, input_window_strides=signed
  )
  assert_bits_equal(got, expected)


@pytest.mark.parametrize("seed", CROSS_CHECK_SEEDS)
def test_slice_is_slice1_with_windows_of_its_reads(seed):
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 6))
  shape = tuple(int(n) for n in rng.integers(1, 6, rank))
  x = rng.integers(-100, 100, shape).astype(np.int32)
  offsets = [int(rng.integers(0, n)) for n in shape]
  strides = [int(rng.integers(1, 4)) for _ in shape]
  sizes = [
    int(rng.integers(1, (n - 1 - o) // t + 2))
    for n, o, t in zip(shape, offsets, strides, strict=True)
  ]
  windows = [(s - 1) * t + 1 for s, t in zip(sizes, strides, strict=True)]
  sliced = dml.slice(x, offsets=offsets, sizes=sizes, strides=strides)
  walked = dml.slice1(
    x, input_window_offsets=offsets, input_window_sizes=windows, input_window_strides=strides
  )
  assert_bits_equal(sliced, walked)
  # Any larger window that stays inside the input, with its walk cut to Sizes, gives the same.
  larger = [
    min(n - o, w + int(rng.integers(0, 3))) for n, o, w in zip(shape, offsets, windows, strict=True)
  ]
  walked = dml.slice1(
    x,
    input_window_offsets=offsets,
    input_window_sizes=larger,
    input_window_strides=strides,
    output_sizes=sizes,
  )
  assert_bits_equal(sliced, walked)


def test_jit_vmap_and_grad():
  x = np.arange(20, dtype=np.float32).reshape(4, 5)
  kw = dict(input_window_offsets=(0, 1), input_window_sizes=(4, 4), input_window_strides=(-2, 3))
  expected = np.array([[16, 19], [6, 9]], np.float32)
  assert_bits_equal(jax.jit(lambda x: dml.slice1(x, **kw))(x), expected)
  batch = np.stack([x, -x])
  assert_bits_equal(jax.vmap(lambda x: dml.slice1(x, **kw))(batch), np.stack([expected, -expected]))
  sliced = jax.vmap(lambda x: dml.slice(x, offsets=(1, 0), sizes=(2, 3), strides=(2, 2)))(batch)
  assert_bits_equal(sliced, batch[:, 1:4:2, 0:5:2])
  weights = np.array([[1, 2], [3, 4]], np.float32)
  grad = jax.grad(lambda x: jnp.sum(dml.slice1(x, **kw) * weights))(x)
  expected_grad = np.zeros_like(x)
  expected_grad[3, 1], expected_grad[3, 4], expected_grad[1, 1], expected_grad[1, 4] = 1, 2, 3, 4
  assert_bits_equal(grad, expected_grad)
  grad = jax.grad(lambda x: jnp.sum(dml.slice(x, offsets=(0, 1), sizes=(2, 2), strides=(3, 2))))(x)
  expected_grad = np.zeros_like(x)
  expected_grad[np.ix_([0, 3], [1, 3])] = 1
  assert_bits_equal(grad, expected_grad)


# -- natural ranks ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_more_values_than_dimensions_promote_the_input_at_every_level(seed):
  # An input of rank 1 to 3 and windows of rank r to 5, at FL 2_1 (4 to 5 dimensions: padded,
  # then cut back) and the newest level, against numpy indexing of the promoted input.
  rng = np.random.default_rng(seed)
  r = int(rng.integers(1, 4))
  m = int(rng.integers(r, 6))
  x = rng.standard_normal(tuple(int(s) for s in rng.integers(1, 5, r))).astype(np.float32)
  promoted = x.reshape((1,) * (m - r) + x.shape)
  offsets = tuple(int(rng.integers(0, s)) for s in promoted.shape)
  sizes = tuple(
    int(rng.integers(1, s - o + 1)) for s, o in zip(promoted.shape, offsets, strict=True)
  )
  index = tuple(slice(o, o + s) for o, s in zip(offsets, sizes, strict=True))
  for level in ("2_1", None):
    sliced = dml.slice(x, offsets=offsets, sizes=sizes, strides=(1,) * m, feature_level=level)
    assert_bits_equal(sliced, promoted[index])
    reversed_ = dml.slice1(
      x,
      input_window_offsets=offsets,
      input_window_sizes=sizes,
      input_window_strides=(-1,) * m,
      feature_level=level,
    )
    assert_bits_equal(reversed_, promoted[index][(slice(None, None, -1),) * m])
  (desc,) = dml.descriptors_of(
    lambda x: dml.slice(x, offsets=offsets, sizes=sizes, strides=(1,) * m, feature_level="2_1"),
    x,
  )
  n = max(m, 4)
  assert desc.input_tensor.sizes == (1,) * (n - r) + x.shape
  assert (desc.offsets, desc.sizes) == ((0,) * (n - m) + offsets, (1,) * (n - m) + sizes)


def test_fewer_values_than_dimensions_are_refused_with_the_call_of_each_reading():
  x = np.arange(20, dtype=np.float32).reshape(4, 5)
  with pytest.raises(dml.DmlValidationError, match="DimensionCount") as info:
    dml.slice(x, offsets=(1,), sizes=(2,), strides=(1,))
  (note,) = [n for n in info.value.__notes__ if "reads two ways" in n]
  last = "dml.slice(input, offsets=(0, 1), sizes=(4, 2), strides=(1, 1))"
  first = "dml.slice(input, offsets=(1, 0), sizes=(2, 5), strides=(1, 1))"
  assert last in note and first in note
  # Each call printed works, and means what the note says.
  assert_bits_equal(dml.slice(x, offsets=(0, 1), sizes=(4, 2), strides=(1, 1)), x[:, 1:3])
  assert_bits_equal(dml.slice(x, offsets=(1, 0), sizes=(2, 5), strides=(1, 1)), x[1:3])
  with pytest.raises(dml.DmlValidationError) as info:  # only the valid reading is printed
    dml.slice1(x, input_window_offsets=(3,), input_window_sizes=(2,), input_window_strides=(1,))
  (note,) = [n for n in info.value.__notes__ if "reads two ways" in n]
  assert "input_window_offsets=(0, 3), input_window_sizes=(4, 2)" in note
  assert "for the first" not in note


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def slice_case(draw):
  level = draw(strategies.levels("SLICE"))
  table = strategies.table_at(dml.SliceDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
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
  x = strategies.draw_data(draw, data_type, shape)
  attributes = dict(offsets=tuple(offsets), sizes=tuple(sizes), strides=tuple(strides))
  desc = dml.SliceDesc(TensorDesc(data_type, shape), **attributes)
  return strategies.Case(
    desc,
    level,
    [x],
    lambda x, level: dml.slice(x, **attributes, feature_level=level),
    lambda: reference.slice(x, **attributes),
  )


@st.composite
def slice1_case(draw):
  level = draw(strategies.levels("SLICE1"))
  table = strategies.table_at(dml.Slice1Desc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
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
  x = strategies.draw_data(draw, data_type, shape)
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
  return strategies.Case(
    desc,
    level,
    [x],
    lambda x, level: dml.slice1(x, **attributes, output_sizes=output_sizes, feature_level=level),
    lambda: reference.slice1(x, **attributes, output_sizes=output_sizes),
  )


def slice_mutations(desc, level, draw):
  """SLICE's own rules: reads inside the input, nonzero strides, one value per dimension."""
  n = desc.input_tensor.dimension_count
  d = draw(st.integers(0, n - 1))
  sizes = list(desc.sizes)
  sizes[d] = (desc.input_tensor.sizes[d] - desc.offsets[d] - 1) // desc.strides[d] + 2
  yield "read outside", strategies.rebuild(desc, {"sizes": tuple(sizes)}), "Offsets"
  strides = list(desc.strides)
  strides[d] = 0
  yield "zero stride", strategies.rebuild(desc, {"strides": tuple(strides)}), "Strides"
  yield "sizes length", strategies.rebuild(desc, {"sizes": desc.sizes + (1,)}), "Sizes"
  yield "dimension count", strategies.rebuild(desc, {"dimension_count": n + 1}), "DimensionCount"


def slice1_mutations(desc, level, draw):
  """SLICE1's own rules: a window inside the input, nonzero strides, one per dimension."""
  n = desc.input_tensor.dimension_count
  d = draw(st.integers(0, n - 1))
  sizes = list(desc.input_window_sizes)
  sizes[d] = desc.input_tensor.sizes[d] - desc.input_window_offsets[d] + 1
  yield (
    "window outside",
    strategies.rebuild(desc, {"input_window_sizes": tuple(sizes)}),
    "InputWindowOffsets",
  )
  strides = list(desc.input_window_strides)
  strides[d] = 0
  yield (
    "zero stride",
    strategies.rebuild(desc, {"input_window_strides": tuple(strides)}),
    "InputWindowStrides",
  )
  yield (
    "strides length",
    strategies.rebuild(desc, {"input_window_strides": desc.input_window_strides + (1,)}),
    "InputWindowStrides",
  )
  yield (
    "dimension count",
    strategies.rebuild(desc, {"dimension_count": n + 1}),
    "DimensionCount",
  )


def slice_cases(n, rng):
  cases = []
  x = rng.standard_normal((2 * n, 2 * n)).astype(np.float32)
  for shard in (0, 1):
    cases.append(
      sharding_cases.Case(
        "SLICE",
        f"offsets (1, 2), strides (2, 1), sharded on axis {shard}",
        lambda x: dml.slice(x, offsets=(1, 2), sizes=(n, 2 * n - 2), strides=(2, 1)),
        lambda x: x[1::2, 2:],
        [(x, shard)],
        reference.slice(x, offsets=(1, 2), sizes=(n, 2 * n - 2), strides=(2, 1)),
      )
    )
    for strides, jnp_slice in (((1, -1), lambda x: x[:, ::-1]), ((-1, 2), lambda x: x[::-1, ::2])):
      kwargs = dict(
        input_window_offsets=(0, 0), input_window_sizes=(2 * n, 2 * n), input_window_strides=strides
      )
      cases.append(
        sharding_cases.Case(
          "SLICE1",
          f"strides {strides}, sharded on axis {shard}",
          lambda x, kwargs=kwargs: dml.slice1(x, **kwargs),
          jnp_slice,
          [(x, shard)],
          reference.slice1(x, **kwargs),
        )
      )
  return cases


VALID = {"SLICE": slice_case, "SLICE1": slice1_case}
MUTANTS = {"SLICE": slice_mutations, "SLICE1": slice1_mutations}
SHARDED_CASES = slice_cases
BFLOAT16_CALLS = {
  "slice": lambda x: dml.slice(x, offsets=(1, 0), sizes=(2, 3), strides=(1, 2)),
  "slice1": lambda x: dml.slice1(
    x, input_window_offsets=(0, 1), input_window_sizes=(4, 5), input_window_strides=(-1, 2)
  ),
}
