"""PADDING and PADDING1: the operators' own rules and pinned cases.

Their support tables written out from DirectML's pages (PADDING: 1_0 4 to 5 dimensions of
floats, 2_1 integers, 3_1 1 to 8 dimensions, 5_0 64-bit types; PADDING1 from 5_0 with every
type), the modes by level (SYMMETRIC from 3_0, WRAP from 6_4), the pad arrays' rules, the
padding value's conversions (PADDING's FLOAT truncated for integers, PADDING1's value exact),
the periodic folding of REFLECTION and SYMMETRIC, the NumPy reference against np.pad, the
functional API under jit, vmap and grad, and the properties: the interior of the output is
the input, and WRAP by whole copies is TILE. What every operator shares is tested in
tests/test_contract.py and the cross-cutting files.
"""

from __future__ import annotations

import functools
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import TensorDesc
from dml_jax._src import reference
from dml_jax._src.ops import padding as padding_module
from dml_jax._src.ops.padding import float_padding_constant, source_positions
from tests import sharding_cases, strategies
from tests.helpers import CROSS_CHECK_SEEDS, assert_bits_equal, assert_rejected, assert_valid

T = dml.TensorDesc
M = dml.PaddingMode

UP_TO_32 = ("FLOAT32", "FLOAT16", "INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8")
NP_MODES = {"EDGE": "edge", "REFLECTION": "reflect", "SYMMETRIC": "symmetric", "WRAP": "wrap"}


def _desc(data_type="FLOAT32", sizes=(1, 1, 2, 3), mode="CONSTANT", pads=1, op="PADDING", **kw):
  n = len(sizes)
  cls = dml.PaddingDesc if op == "PADDING" else dml.Padding1Desc
  kw.setdefault("start_padding", (pads,) * n)
  kw.setdefault("end_padding", (pads,) * n)
  return cls(T(data_type, sizes), padding_mode=mode, **kw)


# -- PaddingMode -----------------------------------------------------------------------------


def test_padding_mode_has_directml_values_and_names():
  assert [(m.name, m.value) for m in M] == [
    ("CONSTANT", 0),
    ("EDGE", 1),
    ("REFLECTION", 2),
    ("SYMMETRIC", 3),
    ("WRAP", 4),
  ]
  for spelled in ("REFLECTION", "DML_PADDING_MODE_REFLECTION", "reflection", 2, M.REFLECTION):
    assert M.from_any(spelled) is M.REFLECTION
  for bad in ("MIRROR", 5, -1, True, None, 2.0):
    with pytest.raises(ValueError, match=r"unknown DML_PADDING_MODE .*CONSTANT \(0\), EDGE"):
      M.from_any(bad)
  assert dml.PaddingMode is M and str(M.WRAP) == "WRAP"


def test_an_unknown_mode_is_refused_by_the_function_and_the_descriptor():
  with pytest.raises(ValueError, match="unknown DML_PADDING_MODE 'MIRROR'"):
    dml.padding(
      np.zeros((1, 1, 1, 1), np.float32),
      padding_mode="MIRROR",
      start_padding=(0,) * 4,
      end_padding=(0,) * 4,
    )
  with pytest.raises(ValueError, match="unknown DML_PADDING_MODE 7"):
    _desc(mode=7)


# -- support tables and levels ---------------------------------------------------------------


@pytest.mark.parametrize(
  "level, rank, data_type, valid",
  [
    ("1_0", 4, "FLOAT16", True),
    ("1_0", 5, "FLOAT32", True),
    ("1_0", 4, "INT32", False),  # integers from 2_1
    ("2_1", 4, "UINT8", True),
    ("2_1", 5, "INT8", True),
    ("2_1", 3, "FLOAT32", False),  # 4 to 5 dimensions before 3_1
    ("3_0", 6, "FLOAT32", False),
    ("3_0", 3, "FLOAT32", False),
    ("3_1", 1, "INT8", True),
    ("3_1", 8, "UINT16", True),
    ("4_1", 2, "INT64", False),  # 64-bit types from 5_0
    ("4_1", 2, "FLOAT64", False),
    ("5_0", 2, "FLOAT64", True),
    ("5_0", 2, "UINT64", True),
    ("6_4", 8, "INT64", True),
  ],
)
def test_padding_support_tables(level, rank, data_type, valid):
  desc = _desc(data_type, (2,) * rank)
  fields = [v.field for v in desc.violations(level)]
  assert (fields == []) is valid, fields
  if not valid:
    assert set(fields) <= {"InputTensor.DataType", "InputTensor.DimensionCount"}


