"""ONE_HOT: the operator's own rules and pinned cases.

Its support tables (2_0: 4 dimensions, UINT32 indices, float values; 2_1: integer values;
3_0: 1 to 8 dimensions and every index type; 4_1: 64-bit values), each of its rules with its
wording (one rank, Axis in range, size 1 on Axis, at least 2 values, the output's data type,
sizes and rank, and the required OutputTensor), the index rule (signed indices count from the
end, anything else outside [0, depth) gives a sequence of OffValue only, 64-bit indices judged
in their own width), OffValue and OnValue in row-major order, the functional API under jit,
vmap and grad, checked mode, its explanation, a property test against the NumPy reference in
both x64 modes, and the reference against a vectorised NumPy formulation. What every operator
shares is tested in tests/test_contract.py and the cross-cutting files.
"""

from __future__ import annotations

import contextlib
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import DmlValidationError, FeatureLevel, TensorDesc
from dml_jax._src import reference
from dml_jax._src.ops.one_hot import _on_positions
from tests import sharding_cases, strategies
from tests.helpers import (
  CROSS_CHECK_SEEDS,
  assert_bits_equal,
  assert_rejected,
  assert_valid,
  examples,
  explain_section,
  parse_html,
)

T = dml.TensorDesc
UP_TO_32 = ("FLOAT32", "FLOAT16", "INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8")


def _desc(indices=("UINT32", (1, 1, 3, 1)), values=("FLOAT32", (1, 1, 1, 2)), output=None, axis=3):
  """A ONE_HOT descriptor; the output defaults to the indices' sizes with depth 4 on `axis`."""
  if output is None:
    sizes = list(indices[1])
    if 0 <= axis < len(sizes):
      sizes[axis] = 4
    output = (values[0], tuple(sizes))
  return dml.OneHotDesc(T(*indices), T(*values), T(*output), axis=axis)


# =========================================================================== #
# Support tables
# =========================================================================== #


@pytest.mark.parametrize(
  "level, rank, index_type, data_type, valid",
  [
    ("2_0", 4, "UINT32", "FLOAT32", True),
    ("2_0", 4, "UINT32", "FLOAT16", True),
    ("2_0", 4, "UINT32", "INT32", False),  # integer values from 2_1
    ("2_0", 3, "UINT32", "FLOAT32", False),  # 4 dimensions only before 3_0
    ("2_1", 4, "UINT32", "UINT8", True),
    ("2_1", 4, "INT32", "FLOAT32", False),  # signed (negative) indices from 3_0
    ("2_1", 5, "UINT32", "FLOAT32", False),
    ("3_0", 1, "INT64", "INT8", True),
    ("3_0", 8, "UINT64", "UINT16", True),
    ("3_0", 2, "INT32", "FLOAT64", False),  # 64-bit values from 4_1
    ("4_1", 2, "UINT32", "FLOAT64", True),
    ("4_1", 3, "INT64", "UINT64", True),
    ("6_4", 8, "INT32", "INT64", True),
  ],
)
def test_support_tables(level, rank, index_type, data_type, valid):
  sizes = (2,) * (rank - 1) + (1,)
  desc = _desc((index_type, sizes), (data_type, (1,) * (rank - 1) + (2,)), axis=rank - 1)
  fields = [v.field for v in desc.violations(level)]
  assert (fields == []) is valid, fields
  if not valid:
    roles = {"IndicesTensor", "ValuesTensor", "OutputTensor"}
    assert {f.split(".")[0] for f in fields} <= roles
    assert {f.split(".")[1] for f in fields} <= {"DataType", "DimensionCount"}


@pytest.mark.parametrize("data_type", UP_TO_32)
def test_every_32_bit_value_type_from_2_1(data_type):
  assert_valid(_desc(values=(data_type, (1, 1, 1, 2))), "2_1")


def test_one_hot_exists_from_2_0():
  assert dml.OneHotDesc.SUPPORT.introduced == FeatureLevel.FL_2_0
  assert_valid(_desc(), "2_0")
  assert [v.field for v in _desc().violations("1_0")] == ["DML_OPERATOR_TYPE"]


