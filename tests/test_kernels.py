"""The GPU kernels: GATHER_ELEMENTS along the last axis, and GATHER_ND's row copies.

Their bodies run here in Pallas's interpret mode (any backend), against the reference,
for every data type they take and every index type and value class; the public
functions are checked on shapes that select a kernel (on a CUDA GPU they run the
kernel, elsewhere the lax path), eagerly, under jit, vmap and grad.
"""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src import reference
from dml_jax._src.kernels import (
  availability,
  cumulative_lanes_triton,
  gather_elements_rows_triton,
  gather_elements_strips_triton,
  gather_nd_rows_triton,
  one_hot_tiles_triton,
  scatter_elements_rows_triton,
  slice_rows_triton,
  space_to_depth_rows_triton,
  tile_copies_triton,
  tile_rows_triton,
)
from dml_jax._src.ops.one_hot import _on_positions
from tests.helpers import (
  assert_bits_equal,
  in_turn,
  in_turn_off_gpus,
  kernel_data,
  kernel_indices,
)

# The kernels' tests run with x64 off, except those that take the `x64` fixture for 64-bit
# indices or data: once, in the first pass (the kernels' 32-bit paths do not depend on the
# mode; their 64-bit paths are pinned where they are tested).
pytestmark = pytest.mark.usefixtures("no_x64")

DATA_TYPES = [np.float32, np.float16, np.int32, np.uint32, np.int16, np.uint16, np.int8, np.uint8]
# The gathers' bodies copy elements and never read them as numbers: an unsigned type moves the
# same bits as the signed one of its width (kernel_data fills either over its whole range).
COPY_TYPES = [np.float32, np.float16, np.int32, np.int16, np.int8]


def _without_pallas_triton(monkeypatch):
  """As where `jax.experimental.pallas.triton` cannot be imported."""
  without = dataclasses.replace(availability.probe(), pallas_triton=False)
  monkeypatch.setattr(availability, "probe", lambda: without)


@pytest.mark.parametrize("data_type, index_type", in_turn(COPY_TYPES, [np.int32, np.uint32]))
def test_kernel_body_matches_reference(data_type, index_type):
  rng = np.random.default_rng(0)
  x = kernel_data(rng, data_type, (3, 2, 300))
  i = kernel_indices(rng, index_type, (3, 2, 128), 300)
  got = gather_elements_rows_triton.gather_along_last_axis(
    jnp.asarray(x), jnp.asarray(i), interpret=True
  )
  assert_bits_equal(got, reference.gather_elements(x, i, axis=2))


@pytest.mark.parametrize("index_type", [np.int64, np.uint64], ids=["int64", "uint64"])
def test_kernel_body_keeps_64_bit_indices_wide(index_type, x64):
  rng = np.random.default_rng(1)
  x = kernel_data(rng, np.float32, (2, 200))
  i = kernel_indices(rng, index_type, (2, 128), 200)
  i[0, 4:8] = [2**32 + 1, 2**40, 2**63 - 1, 2**33 + 2]  # never read element 1 or 2
  got = gather_elements_rows_triton.gather_along_last_axis(
    jnp.asarray(x), jnp.asarray(i), interpret=True
  )
  np.testing.assert_array_equal(got, reference.gather_elements(x, i, axis=1))


def test_kernel_applies_to_wide_power_of_two_rows_on_the_last_axis():
  applies = gather_elements_rows_triton.applies
  assert applies((8, 8192), (8, 8192), np.dtype(np.float32), 1)
  assert applies((4, 3, 300), (4, 3, 128), np.dtype(np.int8), 2)
  assert not applies((8, 8192), (8, 8192), np.dtype(np.float32), 0)  # not the last axis
  assert not applies((8, 300), (8, 100), np.dtype(np.float32), 1)  # not a power of two
  assert not applies((8, 64), (8, 64), np.dtype(np.float32), 1)  # too narrow
  assert not applies((8, 40000), (8, 128), np.dtype(np.float32), 1)  # row beyond L1
  assert not applies((8, 256), (8, 128), np.dtype(np.float64), 1)  # 64-bit data: lax path


def test_kernel_never_applies_without_pallas_triton(monkeypatch):
  _without_pallas_triton(monkeypatch)
  assert not gather_elements_rows_triton.applies((8, 8192), (8, 8192), np.dtype(np.float32), 1)
  monkeypatch.undo()
  assert gather_elements_rows_triton.applies((8, 8192), (8, 8192), np.dtype(np.float32), 1)


# (input shape, indices shape, axis) that select a GATHER_ELEMENTS kernel on CUDA GPUs: the row
# kernel (the last axis) and the strip kernel (an earlier one).
KERNEL_SHAPES = {
  "rows": [((5, 512), (5, 256), 1), ((3, 256), (3, 128), 1)],
  "strips": [((24, 64), (16, 64), 0), ((12, 32), (8, 32), 0)],
}


@pytest.mark.parametrize("data_type", [np.float32, np.int8], ids=["float32", "int8"])
@pytest.mark.parametrize("kernel", list(KERNEL_SHAPES))
def test_public_function_on_kernel_shapes(data_type, kernel):
  input_shape, indices_shape, axis = KERNEL_SHAPES[kernel][0]
  rng = np.random.default_rng(2)
  x = kernel_data(rng, data_type, input_shape)
  i = kernel_indices(rng, np.int32, indices_shape, input_shape[axis])
  want = reference.gather_elements(x, i, axis=axis)
  np.testing.assert_array_equal(dml.gather_elements(x, i, axis=axis), want)
  jitted = jax.jit(lambda x, i: dml.gather_elements(x, i, axis=axis))
  np.testing.assert_array_equal(jitted(x, i), want)
  batched = jax.vmap(lambda x, i: dml.gather_elements(x, i, axis=axis))(
    np.stack([x, x]), np.stack([i, i[::-1]])
  )
  np.testing.assert_array_equal(batched[1], reference.gather_elements(x, i[::-1], axis=axis))


@pytest.mark.parametrize("kernel", list(KERNEL_SHAPES))
def test_gradient_on_kernel_shapes_is_the_scatter_add(kernel):
  input_shape, indices_shape, axis = KERNEL_SHAPES[kernel][1]
  rng = np.random.default_rng(3)
  x = rng.standard_normal(input_shape).astype(np.float32)
  i = kernel_indices(rng, np.int32, indices_shape, input_shape[axis])
  w = rng.integers(-3, 4, indices_shape).astype(np.float32)
  grad = jax.grad(lambda x: (dml.gather_elements(x, i, axis=axis) * w).sum())(x)
  want = np.zeros_like(x)
  for position in np.ndindex(*indices_shape):
    source = list(position)
    source[axis] = reference.normalize_index(int(i[position]), input_shape[axis], signed=True)
    want[tuple(source)] += w[position]
  np.testing.assert_array_equal(grad, want)


# -- GATHER_ND's row copies ----------------------------------------------------------------

