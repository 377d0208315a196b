"""SCATTER_ELEMENTS (= SCATTER): the operator's own rules, its policies and pinned cases.

Its validation rules and their wording, its tables per feature level (from 2_0), the alias
SCATTER, the policies dml_jax chose where DirectML leaves the result undefined (the last
update wins; out-of-range updates are dropped), checked mode, jit, vmap and grad against the
NumPy reference, and the reference against np.put_along_axis. What every operator shares is
tested in the cross-cutting files under tests/.
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
from dml_jax._src import reference, registry
from tests import sharding_cases, strategies
from tests.helpers import (
  CROSS_CHECK_SEEDS,
  assert_bits_equal,
  assert_rejected,
  assert_valid,
  braces,
  explain_section,
  random_data,
  random_shape,
)

T = dml.TensorDesc


def desc(input_sizes=(3, 3), indices_sizes=(2, 3), updates_sizes=None, *, axis=0, **types):
  return dml.ScatterElementsDesc(
    T(types.get("data", "FLOAT32"), input_sizes),
    T(types.get("index", "UINT32"), indices_sizes),
    T(types.get("updates", types.get("data", "FLOAT32")), updates_sizes or indices_sizes),
    axis=axis,
  )


def scatter_rows(x, i, u):
  return dml.scatter_elements(x, i, u, axis=0)


# =========================================================================== #
# Validation
# =========================================================================== #


def test_updates_have_the_input_data_type():
  assert_rejected(
    desc(updates="FLOAT16"),
    "6_4",
    "UpdatesTensor.DataType",
    "must equal InputTensor.DataType (FLOAT32); SCATTER never converts types",
    "FLOAT16",
  )


def test_updates_have_the_indices_sizes():
  assert_rejected(
    desc(updates_sizes=(2, 2)),
    "6_4",
    "UpdatesTensor.Sizes",
    "must equal IndicesTensor.Sizes {2,3}: one update per index",
    "{2,2}",
  )


@pytest.mark.parametrize("indices_sizes, axis, dimension", [((2, 4), 0, 1), ((1, 3), 1, 0)])
def test_indices_sizes_equal_the_input_off_axis(indices_sizes, axis, dimension):
  assert_rejected(
    desc(indices_sizes=indices_sizes, axis=axis),
    "6_4",
    "IndicesTensor.Sizes",
    f"must equal InputTensor.Sizes {{3,3}} in every dimension but Axis ({axis});"
    f" dimension {dimension} differs",
    braces(indices_sizes),
  )


@pytest.mark.parametrize("size_on_axis", [1, 3, 7])
def test_indices_size_on_axis_is_free_and_the_output_is_the_input(size_on_axis):
  d = desc(indices_sizes=(size_on_axis, 3))
  assert_valid(d, "6_4")
  assert d.output == T("FLOAT32", (3, 3))


def test_every_tensor_has_one_rank():
  assert_rejected(
    desc(updates_sizes=(1, 2, 3)),
    "6_4",
    "UpdatesTensor.DimensionCount",
    "must equal InputTensor.DimensionCount (2); pad lower-rank tensors with leading 1s",
    "3",
  )


def test_axis_in_range():
  assert_rejected(desc(axis=2), "6_4", "Axis", "must be in [0, DimensionCount) = [0, 2)", "2")


def test_a_given_output_has_the_input_sizes():
  d = dml.ScatterElementsDesc(
    T("FLOAT32", (3, 3)),
    T("UINT32", (2, 3)),
    T("FLOAT32", (2, 3)),
    axis=0,
    output_tensor=T("FLOAT32", (2, 3)),
  )
  assert_rejected(d, "6_4", "OutputTensor.Sizes", "must equal InputTensor.Sizes {3,3}", "{2,3}")


def test_tables_per_feature_level():
  four = dict(input_sizes=(1, 1, 3, 3), indices_sizes=(1, 1, 3, 2), axis=3)
  assert_rejected(
    desc(**four), "1_0", "DML_OPERATOR_TYPE", "exists from FL 2_0 on", "FL 1_0"
  )  # the page says 1_0; the operator came with 2_0
  assert_valid(desc(**four), "2_0")
  assert_valid(desc(**four, data="FLOAT16"), "2_0")
  assert_rejected(
    desc(**four, data="INT32"),
    "2_0",
    "InputTensor.DataType",
    "must be one of FLOAT32, FLOAT16",
    "INT32",
    "INT32 is supported here from FL 2_1",
  )
  assert_valid(desc(**four, data="INT8"), "2_1")
  assert_rejected(
    desc(), "2_1", "InputTensor.DimensionCount", "supports 4 dimensions", "2", "from FL 3_0"
  )
  assert_rejected(
    desc(**four, index="INT32"),
    "2_1",
    "IndicesTensor.DataType",
    "must be one of UINT32",
    "INT32",
    "negative (signed) indices need FL >= 3_0",
  )
  assert_valid(desc(index="INT64"), "3_0")
  assert_rejected(desc(data="FLOAT64"), "3_0", "InputTensor.DataType", "must be one of", "FLOAT64")
  assert_valid(desc(data="UINT64", index="UINT64"), "4_1")


def test_scatter_is_the_same_operator():
  assert dml.ScatterDesc is dml.ScatterElementsDesc
  for name in ("SCATTER", "DML_OPERATOR_SCATTER", "scatter", "SCATTER_ELEMENTS"):
    assert registry.lookup(name) is dml.ScatterElementsDesc
  assert "SCATTER" not in registry.operators()  # one operator, listed once
  document = {
    "InputTensor": {"DataType": "FLOAT32", "Sizes": [3, 3]},
    "IndicesTensor": {"DataType": "UINT32", "Sizes": [2, 3]},
    "UpdatesTensor": {"DataType": "FLOAT32", "Sizes": [2, 3]},
    "OutputTensor": {"DataType": "FLOAT32", "Sizes": [3, 3]},
    "Axis": 0,
  }
  found = registry.lookup("DML_OPERATOR_SCATTER").from_dml(document)
  assert found == dml.ScatterDesc(
    T("FLOAT32", (3, 3)),
    T("UINT32", (2, 3)),
    T("FLOAT32", (2, 3)),
    axis=0,
    output_tensor=T("FLOAT32", (3, 3)),
  )
  assert found.validate() is found and found.output == T("FLOAT32", (3, 3))


def test_functional_scatter_elements_validates_like_the_descriptor():
  x, i, u = np.zeros((2, 3), np.float32), np.zeros((2, 3), np.int32), np.zeros((2, 3), np.float16)
  with pytest.raises(DmlValidationError) as info:
    dml.scatter_elements(x, i, u, axis=1, feature_level="2_1")
  d = dml.ScatterElementsDesc(  # read at the 4 dimensions FL 2_1 takes
    T("FLOAT32", (1, 1, 2, 3)), T("INT32", (1, 1, 2, 3)), T("FLOAT16", (1, 1, 2, 3)), axis=3
  )
  assert info.value.violations == d.violations("2_1") != ()


def test_explanation_names_the_policy():
  lines = explain_section(dml.explain(desc(indices_sizes=(5, 3))), "Output:")
  assert lines[1] == (
    "OutputTensor.Sizes = InputTensor.Sizes = {3,3}; OutputTensor.DataType ="
    " InputTensor.DataType = FLOAT32 (UpdatesTensor must have it too, not the index type UINT32)."
  )
  assert "on Axis 0 it is free: 5 update(s) per lane of 3 element(s)." in lines[3]
  assert "dml_jax keeps the last update in row-major order of UpdatesTensor" in lines[4]


# =========================================================================== #
# The policies: the last update wins; out-of-range updates are dropped
# =========================================================================== #


def test_the_last_update_in_row_major_order_wins():
  x = np.zeros((2, 4), np.int16)
  i = np.array([[1, 1, 3, 1], [0, 0, 0, 2]], np.uint32)
  u = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.int16)
  want = np.array([[0, 4, 0, 3], [7, 0, 8, 0]], np.int16)
  for fn in (dml.scatter_elements, jax.jit(dml.scatter_elements, static_argnames="axis")):
    assert_bits_equal(fn(x, i, u, axis=1), want)
  assert_bits_equal(reference.scatter_elements(x, i, u, axis=1), want)


@pytest.mark.parametrize(
  "dtype, values, written",
  [
    (np.int32, [-1, -5, 5, -6, 2**31 - 1, -(2**31)], {4: 0, 0: 1}),  # -5 is element 0
    (np.uint32, [2**32 - 1, 5, 2**32 - 5, 1, 4, 0], {1: 3, 4: 4, 0: 5}),  # never wraps
  ],
)
def test_out_of_range_updates_are_dropped(dtype, values, written):
  x = np.full(5, -1.0, np.float32)
  u = np.arange(len(values), dtype=np.float32)
  want = x.copy()
  for element, update in written.items():
    want[element] = update
  out = dml.scatter_elements(x, np.array(values, dtype), u, axis=0)
  assert_bits_equal(out, want)
  assert_bits_equal(reference.scatter_elements(x, np.array(values, dtype), u, axis=0), want)


def test_a_dropped_update_never_wins_a_duplicate():
  x = np.zeros(4, np.float32)
  i = np.array([2, 6, -5, 2 - 4], np.int32)  # 6 and -5 are out of range; -2 is element 2
  out = dml.scatter_elements(x, i, np.array([1, 2, 3, 4], np.float32), axis=0)
  assert_bits_equal(out, np.array([0, 0, 4, 0], np.float32))
  out = dml.scatter_elements(x, i[:3], np.array([1, 2, 3], np.float32), axis=0)
  assert_bits_equal(out, np.array([0, 0, 1, 0], np.float32))


@pytest.mark.parametrize("value", [2**32 + 1, 2**32, -(2**32) + 1, 2**63 - 1, -(2**63)])
def test_64_bit_indices_are_not_truncated(x64, value):
  # Truncated to 32 bits these would write element 1 or 0; they are out of range: dropped.
  x = np.array([10, 11, 12, 13], np.int64)
  out = jax.jit(scatter_rows)(x, np.array([value], np.int64), np.array([99], np.int64))
  assert_bits_equal(out, x)
  out = scatter_rows(x, np.array([2**64 - 3], np.uint64), np.array([99], np.int64))
  assert_bits_equal(out, x)


def test_many_duplicates_give_the_oracle_every_time():
  """Lanes of 16 elements written by 512 updates each, run 10 times: on GPUs XLA's own
  scatter picks a different winner from run to run; dml_jax must not."""
  rng = np.random.default_rng(7)
  x = rng.standard_normal((64, 16)).astype(np.float32)
  i = rng.integers(-16, 16, (64, 512)).astype(np.int32)
  u = rng.standard_normal((64, 512)).astype(np.float32)
  want = reference.scatter_elements(x, i, u, axis=1)
  fn = jax.jit(lambda x, i, u: dml.scatter_elements(x, i, u, axis=1))
  args = jax.device_put((x, i, u))
  for _ in range(10):
    assert_bits_equal(fn(*args), want)


# =========================================================================== #
# Checked mode
# =========================================================================== #


def test_checked_reports_an_out_of_range_index_inside_jit():
  x = np.zeros((3, 2), np.float32)
  with pytest.raises(
    dml.DmlIndexError,
    match=r"^dml\.SCATTER_ELEMENTS: IndicesTensor\[1, 1\] = -4 is out of range for"
    r" InputTensor\.Sizes\[0\] = 3 \(signed indices must be in \[-3, 3\)\)$",
  ):
    dml.checked(jax.jit(scatter_rows))(
      x, np.array([[0, 1], [2, -4]], np.int32), np.ones((2, 2), np.float32)
    )


def test_checked_reports_a_duplicate_target_inside_jit():
  x = np.zeros((3, 2), np.float32)
  i = np.array([[0, 1], [2, 0], [1, -3]], np.int64)  # column 1 writes rows 1, 0 and 0
  with pytest.raises(
    dml.DmlIndexError,
    match=r"^dml\.SCATTER_ELEMENTS: UpdatesTensor\[1, 1\] targets OutputTensor\[0, 1\], which a"
    r" later update, UpdatesTensor\[2, 1\], also writes \(DirectML leaves duplicate targets"
    r" undefined; dml_jax keeps the last\)$",
  ):
    dml.checked(jax.jit(scatter_rows))(x, i, np.ones((3, 2), np.float32))


def test_checked_passes_distinct_targets_and_gives_the_same_result():
  x = np.zeros((3, 2), np.float32)
  i, u = np.array([[2, 1], [0, 2]], np.uint32), np.arange(4, dtype=np.float32).reshape(2, 2)
  assert_bits_equal(
    dml.checked(jax.jit(scatter_rows))(x, i, u), reference.scatter_elements(x, i, u, axis=0)
  )


def test_checked_reports_under_vmap():
  x = np.zeros((2, 4), np.float32)
  i = np.array([[0, 1], [3, 3]], np.uint32)
  f = jax.vmap(lambda x, i, u: dml.scatter_elements(x, i, u, axis=0))
  with pytest.raises(dml.DmlIndexError, match=r"UpdatesTensor\[0\] targets OutputTensor\[3\]"):
    dml.checked(f)(x, i, np.ones((2, 2), np.float32))


# =========================================================================== #
# jit, vmap and grad against the reference, on drawn cases
# =========================================================================== #


def reference_gradients(x, i, u, axis, w):
  """d sum(scatter(x, i, u) * w) / dx and / du, from the reference alone: run on inputs
  tagged with their positions, each output element names its source."""
  tags_x = np.arange(x.size, dtype=np.int64).reshape(x.shape)
  tags_u = np.arange(x.size, x.size + u.size, dtype=np.int64).reshape(u.shape)
  source = reference.scatter_elements(tags_x, i, tags_u, axis=axis)
  total = np.zeros(x.size + u.size, np.float32)
  np.add.at(total, source.ravel(), w.ravel())
  return total[: x.size].reshape(x.shape), total[x.size :].reshape(u.shape)


@settings(max_examples=12)
@given(data=st.data())
def test_jit_vmap_and_grad_match_the_reference(data):
  case = data.draw(scatter_elements_case(), label="case")
  x, i, u = case.arrays
  axis = case.desc.axis
  with jax.enable_x64(x.dtype.itemsize == 8 or i.dtype.itemsize == 8):
    expected = case.expected()
    fn = lambda x, i, u: dml.scatter_elements(x, i, u, axis=axis, feature_level=case.level)
    assert_bits_equal(jax.jit(fn)(x, i, u), expected, context="jit")
    other = np.flip(u).copy()
    batched = jax.vmap(fn, in_axes=(None, None, 0))(x, i, np.stack([u, other]))
    per_example = [expected, reference.scatter_elements(x, i, other, axis=axis)]
    assert_bits_equal(batched, np.stack(per_example), context="vmap")
    if x.dtype == np.float32:
      w = np.random.default_rng(1).integers(-4, 5, x.shape).astype(np.float32)
      grads = jax.jit(jax.grad(lambda x, u: jnp.sum(fn(x, i, u) * w), argnums=(0, 1)))(x, u)
      for got, want, name in zip(grads, reference_gradients(x, i, u, axis, w), "xu", strict=True):
        assert_bits_equal(got, want, context=f"grad wrt {name}")


def test_grad_follows_the_policy():
  x = np.zeros(4, np.float32)
  i = np.array([1, 3, 1, 7], np.uint32)  # update 0 loses to update 2; update 3 is dropped
  w = np.array([1, 2, 3, 4], np.float32)
  gx, gu = jax.grad(lambda x, u: jnp.sum(scatter_rows(x, i, u) * w), argnums=(0, 1))(x, x)
  assert_bits_equal(gx, np.array([1, 0, 3, 0], np.float32))  # 0 where an update lands
  assert_bits_equal(gu, np.array([0, 4, 2, 0], np.float32))  # winners read their target


# =========================================================================== #
# The reference against NumPy
# =========================================================================== #


@pytest.mark.parametrize("seed", CROSS_CHECK_SEEDS)
def test_reference_matches_put_along_axis_for_distinct_targets(seed):
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 5))
  shape = random_shape(rng, rank)
  axis = int(rng.integers(rank))
  x = random_data(rng, shape)
  count = int(rng.integers(1, shape[axis] + 1))
  # Distinct targets in every lane: the first `count` of a random permutation, some negative.
  order = np.argsort(rng.random(shape), axis=axis).take(np.arange(count), axis=axis)
  i = np.where(rng.random(order.shape) < 0.5, order - shape[axis], order).astype(np.int32)
  u = random_data(rng, order.shape).astype(x.dtype)
  want = x.copy()
  np.put_along_axis(want, order, u, axis=axis)
  assert_bits_equal(reference.scatter_elements(x, i, u, axis=axis), want)


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def scatter_elements_case(draw):
  """SCATTER_ELEMENTS: small lanes, so that the indices (in range, negative, past either end,
  extreme) repeat targets often."""
  level = draw(strategies.levels("SCATTER_ELEMENTS"))
  table = strategies.table_at(dml.ScatterElementsDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  index_type = draw(st.sampled_from(table["IndicesTensor"].data_types))
  sizes = strategies.draw_sizes(draw, n)
  axis = draw(st.integers(0, n - 1))
  index_sizes = sizes[:axis] + (draw(st.integers(1, 5)),) + sizes[axis + 1 :]
  x = strategies.draw_data(draw, data_type, sizes)
  i = strategies.draw_indices(draw, index_type, index_sizes, lambda pos: sizes[axis])
  u = strategies.draw_data(draw, data_type, index_sizes)
  desc = dml.ScatterElementsDesc(
    TensorDesc(data_type, sizes),
    TensorDesc(index_type, index_sizes),
    TensorDesc(data_type, index_sizes),
    axis=axis,
  )
  return strategies.Case(
    desc,
    level,
    [x, i, u],
    lambda x, i, u, level: dml.scatter_elements(x, i, u, axis=axis, feature_level=level),
    lambda: reference.scatter_elements(x, i, u, axis=axis),
  )


def scatter_elements_mutations(desc, level, draw):
  """SCATTER_ELEMENTS's own rules: the updates', and indices of the wrong sizes off the axis."""
  del level
  yield from strategies.updates_mutations(desc, draw)
  indices, updates = desc.indices_tensor, desc.updates_tensor
  n = desc.input_tensor.dimension_count
  others = [d for d in range(n) if d != desc.axis]
  if others:
    d = draw(st.sampled_from(others))
    sizes = list(indices.sizes)
    sizes[d] += 1
    changed = strategies.replace_tensor(indices, sizes=tuple(sizes))
    yield (
      "indices sizes",
      strategies.rebuild(
        desc,
        {
          "indices_tensor": changed,
          "updates_tensor": strategies.replace_tensor(changed, data_type=updates.data_type),
        },
      ),
      "IndicesTensor.Sizes",
    )


def scatter_elements_cases(n, rng):
  cases = []
  x = rng.standard_normal((2 * n, 2 * n)).astype(np.float32)
  # Distinct targets in each row (jnp's scatter leaves the order of duplicates open).
  idx = np.stack([rng.permutation(2 * n)[:n] for _ in range(2 * n)]).astype(np.int32)
  idx[::3] -= 2 * n  # some count from the end
  updates = rng.standard_normal(idx.shape).astype(np.float32)

  def jnp_scatter(x, i, u):
    rows = jnp.arange(x.shape[0])[:, None]
    return x.at[rows, jnp.where(i < 0, i + x.shape[1], i)].set(u)

  for shard in (0, 1):
    cases.append(
      sharding_cases.Case(
        "SCATTER_ELEMENTS",
        f"along axis 1, sharded on axis {shard}",
        lambda x, i, u: dml.scatter_elements(x, i, u, axis=1),
        jnp_scatter,
        [(x, shard), (idx, shard), (updates, shard)],
        reference.scatter_elements(x, idx, updates, axis=1),
        settles_across_devices=shard == 1,
      )
    )
  columns, column_updates = idx.T.copy(), updates.T.copy()

  def jnp_scatter_columns(x, i, u):
    return x.at[jnp.where(i < 0, i + x.shape[0], i), jnp.arange(x.shape[1])].set(u)

  for shard in (0, 1):
    cases.append(
      sharding_cases.Case(
        "SCATTER_ELEMENTS",
        f"along axis 0, sharded on axis {shard}",
        lambda x, i, u: dml.scatter_elements(x, i, u, axis=0),
        jnp_scatter_columns,
        [(x, shard), (columns, 1), (column_updates, 1)],
        reference.scatter_elements(x, columns, column_updates, axis=0),
      )
    )
  return cases


VALID = {"SCATTER_ELEMENTS": scatter_elements_case}
MUTANTS = {"SCATTER_ELEMENTS": scatter_elements_mutations}
SHARDED_CASES = scatter_elements_cases
BFLOAT16_CALLS = {
  "scatter_elements": lambda x: dml.scatter_elements(x, np.ones((1, 6), np.int32), x[:1], axis=0),
}
