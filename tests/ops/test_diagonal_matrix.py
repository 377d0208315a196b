"""DIAGONAL_MATRIX and DIAGONAL_MATRIX1: the diagonal rules, Value's conversion, the XOR fill
rule in both orders, the optional input, the INT ranges and the levels."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import DataType, TensorDesc
from dml_jax._src import reference
from tests import sharding_cases, strategies
from tests.helpers import assert_bits_equal, assert_rejected, assert_valid

T = dml.TensorDesc
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


@pytest.mark.parametrize(
  "data_type, value, expected",
  [
    ("INT32", 10.6, 10),
    ("INT32", -10.6, -10),  # truncated toward zero
    ("UINT8", 300.0, 255),  # saturated
    ("INT8", float("nan"), 0),
    ("FLOAT16", 70000.0, np.inf),
    ("FLOAT32", -0.0, -0.0),
  ],
)
def test_diagonal_matrix_value_in_the_output_type(data_type, value, expected):
  got = dml.diagonal_matrix(sizes=(2, 2), data_type=data_type, value=value)
  dtype = np.dtype(data_type.lower())
  want = np.array([[expected, 0], [0, expected]], dtype)
  assert_bits_equal(got, want)
  assert_bits_equal(reference.diagonal_matrix(sizes=(2, 2), data_type=data_type, value=value), want)


def test_diagonal_matrix_batches_and_extreme_offsets():
  got = dml.diagonal_matrix(sizes=(2, 3, 4), offset=-1, value=5.0)
  assert_bits_equal(got, np.broadcast_to(np.eye(3, 4, -1, np.float32) * 5, (2, 3, 4)))
  for offset in (INT32_MIN, INT32_MAX):  # no overflow of column - row
    assert not np.asarray(dml.diagonal_matrix(sizes=(3, 3), offset=offset)).any()


def test_diagonal_matrix_rules():
  assert_rejected(
    dml.DiagonalMatrixDesc(T("FLOAT32", (3, 3)), offset=2**31),
    "6_4",
    "Offset",
    "is an INT: it must be in [-2147483648, 2147483647]",
    "2147483648",
  )
  square = dml.DiagonalMatrixDesc(T("FLOAT32", (3, 3)))
  assert_rejected(square, "2_1", "OutputTensor.DimensionCount", "supports 4 dimensions", "2")
  assert_valid(square, "4_0")
  integer = dml.DiagonalMatrixDesc(T("INT32", (1, 1, 2, 2)))
  assert_rejected(
    integer, "2_0", "OutputTensor.DataType", "must be one of FLOAT32, FLOAT16", "INT32"
  )
  assert_valid(integer, "2_1")
  assert_rejected(
    dml.DiagonalMatrixDesc(T("INT64", (2, 2))),
    "5_0",
    "OutputTensor.DataType",
    "must be one of",
    "INT64",
  )


def test_diagonal_matrix_tells_minus_zero_from_zero():
  zero = dml.DiagonalMatrixDesc(T("FLOAT32", (2, 2)), value=0.0)
  minus = dml.DiagonalMatrixDesc(T("FLOAT32", (2, 2)), value=-0.0)
  assert zero != minus and eval(repr(minus), vars(dml)) == minus
  assert np.signbit(dml.diagonal_matrix(sizes=(2, 2), value=-0.0)[0, 0])
  assert not np.signbit(dml.diagonal_matrix(sizes=(2, 2), value=0.0)[0, 0])


@pytest.mark.parametrize(
  "begin, end, band",
  [
    (0, 3, lambda d: (0 <= d) & (d < 3)),
    (3, 0, lambda d: (d < 0) | (d >= 3)),  # reversed: everything but [0, 3)
    (1, 1, lambda d: d != d),  # an empty band: nothing
    (2, 1, lambda d: d == d),  # reversed and empty: [1, 2) excluded, so all but d == 1
    (INT32_MIN, 0, lambda d: d < 0),
    (0, INT32_MAX, lambda d: d >= 0),
  ],
)
def test_diagonal_matrix1_xor_rule(begin, end, band):
  rows, columns = np.indices((4, 5))
  d = columns - rows
  want = band(d) if (begin, end) != (2, 1) else d != 1
  got = dml.diagonal_matrix1(
    sizes=(4, 5), data_type="INT16", value=-7, diagonal_fill_begin=begin, diagonal_fill_end=end
  )
  assert_bits_equal(got, np.where(want, -7, 0).astype(np.int16))
  oracle = reference.diagonal_matrix1(
    sizes=(4, 5), data_type="INT16", value=-7, diagonal_fill_begin=begin, diagonal_fill_end=end
  )
  assert_bits_equal(oracle, got)


def test_diagonal_matrix1_keeps_the_input_and_exact_64_bit_values(x64):
  x = np.arange(2 * 3 * 3, dtype=np.int64).reshape(2, 3, 3) + 2**60
  got = dml.diagonal_matrix1(x, value=2**62 + 1, diagonal_fill_begin=1, diagonal_fill_end=0)
  want = np.where(np.eye(3, dtype=bool), x, np.int64(2**62 + 1))
  assert_bits_equal(got, want)


def test_diagonal_matrix1_rules():
  output = T("UINT8", (2, 2))
  assert_rejected(
    dml.DiagonalMatrix1Desc(None, output, value_data_type="INT8"),
    "6_4",
    "ValueDataType",
    "must equal OutputTensor.DataType (UINT8)",
    "INT8",
  )
  assert_rejected(
    dml.DiagonalMatrix1Desc(None, output, value=256),
    "6_4",
    "Value",
    "must be an integer in [0, 255], exactly a UINT8",
    "256",
  )
  assert_rejected(
    dml.DiagonalMatrix1Desc(T("UINT8", (2, 3)), output),
    "6_4",
    "OutputTensor.Sizes",
    "must equal InputTensor.Sizes {2,3}",
    "{2,2}",
  )
  assert_rejected(
    dml.DiagonalMatrix1Desc(T("INT8", (2, 2)), output),
    "6_4",
    "OutputTensor.DataType",
    "must equal InputTensor.DataType (INT8)",
    "UINT8",
  )
  assert_rejected(
    dml.DiagonalMatrix1Desc(None, output, diagonal_fill_begin=-(2**31) - 1),
    "6_4",
    "DiagonalFillBegin",
    "is an INT",
    "-2147483649",
  )
  no_input = dml.DiagonalMatrix1Desc(None, output)
  assert no_input.dml_inputs() == () and no_input.value_data_type == dml.DataType.UINT8
  assert_rejected(no_input, "5_0", "DML_OPERATOR_TYPE", "exists from FL 5_1 on", "FL 5_0")
  with pytest.raises(TypeError, match="without an input needs sizes and data_type"):
    dml.diagonal_matrix1(value=1, diagonal_fill_begin=0, diagonal_fill_end=1)


def test_diagonal_matrix1_from_dml_null_input():
  desc = dml.DiagonalMatrix1Desc.from_dml(
    {
      "InputTensor": None,
      "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4, 5]},
      "ValueDataType": "FLOAT32",
      "Value": {"Float32": 7},
      "DiagonalFillBegin": 0,
      "DiagonalFillEnd": 3,
    }
  )
  assert desc.input_tensor is None and desc.value == 7.0
  assert desc == dml.DiagonalMatrix1Desc(None, T("FLOAT32", (4, 5)), value=7.0, diagonal_fill_end=3)


def test_diagonal_matrices_under_jit_vmap_and_grad():
  fn = jax.jit(lambda: dml.diagonal_matrix(sizes=(3, 3), offset=1))
  assert_bits_equal(fn(), np.eye(3, k=1, dtype=np.float32))
  x = np.arange(18, dtype=np.float32).reshape(2, 3, 3)

  def upper(m):
    return dml.diagonal_matrix1(m, value=0.0, diagonal_fill_begin=INT32_MIN, diagonal_fill_end=0)

  assert_bits_equal(jax.vmap(upper)(x), np.triu(x))
  grad = jax.grad(lambda m: upper(m).sum())(x[0])
  assert_bits_equal(grad, np.triu(np.ones((3, 3), np.float32)))


def test_diagonal_matrices_in_a_model_file():
  # INT fields, no InputTensor (absent or null), Value as a DML_SCALAR_UNION member.
  document = {
    "resources": {
      "d": {"initialValuesDataType": "INT32", "initialValues": {"value": 9, "valueCount": 6}},
      "e": {"initialValuesDataType": "FLOAT32", "initialValues": {"value": 9, "valueCount": 6}},
    },
    "dispatchables": {
      "eye": {
        "type": "DIAGONAL_MATRIX",
        "desc": {
          "OutputTensor": {"DataType": "INT32", "Sizes": [2, 3]},
          "Offset": -1,
          "Value": 2.5,
        },
      },
      "band": {
        "type": "DIAGONAL_MATRIX1",
        "desc": {
          "InputTensor": None,
          "OutputTensor": {"DataType": "FLOAT32", "Sizes": [2, 3]},
          "ValueDataType": "FLOAT32",
          "Value": {"Float32": 7},
          "DiagonalFillBegin": 0,
          "DiagonalFillEnd": 2,
        },
      },
    },
    "commands": [
      {"type": "dispatch", "dispatchable": "eye", "bindings": {"OutputTensor": "d"}},
      {"type": "dispatch", "dispatchable": "band", "bindings": {"OutputTensor": "e"}},
    ],
  }
  out = dml.load_model(document).run()
  assert out["d"].tolist() == [0, 0, 0, 2, 0, 0]
  assert out["e"].tolist() == [7, 7, 0, 0, 7, 7]
  document["dispatchables"]["eye"]["desc"]["Offset"] = 2**31
  with pytest.raises(dml.DmlModelError, match=r"Offset.*signed integer \(INT32\)"):
    dml.load_model(document)


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


_INTS = st.one_of(st.integers(-6, 6), st.sampled_from([-(2**31), 2**31 - 1]))


@st.composite
def diagonal_matrix_case(draw):
  """DIAGONAL_MATRIX: any output the level allows, offsets near and far, values to truncate."""
  level = draw(strategies.levels("DIAGONAL_MATRIX"))
  table = strategies.table_at(dml.DiagonalMatrixDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["OutputTensor"].data_types))
  sizes = strategies.draw_sizes(draw, n)
  offset = draw(_INTS)
  value = draw(st.sampled_from([1.0, 10.6, -10.6, 2.5, -0.0, 300.0, 1e10, float("nan")]))
  desc = dml.DiagonalMatrixDesc(TensorDesc(data_type, sizes), offset=offset, value=value)
  params = dict(sizes=sizes, data_type=data_type.name, offset=offset, value=value)
  return strategies.Case(
    desc,
    level,
    [],
    lambda level: dml.diagonal_matrix(**params, feature_level=level),
    lambda: reference.diagonal_matrix(**params),
  )


@st.composite
def diagonal_matrix1_case(draw):
  """DIAGONAL_MATRIX1: with and without an input, bands in either order, exact values."""
  level = draw(strategies.levels("DIAGONAL_MATRIX1"))
  table = strategies.table_at(dml.DiagonalMatrix1Desc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["OutputTensor"].data_types))
  sizes = strategies.draw_sizes(draw, n)
  begin, end = draw(_INTS), draw(_INTS)
  if data_type.is_float:
    value: int | float = draw(st.sampled_from([1.0, -0.0, 7.5, 1e-7, 65504.0]))
  else:
    info = np.iinfo(data_type.numpy_dtype)
    value = draw(st.sampled_from([int(info.min), int(info.max), 0, 1]))
  with_input = draw(st.booleans())
  x = strategies.draw_data(draw, data_type, sizes) if with_input else None
  desc = dml.DiagonalMatrix1Desc(
    TensorDesc(data_type, sizes) if with_input else None,
    TensorDesc(data_type, sizes),
    value=value,
    diagonal_fill_begin=begin,
    diagonal_fill_end=end,
  )
  params = dict(value=value, diagonal_fill_begin=begin, diagonal_fill_end=end)
  if not with_input:
    params.update(sizes=sizes, data_type=data_type.name)
  return strategies.Case(
    desc,
    level,
    [x] if with_input else [],
    lambda *arrays: dml.diagonal_matrix1(*arrays[:-1], **params, feature_level=arrays[-1]),
    lambda: reference.diagonal_matrix1(x, **params),
  )


def diagonal_matrix_mutations(desc, level, draw):
  """DIAGONAL_MATRIX's own rule: Offset in INT32."""
  offset = draw(st.sampled_from([2**31, -(2**31) - 1]))
  yield "offset range", dataclasses.replace(desc, offset=offset), "Offset"


