"""Probe: JOIN and GATHER_ND row gathers as TMA copies (Pallas, Mosaic GPU), against XLA.

Not part of the library. JOIN compiles to the same HLO as `jnp.concatenate` (0.98 of a device
copy by kernel time), and GATHER_ND's row-copy kernel ties XLA's gather on an H100 (0.92):
neither is faster than its best peer. Question: do bulk copies through shared memory (TMA
loads of whole tiles, TMA stores of them, no thread touching the data) beat both?

- JOIN of 4 x (4096, 8192) float32 along axis 0 and axis 1: every input seen as
  (outer, rows, 256) and copied in tiles of `tile_rows` rows of 256 (KiB of float32; a tile
  spans several outer indices where an input has fewer rows than that) into the output seen
  the same way; each thread block copies `tiles` tiles, all loads issued before the first
  store (the inputs must share one width, as in the benchmark).
- GATHER_ND rows: 65536 random rows of 256 float32 from a (1048576, 256) table; each block
  loads its rows' numbers, issues one TMA load a row, then one TMA store of all of them. Then
  the same count of rows in order, and a plain copy of as many bytes.

Each form is checked bit for bit, then timed by kernel time (PyTorch's profiler: the summed
device time of the kernels a call runs) and pipelined, as fractions of a 1 GiB copy timed the
same way.

Usage: PYTHONPATH=.:benchmarks python3 benchmarks/tma_copy_probe.py [--only join|rows]
"""

import argparse
import functools

import jax
import jax.numpy as jnp
import numpy as np
from _timing import timed  # benchmarks/ is on sys.path when a script in it runs
from jax import lax
from kernel_time_probe import kernel_seconds

import dml_jax as dml

_COLUMNS = 256  # a tile row: 1 KiB of float32, TMA's widest box dimension


