"""The CPU's native kernels (SPLIT's and JOIN's runs, TILE's rows, the tensor layer's
transpose, the row gathers, the scans' walk, ARGMIN's and ARGMAX's pass): built with the machine's compiler, bit for bit against NumPy for every element width
transpose, the row gathers, the scans' walk, TOP_K's selection): built with the machine's compiler, bit for bit against NumPy for every element width
they take, under jit, vmap and grad, chosen by the operators on large shapes, and the lax path
where they cannot be built.

On an x86-64 machine with a C++ compiler the kernels must be available: the tests that run
them assert that first, so a machine that should build them cannot pass by falling back.
"""

import dataclasses
import functools
import os
import pathlib
import platform
import shutil
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src import buffers, reference
from dml_jax._src.kernels import (
  arg_min_max_cpu,
  cumulative_cpu,
  gather_rows_cpu,
  native_cpu,
  runs_cpu,
  tile_rows_cpu,
  top_k_cpu,
  transpose_cpu,
)
from tests.helpers import assert_bits_equal, kernel_data, kernel_indices

# With x64 off, once, in the first pass: the kernels move bytes of the widths they are given,
# whatever the mode; the 64-bit indices and elements take the `x64` fixture where tested.
pytestmark = pytest.mark.usefixtures("no_x64")

WIDTHS = [np.int8, np.float16, np.float32, np.uint32]  # 1, 2 and 4 bytes
# Bit patterns a copy must keep: NaN payloads, -0.0, infinities, a denormal.
SPECIALS = np.array([0x7FC01234, 0x80000000, 0xFF800000, 0x7F800000, 1], np.uint32)


def _can_build() -> bool:
  """x86-64 with a compiler: where the kernels must build."""
  machine = platform.machine().lower() in native_cpu.MACHINES
  compiler = os.environ.get("CXX") or any(shutil.which(c) for c in ("c++", "g++", "clang++"))
  return bool(machine and compiler)


def _native() -> bool:
  """Whether the kernels run here, built (once per test run: the run's own cache folder) and
  loaded; asserts they do where they must."""
  status = native_cpu.build()
  if _can_build():
    assert status.available, f"the native kernels should build here: {status.reason}"
  else:
    assert not status.available and status.reason
  return status.available


def _data(rng, dtype, shape):
  x = kernel_data(rng, dtype, shape)
  if np.dtype(dtype).itemsize == 4 and x.size >= SPECIALS.size:
    x.reshape(-1)[: SPECIALS.size] = SPECIALS.view(dtype)
  return x


@pytest.fixture(autouse=True)
def on_the_cpu():
  """Every computation here on the CPU, also where JAX's default device is a GPU."""
  with jax.default_device(jax.devices("cpu")[0]):
    yield


@pytest.fixture(params=["auto", *native_cpu.STORES])
def stores(request):
  """Each way the copy kernels store: by the call's size, past the caches, in them."""
  return request.param


@pytest.fixture
def small_thresholds(monkeypatch):
  """Kernels on small shapes, so that the operators' tests stay quick."""
  monkeypatch.setattr(runs_cpu, "DEFAULT", runs_cpu.RunsConfig(0, 0))
  monkeypatch.setattr(tile_rows_cpu, "DEFAULT", tile_rows_cpu.TileRowsConfig(0, 0))
  monkeypatch.setattr(transpose_cpu, "DEFAULT", transpose_cpu.TransposeConfig(min_bytes=0))
  monkeypatch.setattr(gather_rows_cpu, "DEFAULT", gather_rows_cpu.GatherRowsConfig(0, 0))
  monkeypatch.setattr(cumulative_cpu, "DEFAULT", cumulative_cpu.CumulativeConfig(0))
  monkeypatch.setattr(arg_min_max_cpu, "DEFAULT", arg_min_max_cpu.ArgMinMaxConfig(0))


def _custom_calls(f, *args) -> str:
  """The custom calls of f's compiled program."""
  text = jax.jit(f).lower(*args).compile().as_text()
  return " ".join(line for line in text.splitlines() if "custom-call(" in line)


def test_status_says_whether_the_kernels_run_here():
  native = _native()
  status = native_cpu.status()
  assert status.available == native == _can_build(), status
  assert dml.cpu.native_kernels() == status
  if status.available:
    assert status.reason == "" and os.path.isdir(status.library)
    assert list(status.kernels) == list(native_cpu.KERNELS)
    assert all(state.startswith("loaded: ") for state in status.kernels.values()), status
  else:
    assert status.reason


