"""REVERSE_SUBSEQUENCES: the operator's own rules and pinned cases.

Its validation rules (the lengths' sizes; lengths with 1 on a dimension in the functional
API), its explanation, pinned examples of its lengths and of its float16 rows, and the
NumPy reference on hand-written cases and against np.flip. What every operator shares (the
tensor layer, the support tables, the fixtures, the property tests against the reference)
is tested in the cross-cutting files under tests/.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import DmlValidationError, FeatureLevel, TensorDesc
from dml_jax._src import reference
from tests import sharding_cases, strategies
from tests.helpers import (
  CROSS_CHECK_SEEDS,
  assert_bits_equal,
  assert_rejected,
  braces,
  explain_section,
  random_data,
  random_shape,
  violation_pattern,
)

T = dml.TensorDesc

# =========================================================================== #
# Validation
# =========================================================================== #


@pytest.mark.parametrize(
  "lengths_sizes, axis, expected",
  [
    ((2, 3, 4, 5), 1, "{2,1,4,5}"),  # the input's sizes, without the 1
    ((2, 1, 1, 5), 1, "{2,1,4,5}"),
    ((1, 3, 4, 5), 1, "{2,1,4,5}"),  # 1 on the wrong axis
    ((2, 3, 4, 1), 1, "{2,1,4,5}"),
    ((2, 3, 4, 2), 3, "{2,3,4,1}"),
  ],
)
def test_reverse_subsequences_lengths_are_input_sizes_with_1_on_axis(lengths_sizes, axis, expected):
  desc = dml.ReverseSubsequencesDesc(
    T("FLOAT32", (2, 3, 4, 5)), T("UINT32", lengths_sizes), axis=axis
  )
  assert_rejected(
    desc,
    "6_4",
    "SequenceLengthsTensor.Sizes",
    f"must be InputTensor.Sizes with 1 on Axis: {expected}",
    braces(lengths_sizes),
  )


def test_reverse_subsequences_onnx_style_batch_vector_is_rejected():
  # Not a 1-D batch vector as in ONNX ReverseSequence.
  desc = dml.ReverseSubsequencesDesc(T("FLOAT32", (2, 3)), T("UINT32", (2,)), axis=1)
  assert_rejected(
    desc,
    "6_4",
    "SequenceLengthsTensor.DimensionCount",
    "must equal InputTensor.DimensionCount (2)",
    "1",
  )


def test_functional_reverse_subsequences_validates_like_the_descriptor():
  x = np.zeros((1, 1, 3, 4), np.float32)
  lengths = np.zeros((1, 1, 3, 1), np.uint32)
  with pytest.raises(DmlValidationError) as info:
    dml.reverse_subsequences(x, lengths, axis=3, feature_level=FeatureLevel.FL_2_0)
  assert info.value.violations == dml.ReverseSubsequencesDesc(
    T("FLOAT32", (1, 1, 3, 4)), T("UINT32", (1, 1, 3, 1)), axis=3
  ).violations("2_0")
  with pytest.raises(
    DmlValidationError,
    match=violation_pattern(
      "SequenceLengthsTensor.Sizes", "must be InputTensor.Sizes with 1 on Axis", "{1,1,3,4}", "6_4"
    ),
  ):
    dml.reverse_subsequences(x, np.zeros((1, 1, 3, 4), np.uint32), axis=3)


@pytest.mark.parametrize(
  "lengths_shape, strides",
  [((2, 1, 1, 1), (1, 1, 0, 0)), ((1, 1, 3, 4), (0, 12, 4, 1)), ((2, 1, 1, 4), (4, 4, 0, 1))],
)
def test_functional_lengths_with_1_on_a_dimension_are_zero_strides(lengths_shape, strides):
  """A lengths array with 1 where the input has more shares one length across that
  dimension: the descriptor has DirectML's sizes, with stride 0 there."""
  x = np.zeros((2, 5, 3, 4), np.float32)
  full = T("UINT32", (2, 1, 3, 4), strides=strides)
  desc = dml.ReverseSubsequencesDesc(T("FLOAT32", x.shape), full, axis=1)
  assert not desc.violations("6_4")
  with pytest.raises(DmlValidationError) as info:  # FL 2_0 predates the operator
    dml.reverse_subsequences(x, np.zeros(lengths_shape, np.uint32), axis=1, feature_level="2_0")
  assert info.value.violations == desc.violations("2_0")
  assert any("SequenceLengthsTensor" not in v.field for v in info.value.violations)


