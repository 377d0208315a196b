"""SCATTER_ND: the operator's own rules, its policies and pinned cases.

Its validation rules and their wording (the counts, the leading 1s, the tuple length, the
updates' rank and right-aligned sizes), its tables per feature level, the policies dml_jax
chose where DirectML leaves the result undefined (the last tuple wins; a tuple with a
coordinate out of range is dropped whole), checked mode, jit, vmap and grad against the
NumPy reference, and the reference against NumPy's advanced-index assignment. What every
operator shares is tested in the cross-cutting files under tests/.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import DmlValidationError, TensorDesc
from dml_jax._src import conformance, reference
from dml_jax._src.fixtures import get_fixture
from tests import sharding_cases, strategies
from tests.helpers import (
  CROSS_CHECK_SEEDS,
  assert_bits_equal,
  assert_rejected,
  assert_valid,
  explain_section,
  random_data,
  random_shape,
)

T = dml.TensorDesc


def desc(input_sizes, indices_sizes, updates_sizes, data="FLOAT32", index="UINT32", **counts):
  return dml.ScatterNdDesc(
    T(data, input_sizes),
    T(index, indices_sizes),
    T(counts.pop("updates", data), updates_sizes),
    **counts,
  )


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
  ],
)
def test_dimension_counts_in_1_to_n(field, counts, found):
  d = desc((1, 3, 4), (1, 2, 1), (1, 2, 4), **counts)
  assert_rejected(d, "6_4", field, "must be in [1, DimensionCount] = [1, 3]", found)


def test_dimension_count_n_is_accepted():
  # The page writes the counts' range as [1, n); like GATHER_ND, n itself is accepted.
  assert_valid(desc((2, 3), (2, 1), (2, 3), input_dimension_count=2), "6_4")


@pytest.mark.parametrize(
  "input_sizes, indices_sizes, field, found",
  [
    ((2, 3, 4), (1, 2, 1), "InputTensor.Sizes", "{2,3,4}"),
    ((1, 3, 4), (2, 2, 1), "IndicesTensor.Sizes", "{2,2,1}"),
  ],
)
def test_leading_dimensions_must_be_1(input_sizes, indices_sizes, field, found):
  d = desc(
    input_sizes, indices_sizes, (1, 2, 4), input_dimension_count=2, indices_dimension_count=2
  )
  assert_rejected(
    d, "6_4", field, "dimensions before the trailing 2 meaningful ones must be 1", found
  )


def test_index_tuple_length_at_most_input_dimension_count():
  d = desc((1, 3, 4), (1, 2, 3), (1, 1, 2), input_dimension_count=2)
  assert_rejected(
    d,
    "6_4",
    "IndicesTensor.Sizes",
    "the last size is the index tuple length and must be in [1, InputDimensionCount] = [1, 2]",
    "3",
  )


def test_updates_rank_must_fit():
  # k = (q - 1) + (m - t) = 2 + 2 = 4 > n = 3
  d = desc((2, 3, 4), (2, 2, 1), (2, 2, 3))
  assert_rejected(
    d,
    "6_4",
    "UpdatesTensor.DimensionCount",
    "the updates' meaningful dimensions (IndicesDimensionCount - 1 + InputDimensionCount - t = 4)"
    " must fit in DimensionCount 3",
    "4",
  )


def test_updates_sizes_are_right_aligned_exactly():
  d = desc(
    (3, 4, 5, 6, 7),
    (1, 1, 1, 2, 3),
    (1, 2, 5, 6, 7),
    input_dimension_count=5,
    indices_dimension_count=3,
  )
  assert_rejected(
    d,
    "6_4",
    "UpdatesTensor.Sizes",
    "must be exactly {1,1,2,6,7} (IndicesTensor.Sizes[n - q:-1] ++ InputTensor.Sizes[n - m + t:],"
    " right-aligned)",
    "{1,2,5,6,7}",
  )
  ok = desc(
    (3, 4, 5, 6, 7),
    (1, 1, 1, 2, 3),
    (1, 1, 2, 6, 7),
    input_dimension_count=5,
    indices_dimension_count=3,
  )
  assert_valid(ok, "6_4")
  assert ok.output == T("FLOAT32", (3, 4, 5, 6, 7))
  assert ok.expected_updates_sizes() == reference.scatter_nd_updates_sizes(
    (3, 4, 5, 6, 7), (1, 1, 1, 2, 3), input_dimension_count=5, indices_dimension_count=3
  )


def test_updates_have_the_input_data_type_and_rank():
  assert_rejected(
    desc((2, 3), (2, 1), (2, 3), updates="INT32"),
    "6_4",
    "UpdatesTensor.DataType",
    "must equal InputTensor.DataType (FLOAT32); SCATTER_ND never converts types",
    "INT32",
  )
  assert_rejected(
    desc((2, 3), (2, 1), (1, 2, 3)),
    "6_4",
    "UpdatesTensor.DimensionCount",
    "must equal InputTensor.DimensionCount (2)",
    "3",
  )


def test_tables_per_feature_level():
  sizes = ((1, 1, 2, 3), (1, 1, 2, 1), (1, 1, 2, 3))
  four = lambda **kw: desc(*sizes, input_dimension_count=2, indices_dimension_count=2, **kw)
  assert_valid(four(), "2_1")
  assert_rejected(four(), "2_0", "DML_OPERATOR_TYPE", "exists from FL 2_1 on", "FL 2_0")
  assert_valid(four(data="UINT8"), "2_1")
  assert_rejected(
    desc((2, 3), (2, 1), (2, 3)), "2_1", "InputTensor.DimensionCount", "supports 4", "2"
  )
  assert_rejected(
    four(index="INT64"), "2_1", "IndicesTensor.DataType", "must be one of UINT32", "INT64"
  )
  assert_valid(desc((2, 3), (2, 1), (2, 3), index="INT64"), "3_0")
  assert_rejected(four(data="INT64"), "3_0", "InputTensor.DataType", "must be one of", "INT64")
  assert_valid(four(data="FLOAT64"), "4_1")


def test_functional_scatter_nd_validates_like_the_descriptor():
  x, i, u = np.zeros((2, 3), np.float32), np.zeros((2, 1), np.uint32), np.zeros((2, 2), np.float32)
  with pytest.raises(DmlValidationError) as info:
    dml.scatter_nd(x, i, u)
  assert info.value.violations == desc((2, 3), (2, 1), (2, 2)).violations() != ()


def test_explanation_derives_the_updates_sizes():
  text = dml.explain(conformance.descriptor_for(get_fixture("scatter_nd/updates-sizes")))
  lines = explain_section(text, "Output:")
  assert (
    "Tuple length t = X[-1] = 3: each index tuple holds 3 coordinate(s) into I[:t] = {3,4,5}."
    in lines
  )
  assert (
    "Logical updates = X[:-1] ++ I[t:] = {1,2} ++ {6,7} = {1,2,6,7} (k = 4 dimension(s))."
  ) in lines
  assert (
    "Right-aligned into n = 5 dimensions: UpdatesTensor.Sizes must be {1,1,2,6,7} (found"
    " {1,1,2,6,7})."
  ) in lines


# =========================================================================== #
# The policies: the last tuple wins; a tuple out of range is dropped whole
# =========================================================================== #


def test_the_last_tuple_wins_and_out_of_range_tuples_are_dropped():
  x = np.full((3, 2, 2), -1, np.int8)
  i = np.array([[0, 1], [2, -1], [0, 1], [1, 2], [-4, 0], [1, 0]], np.int32).reshape(1, 6, 2)
  u = np.arange(12, dtype=np.int8).reshape(1, 6, 2)
  want = x.copy()
  want[0, 1] = [4, 5]  # tuple 2 wins over tuple 0
  want[2, 1] = [2, 3]
  want[1, 0] = [10, 11]  # tuples 3 ([1, 2]) and 4 ([-4, 0]) have a coordinate out of range
  for fn in (dml.scatter_nd, jax.jit(dml.scatter_nd)):
    assert_bits_equal(fn(x, i, u), want)
  assert_bits_equal(reference.scatter_nd(x, i, u), want)


def test_unsigned_and_64_bit_coordinates_never_wrap(x64):
  x = np.zeros((4, 1), np.float32)
  u = np.ones((3, 1), np.float32)
  for i in (
    np.array([[2**32 + 1], [2**63], [3]], np.uint64),
    np.array([[2**32 + 1], [-(2**32) + 1], [3]], np.int64),
  ):
    assert_bits_equal(dml.scatter_nd(x, i, u), np.array([[0], [0], [0], [1]], np.float32))
  i = np.array([[2**32 - 1], [0], [2**32 - 4]], np.uint32)  # never -1 or -4
  assert_bits_equal(dml.scatter_nd(x, i, u), np.array([[1], [0], [0], [0]], np.float32))


def test_many_duplicate_tuples_give_the_oracle_every_time():
  """4096 tuples into 64 rows, run 10 times: on GPUs XLA's own scatter picks a different
  winner from run to run; dml_jax must not."""
  rng = np.random.default_rng(11)
  x = rng.standard_normal((1, 64, 8)).astype(np.float32)
  i = rng.integers(-64, 64, (1, 4096, 1)).astype(np.int32)
  u = rng.standard_normal((1, 4096, 8)).astype(np.float32)
  want = reference.scatter_nd(x, i, u, input_dimension_count=2, indices_dimension_count=2)
  fn = jax.jit(
    lambda x, i, u: dml.scatter_nd(x, i, u, input_dimension_count=2, indices_dimension_count=2)
  )
  args = jax.device_put((x, i, u))
  for _ in range(10):
    assert_bits_equal(fn(*args), want)


# =========================================================================== #
# Checked mode
# =========================================================================== #


def scatter_pairs(x, i, u):
  return dml.scatter_nd(x, i, u)


def test_checked_reports_an_out_of_range_coordinate_inside_jit():
  x = np.zeros((1, 2, 3), np.float32)
  i = np.array([[[0, 0], [1, 3]]], np.int64)  # tuple 1, coordinate 1 indexes dimension 2
  f = jax.jit(
    lambda x, i, u: dml.scatter_nd(x, i, u, input_dimension_count=2, indices_dimension_count=2)
  )
  with pytest.raises(
    dml.DmlIndexError,
    match=r"^dml\.SCATTER_ND: IndicesTensor\[0, 1, 1\] = 3 is out of range for"
    r" InputTensor\.Sizes\[2\] = 3 \(signed indices must be in \[-3, 3\)\)$",
  ):
    dml.checked(f)(x, i, np.ones((1, 1, 2), np.float32))


def test_checked_reports_a_duplicate_target_inside_jit():
  x = np.zeros((1, 3, 2), np.float32)
  i = np.array([[[2], [0], [-1]]], np.int32)
  with pytest.raises(
    dml.DmlIndexError,
    match=r"^dml\.SCATTER_ND: IndicesTensor\[0, 0, :\] targets OutputTensor\[0, 2, :\], which a"
    r" later update, IndicesTensor\[0, 2, :\], also writes \(DirectML leaves duplicate targets"
    r" undefined; dml_jax keeps the last\)$",
  ):
    dml.checked(
      jax.jit(
        lambda x, i, u: dml.scatter_nd(x, i, u, input_dimension_count=2, indices_dimension_count=2)
      )
    )(x, i, np.ones((1, 3, 2), np.float32))


def test_checked_passes_distinct_tuples():
  x = np.zeros((3, 2), np.float32)
  i, u = np.array([[2, 1], [0, -1]], np.int32).reshape(2, 2), np.array([[5], [6]], np.float32)
  f = lambda x, i, u: dml.scatter_nd(x, i, u, indices_dimension_count=2)
  assert_bits_equal(
    dml.checked(jax.jit(f))(x, i, u.reshape(1, 2)), reference.scatter_nd(x, i, u.reshape(1, 2))
  )


# =========================================================================== #
# jit, vmap and grad against the reference, on drawn cases
# =========================================================================== #


def reference_gradients(x, i, u, counts, w):
  """d sum(scatter_nd(x, i, u) * w) / dx and / du, from the reference alone."""
  tags_x = np.arange(x.size, dtype=np.int64).reshape(x.shape)
  tags_u = np.arange(x.size, x.size + u.size, dtype=np.int64).reshape(u.shape)
  source = reference.scatter_nd(tags_x, i, tags_u, **counts)
  total = np.zeros(x.size + u.size, np.float32)
  np.add.at(total, source.ravel(), w.ravel())
  return total[: x.size].reshape(x.shape), total[x.size :].reshape(u.shape)


@settings(max_examples=12)
@given(data=st.data())
def test_jit_vmap_and_grad_match_the_reference(data):
  case = data.draw(scatter_nd_case(), label="case")
  x, i, u = case.arrays
  counts = dict(
    input_dimension_count=case.desc.input_dimension_count,
    indices_dimension_count=case.desc.indices_dimension_count,
  )
  with jax.enable_x64(x.dtype.itemsize == 8 or i.dtype.itemsize == 8):
    expected = case.expected()
    fn = lambda x, i, u: dml.scatter_nd(x, i, u, feature_level=case.level, **counts)
    assert_bits_equal(jax.jit(fn)(x, i, u), expected, context="jit")
    other = np.flip(u).copy()
    batched = jax.vmap(fn, in_axes=(0, None, 0))(np.stack([x, x]), i, np.stack([u, other]))
    per_example = [expected, reference.scatter_nd(x, i, other, **counts)]
    assert_bits_equal(batched, np.stack(per_example), context="vmap")
    if x.dtype == np.float32:
      w = np.random.default_rng(1).integers(-4, 5, x.shape).astype(np.float32)
      grads = jax.jit(jax.grad(lambda x, u: jnp.sum(fn(x, i, u) * w), argnums=(0, 1)))(x, u)
      for got, want, name in zip(grads, reference_gradients(x, i, u, counts, w), "xu", strict=True):
        assert_bits_equal(got, want, context=f"grad wrt {name}")


def test_grad_follows_the_policy():
  x = np.zeros((3, 2), np.float32)
  i = np.array([[1], [1], [5]], np.uint32)  # tuple 0 loses to tuple 1; tuple 2 is dropped
  w = np.arange(1, 7, dtype=np.float32).reshape(3, 2)
  f = lambda x, u: jnp.sum(dml.scatter_nd(x, i.reshape(3, 1), u, input_dimension_count=2) * w)
  gx, gu = jax.grad(f, argnums=(0, 1))(x, np.ones((3, 2), np.float32))
  assert_bits_equal(gx, np.array([[1, 2], [0, 0], [5, 6]], np.float32))
  assert_bits_equal(gu, np.array([[0, 0], [3, 4], [0, 0]], np.float32))


# =========================================================================== #
# The reference against NumPy
# =========================================================================== #


@pytest.mark.parametrize("seed", CROSS_CHECK_SEEDS)
def test_reference_matches_advanced_index_assignment_for_distinct_tuples(seed):
  rng = np.random.default_rng(seed)
  m = int(rng.integers(1, 4))
  logical_input = random_shape(rng, m)
  t = int(rng.integers(1, m + 1))
  indexed = logical_input[:t]
  count = int(rng.integers(1, int(np.prod(indexed)) + 1))
  flat = rng.permutation(int(np.prod(indexed)))[:count]  # distinct targets
  tuples = np.stack(np.unravel_index(flat, indexed), axis=-1).astype(np.int64)
  x = random_data(rng, logical_input)
  u = random_data(rng, (count,) + logical_input[t:]).astype(x.dtype)
  want = x.copy()
  want[tuple(tuples[:, j] for j in range(t))] = u
  n = max(m, 2)
  pad = lambda a: a.reshape((1,) * (n - a.ndim) + a.shape)
  got = reference.scatter_nd(
    pad(x), pad(tuples), pad(u), input_dimension_count=m, indices_dimension_count=2
  )
  assert_bits_equal(got, pad(want))


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def scatter_nd_case(draw):
  """SCATTER_ND: counts DirectML accepts, leading 1s outside them, tuples that repeat and
  leave the input."""
  level = draw(strategies.levels("SCATTER_ND"))
  table = strategies.table_at(dml.ScatterNdDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  index_type = draw(st.sampled_from(table["IndicesTensor"].data_types))
  m = draw(st.integers(1, n))
  t = draw(st.integers(1, m))
  q = draw(st.integers(1, min(n, n + 1 - (m - t))))  # q - 1 + m - t <= n
  logical_in = strategies.draw_sizes(draw, m, max_elements=64)
  logical_idx = strategies.draw_sizes(draw, q - 1, max_elements=8) + (t,)
  in_sizes = (1,) * (n - m) + logical_in
  idx_sizes = (1,) * (n - q) + logical_idx
  logical_updates = logical_idx[:-1] + logical_in[t:]
  upd_sizes = (1,) * (n - len(logical_updates)) + logical_updates
  x = strategies.draw_data(draw, data_type, in_sizes)
  i = strategies.draw_indices(draw, index_type, idx_sizes, lambda pos: logical_in[pos[-1]])
  u = strategies.draw_data(draw, data_type, upd_sizes)
  counts = dict(input_dimension_count=m, indices_dimension_count=q)
  desc = dml.ScatterNdDesc(
    TensorDesc(data_type, in_sizes),
    TensorDesc(index_type, idx_sizes),
    TensorDesc(data_type, upd_sizes),
    **counts,
  )
  return strategies.Case(
    desc,
    level,
    [x, i, u],
    lambda x, i, u, level: dml.scatter_nd(x, i, u, feature_level=level, **counts),
    lambda: reference.scatter_nd(x, i, u, **counts),
  )


def scatter_nd_mutations(desc, level, draw):
  """SCATTER_ND's own rules: the updates', counts out of range, tuples too long."""
  del level
  yield from strategies.updates_mutations(desc, draw)
  indices = desc.indices_tensor
  n, m = desc.input_tensor.dimension_count, desc.input_dimension_count
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
  yield (
    "tuple size",
    strategies.rebuild(
      desc,
      {"indices_tensor": strategies.replace_tensor(indices, sizes=indices.sizes[:-1] + (m + 1,))},
    ),
    "IndicesTensor.Sizes",
  )


def scatter_nd_cases(n, rng):
  cases = []
  x = rng.standard_normal((2 * n, 8)).astype(np.float32)
  rows = rng.permutation(2 * n)[:n].astype(np.int32).reshape(n, 1)
  updates = rng.standard_normal((n, 8)).astype(np.float32)

  def jnp_scatter(x, i, u):
    return x.at[i[:, 0]].set(u)

  # Rows of 1 KiB: XLA:CPU's pull (each output row read once, from its winning update or the
  # input) on one device.
  wide = rng.standard_normal((2 * n, 256)).astype(np.float32)
  wide_updates = rng.standard_normal((n, 256)).astype(np.float32)
  for shard in (0, 1):
    cases.append(
      sharding_cases.Case(
        "SCATTER_ND",
        f"1 KiB rows, input and updates sharded on axis {shard}",
        lambda x, i, u: dml.scatter_nd(x, i, u),
        jnp_scatter,
        [(wide, shard), (rows, None), (wide_updates, 1 if shard == 1 else None)],
        reference.scatter_nd(wide, rows, wide_updates),
      )
    )
  # Rows of 1 KiB over two dimensions, which the pull views as one.
  deep = rng.standard_normal((2 * n, n, 64)).astype(np.float32)
  deep_updates = rng.standard_normal((n, n, 64)).astype(np.float32)
  for shard in (1, 2):
    cases.append(
      sharding_cases.Case(
        "SCATTER_ND",
        f"1 KiB rows of shape {deep.shape[1:]}, input and updates sharded on axis {shard}",
        lambda x, i, u: dml.scatter_nd(x, i, u, indices_dimension_count=2),
        lambda x, i, u: x.at[i[0, :, 0]].set(u),
        [(deep, shard), (rows[None], None), (deep_updates, shard)],
        reference.scatter_nd(deep, rows[None], deep_updates, indices_dimension_count=2),
      )
    )
  for shard, index_shard in ((0, None), (1, None), (None, 0), (0, 0)):
    cases.append(
      sharding_cases.Case(
        "SCATTER_ND",
        f"rows, input sharded on axis {shard}, tuples on axis {index_shard}",
        lambda x, i, u: dml.scatter_nd(x, i, u),
        jnp_scatter,
        [(x, shard), (rows, index_shard), (updates, 1 if shard == 1 else index_shard)],
        reference.scatter_nd(x, rows, updates),
        settles_across_devices=index_shard is not None,
      )
    )
  return cases


VALID = {"SCATTER_ND": scatter_nd_case}
MUTANTS = {"SCATTER_ND": scatter_nd_mutations}
SHARDED_CASES = scatter_nd_cases
BFLOAT16_CALLS = {
  "scatter_nd": lambda x: dml.scatter_nd(x, np.array([[2], [0]], np.int32), x[:2]),
}
