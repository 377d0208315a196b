"""Tests of the NumPy reference oracle and of the DirectML example fixtures.

Three layers of evidence that ``dml_jax._src.reference`` is right:

1. It reproduces every documented DirectML example (the fixtures).
2. Hand-written cases pin the rules of the spec that the examples do not cover
   (negative and out-of-range indices, 64-bit index values, clamped sequence
   lengths, batch dims, right-aligned output sizes, dtype preservation).
3. On random small cases it agrees with plain vectorised NumPy formulations
   (``np.take_along_axis``, advanced indexing, ``np.flip``, ``np.concatenate``):
   independent oracles of the oracle.

This file holds layer 1, the fixture file and its loader, and the rules every operator
shares (index normalization, dtype preservation); each operator's pinned cases (2) and
cross-checks (3) are in tests/ops/test_<operator>.py.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from dml_jax._src import conformance, reference, registry
from dml_jax._src.fields import dml_fields
from dml_jax._src.fixtures import DATA_TYPES, Fixture, get_fixture, load_fixtures
from tests.helpers import ALL_DTYPES, assert_bits_equal, fixture_file_entries

# The NumPy oracle alone (it never imports JAX): the x64 pass leaves the module out.
pytestmark = pytest.mark.mode_independent

REPO_ROOT = Path(__file__).resolve().parent.parent


def _oracle(op: str) -> Callable[..., np.ndarray]:
  """The reference function of an operator: the one named like its functional API."""
  return getattr(reference, registry.lookup(op).FUNCTION)


# =========================================================================== #
# 1. Documented examples
# =========================================================================== #

FIXTURES = load_fixtures()
VALUE_FIXTURES = [f for f in FIXTURES if not f.shape_only]


def _ids(fixtures: list[Fixture]) -> list[str]:
  return [f.id for f in fixtures]


@pytest.mark.parametrize("fixture", VALUE_FIXTURES, ids=_ids(VALUE_FIXTURES))
def test_reference_reproduces_documented_output(fixture: Fixture) -> None:
  function = _oracle(fixture.op)
  actual = function(**fixture.arrays(), **fixture.params)
  if len(fixture.outputs) > 1:  # OutputTensors (SPLIT): one array per output
    assert len(actual) == len(fixture.outputs)
    for got, expected in zip(actual, fixture.outputs, strict=True):
      assert_bits_equal(got, expected.data)
    return
  assert_bits_equal(actual, fixture.output.data)


class TestFixtures:
  """The fixture file and its loader."""

  def test_counts_per_operator(self) -> None:
    counts = {}
    for fixture in FIXTURES:
      counts[fixture.op] = counts.get(fixture.op, 0) + 1
    # The loader keeps every entry of the file, per operator (counted from the file, so that
    # a new fixture or operator changes no number here), and every operator has examples.
    in_file = {}
    for entry in fixture_file_entries():
      in_file[entry["op"]] = in_file.get(entry["op"], 0) + 1
    assert counts == in_file
    assert set(counts) == set(registry.operators())

  def test_ids_are_unique_slugs(self) -> None:
    ids = [f.id for f in FIXTURES]
    assert len(set(ids)) == len(ids)
    for fixture in FIXTURES:
      assert re.fullmatch(r"[a-z0-9_]+/[a-z0-9-]+", fixture.id), fixture.id
      assert fixture.id.startswith(fixture.op.lower() + "/")

  @pytest.mark.parametrize("fixture", FIXTURES, ids=_ids(FIXTURES))
  def test_fixture_is_well_formed(self, fixture: Fixture) -> None:
    assert set(fixture.provenance) == {"page", "repository", "path", "commit", "url", "example"}
    assert fixture.provenance["repository"] and fixture.provenance["path"]
    assert fixture.provenance["example"]
    tensors = list(fixture.outputs)
    for value in fixture.inputs.values():
      tensors.extend(value if isinstance(value, tuple) else [value])
    for tensor in tensors:
      assert tensor.dtype == DATA_TYPES[tensor.data_type]
      if fixture.shape_only:
        assert tensor.data is None
      else:
        assert tensor.data.dtype == tensor.dtype
        assert tensor.data.shape == tensor.sizes
        assert not tensor.data.flags.writeable
    # Output DataType always equals the (first) input's, or that of the input the operator
    # names (ONE_HOT's ValuesTensor): the GATHER_ELEMENTS page's UINT32 typo is corrected in
    # the file. The descriptor says which type that is (None: no input holds the type, as for
    # DIAGONAL_MATRIX, whose OutputTensor alone has one); index outputs (ARGMAX's, TOP_K's
    # OutputIndexTensor) have an index type of their own.
    desc = conformance.descriptor_for(fixture)
    _, data_type = desc.output_data_type_source()
    index_fields = {f.dml_name for f in dml_fields(desc) if f.output and f.index}
    outputs = desc.dml_outputs()
    assert len(outputs) == len(fixture.outputs), fixture.id
    for (field, _, _), output in zip(outputs, fixture.outputs, strict=True):
      if field in index_fields:
        assert output.data_type in ("INT32", "INT64", "UINT32", "UINT64"), fixture.id
      elif data_type is not None:
        assert output.data_type == data_type.name, fixture.id
    for erratum in fixture.errata:
      assert erratum.issue and erratum.resolution

  def test_roles_and_params_match_reference_keywords(self) -> None:
    for fixture in FIXTURES:  # the roles are the oracle's positional parameters
      parameters = inspect.signature(_oracle(fixture.op)).parameters.values()
      positional = {p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD}
      required = {
        p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty
      }
      keywords = {p.name for p in parameters if p.kind is p.KEYWORD_ONLY}
      # an optional input (DIAGONAL_MATRIX1's InputTensor) may be absent
      assert required <= set(fixture.inputs) <= positional, fixture.id
      assert set(fixture.params) <= keywords, fixture.id
    assert all(isinstance(f.inputs["inputs"], tuple) for f in load_fixtures("JOIN"))
    assert all("input_count" not in f.params for f in FIXTURES)
    assert set(get_fixture("gather_nd1/example-2-batch-count").params) == {
      "input_dimension_count",
      "indices_dimension_count",
      "batch_dimension_count",
    }

  def test_provenance_and_flags(self) -> None:
    # The flags as the file has them (other operators' fixtures may set them too), and the
    # examples known to set them.
    entries = fixture_file_entries()
    undocumented = [f.id for f in FIXTURES if not f.documented_output]
    assert undocumented == [e["id"] for e in entries if not e["documented_output"]]
    assert "join/dxdispatch-1d-three-ranges" in undocumented
    assert get_fixture("join/dxdispatch-1d-three-ranges").provenance["commit"] is None
    shape_only = [f.id for f in FIXTURES if f.shape_only]
    assert shape_only == [e["id"] for e in entries if e["shape_only"]]
    assert {"gather_nd/output-sizes", "gather_nd1/output-sizes"} <= set(shape_only)
    fixture = get_fixture("gather_elements/axis-0")
    assert fixture.provenance["page"] == "DML_GATHER_ELEMENTS_OPERATOR_DESC"
    assert fixture.provenance["commit"] == "879f4fcc"
    assert any("UINT32" in e.issue for e in fixture.errata)
    assert get_fixture("gather_nd/output-sizes").errata
    assert get_fixture("reverse_subsequences/example-1-axis-3").errata

  def test_load_fixtures_filters_and_caches(self) -> None:
    assert load_fixtures() is load_fixtures()
    assert {f.op for f in load_fixtures("join")} == {"JOIN"}
    assert load_fixtures("GATHER_ND") == tuple(f for f in FIXTURES if f.op == "GATHER_ND")
    with pytest.raises(ValueError, match="no fixtures for operator 'NO_SUCH_OPERATOR'"):
      load_fixtures("NO_SUCH_OPERATOR")
    with pytest.raises(KeyError):
      get_fixture("join/no-such-example")
    with pytest.raises(ValueError):
      get_fixture("gather_nd/output-sizes").arrays()

  def test_import_script_converts_an_example(self) -> None:
    # The importer on an example written here: snake_case parameters and roles, structured
    # provenance, the erratum recorded.
    module = _importer()
    page = {
      "page": "SOME_PAGE",
      "repository": "MicrosoftDocs/sdk-api",
      "path": "sdk-api-src/content/directml/some-page.md",
      "commit": "0123abcd",
      "examples": [
        {
          "op": "GATHER_ELEMENTS",
          "heading": "A test example",
          "slug": "a-test-example",
          "fields": {"Axis": 1},
          "tensors": {
            "InputTensor": {
              "data_type": "FLOAT32",
              "sizes": [2, 2],
              "data": [[1.0, 2.0], [3.0, 4.0]],
            },
            "IndicesTensor": {"data_type": "UINT32", "sizes": [2, 1], "data": [[1], [0]]},
            "OutputTensor": {"data_type": "FLOAT32", "sizes": [2, 1], "data": [[2.0], [3.0]]},
          },
          "documented_output": True,
          "shape_only": False,
          "page_slip": "OutputTensor.DataType printed as UINT32",
        }
      ],
    }
    (example,) = module.read_transcription({"format": module.TRANSCRIPTION_FORMAT, "pages": [page]})
    fixture = module.convert_example(example)
    assert fixture["id"] == "gather_elements/a-test-example"
    assert fixture["params"] == {"axis": 1}
    assert set(fixture["inputs"]) == {"input", "indices"}
    assert fixture["output"] == {"data_type": "FLOAT32", "sizes": [2, 1], "data": [[2.0], [3.0]]}
    assert fixture["provenance"]["commit"] == "0123abcd"
    assert fixture["provenance"]["url"].endswith("/some-page")
    assert [e["issue"] for e in fixture["errata"]] == [
      "The page prints the OutputTensor DataType as UINT32."
    ]
    tensors = page["examples"][0]["tensors"]
    got = reference.gather_elements(
      np.asarray(tensors["InputTensor"]["data"], np.float32),
      np.asarray(tensors["IndicesTensor"]["data"], np.uint32),
      axis=1,
    )
    np.testing.assert_array_equal(got, np.asarray(fixture["output"]["data"], np.float32))

  def test_import_script_reads_kinds_outputs_arguments_and_corrections(self) -> None:
    # What the importer takes from the descriptors and the transcription, not from an
    # operator's name: INT32_MIN for an INT field, a corrected field's erratum, arguments
    # leading a generator's parameters, and several output fields as "outputs".
    module = _importer()
    matrix = {"data_type": "FLOAT32", "sizes": [2, 2], "data": [[1, 0], [0, 1]]}
    page = {
      "page": "P",
      "repository": "MicrosoftDocs/windows-ai-docs",
      "path": "docs/directml/api/p.md",
      "commit": None,
      "examples": [
        {
          "op": "DIAGONAL_MATRIX1",
          "heading": "H",
          "slug": "a",
          "fields": {
            "ValueDataType": "FLOAT32",
            "Value": 7.0,
            "DiagonalFillBegin": "INT32_MIN",
            "DiagonalFillEnd": 1,
          },
          "arguments": {"sizes": [2, 2]},
          "tensors": {"OutputTensor": matrix},
          "documented_output": True,
          "shape_only": False,
          "page_slip": "its output shows ones",
          "corrected_fields": {"Value": 1.0},
          "corrected_because": "the value its output shows",
        },
        {
          "op": "DIAGONAL_MATRIX",
          "heading": "H",
          "slug": "b",
          "fields": {"Offset": 0, "Value": 1.0},
          "arguments": {"sizes": [2, 2]},
          "tensors": {"OutputTensor": matrix},
          "documented_output": True,
          "shape_only": False,
        },
        {
          "op": "NONZERO_COORDINATES",
          "heading": "H",
          "slug": "c",
          "fields": {},
          "tensors": {
            "OutputCoordinatesTensor": {"data_type": "UINT32", "sizes": [1, 2], "data": [[0, 0]]},
            "InputTensor": {"data_type": "FLOAT32", "sizes": [1, 1], "data": [[5.0]]},
            "OutputCountTensor": {"data_type": "UINT32", "sizes": [1, 1], "data": [[1]]},
          },
          "documented_output": True,
          "shape_only": False,
        },
      ],
    }
    examples = module.read_transcription({"format": module.TRANSCRIPTION_FORMAT, "pages": [page]})
    fill, generator, nonzero = (module.convert_example(e) for e in examples)
    assert fill["params"] == {
      "value_data_type": "FLOAT32",
      "value": 1.0,
      "diagonal_fill_begin": -(2**31),
      "diagonal_fill_end": 1,
      "sizes": [2, 2],
    }
    assert list(fill["params"])[-1] == "sizes"
    assert fill["provenance"]["url"] == "https://learn.microsoft.com/windows/ai/directml/api/p"
    assert fill["errata"] == [
      {
        "issue": "The example sets Value 7 but its output shows ones.",
        "resolution": "Recorded with Value 1, the value its output shows; the output is the"
        " page's.",
      }
    ]
    assert list(generator["params"]) == ["sizes", "offset", "value"]
    assert generator["inputs"] == {}
    assert list(nonzero["inputs"]) == ["input"] and "output" not in nonzero
    assert [t["data"] for t in nonzero["outputs"]] == [[[1]], [[0, 0]]]
    bad = dict(page["examples"][1], fields={"Offset": "INT_MIN", "Value": 1.0})
    (example,) = module.read_transcription(
      {"format": module.TRANSCRIPTION_FORMAT, "pages": [dict(page, examples=[bad])]}
    )
    with pytest.raises(ValueError, match="Offset 'INT_MIN' is neither a number nor one of"):
      module.convert_example(example)

  def test_import_script_checks_enums_and_scalar_unions_and_keeps_slips(self) -> None:
    # An enum field must name a member of the descriptor's enum type; a scalar union is read
    # by its data type field, and a value outside that type's range needs a page_slip;
    # kept_because turns the page_slip into an erratum in the transcription's own words.
    module = _importer()
    sequence = {"data_type": "UINT8", "sizes": [1, 3], "data": [[10, 8, 6]]}
    example = {
      "op": "FILL_VALUE_SEQUENCE",
      "heading": "H",
      "slug": "a",
      "fields": {"ValueDataType": "UINT8", "ValueStart": 10, "ValueDelta": -2},
      "arguments": {"sizes": [1, 3]},
      "tensors": {"OutputTensor": sequence},
      "documented_output": True,
      "shape_only": False,
      "page_slip": "The page calls it ascending.",
      "kept_because": "Kept: the UINT8 step 254.",
    }
    page = {
      "page": "P",
      "repository": "MicrosoftDocs/sdk-api",
      "path": "sdk-api-src/content/directml/p.md",
      "commit": None,
      "examples": [example],
    }

    def convert(**changes: object) -> dict:
      changed = {k: v for k, v in {**example, **changes}.items() if v is not None}
      (read,) = module.read_transcription(
        {"format": module.TRANSCRIPTION_FORMAT, "pages": [dict(page, examples=[changed])]}
      )
      return module.convert_example(read)

    fixture = convert()
    assert fixture["params"] == {
      "sizes": [1, 3],
      "value_data_type": "UINT8",
      "value_start": 10,
      "value_delta": -2,
    }
    assert fixture["errata"] == [
      {"issue": "The page calls it ascending.", "resolution": "Kept: the UINT8 step 254."}
    ]
    with pytest.raises(ValueError, match=r"ValueDelta -2 is outside UINT8's range \[0, 255\]"):
      convert(page_slip=None, kept_because=None)
    with pytest.raises(ValueError, match="ValueStart 10.5 is not an integer, as UINT8 needs"):
      convert(fields={"ValueDataType": "UINT8", "ValueStart": 10.5, "ValueDelta": 2})
    with pytest.raises(ValueError, match="kept_because needs a page_slip"):
      convert(page_slip=None, fields={"ValueDataType": "UINT8", "ValueStart": 10, "ValueDelta": 2})
    argmin = {
      "op": "ARGMIN",
      "heading": "H",
      "slug": "b",
      "fields": {"AxisCount": 1, "Axes": [0], "AxisDirection": "SIDEWAYS"},
      "tensors": {
        "InputTensor": {"data_type": "FLOAT32", "sizes": [2, 1], "data": [[2.0], [1.0]]},
        "OutputTensor": {"data_type": "UINT32", "sizes": [1, 1], "data": [[1]]},
      },
      "documented_output": True,
      "shape_only": False,
    }
    (read,) = module.read_transcription(
      {"format": module.TRANSCRIPTION_FORMAT, "pages": [dict(page, examples=[argmin])]}
    )
    with pytest.raises(ValueError, match="ARGMIN: AxisDirection: AxisDirection must be one of"):
      module.convert_example(read)

  def test_the_importer_says_how_to_add_a_missing_operator(self, tmp_path, capsys) -> None:
    module = _importer()
    document = json.loads(module.TRANSCRIPTION.read_text())
    document["pages"] = [
      page for page in document["pages"] if page["examples"][0]["op"] != "ELEMENT_WISE_IF"
    ]
    transcription = tmp_path / "transcription.json"
    transcription.write_text(json.dumps(document))
    assert module.main(["--check", "--transcription", str(transcription)]) == 1
    error = capsys.readouterr().err
    assert "no examples found for ['ELEMENT_WISE_IF']" in error
    assert "into scripts/directml_worked_examples.json first, then run this script" in error

  def test_the_fixture_file_is_what_the_importer_writes(self, capsys) -> None:
    # The transcription is in the repository: a clone regenerates the fixtures, and this
    # fails when they differ (run `python scripts/import_doc_examples.py` after an edit).
    assert _importer().main(["--check"]) == 0, capsys.readouterr().out

  def test_the_importer_check_fails_on_a_stale_fixture_file(self, tmp_path, capsys) -> None:
    module = _importer()
    stale = tmp_path / "fixtures.json"
    stale.write_text(module.DEFAULT_OUTPUT.read_text().replace('"axis": 0', '"axis": 1', 1))
    assert module.main(["--check", "--output", str(stale)]) == 1
    assert "is out of date" in capsys.readouterr().out


def _importer():
  """scripts/import_doc_examples.py as a module."""
  script = REPO_ROOT / "scripts" / "import_doc_examples.py"
  spec = importlib.util.spec_from_file_location("import_doc_examples", script)
  assert spec and spec.loader
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


# =========================================================================== #
# 2. Hand-written cases pinned from the spec: the rules every operator shares
# =========================================================================== #


class TestNormalizeIndex:
  @pytest.mark.parametrize(
    ("index", "size", "signed", "expected"),
    [
      (0, 5, True, 0),
      (4, 5, True, 4),
      (-1, 5, True, 4),  # negative counts from the end
      (-5, 5, True, 0),
      (-6, 5, True, 0),  # -size-1 clamps to 0
      (5, 5, True, 4),  # one past the end clamps to last
      (5, 5, False, 4),
      (0xFFFFFFFF, 5, False, 4),  # UINT32 never wraps to -1
      (0xFFFFFFFE, 5, False, 4),  # ... nor to -2
      (2**64 - 1, 5, False, 4),  # UINT64 max
      (2**32 + 1, 3, True, 2),  # not truncated to 32 bits (would be 1)
      (2**63 - 1, 3, True, 2),
      (-(2**63), 3, True, 0),
      (0, 1, True, 0),
      (-1, 1, True, 0),
    ],
  )
  def test_table(self, index: int, size: int, signed: bool, expected: int) -> None:
    assert reference.normalize_index(index, size, signed=signed) == expected

  def test_accepts_numpy_scalars(self) -> None:
    assert reference.normalize_index(np.uint64(2**64 - 1), 7, signed=False) == 6
    assert reference.normalize_index(np.int64(-2), 7, signed=True) == 5


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_output_dtype_is_input_dtype(dtype: np.dtype) -> None:
  data = np.arange(6).astype(dtype).reshape(2, 3)
  indices = np.array([[2, 0, 1]], dtype=np.uint32)
  assert reference.gather_elements(data, indices, axis=0).dtype == dtype
  nd_indices = np.array([[1], [0]], dtype=np.int64)
  assert reference.gather_nd(data, nd_indices).dtype == dtype
  lengths = np.array([[2], [3]], dtype=np.uint32)
  assert reference.reverse_subsequences(data, lengths, axis=1).dtype == dtype
  assert reference.join([data, data], axis=0).dtype == dtype


@pytest.mark.subprocess
def test_reference_module_does_not_import_jax() -> None:
  path = Path(reference.__file__)
  code = (
    "import importlib.util, sys\n"
    f"spec = importlib.util.spec_from_file_location('ref', {str(path)!r})\n"
    "module = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(module)\n"
    "assert 'jax' not in sys.modules, 'reference imported jax'\n"
  )
  subprocess.run([sys.executable, "-c", code], check=True)