@pytest.mark.parametrize("dtype", WIDTHS, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize(
  "shape, axis, sizes",
  [
    ((10, 300), 0, (1, 6, 3)),  # one run per output
    ((3, 10, 300), 1, (4, 0, 6)),  # runs per leading position, an empty output
    ((5, 7, 1000), 2, (999, 1)),  # along the last axis: runs of 1 element
    ((6, 3000), 1, (1000, 2000)),  # runs longer than 256 bytes: non-temporal stores
    ((4096, 300), 0, (4000, 96)),  # several items of work (about 1 MiB each)
  ],
)
def test_split_runs_matches_np_split(dtype, shape, axis, sizes, stores):
  if not _native():
    pytest.skip(f"no native kernels here: {native_cpu.status().reason}")
  x = _data(np.random.default_rng(1), dtype, shape)
  got = jax.jit(lambda x: runs_cpu.split_runs(x, sizes, axis, stores=stores))(x)
  want = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
  assert len(got) == len(want)
  for g, w in zip(got, want, strict=True):
    assert_bits_equal(g, w)


@pytest.mark.parametrize("dtype", WIDTHS, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize(
  "shape, axis, sizes",
  [
    ((10, 300), 0, (1, 6, 3)),
    ((3, 10, 300), 1, (4, 0, 6)),
    ((5, 7, 1000), 2, (999, 1)),
    ((6, 3000), 1, (1000, 2000)),
    ((4096, 300), 0, (4000, 96)),
  ],
)
def test_join_runs_matches_np_concatenate(dtype, shape, axis, sizes, stores):
  if not _native():
    pytest.skip(f"no native kernels here: {native_cpu.status().reason}")
  rng = np.random.default_rng(6)
  inputs = []
  for size in sizes:
    piece = list(shape)
    piece[axis] = size
    inputs.append(_data(rng, dtype, tuple(piece)))
  got = jax.jit(lambda *xs: runs_cpu.join_runs(*xs, axis=axis, stores=stores))(*inputs)
  assert_bits_equal(got, np.concatenate(inputs, axis))


@pytest.mark.parametrize("dtype", WIDTHS, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize(
  "shape, repeats",
  [
    ((300,), (3,)),  # one row
    ((5, 300), (2, 3)),
    ((2, 3, 700), (3, 2, 1)),  # leading dimensions repeated, rows not
    ((4, 1, 2, 100), (1, 5, 2, 2)),
    ((1024, 1024), (2, 1)),  # several items of work
  ],
)
def test_tile_rows_matches_np_tile(dtype, shape, repeats, stores):
  if not _native():
    pytest.skip(f"no native kernels here: {native_cpu.status().reason}")
  x = _data(np.random.default_rng(2), dtype, shape)
  got = jax.jit(lambda x: tile_rows_cpu.tile_rows(x, repeats, stores=stores))(x)
  assert_bits_equal(got, np.tile(x, repeats))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32], ids=lambda t: t.__name__)
@pytest.mark.parametrize(
  "shape",
  [
    (16, 8),  # one pair of 8 x 8 blocks
    (
      37,
      13,
    ),  # rows and columns past the blocks; rows not a multiple of 8: stores through the cache
    (3, 48, 24),  # whole blocks, several matrices
    (2, 300, 40),  # a short last item of work (300 = 256 + 44 rows)
    (2, 264, 72),  # 8 rows past the 16-row blocks, non-temporal stores before them
    (2, 3, 32, 16),  # two leading dimensions
    (8, 4096, 32),  # the NHWC-to-NCHW case of 4 MiB: 128 items
    (4, 24, 520),  # long rows: NCHW to NHWC
    (0, 16, 8),  # no matrix
    (4, 0, 8),  # empty matrices
  ],
)
def test_transpose_matches_np_swapaxes(dtype, shape):
  if not _native():
    pytest.skip(f"no native kernels here: {native_cpu.status().reason}")
  x = _data(np.random.default_rng(7), dtype, shape)
  got = jax.jit(transpose_cpu.transpose)(x)
  assert_bits_equal(got, np.swapaxes(x, -1, -2))


def _row_key(shape, indices, batch_dims):
  """The NumPy index of the rows that GATHER_ND's raw index tuples pick from an input of
  `shape`: each index counted from the end where negative (signed types), then clamped into its
  dimension; batch coordinates from the tuple's place."""
  t = indices.shape[-1]
  sizes = np.array(shape[batch_dims : batch_dims + t], np.uint64)
  if np.issubdtype(indices.dtype, np.signedinteger):
    wide = indices.astype(np.int64)
    wide = np.maximum(np.where(wide < 0, wide + sizes.astype(np.int64), wide), 0)
  else:
    wide = indices
  coordinate = np.minimum(wide.astype(np.uint64), sizes - 1).astype(np.int64)
  batch = np.indices(indices.shape[:batch_dims] + indices.shape[batch_dims:-1], sparse=True)
  return tuple(batch[:batch_dims]) + tuple(coordinate[..., j] for j in range(t))


def _gather_rows_reference(x, indices, batch_dims):
  """GATHER_ND of whole rows in NumPy (`_row_key`)."""
  return x[_row_key(x.shape, indices, batch_dims)]


@pytest.mark.parametrize("dtype", WIDTHS, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("index_dtype", [np.int32, np.uint32], ids=lambda t: t.__name__)
@pytest.mark.parametrize(
  "input_shape, indices_shape, batch_dims",
  [
    ((5, 7, 64), (300, 2), 0),  # rows of 64 elements picked by (H, W) tuples
    ((4, 3, 2, 80), (7, 3), 0),  # tuples of 3
    ((3, 11, 100), (3, 50, 1), 1),  # one batch dimension (GATHER_ND1)
    ((2, 3, 9, 64), (2, 3, 5, 1), 2),  # two batch dimensions
    ((1000, 300), (2, 2000, 1), 0),  # several items of work, rows of 300 elements
    ((6, 64), (0, 1), 0),  # no tuple: an empty output
  ],
)
def test_gather_rows_matches_numpy(
  dtype, index_dtype, input_shape, indices_shape, batch_dims, stores
):
  if not _native():
    pytest.skip(f"no native kernels here: {native_cpu.status().reason}")
  rng = np.random.default_rng(9)
  x = _data(rng, dtype, input_shape)
  t = indices_shape[-1]
  size = max(input_shape[batch_dims : batch_dims + t])
  indices = kernel_indices(rng, index_dtype, indices_shape, size)
  gather = functools.partial(gather_rows_cpu.gather_rows, batch_dims=batch_dims, stores=stores)
  got = jax.jit(gather)(x, indices)
  assert_bits_equal(got, _gather_rows_reference(x, indices, batch_dims))


@pytest.mark.parametrize("index_dtype", [np.int64, np.uint64], ids=lambda t: t.__name__)
def test_gather_rows_takes_64_bit_indices_and_elements(index_dtype, x64):
  if not _native():
    pytest.skip(f"no native kernels here: {native_cpu.status().reason}")
  rng = np.random.default_rng(10)
  x = kernel_data(rng, np.float64, (9, 5, 40))
  indices = kernel_indices(rng, index_dtype, (200, 2), 9)
  indices[:4, 0] = [2**32 + 1, 2**33, 2**63 - 1, 3]  # past 32 bits: clamped, never wrapped
  if index_dtype == np.int64:
    indices[4:8, 1] = [-(2**32) - 1, -(2**63), -5, -6]
  got = gather_rows_cpu.gather_rows(jnp.asarray(x), jnp.asarray(indices), batch_dims=0)
  assert_bits_equal(got, _gather_rows_reference(x, indices, 0))


def test_the_row_kernel_under_vmap_makes_one_call():
  """A batched input is one more batch dimension (unbatched indices broadcast to it); batched
  indices into one input are more tuples, also between batch dimensions; nested vmaps fold into
  the same single call."""
  if not _native():
    pytest.skip(f"no native kernels here: {native_cpu.status().reason}")
  rng = np.random.default_rng(11)
  x = _data(rng, np.float32, (2, 3, 4, 5, 64))  # vmap, vmap, batch dimension, tuple, row
  i = kernel_indices(rng, np.int32, (2, 3, 4, 6, 1), 5)
  reference = lambda x, i, b: _gather_rows_reference(x, i, b)  # noqa: E731
  for batch_dims in (0, 1):
    gather = functools.partial(gather_rows_cpu.gather_rows, batch_dims=batch_dims)
    xs, is_ = x[0], i[0] if batch_dims else i[0, :, 0]  # (3, 4, 5, 64), (3, [4,] 6, 1)
    one = x[0, 0] if batch_dims else x[0, 0, 0]  # one input: (4, 5, 64) or (5, 64)
    for in_axes, args, want in [
      ((0, 0), (xs, is_), [reference(xs[k], is_[k], batch_dims) for k in range(3)]),
      ((None, 0), (one, is_), [reference(one, is_[k], batch_dims) for k in range(3)]),
      ((0, None), (xs, is_[0]), [reference(xs[k], is_[0], batch_dims) for k in range(3)]),
    ]:
      batched = jax.vmap(gather, in_axes=in_axes)
      assert _custom_calls(batched, *args).count("dml_jax_gather_rows") == 1, in_axes
      assert_bits_equal(batched(*args), np.stack(want), context=f"{batch_dims} {in_axes}")
  nested = jax.vmap(jax.vmap(functools.partial(gather_rows_cpu.gather_rows, batch_dims=1)))
  assert _custom_calls(nested, x, i).count("dml_jax_gather_rows") == 1
  want = [[reference(x[a, b], i[a, b], 1) for b in range(3)] for a in range(2)]
  assert_bits_equal(nested(x, i), np.array(want))


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.uint64], ids=lambda t: t.__name__)
def test_kernels_move_64_bit_elements(dtype, x64):
  if not _native():
    pytest.skip(f"no native kernels here: {native_cpu.status().reason}")
  rng = np.random.default_rng(3)
  x = kernel_data(rng, dtype, (6, 200))
  pieces = runs_cpu.split_runs(jnp.asarray(x), (2, 4), 0)
  for g, w in zip(pieces, np.split(x, [2]), strict=True):
    assert_bits_equal(g, w)
  assert_bits_equal(runs_cpu.join_runs(*pieces, axis=0), x)
  assert_bits_equal(tile_rows_cpu.tile_rows(jnp.asarray(x), (2, 3)), np.tile(x, (2, 3)))