def test_signed_indices_below_3_0_are_refused_with_a_hint():
  assert_rejected(
    _desc(("INT32", (1, 1, 3, 1))),
    "2_1",
    "IndicesTensor.DataType",
    "must be one of UINT32 for DML_OPERATOR_ONE_HOT",
    "INT32",
    hint="negative (signed) indices need FL >= 3_0",
  )


# =========================================================================== #
# Validation: one test per rule
# =========================================================================== #


def test_values_must_have_the_indices_rank():
  assert_rejected(
    _desc(values=("FLOAT32", (1, 2))),
    None,
    "ValuesTensor.DimensionCount",
    "must equal IndicesTensor.DimensionCount (4); pad lower-rank tensors with leading 1s",
    "2",
  )


def test_output_must_have_the_indices_rank():
  desc = _desc(output=("FLOAT32", (1, 3, 4)))
  assert_rejected(
    desc, None, "OutputTensor.DimensionCount", "must equal IndicesTensor.DimensionCount (4)", "3"
  )


@pytest.mark.parametrize("axis", [4, 7])
def test_axis_must_be_below_the_dimension_count(axis):
  desc = _desc(output=("FLOAT32", (1, 1, 3, 4)), axis=axis)
  assert_rejected(desc, "3_0", "Axis", "must be in [0, DimensionCount) = [0, 4)", str(axis))
  with pytest.raises(DmlValidationError, match="  - Axis: "):
    dml.one_hot(np.zeros((3, 1), np.uint32), np.ones((1, 2), np.float32), axis=2, depth=4)


@pytest.mark.parametrize("sizes, axis", [((1, 1, 3, 2), 3), ((2, 1, 3, 1), 0)])
def test_indices_have_size_1_on_axis(sizes, axis):
  output = list(sizes)
  output[axis] = 4
  desc = _desc(("UINT32", sizes), output=("FLOAT32", tuple(output)), axis=axis)
  assert_rejected(
    desc,
    None,
    "IndicesTensor.Sizes",
    f"must be 1 on Axis ({axis}): one index per sequence",
    "{" + ",".join(map(str, sizes)) + "}",
    hint="unlike ONNX OneHot no axis is inserted",
  )


@pytest.mark.parametrize("sizes", [(1, 1, 1, 1), (1,)])
def test_values_hold_at_least_2_elements(sizes):
  rank = len(sizes)
  desc = _desc(("UINT32", (1,) * rank), ("INT8", sizes), axis=rank - 1)
  assert_rejected(
    desc,
    None,
    "ValuesTensor.Sizes",
    "must hold at least 2 elements (OffValue, then OnValue); it holds 1",
    "{" + ",".join(map(str, sizes)) + "}",
  )


def test_values_of_any_sizes_with_2_elements_are_valid():
  for values in ((2, 1, 1, 1), (1, 3, 1, 1), (1, 1, 2, 5)):
    assert_valid(_desc(values=("FLOAT16", values)), "2_0")


def test_output_data_type_follows_values_not_indices():
  desc = _desc(values=("FLOAT16", (1, 1, 1, 2)), output=("UINT32", (1, 1, 3, 4)))
  assert_rejected(
    desc, None, "OutputTensor.DataType", "must equal ValuesTensor.DataType (FLOAT16)", "UINT32"
  )
  assert _desc(values=("INT8", (1, 1, 1, 2))).output.data_type == dml.DataType.INT8


@pytest.mark.parametrize(
  "output, expected",
  [((1, 1, 4, 4), "{1,1,3,4}"), ((2, 1, 3, 4), "{1,1,3,4}"), ((1, 3, 1, 5), "{1,1,3,5}")],
)
def test_output_sizes_are_the_indices_sizes_off_axis(output, expected):
  desc = _desc(output=("FLOAT32", output))
  assert_rejected(
    desc,
    None,
    "OutputTensor.Sizes",
    "must equal IndicesTensor.Sizes {1,1,3,1} in every dimension but Axis (3), whose size is"
    f" the depth: {expected}",
    "{" + ",".join(map(str, output)) + "}",
  )


@pytest.mark.parametrize("depth", [1, 4, 1000])
def test_any_depth_is_valid(depth):
  desc = _desc(output=("FLOAT32", (1, 1, 3, depth)))
  assert_valid(desc, "2_0")
  assert desc.depth == depth and desc.infer_outputs() == (desc.output,)


