"""FILL_VALUE_CONSTANT and FILL_VALUE_SEQUENCE, the two fills DirectML's model files use.

They are descriptors of the model runner only (not registered operators of the library:
no functional API, fixtures or conformance rows yet), built on the same protocol, so
validation, `dml.execute` and `dml.compile_operator` run them like any operator. Both
exist from DML_FEATURE_LEVEL_2_1 (4-D outputs; 1 to 8 dimensions from 4_0; 64-bit
integers from 5_0; never FLOAT64), and ValueDataType must equal OutputTensor.DataType.

FILL_VALUE_SEQUENCE writes ``ValueStart + i * ValueDelta`` at the i-th element in
row-major order, as DirectML's current documentation states it (older copies of the
page show a running sum, which can differ in the last bit of a float): floats in
float32 (FLOAT16 rounded to nearest at the end) with the product and the sum each
rounded, never fused; integers modulo 2**bits.

Examples:
  >>> import numpy as np
  >>> import dml_jax as dml
  >>> desc = FillValueSequenceDesc(dml.TensorDesc("UINT8", (1, 1, 2, 2)), "UINT8", 10, 254)
  >>> (out,) = dml.execute(desc, [], [dml.Binding(np.zeros(4, np.uint8))])
  >>> out
  Array([10,  8,  6,  4], dtype=uint8)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import numpy as np
from jax import lax

from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import UP_TO_32_BIT, DataType
from dml_jax._src.errors import Checker
from dml_jax._src.feature_level import FeatureLevel, SupportTable, support
from dml_jax._src.fields import FieldKind, dml_field
from dml_jax._src.tensor_desc import TensorDesc

_64 = (DataType.INT64, DataType.UINT64)


def _table(dimension_counts: Any, data_types: Any) -> dict[str, Any]:
  return {"OutputTensor": support(dimension_counts, data_types)}


def _support(name: str) -> SupportTable:
  return SupportTable(
    name,
    {
      FeatureLevel.FL_2_1: _table(4, UP_TO_32_BIT),
      FeatureLevel.FL_4_0: _table((1, 8), UP_TO_32_BIT),
      FeatureLevel.FL_5_0: _table((1, 8), UP_TO_32_BIT + _64),
    },
  )


def value_key(value: int | float) -> int | bytes:
  """A scalar union's value as a key telling -0.0 from 0.0 and equal for the same NaN."""
  return value if isinstance(value, int) else np.float64(value).tobytes()


class _Fill(OperatorDesc):
  output_tensor: TensorDesc
  value_data_type: DataType

  def _key(self) -> tuple[Any, ...]:
    return tuple(
      value_key(v) if isinstance(v, int | float) and not isinstance(v, DataType) else v
      for v in dataclasses.astuple(self)  # type: ignore[call-overload]
    )

  def __eq__(self, other: object) -> bool:
    return type(other) is type(self) and self._key() == other._key()

  def __hash__(self) -> int:
    return hash(self._key())

  def infer_output(self) -> TensorDesc | None:
    return None

  def check_rules(self, check: Checker) -> None:
    check.expect(
      self.value_data_type == self.output_tensor.data_type,
      "ValueDataType",
      f"must equal OutputTensor.DataType ({self.output_tensor.data_type})",
      self.value_data_type,
    )

  def _dtype(self) -> np.dtype:
    return np.dtype(self.output_tensor.data_type.numpy_dtype)


@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class FillValueConstantDesc(_Fill):
  """`DML_FILL_VALUE_CONSTANT_OPERATOR_DESC`: every element of OutputTensor is Value."""

  OPERATOR = "FILL_VALUE_CONSTANT"
  SUPPORT = _support("FILL_VALUE_CONSTANT")
  FUNCTION = "fill_value_constant"
  IN_PLACE = True

  output_tensor: TensorDesc = dml_field("OutputTensor", FieldKind.TENSOR, output=True)
  value_data_type: DataType = dml_field("ValueDataType", FieldKind.ENUM, enum_type=DataType)
  value: int | float = dml_field("Value", FieldKind.SCALAR_UNION, data_type_field="ValueDataType")

  def lower(self) -> jax.Array:
    return lax.full(self.output_tensor.sizes, np.asarray(self.value, self._dtype()))

  def explain_output(self) -> list[str]:
    return [f"out[c] = {self.value!r} for every c."]


@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class FillValueSequenceDesc(_Fill):
  """`DML_FILL_VALUE_SEQUENCE_OPERATOR_DESC`: element i is ValueStart + i * ValueDelta."""

  OPERATOR = "FILL_VALUE_SEQUENCE"
  SUPPORT = _support("FILL_VALUE_SEQUENCE")
  FUNCTION = "fill_value_sequence"
  IN_PLACE = True

  output_tensor: TensorDesc = dml_field("OutputTensor", FieldKind.TENSOR, output=True)
  value_data_type: DataType = dml_field("ValueDataType", FieldKind.ENUM, enum_type=DataType)
  value_start: int | float = dml_field(
    "ValueStart", FieldKind.SCALAR_UNION, data_type_field="ValueDataType"
  )
  value_delta: int | float = dml_field(
    "ValueDelta", FieldKind.SCALAR_UNION, data_type_field="ValueDataType"
  )

  def lower(self) -> jax.Array:
    sizes = self.output_tensor.sizes
    dtype = self._dtype()
    count = math.prod(sizes)
    if dtype.kind == "f":
      work = np.dtype(np.float32)
      index = lax.iota(work, count)
      product = index * np.asarray(self.value_delta, work)
      # a select between the product and the sum keeps XLA from fusing them into one FMA
      product = lax.select(product == product, product, jax.numpy.full_like(product, np.nan))
      values = (product + np.asarray(self.value_start, work)).astype(dtype)
    else:
      bits = dtype.itemsize * 8
      unsigned = np.dtype(f"uint{max(bits, 32)}")
      index = lax.iota(unsigned, count)
      start = np.asarray(int(self.value_start) % 2**bits, unsigned)
      delta = np.asarray(int(self.value_delta) % 2**bits, unsigned)
      wide = index * delta + start  # modulo 2**max(bits, 32), so modulo 2**bits
      narrow = lax.convert_element_type(wide, np.dtype(f"uint{bits}"))
      values = lax.bitcast_convert_type(narrow, dtype) if dtype.kind == "i" else narrow
    return values.reshape(sizes)

  def explain_output(self) -> list[str]:
    return [
      f"out[i] = {self.value_start!r} + i * {self.value_delta!r}, i the row-major element index."
    ]
