"""`DML_SCALE_BIAS`: the optional ``g(x) = x * Scale + Bias`` of DirectML's element-wise operators."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def _float32(value: Any, what: str) -> float:
  """A FLOAT field: a real number rounded to float32 (to nearest; +-inf beyond the range)."""
  if isinstance(value, str) and value.lower() in ("nan", "inf", "-inf"):
    value = float(value)
  if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
    raise TypeError(f"{what} must be a number (a FLOAT); got {type(value).__name__} {value!r}")
  with np.errstate(over="ignore"):
    return float(np.float32(value))


def _bits(value: float) -> int:
  return int(np.float32(value).view(np.uint32))


@dataclasses.dataclass(frozen=True, eq=False)
class ScaleBias:
  """`DML_SCALE_BIAS {Scale, Bias}`: both FLOATs, stored rounded to float32 as DirectML holds them.

  Equality and hashing compare the float32 bits (-0.0 is not 0.0; a NaN equals itself), so
  a ScaleBias can key a cache or be a static argument of `jax.jit`.

  Examples:
    >>> ScaleBias(0.5, -1)
    ScaleBias(scale=0.5, bias=-1.0)
    >>> ScaleBias(0.1, 0).scale             # the nearest float32
    0.10000000149011612
    >>> ScaleBias.from_any({"Scale": 2, "Bias": 1}) == ScaleBias.from_any((2.0, 1.0))
    True
  """

  scale: float
  bias: float

  def __post_init__(self) -> None:
    object.__setattr__(self, "scale", _float32(self.scale, "ScaleBias.Scale"))
    object.__setattr__(self, "bias", _float32(self.bias, "ScaleBias.Bias"))

  def _key(self) -> tuple[int, int]:
    return _bits(self.scale), _bits(self.bias)

  def __eq__(self, other: object) -> bool:
    return isinstance(other, ScaleBias) and self._key() == other._key()

  def __hash__(self) -> int:
    return hash(self._key())

  def __repr__(self) -> str:
    return f"ScaleBias(scale={_show(self.scale)}, bias={_show(self.bias)})"

  def __str__(self) -> str:
    return f"{{Scale={self.scale!r},Bias={self.bias!r}}}"

  def as_dml(self) -> dict[str, float]:
    """DirectML's JSON form: ``{"Scale": ..., "Bias": ...}``."""
    return {"Scale": self.scale, "Bias": self.bias}

  @classmethod
  def from_any(cls, value: Any) -> ScaleBias:
    """A ScaleBias from itself, a (scale, bias) pair or DirectML's ``{"Scale", "Bias"}``."""
    if isinstance(value, ScaleBias):
      return value
    if isinstance(value, Mapping):
      unknown = set(value) - {"Scale", "Bias"}
      if unknown or set(value) != {"Scale", "Bias"}:
        raise ValueError(
          f"ScaleBias must have exactly the fields Scale and Bias; got {sorted(value)}"
        )
      return cls(value["Scale"], value["Bias"])
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
      return cls(value[0], value[1])
    raise TypeError(
      f"ScaleBias must be a dml.ScaleBias, a (scale, bias) pair or {{'Scale': ..., 'Bias': ...}};"
      f" got {type(value).__name__} {value!r}"
    )


def _show(value: float) -> str:
  return f"float({str(value)!r})" if not math.isfinite(value) else repr(value)
