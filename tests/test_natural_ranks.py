"""Natural call forms: the functional API pads ranks with leading 1s, as DirectML programs do.

Random shapes against NumPy (np.take, np.concatenate, np.take_along_axis and ONNX GatherND's
definition written with NumPy), the descriptor underneath staying DirectML's, and the note a
padded call's validation error carries.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dml_jax as dml
from dml_jax import DmlValidationError
from tests.helpers import assert_bits_equal

SEEDS = range(4)


def _shape(rng: np.random.Generator, rank: int) -> tuple[int, ...]:
  return tuple(int(s) for s in rng.integers(1, 4, rank))


@pytest.mark.parametrize("seed", SEEDS)
def test_gather_without_index_dimensions_is_np_take(seed):
  rng = np.random.default_rng(seed)
  r, k = int(rng.integers(1, 4)), int(rng.integers(0, 4))
  x = rng.standard_normal(_shape(rng, r)).astype(np.float32)
  axis = int(rng.integers(-r, r))
  ids = rng.integers(-x.shape[axis], x.shape[axis], _shape(rng, k)).astype(np.int32)
  assert_bits_equal(dml.gather(x, ids, axis=axis), np.take(x, ids, axis=axis))


def test_the_embedding_lookup_and_its_descriptor():
  table = np.arange(1600, dtype=np.float32).reshape(100, 16)
  ids = np.array([[1, 2, 3, 4, 5], [6, 7, 8, 9, 99]], np.uint32)
  out = dml.gather(table, ids, axis=0)
  assert out.shape == (2, 5, 16)
  assert_bits_equal(out, table[ids])
  # The same lookup written with DirectML's shapes; jit, vmap and grad see the same reading.
  literal = dml.gather(table[None], ids[None], axis=1, index_dimensions=2)
  assert_bits_equal(out, np.asarray(literal).reshape(2, 5, 16))
  assert_bits_equal(jax.jit(lambda t: dml.gather(t, ids, axis=0))(table), out)
  assert jax.vmap(lambda i: dml.gather(table, i, axis=0))(ids).shape == (2, 5, 16)
  grad = jax.grad(lambda t: dml.gather(t, ids, axis=0).sum())(table)
  assert grad[1, 0] == 1 and grad[0, 0] == 0


@pytest.mark.parametrize("seed", SEEDS)
def test_join_pads_lower_ranks_and_counts_negative_axes(seed):
  rng = np.random.default_rng(seed)
  shape = _shape(rng, int(rng.integers(1, 4)))
  axis = -int(rng.integers(1, len(shape) + 1))  # on x's dimensions, counted from the end
  x = rng.standard_normal(shape).astype(np.float32)
  longer = list(shape)
  longer[axis] += 1
  other = rng.standard_normal((1, *longer)).astype(np.float32)  # one rank more
  assert_bits_equal(dml.join([x, other], axis=axis), np.concatenate([x[None], other], axis))


@pytest.mark.parametrize("seed", SEEDS)
def test_gather_elements_and_split_count_negative_axes(seed):
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 4))
  x = rng.standard_normal(_shape(rng, rank)).astype(np.float32)
  axis = -int(rng.integers(1, rank + 1))
  ids = rng.integers(0, x.shape[axis], x.shape).astype(np.uint32)
  assert_bits_equal(
    dml.gather_elements(x, ids, axis=axis), np.take_along_axis(x, ids.astype(np.intp), axis)
  )
  first = dml.split(x, axis=axis, split_sizes=(1, x.shape[axis] - 1) if x.shape[axis] > 1 else (1,))
  assert_bits_equal(first[0], np.take(x, [0], axis=axis))


def _onnx_gather_nd(x: np.ndarray, ids: np.ndarray) -> np.ndarray:
  """ONNX GatherND with batch_dims 0: out[p] = x[tuple(ids[p])] (negative coordinates wrap)."""
  tuples = ids.reshape(-1, ids.shape[-1])
  rows = [x[tuple(int(c) for c in t)] for t in tuples]
  return np.stack(rows).reshape(ids.shape[:-1] + x.shape[ids.shape[-1] :])


@pytest.mark.parametrize("seed", SEEDS)
def test_gather_nd_of_different_ranks_is_onnx_gather_nd(seed):
  rng = np.random.default_rng(seed)
  r = int(rng.integers(1, 4))
  x = rng.standard_normal(_shape(rng, r)).astype(np.float32)
  t = int(rng.integers(1, r + 1))
  k = int(rng.integers(1, 4))
  while k == r:
    k = int(rng.integers(1, 4))
  batch = _shape(rng, k - 1)
  ids = np.stack([rng.integers(-s, s, batch) for s in x.shape[:t]], axis=-1).astype(np.int32)
  assert_bits_equal(dml.gather_nd(x, ids), _onnx_gather_nd(x, ids))


def test_scatter_nd_of_different_ranks_keeps_the_input_shape():
  x = np.zeros((4, 3), np.float32)
  ids = np.array([[2], [0]], np.int32)  # rank 2: equal to the input's, so pad the updates
  updates = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
  want = x.copy()
  want[[2, 0]] = updates
  assert_bits_equal(dml.scatter_nd(x, ids, updates), want)
  one = dml.scatter_nd(x, np.array([1], np.int32), np.array([7, 8, 9], np.float32))
  assert one.shape == (4, 3)
  assert_bits_equal(np.asarray(one)[1], np.array([7, 8, 9], np.float32))


def test_one_hot_pads_the_values():
  out = dml.one_hot(np.array([[2], [0]], np.int32), np.array([0, 1], np.float32), axis=-1, depth=3)
  assert_bits_equal(out, np.eye(3, dtype=np.float32)[[2, 0]])


def test_a_padded_call_that_fails_says_the_call_it_checked():
  table, ids = np.zeros((100, 16), np.float32), np.zeros((2, 5), np.int32)
  with pytest.raises(DmlValidationError) as info:
    dml.gather(table, ids, axis=0, feature_level="2_1")  # 4-D tensors only before FL 3_0
  (note, *_) = info.value.__notes__
  assert "input (100, 16), indices (2, 5)" in note
  assert (
    "dml.gather(input.reshape(1, 100, 16), indices.reshape(1, 2, 5), axis=1, index_dimensions=2)"
    in note
  )
  with pytest.raises(DmlValidationError) as info:  # the call, with the count set
    dml.gather(table, ids, axis=0, index_dimensions=2)
  assert info.value.__notes__[0].startswith(
    "With the counts unset, dml.gather(input, indices, axis=0) reads as NumPy and ONNX do"
  )
  with pytest.raises(DmlValidationError) as info:
    dml.join([np.zeros((2, 3), np.float32), np.zeros(4, np.float32)], axis=-1)
  assert (
    "dml.join([inputs[0].reshape(2, 3), inputs[1].reshape(1, 4)], axis=1)"
    in (info.value.__notes__[0])
  )


def test_descriptors_of_shows_what_directml_gets():
  table, ids = np.zeros((100, 16), np.float32), np.zeros((2, 5), np.int32)
  dml.gather(table, ids, axis=0)  # a cached trace must not hide the descriptor
  (desc,) = dml.descriptors_of(dml.gather, table, ids, axis=0)
  assert desc == dml.GatherDesc(
    dml.TensorDesc("FLOAT32", (1, 100, 16)),
    dml.TensorDesc("INT32", (1, 2, 5)),
    axis=1,
    index_dimensions=2,
  )
  bits = jnp.zeros((2, 3), jnp.bfloat16)
  two = dml.descriptors_of(lambda x: dml.tile(dml.join([x, x], axis=-1), repeats=(2, 1)), bits)
  assert [d.OPERATOR for d in two] == ["JOIN", "TILE"]
  assert two[0].dml_inputs()[0][2] == dml.TensorDesc("UINT16", (2, 3))  # bfloat16's bits


def test_a_call_with_directml_shapes_reads_as_itself():
  x = np.arange(6, dtype=np.float32).reshape(3, 2)
  ids = np.array([[0, 1, 1, 2]], np.uint32)
  # IndexDimensions set: DirectML's output, right-aligned into the common rank.
  assert dml.gather(x, ids, axis=0, index_dimensions=1).shape == (4, 2)
  # Unset: np.take's, (1, 4, 2).
  assert_bits_equal(dml.gather(x, ids, axis=0), np.take(x, ids, axis=0))
