"""Validation of operator descriptors, as DirectML's CreateOperator would do it.

One test per DirectML rule that is not one operator's own: the tensor layer,
each operator's tensor-support tables per feature level, the scalar and
cross-tensor rules the operators share, the inferred rule for JOIN at FL 3_1,
and the error's contract (every
violation at once, pickling); the functional API raising what the descriptor path
raises is tests/test_functional_validation.py. Each operator's own rules are in tests/ops/test_<operator>.py,
and the checks both use (assert_rejected, assert_valid, ...) in tests/helpers.py.

Every rejection pins, chex-style with regexes, the exception type and its
wording: the field, a fragment of the rule, the value found and the feature
level (and the hint where one is promised). Pure Python, so the x64 pass leaves it out.
"""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

import dml_jax as dml
from dml_jax import DataType, DmlValidationError, FeatureLevel, TensorFlags, Violation
from dml_jax._src import conformance
from dml_jax._src.fields import dml_fields
from dml_jax._src.fixtures import load_fixtures
from tests.helpers import assert_rejected, assert_valid, braces, fields_of, gather_nd_desc

T = dml.TensorDesc
# Descriptors only, pure Python: nothing here depends on jax_enable_x64 (the functional API's
# errors, which do, are in tests/test_functional_validation.py).
pytestmark = pytest.mark.mode_independent

# =========================================================================== #
# Descriptor builders (the checks themselves are in tests/helpers.py)
# =========================================================================== #


def _shape(rank: int) -> tuple[int, ...]:
  """(..., 1, 2, 3) cut to `rank`: 1 -> (3,), 2 -> (2, 3), 4 -> (1, 1, 2, 3)."""
  return ((1,) * rank + (2, 3))[-rank:] if rank else ()


def gather_elements(rank=4, data="FLOAT32", indices="UINT32", **kwargs):
  shape = _shape(rank)
  return dml.GatherElementsDesc(T(data, shape), T(indices, shape), axis=max(rank - 1, 0), **kwargs)


def gather_nd(rank=4, data="FLOAT32", indices="UINT32", batch=0, **kwargs):
  """Input (..., 2, 3) with 1-tuples (..., 2, 1): output (..., 2, 3); batched: (..., 1, 2)."""
  if rank == 1:
    return gather_nd_desc(T(data, (3,)), T(indices, (1,)), batch_dimension_count=batch, **kwargs)
  counts = dict(input_dimension_count=2, indices_dimension_count=2)
  return gather_nd_desc(
    T(data, _shape(rank)),
    T(indices, _shape(rank)[:-1] + (1,)),
    batch_dimension_count=batch,
    **(counts | kwargs),
  )


def gather_nd1(rank=4, data="FLOAT32", indices="UINT32", **kwargs):
  return gather_nd(rank, data, indices, batch=1, **kwargs)


def reverse_subsequences(rank=4, data="FLOAT32", lengths="UINT32", **kwargs):
  shape = _shape(rank)
  return dml.ReverseSubsequencesDesc(
    T(data, shape), T(lengths, shape[:-1] + (1,)), axis=max(rank - 1, 0), **kwargs
  )


def join(rank=4, data="FLOAT32", **kwargs):
  shape = _shape(rank)
  return dml.JoinDesc((T(data, shape), T(data, shape[:-1] + (1,))), axis=max(rank - 1, 0), **kwargs)


BUILDERS = {
  "GATHER_ELEMENTS": gather_elements,
  "GATHER_ND": gather_nd,
  "GATHER_ND1": gather_nd1,
  "REVERSE_SUBSEQUENCES": reverse_subsequences,
  "JOIN": join,
}

# =========================================================================== #
# The operators' tensor-support tables, written out independently of the code
# =========================================================================== #

UP_TO_32 = {"FLOAT32", "FLOAT16", "INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8"}
ALL_DATA = UP_TO_32 | {"FLOAT64", "INT64", "UINT64"}
INDEX = {"INT64", "INT32", "UINT64", "UINT32"}
JOIN_1_0 = {"FLOAT32", "FLOAT16", "INT32", "INT16", "UINT32", "UINT16"}

# operator -> {first level of the table: (data row, index row)}; row = (min rank, max rank, types).
# GATHER_ND1's rows are built with a batch dimension, so it needs rank >= 2 there.
SPEC_TABLES = {
  "GATHER_ELEMENTS": {
    "2_1": ((4, 4, UP_TO_32), (4, 4, {"UINT32"})),
    "3_0": ((1, 8, UP_TO_32), (1, 8, INDEX)),
    "4_1": ((1, 8, ALL_DATA), (1, 8, INDEX)),
  },
  "GATHER_ND": {
    "2_1": ((4, 4, UP_TO_32), (4, 4, {"UINT32"})),
    "3_0": ((1, 8, UP_TO_32), (1, 8, INDEX)),
    "4_1": ((1, 8, ALL_DATA), (1, 8, INDEX)),
  },
  "GATHER_ND1": {
    "3_0": ((1, 8, UP_TO_32), (1, 8, INDEX)),
    "4_1": ((1, 8, ALL_DATA), (1, 8, INDEX)),
  },
  "REVERSE_SUBSEQUENCES": {
    "2_1": ((4, 4, UP_TO_32), (4, 4, {"UINT32"})),
    "3_0": ((4, 5, UP_TO_32), (4, 5, {"UINT32"})),
    "4_0": ((1, 8, UP_TO_32), (1, 8, {"UINT32"})),
    "5_0": ((1, 8, ALL_DATA), (1, 8, {"UINT32", "UINT64"})),
  },
  "JOIN": {
    "1_0": ((4, 4, JOIN_1_0), None),
    "2_1": ((4, 4, UP_TO_32), None),
    "3_0": ((4, 5, UP_TO_32), None),
    "3_1": ((1, 8, UP_TO_32), None),  # INFERRED: the page has no 3_1 table
    "4_1": ((1, 8, ALL_DATA), None),
  },
}
INTRODUCED = {op: min(tables, key=FeatureLevel.from_any) for op, tables in SPEC_TABLES.items()}
DATA_FIELD = {
  "GATHER_ELEMENTS": "InputTensor",
  "GATHER_ND": "InputTensor",
  "GATHER_ND1": "InputTensor",
  "REVERSE_SUBSEQUENCES": "InputTensor",
  "JOIN": "InputTensors[0]",
}
INDEX_FIELD = {
  "GATHER_ELEMENTS": "IndicesTensor",
  "GATHER_ND": "IndicesTensor",
  "GATHER_ND1": "IndicesTensor",
  "REVERSE_SUBSEQUENCES": "SequenceLengthsTensor",
}
INDEX_KEYWORD = {
  "GATHER_ELEMENTS": "indices",
  "GATHER_ND": "indices",
  "GATHER_ND1": "indices",
  "REVERSE_SUBSEQUENCES": "lengths",
}
LEVELS = [str(level) for level in FeatureLevel]


