"""REVERSE_SUBSEQUENCES's strip kernel (Mosaic GPU) and the choice of it.

The kernel runs only on CUDA GPUs with TMA. Here, on any backend: which static shapes select
it, that those programs lower for CUDA with the kernel in them (Mosaic GPU builds and
verifies its code at lowering, with no GPU needed) and that others do not, and what the
public function gives on kernel shapes, eagerly, under jit, vmap and grad (on an H100 this
runs the kernel, elsewhere the lax path), for per-lane and shared lengths.
"""

import dataclasses

import jax
import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src import reference
from dml_jax._src.kernels import availability
from dml_jax._src.kernels import reverse_subsequences_strips_mosaic as strips
from tests.helpers import assert_bits_equal, in_turn_off_gpus, kernel_data

# The kernels' tests run with x64 off, except those that take the `x64` fixture for 64-bit
# indices or data: once, in the first pass (the kernels' 32-bit paths do not depend on the
# mode; their 64-bit paths are pinned where they are tested).
pytestmark = pytest.mark.usefixtures("no_x64")


@pytest.fixture
def tma(monkeypatch):
  """As on a GPU with TMA, wherever these tests run."""
  _set_tma(monkeypatch, True)


def _set_tma(monkeypatch, tma: bool):
  """As on a machine whose GPUs have TMA or not; the rest as here."""
  probed = dataclasses.replace(availability.probe(), tma=tma)
  monkeypatch.setattr(availability, "probe", lambda: probed)


# (input shape, axis, dtype): a strip is 32 bytes of lanes; the axis is whole 256-row TMA boxes.
KERNEL_CASES = [
  ((2, 256, 64), 1, np.float32),
  ((3, 1024, 8), 1, np.float32),
  ((512, 2, 16), 0, np.float16),
  ((2, 3, 512, 4, 8), 2, np.int8),
  ((1, 2048, 16), 1, np.uint16),
  ((2, 2048, 64), 1, np.int8),  # 64-byte strips whole, 4 lanes a word, 64 words a thread
  ((2, 4096, 64), 1, np.int8),  # 32-byte strips held whole, 4 lanes a word
  ((2, 4096, 64), 1, np.float32),  # 64-byte strips held all but their last 512 rows
  ((1, 8192, 16), 1, np.float16),  # 32-byte strips held all but their last 1024 rows
  ((1, 7168, 8), 1, np.float32),  # a whole 224 KiB strip
]


def _lowered_for_cuda(shape, dtype, axis, *, batch=(), lengths_shape=None):
  fn = lambda x, n: dml.reverse_subsequences(x, n, axis=axis)
  for _ in batch:
    fn = jax.vmap(fn)
  if lengths_shape is None:
    lengths_shape = shape[:axis] + (1,) + shape[axis + 1 :]
  args = (
    jax.ShapeDtypeStruct(batch + shape, dtype),
    jax.ShapeDtypeStruct(batch + lengths_shape, np.uint32),
  )
  return jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",)).as_text()


@pytest.mark.parametrize(
  "shape, axis, dtype",
  KERNEL_CASES,
)
def test_kernel_applies_to_whole_strips_and_boxes(shape, axis, dtype, tma):
  assert strips.applies(shape, np.dtype(dtype), axis)


@pytest.mark.parametrize(
  "shape, axis, dtype, width, late",
  [
    ((2, 1024, 1024), 1, np.float32, 128, 0),
    ((2, 1792, 1024), 1, np.float32, 128, 0),  # 224 KiB
    ((2, 2048, 1024), 1, np.float32, 128, 256),  # the last 256 rows after the first pass
    ((2, 4096, 1024), 1, np.float32, 64, 512),  # 128-byte rows: 2304 late rows, too many
    ((2, 1024, 16), 1, np.float32, 64, 0),  # 16 lanes: too few for 128-byte rows
    ((2, 4096, 1024), 1, np.float16, 64, 512),
    ((2, 4096, 1024), 1, np.int8, 32, 0),  # 4 lanes a word: held whole, not 64 bytes late
    ((2, 8192, 1024), 1, np.int16, 32, 1024),  # 2 lanes a word may be late
    ((2, 1536, 1024), 1, np.int8, 128, 0),
    ((2, 6144, 8), 1, np.float32, 32, 0),
    ((2, 8192, 8), 1, np.float32, 32, 1024),
    ((2, 4608, 8), 1, np.float64, 64, 1024),  # 16 staged values a thread, two registers each
  ],
)
def test_strips_are_as_wide_as_fit(shape, axis, dtype, width, late):
  assert strips.plan(shape, np.dtype(dtype).itemsize, axis) == (width, late)


