"""The notebooks run headless: every cell executes, their asserts pass, the pictures are PNGs.

scripts/run_notebooks.py executes each notebook under notebooks/ in a fresh `python3`
kernel (nbclient; ipykernel installs that kernel) from notebooks/, importing this checkout
of dml_jax. A cell tagged ``raises-exception`` is one that shows an error as a user meets
it: it must raise DmlValidationError; no other cell may raise, and no Python warning may be
printed. The notebooks import public names only.

The notebooks are stored with their outputs. To refresh them after a change:
``python scripts/run_notebooks.py --write``.

The kernels run in JAX's default mode whatever this process's, so the x64 pass of the test
command leaves this module out (`mode_independent`).
"""

from __future__ import annotations

import base64
import importlib.util
import pathlib
import re

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
TOUR, SEMANTICS, DEVICES = "01_tour.ipynb", "02_semantics.ipynb", "03_devices.ipynb"
MODELS, SELECTION = "04_models.ipynb", "05_selection.ipynb"
pytestmark = pytest.mark.mode_independent
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PYTHON_WARNING = re.compile(r"\b\w*Warning: ")

_spec = importlib.util.spec_from_file_location(
  "run_notebooks", ROOT / "scripts" / "run_notebooks.py"
)
run_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_notebooks)
execute = run_notebooks.execute
EXPECTED_ERROR = run_notebooks.EXPECTED_ERROR


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


def test_the_notebooks_are_there():
  names = {TOUR, SEMANTICS, DEVICES, MODELS, SELECTION}
  assert names <= {p.name for p in NOTEBOOKS.glob("*.ipynb")}


@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_stored_notebook_has_its_outputs_and_stays_small(name):
  path = NOTEBOOKS / name
  check(nbformat.read(path, as_version=4))
  assert path.stat().st_size < 600_000


def _tour_shows_descriptors_explanations_and_an_error(notebook: nbformat.NotebookNode) -> None:
  html = _html(notebook)
  operators = (
    *("GATHER", "GATHER_ELEMENTS", "GATHER_ND", "GATHER_ND1", "REVERSE_SUBSEQUENCES", "JOIN"),
    *("SCATTER_ELEMENTS", "SCATTER_ND", "ONE_HOT", "ELEMENT_WISE_IDENTITY"),
  )
  for operator in operators:
    assert f"DML_OPERATOR_{operator} (DML_{operator}_OPERATOR_DESC)" in html
  assert "DML_BUFFER_TENSOR_DESC" in html and "is invalid at DML_FEATURE_LEVEL_2_1" in html
  derivation = "Logical output = X[:-1] ++ I[B + t:] = {1,2} ++ {6,7} = {1,2,6,7}"
  assert derivation in _text(notebook) and derivation in html
  (raised,) = [cell for cell in _code_cells(notebook) if _expects_error(cell)]
  (error,) = _errors(raised)
  assert "is invalid at DML_FEATURE_LEVEL_2_1" in error.evalue
  assert "InputTensor.DimensionCount" in error.evalue


def _semantics_notebook_draws_pictures(notebook: nbformat.NotebookNode) -> None:
  text = _text(notebook)
  # MAX_UNPOOLING: channel 1 starts at index 6, the later value of index 8 wins, 12 writes nothing
  assert "indices: [1, 8, 4, 8, 11, 12] -> output: [0, 1, 0, 0, 3, 0, 0, 0, 4, 0, 0, 5]" in text
  assert "which a later update" in text  # dml.checked's report of the repeated index
  assert "UNFOLD output sizes: (1, 4, 6)" in text
  # RESAMPLE's nearest ties (the cell asserts the picks), MAX_UNPOOLING's output, UNFOLD's
  # columns: the last three of them.
  assert len(_pngs(notebook)) >= 14


def _devices_notebook_reports_every_device_and_times_the_compile(
  notebook: nbformat.NotebookNode,
) -> None:
  text = _text(notebook)
  assert "(compiled)" in text and "cpu:0" in text
  assert re.search(r"^\d+ passed, 0 failed$", text, re.M)
  assert len(_pngs(notebook)) >= 1


def _models_notebook_runs_a_model_file_and_draws_its_buffers(
  notebook: nbformat.NotebookNode,
) -> None:
  text = _text(notebook)
  expected = (ROOT / "dml_jax" / "examples" / "chain.expected").read_text()
  assert expected in text  # what DxDispatch prints for the model
  assert '"dispatchables"' in text  # the file is shown
  assert "public functions in the lowered module: 1" in text
  assert len(_pngs(notebook)) >= 2


def _selection_notebook_draws_ties_and_padding_rows(notebook: nbformat.NotebookNode) -> None:
  text = _text(notebook)
  # TOP_K keeps -0.0 and 0.0 in their positions, where lax.top_k puts 0.0 first
  assert "dml.top_k   positions: [2, 5, 3, 0, 1, 4]" in text
  assert "lax.top_k   positions: [2, 5, 3, 1, 0, 4]" in text
  assert "count: [[4]]  coordinates: (12, 2) uint32" in text
  assert len(_pngs(notebook)) >= 3  # ARGMAX/ARGMIN, TOP_K1, NONZERO_COORDINATES


_SHOWS = {
  TOUR: _tour_shows_descriptors_explanations_and_an_error,
  SEMANTICS: _semantics_notebook_draws_pictures,
  DEVICES: _devices_notebook_reports_every_device_and_times_the_compile,
  MODELS: _models_notebook_runs_a_model_file_and_draws_its_buffers,
  SELECTION: _selection_notebook_draws_ties_and_padding_rows,
}
"""What each notebook must show beyond `check`; one test executes each notebook once."""


@pytest.mark.slow(seconds=15)
@pytest.mark.subprocess
@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_notebook_runs_without_errors_and_shows_what_it_should(name):
  notebook = execute(NOTEBOOKS / name)
  check(notebook)
  _SHOWS.get(name, lambda notebook: None)(notebook)


def test_notebooks_use_public_names_only():
  for path in sorted(NOTEBOOKS.glob("*.ipynb")):
    for cell in _code_cells(nbformat.read(path, as_version=4)):
      assert "_src" not in cell.source, (path.name, cell.source)


@pytest.mark.subprocess
def test_the_refresh_script_checks_without_writing(tmp_path, monkeypatch):
  # A notebook whose one cell raises: reported, exit status 1, the file untouched.
  notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")])
  path = tmp_path / "broken.ipynb"
  nbformat.write(notebook, path)
  before = path.read_bytes()
  monkeypatch.setattr(run_notebooks, "NOTEBOOKS", tmp_path)
  monkeypatch.setattr(run_notebooks, "ROOT", tmp_path)
  assert run_notebooks.main(["broken.ipynb", "--write"]) == 1
  assert path.read_bytes() == before