def test_applies_to_large_shapes_with_long_runs():
  f32 = np.float32
  assert runs_cpu.applies((4096, 4096), [1024] * 4, 1, f32)  # 64 MiB, runs of 4 KiB
  assert runs_cpu.applies((4096, 1024), [2048, 2048], 0, f32)  # 16 MiB
  assert not runs_cpu.applies((2048, 1024), [1024, 1024], 0, f32)  # 8 MiB: XLA
  assert not runs_cpu.applies((16384, 256), [128, 128], 1, f32)  # runs of 512 bytes
  assert runs_cpu.applies((2048, 8192), [2048] * 4, 1, f32)  # JOIN's whole: 64 MiB, 8 KiB runs
  assert tile_rows_cpu.applies((512, 512), (4, 4), f32)  # 16 MiB out, rows of 2 KiB
  assert not tile_rows_cpu.applies((256, 512), (4, 4), f32)  # 8 MiB out
  assert not tile_rows_cpu.applies((65536, 128), (1, 4), f32)  # rows of 512 bytes
  assert transpose_cpu.applies((8, 4096, 32), (0, 2, 1), f32)  # NHWC to NCHW, 4 MiB
  assert transpose_cpu.applies((1024, 256), (1, 0), np.int32)  # 1 MiB
  assert not transpose_cpu.applies((1024, 255), (1, 0), f32)  # under 1 MiB
  assert not transpose_cpu.applies((8, 4096, 32), (1, 0, 2), f32)  # not the last two
  assert not transpose_cpu.applies((8, 4096, 32), (0, 2, 1), np.float16)  # 16-bit
  assert not transpose_cpu.applies((8, 2048, 32), (0, 2, 1), np.float64)  # 64-bit
  assert not transpose_cpu.applies((8, 65536, 3), (0, 2, 1), f32)  # 3 columns (RGB)
  assert not transpose_cpu.applies((8, 4100, 32), (0, 2, 1), f32)  # rows not a multiple of 8


def test_operators_take_the_kernels_on_large_shapes_only():
  native = _native()
  big = np.zeros((4096, 1024), np.float32)  # 16 MiB
  split = lambda x: dml.split(x, axis=1, split_sizes=(512, 512))  # noqa: E731
  tile = lambda x: dml.tile(x, repeats=(4, 4))  # noqa: E731
  assert ("dml_jax_split_runs" in _custom_calls(split, big)) == native
  assert ("dml_jax_tile_rows" in _custom_calls(tile, big[:512, :512])) == native
  join = lambda *xs: dml.join(xs, axis=0)  # noqa: E731
  assert ("dml_jax_join_runs" in _custom_calls(join, big, big[:1])) == native
  assert _custom_calls(join, big[:1024], big[:1024]) == ""  # 8 MiB
  assert _custom_calls(split, big[:2048]) == ""  # 8 MiB
  assert _custom_calls(tile, big[:256, :512]) == ""  # 8 MiB out
  nchw = _nhwc_as_nchw((8, 64, 64, 32))
  uses = "dml_jax_transpose" in _custom_calls(nchw, np.zeros(8 * 64 * 64 * 32, np.float32))
  assert uses == (native and transpose_cpu.has_avx2())
  small = _nhwc_as_nchw((2, 16, 16, 32))  # 64 KiB
  assert _custom_calls(small, np.zeros(2 * 16 * 16 * 32, np.float32)) == ""