def spec_table(op: str, level: str):
  """The table in force at `level` ("FL x.y and above" until a newer one), or None."""
  starts = [s for s in SPEC_TABLES[op] if FeatureLevel.from_any(s) <= FeatureLevel.from_any(level)]
  return SPEC_TABLES[op][max(starts, key=FeatureLevel.from_any)] if starts else None


# =========================================================================== #
# The tensor layer: every tensor's own rules
# =========================================================================== #


def explicit_output(desc):
  """The descriptor with its inferred OutputTensor given explicitly.

  An inferred output is not checked against the support table again (it has
  the input's rank and data type); an explicit one is.
  """
  return dataclasses.replace(desc, output_tensor=desc.output)


def on_input(tensor: dml.TensorDesc) -> dml.JoinDesc:
  """A JOIN of one tensor: 1 to 8 dims and every data type from FL 4_1."""
  return dml.JoinDesc((tensor,), axis=0)


def test_tensor_data_type_must_not_be_unknown():
  assert_rejected(
    on_input(T("UNKNOWN", (2, 3))),
    "6_4",
    "InputTensors[0].DataType",
    "must not be UNKNOWN",
    "UNKNOWN",
  )


@pytest.mark.parametrize("level", ["1_0", "2_0", "2_1"])
def test_tensor_dimension_count_at_most_5_below_fl_3_0(level):
  desc = on_input(T("FLOAT32", (1,) * 4 + (2, 3)))  # 6-D
  assert_rejected(
    desc,
    level,
    "InputTensors[0].DimensionCount",
    "must be in [1, 5] (DML_TENSOR_DIMENSION_COUNT_MAX)",
    "6",
    hint="ranks 6 to 8 need FL >= 3_0",
  )
  # From FL 3_0 the tensor layer allows 8 (GATHER_ELEMENTS's table does too).
  assert_valid(gather_elements(6), "3_0")
  assert_valid(gather_elements(8), "3_0")


@pytest.mark.parametrize("level", ["3_0", "6_4"])
@pytest.mark.parametrize("sizes, found", [((1,) * 7 + (2, 3), "9"), ((), "0")])
def test_tensor_dimension_count_in_1_to_8(level, sizes, found):
  assert_rejected(
    on_input(T("FLOAT32", sizes)),
    level,
    "InputTensors[0].DimensionCount",
    "must be in [1, 8] (DML_TENSOR_DIMENSION_COUNT_MAX1)",
    found,
  )


@pytest.mark.parametrize("sizes", [(2, 0, 3), (0,), (2, -1)])
def test_tensor_sizes_must_be_positive(sizes):
  found = "{" + ",".join(map(str, sizes)) + "}"
  assert_rejected(
    on_input(T("FLOAT32", sizes)),
    "6_4",
    "InputTensors[0].Sizes",
    "every size must be >= 1 (DirectML has no empty tensors)",
    found,
  )


@pytest.mark.parametrize("strides", [(1,), (3, 1, 1)])
def test_tensor_strides_null_or_dimension_count_long(strides):
  found = "{" + ",".join(map(str, strides)) + "}"
  assert_rejected(
    on_input(T("FLOAT32", (2, 3), strides=strides)),
    "6_4",
    "InputTensors[0].Strides",
    "must be null or have DimensionCount (2) entries",
    found,
  )


def test_tensor_strides_are_unsigned():
  assert_rejected(
    on_input(T("FLOAT32", (2, 3), strides=(-3, 1))),
    "6_4",
    "InputTensors[0].Strides",
    "strides are UINT and cannot be negative",
    "{-3,1}",
  )


@pytest.mark.parametrize(
  "sizes, strides, count",
  [
    ((2**16, 2**16), None, 4294967296),
    ((2**32,), None, 4294967296),
    # The limit is on the index of one past the last addressed element.
    ((2, 3), (2**32 - 2, 1), 4294967297),
  ],
)
def test_tensor_element_count_below_2_to_the_32(sizes, strides, count):
  assert_rejected(
    on_input(T("UINT8", sizes, strides=strides)),
    "6_4",
    "InputTensors[0].Sizes",
    f"a buffer tensor may address at most 2**32 - 1 elements, these address {count}",
    "{" + ",".join(map(str, sizes)) + "}",
  )


@pytest.mark.parametrize(
  "sizes, strides",
  [((2**32 - 1,), None), ((2**16, 2**16 - 1), None), ((2**16, 2**16), (0, 1))],
)
def test_tensor_element_count_limit_accepts_up_to_2_to_the_32_minus_1(sizes, strides):
  assert "InputTensors[0].Sizes" not in fields_of(
    on_input(T("UINT8", sizes, strides=strides)), "6_4"
  )


@pytest.mark.parametrize(
  "data_type, sizes, strides, given, minimum",
  [
    ("FLOAT16", (3,), None, 6, 8),  # the minimum is rounded up to 4 bytes
    ("FLOAT32", (2, 3), (5, 1), 24, 32),  # strided: last addressed element
    ("FLOAT32", (2, 3), None, 0, 24),
  ],
)
def test_tensor_total_size_at_least_calc_buffer_tensor_size(
  data_type, sizes, strides, given, minimum
):
  tensor = T(data_type, sizes, strides=strides, total_tensor_size_in_bytes=given)
  assert_rejected(
    on_input(tensor),
    "6_4",
    "InputTensors[0].TotalTensorSizeInBytes",
    f"must be >= DMLCalcBufferTensorSize = {minimum}",
    str(given),
  )
  # Exactly the minimum, or more, is fine.
  for ok in (minimum, minimum + 4, 1 << 20):
    assert_valid(
      on_input(T(data_type, sizes, strides=strides, total_tensor_size_in_bytes=ok)), "6_4"
    )


@pytest.mark.parametrize(
  "data_type, alignment, element_bytes",
  [
    ("FLOAT32", 3, 4),  # not a power of two
    ("FLOAT32", 12, 4),
    ("FLOAT32", 2, 4),  # a power of two smaller than the element size
    ("FLOAT64", 4, 8),
    ("UINT8", 6, 1),
    ("FLOAT32", -4, 4),
  ],
)
def test_tensor_alignment_zero_or_power_of_two_at_least_element_size(
  data_type, alignment, element_bytes
):
  assert_rejected(
    on_input(T(data_type, (2,), guaranteed_base_offset_alignment=alignment)),
    "6_4",
    "InputTensors[0].GuaranteedBaseOffsetAlignment",
    f"must be 0 or a power of two >= the element size ({element_bytes} bytes)",
    str(alignment),
  )


@pytest.mark.parametrize(
  "data_type, alignment",
  [("FLOAT32", 0), ("FLOAT32", 4), ("FLOAT32", 16), ("FLOAT32", 256), ("UINT8", 1), ("FLOAT64", 8)],
)
def test_tensor_alignment_accepted(data_type, alignment):
  assert_valid(on_input(T(data_type, (2,), guaranteed_base_offset_alignment=alignment)), "6_4")


