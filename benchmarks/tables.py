"""docs/performance.md's tables, generated from the committed results (`run.py --table`).

The results are `benchmarks/results/<machine>.json`: a run's `run.py --json` report (its
"rows", and "sharded" for a run with --devices), each row dated, and `targets.json`, the status
of each performance target. docs/performance.md holds each table between the lines
``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->``; `write` replaces what is
between them with `render(NAME)`, and tests/test_benchmark_smoke.py checks that the committed
page equals what `write` would make of it. To record a run: write its JSON into the results
folder (a new machine is a new file; a new run of a machine replaces the rows it measured),
then `PYTHONPATH=. python3 benchmarks/run.py --table`.
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
  """The sharded runs over two GPUs: each case's batch and axis families side by side."""
  record = load("h200-x2", folder)
  by_case: dict[str, dict[str, dict[str, Any]]] = {}
  for s in record["sharded"]:
    by_case.setdefault(s["case"], {})[s["family"]] = s
  rows = []
  for families in by_case.values():
    batch, axis = families["batch"], families.get("axis")
    row = [
      batch["label"],
      f"{batch['dml_ms']:.3f} / {batch['jnp_ms']:.3f}",
      f"{batch['one_device_ms']:.3f}",
      f"{batch['scaling']:.2f}",
    ]
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
    "batch: dml / jnp, 2 GPUs (ms)",
    "1 GPU (ms)",
    "scaling",
    "axis: dml / jnp, 2 GPUs (ms)",
    "axis: collectives, dml / jnp",
  ]
  return _markdown(header, rows)


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
