"""benchmarks/cpu_ffi_probe.py: a tiny run (where g++ is present; without it, the run must say so
and exit 2), and the clean exit 2 without g++ on any machine."""

import os
import pathlib
import shutil
import subprocess
import sys

from tests.helpers import load_script

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "cpu_ffi_probe.py"


def test_tiny_run_checks_every_case_and_exits_0():
  result = subprocess.run(
    [sys.executable, str(SCRIPT), "--size", "tiny", "--rounds", "2", "--rest-ms", "0"],
    cwd=ROOT,
    env=dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu"),
    capture_output=True,
    text=True,
    timeout=120,
  )
  if shutil.which("g++") is None:  # the probe builds its kernel with g++
    assert result.returncode == 2 and "g++ not found" in result.stderr, result.stderr
    return
  assert result.returncode == 0, result.stdout + result.stderr
  text = result.stdout
  assert "index rules, dtypes, 64-bit indices, vmap: ok" in text
  for case in ("gather_nd", "gather_rows", "join_axis0", "join_axis1", "gather_nd_cached"):
    block = text.split(f"\n{case}: ", 1)[1].split("\n\n", 1)[0]
    for side in ("dml_jax", "ffi 1 thread", "ffi 2 threads", "ORT"):
      (row,) = [line.split() for line in block.splitlines() if line.strip().startswith(side)]
      assert float(row[len(side.split())]) > 0, (case, row)
  assert text.rstrip().endswith(
    "all checks passed (FFI kernels and ONNX Runtime vs dml_jax, bit for bit)"
  )


def test_without_gxx_it_says_so_and_exits_2(monkeypatch, capsys):
  probe = load_script(SCRIPT, "dml_jax_benchmark_cpu_ffi_probe")
  monkeypatch.setattr(probe.shutil, "which", lambda name: None)
  assert probe.main(["--size", "tiny", "--only", "join_axis1"]) == 2
  assert "g++ not found" in capsys.readouterr().err
