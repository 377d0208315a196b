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
_MODEL_FILE_NAMES: dict[str, str] = {}


def register(cls: _T, *, aliases: Iterable[str] = (), model_file_name: str | None = None) -> _T:
  """Registers a descriptor class under its `OPERATOR` name (and `aliases`).

  `model_file_name` is the one of those names that DxDispatch's model files use, where it
  is not `OPERATOR` (SCATTER_ELEMENTS: SCATTER, the name DirectML's schema keeps).

  Raises:
    ValueError: if the name (or an alias) is registered already, or `model_file_name` is
      none of the names.
  """
  names = [cls.OPERATOR, *aliases]
  taken = [n for n in names if n in _OPERATORS or n in _ALIASES]
  if taken:
    raise ValueError(f"DML_OPERATOR_{taken[0]} is registered already")
  if model_file_name is not None and model_file_name not in names:
    raise ValueError(f"{model_file_name} is not one of the names registered: {names}")
  _OPERATORS[cls.OPERATOR] = cls
  for alias in aliases:
    _ALIASES[alias] = cls.OPERATOR
  if model_file_name is not None:
    _MODEL_FILE_NAMES[cls.OPERATOR] = model_file_name
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


def model_file_operators() -> dict[str, Any]:
  """Every registered operator under the name DxDispatch's model files give it (SCATTER for
  SCATTER_ELEMENTS), sorted by that name."""
  _load()
  return dict(sorted((_MODEL_FILE_NAMES.get(name, name), cls) for name, cls in _OPERATORS.items()))


def model_file_name(name: str) -> str:
  """The name model files give the operator registered as `name` (or an alias of it)."""
  canonical = canonical_name(name)
  return _MODEL_FILE_NAMES.get(canonical, canonical)


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