# (input shape, indices shape, batch dimension count): rows of 256 or 512 elements.
ROW_COPY_CASES = [
  ((6, 5, 256), (1, 7, 2), 0),
  ((9, 512), (12, 1), 0),
  ((3, 4, 5, 256), (3, 6, 2), 1),
  ((2, 3, 4, 5, 256), (2, 3, 4, 2), 2),
]


def _raw_nd_indices(rng, index_type, shape, sizes):
  """Indices of every value class for GATHER_ND's tuples: in range, negative, far out."""
  out = np.stack([kernel_indices(rng, index_type, shape[:-1], n) for n in sizes], axis=-1)
  return out.astype(index_type)


@pytest.mark.parametrize("data_type, case", in_turn(COPY_TYPES, ROW_COPY_CASES))
def test_row_copy_body_matches_reference(data_type, case):
  input_shape, indices_shape, b = case
  rng = np.random.default_rng(4)
  t = indices_shape[-1]
  x = kernel_data(rng, data_type, input_shape)
  i = _raw_nd_indices(rng, np.int32, indices_shape, input_shape[b : b + t])
  got = gather_nd_rows_triton.copy_rows(
    jnp.asarray(x), jnp.asarray(i), batch_dims=b, interpret=True
  )
  padded = i.reshape((1,) * (x.ndim - i.ndim) + i.shape)  # the reference wants equal ranks
  want = reference.gather_nd(
    x,
    padded,
    input_dimension_count=x.ndim,
    indices_dimension_count=i.ndim,
    batch_dimension_count=b,
  )
  assert_bits_equal(np.asarray(got).ravel(), want.ravel())
  assert got.shape == indices_shape[:-1] + input_shape[b + t :]


@pytest.mark.parametrize("index_type", [np.uint32, np.int64, np.uint64], ids=lambda t: t.__name__)
def test_row_copy_body_takes_every_index_type(index_type, request):
  if np.dtype(index_type).itemsize == 8:
    request.getfixturevalue("x64")
  rng = np.random.default_rng(7)
  x = kernel_data(rng, np.float32, (3, 4, 5, 256))
  i = _raw_nd_indices(rng, index_type, (3, 6, 2), (4, 5))
  if np.dtype(index_type).itemsize == 8:
    i[0, :3] = [[2**32 + 1, 2**40], [2**63 - 1, 2**33 + 2], [2**32, 2**32 + 4]]  # never wrap
  got = gather_nd_rows_triton.copy_rows(
    jnp.asarray(x), jnp.asarray(i), batch_dims=1, interpret=True
  )
  want = reference.gather_nd(
    x, i[None], input_dimension_count=4, indices_dimension_count=3, batch_dimension_count=1
  )
  np.testing.assert_array_equal(np.asarray(got).ravel(), want.ravel())


def test_row_copies_apply_to_wide_power_of_two_rows():
  applies = gather_nd_rows_triton.applies
  f32, i8 = np.dtype(np.float32), np.dtype(np.int8)
  assert applies((1024, 1024, 256), 0, 2, f32)  # 1 KiB rows
  assert applies((64, 128, 128, 256), 1, 2, f32)  # GATHER_ND1
  assert applies((8, 16, 1024), 0, 1, i8)
  assert applies((8, 16, 4, 4096), 0, 2, np.dtype(np.float16))
  assert applies((8, 16, 64), 0, 2, f32)  # 256 B rows
  assert not applies((8, 16, 32), 0, 2, f32)  # 128 B rows: below the measured gain
  assert not applies((8, 16, 300), 0, 2, f32)  # not a power of two
  assert not applies((8, 4, 4, 256), 0, 3, f32)  # a 3-tuple: blocks of (rows, 3)
  assert not applies((8, 32768), 0, 1, f32)  # 128 KiB rows: beyond a program's registers
  assert not applies((8, 256), 0, 1, np.dtype(np.float64))  # 64-bit data: lax path
  assert not applies((2**16, 2**15, 256), 0, 2, f32)  # 2**31 rows: no int32 row number
  # Triton's offsets into the table are 32-bit: inputs of 2**31 elements or more take XLA's
  # gather (tests/test_big_tensors.py read wrong rows on an H100 before this bound).
  assert applies((2**21 - 1, 1024), 0, 1, i8)
  assert not applies((2**21 + 1, 1024), 0, 1, i8)


def test_row_copies_never_apply_without_pallas_triton(monkeypatch):
  _without_pallas_triton(monkeypatch)
  assert not gather_nd_rows_triton.applies((1024, 1024, 256), 0, 2, np.dtype(np.float32))
  monkeypatch.undo()
  assert gather_nd_rows_triton.applies((1024, 1024, 256), 0, 2, np.dtype(np.float32))


@pytest.mark.parametrize("data_type", [np.float32, np.int8], ids=["float32", "int8"])
def test_gather_nd_on_row_copy_shapes(data_type):
  rng = np.random.default_rng(5)
  x = kernel_data(rng, data_type, (4, 6, 1024))
  i = _raw_nd_indices(rng, np.int32, (1, 8, 2), (4, 6))
  want = reference.gather_nd(x, i)
  np.testing.assert_array_equal(dml.gather_nd(x, i), want)
  np.testing.assert_array_equal(jax.jit(dml.gather_nd)(x, i), want)
  batched = jax.vmap(dml.gather_nd)(np.stack([x, x[::-1]]), np.stack([i, i[:, ::-1]]))
  np.testing.assert_array_equal(batched[1], reference.gather_nd(x[::-1], i[:, ::-1]))
  counts = dict(input_dimension_count=3, indices_dimension_count=3, batch_dimension_count=1)
  j = _raw_nd_indices(rng, np.int32, (4, 8, 1), (6,))
  np.testing.assert_array_equal(
    jax.jit(lambda x, j: dml.gather_nd(x, j, **counts))(x, j),
    reference.gather_nd(x, j, **counts),
  )


def test_gather_nd_gradient_on_row_copy_shapes_is_the_scatter_add():
  rng = np.random.default_rng(6)
  x = rng.standard_normal((3, 4, 256)).astype(np.float32)
  i = _raw_nd_indices(rng, np.int32, (1, 6, 2), (3, 4))
  w = rng.integers(-3, 4, (1, 6, 256)).astype(np.float32)
  grad = jax.grad(lambda x: (dml.gather_nd(x, i) * w).sum())(x)
  want = np.zeros_like(x)
  for p in range(6):
    r = reference.normalize_index(int(i[0, p, 0]), 3, signed=True)
    c = reference.normalize_index(int(i[0, p, 1]), 4, signed=True)
    want[r, c] += w[0, p]
  np.testing.assert_array_equal(grad, want)


# -- GATHER_ELEMENTS along an outer axis: the strip kernel ---------------------------------

# (input shape, indices shape, axis): strips of 32 inner columns, 8 or more rows a block.
STRIP_CASES = [
  ((40, 64), (16, 64), 0),
  ((3, 20, 2, 32), (3, 8, 2, 32), 1),
  ((2, 50, 96), (2, 24, 96), 1),
]


