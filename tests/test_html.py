"""The notebook forms: `_repr_html_` of descriptors and errors, well formed and complete.

GATHER_ND's and JOIN's own tables are tested in tests/ops/test_<operator>.py.
"""

import pickle

import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src import html as html_lib
from tests.helpers import parse_html


def rows_by_first_cell(table):
  return {row[0]: row[1:] for row in table}


def test_html_object_is_its_text_and_renders_markup():
  page = html_lib.Html("<b>a &lt; b</b>", "a < b")
  assert isinstance(page, str) and page == str(page) == repr(page) == page.text == "a < b"
  assert page._repr_html_() == page.markup == "<b>a &lt; b</b>"
  assert pickle.loads(pickle.dumps(page)).markup == page.markup


def test_a_validation_error_table_is_a_string():
  try:
    dml.GatherElementsDesc(
      dml.TensorDesc("FLOAT32", (3, 3)), dml.TensorDesc("UINT32", (3, 3)), axis=5
    ).validate()
  except dml.DmlValidationError as error:
    table = error.table()
  assert isinstance(table, str) and print(table) is None
  assert table.splitlines()[0] == (
    "DML_OPERATOR_GATHER_ELEMENTS is invalid at DML_FEATURE_LEVEL_6_4 (1 problem):"
  )
  assert "<table" in table.markup and "<table" not in table


def test_tensor_desc_html_is_a_table_of_every_dml_field():
  tensor = dml.TensorDesc(
    "FLOAT16",
    (2, 3),
    strides=(4, 1),
    flags=dml.TensorFlags.OWNED_BY_DML,
    total_tensor_size_in_bytes=64,
    guaranteed_base_offset_alignment=16,
  )
  parsed = parse_html(tensor._repr_html_())
  assert parsed.captions == [f"DML_BUFFER_TENSOR_DESC {tensor}"]
  (table,) = parsed.tables
  assert table[0] == ["field", "value"]
  fields = rows_by_first_cell(table[1:])
  assert fields == {
    "DataType": ["DML_TENSOR_DATA_TYPE_FLOAT16 (2), 16-bit"],
    "Flags": ["DML_TENSOR_FLAG_OWNED_BY_DML (0x1)"],
    "DimensionCount": ["2"],
    "Sizes": ["{2,3} (6 elements)"],
    "Strides": ["{4,1}"],
    "TotalTensorSizeInBytes": ["64 (DMLCalcBufferTensorSize: 16)"],
    "GuaranteedBaseOffsetAlignment": ["16"],
  }
  assert tensor.html().markup == tensor._repr_html_()


def test_tensor_desc_html_spells_out_the_defaults():
  fields = rows_by_first_cell(parse_html(dml.TensorDesc("INT8", (2, 3, 5))._repr_html_()).tables[0])
  assert fields["Strides"] == ["null (packed row-major: {15,5,1})"]
  assert fields["TotalTensorSizeInBytes"] == ["32 (= DMLCalcBufferTensorSize)"]
  assert fields["Flags"] == ["DML_TENSOR_FLAG_NONE (0x0)"]
  assert fields["GuaranteedBaseOffsetAlignment"] == ["0 (no promise beyond the 16-byte minimum)"]


def test_tensor_desc_text_form_lists_the_same_fields():
  text = repr(dml.TensorDesc("UINT32", (4,)).html())
  assert text.splitlines()[0] == "DML_BUFFER_TENSOR_DESC UINT32[4]"
  assert "  Sizes                          {4} (4 elements)" in text.splitlines()


def _gather(indices_type="UINT32", rank=2, axis=0):
  pad = (1,) * (rank - 2)
  return dml.GatherElementsDesc(
    dml.TensorDesc("FLOAT32", pad + (3, 3)),
    dml.TensorDesc(indices_type, pad + (2, 3)),
    axis=axis,
  )


def test_operator_html_shows_tensors_attributes_and_valid_status():
  parsed = parse_html(_gather()._repr_html_())
  tensors, attributes = parsed.tables
  assert tensors[0] == [
    "field",
    "kind",
    "DataType",
    "Sizes",
    "Strides",
    "TotalTensorSizeInBytes",
    "Flags",
    "",
  ]
  assert tensors[1:] == [
    ["InputTensor", "input", "FLOAT32", "{3,3}", "null", "36", "NONE", "\u2713"],
    ["IndicesTensor", "input", "UINT32", "{2,3}", "null", "24", "NONE", "\u2713"],
    ["OutputTensor", "output (inferred)", "FLOAT32", "{2,3}", "null", "24", "NONE", "\u2713"],
  ]
  assert attributes[1:] == [["Axis", "attribute", "0", "\u2713"]]
  markup = _gather()._repr_html_()
  assert "DML_OPERATOR_GATHER_ELEMENTS (DML_GATHER_ELEMENTS_OPERATOR_DESC)" in markup
  assert "valid at DML_FEATURE_LEVEL_6_4" in markup


