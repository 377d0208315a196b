"""Probe: how much of a small operator's pipelined time is the kernel, and how much the gaps.

GATHER_ND's case moves 134 MB, about 45 us of work on a Hopper GPU. The pipelined timing of the
benchmark (jitted calls in a loop, one wait) counts everything between two kernels: launch
gaps, and the host's dispatch where it cannot stay ahead. Here each subject is timed three ways:
- host: the benchmark's pipelined timing (`_timing.timed`);
- enqueue: the host's time to issue one call, with no wait (the host keeps ahead of the GPU
  only if this is under the kernel time);
- kernels: device timestamps of every kernel the calls ran, from PyTorch's profiler (CUPTI
  records the kernels of every library in the process): the busy time per call, and the span
  from the first kernel's start to the last one's end per call.
Each fraction is taken against the same measure of a 1 GiB copy.

With --forms, row-gather forms of the same rows, by kernel time: XLA's gather of f32 rows, of
the rows viewed as 64-bit words (wider loads, if the gather does not vectorise), contiguous
rows, and the Pallas (Triton) row kernel of pallas_probe.py.

With --widths, dml_jax's row-copy kernel (`gather_nd_rows_triton.copy_rows`, called for every
width, with its default `RowCopyConfig`) against XLA's gather (the lax path) over row widths and
data types, by kernel time: 64 MiB of rows gathered at random from 1 GiB.

Usage: PYTHONPATH=.:benchmarks python3 benchmarks/kernel_time_probe.py [--forms | --widths]
"""

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import torch
from _timing import timed  # benchmarks/ is on sys.path when a script in it runs

import dml_jax as dml

CALLS = 30
ND1_COUNTS = dict(input_dimension_count=4, indices_dimension_count=3, batch_dimension_count=1)


def enqueue_seconds(fn, *args):
  """Median host seconds to issue one call without waiting for it."""
  fn(*args).block_until_ready()
  times = []
  for _ in range(7):
    start = time.perf_counter()
    for _ in range(CALLS):
      out = fn(*args)
    times.append((time.perf_counter() - start) / CALLS)
    out.block_until_ready()
  return float(np.median(times))


def kernel_seconds(fn, *args):
  """(busy, span, names): device seconds per call from the profiler's kernel records."""
  fn(*args).block_until_ready()
  with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
    for _ in range(CALLS):
      out = fn(*args)
    out.block_until_ready()
    torch.cuda.synchronize()
  kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
  if not kernels:
    return None, None, []
  busy = sum(e.time_range.end - e.time_range.start for e in kernels) * 1e-6 / CALLS
  span = (
    (max(e.time_range.end for e in kernels) - min(e.time_range.start for e in kernels))
    * 1e-6
    / CALLS
  )
  return busy, span, sorted({e.name[:40] for e in kernels})


def row_forms():
  """(name, fn, args, moved, want) for row gathers of 65536 random rows of 256 f32."""
  from jax import lax
  from pallas_probe import row_gather

  rng = np.random.default_rng(1)
  host = rng.standard_normal((1024 * 1024, 256), dtype=np.float32)
  rows = rng.integers(0, host.shape[0], 65536, dtype=np.int32)
  want = host[rows]
  x2, r = jnp.asarray(host), jnp.asarray(rows)
  moved = 2 * want.nbytes + rows.nbytes

  def words64(x2, r):
    wide = lax.bitcast_convert_type(x2.reshape(x2.shape[0], -1, 2), jnp.uint64)
    return lax.bitcast_convert_type(wide[r], jnp.float32).reshape(r.shape[0], -1)

  in_bounds = lambda x2, r: x2.at[r].get(mode="promise_in_bounds")
  forms = [
    ("take rows", jax.jit(lambda x2, r: x2[r])),
    ("take rows, in bounds", jax.jit(in_bounds)),
    ("take rows as u64 words", jax.jit(words64)),
    *(
      (f"pallas rows={b} warps={w}", jax.jit(lambda x2, r, b=b, w=w: row_gather(x2, r, b, w)))
      for b in (2, 4, 8, 16)
      for w in (1, 2, 4, 8)
      if b * 256 >= w * 32 * 4
    ),
  ]
  out = [(name, fn, (x2, r), moved, want) for name, fn in forms]
  contiguous = jnp.arange(65536, dtype=jnp.int32)
  out.append(("take contiguous rows", forms[0][1], (x2, contiguous), moved, host[:65536]))
  return out