@pytest.mark.parametrize("data_type, case", in_turn(COPY_TYPES, STRIP_CASES))
def test_strip_body_matches_reference(data_type, case):
  input_shape, indices_shape, axis = case
  rng = np.random.default_rng(8)
  x = kernel_data(rng, data_type, input_shape)
  i = kernel_indices(rng, np.int32, indices_shape, input_shape[axis])
  got = gather_elements_strips_triton.gather_in_strips(
    jnp.asarray(x), jnp.asarray(i), axis=axis, interpret=True
  )
  want = reference.gather_elements(x, i, axis=axis)
  assert_bits_equal(got, want)


@pytest.mark.parametrize("index_type", [np.uint32, np.int64, np.uint64], ids=lambda t: t.__name__)
def test_strip_body_takes_every_index_type(index_type, request):
  if np.dtype(index_type).itemsize == 8:
    request.getfixturevalue("x64")
  rng = np.random.default_rng(9)
  x = kernel_data(rng, np.float32, (20, 64))
  i = kernel_indices(rng, index_type, (8, 64), 20)
  if np.dtype(index_type).itemsize == 8:
    i[0, 4:8] = [2**32 + 1, 2**40, 2**63 - 1, 2**33 + 2]  # never wrap
  got = gather_elements_strips_triton.gather_in_strips(
    jnp.asarray(x), jnp.asarray(i), axis=0, interpret=True
  )
  np.testing.assert_array_equal(got, reference.gather_elements(x, i, axis=0))


def test_strips_apply_before_the_last_axis_to_whole_strips():
  applies = gather_elements_strips_triton.applies
  f32 = np.dtype(np.float32)
  assert applies((8192, 8192), (8192, 8192), f32, 0)
  assert applies((4, 2048, 1024), (4, 2048, 1024), np.dtype(np.int8), 1)
  assert applies((40, 2, 16), (8, 2, 16), f32, 0)  # inner size 32 over two dimensions
  assert not applies((64, 64), (64, 64), f32, 1)  # the last axis: the row kernel's
  assert not applies((64, 48), (64, 48), f32, 0)  # 48 columns: no whole strips
  assert not applies((64, 64), (12, 64), f32, 0)  # 12 rows: blocks of 4
  assert not applies((64, 64), (64, 64), np.dtype(np.float64), 0)  # 64-bit data
  assert not applies((2**16, 2**15), (8, 2**15), f32, 0)  # 2**31 elements: int32 offsets


def test_strips_never_apply_without_pallas_triton(monkeypatch):
  _without_pallas_triton(monkeypatch)
  assert not gather_elements_strips_triton.applies((64, 64), (64, 64), np.dtype(np.float32), 0)
  monkeypatch.undo()
  assert gather_elements_strips_triton.applies((64, 64), (64, 64), np.dtype(np.float32), 0)


# --------------------------------------------------------------------------- #
# TILE: the read-once copies kernel
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
  "data_type, case",
  in_turn(
    DATA_TYPES[::3],
    [((4, 256), (3, 1)), ((2, 3, 128), (1, 4, 1)), ((2, 2, 512), (2, 1, 1)), ((5, 1024), (1, 2))],
  ),
)
def test_tile_copies_body_matches_np_tile(data_type, case):
  shape, repeats = case
  x = kernel_data(np.random.default_rng(7), data_type, shape)
  out = tile_copies_triton.tile_copies(jnp.asarray(x), repeats, interpret=True)
  assert_bits_equal(out, np.tile(x, repeats))


def test_tile_copies_apply_to_one_repeated_dimension_of_a_large_input():
  applies = tile_copies_triton.applies
  f32 = np.dtype(np.float32)
  assert applies((4096, 4096), (4, 1), f32)
  assert applies((64, 512, 512), (1, 3, 1), f32)  # any count, 1 MiB runs
  assert not applies((4096, 4096), (4, 4), f32)  # two repeated dimensions
  assert not applies((4096, 4096), (1, 1), f32)  # nothing repeated
  assert not applies((1024, 1024), (4, 1), f32)  # 4 MiB: L2 serves XLA's loop
  assert not applies((1 << 20, 2), (1, 4), f32)  # 8-byte runs
  assert not applies((4096, 4096), (4, 1), np.dtype(np.float64))  # 64-bit data: lax path
  assert not applies((1 << 14, 1 << 14), (16, 1), f32)  # 2**32 output elements
  _small = tile_copies_triton.CopiesConfig(min_inner_bytes=1024, min_input_bytes=0)
  assert applies((4, 256), (3, 1), f32, _small)


def test_tile_copies_never_apply_without_pallas_triton(monkeypatch):
  _without_pallas_triton(monkeypatch)
  assert not tile_copies_triton.applies((4096, 4096), (4, 1), np.dtype(np.float32))


@pytest.mark.parametrize("data_type", [np.float32, np.int8], ids=["float32", "int8"])
def test_tile_on_copies_kernel_shapes(data_type, monkeypatch):
  # Small thresholds, so that these shapes take the kernel on CUDA GPUs (the lax path elsewhere).
  small = tile_copies_triton.CopiesConfig(min_inner_bytes=1024, min_input_bytes=0)
  monkeypatch.setattr(tile_copies_triton, "DEFAULT", small)
  x = kernel_data(np.random.default_rng(8), data_type, (6, 4, 512))
  _check_tile(x, [(3, 1, 1), (1, 2, 1)])


def _check_tile(x, repeats_list):
  """dml.tile gives np.tile's values for each repeats, eagerly and jitted, and batched by vmap
  for the first."""
  for repeats in repeats_list:
    want = np.tile(x, repeats)
    np.testing.assert_array_equal(dml.tile(x, repeats=repeats), want)
    np.testing.assert_array_equal(jax.jit(lambda x, r=repeats: dml.tile(x, repeats=r))(x), want)
  first = repeats_list[0]
  batched = jax.vmap(lambda x: dml.tile(x, repeats=first))(np.stack([x, x[::-1]]))
  np.testing.assert_array_equal(batched[1], np.tile(x[::-1], first))


def test_tile_gradient_on_copies_kernel_shapes_sums_the_copies(monkeypatch):
  small = tile_copies_triton.CopiesConfig(min_inner_bytes=1024, min_input_bytes=0)
  monkeypatch.setattr(tile_copies_triton, "DEFAULT", small)
  rng = np.random.default_rng(9)
  x = rng.standard_normal((4, 512)).astype(np.float32)
  w = rng.integers(-3, 4, (12, 512)).astype(np.float32)
  grad = jax.grad(lambda x: (dml.tile(x, repeats=(3, 1)) * w).sum())(x)
  np.testing.assert_array_equal(grad, w.reshape(3, 4, 512).sum(0))


# --------------------------------------------------------------------------- #
# TILE: the row-copies kernel (repeats on the last two dimensions)
# --------------------------------------------------------------------------- #

_SMALL_ROW_BLOCKS = tile_rows_triton.RowCopiesConfig(
  min_output_bytes=0, min_block_bytes=256, max_block_bytes=1024
)