def _row_gathers():
  """GATHER_ND, GATHER_ND1 and GATHER of rows, as (name, function of (input, indices))."""
  counts = dict(input_dimension_count=4, indices_dimension_count=3, batch_dimension_count=1)
  return [
    ("gather_nd", dml.gather_nd),
    ("gather_nd1", lambda x, i: dml.gather_nd(x, i, **counts)),
    ("gather", lambda x, i: dml.gather(x, i, axis=0, index_dimensions=1)),
  ]


def _row_gather_operands(rng, count, index_dtype=np.int32):
  """Operands of `_row_gathers()` with `count` index tuples (per batch entry, GATHER_ND1):
  rows of 64 float32, raw indices of every value class."""
  table = _data(rng, np.float32, (48, 64))
  volume = _data(rng, np.float32, (12, 10, 64))
  batched = _data(rng, np.float32, (3, 7, 5, 64))
  pairs = np.stack(
    [
      kernel_indices(rng, index_dtype, (1, count), 12),
      kernel_indices(rng, index_dtype, (1, count), 10),
    ],
    -1,
  )
  per_batch = np.stack(
    [
      kernel_indices(rng, index_dtype, (1, 3, count), 7),
      kernel_indices(rng, index_dtype, (1, 3, count), 5),
    ],
    -1,
  )
  ids = kernel_indices(rng, index_dtype, (1, count), 48)
  return [(volume, pairs), (batched, per_batch), (table, ids)]


def test_row_gathers_take_the_kernel_on_rows_of_128_bytes_or_more():
  native = _native()
  rng = np.random.default_rng(12)
  operands = _row_gather_operands(rng, 4096)  # 1 MiB outputs (3 MiB for GATHER_ND1)
  small = _row_gather_operands(rng, 16)  # 4 KiB (12 KiB): the lax path, nothing to build
  for (name, gather), (x, i), few in zip(_row_gathers(), operands, small, strict=True):
    assert ("dml_jax_gather_rows" in _custom_calls(gather, x, i)) == native, name  # 256 bytes
    narrow = x[..., :16]  # rows of 64 bytes
    assert _custom_calls(gather, narrow, i) == "", name
    assert _custom_calls(gather, *few) == "", name
  f32 = np.float32
  assert gather_rows_cpu.applies((256, 256, 256), (65536, 2), 0, f32)  # 1 KiB rows
  assert gather_rows_cpu.applies((16, 64, 64, 256), (16, 4096, 2), 1, f32)
  assert gather_rows_cpu.applies((1 << 16, 32), (8192, 1), 0, f32)  # 128 bytes, 1 MiB out
  assert not gather_rows_cpu.applies((1 << 16, 32), (8191, 1), 0, f32)  # under 1 MiB out
  assert not gather_rows_cpu.applies((1 << 16, 256), (64, 1), 0, f32)  # an embedding lookup
  assert gather_rows_cpu.applies((1 << 16, 1 << 15, 64), (4096, 2), 0, f32)  # 2**31 rows
  assert not gather_rows_cpu.applies((1 << 16, 16), (65536, 1), 0, f32)  # 64 bytes
  assert not gather_rows_cpu.applies((1 << 16, 127), (65536, 1), 0, np.int8)  # 127 bytes
  assert not gather_rows_cpu.applies((16, 64), (1024, 0), 0, f32)  # no tuple
  assert not gather_rows_cpu.applies((16, 0, 64), (1024, 2), 0, f32)  # no row to gather


def test_row_gathers_give_the_same_bits_either_way(monkeypatch, small_thresholds):
  rng = np.random.default_rng(13)
  operands = _row_gather_operands(rng, 1024)
  native = [
    jax.jit(gather)(*args) for (_, gather), args in zip(_row_gathers(), operands, strict=True)
  ]
  monkeypatch.setenv(native_cpu.SWITCH, "0")  # the kernels off
  jax.clear_caches()
  for (name, gather), args, got in zip(_row_gathers(), operands, native, strict=True):
    assert _custom_calls(gather, *args) == "", name
    assert_bits_equal(got, jax.jit(gather)(*args), context=name)
  x, i = operands[0]
  assert_bits_equal(native[0], _gather_rows_reference(x, i[0], 0)[None])


def _nhwc_as_nchw(shape):
  """ELEMENT_WISE_IDENTITY of an NHWC buffer read through strides as NCHW, written packed."""
  n, h, w, c = shape
  f32 = dml.DataType.FLOAT32
  nchw = dml.TensorDesc(f32, (n, c, h, w), strides=(h * w * c, 1, w * c, c))
  desc = dml.ElementWiseIdentityDesc(nchw, dml.TensorDesc(f32, (n, c, h, w)))

  def identity(buffer):
    output = jnp.zeros_like(buffer)
    (out,) = dml.execute(desc, inputs=[dml.Binding(buffer)], outputs=[dml.Binding(output)])
    return out

  return identity


def test_operators_give_the_same_bits_either_way(monkeypatch):
  rng = np.random.default_rng(4)
  x = _data(rng, np.float32, (4096, 1024))
  t = _data(rng, np.float32, (512, 512))
  split = jax.jit(lambda x: dml.split(x, axis=0, split_sizes=(1000, 3096)))
  tile = jax.jit(lambda x: dml.tile(x, repeats=(4, 4)))
  native = (split(x), tile(t))
  monkeypatch.setenv(native_cpu.SWITCH, "0")  # the kernels off
  jax.clear_caches()  # the operators' programs traced with the kernels
  split_lax = jax.jit(lambda x: dml.split(x, axis=0, split_sizes=(1000, 3096)))
  tile_lax = jax.jit(lambda x: dml.tile(x, repeats=(4, 4)))
  assert _custom_calls(split_lax, x) + _custom_calls(tile_lax, t) == ""
  for got, want in zip(native[0], split_lax(x), strict=True):
    assert_bits_equal(got, want)
  assert_bits_equal(native[1], tile_lax(t))
  assert_bits_equal(native[1], np.tile(t, (4, 4)))