@pytest.mark.parametrize("flags", [2, 3, 0x80000000])
def test_tensor_flags_only_owned_by_dml(flags):
  assert_rejected(
    on_input(T("FLOAT32", (2,), flags=flags)),
    "6_4",
    "InputTensors[0].Flags",
    "the only DML_TENSOR_FLAGS bit is OWNED_BY_DML (0x1)",
    hex(flags),
  )


def test_tensor_owned_by_dml_only_on_inputs():
  owned = T("FLOAT32", (1, 1, 2, 3), flags=TensorFlags.OWNED_BY_DML)
  # On an input it is fine, on every operator.
  assert_valid(on_input(owned), "6_4")
  assert_valid(dml.GatherElementsDesc(owned, T("UINT32", (1, 1, 2, 3)), axis=3), "2_1")
  # On an output it is not.
  for desc in (
    dml.JoinDesc((T("FLOAT32", (1, 1, 2, 3)),), axis=3, output_tensor=owned),
    gather_elements(output_tensor=owned),
    gather_nd(output_tensor=owned),
    reverse_subsequences(output_tensor=owned),
  ):
    assert_rejected(
      desc,
      "6_4",
      "OutputTensor.Flags",
      "OWNED_BY_DML is allowed on input tensors only",
      "OWNED_BY_DML",
    )


def test_tensor_rules_apply_to_every_tensor_role():
  bad = dict(total_tensor_size_in_bytes=4)  # below the minimum of any {1,1,2,3} tensor here
  shape = (1, 1, 2, 3)
  cases = [
    (dml.GatherElementsDesc(T("FLOAT32", shape, **bad), T("UINT32", shape), axis=3), "InputTensor"),
    (
      dml.GatherElementsDesc(T("FLOAT32", shape), T("UINT32", shape, **bad), axis=3),
      "IndicesTensor",
    ),
    (
      dml.GatherElementsDesc(
        T("FLOAT32", shape), T("UINT32", shape), axis=3, output_tensor=T("FLOAT32", shape, **bad)
      ),
      "OutputTensor",
    ),
    (
      dml.ReverseSubsequencesDesc(
        T("FLOAT32", shape), T("UINT32", (1, 1, 2, 1), strides=(1,)), axis=3
      ),
      "SequenceLengthsTensor",
    ),
    (dml.JoinDesc((T("FLOAT32", shape), T("FLOAT32", shape, **bad)), axis=3), "InputTensors[1]"),
  ]
  for desc, role in cases:
    fields = fields_of(desc, "2_1")
    assert any(f.startswith(role + ".") for f in fields), (role, fields)


# =========================================================================== #
# Operators and the tables in force at each feature level
# =========================================================================== #


@pytest.mark.parametrize(
  "desc, level, introduced",
  [
    (gather_elements(), "2_0", "2_1"),
    (gather_elements(), "1_0", "2_1"),
    (gather_nd(), "2_0", "2_1"),
    (gather_nd1(), "2_1", "3_0"),  # BatchDimensionCount > 0 makes it GATHER_ND1
    (gather_nd1(), "1_0", "3_0"),
    (reverse_subsequences(), "2_0", "2_1"),
  ],
  ids=[
    "GATHER_ELEMENTS@2_0",
    "GATHER_ELEMENTS@1_0",
    "GATHER_ND@2_0",
    "GATHER_ND1@2_1",
    "GATHER_ND1@1_0",
    "REVERSE_SUBSEQUENCES@2_0",
  ],
)
def test_operator_must_exist_at_feature_level(desc, level, introduced):
  error = assert_rejected(
    desc,
    level,
    "DML_OPERATOR_TYPE",
    f"DML_OPERATOR_{desc.OPERATOR} exists from FL {introduced} on",
    f"FL {level}",
  )
  assert len(error.violations) == 1  # nothing else is checked for an operator that does not exist
  assert desc.is_valid(introduced)


def test_gather_nd_with_batch_dimensions_is_gather_nd1():
  assert gather_nd().OPERATOR == "GATHER_ND"
  assert gather_nd1().OPERATOR == "GATHER_ND1"
  with pytest.raises(DmlValidationError, match=r"^DML_OPERATOR_GATHER_ND1 descriptor is invalid"):
    gather_nd1().validate("2_1")


@pytest.mark.parametrize("op", list(SPEC_TABLES))
def test_every_operator_valid_from_its_introduction(op):
  # 4-D FLOAT32 data with UINT32 indices/lengths is in every table.
  desc = BUILDERS[op]()
  for level in LEVELS:
    if FeatureLevel.from_any(level) < FeatureLevel.from_any(INTRODUCED[op]):
      assert fields_of(desc, level) == ["DML_OPERATOR_TYPE"], level
    else:
      assert_valid(desc, level)


