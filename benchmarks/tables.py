"""docs/performance.md's tables, generated from the committed results (`run.py --table`).

The results are `benchmarks/results/<machine>.json`: a run's `run.py --json` report (its
"rows", and "sharded" for a run with --devices), each row dated, and `targets.json`, the status
of each performance target. docs/performance.md holds each table between the lines
``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->``; `write` replaces what is
between them with `render(NAME)`, and tests/test_benchmark_smoke.py checks that the committed
page equals what `write` would make of it. To record a run: write its JSON into the results
folder (a new machine is a new file; a new run of a machine replaces the rows it measured),
then `PYTHONPATH=. python3 benchmarks/run.py --table`; `run.py --record STEM REPORT` does the
merging (`record`).
"""

from __future__ import annotations

import json
import pathlib
import re
import sys
from collections.abc import Callable
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "performance.md"
# The machines of the one-device table, in its column order: file stem -> column title.
MACHINES = {"h100": "H100", "h200": "H200", "cpu-2core": "CPU, 2 cores (small sizes)"}
# The sharded runs, in the page's order: file stem -> the GPUs, in words.
SHARDED_MACHINES = {"h200-x2": "2 H200s", "h100-x2": "2 H100s", "h100-x4": "4 H100s"}
_BLOCK = re.compile(
  r"(<!-- generated: (?P<name>[a-z_]+) -->\n)(?P<body>.*?)(<!-- end generated: (?P=name) -->)",
  re.DOTALL,
)


def load(stem: str, folder: pathlib.Path = RESULTS) -> dict[str, Any]:
  return json.loads((folder / f"{stem}.json").read_text())


def _markdown(header: list[str], rows: list[list[str]]) -> str:
  lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
  lines += ["| " + " | ".join(row) + " |" for row in rows]
  return "\n".join(lines) + "\n"


def targets(folder: pathlib.Path = RESULTS) -> str:
  """Each performance target's status, by GPU."""
  record = load("targets", folder)
  rows = [[t["target"], t["H100"], t["H200"], t["status"]] for t in record["targets"]]
  return record["note"] + "\n\n" + _markdown(["performance target", "H100", "H200", "status"], rows)


def _cell(row: dict[str, Any] | None) -> str:
  if row is None:
    return ""
  parts = []
  if row.get("fraction_of_ceiling") is not None:
    parts.append(f"{row['fraction_of_ceiling']:.2f}")
  if row.get("kernel_fraction_of_ceiling") is not None:
    parts.append(f"{row['kernel_fraction_of_ceiling']:.2f} k")
  text = " / ".join(parts) or f"{row['median_ms']:.3f} ms"
  if row.get("peer_over_dml") is not None and row.get("best_peer"):
    text += f", {row['peer_over_dml']:.2f}x {row['best_peer']}"
  return f"{text} ({row['date'][5:10]})"


def cases(folder: pathlib.Path = RESULTS) -> str:
  """dml_jax's latest figure for each case on each machine."""
  records = {stem: load(stem, folder) for stem in MACHINES}
  dml = {
    stem: {r["case"]: r for r in record["rows"] if r["implementation"] == "dml_jax"}
    for stem, record in records.items()
  }
  order: list[str] = []  # the cases, first by the first machine's order
  for record in records.values():
    for r in record["rows"]:
      if r["case"] not in order and r["case"] != "copy":
        order.append(r["case"])
  ops = {r["case"]: r["op"] for record in records.values() for r in record["rows"]}
  rows = [
    [f"`{case}`", ops[case] or "", *(_cell(dml[stem].get(case)) for stem in MACHINES)]
    for case in order
    if any(case in dml[stem] for stem in MACHINES)
  ]
  return _markdown(["case", "operator", *MACHINES.values()], rows)


def sharded(folder: pathlib.Path = RESULTS) -> str:
  """The sharded runs over several GPUs, one table per record: each case's batch and axis
  families side by side."""
  return "\n".join(
    _sharded_table(load(stem, folder), gpus)
    for stem, gpus in SHARDED_MACHINES.items()
    if (folder / f"{stem}.json").exists()
  )