def test_depth_0_and_too_many_elements_are_output_sizes_errors():
  with pytest.raises(DmlValidationError, match=r"  - OutputTensor\.Sizes: every size must be >= 1"):
    dml.one_hot(np.zeros((3, 1), np.uint32), np.ones((1, 2), np.float32), axis=1, depth=0)
  desc = _desc(("UINT32", (2**16, 1)), ("UINT8", (1, 2)), ("UINT8", (2**16, 2**16)), axis=1)
  assert [v.field for v in desc.violations()] == ["OutputTensor.Sizes"]


def test_the_output_tensor_is_required():
  with pytest.raises(TypeError, match="OutputTensor must be a TensorDesc; got NoneType"):
    dml.OneHotDesc(T("UINT32", (3, 1)), T("FLOAT32", (1, 2)), None, axis=1)
  document = {
    "IndicesTensor": {"DataType": "UINT32", "Sizes": [3, 1]},
    "ValuesTensor": {"DataType": "FLOAT32", "Sizes": [1, 2]},
    "Axis": 1,
  }
  with pytest.raises(ValueError, match="DML_ONE_HOT_OPERATOR_DESC needs OutputTensor"):
    dml.OneHotDesc.from_dml(document)
  document["OutputTensor"] = {"DataType": "FLOAT32", "Sizes": [3, 5]}
  assert dml.OneHotDesc.from_dml(document).depth == 5


def test_functional_one_hot_validates_like_the_descriptor():
  indices, values = np.zeros((1, 1, 3, 1), np.int32), np.zeros((1, 1, 1, 2), np.float16)
  with pytest.raises(DmlValidationError) as info:
    dml.one_hot(indices, values, axis=3, depth=4, feature_level="2_1")
  desc = _desc(("INT32", (1, 1, 3, 1)), ("FLOAT16", (1, 1, 1, 2)))
  assert info.value.violations == desc.violations("2_1") != ()


@pytest.mark.parametrize(
  "call, message",
  [
    (
      lambda: dml.one_hot(
        np.zeros((2, 1), np.float32), np.ones((1, 2), np.float32), axis=1, depth=3
      ),
      "IndicesTensor must have an integer dtype; got float32",
    ),
    (
      lambda: dml.one_hot(
        np.zeros((2, 1), np.int32), np.ones((1, 2), np.float32), axis=1, depth=3.0
      ),
      r"depth must be an integer; got float 3\.0",
    ),
    (
      lambda: dml.one_hot(
        np.zeros((2, 1), np.int32), np.ones((1, 2), np.float32), axis="1", depth=3
      ),
      "Axis must be an integer; got str",
    ),
    (
      lambda: dml.one_hot(np.zeros((2, 1), np.int32), np.ones((1, 2), bool), axis=1, depth=3),
      "DirectML has no data type for dtype bool",
    ),
  ],
)
def test_wrong_kinds_of_argument_are_type_errors(call, message):
  with pytest.raises(TypeError, match=message):
    call()


# =========================================================================== #
# Semantics, pinned
# =========================================================================== #


def _hot(indices, depth, axis=1, dtype=np.float32, values=(0, 1)):
  """One_hot of a column of indices (rank 2) along `axis` 1, as NumPy."""
  values = np.array([values], dtype)
  return np.asarray(dml.one_hot(np.asarray(indices), values, axis=axis, depth=depth))


