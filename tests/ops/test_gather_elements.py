"""GATHER_ELEMENTS: the operator's own rules and pinned cases.

Its validation rules (the indices' sizes off the axis), its explanation, pinned examples
of its index rules, and the NumPy reference on hand-written cases and against
np.take_along_axis. What every operator shares (the tensor layer, the support tables, the
fixtures, the property tests against the reference) is tested in the cross-cutting files
under tests/.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import DmlValidationError, TensorDesc
from dml_jax._src import reference
from tests import sharding_cases, strategies
from tests.helpers import (
  CROSS_CHECK_SEEDS,
  assert_bits_equal,
  assert_rejected,
  assert_valid,
  braces,
  explain_section,
  numpy_normalize,
  random_data,
  random_indices,
  random_shape,
  violation_pattern,
)

T = dml.TensorDesc

# =========================================================================== #
# Validation
# =========================================================================== #


@pytest.mark.parametrize(
  "indices_sizes, axis, dimension",
  [
    ((2, 4), 0, 1),  # larger off the axis
    ((2, 2), 0, 1),  # smaller off the axis: torch.gather would accept it, DML does not
    ((1, 3), 1, 0),  # differs before the axis
  ],
)
def test_gather_elements_indices_sizes_equal_input_off_axis(indices_sizes, axis, dimension):
  desc = dml.GatherElementsDesc(T("FLOAT32", (3, 3)), T("UINT32", indices_sizes), axis=axis)
  assert_rejected(
    desc,
    "6_4",
    "IndicesTensor.Sizes",
    f"must equal InputTensor.Sizes {{3,3}} in every dimension but Axis ({axis});"
    f" dimension {dimension} differs",
    braces(indices_sizes),
  )


@pytest.mark.parametrize("size_on_axis", [1, 3, 7])
def test_gather_elements_indices_size_on_axis_is_free(size_on_axis):
  desc = dml.GatherElementsDesc(T("FLOAT32", (3, 3)), T("UINT32", (size_on_axis, 3)), axis=0)
  assert_valid(desc, "6_4")
  assert desc.output == T("FLOAT32", (size_on_axis, 3))  # indices' sizes, input's type


def test_functional_gather_elements_validates_like_the_descriptor():
  x = np.zeros((2, 3), np.float32)
  i = np.zeros((2, 3), np.int32)
  with pytest.raises(DmlValidationError) as info:
    dml.gather_elements(x, i, axis=1, feature_level="2_1")
  # Read at the 4 dimensions FL 2_1 takes: its error is the INT32 indices'.
  desc = dml.GatherElementsDesc(T("FLOAT32", (1, 1, 2, 3)), T("INT32", (1, 1, 2, 3)), axis=3)
  assert info.value.violations == desc.violations("2_1")
  assert str(info.value) == str(pytest.raises(DmlValidationError, desc.validate, "2_1").value)
  assert re.search(
    violation_pattern(
      "IndicesTensor.DataType",
      "must be one of UINT32",
      "INT32",
      "2_1",
      "negative (signed) indices need FL >= 3_0",
    ),
    str(info.value),
  )


# =========================================================================== #
# Explanation
# =========================================================================== #


def test_gather_elements_output_is_the_indices_sizes_and_the_input_type():
  desc = dml.GatherElementsDesc(T("FLOAT16", (3, 4)), T("INT64", (3, 7)), axis=1)
  output = explain_section(dml.explain(desc), "Output:")
  assert output == [
    "out[o] = InputTensor[o with o[1] := IndicesTensor[o]]: every output element reads one"
    " input element of its own lane along Axis 1.",
    "OutputTensor.Sizes = IndicesTensor.Sizes = {3,7}: one output element per index.",
    "IndicesTensor.Sizes must equal InputTensor.Sizes {3,4} off Axis 1; on Axis 1 it is free:"
    " 7 index(es) per lane of 4 element(s).",
    "OutputTensor.DataType = InputTensor.DataType = FLOAT16 (not the index type INT64).",
  ]


# =========================================================================== #
# Pinned examples of the index rules (the property tests cover them too)
# =========================================================================== #


@pytest.mark.parametrize(
  "value, element",
  [(-(2**32) + 1, 0), (2**32 + 1, 3), (-(2**63), 0), (2**63 - 1, 3), (-5, 0), (-4, 0), (-1, 3)],
)
def test_int64_index_not_truncated(x64, value, element):
  x = np.array([10, 11, 12, 13], np.int16)
  index = np.array([value], np.int64)
  assert_bits_equal(dml.gather_elements(x, index, axis=0), np.array([x[element]]))
  assert_bits_equal(
    jax.jit(lambda x, i: dml.gather_elements(x, i, axis=0))(x, index), np.array([x[element]])
  )


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
def test_unsigned_index_never_counts_from_the_end(x64, dtype):
  """UINT 0xFFFF...FE is a huge index (clamped to the last element), not -2."""
  x = np.array([10, 11, 12, 13], np.uint8)
  index = np.array([np.iinfo(dtype).max - 1], dtype)
  assert_bits_equal(dml.gather_elements(x, index, axis=0), np.array([13], np.uint8))


# =========================================================================== #
# The reference: pinned cases and cross-checks against plain NumPy
# =========================================================================== #


class TestReference:
  """reference.gather_elements on hand-written cases pinned from the spec."""

  DATA = np.array([10, 20, 30, 40], dtype=np.float32)

  def _gather(self, indices: list[int], dtype: type) -> np.ndarray:
    return reference.gather_elements(self.DATA, np.array(indices, dtype=dtype), axis=0)

  @pytest.mark.parametrize("dtype", [np.int32, np.int64])
  def test_negative_indices_count_from_end(self, dtype: type) -> None:
    actual = self._gather([-1, -4, 0, -2], dtype)
    assert_bits_equal(actual, np.array([40, 10, 10, 30], np.float32))

  def test_below_minus_size_clamps_to_first(self) -> None:
    actual = self._gather([-5, -(2**31)], np.int32)
    assert_bits_equal(actual, np.array([10, 10], np.float32))
    actual = self._gather([-(2**63)], np.int64)
    assert_bits_equal(actual, np.array([10], np.float32))

  def test_unsigned_max_clamps_to_last(self) -> None:
    # 0xFFFFFFFE would read 30 if it wrapped to -2.
    actual = self._gather([0xFFFFFFFF, 0xFFFFFFFE, 4], np.uint32)
    assert_bits_equal(actual, np.array([40, 40, 40], np.float32))

  def test_uint64_max_clamps_to_last(self) -> None:
    actual = self._gather([2**64 - 1, 2**64 - 2, 2**63], np.uint64)
    assert_bits_equal(actual, np.array([40, 40, 40], np.float32))

  def test_int64_above_32_bits_is_not_truncated(self) -> None:
    # Truncated to 32 bits, 2**32 + 1 would read element 1 (20).
    actual = self._gather([2**32 + 1, 2**32], np.int64)
    assert_bits_equal(actual, np.array([40, 40], np.float32))

  def test_axis_1_and_output_shape_from_indices(self) -> None:
    data = np.arange(6, dtype=np.int16).reshape(2, 3)
    indices = np.array([[2, 0, 1, -1], [1, 1, 0, -3]], dtype=np.int32)
    actual = reference.gather_elements(data, indices, axis=1)
    assert_bits_equal(actual, np.array([[2, 0, 1, 2], [4, 4, 3, 3]], np.int16))

  def test_rank_mismatch_is_rejected(self) -> None:
    with pytest.raises(AssertionError):
      reference.gather_elements(self.DATA, np.zeros((1, 4), np.int32), axis=0)


@pytest.mark.parametrize("seed", CROSS_CHECK_SEEDS)
def test_gather_elements_matches_take_along_axis(seed: int) -> None:
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 5))
  shape = random_shape(rng, rank)
  axis = int(rng.integers(rank))
  data = random_data(rng, shape)
  indices_shape = list(shape)
  indices_shape[axis] = int(rng.integers(1, 6))
  indices = random_indices(rng, tuple(indices_shape), shape[axis])

  expected = np.take_along_axis(data, numpy_normalize(indices, shape[axis]), axis=axis)
  assert_bits_equal(reference.gather_elements(data, indices, axis=axis), expected)


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def gather_elements_case(draw):
  level = draw(strategies.levels("GATHER_ELEMENTS"))
  table = strategies.table_at(dml.GatherElementsDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  index_type = draw(st.sampled_from(table["IndicesTensor"].data_types))
  sizes = strategies.draw_sizes(draw, n)
  axis = draw(st.integers(0, n - 1))
  index_sizes = sizes[:axis] + (draw(st.integers(1, 4)),) + sizes[axis + 1 :]
  x = strategies.draw_data(draw, data_type, sizes)
  i = strategies.draw_indices(draw, index_type, index_sizes, lambda pos: sizes[axis])
  desc = dml.GatherElementsDesc(
    TensorDesc(data_type, sizes), TensorDesc(index_type, index_sizes), axis=axis
  )
  return strategies.Case(
    desc,
    level,
    [x, i],
    lambda x, i, level: dml.gather_elements(x, i, axis=axis, feature_level=level),
    lambda: reference.gather_elements(x, i, axis=axis),
  )


def gather_elements_mutations(desc, level, draw):
  """GATHER_ELEMENTS's own rules: indices sizes off the axis, their rank."""
  n = desc.input_tensor.dimension_count
  others = [d for d in range(n) if d != desc.axis]
  if others:
    d = draw(st.sampled_from(others))
    sizes = list(desc.indices_tensor.sizes)
    sizes[d] += 1
    yield (
      "indices sizes",
      strategies.rebuild(
        desc, {"indices_tensor": strategies.replace_tensor(desc.indices_tensor, sizes=tuple(sizes))}
      ),
      "IndicesTensor.Sizes",
    )
  yield (
    "rank mismatch",
    strategies.rebuild(
      desc,
      {
        "indices_tensor": strategies.replace_tensor(
          desc.indices_tensor, sizes=(1,) + desc.indices_tensor.sizes
        )
      },
    ),
    "IndicesTensor.DimensionCount",
  )


