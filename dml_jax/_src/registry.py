"""The operator registry: DirectML's operator names to their descriptor classes.

Each operator module registers its descriptor class(es) when it is imported
(`@register`); the conformance report, `explain`, the fixtures, the device layer
and the tests look operators up here and import no operator module. Names are
DirectML's, with or without the DML_OPERATOR_ prefix, in any case.

Examples:
  >>> from dml_jax._src import registry
  >>> registry.lookup("DML_OPERATOR_JOIN").__name__
  'JoinDesc'
  >>> registry.lookup_all(["join", "NOT_AN_OP", "ALSO_NOT"])  # doctest: +ELLIPSIS
  Traceback (most recent call last):
  ...
  dml_jax.UnknownOperatorError: 2 unknown DirectML operators: 'NOT_AN_OP', 'ALSO_NOT'; dml_jax has ...
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from dml_jax._src.errors import UnknownOperatorError

if TYPE_CHECKING:
  from dml_jax._src.descriptor import OperatorDesc

_T = TypeVar("_T", bound="type[OperatorDesc]")
_OPERATORS: dict[str, Any] = {}
_ALIASES: dict[str, str] = {}


def register(cls: _T, *, aliases: Iterable[str] = ()) -> _T:
  """Registers a descriptor class under its `OPERATOR` name (and `aliases`).

  Raises:
    ValueError: if the name (or an alias) is registered already.
  """
  names = [cls.OPERATOR, *aliases]
  taken = [n for n in names if n in _OPERATORS or n in _ALIASES]
  if taken:
    raise ValueError(f"DML_OPERATOR_{taken[0]} is registered already")
  _OPERATORS[cls.OPERATOR] = cls
  for alias in aliases:
    _ALIASES[alias] = cls.OPERATOR
  return cls


def canonical_name(name: str) -> str:
  """DirectML's operator name without the prefix, upper case: "dml_operator_join" -> "JOIN".

  Hyphens count as underscores ("gather-nd" -> "GATHER_ND"), as on a command line.
  """
  bare = name.strip().upper().replace("-", "_").removeprefix("DML_OPERATOR_")
  return _ALIASES.get(bare, bare)


def operators() -> Mapping[str, Any]:
  """Every registered operator: name -> descriptor class, in registration order."""
  _load()
  return types.MappingProxyType(_OPERATORS)


def lookup(name: str) -> Any:
  """The descriptor class of one operator name.

  Raises:
    UnknownOperatorError: naming the operators dml_jax has.
  """
  return lookup_all([name])[0]


def lookup_all(names: Iterable[str]) -> list[Any]:
  """The descriptor classes of several operator names; every unknown name reported at once.

  Raises:
    UnknownOperatorError: listing every unknown name.
  """
  _load()
  names = list(names)
  unknown = [n for n in names if canonical_name(n) not in _OPERATORS]
  if unknown:
    raise UnknownOperatorError(unknown, sorted(_OPERATORS))
  return [_OPERATORS[canonical_name(n)] for n in names]


def _load() -> None:
  """Imports the operator package once, which registers every operator."""
  importlib.import_module("dml_jax._src.ops")
