"""SCATTER_ELEMENTS's shared-memory row kernel (Mosaic GPU) and the choice of it.

The kernel runs only on CUDA GPUs with TMA. Here, on any backend: which static shapes select
it, that those programs lower for CUDA with the kernel in them (Mosaic GPU builds and verifies
its code at lowering, with no GPU needed) and that others take the Triton row kernel (in the
traced program) or XLA's scatter, and what the public function gives on kernel shapes, eagerly, under jit, vmap and grad,
run after run (on an H100 this runs the kernel, elsewhere the lax path).
"""

import dataclasses

import jax
import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src import reference, registry
from dml_jax._src.kernels import availability, scatter_elements_rows_triton
from dml_jax._src.kernels import scatter_elements_rows_mosaic as rows
from tests.helpers import assert_bits_equal, kernel_data, kernel_indices

# The kernels' tests run with x64 off, except those that take the `x64` fixture for 64-bit
# indices or data: once, in the first pass (the kernels' 32-bit paths do not depend on the
# mode; their 64-bit paths are pinned where they are tested).
pytestmark = pytest.mark.usefixtures("no_x64")

F32, I32, U32 = np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.uint32)


@pytest.fixture
def tma(monkeypatch):
  """As on a GPU with TMA and Mosaic GPU, wherever these tests run (Pallas Triton as here)."""
  _set_tma(monkeypatch, True)


def _set_tma(monkeypatch, tma: bool):
  probed = dataclasses.replace(availability.probe(), tma=tma, mosaic_gpu=True)
  monkeypatch.setattr(availability, "probe", lambda: probed)


# (input shape, indices shape, data type, index type): the last axis, rows of 256 or more.
KERNEL_CASES = [
  ((4, 256), (4, 256), np.float32, np.int32),
  ((3, 512), (3, 1024), np.int32, np.uint32),  # more updates than outputs: many repeats
  ((2, 3, 1024), (2, 3, 256), np.uint32, np.int32),
  ((2, 8192), (2, 4096), np.float32, np.int32),  # 80 KiB of shared memory
  ((3, 512), (3, 512), np.float16, np.int32),  # narrow elements move whole
  ((2, 256), (2, 1024), np.int8, np.uint32),
  ((2, 1024), (2, 256), np.uint16, np.int32),
]
# Under x64: 64-bit indices (judged in their width) and 64-bit data.
KERNEL_CASES_64 = [
  ((3, 512), (3, 512), np.float32, np.int64),
  ((2, 256), (2, 1024), np.int8, np.uint64),
  ((2, 1024), (2, 512), np.float64, np.int32),
  ((2, 512), (2, 256), np.int64, np.int64),
]


def _lowered_for_cuda(input_shape, indices_shape, dtype, index_type, *, batch=()):
  axis = len(input_shape) - 1
  fn = lambda x, i, u: dml.scatter_elements(x, i, u, axis=axis)
  for _ in batch:
    fn = jax.vmap(fn)
  args = (
    jax.ShapeDtypeStruct(batch + input_shape, dtype),
    jax.ShapeDtypeStruct(batch + indices_shape, index_type),
    jax.ShapeDtypeStruct(batch + indices_shape, dtype),
  )
  return jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",)).as_text()


@pytest.mark.parametrize("input_shape, indices_shape, dtype, index_type", KERNEL_CASES)
def test_kernel_applies_to_rows_that_fit_shared_memory(
  input_shape, indices_shape, dtype, index_type, tma
):
  axis = len(input_shape) - 1
  assert rows.applies(input_shape, indices_shape, np.dtype(dtype), np.dtype(index_type), axis)


@pytest.mark.parametrize(
  "input_shape, indices_shape, dtype, index_type, axis, why",
  [
    ((256, 256), (256, 256), F32, I32, 0, "not the last axis"),
    ((8, 1000), (8, 1024), F32, I32, 1, "not a power of two"),
    ((8, 4096), (8, 128), F32, U32, 1, "fewer than 256 updates a row"),
    ((8, 32768), (8, 16384), F32, I32, 1, "past the shared memory allowed"),
    ((8, 8192), (8, 16384), np.dtype(np.float64), np.dtype(np.int64), 1, "the same in bytes"),
  ],
)
def test_kernel_does_not_apply(input_shape, indices_shape, dtype, index_type, axis, why, tma):
  assert not rows.applies(input_shape, indices_shape, dtype, index_type, axis), why


def test_kernel_never_applies_without_tma(monkeypatch):
  _set_tma(monkeypatch, False)
  assert not rows.applies((4, 256), (4, 256), F32, I32, 1)


def test_shared_memory_counts_staged_indices_and_updates_and_the_winners():
  assert rows.shared_bytes(8192, 8192) == 4 * (8192 + 8192 + 8193)  # 96 KiB and the sink
  assert rows.shared_bytes(8192, 8192) <= rows.DEFAULT.max_shared_bytes
  assert rows.shared_bytes(1024, 512, 8, 2) == 512 * 10 + 4 * 1025


