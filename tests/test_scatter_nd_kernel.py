"""SCATTER_ND's pulls (a Pallas-Triton kernel, a lax form for the CPU) and the choice of them.

The kernel runs only on CUDA GPUs. Here, on any backend: which static shapes select it, that
their programs carry it (in the traced program: lowering a Triton kernel for CUDA needs a GPU
from jax 0.12 on), the kernel body interpreted against NumPy, and what the public function
gives on kernel shapes, eagerly, under jit, vmap and grad, run after run (on a GPU this runs
the kernel; on the CPU the pull in lax for rows of 1 KiB, the scatter in order for others).
"""

import jax
import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src import reference, scattering
from dml_jax._src.kernels import availability
from dml_jax._src.kernels import scatter_nd_rows_triton as pull
from dml_jax._src.ops import scatter_nd as scatter_nd_op
from tests.helpers import assert_bits_equal, kernel_data, kernel_indices

# The kernels' tests run with x64 off, except those that take the `x64` fixture for 64-bit
# indices or data: once, in the first pass (the kernels' 32-bit paths do not depend on the
# mode; their 64-bit paths are pinned where they are tested).
pytestmark = pytest.mark.usefixtures("no_x64")

F32 = np.dtype(np.float32)

# (input shape, indices shape, data type, index type): tuples leave rows of 256 bytes or more.
KERNEL_CASES = [
  ((64, 64), (40, 1), np.float32, np.int32),
  ((4, 8, 128), (3, 5, 2), np.float16, np.uint32),
  ((16, 256), (50, 1), np.int8, np.int32),
  ((2, 4, 8, 256), (1, 1, 6, 3), np.uint16, np.int32),  # t = 3: rows of (2, 4, 8)
  ((32, 128), (96, 1), np.int32, np.uint32),  # more updates than rows
  ((48, 256), (90, 1), np.float32, np.int32),  # 1 KiB rows: the CPU pulls them too
  ((2, 16, 512), (2, 20, 2), np.int16, np.int32),  # pairs in a (2, 20) grid, 1 KiB rows
]
KERNEL_CASES_64 = [
  ((64, 64), (40, 1), np.float32, np.int64),
  ((16, 256), (30, 2), np.uint8, np.uint64),  # t = 2 over (16, 256): rows of one byte
  ((32, 1024), (50, 1), np.int8, np.int64),  # 1 KiB rows: the CPU pulls them too
]


def _case(rng, input_shape, indices_shape, dtype, index_type):
  """Data, tuples of raw coordinates of every class (negative where signed, out of range, the
  type's extremes), a third of them aimed at the same few targets, and updates."""
  t = indices_shape[-1]
  x = kernel_data(rng, dtype, input_shape)
  columns = [kernel_indices(rng, index_type, indices_shape[:-1], input_shape[j]) for j in range(t)]
  i = np.stack(columns, axis=-1)
  flat = i.reshape(-1, t)
  repeated = flat[: len(flat) // 3]
  repeated[...] = rng.integers(0, 2, repeated.shape)  # at most 2**t targets, again and again
  n = len(input_shape)
  updates_shape = reference.scatter_nd_updates_sizes(
    input_shape, indices_shape, input_dimension_count=n, indices_dimension_count=n
  )
  u = kernel_data(rng, dtype, updates_shape)
  return x, i, u


def _applies(input_shape, indices_shape, dtype):
  t = indices_shape[-1]
  rows, width = int(np.prod(input_shape[:t])), int(np.prod(input_shape[t:]))
  return pull.applies(rows, width, int(np.prod(indices_shape[:-1])), np.dtype(dtype))


@pytest.mark.parametrize("input_shape, indices_shape, dtype, index_type", KERNEL_CASES)
def test_kernel_shapes_apply_and_carry_the_kernel(input_shape, indices_shape, dtype, index_type):
  triton = availability.probe().pallas_triton
  assert _applies(input_shape, indices_shape, dtype) == triton
  x, i, u = _case(np.random.default_rng(0), input_shape, indices_shape, dtype, index_type)
  jaxpr = str(jax.make_jaxpr(dml.scatter_nd)(x, i, u))
  assert ("pallas_call" in jaxpr) == triton


@pytest.mark.parametrize(
  "input_shape, indices_shape, dtype, why",
  [
    ((64, 32), (40, 1), F32, "128-byte rows"),
    ((64, 96), (40, 1), F32, "not a power of two"),
    ((64, 64), (40, 2), F32, "single elements"),
    ((64, 32768), (40, 1), F32, "128 KiB rows"),
    ((64, 64), (40, 1), np.dtype(np.float64), "64-bit data"),
    ((1 << 16, 1 << 15), (8, 1), np.dtype(np.int8), "2**31 elements"),
  ],
)
def test_kernel_does_not_apply(input_shape, indices_shape, dtype, why):
  assert not _applies(input_shape, indices_shape, dtype), why


def test_narrow_rows_keep_xla_scatter():
  x, i, u = np.zeros((64, 32), F32), np.zeros((40, 1), np.int32), np.zeros((40, 32), F32)
  jaxpr = str(jax.make_jaxpr(dml.scatter_nd)(x, i, u))
  assert "pallas_call" not in jaxpr and "scatter" in jaxpr


def test_checked_mode_reports_losers_on_kernel_shapes():
  """`dml.checked` reports the losers, which only the settled form knows: it takes that form."""
  x, u = np.zeros((64, 64), F32), np.ones((40, 64), F32)
  fn = dml.checked(jax.jit(dml.scatter_nd))
  np.testing.assert_array_equal(fn(x, np.arange(40, dtype=np.int32)[:, None], u)[:40], u)
  with pytest.raises(dml.DmlIndexError, match="IndicesTensor"):
    fn(x, np.full((40, 1), 7, np.int32), u)


def test_winner_map_keeps_the_last_kept_update():
  target = np.array([5, 1, 5, 7, 1, 9, 5], np.int32)  # 7 and 9: dropped from 7 rows
  got = np.asarray(pull.winner_map(target, 7))
  np.testing.assert_array_equal(got, [0, 5, 0, 0, 0, 7, 0])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint16])
