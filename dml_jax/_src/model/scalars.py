"""JSON values to element bytes, as DxDispatch converts them.

The rules (for buffer initializers and for the scalar fields of operator descs):

- floats (FLOAT64, FLOAT32, FLOAT16) take any number, or one of the strings ``"nan"``,
  ``"inf"``, ``"-inf"`` in any case; an integer literal must be exact as a double
  (2**53 + 1 is refused). FLOAT32 rounds the double to nearest even (+-inf beyond its
  range); FLOAT16 rounds the double to float32 first, then *truncates* the float32 to
  half precision (toward zero; 65536 and beyond become infinity), which is not what
  ``astype(np.float16)`` does;
- integers take integer literals only (``1.0`` and ``"1"`` are refused), and a value
  outside the type's range is refused: nothing is rounded, saturated or wrapped;
- a sequence initializer adds its delta element by element in the element type
  (`sequence`): float32 adds in float32, FLOAT16 adds in float32 and truncates each
  sum to half, integers wrap modulo 2**bits.

Examples:
  >>> hex(f32_to_f16_bits_truncating(np.float32(1.2).view(np.uint32)))
  '0x3ccc'
  >>> element_bytes(1.2, DataType.FLOAT16).hex(), np.float16(1.2).tobytes().hex()
  ('cc3c', 'cd3c')
  >>> element_bytes(128, DataType.INT8)
  Traceback (most recent call last):
  ...
  dml_jax._src.model.scalars.ConversionError: narrowing_error: 128 is outside INT8's range [-128, 127]
  >>> sequence(0.1, 0.1, 3, DataType.FLOAT16).view(np.uint16)
  array([11878, 12902, 13516], dtype=uint16)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dml_jax._src.dtypes import DataType

_SPECIAL = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_FLOATS = (DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64)
_INTEGERS = (
  DataType.INT8,
  DataType.INT16,
  DataType.INT32,
  DataType.INT64,
  DataType.UINT8,
  DataType.UINT16,
  DataType.UINT32,
  DataType.UINT64,
)
BUFFER_TYPES = _FLOATS + _INTEGERS
"""The element types a buffer initializer may have."""


class ConversionError(ValueError):
  """A JSON value that the target type does not accept (the message is DxDispatch's reason)."""


def element_size(data_type: DataType) -> int:
  """Bytes per element (0 for UNKNOWN)."""
  return data_type.size_in_bits // 8


def as_double(value: Any) -> float:
  """A float field's value as a double: a number, or "nan", "inf", "-inf" in any case."""
  if isinstance(value, str):
    special = _SPECIAL.get(value.lower())
    if special is None:
      raise ConversionError("Expected 'NaN', 'Inf', or '-Inf'.")
    return special
  if isinstance(value, bool) or not isinstance(value, int | float):
    raise ConversionError("Expected a number or 'NaN', 'Inf', or '-Inf'.")
  if isinstance(value, int):
    if float(value) != value:
      raise ConversionError(
        f"the integer {value} is not exact as a double; write it as a float literal"
        f" ({float(value)!r}) to accept the rounding"
      )
    return float(value)
  return value


def as_float32(value: Any) -> np.float32:
  """A FLOAT value: the double rounded to float32 (nearest even; +-inf beyond the range)."""
  with np.errstate(over="ignore"):
    return np.float32(as_double(value))


def f32_to_f16_bits_truncating(bits: int) -> int:
  """float32 bits -> half bits, rounding toward zero (the half library DxDispatch uses)."""
  bits = int(bits)
  sign = (bits >> 16) & 0x8000
  exponent = (bits >> 23) & 0xFF
  mantissa = bits & 0x7FFFFF
  if exponent == 0xFF:  # inf or NaN: the top 10 mantissa bits kept
    return sign | 0x7C00 | (mantissa >> 13)
  if exponent >= 143:  # |x| >= 65536
    return sign | 0x7C00
  if exponent >= 113:  # a normal half
    return sign | ((exponent - 112) << 10) | (mantissa >> 13)
  if exponent >= 103:  # a subnormal half
    return sign | ((mantissa | 0x800000) >> (126 - exponent))
  return sign


def as_float16_bits(value: Any) -> int:
  """A FLOAT16 value's bits: the double to float32 (nearest), then truncated to half."""
  return f32_to_f16_bits_truncating(int(as_float32(value).view(np.uint32)))


def as_integer(value: Any, data_type: DataType) -> int:
  """An integer literal in `data_type`'s range (ConversionError otherwise)."""
  signed = data_type.is_signed_integer
  if isinstance(value, bool) or not isinstance(value, int) or (not signed and value < 0):
    raise ConversionError(
      "Expected a signed integer." if signed else "Expected an unsigned integer."
    )
  info = np.iinfo(data_type.numpy_dtype)
  if not int(info.min) <= value <= int(info.max):
    raise ConversionError(
      f"narrowing_error: {value} is outside {data_type.name}'s range [{info.min}, {info.max}]"
    )
  return value


def element(value: Any, data_type: DataType) -> np.generic:
  """One JSON value as a NumPy scalar of `data_type` (FLOAT16 by truncation)."""
  if data_type == DataType.FLOAT64:
    return np.float64(as_double(value))
  if data_type == DataType.FLOAT32:
    return as_float32(value)
  if data_type == DataType.FLOAT16:
    return np.uint16(as_float16_bits(value)).view(np.float16)
  if data_type in _INTEGERS:
    return data_type.numpy_dtype.type(as_integer(value, data_type))  # type: ignore[union-attr]
  raise ConversionError("Invalid tensor data type.")


def element_bytes(value: Any, data_type: DataType) -> bytes:
  """One JSON value as the little-endian bytes of one `data_type` element."""
  return element(value, data_type).tobytes()


def _half_sequence(first: np.generic, step: np.generic, count: int) -> np.ndarray:
  """FLOAT16 `sequence`: each sum taken in float32 and truncated to half. The next half
  depends on the one before only, so once a half comes back the sequence repeats: at most
  65,537 sums are computed, whatever `count`."""
  states: list[int] = []
  seen: dict[int, int] = {}
  half = f32_to_f16_bits_truncating(int(np.float32(first).view(np.uint32)))
  while len(states) < count and half not in seen:
    seen[half] = len(states)
    states.append(half)
    v = np.float32(np.uint16(half).view(np.float16)) + np.float32(step)
    half = f32_to_f16_bits_truncating(int(np.float32(v).view(np.uint32)))
  bits = np.array(states, np.uint16)
  if len(states) < count:  # `half` came back: the states from its first place repeat
    cycle, rest = bits[seen[half] :], count - len(states)
    bits = np.concatenate([bits, np.tile(cycle, -(-rest // len(cycle)))[:rest]])
  bits[0] = np.float16(first).view(np.uint16)
  return bits.view(np.float16)


def sequence(start: Any, delta: Any, count: int, data_type: DataType) -> np.ndarray:
  """`count` elements: start, start + delta, ..., each sum taken in the element type."""
  first, step = element(start, data_type), element(delta, data_type)
  dtype = np.dtype(type(first))
  if count == 0:
    return np.zeros(0, dtype)
  if data_type == DataType.FLOAT16:
    return _half_sequence(first, step, count)
  terms = np.full(count, step, dtype)
  terms[0] = first
  with np.errstate(over="ignore"):
    return np.add.accumulate(terms, dtype=dtype)  # one add after another, wrapping for integers