@pytest.mark.parametrize(
  "desc, level, field, allowed, found, hint",
  [
    # GATHER_ELEMENTS
    (
      gather_elements(data="FLOAT64"),
      "4_0",
      "InputTensor.DataType",
      "must be one of FLOAT32, FLOAT16, INT32, INT16, UINT32, UINT16, INT8, UINT8 for"
      " DML_OPERATOR_GATHER_ELEMENTS",
      "FLOAT64",
      "FLOAT64 is supported here from FL 4_1",
    ),
    (
      explicit_output(gather_elements(data="FLOAT64")),
      "4_0",
      "OutputTensor.DataType",
      "for DML_OPERATOR_GATHER_ELEMENTS",
      "FLOAT64",
      "FLOAT64 is supported here from FL 4_1",
    ),
    (
      gather_elements(data="INT64", rank=2),
      "3_0",
      "InputTensor.DataType",
      "for DML_OPERATOR_GATHER_ELEMENTS",
      "INT64",
      "INT64 is supported here from FL 4_1",
    ),
    (
      gather_elements(indices="INT32"),
      "2_1",
      "IndicesTensor.DataType",
      "must be one of UINT32 for DML_OPERATOR_GATHER_ELEMENTS",
      "INT32",
      "negative (signed) indices need FL >= 3_0; use an unsigned index type (UINT32) below it",
    ),
    (
      gather_elements(indices="INT64"),
      "2_1",
      "IndicesTensor.DataType",
      "must be one of UINT32",
      "INT64",
      "negative (signed) indices need FL >= 3_0",
    ),
    (
      gather_elements(indices="UINT64"),
      "2_1",
      "IndicesTensor.DataType",
      "must be one of UINT32",
      "UINT64",
      "UINT64 is supported here from FL 3_0",
    ),
    (
      gather_elements(indices="UINT16"),
      "6_4",
      "IndicesTensor.DataType",
      "must be one of INT64, INT32, UINT64, UINT32 for DML_OPERATOR_GATHER_ELEMENTS",
      "UINT16",
      None,
    ),
    (
      gather_elements(indices="FLOAT32"),
      "6_4",
      "IndicesTensor.DataType",
      "must be one of INT64, INT32, UINT64, UINT32",
      "FLOAT32",
      None,
    ),
    (
      gather_elements(data="UINT4"),
      "6_4",
      "InputTensor.DataType",
      "for DML_OPERATOR_GATHER_ELEMENTS",
      "UINT4",
      None,
    ),
    (
      gather_elements(data="INT8"),
      "2_0",
      "DML_OPERATOR_TYPE",
      "exists from FL 2_1 on",
      "FL 2_0",
      None,
    ),
    # GATHER_ND / GATHER_ND1
    (
      gather_nd(data="FLOAT64"),
      "4_0",
      "InputTensor.DataType",
      "for DML_OPERATOR_GATHER_ND",
      "FLOAT64",
      "FLOAT64 is supported here from FL 4_1",
    ),
    (
      explicit_output(gather_nd(data="UINT64", rank=1)),
      "3_1",
      "OutputTensor.DataType",
      "for DML_OPERATOR_GATHER_ND",
      "UINT64",
      "UINT64 is supported here from FL 4_1",
    ),
    (
      gather_nd(indices="INT32"),
      "2_1",
      "IndicesTensor.DataType",
      "must be one of UINT32 for DML_OPERATOR_GATHER_ND",
      "INT32",
      "negative (signed) indices need FL >= 3_0",
    ),
    (
      gather_nd(indices="INT8"),
      "6_4",
      "IndicesTensor.DataType",
      "must be one of INT64, INT32, UINT64, UINT32",
      "INT8",
      None,
    ),
    (
      gather_nd1(data="FLOAT64"),
      "3_0",
      "InputTensor.DataType",
      "for DML_OPERATOR_GATHER_ND1",
      "FLOAT64",
      "FLOAT64 is supported here from FL 4_1",
    ),
    (
      gather_nd1(indices="FLOAT16"),
      "6_4",
      "IndicesTensor.DataType",
      "must be one of INT64, INT32, UINT64, UINT32 for DML_OPERATOR_GATHER_ND1",
      "FLOAT16",
      None,
    ),
    # REVERSE_SUBSEQUENCES
    (
      reverse_subsequences(data="FLOAT64"),
      "4_0",
      "InputTensor.DataType",
      "for DML_OPERATOR_REVERSE_SUBSEQUENCES",
      "FLOAT64",
      "FLOAT64 is supported here from FL 5_0",
    ),
    (
      explicit_output(reverse_subsequences(data="INT64", rank=2)),
      "4_1",
      "OutputTensor.DataType",
      "for DML_OPERATOR_REVERSE_SUBSEQUENCES",
      "INT64",
      "INT64 is supported here from FL 5_0",
    ),
    (
      reverse_subsequences(lengths="UINT64"),
      "4_0",
      "SequenceLengthsTensor.DataType",
      "must be one of UINT32 for DML_OPERATOR_REVERSE_SUBSEQUENCES",
      "UINT64",
      "UINT64 is supported here from FL 5_0",
    ),
    (
      reverse_subsequences(lengths="UINT64"),
      "2_1",
      "SequenceLengthsTensor.DataType",
      "must be one of UINT32",
      "UINT64",
      "UINT64 is supported here from FL 5_0",
    ),
    (
      reverse_subsequences(lengths="INT32"),
      "6_4",
      "SequenceLengthsTensor.DataType",
      "must be one of UINT64, UINT32 for DML_OPERATOR_REVERSE_SUBSEQUENCES",
      "INT32",
      None,
    ),
    (
      reverse_subsequences(lengths="INT64"),
      "6_4",
      "SequenceLengthsTensor.DataType",
      "must be one of UINT64, UINT32",
      "INT64",
      None,
    ),
    (
      reverse_subsequences(lengths="UINT16"),
      "6_4",
      "SequenceLengthsTensor.DataType",
      "must be one of UINT64, UINT32",
      "UINT16",
      None,
    ),
    # JOIN
    (
      join(data="INT8"),
      "1_0",
      "InputTensors[0].DataType",
      "must be one of FLOAT32, FLOAT16, INT32, INT16, UINT32, UINT16 for DML_OPERATOR_JOIN",
      "INT8",
      "INT8 is supported here from FL 2_1",
    ),
    (
      join(data="UINT8"),
      "2_0",
      "InputTensors[1].DataType",
      "for DML_OPERATOR_JOIN",
      "UINT8",
      "UINT8 is supported here from FL 2_1",
    ),
    (
      explicit_output(join(data="INT8")),
      "1_0",
      "OutputTensor.DataType",
      "for DML_OPERATOR_JOIN",
      "INT8",
      "INT8 is supported here from FL 2_1",
    ),
    (
      join(data="FLOAT64"),
      "4_0",
      "InputTensors[0].DataType",
      "must be one of FLOAT32, FLOAT16, INT32, INT16, UINT32, UINT16, INT8, UINT8 for"
      " DML_OPERATOR_JOIN",
      "FLOAT64",
      "FLOAT64 is supported here from FL 4_1",
    ),
    (
      join(data="UINT64", rank=8),
      "3_1",
      "InputTensors[0].DataType",
      "for DML_OPERATOR_JOIN",
      "UINT64",
      "UINT64 is supported here from FL 4_1",
    ),
    (join(data="INT4"), "6_4", "InputTensors[0].DataType", "for DML_OPERATOR_JOIN", "INT4", None),
  ],
)
def test_data_type_must_be_in_the_table_of_the_feature_level(
  desc, level, field, allowed, found, hint
):
  assert_rejected(desc, level, field, allowed, found, hint)


@pytest.mark.parametrize(
  "desc, level",
  [
    (gather_elements(data="FLOAT64"), "4_1"),
    (gather_elements(data="INT64", rank=2), "4_1"),
    (gather_elements(indices="INT32"), "3_0"),
    (gather_elements(indices="UINT64", rank=1), "3_0"),
    (gather_nd(data="FLOAT64"), "4_1"),
    (gather_nd(indices="INT64", rank=2), "3_0"),
    (gather_nd1(data="UINT64"), "4_1"),
    (reverse_subsequences(data="FLOAT64"), "5_0"),
    (reverse_subsequences(lengths="UINT64"), "5_0"),
    (reverse_subsequences(data="INT8", rank=1), "4_0"),
    (join(data="INT8"), "2_1"),
    (join(data="UINT16"), "1_0"),
    (join(data="FLOAT64", rank=1), "4_1"),
  ],
)
def test_data_type_accepted_from_its_feature_level(desc, level):
  assert_valid(desc, level)
  assert_valid(desc, "6_4")


