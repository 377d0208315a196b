"""Checked mode: out-of-range indices raise, inside jit and under vmap; off costs nothing."""

import jax
import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src import reference

X = np.arange(12, dtype=np.float32).reshape(3, 4)


def gather_rows(x, i):
  return dml.gather_elements(x, i, axis=0)


@pytest.mark.parametrize("wrap", [lambda f: f, jax.jit], ids=["eager", "jit"])
def test_in_range_indices_pass_and_match_the_unchecked_result(wrap):
  i = np.array([[0, -1, 2, -3]], np.int32)
  np.testing.assert_array_equal(
    dml.checked(wrap(gather_rows))(X, i), reference.gather_elements(X, i, axis=0)
  )


@pytest.mark.parametrize(
  "indices, message",
  [
    (
      np.array([[0, 1, 3, 9]], np.int32),
      r"dml\.GATHER_ELEMENTS: IndicesTensor\[0, 2\] = 3 is out of range for InputTensor\.Sizes\[0\]"
      r" = 3 \(signed indices must be in \[-3, 3\)\)$",
    ),
    (np.array([[0, -4, 0, 0]], np.int32), r"IndicesTensor\[0, 1\] = -4 is out of range"),
    (
      np.array([[0, 0, 0, 2**32 - 1]], np.uint32),
      r"IndicesTensor\[0, 3\] = 4294967295 is out of range for InputTensor\.Sizes\[0\] = 3"
      r" \(unsigned indices must be in \[0, 3\)\)",
    ),
  ],
)
def test_out_of_range_index_raises_inside_jit(indices, message):
  with pytest.raises(dml.DmlIndexError, match=message):
    dml.checked(jax.jit(gather_rows))(X, indices)


def test_out_of_range_index_raises_under_vmap():
  i = np.zeros((2, 1, 4), np.int32)
  i[1, 0, 3] = 5
  with pytest.raises(dml.DmlIndexError, match=r"IndicesTensor\[0, 3\] = 5 is out of range"):
    dml.checked(jax.vmap(gather_rows))(np.stack([X, X]), i)


def test_gather_nd_names_the_coordinate_and_its_dimension():
  x = np.zeros((1, 2, 3, 4), np.float32)
  i = np.array([[[[0, 1], [1, 4]]]], np.int64)  # tuple 1, coordinate 1 indexes dimension 2
  f = jax.jit(lambda x, i: dml.gather_nd(x, i, input_dimension_count=3, indices_dimension_count=2))
  with pytest.raises(
    dml.DmlIndexError,
    match=r"dml\.GATHER_ND: IndicesTensor\[0, 0, 1, 1\] = 4"
    r" is out of range for InputTensor\.Sizes\[2\] = 3",
  ):
    dml.checked(f)(x, i)


def test_gather_nd1_batch_dimensions_are_not_index_coordinates():
  x = np.zeros((2, 3, 4), np.float32)
  i = np.array([[[0]], [[3]]], np.uint32)  # batch 1 asks for row 3 of 3
  f = lambda x, i: dml.gather_nd(x, i, batch_dimension_count=1)
  with pytest.raises(
    dml.DmlIndexError,
    match=r"GATHER_ND1: IndicesTensor\[1, 0, 0\] = 3 is out"
    r" of range for InputTensor\.Sizes\[1\] = 3",
  ):
    dml.checked(f)(x, i)


def test_unchecked_calls_clamp_before_and_after_a_checked_trace():
  f = jax.jit(gather_rows)
  bad = np.array([[7, 0, 0, 0]], np.int32)
  np.testing.assert_array_equal(f(X, bad), X[[2]] * [1, 0, 0, 0] + X[[0]] * [0, 1, 1, 1])
  with pytest.raises(dml.DmlIndexError):
    dml.checked(f)(X, bad)  # traced again, with checks, although f was traced without
  np.testing.assert_array_equal(f(X, bad), reference.gather_elements(X, bad, axis=0))


def test_lengths_are_never_out_of_range():
  # REVERSE_SUBSEQUENCES defines lengths above the axis size (clamped): no check applies.
  lengths = np.array([[99], [0], [4]], np.uint32)
  out = dml.checked(lambda x, n: dml.reverse_subsequences(x, n, axis=1))(X, lengths)
  np.testing.assert_array_equal(out, reference.reverse_subsequences(X, lengths, axis=1))


def test_checked_inside_jit_says_to_wrap_the_outermost_transformation():
  i = np.zeros((1, 4), np.int32)
  with pytest.raises(TypeError, match=r"write dml\.checked\(jax\.jit\(f\)\), not jax\.jit"):
    jax.jit(dml.checked(gather_rows))(X, i)
