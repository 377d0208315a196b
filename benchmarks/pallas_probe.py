"""Probe: can a Pallas (Triton) kernel beat XLA's gather on a GPU for the two open cases?

Not part of the library. Two kernels, checked bit for bit against NumPy and timed like the
other A/B scripts (pipelined jitted calls, median of repeats, against a device copy):
- row gather (GATHER_ND rows): each program copies a block of whole rows, named by indices;
- GATHER_ELEMENTS along the inner axis: each program owns whole rows, so every random read of
  a row after its first lands in that SM's L1 (a 32 KiB f32 row of 8192).
Usage: PYTHONPATH=. python3 benchmarks/pallas_probe.py
"""

import jax
import jax.numpy as jnp
import numpy as np
from _timing import copy_ceiling, report  # benchmarks/ is on sys.path when a script in it runs
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton

import dml_jax as dml


def row_gather(x2, rows, block_rows=32, num_warps=None):
  n, width = rows.shape[0], x2.shape[1]

  def kernel(rows_ref, x_ref, o_ref):
    o_ref[...] = x_ref[rows_ref[...], :]

  return pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((n, width), x2.dtype),
    grid=(n // block_rows,),
    in_specs=[
      pl.BlockSpec((block_rows,), lambda i: (i,)),
      pl.BlockSpec(x2.shape, lambda i: (0, 0)),
    ],
    out_specs=pl.BlockSpec((block_rows, width), lambda i: (i, 0)),
    compiler_params=None if num_warps is None else pltriton.CompilerParams(num_warps=num_warps),
  )(rows, x2)


def gather_rows_inner(x, idx, block_rows=1, num_warps=8):
  rows, cols = idx.shape

  def kernel(x_ref, idx_ref, o_ref):
    r = pl.program_id(0) * block_rows + jnp.arange(block_rows)[:, None]
    o_ref[...] = x_ref[r, idx_ref[...]]

  return pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct(idx.shape, x.dtype),
    grid=(rows // block_rows,),
    in_specs=[
      pl.BlockSpec(x.shape, lambda i: (0, 0)),
      pl.BlockSpec((block_rows, cols), lambda i: (i, 0)),
    ],
    out_specs=pl.BlockSpec((block_rows, cols), lambda i: (i, 0)),
    compiler_params=pltriton.CompilerParams(num_warps=num_warps),
  )(x, idx)


def reverse_lanes(x, lengths, block_cols=8, tile_rows=256, num_warps=4):
  """REVERSE_SUBSEQUENCES along axis 1 of (B, S, C), lengths (B, 1, C) already <= S, int32."""
  b_size, s_size, c_size = x.shape

  def kernel(x_ref, len_ref, o_ref):
    b = pl.program_id(0)
    c0 = pl.program_id(1) * block_cols
    lengths = len_ref[0, 0, :][None, :]
    cols = c0 + jnp.arange(block_cols)[None, :]

    def body(t, carry):
      i = t * tile_rows + jnp.arange(tile_rows)[:, None]
      src = jnp.where(i < lengths, lengths - 1 - i, i)
      o_ref[0, pl.ds(t * tile_rows, tile_rows), :] = x_ref[b, src, cols]
      return carry

    jax.lax.fori_loop(0, s_size // tile_rows, body, 0)

  return pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
    grid=(b_size, c_size // block_cols),
    in_specs=[
      pl.BlockSpec(x.shape, lambda b, c: (0, 0, 0)),
      pl.BlockSpec((1, 1, block_cols), lambda b, c: (b, 0, c)),
    ],
    out_specs=pl.BlockSpec((1, s_size, block_cols), lambda b, c: (b, 0, c)),
    compiler_params=pltriton.CompilerParams(num_warps=num_warps),
  )(x, lengths)


def main():
  rng = np.random.default_rng(0)
  ceiling = copy_ceiling(rng)

  x = rng.standard_normal((1024 * 1024, 256)).astype(np.float32)
  rows = rng.integers(0, x.shape[0], 65536).astype(np.int32)
  want = x[rows]
  moved = 2 * want.nbytes + rows.nbytes
  xd, rd = jnp.asarray(x), jnp.asarray(rows)
  print("row gather: 65536 rows of 256 f32 from (1048576, 256)")
  xla = jax.jit(lambda a, r: jnp.take(a, r, axis=0))
  for name, fn in [("xla", xla)] + [
    (f"pallas rows/program={b}", jax.jit(lambda a, r, b=b: row_gather(a, r, b)))
    for b in (8, 32, 64)
  ]:
    report(name, fn, (xd, rd), want, moved, ceiling)
  del xd, rd, x, want

  x = rng.standard_normal((8192, 8192)).astype(np.float32)
  idx = rng.integers(0, 8192, (8192, 8192)).astype(np.int32)
  want = np.take_along_axis(x, idx, axis=1)
  moved = 2 * x.nbytes + idx.nbytes
  xd, idd = jnp.asarray(x), jnp.asarray(idx)
  print("GATHER_ELEMENTS f32 (8192, 8192), axis 1")
  xla = jax.jit(lambda a, i: jnp.take_along_axis(a, i, axis=1))
  variants = [("xla", xla)] + [
    (f"pallas rows={b} warps={w}", jax.jit(lambda a, i, b=b, w=w: gather_rows_inner(a, i, b, w)))
    for b, w in ((1, 4), (1, 8), (1, 16), (2, 8))
  ]
  for name, fn in variants:
    report(name, fn, (xd, idd), want, moved, ceiling)

  del xd, idd, x, idx, want
  x = rng.standard_normal((64, 4096, 1024)).astype(np.float32)
  lengths = rng.integers(0, 4097, (64, 1, 1024)).astype(np.int32)
  pos = np.arange(4096)[None, :, None]
  want = np.take_along_axis(x, np.where(pos < lengths, lengths - 1 - pos, pos), axis=1)
  moved = 2 * x.nbytes + lengths.nbytes
  xd, ld = jnp.asarray(x), jnp.asarray(lengths)
  print("REVERSE_SUBSEQUENCES f32 (64, 4096, 1024), axis 1, random lengths per lane")
  variants = [
    (
      "xla (dml_jax)",
      jax.jit(lambda a, n: dml.reverse_subsequences(a, n.astype(jnp.uint32), axis=1)),
    )
  ]
  variants += [
    (
      f"pallas cols={c} rows={r} warps={w}",
      jax.jit(lambda a, n, c=c, r=r, w=w: reverse_lanes(a, n, c, r, w)),
    )
    for c, r, w in ((8, 256, 4), (8, 512, 8), (16, 256, 4), (32, 128, 4), (32, 256, 8))
  ]
  for name, fn in variants:
    report(name, fn, (xd, ld), want, moved, ceiling)


if __name__ == "__main__":
  main()
