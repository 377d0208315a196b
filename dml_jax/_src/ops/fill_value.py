"""DML_OPERATOR_FILL_VALUE_CONSTANT and DML_OPERATOR_FILL_VALUE_SEQUENCE: the two fills.

Neither reads a tensor: each writes every element of OutputTensor, which it alone
describes (so it is required, never inferred), from values it holds in DML_SCALAR_UNIONs
of ValueDataType, which must equal OutputTensor.DataType.

- FILL_VALUE_CONSTANT: ``out[c] = Value`` for every coordinate c.
- FILL_VALUE_SEQUENCE: ``out[i] = ValueStart + i * ValueDelta`` at the i-th element in
  row-major order, as DirectML's page states it today (older copies of the page show a
  running sum, ``Value += Delta``, which can differ from it in the last bit of a float).

How the sequence is computed (DirectML's page gives the formula, not the arithmetic;
dml_jax fixes it, and the oracle in `reference` computes the same bits):

- Integers: modulo 2**bits of the data type (the sum and the product wrap, as DirectML's
  page example does with ValueDelta -2 in UINT8). ValueDelta may be given as either
  reading of its bits (-2 or 254 for UINT8); Value and ValueStart must be elements of
  the data type.
- FLOAT32 and FLOAT16: ValueStart and ValueDelta are first elements of the data type
  (rounded to nearest even, as the union holds them), then the arithmetic is float32:
  i converted to float32 (exact below 2**24), the product rounded to float32, then the
  sum rounded to float32 (never fused into one FMA); FLOAT16 rounds the result to nearest
  even once, at the end. DirectML never offers FLOAT64 here.

DirectML's tables: both from DML_FEATURE_LEVEL_2_1 with 4-D outputs, 1 to 8 dimensions
from 4_0; FILL_VALUE_CONSTANT takes FLOAT64, INT64 and UINT64 from 4_1, and
FILL_VALUE_SEQUENCE INT64 and UINT64 (never FLOAT64) from 5_0. With jax_enable_x64 off,
a 64-bit output is refused (TypeError), as any 64-bit data is.

Both have an in-place form (`IN_PLACE`): they read nothing, so their output may be bound
to any buffer.
"""

from __future__ import annotations

import dataclasses
import math
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex

import jax
import numpy as np
from jax import lax

from dml_jax._src import dispatch, dtypes, natural, registry
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
from dml_jax._src.fields import FieldKind, as_scalar, dml_field, dml_fields, narrowed
from dml_jax._src.integers import as_int_tuple
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

_64_BIT_INTEGERS = (DataType.INT64, DataType.UINT64)


def _table(dimension_counts: Any, data_types: tuple[DataType, ...]) -> dict[str, Any]:
  return {"OutputTensor": support(dimension_counts, data_types)}


_CONSTANT_SUPPORT = SupportTable(
  "FILL_VALUE_CONSTANT",
  {
    FeatureLevel.FL_2_1: _table(4, UP_TO_32_BIT),
    FeatureLevel.FL_4_0: _table((1, 8), UP_TO_32_BIT),
    FeatureLevel.FL_4_1: _table((1, 8), ALL_DATA),
  },
)
_SEQUENCE_SUPPORT = SupportTable(
  "FILL_VALUE_SEQUENCE",
  {
    FeatureLevel.FL_2_1: _table(4, UP_TO_32_BIT),
    FeatureLevel.FL_4_0: _table((1, 8), UP_TO_32_BIT),
    FeatureLevel.FL_5_0: _table((1, 8), UP_TO_32_BIT + _64_BIT_INTEGERS),
  },
)


# -- the scalar unions ---------------------------------------------------------------------


def value_key(value: int | float) -> int | bytes:
  """A scalar union's value as a hashable key that tells -0.0 from 0.0 and NaNs apart."""
  return struct.pack("<d", value) if isinstance(value, float) else value


