"""benchmarks/run.py: every case once on tiny shapes, the --forms and --sweep studies, the
JSON's shape, and the failure paths."""

import json
import pathlib
import types

import numpy as np
import pytest

from benchmarks import run as bench_run
from tests.helpers import run_on_cpu_devices

# The harness is a tool run in JAX's default mode; its cases do not test the operators' 64-bit
# paths (the operators' tests do), so its tests run once, with x64 off (mode_independent).
pytestmark = pytest.mark.usefixtures("no_x64")

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
  """benchmarks/run.py: the command line, with the harness's names."""
  return bench_run


def test_tiny_run_times_and_checks_every_case(tmp_path, capsys):
  """Every registered case once, through the harness as the command line runs it (peers off:
  a few seconds for every case; the sharded run below starts the script itself)."""
  out = tmp_path / "bench.json"
  assert bench_run.main(["--size", "tiny", "--no-peers", "--repeats", "5", "--json", str(out)]) == 0
  lines = capsys.readouterr().out.splitlines()
  assert lines[-1].startswith("all ") and " checks passed" in lines[-1], lines[-1]
  # Every case the script runs at this size (CASES among them: a new case changes no list here).
  cases = bench_run.cases_of("tiny")
  assert set(CASES) <= set(cases)
  for case in ("copy", *cases):
    rows = [line.split() for line in lines if line.startswith(f"{case} ")]
    impl = "jax.jit(jnp.copy)" if case == "copy" else "dml_jax"
    assert any(impl in " ".join(row) and "ok" in row for row in rows), (case, rows)
  report = json.loads(out.read_text())
  assert report["passed"] and report["size"] == "tiny" and report["mode"] == "operators"
  assert [c["case"] for c in report["cases"]] == cases and report["study"] == []
  assert set(report["cases"][0]) == {"case", "op", "sizes", "description", "bytes_moved", "notes"}
  dml_rows = {r["case"]: r for r in report["rows"] if r["implementation"] == "dml_jax"}
  assert set(dml_rows) == set(cases)
  assert {r["kind"] for r in report["rows"]} <= {"dml", "jax", "numpy"}  # the copy's and dml_jax
  for row in report["rows"]:
    assert row["passed"] and row["check"].startswith("ok"), row
    assert row["median_ms"] > 0 and row["gb_per_s"] > 0 and len(row["times_ms"]) == 5
    assert set(row) >= {"case", "op", "implementation", "median_ms", "gb_per_s", "check"}


# Cases whose jnp formulation needs no data to move when the batch is sharded, and must move
# some when the operator's own axis is (a concatenation along a split axis).
SHARDED_CASES = ("join_axis0",)


