"""DML_OPERATOR_DIAGONAL_MATRIX and DIAGONAL_MATRIX1: identity-like matrices, batched.

Both treat the last two dimensions of OutputTensor as rows (y) and columns (x) and
every leading dimension as a batch.

- DIAGONAL_MATRIX (FL 2_0): out = Value where x - y == Offset, else 0. Value is a
  FLOAT (float32): float outputs take it rounded to nearest even; integer outputs take
  it truncated toward zero (10.6 -> 10, as the page says), saturated to the type's
  range, NaN giving 0.
- DIAGONAL_MATRIX1 (FL 5_1): with topX = x - y, Value is written where
  ``(End >= Begin) ^ (topX >= Begin) ^ (topX < End)``: inside [Begin, End) when
  Begin <= End, outside [End, Begin) when Begin > End. Elsewhere the optional
  InputTensor's element, or 0 without one. Value is a DML_SCALAR_UNION in
  ValueDataType, which must be the output's data type: exact for integers.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, natural, registry
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import (
  ALL_DATA,
  UP_TO_32_BIT,
  X64_TIP,
  DataType,
  DataTypeLike,
  x64_enabled,
)
from dml_jax._src.errors import Checker
from dml_jax._src.feature_level import (
  FeatureLevel,
  FeatureLevelLike,
  SupportTable,
  as_level,
  support,
)
from dml_jax._src.fields import FieldKind, as_float, as_scalar, dml_field
from dml_jax._src.integers import as_int, as_int_tuple
from dml_jax._src.ops.padding import (
  check_scalar_union,
  float_padding_constant,
  scalar_padding_constant,
)
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1

_DIAGONAL_MATRIX_SUPPORT = SupportTable(
  "DIAGONAL_MATRIX",
  {
    FeatureLevel.FL_2_0: {"OutputTensor": support(4, (DataType.FLOAT32, DataType.FLOAT16))},
    FeatureLevel.FL_2_1: {"OutputTensor": support(4, UP_TO_32_BIT)},
    FeatureLevel.FL_4_0: {"OutputTensor": support((2, 4), UP_TO_32_BIT)},
    FeatureLevel.FL_5_1: {"OutputTensor": support((2, 4), ALL_DATA)},
  },
)
_DIAGONAL_MATRIX1_SUPPORT = SupportTable(
  "DIAGONAL_MATRIX1",
  {
    FeatureLevel.FL_5_1: {
      "InputTensor": support((2, 4), ALL_DATA),
      "OutputTensor": support((2, 4), ALL_DATA),
    }
  },
)


def _value_key(value: int | float) -> int | bytes:
  """A hashable key that tells every value apart (0.0 from -0.0, NaN payloads)."""
  return struct.pack("<d", value) if isinstance(value, float) else value


def _value_of_key(key: int | bytes) -> int | float:
  return struct.unpack("<d", key)[0] if isinstance(key, bytes) else key


def _fields_key(desc: Any, value_field: str) -> tuple[Any, ...]:
  return tuple(
    _value_key(getattr(desc, f.name)) if f.name == value_field else getattr(desc, f.name)
    for f in dataclasses.fields(desc)
  )


def _check_int(check: Checker, field: str, value: int) -> None:
  check.expect(
    _INT_MIN <= value <= _INT_MAX,
    field,
    f"is an INT: it must be in [{_INT_MIN}, {_INT_MAX}]",
    value,
  )


def _coordinates(shape: tuple[int, ...]) -> tuple[jax.Array, np.dtype[Any]]:
  """(x - y, the iota dtype) over `shape`: each element's column minus its row."""
  n = len(shape)
  wide = max(shape[-2:]) >= 2**31
  dtype = np.int64 if wide and x64_enabled() else np.int32
  rows = lax.broadcasted_iota(dtype, shape, n - 2)
  columns = lax.broadcasted_iota(dtype, shape, n - 1)
  return columns - rows, np.dtype(dtype)