def value_of_key(key: int | bytes) -> int | float:
  return struct.unpack("<d", key)[0] if isinstance(key, bytes) else key


def is_element(value: int | float, data_type: DataType) -> bool:
  """Whether `value` is exactly an element of an integer `data_type`, or, for a float type,
  a number that rounds to one (any float; an int with a nearest float)."""
  if data_type.is_float:
    try:
      float(value)
    except OverflowError:
      return False
    return True
  if isinstance(value, float) and not value.is_integer():
    return False
  info = np.iinfo(data_type.numpy_dtype)
  return int(info.min) <= value <= int(info.max)


def is_step(value: int | float, data_type: DataType) -> bool:
  """Whether `value` is a ValueDelta of `data_type`: an element, or for an integer type
  either reading of its bits (signed or unsigned: -2 and 254 are one UINT8 step)."""
  if data_type.is_float or (isinstance(value, float) and not value.is_integer()):
    return is_element(value, data_type)
  bits = data_type.size_in_bits
  return -(2 ** (bits - 1)) <= value < 2**bits


def element(value: int | float, data_type: DataType) -> np.ndarray:
  """A scalar union's value as a 0-d array of `data_type`: integers exact (modulo 2**bits
  for a step given in its other reading), floats rounded to nearest even (FLOAT32 keeps a
  NaN's payload), +-inf beyond the range."""
  dtype = np.dtype(data_type.numpy_dtype)
  if not data_type.is_float:
    bits = dtype.itemsize * 8
    wrapped = int(value) % 2**bits
    return np.array(wrapped, np.dtype(f"u{dtype.itemsize}")).view(dtype)
  if data_type == DataType.FLOAT32:
    return np.array(narrowed(float(value)), dtype)
  with np.errstate(over="ignore"):
    return np.array(float(value), dtype)


def _value_rule(check: Checker, field: str, value: int | float, data_type: DataType) -> None:
  if data_type.numpy_dtype is None:
    return  # the data type itself is refused (OutputTensor.DataType)
  step = field == "ValueDelta"
  if (is_step if step else is_element)(value, data_type):
    return
  if data_type.is_float:
    rule = f"must be a number a {data_type} can round to"
  else:
    info = np.iinfo(data_type.numpy_dtype)
    low = -(2 ** (data_type.size_in_bits - 1)) if step else int(info.min)
    high = 2**data_type.size_in_bits - 1 if step else int(info.max)
    rule = f"must be an integer in [{low}, {high}], exactly a {data_type}"
  check.fail(
    field,
    rule,
    value,
    hint="DML_SCALAR_UNION holds the value in ValueDataType: no rounding or wrapping of integers",
  )


def _output_dtype(tensor: TensorDesc) -> np.dtype:
  """The output's dtype (TypeError for a 64-bit type with jax_enable_x64 off)."""
  if tensor.data_type.is_64_bit and not dtypes.x64_enabled():
    raise TypeError(
      f"OutputTensor is {tensor.data_type}, which JAX cannot hold with jax_enable_x64 off;"
      f" {dtypes.X64_TIP}"
    )
  return np.dtype(tensor.data_type.numpy_dtype)