@pytest.mark.mode_independent  # a child in JAX's default mode
@pytest.mark.subprocess
def test_tiny_sharded_run_on_2_cpu_devices(tmp_path):
  """The script as a user starts it, over 2 virtual CPU devices."""
  out = tmp_path / "sharded.json"
  argv = ["--size", "tiny", "--devices", "2", "--only", ",".join(SHARDED_CASES), "--repeats", "5"]
  result = run_on_cpu_devices(SCRIPT, *argv, "--json", out, devices=2, timeout=120)
  assert result.returncode == 0, result.stdout + result.stderr
  lines = result.stdout.splitlines()
  assert lines[-1].startswith("all ") and " checks passed" in lines[-1], lines[-1]
  report = json.loads(out.read_text())
  assert report["passed"] and report["complete"] and report["devices"] == 2
  bench = _load_benchmark()
  families = [(name, f) for name in SHARDED_CASES for f in bench.CASES[name].shardings()]
  assert ("join_axis0", "axis") in families
  assert [(s["case"], s["family"]) for s in report["sharded"]] == families
  for s in report["sharded"]:
    assert (
      s["passed"] and not s["note"] and s["checks"] == {"one": "ok", "dml": "ok", "jnp": "ok"}
    ), s
    assert min(s["dml_ms"], s["jnp_ms"], s["one_device_ms"]) > 0
    assert s["scaling"] == pytest.approx(s["dml_ms"] / (s["one_device_ms"] / 2))
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
  from benchmarks.cases import gathers

  bench = _load_benchmark()
  real = gathers.reference

  def corrupted(*args, **kwargs):
    out = np.array(real.gather_elements(*args, **kwargs))
    out.flat[0] += 1
    return out

  monkeypatch.setattr(
    gathers,
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


def test_kernels_off_traces_the_fallback_and_only_within_the_block():
  import jax

  from dml_jax._src.kernels import forms

  def program():  # a fresh jit each time: the switch is read when a program is traced
    return jax.jit(lambda x: forms.on_platforms({"cpu": lambda x: x + 1}, lambda x: x - 1, x))

  assert float(program()(np.float32(5))) == 6.0
  with forms._without_kernels("cpu", "cuda"):
    assert float(program()(np.float32(5))) == 4.0
  assert forms._kernels_off == frozenset()
  assert float(program()(np.float32(5))) == 6.0


def test_forms_run_times_each_form_and_names_the_kernels(tmp_path, capsys):
  out = tmp_path / "forms.json"
  argv = ["--size", "tiny", "--forms", "--no-peers", "--only", "join_axis0", "--repeats", "5"]
  assert bench_run.main([*argv, "--json", str(out)]) == 0
  report = json.loads(out.read_text())
  assert report["mode"] == "forms" and report["passed"]
  # Tiny shapes take no kernel: one form, and no lax row to time.
  assert report["study"] == [
    {"case": "join_axis0", "platform": "cpu", "kernels": [], "one_form": True}
  ]
  dml_rows = [r for r in report["rows"] if r["kind"] == "dml"]
  assert [r["implementation"] for r in dml_rows] == ["dml_jax"]
  assert "kernels on cpu: none; one form here" in capsys.readouterr().out


def test_sweep_times_the_variants_whose_program_differs(tmp_path):
  from dml_jax._src.kernels import native_cpu, tile_rows_cpu

  out = tmp_path / "sweep.json"
  argv = ["--size", "tiny", "--only", "tile_both", "--repeats", "5", "--no-peers"]
  sweep = ["--sweep", "tile_rows_cpu:min_output_bytes=0,1048576"]
  assert bench_run.main([*argv, *sweep, "--json", str(out)]) == 0
  report = json.loads(out.read_text())
  assert tile_rows_cpu.DEFAULT == tile_rows_cpu.TileRowsConfig()  # put back
  variants = [(s["variant"], s["same_as_default"]) for s in report["study"]]
  timed = [r["implementation"] for r in report["rows"] if r["kind"] == "dml"]
  # The tiny tile's rows are too short for the kernel whatever the output threshold says.
  assert variants == [
    ("dml_jax DEFAULT", False),
    ("dml_jax min_output_bytes=0", True),
    ("dml_jax min_output_bytes=1048576", True),
  ], native_cpu.status()
  assert timed == ["dml_jax DEFAULT"]


@pytest.mark.parametrize(
  "sweep",
  ["no_such_kernel", "forms", "tile_rows_cpu:no_field=1", "tile_rows_cpu:min_output_bytes"],
)
def test_a_sweep_of_nothing_sweepable_exits_2(sweep, capsys):
  with pytest.raises(SystemExit) as exit_info:
    bench_run.main(["--size", "tiny", "--sweep", sweep])
  assert exit_info.value.code == 2
  assert "--sweep" in capsys.readouterr().err


def test_the_performance_page_is_what_the_committed_results_generate():
  from benchmarks import tables

  page = tables.PAGE.read_text()
  assert tables.blocks(page) == list(tables.RENDERERS)
  assert tables.regenerate(page) == page, (
    "stale: run `PYTHONPATH=. python benchmarks/run.py --table`"
  )
  assert bench_run.main(["--table", "--check"]) == 0


def test_a_changed_result_changes_the_page(tmp_path):
  import shutil

  from benchmarks import tables

  folder = tmp_path / "results"
  shutil.copytree(tables.RESULTS, folder)
  record = json.loads((folder / "h200-x2.json").read_text())
  record["sharded"][0]["dml_ms"] = 9.999
  (folder / "h200-x2.json").write_text(json.dumps(record))
  page = tables.PAGE.read_text()
  made = tables.regenerate(page, folder)
  assert made != page and f"| {record['sharded'][0]['label']} | 9.999 / " in made


def test_every_committed_result_is_dated_and_names_a_registered_case():
  from benchmarks import tables

  for path in sorted(tables.RESULTS.glob("*.json")):
    record = json.loads(path.read_text())
    for row in record.get("rows", []) + record.get("sharded", []):
      assert row["case"] == "copy" or row["case"] in bench_run.CASES, (path.name, row["case"])
      assert row.get("date") or record.get("date"), (path.name, row)
      if "op" in row and row["case"] != "copy":
        assert row["op"] == bench_run.CASES[row["case"]].op, (path.name, row)


def test_recording_a_report_replaces_its_rows_and_keeps_the_rest(tmp_path):
  from benchmarks import tables

  def row(case, impl, ms, check="ok"):
    described = {"case": case, "op": "TILE", "dtype": "f32", "shape": "(2,2)"}
    return described | {
      "implementation": impl,
      "median_ms": ms,
      "times_ms": [ms, 2 * ms],
      "check": check,
    }

  (tmp_path / "m.json").write_text(
    json.dumps({"machine": "m", "rows": [row("a", "dml_jax", 1.0), row("b", "dml_jax", 2.0)]})
  )
  report = tmp_path / "report.json"
  header = ["# dml_jax benchmark  2026-11-27T17:12:52+00:00"]
  rows = [row("copy", "jnp.copy", 0.5), row("a", "dml_jax", 0.25), row("c", "dml_jax", 3.0, "FAIL")]
  report.write_text(
    json.dumps(
      {"header": header, "argv": [], "ceiling_gb_per_s": 1.0, "ceiling_implementation": "x"}
      | {"rows": rows}
    )
  )
  tables.record(report, "m", tmp_path)
  recorded = json.loads((tmp_path / "m.json").read_text())
  by_case = {r["case"]: r for r in recorded["rows"]}
  assert sorted(by_case) == ["a", "b"]  # the copy and the failed row are not recorded
  assert by_case["a"]["median_ms"] == 0.25 and by_case["a"]["spread"] == 2.0
  assert by_case["a"]["date"].startswith("2026-11-27") and by_case["b"]["median_ms"] == 2.0
