"""Probe: where SCATTER_ELEMENTS's time goes on a GPU, the winner array's integer width, and the
row kernels' tuning.

Not part of the library. Times SCATTER_ELEMENTS along axis 1 of (8192, 8192) float32 with a
permutation per row: the lax form (the descriptor's, which platforms without a kernel run) with
the winner positions in uint16 (the narrowest that numbers 8192 updates) and in uint32 (the
GPU's native atomicMax), against .at[].set and its parts; then the Triton row kernel and the
shared-memory row kernel (Mosaic GPU) at 2, 4 and 8 warpgroups, the shared-memory kernel on
rows of 16384 (192 KiB of shared memory a block), and on float16 and int8 rows (bytes: input,
updates and output at their width, int32 indices).

Usage: PYTHONPATH=.:benchmarks python3 benchmarks/scatter_probe.py
"""

import jax
import jax.numpy as jnp
import numpy as np
from _timing import copy_ceiling, report  # benchmarks/ is on sys.path when a script in it runs
from jax import lax

import dml_jax as dml
from dml_jax._src import scattering
from dml_jax._src.kernels import scatter_elements_rows_mosaic as smem_rows
from dml_jax._src.kernels import scatter_elements_rows_triton as triton_rows


def main():
  rng = np.random.default_rng(0)
  ceiling = copy_ceiling(rng)
  n = 8192
  x = rng.standard_normal((n, n)).astype(np.float32)
  u = rng.standard_normal((n, n)).astype(np.float32)
  i = np.argsort(rng.random((n, n)), axis=1).astype(np.int32)
  want = x.copy()
  np.put_along_axis(want, i, u, axis=1)
  xd, ud, idd = map(jnp.asarray, (x, u, i))
  moved = 4 * x.nbytes
  rows = jnp.arange(n)[:, None]
  report(
    "x.at[r, i].set",
    jax.jit(lambda x, i, u: x.at[rows, i].set(u)),
    (xd, idd, ud),
    want,
    moved,
    ceiling,
  )
  narrowest = scattering.position_dtype
  desc = dml.ScatterElementsDesc(
    dml.TensorDesc("FLOAT32", x.shape),
    dml.TensorDesc("INT32", i.shape),
    dml.TensorDesc("FLOAT32", u.shape),
    axis=1,
  )
  lax_form = desc._scatter  # what runs where no kernel applies
  for name, choose in (
    ("uint16 winners", narrowest),
    ("uint32 winners", lambda c: np.dtype(np.uint32) if c <= 2**32 else narrowest(c)),
  ):
    scattering.position_dtype = choose
    fn = jax.jit(lax_form)  # traced anew: the position dtype is read at trace time
    report(f"lax form, {name}", fn, (xd, idd, ud), want, moved, ceiling)
  scattering.position_dtype = narrowest
  report(
    "Triton row kernel", jax.jit(triton_rows.scatter_rows), (xd, idd, ud), want, moved, ceiling
  )
  for warpgroups in (2, 4, 8):
    config = smem_rows.RowScatterConfig(warpgroups=warpgroups)
    fn = jax.jit(lambda x, i, u, c=config: smem_rows.scatter_rows(x, i, u, config=c))
    report(f"smem kernel, {warpgroups} wg", fn, (xd, idd, ud), want, moved, ceiling)
  wide_rows(rng, ceiling)
  narrow_types(rng, ceiling)

  def winners_only(i, dtype):
    best = jnp.zeros((n, n), dtype)
    pos = jnp.broadcast_to(lax.iota(dtype, n)[None, :], (n, n))
    return best.at[rows, i].max(pos)

  want_w = np.zeros((n, n), np.uint32)
  np.put_along_axis(want_w, i, np.broadcast_to(np.arange(n, dtype=np.uint32), (n, n)), axis=1)
  for dtype in (jnp.uint16, jnp.uint32):
    fn = jax.jit(lambda i, d=dtype: winners_only(i, d))
    report(
      f"scatter-max only, {jnp.dtype(dtype).name}", fn, (idd,), want_w.astype(dtype), moved, ceiling
    )


def wide_rows(rng, ceiling):
  """Rows of 16384: the shared-memory kernel with one block an SM, against .at[].set."""
  shape = (4096, 16384)
  x = rng.standard_normal(shape).astype(np.float32)
  u = rng.standard_normal(shape).astype(np.float32)
  i = np.argsort(rng.random(shape), axis=1).astype(np.int32)
  want = x.copy()
  np.put_along_axis(want, i, u, axis=1)
  args = tuple(map(jnp.asarray, (x, i, u)))
  rows = jnp.arange(shape[0])[:, None]
  moved = 4 * x.nbytes
  at_set = jax.jit(lambda x, i, u: x.at[rows, i].set(u))
  report("16384: x.at[r, i].set", at_set, args, want, moved, ceiling)
  report("16384: smem kernel", jax.jit(smem_rows.scatter_rows), args, want, moved, ceiling)


def narrow_types(rng, ceiling):
  """float16 and int8 rows of 8192: the shared-memory kernel (through dml) against .at[].set."""
  n = 8192
  i = np.argsort(rng.random((n, n)), axis=1).astype(np.int32)
  rows = jnp.arange(n)[:, None]
  for dtype in (np.float16, np.int8):
    x = rng.standard_normal((n, n)).astype(dtype)
    u = rng.standard_normal((n, n)).astype(dtype)
    want = x.copy()
    np.put_along_axis(want, i, u, axis=1)
    args = tuple(map(jnp.asarray, (x, i, u)))
    moved = 3 * x.nbytes + i.nbytes
    name = np.dtype(dtype).name
    at_set = jax.jit(lambda x, i, u: x.at[rows, i].set(u))
    report(f"{name}: x.at[r, i].set", at_set, args, want, moved, ceiling)
    fn = jax.jit(lambda x, i, u: dml.scatter_elements(x, i, u, axis=1))
    report(f"{name}: dml (smem kernel)", fn, args, want, moved, ceiling)


if __name__ == "__main__":
  main()