@pytest.mark.parametrize(
  "op, role", [(op, "data") for op in SPEC_TABLES] + [(op, "index") for op in INDEX_FIELD]
)
def test_data_types_follow_the_spec_table_at_every_level(op, role):
  """Cross-check of every (level, data type) against the spec's tables."""
  field = DATA_FIELD[op] if role == "data" else INDEX_FIELD[op]
  wrong = []
  for level in LEVELS:
    table = spec_table(op, level)
    for data_type in DataType:
      desc = BUILDERS[op](
        **{INDEX_KEYWORD.get(op, "data") if role == "index" else "data": data_type.name}
      )
      fields = fields_of(desc, level)
      if table is None:
        rejected = fields == ["DML_OPERATOR_TYPE"]
        if not rejected:
          wrong.append((level, data_type.name, "operator should not exist"))
        continue
      row = table[0] if role == "data" else table[1]
      should_reject = data_type.name not in row[2]
      if (field + ".DataType" in fields) != should_reject:
        wrong.append((level, data_type.name, "rejected" if not should_reject else "accepted"))
  assert not wrong, wrong


@pytest.mark.parametrize(
  "desc, level, field, supported, found, hint",
  [
    (
      gather_elements(rank=2),
      "2_1",
      "InputTensor.DimensionCount",
      "DML_OPERATOR_GATHER_ELEMENTS supports 4 dimensions",
      "2",
      "2 dimensions are supported from FL 3_0",
    ),
    (
      gather_elements(rank=2),
      "2_1",
      "IndicesTensor.DimensionCount",
      "supports 4 dimensions",
      "2",
      "2 dimensions are supported from FL 3_0",
    ),
    (
      explicit_output(gather_elements(rank=2)),
      "2_1",
      "OutputTensor.DimensionCount",
      "supports 4 dimensions",
      "2",
      "2 dimensions are supported from FL 3_0",
    ),
    (
      gather_elements(rank=5),
      "2_1",
      "InputTensor.DimensionCount",
      "supports 4 dimensions",
      "5",
      "5 dimensions are supported from FL 3_0",
    ),
    (
      gather_nd(rank=2),
      "2_1",
      "InputTensor.DimensionCount",
      "DML_OPERATOR_GATHER_ND supports 4 dimensions",
      "2",
      "2 dimensions are supported from FL 3_0",
    ),
    (
      gather_nd(rank=5),
      "2_1",
      "IndicesTensor.DimensionCount",
      "DML_OPERATOR_GATHER_ND supports 4 dimensions",
      "5",
      "5 dimensions are supported from FL 3_0",
    ),
    (
      reverse_subsequences(rank=2),
      "2_1",
      "InputTensor.DimensionCount",
      "DML_OPERATOR_REVERSE_SUBSEQUENCES supports 4 dimensions",
      "2",
      "2 dimensions are supported from FL 4_0",
    ),
    (
      reverse_subsequences(rank=5),
      "2_1",
      "SequenceLengthsTensor.DimensionCount",
      "DML_OPERATOR_REVERSE_SUBSEQUENCES supports 4 dimensions",
      "5",
      "5 dimensions are supported from FL 3_0",
    ),
    (
      reverse_subsequences(rank=6),
      "3_0",
      "InputTensor.DimensionCount",
      "DML_OPERATOR_REVERSE_SUBSEQUENCES supports 4 to 5 dimensions",
      "6",
      "6 dimensions are supported from FL 4_0",
    ),
    (
      reverse_subsequences(rank=1),
      "3_0",
      "InputTensor.DimensionCount",
      "DML_OPERATOR_REVERSE_SUBSEQUENCES supports 4 to 5 dimensions",
      "1",
      "1 dimension is supported from FL 4_0",
    ),
    (
      explicit_output(reverse_subsequences(rank=3)),
      "3_1",
      "OutputTensor.DimensionCount",
      "supports 4 to 5 dimensions",
      "3",
      "3 dimensions are supported from FL 4_0",
    ),
    (
      join(rank=2),
      "1_0",
      "InputTensors[0].DimensionCount",
      "DML_OPERATOR_JOIN supports 4 dimensions",
      "2",
      "2 dimensions are supported from FL 3_1",
    ),
    (
      join(rank=5),
      "2_1",
      "InputTensors[1].DimensionCount",
      "DML_OPERATOR_JOIN supports 4 dimensions",
      "5",
      "5 dimensions are supported from FL 3_0",
    ),
    (
      join(rank=8),
      "3_0",
      "InputTensors[0].DimensionCount",
      "DML_OPERATOR_JOIN supports 4 to 5 dimensions",
      "8",
      "8 dimensions are supported from FL 3_1",
    ),
    (
      explicit_output(join(rank=3)),
      "3_0",
      "OutputTensor.DimensionCount",
      "DML_OPERATOR_JOIN supports 4 to 5 dimensions",
      "3",
      "3 dimensions are supported from FL 3_1",
    ),
    (
      # Beyond every table: the tensor layer's limit says it, once per tensor.
      gather_nd1(rank=9),
      "6_4",
      "InputTensor.DimensionCount",
      "must be in [1, 8] (DML_TENSOR_DIMENSION_COUNT_MAX1)",
      "9",
      None,
    ),
  ],
)
def test_dimension_count_must_be_in_the_table_of_the_feature_level(
  desc, level, field, supported, found, hint
):
  assert_rejected(desc, level, field, supported, found, hint)
  fields = [v.field for v in desc.violations(level)]
  assert len(fields) == len(set(fields))  # one rank problem per tensor


@pytest.mark.parametrize(
  "desc, level",
  [
    (gather_elements(rank=1), "3_0"),
    (gather_elements(rank=8), "3_0"),
    (gather_nd(rank=1), "3_0"),
    (gather_nd1(rank=8), "3_0"),
    (reverse_subsequences(rank=5), "3_0"),
    (reverse_subsequences(rank=1), "4_0"),
    (reverse_subsequences(rank=8), "4_0"),
    (join(rank=5), "3_0"),
    # INFERRED (JOIN's page has no 3_1 table, its history says 8-D at 3_1): JOIN takes 1 to 8 dimensions from FL 3_1, not only from 4_1.
    (join(rank=8), "3_1"),
    (join(rank=1), "3_1"),
    (join(rank=8), "4_0"),
  ],
)
def test_dimension_count_accepted_from_its_feature_level(desc, level):
  assert_valid(desc, level)


