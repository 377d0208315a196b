"""The DirectML cross-check pack: every operator covered, every model of the pack run as
`python -m dml_jax run` runs it, the round trip (write, run with the command line's own code,
compare), tampered and missing outputs reported, the candidate errata readable as fixtures, and
the comparison's paths kept inside their folders.

Each model compiles its XLA program (about 0.1 s on two cores), so the whole pack runs one
operator a test, which the test command's two workers share; the command line's round trip runs
a few models of different kinds.
"""

from __future__ import annotations

import functools
import io
import json
import math
import os
from fractions import Fraction

import jax
import numpy as np
import pytest

from dml_jax._src import reference, registry
from dml_jax._src.conformance import descriptor_for
from dml_jax._src.crosscheck import cases, cli, compare, pack
from dml_jax._src.feature_level import FeatureLevel
from dml_jax._src.fixtures import _parse_fixture
from dml_jax._src.model import cli as run_cli
from dml_jax._src.model import files
from dml_jax._src.model.program import load_model

pytestmark = pytest.mark.mode_independent  # the pack and its runs pin jax_enable_x64 on

ROUND_TRIP = (
  "join.doc-1",  # an array of inputs
  "split.doc-1",  # an array of outputs
  "top_k.ties-in-pairs",  # two outputs, one of indices
  "gather.indicestensor-int64-plus-2-32",  # a 64-bit index past 32 bits
  "scatter.updatestensor-zero-stride",
  "cast.float16-specials",  # NaN payloads, -0.0, a subnormal
  "fill_value_constant.value-float16-nan-payload",  # no input; a scalar union's bits
  "element_wise_identity.inputtensor-padded-pitch",
  "padding1.rank-8",
  "nonzero_coordinates.doc-1",  # an output count beside the coordinates
  "diagonal_matrix1.doc-1",  # an optional input left out
  "one_hot.indicestensor-int32-minus-1",  # a negative index
  "argmax.outputtensor-int64",  # a 64-bit index output
  "reverse_subsequences.doc-1",
  "slice1.doc-1",
  "resample1.nearest-ties-clamped-edges",  # ties to the smaller index, both edges clamped
)


@pytest.fixture(scope="module")
def every_case():
  return cases.all_cases()


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory, every_case):
  """A pack of the `ROUND_TRIP` cases, and its models run by `python -m dml_jax run`'s
  code into a results folder."""
  folder = tmp_path_factory.mktemp("pack")
  chosen = [c for c in every_case if c.name in ROUND_TRIP]
  assert sorted(c.name for c in chosen) == sorted(ROUND_TRIP)
  pack.write_pack(folder, chosen)
  results = tmp_path_factory.mktemp("results")
  mode = jax.config.jax_enable_x64
  with jax.enable_x64(True):  # as the command line turns it on for a 64-bit model
    for model in sorted((folder / pack.MODELS).glob("*.json")):
      out, err = io.BytesIO(), io.StringIO()
      status = run_cli.main([str(model), "--output-path", str(results)], out, err)
      assert status == 0, err.getvalue()
      assert out.getvalue().count(b"written to") >= 1
  assert jax.config.jax_enable_x64 == mode  # the process's mode is left as it was
  return folder, results


def test_every_operator_has_its_doc_examples_and_edge_cases(every_case):
  for name, desc_type in registry.model_file_operators().items():
    found = [c for c in every_case if c.op == name]
    docs = [c for c in found if c.kind == "doc"]
    assert len(docs) >= 1, name
    assert len(found) - len(docs) >= cases.MIN_EDGE_CASES, name
    assert {c.source for c in docs} <= {f.id for f in cases.load_fixtures(desc_type.OPERATOR)}
  assert len({c.name for c in every_case}) == len(every_case)


def test_an_operator_without_fixtures_fails_loudly(monkeypatch):
  monkeypatch.setattr(cases, "load_fixtures", lambda op: ())
  with pytest.raises(cases.MissingFixturesError, match="DML_OPERATOR_TILE has no doc example"):
    cases.operator_cases("TILE")


