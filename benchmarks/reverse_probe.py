"""Probe: a Pallas (Triton) kernel for REVERSE_SUBSEQUENCES with per-lane lengths, and what
bounds GATHER_ND's row gathers at their size.

Not part of the library. Checked bit for bit against NumPy and timed like the other A/B
scripts (pipelined jitted calls, median of repeats, against a 1 GiB device copy).

Reverse: XLA's gather hands each thread block a run of whole output rows; with per-lane
lengths, the 1024 lanes of one output row read 1024 different input rows, so every 32-byte
sector is fetched from L2 once per lane that needs it (8 times for f32). Here a program owns
a strip of W lanes and T rows: when T covers the whole axis, the W lanes of a sector read all
of the strip's rows, each sector serving every lane from that SM's L1 after its first fetch.

Row gathers: 134 MB moved in about 50 us, so a launch's ramp and tail weigh; the probe times a
plain copy of the same bytes and gathers of sorted and contiguous rows next to random ones.

Usage: PYTHONPATH=.:benchmarks python3 benchmarks/reverse_probe.py [--strips]
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np
from _timing import copy_ceiling, report  # benchmarks/ is on sys.path when a script in it runs
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton

import dml_jax as dml


def reverse_strips(x, lengths, *, lanes, rows, num_warps, loop=False, interpret=False):
  """(B, S, C) along axis 1, int32 lengths (B, 1, C) already in [0, S].

  Each program writes `rows` rows of `lanes` lanes; with loop=True one program walks the
  whole axis in steps of `rows` (the strip's sectors stay in its SM's L1 between steps).
  """
  b_size, s_size, c_size = x.shape
  steps = s_size // rows

  def kernel(x_ref, len_ref, o_ref):
    b = pl.program_id(1)
    lane = pl.program_id(0) * lanes + jnp.arange(lanes)[None, :]
    n = len_ref[0, 0, :][None, :]

    def tile(t0):
      t = t0 + jnp.arange(rows)[:, None]
      return x_ref[b, jnp.where(t < n, n - 1 - t, t), lane]

    if loop:

      def body(step, carry):
        o_ref[0, pl.ds(step * rows, rows), :] = tile(step * rows)
        return carry

      jax.lax.fori_loop(0, steps, body, 0)
    else:
      o_ref[...] = tile(pl.program_id(2) * rows)[None]

  # Axis 0 of a Pallas Triton grid is blockIdx.x, the fastest: lanes first, then the batch,
  # so the programs running at once share one batch entry's rows in L2.
  grid = (c_size // lanes, b_size) if loop else (c_size // lanes, b_size, steps)
  out_rows = s_size if loop else rows
  return pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
    grid=grid,
    in_specs=[
      pl.BlockSpec(x.shape, lambda c, b, *_: (0, 0, 0)),
      pl.BlockSpec((1, 1, lanes), lambda c, b, *_: (b, 0, c)),
    ],
    out_specs=pl.BlockSpec((1, out_rows, lanes), lambda c, b, *t: (b, t[0] if t else 0, c)),
    compiler_params=None if interpret else pltriton.CompilerParams(num_warps=num_warps),
    interpret=interpret,
  )(x, lengths)


def reverse_rows(x, lengths, *, rows, lanes, num_warps, split, cache=None, interpret=False):
  """(B, S, C) along axis 1, int32 lengths (B, 1, C) in [0, S]; programs own (rows, lanes) tiles.

  split=False gathers every element (XLA's mapping); split=True loads the tile's copied part
  (t >= length) as a plain block, coalesced, and gathers only the reversed part (masked), so a
  warp's instruction touches one line per row instead of one per element for half the tile.
  """
  b_size, s_size, c_size = x.shape

  def kernel(x_ref, tile_ref, len_ref, o_ref):
    b = pl.program_id(2)
    t = pl.program_id(1) * rows + jnp.arange(rows)[:, None]
    lane = pl.program_id(0) * lanes + jnp.arange(lanes)[None, :]
    n = len_ref[0, 0, :][None, :]
    reversed_part = t < n
    source = jnp.where(reversed_part, n - 1 - t, t)
    if not split:
      o_ref[...] = x_ref[b, source, lane][None]
      return
    kept = pltriton.load(tile_ref, mask=~reversed_part[None])
    moved = pltriton.load(x_ref.at[b, source, lane], mask=reversed_part, cache_modifier=cache)
    o_ref[...] = jnp.where(reversed_part[None], moved[None], kept)

  tile = pl.BlockSpec((1, rows, lanes), lambda c, t, b: (b, t, c))
  return pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
    grid=(c_size // lanes, s_size // rows, b_size),  # fastest first: see reverse_strips
    in_specs=[
      pl.BlockSpec(x.shape, lambda c, t, b: (0, 0, 0)),
      tile,
      pl.BlockSpec((1, 1, lanes), lambda c, t, b: (b, 0, c)),
    ],
    out_specs=tile,
    compiler_params=None if interpret else pltriton.CompilerParams(num_warps=num_warps),
    interpret=interpret,
  )(x, x, lengths)


def _reverse_section(rng, ceiling, dtype, variants):
  if dtype == np.int8:
    x = rng.integers(-128, 128, (64, 4096, 1024), dtype=np.int8)
  else:
    x = rng.standard_normal((64, 4096, 1024)).astype(dtype)
  lengths = rng.integers(0, 4097, (64, 1, 1024)).astype(np.int32)
  pos = np.arange(4096)[None, :, None]
  want = np.take_along_axis(x, np.where(pos < lengths, lengths - 1 - pos, pos), axis=1)
  moved = 2 * x.nbytes + lengths.nbytes
  xd, ld = jnp.asarray(x), jnp.asarray(lengths)
  print(f"REVERSE_SUBSEQUENCES {np.dtype(dtype).name} (64, 4096, 1024), axis 1, lengths per lane")
  xla = jax.jit(lambda a, n: dml.reverse_subsequences(a, n.astype(jnp.uint32), axis=1))
  report("xla (dml_jax)", xla, (xd, ld), want, moved, ceiling, width=44)
  for name, kernel, options in variants:
    fn = jax.jit(lambda a, n, k=kernel, o=options: k(a, n, **o))
    report(name, fn, (xd, ld), want, moved, ceiling, width=44)


def _strips(lanes, rows, num_warps, loop=False):
  name = f"strip lanes={lanes} rows={rows} warps={num_warps}{' loop' if loop else ''}"
  return name, reverse_strips, dict(lanes=lanes, rows=rows, num_warps=num_warps, loop=loop)


def _tiles(rows, lanes, num_warps, split, cache=None):
  name = f"tile rows={rows} lanes={lanes} warps={num_warps}"
  name += f" split{' ' + cache if cache else ''}" if split else " gather"
  options = dict(rows=rows, lanes=lanes, num_warps=num_warps, split=split, cache=cache)
  return name, reverse_rows, options


def _row_gather_section(rng, ceiling):
  x = rng.standard_normal((1024 * 1024, 256)).astype(np.float32)
  xd = jnp.asarray(x)
  print("row gather: 65536 rows of 256 f32 (1 KiB) from (1048576, 256); 134 MB moved")
  random_rows = rng.integers(0, x.shape[0], 65536).astype(np.int32)
  for name, rows in [
    ("random rows", random_rows),
    ("sorted rows", np.sort(random_rows)),
    ("contiguous rows", np.arange(65536, dtype=np.int32) + 4096),
  ]:
    want = x[rows]
    moved = 2 * want.nbytes + rows.nbytes
    take = jax.jit(lambda a, r: jnp.take(a, r, axis=0, mode="clip"))
    report(f"xla take, {name}", take, (xd, jnp.asarray(rows)), want, moved, ceiling, width=36)
  block = x[4096 : 4096 + 65536]
  report(
    "jnp.copy of the same 67 MB",
    jax.jit(jnp.copy),
    (jnp.asarray(block),),
    block,
    2 * block.nbytes,
    ceiling,
    width=36,
  )


def main():
  strips = "--strips" in sys.argv
  rng = np.random.default_rng(0)
  ceiling = copy_ceiling(rng)
  _row_gather_section(rng, ceiling)
  if strips:
    f32 = [_strips(8, 4096, 32), _strips(8, 4096, 16), _strips(4, 4096, 16), _strips(4, 4096, 8)]
    f32 += [_strips(16, 2048, 16), _strips(8, 2048, 8), _strips(8, 1024, 8)]
    f32 += [_strips(8, 512, 32, True), _strips(8, 1024, 32, True), _strips(16, 256, 32, True)]
    i8 = [_strips(32, 4096, 32), _strips(32, 2048, 16)]
  else:
    f32 = [_tiles(4, 1024, 4, False), _tiles(8, 1024, 8, False), _tiles(64, 32, 4, False)]
    f32 += [_tiles(r, c, w, True) for r, c, w in ((4, 1024, 4), (8, 1024, 8), (16, 256, 4))]
    f32 += [_tiles(8, 512, 4, True), _tiles(32, 256, 8, True)]
    f32 += [_strips(8, 4096, 32), _strips(16, 2048, 16), _strips(16, 256, 32, True)]
    i8 = [_tiles(8, 1024, 4, False), _tiles(8, 1024, 4, True), _tiles(16, 1024, 8, True)]
    i8 += [_tiles(32, 512, 8, True), _strips(32, 2048, 16)]
  _reverse_section(rng, ceiling, np.float32, f32)
  _reverse_section(rng, ceiling, np.int8, i8)


if __name__ == "__main__":
  main()
