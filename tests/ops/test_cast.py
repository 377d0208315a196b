"""CAST: the conversion rules, pinned value by value, its rules and transformations.

The rules (dml_jax's, DirectML's page gives none): float -> float and integer -> float round
to nearest even, NaNs keep their sign and leading payload bits and become quiet; integer ->
integer wraps; float -> integer truncates toward zero, saturates, NaN gives 0. Every pair of
types is checked against the exact-arithmetic oracle in the property tests; here are the
cases each rule is about.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import DataType, TensorDesc
from dml_jax._src import reference
from tests import sharding_cases, strategies
from tests.helpers import assert_bits_equal, assert_rejected, assert_valid

T = dml.TensorDesc


def _bits(x, dtype):
  return np.asarray(x).view(np.dtype(f"u{np.dtype(dtype).itemsize}"))


@pytest.mark.parametrize(
  "values, expected",
  [
    ([65504.0, 65519.99, 65520.0, -65520.0], [65504.0, 65504.0, np.inf, -np.inf]),
    ([2.0**-24, 2.0**-25, 3 * 2.0**-26, -(2.0**-26)], [2.0**-24, 0.0, 2.0**-24, -0.0]),
    ([1 + 2**-11, 1 + 3 * 2**-11, -0.0], [1.0, 1 + 2**-9, -0.0]),  # ties to even
  ],
)
def test_cast_float_to_float_rounds_to_nearest_even(values, expected):
  got = dml.cast(np.array(values, np.float32), data_type="FLOAT16")
  assert_bits_equal(got, np.array(expected, np.float16))


def test_cast_nan_keeps_sign_and_leading_payload_and_becomes_quiet():
  signalling = np.array([0x7F812345, 0xFFC00001], np.uint32).view(np.float32)
  got = dml.cast(signalling, data_type="FLOAT16")
  assert [hex(b) for b in _bits(got, np.float16)] == ["0x7e09", "0xfe00"]
  widened = dml.cast(np.array([0x7D01], np.uint16).view(np.float16), data_type="FLOAT32")
  assert [hex(b) for b in _bits(widened, np.float32)] == ["0x7fe02000"]
  same = dml.cast(signalling, data_type="FLOAT32")  # the same type: the bits, as they are
  assert_bits_equal(same, signalling)


def test_cast_float64_to_float16_rounds_once(x64):
  # Through float32 the value becomes the tie 1 + 2**-11, which rounds to even (1.0);
  # rounded once it lies above the tie and rounds up.
  x = np.array([1 + 2**-11 + 2**-40, 1 + 2**-11, 65519.99999], np.float64)
  got = dml.cast(x, data_type="FLOAT16")
  assert_bits_equal(got, np.array([1 + 2**-10, 1.0, 65504.0], np.float16))
  assert_bits_equal(got, reference.cast(x, data_type="FLOAT16"))


@pytest.mark.parametrize(
  "dtype, target, values, expected",
  [
    (np.int32, np.int8, [300, -129, 127, -1], [44, 127, 127, -1]),
    (np.int8, np.uint16, [-1, -128, 5], [65535, 65408, 5]),
    (np.uint32, np.int16, [0xFFFF8000, 70000], [-32768, 4464]),
    (np.uint16, np.int32, [65535], [65535]),
  ],
)
def test_cast_integer_to_integer_wraps(dtype, target, values, expected):
  got = dml.cast(np.array(values, dtype), data_type=target)
  assert_bits_equal(got, np.array(expected, dtype=target))


@pytest.mark.parametrize(
  "target, expected",
  [
    (np.int8, [1, -1, 0, 127, -128, 127, -128, 0, 0]),
    (np.uint8, [1, 0, 0, 255, 0, 255, 0, 0, 0]),
    (np.int32, [1, -1, 0, 300, -300, 2**31 - 1, -(2**31), 0, 0]),
    (np.uint32, [1, 0, 0, 300, 0, 2**32 - 1, 0, 0, 0]),
  ],
)
def test_cast_float_to_integer_truncates_saturates_and_zeroes_nan(target, expected):
  x = np.array([1.9, -1.9, -0.5, 300.0, -300.0, np.inf, -np.inf, np.nan, -np.nan], np.float32)
  assert_bits_equal(dml.cast(x, data_type=target), np.array(expected, target))


def test_cast_saturates_at_the_largest_float_below_the_integer_range():
  # float32(2**31 - 1) is 2**31, outside INT32: the largest float32 inside is 2**31 - 128.
  x = np.array([2.0**31 - 128, 2.0**31, -(2.0**31)], np.float32)
  assert_bits_equal(
    dml.cast(x, data_type="INT32"), np.array([2**31 - 128, 2**31 - 1, -(2**31)], np.int32)
  )


def test_cast_integer_to_float_rounds_to_nearest_even(x64):
  x = np.array([2**60 + 2**36 + 1, 2**24 + 1, 65520, 65519], np.int64)
  got = dml.cast(x, data_type="FLOAT32")
  assert_bits_equal(got, np.array([2**60 + 2**37, 2**24, 65520, 65519], np.float32))
  half = dml.cast(x[2:], data_type="FLOAT16")
  assert_bits_equal(half, np.array([np.inf, 65504], np.float16))


def test_cast_output_sizes_must_equal_the_input_sizes():
  desc = dml.CastDesc(T("FLOAT32", (2, 3)), T("INT8", (3, 2)))
  assert_rejected(desc, "6_4", "OutputTensor.Sizes", "must equal InputTensor.Sizes {2,3}", "{3,2}")


def test_cast_support_tables_by_level():
  int32 = dml.CastDesc(T("INT32", (1, 1, 2, 2)), T("FLOAT32", (1, 1, 2, 2)))
  assert_rejected(int32, "2_1", "InputTensor.DataType", "must be one of FLOAT32, FLOAT16", "INT32")
  assert_valid(int32, "3_0")
  flat = dml.CastDesc(T("FLOAT32", (4,)), T("UINT8", (4,)))
  assert_rejected(flat, "3_0", "InputTensor.DimensionCount", "DML_OPERATOR_CAST supports 4", "1")
  assert_valid(flat, "3_1")
  wide = dml.CastDesc(T("FLOAT32", (4,)), T("FLOAT64", (4,)))
  assert_rejected(wide, "3_1", "OutputTensor.DataType", "must be one of", "FLOAT64")
  assert_valid(wide, "4_1")


def test_cast_to_64_bit_with_x64_off_is_refused(no_x64):
  with pytest.raises(TypeError, match="data_type INT64 is 64-bit.*jax_enable_x64"):
    dml.cast(np.zeros(3, np.float32), data_type="INT64")
  desc = dml.CastDesc(T("FLOAT32", (3,)), T("UINT64", (3,)))
  with pytest.raises(TypeError, match="UINT64 is 64-bit.*jax_enable_x64"):  # never 32 bits
    dml.Runner().run(desc, np.zeros(3, np.float32), device="cpu")


def test_cast_under_jit_vmap_and_grad():
  x = np.array([[1.5, -2.25], [70000.0, 3.0]], np.float32)
  want = reference.cast(x, data_type="FLOAT16")
  assert_bits_equal(jax.jit(lambda x: dml.cast(x, data_type="FLOAT16"))(x), want)
  assert_bits_equal(jax.vmap(lambda r: dml.cast(r, data_type="FLOAT16"))(x), want)
  grad = jax.grad(lambda x: dml.cast(x, data_type="FLOAT16").astype(np.float32).sum())(x)
  assert_bits_equal(grad, np.ones_like(x))  # the cast's derivative is 1, inf and all
  ints = jax.vmap(lambda r: dml.cast(r, data_type="INT8"))(x)
  assert_bits_equal(ints, reference.cast(x, data_type="INT8"))


def test_cast_explains_the_conversion():
  desc = dml.CastDesc(T("FLOAT32", (2,)), T("UINT8", (2,)))
  text = dml.explain(desc)
  assert "FLOAT32 -> UINT8: truncated toward zero" in text and "NaN gives 0" in text


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


def _cast_data(draw, data_type: DataType, shape):
  """Values a conversion can get wrong: halfway cases, overflow, subnormals, -0.0, infinities,
  NaNs with payloads, integer extremes."""
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  dtype = data_type.numpy_dtype
  count = math.prod(shape)
  if data_type.is_float:
    scales = np.array([1.0, 1e3, 7e4, 3e9, 2e19, 1e-6, 1e-30, 1e300], np.float64)
    with np.errstate(over="ignore"):
      values = (rng.standard_normal(count) * rng.choice(scales, count)).astype(dtype)
      specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65520.0, 255.5, -0.5], dtype)
    width = dtype.itemsize * 8
    bits = np.dtype(f"u{dtype.itemsize}")
    payload = bits.type((1 << (width - 1)) - 1)  # every exponent bit and payload bit set
    nans = np.array([payload, payload - bits.type(12345)], bits).view(dtype)
    pool = np.concatenate([specials, nans])
    pick = rng.integers(0, 4, count) == 0
    values[pick] = rng.choice(pool, int(pick.sum()))
    return values.reshape(shape)
  info = np.iinfo(dtype)
  values = rng.integers(info.min, info.max, count, dtype=dtype, endpoint=True)
  pick = rng.integers(0, 4, count) == 0
  values[pick] = rng.choice(np.array([info.min, info.max, 0, 1], dtype), int(pick.sum()))
  return values.reshape(shape)


@st.composite
def cast_case(draw):
  """CAST: any pair of the level's types, values at the conversions' edges."""
  level = draw(strategies.levels("CAST"))
  table = strategies.table_at(dml.CastDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  source = draw(st.sampled_from(table["InputTensor"].data_types))
  target = draw(st.sampled_from(table["OutputTensor"].data_types))
  sizes = strategies.draw_sizes(draw, n, max_elements=24)
  x = _cast_data(draw, source, sizes)
  desc = dml.CastDesc(TensorDesc(source, sizes), TensorDesc(target, sizes))
  return strategies.Case(
    desc,
    level,
    [x],
    lambda x, level: dml.cast(x, data_type=target, feature_level=level),
    lambda: reference.cast(x, data_type=target.name),
  )


def cast_cases(n, rng):
  x = (rng.standard_normal((2 * n, n)) * 1000).astype(np.float32)
  return [
    sharding_cases.Case(
      "CAST",
      f"float32 to {target}, sharded on axis {shard}",
      lambda x, target=target: dml.cast(x, data_type=target),
      lambda x, target=target: x.astype(target),
      [(x, shard)],
      reference.cast(x, data_type=target),
    )
    for target in ("float16", "int32")
    for shard in (0, 1)
  ]


VALID = {"CAST": cast_case}
SHARDED_CASES = cast_cases