@pytest.mark.parametrize(
  "data_type, case",
  in_turn(
    DATA_TYPES[::3],
    [
      ((4, 256), (3, 2)),
      ((2, 3, 5, 512), (1, 1, 2, 3)),  # leading dimensions, several blocks a row
      ((6, 256), (2, 1)),  # only the rows repeated
      ((7, 1024), (1, 3)),  # only the columns (the body takes it; `applies` does not)
    ],
  ),
)
def test_tile_rows_body_matches_np_tile(data_type, case):
  shape, repeats = case
  x = kernel_data(np.random.default_rng(17), data_type, shape)
  out = tile_rows_triton.tile_rows(
    jnp.asarray(x), repeats, config=_SMALL_ROW_BLOCKS, interpret=True
  )
  assert_bits_equal(out, np.tile(x, repeats))


def test_tile_rows_apply_to_repeated_rows_of_large_outputs():
  applies = tile_rows_triton.applies
  f32 = np.dtype(np.float32)
  assert applies((1024, 1024), (4, 4), f32)  # the layout target's case: 64 MiB out
  assert applies((8, 256, 1024), (1, 4, 2), f32)  # leading dimensions not repeated
  assert applies((1024, 1024), (4, 1), f32)  # an input in L2: the copies kernel does not apply
  assert not applies((1024, 4096), (1, 4), f32)  # only the last dimension: XLA's loop
  assert not applies((4, 1024, 1024), (2, 2, 2), f32)  # a leading dimension repeated
  assert applies((256, 1024), (4, 4), f32)  # a 16 MiB output
  assert not applies((128, 1024), (4, 4), f32)  # 8 MiB: XLA's loop, which can fuse
  assert not applies((1024, 1000), (4, 4), f32)  # blocks of 8 elements
  assert not applies((1024, 1024), (4, 4), np.dtype(np.float64))  # 64-bit data: lax path
  assert not applies((512, 1024), (16, 8), f32)  # 128 copies a program
  assert not applies((1 << 15, 1 << 14), (4, 1), np.dtype(np.int8))  # 2**31 output elements


def test_tile_rows_never_apply_without_pallas_triton(monkeypatch):
  _without_pallas_triton(monkeypatch)
  assert not tile_rows_triton.applies((1024, 1024), (4, 4), np.dtype(np.float32))


def test_tile_on_rows_kernel_shapes_carries_the_kernel():
  """The program of a kernel shape holds the kernel where Pallas Triton imports (in the traced
  program: lowering it for CUDA needs a GPU from jax 0.12 on)."""
  x = np.zeros((1024, 1024), np.float32)
  jaxpr = str(jax.make_jaxpr(lambda x: dml.tile(x, repeats=(4, 4)))(x))
  assert ("pallas_call" in jaxpr) == availability.probe().pallas_triton


@pytest.mark.parametrize("data_type", [np.float32, np.int8], ids=["float32", "int8"])
def test_tile_on_rows_kernel_shapes(data_type, monkeypatch):
  # Small thresholds, so that these shapes take the kernel on CUDA GPUs (the lax path elsewhere).
  monkeypatch.setattr(tile_rows_triton, "DEFAULT", _SMALL_ROW_BLOCKS)
  x = kernel_data(np.random.default_rng(18), data_type, (2, 6, 1024))
  _check_tile(x, [(1, 3, 2), (1, 2, 1)])


def test_tile_gradient_on_rows_kernel_shapes_sums_the_copies(monkeypatch):
  monkeypatch.setattr(tile_rows_triton, "DEFAULT", _SMALL_ROW_BLOCKS)
  rng = np.random.default_rng(19)
  x = rng.standard_normal((4, 512)).astype(np.float32)
  w = rng.integers(-3, 4, (12, 1024)).astype(np.float32)
  grad = jax.grad(lambda x: (dml.tile(x, repeats=(3, 2)) * w).sum())(x)
  np.testing.assert_array_equal(grad, w.reshape(3, 4, 2, 512).sum((0, 2)))


# --------------------------------------------------------------------------- #
# SCATTER_ELEMENTS: the row kernel (winners settled by atomics in a scratch row)
# --------------------------------------------------------------------------- #


def _scatter_case(rng, data_type, index_type, rows, width, count):
  """Data, raw indices (many repeats, negative and out of range where the type allows) and
  updates for SCATTER_ELEMENTS along the last axis."""
  x = kernel_data(rng, data_type, (rows, width))
  low = 0 if np.dtype(index_type).kind == "u" else -width - 3
  i = rng.integers(low, width + 3, (rows, count)).astype(index_type)
  u = kernel_data(rng, data_type, (rows, count))
  return x, i, u


# Replacing elements copies them: uint32 data would move the bits int32 does.
@pytest.mark.parametrize(
  "types, shape",
  in_turn(
    [(np.float32, np.int32), (np.int32, np.uint32), (np.float32, np.uint32), (np.int32, np.int32)],
    [(4, 16, 16), (6, 32, 16), (2048, 16, 32)],
  ),
)
def test_scatter_rows_body_matches_reference(types, shape):
  (data_type, index_type), (rows, width, count) = types, shape
  x, i, u = _scatter_case(np.random.default_rng(11), data_type, index_type, rows, width, count)
  out = scatter_elements_rows_triton.scatter_rows(
    jnp.asarray(x), jnp.asarray(i), jnp.asarray(u), interpret=True
  )
  assert_bits_equal(out, reference.scatter_elements(x, i, u, axis=1))


def test_scatter_rows_apply_to_the_last_axis_with_32_bit_data_and_indices():
  applies = scatter_elements_rows_triton.applies
  f32, i32, u32 = np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.uint32)
  assert applies((8192, 8192), (8192, 8192), f32, i32, 1)
  assert applies((3, 5, 64), (3, 5, 16), np.dtype(np.int32), u32, 2)
  assert not applies((8192, 8192), (8192, 8192), f32, i32, 0)  # not the last axis
  assert not applies((8, 8192), (8, 8192), np.dtype(np.float16), i32, 1)  # 16-bit data
  assert not applies((8, 8192), (8, 8192), f32, np.dtype(np.int64), 1)  # 64-bit indices
  assert not applies((8, 100), (8, 64), f32, i32, 1)  # not a power of two
  assert not applies((8, 16384), (8, 64), f32, i32, 1)  # a row past the registers
  assert not applies((8, 8), (8, 8), f32, i32, 1)  # too short to gain


def test_scatter_rows_never_apply_without_pallas_triton(monkeypatch):
  _without_pallas_triton(monkeypatch)
  f32, i32 = np.dtype(np.float32), np.dtype(np.int32)
  assert not scatter_elements_rows_triton.applies((64, 64), (64, 64), f32, i32, 1)


