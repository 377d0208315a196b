"""FILL_VALUE_CONSTANT and FILL_VALUE_SEQUENCE: their own rules and pinned cases.

The support tables (FLOAT64, INT64 and UINT64 for the constant from 4_1, 64-bit integers for
the sequence from 5_0, never FLOAT64), ValueDataType against OutputTensor.DataType, values
the data type cannot hold, the sequence's arithmetic bit for bit (float32, each operation
rounded, FLOAT16 rounded at the end; integers modulo 2**bits, a step in either reading of
its bits), the 64-bit policy, jit, in-place binding and model files. What every operator
shares is tested in tests/test_contract.py and the cross-cutting files.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st
from jax.sharding import NamedSharding, PartitionSpec

import dml_jax as dml
from dml_jax import DataType, TensorDesc
from dml_jax._src import reference
from tests import sharding_cases, strategies
from tests.helpers import assert_bits_equal, assert_rejected, assert_valid

T = dml.TensorDesc


def _constant(data_type="FLOAT32", value=1.0, sizes=(1, 1, 2, 4), value_data_type=None):
  return dml.FillValueConstantDesc(T(data_type, sizes), value_data_type or data_type, value)


def _sequence(data_type="FLOAT32", start=0.0, delta=1.0, sizes=(1, 1, 2, 4)):
  return dml.FillValueSequenceDesc(T(data_type, sizes), data_type, start, delta)


@pytest.mark.mode_independent
@pytest.mark.parametrize("data_type", ["FLOAT64", "INT64", "UINT64"])
def test_constant_takes_64_bit_types_from_4_1(data_type):
  desc = _constant(data_type, 3)
  assert_valid(desc, "4_1")
  assert [v.field for v in desc.violations("4_0")] == ["OutputTensor.DataType"]


@pytest.mark.mode_independent
def test_sequence_takes_64_bit_integers_from_5_0_and_never_float64():
  assert_valid(_sequence("INT64", 1, 2), "5_0")
  assert [v.field for v in _sequence("UINT64", 1, 2).violations("4_1")] == ["OutputTensor.DataType"]
  assert "OutputTensor.DataType" in [v.field for v in _sequence("FLOAT64").violations(None)]


@pytest.mark.mode_independent
def test_four_dimensions_before_4_0():
  assert_valid(_constant(sizes=(1, 1, 2, 4)), "2_1")
  assert [v.field for v in _constant(sizes=(2, 4)).violations("2_1")] == [
    "OutputTensor.DimensionCount"
  ]
  assert_valid(_constant(sizes=(2, 4)), "4_0")


@pytest.mark.mode_independent
def test_value_data_type_must_be_the_output_type():
  desc = _constant("INT16", 1, value_data_type="FLOAT32")
  assert_rejected(
    desc, None, "ValueDataType", "must equal OutputTensor.DataType (INT16)", "FLOAT32"
  )


@pytest.mark.mode_independent
@pytest.mark.parametrize(
  "desc, field, rule",
  [
    (_constant("UINT8", 256), "Value", r"must be an integer in [0, 255], exactly a UINT8"),
    (_constant("INT32", 2.5), "Value", r"must be an integer in [-2147483648, 2147483647]"),
    (_sequence("INT8", -129, 1), "ValueStart", r"must be an integer in [-128, 127]"),
    (_sequence("UINT8", 0, -129), "ValueDelta", r"must be an integer in [-128, 255]"),
    (_sequence("UINT8", 0, 256), "ValueDelta", r"must be an integer in [-128, 255]"),
    (_constant("FLOAT32", 10**400), "Value", r"must be a number a FLOAT32 can round to"),
  ],
  ids=["constant range", "fraction", "start range", "step below", "step above", "huge int"],
)
def test_values_the_data_type_cannot_hold_are_refused(desc, field, rule):
  value = str(
    getattr(desc, {"Value": "value", "ValueStart": "value_start"}.get(field, "value_delta"))
  )
  assert_rejected(desc, None, field, rule, value)


@pytest.mark.mode_independent
def test_a_step_is_either_reading_of_its_bits():
  assert _sequence("UINT8", 10, -2) == _sequence("UINT8", 10, 254)
  assert hash(_sequence("UINT8", 10, -2)) == hash(_sequence("UINT8", 10, 254))
  assert _sequence("INT8", 10, 254) == _sequence("INT8", 10, -2)
  # Written as the member reads the bits, which DxDispatch takes
  assert _sequence("UINT8", 10, -2).to_dml()["ValueDelta"] == 254
  assert _sequence("INT8", 10, 254).to_dml()["ValueDelta"] == -2
  assert _sequence("INT8", 10, 254).to_dml()["ValueStart"] == 10
  assert _constant(value=0.0) != _constant(value=-0.0)


def test_constant_writes_the_value_everywhere():
  out = dml.fill_value_constant(sizes=(2, 3), value_data_type="FLOAT16", value=0.1)
  assert_bits_equal(out, np.full((2, 3), 0.1, np.float16))  # rounded to nearest even
  out = dml.fill_value_constant(sizes=(4,), value_data_type="INT8", value=-128)
  assert_bits_equal(out, np.full(4, -128, np.int8))


def test_integer_sequences_wrap():
  out = dml.fill_value_sequence(sizes=(4,), value_data_type="INT8", value_start=120, value_delta=5)
  assert_bits_equal(out, np.array([120, 125, -126, -121], np.int8))
  out = dml.fill_value_sequence(sizes=(3,), value_data_type="UINT16", value_start=1, value_delta=-1)
  assert_bits_equal(out, np.array([1, 0, 65535], np.uint16))


@pytest.mark.parametrize("data_type", ["FLOAT32", "FLOAT16"])
def test_float_sequences_round_each_operation_in_float32(data_type):
  """The bits of ValueStart + i * ValueDelta with the product and the sum each rounded to
  float32, as the oracle computes them, which differ from a float64 or fused computation."""
  kwargs = dict(sizes=(64, 64), value_data_type=data_type, value_start=0.1, value_delta=1 / 3)
  got = np.asarray(dml.fill_value_sequence(**kwargs))
  assert_bits_equal(got, reference.fill_value_sequence(**kwargs))
  dtype = np.dtype(data_type.lower())
  start, delta = (float(np.array(v, dtype)) for v in (0.1, 1 / 3))
  i = np.arange(64 * 64, dtype=np.float64).reshape(64, 64)
  in_float64 = (start + i * delta).astype(dtype)  # one rounding, as an FMA would nearly do
  if data_type == "FLOAT32":  # FLOAT16's own rounding hides the difference here
    assert not np.array_equal(got.view(np.uint32), in_float64.view(np.uint32))


def test_signed_zeros_are_kept():
  for start, delta in [(0.0, -0.0), (-0.0, -0.0), (-0.0, 0.0)]:
    kwargs = dict(sizes=(2,), value_data_type="FLOAT32", value_start=start, value_delta=delta)
    assert_bits_equal(dml.fill_value_sequence(**kwargs), reference.fill_value_sequence(**kwargs))


def test_64_bit_outputs_need_x64(no_x64):
  with pytest.raises(TypeError, match="jax_enable_x64"):
    dml.fill_value_constant(sizes=(2,), value_data_type="INT64", value=2**40)


def test_64_bit_values_are_exact(x64):
  out = dml.fill_value_constant(sizes=(2,), value_data_type="INT64", value=2**62 + 1)
  assert_bits_equal(out, np.full(2, 2**62 + 1, np.int64))
  out = dml.fill_value_sequence(
    sizes=(3,), value_data_type="UINT64", value_start=2**64 - 1, value_delta=2**63
  )
  assert_bits_equal(out, np.array([2**64 - 1, 2**63 - 1, 2**64 - 1], np.uint64))
  out = dml.fill_value_constant(sizes=(1,), value_data_type="FLOAT64", value=0.1)
  assert_bits_equal(out, np.array([0.1]))


def test_under_jit_and_with_a_refused_level():
  fill = jax.jit(
    lambda: dml.fill_value_sequence(
      sizes=(3,), value_data_type="INT32", value_start=7, value_delta=-1
    )
  )
  assert_bits_equal(fill(), np.array([7, 6, 5], np.int32))
  # 4-D sizes only at FL 2_1: (3,) reads as (1, 1, 1, 3), and the output is cut back.
  old = dml.fill_value_constant(sizes=(3,), value_data_type="INT32", value=4, feature_level="2_1")
  assert_bits_equal(old, np.array([4, 4, 4], np.int32))
  with pytest.raises(dml.DmlValidationError, match="exists from FL 2_1"):
    dml.fill_value_constant(sizes=(3,), value_data_type="INT32", value=0, feature_level="2_0")


def test_execute_writes_in_place_over_a_buffer_also_read():
  """The fills read nothing: an output buffer that is also an input's is allowed (IN_PLACE)."""
  assert dml.FillValueConstantDesc.IN_PLACE and not dml.GatherDesc.IN_PLACE
  buffer = np.arange(8, dtype=np.uint8)
  desc = _constant("UINT8", 9, sizes=(1, 1, 1, 4))
  (out,) = dml.execute(desc, [], [dml.Binding(buffer, 0)])
  assert_bits_equal(out, np.array([9, 9, 9, 9, 4, 5, 6, 7], np.uint8))


