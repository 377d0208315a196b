"""DML_OPERATOR_PADDING and DML_OPERATOR_PADDING1: the input with elements added around it.

`OutputTensor.Sizes[i] = InputTensor.Sizes[i] + StartPadding[i] + EndPadding[i]`. Each
output coordinate j of dimension i maps to k = j - StartPadding[i] of the input; where k is
outside [0, Sizes[i]) the padding mode says which element (if any) is read, dimension by
dimension (a corner combines the mappings of its dimensions):

- CONSTANT: none: the element is PaddingValue if any coordinate lies in the padding;
- EDGE: the nearest edge element, clamp(k, 0, S - 1);
- REFLECTION: the mirror image without repeating the edge (... 2 1 | 0 1 2 3 | 2 1 ...);
- SYMMETRIC: the mirror image repeating the edge (... 1 0 | 0 1 2 3 | 3 2 ...);
- WRAP: the input repeated, k mod S.

Pads may exceed the input: REFLECTION and SYMMETRIC then fold again and again, periodically
(period 2(S - 1) and 2S). REFLECTION of a dimension of size 1 has no mirror image; dml_jax
reads the one element there (DirectML leaves it undocumented). Pads are UINTs: DirectML never
crops (use SLICE for that).

PADDING's PaddingValue is a FLOAT (float32); PADDING1 (from FL 5_0) gives it in the output's
data type (PaddingValueDataType must equal OutputTensor.DataType), so 64-bit integers are exact.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import numbers
import struct
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, natural, placement, registry, rules
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import ALL_DATA, UP_TO_32_BIT, DataType, DataTypeLike
from dml_jax._src.errors import Checker
from dml_jax._src.feature_level import (
  FeatureLevel,
  FeatureLevelLike,
  SupportTable,
  as_level,
  support,
)
from dml_jax._src.fields import FieldKind, as_float, as_scalar, dml_field, narrowed
from dml_jax._src.integers import as_int_tuple
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc


class PaddingMode(enum.IntEnum):
  """`DML_PADDING_MODE`, with DirectML's values.

  Examples:
    >>> PaddingMode.from_any("DML_PADDING_MODE_REFLECTION")
    <PaddingMode.REFLECTION: 2>
    >>> PaddingMode.from_any("wrap"), PaddingMode.from_any(3)
    (<PaddingMode.WRAP: 4>, <PaddingMode.SYMMETRIC: 3>)
  """

  CONSTANT = 0
  EDGE = 1
  REFLECTION = 2
  SYMMETRIC = 3  # from FL 3_0
  WRAP = 4  # from FL 6_4

  def __str__(self) -> str:
    return self.name

  @property
  def introduced(self) -> FeatureLevel:
    """The first feature level that accepts this mode."""
    return _MODE_INTRODUCED.get(self, FeatureLevel.FL_1_0)

  @classmethod
  def from_any(cls, value: PaddingModeLike) -> PaddingMode:
    """Accepts a PaddingMode, its value (2), or its name with or without the
    DML_PADDING_MODE_ prefix ("REFLECTION", "DML_PADDING_MODE_REFLECTION"; any case).

    Raises:
      ValueError: for anything else, listing the names.
    """
    if isinstance(value, PaddingMode):
      return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
      if int(value) in cls._value2member_map_:
        return cls(int(value))
    elif isinstance(value, str):
      name = value.strip().upper().removeprefix("DML_PADDING_MODE_")
      if name in cls.__members__:
        return cls[name]
    names = ", ".join(f"{mode.name} ({mode.value})" for mode in cls)
    raise ValueError(
      f"unknown DML_PADDING_MODE {value!r}; the modes are {names}, as names with or without"
      f" the DML_PADDING_MODE_ prefix, as values, or as dml.PaddingMode"
    )


PaddingModeLike = PaddingMode | str | int
"""What a `padding_mode` argument accepts (see `PaddingMode.from_any`)."""

_MODE_INTRODUCED = {
  PaddingMode.SYMMETRIC: FeatureLevel.FL_3_0,
  PaddingMode.WRAP: FeatureLevel.FL_6_4,
}


def _table(dimension_counts, data_types):
  row = support(dimension_counts, data_types)
  return {"InputTensor": row, "OutputTensor": row}


_FLOATS = (DataType.FLOAT32, DataType.FLOAT16)

_PADDING_SUPPORT = SupportTable(
  "PADDING",
  {
    FeatureLevel.FL_1_0: _table((4, 5), _FLOATS),
    FeatureLevel.FL_2_1: _table((4, 5), UP_TO_32_BIT),
    FeatureLevel.FL_3_1: _table((1, 8), UP_TO_32_BIT),
    FeatureLevel.FL_5_0: _table((1, 8), ALL_DATA),
  },
)

_PADDING1_SUPPORT = SupportTable("PADDING1", {FeatureLevel.FL_5_0: _table((1, 8), ALL_DATA)})


# -- the padding value, in the output's data type ---------------------------------------------


def float_padding_constant(value: float, data_type: DataType) -> np.ndarray:
  """PADDING's FLOAT PaddingValue as an element of `data_type` (a 0-d NumPy array).

  The value is a float32 first (the field is a C FLOAT: a Python float rounds to the nearest
  float32, beyond its range to +-inf). Float outputs take it rounded to nearest even (exact
  for FLOAT32 and FLOAT64). Integer outputs take it truncated toward zero (10.6 -> 10,
  -10.6 -> -10), saturated to the type's range (so -1.0 gives 0 for unsigned types, +-inf
  the extremes), and NaN gives 0.
  """
  dtype = data_type.numpy_dtype
  single = narrowed(value)  # beyond the range: +-inf, as IEEE rounding gives; NaN bits kept
  if data_type == DataType.FLOAT32:
    return np.array(single, dtype)
  if data_type.is_float:
    with np.errstate(over="ignore"):
      return np.array(single, dtype)
  info = np.iinfo(dtype)
  if math.isnan(single):
    return np.array(0, dtype)
  if math.isinf(single):
    return np.array(info.max if single > 0 else info.min, dtype)
  return np.array(min(max(math.trunc(float(single)), int(info.min)), int(info.max)), dtype)


def check_scalar_union(
  check: Checker,
  value: tuple[str, int | float],
  value_type: tuple[str, DataType],
  output_type: DataType,
) -> None:
  """The rules of a DML_SCALAR_UNION field and its data-type field, (name, value) each: the
  type must be the output's, and the value one that type holds (PADDING1's PaddingValue,
  DIAGONAL_MATRIX1's Value)."""
  (value_field, number), (type_field, data_type) = value, value_type
  check.expect(
    data_type == output_type,
    type_field,
    f"must equal OutputTensor.DataType ({output_type})",
    data_type,
  )
  if data_type.numpy_dtype is not None and not scalar_in_range(number, data_type):
    if data_type.is_float:
      rule = f"must be a number a {data_type} can round to"
    else:
      info = np.iinfo(data_type.numpy_dtype)
      rule = f"must be an integer in [{info.min}, {info.max}], exactly a {data_type}"
    check.fail(
      value_field,
      rule,
      number,
      hint=f"DML_SCALAR_UNION holds the value in {type_field}: no rounding or wrapping of integers",
    )


