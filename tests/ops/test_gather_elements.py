"""GATHER_ELEMENTS (§3.1): the operator's own rules and pinned cases.

What every operator shares (the tensor layer, the support tables, the fixtures, the
property tests against the reference) is tested in the cross-cutting files under tests/.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import dml_jax as dml
from dml_jax import DmlValidationError
from tests.helpers import (
  assert_rejected,
  assert_valid,
  braces,
  explain_section,
  violation_pattern,
)

T = dml.TensorDesc

# =========================================================================== #
# Validation (§3.1)
# =========================================================================== #


@pytest.mark.parametrize(
  "indices_sizes, axis, dimension",
  [
    ((2, 4), 0, 1),  # larger off the axis
    ((2, 2), 0, 1),  # smaller off the axis: torch.gather would accept it, DML does not
    ((1, 3), 1, 0),  # differs before the axis
  ],
)
def test_gather_elements_indices_sizes_equal_input_off_axis(indices_sizes, axis, dimension):
  desc = dml.GatherElementsDesc(T("FLOAT32", (3, 3)), T("UINT32", indices_sizes), axis=axis)
  assert_rejected(
    desc,
    "6_4",
    "IndicesTensor.Sizes",
    f"must equal InputTensor.Sizes {{3,3}} in every dimension but Axis ({axis});"
    f" dimension {dimension} differs",
    braces(indices_sizes),
  )


@pytest.mark.parametrize("size_on_axis", [1, 3, 7])
def test_gather_elements_indices_size_on_axis_is_free(size_on_axis):
  desc = dml.GatherElementsDesc(T("FLOAT32", (3, 3)), T("UINT32", (size_on_axis, 3)), axis=0)
  assert_valid(desc, "6_4")
  assert desc.output == T("FLOAT32", (size_on_axis, 3))  # indices' sizes, input's type


def test_functional_gather_elements_validates_like_the_descriptor():
  x = np.zeros((2, 3), np.float32)
  i = np.zeros((2, 3), np.int32)
  with pytest.raises(DmlValidationError) as info:
    dml.gather_elements(x, i, axis=1, feature_level="2_1")
  desc = dml.GatherElementsDesc(T("FLOAT32", (2, 3)), T("INT32", (2, 3)), axis=1)
  assert info.value.violations == desc.violations("2_1")
  assert str(info.value) == str(pytest.raises(DmlValidationError, desc.validate, "2_1").value)
  assert re.search(
    violation_pattern(
      "IndicesTensor.DataType",
      "must be one of UINT32",
      "INT32",
      "2_1",
      "negative (signed) indices need FL >= 3_0",
    ),
    str(info.value),
  )


# =========================================================================== #
# Explanation
# =========================================================================== #


def test_gather_elements_output_is_the_indices_sizes_and_the_input_type():
  desc = dml.GatherElementsDesc(T("FLOAT16", (3, 4)), T("INT64", (3, 7)), axis=1)
  output = explain_section(dml.explain(desc), "Output:")
  assert output == [
    "out[o] = InputTensor[o with o[1] := IndicesTensor[o]]: every output element reads one"
    " input element of its own lane along Axis 1.",
    "OutputTensor.Sizes = IndicesTensor.Sizes = {3,7}: one output element per index.",
    "IndicesTensor.Sizes must equal InputTensor.Sizes {3,4} off Axis 1; on Axis 1 it is free:"
    " 7 index(es) per lane of 4 element(s).",
    "OutputTensor.DataType = InputTensor.DataType = FLOAT16 (not the index type INT64).",
  ]