def diagonal_matrix1_mutations(desc, level, draw):
  """DIAGONAL_MATRIX1's own rules: DiagonalFillEnd in INT32, Value of the output's type."""
  end = draw(st.sampled_from([2**31, -(2**31) - 1]))
  yield "end range", dataclasses.replace(desc, diagonal_fill_end=end), "DiagonalFillEnd"
  output_type = desc.output_tensor.data_type
  other = DataType.INT8 if output_type != DataType.INT8 else DataType.UINT8
  yield (
    "value type",
    dataclasses.replace(desc, value_data_type=other, value=0),
    "ValueDataType",
  )
  if not output_type.is_float:
    too_big = int(np.iinfo(output_type.numpy_dtype).max) + 1
    yield "value range", dataclasses.replace(desc, value=too_big), "Value"


def diagonal_matrix_cases(n, rng):
  del rng
  return [
    sharding_cases.Case(
      "DIAGONAL_MATRIX",
      "no operand (replicated output)",
      lambda: dml.diagonal_matrix(sizes=(2 * n, n), offset=1),
      lambda: jnp.eye(2 * n, n, k=1, dtype=jnp.float32),
      [],
      reference.diagonal_matrix(sizes=(2 * n, n), offset=1),
    )
  ]


def diagonal_matrix1_cases(n, rng):
  x = rng.standard_normal((n, 2 * n)).astype(np.float32)
  params = dict(value=0.0, diagonal_fill_begin=-(2**31), diagonal_fill_end=0)
  return [
    sharding_cases.Case(
      "DIAGONAL_MATRIX1",
      f"the upper triangle, sharded on axis {shard}",
      lambda x: dml.diagonal_matrix1(x, **params),
      jnp.triu,
      [(x, shard)],
      reference.diagonal_matrix1(x, **params),
    )
    for shard in (0, 1)
  ]


def sharded_cases(n, rng):
  """DIAGONAL_MATRIX's and DIAGONAL_MATRIX1's sharded cases."""
  return diagonal_matrix_cases(n, rng) + diagonal_matrix1_cases(n, rng)


VALID = {"DIAGONAL_MATRIX": diagonal_matrix_case, "DIAGONAL_MATRIX1": diagonal_matrix1_case}
MUTANTS = {
  "DIAGONAL_MATRIX": diagonal_matrix_mutations,
  "DIAGONAL_MATRIX1": diagonal_matrix1_mutations,
}
SHARDED_CASES = sharded_cases