def scalar_in_range(value: int | float, data_type: DataType) -> bool:
  """Whether a DML_SCALAR_UNION `value` is exactly an element of `data_type` (an integer type),
  or, for a float type, a number that rounds to one (any Python float, an int that has a
  nearest Python float)."""
  if data_type.is_float:
    try:
      float(value)  # an int beyond the float range has no nearest float
    except OverflowError:
      return False
    return True
  if isinstance(value, float) and not value.is_integer():
    return False
  info = np.iinfo(data_type.numpy_dtype)
  return int(info.min) <= value <= int(info.max)


def scalar_padding_constant(value: int | float, data_type: DataType) -> np.ndarray:
  """PADDING1's PaddingValue as an element of `data_type` (a 0-d NumPy array).

  Integers are exact (a Python int keeps 64-bit values beyond 2**53); a float type takes the
  value rounded to nearest even (for FLOAT16: directly, not through float32), beyond its
  range +-inf. `value` must pass `scalar_in_range`.
  """
  dtype = data_type.numpy_dtype
  if not data_type.is_float:
    return np.array(int(value), dtype)
  if data_type == DataType.FLOAT32:
    return np.array(narrowed(float(value)), dtype)  # a NaN keeps its payload bits
  with np.errstate(over="ignore"):
    return np.array(float(value), dtype)


