"""Every operator on arrays sharded over 8 (virtual CPU) devices: the reference's bits, jnp's
output sharding, and no collective beyond jnp's program (tests/subprocess/sharded_ops.py)."""

import pathlib
import sys

import pytest

from dml_jax._src import registry
from tests.helpers import run_on_cpu_devices

ROOT = pathlib.Path(__file__).resolve().parent.parent


# The scripts run in a child in JAX's default mode (x64 off), once: each takes about 35 s.
@pytest.mark.mode_independent
@pytest.mark.subprocess
@pytest.mark.slow(seconds=80)
def test_operators_on_arrays_sharded_over_8_devices():
  result = run_on_cpu_devices(ROOT / "tests/subprocess/sharded_ops.py")
  assert result.returncode == 0, result.stdout + result.stderr
  # Every case passed, none failed, each registered operator among them (the cases are
  # counted from the script's output, not pinned: a new case changes no number here).
  lines = result.stdout.splitlines()
  passed = [line for line in lines if line.startswith("PASS  ")]
  assert lines[-1] == f"{len(passed)} passed, 0 failed"
  assert all(" over 8 cpu devices (collectives: " in line for line in passed)
  for operator in registry.operators():
    assert any(line.startswith(f"PASS  {operator}: ") for line in passed), operator


def test_collectives_are_counted_by_kind():
  # The script's parser of compiled programs: opcodes (synchronous or started), never names.
  sys.path.insert(0, str(ROOT / "tests/subprocess"))
  try:
    from sharded_ops import collectives
  finally:
    sys.path.remove(str(ROOT / "tests/subprocess"))
  hlo = """
  %all-gather.1 = f32[8,4]{1,0} all-gather(f32[1,4]{1,0} %p), dimensions={0}
  %ar = (f32[2]{0}) all-reduce-start(f32[2]{0} %x), to_apply=%add
  %done = f32[2]{0} all-reduce-done((f32[2]{0}) %ar)
  %cp = f32[2]{0} collective-permute(f32[2]{0} %y), source_target_pairs={{0,1}}
  %fusion = f32[2]{0} fusion(f32[2]{0} %all-gather.1), kind=kLoop
  """
  assert collectives(hlo) == {"all-gather": 1, "all-reduce": 1, "collective-permute": 1}


@pytest.mark.mode_independent
@pytest.mark.subprocess
@pytest.mark.slow(seconds=35)
def test_kernels_run_per_shard_over_8_devices():
  """Every kernel, partitioned, on operands sharded over 8 CPU devices: one device's bits, jnp's
  output sharding, no collective beyond jnp's (none with a batch dimension sharded)."""
  result = run_on_cpu_devices(ROOT / "tests/subprocess/sharded_kernels.py")
  assert result.returncode == 0, result.stdout + result.stderr
  lines = result.stdout.splitlines()
  passed = [line for line in lines if line.startswith("PASS  ")]
  skipped = [line for line in lines if line.startswith("SKIP  ")]
  assert lines[-1] == f"{len(passed)} passed, 0 failed, {len(skipped)} skipped"
  # Only the Mosaic GPU kernels (no interpreter on the CPU) may be skipped, and the native CPU
  # kernels where they do not build here.
  for line in skipped:
    assert "mosaic" in line or "(cpu)" in line, line
  for kernel in ("arg_min_max tiles", "gather_elements rows", "gather_elements strips", "gather_nd rows", "one_hot",
                 "scatter_elements rows (triton)", "scatter_nd pull", "slice rows", "cumulative lanes",
                 "space_to_depth", "tile copies", "tile rows", "vmap of"):  # fmt: skip
    assert any(line.startswith(f"PASS  {kernel}") for line in passed), kernel