def _check_64_bit(data_type: DataType) -> None:
  if data_type.is_64_bit and not x64_enabled():
    raise TypeError(
      f"OutputTensor.DataType {data_type} is 64-bit, which JAX cannot hold with"
      f" jax_enable_x64 off; {X64_TIP}"
    )


# -- DIAGONAL_MATRIX --------------------------------------------------------------------------


@registry.register
@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class DiagonalMatrixDesc(OperatorDesc):
  """`DML_DIAGONAL_MATRIX_OPERATOR_DESC`.

  Attributes:
    output_tensor: OutputTensor, required: its sizes and data type are the operator's
      whole shape (it has no input); the last two dimensions are rows and columns.
    offset: Offset (an INT): Value sits where column - row == Offset.
    value: Value (a FLOAT): truncated toward zero for integer outputs.

  Examples:
    >>> desc = DiagonalMatrixDesc(TensorDesc("FLOAT32", (1, 1, 3, 3)), offset=1)
    >>> desc
    DiagonalMatrixDesc(output_tensor=TensorDesc("FLOAT32", (1, 1, 3, 3)), offset=1)
    >>> print(desc)
    DML_OPERATOR_DIAGONAL_MATRIX(Offset=1, Value=1.0) -> FLOAT32[1,1,3,3]
  """

  OPERATOR = "DIAGONAL_MATRIX"
  SUPPORT = _DIAGONAL_MATRIX_SUPPORT
  FUNCTION = "diagonal_matrix"

  output_tensor: TensorDesc = dml_field("OutputTensor", FieldKind.TENSOR, output=True)
  offset: int = dml_field("Offset", FieldKind.INT, default=0)
  value: float = dml_field("Value", FieldKind.FLOAT, default=1.0)

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(self, output_tensor: TensorDesc, offset: int = 0, value: float = 1.0) -> None: ...

  def __eq__(self, other: object) -> bool:
    return type(other) is type(self) and _fields_key(self, "value") == _fields_key(other, "value")

  def __hash__(self) -> int:
    return hash(_fields_key(self, "value"))

  def infer_output(self) -> TensorDesc | None:
    # Nothing but the given output defines the output.
    return TensorDesc(self.output_tensor.data_type, self.output_tensor.sizes)

  def check_rules(self, check: Checker) -> None:
    _check_int(check, "Offset", self.offset)

  def fill_value(self) -> np.ndarray:
    """Value as an element of the output's data type (a 0-d NumPy array)."""
    return float_padding_constant(self.value, self.output_tensor.data_type)

  def lower(self) -> jax.Array:
    output = self.output_tensor
    _check_64_bit(output.data_type)
    top_x, dtype = _coordinates(output.sizes)
    dtype_out = output.data_type.numpy_dtype
    value = lax.full(output.sizes, self.fill_value(), dtype_out)
    zero = lax.full(output.sizes, 0, dtype_out)
    return lax.select(top_x == np.asarray(self.offset, dtype), value, zero)

  def explain_output(self) -> list[str]:
    output = self.output_tensor
    return [
      f"OutputTensor {output.data_type}{braced(output.sizes)}: the last two dimensions are rows y"
      " and columns x, the others a batch of matrices; no input.",
      f"out[.., y, x] = Value where x - y == Offset ({self.offset}), else 0.",
      f"Value {self.value!r} as {output.data_type}: {self.fill_value().item()!r} (a FLOAT:"
      " integer outputs truncate it toward zero and saturate it; NaN gives 0).",
    ]