def test_the_edge_cases_hold_what_they_name(every_case):
  by_name = {c.name: c for c in every_case}
  gather = by_name["gather.indicestensor-int64-plus-2-32"]
  assert gather.desc.indices_tensor.data_type.name == "INT64"
  assert int(gather.buffers["IndicesTensor"][0]) >= 2**32
  half = by_name["cast.float16-specials"].buffers["InputTensor"].view(np.uint16)
  assert list(half[:3]) == list(cases.FLOAT16_SPECIALS[:3])
  pitch = by_name["element_wise_identity.inputtensor-padded-pitch"].desc.input_tensor
  assert pitch.strides is not None and pitch.strides[-2] > pitch.sizes[-1]
  assert 0 in by_name["scatter.updatestensor-zero-stride"].desc.updates_tensor.strides
  assert by_name["padding1.rank-8"].desc.input_tensor.dimension_count == 8
  for op in ("element_wise_identity", "join"):  # a strided example, an array of inputs
    base = by_name[f"{op}.doc-1"]
    label = next(iter(base.buffers))
    source = cases.logical_inputs(base)[label]
    pitched = by_name[f"{op}.{cases._slug(label)}-padded-pitch"]
    np.testing.assert_array_equal(cases.logical_inputs(pitched)[label], source)
    broadcast = cases.logical_inputs(by_name[f"{op}.{cases._slug(label)}-zero-stride"])[label]
    axis = next(d for d, n in enumerate(source.shape) if n > 1)
    first = np.take(source, [0], axis=axis)
    np.testing.assert_array_equal(broadcast, np.broadcast_to(first, source.shape))
  signed = by_name["gather.indicestensor-int32-minus-1"]
  assert signed.feature_level >= FeatureLevel.FL_3_0  # signed indices came with 3_0


def _resampling(case):
  """(exact source coordinates per dimension, the rule that rounds them, the oracle's
  output) of a resampling case, from its desc's fields."""
  desc = case.desc
  (data,) = cases.logical_inputs(case).values()
  rank = data.ndim
  if case.op == "UPSAMPLE_2D":
    size = desc.scale_size
    scales = (1,) * (rank - 2) + (size.height, size.width)
    ins, outs = (0.5,) * rank, (-0.5,) * rank
    oracle = reference.upsample_2d(data, scale_size={"Width": size.width, "Height": size.height})
  else:
    scales = desc.scales
    ins, outs = (0.5,) * rank, (-0.5,) * rank  # RESAMPLE: pixel centres, no fields
    fields = {"scales": scales, "output_sizes": desc.output_tensor.sizes}
    if case.op != "RESAMPLE":
      ins, outs = desc.input_pixel_offsets, desc.output_pixel_offsets
      fields.update(input_pixel_offsets=ins, output_pixel_offsets=outs)
    if case.op == "RESAMPLE2":
      fields.update(rounding_direction=desc.rounding_direction.name)
    resample = getattr(reference, case.op.lower())
    oracle = resample(data, interpolation_mode="NEAREST_NEIGHBOR", **fields)
  coordinates = [
    [(o - Fraction(out)) / Fraction(scale) - Fraction(offset) for o in range(m)]
    for m, scale, offset, out in zip(oracle.shape, scales, ins, outs, strict=True)
  ]
  rule = desc.rounding_direction.name if case.op == "RESAMPLE2" else "SMALLER"
  return data, coordinates, rule, oracle


def _nearest(data, coordinates, tie):
  """`data` sampled at the nearest elements of exact `coordinates` (clamped); `tie`
  chooses at exactly .5: "floor" or "ceil"; "DECREASING" and "INCREASING" round every
  coordinate down or up."""
  indices = []
  for xs, n in zip(coordinates, data.shape, strict=True):
    chosen = []
    for x in xs:
      if tie == "DECREASING" or (x - math.floor(x) == Fraction(1, 2) and tie == "floor"):
        i = math.floor(x)
      elif tie == "INCREASING" or x - math.floor(x) == Fraction(1, 2):
        i = math.ceil(x)
      else:
        i = math.floor(x + Fraction(1, 2))
      chosen.append(min(max(i, 0), n - 1))
    indices.append(chosen)
  return data[np.ix_(*indices)]