def _value_key(value: int | float) -> int | bytes:
  """A hashable key that tells apart every padding value (0.0 from -0.0, NaN payloads)."""
  return struct.pack("<d", value) if isinstance(value, float) else value


def _value_of_key(key: int | bytes) -> int | float:
  return struct.unpack("<d", key)[0] if isinstance(key, bytes) else key


# -- the index maps and the lowering ----------------------------------------------------------


def source_positions(mode: PaddingMode, size: int, start: int, end: int) -> np.ndarray:
  """The input position that each output position of one dimension reads (not CONSTANT)."""
  k = np.arange(-start, size + end, dtype=np.int64)
  if mode is PaddingMode.EDGE:
    return np.clip(k, 0, size - 1)
  if mode is PaddingMode.WRAP:
    return np.mod(k, size)
  if mode is PaddingMode.REFLECTION:
    if size == 1:  # no mirror image: the one element (undocumented in DirectML)
      return np.zeros_like(k)
    period = 2 * (size - 1)
    r = np.mod(k, period)
    return np.where(r < size, r, period - r)
  period = 2 * size  # SYMMETRIC
  r = np.mod(k, period)
  return np.where(r < size, r, period - 1 - r)


def _remap(x: jax.Array, axis: int, positions: np.ndarray) -> jax.Array:
  """x's elements along `axis` at `positions` (static, in range): one gather.

  XLA fuses the gathers of successive axes into one loop that reads each output element's
  source, at the copy on an H100 (1.03 of it for EDGE on a (64, 64, 512, 512) float32 input
  padded by 3 on each spatial side) and twice as fast on the CPU as slices, reversed slices
  and broadcast edges joined by concatenates, which moved the data once per padded axis.
  """
  if x.shape[axis] < 2**31:
    return jnp.take(x, positions.astype(np.int32), axis=axis, mode="clip")
  return _remap_by_runs(x, axis, positions)  # positions past int32: no index array at all


def _remap_by_runs(x: jax.Array, axis: int, positions: np.ndarray) -> jax.Array:
  """`_remap` as slices, reversed slices and broadcast edges joined by one concatenate."""
  pieces, i, n = [], 0, len(positions)
  while i < n:
    first = int(positions[i])
    step = int(positions[i + 1]) - first if i + 1 < n else 1
    step = step if step in (-1, 0, 1) else 1
    length = 1
    while i + length < n and int(positions[i + length]) == first + step * length:
      length += 1
    if step == 1:
      pieces.append(lax.slice_in_dim(x, first, first + length, axis=axis))
    elif step == -1:
      piece = lax.slice_in_dim(x, first - length + 1, first + 1, axis=axis)
      pieces.append(lax.rev(piece, (axis,)))
    else:
      piece = lax.slice_in_dim(x, first, first + 1, axis=axis)
      shape = piece.shape[:axis] + (length,) + piece.shape[axis + 1 :]
      pieces.append(lax.broadcast_in_dim(piece, shape, tuple(range(x.ndim))))
    i += length
  return pieces[0] if len(pieces) == 1 else lax.concatenate(pieces, axis)


_JNP_MODES = {
  PaddingMode.EDGE: "edge",
  PaddingMode.REFLECTION: "reflect",
  PaddingMode.SYMMETRIC: "symmetric",
  PaddingMode.WRAP: "wrap",
}


def _pad(
  x: jax.Array,
  mode: PaddingMode,
  constant: np.ndarray,
  start: tuple[int, ...],
  end: tuple[int, ...],
) -> jax.Array:
  if mode is PaddingMode.CONSTANT:
    config = [(lo, hi, 0) for lo, hi in zip(start, end, strict=True)]
    return lax.pad(x, jnp.asarray(constant, x.dtype), config)
  if not placement.one_device():
    # Over several devices, jnp.pad's slices, reversals and concatenates (the same bits for
    # every mode): XLA partitions them along a sharded padded axis by exchanging the edges,
    # where a gather along it would all-reduce the whole output and replicate it.
    return jnp.pad(x, list(zip(start, end, strict=True)), mode=_JNP_MODES[mode])
  for axis, (size, lo, hi) in enumerate(zip(x.shape, start, end, strict=True)):
    if lo or hi:
      x = _remap(x, axis, source_positions(mode, size, lo, hi))
  return x