@pytest.mark.parametrize("op", list(SPEC_TABLES))
def test_dimension_counts_follow_the_spec_table_at_every_level(op):
  """Cross-check of every (level, rank 1..9) against the documented tables and DimensionCount limits."""
  field = DATA_FIELD[op] + ".DimensionCount"
  wrong = []
  for level in LEVELS:
    table = spec_table(op, level)
    for rank in range(1, 10):
      if op == "GATHER_ND1" and rank == 1:
        continue  # a batch dimension needs rank >= 2 here
      violations = BUILDERS[op](rank).violations(level)
      if table is None:
        if [v.field for v in violations] != ["DML_OPERATOR_TYPE"]:
          wrong.append((level, rank, "operator should not exist"))
        continue
      low, high, _ = table[0]
      limit = 8 if FeatureLevel.from_any(level) >= FeatureLevel.FL_3_0 else 5
      by_table = any(v.field == field and "supports" in v.rule for v in violations)
      # One rank problem per tensor: past the tensor layer's limit, only the limit is reported.
      if by_table != (not low <= rank <= high and rank <= limit):
        wrong.append((level, rank, "table", by_table))
      by_layer = any(
        v.field == field and "DML_TENSOR_DIMENSION_COUNT_MAX" in v.rule for v in violations
      )
      if by_layer != (rank > limit):
        wrong.append((level, rank, "tensor layer", by_layer))
  assert not wrong, wrong


# =========================================================================== #
# Operator-level scalars: axes and counts
# =========================================================================== #


@pytest.mark.parametrize(
  "desc, found, rank, hint",
  [
    (dml.GatherElementsDesc(T("FLOAT32", (2, 3)), T("UINT32", (2, 3)), axis=2), "2", 2, None),
    (
      dml.GatherElementsDesc(T("FLOAT32", (2, 3)), T("UINT32", (2, 3)), axis=-1),
      "-1",
      2,
      "DirectML axes are UINT: negative axes do not exist",
    ),
    (
      dml.ReverseSubsequencesDesc(T("FLOAT32", (1, 1, 2, 3)), T("UINT32", (1, 1, 2, 1)), axis=4),
      "4",
      4,
      None,
    ),
    (
      dml.ReverseSubsequencesDesc(T("FLOAT32", (2, 3)), T("UINT32", (2, 1)), axis=-2),
      "-2",
      2,
      "DirectML axes are UINT",
    ),
    (dml.JoinDesc((T("FLOAT32", (1, 1, 2, 3)),) * 2, axis=4), "4", 4, None),
    (dml.JoinDesc((T("FLOAT32", (1, 1, 2, 3)),) * 2, axis=-1), "-1", 4, "DirectML axes are UINT"),
  ],
  ids=["GE-too-big", "GE-negative", "RS-too-big", "RS-negative", "JOIN-too-big", "JOIN-negative"],
)
def test_axis_must_be_below_dimension_count(desc, found, rank, hint):
  assert_rejected(desc, "6_4", "Axis", f"must be in [0, DimensionCount) = [0, {rank})", found, hint)


def test_axis_accepted_on_every_dimension():
  for axis in range(4):
    sizes = [1, 2, 3, 4]
    lengths = sizes.copy()
    lengths[axis] = 1
    assert_valid(
      dml.ReverseSubsequencesDesc(T("FLOAT32", sizes), T("UINT32", lengths), axis=axis), "2_1"
    )
    assert_valid(dml.GatherElementsDesc(T("FLOAT32", sizes), T("UINT32", sizes), axis=axis), "2_1")
    assert_valid(dml.JoinDesc((T("FLOAT32", sizes),) * 2, axis=axis), "1_0")


# =========================================================================== #
# Cross-tensor rules common to the operators
# =========================================================================== #


@pytest.mark.parametrize(
  "desc, field, reference, expected_rank, found",
  [
    (
      dml.GatherElementsDesc(T("FLOAT32", (2, 3)), T("UINT32", (1, 2, 3)), axis=1),
      "IndicesTensor.DimensionCount",
      "InputTensor",
      2,
      "3",
    ),
    (
      dml.GatherNdDesc(
        T("FLOAT32", (2, 3)),
        T("UINT32", (2, 1, 1)),
        input_dimension_count=2,
        indices_dimension_count=2,
      ),
      "IndicesTensor.DimensionCount",
      "InputTensor",
      2,
      "3",
    ),
    (
      dml.ReverseSubsequencesDesc(T("FLOAT32", (2, 3)), T("UINT32", (2,)), axis=0),
      "SequenceLengthsTensor.DimensionCount",
      "InputTensor",
      2,
      "1",
    ),
    (
      dml.JoinDesc((T("FLOAT32", (1, 2, 3)), T("FLOAT32", (2, 3))), axis=0),
      "InputTensors[1].DimensionCount",
      "InputTensors[0]",
      3,
      "2",
    ),
  ],
  ids=["GATHER_ELEMENTS", "GATHER_ND", "REVERSE_SUBSEQUENCES", "JOIN"],
)
def test_input_tensors_must_have_the_same_dimension_count(
  desc, field, reference, expected_rank, found
):
  assert_rejected(
    desc,
    "6_4",
    field,
    f"must equal {reference}.DimensionCount ({expected_rank}); pad lower-rank tensors with leading 1s",
    found,
  )


OUTPUT_CASES = {
  # op: (descriptor builder taking output_tensor, expected output sizes, reference of the DataType)
  "GATHER_ELEMENTS": (
    lambda out: dml.GatherElementsDesc(
      T("FLOAT32", (3, 3)), T("UINT32", (2, 3)), axis=0, output_tensor=out
    ),
    (2, 3),
    "InputTensor",
  ),
  "GATHER_ND": (
    lambda out: dml.GatherNdDesc(
      T("FLOAT32", (3, 4, 5, 6, 7)),
      T("UINT32", (1, 1, 1, 2, 3)),
      input_dimension_count=5,
      indices_dimension_count=3,
      output_tensor=out,
    ),
    (1, 1, 2, 6, 7),
    "InputTensor",
  ),
  "GATHER_ND1": (
    lambda out: gather_nd_desc(
      T("FLOAT32", (1, 3, 2, 2)),
      T("UINT32", (1, 3, 2, 2)),
      input_dimension_count=3,
      indices_dimension_count=3,
      batch_dimension_count=1,
      output_tensor=out,
    ),
    (1, 1, 3, 2),
    "InputTensor",
  ),
  "REVERSE_SUBSEQUENCES": (
    lambda out: dml.ReverseSubsequencesDesc(
      T("FLOAT32", (1, 1, 3, 4)), T("UINT32", (1, 1, 3, 1)), axis=3, output_tensor=out
    ),
    (1, 1, 3, 4),
    "InputTensor",
  ),
  "JOIN": (
    lambda out: dml.JoinDesc(
      (T("FLOAT32", (1, 1, 2, 3)), T("FLOAT32", (1, 1, 2, 4))), axis=3, output_tensor=out
    ),
    (1, 1, 2, 7),
    "InputTensors[0]",
  ),
}


@pytest.mark.parametrize("op", list(OUTPUT_CASES))
def test_explicit_output_with_the_expected_sizes_and_type_is_accepted(op):
  build, sizes, _ = OUTPUT_CASES[op]
  desc = build(T("FLOAT32", sizes))
  assert_valid(desc, "6_4")
  assert desc.output == T("FLOAT32", sizes)
  assert build(None).output == T("FLOAT32", sizes)  # the inferred one is the same