def gather_elements_cases(n, rng):
  cases = []
  x = rng.standard_normal((n, 2 * n, n)).astype(np.float32)
  for axis, shape in ((1, (n, 3 * n, n)), (2, (n, 2 * n, 2 * n)), (0, (2 * n, 2 * n, n))):
    idx = rng.integers(-x.shape[axis] - 2, x.shape[axis] + 2, shape).astype(np.int32)
    for shard in sorted({0 if axis else 1, axis, 2}):  # a batch axis, the gathered one, the last
      cases.append(
        sharding_cases.Case(
          "GATHER_ELEMENTS",
          f"along axis {axis}, sharded on axis {shard}",
          lambda a, b, axis=axis: dml.gather_elements(a, b, axis=axis),
          lambda a, b, axis=axis: jnp.take_along_axis(
            a, sharding_cases.normalized(b, a.shape[axis]), axis=axis
          ),
          [(x, shard), (idx, shard)],
          reference.gather_elements(x, idx, axis=axis),
        )
      )
  # The shapes of the CUDA GPUs' row kernel (the last axis, 128-wide index rows) and strip
  # kernel (axis 0, 64 inner columns); the lax path elsewhere.
  wide = rng.standard_normal((2 * n, 256)).astype(np.float32)
  wide_idx = rng.integers(-300, 300, (2 * n, 128)).astype(np.int32)
  tall = rng.standard_normal((2 * n, 64)).astype(np.float32)
  tall_idx = rng.integers(-2 * n - 2, 2 * n + 2, (8 * n, 64)).astype(np.int32)
  for x, idx, axis, kernel in ((wide, wide_idx, 1, "row"), (tall, tall_idx, 0, "strip")):
    for shard in (0, 1):
      cases.append(
        sharding_cases.Case(
          "GATHER_ELEMENTS",
          f"{kernel}-kernel shape {x.shape}, along axis {axis}, sharded on axis {shard}",
          lambda a, b, axis=axis: dml.gather_elements(a, b, axis=axis),
          lambda a, b, axis=axis: jnp.take_along_axis(
            a, sharding_cases.normalized(b, a.shape[axis]), axis=axis
          ),
          [(x, shard), (idx, shard)],
          reference.gather_elements(x, idx, axis=axis),
        )
      )
  return cases


VALID = {"GATHER_ELEMENTS": gather_elements_case}
MUTANTS = {"GATHER_ELEMENTS": gather_elements_mutations}
SHARDED_CASES = gather_elements_cases
TRACING_CALLS = {
  "gather_elements": lambda k: dml.gather_elements(
    jnp.full((3, 5), k, jnp.float32), jnp.full((2, 5), k % 3, jnp.int32), axis=0
  ),
}
BFLOAT16_CALLS = {
  "gather_elements": lambda x: dml.gather_elements(x, np.zeros((2, 6), np.uint32), axis=0),
}