def test_model_files_run_the_fills_through_the_registry(x64):
  """A FLOAT64 FILL_VALUE_CONSTANT (DirectML allows it from 4_1) runs from a model file."""
  model = dml.load_model(
    {
      "resources": {
        "out": {"initialValuesDataType": "FLOAT64", "initialValues": {"valueCount": 3, "value": 0}}
      },
      "dispatchables": {
        "fill": {
          "type": "DML_OPERATOR_FILL_VALUE_CONSTANT",
          "desc": {
            "OutputTensor": {"DataType": "FLOAT64", "Sizes": [3]},
            "ValueDataType": "FLOAT64",
            "Value": {"Float64": "-inf"},
          },
        }
      },
      "commands": [
        {"type": "dispatch", "dispatchable": "fill", "bindings": {"OutputTensor": "out"}}
      ],
    }
  )
  buffers = model.run()
  assert_bits_equal(buffers["out"], np.full(3, -math.inf))


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def fill_value_case(draw, op="FILL_VALUE_CONSTANT"):
  """FILL_VALUE_CONSTANT or FILL_VALUE_SEQUENCE: any data type the level has, values at the
  edges of their type (NaN, -0.0 and infinities for the constant; integers at their bounds,
  steps in either reading of their bits), finite floats for the sequence."""
  desc_type = strategies.DESCS[op]
  level = draw(strategies.levels(op))
  table = strategies.table_at(desc_type, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["OutputTensor"].data_types))
  sizes = strategies.draw_sizes(draw, n, max_elements=48)
  sequence = op == "FILL_VALUE_SEQUENCE"

  def scalar(step=False):
    if data_type.is_float:
      width = 16 if data_type == DataType.FLOAT16 else 32
      finite = st.floats(allow_nan=False, allow_infinity=False, width=width)
      if sequence:
        return draw(st.sampled_from([0.0, -0.0, 0.1, -2.5]) | finite)
      return draw(st.sampled_from([0.0, -0.0, 0.1, 1e300, math.nan, math.inf, -math.inf]) | finite)
    info = np.iinfo(data_type.numpy_dtype)
    low = -(2 ** (data_type.size_in_bits - 1)) if step else int(info.min)
    return draw(st.sampled_from([low, int(info.max), 0, 1]) | st.integers(low, int(info.max)))

  output = TensorDesc(data_type, sizes)
  if sequence:
    values = dict(value_start=scalar(), value_delta=scalar(step=True))
    function, oracle = dml.fill_value_sequence, reference.fill_value_sequence
  else:
    values = dict(value=scalar())
    function, oracle = dml.fill_value_constant, reference.fill_value_constant
  desc = desc_type(output, data_type, **values)
  kwargs = dict(sizes=sizes, value_data_type=data_type, **values)
  return strategies.Case(
    desc,
    level,
    [],
    lambda level: function(**kwargs, feature_level=level),
    lambda: oracle(**kwargs),
  )


