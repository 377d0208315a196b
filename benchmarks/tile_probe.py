"""Probe: TILE of (1024, 1024) float32 by (4, 4), the layout target's case, by kernel time.

Not part of the library. The input (4 MiB) stays in L2, so the case is a 64 MiB write, about
15 us on a Hopper GPU: the pipelined timing measures the host's dispatch, and the profiler's
kernel time is the figure. Forms: dml.tile as it is (XLA's loop), jnp.tile; and a Pallas
(Triton) kernel that loads a block of input rows once and stores its copies, with the column
copies always in the program and the row copies either in the program or across the grid,
plain stores or evict-first. References of the same size: a 64 MiB copy, and a 64 MiB write of
a broadcast row. Then the library's kernel
(`tile_rows_triton`), and on run.py's 256 MiB cases ((4096, 4096) by (4, 1) and (1, 4)) against
the read-once copies kernel (`tile_copies_triton`) and XLA's loop. Each form is checked against np.tile; the fraction is of the 1 GiB copy's
bandwidth by kernel time, counting the input read once and the output written.

With --large, only run.py's 256 MiB cases and their references.

Usage: PYTHONPATH=.:benchmarks python3 benchmarks/tile_probe.py [--large]
"""

import functools
import sys

import jax
import jax.numpy as jnp
import numpy as np
from kernel_time_probe import kernel_seconds  # benchmarks/ is on sys.path

import dml_jax as dml
from dml_jax._src.kernels import _triton
from dml_jax._src.kernels.tile_copies_triton import tile_copies as copies_kernel
from dml_jax._src.kernels.tile_rows_triton import tile_rows as rows_kernel


