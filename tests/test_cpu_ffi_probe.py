"""benchmarks/cpu_ffi_probe.py: a tiny run (where g++ is present; without it, the run must say so
and exit 2), and the clean exit 2 without g++ on any machine."""

import pathlib
import shutil
import subprocess
import sys

import pytest

from tests.helpers import default_mode_env, load_script

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "cpu_ffi_probe.py"
# The cases whose kernels also run with non-temporal stores.
STREAMING = ("tile_both", "element_wise_identity_nhwc_to_nchw", "split_axis0", "split_axis1")
# The probe runs in a child in JAX's default mode (it turns x64 on itself where it needs it).
pytestmark = pytest.mark.mode_independent


def probe_cases() -> tuple[str, ...]:
  return load_script(SCRIPT, "dml_jax_benchmark_cpu_ffi_probe").CASES


@pytest.mark.slow
@pytest.mark.subprocess
def test_tiny_run_checks_every_case_and_exits_0():
  result = subprocess.run(
    [sys.executable, str(SCRIPT), "--size", "tiny", "--rounds", "2", "--rest-ms", "0"],
    cwd=ROOT,
    env=default_mode_env(PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu"),
    capture_output=True,
    text=True,
    timeout=120,
  )
  if shutil.which("g++") is None:  # the probe builds its kernel with g++
    assert result.returncode == 2 and "g++ not found" in result.stderr, result.stderr
    pytest.skip("no g++ to build the probe's kernels (checked: it says so and exits 2)")
  assert result.returncode == 0, result.stdout + result.stderr
  text = result.stdout
  assert "index rules, dtypes, 64-bit indices, vmap: ok" in text
  assert "TILE, transpose and SPLIT kernels: ok" in text
  plain = ("dml_jax", "ffi 1 thr", "ffi 2 thr", "ORT")
  streaming = ("ffi 1 thr NT", "ffi 2 thr NT")
  for case in probe_cases():
    block = text.split(f"\n{case}: ", 1)[1].split("\n\n", 1)[0]
    sides = plain + (streaming if case in STREAMING else ())
    if case == "element_wise_identity_nhwc_to_nchw":
      sides += ("tiles 1 thr", "tiles 2 thr", "tiles 1 thr NT", "tiles 2 thr NT")
    rows = {}
    for line in block.splitlines()[2:]:
      side = next(s for s in sorted(sides, key=len, reverse=True) if line.strip().startswith(s))
      rows[side] = float(line.split()[len(side.split())])
    assert sorted(rows) == sorted(sides) and min(rows.values()) > 0, (case, rows)
  assert text.rstrip().endswith(
    "all checks passed (FFI kernels and ONNX Runtime vs dml_jax, bit for bit)"
  )


def test_without_gxx_it_says_so_and_exits_2(monkeypatch, capsys):
  probe = load_script(SCRIPT, "dml_jax_benchmark_cpu_ffi_probe")
  monkeypatch.setattr(probe.shutil, "which", lambda name: None)
  assert probe.main(["--size", "tiny", "--only", "join_axis1"]) == 2
  assert "g++ not found" in capsys.readouterr().err
