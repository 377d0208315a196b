"""Dispatch overhead and first-call compile time of the functional API, per operator.

For each operator, on small arrays (so that the work itself is tiny):
- first call: wall time of the first eager call with new shapes (trace, validation,
  compile, run), the compile budget of the performance issue being 0.5 s on the CPU;
- dispatch: time of an eager call `dml.op(x, ...)` against the same call inside a
  plain `jax.jit` (the same work, compiled once), both waited for; the ratio is the
  functional API's overhead. The two are timed in alternating rounds (so that a load
  change on the machine hits both) and each keeps its fastest round, the least noisy
  estimate of a fixed per-call cost; the medians are printed too.

Usage: PYTHONPATH=. python3 benchmarks/dispatch.py [--repeats 21] [--number 500]
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import dml_jax as dml


def _cases(rng, n):
  """(name, function, arrays): fresh shapes per `n` so the first call compiles."""
  x = jnp.asarray(rng.standard_normal((n, 64)).astype(np.float32))
  rows = jnp.asarray(rng.integers(-n, n, (n, 64)).astype(np.int32))
  tuples = jnp.asarray(rng.integers(0, n, (n, 1)).astype(np.int32))
  lengths = jnp.asarray(rng.integers(0, 70, (n, 1)).astype(np.uint32))
  return [
    ("GATHER_ELEMENTS", lambda x, i: dml.gather_elements(x, i, axis=0), (x, rows)),
    ("GATHER_ND", lambda x, i: dml.gather_nd(x, i), (x, tuples)),
    (
      "GATHER_ND1",
      lambda x, i: dml.gather_nd(x, i, batch_dimension_count=1),
      (x, jnp.asarray(rng.integers(0, 64, (n, 1)).astype(np.int32))),
    ),
    ("REVERSE_SUBSEQUENCES", lambda x, n_: dml.reverse_subsequences(x, n_, axis=1), (x, lengths)),
    ("JOIN", lambda x, y: dml.join([x, y], axis=0), (x, x)),
  ]


def _round(fn, args, number):
  """Seconds per call of `fn(*args)`, each call waited for, over `number` calls."""
  start = time.perf_counter()
  for _ in range(number):
    fn(*args).block_until_ready()
  return (time.perf_counter() - start) / number


def _alternating(fns, args, number, repeats):
  """Per function: (fastest, median) seconds per call, over rounds alternating between them."""
  times = [[] for _ in fns]
  for _ in range(repeats):
    for fn, rounds in zip(fns, times, strict=True):
      rounds.append(_round(fn, args, number))
  return [(min(rounds), statistics.median(rounds)) for rounds in times]


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--repeats", type=int, default=21)
  parser.add_argument("--number", type=int, default=500)
  args = parser.parse_args(argv)
  rng = np.random.default_rng(0)
  print(
    f"# dispatch  {time.strftime('%Y-%m-%d')}  device {jax.devices()[0].device_kind}"
    f"  jax {jax.__version__}"
  )
  print(
    f"{'operator':<22} {'first call ms':>13} {'eager us':>9} {'jitted us':>10} {'ratio':>6}"
    f"   {'(medians:':>9} {'eager':>6} {'jitted':>7} {'ratio)':>6}"
  )
  for name, fn, arrays in _cases(rng, 41):
    start = time.perf_counter()
    fn(*arrays).block_until_ready()
    first = time.perf_counter() - start
    jitted = jax.jit(fn)
    jitted(*arrays).block_until_ready()
    (eager, eager_median), (plain, plain_median) = _alternating(
      (fn, jitted), arrays, args.number, args.repeats
    )
    print(
      f"{name:<22} {first * 1e3:>13.1f} {eager * 1e6:>9.2f} {plain * 1e6:>10.2f}"
      f" {eager / plain:>6.2f}   {'':>9} {eager_median * 1e6:>6.2f} {plain_median * 1e6:>7.2f}"
      f" {eager_median / plain_median:>6.2f}"
    )


if __name__ == "__main__":
  main()
