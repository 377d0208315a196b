"""NONZERO_COORDINATES: the count, the row-major coordinates, -0.0, N past the effective rank,
the zero rows past the count, the output rules per level and jit/vmap."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src import reference
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
