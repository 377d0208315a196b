"""Probe: the tuning of two copy-bound kernels, swept on the GPU at hand.

Not part of the library. Times the public operator with each kernel's DEFAULT config replaced
by each variant (traced anew for each), checked bit for bit against NumPy:

- ONE_HOT's tile kernel (`one_hot_tiles_triton.TilesConfig`): rows and columns a program
  writes, warps and the stores' eviction hint, on
  run.py's cases (1<<20 int32 indices, depth 1024, along axis 0 and along the last axis: 4 GiB
  of float32 written). The figure is bytes written over the copy's bytes moved per second.
- TILE's copies kernel (`tile_copies_triton.CopiesConfig`): the bytes a program copies and
  warps, on run.py's case (TILE of (4096, 4096) float32 by (4, 1)); bytes read once and
  written.

Usage: PYTHONPATH=.:benchmarks python3 benchmarks/kernel_tuning_probe.py [one_hot] [tile]
"""

import dataclasses
import sys

import jax
import jax.numpy as jnp
import numpy as np
from _timing import copy_ceiling, report  # benchmarks/ is on sys.path when a script in it runs

import dml_jax as dml
from dml_jax._src.kernels import one_hot_tiles_triton, tile_copies_triton


def sweep(module, variants, name, fn, args, want, moved, ceiling):
  """Times `fn(*args)` with `module.DEFAULT` replaced by each variant in turn."""
  default = module.DEFAULT
  try:
    for changes in variants:
      module.DEFAULT = dataclasses.replace(default, **changes)
      label = ", ".join(f"{k} {v}" for k, v in changes.items()) or "the default"
      report(f"{name}: {label}", jax.jit(fn), args, want, moved, ceiling, width=52)
  finally:
    module.DEFAULT = default


def one_hot(rng, ceiling):
  n, depth = 1 << 20, 1024
  flat = rng.integers(0, depth, n).astype(np.int32)
  values = np.array([[0.0, 1.0]], np.float32)
  variants = {
    0: [  # tiles of (depth, inner) slabs
      {},
      dict(eviction_policy=None),
      dict(num_warps=8),
      dict(slab_rows=1),
      dict(slab_rows=4),
      dict(max_columns=2048, num_warps=8),
      dict(max_columns=512),
    ],
    1: [  # whole output rows
      {},
      dict(eviction_policy=None),
      dict(row_tile_elements=2048),
      dict(row_tile_elements=4096),
      dict(row_tile_elements=32 * 1024),
      dict(num_warps=2),
    ],
  }
  for axis in (0, 1):
    indices = flat.reshape((1, n) if axis == 0 else (n, 1))
    hot = (np.arange(depth)[:, None] == flat[None, :]).astype(np.float32)
    want = hot if axis == 0 else hot.T.copy()
    fn = lambda i, v, a=axis: dml.one_hot(i, v, axis=a, depth=depth)
    args = (jnp.asarray(indices), jnp.asarray(values))
    name = f"ONE_HOT axis {axis}"
    sweep(one_hot_tiles_triton, variants[axis], name, fn, args, want, want.nbytes, ceiling)


def tile(rng, ceiling):
  x = rng.standard_normal((4096, 4096)).astype(np.float32)
  want = np.tile(x, (4, 1))
  variants = [
    {},
    dict(block_bytes=4 * 1024),
    dict(block_bytes=16 * 1024),
    dict(block_bytes=16 * 1024, num_warps=8),
    dict(block_bytes=32 * 1024, num_warps=8),
    dict(num_warps=8),
  ]
  fn = lambda x: dml.tile(x, repeats=(4, 1))
  moved = x.nbytes + want.nbytes
  sweep(tile_copies_triton, variants, "TILE (4, 1)", fn, (jnp.asarray(x),), want, moved, ceiling)


def main():
  probes = {"one_hot": one_hot, "tile": tile}
  chosen = sys.argv[1:] or list(probes)
  rng = np.random.default_rng(0)
  ceiling = copy_ceiling(rng)
  for name in chosen:
    probes[name](rng, ceiling)


if __name__ == "__main__":
  main()