# -- the rules both operators share -----------------------------------------------------------


class _PaddingRules:
  """What PADDING and PADDING1 share: output sizes, the pad arrays' rules, the modes."""

  input_tensor: TensorDesc
  padding_mode: PaddingMode
  start_padding: tuple[int, ...]
  end_padding: tuple[int, ...]
  dimension_count: int

  def _pads_fit(self) -> bool:
    n = self.input_tensor.dimension_count
    return len(self.start_padding) == n and len(self.end_padding) == n

  def infer_output(self) -> TensorDesc | None:
    if not self._pads_fit():
      return None
    sizes = self.input_tensor.sizes
    padded = tuple(
      s + lo + hi for s, lo, hi in zip(sizes, self.start_padding, self.end_padding, strict=True)
    )
    return TensorDesc(self.input_tensor.data_type, padded)

  def _check_padding_rules(self, check: Checker) -> None:
    n = self.input_tensor.dimension_count
    rules.check_count(
      check, "DimensionCount", self.dimension_count, "StartPadding", len(self.start_padding)
    )
    check.expect(
      self.dimension_count == len(self.end_padding),
      "DimensionCount",
      f"must equal the number of EndPadding ({len(self.end_padding)})",
      self.dimension_count,
    )
    check.expect(
      self.dimension_count == n,
      "DimensionCount",
      f"must equal InputTensor.DimensionCount ({n}): one pad per dimension at each end",
      self.dimension_count,
      hint="pad StartPadding and EndPadding with leading 0s" if self.dimension_count < n else None,
    )
    for name, pads in (("StartPadding", self.start_padding), ("EndPadding", self.end_padding)):
      check.expect(
        all(p >= 0 for p in pads),
        name,
        "every pad must be >= 0 (UINTs: DirectML pads, it never crops)",
        pads,
        hint="crop with SLICE",
      )
    level = FeatureLevel.from_any(check.feature_level)
    mode = self.padding_mode
    check.expect(
      mode.introduced <= level,
      "PaddingMode",
      f"DML_PADDING_MODE_{mode.name} exists from FL {mode.introduced} on",
      mode.name,
      hint="CONSTANT, EDGE and REFLECTION work at every level",
    )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return f"must be InputTensor.Sizes + StartPadding + EndPadding: {braced(expected)}"

  def _explain_padding(self, value: str) -> list[str]:
    sizes, start, end = self.input_tensor.sizes, self.start_padding, self.end_padding
    if not self._pads_fit():
      return [
        f"StartPadding has {len(start)} and EndPadding {len(end)} pad(s) for"
        f" {len(sizes)} dimension(s): no output can be inferred (DirectML needs one pad per"
        f" dimension at each end)."
      ]
    sums = ", ".join(f"{s} + {lo} + {hi}" for s, lo, hi in zip(sizes, start, end, strict=True))
    padded = tuple(s + lo + hi for s, lo, hi in zip(sizes, start, end, strict=True))
    reads = {
      PaddingMode.CONSTANT: f"an element is {value} if any of its coordinates lies in the"
      f" padding, else InputTensor[j - StartPadding]",
      PaddingMode.EDGE: "each coordinate reads the nearest edge: clamp(k, 0, S - 1)",
      PaddingMode.REFLECTION: "each coordinate is mirrored without repeating the edge, folding"
      " again for pads larger than the input (period 2(S - 1); a dimension of size 1 reads"
      " its one element)",
      PaddingMode.SYMMETRIC: "each coordinate is mirrored repeating the edge, folding again"
      " for pads larger than the input (period 2S)",
      PaddingMode.WRAP: "each coordinate wraps around: k mod S",
    }[self.padding_mode]
    return [
      f"OutputTensor.Sizes[i] = InputTensor.Sizes[i] + StartPadding[i] + EndPadding[i] ="
      f" {sums}: {braced(padded)}.",
      f"PaddingMode {self.padding_mode.name}: with k = j - StartPadding[i] the input"
      f" coordinate of output coordinate j, {reads}.",
      f"OutputTensor.DataType = InputTensor.DataType = {self.input_tensor.data_type}.",
    ]


