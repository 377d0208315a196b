"""benchmarks/cpu_protocol.py: a tiny run as a user starts it, its tables, and its arithmetic."""

import json
import pathlib
import platform
import subprocess
import sys

import pytest

from tests.helpers import default_mode_env, load_script

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "cpu_protocol.py"
# The protocol's runs start in children in JAX's default mode; the rest is its arithmetic and
# its arguments: the x64 pass leaves the module out.
pytestmark = pytest.mark.mode_independent


def _load_protocol():
  """benchmarks/cpu_protocol.py as a module (a script, not part of a package)."""
  return load_script(SCRIPT, "dml_jax_benchmark_cpu_protocol")


def _tiny_run(out, config, *extra, **env):
  """The protocol at tiny size on JOIN along axis 1 (2 rounds, no rests), its JSON to `out`;
  `env` adds to the children's environment."""
  result = subprocess.run(
    [sys.executable, str(SCRIPT), "--size", "tiny", "--only", "join_axis1", "--config", config]
    + ["--rounds", "2", "--rest-ms", "0", "--json", str(out), *extra],
    cwd=ROOT,
    env=default_mode_env(PYTHONPATH=str(ROOT), **env),
    capture_output=True,
    text=True,
    timeout=120,
  )
  assert result.returncode == 0, result.stdout + result.stderr
  return result


@pytest.mark.slow
@pytest.mark.subprocess
def test_tiny_run_prints_both_tables_and_exits_0(tmp_path):
  out = tmp_path / "protocol.json"
  # A malloc setting of the caller's must not reach the children: the parent drops it.
  result = _tiny_run(out, "both", MALLOC_ARENA_MAX="4")
  text = result.stdout
  assert "malloc settings dropped from the children's environment: MALLOC_ARENA_MAX" in text
  header = next(line for line in text.splitlines() if line.startswith("case ") and "dml ms" in line)
  for column in ("ORT ms", "ratio", "noise", "verdict", "faults/call dml", "faults/call ORT"):
    assert column in header, (column, header)
  assert "## summary" in text
  summary = text.split("## summary", 1)[1]
  assert "ratio plain [noise]" in summary and "join_axis1" in summary
  assert "ratio setup [noise]" in summary
  assert "## setup: dml_jax.cpu.configure_allocator() -> " in text
  assert text.rstrip().endswith(
    "all checks passed (dml_jax vs NumPy, ONNX Runtime vs dml_jax, bit for bit)"
  )
  report = json.loads(out.read_text())
  assert report["passed"] and report["size"] == "tiny" and report["rounds"] == 2
  configs = report["configs"]
  assert list(configs) == ["plain", "setup"]
  for name, config in configs.items():
    (record,) = config["cases"]
    assert record["case"] == "join_axis1" and record["check"] == "ok", record
    assert set(record["sides"]) == {"dml_jax", "ort"}
    for side in record["sides"].values():
      assert side["median_ms"] > 0 and len(side["ms"]) == 2 and len(side["faults"]) == 2
    for child in config["children"]:
      assert "MALLOC_ARENA_MAX" not in child["environment"] or name == "env"
    if name == "setup" and platform.libc_ver()[0] == "glibc":
      assert config["setup"]["applied"]["M_ARENA_MAX"] == 1  # the caller's 4 did not reach it
    (row,) = report["summary"][name]
    assert row["ratio"] > 0 and row["noise"][0] <= row["noise"][1]


@pytest.mark.slow
@pytest.mark.subprocess
def test_two_processes_give_two_rows_and_a_combined_one(tmp_path):
  out = tmp_path / "protocol.json"
  result = _tiny_run(out, "plain", "--processes", "2")
  lines = result.stdout.splitlines()
  for label in ("join_axis1#1 ", "join_axis1#2 ", "join_axis1 (all 2) "):
    assert any(line.startswith(label) for line in lines), (label, result.stdout)
  report = json.loads(out.read_text())
  assert report["passed"] and report["processes"] == 2
  config = report["configs"]["plain"]
  assert [r["process"] for r in config["cases"]] == [1, 2] and len(config["children"]) == 2
  protocol = _load_protocol()
  per_process = [protocol.summarize(record)[0] for record in config["cases"]]
  (row,) = report["summary"]["plain"]
  assert row["processes"] == 2 and len(row["per_process"]) == 2
  assert row["per_process_ratio"] == [r["ratio"] for r in per_process]
  assert row["ratio"] == pytest.approx(sum(row["per_process_ratio"]) / 2)
  assert row["noise"] == [
    min(r["noise"][0] for r in per_process),
    max(r["noise"][1] for r in per_process),
  ]