@pytest.mark.parametrize("data_type", (*UP_TO_32, "FLOAT64", "INT64", "UINT64"))
@pytest.mark.parametrize("rank", [1, 4, 8])
def test_padding1_exists_from_5_0_with_every_type_and_rank(data_type, rank):
  desc = _desc(data_type, (2,) * rank, op="PADDING1")
  assert dml.Padding1Desc.SUPPORT.introduced == dml.FeatureLevel.FL_5_0
  assert_valid(desc, "5_0")
  assert [v.field for v in desc.violations("4_1")] == ["DML_OPERATOR_TYPE"]


def test_the_rank_hint_names_the_level_that_allows_it():
  assert_rejected(
    _desc(sizes=(2, 3)),
    "3_0",
    "InputTensor.DimensionCount",
    "DML_OPERATOR_PADDING supports 4 to 5 dimensions",
    "2",
    hint="2 dimensions are supported from FL 3_1",
  )


@pytest.mark.parametrize(
  "op, mode, first",
  [("PADDING", "SYMMETRIC", "3_0"), ("PADDING", "WRAP", "6_4"), ("PADDING1", "WRAP", "6_4")],
)
def test_modes_exist_from_their_levels(op, mode, first):
  desc = _desc(mode=mode, op=op)
  levels = [lv for lv in dml.FeatureLevel if desc.SUPPORT.at(lv) is not None]
  for level in levels:
    if level >= dml.FeatureLevel.from_any(first):
      assert_valid(desc, level)
    else:
      assert_rejected(
        desc,
        str(level),
        "PaddingMode",
        f"DML_PADDING_MODE_{mode} exists from FL {first} on",
        mode,
        hint="CONSTANT, EDGE and REFLECTION work at every level",
      )


# -- the pad arrays ---------------------------------------------------------------------------


def test_output_sizes_are_the_input_sizes_plus_the_pads():
  desc = _desc("INT16", (2, 1, 3), start_padding=(0, 4, 1), end_padding=(1, 0, 5))
  assert desc.output == T("INT16", (3, 5, 9))
  assert desc.dimension_count == 3
  assert desc.dml_attributes() == (
    ("PaddingMode", M.CONSTANT),
    ("StartPadding", (0, 4, 1)),
    ("EndPadding", (1, 0, 5)),
    ("PaddingValue", 0.0),
    ("DimensionCount", 3),
  )


def test_one_pad_per_dimension_at_each_end():
  desc = _desc(sizes=(2, 3), start_padding=(1,), end_padding=(1, 1))
  error = assert_rejected(
    desc,
    None,
    "DimensionCount",
    "must equal InputTensor.DimensionCount (2)",
    "1",
    hint="pad StartPadding and EndPadding with leading 0s",
  )
  assert "must equal the number of EndPadding (2)" in str(error)
  with pytest.raises(dml.DmlValidationError):
    desc.output  # noqa: B018  (no output without one pad per dimension)


def test_dimension_count_must_equal_the_number_of_pads():
  assert_rejected(
    _desc(sizes=(2, 3), dimension_count=3),
    None,
    "DimensionCount",
    "must equal the number of StartPadding (2)",
    "3",
  )


@pytest.mark.parametrize("field", ["start_padding", "end_padding"])
def test_pads_are_never_negative(field):
  name = "StartPadding" if field == "start_padding" else "EndPadding"
  assert_rejected(
    _desc(sizes=(2, 3), **{field: (0, -1)}),
    None,
    name,
    "every pad must be >= 0 (UINTs: DirectML pads, it never crops)",
    "{0,-1}",
    hint="crop with SLICE",
  )