def test_on_and_off_are_the_first_two_values_in_row_major_order():
  values = np.array([4, 2, 9], np.float32).reshape(1, 1, 3, 1)  # off 4, on 2, 9 unused
  indices = np.array([0, 3, 2], np.uint32).reshape(1, 1, 3, 1)
  got = dml.one_hot(indices, values, axis=3, depth=4)
  expected = np.array([[2, 4, 4, 4], [4, 4, 4, 2], [4, 4, 2, 4]], np.float32).reshape(1, 1, 3, 4)
  assert_bits_equal(got, expected)
  # A (2, 3) values tensor: element [0, 1] is OnValue, not [1, 0].
  grid = np.array([[7, 8, 0], [5, 0, 0]], np.int16)
  assert_bits_equal(
    dml.one_hot(np.array([[1]], np.uint32), grid, axis=1, depth=3), np.array([[7, 8, 7]], np.int16)
  )


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_signed_negative_indices_count_from_the_end(dtype, x64):
  got = _hot(np.array([[-1], [-4], [-5], [-2]], dtype), depth=4)
  expected = np.array([[0, 0, 0, 1], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0]], np.float32)
  assert_bits_equal(got, expected)  # -5 < -depth: the whole sequence is off


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_indices_at_or_past_the_end_give_all_off(dtype, x64):
  info = np.iinfo(dtype)
  got = _hot(np.array([[4], [100], [info.max], [3]], dtype), depth=4, values=(-1, 1))
  expected = np.full((4, 4), -1, np.float32)
  expected[3, 3] = 1
  assert_bits_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
def test_unsigned_indices_never_count_from_the_end(dtype, x64):
  # 0xFFFFFFFF (and 2**64 - 1) would be -1, the last position, if taken as signed.
  minus_one, minus_four = np.array([-1, -4]).astype(dtype)
  assert_bits_equal(_hot(np.array([[minus_one], [minus_four]], dtype), 4), np.zeros((2, 4), "f4"))


@pytest.mark.parametrize(
  "value", [2**32 + 1, 2**32, -(2**32) + 1, -(2**32) + 3, 2**63 - 1, -(2**63)]
)
def test_64_bit_indices_are_judged_in_their_own_width(value, x64):
  # 2**32 + 1 narrowed to 32 bits is 1; -2**32 + 1 is 1 too: both must stay out of range.
  expected = reference.one_hot(
    np.array([[value]], np.int64), np.array([[0, 1]], "f4"), axis=1, depth=4
  )
  assert_bits_equal(_hot(np.array([[value]], np.int64), 4), expected)
  if value >= 0:
    assert_bits_equal(_hot(np.array([[value]], np.uint64), 4), np.zeros((1, 4), "f4"))


def test_64_bit_host_indices_without_x64_are_narrowed_only_when_they_fit(no_x64):
  fits = np.array([[-1], [3], [9]], np.int64)
  expected = np.array([[0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 0]], np.float32)
  assert_bits_equal(_hot(fits, 4), expected)
  with pytest.raises(ValueError, match="does not fit"):
    _hot(np.array([[2**32 + 1]], np.int64), 4)


SIZE = 5
EVERY_VALUE = [0, -1, SIZE - 1, SIZE, -SIZE, -SIZE - 1, 2**31 - 1, -(2**31), 2**32 - 1, 2**32 + 1]
EVERY_VALUE += [2**63 - 1, -(2**63), 2**64 - 1]
INDEX_VALUES = [
  (np.dtype(t), v)
  for t in (np.int32, np.int64, np.uint32, np.uint64)
  for v in EVERY_VALUE
  if np.iinfo(t).min <= v <= np.iinfo(t).max
]


def _expected_row(value, dtype):
  """The one sequence of depth SIZE that index `value` gives, from the definition."""
  position = value + SIZE if value < 0 and dtype.kind == "i" else value
  return np.array([[float(j == position) for j in range(SIZE)]], np.float32)


@pytest.mark.parametrize("dtype, value", INDEX_VALUES, ids=str)
def test_every_index_value_with_x64(dtype, value, x64):
  got = _hot(np.array([[value]], dtype), SIZE)
  assert_bits_equal(got, _expected_row(value, dtype))


@pytest.mark.parametrize("dtype, value", INDEX_VALUES, ids=str)
def test_every_index_value_without_x64(dtype, value, no_x64):
  fits = np.iinfo(np.int32 if dtype.kind == "i" else np.uint32)
  index = np.array([[value]], dtype)
  if not fits.min <= value <= fits.max:  # 64-bit host indices: refused, never wrapped
    with pytest.raises(ValueError, match=rf"IndicesTensor holds {dtype.name} value {value},"):
      _hot(index, SIZE)
  else:
    assert_bits_equal(_hot(index, SIZE), _expected_row(value, dtype))


