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
  assert result.stdout.splitlines()[-1] == "22 passed, 0 failed"
  assert "over 8 cpu devices" in result.stdout