def test_processes_combine_on_the_widest_noise():
  protocol = _load_protocol()

  def row(ratio, lo, hi):
    return {
      "case": "c",
      "op": "JOIN",
      "shape": "s",
      "peer": "ort",
      "dml_ms": 1.0,
      "ort_ms": ratio,
      "ratio": ratio,
      "noise": [lo, hi],
      "min_max": [lo, hi],
      "dml_faults_per_call": 0.0,
      "ort_faults_per_call": 0.0,
    }

  # Each process alone is ahead, but the second's lower quartile is below 1: level.
  combined = protocol.combine([row(1.3, 1.2, 1.4), row(1.1, 0.98, 1.2), row(1.2, 1.1, 1.3)])
  assert combined["ratio"] == 1.2 and combined["noise"] == [0.98, 1.4]
  assert combined["verdict"] == "level" and combined["per_process_ratio"] == [1.3, 1.1, 1.2]
  assert protocol.combine([row(1.3, 1.2, 1.4), row(1.1, 1.0, 1.2)])["verdict"] == "ahead"
  assert protocol.combine([row(0.8, 0.7, 0.9), row(0.9, 0.8, 0.99)])["verdict"] == "behind"
  assert protocol.combine([row(0.8, 0.7, 0.9), row(0.9, 0.8, 1.0)])["verdict"] == "level"


def test_the_ratio_its_noise_and_the_verdict():
  protocol = _load_protocol()
  record = {
    "case": "c",
    "op": "JOIN",
    "shape": "s",
    "sides": {
      "dml_jax": {"median_ms": 2.0, "ms": [2.0, 2.0, 2.0, 2.0, 2.0], "faults_per_call": 3.0},
      "ort": {"median_ms": 3.0, "ms": [2.4, 3.0, 3.0, 3.2, 4.0], "faults_per_call": 0.0},
    },
  }
  (row,) = protocol.summarize(record)
  assert row["ratio"] == 1.5 and row["verdict"] == "ahead"
  assert row["noise"] == [1.5, 1.6] and row["min_max"] == [1.2, 2.0]
  record["sides"]["ort"]["ms"] = [1.0, 1.6, 3.0, 4.0, 5.0]
  (row,) = protocol.summarize(record)
  assert row["verdict"] == "level" and row["noise"][0] < 1 <= row["noise"][1]
  record["sides"]["ort"]["ms"] = [1.0, 1.0, 1.5, 1.8, 1.9]
  record["sides"]["ort"]["median_ms"] = 1.5
  (row,) = protocol.summarize(record)
  assert row["verdict"] == "behind"


def test_the_children_get_no_malloc_settings_but_the_env_recipe(monkeypatch):
  protocol = _load_protocol()
  monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "1")
  monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2:glibc.rtld.nns=2")
  env, dropped = protocol.child_environment("plain")
  assert not any(k.startswith("MALLOC_") for k in env)
  assert env["GLIBC_TUNABLES"] == "glibc.rtld.nns=2" and env["JAX_PLATFORMS"] == "cpu"
  assert dropped[0] == "MALLOC_MMAP_THRESHOLD_" and "glibc.malloc.arena_max=2" in dropped[1]
  env, _ = protocol.child_environment("env")
  assert {k: env[k] for k in protocol.ENV_RECIPE} == protocol.ENV_RECIPE


@pytest.mark.parametrize(
  "argv",
  [
    ["--rounds", "1"],
    ["--only", "no_such_case"],
    ["--size", "large"],
    ["--config", "x"],
    ["--processes", "0"],
  ],
)
def test_bad_arguments_exit_2(argv):
  protocol = _load_protocol()
  with pytest.raises(SystemExit) as exit_info:
    protocol.main(argv)
  assert exit_info.value.code == 2
