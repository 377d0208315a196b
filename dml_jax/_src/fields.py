"""What a descriptor field is: its DirectML name and kind, declared where the field is.

An operator descriptor is a frozen dataclass whose fields are declared with
`dml_field`, which records DirectML's field name and the kind of value the C
struct holds there (a tensor, an array of tensors, a UINT, an array of UINTs or
INTs, an enum, a FLOAT, a DML_SCALAR_UNION or a DML_SCALE_BIAS). Coercion of constructor
arguments, the round-tripping repr, `dml_attributes`, the HTML tables,
`dml.explain`, fixture parameters and `from_dml` (DirectML's own field names and
JSON values) all derive from these declarations instead of being written per
operator.

Examples:
  >>> from dml_jax import GatherElementsDesc
  >>> [(f.dml_name, f.kind.value) for f in dml_fields(GatherElementsDesc)]
  [('InputTensor', 'tensor'), ('IndicesTensor', 'tensor'), ('Axis', 'UINT'), ('OutputTensor', 'tensor')]
"""

from __future__ import annotations

import dataclasses
import enum
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dml_jax._src.dtypes import DataType
from dml_jax._src.integers import as_int, as_int_tuple
from dml_jax._src.scale_bias import ScaleBias
from dml_jax._src.tensor_desc import TensorDesc

_METADATA_KEY = "dml_jax.field"


class FieldKind(enum.Enum):
  """The kinds of value a DirectML operator struct holds, as its schema names them."""

  TENSOR = "tensor"
  TENSOR_ARRAY = "tensor array"
  UINT = "UINT"
  INT = "INT"
  UINT_ARRAY = "UINT array"
  INT_ARRAY = "INT array"
  ENUM = "enum"
  FLOAT = "FLOAT"
  SCALAR_UNION = "scalar union"
  SCALE_BIAS = "DML_SCALE_BIAS"

  @property
  def is_tensor(self) -> bool:
    return self in (FieldKind.TENSOR, FieldKind.TENSOR_ARRAY)


@dataclasses.dataclass(frozen=True)
class DmlField:
  """A descriptor field's DirectML facts.

  Attributes:
    name: the Python field name (snake case of `dml_name`).
    dml_name: DirectML's field name, e.g. "IndicesTensor" or "Axis".
    kind: what the struct holds there.
    output: for tensors: bound as an output (OutputTensor, OutputTensors).
    index: for tensors: holds indices or lengths (integer data, never cast).
    enum_type: for enums: the Python enum (with `from_any`) of its values.
    count_of: for a UINT count: the Python name of the array field it counts;
      None given means that array's length.
    derive: for a field whose None means "computed from the others": the
      function computing it from the descriptor (InputDimensionCount: the rank).
    optional: None is a legal final value (an OutputTensor to infer).
    data_type_field: for a scalar union: the DML name of the DataType field that says
      which member it holds (PADDING1's PaddingValueDataType).
  """

  name: str
  dml_name: str
  kind: FieldKind
  output: bool = False
  index: bool = False
  enum_type: Any = None
  count_of: str | None = None
  derive: Callable[[Any], Any] | None = None
  optional: bool = False
  data_type_field: str | None = None

  @property
  def argument(self) -> str:
    """The functional API's (and the fixtures') name for a tensor field.

    input_tensor -> input, input_tensors -> inputs, sequence_lengths_tensor ->
    sequence_lengths.
    """
    if self.name.endswith("_tensors"):
      return self.name.removesuffix("_tensors") + "s"
    return self.name.removesuffix("_tensor")

  @property
  def is_attribute(self) -> bool:
    return not self.kind.is_tensor


