"""ELEMENT_WISE_IF: the UINT8 condition, equal sizes (broadcasting through strides only), the
bits of the selected values, and gradients to both values."""

from __future__ import annotations

import jax
import numpy as np

import dml_jax as dml
from dml_jax._src import reference
from tests.helpers import assert_bits_equal, assert_rejected, assert_valid

T = dml.TensorDesc


def test_element_wise_if_any_nonzero_byte_selects_a_and_the_bits_are_copied():
  condition = np.array([0, 1, 2, 128, 255, 0], np.uint8)
  a = np.array([1, -0.0, np.nan, 4, 5, 6], np.float32)
  b = np.array([-0.0, 8, 9, 10, 11, np.inf], np.float32)
  want = np.array([-0.0, -0.0, np.nan, 4, 5, np.inf], np.float32)
  assert_bits_equal(dml.element_wise_if(condition, a, b), want)
  assert_bits_equal(reference.element_wise_if(condition, a, b), want)


def test_element_wise_if_condition_must_be_uint8():
  desc = dml.ElementWiseIfDesc(T("INT8", (2,)), T("FLOAT32", (2,)), T("FLOAT32", (2,)))
  assert_rejected(desc, "6_4", "ConditionTensor.DataType", "must be one of UINT8", "INT8")


def test_element_wise_if_sizes_and_types_must_agree():
  desc = dml.ElementWiseIfDesc(T("UINT8", (2, 1)), T("INT16", (2, 3)), T("UINT16", (2, 3)))
  error = assert_rejected(
    desc, "6_4", "ConditionTensor.Sizes", "must equal ATensor.Sizes {2,3}", "{2,1}"
  )
  assert "stride of 0" in str(error)  # what to do instead: broadcast through strides
  assert_rejected(desc, "6_4", "BTensor.DataType", "must equal ATensor.DataType (INT16)", "UINT16")


def test_element_wise_if_broadcasts_through_zero_strides_on_buffers():
  # A condition row repeated down the rows by a stride of 0: DirectML's broadcasting.
  row = dml.TensorDesc("UINT8", (2, 3), strides=(0, 1))
  desc = dml.ElementWiseIfDesc(row, T("INT32", (2, 3)), T("INT32", (2, 3)))
  assert_valid(desc, "6_4")
  condition = np.array([1, 0, 1, 0], np.uint8)  # one row of 3, read for both rows
  a, b = np.arange(6, dtype=np.int32), -np.arange(6, dtype=np.int32)
  inputs = [dml.Binding(condition), dml.Binding(a), dml.Binding(b)]
  (out,) = dml.execute(desc, inputs, [dml.Binding(np.zeros(6, np.int32))])
  assert_bits_equal(np.asarray(out), np.array([0, -1, 2, 3, -4, 5], np.int32))


def test_element_wise_if_levels():
  half = dml.ElementWiseIfDesc(*(T(t, (1, 1, 2, 2)) for t in ("UINT8", "FLOAT16", "FLOAT16")))
  assert_valid(half, "2_0")
  single = dml.ElementWiseIfDesc(*(T(t, (2, 2)) for t in ("UINT8", "FLOAT32", "FLOAT32")))
  assert_rejected(single, "2_0", "ATensor.DataType", "must be one of FLOAT16", "FLOAT32")
  assert_valid(single, "3_0")
  wide = dml.ElementWiseIfDesc(*(T(t, (2,)) for t in ("UINT8", "INT64", "INT64")))
  assert_rejected(wide, "4_1", "ATensor.DataType", "must be one of", "INT64")
  assert_valid(wide, "5_0")


def test_element_wise_if_under_jit_vmap_and_grad():
  condition = np.array([[1, 0, 3], [0, 0, 1]], np.uint8)
  a = np.arange(6, dtype=np.float32).reshape(2, 3)
  b = -a - 1
  want = reference.element_wise_if(condition, a, b)
  assert_bits_equal(jax.jit(dml.element_wise_if)(condition, a, b), want)
  assert_bits_equal(jax.vmap(dml.element_wise_if)(condition, a, b), want)
  da, db = jax.grad(lambda a, b: dml.element_wise_if(condition, a, b).sum(), (0, 1))(a, b)
  assert_bits_equal(da, (condition != 0).astype(np.float32))
  assert_bits_equal(db, (condition == 0).astype(np.float32))
