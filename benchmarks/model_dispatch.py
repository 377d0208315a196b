"""A model of many dispatches: as one XLA program against one jitted call per dispatch.

`chain_model` writes a DxDispatch model of `dispatches` dispatches (50 by default) over
three FLOAT32 buffers of rows x cols elements and a UINT32 index buffer: a cycle of ten
dispatches (SLICE of the odd or even rows, ELEMENT_WISE_IDENTITY with ScaleBias from one
half of a buffer into the other, GATHER of rows, JOIN of two halves, an in-place
ELEMENT_WISE_IDENTITY and a whole-buffer copy), repeated and cut at `dispatches`. Half the
bindings start at an element offset (the second half of a buffer), and every dispatch
reads what an earlier one wrote.

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
import platform
import statistics
import time
from typing import Any

import jax
import jaxlib
import numpy as np

import dml_jax as dml

F32 = "FLOAT32"


def _tensor(*sizes: int, data_type: str = F32) -> dict[str, Any]:
  return {"DataType": data_type, "Sizes": list(sizes)}


def _identity(sizes: tuple[int, int], scale: float | None = None, bias: float = 0.0) -> dict:
  desc: dict[str, Any] = {"InputTensor": _tensor(*sizes), "OutputTensor": _tensor(*sizes)}
  if scale is not None:
    desc["ScaleBias"] = {"Scale": scale, "Bias": bias}
  return {"type": "ELEMENT_WISE_IDENTITY", "desc": desc}


def chain_model(dispatches: int = 50, rows: int = 64, cols: int = 64) -> dict[str, Any]:
  """A DxDispatch model (a dict, as `dml.load_model` takes it) of `dispatches` dispatches.

  Args:
    dispatches: how many dispatch commands (the ten-dispatch cycle repeated, then cut).
    rows: the buffers' rows, even (each half is rows / 2 of them).
    cols: the buffers' columns, a multiple of 4 (so that the second half of a FLOAT32
      buffer starts at a multiple of 16 bytes, as DirectML requires of a binding).

  Raises:
    ValueError: odd `rows`, `cols` not a multiple of 4, or fewer than one dispatch.
  """
  if rows < 2 or rows % 2 or cols < 4 or cols % 4 or dispatches < 1:
    raise ValueError(
      f"rows must be even, cols a multiple of 4 and dispatches at least 1; got rows={rows},"
      f" cols={cols}, dispatches={dispatches}"
    )
  half_rows, count = rows // 2, rows * cols
  half = half_rows * cols  # the second half's first element
  permutation = np.random.default_rng(0).permutation(rows)
  resources = {
    name: {"initialValuesDataType": F32, "initialValues": {"value": 0, "valueCount": count}}
    for name in ("x", "y", "z")
  }
  resources["x"]["initialValues"] = {"valueStart": 0, "valueDelta": 0.25, "valueCount": count}
  resources["rows"] = {"initialValuesDataType": "UINT32", "initialValues": permutation.tolist()}

  def slice_rows(first: int) -> dict[str, Any]:
    return {"type": "SLICE", "desc": {
      "InputTensor": _tensor(rows, cols), "OutputTensor": _tensor(half_rows, cols),
      "DimensionCount": 2, "Offsets": [first, 0], "Sizes": [half_rows, cols], "Strides": [2, 1]}}  # fmt: skip

  dispatchables = {
    "slice_odd": slice_rows(1),
    "slice_even": slice_rows(0),
    "copy_half": _identity((half_rows, cols), scale=0.5, bias=1.0),
    "gather_rows": {"type": "GATHER", "desc": {
      "InputTensor": _tensor(rows, cols), "IndicesTensor": _tensor(1, rows, data_type="UINT32"),
      "OutputTensor": _tensor(rows, cols), "Axis": 0, "IndexDimensions": 1}},
    "join_halves": {"type": "JOIN", "desc": {
      "InputCount": 2, "InputTensors": [_tensor(half_rows, cols), _tensor(half_rows, cols)],
      "OutputTensor": _tensor(rows, cols), "Axis": 0}},
    "negate_in_place": _identity((rows, cols), scale=-1.0, bias=0.5),
    "copy_all": _identity((rows, cols)),
  }  # fmt: skip

  def at(name: str, offset: int) -> dict[str, Any]:
    return {"name": name, "elementOffset": offset}

  cycle = [
    ("slice_odd", {"InputTensor": "x", "OutputTensor": "y"}),
    ("copy_half", {"InputTensor": "x", "OutputTensor": at("y", half)}),
    ("gather_rows", {"InputTensor": "y", "IndicesTensor": "rows", "OutputTensor": "z"}),
    ("join_halves", {"InputTensors": [at("z", half), "z"], "OutputTensor": "y"}),
    ("negate_in_place", {"InputTensor": "y", "OutputTensor": "y"}),
    ("slice_even", {"InputTensor": "y", "OutputTensor": "z"}),
    ("copy_half", {"InputTensor": at("y", half), "OutputTensor": at("z", half)}),
    ("gather_rows", {"InputTensor": "z", "IndicesTensor": "rows", "OutputTensor": "x"}),
    ("join_halves", {"InputTensors": ["x", at("z", half)], "OutputTensor": "y"}),
    ("copy_all", {"InputTensor": "y", "OutputTensor": "x"}),
  ]
  commands = [
    {"type": "dispatch", "dispatchable": name, "bindings": bindings}
    for name, bindings in (cycle[i % len(cycle)] for i in range(dispatches))
  ]
  return {"resources": resources, "dispatchables": dispatchables, "commands": commands}


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
