"""`python -m dml_jax`, the conformance report, as a user runs it, and its options."""

import dataclasses
import json
import subprocess
import sys

import jax
import numpy as np
import pytest

from dml_jax._src import conformance
from dml_jax._src import device as device_lib
from dml_jax._src.device import Runner
from dml_jax._src.fixtures import load_fixtures
from tests.helpers import default_mode_env

DEFAULT = device_lib.describe(device_lib.default_device())  # "cpu:0", or the GPU or TPU


@pytest.mark.slow
@pytest.mark.mode_independent  # the command as a user runs it, in JAX's default mode
@pytest.mark.subprocess
def test_report_passes_every_fixture_on_the_default_device():
  result = subprocess.run(
    [sys.executable, "-m", "dml_jax"],
    env=default_mode_env(),
    capture_output=True,
    text=True,
    timeout=300,
  )
  assert result.returncode == 0, result.stdout + result.stderr
  lines = result.stdout.splitlines()
  assert lines[-1] == f"{len(load_fixtures())} passed, 0 failed"
  for fixture in load_fixtures():
    row = next(line for line in lines if f" {fixture.id} " in line)
    assert row.startswith(fixture.op) and " PASS " in row
    assert (DEFAULT in row) != fixture.shape_only


def test_report_fails_on_a_wrong_output(monkeypatch, capsys):
  fixture = load_fixtures("JOIN")[0]
  corrupted = np.array(fixture.output.data)
  corrupted.flat[0] += 1
  broken = dataclasses.replace(
    fixture, outputs=(dataclasses.replace(fixture.output, data=corrupted),)
  )
  outcome = conformance.check_fixture(broken, Runner(), "cpu")
  assert not outcome.passed and outcome.detail == "1 elements differ"
  monkeypatch.setattr(conformance, "load_fixtures", lambda: (fixture, broken))
  assert conformance.main([]) == 1
  assert capsys.readouterr().out.splitlines()[-1] == "1 passed, 1 failed"


def test_examples_a_lower_level_rejects_are_reported_apart_not_failed(capsys):
  # At FL 2_1 DirectML refuses the 1-D and later-level examples: the report says so, row by
  # row and in the counts, and exits 0 as long as nothing is wrong.
  assert conformance.main(["--feature-level", "2_1"]) == 0
  out = capsys.readouterr().out.splitlines()
  rejected = [line for line in out if " NOT AT FL  rejected, as DirectML would at FL 2_1: " in line]
  assert any("join/dxdispatch-1d-three-ranges" in line for line in rejected)
  assert any("Hint: 1 dimension is supported from FL 3_1" in line for line in rejected)
  assert not any(" FAIL " in line for line in out)
  passed = sum(" PASS " in line for line in out)
  assert out[-1] == (
    f"{passed} passed, 0 failed, {len(rejected)} not at FL 2_1 (valid from a later level)"
  )
  assert passed + len(rejected) == sum(1 for f in load_fixtures())


def test_an_example_no_level_accepts_is_a_failure(monkeypatch, capsys):
  fixture = load_fixtures("GATHER_ELEMENTS")[0]
  broken = dataclasses.replace(fixture, params={**fixture.params, "axis": 7})
  monkeypatch.setattr(conformance, "load_fixtures", lambda: (broken,))
  assert conformance.main([]) == 1
  out = capsys.readouterr().out.splitlines()
  assert "FAIL  rejected: Axis: must be in [0, DimensionCount)" in "\n".join(out)
  assert out[-1] == "0 passed, 1 failed"


def _rows(out):
  """The result rows of a text report: (operator, example, device, PASS/FAIL)."""
  ids = {f.id for f in load_fixtures()}
  rows = []
  for line in out.splitlines():
    result = "PASS" if " PASS " in line else "FAIL" if " FAIL " in line else None
    words = line.split(f" {result} ")[0].split()
    if result and len(words) >= 3 and words[1] in ids:
      rows.append((words[0], words[1], " ".join(words[2:]), result))  # "gpu:0 (NVIDIA ...)"
  return rows


def test_device_all_runs_every_example_on_every_platform(capsys):
  assert conformance.main(["--device", "all"]) == 0
  out = capsys.readouterr().out
  devices = [device_lib.describe(d) for d in conformance._devices_for("all")]
  platforms = [d.split(":")[0] for d in devices]
  assert "cpu" in platforms and len(platforms) == len(set(platforms))  # one device per platform
  rows = _rows(out)
  with_data = [f for f in load_fixtures() if not f.shape_only]
  shape_only = [f for f in load_fixtures() if f.shape_only]
  assert sorted((op, i, d) for op, i, d, _ in rows) == sorted(
    [(f.op, f.id, d) for f in with_data for d in devices] + [(f.op, f.id, "-") for f in shape_only]
  )
  assert all(result == "PASS" for *_, result in rows)
  assert out.splitlines()[-1] == f"{len(rows)} passed, 0 failed"