def test_the_nearest_ties_fall_on_halves_and_the_oracle_breaks_them_as_documented(every_case):
  found = [c for c in every_case if ".nearest-" in c.name]
  assert {c.op for c in found} == {"RESAMPLE", "RESAMPLE1", "RESAMPLE2", "UPSAMPLE_2D"}
  directions = {c.desc.rounding_direction.name for c in found if c.op == "RESAMPLE2"}
  assert directions == {"DECREASING", "INCREASING"}
  for case in found:
    data, coordinates, rule, oracle = _resampling(case)
    assert len(np.unique(data)) == data.size, case.name  # every element tells where it came from
    on_tie = [np.array([x - math.floor(x) == Fraction(1, 2) for x in xs]) for xs in coordinates]
    tied = functools.reduce(np.logical_or, np.ix_(*on_tie))  # on a tie in some dimension
    policy = {"SMALLER": "floor"}.get(rule, rule)  # ties to the smaller index (docs/policies.md)
    np.testing.assert_array_equal(oracle, _nearest(data, coordinates, policy), case.name)
    if ".nearest-ties-" not in case.name:
      assert not tied.any(), case.name  # whole factors: no tie anywhere
      continue
    assert tied.sum() * 3 >= tied.size, case.name  # many ties, not one
    if rule == "SMALLER":  # breaking the ties upwards instead is visible
      assert not np.array_equal(oracle, _nearest(data, coordinates, "ceil")), case.name
    if "clamped" in case.name:
      assert any(xs[0] < 0 for xs in coordinates), case.name
      past = [xs[-1] > n - 1 for xs, n in zip(coordinates, data.shape, strict=True)]
      assert any(past), case.name


def test_every_model_of_the_pack_loads_and_writes_files_named_after_it(tmp_path, every_case):
  written = pack.write_pack(tmp_path, every_case, run=False)
  manifest = json.loads((tmp_path / pack.MANIFEST).read_text())
  assert [e["name"] for e in manifest["models"]] == [c.name for c in written]
  for entry in manifest["models"]:
    model = load_model(tmp_path / entry["model"])
    assert not model.warnings
    targets = [c.target_path for c in model.commands if type(c).__name__ == "WriteFile"]
    assert targets == list(entry["outputs"].values())
    assert all(t.startswith(entry["name"] + ".") for t in targets)
    assert type(model.commands[-1]).__name__ == "WriteFile"
  readme = (tmp_path / pack.README).read_text()
  assert "dxdispatch.exe" in readme and "--output_path results" in readme


@pytest.mark.slow
@pytest.mark.parametrize("op", sorted(registry.model_file_operators()))
def test_every_model_of_the_pack_runs_and_writes_every_output(op, tmp_path):
  # The pack's writer runs each model for its expected outputs (`pack.run_model`: the
  # command line's loading and execution): every model runs, and every output the manifest
  # lists is written; read back as a returned folder, they compare equal.
  written = pack.write_pack(tmp_path, pack.select_cases([op]))
  assert written and {c.op for c in written} == {op}
  manifest = json.loads((tmp_path / pack.MANIFEST).read_text())
  listed = {name for entry in manifest["models"] for name in entry["outputs"].values()}
  assert {path.name for path in (tmp_path / pack.EXPECTED).iterdir()} == listed
  found = compare.compare_pack(tmp_path, tmp_path / pack.EXPECTED)
  assert len(found) == len(listed) and {r.status for r in found} == {"equal"}


def test_the_round_trip_reports_every_output_equal(round_trip):
  folder, results = round_trip
  found = compare.compare_pack(folder, results)
  assert len(found) == len(list(results.iterdir())) >= len(ROUND_TRIP)
  assert {r.status for r in found} == {"equal"}
  out = io.StringIO()
  assert cli.compare_main([str(folder), str(results)], out) == 0
  assert out.getvalue().splitlines()[-1] == f"all: {len(found)} equal, 0 different, 0 missing"


