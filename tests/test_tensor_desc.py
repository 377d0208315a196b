"""Tests of the tensor layer: TensorDesc, DMLCalcBufferTensorSize, DataType, FeatureLevel.

Covers the buffer tensor description, the data types, DMLCalcBufferTensorSize's
worked values and the feature-level values.
The validation rules of the tensor layer are tested in test_validation.py.
"""

from __future__ import annotations

import dataclasses
import pickle
import re

import numpy as np
import pytest

import dml_jax as dml
from dml_jax import DataType, FeatureLevel, TensorDesc, TensorFlags, calc_buffer_tensor_size

# Descriptors alone, no JAX arrays: the x64 pass leaves the module out.
pytestmark = pytest.mark.mode_independent

# =========================================================================== #
# calc_buffer_tensor_size
# =========================================================================== #


@pytest.mark.parametrize(
  "data_type, sizes, strides, expected",
  [
    # DMLCalcBufferTensorSize's worked values.
    ("FLOAT16", (3,), None, 8),  # 6 bytes rounded up to a DWORD multiple
    ("FLOAT32", (1, 1, 3, 5), None, 60),
    ("FLOAT32", (1, 1, 3, 5), (15, 15, 5, 1), 60),  # NCHW strides
    ("FLOAT32", (1, 1, 3, 5), (15, 1, 5, 1), 60),  # NHWC strides
    ("FLOAT32", (2, 3), (0, 1), 12),  # broadcast: the last addressed element counts
    ("FLOAT32", (2, 3), (5, 1), 32),  # padded rows: (1*5 + 2*1 + 1) * 4
    ("UINT4", (5,), None, 4),  # 20 bits -> 3 bytes -> 4
    # More values of the same formula.
    ("INT4", (8,), None, 4),  # 32 bits exactly
    ("UINT4", (9,), None, 8),  # 36 bits -> 5 bytes -> 8
    ("UINT8", (1,), None, 4),
    ("UINT8", (4,), None, 4),
    ("UINT8", (5,), None, 8),
    ("FLOAT64", (3,), None, 24),
    ("INT64", (2, 2), (0, 0), 8),  # every element aliases element 0
  ],
)
def test_calc_buffer_tensor_size_worked_values(data_type, sizes, strides, expected):
  assert calc_buffer_tensor_size(data_type, sizes, strides) == expected


def test_calc_buffer_tensor_size_accepts_data_type_forms():
  expected = calc_buffer_tensor_size("FLOAT16", [3])
  assert calc_buffer_tensor_size(DataType.FLOAT16, (3,)) == expected
  assert calc_buffer_tensor_size("DML_TENSOR_DATA_TYPE_FLOAT16", [3]) == expected
  assert calc_buffer_tensor_size(np.float16, [3]) == expected


def test_calc_buffer_tensor_size_of_unknown_is_zero():
  # DMLCalcBufferTensorSize returns 0 for a type it does not know.
  assert calc_buffer_tensor_size("UNKNOWN", (4, 4)) == 0


def test_calc_buffer_tensor_size_rejects_strides_of_wrong_length():
  with pytest.raises(ValueError):
    calc_buffer_tensor_size("FLOAT32", (2, 3), strides=(1,))


# =========================================================================== #
# TensorDesc: defaults, coercion, argument types
# =========================================================================== #


def test_tensor_desc_defaults():
  desc = TensorDesc("FLOAT32", (1, 1, 3, 5))
  assert desc.data_type is DataType.FLOAT32
  assert desc.sizes == (1, 1, 3, 5)
  assert desc.strides is None
  assert desc.flags is TensorFlags.NONE
  assert desc.guaranteed_base_offset_alignment == 0
  # TotalTensorSizeInBytes defaults to DMLCalcBufferTensorSize.
  assert desc.total_tensor_size_in_bytes == 60
  assert desc.dimension_count == 4
  assert desc.element_count == 15
  assert desc.buffer_element_count == 15