def _padding_value_key(desc: Any) -> tuple[Any, ...]:
  """The fields as equality and hashing see them: the padding value by its exact bits."""
  return tuple(
    _value_key(getattr(desc, f.name)) if f.name == "padding_value" else getattr(desc, f.name)
    for f in dataclasses.fields(desc)
  )


# -- PADDING ----------------------------------------------------------------------------------


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class PaddingDesc(_PaddingRules, OperatorDesc):
  """`DML_PADDING_OPERATOR_DESC`.

  Attributes:
    input_tensor: InputTensor.
    padding_mode: PaddingMode: CONSTANT, EDGE, REFLECTION, SYMMETRIC (FL 3_0) or WRAP (FL 6_4).
    start_padding: StartPadding, the elements added before each dimension.
    end_padding: EndPadding, the elements added after each dimension.
    output_tensor: OutputTensor; None infers it (the padded sizes, the input's data type).
    padding_value: PaddingValue (a FLOAT), CONSTANT mode's element; see
      `float_padding_constant` for integer outputs.
    dimension_count: DimensionCount; None means len(start_padding).

  Equality and hashing tell padding values apart by their bits (0.0 from -0.0).

  Examples:
    >>> desc = PaddingDesc(TensorDesc("FLOAT32", (1, 1, 2, 3)), padding_mode="REFLECTION",
    ...                    start_padding=(0, 0, 1, 2), end_padding=(0, 0, 1, 0))
    >>> desc
    PaddingDesc(input_tensor=TensorDesc("FLOAT32", (1, 1, 2, 3)), padding_mode=PaddingMode.REFLECTION, start_padding=(0, 0, 1, 2), end_padding=(0, 0, 1, 0))
    >>> print(desc)
    DML_OPERATOR_PADDING(InputTensor=FLOAT32[1,1,2,3], PaddingMode=REFLECTION, StartPadding={0,0,1,2}, EndPadding={0,0,1,0}, PaddingValue=0.0, DimensionCount=4) -> FLOAT32[1,1,4,5]
  """

  OPERATOR = "PADDING"
  SUPPORT = _PADDING_SUPPORT
  FUNCTION = "padding"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  padding_mode: PaddingMode = dml_field("PaddingMode", FieldKind.ENUM, enum_type=PaddingMode)
  start_padding: tuple[int, ...] = dml_field("StartPadding", FieldKind.UINT_ARRAY)
  end_padding: tuple[int, ...] = dml_field("EndPadding", FieldKind.UINT_ARRAY)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )
  padding_value: float = dml_field("PaddingValue", FieldKind.FLOAT, default=0.0)
  dimension_count: int = dml_field("DimensionCount", FieldKind.UINT, count_of="start_padding")

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      padding_mode: PaddingModeLike,
      start_padding: Iterable[SupportsIndex],
      end_padding: Iterable[SupportsIndex],
      output_tensor: TensorDesc | None = None,
      padding_value: float = 0.0,
      dimension_count: SupportsIndex | None = None,
    ) -> None: ...

  def __eq__(self, other: object) -> bool:
    return type(other) is type(self) and _padding_value_key(self) == _padding_value_key(other)

  def __hash__(self) -> int:
    return hash(_padding_value_key(self))

  def check_rules(self, check: Checker) -> None:
    self._check_padding_rules(check)

  def padding_constant(self) -> np.ndarray:
    """PaddingValue as an element of the output's data type (see `float_padding_constant`)."""
    return float_padding_constant(self.padding_value, self.input_tensor.data_type)

  def lower(self, input: jax.Array) -> jax.Array:
    return _pad(
      input, self.padding_mode, self.padding_constant(), self.start_padding, self.end_padding
    )

  def explain_output(self) -> list[str]:
    data_type = self.input_tensor.data_type
    value = f"PaddingValue ({self.padding_value!r})"
    if data_type.numpy_dtype is not None and not data_type.is_float:
      value += f" truncated to {data_type}: {self.padding_constant().item()}"
    return self._explain_padding(value)


# -- PADDING1 ---------------------------------------------------------------------------------