def test_summary_table_counts_passed_and_failed_per_operator_and_device(capsys):
  assert conformance.main(["--device", "cpu"]) == 0
  lines = capsys.readouterr().out.splitlines()
  start = lines.index("summary (passed/failed, +n: not at this feature level):")
  header, *body = lines[start + 1 : -1]
  assert header.split() == ["operator", "cpu:0", "sizes", "only"]
  table = {line.split()[0]: line.split()[1:] for line in body}
  # Per operator: its examples with data passed on cpu:0, its shape-only ones under "sizes
  # only" (a blank cell where it has none); counted from the fixtures, not pinned.
  counts = {}
  for fixture in load_fixtures():
    with_data, shape_only = counts.setdefault(fixture.op, (0, 0))
    counts[fixture.op] = (with_data + (not fixture.shape_only), shape_only + fixture.shape_only)
  assert table == {op: [f"{n}/0" for n in cells if n] for op, cells in counts.items()}


def test_op_selects_operators_case_insensitively(capsys):
  assert conformance.main(["--op", "join", "--op", "GATHER_ND1"]) == 0
  out = capsys.readouterr().out
  assert {op for op, *_ in _rows(out)} == {"JOIN", "GATHER_ND1"}
  count = len(load_fixtures("JOIN")) + len(load_fixtures("GATHER_ND1"))
  assert out.splitlines()[-1] == f"{count} passed, 0 failed"


def test_unknown_op_or_level_or_device_is_a_usage_error(capsys):
  with pytest.raises(SystemExit) as exit_info:
    conformance.main(["--op", "NOT_AN_OP", "--op", "join", "--op", "ALSO_NOT"])
  assert exit_info.value.code == 2
  assert "2 unknown DirectML operators: 'NOT_AN_OP', 'ALSO_NOT'" in capsys.readouterr().err
  with pytest.raises(SystemExit):
    conformance.main(["--feature-level", "9_9"])
  assert "unknown DML_FEATURE_LEVEL '9_9'" in capsys.readouterr().err
  with pytest.raises(SystemExit):
    conformance.main(["--device", "cuda"])
  assert "invalid choice: 'cuda'" in capsys.readouterr().err
  if not device_lib.available_devices("tpu"):
    with pytest.raises(SystemExit):
      conformance.main(["--device", "tpu"])
    assert "no tpu device available" in capsys.readouterr().err


def test_json_is_machine_readable(capsys):
  assert conformance.main(["--json", "--op", "GATHER_ND", "--feature-level", "4_1"]) == 0
  captured = capsys.readouterr()
  document = json.loads(captured.out)
  fixtures = load_fixtures("GATHER_ND")
  assert document["format"] == "dml_jax-conformance/1"
  assert document["feature_level"] == "4_1" and document["devices"] == [DEFAULT]
  assert document["passed"] == len(fixtures) and document["failed"] == 0
  assert [r["id"] for r in document["results"]] == [f.id for f in fixtures]
  assert document["results"][0] == {
    "id": "gather_nd/example-1-1d-remapping",
    "op": "GATHER_ND",
    "device": DEFAULT,
    "passed": True,
    "status": "passed",
    "detail": "bit-exact",
  }
  shape_only = sum(f.shape_only for f in fixtures)
  assert shape_only  # GATHER_ND's output-sizes example: the "-" device
  assert document["summary"] == {
    "GATHER_ND": {
      DEFAULT: {"passed": len(fixtures) - shape_only, "failed": 0, "not_at_level": 0},
      "-": {"passed": shape_only, "failed": 0, "not_at_level": 0},
    }
  }
  assert captured.err.splitlines()[-1] == f"{len(fixtures)} passed, 0 failed"


def test_json_reports_examples_the_level_rejects_apart(capsys):
  assert conformance.main(["--json", "--feature-level", "2_1", "--op", "GATHER_ELEMENTS"]) == 0
  document = json.loads(capsys.readouterr().out)
  (result,) = document["results"]
  assert not result["passed"] and result["status"] == "not_at_level"
  assert result["detail"].startswith(
    "rejected, as DirectML would at FL 2_1: InputTensor.DimensionCount:"
    " DML_OPERATOR_GATHER_ELEMENTS supports 4 dimensions"
  )
  assert document["summary"]["GATHER_ELEMENTS"][DEFAULT] == {
    "passed": 0,
    "failed": 0,
    "not_at_level": 1,
  }
  assert (document["passed"], document["failed"], document["not_at_level"]) == (0, 0, 1)


def test_an_error_while_running_is_a_failed_row_not_a_crash(monkeypatch, capsys):
  def broken_run(self, desc, *arrays, device=None):
    raise RuntimeError("device lost")

  monkeypatch.setattr(Runner, "run", broken_run)
  assert conformance.main(["--op", "JOIN"]) == 1
  out = capsys.readouterr().out
  assert "FAIL  error: RuntimeError: device lost" in out
  assert out.splitlines()[-1] == f"0 passed, {len(load_fixtures('JOIN'))} failed"


def test_version_flag_prints_the_package_and_jax_versions(capsys) -> None:
  import jaxlib

  import dml_jax

  with pytest.raises(SystemExit) as exit_info:
    conformance.main(["--version"])
  assert exit_info.value.code == 0
  assert capsys.readouterr().out == (
    f"dml_jax {dml_jax.__version__} (jax {jax.__version__}, jaxlib {jaxlib.__version__})\n"
  )