def _join_kernel(xs, axis, *, tile_rows, tiles):
  """JOIN of `xs` along `axis` as TMA tile copies (see the module docstring)."""
  from jax.experimental import pallas as pl
  from jax.experimental.pallas import mosaic_gpu as plgpu

  shape = list(xs[0].shape)
  outer = int(np.prod(shape[:axis]))
  widths = [int(np.prod(x.shape[axis:])) // _COLUMNS for x in xs]  # rows of 256 per outer
  offsets = [int(v) for v in np.cumsum([0, *widths])]
  views = [x.reshape(outer, w, _COLUMNS) for x, w in zip(xs, widths, strict=True)]
  # A tile: `box_outer` outer indices of `box_rows` rows of 256, `tile_rows` rows in all.
  boxes = [(max(1, tile_rows // w), min(tile_rows, w)) for w in widths]
  per_outer = [w // rows for w, (_, rows) in zip(widths, boxes, strict=True)]  # tiles an outer
  blocks = [outer // o * p // tiles for (o, _), p in zip(boxes, per_outer, strict=True)]
  first_block = [int(v) for v in np.cumsum([0, *blocks])]

  def body(*refs):
    x_refs, o_ref, smem, barriers = refs[: len(xs)], refs[len(xs)], *refs[len(xs) + 1 :]
    block = lax.axis_index("block")
    for i, x_ref in enumerate(x_refs):
      pl.when((block >= first_block[i]) & (block < first_block[i + 1]))(
        functools.partial(copy_input, i, x_ref, o_ref, smem, barriers, block)
      )

  def copy_input(i, x_ref, o_ref, smem, barriers, block):
    first_tile = (block - first_block[i]) * tiles
    box_outer, box_rows = boxes[i]

    def at(j):
      tile = first_tile + j
      return tile // per_outer[i] * box_outer, tile % per_outer[i] * box_rows

    view = lambda j: smem.at[j]
    for j in range(tiles):
      o, r = at(j)
      source = x_ref.at[pl.ds(o, box_outer), pl.ds(r, box_rows), :]
      plgpu.copy_gmem_to_smem(source, view(j), barriers.at[j])
    for j in range(tiles):
      o, r = at(j)
      plgpu.barrier_wait(barriers.at[j])
      target = o_ref.at[pl.ds(o, box_outer), pl.ds(offsets[i] + r, box_rows), :]
      plgpu.copy_smem_to_gmem(view(j), target)
    plgpu.wait_smem_to_gmem(0)

  out = plgpu.kernel(
    body,
    out_type=jax.ShapeDtypeStruct((outer, offsets[-1], _COLUMNS), xs[0].dtype),
    scratch_types=[
      plgpu.SMEM((tiles, *boxes[0], _COLUMNS), xs[0].dtype),  # inputs of one width
      plgpu.Barrier(num_arrivals=1, num_barriers=tiles),
    ],
    grid=(first_block[-1],),
    grid_names=("block",),
  )(*views)
  shape[axis] = sum(x.shape[axis] for x in xs)
  return out.reshape(shape)


def _rows_kernel(table, rows, *, per_block):
  """`table[rows]` as one TMA load a row into shared memory, one TMA store a block."""
  from jax.experimental import pallas as pl
  from jax.experimental.pallas import mosaic_gpu as plgpu

  count, width = rows.shape[0], table.shape[1]

  def body(t_ref, r_ref, o_ref, numbers, smem, numbers_barrier, rows_barrier):
    block = lax.axis_index("block")
    plgpu.copy_gmem_to_smem(r_ref.at[pl.ds(block * per_block, per_block)], numbers, numbers_barrier)
    plgpu.barrier_wait(numbers_barrier)
    for j in range(per_block):  # each copy arrives at the barrier once
      row = numbers[j]
      plgpu.copy_gmem_to_smem(t_ref.at[pl.ds(row, 1), :], smem.at[pl.ds(j, 1)], rows_barrier)
    plgpu.barrier_wait(rows_barrier)
    plgpu.copy_smem_to_gmem(smem, o_ref.at[pl.ds(block * per_block, per_block), :])
    plgpu.wait_smem_to_gmem(0)

  return plgpu.kernel(
    body,
    out_type=jax.ShapeDtypeStruct((count, width), table.dtype),
    scratch_types=[
      plgpu.SMEM((per_block,), np.int32),
      plgpu.SMEM((per_block, width), table.dtype),
      plgpu.Barrier(num_arrivals=1),
      plgpu.Barrier(num_arrivals=per_block),
    ],
    grid=(count // per_block,),
    grid_names=("block",),
  )(table, rows)


def _report(name, fn, args, want, moved, copy):
  """Checks, then prints kernel-time and pipelined fractions of the copy; survives failures."""
  try:
    ok = np.array_equal(np.asarray(fn(*args)), want)
    busy, _, kernels = kernel_seconds(fn, *args)
    wall = timed(fn, *args)
  except Exception as e:  # a probe: report and go on
    print(f"  {name:<34} failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    return
  copy_busy, copy_wall = copy
  print(
    f"  {name:<34} kernel {busy * 1e6:8.1f} us {moved / busy / copy_busy:5.3f} of copy"
    f"   pipelined {wall * 1e6:8.1f} us {moved / wall / copy_wall:5.3f}"
    f"  {'ok' if ok else 'WRONG'}  {','.join(kernels)[:60]}"
  )


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--only", choices=("join", "rows"))
  args = parser.parse_args(argv)
  rng = np.random.default_rng(0)
  big = jnp.asarray(rng.standard_normal(2**28).astype(np.float32))
  copy_fn = jax.jit(jnp.copy)
  busy, _, _ = kernel_seconds(copy_fn, big)
  copy = (2 * big.nbytes / busy, 2 * big.nbytes / timed(copy_fn, big))
  print(f"# {jax.devices()[0].device_kind}, jax {jax.__version__}")
  print(f"# copy 1 GiB: kernel {copy[0] / 1e9:.0f} GB/s, pipelined {copy[1] / 1e9:.0f} GB/s")
  del big
  if args.only in (None, "join"):
    xs = [jnp.asarray(rng.standard_normal((4096, 8192)).astype(np.float32)) for _ in range(4)]
    host = [np.asarray(x) for x in xs]
    moved = 2 * sum(x.nbytes for x in host)
    for axis in (0, 1):
      print(f"JOIN f32 4 x (4096, 8192) along axis {axis}")
      want = np.concatenate(host, axis)
      _report(
        "jnp.concatenate", jax.jit(lambda *x, a=axis: jnp.concatenate(x, a)), xs, want, moved, copy
      )
      _report("dml_jax", jax.jit(lambda *x, a=axis: dml.join(x, axis=a)), xs, want, moved, copy)
      tile_forms = ((16, 2), (32, 3), (64, 1), (64, 2), (64, 3), (128, 1))
      for tile_rows, tiles in tile_forms:
        fn = jax.jit(functools.partial(_join_kernel, axis=axis, tile_rows=tile_rows, tiles=tiles))
        name = f"tma tiles {tile_rows} KiB x {tiles}"
        _report(name, lambda *x, fn=fn: fn(x), xs, want, moved, copy)
    del xs
  if args.only in (None, "rows"):
    table = jnp.asarray(rng.standard_normal((2**20, 256)).astype(np.float32))
    rows = rng.integers(0, 2**20, 65536).astype(np.int32)
    want = np.asarray(table)[rows]
    moved = 2 * want.nbytes
    rows_d = jnp.asarray(rows)
    print("GATHER_ND rows: 65536 random rows of 256 f32 from (1048576, 256)")
    indices = jnp.asarray(np.stack([rows // 1024, rows % 1024], -1).reshape(1, -1, 2))
    table3 = table.reshape(1024, 1024, 256)
    _report("jnp take rows", jax.jit(lambda t, r: t[r]), (table, rows_d), want, moved, copy)
    gnd = jax.jit(
      lambda t, i: dml.gather_nd(t, i, input_dimension_count=3, indices_dimension_count=3).reshape(
        -1, 256
      )
    )
    _report("dml_jax gather_nd", gnd, (table3, indices), want, moved, copy)
    for per_block in (4, 8, 16, 32, 64):
      fn = jax.jit(functools.partial(_rows_kernel, per_block=per_block))
      _report(f"tma rows, {per_block} a block", fn, (table, rows_d), want, moved, copy)
    # Is it the random rows, or the size? The same count of rows in order, and a plain copy.
    in_order = jnp.arange(65536, dtype=np.int32) + 2**19
    want = np.asarray(table)[2**19 : 2**19 + 65536]
    fn = jax.jit(functools.partial(_rows_kernel, per_block=8))
    _report("tma rows in order, 8 a block", fn, (table, in_order), want, moved, copy)
    _report(
      "jnp take rows in order", jax.jit(lambda t, r: t[r]), (table, in_order), want, moved, copy
    )
    _report("copy of the same bytes", jax.jit(jnp.copy), (jnp.asarray(want),), want, moved, copy)


if __name__ == "__main__":
  main()
