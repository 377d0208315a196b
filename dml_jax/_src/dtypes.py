"""DirectML data types (`DML_TENSOR_DATA_TYPE`) and their NumPy/JAX counterparts.

Also home of the 64-bit policy: with ``jax_enable_x64`` off, JAX cannot hold
64-bit arrays, so 64-bit data is refused and 64-bit host index arrays are
narrowed only when every value fits in 32 bits (never wrapped).
"""

from __future__ import annotations

import enum
from typing import Any, TypeAlias, cast

import jax
import numpy as np
from jax.typing import DTypeLike


class DataType(enum.IntEnum):
  """`DML_TENSOR_DATA_TYPE`, with DirectML's enum values.

  Examples:
    >>> DataType.from_dtype(np.float16)
    <DataType.FLOAT16: 2>
    >>> DataType.UINT64.size_in_bits
    64
  """

  UNKNOWN = 0
  FLOAT32 = 1
  FLOAT16 = 2
  UINT32 = 3
  UINT16 = 4
  UINT8 = 5
  INT32 = 6
  INT16 = 7
  INT8 = 8
  FLOAT64 = 9
  UINT64 = 10
  INT64 = 11
  UINT4 = 12
  INT4 = 13

  def __str__(self) -> str:
    return self.name

  @property
  def size_in_bits(self) -> int:
    """Element size in bits (0 for UNKNOWN), as DMLCalcBufferTensorSize uses."""
    return _SIZE_IN_BITS[self]

  @property
  def numpy_dtype(self) -> np.dtype[Any] | None:
    """The NumPy dtype holding this type, or None (UNKNOWN, 4-bit types)."""
    return _TO_NUMPY.get(self)

  @property
  def is_signed_integer(self) -> bool:
    return self in (DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64, DataType.INT4)

  @property
  def is_float(self) -> bool:
    return self in (DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64)

  @property
  def is_64_bit(self) -> bool:
    return self.size_in_bits == 64

  @classmethod
  def from_any(cls, value: DataTypeLike) -> DataType:
    """Accepts a DataType, its name (``"FLOAT32"``, ``"DML_TENSOR_DATA_TYPE_FLOAT32"``) or a dtype."""
    if isinstance(value, DataType):
      return value
    if isinstance(value, str):
      name = value.upper().removeprefix("DML_TENSOR_DATA_TYPE_")
      if name in cls.__members__:
        return cls[name]
    try:
      return cls.from_dtype(value)
    except TypeError:
      raise TypeError(
        f"expected a DML_TENSOR_DATA_TYPE (a DataType, a name such as"
        f" 'FLOAT32', or a NumPy dtype); got {value!r}"
      ) from None

  @classmethod
  def from_dtype(cls, dtype: Any) -> DataType:
    """The DataType of a NumPy/JAX dtype; TypeError if DirectML has none."""
    if dtype is None:  # np.dtype(None) would be float64
      raise TypeError("expected a dtype; got None")
    try:
      dt = np.dtype(dtype)
    except TypeError:
      raise TypeError(f"expected a dtype; got {dtype!r}") from None
    try:
      return _FROM_NUMPY[dt]
    except KeyError:
      supported = ", ".join(t.name.lower() for t in _FROM_NUMPY)
      raise TypeError(
        f"DirectML has no data type for dtype {dt.name}; the types it shares"
        f" with JAX are {supported}"
      ) from None


DataTypeLike: TypeAlias = DataType | DTypeLike
"""What a `data_type` argument accepts: a DataType, its name ("FLOAT32") or a NumPy/JAX dtype."""

_SIZE_IN_BITS = {
  DataType.UNKNOWN: 0,
  DataType.FLOAT64: 64,
  DataType.UINT64: 64,
  DataType.INT64: 64,
  DataType.FLOAT32: 32,
  DataType.UINT32: 32,
  DataType.INT32: 32,
  DataType.FLOAT16: 16,
  DataType.UINT16: 16,
  DataType.INT16: 16,
  DataType.UINT8: 8,
  DataType.INT8: 8,
  DataType.UINT4: 4,
  DataType.INT4: 4,
}

_TO_NUMPY: dict[DataType, np.dtype[Any]] = {
  DataType.FLOAT64: np.dtype(np.float64),
  DataType.FLOAT32: np.dtype(np.float32),
  DataType.FLOAT16: np.dtype(np.float16),
  DataType.INT64: np.dtype(np.int64),
  DataType.INT32: np.dtype(np.int32),
  DataType.INT16: np.dtype(np.int16),
  DataType.INT8: np.dtype(np.int8),
  DataType.UINT64: np.dtype(np.uint64),
  DataType.UINT32: np.dtype(np.uint32),
  DataType.UINT16: np.dtype(np.uint16),
  DataType.UINT8: np.dtype(np.uint8),
}
_FROM_NUMPY = {dt: t for t, dt in _TO_NUMPY.items()}
_INTEGER_TYPES = frozenset(t for t, dt in _TO_NUMPY.items() if dt.kind in "iu")