class _Fill(OperatorDesc):
  """What the two fills share: no input, a required OutputTensor of ValueDataType."""

  IN_PLACE = True
  """They read no tensor: the output may be bound to any buffer (see `dml.execute`)."""
  OUT_OF_RANGE_INDICES = "The fills read no indices."
  OUTPUT_DATA_TYPE_FROM = "ValueDataType"

  output_tensor: TensorDesc
  value_data_type: DataType

  def _key(self) -> tuple[Any, ...]:
    """The fields' values, each scalar union as its `value_key` (-0.0 is not 0.0), a step
    of an unsigned type in its unsigned reading (-2 and 254 are one UINT8 ValueDelta)."""
    key = []
    for field in dml_fields(self):
      value = getattr(self, field.name)
      if field.kind is FieldKind.SCALAR_UNION:
        if field.dml_name == "ValueDelta" and is_step(value, self.value_data_type):
          value = element(value, self.value_data_type).item()
        value = value_key(value)
      key.append(value)
    return tuple(key)

  def __eq__(self, other: object) -> bool:
    return type(other) is type(self) and self._key() == other._key()

  def __hash__(self) -> int:
    return hash(self._key())

  def infer_output(self) -> TensorDesc | None:
    # Only the data type follows from the fields; the sizes are the given OutputTensor's.
    return TensorDesc(self.value_data_type, self.output_tensor.sizes)

  def check_rules(self, check: Checker) -> None:
    # ValueDataType == OutputTensor.DataType is checked with the given output (validation.py).
    for field in dml_fields(self):
      if field.kind is FieldKind.SCALAR_UNION:
        _value_rule(check, field.dml_name, getattr(self, field.name), self.value_data_type)

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return f"may be any sizes the tables allow: {braced(expected)} is given"


@registry.register
@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class FillValueConstantDesc(_Fill):
  """`DML_FILL_VALUE_CONSTANT_OPERATOR_DESC`: every element of OutputTensor is Value.

  Attributes:
    output_tensor: OutputTensor, required: the only tensor, of any sizes the tables allow.
    value_data_type: ValueDataType, which must equal OutputTensor.DataType.
    value: Value (a DML_SCALAR_UNION of ValueDataType): an int, exact, for integer types;
      a number rounded to nearest even for float types (FLOAT32 keeps a NaN's payload).

  Examples:
    >>> desc = FillValueConstantDesc(TensorDesc("FLOAT32", (1, 1, 2, 4)), "FLOAT32", 13.0)
    >>> desc
    FillValueConstantDesc(output_tensor=TensorDesc("FLOAT32", (1, 1, 2, 4)), value_data_type=DataType.FLOAT32, value=13.0)
    >>> print(desc)
    DML_OPERATOR_FILL_VALUE_CONSTANT(ValueDataType=FLOAT32, Value=13.0) -> FLOAT32[1,1,2,4]
  """

  OPERATOR = "FILL_VALUE_CONSTANT"
  SUPPORT = _CONSTANT_SUPPORT
  FUNCTION = "fill_value_constant"

  output_tensor: TensorDesc = dml_field("OutputTensor", FieldKind.TENSOR, output=True)
  value_data_type: DataType = dml_field("ValueDataType", FieldKind.ENUM, enum_type=DataType)
  value: int | float = dml_field("Value", FieldKind.SCALAR_UNION, data_type_field="ValueDataType")

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      output_tensor: TensorDesc,
      value_data_type: DataTypeLike,
      value: int | float,
    ) -> None: ...

  def lower(self) -> jax.Array:
    dtype = _output_dtype(self.output_tensor)
    return lax.full(self.output_tensor.sizes, element(self.value, self.value_data_type), dtype)

  def explain_output(self) -> list[str]:
    return [
      f"out[c] = Value = {self.value!r} (a {self.value_data_type}) at every coordinate c of"
      f" OutputTensor.Sizes {braced(self.output_tensor.sizes)}.",
      "OutputTensor is the only tensor: it is required, and its data type must be ValueDataType.",
    ]


