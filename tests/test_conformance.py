"""`python -m dml_jax`, the conformance report, as a user runs it."""

import dataclasses
import subprocess
import sys

import numpy as np

from dml_jax._src import conformance
from dml_jax._src.device import Runner
from dml_jax._src.fixtures import load_fixtures


def test_report_passes_every_fixture_on_the_default_device():
  result = subprocess.run(
    [sys.executable, "-m", "dml_jax"], capture_output=True, text=True, timeout=300
  )
  assert result.returncode == 0, result.stdout + result.stderr
  lines = result.stdout.splitlines()
  assert lines[-1] == f"{len(load_fixtures())} passed, 0 failed"
  for fixture in load_fixtures():
    row = next(line for line in lines if f" {fixture.id} " in line)
    assert row.startswith(fixture.op) and " PASS " in row
    assert ("cpu:0" in row) != fixture.shape_only


def test_report_fails_on_a_wrong_output(monkeypatch, capsys):
  fixture = load_fixtures("JOIN")[0]
  corrupted = np.array(fixture.output.data)
  corrupted.flat[0] += 1
  broken = dataclasses.replace(fixture, output=dataclasses.replace(fixture.output, data=corrupted))
  outcome = conformance.check_fixture(broken, Runner(), "cpu")
  assert not outcome.passed and outcome.detail == "1 elements differ"
  monkeypatch.setattr(conformance, "load_fixtures", lambda: (fixture, broken))
  assert conformance.main([]) == 1
  assert capsys.readouterr().out.splitlines()[-1] == "1 passed, 1 failed"


def test_report_fails_when_the_level_rejects_an_example(capsys):
  assert conformance.main(["--feature-level", "2_1"]) == 1
  out = capsys.readouterr().out
  assert "FAIL  rejected: InputTensor.DimensionCount" in out
