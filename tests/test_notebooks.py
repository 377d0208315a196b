"""The notebooks run headless: every cell executes, their asserts pass, the pictures are PNGs.

Each notebook under notebooks/ is executed in a fresh `python3` kernel (nbclient;
ipykernel installs that kernel) with notebooks/ as the working directory and the
repository root on PYTHONPATH, so it imports this checkout of dml_jax. A cell tagged
``raises-exception`` is one that shows an error as a user meets it: it must raise
DmlValidationError; no other cell may raise, and no Python warning may be printed.

The notebooks are stored with their outputs. To refresh them after a change:
``python tests/test_notebooks.py`` (executes each and writes it back in place).
"""

from __future__ import annotations

import base64
import os
import pathlib
import re
import sys

import nbclient
import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
TOUR, SEMANTICS, DEVICES = "01_tour.ipynb", "02_semantics.ipynb", "03_devices.ipynb"
EXPECTED_ERROR = "raises-exception"  # the tag nbclient honours: the cell may raise
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PYTHON_WARNING = re.compile(r"\b\w*Warning: ")


def execute(path: pathlib.Path, timeout: int = 300) -> nbformat.NotebookNode:
  """Runs a notebook in a fresh python3 kernel from notebooks/; returns it with outputs."""
  notebook = nbformat.read(path, as_version=4)
  client = nbclient.NotebookClient(
    notebook,
    timeout=timeout,
    kernel_name="python3",
    record_timing=False,
    resources={"metadata": {"path": str(NOTEBOOKS)}},
  )
  environment = dict(os.environ)
  environment["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(ROOT), environment.get("PYTHONPATH")])
  )
  client.execute(env=environment)
  return notebook


def _code_cells(notebook):
  return [cell for cell in notebook.cells if cell.cell_type == "code"]


def _errors(cell):
  return [out for out in cell.get("outputs", ()) if out.output_type == "error"]


def _expects_error(cell):
  return EXPECTED_ERROR in cell.metadata.get("tags", ())


def _pngs(notebook):
  return [
    base64.b64decode(out.data["image/png"])
    for cell in _code_cells(notebook)
    for out in cell.get("outputs", ())
    if "image/png" in out.get("data", {})
  ]


def _html(notebook):
  return "".join(
    out.data["text/html"]
    for cell in _code_cells(notebook)
    for out in cell.get("outputs", ())
    if "text/html" in out.get("data", {})
  )


def _text(notebook):
  """Everything printed, and the text form of every result."""
  return "".join(
    out.get("text", "") + out.get("data", {}).get("text/plain", "")
    for cell in _code_cells(notebook)
    for out in cell.get("outputs", ())
  )


def _stderr(notebook):
  return "".join(
    out.text
    for cell in _code_cells(notebook)
    for out in cell.get("outputs", ())
    if out.output_type == "stream" and out.name == "stderr"
  )


def check(notebook: nbformat.NotebookNode) -> None:
  """What every notebook, stored or just executed, must satisfy."""
  cells = _code_cells(notebook)
  assert cells and all(cell.execution_count is not None for cell in cells), "not executed"
  for cell in cells:
    errors = _errors(cell)
    if _expects_error(cell):
      assert [e.ename for e in errors] == ["DmlValidationError"], cell.source
    else:
      assert not errors, f"{cell.source}\n{errors[0].ename}: {errors[0].evalue}"
  assert any(re.search(r"^\s*assert ", cell.source, re.M) for cell in cells)
  assert not PYTHON_WARNING.search(_stderr(notebook)), _stderr(notebook)
  for png in _pngs(notebook):
    assert png.startswith(PNG_SIGNATURE) and len(png) < 120_000


def test_the_three_notebooks_are_there():
  assert {TOUR, SEMANTICS, DEVICES} <= {p.name for p in NOTEBOOKS.glob("*.ipynb")}


@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_stored_notebook_has_its_outputs_and_stays_small(name):
  path = NOTEBOOKS / name
  check(nbformat.read(path, as_version=4))
  assert path.stat().st_size < 600_000


@pytest.fixture(scope="module")
def executed():
  """Every notebook, executed once for the tests of this module."""
  return {p.name: execute(p) for p in sorted(NOTEBOOKS.glob("*.ipynb"))}


@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_notebook_runs_without_errors_and_its_asserts_pass(executed, name):
  check(executed[name])


def test_tour_shows_descriptors_explanations_and_an_error(executed):
  notebook = executed[TOUR]
  html = _html(notebook)
  for operator in ("GATHER_ELEMENTS", "GATHER_ND", "GATHER_ND1", "REVERSE_SUBSEQUENCES", "JOIN"):
    assert f"DML_OPERATOR_{operator} (DML_{operator}_OPERATOR_DESC)" in html
  assert "DML_BUFFER_TENSOR_DESC" in html and "is invalid at DML_FEATURE_LEVEL_2_1" in html
  derivation = "Logical output = X[:-1] ++ I[B + t:] = {1,2} ++ {6,7} = {1,2,6,7}"
  assert derivation in _text(notebook) and derivation in html
  (raised,) = [cell for cell in _code_cells(notebook) if _expects_error(cell)]
  (error,) = _errors(raised)
  assert "is invalid at DML_FEATURE_LEVEL_2_1" in error.evalue
  assert "InputTensor.DimensionCount" in error.evalue


def test_semantics_notebook_draws_pictures(executed):
  assert len(_pngs(executed[SEMANTICS])) >= 4


def test_devices_notebook_reports_every_device_and_times_the_compile(executed):
  text = _text(executed[DEVICES])
  assert "(compiled)" in text and "cpu:0" in text
  assert re.search(r"^\d+ passed, 0 failed$", text, re.M)
  assert len(_pngs(executed[DEVICES])) >= 1


if __name__ == "__main__":  # python tests/test_notebooks.py [NAME.ipynb ...]: refresh outputs
  names = sys.argv[1:] or sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
  for name in names:
    path = NOTEBOOKS / name
    notebook = execute(path)
    check(notebook)
    nbformat.write(notebook, path)
    print(f"{path.relative_to(ROOT)}: executed and stored ({path.stat().st_size} bytes)")