@registry.register
@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class FillValueSequenceDesc(_Fill):
  """`DML_FILL_VALUE_SEQUENCE_OPERATOR_DESC`: element i (row-major) is ValueStart + i * ValueDelta.

  Attributes:
    output_tensor: OutputTensor, required: the only tensor, of any sizes the tables allow.
    value_data_type: ValueDataType, which must equal OutputTensor.DataType.
    value_start: ValueStart (a DML_SCALAR_UNION of ValueDataType), element 0.
    value_delta: ValueDelta, the step; for an integer type either reading of its bits
      (-2 or 254 for UINT8). See the module's docstring for the arithmetic.

  Examples:
    >>> desc = FillValueSequenceDesc(TensorDesc("UINT8", (1, 1, 2, 2)), "UINT8", 10, -2)
    >>> print(desc)
    DML_OPERATOR_FILL_VALUE_SEQUENCE(ValueDataType=UINT8, ValueStart=10, ValueDelta=-2) -> UINT8[1,1,2,2]
  """

  OPERATOR = "FILL_VALUE_SEQUENCE"
  SUPPORT = _SEQUENCE_SUPPORT
  FUNCTION = "fill_value_sequence"

  output_tensor: TensorDesc = dml_field("OutputTensor", FieldKind.TENSOR, output=True)
  value_data_type: DataType = dml_field("ValueDataType", FieldKind.ENUM, enum_type=DataType)
  value_start: int | float = dml_field(
    "ValueStart", FieldKind.SCALAR_UNION, data_type_field="ValueDataType"
  )
  value_delta: int | float = dml_field(
    "ValueDelta", FieldKind.SCALAR_UNION, data_type_field="ValueDataType"
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      output_tensor: TensorDesc,
      value_data_type: DataTypeLike,
      value_start: int | float,
      value_delta: int | float,
    ) -> None: ...

  def lower(self) -> jax.Array:
    sizes = self.output_tensor.sizes
    dtype = _output_dtype(self.output_tensor)
    count = math.prod(sizes)
    start = element(self.value_start, self.value_data_type)
    delta = element(self.value_delta, self.value_data_type)
    if dtype.kind == "f":
      work = np.dtype(np.float32)
      # As bits behind a barrier: XLA would take the constants 0.0 and -0.0 for one (CSE)
      # and simplify x + 0.0 into x, both wrong for -0.0.
      bits = lax.optimization_barrier(
        (start.astype(work).view(np.uint32), delta.astype(work).view(np.uint32))
      )
      start32, delta32 = (lax.bitcast_convert_type(b, work) for b in bits)
      product = lax.iota(work, count) * delta32
      # XLA:CPU would fuse the product and the sum into one FMA (one rounding; XLA:GPU does
      # not): the sum takes sign(p) * |p|, an exact product whose fusion rounds the same.
      product = lax.sign(product) * lax.abs(product)
      values = lax.convert_element_type(product + start32, dtype)
    else:
      bits = dtype.itemsize * 8
      unsigned = np.dtype(f"uint{max(bits, 32)}")
      index = lax.iota(unsigned, count)
      wide = index * delta.view(f"u{dtype.itemsize}").astype(unsigned)
      wide = wide + start.view(f"u{dtype.itemsize}").astype(unsigned)  # modulo 2**bits
      narrow = lax.convert_element_type(wide, np.dtype(f"uint{bits}"))
      values = lax.bitcast_convert_type(narrow, dtype) if dtype.kind == "i" else narrow
    return values.reshape(sizes)

  def explain_output(self) -> list[str]:
    data_type = self.value_data_type
    if data_type.is_float:
      arithmetic = (
        "computed in float32 (i as float32, the product and the sum each rounded, never fused)"
        + (", then rounded to FLOAT16" if data_type == DataType.FLOAT16 else "")
      )
    else:
      arithmetic = f"modulo 2**{data_type.size_in_bits} (it wraps)"
    return [
      f"out[i] = ValueStart + i * ValueDelta = {self.value_start!r} + i * {self.value_delta!r},"
      f" i the row-major element index of OutputTensor.Sizes {braced(self.output_tensor.sizes)}"
      f" (0 to {math.prod(self.output_tensor.sizes) - 1}), {arithmetic}.",
      "OutputTensor is the only tensor: it is required, and its data type must be ValueDataType.",
    ]


# -- the functional API ----------------------------------------------------------------------