@pytest.mark.parametrize("input_shape, indices_shape, dtype, index_type", KERNEL_CASES_64)
def test_64_bit_kernel_shapes_apply_and_lower_for_cuda_with_the_kernel(
  input_shape, indices_shape, dtype, index_type, tma, x64
):
  axis = len(input_shape) - 1
  assert rows.applies(input_shape, indices_shape, np.dtype(dtype), np.dtype(index_type), axis)
  assert "mosaic_gpu" in _lowered_for_cuda(input_shape, indices_shape, dtype, index_type)


@pytest.mark.parametrize("input_shape, indices_shape, dtype, index_type", KERNEL_CASES)
def test_kernel_shapes_lower_for_cuda_with_the_kernel(
  input_shape, indices_shape, dtype, index_type, tma
):
  assert "mosaic_gpu" in _lowered_for_cuda(input_shape, indices_shape, dtype, index_type)
  batched = _lowered_for_cuda(input_shape, indices_shape, dtype, index_type, batch=(2,))
  assert "mosaic_gpu" in batched


def test_short_rows_take_the_triton_kernel(tma):
  """Rows shorter than 256 take the Triton row kernel: in the traced program (lowering a Triton
  kernel for CUDA needs a GPU from jax 0.12 on; the GPU runs build and run it)."""
  triton = availability.probe().pallas_triton  # where Pallas Triton imports
  assert not rows.applies((8, 64), (8, 64), F32, I32, 1)
  assert scatter_elements_rows_triton.applies((8, 64), (8, 64), F32, I32, 1) == triton
  fn = lambda x, i, u: dml.scatter_elements(x, i, u, axis=1)
  args = (np.zeros((8, 64), F32), np.zeros((8, 64), I32), np.zeros((8, 64), F32))
  assert ("pallas_call" in str(jax.make_jaxpr(fn)(*args))) == triton


def test_other_shapes_lower_for_cuda_to_xla(tma):
  wide = _lowered_for_cuda((8, 1000), (8, 64), F32, I32)
  assert "mosaic_gpu" not in wide and "triton" not in wide and "stablehlo.scatter" in wide


def _case(rng, input_shape, indices_shape, dtype, index_type):
  """Data, raw indices of every class (negative where signed, out of range, the type's
  extremes, and many repeats of a few targets) and updates."""
  width = input_shape[-1]
  x = kernel_data(rng, dtype, input_shape)
  i = kernel_indices(rng, index_type, indices_shape, width)
  repeated = i[..., : indices_shape[-1] // 2]
  repeated[...] = rng.integers(0, 5, repeated.shape)  # the same few targets, again and again
  u = kernel_data(rng, dtype, indices_shape)
  return x, i, u


@pytest.mark.parametrize("input_shape, indices_shape, dtype, index_type", KERNEL_CASES)
def test_public_function_on_kernel_shapes(input_shape, indices_shape, dtype, index_type):
  """The policy bit for bit, on every run: on a GPU the atomics run in any order."""
  _check_public_function(input_shape, indices_shape, dtype, index_type)


@pytest.mark.parametrize("input_shape, indices_shape, dtype, index_type", KERNEL_CASES_64)
def test_public_function_on_64_bit_kernel_shapes(
  input_shape, indices_shape, dtype, index_type, x64
):
  _check_public_function(input_shape, indices_shape, dtype, index_type)


def _check_public_function(input_shape, indices_shape, dtype, index_type):
  rng = np.random.default_rng(21)
  axis = len(input_shape) - 1
  x, i, u = _case(rng, input_shape, indices_shape, dtype, index_type)
  want = reference.scatter_elements(x, i, u, axis=axis)
  assert_bits_equal(dml.scatter_elements(x, i, u, axis=axis), want)
  jitted = jax.jit(lambda x, i, u: dml.scatter_elements(x, i, u, axis=axis))
  for _ in range(3):
    assert_bits_equal(jitted(x, i, u), want)
  other = np.flip(i, axis=-1)
  batched = jax.vmap(lambda x, i, u: dml.scatter_elements(x, i, u, axis=axis))(
    np.stack([x, x]), np.stack([i, other]), np.stack([u, u])
  )
  assert_bits_equal(batched[0], want)
  assert_bits_equal(batched[1], reference.scatter_elements(x, other, u, axis=axis))


def test_gradient_on_kernel_shapes_follows_the_policy():
  """The lax form's gradient (the policy's): the input's cotangent where nothing lands, each
  winning update's at its target, zero for losers and dropped updates."""
  rng = np.random.default_rng(22)
  x, i, u = _case(rng, (4, 256), (4, 512), np.float32, np.int32)
  w = rng.integers(-3, 4, x.shape).astype(np.float32)
  loss = lambda f: lambda x, u: (f(x, u) * w).sum()
  dx, du = jax.grad(loss(lambda x, u: dml.scatter_elements(x, i, u, axis=1)), (0, 1))(x, u)
  desc = registry.lookup("SCATTER_ELEMENTS")(
    dml.TensorDesc("FLOAT32", x.shape),
    dml.TensorDesc("INT32", i.shape),
    dml.TensorDesc("FLOAT32", u.shape),
    axis=1,
  )
  lax_dx, lax_du = jax.grad(loss(lambda x, u: desc._scatter(x, i, u)), (0, 1))(x, u)
  np.testing.assert_array_equal(dx, lax_dx)
  np.testing.assert_array_equal(du, lax_du)
  assert np.count_nonzero(du) < du.size  # losers and dropped updates get zero
