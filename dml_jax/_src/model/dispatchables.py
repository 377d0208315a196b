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
from collections.abc import Mapping
from typing import Any

from dml_jax._src import registry
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.errors import DmlValidationError
from dml_jax._src.feature_level import FeatureLevel
from dml_jax._src.fields import DmlField, FieldError, dml_fields, parse_flags, parse_unsigned

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
  """Operator name -> descriptor class, as model files spell them (the registry's
  `model_file_operators`: SCATTER, not SCATTER_ELEMENTS)."""
  return registry.model_file_operators()


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
    named = registry.model_file_name(bare) if bare in registry.operators() else bare
    if named != bare:
      reason = f"model files name it {named} (DML_OPERATOR_{named})"
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
    optional_tensor = field.kind.is_tensor and field.optional and not field.output
    if field.dml_name not in body:
      if not field.optional or field.output:  # optional inputs (ScaleBias, tensors) may go
        problems.append(f"{where}: Field '{field.dml_name}' is required.{_near(field, ignored)}")
      continue
    if body[field.dml_name] is None and optional_tensor:  # null: DIAGONAL_MATRIX1's InputTensor
      values[field.dml_name] = None
      continue
    try:
      values[field.dml_name] = field.kind.codec.from_model_file(field, body[field.dml_name], body)
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