@pytest.mark.parametrize(
  "shape, axis, dtype, why",
  [
    ((2, 256, 60), 1, np.float32, "lanes not whole 32-byte strips"),
    ((2, 300, 64), 1, np.float32, "axis not whole 256-row boxes"),
    ((2, 12288, 8), 1, np.float32, "5120 late rows: more than half the 7168 held"),
    ((2, 9472, 8), 1, np.float32, "2304 late rows of 8 words: 36 staged values a thread"),
    ((2, 8192, 32), 1, np.int8, "late rows of 4 lanes a word"),
    ((2**31, 256, 32), 1, np.float32, "2^31 strips: more blocks than the grid takes"),
  ],
)
def test_kernel_does_not_apply(shape, axis, dtype, why, tma):
  assert not strips.applies(shape, np.dtype(dtype), axis), why


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.float16, np.int16, np.float32, np.float64])
def test_words_hold_lane_j_in_their_bits_j(dtype, x64):
  """The kernel picks each lane's length by its place in a word: lane j of a word is its bits
  [j * 8 * itemsize, (j + 1) * 8 * itemsize), and unpacking gives the lanes back."""
  rng = np.random.default_rng(3)
  x = kernel_data(rng, dtype, (3, 8, 16))
  words = strips.DEFAULT.words(np.dtype(dtype).itemsize)
  packed = np.asarray(words.pack(x))
  assert packed.dtype.itemsize == max(4, np.dtype(dtype).itemsize) == words.nbytes
  assert packed.shape == (3, 8, 16 // words.lanes)
  lanes = x.view(f"uint{8 * x.itemsize}").astype(np.uint64).reshape(3, 8, -1, words.lanes)
  shifts = np.arange(words.lanes, dtype=np.uint64) * np.uint64(words.bits)
  np.testing.assert_array_equal(packed.astype(np.uint64), (lanes << shifts).sum(-1))
  unpacked = np.asarray(words.unpack(packed, np.dtype(dtype))).reshape(x.shape)
  assert_bits_equal(unpacked, x)


def test_kernel_never_applies_without_tma(monkeypatch):
  _set_tma(monkeypatch, False)
  assert not strips.applies((2, 256, 64), np.dtype(np.float32), 1)


def test_tma_check_follows_the_local_gpus():
  """False on a machine without CUDA GPUs (no error), True on one with only Hopper or newer."""
  availability.probe.cache_clear()
  gpus = [d for d in jax.devices() if d.platform == "gpu"]
  want = bool(gpus) and all(float(d.compute_capability) >= 9.0 for d in gpus)
  assert availability.probe().tma == want


@pytest.mark.parametrize("shape, axis, dtype", KERNEL_CASES)
def test_kernel_shapes_lower_for_cuda_with_the_kernel(shape, axis, dtype, tma):
  assert "mosaic_gpu" in _lowered_for_cuda(shape, dtype, axis)
  assert "mosaic_gpu" in _lowered_for_cuda(shape, dtype, axis, batch=(2,))


def test_other_shapes_lower_for_cuda_without_it(tma):
  assert "mosaic_gpu" not in _lowered_for_cuda((2, 300, 64), np.float32, 1)


@pytest.mark.parametrize("lengths_shape", [(2, 1, 1), (1, 1, 1)])
def test_one_length_a_row_lowers_for_cuda_to_a_gather_with_no_run_time_check(lengths_shape, tma):
  """Lengths with 1 after the axis (zero strides) say statically that whole rows move: XLA's
  gather, with no kernel and no run-time check (a reduction of the lengths, then a conditional
  whose predicate a GPU's host waits for). The platform's `case` is resolved by XLA."""
  text = _lowered_for_cuda((2, 1024, 1024), np.float32, 1, lengths_shape=lengths_shape)
  assert "mosaic_gpu" not in text and "stablehlo.reduce" not in text
  assert "stablehlo.gather" in text
  full = _lowered_for_cuda((2, 1024, 1024), np.float32, 1)
  assert "mosaic_gpu" in full and "stablehlo.reduce" in full  # checked at run time


def _lengths(rng, shape, axis, *, shared):
  """Lengths of `shape`'s lanes: per lane (shared=False); one a row of lanes, by value in the
  full tensor (True) or as an array with 1 after the axis ("compact": zero strides)."""
  lengths_shape = shape[:axis] + (1,) + shape[axis + 1 :]
  steps = shape[axis]
  if shared:
    per_row = rng.integers(0, steps + 3, shape[:axis] + (1,) * (len(shape) - axis))
    per_row = per_row.astype(np.uint32)
    return per_row if shared == "compact" else np.broadcast_to(per_row, lengths_shape)
  out = rng.integers(0, steps + 3, lengths_shape).astype(np.uint32)
  out.flat[:4] = [0, 1, steps, 2**32 - 1]  # identity, identity, the whole lane, clamped
  return out


# Each way of sharing lengths with each kernel shape on a GPU; off GPUs (the lax form, not the
# kernel) each way meets a few shapes.
@pytest.mark.parametrize(
  "shared, case", in_turn_off_gpus(["per-lane", "shared", "shared-compact"], KERNEL_CASES)
)
def test_public_function_on_kernel_shapes(shared, case):
  shape, axis, dtype = case
  shared = {"per-lane": False, "shared": True, "shared-compact": "compact"}[shared]
  rng = np.random.default_rng(7)
  x = kernel_data(rng, dtype, shape)
  lengths_shape = shape[:axis] + (1,) + shape[axis + 1 :]
  expect = lambda x, n: reference.reverse_subsequences(
    x, np.broadcast_to(n, lengths_shape), axis=axis
  )
  n = _lengths(rng, shape, axis, shared=shared)
  want = expect(x, n)
  np.testing.assert_array_equal(dml.reverse_subsequences(x, n, axis=axis), want)
  jitted = jax.jit(lambda x, n: dml.reverse_subsequences(x, n, axis=axis))
  np.testing.assert_array_equal(jitted(x, n), want)
  other = _lengths(rng, shape, axis, shared=shared)
  batched = jax.vmap(lambda x, n: dml.reverse_subsequences(x, n, axis=axis))(
    np.stack([x, x[::-1]]), np.stack([n, other])
  )
  np.testing.assert_array_equal(batched[0], want)
  np.testing.assert_array_equal(batched[1], expect(x[::-1], other))


def test_gradient_on_kernel_shapes_is_the_same_reversal():
  """Each lane's reversal is its own inverse, so the gradient of sum(w * f(x)) is f(w)."""
  shape, axis = (2, 256, 64), 1
  rng = np.random.default_rng(8)
  x = rng.standard_normal(shape).astype(np.float32)
  n = _lengths(rng, shape, axis, shared=False)
  w = rng.integers(-3, 4, shape).astype(np.float32)
  grad = jax.grad(lambda x: (dml.reverse_subsequences(x, n, axis=axis) * w).sum())(x)
  np.testing.assert_array_equal(grad, reference.reverse_subsequences(w, n, axis=axis))


@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_public_function_on_64_bit_kernel_shapes(dtype, x64):
  """Eight-byte data makes four-lane strips, here held whole and held all but 1024 rows."""
  for shape in [(2, 512, 8), (2, 4608, 8)]:
    _check_64_bit(shape, dtype)


def _check_64_bit(shape, dtype):
  axis = 1
  can_run = availability.probe().mosaic_gpu and availability.probe().tma
  assert strips.applies(shape, np.dtype(dtype), axis) == can_run
  rng = np.random.default_rng(9)
  x = kernel_data(rng, dtype, shape)
  n = _lengths(rng, shape, axis, shared=False)
  want = reference.reverse_subsequences(x, n, axis=axis)
  got = jax.jit(lambda x, n: dml.reverse_subsequences(x, n, axis=axis))(x, n)
  assert got.dtype == dtype
  np.testing.assert_array_equal(got, want)