def test_interpreted_kernel_matches_numpy(dtype):
  rng = np.random.default_rng(1)
  rows, width, count = 48, 128, 70
  x, u = kernel_data(rng, dtype, (rows, width)), kernel_data(rng, dtype, (count, width))
  target = rng.integers(0, rows + 5, count).astype(np.int32)  # duplicates and dropped rows
  want = x.copy()
  for p, row in enumerate(target):  # in order: the last update wins
    if row < rows:
      want[row] = u[p]
  assert_bits_equal(pull.pull_rows(x, target, u, interpret=True), want)


@pytest.mark.parametrize("platform", ["cuda", "cpu"])
def test_pull_forms_match_the_reference(monkeypatch, platform):
  """`scatter_nd_op.pull_forms`'s functions of the scatter's operands: the tuples' row numbers,
  dropped updates sent past the table, the pull's output shaped as the input (the kernel
  interpreted)."""
  monkeypatch.setattr(
    pull, "pull_rows", lambda *args, pull_rows=pull.pull_rows: pull_rows(*args, interpret=True)
  )
  rng = np.random.default_rng(2)
  x, i, u = _case(rng, (2, 4, 8, 256), (1, 1, 6, 3), np.uint16, np.int32)
  index, keep = scattering.targets(jax.numpy.asarray(i), (2, 4, 8))
  cpu_rows = scatter_nd_op.cpu_pull((2, 4, 8), (256,), np.dtype(np.uint16))
  chosen = scatter_nd_op.pull_forms((2, 4, 8), (256,), 6, np.dtype(np.uint16), cpu_rows=cpu_rows)
  assert ("cuda" in chosen) == availability.probe().pallas_triton
  if platform in chosen:
    got = chosen[platform](x, u, index, keep.all(axis=-1), None, None)
    assert_bits_equal(got, reference.scatter_nd(x, i, u))


def test_cpu_pulls_rows_of_1_kib_and_scatters_narrower_ones():
  """The CPU takes the pull for rows of 1 KiB or more, in any data type; narrower rows keep
  the scatter in order."""
  assert scatter_nd_op.cpu_pull((64,), (256,), F32) is scatter_nd_op.pull_rows_lax
  assert scatter_nd_op.cpu_pull((64,), (64,), F32) is None
  assert scatter_nd_op.cpu_pull((64,), (1024,), np.dtype(np.int8)) is not None


@pytest.mark.parametrize("input_shape, indices_shape, dtype, index_type", KERNEL_CASES)
def test_public_function_on_kernel_shapes(input_shape, indices_shape, dtype, index_type):
  _check_public_function(input_shape, indices_shape, dtype, index_type)


@pytest.mark.parametrize("input_shape, indices_shape, dtype, index_type", KERNEL_CASES_64)
def test_public_function_on_64_bit_index_shapes(input_shape, indices_shape, dtype, index_type, x64):
  _check_public_function(input_shape, indices_shape, dtype, index_type)


def _check_public_function(input_shape, indices_shape, dtype, index_type):
  """The policy bit for bit, on every run, eagerly, jitted and batched."""
  rng = np.random.default_rng(3)
  x, i, u = _case(rng, input_shape, indices_shape, dtype, index_type)
  want = reference.scatter_nd(x, i, u)
  assert_bits_equal(dml.scatter_nd(x, i, u), want)
  jitted = jax.jit(dml.scatter_nd)
  for _ in range(3):
    assert_bits_equal(jitted(x, i, u), want)
  other = np.flip(i, axis=0)
  batched = jax.vmap(dml.scatter_nd)(np.stack([x, x]), np.stack([i, other]), np.stack([u, u]))
  assert_bits_equal(batched[0], want)
  assert_bits_equal(batched[1], reference.scatter_nd(x, other, u))


@pytest.mark.parametrize("input_shape, indices_shape", [((64, 64), (40, 1)), ((48, 256), (90, 1))])
def test_gradient_on_kernel_shapes_follows_the_policy(input_shape, indices_shape):
  """The input's cotangent where no update lands, each winning update's at its target, zero
  for losers and dropped updates."""
  rng = np.random.default_rng(4)
  x, i, u = _case(rng, input_shape, indices_shape, np.float32, np.int32)
  size = input_shape[0]
  w = rng.integers(-3, 4, x.shape).astype(np.float32)
  dx, du = jax.grad(lambda x, u: (dml.scatter_nd(x, i, u) * w).sum(), (0, 1))(x, u)
  want_dx, want_du = w.copy(), np.zeros_like(u)
  rows = i[:, 0].astype(np.int64)
  rows = np.where(rows < 0, rows + size, rows)
  for p, row in enumerate(rows):
    if 0 <= row < size:
      want_dx[row] = 0
      want_du[p] = w[row]
      want_du[:p][rows[:p] == row] = 0  # earlier updates of this row lose
  np.testing.assert_array_equal(dx, want_dx)
  np.testing.assert_array_equal(du, want_du)
  assert np.count_nonzero(du) < du.size