def _output_data_type(desc: Any) -> DataType:
  return (desc.output_tensor or desc.input_tensor).data_type


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class Padding1Desc(_PaddingRules, OperatorDesc):
  """`DML_PADDING1_OPERATOR_DESC`: PADDING with the padding value in the output's data type.

  Attributes:
    input_tensor: InputTensor.
    padding_mode: PaddingMode: CONSTANT, EDGE, REFLECTION, SYMMETRIC or WRAP (FL 6_4).
    start_padding: StartPadding, the elements added before each dimension.
    end_padding: EndPadding, the elements added after each dimension.
    output_tensor: OutputTensor; None infers it (the padded sizes, the input's data type).
    padding_value: PaddingValue (a DML_SCALAR_UNION): an int, exact, for integer types (64-bit
      values beyond 2**53 included); for float types a number, rounded to nearest even into
      the type. `from_dml` also takes FLOAT16 as raw half bits, ``{"UInt16": 15360}``.
    padding_value_data_type: PaddingValueDataType, which must be OutputTensor.DataType; None
      means that type (the input's when the output is inferred).
    dimension_count: DimensionCount; None means len(start_padding).

  Equality and hashing tell padding values apart by their bits (0.0 from -0.0).

  Examples:
    >>> desc = Padding1Desc(TensorDesc("INT64", (3,)), padding_mode="CONSTANT",
    ...                     start_padding=(1,), end_padding=(2,), padding_value=2**62 + 1)
    >>> desc
    Padding1Desc(input_tensor=TensorDesc("INT64", (3,)), padding_mode=PaddingMode.CONSTANT, start_padding=(1,), end_padding=(2,), padding_value=4611686018427387905)
    >>> print(desc)
    DML_OPERATOR_PADDING1(InputTensor=INT64[3], PaddingMode=CONSTANT, StartPadding={1}, EndPadding={2}, PaddingValue=4611686018427387905, PaddingValueDataType=INT64, DimensionCount=1) -> INT64[6]
  """

  OPERATOR = "PADDING1"
  SUPPORT = _PADDING1_SUPPORT
  FUNCTION = "padding1"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  padding_mode: PaddingMode = dml_field("PaddingMode", FieldKind.ENUM, enum_type=PaddingMode)
  start_padding: tuple[int, ...] = dml_field("StartPadding", FieldKind.UINT_ARRAY)
  end_padding: tuple[int, ...] = dml_field("EndPadding", FieldKind.UINT_ARRAY)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )
  padding_value: int | float = dml_field(
    "PaddingValue",
    FieldKind.SCALAR_UNION,
    default=0,
    data_type_field="PaddingValueDataType",
  )
  padding_value_data_type: DataType = dml_field(
    "PaddingValueDataType", FieldKind.ENUM, enum_type=DataType, derive=_output_data_type
  )
  dimension_count: int = dml_field("DimensionCount", FieldKind.UINT, count_of="start_padding")

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      padding_mode: PaddingModeLike,
      start_padding: Iterable[SupportsIndex],
      end_padding: Iterable[SupportsIndex],
      output_tensor: TensorDesc | None = None,
      padding_value: int | float = 0,
      padding_value_data_type: DataTypeLike | None = None,
      dimension_count: SupportsIndex | None = None,
    ) -> None: ...

  def __eq__(self, other: object) -> bool:
    return type(other) is type(self) and _padding_value_key(self) == _padding_value_key(other)

  def __hash__(self) -> int:
    return hash(_padding_value_key(self))

  def check_rules(self, check: Checker) -> None:
    self._check_padding_rules(check)
    check_scalar_union(
      check,
      ("PaddingValue", self.padding_value),
      ("PaddingValueDataType", self.padding_value_data_type),
      _output_data_type(self),
    )

  def padding_constant(self) -> np.ndarray:
    """PaddingValue as an element of the output's data type (see `scalar_padding_constant`)."""
    return scalar_padding_constant(self.padding_value, self.padding_value_data_type)

  def lower(self, input: jax.Array) -> jax.Array:
    return _pad(
      input, self.padding_mode, self.padding_constant(), self.start_padding, self.end_padding
    )

  def explain_output(self) -> list[str]:
    return self._explain_padding(
      f"PaddingValue ({self.padding_value!r}, a {self.padding_value_data_type})"
    ) + [f"PaddingValueDataType must be OutputTensor.DataType ({_output_data_type(self)})."]


