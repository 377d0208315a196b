"""A model's dispatchables: DirectML operator descs in DxDispatch's JSON form, parsed strictly.

A dispatchable is an object with a lower-case ``"type"``: ``hlsl``, ``onnx`` and
``dmlSerializedGraph`` (any case) are other kinds, which dml_jax does not run; any other
value makes it a DirectML operator. The operator is ``"Type"`` if present, else
``"type"``: ``DML_OPERATOR_JOIN`` or ``JOIN``, case-sensitive. Its desc is ``"Desc"``,
else ``"desc"``, else the dispatchable object itself.

Desc fields are DirectML's struct member names (case-sensitive), all required but
ELEMENT_WISE_IDENTITY's ScaleBias, counts included; members the struct lacks are ignored
(each gives a warning). Values follow DxDispatch's rules: UINTs are non-negative integer
literals, enums are names (full or suffix, case-sensitive, never numbers), FLOATs are
numbers or "nan"/"inf"/"-inf", and a DML_SCALAR_UNION is a number converted to its data
type (FLOAT16 by truncation) or an object keyed by the member (``{"Float32": "nan"}``;
``{"UInt16": bits}`` for FLOAT16). A tensor is ``{"DataType", "Sizes", ...}`` or
``{"Type": "DML_TENSOR_TYPE_BUFFER", "Desc": {...}}``.

Beside the desc: ``executionFlags`` (names of DML_EXECUTION_FLAGS, one or a list),
``dmlCompileType`` (``DmlCompileOp`` or ``DmlCompileGraph``: the same results here), and
``bindings``, the operator initializer's bindings: the buffers of its OWNED_BY_DML inputs,
read once, before the first command.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from dml_jax._src import registry
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import DataType
from dml_jax._src.errors import DmlValidationError
from dml_jax._src.feature_level import FeatureLevel
from dml_jax._src.fields import UNION_MEMBERS, DmlField, FieldKind, dml_fields, widened
from dml_jax._src.model import fill, scalars
from dml_jax._src.model.resources import FieldError, parse_data_type, parse_unsigned
from dml_jax._src.model.scalars import ConversionError

OTHER_KINDS = {
  "hlsl": "HLSL shader",
  "onnx": "ONNX model",
  "dmlserializedgraph": "serialized DirectML graph",
}
_DISPATCHABLE_MEMBERS = {
  "type",
  "Type",
  "Desc",
  "desc",
  "bindings",
  "executionFlags",
  "dmlCompileType",
}
_EXECUTION_FLAGS = (
  "NONE",
  "ALLOW_HALF_PRECISION_COMPUTATION",
  "DISABLE_META_COMMANDS",
  "DESCRIPTORS_VOLATILE",
)
_TENSOR_FLAGS = ("NONE", "OWNED_BY_DML")
_ENUM_PREFIX = {
  "PaddingMode": ("DML_PADDING_MODE_", ("CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC")),
  "DepthSpaceOrder": ("DML_DEPTH_SPACE_ORDER_", ("DEPTH_COLUMN_ROW", "COLUMN_ROW_DEPTH")),
  "AxisDirection": ("DML_AXIS_DIRECTION_", ("INCREASING", "DECREASING")),
  "DataType": ("DML_TENSOR_DATA_TYPE_", tuple(DataType.__members__)),
}


@dataclasses.dataclass(frozen=True)
class Source:
  """One resource bound to a bind point: `elementOffset` elements of `elementSizeInBytes`
  bytes (0: the buffer's element size) from its start, to the end of the buffer."""

  name: str
  element_offset: int = 0
  element_size_in_bytes: int = 0


@dataclasses.dataclass(frozen=True)
class Dispatchable:
  """A parsed DirectML operator dispatchable.

  Attributes:
    name: the dispatchable's name.
    type_name: its operator type as the file writes it (DML_OPERATOR_JOIN or JOIN).
    desc: the operator's descriptor (not validated yet).
    init_bindings: bind point -> sources, for the operator initializer (OWNED_BY_DML).
  """

  name: str
  type_name: str
  desc: OperatorDesc
  init_bindings: Mapping[str, tuple[Source, ...]]

  @property
  def where(self) -> str:
    return f"dispatchable '{self.name}' ({self.type_name})"

  def bind_points(self, output: bool) -> dict[str, int]:
    """Input (or output) bind point -> how many resources it takes, in struct order."""
    entries = self.desc.dml_outputs(inferred=True) if output else self.desc.dml_inputs()
    points: dict[str, int] = {}
    for _, row, _ in entries:
      points[row] = points.get(row, 0) + 1
    return points


def operators() -> dict[str, type[OperatorDesc]]:
  """Operator name -> descriptor class, as model files spell them (SCATTER, not
  SCATTER_ELEMENTS; the two fills of `fill`)."""
  known = {name: cls for name, cls in registry.operators().items() if name != "SCATTER_ELEMENTS"}
  known["SCATTER"] = registry.lookup("SCATTER_ELEMENTS")
  known["FILL_VALUE_CONSTANT"] = fill.FillValueConstantDesc
  known["FILL_VALUE_SEQUENCE"] = fill.FillValueSequenceDesc
  return dict(sorted(known.items()))


def parse_sources(value: Any, field: str) -> tuple[Source, ...]:
  """A binding: a resource name, ``{"name", "elementOffset", ...}``, or an array of them."""
  items = value if isinstance(value, list) else [value]
  sources = []
  for i, item in enumerate(items):
    where = f"{field}[{i}]" if isinstance(value, list) else field
    if isinstance(item, str):
      sources.append(Source(item))
    elif isinstance(item, Mapping):
      if not isinstance(item.get("name"), str):
        raise FieldError(where, "Field 'name' is required (the resource's name, a string).")
      for key in ("elementOffset", "elementSizeInBytes", "elementCount", "counterOffsetBytes"):
        if key in item:
          parse_unsigned(item[key], f"{where}.{key}")
      for key in ("format", "counter"):
        if key in item and not isinstance(item[key], str):
          raise FieldError(f"{where}.{key}", f"must be a string; got {item[key]!r}")
      sources.append(
        Source(
          item["name"],
          item.get("elementOffset", 0),
          item.get("elementSizeInBytes", 0),
        )
      )
    else:
      sources.append(Source(""))  # DxDispatch's reading of a number or null: no resource
  return tuple(sources)


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


def _enum(value: Any, field: DmlField) -> str:
  prefix, names = _ENUM_PREFIX[field.enum_type.__name__]
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


def _tensor(value: Any, field: str) -> dict[str, Any]:
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
    "Sizes": _uints(body["Sizes"], f"{field}.Sizes"),
  }
  if "Strides" in body:
    clean["Strides"] = _uints(body["Strides"], f"{field}.Strides")
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


