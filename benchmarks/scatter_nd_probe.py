"""Probe: SCATTER_ND of whole rows as a "pull": every output row read once, from its winning
update or from the input, against the copy-then-scatter that XLA and torch run.

Not part of the library; the Triton pull became its SCATTER_ND kernel for whole rows
(dml_jax/_src/kernels/scatter_nd_rows_triton.py). SCATTER_ND of 65536 distinct random rows of
256 float32 into (1 << 20, 256) (the benchmark's case), and the same with a quarter of the
targets repeated (the last update wins). Forms: dml_jax as it is; the pull as lax (a winner
map of positions + 1 by scatter-max, then a row gather of the updates selected against the
input); the pull as a Pallas-Triton kernel with masked loads (each output row read from
exactly one source), and without masks; and the peers `.at[].set` (plain and unique) and
torch's index_copy (bytes: the input read and the output written, updates and indices read,
as benchmarks/run.py counts them).

Usage: PYTHONPATH=.:benchmarks python3 benchmarks/scatter_nd_probe.py
"""

import jax
import jax.numpy as jnp
import numpy as np
from _timing import (
  copy_ceiling,
  report,
  timed,
)  # benchmarks/ is on sys.path when a script in it runs
from jax import lax

import dml_jax as dml
from dml_jax._src.kernels import scatter_nd_rows_triton as pull
from dml_jax._src.ops import scatter_nd as scatter_nd_op


def pull_lax(x, i, u):
  """The pull in lax (the CPU's form for rows of 1 KiB or more)."""
  return scatter_nd_op.pull_rows_lax(x, i[:, 0], u)


def pull_kernel(x, i, u, *, rows=32, warps=8):
  """The library's kernel with `rows` rows a program and `warps` warps."""
  row_bytes = x.shape[1] * x.dtype.itemsize
  config = pull.PullConfig(block_bytes=rows * row_bytes, num_warps=warps)
  return pull.pull_rows(x, i[:, 0], u, config=config)


def pull_unmasked(x, i, u, *, block=16, warps=4):
  """The kernel without masks: every program loads its input rows and the updates its map
  names (row 0 where none), then selects."""
  from jax.experimental import pallas as pl
  from jax.experimental.pallas import triton as pltriton

  table, width = x.shape
  best = pull.winner_map(i[:, 0], table)

  def kernel(best_ref, x_ref, u_ref, out_ref):
    source = best_ref[...].astype(np.int32) - 1
    rows = pl.program_id(0) * block + lax.broadcasted_iota(np.int32, (block,), 0)
    own, new = x_ref[rows, :], u_ref[jnp.maximum(source, 0), :]
    out_ref[...] = jnp.where((source >= 0)[:, None], new, own)

  return pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
    grid=(table // block,),
    in_specs=[
      pl.BlockSpec((block,), lambda k: (k,)),
      pl.BlockSpec(x.shape, lambda k: (0, 0)),
      pl.BlockSpec(u.shape, lambda k: (0, 0)),
    ],
    out_specs=pl.BlockSpec((block, width), lambda k: (k, 0)),
    compiler_params=pltriton.CompilerParams(num_warps=warps),
  )(best, x, u)


def torch_peers(x, u, index, moved, ceiling):
  """torch's index_copy, out of place and as a copy followed by index_copy_, where torch runs."""
  try:
    import torch
  except ImportError:
    return
  tx = torch.from_numpy(x).cuda()
  tu, ti = torch.from_numpy(u).cuda(), torch.from_numpy(index.astype(np.int64)).cuda()
  out = torch.empty_like(tx)

  class Synced:
    def block_until_ready(self):
      torch.cuda.synchronize()
      return self

  def copy_then_index_copy():
    out.copy_(tx)
    out.index_copy_(0, ti, tu)
    return Synced()

  for name, fn in (
    ("torch copy_ + index_copy_", copy_then_index_copy),
    ("torch index_copy", lambda: (tx.index_copy(0, ti, tu), Synced())[1]),
  ):
    seconds = timed(fn)
    print(f"  {name:<28} {seconds * 1e3:7.3f} ms  {moved / seconds / ceiling:5.2f} of copy")


def main():
  rng = np.random.default_rng(0)
  ceiling = copy_ceiling(rng)
  table, width, count = (1 << 20, 256, 65536) if jax.default_backend() == "gpu" else (4096, 64, 256)
  x = rng.standard_normal((table, width)).astype(np.float32)
  u = rng.standard_normal((count, width)).astype(np.float32)
  distinct = rng.choice(table, count, replace=False).astype(np.int32)
  repeated = distinct.copy()
  repeated[: count // 4] = rng.choice(distinct[count // 4 :], count // 4)
  moved = 2 * x.nbytes + u.nbytes + 4 * count
  xd, ud = jnp.asarray(x), jnp.asarray(u)
  for name, index in (("distinct targets", distinct), ("a quarter repeated", repeated)):
    want = x.copy()
    want[index] = u  # NumPy assigns in order: the last update wins
    idd = jnp.asarray(index[:, None])
    print(f"# {name}")
    args = (xd, idd, ud)
    report("dml_jax", jax.jit(lambda x, i, u: dml.scatter_nd(x, i, u)), args, want, moved, ceiling)
    report("pull, lax", jax.jit(pull_lax), args, want, moved, ceiling)
    for block, warps in ((16, 4), (32, 4), (32, 8), (64, 8)):
      fn = jax.jit(lambda x, i, u, b=block, w=warps: pull_kernel(x, i, u, rows=b, warps=w))
      report(f"pull, triton {block} rows {warps}w", fn, args, want, moved, ceiling)
    fn = jax.jit(pull_unmasked)
    report("pull, triton unmasked", fn, args, want, moved, ceiling)
    seconds = timed(jax.jit(lambda i: pull.winner_map(i[:, 0], table)), idd)
    print(f"  {'winner map alone':<28} {seconds * 1e3:7.3f} ms")
    if name == "distinct targets":
      report(
        "x.at[i].set", jax.jit(lambda x, i, u: x.at[i[:, 0]].set(u)), args, want, moved, ceiling
      )
      fn = jax.jit(lambda x, i, u: x.at[i[:, 0]].set(u, unique_indices=True))
      report("x.at[i].set unique", fn, args, want, moved, ceiling)
      torch_peers(x, u, index, moved, ceiling)


if __name__ == "__main__":
  main()