def diagonal_matrix(
  *,
  sizes: Sequence[int],
  data_type: DataTypeLike = "FLOAT32",
  offset: int = 0,
  value: float = 1.0,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_DIAGONAL_MATRIX: `value` where column - row == `offset`, 0 elsewhere.

  `sizes` (2 to 4 dimensions; exactly 4 before FL 4_0) and `data_type` are the output's;
  the last two dimensions are rows and columns, the rest a batch. `value` is a float32:
  integer outputs take it truncated toward zero (10.6 -> 10), saturated, NaN giving 0.

  Unlike ``jnp.eye``: the offset is ``k`` but counts from the leading dimensions' batch
  of matrices, and the value need not be 1.

  Args:
    sizes: OutputTensor.Sizes.
    data_type: OutputTensor.DataType (a `DataType`, its name or a dtype).
    offset: Offset, an INT: positive shifts the diagonal right, negative left.
    value: Value, a FLOAT.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for a data type DirectML lacks, or a 64-bit one with x64 off.

  Examples:
    >>> diagonal_matrix(sizes=(3, 4), offset=1, value=2.5)
    Array([[0. , 2.5, 0. , 0. ],
           [0. , 0. , 2.5, 0. ],
           [0. , 0. , 0. , 2.5]], dtype=float32)
    >>> diagonal_matrix(sizes=(2, 2), data_type="INT8", value=-10.6)
    Array([[-10,   0],
           [  0, -10]], dtype=int8)
  """
  target = DataType.from_any(data_type)
  _check_64_bit(target)
  static = (
    as_level(feature_level),
    (),
    as_int_tuple(sizes, "OutputTensor.Sizes"),
    target,
    as_int(offset, "Offset"),
    _value_key(as_float(value, "Value")),
  )
  return _diagonal_matrix(static)


def _describe_diagonal_matrix(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  sizes: tuple[int, ...],
  data_type: DataType,
  offset: int,
  value: bytes,
) -> DiagonalMatrixDesc:
  del types, shapes
  return DiagonalMatrixDesc(TensorDesc(data_type, sizes), offset=offset, value=_value_of_key(value))


# Sizes of fewer dimensions than the level takes (4 before FL 4_0) read with leading 1s: the
# matrix is the last two dimensions, the output cut back.
_diagonal_matrix = dispatch.operator_function(
  _describe_diagonal_matrix, DiagonalMatrixDesc, natural.Ranks(names=("sizes",), sized=(0,))
)


# -- DIAGONAL_MATRIX1 -------------------------------------------------------------------------


def _output_data_type(desc: Any) -> DataType:
  return desc.output_tensor.data_type


@registry.register
@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class DiagonalMatrix1Desc(OperatorDesc):
  """`DML_DIAGONAL_MATRIX1_OPERATOR_DESC`.

  Attributes:
    input_tensor: InputTensor, optional (None): the elements kept outside the filled
      diagonals; without it they are 0.
    output_tensor: OutputTensor, required (it alone holds the shape when there is no
      input); with an input, the input's sizes and data type.
    value_data_type: ValueDataType, which must be OutputTensor.DataType; None: that type.
    value: Value (a DML_SCALAR_UNION): exact in ValueDataType for integers.
    diagonal_fill_begin: DiagonalFillBegin (an INT), inclusive.
    diagonal_fill_end: DiagonalFillEnd (an INT), exclusive; below Begin the fill is reversed.

  Examples:
    >>> desc = DiagonalMatrix1Desc(None, TensorDesc("INT64", (4, 5)), value=2**40,
    ...                            diagonal_fill_begin=0, diagonal_fill_end=3)
    >>> print(desc)
    DML_OPERATOR_DIAGONAL_MATRIX1(ValueDataType=INT64, Value=1099511627776, DiagonalFillBegin=0, DiagonalFillEnd=3) -> INT64[4,5]
  """

  OPERATOR = "DIAGONAL_MATRIX1"
  SUPPORT = _DIAGONAL_MATRIX1_SUPPORT
  FUNCTION = "diagonal_matrix1"

  input_tensor: TensorDesc | None = dml_field("InputTensor", FieldKind.TENSOR, optional=True)
  output_tensor: TensorDesc = dml_field("OutputTensor", FieldKind.TENSOR, output=True)
  value_data_type: DataType = dml_field(
    "ValueDataType", FieldKind.ENUM, enum_type=DataType, derive=_output_data_type
  )
  value: int | float = dml_field(
    "Value", FieldKind.SCALAR_UNION, default=0, data_type_field="ValueDataType"
  )
  diagonal_fill_begin: int = dml_field("DiagonalFillBegin", FieldKind.INT, default=0)
  diagonal_fill_end: int = dml_field("DiagonalFillEnd", FieldKind.INT, default=1)

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc | None,
      output_tensor: TensorDesc,
      value_data_type: DataTypeLike | None = None,
      value: int | float = 0,
      diagonal_fill_begin: int = 0,
      diagonal_fill_end: int = 1,
    ) -> None: ...

  def __eq__(self, other: object) -> bool:
    return type(other) is type(self) and _fields_key(self, "value") == _fields_key(other, "value")

  def __hash__(self) -> int:
    return hash(_fields_key(self, "value"))

  def infer_output(self) -> TensorDesc | None:
    source = self.input_tensor if self.input_tensor is not None else self.output_tensor
    return TensorDesc(source.data_type, source.sizes)

  def check_rules(self, check: Checker) -> None:
    _check_int(check, "DiagonalFillBegin", self.diagonal_fill_begin)
    _check_int(check, "DiagonalFillEnd", self.diagonal_fill_end)
    check_scalar_union(
      check,
      ("Value", self.value),
      ("ValueDataType", self.value_data_type),
      self.output_tensor.data_type,
    )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    if self.input_tensor is None:
      return super().output_sizes_rule(expected)
    return f"must equal InputTensor.Sizes {braced(expected)}"

  def fill_value(self) -> np.ndarray:
    """Value as an element of ValueDataType (a 0-d NumPy array)."""
    return scalar_padding_constant(self.value, self.value_data_type)

  def filled(self, shape: tuple[int, ...]) -> tuple[jax.Array, Any]:
    """Where Value goes: the page's XOR rule over x - y."""
    top_x, dtype = _coordinates(shape)
    begin = np.asarray(self.diagonal_fill_begin, dtype)
    end = np.asarray(self.diagonal_fill_end, dtype)
    xor = (top_x >= begin) != (top_x < end)  # false exactly inside [begin, end)
    return xor if self.diagonal_fill_end < self.diagonal_fill_begin else ~xor, dtype

  def lower(self, *arrays: jax.Array) -> jax.Array:
    output = self.output_tensor
    _check_64_bit(output.data_type)
    dtype_out = output.data_type.numpy_dtype
    use_value, _ = self.filled(output.sizes)
    value = lax.full(output.sizes, self.fill_value(), dtype_out)
    other = arrays[0] if arrays else lax.full(output.sizes, 0, dtype_out)
    return lax.select(use_value, value, other)

  def explain_output(self) -> list[str]:
    output, begin, end = self.output_tensor, self.diagonal_fill_begin, self.diagonal_fill_end
    where = f"inside [{begin}, {end})" if begin <= end else f"outside [{end}, {begin}) (reversed)"
    other = "InputTensor's element" if self.input_tensor is not None else "0 (no InputTensor)"
    return [
      f"OutputTensor {output.data_type}{braced(output.sizes)}: the last two dimensions are rows y"
      " and columns x, the others a batch of matrices.",
      f"With topX = x - y, out = Value ({self.value!r}, in {self.value_data_type}) where"
      f" (DiagonalFillEnd >= DiagonalFillBegin) ^ (topX >= DiagonalFillBegin) ^ (topX <"
      f" DiagonalFillEnd): topX {where}; elsewhere {other}.",
    ]


def diagonal_matrix1(
  input: ArrayLike | None = None,
  *,
  value: int | float,
  diagonal_fill_begin: int,
  diagonal_fill_end: int,
  value_data_type: DataTypeLike | None = None,
  sizes: Sequence[int] | None = None,
  data_type: DataTypeLike | None = None,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_DIAGONAL_MATRIX1 (FL 5_1): `value` along a band of diagonals.

  With topX = column - row, `value` is written where ``(end >= begin) ^ (topX >=
  begin) ^ (topX < end)``: the band [begin, end) when begin <= end, everything but
  [end, begin) when begin > end. Elsewhere `input`'s element is kept, or 0 without an
  input (then `sizes` and `data_type`, or `value_data_type`, give the output).
  `value` is exact in the output's type (an int for integer types, 64-bit included).

  Unlike ``jnp.triu``/``jnp.tril``: one call covers both (begin = INT32_MIN keeps the
  upper part, end = INT32_MAX the lower), and the removed part is `value`, not 0.

  Args:
    input: InputTensor, optional: 2 to 4 dimensions, rows and columns last.
    value: Value, exact in ValueDataType.
    diagonal_fill_begin: DiagonalFillBegin (an INT), inclusive.
    diagonal_fill_end: DiagonalFillEnd (an INT), exclusive.
    value_data_type: ValueDataType; None: the output's data type.
    sizes: OutputTensor.Sizes; None: the input's.
    data_type: OutputTensor.DataType; None: the input's, else `value_data_type`.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest; at least 5_1).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for a data type DirectML lacks, a 64-bit one with x64 off, or no sizes or
      data type without an input.

  Examples:
    >>> import numpy as np
    >>> x = np.arange(1, 13, dtype=np.int32).reshape(3, 4)
    >>> diagonal_matrix1(x, value=0, diagonal_fill_begin=-2**31, diagonal_fill_end=0)
    Array([[ 1,  2,  3,  4],
           [ 0,  6,  7,  8],
           [ 0,  0, 11, 12]], dtype=int32)
    >>> diagonal_matrix1(sizes=(2, 3), data_type="UINT8", value=9, diagonal_fill_begin=0,
    ...                  diagonal_fill_end=2)
    Array([[9, 9, 0],
           [0, 9, 9]], dtype=uint8)
  """
  arrays: Sequence[Any] = ()
  types: tuple[DataType, ...] | None = ()
  if input is not None:
    arrays, types = arguments.tensor_operands(DiagonalMatrix1Desc, input)
  value_type = None if value_data_type is None else DataType.from_any(value_data_type)
  target = None if data_type is None else DataType.from_any(data_type)
  if input is None:
    target = target or value_type
    if sizes is None or target is None:
      raise TypeError(
        "diagonal_matrix1 without an input needs sizes and data_type (or value_data_type)"
      )
  if target is not None:
    _check_64_bit(target)
  static = (
    as_level(feature_level),
    types,
    None if sizes is None else as_int_tuple(sizes, "OutputTensor.Sizes"),
    target,
    value_type,
    _value_key(as_scalar(value, "Value")),
    as_int(diagonal_fill_begin, "DiagonalFillBegin"),
    as_int(diagonal_fill_end, "DiagonalFillEnd"),
  )
  return _diagonal_matrix1(static, *arrays)


def _describe_diagonal_matrix1(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  sizes: tuple[int, ...] | None,
  data_type: DataType | None,
  value_data_type: DataType | None,
  value: int | bytes,
  begin: int,
  end: int,
) -> DiagonalMatrix1Desc:
  input = TensorDesc(types[0], shapes[0]) if types else None
  output = TensorDesc(
    data_type if data_type is not None else types[0],
    sizes if sizes is not None else shapes[0],
  )
  return DiagonalMatrix1Desc(
    input,
    output,
    value_data_type=value_data_type,
    value=_value_of_key(value),
    diagonal_fill_begin=begin,
    diagonal_fill_end=end,
  )


# Not padded up to the level's least rank (2 at every level): an input or sizes of one
# dimension is no matrix, and a leading 1 would make it a row where it might be a column.
_diagonal_matrix1 = dispatch.operator_function(
  _describe_diagonal_matrix1, DiagonalMatrix1Desc, natural.Ranks(to_level=False)
)
