"""dml.explain: the output sizes derived in words, the feature level's rules, the verdict.

What every operator's explanation shares; each operator's own Output section is tested in
tests/ops/test_<operator>.py.
"""

import pytest

import dml_jax as dml
from dml_jax._src import conformance
from dml_jax._src.fixtures import get_fixture, load_fixtures
from tests.helpers import explain_section

# Descriptors and their explanations, no JAX arrays: the x64 pass leaves the module out.
pytestmark = pytest.mark.mode_independent

T = dml.TensorDesc


@pytest.mark.parametrize("fixture", load_fixtures(), ids=lambda f: f.id)
def test_every_documented_example_is_explained_and_valid(fixture):
  desc = conformance.descriptor_for(fixture)
  text = dml.explain(desc)
  op = desc.OPERATOR  # a GATHER_ND1 example with BatchDimensionCount 0 is a GATHER_ND
  assert op == fixture.op or (fixture.op, op) == ("GATHER_ND1", "GATHER_ND")
  assert text.splitlines()[0] == (
    f"DML_OPERATOR_{op} (DML_{op}_OPERATOR_DESC) at DML_FEATURE_LEVEL_6_4"
  )
  output = explain_section(text, "Output:")
  for tensor in fixture.outputs:
    sizes = "{" + ",".join(map(str, tensor.sizes)) + "}"
    assert any(sizes in line for line in output), output
  last = desc.dml_outputs()[-1][0]  # OutputTensor, OutputTensors[k], OutputIndexTensor, ...
  assert output[-1].startswith(f"The given {last} matches")
  assert explain_section(text, "Validation:") == [
    "valid: DirectML's CreateOperator would accept this descriptor at FL 6_4."
  ]


def test_feature_level_section_names_the_table_in_force_and_checks_each_tensor():
  desc = dml.GatherElementsDesc(T("FLOAT32", (3, 3)), T("INT32", (2, 3)), axis=0)
  newest = explain_section(dml.explain(desc), "Feature level 6_4:")
  assert newest[0] == (
    'The tensor-support table in force is "DML_FEATURE_LEVEL_4_1 and above"'
    " (DML_OPERATOR_GATHER_ELEMENTS has tables from 2_1, 3_0, 4_1)."
  )
  assert newest[1].startswith("Every tensor may have at most 8 dimensions at FL 6_4")
  assert newest[2].startswith("IndicesTensor is INT32 (signed): negative indices count from")
  assert any(line.startswith("Out-of-range indices: DirectML leaves") for line in newest)
  assert newest[-3].split()[0] == "InputTensor" and newest[-3].endswith("ok")
  old = explain_section(dml.explain(desc, "2_1"), "Feature level 2_1:")
  assert old[0].startswith('The tensor-support table in force is "DML_FEATURE_LEVEL_2_1 and above"')
  assert old[1].startswith("Every tensor may have at most 5 dimensions at FL 2_1")
  assert old[-2].split()[:3] == ["IndicesTensor", "INT32[2,3]", "4"]
  assert old[-2].endswith("not allowed: 2 dimensions, INT32")


def test_unsigned_indices_never_wrap_and_lengths_are_unsigned():
  desc = dml.GatherElementsDesc(T("FLOAT32", (3,)), T("UINT64", (2,)), axis=0)
  assert "IndicesTensor is UINT64 (unsigned): indices never wrap" in dml.explain(desc)
  desc = dml.ReverseSubsequencesDesc(T("FLOAT32", (3,)), T("UINT64", (1,)), axis=0)
  assert "SequenceLengthsTensor is UINT64: lengths are unsigned." in dml.explain(desc)


def test_an_operator_before_its_level_is_explained_as_missing():
  desc = conformance.descriptor_for(get_fixture("gather_nd1/example-2-batch-count"))
  text = dml.explain(desc, "2_1")
  assert explain_section(text, "Feature level 2_1:") == [
    "DML_OPERATOR_GATHER_ND1 does not exist at FL 2_1; it was introduced at FL 3_0."
  ]
  assert explain_section(text, "Validation:")[0] == "invalid at FL 2_1 (1 problem):"


def test_validation_section_lists_every_violation():
  desc = dml.GatherElementsDesc(T("FLOAT32", (3, 3)), T("INT32", (2, 3)), axis=2)
  lines = explain_section(dml.explain(desc, "2_1"), "Validation:")
  violations = desc.violations("2_1")
  assert lines == [f"invalid at FL 2_1 ({len(violations)} problems):"] + [
    f"- {v}" for v in violations
  ]


def test_a_given_output_that_differs_is_pointed_out():
  desc = dml.GatherElementsDesc(
    T("FLOAT32", (3,)), T("UINT32", (2,)), axis=0, output_tensor=T("FLOAT32", (3,))
  )
  text = dml.explain(desc)
  assert "  OutputTensor = FLOAT32[3] (given)" in text
  assert explain_section(text, "Output:")[-1] == (
    "The given OutputTensor differs from the sizes and data type derived above (FLOAT32[2])."
  )
  assert explain_section(text, "Validation:")[0] == "invalid at FL 6_4 (1 problem):"


def test_explain_takes_descriptors_only():
  with pytest.raises(TypeError, match="explain takes an operator descriptor; got TensorDesc"):
    dml.explain(T("FLOAT32", (1,)))
  with pytest.raises(ValueError, match="unknown DML_FEATURE_LEVEL"):
    dml.explain(dml.JoinDesc((T("INT8", (1,)),), axis=0), "9_9")


def test_explain_html_escapes_and_carries_the_text():
  desc = dml.GatherElementsDesc(T("FLOAT32", (3,)), T("UINT32", (2,)), axis=0)
  page = dml.explain_html(desc)
  assert repr(page) == dml.explain(desc)
  assert (
    "out[i] = in[i] for i &gt;= L"
    in dml.explain_html(
      dml.ReverseSubsequencesDesc(T("FLOAT32", (3,)), T("UINT32", (1,)), axis=0)
    ).markup
  )
  assert (
    "<li>OutputTensor.Sizes = IndicesTensor.Sizes = {2}: one output element per index.</li>"
    in (page.markup)
  )