def test_operator_html_at_a_chosen_level_marks_the_broken_fields():
  desc = _gather(indices_type="INT32", axis=2)
  page = desc.html("2_1")
  parsed = parse_html(page.markup)
  tensors, attributes, problems = parsed.tables
  marks = {row[0]: row[-1] for row in tensors[1:] + attributes[1:]}
  assert marks == {
    "InputTensor": "\u2717",
    "IndicesTensor": "\u2717",
    "OutputTensor": "\u2713",
    "Axis": "\u2717",
  }
  count = len(desc.violations("2_1"))
  assert parsed.captions == [
    f"\u2717 DML_OPERATOR_GATHER_ELEMENTS is invalid at DML_FEATURE_LEVEL_2_1 ({count} problems)"
  ]
  assert problems[0] == ["field", "rule", "found", "hint"]
  assert [row[0] for row in problems[1:]] == [v.field for v in desc.violations("2_1")]
  assert ["Axis", "must be in [0, DimensionCount) = [0, 2)", "2", ""] in problems
  # the level is a choice: the same descriptor padded to rank 4 is valid at 2_1
  assert "valid at DML_FEATURE_LEVEL_2_1" in _gather(rank=4).html("2_1").markup
  assert page.text.splitlines()[-count - 2].startswith("DML_OPERATOR_GATHER_ELEMENTS is invalid")


def test_operator_html_escapes_what_it_shows():
  desc = dml.GatherElementsDesc(
    dml.TensorDesc("FLOAT32", (3,), total_tensor_size_in_bytes=4),
    dml.TensorDesc("UINT32", (2,)),
    axis=0,
  )
  markup = desc.html().markup
  assert "must be &gt;= DMLCalcBufferTensorSize = 12" in markup
  assert ">= DMLCalcBufferTensorSize" not in markup.replace("&gt;=", "")
  problems = parse_html(markup).tables[-1]
  assert [
    "InputTensor.TotalTensorSizeInBytes",
    "must be >= DMLCalcBufferTensorSize = 12",
    "4",
    "",
  ] in problems


def test_validation_error_renders_as_a_table_and_keeps_its_message():
  with pytest.raises(dml.DmlValidationError) as caught:
    dml.join([np.ones(2, np.float16), np.ones(1, np.float32)], axis=0)
  error = caught.value
  assert str(error).splitlines()[0] == (
    "DML_OPERATOR_JOIN descriptor is invalid at DML_FEATURE_LEVEL_6_4 (1 problem):"
  )
  parsed = parse_html(error._repr_html_())
  assert parsed.captions == [
    "\u2717 DML_OPERATOR_JOIN is invalid at DML_FEATURE_LEVEL_6_4 (1 problem)"
  ]
  ((header, row),) = parsed.tables
  assert header == ["field", "rule", "found", "hint"]
  assert row == [
    "InputTensors[1].DataType",
    "must equal InputTensors[0].DataType (FLOAT16); JOIN never converts types",
    "FLOAT32",
    "cast the inputs first (jnp.concatenate would promote them)",
  ]
  table = error.table()
  assert table.markup == error._repr_html_()
  title, header_line, line = repr(table).splitlines()
  assert title == "DML_OPERATOR_JOIN is invalid at DML_FEATURE_LEVEL_6_4 (1 problem):"
  assert header_line.split() == ["field", "rule", "found", "hint"]
  assert line.startswith("  InputTensors[1].DataType  must equal InputTensors[0].DataType")
  assert line.endswith("  FLOAT32  cast the inputs first (jnp.concatenate would promote them)")
  assert header_line.index("found") == line.index("FLOAT32")  # aligned columns


def test_explain_html_is_well_formed():
  page = dml.explain_html(_gather(indices_type="INT32", axis=2), "2_1")
  parsed = parse_html(page.markup)
  (table,) = parsed.tables
  assert table[0] == ["tensor", "is", "dimensions allowed", "data types allowed", "verdict"]
  assert table[1][:3] == ["InputTensor", "FLOAT32[3,3]", "4"]
  assert table[1][-1] == "not allowed: 2 dimensions"
  assert table[2][-1] == "not allowed: 2 dimensions, INT32"
  assert repr(page) == dml.explain(_gather(indices_type="INT32", axis=2), "2_1")