def test_the_tensor_layer_gives_the_same_bits_either_way(monkeypatch):
  shape = (8, 64, 64, 32)
  buffer = _data(np.random.default_rng(8), np.float32, (np.prod(shape),))
  want = buffer.reshape(shape).transpose(0, 3, 1, 2).reshape(-1)
  native = jax.jit(_nhwc_as_nchw(shape))(buffer)
  assert_bits_equal(native, want)
  monkeypatch.setattr(transpose_cpu, "has_avx2", lambda: False)  # a processor without AVX2
  jax.clear_caches()
  identity = jax.jit(_nhwc_as_nchw(shape))
  assert _custom_calls(identity, buffer) == ""
  assert_bits_equal(identity(buffer), want)


def test_operators_on_kernel_shapes_under_vmap_and_grad(small_thresholds):
  native = _native()
  rng = np.random.default_rng(5)
  x = rng.standard_normal((3, 8, 512)).astype(np.float32)
  split = lambda x: dml.split(x, axis=0, split_sizes=(3, 5))  # noqa: E731
  assert ("dml_jax_split_runs" in _custom_calls(split, x[0])) == native
  batched = jax.vmap(split)(x)
  for b in range(3):
    for got, want in zip(batched, np.split(x[b], [3]), strict=True):
      assert_bits_equal(got[b], want)
  w = rng.integers(-3, 4, (5, 512)).astype(np.float32)
  grad = jax.grad(lambda x: (split(x)[1] * w).sum())(x[0])
  np.testing.assert_array_equal(grad, np.concatenate([np.zeros((3, 512), np.float32), w]))
  join = lambda x, y: dml.join([x, y], axis=1)  # noqa: E731
  assert ("dml_jax_join_runs" in _custom_calls(join, x[0], x[1])) == native
  assert_bits_equal(jax.vmap(join)(x, x[::-1]), np.concatenate([x, x[::-1]], 2))
  grad = jax.grad(lambda y: (join(x[0], y)[:, 512:] * x[2]).sum())(x[1])
  assert_bits_equal(grad, x[2])
  tile = lambda x: dml.tile(x, repeats=(2, 3))  # noqa: E731
  assert ("dml_jax_tile_rows" in _custom_calls(tile, x[0])) == native
  batched = jax.vmap(tile)(x)
  assert_bits_equal(batched, np.tile(x, (1, 2, 3)))
  v = rng.integers(-3, 4, (16, 1536)).astype(np.float32)
  grad = jax.grad(lambda x: (tile(x) * v).sum())(x[0])
  np.testing.assert_array_equal(grad, v.reshape(2, 8, 3, 512).sum((0, 2)))
  y = rng.standard_normal((3, 16, 24)).astype(np.float32)
  moved = lambda x: buffers.transpose_merged(x, (0, 2, 1))  # noqa: E731
  uses = "dml_jax_transpose" in _custom_calls(moved, y)
  assert uses == (native and transpose_cpu.has_avx2())
  assert_bits_equal(jax.vmap(moved)(y[None]), np.swapaxes(y, 1, 2)[None])
  swap = jax.vmap(lambda y: buffers.transpose(y, (1, 0)), in_axes=1)  # the batch in the middle
  z = np.swapaxes(y, 0, 1)  # (16, 3, 24): slices of (16, 24)
  assert ("dml_jax_transpose" in _custom_calls(swap, z)) == uses
  assert_bits_equal(swap(z), y.transpose(0, 2, 1))
  u = rng.integers(-3, 4, (3, 24, 16)).astype(np.float32)
  grad = jax.grad(lambda y: (moved(y) * u).sum())(y)
  np.testing.assert_array_equal(grad, np.swapaxes(u, 1, 2))


def test_scans_on_kernel_shapes_under_vmap_and_grad(small_thresholds):
  native = _native()
  x = np.random.default_rng(8).integers(-3, 4, (3, 4, 6)).astype(np.float32)
  scan = lambda x: dml.cumulative_summation(x, axis=1, has_exclusive_sum=True)  # noqa: E731
  assert ("dml_jax_cumulative" in _custom_calls(scan, x[0])) == native
  want = reference.cumulative_summation(x, axis=2, has_exclusive_sum=True)
  assert_bits_equal(jax.vmap(scan)(x), want)
  lanes_of_four = reference.cumulative_summation(x, axis=1, has_exclusive_sum=True)
  assert_bits_equal(jax.vmap(scan, in_axes=2, out_axes=2)(x), lanes_of_four)
  # d/dv_i of sum_j w_j (v_0 + .. + v_(j-1)) is the sum of the weights after i
  w = np.arange(1, 7, dtype=np.float32)
  grad = jax.grad(lambda v: (scan(v[None])[0] * w).sum())(x[0, 0])
  assert_bits_equal(grad, np.array([20, 18, 15, 11, 6, 0], np.float32))


def test_row_gathers_under_vmap_and_grad(small_thresholds):
  native = _native()
  rng = np.random.default_rng(14)
  for (name, gather), (x, i) in zip(_row_gathers(), _row_gather_operands(rng, 40), strict=True):
    assert ("dml_jax_gather_rows" in _custom_calls(gather, x, i)) == native, name
    xs = np.stack([x, -x])
    is_ = np.stack([i, i[..., ::-1, :] if name != "gather" else i[:, ::-1]])
    want = np.stack([np.asarray(jax.jit(gather)(xs[k], is_[k])) for k in range(2)])
    for in_axes, args, expected in [
      ((0, 0), (xs, is_), want),
      ((None, 0), (x, is_), np.stack([np.asarray(gather(x, is_[k])) for k in range(2)])),
      ((0, None), (xs, i), np.stack([np.asarray(gather(xs[k], i)) for k in range(2)])),
    ]:
      assert_bits_equal(jax.vmap(gather, in_axes=in_axes)(*args), expected, context=name)
    w = rng.integers(-3, 4, want.shape[1:]).astype(np.float32)
    grad = jax.grad(lambda x, g=gather, i=i, w=w: (g(x, i) * w).sum())(x)
    expected = np.zeros_like(x)  # each gathered row's weights added where it came from
    np.add.at(expected, _source_rows(name, x.shape, i), w.reshape(-1, x.shape[-1]))
    np.testing.assert_array_equal(grad, expected, err_msg=name)


