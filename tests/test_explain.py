"""dml.explain: the output sizes derived in words, the feature level's rules, the verdict."""

import pytest

import dml_jax as dml
from dml_jax._src import conformance
from dml_jax._src.fixtures import get_fixture, load_fixtures

T = dml.TensorDesc


def section(text, title):
  """The lines of one section of an explanation, without their indentation."""
  block = text.split(f"\n\n{title}")[1].split("\n\n")[0]
  return [line.strip() for line in block.splitlines()[1:]]


@pytest.mark.parametrize("fixture", load_fixtures(), ids=lambda f: f.id)
def test_every_documented_example_is_explained_and_valid(fixture):
  desc = conformance.descriptor_for(fixture)
  text = dml.explain(desc)
  op = desc.OPERATOR  # a GATHER_ND1 example with BatchDimensionCount 0 is a GATHER_ND
  assert op == fixture.op or (fixture.op, op) == ("GATHER_ND1", "GATHER_ND")
  assert text.splitlines()[0] == (
    f"DML_OPERATOR_{op} (DML_{op}_OPERATOR_DESC) at DML_FEATURE_LEVEL_6_4"
  )
  sizes = "{" + ",".join(map(str, fixture.output.sizes)) + "}"
  output = section(text, "Output:")
  assert any(sizes in line for line in output), output
  assert output[-1].startswith("The given OutputTensor matches")
  assert section(text, "Validation:") == [
    "valid: DirectML's CreateOperator would accept this descriptor at FL 6_4."
  ]


def test_gather_elements_output_is_the_indices_sizes_and_the_input_type():
  desc = dml.GatherElementsDesc(T("FLOAT16", (3, 4)), T("INT64", (3, 7)), axis=1)
  output = section(dml.explain(desc), "Output:")
  assert output == [
    "out[o] = InputTensor[o with o[1] := IndicesTensor[o]]: every output element reads one"
    " input element of its own lane along Axis 1.",
    "OutputTensor.Sizes = IndicesTensor.Sizes = {3,7}: one output element per index.",
    "IndicesTensor.Sizes must equal InputTensor.Sizes {3,4} off Axis 1; on Axis 1 it is free:"
    " 7 index(es) per lane of 4 element(s).",
    "OutputTensor.DataType = InputTensor.DataType = FLOAT16 (not the index type INT64).",
  ]


def test_gather_nd_sizes_are_derived_step_by_step():
  text = dml.explain(conformance.descriptor_for(get_fixture("gather_nd/output-sizes")))
  output = section(text, "Output:")
  assert output[:8] == [
    "n = DimensionCount = 5; m = InputDimensionCount = 5; q = IndicesDimensionCount = 3;"
    " B = BatchDimensionCount = 0.",
    "Logical input I = InputTensor.Sizes[n - m:] = {3,4,5,6,7}.",
    "Logical indices X = IndicesTensor.Sizes[n - q:] = {1,2,3} (the 2 leading size(s) before"
    " it must be 1).",
    "Tuple length t = X[-1] = 3: each index tuple holds 3 coordinate(s) into I[B:B + t] = {3,4,5}.",
    "Each tuple selects I[B + t:] = {6,7}: a sub-block of 42 element(s) is copied per tuple.",
    "Logical output = X[:-1] ++ I[B + t:] = {1,2} ++ {6,7} = {1,2,6,7} (k = 4 dimension(s)).",
    "Right-aligned into n = 5 dimensions with 1 leading 1(s): OutputTensor.Sizes = {1,1,2,6,7}.",
    "out[b, p, r] = I[b, X[b, p, 0], ..., X[b, p, t - 1], r] (b: batch, p: tuple position,"
    " r: within the sub-block).",
  ]
  assert "BatchDimensionCount 0: DML_OPERATOR_GATHER_ND (from FL 2_1)" in text


def test_gather_nd1_names_its_batches_and_its_single_elements():
  text = dml.explain(conformance.descriptor_for(get_fixture("gather_nd1/example-2-batch-count")))
  output = section(text, "Output:")
  assert (
    "The first B = 1 dimension(s) of I and X are batches ({3} and {3}, which must be equal):"
    " the tuples of batch j index into I[j] only."
  ) in output
  assert "Each tuple selects I[B + t:] = {}: a single element is copied per tuple." in output
  assert "BatchDimensionCount 1 > 0 makes this DML_OPERATOR_GATHER_ND1 (from FL 3_0)." in output


