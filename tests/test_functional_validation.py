"""The functional API raises what the descriptor path raises (tests/test_validation.py holds
the descriptors' rules), with hints for what only the functional API sees: dtypes, traced
attributes, negative axes, non-arrays. These depend on jax_enable_x64 (64-bit arrays), so
both passes of the test command run them."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import dml_jax as dml
from dml_jax import DmlValidationError

T = dml.TensorDesc


@pytest.mark.parametrize(
  "call, message",
  [
    (
      lambda: dml.gather_elements(
        np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32), axis=0
      ),
      r"IndicesTensor must have an integer dtype; got float32",
    ),
    (
      lambda: dml.gather_elements(np.zeros((2, 3), np.float32), np.zeros((2, 3), bool), axis=0),
      r"IndicesTensor must have an integer dtype; got bool",
    ),
    (
      lambda: dml.gather_nd(np.zeros((2, 3), np.float32), np.zeros((2, 1), np.float64)),
      r"IndicesTensor must have an integer dtype; got float64",
    ),
    (
      lambda: dml.reverse_subsequences(
        np.zeros((2, 3), np.float32), np.ones((2, 1), np.float32), axis=1
      ),
      r"SequenceLengthsTensor must have an integer dtype; got float32",
    ),
    (
      lambda: dml.gather_elements(
        np.zeros((2, 3), np.float32), np.zeros((2, 3), np.uint32), axis=1.0
      ),
      r"Axis must be an integer; got float 1\.0",
    ),
    (
      lambda: dml.reverse_subsequences(
        np.zeros((2, 3), np.float32), np.ones((2, 1), np.uint32), axis="1"
      ),
      r"Axis must be an integer; got str",
    ),
    (
      lambda: dml.join([np.zeros((1, 2), np.float32)], axis=0.5),
      r"Axis must be an integer; got float",
    ),
    (
      lambda: dml.join(np.zeros((2, 2), np.float32), axis=0),
      r"inputs must be a sequence of arrays; got ndarray",
    ),
    (lambda: dml.join("ab", axis=0), r"inputs must be a sequence of arrays; got str"),
    (
      lambda: dml.gather_nd(
        np.zeros((2, 3), np.float32), np.zeros((2, 1), np.uint32), batch_dimension_count=1.0
      ),
      r"BatchDimensionCount must be an integer; got float",
    ),
    (
      lambda: dml.join([np.zeros((1, 2), np.complex64)], axis=0),
      r"DirectML has no data type for dtype complex64",
    ),
  ],
  ids=[
    "GE-float-idx",
    "GE-bool-idx",
    "GND-float-idx",
    "RS-float-len",
    "GE-axis",
    "RS-axis",
    "JOIN-axis",
    "JOIN-array",
    "JOIN-str",
    "GND-batch",
    "JOIN-complex",
  ],
)
def test_functional_api_type_errors(call, message):
  with pytest.raises(TypeError, match=message):
    call()


def test_functional_api_accepts_valid_descriptors_at_fl_2_1():
  x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
  out = dml.gather_elements(x, np.zeros((1, 2, 3, 4), np.uint32), axis=3, feature_level="2_1")
  np.testing.assert_array_equal(np.asarray(out), np.repeat(x[..., :1], 4, axis=3))
  out = dml.join([x, x], axis=1, feature_level="1_0")
  assert out.shape == (1, 4, 3, 4) and out.dtype == np.float32


# =========================================================================== #
# Messages that say what to do
# =========================================================================== #


@pytest.mark.parametrize(
  "lengths, dtype, suggestion",
  [
    (
      # A list: int32, or int64 with x64 on; the same-width unsigned type is suggested.
      [[1], [2], [3]],
      "INT(32|64)",
      r"np\.asarray\(x, np\.uint(32|64)\) \(a Python list of integers becomes INT32, or INT64"
      r" with jax_enable_x64\)",
    ),
    (np.ones((3, 1), np.int8), "INT8", r"np\.asarray\(x, np\.uint64\);"),
  ],
)
def test_a_type_no_level_allows_gets_a_cast_hint(lengths, dtype, suggestion):
  x = np.zeros((3, 4), np.float32)
  with pytest.raises(
    DmlValidationError, match=f"got {dtype} .*Hint: convert the array, e.g. {suggestion}"
  ):
    dml.reverse_subsequences(x, lengths, axis=1)


def test_a_traced_axis_says_to_make_it_static():

  x = np.zeros((3, 4), np.float32)
  f = jax.jit(lambda a, axis: dml.gather_elements(a, np.zeros((1, 4), np.int32), axis=axis))
  with pytest.raises(TypeError, match=r"Axis must be a static integer.*static_argnames"):
    f(x, 0)


def test_a_negative_axis_names_the_positive_one():
  desc = dml.GatherElementsDesc(T("FLOAT32", (3, 4)), T("INT32", (3, 1)), axis=-1)
  with pytest.raises(DmlValidationError, match=r"axis -1 of a 2-D tensor is 1\)"):
    desc.validate()
  # The functional API counts it from the end, as NumPy does.
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  out = dml.gather_elements(x, np.zeros((3, 1), np.int32), axis=-1)
  np.testing.assert_array_equal(out, x[:, :1])


@pytest.mark.parametrize("value", [None, "abc", object()])
def test_a_non_array_argument_is_named(value):
  with pytest.raises(TypeError, match=r"^InputTensor must be an array .*; got "):
    dml.gather_elements(value, np.zeros((3, 1), np.int32), axis=1)
