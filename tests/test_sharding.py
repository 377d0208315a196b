"""Every operator on arrays sharded over 8 (virtual CPU) devices gives the reference's bits."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_operators_on_arrays_sharded_over_8_devices():
  env = dict(
    os.environ,
    XLA_FLAGS="--xla_force_host_platform_device_count=8",
    JAX_PLATFORMS="cpu",
    PYTHONPATH=str(ROOT),
  )
  result = subprocess.run(
    [sys.executable, str(ROOT / "tests/subprocess/sharded_ops.py")],
    env=env,
    capture_output=True,
    text=True,
    timeout=300,
  )
  assert result.returncode == 0, result.stdout + result.stderr
  # Every case passed, none failed, each operator among them (the cases are counted from
  # the script's output, not pinned: a new case or operator changes no number here).
  lines = result.stdout.splitlines()
  passed = [line for line in lines if line.startswith("PASS  ")]
  assert lines[-1] == f"{len(passed)} passed, 0 failed"
  assert all(line.endswith(" over 8 cpu devices") for line in passed)
  for op in ("gather_elements", "gather_nd", "gather_nd1", "reverse_subsequences", "join"):
    assert any(line.startswith(f"PASS  {op}") for line in passed), op