def _source_rows(name, shape, indices):
  """The input rows (a NumPy index) that `_row_gathers()`'s `name` reads, output row by row."""
  if name == "gather":  # ids (1, count): 1-tuples into the table
    key = _row_key(shape, indices[0][:, None], 0)
  else:  # (1, tuples, 2), or (1, batch, tuples, 2) with one batch dimension (GATHER_ND1)
    key = _row_key(shape, indices[0], int(name == "gather_nd1"))
  return tuple(k.reshape(-1) for k in np.broadcast_arrays(*key))


def test_other_machines_and_no_compiler_say_why(monkeypatch):
  monkeypatch.setattr(platform, "machine", lambda: "aarch64")
  assert "aarch64, not x86-64" in native_cpu.status().reason
  assert not native_cpu.kernel_ready("tile_rows.cc")
  monkeypatch.setattr(platform, "machine", lambda: "x86_64")
  monkeypatch.delenv("CXX", raising=False)
  monkeypatch.setattr(shutil, "which", lambda name: None)
  status = native_cpu.status()
  assert "no C++ compiler" in status.reason and not status.available and status.kernels == {}


def test_copies_stay_in_the_cache_where_the_call_fits_three_quarters_of_it(tmp_path):
  cpuinfo = tmp_path / "cpuinfo"
  cpuinfo.write_text("processor : 0\nflags : fpu sse2 erms fsrm avx2\n")
  caches = tmp_path / "cache"
  for index, (level, size) in {0: (1, "48K"), 2: (2, "2048K"), 3: (3, "32768K")}.items():
    (caches / f"index{index}").mkdir(parents=True)
    (caches / f"index{index}" / "level").write_text(f"{level}\n")
    (caches / f"index{index}" / "size").write_text(f"{size}\n")
  assert native_cpu._in_cache_bytes(cpuinfo, caches) == 24 << 20
  (caches / "index3" / "size").write_text("1M\n")
  assert native_cpu._in_cache_bytes(cpuinfo, caches) == 768 << 10
  assert native_cpu._in_cache_bytes(cpuinfo, tmp_path / "none") == 0  # no cache folders
  cpuinfo.write_text("flags : fpu sse2 avx2\n")  # no fast strings
  assert native_cpu._in_cache_bytes(cpuinfo, caches) == 0
  assert native_cpu._in_cache_bytes(tmp_path / "missing", caches) == 0
  fits = native_cpu.in_cache_bytes()
  assert native_cpu.stores_for(fits) == ("in_cache" if fits else "streaming")
  assert native_cpu.stores_for(fits + 1) == "streaming"


def test_status_is_a_frozen_record():
  status = native_cpu.NativeStatus(False, "why", None, None)
  with pytest.raises(dataclasses.FrozenInstanceError):
    status.available = True  # type: ignore[misc]


def test_the_sources_ship_in_the_wheel():
  """pyproject.toml's package data names every file of native/ (the wheel carries the sources
  that the first use builds)."""
  import fnmatch
  import pathlib
  import tomllib

  root = pathlib.Path(__file__).resolve().parents[1]
  patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
    "package-data"
  ]["dml_jax"]
  package = root / "dml_jax"
  for path in native_cpu.SOURCES.iterdir():
    name = str(path.relative_to(package))
    assert any(fnmatch.fnmatch(name, p) for p in patterns), f"{name} is not package data"
  assert {*native_cpu.KERNELS, *native_cpu.HEADERS} <= {
    p.name for p in native_cpu.SOURCES.iterdir()
  }


SHARDED = """
import jax, numpy as np, dml_jax as dml
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
mesh = Mesh(np.array(jax.devices()), ("x",))
x = np.random.default_rng(0).standard_normal((4096, 2048)).astype(np.float32)
xs = jax.device_put(x, NamedSharding(mesh, P("x", None)))
split = jax.jit(lambda x: dml.split(x, axis=1, split_sizes=(1024, 1024)))
tile = jax.jit(lambda x: dml.tile(x, repeats=(1, 2)))
join = jax.jit(lambda a, b: dml.join([a, b], axis=1))
outs = [*split(xs), tile(xs), join(xs, xs)]
wants = [*np.split(x, 2, axis=1), np.tile(x, (1, 2)), np.concatenate([x, x], 1)]
assert all(np.array_equal(o, w) for o, w in zip(outs, wants))
print(all(o.sharding.is_equivalent_to(NamedSharding(mesh, P("x", None)), 2) for o in outs))
program = tile.lower(xs).compile().as_text()
print("custom-call(" in program, "all-gather" in program)
program = split.lower(xs).compile().as_text()  # one-device kernels: jnp's form, per shard
print("custom-call(" in program, "all-gather" in program)
from dml_jax._src import buffers
swap = jax.jit(lambda x: buffers.transpose(x, (1, 0)))
assert np.array_equal(swap(xs), x.T)
program = swap.lower(xs).compile().as_text()
print(swap(xs).sharding.spec == P(None, "x"), "custom-call(" in program, "all-gather" in program)
"""


def test_sharded_arrays_keep_their_sharding():
  """Over several CPU devices TILE's and the transpose's native kernels run per shard
  (their kernel tables' roles), SPLIT and JOIN take jnp's form (their kernel would gather an axis
  sharded along it): the outputs keep the shards, and no operand is gathered."""
  env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
  env.update(JAX_PLATFORMS="cpu", PYTHONPATH=str(pathlib.Path(__file__).resolve().parents[1]))
  result = subprocess.run(
    [sys.executable, "-c", SHARDED], env=env, capture_output=True, text=True, timeout=300
  )
  assert result.returncode == 0, result.stderr
  # Kept; TILE's kernel ran, SPLIT's did not; the transpose's ran; nothing gathered.
  words = result.stdout.split()
  assert words == ["True", "True", "False", "False", "False", "True", "True", "False"], words


