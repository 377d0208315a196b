"""The CPU protocol: dml_jax against ONNX Runtime, each as a user gets it, in fresh processes.

Run from the repository root:

  PYTHONPATH=. python3 benchmarks/cpu_protocol.py                  # small size, plain and setup
  PYTHONPATH=. python3 benchmarks/cpu_protocol.py --only JOIN,gather_nd --config all --json out.json
  PYTHONPATH=. python3 benchmarks/cpu_protocol.py --size tiny --only join_axis1 --rounds 3
  PYTHONPATH=. python3 benchmarks/cpu_protocol.py --only gather_nd --processes 3

Options:
  --size tiny|small     small (default): the CPU sizes of benchmarks/run.py; tiny: seconds.
  --only PATTERN        the cases, as in benchmarks/run.py (a name, an fnmatch pattern, a
                        substring or a DirectML operator; repeat it or separate with commas).
  --config C            plain, setup, env, both (plain and setup: the default) or all.
  --rounds N            alternating rounds per case (default 11 at small size, 3 at tiny).
  --rest-ms MS          the pause before every block (default 100 at small size, 1 at tiny).
  --ort-spinning S      default (ONNX Runtime's threads spin between calls, as a user gets it),
                        off (a session with session.intra_op.allow_spinning=0) or both.
  --one-process         run all the cases of a configuration in one process (default: one
                        fresh process per case and configuration).
  --processes N         run each case and configuration in N fresh processes (default 1; with
                        --one-process, N processes of all the cases), and judge the spread
                        between them as well as within each.
  --json PATH           also write every number as JSON.

The process exits with status 1 if a check fails or a child process fails, 2 for bad arguments
(or when onnxruntime or onnx does not import), else 0.

What runs. The cases are benchmarks/run.py's (its registry, sizes and data; nothing here
changes them), each with the ONNX Runtime peer its `peers` builds; a case without one is listed
and skipped. Each configuration runs in its own fresh Python process, started with no malloc
settings in its environment (the parent drops any MALLOC_* variable and glibc.malloc tunable it
has, and says so), with JAX_PLATFORMS=cpu:

  plain   nothing else: a user's `python script.py`.
  setup   the library's recommended setup, called as a user would at the top of the program,
          before anything computes with JAX: `dml_jax.cpu.configure_allocator()`.
  env     the environment recipe instead: MALLOC_ARENA_MAX=1 MALLOC_MMAP_THRESHOLD_=4294967296
          MALLOC_TRIM_THRESHOLD_=4294967296 in the child's environment.

By default every case gets a fresh process per configuration: glibc adapts its mmap threshold to
the blocks a process has freed, so a case's page faults would otherwise depend on the cases run
before it. ONNX Runtime runs as a user gets it: `InferenceSession(model,
providers=["CPUExecutionProvider"])` with default `SessionOptions()` (its own thread count and
spinning), built from run.py's ONNX models (its thread settings are left out here, run.py is
not changed). dml_jax runs the case's jitted function on arrays already on the CPU, each call
waited for (`block_until_ready`), as run.py times the CPU.

How it is timed. Both sides are called once and checked (dml_jax's whole output against
run.py's NumPy formulation, ONNX Runtime's against dml_jax's, bit for bit), then warmed, and
each side's calls per block, k, is chosen so that a block lasts about the size's target time
(run.py's PRESETS; at most its max_calls). Then N rounds: each round sleeps --rest-ms, runs a
block of k calls of one side, sleeps again, runs a block of the other; the side that goes first
alternates from round to round. The rest lets ONNX Runtime's worker threads stop spinning
before dml_jax's block, and XLA's before ONNX Runtime's; with --ort-spinning both, a
non-spinning session takes a third block each round.

What it reports, per configuration and case: each side's median per-call time over the rounds
(ms), ratio = ONNX Runtime's median / dml_jax's (above 1: dml_jax is faster), the noise as the
quartiles of the per-round ratios (each round's ONNX Runtime block over its dml_jax block; with
fewer than 4 rounds their min and max), a verdict (ahead: the lower quartile >= 1; behind: the
upper < 1; else level, within the noise), and minor page faults per call for each side
(getrusage(RUSAGE_SELF).ru_minflt over a block, all threads, / k; median over rounds). Then a
summary, a row per case, with the ratio of every configuration run side by side. The JSON adds
every round, the calibration, each child's peak resident memory and the load average.

More than one process (--processes N, N > 1). The quartiles above are those of one process;
the spread between processes of one case can be larger (what a process gets from the system
varies: memory placement, other load), so each case and configuration can be run in N fresh
processes, one after another: process 1 of every case, then process 2 of every case, and so
on (all of one configuration before the next), so that with several cases a case's processes
are spread over the run rather than back to back. Each process is
measured and reported exactly as above (a row per process, marked #1, #2, ...). They are then
combined (a row marked "(all N)"), and the combined row is what the summary shows and what the
verdict judges:

  ratio    the median of the processes' ratios (for even N the mean of the middle two);
  noise    from the lowest lower quartile to the highest upper quartile over the processes
           (a process with fewer than 4 rounds contributes its min and max);
  verdict  ahead when that whole range is >= 1, behind when it is all < 1, else level;
  ms, faults  the medians over the processes of each side's median.

With N = 1 the combined row is the process's own row: nothing changes. The JSON keeps every
process's record (each case record carries its process number) and, in the summary, each
combined row lists its processes' rows and ratios.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import fnmatch
import gc
import importlib.util
import json
import os
import pathlib
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import types
from typing import Any

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUN = pathlib.Path(__file__).resolve().parent / "run.py"

CONFIGS = ("plain", "setup", "env")
CONFIG_CHOICES = {
  "plain": ("plain",),
  "setup": ("setup",),
  "env": ("env",),
  "both": ("plain", "setup"),
}
CONFIG_CHOICES["all"] = CONFIGS
# The environment recipe (docs/performance.md), for the `env` configuration.
ENV_RECIPE = {
  "MALLOC_ARENA_MAX": "1",
  "MALLOC_MMAP_THRESHOLD_": "4294967296",
  "MALLOC_TRIM_THRESHOLD_": "4294967296",
}
DEFAULTS = {"small": dict(rounds=11, rest_ms=100.0), "tiny": dict(rounds=3, rest_ms=1.0)}
SPINNING = {"default": ("default",), "off": ("off",), "both": ("default", "off")}


def load_run():
  """benchmarks/run.py as a module (a script, not part of a package), loaded once."""
  name = "dml_jax_benchmark_run"
  if name not in sys.modules:
    spec = importlib.util.spec_from_file_location(name, RUN)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    try:
      spec.loader.exec_module(module)
    except BaseException:
      del sys.modules[name]
      raise
  return sys.modules[name]


# -- the child: one configuration, some cases ------------------------------------------------


class UserSessions:
  """onnxruntime as run.py's model builders call it, except that every session is made as a
  user makes one: default SessionOptions (their thread settings are dropped), the CPU provider.
  With spinning="off", the intra-op threads do not spin between calls."""

  def __init__(self, ort, spinning: str):
    self._ort, self._spinning = ort, spinning
    self.__version__ = ort.__version__

  def SessionOptions(self):  # noqa: N802 (onnxruntime's name)
    return types.SimpleNamespace()  # takes whatever run.py sets, and is not used

  def InferenceSession(self, model, options=None, providers=None):  # noqa: N802
    options = self._ort.SessionOptions()
    if self._spinning == "off":
      options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return self._ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


@dataclasses.dataclass
class Side:
  name: str  # dml_jax, ort, ort (no spinning)
  impl: Any  # run.Impl
  calls: int = 0
  calibration: list[tuple[int, float]] = dataclasses.field(default_factory=list)
  seconds: list[float] = dataclasses.field(default_factory=list)  # per call, a round each
  faults: list[float] = dataclasses.field(default_factory=list)  # per call, a round each


def _minflt() -> int:
  return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def block(run, impl, calls: int) -> tuple[float, float]:
  """(seconds per call, minor page faults per call) of a block of `calls` waited-for calls."""
  before = _minflt()
  seconds = run.run_batch(impl, calls)
  return seconds / calls, (_minflt() - before) / calls


def calibrate(run, side: Side, preset) -> None:
  """Warms the side up, then chooses its calls per block: about preset.target_s a block."""
  side.impl.sync(side.impl.call())
  calls = 1
  while True:
    seconds = run.run_batch(side.impl, calls)
    side.calibration.append((calls, seconds))
    if seconds >= preset.target_s / 2 or calls >= preset.max_calls:
      break
    calls = min(preset.max_calls, calls * 2)
  per_call = seconds / calls
  side.calls = max(1, min(preset.max_calls, round(preset.target_s / max(per_call, 1e-9))))


def run_rounds(run, sides: list[Side], rounds: int, rest_s: float) -> None:
  for r in range(rounds):
    for i in range(len(sides)):
      side = sides[(i + r) % len(sides)]  # the first side alternates
      time.sleep(rest_s)
      per_call, faults = block(run, side.impl, side.calls)
      side.seconds.append(per_call)
      side.faults.append(faults)


def measure_case(run, name: str, size: str, rounds: int, rest_s: float, spinning, ort, onnx):
  """One case: checks, calibration, alternating rounds. Returns its JSON record."""
  registered = run.CASES[name]
  seed = 1000 + list(run.CASES).index(name)
  case = registered.build(size, np.random.default_rng(seed))
  record: dict[str, Any] = {
    "case": name,
    "op": registered.op,
    "shape": case.shape,
    "dtype": case.dtype,
    "description": case.description,
    "notes": case.notes,
  }
  ort_sides = []
  for mode in spinning:
    env = run.Env(platform="cpu", pipelined=False, ort=UserSessions(ort, mode), onnx=onnx)
    for impl in case.peers(env, case.host):
      if impl.kind == "ort":
        label = "ort" if mode == "default" else "ort (no spinning)"
        ort_sides.append(Side(label, dataclasses.replace(impl, name=f"{impl.name} [{label}]")))
  if not ort_sides:
    record["skipped"] = "no ONNX Runtime peer in benchmarks/run.py"
    return record
  dml_side = Side(
    "dml_jax", run.jax_impl(run.Env("cpu", False), "dml_jax", "dml", case.dml, *case.inputs)
  )
  # Checks, on each side's first output.
  checks = []
  dml_out = np.asarray(dml_side.impl.to_numpy(dml_side.impl.call()))
  expected = case.expected(case.host)
  if not run.bit_equal(expected, dml_out):
    checks.append(f"dml_jax vs NumPy: {run.mismatch(expected, dml_out)}")
  for side in ort_sides:
    out = side.impl.call()
    got = side.impl.to_numpy(out)
    if not run.bit_equal(dml_out, got):
      checks.append(f"{side.impl.name} vs dml_jax: {run.mismatch(dml_out, got)}")
  del dml_out, expected
  record["check"] = "FAIL: " + "; ".join(checks) if checks else "ok"
  sides = [dml_side, *ort_sides]
  preset = run.PRESETS[size]
  for side in sides:
    calibrate(run, side, preset)
  run_rounds(run, sides, rounds, rest_s)
  record["ort_implementation"] = ort_sides[0].impl.name.split(" [")[0]
  record["sides"] = {
    side.name: {
      "median_ms": statistics.median(side.seconds) * 1e3,
      "ms": [s * 1e3 for s in side.seconds],
      "faults_per_call": statistics.median(side.faults),
      "faults": side.faults,
      "calls_per_block": side.calls,
      "calibration": side.calibration,
    }
    for side in sides
  }
  del case, sides, dml_side, ort_sides
  gc.collect()
  return record


def child(config: str, names: list[str], size: str, rounds: int, rest_s: float, spinning, out: str):
  setup: dict[str, Any] | None = None
  if config == "setup":
    # A user's program: the setup first, before anything computes with JAX.
    from dml_jax import cpu

    setup = cpu.configure_allocator().as_dict()
  run = load_run()
  import jax
  import onnx
  import onnxruntime as ort

  result: dict[str, Any] = {
    "config": config,
    "setup": setup,
    "environment": {k: v for k, v in os.environ.items() if k.startswith(("MALLOC_", "GLIBC_TUN"))},
    "versions": {
      "python": platform.python_version(),
      "jax": jax.__version__,
      "jaxlib": run.version_of("jaxlib"),
      "numpy": np.__version__,
      "onnxruntime": ort.__version__,
      "onnx": onnx.__version__,
    },
    "load_average_start": run.load_average(),
    "cases": [],
  }
  for name in names:
    print(f"  [{config}] {name}", flush=True)
    try:
      result["cases"].append(measure_case(run, name, size, rounds, rest_s, spinning, ort, onnx))
    except Exception as e:
      result["cases"].append(
        {"case": name, "op": run.CASES[name].op, "error": f"{type(e).__name__}: {e}"[:300]}
      )
  result["load_average_end"] = run.load_average()
  result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  with open(out, "w") as f:
    json.dump(result, f)


# -- the parent: children per configuration, tables -----------------------------------------


def child_environment(config: str) -> tuple[dict[str, str], list[str]]:
  """The child's environment and the malloc settings dropped from this process's."""
  env = dict(os.environ)
  dropped = [k for k in env if k.startswith("MALLOC_")]
  for k in dropped:
    del env[k]
  tunables = env.get("GLIBC_TUNABLES", "")
  if "glibc.malloc." in tunables:
    kept = [t for t in tunables.split(":") if t and not t.startswith("glibc.malloc.")]
    dropped.append(f"GLIBC_TUNABLES's glibc.malloc.* ({tunables})")
    if kept:
      env["GLIBC_TUNABLES"] = ":".join(kept)
    else:
      del env["GLIBC_TUNABLES"]
  if config == "env":
    env.update(ENV_RECIPE)
  env["JAX_PLATFORMS"] = "cpu"
  env["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
  )
  return env, dropped


def run_child(config: str, names: list[str], args) -> dict[str, Any]:
  env, _ = child_environment(config)
  with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "result.json")
    command = [
      sys.executable,
      str(pathlib.Path(__file__).resolve()),
      "--child",
      config,
      "--cases",
      ",".join(names),
      "--size",
      args.size,
      "--rounds",
      str(args.rounds),
      "--rest-ms",
      str(args.rest_ms),
      "--ort-spinning",
      args.ort_spinning,
      "--result",
      out,
    ]
    completed = subprocess.run(command, cwd=ROOT, env=env)
    if completed.returncode == 0 and os.path.exists(out):
      with open(out) as f:
        return json.load(f)
  error = f"the child process exited with status {completed.returncode}"
  return {
    "config": config,
    "cases": [{"case": name, "error": error} for name in names],
    "error": error,
  }


def _quartiles(values: list[float]) -> tuple[float, float]:
  if len(values) < 4:
    return min(values), max(values)
  q = statistics.quantiles(values, n=4, method="inclusive")
  return q[0], q[2]


def summarize(record: dict[str, Any]) -> list[dict[str, Any]]:
  """A row per ONNX Runtime side of a case: times, ratio, noise, verdict, faults."""
  sides = record.get("sides")
  if not sides:
    return []
  dml = sides["dml_jax"]
  rows = []
  for name, side in sides.items():
    if name == "dml_jax":
      continue
    per_round = [o / d for o, d in zip(side["ms"], dml["ms"], strict=True)]
    lo, hi = _quartiles(per_round)
    ratio = side["median_ms"] / dml["median_ms"]
    verdict = "ahead" if lo >= 1 else "behind" if hi < 1 else "level"
    rows.append(
      {
        "case": record["case"],
        "op": record["op"],
        "shape": record["shape"],
        "peer": name,
        "process": record.get("process", 1),
        "dml_ms": dml["median_ms"],
        "ort_ms": side["median_ms"],
        "ratio": ratio,
        "noise": [lo, hi],
        "per_round_ratio": per_round,
        "min_max": [min(per_round), max(per_round)],
        "verdict": verdict,
        "dml_faults_per_call": dml["faults_per_call"],
        "ort_faults_per_call": side["faults_per_call"],
      }
    )
  return rows


def combine(rows: list[dict[str, Any]]) -> dict[str, Any]:
  """One case and peer over its processes' rows (summarize's): the median of their ratios, the
  noise from the lowest lower quartile to the highest upper one, the verdict on that range."""
  lo = min(row["noise"][0] for row in rows)
  hi = max(row["noise"][1] for row in rows)
  first = rows[0]
  return {
    **{k: first[k] for k in ("case", "op", "shape", "peer")},
    "processes": len(rows),
    "dml_ms": statistics.median(row["dml_ms"] for row in rows),
    "ort_ms": statistics.median(row["ort_ms"] for row in rows),
    "ratio": statistics.median(row["ratio"] for row in rows),
    "noise": [lo, hi],
    "per_process_ratio": [row["ratio"] for row in rows],
    "min_max": [min(row["min_max"][0] for row in rows), max(row["min_max"][1] for row in rows)],
    "verdict": "ahead" if lo >= 1 else "behind" if hi < 1 else "level",
    "dml_faults_per_call": statistics.median(row["dml_faults_per_call"] for row in rows),
    "ort_faults_per_call": statistics.median(row["ort_faults_per_call"] for row in rows),
    "per_process": rows,
    # One process: its rounds' ratios, as summarize gives them (several: in "per_process").
    **({"per_round_ratio": first["per_round_ratio"]} if len(rows) == 1 else {}),
  }


def combined_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
  """The rows of a configuration's records (any number of processes per case), combined per
  case and peer, in the order the cases first appear."""
  groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
  for record in records:
    for row in summarize(record):
      groups.setdefault((row["case"], row["peer"]), []).append(row)
  return [combine(rows) for rows in groups.values()]


def format_table(columns: tuple[str, ...], rows: list[tuple[str, ...]], right: set[int]) -> str:
  cells = [columns, *rows]
  widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
  lines = [
    "  ".join(
      c.rjust(w) if i in right else c.ljust(w)
      for i, (c, w) in enumerate(zip(r, widths, strict=True))
    ).rstrip()
    for r in cells
  ]
  lines.insert(1, "-" * max(len(line) for line in lines))
  return "\n".join(lines)


CONFIG_COLUMNS = (
  "case",
  "peer",
  "dml ms",
  "ORT ms",
  "ratio",
  "noise",
  "verdict",
  "faults/call dml",
  "faults/call ORT",
  "check",
)


def _faults(x: float) -> str:
  return f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def config_table(result: dict[str, Any], processes: int = 1) -> str:
  """A row per case and peer; with several processes, a row per process (case#1, case#2, ...)
  and then the combined row ("case (all N)"; its check: the processes' checks)."""
  rows = []

  def label(record_or_row) -> str:
    if processes == 1:
      return record_or_row["case"]
    if "process" not in record_or_row:  # a combined row
      return f"{record_or_row['case']} (all {processes})"
    return f"{record_or_row['case']}#{record_or_row['process']}"

  order: list[str] = []
  by_case: dict[str, list[dict[str, Any]]] = {}
  for record in result["cases"]:
    if record["case"] not in by_case:
      order.append(record["case"])
    by_case.setdefault(record["case"], []).append(record)
  for case in order:
    records = by_case[case]
    listed = []
    for record in records:
      if "error" in record:
        rows.append(
          (label(record), "-", "-", "-", "-", "-", "-", "-", "-", f"ERROR: {record['error']}")
        )
        continue
      listed.extend((row, record.get("check", "-")) for row in summarize(record))
    if processes > 1:
      checks = sorted({r.get("check", "-") for r in records if "error" not in r})
      listed.extend((row, "/".join(checks)) for row in combined_rows(records))
    for row, check in listed:
      rows.append(
        (
          label(row),
          row["peer"],
          f"{row['dml_ms']:.3f}",
          f"{row['ort_ms']:.3f}",
          f"{row['ratio']:.2f}",
          f"{row['noise'][0]:.2f}..{row['noise'][1]:.2f}",
          row["verdict"],
          _faults(row["dml_faults_per_call"]),
          _faults(row["ort_faults_per_call"]),
          check,
        )
      )
  return format_table(CONFIG_COLUMNS, rows, right={2, 3, 4, 5, 7, 8})


def summary_table(results: dict[str, dict[str, Any]], configs: tuple[str, ...]) -> str:
  """A row per case and ONNX Runtime side: each configuration's ratio [noise] and verdict."""
  by_key: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
  order: list[tuple[str, str]] = []
  ops = {}
  for config in configs:
    for row in combined_rows(results[config]["cases"]):
      key = (row["case"], row["peer"])
      if key not in by_key:
        by_key[key], ops[key] = {}, row["op"]
        order.append(key)
      by_key[key][config] = row
  columns = (
    "case",
    "op",
    "peer",
    *(f"ratio {c} [noise]" for c in configs),
    *(f"verdict {c}" for c in configs),
  )
  rows = []
  for key in order:
    cells = []
    for config in configs:
      row = by_key[key].get(config)
      cells.append(
        f"{row['ratio']:.2f} [{row['noise'][0]:.2f}..{row['noise'][1]:.2f}]" if row else "-"
      )
    verdicts = [by_key[key][c]["verdict"] if c in by_key[key] else "-" for c in configs]
    rows.append((key[0], ops[key], key[1], *cells, *verdicts))
  return format_table(columns, rows, right=set(range(3, 3 + len(configs))))


def header_lines(args, configs, names, dropped: list[str]) -> list[str]:
  run = load_run()
  cpu = platform.processor() or platform.machine()
  try:
    with open("/proc/cpuinfo") as f:
      cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
  except (OSError, StopIteration):
    pass
  libc = " ".join(platform.libc_ver()) or "unknown"
  return [
    f"# dml_jax CPU protocol  {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
    f"# host: {cpu}, {os.cpu_count()} cpus, {platform.system()} {platform.release()}, libc {libc}",
    f"# size {args.size}  rounds {args.rounds}  rest {args.rest_ms:g} ms before every block"
    f"  target {run.PRESETS[args.size].target_s * 1e3:g} ms a block"
    f"  ONNX Runtime spinning: {args.ort_spinning}",
    f"# configurations: {', '.join(configs)}; "
    + (
      "one process per configuration"
      if args.one_process
      else "one process per case and configuration"
    )
    + (f", {args.processes} times over" if args.processes > 1 else ""),
    f"# cases: {', '.join(names)}",
    "# malloc settings dropped from the children's environment: "
    + (", ".join(dropped) if dropped else "none were set"),
    f"# load average {run.load_average()}",
  ]


def parse_args(argv):
  parser = argparse.ArgumentParser(
    description="dml_jax against ONNX Runtime on the CPU, alternating blocks, fresh processes.",
    epilog="What is measured, and how: the docstring of benchmarks/cpu_protocol.py.",
  )
  parser.add_argument("--size", choices=("tiny", "small"), default="small")
  parser.add_argument("--only", action="append", default=[], metavar="PATTERN")
  parser.add_argument("--config", choices=tuple(CONFIG_CHOICES), default="both")
  parser.add_argument("--rounds", type=int, help="alternating rounds (default 11; tiny: 3)")
  parser.add_argument(
    "--rest-ms", type=float, help="rest before every block (default 100; tiny: 1)"
  )
  parser.add_argument("--ort-spinning", choices=tuple(SPINNING), default="default")
  parser.add_argument("--one-process", action="store_true")
  parser.add_argument("--processes", type=int, default=1, metavar="N")
  parser.add_argument("--json", metavar="PATH")
  # Internal: a child process.
  parser.add_argument("--child", choices=CONFIGS, help=argparse.SUPPRESS)
  parser.add_argument("--cases", help=argparse.SUPPRESS)
  parser.add_argument("--result", help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  for key, value in DEFAULTS[args.size].items():
    if getattr(args, key) is None:
      setattr(args, key, value)
  if args.rounds < 2:
    parser.error("--rounds must be at least 2")
  if args.rest_ms < 0:
    parser.error("--rest-ms must not be negative")
  if args.processes < 1:
    parser.error("--processes must be at least 1")
  if args.child:
    return args, args.cases.split(",")
  run = load_run()
  patterns = [p.strip() for value in args.only for p in value.split(",") if p.strip()]
  names = [
    name
    for name in run.cases_of(args.size)
    if not patterns
    or any(fnmatch.fnmatchcase(name, p) or p in name or p == run.CASES[name].op for p in patterns)
  ]
  if not names:
    parser.error(f"--only {','.join(patterns)} matches no case; cases: {', '.join(run.CASES)}")
  missing = [m for m in ("onnxruntime", "onnx") if importlib.util.find_spec(m) is None]
  if missing:
    parser.error(f"{' and '.join(missing)} not installed: pip install onnxruntime onnx")
  return args, names


def main(argv=None) -> int:
  args, names = parse_args(argv)
  spinning = SPINNING[args.ort_spinning]
  if args.child:
    child(args.child, names, args.size, args.rounds, args.rest_ms / 1e3, spinning, args.result)
    return 0
  configs = CONFIG_CHOICES[args.config]
  _, dropped = child_environment("plain")
  header = header_lines(args, configs, names, dropped)
  print("\n".join(header), flush=True)
  results: dict[str, dict[str, Any]] = {}
  for config in configs:
    groups = [names] if args.one_process else [[name] for name in names]
    children = []
    for process in range(1, args.processes + 1):
      for group in groups:
        child_result = run_child(config, group, args)
        child_result["process"] = process
        for record in child_result["cases"]:
          record["process"] = process
        children.append(child_result)
    results[config] = {
      "config": config,
      "setup": next((c.get("setup") for c in children if c.get("setup")), None),
      "cases": [record for c in children for record in c["cases"]],
      "children": [{k: v for k, v in c.items() if k != "cases"} for c in children],
    }
  for config in configs:
    result = results[config]
    print(f"\n## {config}" + ("" if config == "plain" else f": {_describe(config, result)}"))
    print(config_table(result, args.processes))
    skipped = [r["case"] for r in result["cases"] if r.get("skipped")]
    if skipped:
      print(f"no ONNX Runtime peer (not timed): {', '.join(skipped)}")
    rss = [c.get("peak_rss_mib") for c in result["children"] if c.get("peak_rss_mib")]
    if rss:
      print(f"peak resident memory of a child: {max(rss):.0f} MiB")
  print("\n## summary: ratio = ONNX Runtime ms / dml_jax ms (above 1: dml_jax is faster)")
  print(summary_table(results, configs))
  print(
    "\nnoise: the quartiles of the per-round ratios (min and max with fewer than 4 rounds);"
    " verdict: ahead when the lower one is >= 1, behind when the upper one is < 1, else level."
  )
  if args.processes > 1:
    print(
      f"over {args.processes} processes: ratio = the median of the processes' ratios; noise ="
      " the lowest lower quartile to the highest upper quartile of the processes."
    )
  failed = [
    (
      config,
      r["case"] + (f"#{r['process']}" if args.processes > 1 else ""),
      r.get("error") or r.get("check"),
    )
    for config, result in results.items()
    for r in result["cases"]
    if r.get("error") or r.get("check", "ok") != "ok"
  ]
  run = load_run()
  print(f"\nload average at the end: {run.load_average()}")
  for config, case, problem in failed:
    print(f"FAILED: [{config}] {case}: {problem}")
  if not failed:
    print("all checks passed (dml_jax vs NumPy, ONNX Runtime vs dml_jax, bit for bit)")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(
        {
          "header": header,
          "argv": sys.argv[1:],
          "size": args.size,
          "rounds": args.rounds,
          "rest_ms": args.rest_ms,
          "ort_spinning": args.ort_spinning,
          "processes": args.processes,
          "configs": results,
          "summary": {c: combined_rows(results[c]["cases"]) for c in configs},
          "passed": not failed,
        },
        f,
        indent=1,
      )
  return 1 if failed else 0


def _describe(config: str, result: dict[str, Any]) -> str:
  if config == "env":
    return " ".join(f"{k}={v}" for k, v in ENV_RECIPE.items())
  setup = result.get("setup")
  return f"dml_jax.cpu.configure_allocator() -> {setup.get('summary') if setup else '?'}"


if __name__ == "__main__":
  sys.exit(main())
