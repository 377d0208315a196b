"""Probe: GATHER_ELEMENTS along an outer axis, traversed in column strips.

out[i, c] = x[idx[i, c], c] with random rows: XLA's gather walks the output row by row, so
consecutive threads read random rows over the whole input (256 MB for (8192, 8192) float32,
five times an H100's L2), and every 4-byte read costs DRAM a 32-byte sector: 0.12 of a copy
for every implementation measured. Prediction: walking the output in strips of W columns
(a gather into (strips, rows, W), then a transpose back) keeps the rows being read inside one
strip of the input (8192 x W), which L2 holds; DRAM then reads the input about once, and the
extra transpose costs one more pass: about 0.4 of the copy, 3x faster.

Usage: PYTHONPATH=.:benchmarks python3 benchmarks/outer_axis_probe.py
"""

import jax
import jax.numpy as jnp
import numpy as np
from _timing import copy_ceiling, report  # benchmarks/ is on sys.path when a script in it runs
from jax import lax

import dml_jax as dml

IN_BOUNDS = lax.GatherScatterMode.PROMISE_IN_BOUNDS


def strips(x, idx, width, barrier=True):
  """GATHER_ELEMENTS along axis 0 of 2-D x, in-range idx: a gather into (strips, rows, width),
  kept in that order by an optimization barrier (else XLA folds the transposes away), then a
  transpose back."""
  rows, cols = idx.shape
  s = cols // width
  idx3 = idx.reshape(rows, s, width).transpose(1, 0, 2)  # (s, rows, width)
  dn = lax.GatherDimensionNumbers(
    offset_dims=(),
    collapsed_slice_dims=(0,),
    start_index_map=(0,),
    operand_batching_dims=(1, 2),
    start_indices_batching_dims=(0, 2),
  )
  g = lax.gather(x.reshape(x.shape[0], s, width), idx3[..., None], dn, (1, 1, 1), mode=IN_BOUNDS)
  if barrier is None:  # the strips themselves, in the program's output layout
    return g
  if barrier:
    g = lax.optimization_barrier(g)
  return g.transpose(1, 0, 2).reshape(rows, cols)


def main():
  rng = np.random.default_rng(0)
  ceiling = copy_ceiling(rng)
  x = rng.standard_normal((8192, 8192)).astype(np.float32)
  idx = rng.integers(0, 8192, (8192, 8192)).astype(np.int32)
  want = np.take_along_axis(x, idx, axis=0)
  moved = 2 * x.nbytes + idx.nbytes
  xd, idd = jnp.asarray(x), jnp.asarray(idx)
  print("GATHER_ELEMENTS f32 (8192, 8192), axis 0, random rows")
  report(
    "jnp.take_along_axis",
    jax.jit(lambda a, i: jnp.take_along_axis(a, i, axis=0)),
    (xd, idd),
    want,
    moved,
    ceiling,
  )
  report(
    "strips of 32, no barrier",
    jax.jit(lambda a, i: strips(a, i, 32, False)),
    (xd, idd),
    want,
    moved,
    ceiling,
  )
  dml_fn = jax.jit(lambda a, i: dml.gather_elements(a, i, axis=0))
  report("dml_jax (strip kernel)", dml_fn, (xd, idd), want, moved, ceiling)
  x3 = rng.standard_normal((4, 2048, 1024)).astype(np.float32)
  i3 = rng.integers(-2048, 2048, (4, 2048, 1024)).astype(np.int32)
  want3 = np.take_along_axis(x3, np.where(i3 < 0, i3 + 2048, i3), axis=1)
  fn3 = jax.jit(lambda a, i: dml.gather_elements(a, i, axis=1))
  report(
    "dml_jax (4,2048,1024) axis 1", fn3, (jnp.asarray(x3), jnp.asarray(i3)), want3, moved, ceiling
  )
  for width in (8, 32, 128):
    fn = jax.jit(lambda a, i, w=width: strips(a, i, w))
    report(f"strips of {width}", fn, (xd, idd), want, moved, ceiling)
    only = jax.jit(lambda a, i, w=width: strips(a, i, w, None))
    strip_want = want.reshape(8192, 8192 // width, width).transpose(1, 0, 2)
    report(f"strips of {width}, gather only", only, (xd, idd), strip_want, moved, ceiling)
  hlo = fn.lower(xd, idd).compile().as_text()
  print("\n".join(line.split(", metadata")[0] for line in hlo.split("ENTRY")[-1].splitlines()))


if __name__ == "__main__":
  main()
