#!/usr/bin/env python3
"""Runs the notebooks under notebooks/ headless, and on request stores their new outputs.

Usage::

    python scripts/run_notebooks.py [--write] [NAME.ipynb ...]

Each notebook runs in a fresh ``python3`` kernel with notebooks/ as the working
directory and the repository root on PYTHONPATH, so it imports this checkout of
dml_jax. Without ``--write`` nothing is written: the exit status is 1 if a cell
raised that is not tagged ``raises-exception`` (a cell that shows an error as a
user meets it). With ``--write`` each notebook that ran cleanly is stored back
with its new outputs. Needs the ``notebooks`` extra (nbclient, nbformat,
ipykernel, matplotlib); pytest is not needed.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys

import nbclient
import nbformat

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
EXPECTED_ERROR = "raises-exception"  # the tag nbclient honours: the cell may raise


def execute(path: pathlib.Path, timeout: int = 300) -> nbformat.NotebookNode:
  """Runs a notebook in a fresh python3 kernel from notebooks/, in JAX's default mode (x64 off,
  as a reader opens it, whatever this process's JAX_ENABLE_X64); returns it with outputs."""
  notebook = nbformat.read(path, as_version=4)
  client = nbclient.NotebookClient(
    notebook,
    timeout=timeout,
    kernel_name="python3",
    record_timing=False,
    resources={"metadata": {"path": str(NOTEBOOKS)}},
  )
  environment = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
  environment["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(ROOT), environment.get("PYTHONPATH")])
  )
  client.execute(env=environment)
  return notebook


def unexpected_errors(notebook: nbformat.NotebookNode) -> list[str]:
  """`ename: evalue` of every error raised by a cell not tagged raises-exception."""
  return [
    f"{out.ename}: {out.evalue}"
    for cell in notebook.cells
    if cell.cell_type == "code" and EXPECTED_ERROR not in cell.metadata.get("tags", ())
    for out in cell.get("outputs", ())
    if out.output_type == "error"
  ]


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("names", nargs="*", metavar="NAME.ipynb", help="default: every notebook")
  parser.add_argument("--write", action="store_true", help="store the new outputs in place")
  args = parser.parse_args(argv)
  names = args.names or sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
  failed = 0
  for name in names:
    path = NOTEBOOKS / name
    try:
      notebook = execute(path)
    except nbclient.exceptions.CellExecutionError as error:
      failed += 1
      print(f"{path.relative_to(ROOT)}: a cell failed\n{error}")
      continue
    errors = unexpected_errors(notebook)
    if errors:
      failed += 1
      print(f"{path.relative_to(ROOT)}: {'; '.join(errors)}")
      continue
    if args.write:
      nbformat.write(notebook, path)
      print(f"{path.relative_to(ROOT)}: ran and stored ({path.stat().st_size} bytes)")
    else:
      print(f"{path.relative_to(ROOT)}: ran cleanly (not stored; --write stores the outputs)")
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