def test_positions_never_overflow_for_depths_above_2_to_the_31():
  # The helper alone: an output of such a depth would take gigabytes.
  depth = 2**32 - 1
  signed = _on_positions(jnp.array([-1, -(2**31), 2**31 - 1, 0], jnp.int32), depth)
  assert signed.dtype == jnp.uint32
  assert signed.tolist() == [depth - 1, depth - 2**31, 2**31 - 1, 0]
  unsigned = _on_positions(jnp.array([2**32 - 1, 2**32 - 2], jnp.uint32), depth)
  assert unsigned.tolist() == [depth, depth - 1]  # depth: no position
  narrow = _on_positions(jnp.array([-1, -6, 7, 2**31 - 1], jnp.int32), 5)
  assert narrow.dtype == jnp.int32 and narrow.tolist() == [4, 5, 5, 5]


@pytest.mark.parametrize("index_dtype", [np.int32, np.uint32, np.int64, np.uint64])
@pytest.mark.parametrize(
  "data_dtype", [np.float32, np.float16, np.float64, np.int8, np.uint16, np.int64, np.uint64]
)
def test_every_value_and_index_type_matches_the_reference(data_dtype, index_dtype, x64):
  rng = np.random.default_rng(7)
  indices = rng.integers(-7, 8, (2, 1, 3)).astype(index_dtype)
  info = np.iinfo(data_dtype) if np.dtype(data_dtype).kind in "iu" else None
  raw = [info.min, info.max, 1] if info else [-0.0, np.nan, 1.5]
  values = np.array(raw, data_dtype).reshape(1, 3, 1)
  got = dml.one_hot(indices, values, axis=1, depth=5)
  assert_bits_equal(got, reference.one_hot(indices, values, axis=1, depth=5))


# =========================================================================== #
# jit, vmap, grad, checked mode, the program
# =========================================================================== #


def test_jit_and_vmap():
  indices = np.array([[[1], [-1]], [[0], [5]], [[-3], [2]]], np.int32)  # a batch of 3
  values = np.array([[0.5, 2.0], [-1.0, 3.0], [7.0, 8.0]], np.float32).reshape(3, 1, 2)
  fn = lambda i, v: dml.one_hot(i, v, axis=1, depth=3)
  batched = jax.vmap(fn)(indices, values)
  for k in range(3):
    want = reference.one_hot(indices[k], values[k], axis=1, depth=3)
    assert_bits_equal(batched[k], want)
    assert_bits_equal(jax.jit(fn)(indices[k], values[k]), want)
  shared = jax.vmap(fn, in_axes=(0, None))(indices, values[0])
  assert_bits_equal(shared[2], reference.one_hot(indices[2], values[0], axis=1, depth=3))


def test_grad_with_respect_to_values():
  indices = np.array([[2], [-1], [0], [9]], np.int32)
  values = np.array([[0.25, 4.0, 3.0]], np.float32)  # the third value is unused
  weights = np.arange(12, dtype=np.float32).reshape(4, 3)
  grad = jax.grad(lambda v: jnp.sum(dml.one_hot(indices, v, axis=1, depth=3) * weights))(values)
  hot = reference.one_hot(indices, np.array([[0, 1]], np.float32), axis=1, depth=3) == 1
  expected = np.array([[weights[~hot].sum(), weights[hot].sum(), 0]], np.float32)
  assert_bits_equal(grad, expected)


def test_checked_mode_reports_nothing_for_one_hot():
  f = jax.jit(lambda i, v: dml.one_hot(i, v, axis=1, depth=3))
  indices = np.array([[7], [-9], [1]], np.int32)
  got = dml.checked(f)(indices, np.array([[0, 1]], np.float32))
  assert_bits_equal(got, np.array([[0, 0, 0], [0, 0, 0], [0, 1, 0]], np.float32))


def _eqns(jaxpr):
  for eqn in jaxpr.eqns:
    yield eqn
    for param in eqn.params.values():
      inner = getattr(param, "jaxpr", None)
      if inner is not None:
        yield from _eqns(getattr(inner, "jaxpr", inner))