def test_a_given_output_must_have_the_padded_sizes():
  desc = _desc(sizes=(2, 3), output_tensor=T("FLOAT32", (4, 4)))
  assert_rejected(
    desc,
    None,
    "OutputTensor.Sizes",
    "must be InputTensor.Sizes + StartPadding + EndPadding: {4,5}",
    "{4,4}",
  )


def test_the_output_may_not_address_2_to_the_32_elements():
  desc = _desc("UINT8", (2**16, 2**15), start_padding=(0, 0), end_padding=(0, 2**16))
  assert [v.field for v in desc.violations()] == ["OutputTensor.Sizes"]


def test_pads_must_be_integers():
  with pytest.raises(TypeError, match=r"StartPadding\[0\] must be an integer; got float 1\.0"):
    dml.padding(np.zeros((2,), np.float32), padding_mode=0, start_padding=(1.0,), end_padding=(0,))
  with pytest.raises(TypeError, match="PaddingValue must be a number; got str"):
    dml.padding1(
      np.zeros((2,), np.float32),
      padding_mode=0,
      padding_value="1",
      start_padding=(1,),
      end_padding=(0,),
    )


# -- PADDING1's value -------------------------------------------------------------------------


def test_padding_value_data_type_must_be_the_output_type():
  desc = _desc("INT32", (2, 2), op="PADDING1", padding_value_data_type="INT16")
  assert_rejected(
    desc, None, "PaddingValueDataType", "must equal OutputTensor.DataType (INT32)", "INT16"
  )
  assert _desc("INT32", (2, 2), op="PADDING1").padding_value_data_type is dml.DataType.INT32


@pytest.mark.parametrize(
  "data_type, value, rule",
  [
    ("INT8", 128, "must be an integer in [-128, 127], exactly a INT8"),
    ("UINT8", -1, "must be an integer in [0, 255], exactly a UINT8"),
    ("INT32", 2.5, "must be an integer in [-2147483648, 2147483647]"),
    ("UINT64", 2**64, "must be an integer in [0, 18446744073709551615]"),
    ("INT64", math.nan, "must be an integer"),
    ("FLOAT32", 2**1024, "must be a number a FLOAT32 can round to"),
  ],
)
def test_padding1_values_must_be_exact_in_the_type(data_type, value, rule):
  desc = _desc(data_type, (2,), op="PADDING1", padding_value=value)
  assert_rejected(
    desc, None, "PaddingValue", rule, re.compile(".*"), hint="no rounding or wrapping of integers"
  )


def test_padding1_keeps_64_bit_integers_exactly():
  x = np.array([1, 2], np.int64)
  for value in (2**62 + 1, -(2**63), 2**53 + 1):
    assert_bits_equal(
      reference.padding1(
        x, padding_mode="CONSTANT", padding_value=value, start_padding=(1,), end_padding=(0,)
      ),
      np.array([value, 1, 2], np.int64),
    )
  u = np.array([3], np.uint64)
  want = np.array([2**64 - 1, 3], np.uint64)
  kwargs = dict(
    padding_mode="CONSTANT", padding_value=2**64 - 1, start_padding=(1,), end_padding=(0,)
  )
  assert_bits_equal(reference.padding1(u, **kwargs), want)
  if jax.config.jax_enable_x64:
    assert_bits_equal(dml.padding1(u, **kwargs), want)
    assert_bits_equal(
      dml.padding1(x, **{**kwargs, "padding_value": 2**62 + 1}),
      np.array([2**62 + 1, 1, 2], np.int64),
    )