def test_no_cpu_backend_means_no_kernel(monkeypatch):
  """A process without the CPU backend (JAX_PLATFORMS=cuda) never asks for the kernels."""
  from dml_jax._src.kernels import forms

  def devices(backend=None):
    raise RuntimeError(f"Unknown backend {backend}")

  monkeypatch.setattr(jax, "devices", devices)
  assert forms._native_cpu("runs.cc") is False


_SCAN_TYPES = [np.float32, np.int32, np.uint32, np.float64, np.int64, np.uint64]


@pytest.mark.parametrize("dtype", _SCAN_TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize(
  "shape, axis",
  [
    ((3, 7, 40), 1),  # lanes along a middle axis, a block of 40 inner positions
    ((21, 300), 1),  # row lanes (the last axis): groups of 4, the last of 1
    ((3, 5, 1500), 1),  # 1,500 inner positions: two blocks
    ((2000, 3), 0),  # long lanes, few of them
  ],
)
def test_cumulative_walk_matches_the_reference(dtype, shape, axis):
  if not _native():
    pytest.skip(f"no native kernels here: {native_cpu.status().reason}")
  rng = np.random.default_rng(6)
  x = _data(rng, dtype, shape)
  if np.dtype(dtype).kind == "f":  # no NaN (its bits are the platform's), no subnormal tally
    x = (rng.uniform(0.9, 1.1, shape) * rng.choice([-1, 1], shape)).astype(dtype)
  with jax.enable_x64(np.dtype(dtype).itemsize == 8):
    for reverse, exclusive, product in [
      (False, False, False),
      (True, True, False),
      (True, False, True),
      (False, True, True),
    ]:
      walk = functools.partial(
        cumulative_cpu.cumulative, axis=axis, reverse=reverse, exclusive=exclusive, product=product
      )
      oracle = reference.cumulative_product if product else reference.cumulative_summation
      flag = "has_exclusive_product" if product else "has_exclusive_sum"
      want = oracle(
        x, axis=axis, axis_direction="DECREASING" if reverse else "INCREASING", **{flag: exclusive}
      )
      assert_bits_equal(jax.jit(walk)(x), want)


def test_the_scans_take_the_walk_on_large_shapes_the_same_bits(monkeypatch):
  native = _native()
  x = np.random.default_rng(7).uniform(-2, 2, (128, 128)).astype(np.float32)  # 64 KiB
  scan = lambda x: dml.cumulative_summation(x, axis=0, axis_direction="DECREASING")  # noqa: E731
  assert ("dml_jax_cumulative" in _custom_calls(scan, x)) == native
  assert _custom_calls(scan, x[:64]) == ""  # 32 KiB
  assert _custom_calls(scan, x.astype(np.float16)) == ""  # FLOAT16 keeps the lax form
  got = jax.jit(scan)(x)
  monkeypatch.setenv(native_cpu.SWITCH, "0")  # the kernels off
  jax.clear_caches()
  assert _custom_calls(scan, x) == ""
  assert_bits_equal(got, jax.jit(scan)(x))
  assert_bits_equal(got, reference.cumulative_summation(x, axis=0, axis_direction="DECREASING"))


def _tied_data(rng, dtype, shape):
  """Few distinct values, so that lanes tie often: for floats both zeros, both infinities and
  NaNs of both signs and several payloads (all of which tie); for integers the extremes."""
  if np.dtype(dtype).kind == "f":
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    nans = {"float32": [0x7FC01234, 0xFFC00001, 0x7F800001], "float16": [0x7E01, 0xFC01, 0x7C01]}
    numbers = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, np.inf, -np.inf], dtype)
    values = np.concatenate([numbers, np.array(nans[np.dtype(dtype).name], bits).view(dtype)])
  else:
    info = np.iinfo(dtype)
    values = np.array([info.min, info.max, 0, 1, info.max - 1], dtype)
  x = rng.choice(values, shape)
  x[0, 0] = values[0]  # a lane without NaN or infinities: ties among numbers decide it
  x[0, 0, :] = values[0]
  return x


@pytest.mark.parametrize("dtype", sorted(arg_min_max_cpu.DTYPES, key=str), ids=str)
def test_arg_min_max_pass_matches_the_reference(dtype):
  """Rows (the last axis: two registers of lanes and a tail) and columns (an earlier axis),
  with ties among numbers, zeros of both signs and NaNs everywhere; FLOAT32 in all four
  combinations of extreme and tie rule, the other types in two."""
  if not _native():
    pytest.skip(f"no native kernels here: {native_cpu.status().reason}")
  x = _tied_data(np.random.default_rng(9), dtype, (3, 37, 40))
  every = [(True, False), (False, True), (True, True), (False, False)]
  combinations = every if dtype == np.float32 else every[:2]
  for axis in (1, 2):
    for largest, last_wins in combinations:
      pick = functools.partial(
        arg_min_max_cpu.arg_min_max,
        axis=axis,
        largest=largest,
        last_wins=last_wins,
        index_dtype=np.dtype(np.int32),
      )
      oracle = reference.argmax if largest else reference.argmin
      direction = "DECREASING" if last_wins else "INCREASING"
      want = oracle(x, axes=(axis,), axis_direction=direction).reshape(np.delete(x.shape, axis))
      np.testing.assert_array_equal(jax.jit(pick)(x), want.astype(np.int32))


def test_argmax_takes_the_pass_on_large_shapes_the_same_bits(monkeypatch):
  """The operators take the pass from 64 KiB, on any of the reduced axes (the lax form along the
  last axis, INCREASING, and the two reductions elsewhere give the same positions)."""
  native = _native()
  rng = np.random.default_rng(10)
  x = _tied_data(rng, np.float32, (2, 128, 64))  # 64 KiB
  argmax = lambda x: dml.argmax(x, axes=(2,), output_data_type="INT32")  # noqa: E731
  argmin = lambda x: dml.argmin(x, axes=(0, 1), axis_direction="DECREASING")  # noqa: E731
  assert ("dml_jax_arg_min_max" in _custom_calls(argmax, x)) == native
  assert ("dml_jax_arg_min_max" in _custom_calls(argmin, x)) == native
  assert _custom_calls(argmax, x[:1]) == ""  # 32 KiB
  assert _custom_calls(argmax, np.zeros(x.shape, np.int8)) == ""  # INT8 keeps the lax form
  got = [jax.jit(argmax)(x), jax.jit(argmin)(x)]
  assert_bits_equal(got[0], reference.argmax(x, axes=(2,)).astype(np.int32))
  assert_bits_equal(got[1], reference.argmin(x, axes=(0, 1), axis_direction="DECREASING"))
  monkeypatch.setenv(native_cpu.SWITCH, "0")  # the kernels off
  jax.clear_caches()
  assert _custom_calls(argmax, x) == ""
  assert_bits_equal(got[0], jax.jit(argmax)(x))
  assert_bits_equal(got[1], jax.jit(argmin)(x))


