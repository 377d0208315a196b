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


def copy_ceiling(rng) -> float:
  """Bytes per second (read plus written) of a jitted 1 GiB f32 device copy; prints a header."""
  import jax
  import jax.numpy as jnp
  import numpy as np

  big = jnp.asarray(rng.standard_normal(2**28).astype(np.float32))
  ceiling = 2 * big.nbytes / timed(jax.jit(jnp.copy), big)
  print(f"# {jax.devices()[0].device_kind}, jax {jax.__version__}: copy {ceiling / 1e9:.0f} GB/s")
  return ceiling