def test_the_program_is_one_compare_and_select_over_the_output():
  fn = lambda i, v: dml.one_hot(i, v, axis=0, depth=6)
  jaxpr = jax.make_jaxpr(fn)(np.zeros((1, 5), np.int32), np.zeros((1, 2), np.float32))
  eqns = list(_eqns(jaxpr.jaxpr))
  selects = [
    e for e in eqns if e.primitive.name == "select_n" and e.outvars[0].aval.shape == (6, 5)
  ]
  (iota,) = [e for e in eqns if e.primitive.name == "iota"]
  assert len(selects) == 1 and iota.params["shape"] == (6, 5) and iota.params["dimension"] == 0
  assert not {e.primitive.name for e in eqns} & {"gather", "scatter", "scatter-add", "dot_general"}


@pytest.mark.parametrize("axis", [0, 1])
def test_one_pass_writes_the_output(axis):
  """In the optimized program one instruction (a fusion) makes an array of the output's size."""
  index_shape, out = ((1, 64), "[32,64]") if axis == 0 else ((64, 1), "[64,32]")
  fn = jax.jit(lambda i, v: dml.one_hot(i, v, axis=axis, depth=32))
  hlo = fn.lower(np.zeros(index_shape, np.int32), np.zeros((1, 2), np.float32)).compile()
  entry = hlo.as_text().split("\nENTRY ")[1].split("\n}")[0].splitlines()[1:]
  writers = [line for line in entry if f"f32{out}" in line.split("=")[1].split("(")[0]]
  assert len(writers) == 1 and " fusion(" in writers[0], entry


def test_the_program_does_not_depend_on_the_feature_level():
  indices, values = np.zeros((1, 1, 3, 1), np.uint32), np.zeros((1, 1, 1, 2), np.float16)

  def program(level):
    fn = lambda i, v: dml.one_hot(i, v, axis=3, depth=4, feature_level=level)
    return str(jax.make_jaxpr(fn)(indices, values))

  assert program("2_0") == program("3_0") == program(None)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_64_bit_indices_are_reduced_below_the_depth_before_narrowing(dtype, x64):
  fn = lambda i, v: dml.one_hot(i, v, axis=1, depth=4)
  jaxpr = jax.make_jaxpr(fn)(np.zeros((3, 1), dtype), np.zeros((1, 2), np.float32))
  eqns = list(_eqns(jaxpr.jaxpr))
  producers = {id(v): e for e in eqns for v in e.outvars}
  narrowing = [
    e
    for e in eqns
    if e.primitive.name == "convert_element_type"
    and e.params["new_dtype"] == np.int32
    and np.dtype(e.invars[0].aval.dtype).itemsize == 8
  ]
  assert len(narrowing) == 1
  producer = producers.get(id(narrowing[0].invars[0]))
  assert producer is not None and producer.primitive.name == "min", producer


# =========================================================================== #
# Explanation and HTML
# =========================================================================== #


def test_explanation_derives_the_output_and_names_the_index_rule():
  desc = _desc(("INT32", (1, 1, 3, 1)), ("FLOAT32", (1, 1, 3, 1)))
  text = dml.explain(desc)
  output = explain_section(text, "Output:")
  assert output[0] == (
    "A sequence is a line of OutputTensor along Axis 3: D = OutputTensor.Sizes[3] = 4"
    " element(s). The depth D is given by OutputTensor alone, which is therefore required."
  )
  assert output[2].startswith("v' = v + 4 for a negative v (INT32 is signed), else v; where v'")
  assert output[3] == (
    "OffValue = element 0 and OnValue = element 1 of ValuesTensor {1,1,3,1} in row-major order"
    " (3 element(s); the other 1 are unused)."
  )
  assert (
    output[4] == "OutputTensor.Sizes = IndicesTensor.Sizes with Axis 3 set to D = 4: {1,1,3,4}."
  )
  assert output[5].startswith("OutputTensor.DataType = ValuesTensor.DataType = FLOAT32")
  level = explain_section(text, "Feature level 6_4:")
  assert any(line.startswith("Out-of-range indices: DirectML defines them") for line in level)
  assert not any("clamps into" in line for line in level)
  unsigned = explain_section(dml.explain(_desc()), "Output:")
  assert unsigned[2].startswith("v' = v (UINT32 is unsigned: indices never count from the end)")


