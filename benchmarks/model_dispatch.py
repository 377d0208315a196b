"""A model of many dispatches: as one XLA program against one jitted call per dispatch.

`chain_model` (benchmarks/cases/models.py, whose case model_chain times the same two forms in
run.py) writes a DxDispatch model of `dispatches` dispatches (50 by default) over three FLOAT32
buffers of rows x cols elements and a UINT32 index buffer: a cycle of ten dispatches (SLICE of
the odd or even rows, ELEMENT_WISE_IDENTITY with ScaleBias from one half of a buffer into the
other, GATHER of rows, JOIN of two halves, an in-place ELEMENT_WISE_IDENTITY and a whole-buffer
copy), repeated and cut at `dispatches`. Half the bindings start at an element offset (the
second half of a buffer), and every dispatch reads what an earlier one wrote.

The benchmark runs that model two ways, on the CPU and on JAX's default device (once if
they are the same):
- one program: `Model.as_function()`, lowered and compiled once (the compile time is
  reported on its own), then called;
- per dispatch: the model's own command loop called outside `jax.jit`, so that each
  dispatch is its own jitted call (`CompiledOperator.execute`) and the buffers pass from
  one call to the next as device arrays; the operators are made and validated once, before
  the timing, as DxDispatch does before its first command. Its first call (which compiles
  each operator's program) is reported in the compile column.
Both must leave the same bytes in every buffer (checked before timing). Each time is
seconds per run of the whole command list: `--calls` runs issued back to back and waited
for once, over `--repeats` rounds that alternate between the two forms; the table shows
the median and the fastest round, the median per dispatch, and per dispatch / one program.

Usage: PYTHONPATH=. python3 benchmarks/model_dispatch.py [--dispatches 50] [--rows 256]
       [--cols 256] [--calls 20] [--repeats 7]
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import statistics
import sys
import time
from typing import Any

import jax
import jaxlib
import numpy as np

import dml_jax as dml

if __package__ in (None, ""):  # run as a script: the repository root holds the package
  sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from benchmarks.cases.models import chain_model  # noqa: E402


def per_dispatch_function(model: dml.Model):
  """Buffers -> final buffers, each dispatch its own jitted call (the model's command loop,
  run outside jit); the operators are made once and kept between calls."""
  operators: dict[str, Any] = {}
  until = len(model.commands)
  return lambda buffers: model._commands(buffers, until, operators=operators)[0]


def _rounds(fns, args, calls: int, repeats: int) -> list[list[float]]:
  """Seconds per call of each fn, per round; the rounds alternate between the fns."""
  times: list[list[float]] = [[] for _ in fns]
  for _ in range(repeats):
    for fn, rounds in zip(fns, times, strict=True):
      start = time.perf_counter()
      for _ in range(calls):
        out = fn(args)
      jax.block_until_ready(out)
      rounds.append((time.perf_counter() - start) / calls)
  return times


def _same_bytes(a: dict[str, Any], b: dict[str, Any]) -> bool:
  return a.keys() == b.keys() and all(
    np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes() for k in a
  )


def measure(device: Any, args: argparse.Namespace) -> list[tuple[str, float, list[float]]]:
  """(form, compile or first-call seconds, seconds per round) for both forms on `device`."""
  model = dml.load_model(chain_model(args.dispatches, args.rows, args.cols))
  initial = model.initial_buffers(device)
  start = time.perf_counter()
  compiled = model.as_function().lower(initial).compile()
  compile_seconds = time.perf_counter() - start
  one = compiled(initial)
  jax.block_until_ready(one)
  stepped = per_dispatch_function(model)
  start = time.perf_counter()
  each = stepped(initial)
  jax.block_until_ready(each)
  first_seconds = time.perf_counter() - start
  if not _same_bytes(one, each):
    raise AssertionError(f"on {device}: the one program and the per-dispatch loop differ")
  one_times, each_times = _rounds((compiled, stepped), initial, args.calls, args.repeats)
  return [("one program", compile_seconds, one_times), ("per dispatch", first_seconds, each_times)]


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--dispatches", type=int, default=50)
  parser.add_argument("--rows", type=int, default=256)
  parser.add_argument("--cols", type=int, default=256)
  parser.add_argument("--calls", type=int, default=20, help="runs per round, waited for once")
  parser.add_argument("--repeats", type=int, default=7, help="rounds per form")
  args = parser.parse_args(argv)
  devices = [jax.devices("cpu")[0]]
  if jax.devices()[0] != devices[0]:
    devices.append(jax.devices()[0])
  print(
    f"# model_dispatch  {time.strftime('%Y-%m-%d')}  jax {jax.__version__}"
    f"  jaxlib {jaxlib.__version__}  python {platform.python_version()}"
  )
  print(f"# devices: {', '.join(f'{d} ({d.device_kind})' for d in devices)}")
  print(
    f"# model: {args.dispatches} dispatches, buffers of {args.rows} x {args.cols} FLOAT32"
    f" ({args.rows * args.cols * 4 / 2**20:.2f} MiB each); {args.calls} runs per round,"
    f" {args.repeats} rounds"
  )
  print(
    f"{'device':<10} {'form':<13} {'compile ms':>10} {'median ms':>10} {'min ms':>9}"
    f" {'us/dispatch':>11} {'ratio':>6}"
  )
  for device in devices:
    rows = measure(device, args)
    baseline = statistics.median(rows[0][2])
    for form, setup, rounds in rows:
      median = statistics.median(rounds)
      print(
        f"{device.platform:<10} {form:<13} {setup * 1e3:>10.1f} {median * 1e3:>10.3f}"
        f" {min(rounds) * 1e3:>9.3f} {median / args.dispatches * 1e6:>11.2f}"
        f" {median / baseline:>6.2f}"
      )
  print("(compile: lowering and compiling the one program; for per dispatch, its first run)")
  print("(ratio: median over the one program's median; both forms left identical bytes)")


if __name__ == "__main__":
  main()
