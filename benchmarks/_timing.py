"""Pipelined timing for the benchmark scripts: many jitted calls, one wait, median of repeats."""

import statistics
import time


def timed(fn, *args, calls=30, repeats=7):
  """Median seconds per call of `fn(*args)`, after two warm-up calls."""
  fn(*args).block_until_ready()
  fn(*args).block_until_ready()
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    for _ in range(calls):
      out = fn(*args)
    out.block_until_ready()
    times.append((time.perf_counter() - start) / calls)
  return statistics.median(times)