@pytest.mark.parametrize("op", list(OUTPUT_CASES))
def test_explicit_output_sizes_must_be_exact(op):
  build, sizes, _ = OUTPUT_CASES[op]
  wrong = sizes[:-1] + (sizes[-1] + 1,)
  rule = (
    f"must be the inputs' sizes with their Axis sizes summed: {braces(sizes)}"
    if op == "JOIN"
    else f"must be exactly {braces(sizes)}"
  )
  assert_rejected(build(T("FLOAT32", wrong)), "6_4", "OutputTensor.Sizes", rule, braces(wrong))
  # Broadcast-compatible is not enough: a 1 where the size is 2 or more.
  ones = tuple(1 if s > 1 else s for s in sizes)
  assert "OutputTensor.Sizes" in fields_of(build(T("FLOAT32", ones)), "6_4")


@pytest.mark.parametrize("op", list(OUTPUT_CASES))
def test_explicit_output_data_type_must_equal_the_input(op):
  build, sizes, reference = OUTPUT_CASES[op]
  assert_rejected(
    build(T("FLOAT16", sizes)),
    "6_4",
    "OutputTensor.DataType",
    f"must equal {reference}.DataType (FLOAT32)",
    "FLOAT16",
  )


@pytest.mark.parametrize("op", list(OUTPUT_CASES))
def test_explicit_output_dimension_count_must_equal_the_inputs(op):
  build, sizes, _ = OUTPUT_CASES[op]
  desc = build(T("FLOAT32", (1,) + sizes))
  assert_rejected(
    desc,
    "6_4",
    "OutputTensor.DimensionCount",
    f"DimensionCount ({len(sizes)})",
    str(len(sizes) + 1),
  )


# =========================================================================== #
# The error and the descriptor API
# =========================================================================== #


def _many_problems() -> dml.JoinDesc:
  return dml.JoinDesc(
    (T("FLOAT32", (1, 1, 2, 3), total_tensor_size_in_bytes=4), T("INT8", (1, 1, 3, 3))),
    axis=3,
    input_count=5,
  )


def test_every_violation_is_reported_at_once():
  with pytest.raises(
    DmlValidationError,
    match=r"^DML_OPERATOR_JOIN descriptor is invalid at"
    r" DML_FEATURE_LEVEL_6_4 \(4 problems\):\n",
  ) as info:
    _many_problems().validate()
  error = info.value
  assert [v.field for v in error.violations] == [
    "InputTensors[0].TotalTensorSizeInBytes",
    "InputCount",
    "InputTensors[1].DataType",
    "InputTensors[1].Sizes",
  ]
  lines = str(error).splitlines()
  assert len(lines) == 1 + 4
  assert all(line.startswith("  - ") for line in lines[1:])
  assert lines[1:] == [f"  - {v}" for v in error.violations]


def test_one_violation_reads_problem_singular():
  with pytest.raises(DmlValidationError, match=r"\(1 problem\):\n  - InputCount: "):
    dml.JoinDesc((), axis=0).validate()


def test_violations_returns_them_without_raising():
  desc = _many_problems()
  violations = desc.violations("6_4")
  assert isinstance(violations, tuple) and len(violations) == 4
  assert all(isinstance(v, Violation) and v.feature_level == "6_4" for v in violations)
  assert violations[1] == Violation(
    "InputCount", "must equal the number of InputTensors (2)", 5, "6_4"
  )
  assert desc.violations() == violations  # default: the newest level
  assert join().violations("2_1") == ()


@pytest.mark.parametrize(
  "level", ["4_0", "4.0", 0x4000, FeatureLevel.FL_4_0, "DML_FEATURE_LEVEL_4_0"]
)
def test_feature_level_forms_are_equivalent(level):
  desc = gather_elements(data="FLOAT64")
  assert desc.violations(level) == desc.violations("4_0") != ()
  assert not desc.is_valid(level)
  assert desc.is_valid("4_1")
  with pytest.raises(DmlValidationError, match=r"at DML_FEATURE_LEVEL_4_0 "):
    desc.validate(level)


def test_is_valid():
  assert join().is_valid() and join().is_valid("1_0")
  assert not join(data="INT8").is_valid("1_0")
  assert not _many_problems().is_valid()


def test_bad_feature_level_is_not_a_validation_error():
  with pytest.raises(TypeError, match=r"feature_level must be"):
    join().validate(3.0)
  with pytest.raises(ValueError, match=r"unknown DML_FEATURE_LEVEL") as info:
    join().validate("foo")
  assert not isinstance(info.value, DmlValidationError)


def test_error_is_a_value_error_and_pickles():
  with pytest.raises(ValueError) as info:
    _many_problems().validate("3_0")
  error = info.value
  assert isinstance(error, DmlValidationError)
  clone = pickle.loads(pickle.dumps(error))
  assert type(clone) is DmlValidationError
  assert str(clone) == str(error)
  assert clone.violations == error.violations
  assert (clone.operator, clone.feature_level) == ("JOIN", "3_0")


def test_violation_str():
  assert (
    str(Violation("Axis", "must be in [0, 2)", 3, "6_4"))
    == "Axis: must be in [0, 2); got 3 (at FL 6_4)"
  )
  assert (
    str(Violation("X.Sizes", "rule", (2, 3), "2_1", hint="do this"))
    == "X.Sizes: rule; got {2,3} (at FL 2_1). Hint: do this"
  )


def test_descriptors_are_hashable_and_compare_by_value():
  assert gather_elements() == gather_elements() and hash(gather_elements()) == hash(
    gather_elements()
  )
  assert gather_nd() == dml.GatherNdDesc(
    T("FLOAT32", (1, 1, 2, 3)), T("UINT32", (1, 1, 2, 1)), 2, 2
  )
  assert join() != join(data="FLOAT16")


@pytest.mark.parametrize(
  "make, message",
  [
    (
      lambda: dml.GatherElementsDesc(np.zeros((2, 3)), T("UINT32", (2, 3)), axis=0),
      r"InputTensor must be a TensorDesc; got ndarray",
    ),
    (
      lambda: dml.GatherElementsDesc(T("FLOAT32", (2, 3)), (2, 3), axis=0),
      r"IndicesTensor must be a TensorDesc; got tuple",
    ),
    (
      lambda: dml.GatherElementsDesc(
        T("FLOAT32", (2, 3)), T("UINT32", (2, 3)), axis=0, output_tensor="FLOAT32"
      ),
      r"OutputTensor must be a TensorDesc; got str",
    ),
    (
      lambda: dml.GatherNdDesc(T("FLOAT32", (2, 3)), {"sizes": (2, 1)}),
      r"IndicesTensor must be a TensorDesc; got dict",
    ),
    (
      lambda: dml.ReverseSubsequencesDesc(T("FLOAT32", (2, 3)), None, axis=0),
      r"SequenceLengthsTensor must be a TensorDesc; got NoneType",
    ),
    (
      lambda: dml.JoinDesc(T("FLOAT32", (2, 3)), axis=0),
      r"InputTensors must be a sequence of TensorDesc; got TensorDesc",
    ),
    (
      lambda: dml.JoinDesc((T("FLOAT32", (2, 3)), np.zeros(3)), axis=0),
      r"InputTensors\[1\] must be a TensorDesc; got ndarray",
    ),
    (
      lambda: dml.JoinDesc((T("FLOAT32", (2, 3)),), axis=0, output_tensor=(2, 3)),
      r"OutputTensor must be a TensorDesc; got tuple",
    ),
  ],
  ids=[
    "GE-input",
    "GE-indices",
    "GE-output",
    "GND-indices",
    "RS-lengths",
    "JOIN-single",
    "JOIN-item",
    "JOIN-output",
  ],
)
def test_tensor_fields_must_be_tensor_descs(make, message):
  with pytest.raises(TypeError, match=message):
    make()