@pytest.mark.parametrize(
  "data_type, sizes, strides, expected",
  [
    ("FLOAT16", (3,), None, 8),
    ("FLOAT32", (2, 3), (0, 1), 12),
    ("FLOAT32", (2, 3), (5, 1), 32),
    ("FLOAT32", (1, 1, 3, 5), (15, 1, 5, 1), 60),
    ("UINT4", (5,), None, 4),
  ],
)
def test_tensor_desc_total_size_is_computed(data_type, sizes, strides, expected):
  desc = TensorDesc(data_type, sizes, strides)
  assert desc.total_tensor_size_in_bytes == expected
  assert desc.minimum_size_in_bytes == expected


def test_tensor_desc_explicit_total_size_is_kept():
  desc = TensorDesc("FLOAT16", (3,), total_tensor_size_in_bytes=64)
  assert desc.total_tensor_size_in_bytes == 64
  assert desc.minimum_size_in_bytes == 8


def test_tensor_desc_strided_element_counts():
  desc = TensorDesc("FLOAT32", (2, 3), strides=(5, 1))
  assert desc.element_count == 6  # logical
  assert desc.buffer_element_count == 8  # index of the last addressed element + 1
  broadcast = TensorDesc("FLOAT32", (2, 3), strides=(0, 1))
  assert broadcast.buffer_element_count == 3


def test_tensor_desc_invalid_sizes_do_not_break_construction():
  # Rejection is the validator's job (test_validation.py), not the constructor's.
  assert TensorDesc("FLOAT32", (2, 0)).minimum_size_in_bytes == 0
  assert TensorDesc("FLOAT32", (2, 3), strides=(-1, 1)).minimum_size_in_bytes == 0
  assert TensorDesc("FLOAT32", (2, 3), strides=(1,)).total_tensor_size_in_bytes == 24
  assert TensorDesc("UNKNOWN", (2, 3)).total_tensor_size_in_bytes == 0


@pytest.mark.parametrize(
  "data_type",
  [
    "FLOAT16",
    "float16",
    "DML_TENSOR_DATA_TYPE_FLOAT16",
    DataType.FLOAT16,
    np.float16,
    np.dtype(np.float16),
  ],
)
def test_tensor_desc_coerces_data_type(data_type):
  assert TensorDesc(data_type, (2,)).data_type is DataType.FLOAT16


def test_tensor_desc_coerces_sequences_and_flags():
  desc = TensorDesc(
    "INT8",
    [np.int64(2), 3],
    strides=np.array([3, 1]),
    flags=1,
    total_tensor_size_in_bytes=np.uint32(8),
    guaranteed_base_offset_alignment=np.int32(4),
  )
  assert desc.sizes == (2, 3) and type(desc.sizes[0]) is int
  assert desc.strides == (3, 1)
  assert desc.flags is TensorFlags.OWNED_BY_DML
  assert desc.total_tensor_size_in_bytes == 8
  assert desc.guaranteed_base_offset_alignment == 4


def test_tensor_desc_like():
  assert TensorDesc.like(np.zeros((2, 3), np.int8)) == TensorDesc("INT8", (2, 3))
  assert TensorDesc.like(np.zeros((4,), np.int64), DataType.UINT64) == TensorDesc("UINT64", (4,))


@pytest.mark.parametrize(
  "kwargs, message",
  [
    (dict(sizes=(2.0, 3)), r"Sizes\[0\] must be an integer; got float 2\.0"),
    (dict(sizes=(2, True)), r"Sizes\[1\] must be an integer; got bool True"),
    (dict(sizes=3), r"Sizes must be a sequence of integers; got the scalar 3"),
    (
      dict(sizes=np.int64(3)),
      r"Sizes must be a sequence of integers; got the scalar (np\.int64\()?3",
    ),
    (dict(sizes=("2", 3)), r"Sizes\[0\] must be an integer; got str '2'"),
    (dict(strides=(1.5, 1)), r"Strides\[0\] must be an integer; got float 1\.5"),
    (dict(strides=1), r"Strides must be a sequence of integers; got the scalar 1"),
    (dict(flags="OWNED_BY_DML"), r"Flags must be an integer; got str"),
    (dict(flags=True), r"Flags must be an integer; got bool True"),
    (
      dict(total_tensor_size_in_bytes=24.0),
      r"TotalTensorSizeInBytes must be an integer; got float",
    ),
    (
      dict(guaranteed_base_offset_alignment=4.0),
      r"GuaranteedBaseOffsetAlignment must be an integer",
    ),
  ],
)
def test_tensor_desc_rejects_non_integer_fields(kwargs, message):
  fields = dict(data_type="FLOAT32", sizes=(2, 3)) | kwargs
  with pytest.raises(TypeError, match=message):
    TensorDesc(**fields)


