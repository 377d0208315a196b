"""A/B of three lax forms of a GATHER_ND(1) row gather, against a device copy.

The forms, all reading the same rows with in-range int32 indices:
- batching: lax.gather with the batch dimension as operand/start-indices batching dims;
- columns: batch coordinates as iota columns of the index tuple (jnp advanced indexing's form);
- linear: the tuple folded into one row number of the operand viewed as (rows, row size).
Each is checked against NumPy and timed as pipelined jitted calls (median of repeats).

Usage: PYTHONPATH=. python3 benchmarks/gather_nd_forms.py
"""

import jax
import jax.numpy as jnp
import numpy as np
from _timing import copy_ceiling, report  # benchmarks/ is on sys.path when a script in it runs
from jax import lax

IN_BOUNDS = lax.GatherScatterMode.PROMISE_IN_BOUNDS


def columns(x, idx, b):
  """idx (..., t) in range; batch dims 0..b-1 of x and idx agree."""
  if b:
    col = idx.shape[:-1] + (1,)
    idx = lax.concatenate(
      [*(lax.broadcasted_iota(idx.dtype, col, d) for d in range(b)), idx], idx.ndim - 1
    )
  k = idx.shape[-1]
  kept = x.shape[k:]
  dn = lax.GatherDimensionNumbers(
    offset_dims=tuple(range(idx.ndim - 1, idx.ndim - 1 + len(kept))),
    collapsed_slice_dims=tuple(range(k)),
    start_index_map=tuple(range(k)),
  )
  return lax.gather(x, idx, dn, (1,) * k + kept, mode=IN_BOUNDS)


def batching(x, idx, b):
  t = idx.shape[-1]
  kept = x.shape[b + t :]
  dn = lax.GatherDimensionNumbers(
    offset_dims=tuple(range(idx.ndim - 1, idx.ndim - 1 + len(kept))),
    collapsed_slice_dims=tuple(range(b, b + t)),
    start_index_map=tuple(range(b, b + t)),
    operand_batching_dims=tuple(range(b)),
    start_indices_batching_dims=tuple(range(b)),
  )
  return lax.gather(x, idx, dn, (1,) * (b + t) + kept, mode=IN_BOUNDS)


def linear(x, idx, b):
  t = idx.shape[-1]
  k = b + t
  strides = np.cumprod((x.shape[1:k] + (1,))[::-1])[::-1].astype(np.int32)
  row = jnp.zeros(idx.shape[:-1], jnp.int32)
  for d in range(b):
    row = row + lax.broadcasted_iota(jnp.int32, idx.shape[:-1], d) * strides[d]
  for j in range(t):
    row = row + idx[..., j] * strides[b + j]
  kept = x.shape[k:]
  rows = x.reshape((-1,) + kept)
  dn = lax.GatherDimensionNumbers(
    offset_dims=tuple(range(row.ndim, row.ndim + len(kept))),
    collapsed_slice_dims=(0,),
    start_index_map=(0,),
  )
  return lax.gather(rows, row[..., None], dn, (1,) + kept, mode=IN_BOUNDS)


def main():
  rng = np.random.default_rng(0)
  ceiling = copy_ceiling(rng)
  cases = {
    "gather_nd rows (1024,1024,256) x 65536 2-tuples": (
      rng.standard_normal((1024, 1024, 256)).astype(np.float32),
      rng.integers(0, 1024, (65536, 2)).astype(np.int32),
      0,
    ),
    "gather_nd1 (64,128,128,256), 1 batch dim, (64,1024) 2-tuples": (
      rng.standard_normal((64, 128, 128, 256)).astype(np.float32),
      rng.integers(0, 128, (64, 1024, 2)).astype(np.int32),
      1,
    ),
  }
  for name, (x_np, idx_np, b) in cases.items():
    x, idx = jnp.asarray(x_np), jnp.asarray(idx_np)
    out_bytes = idx_np.shape[0] * (idx_np.shape[1] if b else 1) * 256 * 4
    moved = 2 * out_bytes + idx_np.nbytes
    first = idx_np.reshape(-1, idx_np.shape[-1])
    flat_b = np.repeat(np.arange(idx_np.shape[0]), idx_np.shape[1]) if b else None
    want = x_np[flat_b, first[:, 0], first[:, 1]] if b else x_np[first[:, 0], first[:, 1]]
    print(name)
    for form in (batching, columns, linear):
      fn = jax.jit(lambda x, i, form=form, b=b: form(x, i, b))
      report(form.__name__, fn, (x, idx), want, moved, ceiling, width=9)
    del x, idx


if __name__ == "__main__":
  main()