def dml_field(
  dml_name: str,
  kind: FieldKind,
  *,
  default: Any = dataclasses.MISSING,
  output: bool = False,
  index: bool = False,
  enum_type: Any = None,
  count_of: str | None = None,
  derive: Callable[[Any], Any] | None = None,
  optional: bool = False,
  data_type_field: str | None = None,
) -> Any:
  """A dataclass field that carries its DirectML name and kind (see `DmlField`)."""
  if count_of is not None or derive is not None:
    default = None if default is dataclasses.MISSING else default
  facts = dict(
    dml_name=dml_name,
    kind=kind,
    output=output,
    index=index,
    enum_type=enum_type,
    count_of=count_of,
    derive=derive,
    optional=optional or (output and default is None),
    data_type_field=data_type_field,
  )
  return dataclasses.field(default=default, metadata={_METADATA_KEY: facts})


def dml_fields(desc: Any) -> tuple[DmlField, ...]:
  """The DirectML facts of every field of a descriptor (class or instance), in order."""
  cls = desc if isinstance(desc, type) else type(desc)
  cached = cls.__dict__.get("_dml_fields_cache")
  if cached is not None:
    return cached
  found = tuple(
    DmlField(name=f.name, **f.metadata[_METADATA_KEY])
    for f in dataclasses.fields(cls)
    if _METADATA_KEY in f.metadata
  )
  type.__setattr__(cls, "_dml_fields_cache", found)
  return found


def field_by_dml_name(desc: Any, dml_name: str) -> DmlField:
  for field in dml_fields(desc):
    if field.dml_name == dml_name:
      return field
  raise KeyError(dml_name)


# -- coercion ------------------------------------------------------------------------------


def as_tensor(value: Any, what: str) -> TensorDesc:
  if not isinstance(value, TensorDesc):
    raise TypeError(f"{what} must be a TensorDesc; got {type(value).__name__}")
  return value


def as_tensor_tuple(values: Any, what: str) -> tuple[TensorDesc, ...]:
  if isinstance(values, TensorDesc) or not isinstance(values, Sequence):
    raise TypeError(f"{what} must be a sequence of TensorDesc; got {type(values).__name__}")
  return tuple(as_tensor(t, f"{what}[{i}]") for i, t in enumerate(values))


def as_float(value: Any, what: str) -> float:
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    raise TypeError(f"{what} must be a number; got {type(value).__name__} {value!r}")
  return widened(value)


def as_scalar(value: Any, what: str) -> int | float:
  """A DML_SCALAR_UNION's value: a Python int or float (the data type field says which member)."""
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    raise TypeError(f"{what} must be a number; got {type(value).__name__} {value!r}")
  return int(value) if isinstance(value, numbers.Integral) else widened(value)


def widened(value: Any) -> float:
  """`value` as a Python float; a NumPy float16/float32 NaN keeps its payload and its
  signalling bit (a hardware widening sets the quiet bit), so `narrowed` gives it back."""
  if isinstance(value, np.float16 | np.float32) and math.isnan(value):
    info = np.finfo(value.dtype)
    bits = int(value.view(np.uint16 if value.dtype == np.float16 else np.uint32))
    sign, payload = bits >> (info.bits - 1), bits & ((1 << info.nmant) - 1)
    double = (sign << 63) | (0x7FF << 52) | (payload << (52 - info.nmant))
    return float(np.uint64(double).view(np.float64))
  return float(value)


def narrowed(value: float) -> np.float32:
  """`value` as a float32 rounded to nearest (+-inf beyond the range); a NaN keeps the
  top 23 bits of its payload and its signalling bit (a hardware narrowing quiets it)."""
  if not math.isnan(value):
    with np.errstate(over="ignore"):
      return np.float32(value)
  bits = int(np.float64(value).view(np.uint64))
  payload = (bits >> 29) & 0x7FFFFF or 0x400000  # no payload bit left: a quiet NaN
  return np.uint32(((bits >> 63) << 31) | 0x7F800000 | payload).view(np.float32)