def test_arg_min_max_pass_under_vmap_and_grad_and_64_bit_positions(small_thresholds, x64):
  native = _native()
  x = np.random.default_rng(11).integers(-2, 3, (3, 5, 20)).astype(np.float32)
  argmin = lambda x: dml.argmin(x, axes=(1,), output_data_type="UINT64")  # noqa: E731
  assert ("dml_jax_arg_min_max" in _custom_calls(argmin, x[0])) == native
  got = jax.vmap(argmin)(x)
  assert got.dtype == np.uint64
  assert_bits_equal(got, reference.argmin(x, axes=(2,)).astype(np.uint64))
  # The positions carry no gradient; the values they pick do.
  weight = lambda v: (v * dml.argmax(v, axes=(1,)).astype(v.dtype)).sum()  # noqa: E731
  grad = jax.grad(weight)(x[0])
  want = np.broadcast_to(reference.argmax(x[0], axes=(1,)).astype(np.float32), x[0].shape)
  assert_bits_equal(grad, want)


def _tied_lanes(rng, dtype, shape):
  """Lanes of few distinct values (ties everywhere); floats with both zeros, both infinities
  and NaNs of two payloads and signs, which rank equal."""
  x = rng.integers(-3, 4, shape).astype(dtype)
  if np.dtype(dtype).kind == "f":
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    nans = [np.nan, -np.nan, np.array(0x7FC01234, np.uint32).view(np.float32)]
    specials = np.array([*nans, -0.0, 0.0, np.inf, -np.inf], dtype)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, 3 * specials.size, replace=False)] = np.tile(specials, 3)
    assert np.unique(flat.view(bits)).size > 7 + 4  # the payloads kept
  return x


@pytest.mark.parametrize(
  "dtype, cases",
  [
    (np.float32, [((6, 300), 1, 7), ((4, 33), 1, 33), ((2, 40, 37), 1, 1), ((500,), 0, 40)]),
    (np.uint32, [((6, 300), 1, 7), ((3, 20, 5), 1, 20)]),
    (np.float64, [((6, 300), 1, 300), ((3, 20, 17), 1, 4)]),
  ],
  ids=lambda v: np.dtype(v).name if isinstance(v, type) else "",
)
def test_top_k_selection_matches_the_reference(dtype, cases):
  """Both orders, K of 1 and of the whole lane, row lanes and lanes along an earlier axis (a
  full block of 16 neighbours and a partial one), tie-heavy lanes, NaN, +-0 and infinities."""
  if not _native():
    pytest.skip(f"no native kernels here: {native_cpu.status().reason}")
  rng = np.random.default_rng(9)
  with jax.enable_x64(np.dtype(dtype).itemsize == 8):
    for shape, axis, k in cases:
      x = _tied_lanes(rng, dtype, shape)
      if np.dtype(dtype).kind == "u":
        x = x.view(np.int32).astype(dtype) ^ dtype(1 << 31)  # both halves of the range
      for descending in (True, False):
        got = top_k_cpu.top_k(x, axis=axis, k=k, descending=descending)
        direction = "DECREASING" if descending else "INCREASING"
        want = reference.top_k1(x, axis=axis, k=k, axis_direction=direction)
        context = f"{shape} axis {axis} k {k} {direction}"
        assert_bits_equal(got[0], want[0], context=context)
        assert_bits_equal(got[1], want[1], context=context)


def test_top_k_takes_the_selection_on_large_shapes_the_same_bits(monkeypatch):
  native = _native()
  x = _tied_lanes(np.random.default_rng(10), np.float32, (64, 32))  # 8 KiB
  top_k1 = lambda x: dml.top_k1(x, axis=0, k=5, axis_direction="INCREASING")  # noqa: E731
  assert ("dml_jax_top_k" in _custom_calls(top_k1, x)) == native
  assert "dml_jax_top_k" not in _custom_calls(top_k1, x[:32])  # 4 KiB
  assert "dml_jax_top_k" not in _custom_calls(top_k1, x.astype(np.float16))  # the lax form
  got = jax.jit(top_k1)(x)
  want = reference.top_k1(x, axis=0, k=5, axis_direction="INCREASING")
  for g, w in zip(got, want, strict=True):
    assert_bits_equal(g, w)
  # The gradient is the lax form's: the cotangent of each value lands on its position.
  weights = np.arange(5 * 32, dtype=np.float32).reshape(5, 32)
  grad = jax.grad(lambda x: (top_k1(x)[0] * weights).sum())(x)
  expected = np.zeros_like(x)
  np.put_along_axis(expected, want[1].astype(np.int64), weights, axis=0)
  assert_bits_equal(grad, expected)
  # Under vmap: the batch joins the lanes.
  lanes = lambda x: dml.top_k(x, axis=1, k=3)  # noqa: E731
  batched = np.stack([x, x[::-1]])
  assert ("dml_jax_top_k" in _custom_calls(jax.vmap(lanes), batched)) == native
  got = jax.vmap(lanes)(batched)
  want = reference.top_k(batched, axis=2, k=3)
  assert_bits_equal(got[0], want[0])
  assert_bits_equal(got[1], want[1])
  monkeypatch.setenv(native_cpu.SWITCH, "0")  # the kernels off
  jax.clear_caches()
  assert "dml_jax_top_k" not in _custom_calls(top_k1, x)
