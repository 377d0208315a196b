"""Probe: ONE_HOT as a compare-and-select against a fill followed by a scatter of the ones.

Not part of the library. ONE_HOT writes an output of `depth` times the indices' size and
reads almost nothing, so its limit is the write bandwidth. The library's lowering is one
fused compare-and-select; the alternative fills the output with OffValue (a memset-like
kernel) and then scatters OnValue at the hot positions (one write per index, out-of-range
positions dropped), which is what torch's zeros + scatter_ does. Both are checked bit for
bit against NumPy; the figure is bytes written over the copy's bytes moved per second.

`pallas_one_hot` became the library's ONE_HOT kernel
(dml_jax/_src/kernels/one_hot_tiles_triton.py): on CUDA GPUs dml.one_hot writes these 4 GiB
outputs with it, so its line times the kernel there, and XLA's compare-and-select on other
platforms (and below the kernel's size threshold).

Usage: PYTHONPATH=.:benchmarks python3 benchmarks/one_hot_probe.py [AXIS ...]
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np
from _timing import copy_ceiling, report  # benchmarks/ is on sys.path when a script in it runs

import dml_jax as dml


def fill_then_scatter(indices, values, depth, axis):
  """OffValue everywhere, then OnValue at each in-range index (flat positions, drop mode)."""
  n = indices.size
  flat, values = indices.reshape(-1), values.reshape(-1)
  hot = (flat >= 0) & (flat < depth)
  j = jnp.arange(n, dtype=jnp.int32)
  position = flat * n + j if axis == 0 else j * depth + flat
  position = jnp.where(hot, position, depth * n)  # out of range: dropped
  out = jnp.full((depth * n,), values[0], values.dtype)
  out = out.at[position].set(values[1], mode="drop", unique_indices=True)
  return out.reshape((depth, n) if axis == 0 else (n, depth))


def pallas_fill_then_scatter(indices, values, depth, axis, block=1024, warps=4):
  """OffValue written by a Pallas fill kernel (contiguous blocks of `block` elements,
  evict-first stores, nothing loaded), then OnValue scattered at each in-range position, as
  torch's zeros + scatter_ does (the negative-index rule applied first, as dml does)."""
  from jax.experimental import pallas as pl
  from jax.experimental.pallas import triton as pltriton

  n = indices.size
  flat, values = indices.reshape(-1), values.reshape(-1)
  flat = jnp.where(flat < 0, flat + depth, flat)
  hot = (flat >= 0) & (flat < depth)
  j = jnp.arange(n, dtype=jnp.int32)
  position = flat * n + j if axis == 0 else j * depth + flat
  position = jnp.where(hot, position, depth * n)  # out of range: dropped

  def fill(values_ref, out_ref):
    off = jnp.broadcast_to(values_ref[0], (block,))
    pltriton.store(out_ref, off, eviction_policy="evict_first")

  out = pl.pallas_call(
    fill,
    out_shape=jax.ShapeDtypeStruct((depth * n,), values.dtype),
    grid=(depth * n // block,),
    in_specs=[pl.BlockSpec((2,), lambda i: (0,))],
    out_specs=pl.BlockSpec((block,), lambda i: (i,)),
    compiler_params=pltriton.CompilerParams(num_warps=warps),
  )(values[:2])
  out = out.at[position].set(values[1], mode="drop", unique_indices=True)
  return out.reshape((depth, n) if axis == 0 else (n, depth))


def pallas_one_hot_columns(position, values, depth, width=1024, rows=4, warps=4):
  """ONE_HOT along axis 0 by column blocks: each program loads the positions of `width`
  sequences once and walks down all `depth` rows in a loop, `rows` at a time, with
  evict-first stores (`position`: normalized, `depth` where none is hot)."""
  from jax.experimental import pallas as pl
  from jax.experimental.pallas import triton as pltriton

  n = position.size
  flat, values = position.reshape(-1), values.reshape(-1)

  def kernel(pos_ref, values_ref, out_ref):
    pos = pos_ref[...]
    off, on = values_ref[0], values_ref[1]

    def body(k, carry):
      row = k * rows + jax.lax.broadcasted_iota(jnp.int32, (rows, width), 0)
      tile = jnp.where(row == pos[None, :], on, off)
      pltriton.store(out_ref.at[pl.ds(k * rows, rows), :], tile, eviction_policy="evict_first")
      return carry

    jax.lax.fori_loop(0, depth // rows, body, 0)

  return pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((depth, n), values.dtype),
    grid=(n // width,),
    in_specs=[pl.BlockSpec((width,), lambda j: (j,)), pl.BlockSpec((2,), lambda j: (0,))],
    out_specs=pl.BlockSpec((depth, width), lambda j: (0, j)),
    compiler_params=pltriton.CompilerParams(num_warps=warps),
  )(flat, values[:2])


def pallas_one_hot(
  position,
  values,
  depth,
  axis,
  block=(32, 1024),
  warps=4,
  interpret=False,
  eviction=None,
  columns_fastest=False,
):
  """A Pallas (Triton) kernel: each program writes a (block) tile of the output, comparing an
  iota with the positions it loads once (`position`: normalized, `depth` where none is hot)."""
  from jax.experimental import pallas as pl
  from jax.experimental.pallas import triton as pltriton

  n = position.size
  flat, values = position.reshape(-1), values.reshape(-1)
  rows, cols = (depth, n) if axis == 0 else (n, depth)
  br, bc = block

  grid = (rows // br, cols // bc)
  order = (lambda f: lambda j, i: f(i, j)) if columns_fastest else (lambda f: f)
  if columns_fastest:
    grid = grid[::-1]

  def kernel(pos_ref, values_ref, out_ref):
    i, j = (
      (pl.program_id(1), pl.program_id(0))
      if columns_fastest
      else (pl.program_id(0), pl.program_id(1))
    )
    r = i * br + jax.lax.broadcasted_iota(jnp.int32, (br, bc), 0)
    c = j * bc + jax.lax.broadcasted_iota(jnp.int32, (br, bc), 1)
    if axis == 0:
      hot = r == pos_ref[...][None, :]
    else:
      hot = c == pos_ref[...][:, None]
    tile = jnp.where(hot, values_ref[1], values_ref[0])
    if eviction is None:
      out_ref[...] = tile
    else:
      pltriton.store(out_ref, tile, eviction_policy=eviction)

  pos_spec = (
    pl.BlockSpec((bc,), order(lambda i, j: (j,)))
    if axis == 0
    else pl.BlockSpec((br,), order(lambda i, j: (i,)))
  )
  return pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((rows, cols), values.dtype),
    grid=grid,
    in_specs=[pos_spec, pl.BlockSpec((2,), lambda i, j: (0,))],
    out_specs=pl.BlockSpec((br, bc), order(lambda i, j: (i, j))),
    compiler_params=None if interpret else pltriton.CompilerParams(num_warps=warps),
    interpret=interpret,
  )(flat, values)


def main():
  rng = np.random.default_rng(0)
  ceiling = copy_ceiling(rng)
  n, depth = 1 << 20, 1024
  flat = rng.integers(-depth - 8, depth + 8, n).astype(np.int32)  # a few out of range
  values = np.array([[0.0, 1.0]], np.float32)  # (1, 2): the rank of the indices
  for axis in [int(a) for a in sys.argv[1:]] or (0, 1):
    shape = (1, n) if axis == 0 else (n, 1)
    indices = flat.reshape(shape)
    position = np.where(flat < 0, flat + depth, flat)
    valid = (position >= 0) & (position < depth)
    hot = (np.arange(depth)[:, None] == np.where(valid, position, -1)[None, :]).astype(np.float32)
    want = hot if axis == 0 else hot.T.copy()
    moved = want.nbytes
    args = (jnp.asarray(indices), jnp.asarray(values))
    print(f"ONE_HOT of {n} int32 indices, depth {depth}, axis {axis}: {moved / 1e9:.2f} GB written")
    report(
      "dml.one_hot",
      jax.jit(lambda i, v, a=axis: dml.one_hot(i, v, axis=a, depth=depth)),
      args,
      want,
      moved,
      ceiling,
    )

    def scattered(i, v, a=axis):  # the negative-index rule first, as dml does
      i = jnp.where(i < 0, i + depth, i)
      return fill_then_scatter(i, v, depth, a)

    report("fill + scatter (drop)", jax.jit(scattered), args, want, moved, ceiling)
    for block, warps in ((1024, 4), (4096, 4), (16384, 8)):
      fn = jax.jit(
        lambda i, v, a=axis, b=block, w=warps: pallas_fill_then_scatter(i, v, depth, a, b, w)
      )
      report(f"pallas fill {block} w{warps} + scatter", fn, args, want, moved, ceiling)

    def normalized(i):
      i = jnp.where(i < 0, i + depth, i)
      return jnp.where((i >= 0) & (i < depth), i, depth)

    if axis == 0:
      for width, rows, warps in (
        (1024, 4, 4),
        (1024, 1, 4),
        (1024, 8, 4),
        (512, 4, 4),
        (2048, 4, 8),
      ):
        fn = jax.jit(
          lambda i, v, c=width, r=rows, w=warps: pallas_one_hot_columns(
            normalized(i), v, depth, c, r, w
          )
        )
        report(
          f"pallas columns {width}, {rows} rows a step, w{warps}", fn, args, want, moved, ceiling
        )

    blocks = (
      [(32, 1024), (64, 512), (16, 1024)]
      if axis == 0
      else [(512, 64), (256, 128), (128, 256), (64, 512), (32, 1024), (256, 256)]
    )
    variants = [(b, 4, None) for b in blocks] + [(blocks[1], 8, None)]
    variants += [((32, 1024), 4, "evict_first"), ((32, 1024), 4, "evict_last")]
    # XLA's own loop: 128 threads a block, 4 elements a thread (one 16-byte store each)
    variants += [((1, 512), 4, None), ((1, 512), 4, "evict_first"), ((1, 1024), 4, "evict_first")]
    variants += [((2, 1024), 4, "evict_first"), ((4, 1024), 4, "evict_first")]
    variants = [(*v, False) for v in variants]
    # Column blocks fastest: side-by-side programs write one stretch of the same rows.
    for block in ((32, 1024), (8, 4096), (4, 8192), (1, 1024)):
      variants += [(block, 4, "evict_first", True)]
    variants += [((8, 4096), 4, "evict_first", False)]
    for block, warps, eviction, swap in variants:
      report(
        f"pallas {block} w{warps}"
        + (f" {eviction}" if eviction else "")
        + (" columns first" if swap else ""),
        jax.jit(
          lambda i, v, a=axis, b=block, w=warps, e=eviction, c=swap: pallas_one_hot(
            normalized(i), v, depth, a, b, w, eviction=e, columns_fastest=c
          )
        ),
        args,
        want,
        moved,
        ceiling,
      )
    report(
      "jax.nn.one_hot",
      jax.jit(
        lambda i, v, a=axis: jax.nn.one_hot(
          jnp.where(i < 0, i + depth, i).reshape(-1), depth, axis=0 if a == 0 else -1
        )
      ),
      args,
      want,
      moved,
      ceiling,
    )


if __name__ == "__main__":
  main()