# None is no data type: NumPy reads np.dtype(None) as float64, which must not
# leak through as a silent FLOAT64 tensor.
@pytest.mark.parametrize("data_type", ["FLOAT8", "bool", np.bool_, np.complex64, 1.5, None])
def test_tensor_desc_rejects_unknown_data_type(data_type):
  with pytest.raises(TypeError, match=r"DML_TENSOR_DATA_TYPE"):
    TensorDesc(data_type, (2,))


def test_tensor_desc_is_hashable_and_compares_by_value():
  a = TensorDesc("FLOAT16", (2, 3))
  b = TensorDesc(DataType.FLOAT16, [2, 3], total_tensor_size_in_bytes=12)
  assert a == b and hash(a) == hash(b)
  assert len({a, b}) == 1
  assert {a: "x"}[b] == "x"
  assert a != TensorDesc("FLOAT16", (3, 2))
  assert a != TensorDesc("FLOAT32", (2, 3))
  assert a != TensorDesc("FLOAT16", (2, 3), strides=(3, 1))  # explicit strides are a field
  assert a != TensorDesc("FLOAT16", (2, 3), total_tensor_size_in_bytes=16)
  assert a != TensorDesc("FLOAT16", (2, 3), guaranteed_base_offset_alignment=16)
  assert a != TensorDesc("FLOAT16", (2, 3), flags=TensorFlags.OWNED_BY_DML)


def test_tensor_desc_is_frozen_and_pickles():
  desc = TensorDesc("FLOAT16", (2, 3), strides=(3, 1))
  with pytest.raises(dataclasses.FrozenInstanceError):
    desc.sizes = (1,)
  assert pickle.loads(pickle.dumps(desc)) == desc


@pytest.mark.parametrize(
  "desc, expected",
  [
    (TensorDesc("FLOAT16", (2, 3)), "FLOAT16[2,3]"),
    (TensorDesc("UINT32", (7,)), "UINT32[7]"),
    (TensorDesc("FLOAT32", (2, 3), strides=(5, 1)), "FLOAT32[2,3](strides={5,1})"),
    (TensorDesc("FLOAT32", (2, 3), flags=1), "FLOAT32[2,3](flags=OWNED_BY_DML)"),
    (TensorDesc("FLOAT32", (2, 3), total_tensor_size_in_bytes=64), "FLOAT32[2,3](bytes=64)"),
    # Stating the computed size explicitly changes nothing in the repr.
    (TensorDesc("FLOAT32", (2, 3), total_tensor_size_in_bytes=24), "FLOAT32[2,3]"),
    (TensorDesc("FLOAT32", (2, 3), guaranteed_base_offset_alignment=16), "FLOAT32[2,3](align=16)"),
    (
      TensorDesc(
        "FLOAT32",
        (2, 3),
        strides=(5, 1),
        flags=1,
        total_tensor_size_in_bytes=64,
        guaranteed_base_offset_alignment=16,
      ),
      "FLOAT32[2,3](strides={5,1}, flags=OWNED_BY_DML, bytes=64, align=16)",
    ),
  ],
)
def test_tensor_desc_compact_str_and_round_tripping_repr(desc, expected):
  assert str(desc) == expected
  assert repr(desc).startswith("TensorDesc(")
  rebuilt = eval(repr(desc), {"TensorDesc": TensorDesc, "TensorFlags": dml.TensorFlags})
  assert rebuilt == desc and repr(rebuilt) == repr(desc)