def test_padding1_float16_from_raw_half_bits():
  desc = dml.Padding1Desc.from_dml(
    {
      "InputTensor": {"DataType": "FLOAT16", "Sizes": [2]},
      "OutputTensor": {"DataType": "FLOAT16", "Sizes": [3]},
      "PaddingMode": "CONSTANT",
      "PaddingValueDataType": "FLOAT16",
      "PaddingValue": {"UInt16": 0x3555},  # 0.33325195..., no float32 rounding involved
      "DimensionCount": 1,
      "StartPadding": [1],
      "EndPadding": [0],
    }
  )
  assert_valid(desc, None)
  assert desc.padding_constant().view(np.uint16) == 0x3555
  x = np.array([1, 2], np.float16)
  out = dml.padding1(
    x,
    padding_mode="CONSTANT",
    padding_value=desc.padding_value,
    start_padding=(1,),
    end_padding=(0,),
  )
  assert np.asarray(out).view(np.uint16).tolist() == [0x3555, 0x3C00, 0x4000]
  # A number rounds to the nearest half directly: 1.2 -> 0x3CCD.
  out = dml.padding1(
    x, padding_mode="CONSTANT", padding_value=1.2, start_padding=(1,), end_padding=(0,)
  )
  assert np.asarray(out).view(np.uint16)[0] == 0x3CCD


# -- PADDING's FLOAT value --------------------------------------------------------------------


@pytest.mark.parametrize(
  "value, data_type, expected",
  [
    (10.6, "INT32", 10),
    (-10.6, "INT32", -10),
    (-0.9, "UINT8", 0),
    (-1.0, "UINT8", 0),  # saturated, never wrapped
    (300.0, "UINT8", 255),
    (-300.0, "INT8", -128),
    (1e10, "INT32", 2**31 - 1),
    (math.inf, "UINT16", 65535),
    (-math.inf, "INT16", -32768),
    (math.nan, "INT32", 0),
    (2.0**40 + 0.5, "INT64", 2**40),  # the FLOAT is a float32 first: 2**40
    (1.9e19, "UINT64", 2**64 - 1),
    (9.3e18, "INT64", 2**63 - 1),
  ],
)
def test_padding_float_value_for_integer_outputs(value, data_type, expected):
  dtype = dml.DataType.from_any(data_type)
  constant = float_padding_constant(value, dtype)
  assert constant.dtype == dtype.numpy_dtype and int(constant) == expected
  x = np.zeros((1,), dtype.numpy_dtype)
  out = reference.padding(
    x, padding_mode="CONSTANT", padding_value=value, start_padding=(1,), end_padding=(0,)
  )
  assert int(out[0]) == expected


def test_padding_float_value_is_a_float32_first():
  x = np.zeros((1,), np.float32)
  kwargs = dict(padding_mode="CONSTANT", padding_value=0.1, start_padding=(1,), end_padding=(0,))
  assert_bits_equal(dml.padding(x, **kwargs), np.array([0.1, 0], np.float32))
  assert_bits_equal(dml.padding(x.astype(np.float16), **kwargs), np.array([0.1, 0], np.float16))
  assert float_padding_constant(0.1, dml.DataType.FLOAT64) == np.float64(np.float32(0.1))
  assert float_padding_constant(1e300, dml.DataType.FLOAT32) == np.inf


def test_negative_zero_and_nan_are_kept_bit_for_bit():
  x = np.ones((1,), np.float32)
  for function in (dml.padding, dml.padding1):
    for value, bits in ((-0.0, 0x80000000), (0.0, 0), (-0.0, 0x80000000), (math.nan, 0x7FC00000)):
      out = function(
        x, padding_mode="CONSTANT", padding_value=value, start_padding=(1,), end_padding=(0,)
      )
      assert np.asarray(out).view(np.uint32)[0] == bits, (function.__name__, value)
  assert _desc(padding_value=-0.0) != _desc(padding_value=0.0)
  for value in (-0.0, math.nan, math.inf):
    for desc in (_desc(padding_value=value), _desc(op="PADDING1", padding_value=value)):
      rebuilt = eval(repr(desc), vars(dml))
      assert rebuilt == desc and hash(rebuilt) == hash(desc), repr(desc)


