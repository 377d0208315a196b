"""TILE: the operator's own rules and pinned cases.

Its support tables written out from DirectML's page (1_0: 4 dimensions of floats; 2_1:
integers; 3_1: 1 to 8 dimensions; 4_1: INT64 and UINT64 but not FLOAT64), its rules
(one repeat count per dimension, each at least 1, RepeatsCount equal to their number),
its output sizes, the NumPy reference against np.tile, and the functional API under
jit, vmap and grad. What every operator shares is tested in tests/test_contract.py and
the cross-cutting files.
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

UP_TO_32 = ("FLOAT32", "FLOAT16", "INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8")


@pytest.mark.parametrize(
  "level, rank, data_type, valid",
  [
    ("1_0", 4, "FLOAT16", True),
    ("1_0", 4, "INT32", False),  # integers from 2_1
    ("2_1", 4, "UINT8", True),
    ("2_1", 3, "FLOAT32", False),  # 4 dimensions only before 3_1
    ("3_1", 1, "INT8", True),
    ("3_1", 8, "UINT16", True),
    ("3_1", 4, "INT64", False),  # 64-bit integers from 4_1
    ("4_1", 2, "INT64", True),
    ("4_1", 2, "UINT64", True),
    ("6_4", 2, "FLOAT64", False),  # the 4_1 table lists no FLOAT64
  ],
)
def test_support_tables(level, rank, data_type, valid):
  desc = dml.TileDesc(T(data_type, (2,) * rank), repeats=(1,) * rank)
  fields = [v.field for v in desc.violations(level)]
  assert (fields == []) is valid, fields
  if not valid:
    assert set(fields) <= {"InputTensor.DataType", "InputTensor.DimensionCount"}


def test_tile_exists_from_1_0():
  assert dml.TileDesc.SUPPORT.introduced == dml.FeatureLevel.FL_1_0
  assert_valid(dml.TileDesc(T("FLOAT32", (1, 1, 2, 3)), repeats=(1, 1, 3, 3)), "1_0")


def test_output_sizes_are_the_input_sizes_times_the_repeats():
  desc = dml.TileDesc(T("INT16", (2, 1, 3)), repeats=(1, 4, 2))
  assert desc.output == T("INT16", (2, 4, 6))
  assert desc.repeats_count == 3
  assert desc.dml_attributes() == (("Repeats", (1, 4, 2)), ("RepeatsCount", 3))


def test_one_repeat_count_per_dimension():
  desc = dml.TileDesc(T("FLOAT32", (2, 3)), repeats=(3,))
  assert_rejected(
    desc,
    None,
    "Repeats",
    "must hold one count per dimension of InputTensor (DimensionCount 2)",
    "{3}",
    hint="pad Repeats with leading 1s",
  )
  with pytest.raises(dml.DmlValidationError):
    desc.output  # noqa: B018  (no output without one count per dimension)


def test_repeat_counts_are_at_least_1():
  assert_rejected(
    dml.TileDesc(T("FLOAT32", (2, 3)), repeats=(1, 0)),
    None,
    "Repeats",
    "every count must be >= 1 (DirectML has no empty tensors)",
    "{1,0}",
  )


def test_repeats_count_must_equal_the_number_of_repeats():
  assert_rejected(
    dml.TileDesc(T("FLOAT32", (2, 3)), repeats=(1, 2), repeats_count=3),
    None,
    "RepeatsCount",
    "must equal the number of Repeats (2)",
    "3",
  )


def test_a_given_output_must_have_the_tiled_sizes():
  desc = dml.TileDesc(T("FLOAT32", (2, 3)), repeats=(2, 2), output_tensor=T("FLOAT32", (4, 3)))
  assert_rejected(
    desc, None, "OutputTensor.Sizes", "must be InputTensor.Sizes times Repeats: {4,6}", "{4,3}"
  )


def test_the_output_may_not_address_2_to_the_32_elements():
  desc = dml.TileDesc(T("UINT8", (2**16, 2**8)), repeats=(1, 2**8))
  assert [v.field for v in desc.violations()] == ["OutputTensor.Sizes"]


def test_repeats_must_be_integers():
  with pytest.raises(TypeError, match=r"Repeats\[0\] must be an integer; got float 2\.0"):
    dml.tile(np.zeros((2,), np.float32), repeats=(2.0,))
  with pytest.raises(TypeError, match="Repeats must be a sequence of integers; got the scalar 2"):
    dml.TileDesc(T("FLOAT32", (2,)), repeats=2)


@pytest.mark.parametrize("seed", CROSS_CHECK_SEEDS)
def test_reference_agrees_with_np_tile(seed):
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 5))
  x = rng.standard_normal(tuple(int(n) for n in rng.integers(1, 4, rank))).astype(np.float32)
  repeats = tuple(int(r) for r in rng.integers(1, 4, rank))
  assert_bits_equal(reference.tile(x, repeats=repeats), np.tile(x, repeats))


def test_the_descriptor_takes_one_count_per_dimension_the_function_reads_as_jnp_tile():
  x = np.arange(6, dtype=np.int8).reshape(2, 3)
  assert not dml.TileDesc(T("INT8", (2, 3)), repeats=(2,)).is_valid()
  assert_bits_equal(dml.tile(x, repeats=(2,)), jnp.tile(x, 2))  # the last dimension's count
  assert_bits_equal(dml.tile(x, repeats=(2, 1, 1)), jnp.tile(x, (2, 1, 1)))  # x promoted
  (desc,) = dml.descriptors_of(lambda x: dml.tile(x, repeats=(2,)), x)
  assert desc == dml.TileDesc(T("INT8", (2, 3)), repeats=(1, 2))


@pytest.mark.parametrize("seed", range(3))
def test_natural_ranks_at_every_level_are_np_tile(seed):
  # Ranks 0 to 3 of input and repeats, at FL 2_1 (4 dimensions only: padded, then cut back)
  # and at the newest level.
  rng = np.random.default_rng(seed)
  r, m = (int(n) for n in rng.integers(0, 4, 2))
  x = rng.integers(-9, 9, tuple(int(s) for s in rng.integers(1, 4, r))).astype(np.int16)
  repeats = tuple(int(n) for n in rng.integers(1, 3, m))
  for level in ("2_1", None):
    assert_bits_equal(dml.tile(x, repeats=repeats, feature_level=level), np.tile(x, repeats))
  (desc,) = dml.descriptors_of(lambda x: dml.tile(x, repeats=repeats, feature_level="2_1"), x)
  assert desc.input_tensor.sizes == (1,) * (4 - r) + x.shape
  assert desc.repeats == (1,) * (4 - m) + repeats


def test_a_padded_call_that_fails_names_the_call_it_checked():
  x = np.zeros((2, 3), np.float32)
  with pytest.raises(dml.DmlValidationError, match="every count must be >= 1") as info:
    dml.tile(x, repeats=(0, 1, 2), feature_level="2_1")
  assert "dml.tile(input.reshape(1, 1, 2, 3), repeats=(1, 0, 1, 2))" in info.value.__notes__[0]


def test_jit_vmap_and_grad():
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  tiled = jax.jit(lambda x: dml.tile(x, repeats=(2, 1)))(x)
  assert_bits_equal(tiled, np.tile(x, (2, 1)))
  batch = np.stack([x, -x])
  assert_bits_equal(
    jax.vmap(lambda x: dml.tile(x, repeats=(1, 2)))(batch), np.tile(batch, (1, 1, 2))
  )
  weights = np.arange(24, dtype=np.float32).reshape(4, 6)
  grad = jax.grad(lambda x: jnp.sum(dml.tile(x, repeats=(2, 2)) * weights))(x)
  # Each input element receives the weights of its 4 copies.
  expected = weights[:2, :3] + weights[2:, :3] + weights[:2, 3:] + weights[2:, 3:]
  assert_bits_equal(grad, expected)


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def tile_case(draw):
  level = draw(strategies.levels("TILE"))
  table = strategies.table_at(dml.TileDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  sizes = strategies.draw_sizes(draw, n, max_elements=24)
  repeats = tuple(draw(st.integers(1, 3)) for _ in range(n))
  x = strategies.draw_data(draw, data_type, sizes)
  desc = dml.TileDesc(TensorDesc(data_type, sizes), repeats=repeats)
  return strategies.Case(
    desc,
    level,
    [x],
    lambda x, level: dml.tile(x, repeats=repeats, feature_level=level),
    lambda: reference.tile(x, repeats=repeats),
  )


def tile_cases(n, rng):
  x = rng.standard_normal((n, 2 * n)).astype(np.float32)
  return [
    sharding_cases.Case(
      "TILE",
      f"repeats {repeats}, sharded on axis {shard}",
      lambda x, repeats=repeats: dml.tile(x, repeats=repeats),
      lambda x, repeats=repeats: jnp.tile(x, repeats),
      [(x, shard)],
      reference.tile(x, repeats=repeats),
    )
    for repeats in ((2, 1), (1, 3))
    for shard in (0, 1)
  ]


VALID = {"TILE": tile_case}
SHARDED_CASES = tile_cases
BFLOAT16_CALLS = {"tile": lambda x: dml.tile(x, repeats=(2, 1))}
