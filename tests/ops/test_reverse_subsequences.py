"""REVERSE_SUBSEQUENCES (§3.3): the operator's own rules and pinned cases.

What every operator shares (the tensor layer, the support tables, the fixtures, the
property tests against the reference) is tested in the cross-cutting files under tests/.
"""

from __future__ import annotations

import numpy as np
import pytest

import dml_jax as dml
from dml_jax import DmlValidationError, FeatureLevel
from tests.helpers import (
  assert_rejected,
  braces,
  explain_section,
  violation_pattern,
)

T = dml.TensorDesc

# =========================================================================== #
# Validation (§3.3)
# =========================================================================== #


@pytest.mark.parametrize(
  "lengths_sizes, axis, expected",
  [
    ((2, 3, 4, 5), 1, "{2,1,4,5}"),  # the input's sizes, without the 1
    ((2, 1, 1, 5), 1, "{2,1,4,5}"),
    ((1, 3, 4, 5), 1, "{2,1,4,5}"),  # 1 on the wrong axis
    ((2, 3, 4, 1), 1, "{2,1,4,5}"),
    ((2, 3, 4, 2), 3, "{2,3,4,1}"),
  ],
)
def test_reverse_subsequences_lengths_are_input_sizes_with_1_on_axis(lengths_sizes, axis, expected):
  desc = dml.ReverseSubsequencesDesc(
    T("FLOAT32", (2, 3, 4, 5)), T("UINT32", lengths_sizes), axis=axis
  )
  assert_rejected(
    desc,
    "6_4",
    "SequenceLengthsTensor.Sizes",
    f"must be InputTensor.Sizes with 1 on Axis: {expected}",
    braces(lengths_sizes),
  )


def test_reverse_subsequences_onnx_style_batch_vector_is_rejected():
  # §3.3 easy-to-get-wrong 1: not a 1-D batch vector as in ONNX ReverseSequence.
  desc = dml.ReverseSubsequencesDesc(T("FLOAT32", (2, 3)), T("UINT32", (2,)), axis=1)
  assert_rejected(
    desc,
    "6_4",
    "SequenceLengthsTensor.DimensionCount",
    "must equal InputTensor.DimensionCount (2)",
    "1",
  )


def test_functional_reverse_subsequences_validates_like_the_descriptor():
  x = np.zeros((1, 1, 3, 4), np.float32)
  lengths = np.zeros((1, 1, 3, 1), np.uint32)
  with pytest.raises(DmlValidationError) as info:
    dml.reverse_subsequences(x, lengths, axis=3, feature_level=FeatureLevel.FL_2_0)
  assert info.value.violations == dml.ReverseSubsequencesDesc(
    T("FLOAT32", (1, 1, 3, 4)), T("UINT32", (1, 1, 3, 1)), axis=3
  ).violations("2_0")
  with pytest.raises(
    DmlValidationError,
    match=violation_pattern(
      "SequenceLengthsTensor.Sizes", "must be InputTensor.Sizes with 1 on Axis", "{1,1,3,4}", "6_4"
    ),
  ):
    dml.reverse_subsequences(x, np.zeros((1, 1, 3, 4), np.uint32), axis=3)


@pytest.mark.parametrize(
  "lengths_shape, strides",
  [((2, 1, 1, 1), (1, 1, 0, 0)), ((1, 1, 3, 4), (0, 12, 4, 1)), ((2, 1, 1, 4), (4, 4, 0, 1))],
)
def test_functional_lengths_with_1_on_a_dimension_are_zero_strides(lengths_shape, strides):
  """A lengths array with 1 where the input has more shares one length across that
  dimension: the descriptor has DirectML's sizes, with stride 0 there."""
  x = np.zeros((2, 5, 3, 4), np.float32)
  full = T("UINT32", (2, 1, 3, 4), strides=strides)
  desc = dml.ReverseSubsequencesDesc(T("FLOAT32", x.shape), full, axis=1)
  assert not desc.violations("6_4")
  with pytest.raises(DmlValidationError) as info:  # FL 2_0 predates the operator
    dml.reverse_subsequences(x, np.zeros(lengths_shape, np.uint32), axis=1, feature_level="2_0")
  assert info.value.violations == desc.violations("2_0")
  assert any("SequenceLengthsTensor" not in v.field for v in info.value.violations)


@pytest.mark.parametrize("lengths_shape", [(2, 1, 2, 4), (2, 2, 3, 4), (2, 1, 3), (1, 5, 1, 1)])
def test_functional_lengths_of_other_shapes_are_rejected(lengths_shape):
  """Only 1 may stand for a larger size, and never on the axis (which must be 1)."""
  x = np.zeros((2, 5, 3, 4), np.float32)
  with pytest.raises(DmlValidationError, match="SequenceLengthsTensor") as info:
    dml.reverse_subsequences(x, np.zeros(lengths_shape, np.uint32), axis=1)
  if len(lengths_shape) == 4:
    assert "Strides 0" in str(info.value)  # the hint: how to share a length


# =========================================================================== #
# Explanation
# =========================================================================== #


def test_reverse_subsequences_explains_lanes_and_clamped_lengths():
  desc = dml.ReverseSubsequencesDesc(T("INT8", (2, 5, 3)), T("UINT32", (2, 1, 3)), axis=1)
  assert explain_section(dml.explain(desc), "Output:") == [
    "OutputTensor.Sizes = InputTensor.Sizes = {2,5,3}; OutputTensor.DataType ="
    " InputTensor.DataType = INT8.",
    "Lanes run along Axis 1, 5 element(s) each; there are 6 lane(s), one length per lane:"
    " SequenceLengthsTensor.Sizes = InputTensor.Sizes with 1 on Axis = {2,1,3}.",
    "In each lane, with L = min(length, 5): out[i] = in[L - 1 - i] for i < L and out[i] = in[i]"
    " for i >= L. Lengths 0 and 1 leave the lane unchanged; lengths above 5 reverse the whole"
    " lane.",
  ]
