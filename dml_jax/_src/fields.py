"""What a descriptor field is: its DirectML name and kind, declared where the field is.

An operator descriptor is a frozen dataclass whose fields are declared with
`dml_field`, which records DirectML's field name and the kind of value the C
struct holds there (a tensor, an array of tensors, a UINT, an array of UINTs or
INTs, an enum, a BOOL, a FLOAT, a DML_SCALAR_UNION or a DML_SCALE_BIAS). Coercion of constructor
arguments, the round-tripping repr, `dml_attributes`, the HTML tables,
`dml.explain`, fixture parameters, `from_dml` and `to_dml` (DirectML's own field
names and JSON values) all derive from these declarations instead of being written
per operator.

Each kind names one codec (`FieldKind.codec`, a `FieldCodec`), the only place that
knows its values: how a constructor argument is coerced, how DirectML's JSON form is
read (`from_dml`) and written (`to_dml`), and how a DxDispatch model file's value is
checked by DxDispatch's own rules (`from_model_file`).

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dml_jax._src.dtypes import DataType
from dml_jax._src.integers import as_int, as_int_tuple
from dml_jax._src.scale_bias import ScaleBias
from dml_jax._src.size_2d import Size2D
from dml_jax._src.tensor_desc import TensorDesc, TensorFlags

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
  BOOL = "BOOL"
  FLOAT = "FLOAT"
  SCALAR_UNION = "scalar union"
  SCALE_BIAS = "DML_SCALE_BIAS"
  FLOAT_ARRAY = "FLOAT array"
  SIZE_2D = "DML_SIZE_2D"

  @property
  def is_tensor(self) -> bool:
    return self in (FieldKind.TENSOR, FieldKind.TENSOR_ARRAY)

  @property
  def codec(self) -> FieldCodec:
    """How values of this kind are coerced, read from JSON and written to it."""
    return _CODECS[self]


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


def derived_value(desc: Any, field: DmlField) -> Any:
  """What None stands for in `field`: a count's array length, or the field's `derive`."""
  if field.count_of is not None:
    counted = getattr(desc, field.count_of)
    return None if counted is None else len(counted)
  if field.derive is not None:
    return field.derive(desc)
  return None


def coerce(field: DmlField, value: Any) -> Any:
  """A constructor argument as the field's canonical value (TypeError for a wrong kind).

  None is kept for optional fields and for fields computed from the others.
  """
  if value is None and (field.optional or field.derive or field.count_of):
    return None
  return field.kind.codec.coerce(field, value)


# -- the codecs: one per FieldKind ----------------------------------------------------------


class FieldError(ValueError):
  """A problem with one field of a model entry: `field` names it (None: the entry)."""

  def __init__(self, field: str | None, message: str) -> None:
    self.field = field
    super().__init__(message)

  def __str__(self) -> str:
    return f"{self.field}: {self.args[0]}" if self.field else str(self.args[0])


def parse_unsigned(value: Any, field: str, bits: int = 64) -> int:
  """A JSON integer literal in [0, 2**bits) (FieldError otherwise), as DxDispatch reads UINTs."""
  if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**bits:
    raise FieldError(field, f"Expected an unsigned integer (UINT{bits}); got {value!r}")
  return value


_TYPE_PREFIX = "DML_TENSOR_DATA_TYPE_"


def parse_data_type(value: Any, field: str) -> DataType:
  """A DML_TENSOR_DATA_TYPE string: the full name or the suffix, case-sensitive."""
  if not isinstance(value, str):
    raise FieldError(field, f"must be a DML_TENSOR_DATA_TYPE name (a string); got {value!r}")
  bare = value.removeprefix(_TYPE_PREFIX)
  if bare not in DataType.__members__:
    raise FieldError(
      field,
      f"unknown DML_TENSOR_DATA_TYPE {value!r}; write one of {', '.join(DataType.__members__)}"
      f" (case-sensitive, with or without {_TYPE_PREFIX})",
    )
  return DataType[bare]


def parse_flags(value: Any, prefix: str, names: Sequence[str], field: str) -> tuple[str, ...]:
  """Flag names (one string or a list), each the full name or the suffix."""
  items = [value] if isinstance(value, str) else value
  if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
    raise FieldError(field, "Expected a string or an array of strings.")
  found = []
  for item in items:
    bare = item.removeprefix(prefix)
    if bare not in names:
      raise FieldError(field, f"unknown flag {item!r}; write one of {', '.join(names)}")
    found.append(bare)
  return tuple(found)


def _scalars() -> Any:
  """The model package's JSON-number conversions (DxDispatch's), imported when first used:
  the model package imports the descriptors, which import this module."""
  from dml_jax._src.model import scalars

  return scalars


def _json_number(value: float) -> float | str:
  """A float as JSON holds it: non-finite values as "nan", "inf" or "-inf" (JSON has no such
  numbers; a NaN's sign and payload are not kept)."""
  if math.isnan(value):
    return "nan"
  if math.isinf(value):
    return "inf" if value > 0 else "-inf"
  return float(value)


def _json_float(value: Any, what: str) -> float:
  special = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
  if isinstance(value, str) and value.lower() in special:
    return special[value.lower()]
  return as_float(value, what)


def _model_float(value: Any, field: str) -> float:
  """A FLOAT of a model file: a number or "nan"/"inf"/"-inf", rounded to float32."""
  scalars = _scalars()
  try:
    return widened(scalars.as_float32(value))  # a NaN keeps its bits
  except scalars.ConversionError as error:
    raise FieldError(field, str(error)) from None


def _model_uints(value: Any, field: str) -> list[int]:
  if not isinstance(value, list):
    raise FieldError(field, "Expected an array of unsigned integers.")
  return [parse_unsigned(v, f"{field}[{i}]", 32) for i, v in enumerate(value)]


class FieldCodec:
  """How the values of one `FieldKind` are read and written (`FieldKind.codec` names it).

  - `coerce`: a constructor argument (a user's Python value) as the field's value.
  - `from_dml`: DirectML's JSON form as the field's value, as `OperatorDesc.from_dml`
    reads it (lenient: enums in any case, numbers not range-checked before `coerce`).
  - `from_model_file`: a DxDispatch model file's value, checked by DxDispatch's own rules
    (case-sensitive enums, UINT32 ranges, FLOATs rounded to float32), as the DirectML JSON
    form `from_dml` reads; FieldError naming the field otherwise.
  - `to_dml`: the field's value as DirectML's JSON form, which `from_dml` reads back and a
    model file may hold.

  `siblings` maps the descriptor's DML field names to their JSON values (`from_dml`,
  `from_model_file`) or to their field values (`to_dml`): a scalar union's data type.
  """

  def coerce(self, field: DmlField, value: Any) -> Any:
    raise NotImplementedError

  def from_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    del siblings
    return value

  def from_model_file(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    raise NotImplementedError

  def to_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    del field, siblings
    return value


_TENSOR_FLAGS = ("NONE", "OWNED_BY_DML")


def _model_tensor(value: Any, field: str) -> dict[str, Any]:
  """A DML_TENSOR_DESC of a model file: the short form or {"Type": BUFFER, "Desc": {...}}."""
  if not isinstance(value, Mapping):
    raise FieldError(field, "Expected an object (a DML_TENSOR_DESC).")
  if "Type" in value:
    kind = value["Type"]
    if kind not in ("DML_TENSOR_TYPE_BUFFER", "BUFFER"):
      raise FieldError(f"{field}.Type", f"must be DML_TENSOR_TYPE_BUFFER (or BUFFER); got {kind!r}")
  body = value["Desc"] if "Desc" in value else value
  if not isinstance(body, Mapping):
    raise FieldError(f"{field}.Desc", "Expected an object (a DML_BUFFER_TENSOR_DESC).")
  for key in ("DataType", "Sizes"):
    if key not in body:
      raise FieldError(field, f"Field '{key}' is required.")
  clean: dict[str, Any] = {
    "DataType": parse_data_type(body["DataType"], f"{field}.DataType").name,
    "Sizes": _model_uints(body["Sizes"], f"{field}.Sizes"),
  }
  if "Strides" in body:
    clean["Strides"] = _model_uints(body["Strides"], f"{field}.Strides")
  if "DimensionCount" in body:
    clean["DimensionCount"] = parse_unsigned(body["DimensionCount"], f"{field}.DimensionCount", 32)
  if "Flags" in body:
    clean["Flags"] = list(
      parse_flags(body["Flags"], "DML_TENSOR_FLAG_", _TENSOR_FLAGS, f"{field}.Flags")
    )
  if "TotalTensorSizeInBytes" in body:
    clean["TotalTensorSizeInBytes"] = parse_unsigned(
      body["TotalTensorSizeInBytes"], f"{field}.TotalTensorSizeInBytes"
    )
  if "GuaranteedBaseOffsetAlignment" in body:
    clean["GuaranteedBaseOffsetAlignment"] = parse_unsigned(
      body["GuaranteedBaseOffsetAlignment"], f"{field}.GuaranteedBaseOffsetAlignment", 32
    )
  return clean


def _tensor_json(tensor: TensorDesc) -> dict[str, Any]:
  """A TensorDesc in DirectML's JSON form (the short one), every field it sets written."""
  document: dict[str, Any] = {"DataType": tensor.data_type.name, "Sizes": list(tensor.sizes)}
  if tensor.strides is not None:
    document["Strides"] = list(tensor.strides)
  if tensor.flags:
    document["Flags"] = [f.name for f in TensorFlags if f and f in tensor.flags]
  if tensor.total_tensor_size_in_bytes != tensor.minimum_size_in_bytes:
    document["TotalTensorSizeInBytes"] = tensor.total_tensor_size_in_bytes
  if tensor.guaranteed_base_offset_alignment:
    document["GuaranteedBaseOffsetAlignment"] = tensor.guaranteed_base_offset_alignment
  return document


class TensorCodec(FieldCodec):
  """A DML_TENSOR_DESC: a `TensorDesc`."""

  def coerce(self, field: DmlField, value: Any) -> TensorDesc:
    return as_tensor(value, field.dml_name)

  def from_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> TensorDesc:
    return TensorDesc.from_dml(value, field.dml_name)

  def from_model_file(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    return _model_tensor(value, field.dml_name)

  def to_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    return _tensor_json(value)


class TensorArrayCodec(FieldCodec):
  """An array of DML_TENSOR_DESCs: a tuple of `TensorDesc`."""

  def coerce(self, field: DmlField, value: Any) -> tuple[TensorDesc, ...]:
    return as_tensor_tuple(value, field.dml_name)

  def from_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    if not isinstance(value, Sequence) or isinstance(value, str | Mapping):
      raise TypeError(f"{field.dml_name} must be an array of tensor descs; got {value!r}")
    return tuple(TensorDesc.from_dml(t, f"{field.dml_name}[{i}]") for i, t in enumerate(value))

  def from_model_file(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    if not isinstance(value, list):
      raise FieldError(field.dml_name, "Expected an array of tensor descs.")
    return [_model_tensor(t, f"{field.dml_name}[{i}]") for i, t in enumerate(value)]

  def to_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    return [_tensor_json(t) for t in value]


class UintCodec(FieldCodec):
  """A UINT: a Python int (its range is a rule of validation, not of the type)."""

  def coerce(self, field: DmlField, value: Any) -> int:
    return as_int(value, field.dml_name)

  def from_model_file(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    return parse_unsigned(value, field.dml_name, 32)


class IntCodec(FieldCodec):
  """An INT: a Python int; a model file's is an INT32."""

  def coerce(self, field: DmlField, value: Any) -> int:
    return as_int(value, field.dml_name)

  def from_model_file(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
      raise FieldError(field.dml_name, f"Expected a signed integer (INT32); got {value!r}")
    return value


class UintArrayCodec(FieldCodec):
  """An array of UINTs: a tuple of Python ints."""

  def coerce(self, field: DmlField, value: Any) -> tuple[int, ...]:
    return as_int_tuple(value, field.dml_name)

  def from_model_file(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    return _model_uints(value, field.dml_name)

  def to_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    return list(value)


class IntArrayCodec(UintArrayCodec):
  """An array of INTs: a tuple of Python ints; a model file's are INT32s."""

  def from_model_file(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    name = field.dml_name
    if not isinstance(value, list):
      raise FieldError(name, "Expected an array of integers.")
    for i, v in enumerate(value):
      if isinstance(v, bool) or not isinstance(v, int) or not -(2**31) <= v < 2**31:
        raise FieldError(f"{name}[{i}]", f"Expected a signed integer (INT32); got {v!r}")
    return list(value)


_MODEL_FILE_ENUMS = {
  "PaddingMode": ("DML_PADDING_MODE_", ("CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC")),
  "DepthSpaceOrder": ("DML_DEPTH_SPACE_ORDER_", ("DEPTH_COLUMN_ROW", "COLUMN_ROW_DEPTH")),
  "AxisDirection": ("DML_AXIS_DIRECTION_", ("INCREASING", "DECREASING")),
  "DataType": (_TYPE_PREFIX, tuple(DataType.__members__)),
  "InterpolationMode": ("DML_INTERPOLATION_MODE_", ("NEAREST_NEIGHBOR", "LINEAR")),
}
"""Each enum's C prefix, which a model file may write or leave out, and the value names
DxDispatch's parser knows (PADDING's WRAP is not one)."""


class EnumCodec(FieldCodec):
  """An enum: a member of the field's `enum_type`; DirectML's JSON writes its name."""

  def coerce(self, field: DmlField, value: Any) -> Any:
    return field.enum_type.from_any(value)

  def from_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    if not isinstance(value, str):
      raise TypeError(f"{field.dml_name} must be a string enum name; got {value!r}")
    return field.enum_type.from_any(value)

  def from_model_file(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    prefix, names = _MODEL_FILE_ENUMS[field.enum_type.__name__]
    if not isinstance(value, str):
      raise FieldError(field.dml_name, f"{prefix.rstrip('_')} must be a string.")
    bare = value.removeprefix(prefix)
    if bare not in names:
      raise FieldError(
        field.dml_name,
        f"unknown {prefix.rstrip('_')} value {value!r}; write one of {', '.join(names)}"
        " (case-sensitive, with or without the prefix)",
      )
    return bare

  def to_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    return value.name


class BoolCodec(FieldCodec):
  """A BOOL (C's int: FALSE 0, TRUE 1): a Python bool; JSON and model files write true or
  false, as DxDispatch reads them."""

  def coerce(self, field: DmlField, value: Any) -> bool:
    if isinstance(value, bool | np.bool_):
      return bool(value)
    if isinstance(value, numbers.Integral) and int(value) in (0, 1):
      return bool(value)  # C's FALSE and TRUE
    raise TypeError(
      f"{field.dml_name} must be a bool (True or False, or C's 1 or 0); got"
      f" {type(value).__name__} {value!r}"
    )

  def from_model_file(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    if not isinstance(value, bool):
      raise FieldError(field.dml_name, f"Expected a bool (true or false); got {value!r}")
    return value


class FloatCodec(FieldCodec):
  """A FLOAT: a Python float; JSON writes a non-finite one as "nan", "inf" or "-inf"."""

  def coerce(self, field: DmlField, value: Any) -> float:
    return as_float(value, field.dml_name)

  def from_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> float:
    return _json_float(value, field.dml_name)

  def from_model_file(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    return _model_float(value, field.dml_name)

  def to_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    return _json_number(value)


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


class ScalarUnionCodec(FieldCodec):
  """A DML_SCALAR_UNION: a Python int or float, whose member the field's data type field
  selects. JSON holds a number, or an object keyed by that member (``{"Float32": "nan"}``;
  FLOAT16 as its bits, ``{"UInt16": 15360}``); `to_dml` writes a number where one is exact,
  else that object."""

  def coerce(self, field: DmlField, value: Any) -> int | float:
    return as_scalar(value, field.dml_name)

  def from_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> int | float:
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
      if member.startswith("Float"):
        return _json_float(raw, field.dml_name)
      return as_int(raw, member)
    return as_scalar(value, field.dml_name)

  def from_model_file(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    type_field = field.data_type_field
    assert type_field is not None, f"{field.dml_name} declares no data type field"
    if type_field not in siblings:
      raise FieldError(type_field, f"Field '{type_field}' is required.")
    data_type = parse_data_type(siblings[type_field], type_field)
    name = field.dml_name
    member = UNION_MEMBERS.get(data_type)
    if member is None:
      raise FieldError(name, f"Data type not supported for DML_SCALAR_UNION. ({data_type.name})")
    scalars = _scalars()
    if isinstance(value, Mapping):
      if member not in value:
        raise FieldError(
          name, f"Field '{member}' is required (the member {data_type.name} selects)."
        )
      raw = value[member]
      if data_type == DataType.FLOAT16:
        return {"UInt16": parse_unsigned(raw, f"{name}.{member}", 16)}
    elif isinstance(value, int | float) and not isinstance(value, bool):
      raw = value
    else:
      raise FieldError(name, "Expected a non-null JSON object or number.")
    try:
      if data_type == DataType.FLOAT16:
        return {"UInt16": scalars.as_float16_bits(raw)}
      converted = scalars.element(raw, data_type)
    except scalars.ConversionError as error:
      raise FieldError(name, str(error)) from None
    return widened(converted) if data_type.is_float else int(converted)

  def to_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    data_type = None
    if field.data_type_field is not None:
      data_type = DataType.from_any(siblings[field.data_type_field])
    if isinstance(value, int):
      if data_type is None or data_type.is_float or data_type.numpy_dtype is None:
        return value
      # Either reading of the union's bits (-2 or 254 for 8 bits), as its member reads them.
      bits = data_type.size_in_bits
      if not -(2 ** (bits - 1)) <= value < 2**bits:
        return value
      info = np.iinfo(data_type.numpy_dtype)
      return value - 2**bits if value > info.max else value + 2**bits if value < info.min else value
    if math.isfinite(value):
      return value
    if data_type is DataType.FLOAT16:  # exact as half bits (a NaN as the quiet half NaN)
      return {"UInt16": int(np.array(value, np.float16).view(np.uint16))}
    member = UNION_MEMBERS.get(data_type)
    if member is None or not member.startswith("Float"):
      raise ValueError(
        f"{field.dml_name} = {value!r} has no DML_SCALAR_UNION form for {data_type}:"
        " give a number of the data type"
      )
    return {member: _json_number(value)}


class ScaleBiasCodec(FieldCodec):
  """A DML_SCALE_BIAS: a `ScaleBias`, JSON ``{"Scale": ..., "Bias": ...}``."""

  def coerce(self, field: DmlField, value: Any) -> ScaleBias:
    return ScaleBias.from_any(value)

  def from_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    if value is None:
      return None
    if isinstance(value, Mapping):
      name = field.dml_name
      value = {
        k: _json_float(v, f"{name}.{k}") if isinstance(v, str) else v for k, v in value.items()
      }
    return ScaleBias.from_any(value)

  def from_model_file(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    name = field.dml_name
    if not isinstance(value, Mapping):
      raise FieldError(name, 'Expected an object {"Scale": ..., "Bias": ...}.')
    for key in ("Scale", "Bias"):
      if key not in value:
        raise FieldError(name, f"Field '{key}' is required.")
    return {
      "Scale": _model_float(value["Scale"], f"{name}.Scale"),
      "Bias": _model_float(value["Bias"], f"{name}.Bias"),
    }

  def to_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    return {"Scale": _json_number(value.scale), "Bias": _json_number(value.bias)}


class FloatArrayCodec(FieldCodec):
  """An array of FLOATs: a tuple of Python floats, each rounded to float32 as DirectML holds
  it; JSON writes a non-finite one as "nan", "inf" or "-inf"."""

  def coerce(self, field: DmlField, value: Any) -> tuple[float, ...]:
    name = field.dml_name
    if isinstance(value, str | Mapping) or not isinstance(value, Iterable):
      raise TypeError(f"{name} must be a sequence of numbers; got {type(value).__name__}")
    return tuple(widened(narrowed(as_float(v, f"{name}[{i}]"))) for i, v in enumerate(value))

  def from_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    if not isinstance(value, Sequence) or isinstance(value, str | Mapping):
      raise TypeError(f"{field.dml_name} must be an array of numbers; got {value!r}")
    return tuple(_json_float(v, f"{field.dml_name}[{i}]") for i, v in enumerate(value))

  def from_model_file(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    if not isinstance(value, list):
      raise FieldError(field.dml_name, "Expected an array of numbers.")
    return [_model_float(v, f"{field.dml_name}[{i}]") for i, v in enumerate(value)]

  def to_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    return [_json_number(v) for v in value]


class Size2DCodec(FieldCodec):
  """A DML_SIZE_2D: a `Size2D`, JSON ``{"Width": ..., "Height": ...}``."""

  def coerce(self, field: DmlField, value: Any) -> Size2D:
    return Size2D.from_any(value, field.dml_name)

  def from_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Size2D:
    return Size2D.from_any(value, field.dml_name)

  def from_model_file(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    name = field.dml_name
    if not isinstance(value, Mapping):
      raise FieldError(name, 'Expected an object {"Width": ..., "Height": ...}.')
    for key in ("Width", "Height"):
      if key not in value:
        raise FieldError(name, f"Field '{key}' is required.")
    return {k: parse_unsigned(value[k], f"{name}.{k}", 32) for k in ("Width", "Height")}

  def to_dml(self, field: DmlField, value: Any, siblings: Mapping[str, Any]) -> Any:
    return {"Width": value.width, "Height": value.height}


_CODECS: dict[FieldKind, FieldCodec] = {
  FieldKind.TENSOR: TensorCodec(),
  FieldKind.TENSOR_ARRAY: TensorArrayCodec(),
  FieldKind.UINT: UintCodec(),
  FieldKind.INT: IntCodec(),
  FieldKind.UINT_ARRAY: UintArrayCodec(),
  FieldKind.INT_ARRAY: IntArrayCodec(),
  FieldKind.ENUM: EnumCodec(),
  FieldKind.BOOL: BoolCodec(),
  FieldKind.FLOAT: FloatCodec(),
  FieldKind.SCALAR_UNION: ScalarUnionCodec(),
  FieldKind.SCALE_BIAS: ScaleBiasCodec(),
  FieldKind.FLOAT_ARRAY: FloatArrayCodec(),
  FieldKind.SIZE_2D: Size2DCodec(),
}