def test_explanation_says_when_nothing_can_be_placed():
  desc = _desc(output=("FLOAT32", (1, 3, 4)))
  assert explain_section(dml.explain(desc), "Output:")[0].startswith(
    "Axis 3 or the ranks do not fit (IndicesTensor has 4 dimension(s), OutputTensor 3)"
  )


def test_html_lists_the_tensors_and_axis():
  page = parse_html(_desc()._repr_html_())
  tensors, attributes = page.tables[0], page.tables[1]
  assert [row[0] for row in tensors[1:]] == ["IndicesTensor", "ValuesTensor", "OutputTensor"]
  assert [row[0] for row in attributes[1:]] == ["Axis"]
  assert "(DML_ONE_HOT_OPERATOR_DESC)" in _desc()._repr_html_()


# =========================================================================== #
# The reference, and a property test of the JAX operator against it
# =========================================================================== #


@pytest.mark.parametrize("seed", CROSS_CHECK_SEEDS)
def test_reference_agrees_with_a_vectorised_formulation(seed):
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 5))
  axis = int(rng.integers(0, rank))
  depth = int(rng.integers(1, 6))
  sizes = [int(s) for s in rng.integers(1, 4, rank)]
  sizes[axis] = 1
  dtype = [np.int32, np.int64, np.uint32, np.uint64][seed % 4]
  low = -depth - 2 if np.dtype(dtype).kind == "i" else 0
  indices = rng.integers(low, depth + 3, sizes).astype(dtype)
  values = rng.standard_normal((1,) * (rank - 1) + (3,)).astype(np.float32)
  wide = indices.astype(np.int64)
  wrapped = np.where(wide < 0, wide + depth, wide)
  shape = [1] * rank
  shape[axis] = depth
  positions = np.arange(depth).reshape(shape)
  expected = np.where(positions == wrapped, values.flat[1], values.flat[0]).astype(np.float32)
  assert_bits_equal(reference.one_hot(indices, values, axis=axis, depth=depth), expected)


def test_unlike_jax_nn_one_hot_the_axis_is_kept_and_negative_indices_count_from_the_end():
  labels = np.array([1, -1, 3], np.int32)
  theirs = jax.nn.one_hot(labels, 3, dtype=jnp.float32)  # a new last axis; -1, 3: zeros
  ours = dml.one_hot(labels.reshape(3, 1), np.array([[0, 1]], np.float32), axis=1, depth=3)
  assert_bits_equal(theirs[::2], ours[::2])
  assert_bits_equal(theirs[1], np.zeros(3, np.float32))
  assert_bits_equal(ours[1], np.array([0, 0, 1], np.float32))
  # 1-D values are padded to the indices' rank, as DirectML programs pad them.
  assert_bits_equal(
    dml.one_hot(labels.reshape(3, 1), np.array([0, 1], np.float32), axis=-1, depth=3), ours
  )


@examples(0.5)
@given(data=st.data())
def test_matches_the_reference_eagerly_jitted_and_vmapped(data):
  case = data.draw(one_hot_case(), label="case")
  needs_64 = any(np.dtype(a.dtype).itemsize == 8 for a in case.arrays)
  with jax.enable_x64(True) if needs_64 else contextlib.nullcontext():
    expected = case.expected()
    assert_bits_equal(case.run(*case.arrays, case.level), expected, context="eager")
    jitted = jax.jit(lambda *arrays: case.run(*arrays, case.level))
    assert_bits_equal(jitted(*case.arrays), expected, context="jit")
    twice = [np.stack([a, a]) for a in case.arrays]
    batched = jax.vmap(lambda *arrays: case.run(*arrays, case.level))(*twice)
    assert_bits_equal(batched, np.stack([expected, expected]), context="vmap")


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def one_hot_case(draw):
  """ONE_HOT: any axis, a depth of 1 to 5, values of any sizes with at least 2 elements (OffValue
  and OnValue first in row-major order), and indices in range, negative, past either end and at
  the extremes of their type (UINT32 0xFFFFFFFF, 64-bit 2**32 + 1, ...)."""
  level = draw(strategies.levels("ONE_HOT"))
  table = strategies.table_at(dml.OneHotDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["ValuesTensor"].data_types))
  index_type = draw(st.sampled_from(table["IndicesTensor"].data_types))
  axis = draw(st.integers(0, n - 1))
  depth = draw(st.integers(1, 5))
  index_sizes = list(strategies.draw_sizes(draw, n, max_elements=24))
  index_sizes[axis] = 1
  value_sizes = list(strategies.draw_sizes(draw, n, max_elements=6))
  if math.prod(value_sizes) < 2:
    value_sizes[draw(st.integers(0, n - 1))] = 2
  output_sizes = tuple(index_sizes[:axis] + [depth] + index_sizes[axis + 1 :])
  i = strategies.draw_indices(draw, index_type, tuple(index_sizes), lambda pos: depth)
  v = strategies.draw_data(draw, data_type, tuple(value_sizes))
  desc = dml.OneHotDesc(
    TensorDesc(index_type, tuple(index_sizes)),
    TensorDesc(data_type, tuple(value_sizes)),
    TensorDesc(data_type, output_sizes),
    axis=axis,
  )
  return strategies.Case(
    desc,
    level,
    [i, v],
    lambda i, v, level: dml.one_hot(i, v, axis=axis, depth=depth, feature_level=level),
    lambda: reference.one_hot(i, v, axis=axis, depth=depth),
  )