@pytest.mark.parametrize("data_type", [np.float32, np.int32], ids=["float32", "int32"])
def test_scatter_elements_on_kernel_shapes_is_the_same_on_every_run(data_type):
  # Many repeated targets: on a GPU the kernel's atomics run in any order, and the winner must
  # still be the last update in row-major order, every time.
  rng = np.random.default_rng(12)
  x, i, u = _scatter_case(rng, data_type, np.int32, 64, 16, 64)
  want = reference.scatter_elements(x, i, u, axis=1)
  f = jax.jit(lambda x, i, u: dml.scatter_elements(x, i, u, axis=1))
  for _ in range(10):
    np.testing.assert_array_equal(f(x, i, u), want)
  batched = jax.vmap(lambda x, i, u: dml.scatter_elements(x, i, u, axis=1))(
    np.stack([x, x]), np.stack([i, i[::-1]]), np.stack([u, u])
  )
  np.testing.assert_array_equal(batched[1], reference.scatter_elements(x, i[::-1], u, axis=1))


def test_scatter_elements_gradient_on_kernel_shapes_follows_the_policy():
  rng = np.random.default_rng(13)
  x, i, u = _scatter_case(rng, np.float32, np.int32, 8, 16, 32)
  w = rng.integers(-3, 4, x.shape).astype(np.float32)
  dx, du = jax.grad(lambda x, u: (dml.scatter_elements(x, i, u, axis=1) * w).sum(), (0, 1))(x, u)
  # The same gradient as the lax form's (the policy's), which the other platforms take.
  from dml_jax._src import registry

  desc = registry.lookup("SCATTER_ELEMENTS")(
    dml.TensorDesc("FLOAT32", x.shape),
    dml.TensorDesc("INT32", i.shape),
    dml.TensorDesc("FLOAT32", u.shape),
    axis=1,
  )
  lax_dx, lax_du = jax.grad(lambda x, u: (desc._scatter(x, i, u) * w).sum(), (0, 1))(x, u)
  np.testing.assert_array_equal(dx, lax_dx)
  np.testing.assert_array_equal(du, lax_du)


# --------------------------------------------------------------------------- #
# ONE_HOT: the output written in wide tiles
# --------------------------------------------------------------------------- #

# Tiles of at most 4 x 16 elements (8 x 8 along the last axis), for any output: small shapes
# cover many tiles, and shapes with few factors of 2 narrow ones.
_SMALL_TILES = one_hot_tiles_triton.TilesConfig(
  slab_rows=4, row_tile_elements=64, max_columns=16, min_row_bytes=0, min_output_bytes=0
)

# (indices shape, axis, depth, config): axis 0, the last axis (and one with only 1s after it),
# a middle axis with sizes before and after it; views that are and are not multiples of the
# largest tile.
ONE_HOT_CASES = [
  ((1, 64), 0, 32, _SMALL_TILES),  # (depth, inner) tiles of 4 x 16, int8 positions
  ((48, 1), 1, 64, _SMALL_TILES),  # (outer, depth) tiles of 4 x 16
  ((3, 1, 2, 16), 1, 12, _SMALL_TILES),  # outer 3, inner 32: tiles of 4 x 16
  ((10, 1, 1), 1, 40, _SMALL_TILES),  # inner 1: tiles of 2 x 8
  ((6, 1), 1, 24, _SMALL_TILES),  # 24 columns: tiles of 2 x 8
  ((5, 1, 7), 1, 9, _SMALL_TILES),  # odd sizes: tiles of 1 x 1
  ((2, 3, 1), 2, 20, _SMALL_TILES),  # outer 6, depth 20: tiles of 2 x 4
  ((2, 1, 32), 1, 200, _SMALL_TILES),  # int16 positions (200 > int8's 127)
  ((1, 1, 16), 1, 40000, _SMALL_TILES),  # int32 positions (40000 > int16's 32767)
  ((64, 1), 1, 1024, None),  # the default tiles along the last axis, (1, 1024)
  ((1, 2048), 0, 64, None),  # the default slab tiles, (2, 1024)
]

# Values with bit patterns a select must keep: quiet and signaling NaNs with payloads, -0.0,
# the integer extremes. Each case takes OffValue and OnValue from three orders of them.
_ONE_HOT_VALUES = {
  np.float32: np.array([0x7FC01234, 0x80000000, 0xFF800001], np.uint32).view(np.float32),
  np.float16: np.array([0x8000, 0x7C01, 0xFE05], np.uint16).view(np.float16),
  np.int8: np.array([-128, 127, 1], np.int8),
  np.uint8: np.array([255, 0, 1], np.uint8),
}
_ONE_HOT_ORDERS = ([0, 1, 2], [1, 0, 2], [2, 1, 0])


def _one_hot_desc(indices, values, axis, depth):
  """The descriptor of ONE_HOT of these arrays, for its lax form."""
  indices_type = dml.DataType.from_dtype(indices.dtype)
  values_type = dml.DataType.from_dtype(values.dtype)
  out = list(indices.shape)
  out[axis] = depth
  return dml.OneHotDesc(
    dml.TensorDesc(indices_type, indices.shape),
    dml.TensorDesc(values_type, values.shape),
    dml.TensorDesc(values_type, tuple(out)),
    axis=axis,
  )


_ONE_HOT_CASE_IDS = {f"{c[0]}-ax{c[1]}-D{c[2]}": c for c in ONE_HOT_CASES}


@pytest.mark.parametrize(
  "data_type, case_id", in_turn(list(_ONE_HOT_VALUES), list(_ONE_HOT_CASE_IDS))
)
def test_one_hot_tiles_body_matches_reference(data_type, case_id):
  case = _ONE_HOT_CASE_IDS[case_id]
  indices_shape, axis, depth, config = case
  # Raw indices of every value class: negative, past either end, the type's extremes.
  indices = kernel_indices(np.random.default_rng(14), np.int32, indices_shape, depth)
  position = _on_positions(jnp.asarray(indices), depth)
  shape = (1,) * (len(indices_shape) - 1) + (3,)
  # The reference once, on the values' positions (0 off, 1 on); each order's output picks its
  # values there. Each form is traced once, then runs on the three orders.
  tags = np.arange(3, dtype=np.int32).reshape(shape)
  picks = reference.one_hot(indices, tags, axis=axis, depth=depth)
  kernel = jax.jit(
    functools.partial(
      one_hot_tiles_triton.one_hot_tiles, axis=axis, depth=depth, config=config, interpret=True
    )
  )
  values = _ONE_HOT_VALUES[data_type].reshape(shape)
  lax_form = jax.jit(_one_hot_desc(indices, values, axis, depth)._select)
  for order in _ONE_HOT_ORDERS:
    values = _ONE_HOT_VALUES[data_type][order].reshape(shape)
    got = kernel(position, jnp.asarray(values))
    assert_bits_equal(got, values.reshape(-1)[picks])
    assert_bits_equal(got, lax_form(position, jnp.asarray(values)), context="lax form")


