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
Nesting deeper than `MAX_DEPTH` is refused (a hostile file cannot exhaust the stack).

Python's C decoder reads the text as it is; only a text it refuses is cleaned (comments
and trailing commas blanked out in one pass that keeps every offset) and read again, so a
model parses at close to ``json.loads``'s speed.

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
import re
from typing import Any

import numpy as np

_INT_MIN, _UINT_MAX = -(2**63), 2**64 - 1

MAX_DEPTH = 128
"""The deepest nesting of arrays and objects read (a model needs fewer than ten)."""

# What the cleaning pass stops at: a string (skipped whole; an unclosed one runs to the
# end), a comment, a comma that blanks and comments may separate from a ] or }.
_SPECIAL = re.compile(r'"[^"\\]*(?:\\[\s\S][^"\\]*)*(?:"|\\?\Z)|/[/*]|,(?=\s*[\]}/])')
_BLANKS = re.compile(r"\s*")
_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\[\s\S])*"|[\[\]{}]')
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
_DEPTH_STEPS = np.zeros(256, np.int8)
_DEPTH_STEPS[list(b"[{")] = 1
_DEPTH_STEPS[list(b"]}")] = -1
# digits -> 0, what continues a number (. e E +) -> ., the rest -> blank: a blank and 19
# zeros are an integer literal that may not fit 64 bits.
_NUMBER_SHAPES = bytes.maketrans(
  bytes(range(256)),
  bytes(48 if chr(c).isdigit() and c < 128 else 46 if c in b".eE+" else 32 for c in range(256)),
)
_LONG_INTEGER = b"0" * 19


class JsonError(ValueError):
  """A model file that is not JSON in DxDispatch's dialect; says where."""


class JsonObject(dict[str, Any]):
  """A JSON object: the first value of each key, and `pairs`, every (key, value) in order."""

  def __init__(self, pairs: list[tuple[str, Any]] | None = None) -> None:
    pairs = [] if pairs is None else pairs
    super().__init__(pairs)
    self.pairs: list[tuple[str, Any]] = pairs
    if len(self) != len(pairs):  # a key written twice: its first value stands
      for key, value in reversed(pairs):
        self[key] = value


def _integer(text: str) -> int | float:
  value = int(text)
  return value if _INT_MIN <= value <= _UINT_MAX else float(text)


class _ConstantError(Exception):
  def __init__(self, name: str) -> None:
    self.name = name


def _refuse_constant(name: str) -> Any:
  raise _ConstantError(name)


def _comment_end(text: str, start: int) -> int:
  """Just past the comment at `start` (a line comment stops before its newline)."""
  if text.startswith("//", start):
    end = text.find("\n", start)
    return len(text) if end < 0 else end
  end = text.find("*/", start + 2)
  return len(text) if end < 0 else end + 2


def _closes_after(text: str, start: int) -> bool:
  """Whether only blanks and comments stand between `start` and a ] or }."""
  while True:
    start = _BLANKS.match(text, start).end()  # type: ignore[union-attr]
    if text.startswith(("//", "/*"), start):
      start = _comment_end(text, start)
      continue
    return text.startswith(("]", "}"), start)


def _clean(text: str) -> str:
  """`text` with comments and trailing commas blanked out (offsets and lines unchanged),
  in one pass that jumps from one string, slash or comma to the next."""
  pieces, copied, at = [], 0, 0
  while (found := _SPECIAL.search(text, at)) is not None:
    start = found.start()
    if found[0][0] == '"':
      at = found.end()
      continue
    end = _comment_end(text, start) if found[0] != "," else start + 1
    if found[0] == "," and not _closes_after(text, end):
      at = end
      continue
    pieces += [text[copied:start], re.sub(r"[^\n]", " ", text[start:end])]
    copied = at = end
  pieces.append(text[copied:])
  return "".join(pieces)


def _where(text: str, offset: int) -> str:
  line = text.count("\n", 0, offset) + 1
  column = offset - (text.rfind("\n", 0, offset) + 1) + 1
  return f"char offset:{offset}, line:{line}, column:{column}"


def _check_depth(text: str, encoded: bytes) -> None:
  """Raises JsonError where arrays and objects nest deeper than MAX_DEPTH."""
  brackets = encoded.translate(None, _NOT_BRACKETS)
  if len(brackets) <= MAX_DEPTH:
    return
  if _DEPTH_STEPS[np.frombuffer(brackets, np.uint8)].cumsum(dtype=np.int64).max() <= MAX_DEPTH:
    return  # brackets inside strings make this bound larger, never smaller: look closer
  depth = 0
  for match in _STRING_OR_BRACKET.finditer(text):
    token = match[0]
    if token in "[{":
      depth += 1
      if depth > MAX_DEPTH:
        raise JsonError(
          f"JSON parse error at {_where(text, match.start())}: arrays and objects nest"
          f" deeper than {MAX_DEPTH} levels"
        )
    elif token in "]}":
      depth -= 1


def parse(text: str) -> Any:
  """The root value of a model file's text, in DxDispatch's JSON dialect.

  Raises:
    JsonError: where the text stops being JSON, with a snippet of it.
  """
  try:
    return _decode(text, text)  # most model files are plain JSON
  except JsonError:
    cleaned = _clean(text)
    if cleaned == text:
      raise
  return _decode(cleaned, text)


def _decode(cleaned: str, text: str) -> Any:
  """The value `cleaned` holds (`text` with its comments blanked), errors placed in `text`."""
  encoded = cleaned.encode("utf-8", "surrogatepass")
  _check_depth(cleaned, encoded)
  shapes = encoded.translate(_NUMBER_SHAPES)
  long = shapes.startswith(_LONG_INTEGER) or b" " + _LONG_INTEGER in shapes
  decoder = json.JSONDecoder(
    object_pairs_hook=JsonObject,
    parse_int=_integer if long else None,
    parse_constant=_refuse_constant,
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
  except RecursionError:  # nesting within MAX_DEPTH, but too deep for the caller's stack
    raise JsonError(
      f"JSON parse error: arrays and objects nest too deeply for the stack left (at most"
      f" {MAX_DEPTH} levels are read)"
    ) from None
  return value


def _find_constant(text: str, name: str) -> int:
  """Where a NaN/Infinity literal stands (outside strings), for the message."""
  for match in re.finditer(rf'"(?:[^"\\]|\\[\s\S])*"|{re.escape(name)}', text):
    if match[0] == name:
      return match.start()
  return 0
