"""`DML_SIZE_2D`: a width and a height (UPSAMPLE_2D's ScaleSize)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from dml_jax._src.integers import as_int


@dataclasses.dataclass(frozen=True)
class Size2D:
  """`DML_SIZE_2D {Width, Height}`: two UINTs, in DirectML's struct order (width first).

  Examples:
    >>> Size2D.from_any({"Width": 3, "Height": 2})
    Size2D(width=3, height=2)
    >>> Size2D.from_any((3, 2)) == Size2D(width=3, height=2)   # (Width, Height), as the struct
    True
    >>> print(Size2D(3, 2))
    {Width:3,Height:2}
  """

  width: int
  height: int

  def __post_init__(self) -> None:
    object.__setattr__(self, "width", as_int(self.width, "ScaleSize.Width"))
    object.__setattr__(self, "height", as_int(self.height, "ScaleSize.Height"))

  @classmethod
  def from_any(cls, value: Any, what: str = "ScaleSize") -> Size2D:
    """A Size2D from itself, a mapping with "Width" and "Height" (DirectML's JSON form), or a
    pair (Width, Height) in the struct's order.

    Raises:
      TypeError: for anything else, or values that are not integers.
    """
    if isinstance(value, Size2D):
      return value
    if isinstance(value, Mapping):
      if set(value) != {"Width", "Height"}:
        raise TypeError(f'{what} must hold exactly "Width" and "Height"; got {sorted(value)}')
      return cls(as_int(value["Width"], f"{what}.Width"), as_int(value["Height"], f"{what}.Height"))
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
      return cls(as_int(value[0], f"{what}.Width"), as_int(value[1], f"{what}.Height"))
    raise TypeError(
      f"{what} must be a Size2D, {{'Width': w, 'Height': h}} or a pair (Width, Height);"
      f" got {type(value).__name__} {value!r}"
    )

  def __str__(self) -> str:
    return f"{{Width:{self.width},Height:{self.height}}}"