@pytest.mark.parametrize("lengths_shape", [(2, 1, 2, 4), (2, 2, 3, 4), (2, 1, 3), (1, 5, 1, 1)])
def test_functional_lengths_of_other_shapes_are_rejected(lengths_shape):
  """Only 1 may stand for a larger size, and never on the axis (which must be 1)."""
  x = np.zeros((2, 5, 3, 4), np.float32)
  with pytest.raises(DmlValidationError, match="SequenceLengthsTensor") as info:
    dml.reverse_subsequences(x, np.zeros(lengths_shape, np.uint32), axis=1)
  if len(lengths_shape) == 4:
    assert "Strides 0" in str(info.value)  # the hint: how to share a length


# =========================================================================== #
# Explanation
# =========================================================================== #


def test_reverse_subsequences_explains_lanes_and_clamped_lengths():
  desc = dml.ReverseSubsequencesDesc(T("INT8", (2, 5, 3)), T("UINT32", (2, 1, 3)), axis=1)
  assert explain_section(dml.explain(desc), "Output:") == [
    "OutputTensor.Sizes = InputTensor.Sizes = {2,5,3}; OutputTensor.DataType ="
    " InputTensor.DataType = INT8.",
    "Lanes run along Axis 1, 5 element(s) each; there are 6 lane(s), one length per lane:"
    " SequenceLengthsTensor.Sizes = InputTensor.Sizes with 1 on Axis = {2,1,3}.",
    "In each lane, with L = min(length, 5): out[i] = in[L - 1 - i] for i < L and out[i] = in[i]"
    " for i >= L. Lengths 0 and 1 leave the lane unchanged; lengths above 5 reverse the whole"
    " lane.",
  ]


# =========================================================================== #
# Pinned examples: lengths and rows (the property tests cover them too)
# =========================================================================== #


@pytest.mark.parametrize("length", [2**32 + 1, 2**32 + 2, 2**64 - 1])
def test_uint64_sequence_length_not_truncated(x64, length):
  """A length above the axis size reverses the whole lane (2**32 + 1 is not 1)."""
  x = np.arange(4, dtype=np.float16).reshape(1, 4)
  lengths = np.array([[length]], np.uint64)
  assert_bits_equal(dml.reverse_subsequences(x, lengths, axis=1), x[:, ::-1])


@pytest.mark.parametrize("lengths_shape", [(2, 1, 1), (2, 1, 8)], ids=["compact", "full"])
def test_rows_of_float16_differentiate_forward_and_backward(lengths_shape):
  """Rows of float16 move as bitcast words, which have no derivative: the tangent takes the
  plain row gather. A reversal is its own inverse, so grad gives the reversed weights."""
  rng = np.random.default_rng(5)
  x = rng.integers(-8, 9, (2, 6, 8)).astype(np.float16)
  n = np.broadcast_to(np.array([[[4]], [[9]]], np.uint32), lengths_shape)
  f = lambda x: dml.reverse_subsequences(x, n, axis=1)
  want = lambda v: reference.reverse_subsequences(v, np.broadcast_to(n, (2, 1, 8)), axis=1)
  t = rng.integers(-8, 9, x.shape).astype(np.float16)
  primal, tangent = jax.jvp(f, (x,), (t,))
  assert_bits_equal(primal, want(x), context="jvp primal")
  assert_bits_equal(tangent, want(t), context="jvp tangent")
  grad = jax.grad(lambda x: jnp.sum(f(x).astype(np.float32) * want(t).astype(np.float32)))(x)
  assert_bits_equal(grad, t, context="grad: the weights reversed back")


# =========================================================================== #
# The CPU's sub-row form: lengths per lane, equal along the last dimension
# =========================================================================== #

# (input shape, axis): rows (everything after the axis) of several sub-rows (the last
# dimension above 1, and any 1s after it).
SUB_ROW_SHAPES = [((6, 3, 4), 0), ((2, 5, 3, 4), 1), ((5, 3, 4, 1), 0), ((3, 4, 2, 8), 1)]


def _data(rng, shape, dtype):
  return rng.integers(-100, 100, shape).astype(dtype)


def _sub_row_lengths(rng, shape, axis, equal):
  """Lengths per lane (DirectML's full sizes), equal along each sub-row or random."""
  sizes = shape[:axis] + (1,) + shape[axis + 1 :]
  if not equal:
    return rng.integers(0, shape[axis] + 2, sizes, dtype=np.uint32)
  last = max(d for d, n in enumerate(shape) if n > 1)
  drawn = sizes[:last] + (1,) * (len(shape) - last)
  lengths = rng.integers(0, shape[axis] + 2, drawn, dtype=np.uint32)
  return np.ascontiguousarray(np.broadcast_to(lengths, sizes))


