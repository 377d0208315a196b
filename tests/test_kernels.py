"""The GPU row kernel for GATHER_ELEMENTS along the last axis.

Its body runs here in Pallas's interpret mode (any backend), against the reference,
for every data type it takes and every index type and value class; the public
function is checked on shapes that select the kernel (on a CUDA GPU it runs the
kernel, elsewhere the lax path), eagerly, under jit, vmap and grad.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src import kernels, reference

DATA_TYPES = [np.float32, np.float16, np.int32, np.uint32, np.int16, np.uint16, np.int8, np.uint8]


def _indices(rng, dtype, shape, size):
  info = np.iinfo(dtype)
  low = -size - 3 if info.min < 0 else 0
  out = rng.integers(low, size + 3, shape).astype(dtype)
  out.flat[:4] = [info.max, info.min, size, size - 1]
  return out


def _data(rng, dtype, shape):
  if np.issubdtype(dtype, np.floating):
    return rng.standard_normal(shape).astype(dtype)
  info = np.iinfo(dtype)
  return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def _bits(a):
  a = np.asarray(a)
  return a.view(f"u{a.dtype.itemsize}")


@pytest.mark.parametrize("data_type", DATA_TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("index_type", [np.int32, np.uint32], ids=["int32", "uint32"])
def test_kernel_body_matches_reference(data_type, index_type):
  rng = np.random.default_rng(0)
  x = _data(rng, data_type, (3, 2, 300))
  i = _indices(rng, index_type, (3, 2, 128), 300)
  got = kernels._rows(jnp.asarray(x), jnp.asarray(i), interpret=True)
  np.testing.assert_array_equal(_bits(got), _bits(reference.gather_elements(x, i, axis=2)))


@pytest.mark.parametrize("index_type", [np.int64, np.uint64], ids=["int64", "uint64"])
def test_kernel_body_keeps_64_bit_indices_wide(index_type, x64):
  rng = np.random.default_rng(1)
  x = _data(rng, np.float32, (2, 200))
  i = _indices(rng, index_type, (2, 128), 200)
  i[0, 4:8] = [2**32 + 1, 2**40, 2**63 - 1, 2**33 + 2]  # never read element 1 or 2
  got = kernels._rows(jnp.asarray(x), jnp.asarray(i), interpret=True)
  np.testing.assert_array_equal(got, reference.gather_elements(x, i, axis=1))


def test_kernel_applies_to_wide_power_of_two_rows_on_the_last_axis():
  applies = kernels.rows_kernel_applies
  assert applies((8, 8192), (8, 8192), np.dtype(np.float32), 1)
  assert applies((4, 3, 300), (4, 3, 128), np.dtype(np.int8), 2)
  assert not applies((8, 8192), (8, 8192), np.dtype(np.float32), 0)  # not the last axis
  assert not applies((8, 300), (8, 100), np.dtype(np.float32), 1)  # not a power of two
  assert not applies((8, 64), (8, 64), np.dtype(np.float32), 1)  # too narrow
  assert not applies((8, 40000), (8, 128), np.dtype(np.float32), 1)  # row beyond L1
  assert not applies((8, 256), (8, 128), np.dtype(np.float64), 1)  # 64-bit data: lax path


def test_kernel_never_applies_without_pallas_triton(monkeypatch):
  monkeypatch.setattr(kernels, "_pallas_triton_available", lambda: False)
  assert not kernels.rows_kernel_applies((8, 8192), (8, 8192), np.dtype(np.float32), 1)
  monkeypatch.undo()
  assert kernels.rows_kernel_applies((8, 8192), (8, 8192), np.dtype(np.float32), 1)


@pytest.mark.parametrize("data_type", [np.float32, np.int8], ids=["float32", "int8"])
def test_public_function_on_kernel_shapes(data_type):
  rng = np.random.default_rng(2)
  x = _data(rng, data_type, (5, 512))
  i = _indices(rng, np.int32, (5, 256), 512)
  want = reference.gather_elements(x, i, axis=1)
  np.testing.assert_array_equal(dml.gather_elements(x, i, axis=1), want)
  jitted = jax.jit(lambda x, i: dml.gather_elements(x, i, axis=1))
  np.testing.assert_array_equal(jitted(x, i), want)
  batched = jax.vmap(lambda x, i: dml.gather_elements(x, i, axis=1))(
    np.stack([x, x]), np.stack([i, i[::-1]])
  )
  np.testing.assert_array_equal(batched[1], reference.gather_elements(x, i[::-1], axis=1))


def test_gradient_on_kernel_shapes_is_the_scatter_add():
  rng = np.random.default_rng(3)
  x = rng.standard_normal((3, 256)).astype(np.float32)
  i = _indices(rng, np.int32, (3, 128), 256)
  w = rng.integers(-3, 4, (3, 128)).astype(np.float32)
  grad = jax.grad(lambda x: (dml.gather_elements(x, i, axis=1) * w).sum())(x)
  want = np.zeros_like(x)
  for r in range(3):
    for c in range(128):
      want[r, reference.normalize_index(int(i[r, c]), 256, signed=True)] += w[r, c]
  np.testing.assert_array_equal(grad, want)
