"""NONZERO_COORDINATES: the count, the row-major coordinates, -0.0, N past the effective rank,
the zero rows past the count, the output rules per level and jit/vmap."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import DataType, TensorDesc
from dml_jax._src import reference
from tests import sharding_cases, strategies
from tests.helpers import assert_bits_equal, assert_rejected, assert_valid

T = dml.TensorDesc


def test_nonzero_coordinates_ascending_order_zero_rows_and_minus_zero():
  x = np.zeros((2, 6), np.float16)
  x[1, 0], x[1, 2], x[0, 5], x[0, 1] = 1, np.nan, -3, -0.0
  count, coordinates = dml.nonzero_coordinates(x)
  assert_bits_equal(count, np.array([[3]], np.uint32))
  want = np.zeros((12, 2), np.uint32)
  want[:3] = [[0, 5], [1, 0], [1, 2]]  # the page's order: by element index; NaN is nonzero
  assert_bits_equal(coordinates, want)
  for got, oracle in zip((count, coordinates), reference.nonzero_coordinates(x), strict=True):
    assert_bits_equal(got, oracle)


@pytest.mark.parametrize("n, leading", [(3, [0]), (4, [0, 0]), (2, [])])
def test_nonzero_coordinates_n_from_the_effective_rank_to_the_rank(n, leading):
  x = np.zeros((1, 1, 2, 3), np.int8)
  x[0, 0, 1, 2] = 5
  count, coordinates = dml.nonzero_coordinates(x, coordinate_size=n)
  assert coordinates.shape == (1, 1, 6, n) and int(count.reshape(())) == 1
  assert coordinates[0, 0, 0].tolist() == leading + [1, 2]


def test_nonzero_coordinates_all_zero_and_all_nonzero():
  count, coordinates = dml.nonzero_coordinates(np.full((3,), -0.0, np.float32))
  assert count.tolist() == [0] and not np.asarray(coordinates).any()
  count, coordinates = dml.nonzero_coordinates(np.arange(1, 4, dtype=np.uint16))
  assert count.tolist() == [3] and coordinates.tolist() == [[0], [1], [2]]


def test_nonzero_coordinates_rules():
  data, count = T("FLOAT32", (1, 1, 12, 5)), T("UINT32", (1, 1, 1, 1))
  assert_rejected(
    dml.NonzeroCoordinatesDesc(data, count, T("UINT32", (1, 1, 60, 1))),
    "6_4",
    "OutputCoordinatesTensor.Sizes",
    "must end in N, from InputTensor's effective rank (2) to its DimensionCount (4)",
    "{1,1,60,1}",
  )
  assert_rejected(
    dml.NonzeroCoordinatesDesc(data, count, T("UINT32", (1, 1, 59, 2))),
    "6_4",
    "OutputCoordinatesTensor.Sizes",
    "must be {1,..,1,M,N} with M = InputTensor's element count (60): {1,1,60,2}",
    "{1,1,59,2}",
  )
  assert_rejected(
    dml.NonzeroCoordinatesDesc(data, T("UINT32", (1, 1, 1, 2)), T("UINT32", (1, 1, 60, 2))),
    "6_4",
    "OutputCountTensor.Sizes",
    "must be all 1s (a scalar): {1,1,1,1}",
    "{1,1,1,2}",
  )
  assert_rejected(
    dml.NonzeroCoordinatesDesc(data, T("INT32", (1, 1, 1, 1)), T("UINT32", (1, 1, 60, 2))),
    "6_4",
    "OutputCountTensor.DataType",
    "must be one of UINT32",
    "INT32",
  )


def test_nonzero_coordinates_ranks_by_level():
  flat = dml.NonzeroCoordinatesDesc(T("INT32", (7,)), T("UINT32", (1,)), T("UINT32", (7, 1)))
  assert_valid(flat, "4_0")  # 1-D input, 2-D coordinates: ranks differ from FL 4_0
  four = dml.NonzeroCoordinatesDesc(
    T("INT32", (1, 1, 2, 3)), T("UINT32", (1, 1)), T("UINT32", (1, 1, 6, 2))
  )
  assert_valid(four, "4_0")
  assert_rejected(
    four,
    "3_0",
    "OutputCountTensor.DimensionCount",
    "must equal InputTensor.DimensionCount (4) below FL 4_0",
    "2",
  )


def test_nonzero_coordinates_under_jit_and_vmap():
  x = np.array([[0, 2, 0], [3, 0, 4]], np.int32)
  want = reference.nonzero_coordinates(x)
  for got, oracle in zip(jax.jit(dml.nonzero_coordinates)(x), want, strict=True):
    assert_bits_equal(got, oracle)
  counts, rows = jax.vmap(dml.nonzero_coordinates)(x)
  assert counts.reshape(-1).tolist() == [1, 2]
  assert rows.tolist() == [[[1], [0], [0]], [[0], [2], [0]]]


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def nonzero_coordinates_case(draw):
  """NONZERO_COORDINATES: mostly zeros (-0.0 among them), N from the effective rank up."""
  level = draw(strategies.levels("NONZERO_COORDINATES"))
  table = strategies.table_at(dml.NonzeroCoordinatesDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  sizes = strategies.draw_sizes(draw, n, max_elements=48)
  if draw(st.booleans()):  # leading 1s: an effective rank below the DimensionCount
    k = draw(st.integers(0, n - 1))
    sizes = (1,) * k + sizes[k:]
  rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
  x = strategies.draw_data(draw, data_type, sizes)
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
  return strategies.Case(
    desc,
    level,
    [x],
    lambda x, level: dml.nonzero_coordinates(
      x, coordinate_size=coordinate_size, feature_level=level
    ),
    lambda: reference.nonzero_coordinates(x, coordinate_size=coordinate_size),
  )


def nonzero_coordinates_mutations(desc, level, draw):
  """NONZERO_COORDINATES's own rules: the coordinates' sizes, the count's sizes and type."""
  coordinates, count = desc.output_coordinates_tensor, desc.output_count_tensor
  rank = desc.input_tensor.dimension_count
  m, n = coordinates.sizes[-2:]
  wide = coordinates.sizes[:-1] + (rank + 1,)
  yield (
    "N past the rank",
    dataclasses.replace(
      desc, output_coordinates_tensor=strategies.replace_tensor(coordinates, sizes=wide)
    ),
    "OutputCoordinatesTensor.Sizes",
  )
  rows = coordinates.sizes[:-2] + (m + 1, n)
  yield (
    "M not the element count",
    dataclasses.replace(
      desc, output_coordinates_tensor=strategies.replace_tensor(coordinates, sizes=rows)
    ),
    "OutputCoordinatesTensor.Sizes",
  )
  bigger = count.sizes[:-1] + (2,)
  yield (
    "count not a scalar",
    dataclasses.replace(desc, output_count_tensor=strategies.replace_tensor(count, sizes=bigger)),
    "OutputCountTensor.Sizes",
  )
  yield (
    "count type",
    dataclasses.replace(
      desc, output_count_tensor=strategies.replace_tensor(count, data_type=DataType.INT32)
    ),
    "OutputCountTensor.DataType",
  )


def nonzero_coordinates_cases(n, rng):
  x = rng.integers(-1, 2, (2 * n, n)).astype(np.float32)
  m = x.size

  def jnp_nonzero(x):
    count = jnp.count_nonzero(x).astype(jnp.uint32).reshape(1, 1)
    rows = jnp.stack(jnp.nonzero(x, size=m, fill_value=0), axis=1).astype(jnp.uint32)
    return count, rows

  return [
    sharding_cases.Case(
      "NONZERO_COORDINATES",
      f"sharded on axis {shard}",
      dml.nonzero_coordinates,
      jnp_nonzero,
      [(x, shard)],
      reference.nonzero_coordinates(x),
    )
    for shard in (0, 1)
  ]


VALID = {"NONZERO_COORDINATES": nonzero_coordinates_case}
MUTANTS = {"NONZERO_COORDINATES": nonzero_coordinates_mutations}
SHARDED_CASES = nonzero_coordinates_cases
