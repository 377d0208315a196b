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
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from dml_jax._src import reference, registry
from dml_jax._src.fields import dml_fields, field_by_dml_name
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
    # the file. Index outputs (ARGMAX's, TOP_K's OutputIndexTensor) have an index type.
    desc_type = registry.lookup(fixture.op)
    source = desc_type.OUTPUT_DATA_TYPE_FROM
    if source is None:
      first = fixture.inputs.get("input") or fixture.inputs["inputs"][0]
    else:
      first = fixture.inputs[field_by_dml_name(desc_type, source).argument]
    output_fields = [f for f in dml_fields(desc_type) if f.output]
    if len(output_fields) == len(fixture.outputs):  # one TENSOR field per output
      for field, output in zip(output_fields, fixture.outputs, strict=True):
        if field.index:
          assert output.data_type in ("INT32", "INT64", "UINT32", "UINT64"), fixture.id
        else:
          assert output.data_type == first.data_type, fixture.id
    else:  # OutputTensors
      assert all(output.data_type == first.data_type for output in fixture.outputs)
    for erratum in fixture.errata:
      assert erratum.issue and erratum.resolution

  def test_roles_and_params_match_reference_keywords(self) -> None:
    for fixture in FIXTURES:  # the roles are the oracle's positional parameters
      parameters = inspect.signature(_oracle(fixture.op)).parameters.values()
      positional = {p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD}
      keywords = {p.name for p in parameters if p.kind is p.KEYWORD_ONLY}
      assert set(fixture.inputs) == positional, fixture.id
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
    # The importer on an example written here (its source transcription is kept outside the
    # repository): snake_case parameters and roles, structured provenance, the erratum recorded.
    script = REPO_ROOT / "scripts" / "import_doc_examples.py"
    spec = importlib.util.spec_from_file_location("import_doc_examples", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    example = {
      "op": "GATHER_ELEMENTS",
      "source": "SOME_PAGE (MicrosoftDocs/sdk-api sdk-api-src/content/directml/some-page.md @0123abcd)",
      "example": "A test example",
      "params": {"Axis": 1},
      "inputs": {
        "InputTensor": {"dtype": "FLOAT32", "sizes": [2, 2], "data": [[1.0, 2.0], [3.0, 4.0]]},
        "IndicesTensor": {"dtype": "UINT32", "sizes": [2, 1], "data": [[1], [0]]},
      },
      "output": {"dtype": "FLOAT32", "sizes": [2, 1], "data": [[2.0], [3.0]]},
      "notes": [],
      "doc_issue": "output data type printed as UINT32",
      "output_documented": True,
      "shape_only": False,
      "check": {"reference_matches_documented_output": True},
    }
    fixture = module.convert_example(example)
    assert fixture["id"] == "gather_elements/a-test-example"
    assert fixture["params"] == {"axis": 1}
    assert set(fixture["inputs"]) == {"input", "indices"}
    assert fixture["output"] == {"data_type": "FLOAT32", "sizes": [2, 1], "data": [[2.0], [3.0]]}
    assert fixture["provenance"]["commit"] == "0123abcd"
    assert fixture["provenance"]["path"].endswith("some-page.md")
    assert [e["issue"] for e in fixture["errata"]] == [
      "The page prints the OutputTensor DataType as UINT32."
    ]
    got = reference.gather_elements(
      np.asarray(example["inputs"]["InputTensor"]["data"], np.float32),
      np.asarray(example["inputs"]["IndicesTensor"]["data"], np.uint32),
      axis=1,
    )
    np.testing.assert_array_equal(got, np.asarray(fixture["output"]["data"], np.float32))


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