def coerce(field: DmlField, value: Any) -> Any:
  """A constructor argument as the field's canonical value (TypeError for a wrong kind).

  None is kept for optional fields and for fields computed from the others.
  """
  if value is None and (field.optional or field.derive or field.count_of):
    return None
  kind, what = field.kind, field.dml_name
  if kind is FieldKind.TENSOR:
    return as_tensor(value, what)
  if kind is FieldKind.TENSOR_ARRAY:
    return as_tensor_tuple(value, what)
  if kind in (FieldKind.UINT, FieldKind.INT):
    return as_int(value, what)
  if kind in (FieldKind.UINT_ARRAY, FieldKind.INT_ARRAY):
    return as_int_tuple(value, what)
  if kind is FieldKind.ENUM:
    return field.enum_type.from_any(value)
  if kind is FieldKind.FLOAT:
    return as_float(value, what)
  if kind is FieldKind.SCALE_BIAS:
    return ScaleBias.from_any(value)
  return as_scalar(value, what)


def derived_value(desc: Any, field: DmlField) -> Any:
  """What None stands for in `field`: a count's array length, or the field's `derive`."""
  if field.count_of is not None:
    counted = getattr(desc, field.count_of)
    return None if counted is None else len(counted)
  if field.derive is not None:
    return field.derive(desc)
  return None


# -- DirectML's JSON form -------------------------------------------------------------------


def from_dml_value(field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
  """A value in DirectML's JSON form (what DxDispatch model files hold) as a field value."""
  kind = field.kind
  if kind is FieldKind.TENSOR:
    return TensorDesc.from_dml(value, field.dml_name)
  if kind is FieldKind.TENSOR_ARRAY:
    if not isinstance(value, Sequence) or isinstance(value, str | Mapping):
      raise TypeError(f"{field.dml_name} must be an array of tensor descs; got {value!r}")
    return tuple(TensorDesc.from_dml(t, f"{field.dml_name}[{i}]") for i, t in enumerate(value))
  if kind is FieldKind.ENUM:
    if not isinstance(value, str):
      raise TypeError(f"{field.dml_name} must be a string enum name; got {value!r}")
    return field.enum_type.from_any(value)
  if kind is FieldKind.FLOAT:
    return _json_float(value, field.dml_name)
  if kind is FieldKind.SCALAR_UNION:
    return _json_scalar_union(value, field, siblings)
  if kind is FieldKind.SCALE_BIAS:
    return None if value is None else ScaleBias.from_any(value)
  return value


def _json_float(value: Any, what: str) -> float:
  special = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
  if isinstance(value, str) and value.lower() in special:
    return special[value.lower()]
  return as_float(value, what)


UNION_MEMBERS: dict[DataType | None, str] = {
  DataType.FLOAT16: "UInt16",  # the raw half bits
  DataType.FLOAT32: "Float32",
  DataType.FLOAT64: "Float64",
  DataType.UINT8: "UInt8",
  DataType.UINT16: "UInt16",
  DataType.UINT32: "UInt32",
  DataType.UINT64: "UInt64",
  DataType.INT8: "Int8",
  DataType.INT16: "Int16",
  DataType.INT32: "Int32",
  DataType.INT64: "Int64",
}
"""The DML_SCALAR_UNION member each data type selects (FLOAT16: its raw bits, as UInt16)."""


def _json_scalar_union(value: Any, field: DmlField, siblings: Mapping[str, Any]) -> int | float:
  """A DML_SCALAR_UNION: a number, or an object keyed by the member its data type selects."""
  data_type = None
  if field.data_type_field is not None:
    if field.data_type_field not in siblings:
      raise ValueError(f"{field.dml_name} needs {field.data_type_field} beside it")
    data_type = DataType.from_any(siblings[field.data_type_field])
  if isinstance(value, Mapping):
    if data_type is DataType.FLOAT16:  # the raw half bits, as DirectML stores them
      bits = as_int(value.get("UInt16"), f"{field.dml_name}.UInt16")
      return float(np.array(bits, np.uint16).view(np.float16))
    member = UNION_MEMBERS.get(data_type)
    if member is None or member not in value:
      raise ValueError(f"{field.dml_name} needs the member {member!r} for {data_type}")
    raw = value[member]
    return _json_float(raw, field.dml_name) if member.startswith("Float") else as_int(raw, member)
  return as_scalar(value, field.dml_name)
