"""DirectML's small enums read from what users write: the member, its name with or without
DirectML's C prefix (any case), or its value."""

from __future__ import annotations

import enum
from typing import Any, SupportsIndex, TypeVar

from dml_jax._src.integers import as_int

Member = TypeVar("Member", bound=enum.IntEnum)


def member(cls: type[Member], value: Any, *, what: str, prefix: str) -> Member:
  """The member of `cls` that `value` is or names (`what` names the field in errors).

  Raises:
    ValueError: for a name or value that is no member (the message lists them).
    TypeError: for anything but a member, a string or an integer.

  Examples:
    >>> from dml_jax import AxisDirection
    >>> member(AxisDirection, "dml_axis_direction_decreasing", what="AxisDirection",
    ...        prefix="DML_AXIS_DIRECTION_")
    <AxisDirection.DECREASING: 1>
  """
  if isinstance(value, cls):
    return value
  names = ", ".join(f"{m.name} ({m.value})" for m in cls)
  if isinstance(value, str):
    name = value.upper().removeprefix(prefix)
    if name in cls.__members__:
      return cls[name]
    raise ValueError(f"{what} must be one of {names}, with or without {prefix}; got {value!r}")
  if isinstance(value, bool) or not isinstance(value, int | SupportsIndex):
    article = "an" if cls.__name__[0] in "AEIOU" else "a"
    raise TypeError(
      f"{what} must be {article} {cls.__name__}, its name or its value ({names});"
      f" got {type(value).__name__} {value!r}"
    )
  number = as_int(value, what)
  if number not in cls._value2member_map_:
    raise ValueError(f"{what} must be one of {names}; got {number}")
  return cls(number)