@pytest.mark.parametrize(
  "make, message",
  [
    (
      lambda: dml.GatherElementsDesc(T("FLOAT32", (2, 3)), T("UINT32", (2, 3)), axis=1.0),
      r"Axis must be an integer; got float 1\.0",
    ),
    (
      lambda: dml.GatherElementsDesc(T("FLOAT32", (2, 3)), T("UINT32", (2, 3)), axis="1"),
      r"Axis must be an integer; got str '1'",
    ),
    (
      lambda: dml.GatherElementsDesc(T("FLOAT32", (2, 3)), T("UINT32", (2, 3)), axis=True),
      r"Axis must be an integer; got bool True",
    ),
    (
      lambda: dml.ReverseSubsequencesDesc(T("FLOAT32", (2, 3)), T("UINT32", (2, 1)), axis=None),
      r"Axis must be an integer; got NoneType None",
    ),
    (
      lambda: dml.JoinDesc((T("FLOAT32", (2, 3)),), axis=0.0),
      r"Axis must be an integer; got float",
    ),
    (
      lambda: dml.JoinDesc((T("FLOAT32", (2, 3)),), axis=0, input_count=1.0),
      r"InputCount must be an integer; got float",
    ),
    (
      lambda: dml.GatherNdDesc(
        T("FLOAT32", (2, 3)), T("UINT32", (2, 1)), input_dimension_count=2.0
      ),
      r"InputDimensionCount must be an integer; got float",
    ),
    (
      lambda: dml.GatherNdDesc(
        T("FLOAT32", (2, 3)), T("UINT32", (2, 1)), indices_dimension_count="2"
      ),
      r"IndicesDimensionCount must be an integer; got str",
    ),
    (
      lambda: gather_nd_desc(T("FLOAT32", (2, 3)), T("UINT32", (2, 1)), batch_dimension_count=0.5),
      r"BatchDimensionCount must be an integer; got float",
    ),
  ],
  ids=[
    "GE-float",
    "GE-str",
    "GE-bool",
    "RS-None",
    "JOIN-axis",
    "JOIN-count",
    "GND-input-count",
    "GND-indices-count",
    "GND-batch",
  ],
)
def test_attributes_must_be_integers(make, message):
  with pytest.raises(TypeError, match=message):
    make()


def test_numpy_integer_attributes_are_accepted():
  desc = dml.GatherElementsDesc(T("FLOAT32", (2, 3)), T("UINT32", (2, 3)), axis=np.int64(1))
  assert desc.axis == 1 and type(desc.axis) is int
  assert_valid(desc, "6_4")


# =========================================================================== #
# Valid descriptors are accepted (no false rejections)
# =========================================================================== #

DOC_FIXTURES = load_fixtures()


def _fixture_desc(fixture, with_output: bool) -> dml.OperatorDesc:
  """The fixture's descriptor (its operator's class from the registry), with or without the
  documented output."""
  desc = conformance.descriptor_for(fixture)
  if with_output or not all(f.optional for f in dml_fields(desc) if f.output):
    return desc  # required outputs (SPLIT's, ONE_HOT's) are never inferred
  return dataclasses.replace(desc, **{f.name: None for f in dml_fields(desc) if f.output})


@pytest.mark.parametrize("fixture", DOC_FIXTURES, ids=[f.id for f in DOC_FIXTURES])
def test_documented_examples_are_valid_at_fl_6_4(fixture):
  explicit = _fixture_desc(fixture, with_output=True)
  assert_valid(explicit, "6_4")
  inferred = _fixture_desc(fixture, with_output=False)
  assert_valid(inferred, "6_4")
  assert inferred.outputs == explicit.outputs


@pytest.mark.parametrize(
  "desc",
  [
    dml.GatherElementsDesc(T("FLOAT32", (1, 2, 3, 4)), T("UINT32", (1, 2, 5, 4)), axis=2),
    dml.GatherElementsDesc(T("INT8", (2, 2, 2, 2)), T("UINT32", (2, 2, 2, 2)), axis=0),
    dml.GatherNdDesc(
      T("FLOAT16", (1, 1, 3, 4)),
      T("UINT32", (1, 1, 2, 1)),
      input_dimension_count=2,
      indices_dimension_count=2,
    ),
    dml.GatherNdDesc(
      T("UINT16", (1, 2, 2, 2)),
      T("UINT32", (1, 1, 2, 2)),
      input_dimension_count=3,
      indices_dimension_count=2,
    ),
    dml.GatherNdDesc(T("INT32", (2, 3, 4, 5)), T("UINT32", (1, 1, 1, 4))),
    dml.ReverseSubsequencesDesc(T("UINT8", (1, 1, 3, 4)), T("UINT32", (1, 1, 3, 1)), axis=3),
    dml.ReverseSubsequencesDesc(T("INT16", (2, 3, 4, 5)), T("UINT32", (2, 1, 4, 5)), axis=1),
    dml.JoinDesc((T("INT8", (1, 1, 2, 3)), T("INT8", (1, 1, 2, 4))), axis=3),
  ],
  ids=[
    "GE-axis2",
    "GE-int8",
    "GND-tail",
    "GND-2d",
    "GND-full-tuple",
    "RS-axis3",
    "RS-axis1",
    "JOIN-int8",
  ],
)
def test_four_d_uint32_index_cases_are_valid_at_fl_2_1(desc):
  assert_valid(desc, "2_1")


def test_strided_and_padded_tensors_are_valid():
  nhwc = T("FLOAT32", (1, 1, 3, 5), strides=(15, 1, 5, 1))
  broadcast = T("FLOAT32", (1, 1, 3, 5), strides=(0, 0, 0, 1))
  padded = T(
    "FLOAT32",
    (1, 1, 3, 5),
    strides=(24, 24, 8, 1),
    total_tensor_size_in_bytes=1024,
    guaranteed_base_offset_alignment=32,
  )
  assert_valid(dml.JoinDesc((nhwc, broadcast, padded), axis=3), "1_0")