# =========================================================================== #
# DataType
# =========================================================================== #


def test_data_type_values_match_directml_header():
  assert {t.name: t.value for t in DataType} == {
    "UNKNOWN": 0,
    "FLOAT32": 1,
    "FLOAT16": 2,
    "UINT32": 3,
    "UINT16": 4,
    "UINT8": 5,
    "INT32": 6,
    "INT16": 7,
    "INT8": 8,
    "FLOAT64": 9,
    "UINT64": 10,
    "INT64": 11,
    "UINT4": 12,
    "INT4": 13,
  }


@pytest.mark.parametrize(
  "data_type, bits",
  [
    ("UNKNOWN", 0),
    ("FLOAT32", 32),
    ("FLOAT16", 16),
    ("UINT32", 32),
    ("UINT16", 16),
    ("UINT8", 8),
    ("INT32", 32),
    ("INT16", 16),
    ("INT8", 8),
    ("FLOAT64", 64),
    ("UINT64", 64),
    ("INT64", 64),
    ("UINT4", 4),
    ("INT4", 4),
  ],
)
def test_data_type_size_in_bits(data_type, bits):
  assert DataType[data_type].size_in_bits == bits


@pytest.mark.parametrize(
  "value, expected",
  [
    (DataType.INT8, DataType.INT8),
    ("INT8", DataType.INT8),
    ("int8", DataType.INT8),
    ("DML_TENSOR_DATA_TYPE_INT8", DataType.INT8),
    ("dml_tensor_data_type_uint4", DataType.UINT4),
    ("UNKNOWN", DataType.UNKNOWN),
    (np.int8, DataType.INT8),
    (np.dtype("uint64"), DataType.UINT64),
    (np.float64, DataType.FLOAT64),
    ("float16", DataType.FLOAT16),
  ],
)
def test_data_type_from_any(value, expected):
  assert DataType.from_any(value) is expected


@pytest.mark.parametrize(
  "value", ["FLOAT8", "BFLOAT16", "nonsense", np.bool_, np.complex128, 1.5, None]
)
def test_data_type_from_any_rejects_unknown(value):
  with pytest.raises(TypeError, match=r"expected a DML_TENSOR_DATA_TYPE"):
    DataType.from_any(value)


@pytest.mark.parametrize("dtype", [np.bool_, np.complex64, "bfloat16"])
def test_data_type_from_dtype_names_the_missing_type(dtype):
  with pytest.raises(TypeError, match=r"DirectML has no data type for dtype"):
    DataType.from_dtype(dtype)


def test_data_type_numpy_round_trip():
  for data_type in DataType:
    dtype = data_type.numpy_dtype
    if data_type in (DataType.UNKNOWN, DataType.UINT4, DataType.INT4):
      assert dtype is None
    else:
      assert DataType.from_dtype(dtype) is data_type


# =========================================================================== #
# FeatureLevel
# =========================================================================== #


def test_feature_level_values_match_directml_header():
  assert [(str(level), level.value) for level in FeatureLevel] == [
    ("1_0", 0x1000),
    ("2_0", 0x2000),
    ("2_1", 0x2100),
    ("3_0", 0x3000),
    ("3_1", 0x3100),
    ("4_0", 0x4000),
    ("4_1", 0x4100),
    ("5_0", 0x5000),
    ("5_1", 0x5100),
    ("5_2", 0x5200),
    ("6_0", 0x6000),
    ("6_1", 0x6100),
    ("6_2", 0x6200),
    ("6_3", 0x6300),
    ("6_4", 0x6400),
  ]
  assert sorted(FeatureLevel) == list(FeatureLevel)


@pytest.mark.parametrize(
  "value",
  [
    "3_0",
    "3.0",
    " 3_0 ",
    0x3000,
    12288,
    "DML_FEATURE_LEVEL_3_0",
    "dml_feature_level_3_0",
    "FL_3_0",
    "fl3_0",
    FeatureLevel.FL_3_0,
  ],
)
def test_feature_level_from_any(value):
  assert FeatureLevel.from_any(value) is FeatureLevel.FL_3_0


