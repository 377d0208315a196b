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


def interleaved(sides, rounds, block_s=0.1, rest_s=0.05):
  """Milliseconds per call of each of `sides` (name -> a call that waits for its result) per
  round: every round a block of about `block_s` per side, each after a rest of `rest_s`, in a
  shuffled order."""
  import random

  times = {name: [] for name in sides}
  for _ in range(rounds):
    order = list(sides.items())
    random.shuffle(order)
    for name, call in order:
      time.sleep(rest_s)
      start, calls = time.perf_counter(), 0
      while time.perf_counter() - start < block_s:
        call()
        calls += 1
      times[name].append((time.perf_counter() - start) / calls * 1e3)
  return times


def print_against(label, times, peer="ort"):
  """One row per side: label, side, median ms, the peer's median over the side's, and the
  quartiles of the per-round ratios."""
  peer_ms = statistics.median(times[peer])
  for name, values in times.items():
    ratios = sorted(p / v for p, v in zip(times[peer], values, strict=True))
    low, high = ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]
    ms = statistics.median(values)
    print(f"{label:>16s} {name:>10s} {ms:8.3f} {peer_ms / ms:9.2f} [{low:.2f}..{high:.2f}]")


def probe_parser(cases, *, flag="--cases", help=None, choices=None):
  """The CPU kernel probes' arguments: --plain, --rounds and the cases (`flag`)."""
  import argparse

  parser = argparse.ArgumentParser()
  parser.add_argument("--plain", action="store_true", help="no configure_allocator()")
  parser.add_argument("--rounds", type=int, default=11)
  parser.add_argument(flag, nargs="+", default=list(cases), help=help, choices=choices)
  return parser


def start_probe(args, *, label="case", runs=None, note=""):
  """A CPU kernel probe's start: `dml_jax.cpu.configure_allocator()` unless --plain, exit 2
  where the native kernels do not run (or `runs()`, if given, returns a reason), the header."""
  import sys

  import dml_jax as dml

  if not args.plain:
    dml.cpu.configure_allocator()
  import jax
  import onnxruntime as ort

  from dml_jax._src.kernels import native_cpu

  status = native_cpu.build()  # every kernel now, not in the first timed call
  reason = status.reason if not status.available else (runs() if runs else "")
  if reason:
    print(f"the native kernels do not run here: {reason}", file=sys.stderr)
    sys.exit(2)
  print(
    f"# jax {jax.__version__}, onnxruntime {ort.__version__},"
    f" {'plain process' if args.plain else 'configure_allocator()'}, {args.rounds} rounds{note}"
  )
  print(f"{label:>16s} {'form':>10s} {'ms':>8s} {'ORT/form':>9s} {'[quartiles]':>13s}")


def ort_session(nodes, inputs, outputs, initializers=()):
  """An ONNX Runtime session (default options, the CPU) of one opset-13 graph."""
  import onnxruntime as ort
  from onnx import helper

  graph = helper.make_graph(nodes, "probe", inputs, outputs, initializer=list(initializers))
  model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
  model.ir_version = 7  # opset 13's: loads in any onnxruntime since 1.6
  return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def check_and_time(label, forms, want, rounds):
  """Each of `forms` (name -> a call; "ort" returns ONNX Runtime's list of outputs) checked bit
  for bit against `want` (exits 1 where one differs), then timed by `interleaved` and printed."""
  import numpy as np

  for name, form in forms.items():
    got = form()
    got = got[0] if name == "ort" else got
    got, expected = np.ascontiguousarray(got), np.ascontiguousarray(want)
    if got.shape != expected.shape or not np.array_equal(
      got.view(np.uint8), expected.view(np.uint8)
    ):
      raise SystemExit(f"{name} differs from NumPy for {label}")
  print_against(label, interleaved(forms, rounds))
