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

With --parts (along axis 0, by kernel time as well): the fill and the scatter apart, torch's
and Pallas's; a fill followed by a Pallas scatter kernel of the hot elements (one masked
store per index into the filled buffer, aliased in place); tiles that fill and then scatter
their own ones; and the compare-and-select on the fill's grid, with int32 or int16 positions
and 1 to 32 rows a program (`--flat`: only these and dml.one_hot).

Usage: PYTHONPATH=.:benchmarks python3 benchmarks/one_hot_probe.py [AXIS ... | --parts [--flat]]
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np
from _timing import (  # benchmarks/ is on sys.path when a script in it runs
  copy_ceiling,
  report,
  timed,
)

import dml_jax as dml
from dml_jax._src.kernels import _triton


def normalized(indices, depth):
  """Positions as the kernels take them: the negative-index rule applied, `depth` where the
  sequence has no hot element."""
  i = jnp.where(indices < 0, indices + depth, indices)
  return jnp.where((i >= 0) & (i < depth), i, depth)


def grid_order(grid, columns_fastest):
  """(grid, index-map wrapper) for a 2-D grid of (row, column) blocks, the column blocks the
  fastest-varying grid dimension (CUDA's x) when `columns_fastest`."""
  if not columns_fastest:
    return grid, lambda f: f
  return grid[::-1], lambda f: lambda j, i: f(i, j)


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
  """OffValue written by a Pallas fill kernel (`pallas_fill`), then OnValue scattered at each
  in-range position, as torch's zeros + scatter_ does (the negative-index rule applied first,
  as dml does)."""
  n = indices.size
  flat, values = indices.reshape(-1), values.reshape(-1)
  flat = jnp.where(flat < 0, flat + depth, flat)
  hot = (flat >= 0) & (flat < depth)
  j = jnp.arange(n, dtype=jnp.int32)
  position = flat * n + j if axis == 0 else j * depth + flat
  position = jnp.where(hot, position, depth * n)  # out of range: dropped
  out = pallas_fill(values, depth * n, block, warps)
  out = out.at[position].set(values[1], mode="drop", unique_indices=True)
  return out.reshape((depth, n) if axis == 0 else (n, depth))