def test_feature_level_from_none_is_newest():
  assert FeatureLevel.from_any(None) is FeatureLevel.FL_6_4
  assert FeatureLevel.from_any(None) == max(FeatureLevel)


@pytest.mark.parametrize(
  "value",
  [
    "foo",
    "",
    "3",
    "3_0_0",
    "30",
    0x3001,
    0x7000,
    0,
    3,
    # Well-formed but unknown levels: no DML_FEATURE_LEVEL_7_0 / 1_1 / 3_5 exists.
    "7_0",
    "1_1",
    "3_5",
    "DML_FEATURE_LEVEL_9_9",
  ],
)
def test_feature_level_from_any_rejects_unknown_values(value):
  with pytest.raises(ValueError, match=r"unknown DML_FEATURE_LEVEL .*known levels: 1_0, 2_0"):
    FeatureLevel.from_any(value)


@pytest.mark.parametrize("value", [3.0, True, b"3_0", [3, 0], (3, 0), object()])
def test_feature_level_from_any_rejects_wrong_kinds(value):
  with pytest.raises(TypeError, match=r"feature_level must be a FeatureLevel, an int or a string"):
    FeatureLevel.from_any(value)


@pytest.mark.parametrize(
  "level, expected",
  [("1_0", 5), ("2_0", 5), ("2_1", 5), ("3_0", 8), ("3_1", 8), ("6_4", 8)],
)
def test_feature_level_max_dimension_count(level, expected):
  # DML_TENSOR_DIMENSION_COUNT_MAX (5) before FL 3_0, _MAX1 (8) from it.
  assert FeatureLevel.from_any(level).max_dimension_count == expected


def test_feature_level_str_and_order():
  assert str(FeatureLevel.FL_2_1) == "2_1"
  assert FeatureLevel.from_any("2_1") < FeatureLevel.from_any("3_0") < FeatureLevel.FL_6_4
  assert re.fullmatch(r"\d_\d", str(FeatureLevel.from_any(0x6400)))


def test_public_api_exports():
  for name in ("DataType", "FeatureLevel", "TensorDesc", "TensorFlags", "calc_buffer_tensor_size"):
    assert hasattr(dml, name)
  assert TensorFlags.OWNED_BY_DML == 1 and TensorFlags.NONE == 0


# --------------------------------------------------------------------------- #
# A lone TensorDesc validated
# --------------------------------------------------------------------------- #


def test_a_lone_tensor_desc_lists_every_broken_layer_rule():
  tensor = TensorDesc(
    "FLOAT32", (2, 3), strides=(4, 1), flags=TensorFlags.OWNED_BY_DML, total_tensor_size_in_bytes=8
  )
  assert [v.field for v in tensor.violations()] == ["Tensor.TotalTensorSizeInBytes"]
  assert [v.field for v in tensor.violations(is_output=True)] == [
    "Tensor.TotalTensorSizeInBytes",
    "Tensor.Flags",
  ]
  with pytest.raises(dml.DmlValidationError) as raised:
    tensor.validate()
  assert raised.value.operator is None and raised.value.subject == "DML_BUFFER_TENSOR_DESC"
  assert str(raised.value).splitlines()[0] == (
    "DML_BUFFER_TENSOR_DESC is invalid at DML_FEATURE_LEVEL_6_4 (1 problem):"
  )
  assert raised.value.table().startswith("DML_BUFFER_TENSOR_DESC is invalid")
  assert pickle.loads(pickle.dumps(raised.value)).subject == "DML_BUFFER_TENSOR_DESC"


def test_a_lone_tensor_desc_rank_limit_follows_the_feature_level():
  tensor = TensorDesc("FLOAT32", (1,) * 6)
  assert tensor.validate("3_0") is tensor
  (violation,) = tensor.violations("2_1")
  assert violation.field == "Tensor.DimensionCount" and violation.hint == (
    "ranks 6 to 8 need FL >= 3_0"
  )
