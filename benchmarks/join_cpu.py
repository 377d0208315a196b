"""JOIN on the CPU against ONNX Runtime's Concat, in interleaved rounds.

The CPU run of `run.py` times one implementation after another; on a shared 2-core machine the
memory bandwidth drifts by up to 2x over a minute, which can swing a close comparison either
way. Here every round times each implementation once (5 waited calls), in a shuffled order,
over 40 rounds; each form's median and minimum are printed and, as "within rounds", the median
over rounds of ONNX Runtime's time over the form's in the same round, which the drift between
rounds does not move. Forms: dml_jax (eager), `lax.concatenate` (jitted), the inputs as one
contiguous run per outer index (a loop fusion where the outer size is 1), and ONNX Runtime's
Concat with 2 threads, with its threads spinning between calls (its default) and without.
Every output is checked.

Each timed block follows `--warm` untimed calls of the same form (default 10). On this machine
the first few milliseconds of calls after a pause, or after another runtime's calls, run up to
2x slower (BENCHMARKS.md), and ONNX Runtime's spinning threads keep the cores busy through the
Python between its calls; with no warm-up, whichever form follows another pays for it.

XLA:CPU runs an unfused concatenate on one thread where no dimension before the joined one is
above 1 (axis 0 here, and the N=1 channel join), so dml_jax's CPU lowering joins 1-D views there,
which fuse and run on both threads (`dml_jax._src.ops.join.join_on_cpu`); along axis 1 it keeps
`lax.concatenate`, which XLA:CPU already splits by rows. `--hlo` prints what each form compiles to.

Usage: MALLOC_ARENA_MAX=1 MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \\
  PYTHONPATH=.:benchmarks python benchmarks/join_cpu.py [--warm N] [--rounds N]
"""

import argparse
import random
import re
import statistics
import time

import cpu_forms  # benchmarks/ is on sys.path when a script in it runs
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import dml_jax as dml

ROUNDS, CALLS = 40, 5


def _nchw_case(rng):
  """A channel join of one NCHW image: 4 x (1, 64, 256, 256) f32 along axis 1."""
  xs = tuple(rng.standard_normal((1, 64, 256, 256)).astype(np.float32) for _ in range(4))
  ort = ("Concat", {f"x{i}": x for i, x in enumerate(xs)}, {"axis": 1})
  name = "JOIN f32 4 x (1, 64, 256, 256) along axis 1"
  return name, xs, np.concatenate(xs, axis=1), None, ort


def _kinds(fn, args) -> str:
  text = fn.lower(*args).compile().as_text()
  return ", ".join(re.findall(r"= \S+ (\w+)\(", text[text.index("\nENTRY ") :]))


def compare(case, axis, order, hlo=False, warm=10, rounds=ROUNDS):
  name, xs, want, _, (op, feeds, attributes) = case
  arrays = [jnp.asarray(x) for x in xs]
  concatenate = jax.jit(lambda *xs: lax.concatenate(xs, axis))
  flat = jax.jit(cpu_forms.join_flat(axis))
  ort = cpu_forms._ort(op, feeds, attributes, want.shape, want.dtype)
  ort_idle = cpu_forms._ort(op, feeds, attributes, want.shape, want.dtype, spinning=False)
  forms = {
    "dml_jax": lambda: dml.join(arrays, axis=axis),
    "lax.concatenate": lambda: concatenate(*arrays),
    "one run per outer index": lambda: flat(*arrays),
    "ONNX Runtime Concat": lambda: ort().array,
    "ONNX Runtime, no spinning": lambda: ort_idle().array,
  }
  for form in forms.values():
    assert np.array_equal(np.asarray(form()), want)
  if hlo:
    jitted = {
      "dml_jax": jax.jit(lambda *xs: dml.join(xs, axis=axis)),
      "lax.concatenate": concatenate,
      "one run per outer index": flat,
    }
    for k, fn in jitted.items():
      print(f"  {k}: {_kinds(fn, arrays)}")
  times = {k: [] for k in forms}
  keys = list(forms)
  for _ in range(rounds):
    order.shuffle(keys)
    for k in keys:
      for _ in range(warm):
        jax.block_until_ready(forms[k]())
      start = time.perf_counter()
      for _ in range(CALLS):
        jax.block_until_ready(forms[k]())
      times[k].append((time.perf_counter() - start) / CALLS)
  ort = times["ONNX Runtime Concat"]
  print(f"{name}: {rounds} shuffled rounds of {CALLS} calls after {warm}; ms per call")
  for k, ts in times.items():
    median = statistics.median(ts)
    paired = statistics.median(o / t for o, t in zip(ort, ts, strict=True))
    print(
      f"  {k:<26} median {median * 1e3:6.2f}  min {min(ts) * 1e3:6.2f}"
      f"  ORT/this {statistics.median(ort) / median:5.2f}  within rounds {paired:5.2f}"
    )


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--hlo", action="store_true", help="print the compiled instructions")
  parser.add_argument("--warm", type=int, default=10, help="untimed calls before each block")
  parser.add_argument("--rounds", type=int, default=ROUNDS)
  args = parser.parse_args()
  rng, order = np.random.default_rng(0), random.Random(0)
  for axis in (0, 1):
    compare(cpu_forms._case_join(rng, axis), axis, order, args.hlo, args.warm, args.rounds)
  compare(_nchw_case(rng), 1, order, args.hlo, args.warm, args.rounds)


if __name__ == "__main__":
  main()