def pallas_fill(values, size, block=1024, warps=4):
  """A (size,) array of OffValue (values[0]): contiguous blocks, evict-first stores, no loads."""
  from jax.experimental import pallas as pl
  from jax.experimental.pallas import triton as pltriton

  def fill(values_ref, out_ref):
    pltriton.store(
      out_ref, jnp.broadcast_to(values_ref[0], (block,)), eviction_policy="evict_first"
    )

  return pl.pallas_call(
    fill,
    out_shape=jax.ShapeDtypeStruct((size,), values.dtype),
    grid=(size // block,),
    in_specs=[pl.BlockSpec((2,), lambda i: (0,))],
    out_specs=pl.BlockSpec((block,), lambda i: (i,)),
    compiler_params=pltriton.CompilerParams(num_warps=warps),
  )(values[:2])


def pallas_scatter_hot(out, position, values, block=1024, warps=4):
  """`out` (depth * n,) with OnValue stored at position[j] * n + j wherever position[j] is in
  [0, depth) (`position`: normalized, `depth` where none is hot): one masked store per index,
  the output aliased to `out`, so nothing else is read or written."""
  from jax.experimental import pallas as pl
  from jax.experimental.pallas import triton as pltriton

  n = position.size
  depth = out.size // n

  def kernel(pos_ref, values_ref, out_in_ref, out_ref):
    del out_in_ref
    j = pl.program_id(0) * block + jax.lax.broadcasted_iota(jnp.int32, (block,), 0)
    pos = pos_ref[...]
    hot = pos < depth
    flat = jnp.where(hot, pos, 0) * n + j
    pltriton.store(out_ref.at[flat], jnp.broadcast_to(values_ref[1], (block,)), mask=hot)

  return pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct(out.shape, out.dtype),
    grid=(n // block,),
    in_specs=[
      pl.BlockSpec((block,), lambda i: (i,)),
      pl.BlockSpec((2,), lambda i: (0,)),
      pl.BlockSpec(out.shape, lambda i: (0,)),
    ],
    out_specs=pl.BlockSpec(out.shape, lambda i: (0,)),
    input_output_aliases={2: 0},
    compiler_params=pltriton.CompilerParams(num_warps=warps),
  )(position.reshape(-1), values.reshape(-1)[:2], out)


def pallas_fill_scatter_tiles(
  position, values, depth, block=(32, 1024), warps=4, eviction="evict_first", columns_fastest=True
):
  """ONE_HOT along axis 0 as one kernel of fill-then-scatter tiles: each program fills its
  (rows, width) tile with OffValue, waits at a block barrier, then stores OnValue at the hot
  elements of its columns whose rows fall in the tile (a masked scatter into lines it has just
  written, still in L2): no compare over the tile, no second pass over the output."""
  from jax.experimental import pallas as pl
  from jax.experimental.pallas import triton as pltriton

  n = position.size
  rows, width = block
  grid, order = grid_order((depth // rows, n // width), columns_fastest)

  def kernel(pos_ref, values_ref, out_ref):
    i = pl.program_id(1) if columns_fastest else pl.program_id(0)
    off = jnp.broadcast_to(values_ref[0], (rows, width))
    _triton.store(out_ref, off, eviction_policy=eviction, interpret=False)
    local = pos_ref[...] - i * rows
    hot = (local >= 0) & (local < rows)
    pltriton.debug_barrier()
    columns = jax.lax.broadcasted_iota(jnp.int32, (width,), 0)
    on = jnp.broadcast_to(values_ref[1], (width,))
    pltriton.store(out_ref.at[jnp.where(hot, local, 0), columns], on, mask=hot)

  return pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((depth, n), values.dtype),
    grid=grid,
    in_specs=[
      pl.BlockSpec((width,), order(lambda i, j: (j,))),
      pl.BlockSpec((2,), lambda *_: (0,)),
    ],
    out_specs=pl.BlockSpec((rows, width), order(lambda i, j: (i, j))),
    compiler_params=pltriton.CompilerParams(num_warps=warps),
  )(position.reshape(-1), values.reshape(-1)[:2])


def pallas_one_hot_flat(position, values, depth, block=1024, warps=4, narrow=False, rows=1):
  """ONE_HOT along axis 0 on the fill's grid: program k writes the k-th contiguous block of
  the flattened (depth, n) output, loading the positions of its columns (as int16 where
  `narrow`) and comparing them with its row, evict-first stores; with `rows` > 1, the same
  columns of `rows` rows in turn, from one load of the positions."""
  from jax.experimental import pallas as pl
  from jax.experimental.pallas import triton as pltriton

  n = position.size
  per_row = n // block
  flat = position.reshape(-1).astype(jnp.int16 if narrow else jnp.int32)

  def kernel(pos_ref, values_ref, out_ref):
    pos = pos_ref[...].astype(jnp.int32)
    for r in range(rows):
      row = pl.program_id(0) // per_row * rows + r
      tile = jnp.where(pos == row, values_ref[1], values_ref[0])
      pltriton.store(out_ref.at[r], tile, eviction_policy="evict_first")

  out = pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((depth, n), values.dtype),
    grid=(depth // rows * per_row,),
    in_specs=[pl.BlockSpec((block,), lambda k: (k % per_row,)), pl.BlockSpec((2,), lambda k: (0,))],
    out_specs=pl.BlockSpec((rows, block), lambda k: (k // per_row, k % per_row)),
    compiler_params=pltriton.CompilerParams(num_warps=warps),
  )(flat, values.reshape(-1)[:2])
  return out


def parts():
  """Axis 0: the fill and the scatter apart (torch's and Pallas's), fills followed by
  scatters, and compare-and-select forms, against dml.one_hot; pipelined and by kernel time."""
  import torch
  from kernel_time_probe import kernel_seconds

  rng = np.random.default_rng(0)
  ceiling = copy_ceiling(rng)
  n, depth = 1 << 20, 1024
  flat = rng.integers(-depth - 8, depth + 8, n).astype(np.int32)
  values = np.array([[0.0, 1.0]], np.float32)
  position = np.where(flat < 0, flat + depth, flat)
  valid = (position >= 0) & (position < depth)
  want = (np.arange(depth)[:, None] == np.where(valid, position, -1)[None, :]).astype(np.float32)
  moved = want.nbytes
  args = (jnp.asarray(flat.reshape(1, n)), jnp.asarray(values))

  def by_kernel(name, fn, *fargs):
    busy, span, names = kernel_seconds(fn, *fargs)
    print(f"    {name}: kernels {busy * 1e3:.3f} ms busy, {span * 1e3:.3f} ms span {names}")

  print(f"ONE_HOT of {n} int32 indices, depth {depth}, axis 0: {moved / 1e9:.2f} GB written")
  forms = {
    "dml.one_hot": lambda i, v: dml.one_hot(i, v, axis=0, depth=depth),
    "pallas fill only": lambda i, v: pallas_fill(v.reshape(-1), depth * n).reshape(depth, n),
  }
  for block, warps in ((1024, 4), (4096, 4), (2048, 8)):
    forms[f"pallas fill {block} w{warps} + pallas scatter"] = lambda i, v, b=block, w=warps: (
      pallas_scatter_hot(
        pallas_fill(v.reshape(-1), depth * n, b, w), normalized(i, depth), v
      ).reshape(depth, n)
    )
  for block, warps, narrow, rows in (
    (1024, 4, False, 1),
    (1024, 4, True, 1),
    (4096, 8, True, 1),
    (1024, 4, True, 2),
    (1024, 4, True, 4),
    (1024, 4, False, 4),
    (2048, 4, True, 4),
    (1024, 4, True, 8),
    (1024, 4, True, 32),
  ):
    forms[f"flat compare {block} w{warps}{' int16' if narrow else ''} {rows} rows"] = (
      lambda i, v, b=block, w=warps, d=narrow, r=rows: pallas_one_hot_flat(
        normalized(i, depth), v, depth, b, w, d, r
      )
    )
  for block in ((32, 1024), (8, 1024), (4, 4096), (1, 1024), (64, 512)):
    for columns_fastest in (True, False):
      for eviction in ("evict_first", None):
        order = "columns" if columns_fastest else "rows"
        forms[f"fill-scatter tiles {block} {eviction} {order} first"] = (
          lambda i, v, b=block, e=eviction, c=columns_fastest: pallas_fill_scatter_tiles(
            normalized(i, depth), v, depth, b, eviction=e, columns_fastest=c
          )
        )
  if "--flat" in sys.argv:
    forms = {k: v for k, v in forms.items() if "flat" in k or k == "dml.one_hot"}
  for name, form in forms.items():
    fn = jax.jit(form)
    report(name, fn, args, want if "only" not in name else np.zeros_like(want), moved, ceiling)
    by_kernel(name, fn, *args)

  ti = torch.as_tensor(np.where(valid, position, 0).astype(np.int64)).cuda().reshape(1, n)
  tv = torch.as_tensor(np.where(valid, 1.0, 0.0).astype(np.float32)).cuda().reshape(1, n)
  out = torch.empty((depth, n), dtype=torch.float32, device="cuda")

  class Synced:  # what the timers wait on
    def block_until_ready(self):
      torch.cuda.synchronize()
      return self

  def fill():
    out.fill_(0.0)
    return Synced()

  def scatter():
    out.scatter_(0, ti, tv)
    return Synced()

  def both():
    torch.zeros((depth, n), dtype=torch.float32, device="cuda").scatter_(0, ti, tv)
    return Synced()

  for name, fn in (
    ("torch fill_", fill),
    ("torch scatter_", scatter),
    ("torch zeros + scatter_", both),
  ):
    seconds = timed(fn)
    print(f"  {name:<28} {seconds * 1e3:7.3f} ms  {moved / seconds / ceiling:5.2f} of copy")
    by_kernel(name, fn)


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
  grid, order = grid_order((rows // br, cols // bc), columns_fastest)

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
    _triton.store(out_ref, tile, eviction_policy=eviction, interpret=interpret)

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
            normalized(i, depth), v, depth, c, r, w
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
            normalized(i, depth), v, depth, a, b, w, eviction=e, columns_fastest=c
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
  parts() if "--parts" in sys.argv else main()
