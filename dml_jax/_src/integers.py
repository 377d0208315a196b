"""Integer arguments: DirectML's UINT and INT values and arrays, refused by name when not integers.

Examples:
  >>> as_int_tuple([2, 3], "Sizes")
  (2, 3)
  >>> as_int(2.5, "Axis")
  Traceback (most recent call last):
  ...
  TypeError: Axis must be an integer; got float 2.5
"""

from __future__ import annotations

import numbers
import operator
from typing import Any

import jax


def as_int(value: Any, what: str) -> int:
  """An integer (any `operator.index` type, not bool) as an int; TypeError naming `what`."""
  if type(value) is int:  # the common case, first: dispatch calls this on every call
    return value
  if isinstance(value, bool):
    raise TypeError(f"{what} must be an integer; got bool {value!r}")
  try:
    return operator.index(value)
  except TypeError:
    if isinstance(value, jax.core.Tracer):
      raise TypeError(
        f"{what} must be a static integer: it fixes the output's shape, so it cannot be a"
        f" traced value ({value}). Pass it as a Python int, e.g. mark the argument static:"
        " jax.jit(f, static_argnames=...)"
      ) from None
    raise TypeError(f"{what} must be an integer; got {type(value).__name__} {value!r}") from None


def as_int_tuple(values: Any, what: str) -> tuple[int, ...]:
  """A sequence of integers (a list, a tuple, a 1-D NumPy array) as a tuple of ints."""
  if isinstance(values, numbers.Number):
    raise TypeError(f"{what} must be a sequence of integers; got the scalar {values!r}")
  if isinstance(values, str | bytes) or not hasattr(values, "__iter__"):
    raise TypeError(
      f"{what} must be a sequence of integers; got {type(values).__name__} {values!r}"
    )
  return tuple(as_int(v, f"{what}[{i}]") for i, v in enumerate(values))