def _uints(value: Any, field: str) -> list[int]:
  if not isinstance(value, list):
    raise FieldError(field, "Expected an array of unsigned integers.")
  return [parse_unsigned(v, f"{field}[{i}]", 32) for i, v in enumerate(value)]


def _ints(value: Any, field: str) -> list[int]:
  if not isinstance(value, list):
    raise FieldError(field, "Expected an array of integers.")
  for i, v in enumerate(value):
    if isinstance(v, bool) or not isinstance(v, int) or not -(2**31) <= v < 2**31:
      raise FieldError(f"{field}[{i}]", f"Expected a signed integer (INT32); got {v!r}")
  return list(value)


def _float(value: Any, field: str) -> float:
  try:
    return widened(scalars.as_float32(value))  # a NaN keeps its bits
  except ConversionError as error:
    raise FieldError(field, str(error)) from None


def _scalar_union(value: Any, field: str, data_type: DataType) -> Any:
  member = UNION_MEMBERS.get(data_type)
  if member is None:
    raise FieldError(field, f"Data type not supported for DML_SCALAR_UNION. ({data_type.name})")
  if isinstance(value, Mapping):
    if member not in value:
      raise FieldError(
        field, f"Field '{member}' is required (the member {data_type.name} selects)."
      )
    raw = value[member]
    if data_type == DataType.FLOAT16:
      return {"UInt16": parse_unsigned(raw, f"{field}.{member}", 16)}
    target: DataType = data_type
  elif isinstance(value, int | float) and not isinstance(value, bool):
    raw, target = value, DataType(data_type)
  else:
    raise FieldError(field, "Expected a non-null JSON object or number.")
  try:
    if target == DataType.FLOAT16:
      return {"UInt16": scalars.as_float16_bits(raw)}
    converted = scalars.element(raw, target)
  except ConversionError as error:
    raise FieldError(field, str(error)) from None
  return widened(converted) if target.is_float else int(converted)


def _field_value(field: DmlField, value: Any, body: Mapping[str, Any]) -> Any:
  name, kind = field.dml_name, field.kind
  if kind is FieldKind.TENSOR:
    return _tensor(value, name)
  if kind is FieldKind.TENSOR_ARRAY:
    if not isinstance(value, list):
      raise FieldError(name, "Expected an array of tensor descs.")
    return [_tensor(t, f"{name}[{i}]") for i, t in enumerate(value)]
  if kind is FieldKind.UINT:
    return parse_unsigned(value, name, 32)
  if kind is FieldKind.UINT_ARRAY:
    return _uints(value, name)
  if kind is FieldKind.INT_ARRAY:
    return _ints(value, name)
  if kind is FieldKind.ENUM:
    return _enum(value, field)
  if kind is FieldKind.FLOAT:
    return _float(value, name)
  if kind is FieldKind.SCALE_BIAS:
    if not isinstance(value, Mapping):
      raise FieldError(name, 'Expected an object {"Scale": ..., "Bias": ...}.')
    for key in ("Scale", "Bias"):
      if key not in value:
        raise FieldError(name, f"Field '{key}' is required.")
    return {
      "Scale": _float(value["Scale"], f"{name}.Scale"),
      "Bias": _float(value["Bias"], f"{name}.Bias"),
    }
  # a scalar union: its data type field is parsed first
  type_field = field.data_type_field
  assert type_field is not None
  if type_field not in body:
    raise FieldError(type_field, f"Field '{type_field}' is required.")
  data_type = parse_data_type(body[type_field], type_field)
  return _scalar_union(value, name, data_type)


