"""GATHER_ND and GATHER_ND1: the operators' own rules and pinned cases.

Their validation rules (the dimension counts, the tuple length, the batch dimensions, the
output rank), their explanations and HTML form, and the NumPy reference on the documented
output sizes, on hand-written cases and against NumPy's advanced indexing. What every
operator shares (the tensor layer, the support tables, the fixtures, the property tests
against the reference) is tested in the cross-cutting files under tests/.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import DmlValidationError, FeatureLevel, TensorDesc
from dml_jax._src import conformance, reference
from dml_jax._src.fixtures import Fixture, get_fixture, load_fixtures
from tests import sharding_cases, strategies
from tests.helpers import (
  CROSS_CHECK_SEEDS,
  assert_bits_equal,
  assert_rejected,
  assert_valid,
  explain_section,
  fields_of,
  gather_nd_desc,
  numpy_normalize,
  parse_html,
  random_data,
  random_indices,
  random_shape,
)

T = dml.TensorDesc
GATHER_ND_FIXTURES = [f for f in load_fixtures() if f.op in ("GATHER_ND", "GATHER_ND1")]

# =========================================================================== #
# Validation
# =========================================================================== #


@pytest.mark.parametrize(
  "field, counts, found",
  [
    ("InputDimensionCount", dict(input_dimension_count=0), "0"),
    ("InputDimensionCount", dict(input_dimension_count=4), "4"),
    ("IndicesDimensionCount", dict(indices_dimension_count=0), "0"),
    ("IndicesDimensionCount", dict(indices_dimension_count=4), "4"),
    ("InputDimensionCount", dict(input_dimension_count=-1), "-1"),
  ],
)
def test_gather_nd_dimension_counts_in_1_to_n(field, counts, found):
  desc = gather_nd_desc(T("FLOAT32", (1, 3, 4)), T("UINT32", (1, 2, 1)), **counts)
  assert_rejected(desc, "6_4", field, "must be in [1, DimensionCount] = [1, 3]", found)


@pytest.mark.parametrize(
  "input_sizes, indices_sizes, field, count, found",
  [
    ((2, 3, 4), (1, 2, 1), "InputTensor.Sizes", 2, "{2,3,4}"),
    ((1, 3, 4), (2, 2, 1), "IndicesTensor.Sizes", 2, "{2,2,1}"),
  ],
)
def test_gather_nd_leading_dimensions_must_be_1(input_sizes, indices_sizes, field, count, found):
  desc = dml.GatherNdDesc(
    T("FLOAT32", input_sizes),
    T("UINT32", indices_sizes),
    input_dimension_count=2,
    indices_dimension_count=2,
  )
  assert_rejected(
    desc, "6_4", field, f"dimensions before the trailing {count} meaningful ones must be 1", found
  )


@pytest.mark.parametrize(
  "input_sizes, indices_sizes, batch, bound, found",
  [
    ((2, 3, 4), (1, 2, 4), 0, 3, "4"),  # t > InputDimensionCount
    ((2, 3, 4), (2, 1, 3), 1, 2, "3"),  # t > InputDimensionCount - BatchDimensionCount
  ],
)
def test_gather_nd_index_tuple_length_at_most_input_dimension_count_minus_batch(
  input_sizes, indices_sizes, batch, bound, found
):
  desc = gather_nd_desc(
    T("FLOAT32", input_sizes), T("UINT32", indices_sizes), batch_dimension_count=batch
  )
  assert_rejected(
    desc,
    "6_4",
    "IndicesTensor.Sizes",
    "the last size is the index tuple length and must be in"
    f" [1, InputDimensionCount - BatchDimensionCount] = [1, {bound}]",
    found,
  )


def test_gather_nd_index_tuple_length_at_least_1():
  desc = dml.GatherNdDesc(T("FLOAT32", (3, 4)), T("UINT32", (2, 0)))
  error = assert_rejected(
    desc,
    "6_4",
    "IndicesTensor.Sizes",
    "the last size is the index tuple length and must be in [1,",
    "0",
  )
  assert any("every size must be >= 1" in v.rule for v in error.violations)


@pytest.mark.parametrize(
  "counts, batch, bound",
  [
    (dict(), 3, 3),  # b = n
    (
      dict(indices_dimension_count=2),
      2,
      2,
    ),  # DirectMLX's stricter bound: b < IndicesDimensionCount
    (dict(input_dimension_count=1), 1, 1),  # and b < InputDimensionCount
    (dict(), -1, 3),
  ],
)
def test_gather_nd1_batch_dimension_count_below_both_counts(counts, batch, bound):
  desc = gather_nd_desc(
    T("FLOAT32", (1, 3, 4)), T("UINT32", (1, 1, 1)), batch_dimension_count=batch, **counts
  )
  assert_rejected(
    desc,
    "6_4",
    "BatchDimensionCount",
    f"must be in [0, min(InputDimensionCount, IndicesDimensionCount)) = [0, {bound})",
    str(batch),
  )


def test_gather_nd1_batch_dimensions_must_agree():
  # INFERRED: the batch dims are shared, not broadcast.
  desc = gather_nd_desc(T("FLOAT32", (2, 3, 4)), T("UINT32", (3, 2, 1)), batch_dimension_count=1)
  assert_rejected(
    desc, "6_4", "IndicesTensor.Sizes", "the 1 batch dimensions must equal the input's {2}", "{3}"
  )
  broadcast = gather_nd_desc(
    T("FLOAT32", (2, 3, 4)), T("UINT32", (1, 2, 1)), batch_dimension_count=1
  )
  assert "IndicesTensor.Sizes" in fields_of(broadcast, "6_4")


def test_gather_nd_output_rank_must_fit():
  # k = (q - 1) + (m - b - t) = 2 + 2 = 4 > n = 3
  desc = dml.GatherNdDesc(T("FLOAT32", (2, 3, 4)), T("UINT32", (2, 2, 1)))
  assert_rejected(
    desc,
    "6_4",
    "OutputTensor.DimensionCount",
    "the output's meaningful dimensions (IndicesDimensionCount - 1 + InputDimensionCount -"
    " BatchDimensionCount - t = 4) must fit in DimensionCount 3",
    "4",
  )
  with pytest.raises(DmlValidationError, match=r"OutputTensor\.DimensionCount"):
    desc.output  # noqa: B018  (no output can be inferred: the property raises)


@pytest.mark.parametrize(
  "input_sizes, indices_sizes, counts, expected",
  [
    # The documented example, and the right-alignment rule.
    (
      (3, 4, 5, 6, 7),
      (1, 1, 1, 2, 3),
      dict(input_dimension_count=5, indices_dimension_count=3),
      (1, 1, 2, 6, 7),
    ),
    ((2, 2), (2, 1), dict(), (2, 2)),
    (
      (1, 2, 2, 2),
      (1, 1, 2, 2),
      dict(input_dimension_count=3, indices_dimension_count=2),
      (1, 1, 2, 2),
    ),
    (
      (1, 3, 2, 2),
      (1, 3, 2, 2),
      dict(input_dimension_count=3, indices_dimension_count=3, batch_dimension_count=1),
      (1, 1, 3, 2),
    ),
    ((2, 3), (1, 2), dict(indices_dimension_count=1), (1, 1)),  # k = 0: all leading 1s
    ((2, 3, 4), (2, 1, 2), dict(batch_dimension_count=1), (1, 2, 1)),
  ],
)
def test_gather_nd_valid_shapes(input_sizes, indices_sizes, counts, expected):
  desc = gather_nd_desc(T("FLOAT32", input_sizes), T("UINT32", indices_sizes), **counts)
  assert_valid(desc, "6_4")
  assert desc.output.sizes == expected


def test_functional_gather_nd_validates_like_the_descriptor():
  x = np.zeros((1, 1, 3, 4), np.float32)
  i = np.zeros((1, 1, 2, 1), np.uint32)
  with pytest.raises(
    DmlValidationError, match=r"^DML_OPERATOR_GATHER_ND1 .*\n  - DML_OPERATOR_TYPE:"
  ):
    dml.gather_nd(
      x,
      i,
      input_dimension_count=2,
      indices_dimension_count=2,
      batch_dimension_count=1,
      feature_level=0x2100,
    )
  with pytest.raises(DmlValidationError) as info:
    dml.gather_nd(np.zeros((2, 3, 4), np.float32), np.zeros((2, 2, 1), np.uint32))
  desc = dml.GatherNdDesc(T("FLOAT32", (2, 3, 4)), T("UINT32", (2, 2, 1)))
  assert info.value.violations == desc.violations() != ()


# =========================================================================== #
# Explanation and HTML
# =========================================================================== #


def test_gather_nd_sizes_are_derived_step_by_step():
  text = dml.explain(conformance.descriptor_for(get_fixture("gather_nd/output-sizes")))
  output = explain_section(text, "Output:")
  assert output[:8] == [
    "n = DimensionCount = 5; m = InputDimensionCount = 5; q = IndicesDimensionCount = 3;"
    " B = BatchDimensionCount = 0.",
    "Logical input I = InputTensor.Sizes[n - m:] = {3,4,5,6,7}.",
    "Logical indices X = IndicesTensor.Sizes[n - q:] = {1,2,3} (the 2 leading size(s) before"
    " it must be 1).",
    "Tuple length t = X[-1] = 3: each index tuple holds 3 coordinate(s) into I[B:B + t] = {3,4,5}.",
    "Each tuple selects I[B + t:] = {6,7}: a sub-block of 42 element(s) is copied per tuple.",
    "Logical output = X[:-1] ++ I[B + t:] = {1,2} ++ {6,7} = {1,2,6,7} (k = 4 dimension(s)).",
    "Right-aligned into n = 5 dimensions with 1 leading 1(s): OutputTensor.Sizes = {1,1,2,6,7}.",
    "out[b, p, r] = I[b, X[b, p, 0], ..., X[b, p, t - 1], r] (b: batch, p: tuple position,"
    " r: within the sub-block).",
  ]
  assert "BatchDimensionCount 0: DML_OPERATOR_GATHER_ND (from FL 2_1)" in text


def test_gather_nd1_names_its_batches_and_its_single_elements():
  text = dml.explain(conformance.descriptor_for(get_fixture("gather_nd1/example-2-batch-count")))
  output = explain_section(text, "Output:")
  assert (
    "The first B = 1 dimension(s) of I and X are batches ({3} and {3}, which must be equal):"
    " the tuples of batch j index into I[j] only."
  ) in output
  assert "Each tuple selects I[B + t:] = {}: a single element is copied per tuple." in output
  assert "BatchDimensionCount 1 > 0 makes this DML_OPERATOR_GATHER_ND1 (from FL 3_0)." in output


def test_gather_nd_says_why_no_output_can_be_inferred():
  too_long = dml.GatherNdDesc(T("FLOAT32", (2, 2)), T("UINT32", (1, 3)))
  assert explain_section(dml.explain(too_long), "Output:")[-1] == (
    "t must be in [1, m - B] = [1, 2]: no output can be inferred."
  )
  assert "Fields:\n" in dml.explain(too_long)
  assert "  OutputTensor = (none given, none inferred)" in dml.explain(too_long)
  ranks = dml.GatherNdDesc(T("FLOAT32", (2, 2)), T("UINT32", (2,)))
  assert explain_section(dml.explain(ranks), "Output:")[-1] == (
    "The counts do not fit the tensors' ranks: no output can be inferred."
  )


def test_gather_nd_html_names_the_struct_and_its_own_attributes():
  gather_nd = dml.GatherNdDesc(dml.TensorDesc("FLOAT32", (2, 2)), dml.TensorDesc("UINT32", (2, 1)))
  attributes = parse_html(gather_nd._repr_html_()).tables[1]
  assert [row[0] for row in attributes[1:]] == ["InputDimensionCount", "IndicesDimensionCount"]
  assert "(DML_GATHER_ND_OPERATOR_DESC)" in gather_nd._repr_html_()
  gather_nd1 = gather_nd_desc(
    dml.TensorDesc("FLOAT32", (3, 2)), dml.TensorDesc("UINT32", (3, 1)), batch_dimension_count=1
  )
  attributes = parse_html(gather_nd1._repr_html_()).tables[1]
  assert [row[0] for row in attributes[1:]] == [
    "InputDimensionCount",
    "IndicesDimensionCount",
    "BatchDimensionCount",
  ]
  assert "(DML_GATHER_ND1_OPERATOR_DESC)" in gather_nd1._repr_html_()


# =========================================================================== #
# The reference: pinned cases and cross-checks against plain NumPy
# =========================================================================== #


@pytest.mark.parametrize("fixture", GATHER_ND_FIXTURES, ids=[f.id for f in GATHER_ND_FIXTURES])
def test_gather_nd_output_sizes_match_documented_sizes(fixture: Fixture) -> None:
  sizes = reference.gather_nd_output_sizes(
    fixture.inputs["input"].sizes, fixture.inputs["indices"].sizes, **fixture.params
  )
  assert sizes == fixture.output.sizes


class TestReference:
  """reference.gather_nd on hand-written cases pinned from the spec."""

  def test_negative_and_out_of_range_components(self) -> None:
    data = np.arange(12, dtype=np.float64).reshape(3, 4)
    indices = np.array([[-1, -1], [-3, 0], [5, -9], [2**32 + 1, 1]], dtype=np.int64)
    actual = reference.gather_nd(data, indices)
    # Components clamp against their own dimension: rows of 3, columns of 4.
    assert_bits_equal(actual, np.array([[11, 0, 8, 9]], np.float64))  # padded to rank 2

  def test_unsigned_components_never_wrap(self) -> None:
    data = np.arange(12, dtype=np.int8).reshape(3, 4)
    indices = np.array([[0xFFFFFFFF, 0], [0, 0xFFFFFFFE]], dtype=np.uint32)
    actual = reference.gather_nd(data, indices)
    assert_bits_equal(actual, np.array([[8, 3]], np.int8))

  def test_output_is_right_aligned_with_leading_ones(self) -> None:
    data = np.arange(12, dtype=np.float32).reshape(1, 1, 4, 3)
    indices = np.array([3, 1], dtype=np.uint32).reshape(1, 1, 2, 1)
    actual = reference.gather_nd(data, indices, input_dimension_count=2, indices_dimension_count=2)
    expected = np.array([[9, 10, 11], [3, 4, 5]], np.float32).reshape(1, 1, 2, 3)
    assert_bits_equal(actual, expected)

  def test_whole_tuple_gives_one_element_padded_to_rank(self) -> None:
    data = np.arange(12, dtype=np.uint16).reshape(3, 4)
    indices = np.array([[2, 1]], dtype=np.int32)
    actual = reference.gather_nd(data, indices, indices_dimension_count=1)
    assert_bits_equal(actual, np.array([[9]], np.uint16))

  def test_batch_dims(self) -> None:
    # GATHER_ND1, B = 1: out[b, p, r] = in[b, idx[b, p, 0], r].
    data = np.arange(12, dtype=np.int32).reshape(2, 3, 2)
    indices = np.array([[[2], [0]], [[1], [-1]]], dtype=np.int64)
    actual = reference.gather_nd(data, indices, batch_dimension_count=1)
    expected = np.array([[[4, 5], [0, 1]], [[8, 9], [10, 11]]], np.int32)
    assert_bits_equal(actual, expected)

  def test_batch_dims_with_padding_and_full_tuples(self) -> None:
    # I = (2, 2, 3), X = (2, 1, 2), B = 1, t = 2 -> logical out (2, 1).
    data = np.arange(12, dtype=np.float16).reshape(1, 2, 2, 3)
    indices = np.array([[[1, 2]], [[0, -1]]], dtype=np.int32).reshape(1, 2, 1, 2)
    actual = reference.gather_nd(
      data,
      indices,
      input_dimension_count=3,
      indices_dimension_count=3,
      batch_dimension_count=1,
    )
    assert_bits_equal(actual, np.array([5, 8], np.float16).reshape(1, 1, 2, 1))

  @pytest.mark.parametrize(
    ("input_sizes", "indices_sizes", "counts", "expected"),
    [
      ((3, 4, 5, 6, 7), (1, 1, 1, 2, 3), (5, 3, 0), (1, 1, 2, 6, 7)),
      ((2, 2), (2, 1), (2, 2, 0), (2, 2)),
      ((1, 2, 2, 2), (1, 1, 2, 2), (3, 2, 0), (1, 1, 2, 2)),
      ((1, 3, 2, 2), (1, 3, 2, 2), (3, 3, 1), (1, 1, 3, 2)),
      ((1, 1, 4, 6), (1, 1, 5, 1), (2, 2, 0), (1, 1, 5, 6)),
      ((3, 4), (1, 2), (2, 1, 0), (1, 1)),
      ((2, 3, 4, 5), (2, 3, 7, 1), (4, 4, 2), (2, 3, 7, 5)),
    ],
  )
  def test_output_sizes(
    self,
    input_sizes: tuple[int, ...],
    indices_sizes: tuple[int, ...],
    counts: tuple[int, int, int],
    expected: tuple[int, ...],
  ) -> None:
    input_count, indices_count, batch = counts
    sizes = reference.gather_nd_output_sizes(
      input_sizes,
      indices_sizes,
      input_dimension_count=input_count,
      indices_dimension_count=indices_count,
      batch_dimension_count=batch,
    )
    assert sizes == expected

  def test_output_rank_above_tensor_rank_is_rejected(self) -> None:
    # X[:-1] ++ I[t:] = (3, 3) ++ (4, 5) has 4 dims, more than the rank 3.
    with pytest.raises(AssertionError):
      reference.gather_nd_output_sizes(
        (2, 4, 5), (3, 3, 1), input_dimension_count=3, indices_dimension_count=3
      )

  def test_non_one_leading_dims_are_rejected(self) -> None:
    with pytest.raises(AssertionError):
      reference.gather_nd_output_sizes(
        (2, 4, 5), (1, 3, 1), input_dimension_count=2, indices_dimension_count=2
      )


def _random_gather_nd_case(rng: np.random.Generator) -> dict:
  """A random valid GATHER_ND1 configuration (sizes and counts)."""
  while True:
    rank = int(rng.integers(1, 6))
    input_count = int(rng.integers(1, rank + 1))
    batch = int(rng.integers(0, input_count))
    tuple_size = int(rng.integers(1, input_count - batch + 1))
    positions = int(rng.integers(0, 3))
    indices_count = batch + positions + 1
    output_rank = batch + positions + (input_count - batch - tuple_size)
    if indices_count <= rank and output_rank <= rank:
      break
  logical_input = random_shape(rng, input_count)
  logical_indices = logical_input[:batch] + random_shape(rng, positions, high=3) + (tuple_size,)
  return {
    "rank": rank,
    "input_count": input_count,
    "indices_count": indices_count,
    "batch": batch,
    "logical_input": logical_input,
    "logical_indices": logical_indices,
  }


def _numpy_gather_nd(data: np.ndarray, indices: np.ndarray, batch: int, rank: int) -> np.ndarray:
  """GATHER_ND1 on logical shapes by NumPy advanced indexing."""
  tuple_size = indices.shape[-1]
  position_shape = indices.shape[:-1]
  sizes = np.array(data.shape[batch : batch + tuple_size])
  components = numpy_normalize(indices, sizes)
  batch_grids = tuple(
    np.arange(position_shape[d]).reshape((1,) * d + (-1,) + (1,) * (len(position_shape) - d - 1))
    for d in range(batch)
  )
  gathered = data[batch_grids + tuple(components[..., j] for j in range(tuple_size))]
  return gathered.reshape((1,) * (rank - gathered.ndim) + gathered.shape)


@pytest.mark.parametrize("seed", CROSS_CHECK_SEEDS)
def test_gather_nd_matches_advanced_indexing(seed: int) -> None:
  rng = np.random.default_rng(seed)
  case = _random_gather_nd_case(rng)
  rank = case["rank"]
  logical_input, logical_indices = case["logical_input"], case["logical_indices"]
  data = random_data(rng, logical_input)
  tuple_size = logical_indices[-1]
  bound = np.array(logical_input[case["batch"] : case["batch"] + tuple_size])
  indices = random_indices(rng, logical_indices, bound)

  pad = lambda shape: (1,) * (rank - len(shape)) + shape
  actual = reference.gather_nd(
    data.reshape(pad(logical_input)),
    indices.reshape(pad(logical_indices)),
    input_dimension_count=case["input_count"],
    indices_dimension_count=case["indices_count"],
    batch_dimension_count=case["batch"],
  )
  expected = _numpy_gather_nd(data, indices, case["batch"], rank)
  assert_bits_equal(actual, expected)
  assert actual.shape == reference.gather_nd_output_sizes(
    pad(logical_input),
    pad(logical_indices),
    input_dimension_count=case["input_count"],
    indices_dimension_count=case["indices_count"],
    batch_dimension_count=case["batch"],
  )


def test_gather_nd_desc_with_a_batch_count_is_deprecated_and_builds_the_same_descriptors():
  data, indices = T("FLOAT32", (2, 3, 4)), T("UINT32", (2, 2, 1))
  with pytest.warns(DeprecationWarning, match="use GatherNd1Desc"):
    batched = dml.GatherNdDesc(data, indices, batch_dimension_count=1)
  assert batched == dml.GatherNd1Desc(data, indices, batch_dimension_count=1)
  with pytest.warns(DeprecationWarning, match="use GatherNd1Desc"):
    positional = dml.GatherNdDesc(data, indices, 3, 3, 1)  # the older field order
  assert positional == batched
  output = T("FLOAT32", (2, 2, 4))
  with pytest.warns(DeprecationWarning, match="use GatherNd1Desc"):
    with_output = dml.GatherNdDesc(data, indices, 3, 3, 1, output)  # (..., b, output)
  assert with_output == dml.GatherNd1Desc(data, indices, 3, 3, 1, output)
  assert with_output.output_tensor == output and with_output.batch_dimension_count == 1
  with pytest.warns(DeprecationWarning, match="use GatherNd1Desc"):
    plain = dml.GatherNdDesc(data, indices, batch_dimension_count=0)
  assert type(plain) is dml.GatherNdDesc and plain == dml.GatherNdDesc(data, indices)
  assert plain.OPERATOR == "GATHER_ND" and batched.OPERATOR == "GATHER_ND1"


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def gather_nd_case(draw, op="GATHER_ND"):
  """GATHER_ND, or GATHER_ND1 with or without batch dimensions."""
  batched = op == "GATHER_ND1" and draw(st.booleans())
  level = draw(strategies.levels(op))
  table = strategies.DESCS[op].SUPPORT.at(level)
  low, high = strategies.rank_range(table, level)
  n = draw(st.integers(max(low, 2 if batched else 1), high))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  index_type = draw(st.sampled_from(table["IndicesTensor"].data_types))
  b = draw(st.integers(1, n - 1)) if batched else 0
  m = draw(st.integers(b + 1, n))
  t = draw(st.integers(1, m - b))
  # q - 1 + m - b - t <= n, q > b, q <= n
  q = draw(st.integers(b + 1, min(n, n + 1 - (m - b - t))))
  logical_in = strategies.draw_sizes(draw, m, max_elements=64)
  logical_idx = logical_in[:b] + strategies.draw_sizes(draw, q - 1 - b, max_elements=8) + (t,)
  in_sizes = (1,) * (n - m) + logical_in
  idx_sizes = (1,) * (n - q) + logical_idx
  x = strategies.draw_data(draw, data_type, in_sizes)
  i = strategies.draw_indices(draw, index_type, idx_sizes, lambda pos: logical_in[b + pos[-1]])
  kwargs = dict(input_dimension_count=m, indices_dimension_count=q, batch_dimension_count=b)
  tensors = TensorDesc(data_type, in_sizes), TensorDesc(index_type, idx_sizes)
  if op == "GATHER_ND1":
    desc = dml.GatherNd1Desc(*tensors, **kwargs)
  else:
    desc = dml.GatherNdDesc(*tensors, input_dimension_count=m, indices_dimension_count=q)
  return strategies.Case(
    desc,
    level,
    [x, i],
    lambda x, i, level: dml.gather_nd(x, i, feature_level=level, **kwargs),
    lambda: reference.gather_nd(x, i, **kwargs),
  )


def gather_nd_mutations(desc, level, draw):
  """GATHER_ND(1)'s own rules: the counts, the batch count, the tuple size, batch sizes."""
  n, m, q, b = (
    desc.input_tensor.dimension_count,
    desc.input_dimension_count,
    desc.indices_dimension_count,
    getattr(desc, "batch_dimension_count", 0),
  )
  yield (
    "input count",
    strategies.rebuild(desc, {"input_dimension_count": draw(st.sampled_from([0, n + 1]))}),
    "InputDimensionCount",
  )
  yield (
    "indices count",
    strategies.rebuild(desc, {"indices_dimension_count": draw(st.sampled_from([0, n + 1]))}),
    "IndicesDimensionCount",
  )
  # A batch count on a level without GATHER_ND1 is reported as the operator missing.
  no_nd1 = level < FeatureLevel.FL_3_0
  yield (
    "batch count",
    strategies.rebuild(desc, {"batch_dimension_count": min(m, q)}),
    ("DML_OPERATOR_TYPE" if no_nd1 else "BatchDimensionCount"),
  )
  t_bad = m - b + 1
  sizes = desc.indices_tensor.sizes[:-1] + (t_bad,)
  yield (
    "tuple size",
    strategies.rebuild(
      desc, {"indices_tensor": strategies.replace_tensor(desc.indices_tensor, sizes=sizes)}
    ),
    "IndicesTensor.Sizes",
  )
  if b:
    sizes = list(desc.indices_tensor.sizes)
    sizes[n - q] += 1
    yield (
      "batch sizes",
      strategies.rebuild(
        desc, {"indices_tensor": strategies.replace_tensor(desc.indices_tensor, sizes=tuple(sizes))}
      ),
      "IndicesTensor.Sizes",
    )


