"""The CPU kernels' probes (benchmarks/cpu_transpose.py, cpu_stores.py, cpu_gather_rows.py): a
tiny run times and checks every form, or says why the native code does not run here and exits
2."""

import pathlib
import subprocess
import sys

import pytest

from dml_jax._src.kernels import native_cpu, transpose_cpu
from tests.helpers import default_mode_env

ROOT = pathlib.Path(__file__).resolve().parents[1]
# Each probe runs in a child in JAX's default mode: the x64 pass leaves the module out.
pytestmark = [pytest.mark.mode_independent, pytest.mark.subprocess]


def _probe(script: str, *args: str) -> subprocess.CompletedProcess:
  """benchmarks/`script` run with `args`, in a plain process, one round, on the CPU."""
  return subprocess.run(
    [sys.executable, str(ROOT / "benchmarks" / script), "--plain", "--rounds", "1", *args],
    cwd=ROOT,
    env=default_mode_env(PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu"),
    capture_output=True,
    text=True,
    timeout=120,
  )


def _last_line(text: str) -> str:
  """The probe's last word on stderr: why its native code does not run here."""
  return text.strip().splitlines()[-1] if text.strip() else "(no message)"


def test_tiny_run_times_every_form_of_every_shape():
  shapes = ["2,16,8", "3,40,24"]
  result = _probe("cpu_transpose.py", "--shapes", *shapes)
  if not (native_cpu.status().available and transpose_cpu.has_avx2()):
    assert result.returncode == 2 and "does not run here" in result.stderr, result.stderr
    pytest.skip(f"exits 2, as it must here: {_last_line(result.stderr)}")
  assert result.returncode == 0, result.stdout + result.stderr
  rows = [
    line.split()
    for line in result.stdout.splitlines()
    if not line.startswith(("#", " " * 11 + "shape"))
  ]
  assert [(row[0], row[1]) for row in rows] == [
    (shape, form) for shape in shapes for form in ("native", "xla", "ort")
  ]
  assert all(float(row[2]) > 0 for row in rows)


def test_stores_probe_times_both_ways_and_onnx_runtime():
  """benchmarks/cpu_stores.py: one round of TILE, both ways to store and ONNX Runtime."""
  result = _probe("cpu_stores.py", "--cases", "tile")
  if not native_cpu.status().available:
    assert result.returncode == 2 and "do not run here" in result.stderr, result.stderr
    pytest.skip(f"exits 2, as it must here: {_last_line(result.stderr)}")
  assert result.returncode == 0, result.stdout + result.stderr
  rows = [line.split() for line in result.stdout.splitlines()[2:]]
  assert [row[:2] for row in rows] == [["tile", "streaming"], ["tile", "in_cache"], ["tile", "ort"]]


def test_row_gather_probe_times_every_form():
  """benchmarks/cpu_gather_rows.py: one round of a small case through the kernel, its lax
  path, XLA's take and ONNX Runtime."""
  result = _probe("cpu_gather_rows.py", "--cases", "64,32,40")
  if not native_cpu.status().available:
    assert result.returncode == 2 and "do not run here" in result.stderr, result.stderr
    pytest.skip(f"exits 2, as it must here: {_last_line(result.stderr)}")
  assert result.returncode == 0, result.stdout + result.stderr
  rows = [line.split() for line in result.stdout.splitlines()[2:]]
  assert [row[:2] for row in rows] == [["64,32,40", f] for f in ("dml", "lax", "take", "ort")]
  assert all(float(row[2]) > 0 for row in rows)
