"""ELEMENT_WISE_IF: the UINT8 condition, equal sizes (broadcasting through strides only), the
bits of the selected values, and gradients to both values."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import DataType, TensorDesc
from dml_jax._src import reference
from tests import sharding_cases, strategies
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


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def element_wise_if_case(draw):
  """ELEMENT_WISE_IF: a UINT8 condition with zeros and several nonzero values."""
  level = draw(strategies.levels("ELEMENT_WISE_IF"))
  table = strategies.table_at(dml.ElementWiseIfDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["ATensor"].data_types))
  sizes = strategies.draw_sizes(draw, n)
  rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
  condition = rng.choice(np.array([0, 0, 1, 2, 255], np.uint8), sizes)
  a, b = strategies.draw_data(draw, data_type, sizes), strategies.draw_data(draw, data_type, sizes)
  desc = dml.ElementWiseIfDesc(
    *(TensorDesc(t, sizes) for t in (DataType.UINT8, data_type, data_type))
  )
  return strategies.Case(
    desc,
    level,
    [condition, a, b],
    lambda c, a, b, level: dml.element_wise_if(c, a, b, feature_level=level),
    lambda: reference.element_wise_if(condition, a, b),
  )


def element_wise_if_mutations(desc, level, draw):
  """ELEMENT_WISE_IF's own rules: B's type, the condition's sizes."""
  a = desc.a_tensor
  other = DataType.INT8 if a.data_type != DataType.INT8 else DataType.UINT8
  yield (
    "B type",
    dataclasses.replace(desc, b_tensor=strategies.replace_tensor(desc.b_tensor, data_type=other)),
    "BTensor.DataType",
  )
  sizes = a.sizes[:-1] + (a.sizes[-1] + 1,)
  yield (
    "condition sizes",
    dataclasses.replace(
      desc,
      condition_tensor=strategies.replace_tensor(
        desc.condition_tensor, sizes=sizes, total_tensor_size_in_bytes=None
      ),
    ),
    "ConditionTensor.Sizes",
  )


def element_wise_if_cases(n, rng):
  condition = rng.integers(0, 2, (2 * n, n), dtype=np.uint8)
  a, b = (rng.standard_normal((2 * n, n)).astype(np.float32) for _ in range(2))
  return [
    sharding_cases.Case(
      "ELEMENT_WISE_IF",
      f"sharded on axis {shard}",
      dml.element_wise_if,
      lambda c, a, b: jnp.where(c != 0, a, b),
      [(condition, shard), (a, shard), (b, shard)],
      reference.element_wise_if(condition, a, b),
    )
    for shard in (0, 1)
  ]


VALID = {"ELEMENT_WISE_IF": element_wise_if_case}
MUTANTS = {"ELEMENT_WISE_IF": element_wise_if_mutations}
SHARDED_CASES = element_wise_if_cases
