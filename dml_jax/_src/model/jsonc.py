"""The JSON dialect of DxDispatch model files.

Model files are JSON with three relaxations and one restriction:

- ``// line`` and ``/* block */`` comments wherever whitespace may stand;
- a trailing comma before ``]`` or ``}`` (``[1, 2,]``, ``{"a": 1,}``);
- text after the root value is ignored;
- ``NaN``, ``Infinity`` and ``-Infinity`` literals are refused (Python's `json` takes
  them): non-finite values are written as the strings ``"nan"``, ``"inf"``, ``"-inf"``.

Integer literals (no fraction, no exponent) stay Python ints and every other number a
float, which is how the model's integer fields tell ``1`` from ``1.0``; an integer
literal outside the 64-bit range becomes a float. Objects are `JsonObject`s: a key
written twice reads as its *first* value, while `JsonObject.pairs` keeps every
occurrence in file order (the model's name maps take them all, the last one winning).

Examples:
  >>> parse('{"a": [1, 2.0,], /* note */ "b": "inf", } trailing text')
  {'a': [1, 2.0], 'b': 'inf'}
  >>> parse('{"a": NaN}')
  Traceback (most recent call last):
  ...
  dml_jax._src.model.jsonc.JsonError: JSON parse error at char offset:6, line:1, column:7: NaN is not a JSON value; write the string "nan" (or "inf", "-inf")
"""

from __future__ import annotations

import json
from typing import Any

_INT_MIN, _UINT_MAX = -(2**63), 2**64 - 1


class JsonError(ValueError):
  """A model file that is not JSON in DxDispatch's dialect; says where."""


class JsonObject(dict[str, Any]):
  """A JSON object: the first value of each key, and `pairs`, every (key, value) in order."""

  def __init__(self, pairs: list[tuple[str, Any]] = ()) -> None:  # type: ignore[assignment]
    super().__init__()
    for key, value in pairs:
      if key not in self:
        self[key] = value
    self.pairs: list[tuple[str, Any]] = list(pairs)


def _integer(text: str) -> int | float:
  value = int(text)
  return value if _INT_MIN <= value <= _UINT_MAX else float(text)


class _ConstantError(Exception):
  def __init__(self, name: str) -> None:
    self.name = name


def _refuse_constant(name: str) -> Any:
  raise _ConstantError(name)


def _clean(text: str) -> str:
  """`text` with comments and trailing commas blanked out (offsets and lines unchanged)."""
  out = list(text)
  i, n = 0, len(text)
  last_comma = -1  # position of a comma with only blanks and comments after it
  while i < n:
    c = text[i]
    if c == '"':
      last_comma = -1
      i += 1
      while i < n and text[i] != '"':
        i += 2 if text[i] == "\\" else 1
      i += 1
      continue
    if c == "/" and i + 1 < n and text[i + 1] in "/*":
      end = text.find("\n", i) if text[i + 1] == "/" else text.find("*/", i + 2)
      end = n if end < 0 else end + (0 if text[i + 1] == "/" else 2)
      for k in range(i, end):
        if out[k] != "\n":
          out[k] = " "
      i = end
      continue
    if c in "]}" and last_comma >= 0:
      out[last_comma] = " "
    if c == ",":
      last_comma = i
    elif not c.isspace():
      last_comma = -1
    i += 1
  return "".join(out)


def _where(text: str, offset: int) -> str:
  line = text.count("\n", 0, offset) + 1
  column = offset - (text.rfind("\n", 0, offset) + 1) + 1
  return f"char offset:{offset}, line:{line}, column:{column}"


def parse(text: str) -> Any:
  """The root value of a model file's text, in DxDispatch's JSON dialect.

  Raises:
    JsonError: where the text stops being JSON, with a snippet of it.
  """
  cleaned = _clean(text)
  decoder = json.JSONDecoder(
    object_pairs_hook=JsonObject, parse_int=_integer, parse_constant=_refuse_constant
  )
  start = len(cleaned) - len(cleaned.lstrip())
  try:
    value, _ = decoder.raw_decode(cleaned, start)
  except _ConstantError as constant:
    offset = _find_constant(cleaned, constant.name)
    raise JsonError(
      f"JSON parse error at {_where(text, offset)}: {constant.name} is not a JSON value;"
      ' write the string "nan" (or "inf", "-inf")'
    ) from None
  except json.JSONDecodeError as error:
    snippet = text[max(0, error.pos - 20) : error.pos + 20]
    raise JsonError(
      f"JSON parse error at {_where(text, error.pos)}: {error.msg}. Snippet: >>>{snippet}<<<"
    ) from None
  return value


def _find_constant(text: str, name: str) -> int:
  """Where a NaN/Infinity literal stands (outside strings), for the message."""
  i, n = 0, len(text)
  while i < n:
    if text[i] == '"':
      i += 1
      while i < n and text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    elif text.startswith(name, i):
      return i
    i += 1
  return 0