@pytest.mark.parametrize("index_type", [np.uint32, np.int64, np.uint64])
def test_one_hot_tiles_body_takes_every_index_type(index_type, x64):
  indices = kernel_indices(np.random.default_rng(15), index_type, (3, 1, 8), 16)
  if np.dtype(index_type).itemsize == 8:
    indices[0, 0, 4:7] = [2**32 + 1, 2**40, 2**33 + 2]  # never position 1 or 2
  values = np.array([[[0, 1]]], np.float32)
  got = one_hot_tiles_triton.one_hot_tiles(
    _on_positions(jnp.asarray(indices), 16),
    jnp.asarray(values),
    axis=1,
    depth=16,
    config=_SMALL_TILES,
    interpret=True,
  )
  assert_bits_equal(got, reference.one_hot(indices, values, axis=1, depth=16))


def test_one_hot_tiles_body_under_vmap():
  # A batch of positions and of values: the batch becomes a grid dimension of the kernel.
  rng = np.random.default_rng(18)
  indices = kernel_indices(rng, np.int32, (2, 3, 1, 16), 24)
  values = np.array([[0.5, -0.0], [np.nan, 2.0]], np.float32).reshape(2, 1, 1, 2)
  f = lambda p, v: one_hot_tiles_triton.one_hot_tiles(
    p, v, axis=1, depth=24, config=_SMALL_TILES, interpret=True
  )
  got = jax.vmap(f)(_on_positions(jnp.asarray(indices), 24), jnp.asarray(values))
  for b in range(2):
    assert_bits_equal(got[b], reference.one_hot(indices[b], values[b], axis=1, depth=24))


def test_one_hot_tiles_divide_the_view():
  tile = one_hot_tiles_triton.tile
  assert tile((1 << 20, 1024), 1) == (1, 1024)  # the last axis: (outer, depth), a row a program
  assert tile((1024, 1 << 20), 0) == (2, 1024)  # axis 0: (depth, inner)
  assert tile((8, 1024, 1, 4096), 1) == (2, 1024)  # a middle axis: tiles of a (1024, 4096) slab
  assert tile((8, 3, 1, 4096), 1) == (1, 1024)  # a slab of 3 rows
  assert tile((1 << 20, 64, 1), 1) == (16, 64)  # only 1s after the axis: (outer, depth)
  assert tile((999, 1000), 1) == (1, 8)  # odd rows, 1000 columns
  assert tile((6, 20), 1, _SMALL_TILES) == (2, 4)


def test_one_hot_tiles_apply_to_large_outputs_with_long_tile_rows():
  applies = one_hot_tiles_triton.applies
  f32 = np.dtype(np.float32)
  assert applies((1 << 20, 1024), 1, f32)
  assert applies((1024, 1 << 20), 0, f32)
  assert applies((4, 1024, 8192), 1, f32)  # outer 4
  assert applies((1 << 17, 64), 1, f32)  # 32 MiB, rows of 256 bytes
  assert applies((1 << 20, 1024), 1, np.dtype(np.int8))
  assert not applies((1 << 14, 256), 1, f32)  # 16 MiB: XLA's compare-and-select
  assert not applies((1 << 20, 1000), 1, f32)  # tiles of 8 columns
  assert not applies((1 << 20, 32), 1, f32)  # rows of 128 bytes
  assert not applies((1 << 20, 128), 1, np.dtype(np.int8))  # rows of 128 bytes
  assert not applies((1 << 20, 1024), 1, np.dtype(np.float64))  # 64-bit data: lax path
  assert not applies((1 << 21, 1024), 1, f32)  # 2**31 output elements
  assert applies((5, 9, 7), 1, np.dtype(np.uint8), _SMALL_TILES)


def test_one_hot_tiles_never_apply_without_pallas_triton(monkeypatch):
  _without_pallas_triton(monkeypatch)
  assert not one_hot_tiles_triton.applies((1 << 20, 1024), 1, np.dtype(np.float32))


def _primitive_names(jaxpr) -> set[str]:
  """The primitives of `jaxpr` and of every jaxpr in its equations' parameters (branches,
  kernel bodies)."""
  names = set()
  for eqn in jaxpr.eqns:
    names.add(eqn.primitive.name)
    for param in eqn.params.values():
      for inner in param if isinstance(param, (list, tuple)) else (param,):
        inner = getattr(inner, "jaxpr", inner)
        if hasattr(inner, "eqns"):
          names |= _primitive_names(inner)
  return names