def tile_kernel(x, repeats, *, rows=1, rows_in_program=False, eviction=None, warps=4):
  """TILE of a 2-D `x` by `repeats`: each program loads `rows` input rows and stores copies."""
  from jax.experimental import pallas as pl
  from jax.experimental.pallas import triton as pltriton

  (h, w), (a_rep, c_rep) = x.shape, repeats

  store = functools.partial(_triton.store, eviction_policy=eviction, interpret=False)

  def kernel(x_ref, out_ref):
    block = x_ref[...]
    for a in range(a_rep if rows_in_program else 1):
      for c in range(c_rep):
        store(out_ref.at[a, :, c, :], block)

  if rows_in_program:
    grid, in_map, out_map = (h // rows,), lambda i: (i, 0), lambda i: (0, i, 0, 0)
    out_block = (a_rep, rows, c_rep, w)
  else:  # the row copies across the grid, the copies of one block from consecutive programs
    grid, in_map, out_map = (a_rep, h // rows), lambda a, i: (i, 0), lambda a, i: (a, i, 0, 0)
    out_block = (1, rows, c_rep, w)
  out = pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((a_rep, h, c_rep, w), x.dtype),
    grid=grid,
    in_specs=[pl.BlockSpec((rows, w), in_map)],
    out_specs=pl.BlockSpec(out_block, out_map),
    compiler_params=pltriton.CompilerParams(num_warps=warps),
  )(x)
  return out.reshape(a_rep * h, c_rep * w)


def main():
  rng = np.random.default_rng(0)
  big = jnp.asarray(rng.standard_normal(2**28).astype(np.float32))
  copy_busy, _, _ = kernel_seconds(jax.jit(jnp.copy), big)
  ceiling = 2 * big.nbytes / copy_busy
  print(f"# {jax.devices()[0].device_kind}: 1 GiB copy {ceiling / 1e9:.0f} GB/s by kernel time")
  x = rng.standard_normal((1024, 1024)).astype(np.float32)
  repeats = (4, 4)
  want = np.tile(x, repeats)
  moved = x.nbytes + want.nbytes
  xd = jnp.asarray(x)
  same = jnp.asarray(rng.standard_normal(want.shape).astype(np.float32))
  row = jnp.asarray(want[:1])

  def line(name, fn, args, ok, moved=moved):
    busy, span, _ = kernel_seconds(fn, *args)
    print(
      f"  {name:<44} {busy * 1e6:7.1f} us busy {span * 1e6:7.1f} us span"
      f"  {moved / busy / ceiling:5.2f} of copy  {'ok' if ok else 'WRONG'}"
    )

  if "--large" in sys.argv:
    return large(rng, line)
  line("64 MiB copy", jax.jit(jnp.copy), (same,), True, 2 * same.nbytes)
  write = jax.jit(lambda r: jnp.broadcast_to(r, want.shape) + 0)
  line("64 MiB write of a broadcast row", write, (row,), True, same.nbytes)
  for name, fn in (
    ("dml.tile", jax.jit(lambda x: dml.tile(x, repeats=repeats))),
    ("jnp.tile", jax.jit(lambda x: jnp.tile(x, repeats))),
  ):
    line(name, fn, (xd,), np.array_equal(np.asarray(fn(xd)), want))
  for rows in (1, 2, 4, 8):
    for in_program in (False, True):
      for eviction in (None, "evict_first"):
        fn = jax.jit(
          lambda x, r=rows, p=in_program, e=eviction: tile_kernel(
            x, repeats, rows=r, rows_in_program=p, eviction=e
          )
        )
        name = f"kernel, {rows} rows, row copies {'in program' if in_program else 'on grid'}"
        name += ", evict_first" if eviction else ""
        try:
          ok = np.array_equal(np.asarray(fn(xd)), want)
          line(name, fn, (xd,), ok)
        except Exception as e:  # a probe: report and go on
          print(f"  {name:<44} failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
  line(
    "tile_rows_triton (the library's kernel)",
    jax.jit(lambda x: rows_kernel(x, repeats)),
    (xd,),
    True,
  )
  large(rng, line)


def tile_sweep(x, repeats, block=8192, warps=4, load_policy=None):
  """TILE of a 2-D `x` by (R, 1) or (1, R) written as a fill writes: program p stores the
  p-th contiguous block of the flattened output, loading the input block it copies (again
  for each copy: from L2 after the first, the copies of a block being neighbours in the
  grid along the last axis, a copy apart along the first)."""
  from jax.experimental import pallas as pl
  from jax.experimental.pallas import triton as pltriton

  (h, w), (r0, r1) = x.shape, repeats
  flat = x.reshape(-1)
  if r1 == 1:  # the output is r0 copies of the whole input, one after the other
    n_in = h * w // block
    in_map = lambda p: (p % n_in,)
  else:  # each input row is r1 copies of itself along the row
    block = min(block, w)
    per_row = w // block
    in_map = lambda p: (p // (r1 * per_row) * per_row + p % per_row,)

  def kernel(x_ref, out_ref):
    if load_policy is None:
      value = x_ref[...]
    else:
      value = pltriton.load(x_ref, eviction_policy=load_policy)
    pltriton.store(out_ref, value, eviction_policy="evict_first")

  out = pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((h * w * r0 * r1,), x.dtype),
    grid=(h * w * r0 * r1 // block,),
    in_specs=[pl.BlockSpec((block,), in_map)],
    out_specs=pl.BlockSpec((block,), lambda p: (p,)),
    compiler_params=pltriton.CompilerParams(num_warps=warps),
  )(flat)
  return out.reshape(h * r0, w * r1)


def large(rng, line):
  """run.py's 256 MiB cases (one repeated dimension of a (4096, 4096) input), and references
  of the same bytes: a copy moving 320 MiB, a write of 256 MiB."""
  x = rng.standard_normal((4096, 4096)).astype(np.float32)
  xd = jnp.asarray(x)
  same = jnp.asarray(rng.standard_normal(40 * 2**20).astype(np.float32))  # 160 MiB
  line("a copy of 160 MiB (320 MiB moved)", jax.jit(jnp.copy), (same,), True, 2 * same.nbytes)
  row = jnp.asarray(x[:1])
  write = jax.jit(lambda r: jnp.broadcast_to(r, (16384, 4096)) + 0)
  line("a 256 MiB write of a broadcast row", write, (row,), True, 4 * x.nbytes)
  for repeats in ((4, 1), (1, 4)):
    want = np.tile(x, repeats)
    moved = x.nbytes + want.nbytes
    print(f"# (4096, 4096) by {repeats}")
    forms = [
      ("dml.tile", jax.jit(lambda x, r=repeats: dml.tile(x, repeats=r))),
      ("jnp.tile", jax.jit(lambda x, r=repeats: jnp.tile(x, r))),
      ("tile_rows_triton", jax.jit(lambda x, r=repeats: rows_kernel(x, r))),
    ]
    if repeats == (4, 1):
      forms.append(("tile_copies_triton", jax.jit(lambda x: copies_kernel(x, (4, 1)))))
    for block, warps, policy in (
      (4096, 4, None),
      (8192, 4, None),
      (8192, 8, None),
      (16384, 8, None),
      (8192, 4, "evict_last"),
    ):
      forms.append(
        (
          f"sweep {block} w{warps} {policy or ''}",
          jax.jit(lambda x, r=repeats, b=block, w=warps, p=policy: tile_sweep(x, r, b, w, p)),
        )
      )
    for name, fn in forms:
      line(name, fn, (xd,), np.array_equal(np.asarray(fn(xd)), want), moved)


if __name__ == "__main__":
  main()
