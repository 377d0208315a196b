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


@pytest.mark.jax_range  # the jit-key shim (jax_compat.bool_state)
def test_out_of_range_index_raises_under_vmap():
  i = np.zeros((2, 1, 4), np.int32)
  i[1, 0, 3] = 5
  with pytest.raises(
    dml.DmlIndexError, match=r"IndicesTensor\[0, 3\] = 5 is out of range.*, in batch element 1 of"
  ):
    dml.checked(jax.vmap(gather_rows))(np.stack([X, X]), i)


def test_vmap_names_the_batch_element_along_any_axis():
  i = np.zeros((1, 4, 3), np.int32)  # vmapped along its last axis
  i[0, 2, 2] = -9
  with pytest.raises(
    dml.DmlIndexError, match=r"\[0, 2\] = -9 .*\), in batch element 2 of jax\.vmap$"
  ):
    dml.checked(jax.jit(jax.vmap(gather_rows, in_axes=(None, 2))))(X, i)


def test_nested_vmaps_name_the_batch_element_outermost_first():
  i = np.zeros((3, 2, 1, 4), np.int32)
  i[2, 1, 0, 0] = 3
  f = jax.vmap(jax.vmap(gather_rows, in_axes=(None, 0)), in_axes=(None, 0))
  with pytest.raises(
    dml.DmlIndexError, match=r"in batch element \(2, 1\) of the nested jax\.vmap calls, outermost"
  ):
    dml.checked(f)(X, i)


def test_unbatched_check_names_no_batch_element():
  i = np.array([[0, 3, 0, 0]], np.int32)
  with pytest.raises(dml.DmlIndexError, match=r"\[0, 1\] = 3 .* must be in \[-3, 3\)\)$"):
    dml.checked(gather_rows)(X, i)


def test_duplicate_targets_under_vmap_name_the_batch_element():
  f = jax.vmap(lambda x, i, u: dml.scatter_elements(x, i, u, axis=0))
  i = np.array([[0, 1], [2, 2]], np.int32)  # element 1 writes target 2 twice
  x, u = np.zeros((2, 4), np.float32), np.ones((2, 2), np.float32)
  with pytest.raises(dml.DmlIndexError, match=r"also writes .*, in batch element 1 of jax\.vmap$"):
    dml.checked(f)(x, i, u)


def test_checked_vmap_of_grad_names_the_batch_element():
  g = jax.vmap(jax.grad(lambda x, i: dml.gather_elements(x, i, axis=0).sum()))
  x, i = np.ones((2, 3), np.float32), np.array([[0, 1], [2, 3]], np.int32)
  with pytest.raises(dml.DmlIndexError, match=r"= 3 .*, in batch element 1 of jax\.vmap$"):
    dml.checked(g)(x, i)


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


@pytest.mark.jax_range  # the jit-key shim (jax_compat.bool_state)
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