def fill_value_constant(
  *,
  sizes: Sequence[SupportsIndex],
  value_data_type: DataTypeLike,
  value: int | float,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_FILL_VALUE_CONSTANT: an array of `sizes` holding `value` everywhere.

  Every argument is a keyword: the operator reads no tensor, and OutputTensor's `sizes`,
  ValueDataType and Value are its fields. The output's dtype is `value_data_type`'s.

  Args:
    sizes: OutputTensor.Sizes (1 to 8 dimensions; 4 before FL 4_0).
    value_data_type: ValueDataType, a name ("FLOAT32"), a DataType or a NumPy dtype.
    value: Value: an int for integer types (exactly an element: no wrapping), any number
      for float types (rounded to nearest even).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator (a data type the level
      lacks, a value the data type cannot hold, ...).
    TypeError: for a 64-bit type with jax_enable_x64 off, or arguments of the wrong kind.

  Examples:
    >>> fill_value_constant(sizes=(2, 3), value_data_type="INT16", value=-7)
    Array([[-7, -7, -7],
           [-7, -7, -7]], dtype=int16)
  """
  static = (
    as_level(feature_level),
    (),
    as_int_tuple(sizes, "sizes"),
    DataType.from_any(value_data_type),
    value_key(as_scalar(value, "Value")),
  )
  return _fill_value_constant(static)


def fill_value_sequence(
  *,
  sizes: Sequence[SupportsIndex],
  value_data_type: DataTypeLike,
  value_start: int | float,
  value_delta: int | float,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_FILL_VALUE_SEQUENCE: element i (row-major) of an array of `sizes` is
  ``value_start + i * value_delta``.

  Every argument is a keyword, as for `fill_value_constant`. Integers wrap modulo
  2**bits; FLOAT32 and FLOAT16 compute in float32, the product and the sum each rounded
  (FLOAT16 rounded once more at the end): see `FillValueSequenceDesc`.

  Args:
    sizes: OutputTensor.Sizes (1 to 8 dimensions; 4 before FL 4_0).
    value_data_type: ValueDataType (no FLOAT64: DirectML has none here).
    value_start: ValueStart, element 0.
    value_delta: ValueDelta, the step (for an integer type, either reading of its bits:
      -2 and 254 are the same UINT8 step).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for a 64-bit type with jax_enable_x64 off, or arguments of the wrong kind.

  Examples:
    >>> fill_value_sequence(sizes=(2, 2), value_data_type="UINT8", value_start=10, value_delta=-2)
    Array([[10,  8],
           [ 6,  4]], dtype=uint8)
    >>> fill_value_sequence(sizes=(4,), value_data_type="FLOAT32", value_start=3, value_delta=0.5)
    Array([3. , 3.5, 4. , 4.5], dtype=float32)
  """
  static = (
    as_level(feature_level),
    (),
    as_int_tuple(sizes, "sizes"),
    DataType.from_any(value_data_type),
    value_key(as_scalar(value_start, "ValueStart")),
    value_key(as_scalar(value_delta, "ValueDelta")),
  )
  return _fill_value_sequence(static)


def _describe_fill_value_constant(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  sizes: tuple[int, ...],
  data_type: DataType,
  value: int | bytes,
) -> FillValueConstantDesc:
  del types, shapes  # no input tensor
  return FillValueConstantDesc(TensorDesc(data_type, sizes), data_type, value_of_key(value))


def _describe_fill_value_sequence(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  sizes: tuple[int, ...],
  data_type: DataType,
  start: int | bytes,
  delta: int | bytes,
) -> FillValueSequenceDesc:
  del types, shapes  # no input tensor
  return FillValueSequenceDesc(
    TensorDesc(data_type, sizes), data_type, value_of_key(start), value_of_key(delta)
  )


# Sizes of fewer dimensions than the level takes read with leading 1s (which move no flat
# position, so no value of the sequence), the output cut back.
_fill_value_constant = dispatch.operator_function(
  _describe_fill_value_constant, FillValueConstantDesc, natural.Ranks(names=("sizes",), sized=(0,))
)
_fill_value_sequence = dispatch.operator_function(
  _describe_fill_value_sequence, FillValueSequenceDesc, natural.Ranks(names=("sizes",), sized=(0,))
)
