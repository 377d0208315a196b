"""CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT: the operators' own rules and pinned cases.

Their support tables (the sum from 2_1, the product from 3_1, both 4-D with FLOAT32, FLOAT16,
INT32 and UINT32 data, 1 to 8 dimensions from 4_0, 64-bit integers from 5_0), the Axis rule
with its wording, AxisDirection and the exclusive flags, dml_jax's arithmetic (integers wrap;
floats accumulated one element at a time in walking order, in the tensor's type, the first
element starting the tally), the in-place form, the BOOL field in DirectML's JSON and model
files, jit, vmap and grad, and the explanation. What every operator shares is tested in
tests/test_contract.py and the cross-cutting files.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax._src import reference
from tests import strategies
from tests.helpers import assert_bits_equal, assert_rejected, assert_valid, explain_section

T = dml.TensorDesc
SUM, PRODUCT = dml.CumulativeSummationDesc, dml.CumulativeProductDesc


@pytest.mark.parametrize(
  "desc_type, level, data_type, rank, valid",
  [
    (SUM, "2_0", "FLOAT32", 4, False),  # introduced at 2_1
    (SUM, "2_1", "FLOAT16", 4, True),
    (SUM, "2_1", "UINT32", 3, False),  # 4-D only before 4_0
    (SUM, "4_0", "INT32", 1, True),
    (SUM, "4_0", "INT64", 2, False),  # 64-bit integers from 5_0
    (SUM, "5_0", "UINT64", 8, True),
    (SUM, "6_4", "INT16", 2, False),  # never 8- or 16-bit integers, nor FLOAT64
    (PRODUCT, "3_0", "FLOAT32", 4, False),  # introduced at 3_1
    (PRODUCT, "3_1", "INT32", 4, True),
    (PRODUCT, "5_0", "FLOAT64", 4, False),
  ],
)
def test_support_tables(desc_type, level, data_type, rank, valid):
  desc = desc_type(T(data_type, (2,) * rank), axis=0)
  assert desc.is_valid(level) == valid, desc.violations(level)


def test_axis_rule_and_inferred_output():
  assert_rejected(
    SUM(T("FLOAT32", (2, 3)), axis=2), None, "Axis", "must be in [0, DimensionCount) = [0, 2)", "2"
  )
  assert_rejected(
    PRODUCT(T("FLOAT32", (2, 3)), axis=-1),
    None,
    "Axis",
    "must be in [0, DimensionCount) = [0, 2)",
    "-1",
    hint="DirectML axes are UINT: negative axes do not exist (axis -1 of a 2-D tensor is 1)",
  )
  desc = SUM(T("UINT32", (2, 3)), axis=1)
  assert desc.outputs == (T("UINT32", (2, 3)),)
  assert_rejected(
    SUM(T("FLOAT32", (2, 3)), axis=1, output_tensor=T("FLOAT16", (2, 3))),
    None,
    "OutputTensor.DataType",
    "must equal",
    "FLOAT16",
  )
  assert_valid(SUM(T("FLOAT32", (2, 3)), axis=1, output_tensor=T("FLOAT32", (2, 3))), None)


def test_flags_are_bools():
  assert SUM(T("FLOAT32", (2,)), axis=0, has_exclusive_sum=1).has_exclusive_sum is True
  with pytest.raises(TypeError, match="HasExclusiveSum must be a bool"):
    SUM(T("FLOAT32", (2,)), axis=0, has_exclusive_sum="yes")
  with pytest.raises(TypeError, match="has_exclusive_product must be a bool"):
    dml.cumulative_product(np.ones(3, np.float32), axis=0, has_exclusive_product=2)
  desc = PRODUCT(T("INT32", (2,)), axis=0, has_exclusive_product=True)
  assert desc.to_dml()["HasExclusiveProduct"] is True
  assert PRODUCT.from_dml(desc.to_dml()) == desc
  assert "HasExclusiveProduct=TRUE" in str(desc)


def test_floats_are_accumulated_in_walking_order():
  x = np.array([1e8, 1, -1e8, 1], np.float32)  # a tree adds 1 + -1e8 first, and loses the 1
  assert_bits_equal(dml.cumulative_summation(x, axis=0), np.array([1e8, 1e8, 0, 1], np.float32))
  assert_bits_equal(
    dml.cumulative_summation(x, axis=0, axis_direction="DECREASING"),
    np.array([0, -1e8, -1e8, 1], np.float32),  # 1 - 1e8 rounds to -1e8
  )
  # FLOAT16 rounds every partial sum to FLOAT16: 2048 + 1 ties to 2048, again and again (a
  # FLOAT32 tally would reach 2050).
  h = np.array([2048, 1, 1, 1], np.float16)
  assert_bits_equal(dml.cumulative_summation(h, axis=0), np.full(4, 2048, np.float16))
  # Lanes longer than 64 take the unrolled loop: the same order, FLOAT16 rounded at each step.
  h = (np.random.default_rng(2).standard_normal((2, 100)) * 10).astype(np.float16)
  options = {"axis": 1, "axis_direction": "DECREASING"}
  assert_bits_equal(
    dml.cumulative_summation(h, **options), reference.cumulative_summation(h, **options)
  )
  # The first element starts the tally: -0.0 stays -0.0; an exclusive scan starts at +0.0.
  z = np.array([-0.0, -0.0], np.float32)
  assert_bits_equal(dml.cumulative_summation(z, axis=0), z)
  assert_bits_equal(
    dml.cumulative_summation(z, axis=0, has_exclusive_sum=True), np.array([0.0, -0.0], np.float32)
  )


def test_integers_wrap():
  u = np.array([2**32 - 1, 1, 5], np.uint32)
  assert_bits_equal(dml.cumulative_summation(u, axis=0), np.array([2**32 - 1, 0, 5], np.uint32))
  i = np.array([2**16, 2**16, 3], np.int32)
  assert_bits_equal(dml.cumulative_product(i, axis=0), np.array([2**16, 0, 0], np.int32))
  i = np.array([-(2**31), -1], np.int32)
  assert_bits_equal(dml.cumulative_product(i, axis=0), np.array([-(2**31), -(2**31)], np.int32))


def test_directions_and_exclusive_scans_against_the_reference():
  x = (np.random.default_rng(0).standard_normal((3, 5, 4)) * 4).astype(np.float32)
  options = {"axis": 1, "axis_direction": "DECREASING", "has_exclusive_sum": True}
  want = reference.cumulative_summation(x, **options)
  assert_bits_equal(dml.cumulative_summation(x, **options), want)
  i = x.astype(np.int32)
  assert_bits_equal(
    dml.cumulative_summation(i, **options), reference.cumulative_summation(i, **options)
  )
  options = {"axis": 2, "axis_direction": "INCREASING", "has_exclusive_product": False}
  want = reference.cumulative_product(x, **options)
  assert_bits_equal(dml.cumulative_product(x, **options), want)
  assert_bits_equal(want[:, :, 3], x[:, :, 0] * x[:, :, 1] * x[:, :, 2] * x[:, :, 3])


def test_natural_axis_jit_vmap_and_grad():
  x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
  want = np.array([[1, 3, 6], [4, 9, 15]], np.float32)
  assert_bits_equal(dml.cumulative_summation(x, axis=-1), want)
  assert_bits_equal(jax.jit(lambda x: dml.cumulative_summation(x, axis=1))(x), want)
  assert_bits_equal(jax.vmap(lambda r: dml.cumulative_summation(r, axis=0))(x), want)
  # f = x0 + x0 x1 + x0 x1 x2 at (1, 2, 3)
  grad = jax.grad(lambda v: dml.cumulative_product(v, axis=0).sum())(
    jnp.array([1.0, 2, 3], jnp.float32)
  )
  assert_bits_equal(grad, np.array([2 + 6 + 1, 1 + 3, 2], np.float32))


def test_in_place_on_one_buffer():
  assert SUM.IN_PLACE and PRODUCT.IN_PLACE
  buffer = np.array([2, 1, 3, 5], np.float32)
  binding = dml.Binding(buffer)
  (out,) = dml.execute(PRODUCT(T("FLOAT32", (4,)), axis=0), [binding], [binding])
  assert_bits_equal(out, np.array([2, 2, 6, 30], np.float32))


def test_a_directml_model_runs_cumulative_product():
  # DxDispatch's sample model (dml_cumulative_product.json): HasExclusiveProduct a JSON bool.
  dispatchable = {
    "type": "DML_OPERATOR_CUMULATIVE_PRODUCT",
    "desc": {
      "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 1, 4]},
      "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 1, 4]},
      "Axis": 3,
      "AxisDirection": "DML_AXIS_DIRECTION_INCREASING",
      "HasExclusiveProduct": False,
    },
  }
  document = {
    "resources": {
      "A": {"initialValuesDataType": "FLOAT32", "initialValues": [2, 4, 8, 3]},
      "Out": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 4, "value": 0}},
    },
    "dispatchables": {"cumulative_product": dispatchable},
    "commands": [
      {
        "type": "dispatch",
        "dispatchable": "cumulative_product",
        "bindings": {"InputTensor": "A", "OutputTensor": "Out"},
      }
    ],
  }
  buffers = dml.load_model(document).run()
  assert buffers["Out"].tolist() == [2, 8, 64, 192]
  dispatchable["desc"]["HasExclusiveProduct"] = 0
  with pytest.raises(dml.DmlModelError, match=r"HasExclusiveProduct: Expected a bool"):
    dml.load_model(document)


def test_explanation():
  desc = SUM(T("FLOAT16", (2, 3)), axis=1, axis_direction="DECREASING", has_exclusive_sum=True)
  lines = explain_section(dml.explain(desc), "Output:")
  assert "walked from its last element (AxisDirection DECREASING)" in lines[0]
  assert "the first element walked gets 0" in lines[1]
  assert "in the tensor's type (FLOAT16)" in " ".join(lines)


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def cumulative_case(draw, op="CUMULATIVE_SUMMATION"):
  """Either scan: any axis, either direction, inclusive or exclusive, any data type of the
  level (integers over their whole range, so that they wrap)."""
  desc_type = strategies.DESCS[op]
  level = draw(strategies.levels(op))
  table = strategies.table_at(desc_type, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  sizes = strategies.draw_sizes(draw, n, max_elements=48)
  axis = draw(st.integers(0, n - 1))
  direction = draw(st.sampled_from(list(dml.AxisDirection)))
  exclusive = draw(st.booleans())
  flag = "has_exclusive_sum" if desc_type is SUM else "has_exclusive_product"
  x = strategies.draw_data(draw, data_type, sizes)
  desc = desc_type(T(data_type, sizes), axis, direction, exclusive)
  function, oracle = getattr(dml, desc_type.FUNCTION), getattr(reference, desc_type.FUNCTION)
  options = {"axis": axis, "axis_direction": direction, flag: exclusive}
  return strategies.Case(
    desc,
    level,
    [x],
    lambda x, level: function(x, **options, feature_level=level),
    lambda: oracle(x, axis=axis, axis_direction=direction.name, **{flag: exclusive}),
  )


def cumulative_mutations(desc, level, draw):
  """The scans' own rule (Axis in range) and their output's sizes."""
  del level
  n = desc.input_tensor.dimension_count
  yield "axis out of range", strategies.rebuild(desc, {"axis": n + draw(st.integers(0, 3))}), "Axis"
  output = desc.outputs[0]
  bigger = strategies.replace_tensor(output, sizes=output.sizes[:-1] + (output.sizes[-1] + 1,))
  yield "output sizes", dataclasses.replace(desc, output_tensor=bigger), "OutputTensor.Sizes"


def sharded_cases(n, rng):
  """Lanes along axis 1: sharded across the lanes (the batch), and, for integers, whose
  scans jnp computes with the same bits, along the lanes too. jnp's float formulation is
  the walk written out, one element at a time."""
  from tests.sharding_cases import Case

  cases = []
  x = rng.integers(-(2**31), 2**31, (2 * n, 2 * n)).astype(np.int32)
  for shard in (0, 1):
    cases.append(
      Case(
        "CUMULATIVE_SUMMATION",
        f"INT32 along axis 1, DECREASING, sharded on axis {shard}",
        lambda x: dml.cumulative_summation(x, axis=1, axis_direction="DECREASING"),
        lambda x: jnp.flip(jnp.cumsum(jnp.flip(x, 1), axis=1), 1),
        [(x, shard)],
        reference.cumulative_summation(x, axis=1, axis_direction="DECREASING"),
      )
    )
  f = rng.standard_normal((2 * n, 6)).astype(np.float32)

  def in_order(x):
    tally = [x[:, :1]]
    for k in range(1, x.shape[1]):
      tally.append(tally[-1] * x[:, k : k + 1])
    return jnp.concatenate(tally, axis=1)

  cases.append(
    Case(
      "CUMULATIVE_PRODUCT",
      "FLOAT32 along axis 1, sharded on axis 0",
      lambda x: dml.cumulative_product(x, axis=1),
      in_order,
      [(f, 0)],
      reference.cumulative_product(f, axis=1),
    )
  )
  return cases


VALID = {
  "CUMULATIVE_SUMMATION": cumulative_case,
  "CUMULATIVE_PRODUCT": lambda: cumulative_case(op="CUMULATIVE_PRODUCT"),
}
MUTANTS = {"CUMULATIVE_SUMMATION": cumulative_mutations, "CUMULATIVE_PRODUCT": cumulative_mutations}
SHARDED_CASES = sharded_cases
TRACING_CALLS = {
  "cumulative_summation": lambda k: dml.cumulative_summation(
    jnp.full((3, 5), k, jnp.float32), axis=1, has_exclusive_sum=True
  ),
  "cumulative_product": lambda k: dml.cumulative_product(
    jnp.full((3, 5), k, jnp.int32), axis=0, axis_direction="DECREASING"
  ),
}