def _jnp_gather_nd(x, tuples, batch):
  """GATHER_ND with `batch` batch dimensions, the tuples indexing the dimensions after them."""
  count = tuples.shape[-1]
  coords = [sharding_cases.normalized(tuples[..., j], x.shape[batch + j]) for j in range(count)]
  if batch == 0:
    return x[tuple(coords)]
  lead = [
    jnp.arange(x.shape[d]).reshape((-1,) + (1,) * (tuples.ndim - 2 - d)) for d in range(batch)
  ]
  return x[tuple(lead + coords)]


def gather_nd_cases(n, rng):
  cases = []
  x = rng.standard_normal((n, 2 * n, n)).astype(np.float32)
  tuples = rng.integers(-3, 2 * n + 3, (n, 5, 1)).astype(np.int32)
  for shard in (0, 1, 2):
    cases.append(
      sharding_cases.Case(
        "GATHER_ND1",
        f"one batch dimension, sharded on axis {shard}",
        lambda a, b: dml.gather_nd(a, b, batch_dimension_count=1),
        lambda a, b: _jnp_gather_nd(a, b, 1),
        [(x, shard), (tuples, 0 if shard == 0 else None)],
        reference.gather_nd(x, tuples, batch_dimension_count=1),
      )
    )
  table = rng.standard_normal((2 * n, 3, 8)).astype(np.float32)
  pairs = np.stack(
    [rng.integers(-2 * n - 2, 2 * n + 2, (1, 4 * n)), rng.integers(-5, 5, (1, 4 * n))], axis=-1
  ).astype(np.int32)
  for shard, index_shard in ((0, None), (2, None), (None, 1), (0, 1)):
    cases.append(
      sharding_cases.Case(
        "GATHER_ND",
        f"pairs, table sharded on axis {shard}, tuples on axis {index_shard}",
        dml.gather_nd,
        lambda a, b: _jnp_gather_nd(a, b[0], 0)[None],
        [(table, shard), (pairs, index_shard)],
        reference.gather_nd(table, pairs),
      )
    )
  return cases


VALID = {"GATHER_ND": gather_nd_case, "GATHER_ND1": lambda: gather_nd_case(op="GATHER_ND1")}
MUTANTS = {"GATHER_ND": gather_nd_mutations, "GATHER_ND1": gather_nd_mutations}
SHARDED_CASES = gather_nd_cases
TRACING_CALLS = {
  "gather_nd": lambda k: dml.gather_nd(
    jnp.full((3, 5), k, jnp.int8), jnp.full((4, 1), -k, jnp.int32), batch_dimension_count=0
  ),
  "gather_nd1": lambda k: dml.gather_nd(
    jnp.full((3, 5), k, jnp.int8), jnp.full((3, 1), k, jnp.uint32), batch_dimension_count=1
  ),
}
BFLOAT16_CALLS = {
  "gather_nd": lambda x: dml.gather_nd(x, np.array([[1, 5], [3, 0]], np.int32)),
}
