"""ARGMIN and ARGMAX: the operators' own rules and pinned cases.

Their support table (from 3_0: 1 to 8 dimensions, data of up to 32 bits, an output of
INT32, INT64, UINT32 or UINT64), each rule with its wording (AxisCount, at least one axis,
axes in range and distinct, the output's sizes and rank; the output's data type is its
own), the tie rule of AxisDirection, the flattened position over several axes (in
increasing dimension order whatever Axes lists), dml_jax's order for NaN and signed zeros
(shared with TOP_K), the 64-bit output policy, jit and vmap, and the explanation. What
every operator shares is tested in tests/test_contract.py and the cross-cutting files.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import TensorDesc
from dml_jax._src import reference
from tests import sharding_cases, strategies
from tests.helpers import assert_bits_equal, assert_rejected, assert_valid, explain_section

T = dml.TensorDesc
NAN = np.float32("nan")
OPS = [
  (dml.ArgMinDesc, dml.argmin, reference.argmin),
  (dml.ArgMaxDesc, dml.argmax, reference.argmax),
]


@pytest.mark.parametrize(
  "level, rank, data_type, output_type, valid",
  [
    ("2_1", 4, "FLOAT32", "UINT32", False),  # introduced at 3_0
    ("3_0", 1, "FLOAT16", "UINT32", True),
    ("3_0", 8, "INT8", "INT64", True),
    ("3_0", 2, "UINT16", "INT32", True),
    ("6_4", 2, "FLOAT32", "UINT64", True),
    ("6_4", 2, "FLOAT64", "UINT32", False),  # no 64-bit data at any level
    ("6_4", 2, "INT64", "UINT32", False),
    ("6_4", 2, "FLOAT32", "UINT16", False),  # index types only
    ("6_4", 2, "FLOAT32", "FLOAT32", False),
  ],
)
@pytest.mark.parametrize("desc_type", [dml.ArgMinDesc, dml.ArgMaxDesc])
def test_support_table(desc_type, level, rank, data_type, output_type, valid):
  sizes = (2,) * rank
  desc = desc_type(T(data_type, sizes), (0,), T(output_type, (1,) + sizes[1:]))
  assert desc.is_valid(level) is valid, desc.violations(level)


@pytest.mark.parametrize("desc_type", [dml.ArgMinDesc, dml.ArgMaxDesc])
def test_rules_name_the_field(desc_type):
  x = T("FLOAT32", (2, 3, 4))
  assert_valid(desc_type(x, (2, 0)), None)
  assert_rejected(desc_type(x, ()), None, "Axes", "at least one axis", "{}")
  assert_rejected(desc_type(x, (3,)), None, "Axes", "must be in [0, DimensionCount) = [0, 3)", "3")
  assert_rejected(desc_type(x, (1, 2, 1)), None, "Axes", "1 repeat(s)", "{1,2,1}")
  assert_rejected(desc_type(x, (1,), axis_count=2), None, "AxisCount", "Axes (1)", "2")
  assert_rejected(
    desc_type(x, (1,), T("UINT32", (2, 3, 4))),
    None,
    "OutputTensor.Sizes",
    "with 1 on every axis of Axes {1}: {2,1,4}",
    "{2,3,4}",
  )
  assert_rejected(
    desc_type(x, (1,), T("UINT32", (2, 1))), None, "OutputTensor.DimensionCount", "3", "2"
  )
  # The output's data type is its own (an index type), never the input's.
  assert_valid(desc_type(x, (1,), T("INT64", (2, 1, 4))), None)


def test_output_is_inferred_as_uint32_and_a_given_one_is_kept():
  desc = dml.ArgMaxDesc(T("INT8", (2, 5)), (1,))
  assert desc.output == T("UINT32", (2, 1))
  given = dml.ArgMaxDesc(T("INT8", (2, 5)), (1,), T("INT32", (2, 1)))
  assert given.output == T("INT32", (2, 1)) and given.infer_output() == given.output


@pytest.mark.parametrize("desc_type, function, oracle", OPS)
def test_the_pages_tie_rule(desc_type, function, oracle):
  # DirectML's pages: argmax({3,2,1,2,3}) is 0 INCREASING, 4 DECREASING; argmin of
  # {1,2,3,2,1} likewise.
  x = np.array([[3, 2, 1, 2, 3]] if desc_type is dml.ArgMaxDesc else [[1, 2, 3, 2, 1]], np.float32)
  for direction, want in (("INCREASING", 0), ("DECREASING", 4)):
    got = function(x, axes=(1,), axis_direction=direction)
    assert_bits_equal(got, np.array([[want]], np.uint32))
    assert_bits_equal(oracle(x, axes=(1,), axis_direction=direction), got)


def test_nan_ranks_above_infinity_and_zeros_tie():
  x = np.array([[-0.0, 0.0, np.inf, NAN, 1.0, -NAN]], np.float32)
  assert int(dml.argmax(x, axes=(1,))[0, 0]) == 3  # the first NaN, whatever its sign
  assert int(dml.argmax(x, axes=(1,), axis_direction=1)[0, 0]) == 5
  assert int(dml.argmin(x, axes=(1,))[0, 0]) == 0  # -0.0 and 0.0 tie: the first
  assert int(dml.argmin(x, axes=(1,), axis_direction=1)[0, 0]) == 1
  all_nan = np.full((1, 3), NAN, np.float32)
  assert int(dml.argmin(all_nan, axes=(1,), axis_direction="DECREASING")[0, 0]) == 2
  # NumPy picks the NaN for argmin too; dml_jax's one order does not.
  assert np.argmin(x[0]) == 3 and int(reference.argmin(x, axes=(1,))[0, 0]) == 0


def test_subnormals_rank_by_value():
  tiny = np.finfo(np.float16).smallest_subnormal
  x = np.array([[0.0, tiny, -tiny, 2 * tiny]], np.float16)
  assert int(dml.argmax(x, axes=(1,))[0, 0]) == 3
  assert int(dml.argmin(x, axes=(1,))[0, 0]) == 2


def test_several_axes_give_a_row_major_position_in_dimension_order():
  rng = np.random.default_rng(0)
  x = rng.permutation(24).astype(np.int16).reshape(2, 3, 4)
  for axes in ((2, 0), (0, 2)):  # the order Axes lists them in does not matter
    got = dml.argmax(x, axes=axes)
    assert got.shape == (1, 3, 1)
    want = np.argmax(np.moveaxis(x, 1, 0).reshape(3, 8), axis=1)  # (axis 0, axis 2) flattened
    assert_bits_equal(got.reshape(3), want.astype(np.uint32))
    assert_bits_equal(reference.argmax(x, axes=axes), got)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint32])
def test_integer_extremes(dtype):
  info = np.iinfo(dtype)
  x = np.array([[0, info.max, info.min, info.max, info.min]], dtype)
  assert int(dml.argmax(x, axes=(1,))[0, 0]) == 1
  assert int(dml.argmin(x, axes=(1,), axis_direction="DECREASING")[0, 0]) == 4


@pytest.mark.parametrize("output_type", ["INT32", "UINT32"])
def test_output_data_types(output_type):
  x = np.array([[1, 9, 9]], np.float32)
  got = dml.argmax(x, axes=(1,), output_data_type=output_type)
  assert got.dtype == np.dtype(output_type.lower()) and int(got[0, 0]) == 1


def test_64_bit_output_with_x64_off_is_refused(no_x64):
  x = np.ones((1, 3), np.float32)
  with pytest.raises(TypeError, match=r"OutputTensor is UINT64.*jax_enable_x64"):
    dml.argmax(x, axes=(1,), output_data_type="UINT64")


def test_64_bit_output_with_x64_on(x64):
  x = np.array([[1, 9, 9]], np.float32)
  got = dml.argmin(x, axes=(1,), output_data_type=np.int64, axis_direction="DECREASING")
  assert_bits_equal(got, np.array([[0]], np.int64))


def test_jit_and_vmap():
  rng = np.random.default_rng(1)
  x = rng.integers(0, 3, (5, 2, 6)).astype(np.float32)
  fn = jax.jit(jax.vmap(lambda x: dml.argmax(x, axes=(1,), axis_direction="DECREASING")))
  want = np.stack([reference.argmax(v, axes=(1,), axis_direction="DECREASING") for v in x])
  assert_bits_equal(fn(x), want)


def test_bad_arguments_are_type_and_value_errors():
  x = np.ones((2, 2), np.float32)
  with pytest.raises(TypeError, match="Axes must be a sequence of integers"):
    dml.argmax(x, axes=1)
  with pytest.raises(ValueError, match="AxisDirection must be one of INCREASING"):
    dml.argmin(x, axes=(0,), axis_direction="UP")
  with pytest.raises(TypeError, match="expected a DML_TENSOR_DATA_TYPE"):
    dml.argmin(x, axes=(0,), output_data_type="INDEX")


def test_explanation():
  text = dml.explain(dml.ArgMaxDesc(T("FLOAT16", (2, 3, 4)), (2, 0), axis_direction=1))
  output = explain_section(text, "Output:")
  assert any("largest of the 8 input element(s)" in line for line in output)
  assert any("Axes {0,2}" in line for line in output)
  assert any("the last position wins" in line for line in output)
  assert any("{1,3,1}" in line for line in output)


@pytest.mark.parametrize("function", [dml.argmin, dml.argmax], ids=["argmin", "argmax"])
def test_negative_axes_count_from_the_end(function):
  x = np.random.default_rng(3).integers(0, 4, (2, 3, 4)).astype(np.float32)
  for negative, axes in [((-1,), (2,)), ((-3, -1), (0, 2)), ((1, -1), (1, 2))]:
    assert_bits_equal(function(x, axes=negative), function(x, axes=axes))
  with pytest.raises(dml.DmlValidationError, match="Axes"):
    function(x, axes=(-4,))


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def arg_min_max_case(draw, op="ARGMAX"):
  """ARGMIN or ARGMAX: any non-empty set of axes in any order, either direction, any index
  type of the output, and values with many ties, signed zeros and NaNs."""
  desc_type = strategies.DESCS[op]
  level = draw(strategies.levels(op))
  table = strategies.table_at(desc_type, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  output_type = draw(st.sampled_from(table["OutputTensor"].data_types))
  sizes = strategies.draw_sizes(draw, n, max_elements=48)
  axes = tuple(draw(st.permutations(range(n)))[: draw(st.integers(1, n))])
  direction = draw(st.sampled_from(list(dml.AxisDirection)))
  x = strategies.draw_selection_data(draw, data_type, sizes)
  reduced = tuple(1 if d in axes else size for d, size in enumerate(sizes))
  desc = desc_type(
    TensorDesc(data_type, sizes), axes, TensorDesc(output_type, reduced), axis_direction=direction
  )
  function, oracle = getattr(dml, desc_type.FUNCTION), getattr(reference, desc_type.FUNCTION)
  return strategies.Case(
    desc,
    level,
    [x],
    lambda x, level: function(
      x, axes=axes, axis_direction=direction, output_data_type=output_type, feature_level=level
    ),
    lambda: oracle(x, axes=axes, axis_direction=direction.name, output_data_type=output_type.name),
  )


def arg_min_max_mutations(desc, level, draw):
  """ARGMIN and ARGMAX's own rules: one axis at least, AxisCount, axes once and in range."""
  n = desc.input_tensor.dimension_count
  yield "no axes", strategies.rebuild(desc, {"axes": (), "axis_count": None}), "Axes"
  yield "axis count", strategies.rebuild(desc, {"axis_count": len(desc.axes) + 1}), "AxisCount"
  yield "repeated axis", strategies.rebuild(desc, {"axes": desc.axes + desc.axes[:1]}), "Axes"
  yield (
    "axis out of range",
    strategies.rebuild(desc, {"axes": (n + draw(st.integers(0, 3)),)}),
    "Axes",
  )


def arg_min_max_cases(n, rng):
  cases = []
  x = rng.standard_normal((2 * n, 2 * n)).astype(np.float32)
  for operator, function, jnp_pick in (
    ("ARGMIN", dml.argmin, jnp.argmin),
    ("ARGMAX", dml.argmax, jnp.argmax),
  ):
    oracle = getattr(reference, function.__name__)
    for axis in (0, 1):
      for shard in (0, 1):
        cases.append(
          sharding_cases.Case(
            operator,
            f"along axis {axis}, sharded on axis {shard}",
            lambda x, function=function, axis=axis: function(x, axes=(axis,)),
            lambda x, jnp_pick=jnp_pick, axis=axis: jnp_pick(x, axis, keepdims=True).astype(
              jnp.uint32
            ),
            [(x, shard)],
            oracle(x, axes=(axis,)),
          )
        )
  return cases


VALID = {"ARGMIN": lambda: arg_min_max_case(op="ARGMIN"), "ARGMAX": arg_min_max_case}
MUTANTS = {"ARGMIN": arg_min_max_mutations, "ARGMAX": arg_min_max_mutations}
SHARDED_CASES = arg_min_max_cases