@pytest.mark.parametrize("data_type", [np.float32, np.int8], ids=["float32", "int8"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_one_hot_on_tile_kernel_shapes(data_type, axis, monkeypatch):
  # Small tiles and no size threshold, so that these shapes take the kernel on CUDA GPUs (the
  # lax path elsewhere).
  monkeypatch.setattr(one_hot_tiles_triton, "DEFAULT", _SMALL_TILES)
  rng = np.random.default_rng(16)
  depth = 24
  indices_shape = tuple(1 if d == axis else n for d, n in enumerate((6, 5, 16)))
  indices = kernel_indices(rng, np.int32, indices_shape, depth)
  values = _ONE_HOT_VALUES[data_type].reshape(1, 1, 3)
  f = lambda i, v: dml.one_hot(i, v, axis=axis, depth=depth)
  want = reference.one_hot(indices, values, axis=axis, depth=depth)
  assert_bits_equal(f(indices, values), want)
  assert_bits_equal(jax.jit(f)(indices, values), want)
  batched = jax.vmap(f)(np.stack([indices, indices[::-1]]), np.stack([values, values]))
  assert_bits_equal(batched[1], reference.one_hot(indices[::-1], values, axis=axis, depth=depth))
  # The program holds the kernel for CUDA GPUs; compiled for the CPU, it runs the lax form.
  assert "pallas_call" in _primitive_names(jax.make_jaxpr(f)(indices, values).jaxpr)
  on_cpu = jax.device_put((indices, values), jax.devices("cpu")[0])
  assert "triton" not in jax.jit(f).lower(*on_cpu).as_text().lower()


@pytest.mark.parametrize(
  "indices_shape, axis, data_type, kernel",
  [
    ((1 << 15, 1), 1, np.float32, True),  # (1, 1024) tiles of (outer, depth)
    ((1, 1 << 15), 0, np.float16, True),  # (2, 1024) tiles of (depth, inner)
    ((4, 1, 1 << 13), 1, np.int8, True),  # a grid dimension over outer
    ((1 << 15, 1), 1, np.uint8, True),
    ((1 << 15, 1), 1, np.float64, False),  # 64-bit data
    ((1 << 10, 1), 1, np.float32, False),  # 4 MiB
  ],
)
def test_one_hot_program_holds_the_kernel_where_it_applies(indices_shape, axis, data_type, kernel):
  """On any machine, the traced program holds the kernel (for CUDA GPUs) exactly where
  `applies` says, given Pallas's Triton backend. (Lowering it for CUDA needs a GPU from jax
  0.12 on; the GPU runs build and run it.)"""
  depth = 1024
  f = lambda i, v: dml.one_hot(i, v, axis=axis, depth=depth)
  args = (
    jax.ShapeDtypeStruct(indices_shape, np.int32),
    jax.ShapeDtypeStruct((1,) * (len(indices_shape) - 1) + (2,), data_type),
  )
  out_shape = tuple(depth if d == axis else n for d, n in enumerate(indices_shape))
  kernel = kernel and availability.probe().pallas_triton
  assert one_hot_tiles_triton.applies(out_shape, axis, np.dtype(data_type)) == kernel
  with jax.enable_x64(data_type == np.float64):
    jaxpr = jax.make_jaxpr(f)(*args).jaxpr
  assert ("pallas_call" in _primitive_names(jaxpr)) == kernel


def test_one_hot_takes_the_lax_form_below_the_size_threshold():
  f = lambda i, v: dml.one_hot(i, v, axis=1, depth=1024)
  jaxpr = jax.make_jaxpr(f)(np.zeros((64, 1), np.int32), np.zeros((1, 2), np.float32))
  assert "pallas_call" not in _primitive_names(jaxpr.jaxpr)


def test_one_hot_gradient_on_tile_kernel_shapes_is_the_lax_forms(monkeypatch):
  monkeypatch.setattr(one_hot_tiles_triton, "DEFAULT", _SMALL_TILES)
  rng = np.random.default_rng(17)
  indices = kernel_indices(rng, np.int32, (4, 1, 16), 32)
  values = np.array([[[2.0, 3.0, 5.0]]], np.float32)
  w = rng.integers(-3, 4, (4, 32, 16)).astype(np.float32)
  grad = jax.grad(lambda v: (dml.one_hot(indices, v, axis=1, depth=32) * w).sum())(values)
  hot = reference.one_hot(indices, np.array([[[0, 1]]], np.float32), axis=1, depth=32) == 1
  np.testing.assert_array_equal(grad, [[[w[~hot].sum(), w[hot].sum(), 0.0]]])


# --------------------------------------------------------------------------- #
# SLICE and SLICE1: the row kernel for strided and backward walks
# --------------------------------------------------------------------------- #

# Short runs and no size threshold, so that small walks take the kernel on CUDA GPUs.
_SHORT_RUNS = slice_rows_triton.WindowConfig(run=64, min_output_bytes=0)

# (input shape, starts, steps, sizes): rows of 33 to 300, runs that overlap at a row's end.
_WALKS = [
  ((9, 300), (8, 299), (-1, -1), (9, 300)),  # both axes backwards, the whole input
  ((9, 300), (1, 2), (2, 3), (4, 100)),  # strided columns
  ((3, 5, 130), (2, 4, 129), (-1, -2, -2), (3, 3, 65)),
  ((2, 3, 4, 70), (1, 0, 3, 5), (-1, 2, -1, 1), (2, 2, 4, 40)),  # rows backwards, columns not
  ((257,), (256,), (-4,), (65,)),  # one row
  ((4, 40), (3, 39), (-1, -1), (4, 33)),  # a prefix of each walk
]


def _walk_index(starts, steps, sizes):
  """The walk as NumPy slices (a backward one stops before its end, or runs to the start)."""
  return tuple(
    np.s_[
      b : (b + (n - 1) * t + (1 if t > 0 else -1)) if b + (n - 1) * t > 0 or t > 0 else None : t
    ]
    for b, t, n in zip(starts, steps, sizes, strict=True)
  )


def _walk_reference(x, starts, steps, sizes):
  out = x[_walk_index(starts, steps, sizes)]
  assert out.shape == tuple(sizes)
  return out


@pytest.mark.parametrize("data_type, walk", in_turn([np.float32, np.int32, np.uint32], _WALKS))
def test_window_rows_body_matches_reference(data_type, walk):
  shape, starts, steps, sizes = walk
  x = kernel_data(np.random.default_rng(30), data_type, shape)
  out = slice_rows_triton.window_rows(
    jnp.asarray(x), starts=starts, steps=steps, sizes=sizes, config=_SHORT_RUNS, interpret=True
  )
  assert_bits_equal(out, _walk_reference(x, starts, steps, sizes))


def test_window_rows_apply_to_walks_xla_copies_slowly():
  applies = slice_rows_triton.applies
  f32 = np.dtype(np.float32)
  big = (8192, 8192)
  if availability.probe().pallas_triton:
    assert applies(big, (-1, 1), (8191, 8191), f32)  # rows backwards
    assert applies(big, (1, 2), (8192, 4096), f32)  # every other column
    assert applies(big, (1, -1), (8192, 8192), f32)  # columns backwards
    assert applies((4, 40), (1, -1), (4, 33), f32, _SHORT_RUNS)
  assert not applies(big, (2, 1), (4096, 8192), f32)  # forward, the last axis by 1: XLA's
  assert not applies(big, (1, 2), (8192, 4096), np.dtype(np.float16))  # 16-bit data
  assert not applies(big, (1, 2), (8192, 4096), np.dtype(np.float64))
  assert not applies((512, 512), (1, 2), (512, 256), f32)  # 512 KiB: it fits L2
  assert not applies((1 << 20, 64), (1, -1), (1 << 20, 16), f32)  # rows of 16


def test_window_rows_never_apply_without_pallas_triton(monkeypatch):
  _without_pallas_triton(monkeypatch)
  assert not slice_rows_triton.applies((8192, 8192), (1, 2), (8192, 4096), np.dtype(np.float32))


@pytest.mark.parametrize("shape, starts, steps, sizes", _WALKS)
def test_slice1_on_window_kernel_shapes(shape, starts, steps, sizes, monkeypatch):
  monkeypatch.setattr(slice_rows_triton, "DEFAULT", _SHORT_RUNS)
  x = kernel_data(np.random.default_rng(31), np.float32, shape)
  # The window of each walk: from its lower end, as long as the walk's span.
  offsets = tuple(
    b if t > 0 else b - (n - 1) * -t for b, t, n in zip(starts, steps, sizes, strict=True)
  )
  windows = tuple((n - 1) * abs(t) + 1 for t, n in zip(steps, sizes, strict=True))
  f = lambda x: dml.slice1(
    x,
    input_window_offsets=offsets,
    input_window_sizes=windows,
    input_window_strides=steps,
    output_sizes=sizes,
  )
  want = _walk_reference(x, starts, steps, sizes)
  assert_bits_equal(f(x), want)
  assert_bits_equal(jax.jit(f)(x), want)
  batched = jax.vmap(f)(np.stack([x, -x]))
  assert_bits_equal(batched[1], -want)
  jaxpr = jax.make_jaxpr(f)(x).jaxpr
  assert ("pallas_call" in _primitive_names(jaxpr)) == availability.probe().pallas_triton
  w = np.random.default_rng(32).integers(-3, 4, want.shape).astype(np.float32)
  grad = jax.grad(lambda x: (f(x) * w).sum())(x)
  want_grad = np.zeros_like(x)
  want_grad[_walk_index(starts, steps, sizes)] = w
  np.testing.assert_array_equal(grad, want_grad)


def test_slice_of_every_other_column_on_the_window_kernel(monkeypatch):
  monkeypatch.setattr(slice_rows_triton, "DEFAULT", _SHORT_RUNS)
  x = kernel_data(np.random.default_rng(33), np.int32, (7, 301))
  f = lambda x: dml.slice(x, offsets=(1, 2), sizes=(3, 100), strides=(2, 3))
  assert_bits_equal(jax.jit(f)(x), x[1:7:2, 2:300:3])
  jaxpr = jax.make_jaxpr(f)(x).jaxpr
  assert ("pallas_call" in _primitive_names(jaxpr)) == availability.probe().pallas_triton


# --------------------------------------------------------------------------- #
# SPACE_TO_DEPTH(1): the row-splitting kernel
# --------------------------------------------------------------------------- #

# Short runs and no size threshold, so that small inputs take the kernel on CUDA GPUs.
_SHORT_SPLITS = space_to_depth_rows_triton.RowSplitConfig(run=32, min_output_bytes=0)

# (NCHW input shape, block size): output rows of 32 to 100, runs that overlap at a row's end.
_SPACE_SHAPES = [((2, 3, 4, 64), 2), ((1, 2, 6, 300), 3), ((2, 1, 4, 200), 4), ((1, 5, 2, 66), 2)]


def _space_to_depth_reference(x, b, column_row_depth):
  n, c, height, width = x.shape
  blocks = x.reshape(n, c, height // b, b, width // b, b)  # (n, c, h, i, w, j)
  order = (0, 1, 3, 5, 2, 4) if column_row_depth else (0, 3, 5, 1, 2, 4)
  return blocks.transpose(order).reshape(n, c * b * b, height // b, width // b)


# A permutation copies elements: uint32 data would move the bits int32 does.
@pytest.mark.parametrize(
  "layout, case",
  in_turn(
    [(np.float32, "DCR"), (np.int32, "CRD"), (np.float32, "CRD"), (np.int32, "DCR")],
    _SPACE_SHAPES,
  ),
)
def test_space_to_depth_rows_body_matches_reference(layout, case):
  (data_type, order), (shape, block_size) = layout, case
  column_row_depth = order == "CRD"
  x = kernel_data(np.random.default_rng(40), data_type, shape)
  out = space_to_depth_rows_triton.space_to_depth_rows(
    jnp.asarray(x),
    block_size=block_size,
    column_row_depth=column_row_depth,
    config=_SHORT_SPLITS,
    interpret=True,
  )
  assert_bits_equal(out, _space_to_depth_reference(x, block_size, column_row_depth))


def test_space_to_depth_rows_apply_to_large_32_bit_inputs():
  applies = space_to_depth_rows_triton.applies
  f32 = np.dtype(np.float32)
  assert applies((16, 64, 512, 512), 2, f32) == availability.probe().pallas_triton
  assert applies((1, 1, 2, 64), 2, np.dtype(np.int32), _SHORT_SPLITS) == (
    availability.probe().pallas_triton
  )
  assert not applies((16, 64, 512, 512), 2, np.dtype(np.int8))  # 8-bit data
  assert not applies((16, 64, 512, 512), 2, np.dtype(np.int64))
  assert not applies((1, 4, 64, 64), 2, f32)  # 64 KiB: it fits L2
  assert not applies((1024, 64, 64, 32), 2, f32)  # output rows of 16


def test_space_to_depth_rows_never_apply_without_pallas_triton(monkeypatch):
  _without_pallas_triton(monkeypatch)
  assert not space_to_depth_rows_triton.applies((16, 64, 512, 512), 2, np.dtype(np.float32))


@pytest.mark.parametrize(
  "order, case", in_turn_off_gpus(["DEPTH_COLUMN_ROW", "COLUMN_ROW_DEPTH", None], _SPACE_SHAPES)
)
def test_space_to_depth_on_row_split_kernel_shapes(order, case, monkeypatch):
  shape, block_size = case
  monkeypatch.setattr(space_to_depth_rows_triton, "DEFAULT", _SHORT_SPLITS)
  x = kernel_data(np.random.default_rng(41), np.float32, shape)
  if order is None:  # SPACE_TO_DEPTH: DEPTH_COLUMN_ROW
    f = lambda x: dml.space_to_depth(x, block_size=block_size)
  else:
    f = lambda x: dml.space_to_depth1(x, block_size=block_size, order=order)
  want = _space_to_depth_reference(x, block_size, order == "COLUMN_ROW_DEPTH")
  assert_bits_equal(f(x), want)
  assert_bits_equal(jax.jit(f)(x), want)
  assert_bits_equal(jax.vmap(f)(np.stack([x, -x]))[1], -want)
  jaxpr = jax.make_jaxpr(f)(x).jaxpr
  assert ("pallas_call" in _primitive_names(jaxpr)) == availability.probe().pallas_triton
  # A permutation's gradient is the inverse permutation of the cotangent: DEPTH_TO_SPACE1.
  w = np.random.default_rng(42).integers(-3, 4, want.shape).astype(np.float32)
  grad = jax.grad(lambda x: (f(x) * w).sum())(x)
  inverse = dml.depth_to_space1(w, block_size=block_size, order=order or "DEPTH_COLUMN_ROW")
  np.testing.assert_array_equal(grad, inverse)


@pytest.mark.parametrize(
  "layout, case",
  in_turn(
    [(np.float32, False, False), (np.float16, True, False), (np.float32, True, True)],
    [((12, 19), 1), ((2, 11, 12), 1), ((19, 2, 5), 0), ((20, 3), 1)],
  ),
)
def test_cumulative_lanes_body_walks_each_lane_in_order(layout, case):
  # Every combination of direction, exclusive and product over the cases, against the
  # reference's walk; float16 rounds every partial tally. Runs of 8 lanes (the last ones
  # overlapping) and 4 elements loaded ahead, so that short lanes take whole chunks and a rest.
  (dtype, reverse, exclusive), (shape, axis) = layout, case
  small = cumulative_lanes_triton.LanesConfig(lanes=8, ahead=4)
  x = np.random.default_rng(31).standard_normal(shape).astype(dtype)
  direction = "DECREASING" if reverse else "INCREASING"
  for product in (False, True):
    got = cumulative_lanes_triton.cumulative_lanes(
      jnp.asarray(x), axis=axis, reverse=reverse, exclusive=exclusive, product=product,
      config=small, interpret=True,
    )  # fmt: skip
    if product:
      want = reference.cumulative_product(
        x, axis=axis, axis_direction=direction, has_exclusive_product=exclusive
      )
    else:
      want = reference.cumulative_summation(
        x, axis=axis, axis_direction=direction, has_exclusive_sum=exclusive
      )
    assert_bits_equal(got, want)


def test_cumulative_lanes_apply_to_float_scans_of_many_lanes():
  applies = cumulative_lanes_triton.applies
  f32 = np.dtype(np.float32)
  assert applies((4096, 8192), 1, f32) == availability.probe().pallas_triton
  assert not applies((4096, 8192), 1, np.dtype(np.int32))  # integers take XLA's scan
  assert not applies((16, 8192), 1, f32)  # 16 lanes
  assert not applies((64, 64), 0, f32)  # 16 KiB
