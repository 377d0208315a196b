"""A model's commands: dispatch, print and writeFile, parsed.

``{"type": "dispatch", "dispatchable": name, "bindings": {bind point: source(s)}}``,
``{"type": "print", "resource": name, "verbose": false}`` and
``{"type": "writeFile", "resource": name, "targetPath": path, "dimensions": [...]}``; the
type is matched in any case. A source is a resource name or ``{"name": ..., "elementOffset":
..., "elementSizeInBytes": ...}`` (``elementCount`` and the HLSL-only members are read and
ignored), or an array of them for JOIN's InputTensors and SPLIT's OutputTensors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from dml_jax._src.model.dispatchables import Source, parse_sources
from dml_jax._src.model.resources import FieldError, parse_unsigned


@dataclasses.dataclass(frozen=True)
class Dispatch:
  dispatchable: str
  bindings: Mapping[str, tuple[Source, ...]]


@dataclasses.dataclass(frozen=True)
class Print:
  resource: str
  verbose: bool = False


@dataclasses.dataclass(frozen=True)
class WriteFile:
  resource: str
  target_path: str
  dimensions: tuple[int, ...] | None = None


Command = Dispatch | Print | WriteFile


def _name(entry: Mapping[str, Any], key: str) -> str:
  if key not in entry:
    raise FieldError(None, f"Field '{key}' is required.")
  if not isinstance(entry[key], str):
    raise FieldError(key, f"must be a string; got {entry[key]!r}")
  return entry[key]


def parse_command(entry: Any) -> Command:
  """One command object.

  Raises:
    FieldError: naming the field and the reason.
  """
  if not isinstance(entry, Mapping):
    raise FieldError(None, f"a command must be an object; got {type(entry).__name__}")
  kind = _name(entry, "type")
  lowered = kind.lower()
  if lowered == "dispatch":
    name = _name(entry, "dispatchable")
    bindings = entry.get("bindings")
    if not isinstance(bindings, Mapping):
      raise FieldError("bindings", "Expected an object field named 'bindings'.")
    pairs = getattr(bindings, "pairs", list(bindings.items()))
    return Dispatch(name, {point: parse_sources(v, f"bindings.{point}") for point, v in pairs})
  if lowered == "print":
    verbose = entry.get("verbose", False)
    if not isinstance(verbose, bool):
      raise FieldError("verbose", f"must be true or false; got {verbose!r}")
    return Print(_name(entry, "resource"), verbose)
  if lowered == "writefile":
    dimensions = entry.get("dimensions")
    if dimensions is not None:
      if not isinstance(dimensions, list):
        raise FieldError("dimensions", "Expected an array of unsigned integers.")
      dimensions = tuple(
        parse_unsigned(d, f"dimensions[{i}]", 32) for i, d in enumerate(dimensions)
      )
    return WriteFile(_name(entry, "resource"), _name(entry, "targetPath"), dimensions)
  raise FieldError("type", f"Unrecognized command {kind!r}: write dispatch, print or writeFile")


def describe(command: Command) -> str:
  """The command as messages name it: dispatch 'join', print 'Out', writeFile 'Out'."""
  if isinstance(command, Dispatch):
    return f"dispatch '{command.dispatchable}'"
  if isinstance(command, Print):
    return f"print '{command.resource}'"
  return f"writeFile '{command.resource}'"
