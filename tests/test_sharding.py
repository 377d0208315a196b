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


def test_kernels_run_per_shard_over_8_devices():
  """Every kernel, partitioned, on operands sharded over 8 CPU devices: one device's bits, jnp's
  output sharding, no collective beyond jnp's (none with a batch dimension sharded)."""
  env = dict(
    os.environ,
    XLA_FLAGS="--xla_force_host_platform_device_count=8",
    JAX_PLATFORMS="cpu",
    PYTHONPATH=str(ROOT),
  )
  result = subprocess.run(
    [sys.executable, str(ROOT / "tests/subprocess/sharded_kernels.py")],
    env=env,
    capture_output=True,
    text=True,
    timeout=300,
  )
  assert result.returncode == 0, result.stdout + result.stderr
  lines = result.stdout.splitlines()
  passed = [line for line in lines if line.startswith("PASS  ")]
  skipped = [line for line in lines if line.startswith("SKIP  ")]
  assert lines[-1] == f"{len(passed)} passed, 0 failed, {len(skipped)} skipped"
  # Only the Mosaic GPU kernels (no interpreter on the CPU) may be skipped, and the native CPU
  # kernels where they do not build here.
  for line in skipped:
    assert "mosaic" in line or "(cpu)" in line, line
  for kernel in ("gather_elements rows", "gather_elements strips", "gather_nd rows", "one_hot",
                 "scatter_elements rows (triton)", "scatter_nd pull", "slice rows",
                 "space_to_depth", "tile copies", "tile rows", "vmap of"):  # fmt: skip
    assert any(line.startswith(f"PASS  {kernel}") for line in passed), kernel
