"""Probe: forms of the layout operators that XLA lowers below the copy (SLICE1 reversing rows,
TILE along rows, PADDING's edge modes, SLICE's strided columns).

Not part of the library. Each form is checked bit for bit against NumPy and timed like the
other A/B scripts (pipelined jitted calls, median of repeats, against a 1 GiB device copy);
"of copy" counts the fewest bytes the operator must move.

- Reversed rows: `lax.rev` on the outer axis, a row gather with reversed indices (given as an
  argument, and built in the program), and a Pallas (Triton) kernel whose programs copy one
  row segment each, the input row chosen by the BlockSpec.
- TILE (4, 1): the broadcast/reshape (the input is read once per copy), and a Pallas kernel
  that reads each input block once and stores it four times.
- PADDING, edge mode, 3 on each spatial side: `jnp.pad`, and one gather whose flat index map
  (one int32 per output plane element, 1 MB) folds the borders.
- SLICE of every other column: a strided read touches every 32-byte sector, so the bytes
  moved are the whole input plus the output; the probe prints that bound beside the figure.

Usage: PYTHONPATH=.:benchmarks python3 benchmarks/layout_probe.py
"""

import jax
import jax.numpy as jnp
import numpy as np
from _timing import copy_ceiling, report  # benchmarks/ is on sys.path when a script in it runs
from jax import lax
from jax.experimental import pallas as pl


def reversed_rows_kernel(x, *, segment=2048):
  rows, cols = x.shape

  def kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...]

  return pl.pallas_call(
    kernel,
    grid=(rows, cols // segment),
    in_specs=[pl.BlockSpec((None, segment), lambda i, j: (rows - 1 - i, j))],
    out_specs=pl.BlockSpec((None, segment), lambda i, j: (i, j)),
    out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
  )(x)


def tile_rows_kernel(x, copies, *, block_rows=8, block_cols=512):
  rows, cols = x.shape

  def kernel(x_ref, o_ref):
    block = x_ref[...]
    o_ref[...] = jnp.broadcast_to(block[None], (copies, block_rows, block_cols))

  out = pl.pallas_call(
    kernel,
    grid=(rows // block_rows, cols // block_cols),
    in_specs=[pl.BlockSpec((block_rows, block_cols), lambda i, j: (i, j))],
    out_specs=pl.BlockSpec((copies, block_rows, block_cols), lambda i, j: (0, i, j)),
    out_shape=jax.ShapeDtypeStruct((copies, rows, cols), x.dtype),
  )(x)
  return out.reshape(copies * rows, cols)


def edge_map(height, width, pad):
  rows = np.clip(np.arange(-pad, height + pad), 0, height - 1)
  cols = np.clip(np.arange(-pad, width + pad), 0, width - 1)
  return (rows[:, None] * width + cols[None, :]).reshape(-1).astype(np.int32)


def main():
  rng = np.random.default_rng(0)
  ceiling = copy_ceiling(rng)

  x = rng.standard_normal((8192, 8192)).astype(np.float32)
  xd = jnp.asarray(x)
  moved = 2 * x.nbytes
  want = x[::-1]
  print("reversed rows, (8192, 8192) f32")
  report("lax.rev", jax.jit(lambda a: lax.rev(a, (0,))), (xd,), want, moved, ceiling)
  index = jnp.arange(8191, -1, -1, dtype=jnp.int32)
  take = jax.jit(lambda a, i: jnp.take(a, i, axis=0, mode="clip"))
  report("row gather, indices given", take, (xd, index), want, moved, ceiling)
  built = jax.jit(lambda a: jnp.take(a, 8191 - lax.iota(jnp.int32, 8192), axis=0, mode="clip"))
  report("row gather, indices built", built, (xd,), want, moved, ceiling)
  # The benchmark's window: all but the first row and column (unaligned rows), walked upward.
  want_window = x[1:, 1:][::-1]
  moved_window = 2 * want_window.nbytes
  report(
    "window: slice, rev",
    jax.jit(lambda a: lax.rev(a[1:, 1:], (0,))),
    (xd,),
    want_window,
    moved_window,
    ceiling,
  )
  report(
    "window: rev, slice",
    jax.jit(lambda a: lax.rev(a, (0,))[:-1, 1:]),
    (xd,),
    want_window,
    moved_window,
    ceiling,
  )
  window_rows = jnp.arange(8191, 0, -1, dtype=jnp.int32)
  report(
    "window: row gather, slice",
    jax.jit(lambda a, i: jnp.take(a, i, axis=0, mode="clip")[:, 1:]),
    (xd, window_rows),
    want_window,
    moved_window,
    ceiling,
  )
  report(
    "window: slice, row gather",
    jax.jit(lambda a, i: jnp.take(a[:, 1:], i, axis=0, mode="clip")),
    (xd, window_rows),
    want_window,
    moved_window,
    ceiling,
  )
  for segment in (1024, 2048, 8192):
    fn = jax.jit(lambda a, s=segment: reversed_rows_kernel(a, segment=s))
    report(f"pallas row copy, {segment}", fn, (xd,), want, moved, ceiling)

  t = rng.standard_normal((4096, 4096)).astype(np.float32)
  td = jnp.asarray(t)
  moved = 5 * t.nbytes
  want = np.tile(t, (4, 1))
  print("TILE (4096, 4096) by (4, 1)")
  report("jnp.tile", jax.jit(lambda a: jnp.tile(a, (4, 1))), (td,), want, moved, ceiling)
  for block_rows, block_cols in ((8, 512), (4, 1024), (16, 256), (2, 2048)):
    fn = jax.jit(
      lambda a, r=block_rows, c=block_cols: tile_rows_kernel(a, 4, block_rows=r, block_cols=c)
    )
    report(f"pallas read once, {block_rows}x{block_cols}", fn, (td,), want, moved, ceiling)

  p = rng.standard_normal((64, 64, 512, 512)).astype(np.float32)
  pd = jnp.asarray(p)
  want = np.pad(p, ((0, 0), (0, 0), (3, 3), (3, 3)), mode="edge")
  moved = p.nbytes + want.nbytes
  print("PADDING edge, (64, 64, 512, 512) + 3")
  pads = ((0, 0), (0, 0), (3, 3), (3, 3))
  report(
    "jnp.pad edge", jax.jit(lambda a: jnp.pad(a, pads, mode="edge")), (pd,), want, moved, ceiling
  )
  flat = jnp.asarray(edge_map(512, 512, 3))

  def by_map(a, m):
    planes = a.reshape(64 * 64, 512 * 512)
    return jnp.take(planes, m, axis=1, mode="clip").reshape(64, 64, 518, 518)

  report("one gather, map given", jax.jit(by_map), (pd, flat), want, moved, ceiling)
  constant = edge_map(512, 512, 3)
  report(
    "one gather, map constant", jax.jit(lambda a: by_map(a, constant)), (pd,), want, moved, ceiling
  )
  rows = np.clip(np.arange(-3, 515), 0, 511).astype(np.int32)

  def two_takes(a):
    a = jnp.take(a, rows, axis=2, mode="clip")
    return jnp.take(a, rows, axis=3, mode="clip")

  report("two takes", jax.jit(two_takes), (pd,), want, moved, ceiling)

  print("SLICE of every other column, (8192, 8192) f32")
  want = x[:, ::2]
  moved = x.nbytes // 2 + want.nbytes
  report("lax.slice", jax.jit(lambda a: a[:, ::2]), (xd,), want, moved, ceiling)
  print(f"  bound: every sector is read, {moved / (x.nbytes + want.nbytes):.2f} of copy at most")


if __name__ == "__main__":
  main()