def data_type_of_dtype(dtype: np.dtype) -> DataType | None:
  """The DataType of a NumPy dtype, or None where DirectML has none (no error)."""
  return _FROM_NUMPY.get(dtype)


_INDEX_FROM_NUMPY = {dt: t for dt, t in _FROM_NUMPY.items() if t in _INTEGER_TYPES}

# The functional API's fast path (arguments.py) needs a cheap "is a jax.Array" test:
# `type(x) in ARRAY_TYPES` costs a fraction of isinstance(x, jax.Array). as_operand records
# the classes it meets that subclass jax.Array for real (ArrayImpl), whose every instance
# passes that isinstance; tracers pass it by their aval, per instance, so they are never
# recorded and always take as_operand's path.
ARRAY_TYPES: set[type] = set()

# Named groups used by the operators' tensor-support tables.
FLOAT_AND_INT_16_32 = (
  DataType.FLOAT32,
  DataType.FLOAT16,
  DataType.INT32,
  DataType.INT16,
  DataType.UINT32,
  DataType.UINT16,
)
UP_TO_32_BIT = FLOAT_AND_INT_16_32 + (DataType.INT8, DataType.UINT8)
ALL_DATA = (DataType.FLOAT64, DataType.INT64, DataType.UINT64) + UP_TO_32_BIT
INDEX_TYPES = (DataType.INT64, DataType.INT32, DataType.UINT64, DataType.UINT32)


def x64_enabled() -> bool:
  # jax's Config adds its options as attributes at run time (_HAS_DYNAMIC_ATTRIBUTES), which
  # its annotations do not declare.
  return bool(jax.config.jax_enable_x64)  # type: ignore[attr-defined]


X64_TIP = (
  "enable 64-bit types in JAX first: jax.config.update('jax_enable_x64', True)"
  " at start-up, or JAX_ENABLE_X64=1 in the environment"
)


def as_operand(
  x: Any, *, role: str, is_index: bool = False, carried: dict[np.dtype[Any], DataType] | None = None
) -> tuple[Any, DataType]:
  """Turns an argument into an array JAX can hold, and returns its DirectML type.

  JAX arrays and tracers pass through. Python scalars and lists follow JAX's
  default dtypes. NumPy arrays keep their dtype; with x64 off a 64-bit NumPy
  array is refused when it holds data, and narrowed to 32 bits when it holds
  indices or lengths whose values all fit (the returned DataType is still the
  64-bit one, so validation sees what the caller passed).

  `carried` maps dtypes DirectML lacks to the DataType that carries their bits (the
  functional API's bfloat16 extension, `dml_jax._src.moved_bits`).

  Raises:
    TypeError: for a dtype DirectML lacks, float/bool indices, or 64-bit data
      with x64 off.
    ValueError: for 64-bit host indices that do not fit in 32 bits with x64 off.
  """
  if isinstance(x, jax.Array):  # concrete arrays and tracers; never 64-bit with x64 off
    if jax.Array in type(x).__mro__:
      ARRAY_TYPES.add(type(x))
    data_type = _FROM_NUMPY.get(x.dtype)
    if data_type is not None and (not is_index or data_type in _INTEGER_TYPES):
      return x, data_type
    array: jax.Array | np.ndarray = x
  elif isinstance(x, np.ndarray | np.generic):
    array = np.asarray(x)
  else:
    try:
      array = jax.numpy.asarray(x)
    except (TypeError, ValueError) as error:
      raise TypeError(
        f"{role} must be an array (a jax.Array, a NumPy array, a scalar or a nested list of"
        f" numbers); got {type(x).__name__}: {x!r:.80}"
      ) from error
  dtype = np.dtype(array.dtype)
  if is_index and not np.issubdtype(dtype, np.integer):
    raise TypeError(f"{role} must have an integer dtype; got {dtype.name}")
  if carried and dtype in carried:
    return array, carried[dtype]
  data_type = DataType.from_dtype(dtype)
  if data_type.is_64_bit and not x64_enabled():
    if not is_index:
      raise TypeError(
        f"{role} has 64-bit dtype {dtype.name}, which JAX cannot hold with"
        f" jax_enable_x64 off; {X64_TIP}"
      )
    # A host array: JAX holds no 64-bit array with x64 off.
    array = _narrow_host_indices(cast(np.ndarray, array), role)
  return array, data_type


def _narrow_host_indices(array: np.ndarray, role: str) -> np.ndarray:
  narrow = np.dtype(np.int32 if array.dtype == np.int64 else np.uint32)
  info = np.iinfo(narrow)
  if array.size and (array.min() < info.min or array.max() > info.max):
    bad = array[(array < info.min) | (array > info.max)].flat[0]
    raise ValueError(
      f"{role} holds {array.dtype.name} value {int(bad)}, which does not fit"
      f" in {narrow.name}; with jax_enable_x64 off, dml_jax narrows 64-bit"
      f" host indices only when every value fits, and never wraps them."
      f" To use it, {X64_TIP}"
    )
  return array.astype(narrow)