def one_hot_mutations(desc, level, draw):
  """ONE_HOT's own rules: indices of size 1 on the axis, two values, the ranks."""
  indices, values, output, axis = (
    desc.indices_tensor,
    desc.values_tensor,
    desc.output_tensor,
    desc.axis,
  )
  sizes = list(indices.sizes)
  sizes[axis] = 2
  yield (
    "indices on axis",
    strategies.rebuild(
      desc, {"indices_tensor": strategies.replace_tensor(indices, sizes=tuple(sizes))}
    ),
    "IndicesTensor.Sizes",
  )
  yield (
    "one value",
    strategies.rebuild(
      desc, {"values_tensor": strategies.replace_tensor(values, sizes=(1,) * len(values.sizes))}
    ),
    "ValuesTensor.Sizes",
  )
  yield (
    "values rank",
    strategies.rebuild(
      desc, {"values_tensor": strategies.replace_tensor(values, sizes=(1,) + values.sizes)}
    ),
    "ValuesTensor.DimensionCount",
  )
  yield (
    "output rank",
    strategies.rebuild(
      desc, {"output_tensor": strategies.replace_tensor(output, sizes=(1,) + output.sizes)}
    ),
    "OutputTensor.DimensionCount",
  )


def one_hot_cases(n, rng):
  cases = []
  depth = 2 * n
  values = np.array([[[-1.5, 2.5]]], np.float32)
  for axis, shape in ((1, (2 * n, 1, n)), (2, (n, 2 * n, 1))):
    indices = rng.integers(-depth - 2, depth + 2, shape).astype(np.int32)

    def jnp_one_hot(i, v, axis=axis):
      i = jnp.where(i < 0, i + depth, i)
      positions = jax.lax.broadcasted_iota(
        np.int32, i.shape[:axis] + (depth,) + i.shape[axis + 1 :], axis
      )
      return jnp.where(positions == i, v.reshape(-1)[1], v.reshape(-1)[0])

    for shard in (0, 1, 2):
      if shape[shard] == 1:
        continue
      cases.append(
        sharding_cases.Case(
          "ONE_HOT",
          f"along axis {axis}, depth {depth}, sharded on axis {shard}",
          lambda i, v, axis=axis: dml.one_hot(i, v, axis=axis, depth=depth),
          jnp_one_hot,
          [(indices, shard), (values, None)],
          reference.one_hot(indices, values, axis=axis, depth=depth),
        )
      )
  return cases


VALID = {"ONE_HOT": one_hot_case}
MUTANTS = {"ONE_HOT": one_hot_mutations}
SHARDED_CASES = one_hot_cases
BFLOAT16_CALLS = {
  "one_hot": lambda x: dml.one_hot(np.array([[1], [5]], np.int32), x[0, :2], axis=1, depth=6),
}
# ONE_HOT's depth, on Axis, lives in its OutputTensor alone: no input fixes that size.
FREE_OUTPUT_DIMENSIONS = {"ONE_HOT": lambda desc: {desc.axis}}