def _near(field: DmlField, unknown: list[str]) -> str:
  """A hint for a missing required field that the desc holds misspelled (``Axiss``)."""
  close = difflib.get_close_matches(field.dml_name, unknown, n=1, cutoff=0.75)
  if not close:
    close = [k for k in unknown if k.lower() == field.dml_name.lower()]
  if not close:
    return ""
  return f" The desc has {close[0]!r}, which is not a field: did you mean {field.dml_name!r}?"


def parse_dispatchable(name: str, entry: Any) -> tuple[Dispatchable | None, list[str], list[str]]:
  """(the dispatchable or None, its problems, its warnings), each problem naming the
  dispatchable, its type and the field."""
  if not isinstance(entry, Mapping):
    return None, [f"dispatchable '{name}': must be an object; got {type(entry).__name__}"], []
  kind = entry.get("type")
  if not isinstance(kind, str):
    return None, [f"dispatchable '{name}': Field 'type' is required."], []
  if kind.lower() in OTHER_KINDS:
    return (
      None,
      [
        f"dispatchable '{name}' ({kind}): {OTHER_KINDS[kind.lower()]} dispatchables are not"
        " supported; dml_jax runs DirectML operator dispatchables only"
      ],
      [],
    )
  type_name = entry["Type"] if "Type" in entry else kind
  where = f"dispatchable '{name}' ({type_name})"
  if not isinstance(type_name, str):
    return None, [f"dispatchable '{name}': Type: Expected a string (DML_OPERATOR_<NAME>)."], []
  known = operators()
  bare = type_name.removeprefix("DML_OPERATOR_")
  cls = known.get(bare)
  if cls is None:
    if bare == "SCATTER_ELEMENTS":
      reason = "model files name it SCATTER (DML_OPERATOR_SCATTER)"
    elif bare.upper() in known:
      reason = f"operator names are case-sensitive: write {bare.upper()}"
    else:
      reason = f"dml_jax runs {', '.join(known)}"
    return None, [f"{where}: Type: Unknown operator type. {reason}"], []
  body = entry["Desc"] if "Desc" in entry else entry.get("desc", entry)
  if not isinstance(body, Mapping):
    return None, [f"{where}: Desc: Expected an object."], []
  problems: list[str] = []
  warnings: list[str] = []
  fields = dml_fields(cls)
  known_names = {f.dml_name for f in fields}
  ignored = [
    k
    for k in body
    if k not in known_names and (body is not entry or k not in _DISPATCHABLE_MEMBERS)
  ]
  for key in ignored:
    warnings.append(
      f"{where}: '{key}' is not a field of DML_{cls.OPERATOR}_OPERATOR_DESC and is ignored"
      f" (its fields: {', '.join(sorted(known_names))})"
    )
  values: dict[str, Any] = {}
  for field in fields:
    if field.dml_name not in body:
      if field.kind is not FieldKind.SCALE_BIAS:
        problems.append(f"{where}: Field '{field.dml_name}' is required.{_near(field, ignored)}")
      continue
    try:
      values[field.dml_name] = _field_value(field, body[field.dml_name], body)
    except FieldError as error:
      problems.append(f"{where}: {error}")
  for key, prefix, names in (("executionFlags", "DML_EXECUTION_FLAG_", _EXECUTION_FLAGS),):
    if key in entry:
      try:
        parse_flags(entry[key], prefix, names, key)
      except FieldError as error:
        problems.append(f"{where}: {error}")
  compile_type = entry.get("dmlCompileType", "DmlCompileOp")
  if compile_type not in ("DmlCompileOp", "DmlCompileGraph"):
    problems.append(
      f"{where}: dmlCompileType: must be DmlCompileOp or DmlCompileGraph; got {compile_type!r}"
    )
  init_bindings: dict[str, tuple[Source, ...]] = {}
  bindings = entry.get("bindings")
  if isinstance(bindings, Mapping):
    for point, value in getattr(bindings, "pairs", bindings.items()):
      try:
        init_bindings[point] = parse_sources(value, f"bindings.{point}")
      except FieldError as error:
        problems.append(f"{where}: {error}")
  if problems:
    return None, problems, warnings
  try:
    desc = cls.from_dml(values)
  except (TypeError, ValueError) as error:
    return None, [f"{where}: {error}"], warnings
  return Dispatchable(name, type_name, desc, init_bindings), [], warnings


def validate(dispatchable: Dispatchable, level: FeatureLevel) -> list[str]:
  """Every rule DirectML's CreateOperator would find broken, one problem each."""
  try:
    dispatchable.desc.validate(level)
  except DmlValidationError as error:
    return [f"{dispatchable.where}: {v}" for v in error.violations]
  return []