def test_a_float32_signalling_nan_keeps_its_payload():
  x = np.ones((1,), np.float32)
  for bits in (0x7F800001, 0xFFA12345, 0x7FC00007):  # signalling, signalling negative, quiet
    value = np.uint32(bits).view(np.float32)
    for function in (dml.padding, dml.padding1):
      pad = lambda x, f=function, v=value: f(
        x, padding_mode="CONSTANT", padding_value=v, start_padding=(1,), end_padding=(0,)
      )
      for out in (pad(x), jax.jit(pad)(x)):
        assert np.asarray(out).view(np.uint32).tolist() == [bits, 0x3F800000], function.__name__


# -- the modes and their folding --------------------------------------------------------------


def test_the_documented_4x4_rows():
  x = np.array([1, 2, 3, 4], np.float32)
  rows = {
    "EDGE": [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
    "REFLECTION": [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
    "SYMMETRIC": [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
    "WRAP": [3, 4, 1, 2, 3, 4, 1, 2, 3, 4],
  }
  for mode, row in rows.items():
    for function in (dml.padding, dml.padding1, reference.padding, reference.padding1):
      out = function(x, padding_mode=mode, start_padding=(2,), end_padding=(4,))
      assert_bits_equal(out, np.array(row, np.float32), context=f"{mode} {function.__name__}")


@pytest.mark.parametrize("mode", ["EDGE", "REFLECTION", "SYMMETRIC", "WRAP"])
@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_pads_larger_than_the_input_fold_periodically(mode, size):
  x = np.arange(10, 10 + size, dtype=np.int32)
  start, end = 3 * size + 2, 4 * size + 1
  want = np.pad(x, (start, end), mode=NP_MODES[mode])  # numpy folds again and again too
  assert_bits_equal(
    reference.padding1(x, padding_mode=mode, start_padding=(start,), end_padding=(end,)), want
  )
  assert_bits_equal(
    dml.padding1(x, padding_mode=mode, start_padding=(start,), end_padding=(end,)), want
  )
  assert_bits_equal(
    source_positions(M[mode], size, start, end),
    np.pad(np.arange(size), (start, end), mode=NP_MODES[mode]),
  )


@pytest.mark.parametrize("mode", ["EDGE", "REFLECTION", "SYMMETRIC", "WRAP"])
def test_over_several_devices_jnp_pad_gives_the_same_bits(mode, monkeypatch):
  # A process with several devices pads with jnp.pad (which XLA partitions along a sharded
  # padded axis); every fold, a size-1 reflection and -0.0 and NaN bits as the gathers give.
  monkeypatch.setattr(padding_module.placement, "one_device", lambda platform=None: False)
  for size in (1, 2, 3, 5):
    x = np.arange(size * 2, dtype=np.float32).reshape(2, size)
    x[0, 0], x[-1, -1] = -0.0, np.float32("nan")
    start, end = (1, 3 * size + 2), (0, 4 * size + 1)
    pad = functools.partial(padding_module._pad, mode=M[mode], constant=np.float32(0))
    got = jax.jit(pad, static_argnames=("start", "end"))(x, start=start, end=end)
    want = reference.padding(x, padding_mode=mode, start_padding=start, end_padding=end)
    assert_bits_equal(got, want, context=f"{mode}, size {size}")


def test_reflection_of_a_size_1_dimension_reads_its_one_element():
  x = np.array([[7], [8]], np.int8)
  out = dml.padding(x, padding_mode="REFLECTION", start_padding=(0, 2), end_padding=(0, 1))
  assert_bits_equal(out, np.array([[7] * 4, [8] * 4], np.int8))


def test_constant_corners_are_the_value():
  x = np.ones((2, 2), np.uint8)
  out = dml.padding(
    x, padding_mode="CONSTANT", padding_value=5, start_padding=(1, 1), end_padding=(0, 0)
  )
  assert_bits_equal(out, np.array([[5, 5, 5], [5, 1, 1], [5, 1, 1]], np.uint8))


def test_many_folds_take_the_gather_form_with_the_same_result():
  rng = np.random.default_rng(3)
  x = rng.standard_normal((3, 2)).astype(np.float32)
  for mode in ("REFLECTION", "SYMMETRIC", "WRAP"):
    kwargs = dict(padding_mode=mode, start_padding=(1, 41), end_padding=(2, 37))
    jaxpr = str(jax.make_jaxpr(lambda x, kwargs=kwargs: dml.padding(x, **kwargs))(x))
    assert "gather" in jaxpr
    assert_bits_equal(dml.padding(x, **kwargs), reference.padding(x, **kwargs))


@pytest.mark.parametrize("seed", CROSS_CHECK_SEEDS)
def test_reference_agrees_with_np_pad(seed):
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 4))
  shape = tuple(int(n) for n in rng.integers(1, 4, rank))
  x = rng.standard_normal(shape).astype(np.float32)
  start = [int(p) for p in rng.integers(0, 7, rank)]
  end = [int(p) for p in rng.integers(0, 7, rank)]
  widths = list(zip(start, end, strict=True))
  for mode, np_mode in NP_MODES.items():
    if mode == "REFLECTION" and 1 in shape:
      continue  # np.pad's choice there is dml_jax's too, tested above
    got = reference.padding(x, padding_mode=mode, start_padding=start, end_padding=end)
    assert_bits_equal(got, np.pad(x, widths, mode=np_mode), context=mode)
  got = reference.padding(
    x, padding_mode="CONSTANT", padding_value=-2.5, start_padding=start, end_padding=end
  )
  assert_bits_equal(got, np.pad(x, widths, constant_values=np.float32(-2.5)))


# -- the properties ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(M))
def test_the_interior_of_the_output_is_the_input(mode):
  rng = np.random.default_rng(int(mode))
  x = rng.integers(-100, 100, (2, 3, 4), dtype=np.int16)
  start, end = (1, 5, 0), (3, 0, 9)
  out = np.asarray(
    dml.padding(x, padding_mode=mode, padding_value=-1, start_padding=start, end_padding=end)
  )
  assert_bits_equal(out[1:3, 5:8, 0:4], x)


def test_wrap_by_whole_copies_is_tile():
  x = np.arange(6, dtype=np.float16).reshape(2, 3)
  out = dml.padding1(x, padding_mode="WRAP", start_padding=(2, 3), end_padding=(0, 3))
  assert_bits_equal(out, dml.tile(x, repeats=(2, 3)))


def test_unlike_jnp_pad_widths_are_neither_broadcast_nor_negative():
  x = np.arange(6, dtype=np.int8).reshape(2, 3)
  assert jnp.pad(x, 1).shape == (4, 5)  # jnp broadcasts one width to every side
  with pytest.raises(dml.DmlValidationError, match="DimensionCount"):
    dml.padding(x, padding_mode="CONSTANT", start_padding=(1,), end_padding=(1,))
  assert_bits_equal(
    dml.padding(x, padding_mode="REFLECTION", start_padding=(1, 2), end_padding=(1, 2)),
    jnp.pad(x, ((1, 1), (2, 2)), mode="reflect"),
  )


# -- jit, vmap, grad --------------------------------------------------------------------------


def test_jit_and_vmap():
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  kwargs = dict(padding_mode="SYMMETRIC", start_padding=(1, 2), end_padding=(0, 4))
  want = np.pad(x, ((1, 0), (2, 4)), mode="symmetric")
  assert_bits_equal(jax.jit(lambda x: dml.padding(x, **kwargs))(x), want)
  batch = np.stack([x, -x])
  got = jax.vmap(lambda x: dml.padding1(x, **kwargs))(batch)
  assert_bits_equal(got, np.pad(batch, ((0, 0), (1, 0), (2, 4)), mode="symmetric"))


@pytest.mark.parametrize("mode", ["CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC", "WRAP"])
def test_grad_matches_jnp_pad(mode):
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  widths = ((2, 1), (4, 2))
  weights = np.arange(45, dtype=np.float32).reshape(5, 9)  # small integers: exact sums
  np_mode = NP_MODES.get(mode, "constant")
  grad = jax.grad(
    lambda x: jnp.sum(
      dml.padding(x, padding_mode=mode, start_padding=(2, 4), end_padding=(1, 2)) * weights
    )
  )(x)
  want = jax.grad(lambda x: jnp.sum(jnp.pad(x, widths, mode=np_mode) * weights))(x)
  assert_bits_equal(grad, want)


@pytest.mark.parametrize("mode", ["EDGE", "REFLECTION", "SYMMETRIC", "WRAP"])
def test_the_slice_form_for_axes_past_int32_matches_the_gather_form(mode):
  # Axes of 2**31 elements or more are remapped by slices (no int32 index array); the same
  # positions give the same elements as the gather form on a small axis.
  from dml_jax._src.ops import padding as padding_module

  x = jnp.arange(2 * 7, dtype=jnp.float32).reshape(2, 7)
  positions = padding_module.source_positions(dml.PaddingMode[mode], 7, 9, 4)
  np.testing.assert_array_equal(
    padding_module._remap_by_runs(x, 1, positions), padding_module._remap(x, 1, positions)
  )


# -- natural ranks ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["CONSTANT", "REFLECTION"])
def test_ranks_below_the_levels_are_padded_and_cut_back(mode):
  # FL 1_0 takes 4 to 5 dimensions of floats: a 2-D call reads as 4-D, pads of 0 in front.
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  kw = dict(padding_mode=mode, padding_value=-1.5, start_padding=(1, 2), end_padding=(0, 1))
  out = dml.padding(x, **kw, feature_level="1_0")
  np_kw = {"constant_values": -1.5} if mode == "CONSTANT" else {}
  np_mode = "constant" if mode == "CONSTANT" else NP_MODES[mode]
  assert_bits_equal(out, np.pad(x, ((1, 0), (2, 1)), np_mode, **np_kw))
  (desc,) = dml.descriptors_of(lambda x: dml.padding(x, **kw, feature_level="1_0"), x)
  assert desc.input_tensor.sizes == (1, 1, 2, 3)
  assert (desc.start_padding, desc.end_padding) == ((0, 0, 1, 2), (0, 0, 0, 1))


def test_more_pads_than_dimensions_promote_the_input():
  x = np.array([1, 2, 3], np.uint8)
  out = dml.padding1(x, padding_mode="WRAP", start_padding=(1, 2), end_padding=(0, 1))
  assert_bits_equal(out, np.pad(x[None], ((1, 0), (2, 1)), "wrap"))


def test_fewer_pads_than_dimensions_are_refused_with_the_call_of_each_reading():
  x = np.zeros((2, 3), np.float32)
  with pytest.raises(dml.DmlValidationError, match="DimensionCount") as info:
    dml.padding(x, padding_mode="CONSTANT", padding_value=7, start_padding=(1,), end_padding=(2,))
  (note,) = [n for n in info.value.__notes__ if "reads two ways" in n]
  head = "dml.padding(input, padding_mode='CONSTANT', padding_value=7.0"
  assert f"{head}, start_padding=(0, 1), end_padding=(0, 2))" in note  # the last dimension
  assert f"{head}, start_padding=(1, 0), end_padding=(2, 0))" in note  # the first
  out = dml.padding(
    x, padding_mode="CONSTANT", padding_value=7.0, start_padding=(0, 1), end_padding=(0, 2)
  )
  assert_bits_equal(out, np.pad(x, ((0, 0), (1, 2)), constant_values=7))


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def padding_case(draw, op="PADDING"):
  """PADDING or PADDING1: every mode the level has, pads up to 3 times the input (folding),
  and padding values at the edges of the conversions (NaN, -0.0, truncation, saturation,
  64-bit integers beyond 2**53)."""
  desc_type = strategies.DESCS[op]
  level = draw(strategies.levels(op))
  table = strategies.table_at(desc_type, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  sizes = strategies.draw_sizes(draw, n, max_elements=24)
  modes = [m for m in dml.PaddingMode if m.introduced <= level]
  mode = draw(st.sampled_from(modes))
  start = [draw(st.integers(0, 3 * s + 1)) for s in sizes]
  end = [draw(st.integers(0, 3 * s + 1)) for s in sizes]
  while math.prod(s + lo + hi for s, lo, hi in zip(sizes, start, end, strict=True)) > 400:
    widest = max(range(n), key=lambda d: start[d] + end[d])  # halve the widest padding
    start[widest] //= 2
    end[widest] //= 2
  x = strategies.draw_data(draw, data_type, sizes)
  if op == "PADDING":
    value = draw(
      st.sampled_from([0.0, -0.0, 9.0, 10.6, -10.6, -1.0, 300.5, 1e10, -1e10, math.nan, math.inf])
      | st.floats(allow_nan=False, width=32)
    )
    desc = dml.PaddingDesc(
      TensorDesc(data_type, sizes),
      padding_mode=mode,
      start_padding=start,
      end_padding=end,
      padding_value=value,
    )
    function, oracle = dml.padding, reference.padding
  else:
    if data_type.is_float:
      value = draw(
        st.sampled_from([0.0, -0.0, 0.1, 65504.0, 1e6, math.nan, -math.inf]) | st.floats()
      )
    else:
      info = np.iinfo(data_type.numpy_dtype)
      low, high = int(info.min), int(info.max)
      value = draw(st.sampled_from([low, high, 0, 2**53 + 1, 7]) | st.integers(low, high))
      value = min(max(value, low), high)
    desc = dml.Padding1Desc(
      TensorDesc(data_type, sizes),
      padding_mode=mode,
      start_padding=start,
      end_padding=end,
      padding_value=value,
    )
    function, oracle = dml.padding1, reference.padding1
  kwargs = dict(padding_mode=mode, padding_value=value, start_padding=start, end_padding=end)
  return strategies.Case(
    desc,
    level,
    [x],
    lambda x, level: function(x, feature_level=level, **kwargs),
    lambda: oracle(x, **kwargs),
  )


def padding_cases(n, rng):
  cases = []
  x = rng.standard_normal((2 * n, n)).astype(np.float32)
  modes = {
    "CONSTANT": "constant",
    "EDGE": "edge",
    "REFLECTION": "reflect",
    "SYMMETRIC": "symmetric",
    "WRAP": "wrap",
  }
  # Pads that keep the sizes multiples of the device count (the output can stay sharded), and
  # pads that do not.
  for start, end in (((3, 6), (5, 2)), ((1, 0), (0, 3))):
    for mode, jnp_mode in modes.items():
      if start == (1, 0) and mode not in ("REFLECTION", "WRAP"):
        continue
      for shard in (0, 1):
        operator, fn = ("PADDING1", dml.padding1) if mode == "WRAP" else ("PADDING", dml.padding)
        extra = {"constant_values": np.float32(-2.0)} if mode == "CONSTANT" else {}
        kwargs = dict(padding_mode=mode, padding_value=-2.0, start_padding=start, end_padding=end)
        want = getattr(reference, fn.__name__)(x, **kwargs)
        cases.append(
          sharding_cases.Case(
            operator,
            f"{mode}, pads {start} and {end}, sharded on axis {shard}",
            lambda x, fn=fn, kwargs=kwargs: fn(x, **kwargs),
            lambda x, jnp_mode=jnp_mode, extra=extra, start=start, end=end: jnp.pad(
              x, list(zip(start, end, strict=True)), mode=jnp_mode, **extra
            ),
            [(x, shard)],
            want,
          )
        )
  return cases


VALID = {"PADDING": padding_case, "PADDING1": lambda: padding_case(op="PADDING1")}
SHARDED_CASES = padding_cases
BFLOAT16_CALLS = {
  "padding": lambda x: dml.padding(
    x, padding_mode="REFLECTION", start_padding=(1, 2), end_padding=(0, 1)
  ),
}