def widths():
  from dml_jax._src.kernels import gather_nd_rows_triton

  rng = np.random.default_rng(2)
  big = jnp.asarray(rng.standard_normal(2**28, dtype=np.float32))
  copy_busy, _, _ = kernel_seconds(jax.jit(jnp.copy), big)
  copy_rate = 2 * big.nbytes / copy_busy
  print(f"# {jax.devices()[0].device_kind}, jax {jax.__version__}: row widths, kernel time")
  del big
  for dtype, width in [
    (np.float32, 16),
    (np.float32, 32),
    (np.float32, 64),
    (np.float32, 128),
    (np.float32, 256),
    (np.float32, 1024),
    (np.float32, 4096),
    (np.float32, 16384),
    (np.float16, 256),
    (np.float16, 512),
    (np.int8, 128),
    (np.int8, 256),
    (np.int8, 512),
    (np.int8, 1024),
    (np.int8, 4096),
  ]:
    itemsize = np.dtype(dtype).itemsize
    table = rng.integers(-100, 100, (2**30 // (width * itemsize), width)).astype(dtype)
    n = 2**26 // (width * itemsize)
    rows = rng.integers(0, table.shape[0], (n, 1), dtype=np.int32)
    want = table[rows[:, 0]]
    moved = 2 * want.nbytes + rows.nbytes
    t, r = jnp.asarray(table), jnp.asarray(rows)
    xla = jax.jit(lambda t, r: t.at[r[:, 0]].get(mode="promise_in_bounds"))
    kernel = jax.jit(lambda t, r: gather_nd_rows_triton.copy_rows(t, r, batch_dims=0))
    line = f"  {np.dtype(dtype).name:<8} {width:6} ({width * itemsize:6} B rows)"
    for name, fn in (("xla", xla), ("kernel", kernel)):
      ok = np.array_equal(np.asarray(fn(t, r)), want)
      busy, _, _ = kernel_seconds(fn, t, r)
      line += (
        f"  {name} {busy * 1e6:7.1f} us {moved / busy / copy_rate:5.2f}{'' if ok else ' WRONG'}"
      )
    print(line, flush=True)
    del t, r, table


def main():
  torch.cuda.init()
  if "--widths" in sys.argv:
    return widths()
  if "--forms" in sys.argv:
    jax.config.update("jax_enable_x64", True)  # for the u64 view; every index here is int32
    print(f"# {jax.devices()[0].device_kind}, jax {jax.__version__}: row-gather forms")
    big = jnp.asarray(np.random.default_rng(0).standard_normal(2**28, dtype=np.float32))
    copy_busy, _, _ = kernel_seconds(jax.jit(jnp.copy), big)
    for name, fn, args, moved, want in row_forms():
      ok = np.array_equal(np.asarray(fn(*args)), want)
      busy, span, names = kernel_seconds(fn, *args)
      host = timed(fn, *args, calls=CALLS)
      print(
        f"  {name:<26} kernel {busy * 1e6:6.1f} us  {moved / busy / (2 * big.nbytes / copy_busy):5.2f}"
        f" of copy   pipelined {host * 1e6:6.1f} us  {'ok' if ok else 'WRONG'}  {', '.join(names)}"
      )
    return
  rng = np.random.default_rng(0)
  big = jnp.asarray(rng.standard_normal(2**28, dtype=np.float32))
  x = jnp.asarray(rng.standard_normal((1024, 1024, 256), dtype=np.float32))
  idx = jnp.asarray(rng.integers(0, 1024, (1, 65536, 2), dtype=np.int32))
  x1 = jnp.asarray(rng.standard_normal((64, 128, 128, 256), dtype=np.float32))
  idx1 = jnp.asarray(rng.integers(0, 128, (1, 64, 1024, 2), dtype=np.int32))
  rows = jnp.asarray(rng.standard_normal((65536, 256), dtype=np.float32))
  nd_moved = 2 * 65536 * 256 * 4 + 65536 * 2 * 4
  subjects = [
    ("copy 1 GiB", jax.jit(jnp.copy), (big,), 2 * big.nbytes),
    ("copy 67 MB", jax.jit(jnp.copy), (rows,), 2 * rows.nbytes),
    ("GATHER_ND dml_jax", jax.jit(dml.gather_nd), (x, idx), nd_moved),
    ("GATHER_ND jnp x[i0,i1]", jax.jit(lambda x, i: x[i[..., 0], i[..., 1]]), (x, idx), nd_moved),
    (
      "GATHER_ND1 dml_jax",
      jax.jit(lambda x, i: dml.gather_nd(x, i, **ND1_COUNTS)),
      (x1, idx1),
      nd_moved,
    ),
    ("GATHER_ND dml_jax, eager", dml.gather_nd, (x, idx), nd_moved),
  ]
  print(f"# {jax.devices()[0].device_kind}, jax {jax.__version__}, torch {torch.__version__}")
  rows_out = []
  for name, fn, args, moved in subjects:
    host = timed(fn, *args, calls=CALLS)
    enqueue = enqueue_seconds(fn, *args)
    busy, span, names = kernel_seconds(fn, *args)
    rows_out.append((name, moved, host, enqueue, busy, span, names))
  _, moved0, host0, _, busy0, span0, _ = rows_out[0]
  ceil = {"host": moved0 / host0, "busy": moved0 / busy0, "span": moved0 / span0}
  print(
    f"{'subject':<26} {'host us':>8} {'enq us':>7} {'busy us':>8} {'span us':>8}"
    f"  {'host':>5} {'busy':>5} {'span':>5}  (fraction of the 1 GiB copy, same measure)  kernels"
  )

  def frac(moved, seconds, measure):
    return f"{moved / seconds / ceil[measure]:5.2f}" if seconds else "  n/a"

  for name, moved, host, enqueue, busy, span, names in rows_out:
    print(
      f"{name:<26} {host * 1e6:8.1f} {enqueue * 1e6:7.1f} {(busy or 0) * 1e6:8.1f}"
      f" {(span or 0) * 1e6:8.1f}  {frac(moved, host, 'host')} {frac(moved, busy, 'busy')} {frac(moved, span, 'span')}"
      f"  {', '.join(names)}"
    )


if __name__ == "__main__":
  main()