def _sharded_table(record: dict[str, Any], gpus: str) -> str:
  by_case: dict[str, dict[str, dict[str, Any]]] = {}
  for s in record["sharded"]:
    by_case.setdefault(s["case"], {})[s["family"]] = s
  rows = []
  for case, families in by_case.items():
    batch, axis = families.get("batch"), families.get("axis")
    first = batch or axis
    assert first is not None
    row = [first.get("label") or f"`{case}`"]
    if batch:
      row += [
        f"{batch['dml_ms']:.3f} / {batch['jnp_ms']:.3f}",
        f"{batch['one_device_ms']:.3f}",
        f"{batch['scaling']:.2f}",
      ]
    else:
      row += ["", f"{axis['one_device_ms']:.3f}", ""] if axis else ["", "", ""]
    if axis:
      dml, jnp = (_collectives(axis["collectives"][k]) for k in ("dml", "jnp"))
      row += [
        f"{axis['dml_ms']:.3f} / {axis['jnp_ms']:.3f}",
        f"{dml} / {'the same' if jnp == dml and dml != 'none' else jnp}",
      ]
    else:
      row += ["", ""]
    rows.append(row)
  header = [
    "case",
    f"batch: dml / jnp, {gpus} (ms)",
    "1 GPU (ms)",
    "scaling",
    f"axis: dml / jnp, {gpus} (ms)",
    "axis: collectives, dml / jnp",
  ]
  return f"{gpus} ({record['date']}, jax {record['jax']}):\n\n" + _markdown(header, rows)


def _collectives(counts: dict[str, int]) -> str:
  return ", ".join(f"{kind} x{n}" for kind, n in counts.items()) or "none"


RENDERERS: dict[str, Callable[..., str]] = {"targets": targets, "cases": cases, "sharded": sharded}


def render(name: str, folder: pathlib.Path = RESULTS) -> str:
  return RENDERERS[name](folder)


def regenerate(page: str, folder: pathlib.Path = RESULTS) -> str:
  """`page` with every generated block made again from the results in `folder`."""
  return _BLOCK.sub(lambda m: m.group(1) + render(m.group("name"), folder) + m.group(4), page)


def blocks(page: str) -> list[str]:
  """The names of the generated blocks of `page`, in order."""
  return [m.group("name") for m in _BLOCK.finditer(page)]


def record(report_path: pathlib.Path, stem: str, folder: pathlib.Path = RESULTS) -> str:
  """Merges a `run.py --json` report into `folder/<stem>.json`: its rows that passed their
  checks replace the recorded ones of the same case and implementation (a sharded run's
  summaries: of the same case and family), dated, rounded as the tables print them; the copy
  rows stay as recorded."""
  report = json.loads(report_path.read_text())
  stamp = report["header"][0].split()[-1]  # the run's start, ISO 8601
  date = stamp[:10]
  path = folder / f"{stem}.json"
  old = json.loads(path.read_text()) if path.exists() else {"machine": stem}
  if "sharded" in report:
    new = [s | {"date": date} for s in report["sharded"] if s["passed"]]
    keys = {(s["case"], s["family"]) for s in new}
    kept = [s for s in old.get("sharded", []) if (s["case"], s["family"]) not in keys]
    old.update(date=date, jax=report["jax"], devices=report["devices"], sharded=kept + new)
  else:
    new = [
      _recorded_row(r, stamp)
      for r in report["rows"]
      if r["case"] != "copy" and r["check"].startswith("ok")
    ]
    keys = {(r["case"], r["implementation"]) for r in new}
    kept = [r for r in old.get("rows", []) if (r["case"], r["implementation"]) not in keys]
    old["rows"] = kept + new
    old.setdefault("runs", []).append(
      {
        "date": stamp,
        "argv": report["argv"],
        "copy_ceiling": f"{report['ceiling_gb_per_s']:.1f} GB/s"
        f" ({report['ceiling_implementation']})",
      }
    )
  path.write_text(json.dumps(old, indent=1) + "\n")
  return f"{len(new)} rows of {report_path} into {path}"


def _recorded_row(row: dict[str, Any], date: str) -> dict[str, Any]:
  times = row.get("times_ms") or [row["median_ms"]]
  rounded = lambda key, digits: None if row.get(key) is None else round(row[key], digits)
  return {
    "date": date,
    **{key: row[key] for key in ("case", "op", "dtype", "shape", "implementation")},
    "median_ms": rounded("median_ms", 3),
    "spread": round(max(times) / min(times), 2),
    "gb_per_s": rounded("gb_per_s", 1),
    "fraction_of_ceiling": rounded("fraction_of_ceiling", 2),
    "kernel_ms": rounded("kernel_ms", 3),
    "kernel_fraction_of_ceiling": rounded("kernel_fraction_of_ceiling", 2),
    "peer_over_dml": rounded("peer_over_dml", 2),
    "best_peer": row.get("best_peer"),
    "check": row["check"],
    "note": row.get("note", ""),
  }


def main(argv: list[str]) -> int:
  """Writes docs/performance.md's generated blocks; --check: exit 1 if they are stale."""
  page = PAGE.read_text()
  made = regenerate(page)
  if "--check" in argv:
    if made != page:
      print("docs/performance.md is stale: run `benchmarks/run.py --table`", file=sys.stderr)
      return 1
    return 0
  PAGE.write_text(made)
  print(f"wrote {', '.join(blocks(made))} into {PAGE.relative_to(ROOT)}")
  return 0
