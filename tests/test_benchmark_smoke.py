"""benchmarks/run.py: a tiny run as a user starts it, and its failure paths."""

import json
import pathlib
import subprocess
import sys
import types

import numpy as np
import pytest

from tests.helpers import default_mode_env, load_script, run_on_cpu_devices

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "run.py"

CASES = (
  "join_axis0",
  "join_axis1",
  "gather_elements_axis1",
  "gather_elements_axis0",
  "gather_elements_axis1_f16",
  "gather_elements_axis1_i8",
  "gather_nd",
  "gather_nd1",
  "gather_rows",
  "gather_axis1",
  "reverse_subsequences",
  "reverse_subsequences_equal",
  "reverse_subsequences_per_batch",
  "reverse_subsequences_i8",
)


def _load_benchmark():
  """benchmarks/run.py as a module (it is a script, not part of a package)."""
  return load_script(SCRIPT, "dml_jax_benchmark_run")


@pytest.mark.mode_independent  # a child in JAX's default mode
@pytest.mark.subprocess
@pytest.mark.slow
def test_tiny_run_times_and_checks_every_case(tmp_path):
  out = tmp_path / "bench.json"
  env = default_mode_env(PYTHONPATH=str(ROOT))
  result = subprocess.run(
    [sys.executable, str(SCRIPT), "--size", "tiny", "--json", str(out)],
    cwd=ROOT,
    env=env,
    capture_output=True,
    text=True,
    timeout=120,
  )
  assert result.returncode == 0, result.stdout + result.stderr
  lines = result.stdout.splitlines()
  assert lines[-1].startswith("all ") and " checks passed" in lines[-1], lines[-1]
  # Every case the script runs at this size (CASES among them: a new case changes no list here).
  cases = _load_benchmark().cases_of("tiny")
  assert set(CASES) <= set(cases)
  for case in ("copy", *cases):
    rows = [line.split() for line in lines if line.startswith(f"{case} ")]
    impl = "jax.jit(jnp.copy)" if case == "copy" else "dml_jax"
    assert any(impl in " ".join(row) and "ok" in row for row in rows), (case, rows)
  report = json.loads(out.read_text())
  assert report["passed"] and report["size"] == "tiny"
  assert [c["case"] for c in report["cases"]] == cases
  dml_rows = {r["case"]: r for r in report["rows"] if r["implementation"] == "dml_jax"}
  assert set(dml_rows) == set(cases)
  for row in report["rows"]:
    assert row["passed"] and row["check"].startswith("ok"), row
    assert row["median_ms"] > 0 and row["gb_per_s"] > 0 and len(row["times_ms"]) == 7


# Cases whose jnp formulation needs no data to move when the batch is sharded, and must move
# some when the operator's own axis is (a concatenation along a split axis).
SHARDED_CASES = ("join_axis0", "one_hot_last")


@pytest.mark.mode_independent  # a child in JAX's default mode
@pytest.mark.subprocess
@pytest.mark.slow
def test_tiny_sharded_run_on_8_cpu_devices(tmp_path):
  out = tmp_path / "sharded.json"
  argv = ["--size", "tiny", "--devices", "8", "--only", ",".join(SHARDED_CASES), "--repeats", "5"]
  result = run_on_cpu_devices(SCRIPT, *argv, "--json", out, timeout=120)
  assert result.returncode == 0, result.stdout + result.stderr
  lines = result.stdout.splitlines()
  assert lines[-1].startswith("all ") and " checks passed" in lines[-1], lines[-1]
  report = json.loads(out.read_text())
  assert report["passed"] and report["complete"] and report["devices"] == 8
  bench = _load_benchmark()
  families = [(name, f) for name in SHARDED_CASES for f in bench.CASES[name].shardings()]
  assert ("join_axis0", "axis") in families
  assert [(s["case"], s["family"]) for s in report["sharded"]] == families
  for s in report["sharded"]:
    assert (
      s["passed"] and not s["note"] and s["checks"] == {"one": "ok", "dml": "ok", "jnp": "ok"}
    ), s
    assert min(s["dml_ms"], s["jnp_ms"], s["one_device_ms"]) > 0
    assert s["scaling"] == pytest.approx(s["dml_ms"] / (s["one_device_ms"] / 8))
    assert any(line.split()[:2] == [s["case"], s["family"]] for line in lines), s
    if s["family"] == "batch":
      assert s["collectives"]["jnp"] == {} and s["out_sharding"]["jnp"] != "replicated", s
    else:
      assert sum(s["collectives"]["jnp"].values()) > 0, s
  # Every sharded run is in the rows too: dml_jax on one device, then dml_jax and jnp per family.
  assert len(report["rows"]) == len(SHARDED_CASES) + 2 * len(families)


def test_a_sharded_output_that_differs_from_one_device_fails():
  import dataclasses

  import jax
  import jax.numpy as jnp

  bench = _load_benchmark()
  registered = bench.CASES["join_axis0"]
  case = registered.build("tiny", np.random.default_rng(0))
  wrong = lambda *xs: jnp.concatenate(xs, axis=0).at[0, 0].add(1)
  case = dataclasses.replace(case, jnp_peer=("wrong concatenate", wrong))
  mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), (bench.MESH_AXIS,))
  env = bench.make_env(False)
  rows, summaries = bench.run_sharded_case(
    registered, case, env, bench.PRESETS["tiny"], 5, mesh, True
  )
  assert [s.family for s in summaries] == list(registered.shardings())
  for summary in summaries:
    assert summary.dml.check == "ok" and summary.collectives["dml"] == {}
    assert summary.jnp.check.startswith("FAIL: differs from one device"), summary.jnp.check
    assert not bench.sharded_json(summary)["passed"]
  assert rows[0].check == "ok" and sum(r.failed for r in rows) == len(summaries)