def test_a_tampered_output_is_different_and_a_deleted_one_missing(round_trip, tmp_path):
  folder, results = round_trip
  returned = tmp_path / "returned"
  returned.mkdir()
  for path in results.iterdir():
    (returned / path.name).write_bytes(path.read_bytes())
  name = "cast.float16-specials.OutputTensor.npy"
  content = bytearray((returned / name).read_bytes())
  content[-2:] = np.uint16(0x7E00).tobytes()  # the last element: a quiet NaN
  (returned / name).write_bytes(bytes(content))
  (returned / "join.doc-1.OutputTensor.npy").unlink()
  padded = returned / "split.doc-1.OutputTensors1.npy"  # bytes after the tensor: not compared
  padded.write_bytes(padded.read_bytes() + b"\xff" * 4)
  found = {r.file: r for r in compare.compare_pack(folder, returned)}
  assert found[padded.name].status == "equal"
  assert "bytes after them differ" in found[padded.name].details[0]
  assert found[name].status == "different"
  assert found[name].details[0].endswith("elements differ")
  assert "DirectML nan (0x7e00)" in found[name].details[1]
  assert found["join.doc-1.OutputTensor.npy"].status == "missing"
  out = io.StringIO()
  errata = tmp_path / "errata.json"
  assert cli.compare_main([str(folder), str(returned), "--errata", str(errata)], out) == 1
  assert "CAST: 0 equal, 1 different, 0 missing" in out.getvalue()
  assert "JOIN: 0 equal, 0 different, 1 missing" in out.getvalue()
  document = json.loads(errata.read_text())
  assert document["format"] == "dml_jax-fixtures/1"
  (raw,) = document["fixtures"]
  assert raw["provenance"]["source"] == pack.PROVENANCE_PLACEHOLDER
  fixture = _parse_fixture(raw)
  model = load_model(folder / pack.MODELS / "cast.float16-specials.json")
  assert descriptor_for(fixture) == model.dispatchables["op"].desc
  assert np.isnan(fixture.output.data.ravel()[-1])
  inputs = fixture.arrays()["input"]
  assert inputs.view(np.uint16).ravel()[0] == 0x8000  # -0.0 kept


def test_the_comparison_keeps_to_its_folders(round_trip, tmp_path):
  folder, results = round_trip
  tampered = tmp_path / "pack"
  tampered.mkdir()
  for item in ("expected",):
    os.symlink(folder / item, tampered / item)
  manifest = json.loads((folder / pack.MANIFEST).read_text())
  manifest["models"][0]["outputs"] = {"OutputTensor": "../../outside.npy"}
  (tampered / pack.MANIFEST).write_text(json.dumps(manifest))
  with pytest.raises(files.UnsafePathError, match="climbs out"):
    compare.compare_pack(tampered, results)
  returned = tmp_path / "returned"
  returned.mkdir()
  secret = tmp_path / "secret.npy"
  secret.write_bytes(b"x")
  first = next(
    iter(json.loads((folder / pack.MANIFEST).read_text())["models"][0]["outputs"].values())
  )
  os.symlink(secret, returned / first)
  with pytest.raises(files.UnsafePathError, match="outside"):
    compare.compare_pack(folder, returned)
  err = io.StringIO()
  assert cli.compare_main([str(tmp_path), str(returned)], err) == 1  # not a pack
  manifest["models"][0] = {"outputs": {}}
  (tampered / pack.MANIFEST).write_text(json.dumps(manifest))
  with pytest.raises(compare.PackError, match="without its name"):
    compare.compare_pack(tampered, results)


def test_the_command_line_refuses_an_unknown_operator(tmp_path, capsys):
  with pytest.raises(SystemExit) as exit_info:
    cli.pack_main([str(tmp_path), "--op", "NOT_AN_OP"])
  assert exit_info.value.code == 2
  assert "NOT_AN_OP" in capsys.readouterr().err