def fill_value_mutations(desc, level, draw):
  """The fills' own rules: values in ValueDataType's range, ValueDataType the output's."""
  data_type = desc.value_data_type
  if not data_type.is_float:
    field = "value" if isinstance(desc, dml.FillValueConstantDesc) else "value_start"
    too_big = int(np.iinfo(data_type.numpy_dtype).max) + 1
    yield (
      "value range",
      dataclasses.replace(desc, **{field: too_big}),
      strategies.dml_name(desc, field),
    )
    if isinstance(desc, dml.FillValueSequenceDesc):
      low = -(2 ** (data_type.size_in_bits - 1)) - 1
      yield "step range", dataclasses.replace(desc, value_delta=low), "ValueDelta"
  yield (
    "value type",
    dataclasses.replace(
      desc, value_data_type=DataType.UINT8 if data_type != DataType.UINT8 else DataType.INT8
    ),
    "ValueDataType",
  )


def fill_value_cases(n, rng):
  """The fills read nothing: their output is written sharded on either axis (a sharding
  constraint on the call), as jnp's formulation under the same constraint is."""
  del rng
  sizes = (2 * n, n)

  def sharded(fn, axis):
    spec = PartitionSpec(*("d" if d == axis else None for d in range(len(sizes))))
    return lambda: jax.lax.with_sharding_constraint(
      fn(), NamedSharding(sharding_cases.mesh(), spec)
    )

  constant = dict(sizes=sizes, value_data_type="FLOAT32", value=1.5)
  sequence = dict(sizes=sizes, value_data_type="INT32", value_start=5, value_delta=-3)
  count = sizes[0] * sizes[1]
  return [
    case
    for axis in (0, 1)
    for case in (
      sharding_cases.Case(
        "FILL_VALUE_CONSTANT",
        f"value 1.5, written sharded on axis {axis}",
        sharded(lambda: dml.fill_value_constant(**constant), axis),
        sharded(lambda: jnp.full(sizes, 1.5, jnp.float32), axis),
        [],
        reference.fill_value_constant(**constant),
      ),
      sharding_cases.Case(
        "FILL_VALUE_SEQUENCE",
        f"5 - 3i, written sharded on axis {axis}",
        sharded(lambda: dml.fill_value_sequence(**sequence), axis),
        sharded(lambda: (5 - 3 * jnp.arange(count, dtype=jnp.int32)).reshape(sizes), axis),
        [],
        reference.fill_value_sequence(**sequence),
      ),
    )
  ]


VALID = {
  "FILL_VALUE_CONSTANT": fill_value_case,
  "FILL_VALUE_SEQUENCE": lambda: fill_value_case(op="FILL_VALUE_SEQUENCE"),
}
MUTANTS = {"FILL_VALUE_CONSTANT": fill_value_mutations, "FILL_VALUE_SEQUENCE": fill_value_mutations}
SHARDED_CASES = fill_value_cases