def test_collectives_are_counted_by_kind_once_each():
  bench = _load_benchmark()
  hlo = """
  %all-gather.1 = f32[8,16]{1,0} all-gather(f32[1,16]{1,0} %p0), dimensions={0}
  %ags = (f32[1,16]{1,0}, f32[8,16]{1,0}) all-gather-start(f32[1,16]{1,0} %p1), dimensions={0}
  %agd = f32[8,16]{1,0} all-gather-done(%ags)
  %cp = f32[8,16]{1,0} collective-permute(f32[8,16]{1,0} %all-gather.1), source_target_pairs={{0,1}}
  ROOT %t = (f32[8,16]{1,0}, f32[8,16]{1,0}) tuple(%agd, %cp)
  """
  assert bench.collectives(hlo) == {"all-gather": 2, "collective-permute": 1}
  assert bench.collectives_text({}) == "none"


def test_more_devices_than_jax_sees_exit_2(capsys):
  bench = _load_benchmark()
  assert bench.main(["--size", "tiny", "--devices", "4096", "--only", "join_axis0"]) == 2
  assert "--xla_force_host_platform_device_count=4096" in capsys.readouterr().err


def test_a_wrong_dml_output_fails_the_run(monkeypatch, capsys):
  bench = _load_benchmark()
  real = bench.reference

  def corrupted(*args, **kwargs):
    out = np.array(real.gather_elements(*args, **kwargs))
    out.flat[0] += 1
    return out

  monkeypatch.setattr(
    bench,
    "reference",
    types.SimpleNamespace(
      gather_elements=corrupted,
      gather_nd=real.gather_nd,
      join=real.join,
      reverse_subsequences=real.reverse_subsequences,
    ),
  )
  # The oracle disagrees on gather_elements only; join still passes.
  assert (
    bench.main(
      [
        "--size",
        "tiny",
        "--no-peers",
        "--only",
        "join_axis0,gather_elements_axis1",
        "--repeats",
        "5",
      ]
    )
    == 1
  )
  out = capsys.readouterr().out
  assert "CHECK FAILED: gather_elements_axis1 / dml_jax: FAIL: reference subset" in out
  assert "CHECK FAILED: join_axis0" not in out


# The DirectML operator each case times.
OPERATORS = {
  "join_axis0": "JOIN",
  "join_axis1": "JOIN",
  "gather_elements_axis1": "GATHER_ELEMENTS",
  "gather_elements_axis0": "GATHER_ELEMENTS",
  "gather_elements_axis1_f16": "GATHER_ELEMENTS",
  "gather_elements_axis1_i8": "GATHER_ELEMENTS",
  "gather_nd": "GATHER_ND",
  "gather_nd1": "GATHER_ND1",
  "gather_rows": "GATHER",
  "gather_axis1": "GATHER",
  "reverse_subsequences": "REVERSE_SUBSEQUENCES",
  "reverse_subsequences_equal": "REVERSE_SUBSEQUENCES",
  "reverse_subsequences_per_batch": "REVERSE_SUBSEQUENCES",
  "reverse_subsequences_i8": "REVERSE_SUBSEQUENCES",
}


def test_every_preset_selects_every_case_from_the_registry():
  bench = _load_benchmark()
  # The cases named here, in registration order, time the operators named here; a new case
  # (a new operator's) changes no list here.
  assert {name: bench.CASES[name].op for name in OPERATORS} == OPERATORS
  assert [name for name in bench.CASES if name in CASES] == list(CASES)
  for preset in bench.PRESETS:
    assert bench.cases_of(preset) == list(bench.CASES), preset


def test_every_registered_operator_has_a_case():
  from dml_jax._src import registry

  bench = _load_benchmark()
  assert set(registry.operators()) <= {registered.op for registered in bench.CASES.values()}


def test_only_selects_cases_by_name_pattern_or_operator():
  bench = _load_benchmark()
  assert bench.parse_args(["--only", "GATHER_ND"])[1] == ["gather_nd"]
  assert bench.parse_args(["--only", "GATHER"])[1] == ["gather_rows", "gather_axis1"]
  assert bench.parse_args(["--only", "GATHER_ND1,join_axis1"])[1] == ["join_axis1", "gather_nd1"]
  assert bench.parse_args(["--only", "*_i8"])[1] == [
    "gather_elements_axis1_i8",
    "reverse_subsequences_i8",
  ]


@pytest.mark.parametrize(
  "argv",
  [["--repeats", "4"], ["--only", "no_such_case"], ["--size", "huge"], ["--devices", "0"]],
)
def test_bad_arguments_exit_2(argv):
  bench = _load_benchmark()
  with pytest.raises(SystemExit) as exit_info:
    bench.main(argv)
  assert exit_info.value.code == 2