# -- the functional API -----------------------------------------------------------------------


def padding(
  input: ArrayLike,
  *,
  padding_mode: PaddingModeLike,
  padding_value: float = 0.0,
  start_padding: Sequence[int],
  end_padding: Sequence[int],
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_PADDING: `input` with `start_padding[i]` elements added before and
  `end_padding[i]` after each dimension i.

  The output's shape is ``input.shape[i] + start_padding[i] + end_padding[i]``. With
  k = j - start_padding[i], output coordinate j reads input coordinate k where it is in range;
  in the padding, `padding_mode` decides: CONSTANT writes `padding_value`, EDGE reads
  clamp(k, 0, S - 1), REFLECTION mirrors without repeating the edge, SYMMETRIC (FL 3_0)
  mirrors repeating it, WRAP (FL 6_4) reads k mod S.

  `padding_value` is a FLOAT (float32): for integer data it is truncated toward zero (10.6 ->
  10), saturated to the type's range, NaN giving 0. Use `padding1` for exact values in the
  data's type (64-bit integers).

  Unlike ``jnp.pad``, the pads are one (start, end) pair per dimension given as two arrays,
  never negative or broadcast; REFLECTION and SYMMETRIC fold periodically when a pad exceeds the
  input (``jnp.pad``'s "reflect" and "symmetric" do the same, but its default
  ``reflect_type="even"`` is the only one DirectML has); REFLECTION of a dimension of size 1
  reads its one element; the constant is converted as DirectML converts a FLOAT, not cast.

  Ranks: `start_padding` and `end_padding` hold one value per dimension; more values than
  `input` has dimensions promote it with leading 1s, fewer are refused: they read two ways
  (NumPy's indexing applies a shorter list to the first dimensions, DirectML's padding of
  ranks to the last), and the error prints the call of each. Where the feature level needs
  more dimensions, the input gets leading 1s (pads of 0 there) and the output loses them
  again.

  See also: `padding1`, ``jnp.pad``, ``jax.lax.pad``.

  Args:
    input: InputTensor.
    padding_mode: PaddingMode: a `PaddingMode`, its value or its name ("REFLECTION" or
      "DML_PADDING_MODE_REFLECTION").
    padding_value: PaddingValue, CONSTANT mode's element (ignored by the other modes).
    start_padding: StartPadding, one pad >= 0 per dimension.
    end_padding: EndPadding, one pad >= 0 per dimension.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer pads, a non-number value or a dtype DirectML lacks.
    ValueError: for an unknown padding mode.

  Examples:
    >>> import numpy as np
    >>> padding(np.array([[1, 2, 3]], np.float32), padding_mode="REFLECTION",
    ...         start_padding=(0, 4), end_padding=(0, 1))
    Array([[1., 2., 3., 2., 1., 2., 3., 2.]], dtype=float32)
    >>> padding(np.array([[1, 2]], np.int8), padding_mode="CONSTANT", padding_value=-7.9,
    ...         start_padding=(0, 1), end_padding=(1, 0))
    Array([[-7,  1,  2],
           [-7, -7, -7]], dtype=int8)
  """
  (input,), types = arguments.tensor_operands(PaddingDesc, input)
  static = (
    as_level(feature_level),
    types,
    PaddingMode.from_any(padding_mode),
    _value_key(as_float(padding_value, "PaddingValue")),
    as_int_tuple(start_padding, "StartPadding"),
    as_int_tuple(end_padding, "EndPadding"),
  )
  return _padding(static, input)


def padding1(
  input: ArrayLike,
  *,
  padding_mode: PaddingModeLike,
  padding_value: int | float = 0,
  start_padding: Sequence[int],
  end_padding: Sequence[int],
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_PADDING1 (FL 5_0): `padding` with `padding_value` exact in the data's type.

  PaddingValueDataType is the input's data type. Integer data takes `padding_value` exactly:
  an int in the type's range (a Python int keeps int64 and uint64 values beyond 2**53); a
  non-integer or out-of-range value is a validation error, never rounded or wrapped. Float
  data takes it rounded to nearest even (float16 directly, not through float32). The modes,
  the shapes and the folding are those of `padding`.

  Unlike ``jnp.pad``, the pads are one (start, end) pair per dimension given as two arrays,
  never negative or broadcast; REFLECTION and SYMMETRIC fold periodically when a pad exceeds the
  input (``jnp.pad``'s "reflect" and "symmetric" do the same, but its default
  ``reflect_type="even"`` is the only one DirectML has); REFLECTION of a dimension of size 1
  reads its one element; the constant must be exact in the data's type (``jnp.pad`` casts it).

  Ranks: `start_padding` and `end_padding` hold one value per dimension; more values than
  `input` has dimensions promote it with leading 1s, fewer are refused: they read two ways
  (NumPy's indexing applies a shorter list to the first dimensions, DirectML's padding of
  ranks to the last), and the error prints the call of each. Where the feature level needs
  more dimensions, the input gets leading 1s (pads of 0 there) and the output loses them
  again.

  See also: `padding`, ``jnp.pad``, ``jax.lax.pad``.

  Args:
    input: InputTensor.
    padding_mode: PaddingMode: a `PaddingMode`, its value or its name ("WRAP" or
      "DML_PADDING_MODE_WRAP").
    padding_value: PaddingValue, CONSTANT mode's element (ignored by the other modes).
    start_padding: StartPadding, one pad >= 0 per dimension.
    end_padding: EndPadding, one pad >= 0 per dimension.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest; at least 5_0).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer pads, a non-number value or a dtype DirectML lacks.
    ValueError: for an unknown padding mode.

  Examples:
    >>> import numpy as np
    >>> padding1(np.array([1, 2, 3], np.uint8), padding_mode="WRAP",
    ...          start_padding=(4,), end_padding=(2,))
    Array([3, 1, 2, 3, 1, 2, 3, 1, 2], dtype=uint8)
    >>> padding1(np.array([1, 2], np.uint16), padding_mode="CONSTANT", padding_value=65535,
    ...          start_padding=(1,), end_padding=(0,))
    Array([65535,     1,     2], dtype=uint16)
  """
  (input,), types = arguments.tensor_operands(Padding1Desc, input)
  static = (
    as_level(feature_level),
    types,
    PaddingMode.from_any(padding_mode),
    _value_key(as_scalar(padding_value, "PaddingValue")),
    as_int_tuple(start_padding, "StartPadding"),
    as_int_tuple(end_padding, "EndPadding"),
  )
  return _padding1(static, input)


def _describer(desc_type: type[PaddingDesc] | type[Padding1Desc]) -> Any:
  """The functional API's `describe` for PADDING or PADDING1 (they take the same fields)."""

  def describe(
    types: tuple[DataType, ...],
    shapes: tuple[tuple[int, ...], ...],
    mode: PaddingMode,
    value: int | bytes,
    start: tuple[int, ...],
    end: tuple[int, ...],
  ) -> PaddingDesc | Padding1Desc:
    return desc_type(
      TensorDesc(types[0], shapes[0]),
      padding_mode=mode,
      start_padding=start,
      end_padding=end,
      padding_value=_value_of_key(value),
    )

  describe.__name__ = f"_describe_{desc_type.FUNCTION}"
  return describe


def _moves_bits(attributes: tuple) -> bool:
  """Every mode but CONSTANT only copies input elements (the bfloat16 extension applies);
  CONSTANT writes PaddingValue, whose conversion to a type DirectML lacks is not defined."""
  return attributes[0] is not PaddingMode.CONSTANT


def _shown(attributes: tuple) -> tuple:
  """The attributes as `padding`'s keywords take them (the error notes' calls)."""
  mode, value, *pads = attributes
  return (str(mode), _value_of_key(value), *pads)


_PER_DIMENSION = natural.PerDimension(
  names=("padding_mode", "padding_value", "start_padding", "end_padding"),
  neutral=((2, 0), (3, 0)),
  show=_shown,
)
_padding = dispatch.operator_function(
  _describer(PaddingDesc), PaddingDesc, _PER_DIMENSION, moves_bits=_moves_bits
)
_padding1 = dispatch.operator_function(
  _describer(Padding1Desc), Padding1Desc, _PER_DIMENSION, moves_bits=_moves_bits
)