def test_gather_nd_says_why_no_output_can_be_inferred():
  too_long = dml.GatherNdDesc(T("FLOAT32", (2, 2)), T("UINT32", (1, 3)))
  assert section(dml.explain(too_long), "Output:")[-1] == (
    "t must be in [1, m - B] = [1, 2]: no output can be inferred."
  )
  assert "Fields:\n" in dml.explain(too_long)
  assert "  OutputTensor = (none given, none inferred)" in dml.explain(too_long)
  ranks = dml.GatherNdDesc(T("FLOAT32", (2, 2)), T("UINT32", (2,)))
  assert section(dml.explain(ranks), "Output:")[-1] == (
    "The counts do not fit the tensors' ranks: no output can be inferred."
  )


def test_reverse_subsequences_explains_lanes_and_clamped_lengths():
  desc = dml.ReverseSubsequencesDesc(T("INT8", (2, 5, 3)), T("UINT32", (2, 1, 3)), axis=1)
  assert section(dml.explain(desc), "Output:") == [
    "OutputTensor.Sizes = InputTensor.Sizes = {2,5,3}; OutputTensor.DataType ="
    " InputTensor.DataType = INT8.",
    "Lanes run along Axis 1, 5 element(s) each; there are 6 lane(s), one length per lane:"
    " SequenceLengthsTensor.Sizes = InputTensor.Sizes with 1 on Axis = {2,1,3}.",
    "In each lane, with L = min(length, 5): out[i] = in[L - 1 - i] for i < L and out[i] = in[i]"
    " for i >= L. Lengths 0 and 1 leave the lane unchanged; lengths above 5 reverse the whole"
    " lane.",
  ]


def test_join_explains_the_summed_axis_and_where_each_input_lands():
  desc = dml.JoinDesc((T("UINT16", (2, 3)), T("UINT16", (2, 4)), T("UINT16", (2, 1))), axis=1)
  assert section(dml.explain(desc), "Output:") == [
    "OutputTensor.Sizes = InputTensors[0].Sizes with Axis 1 replaced by 3 + 4 + 1 = 8: {2,8}.",
    "Along Axis 1: InputTensors[0] -> [0, 3), InputTensors[1] -> [3, 7),"
    " InputTensors[2] -> [7, 8).",
    "OutputTensor.DataType = InputTensors[0].DataType = UINT16; every input must have it (JOIN"
    " never converts; jnp.concatenate would promote).",
  ]
  single = dml.JoinDesc((T("UINT16", (2, 3)),), axis=0)
  assert section(dml.explain(single), "Output:")[-1] == "A single input: the output is a copy."


def test_feature_level_section_names_the_table_in_force_and_checks_each_tensor():
  desc = dml.GatherElementsDesc(T("FLOAT32", (3, 3)), T("INT32", (2, 3)), axis=0)
  newest = section(dml.explain(desc), "Feature level 6_4:")
  assert newest[0] == (
    'The tensor-support table in force is "DML_FEATURE_LEVEL_4_1 and above"'
    " (DML_OPERATOR_GATHER_ELEMENTS has tables from 2_1, 3_0, 4_1)."
  )
  assert newest[1].startswith("Every tensor may have at most 8 dimensions at FL 6_4")
  assert newest[2].startswith("IndicesTensor is INT32 (signed): negative indices count from")
  assert any(line.startswith("Out-of-range indices: DirectML leaves") for line in newest)
  assert newest[-3].split()[0] == "InputTensor" and newest[-3].endswith("ok")
  old = section(dml.explain(desc, "2_1"), "Feature level 2_1:")
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
  assert section(text, "Feature level 2_1:") == [
    "DML_OPERATOR_GATHER_ND1 does not exist at FL 2_1; it was introduced at FL 3_0."
  ]
  assert section(text, "Validation:")[0] == "invalid at FL 2_1 (1 problem):"


def test_validation_section_lists_every_violation():
  desc = dml.GatherElementsDesc(T("FLOAT32", (3, 3)), T("INT32", (2, 3)), axis=2)
  lines = section(dml.explain(desc, "2_1"), "Validation:")
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
  assert section(text, "Output:")[-1] == (
    "The given OutputTensor differs from the sizes and data type derived above (FLOAT32[2])."
  )
  assert section(text, "Validation:")[0] == "invalid at FL 6_4 (1 problem):"


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