@pytest.mark.parametrize("shape, axis", SUB_ROW_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
@pytest.mark.parametrize("equal", [True, False], ids=["equal", "unequal"])
def test_lengths_equal_along_the_last_dimension_give_the_references_bits(shape, axis, dtype, equal):
  rng = np.random.default_rng(len(shape) * 10 + axis)
  x = _data(rng, shape, dtype)
  lengths = _sub_row_lengths(rng, shape, axis, equal)
  if equal:  # and not whole rows: the rows' check fails, the sub-rows' passes
    lanes = lengths.reshape(shape[:axis] + (-1,))
    assert not np.all(lanes == lanes[..., :1])
  fn = jax.jit(lambda x, n: dml.reverse_subsequences(x, n, axis=axis))
  want = reference.reverse_subsequences(x, lengths, axis=axis)
  assert_bits_equal(fn(x, lengths), want)
  assert_bits_equal(_numpy_reverse_subsequences(x, lengths, axis), want)


@pytest.mark.parametrize("shape, axis", SUB_ROW_SHAPES)
def test_the_sub_row_gather_itself(shape, axis):
  """The branch the check picks for equal lengths, called directly (the cond hides which
  branch ran): the same bits as the reference."""
  from dml_jax._src.ops import reverse_subsequences as module

  rng = np.random.default_rng(3)
  x = _data(rng, shape, np.float32)
  lengths = _sub_row_lengths(rng, shape, axis, equal=True)
  clamped = np.minimum(lengths, shape[axis]).astype(np.int32)
  assert_bits_equal(
    module._reverse_sub_rows(jnp.asarray(x), jnp.asarray(clamped), axis),
    reference.reverse_subsequences(x, lengths, axis=axis),
  )


def test_the_cpu_program_checks_sub_rows_after_rows():
  """On the CPU the program holds two conditionals: whole rows where every lane of a row
  shares a length, else sub-rows where the lanes of each sub-row do, else every element."""
  cpu = jax.devices("cpu")[0]  # committed arrays: the CPU program on any default device
  fn = jax.jit(lambda x, n: dml.reverse_subsequences(x, n, axis=0))
  x, n = jax.device_put((np.zeros((6, 3, 4), np.float32), np.zeros((1, 3, 4), np.uint32)), cpu)
  hlo = fn.lower(x, n).compile().as_text()
  assert hlo.count("conditional(") == 2, hlo
  # Without a sub-row (one dimension after the axis), one conditional as before.
  fn1 = jax.jit(lambda x, n: dml.reverse_subsequences(x, n, axis=1))
  operands = jax.device_put((np.zeros((2, 3, 4), np.float32), np.zeros((2, 1, 4), np.uint32)), cpu)
  assert fn1.lower(*operands).compile().as_text().count("conditional(") == 1


def test_sub_rows_under_vmap_and_grad():
  rng = np.random.default_rng(11)
  shape, axis = (5, 3, 4), 0
  xs = _data(rng, (2,) + shape, np.float32)
  lengths = np.stack(
    [_sub_row_lengths(rng, shape, axis, equal=True), _sub_row_lengths(rng, shape, axis, False)]
  )
  f = lambda x, n: dml.reverse_subsequences(x, n, axis=axis)
  got = jax.jit(jax.vmap(f))(xs, lengths)
  for i in range(2):
    assert_bits_equal(got[i], reference.reverse_subsequences(xs[i], lengths[i], axis=axis))
  # A reversal is its own inverse: the gradient of <f(x), w> is w reversed back.
  w = _data(rng, shape, np.float32)
  n = lengths[0]
  grad = jax.grad(lambda x: jnp.sum(f(x, n) * reference.reverse_subsequences(w, n, axis=axis)))(
    xs[0]
  )
  assert_bits_equal(grad, w)
  primal, tangent = jax.jvp(lambda x: f(x, n), (xs[0],), (w,))
  assert_bits_equal(tangent, reference.reverse_subsequences(w, n, axis=axis))
  assert_bits_equal(primal, reference.reverse_subsequences(xs[0], n, axis=axis))


# =========================================================================== #
# The reference: pinned cases and cross-checks against plain NumPy
# =========================================================================== #


class TestReference:
  """reference.reverse_subsequences on hand-written cases pinned from the spec."""

  DATA = np.arange(1, 6, dtype=np.int64).reshape(1, 5)

  @pytest.mark.parametrize(
    ("length", "dtype"),
    [
      (5, np.uint32),
      (6, np.uint32),
      (100, np.uint32),
      (0xFFFFFFFF, np.uint32),
      (2**64 - 1, np.uint64),
      (2**32 + 2, np.uint64),
    ],
  )
  def test_lengths_at_or_above_axis_size_reverse_whole_lane(self, length: int, dtype: type) -> None:
    lengths = np.array([[length]], dtype=dtype)
    actual = reference.reverse_subsequences(self.DATA, lengths, axis=1)
    assert_bits_equal(actual, np.array([[5, 4, 3, 2, 1]], np.int64))

  @pytest.mark.parametrize("length", [0, 1])
  def test_lengths_zero_and_one_are_no_ops(self, length: int) -> None:
    lengths = np.array([[length]], dtype=np.uint32)
    actual = reference.reverse_subsequences(self.DATA, lengths, axis=1)
    assert_bits_equal(actual, self.DATA)

  def test_only_prefix_is_reversed_tail_is_kept(self) -> None:
    lengths = np.array([[3]], dtype=np.uint64)
    actual = reference.reverse_subsequences(self.DATA, lengths, axis=1)
    assert_bits_equal(actual, np.array([[3, 2, 1, 4, 5]], np.int64))

  def test_one_length_per_lane_along_axis_0(self) -> None:
    data = np.arange(6, dtype=np.uint8).reshape(3, 2)
    lengths = np.array([[3, 2]], dtype=np.uint32)
    actual = reference.reverse_subsequences(data, lengths, axis=0)
    assert_bits_equal(actual, np.array([[4, 3], [2, 1], [0, 5]], np.uint8))

  def test_signed_lengths_are_rejected(self) -> None:
    with pytest.raises(AssertionError):
      reference.reverse_subsequences(self.DATA, np.array([[2]], np.int32), axis=1)


def _numpy_reverse_subsequences(data: np.ndarray, lengths: np.ndarray, axis: int) -> np.ndarray:
  """Lane by lane with ``np.flip`` on the first ``min(length, size)`` elements."""
  lanes = np.moveaxis(data, axis, -1).reshape(-1, data.shape[axis])
  lane_lengths = np.moveaxis(lengths, axis, -1).reshape(-1)
  rows = [
    np.concatenate([np.flip(lane[: int(n)]), lane[int(n) :]])
    for lane, n in zip(lanes, lane_lengths, strict=True)
  ]
  moved_shape = np.moveaxis(data, axis, -1).shape
  return np.moveaxis(np.stack(rows).reshape(moved_shape), -1, axis)


@pytest.mark.parametrize("seed", CROSS_CHECK_SEEDS)
def test_reverse_subsequences_matches_flip(seed: int) -> None:
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 5))
  shape = random_shape(rng, rank, high=5)
  axis = int(rng.integers(rank))
  data = random_data(rng, shape)
  lengths_shape = shape[:axis] + (1,) + shape[axis + 1 :]
  dtype = (np.uint32, np.uint64)[rng.integers(2)]
  lengths = rng.integers(0, shape[axis] + 3, size=lengths_shape).astype(dtype)

  expected = _numpy_reverse_subsequences(data, lengths, axis)
  assert_bits_equal(reference.reverse_subsequences(data, lengths, axis=axis), expected)


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def reverse_subsequences_case(draw):
  level = draw(strategies.levels("REVERSE_SUBSEQUENCES"))
  table = strategies.table_at(dml.ReverseSubsequencesDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  length_type = draw(st.sampled_from(table["SequenceLengthsTensor"].data_types))
  sizes = strategies.draw_sizes(draw, n)
  axis = draw(st.integers(0, n - 1))
  length_sizes = sizes[:axis] + (1,) + sizes[axis + 1 :]
  x = strategies.draw_data(draw, data_type, sizes)
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  info = np.iinfo(length_type.numpy_dtype)
  lengths = rng.integers(0, sizes[axis] + 3, length_sizes).astype(length_type.numpy_dtype)
  lengths.flat[0] = draw(st.sampled_from([0, 1, sizes[axis], int(info.max), 2**32 - 1]))
  desc = dml.ReverseSubsequencesDesc(
    TensorDesc(data_type, sizes), TensorDesc(length_type, length_sizes), axis=axis
  )
  return strategies.Case(
    desc,
    level,
    [x, lengths],
    lambda x, n, level: dml.reverse_subsequences(x, n, axis=axis, feature_level=level),
    lambda: reference.reverse_subsequences(x, lengths, axis=axis),
  )


def reverse_subsequences_mutations(desc, level, draw):
  """REVERSE_SUBSEQUENCES's own rule: the lengths' size on the axis."""
  sizes = list(desc.sequence_lengths_tensor.sizes)
  sizes[desc.axis] += 1
  yield (
    "lengths sizes",
    strategies.rebuild(
      desc,
      {
        "sequence_lengths_tensor": strategies.replace_tensor(
          desc.sequence_lengths_tensor, sizes=tuple(sizes)
        )
      },
    ),
    "SequenceLengthsTensor.Sizes",
  )


def _jnp_reverse_subsequences(x, lengths, axis):
  size = x.shape[axis]
  lengths = jnp.minimum(lengths, size).astype(np.int32)
  position = jax.lax.broadcasted_iota(np.int32, x.shape, axis)
  source = jnp.where(position < lengths, lengths - 1 - position, position)
  return jnp.take_along_axis(x, source, axis=axis)


def reverse_subsequences_cases(n, rng):
  cases = []
  x = rng.standard_normal((n, 2 * n, n)).astype(np.float32)
  per_lane = rng.integers(0, 3 * n, (n, 1, n)).astype(np.uint32)
  # Lengths per lane that all rows share: the rows' form at run time on the CPU.
  shared = np.broadcast_to(rng.integers(0, 3 * n, (n, 1, 1)), (n, 1, n)).astype(np.uint32)
  per_batch = rng.integers(0, 3 * n, (n, 1, 1)).astype(np.uint32)
  for lengths, what in (
    (per_lane, "per lane"),
    (shared, "equal in each row"),
    (per_batch, "(n, 1, 1)"),
  ):
    full = np.broadcast_to(lengths, (n, 1, n))
    for shard in (0, 1, 2):
      cases.append(
        sharding_cases.Case(
          "REVERSE_SUBSEQUENCES",
          f"along axis 1, lengths {what}, sharded on axis {shard}",
          lambda a, b: dml.reverse_subsequences(a, b, axis=1),
          lambda a, b: _jnp_reverse_subsequences(a, b, 1),
          [(x, shard), (lengths, shard if lengths.shape[shard] > 1 else None)],
          reference.reverse_subsequences(x, full, axis=1),
        )
      )
  # Sub-rows (lanes sharing a length along the last dimension, varying along the middle one).
  sub = rng.standard_normal((n, 2 * n, 2, n)).astype(np.float32)
  sub_lengths = np.broadcast_to(rng.integers(0, 3 * n, (n, 1, 2, 1)), (n, 1, 2, n))
  sub_lengths = sub_lengths.astype(np.uint32)
  for shard in (0, 1, 3):
    cases.append(
      sharding_cases.Case(
        "REVERSE_SUBSEQUENCES",
        f"along axis 1, sub-rows sharing lengths, sharded on axis {shard}",
        lambda a, b: dml.reverse_subsequences(a, b, axis=1),
        lambda a, b: _jnp_reverse_subsequences(a, b, 1),
        [(sub, shard), (sub_lengths, None if shard == 1 else shard)],
        reference.reverse_subsequences(sub, sub_lengths, axis=1),
      )
    )
  # Lengths above the axis size everywhere: jnp's x[::-1] of a sharded axis.
  whole = np.full((n, 1, n), 4 * n, np.uint32)
  for shard in (1,):
    cases.append(
      sharding_cases.Case(
        "REVERSE_SUBSEQUENCES",
        f"whole lanes along axis 1, sharded on axis {shard}",
        lambda a, b: dml.reverse_subsequences(a, b, axis=1),
        lambda a, b: _jnp_reverse_subsequences(a, b, 1),
        [(x, shard), (whole, None)],
        reference.reverse_subsequences(x, whole, axis=1),
      )
    )
  return cases


VALID = {"REVERSE_SUBSEQUENCES": reverse_subsequences_case}
MUTANTS = {"REVERSE_SUBSEQUENCES": reverse_subsequences_mutations}
SHARDED_CASES = reverse_subsequences_cases
TRACING_CALLS = {
  "reverse_subsequences": lambda k: dml.reverse_subsequences(
    jnp.full((3, 5), k, jnp.float16), jnp.full((3, 1), k, jnp.uint32), axis=1
  ),
}
BFLOAT16_CALLS = {
  "reverse_subsequences": lambda x: dml.reverse_subsequences(
    x, np.array([[3], [1], [6], [0]], np.uint32), axis=1
  ),
}
