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


def report(name, fn, args, want, moved, ceiling, width=28):
  """Checks `fn(*args)` against `want` bit for bit, times it, prints one row; survives failures."""
  import numpy as np

  try:
    ok = np.array_equal(np.asarray(fn(*args)).reshape(want.shape), want)
    seconds = timed(fn, *args)
  except Exception as e:  # a probe: report and go on
    print(f"  {name:<{width}} failed: {type(e).__name__}: {str(e).splitlines()[0][:150]}")
    return
  print(
    f"  {name:<{width}} {seconds * 1e3:7.3f} ms  {moved / seconds / 1e9:7.0f} GB/s"
    f"  {moved / seconds / ceiling:5.2f} of copy  {'ok' if ok else 'WRONG'}"
  )
