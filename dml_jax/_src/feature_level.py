"""`DML_FEATURE_LEVEL` and the per-level tensor-support tables, as data."""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping
from typing import Any

from dml_jax._src.dtypes import DataType


class FeatureLevel(enum.IntEnum):
  """`DML_FEATURE_LEVEL`, with DirectML's values (0xMm00).

  Examples:
    >>> FeatureLevel.from_any("3_0")
    <FeatureLevel.FL_3_0: 12288>
    >>> str(FeatureLevel.from_any(0x6400))
    '6_4'
  """

  FL_1_0 = 0x1000
  FL_2_0 = 0x2000
  FL_2_1 = 0x2100
  FL_3_0 = 0x3000
  FL_3_1 = 0x3100
  FL_4_0 = 0x4000
  FL_4_1 = 0x4100
  FL_5_0 = 0x5000
  FL_5_1 = 0x5100
  FL_5_2 = 0x5200
  FL_6_0 = 0x6000
  FL_6_1 = 0x6100
  FL_6_2 = 0x6200
  FL_6_3 = 0x6300
  FL_6_4 = 0x6400

  def __str__(self) -> str:
    return self.name.removeprefix("FL_")

  @property
  def max_dimension_count(self) -> int:
    """DML_TENSOR_DIMENSION_COUNT_MAX (5) before 3_0, ..._MAX1 (8) from 3_0."""
    return 8 if self >= FeatureLevel.FL_3_0 else 5

  @classmethod
  def from_any(cls, value: Any) -> FeatureLevel:
    """Accepts None (the newest level), a FeatureLevel, 0x3000, '3_0', '3.0' or 'DML_FEATURE_LEVEL_3_0'."""
    if value is None:
      return NEWEST
    if isinstance(value, FeatureLevel):
      return value
    if isinstance(value, int) and not isinstance(value, bool):
      try:
        return cls(value)
      except ValueError:
        pass
    elif isinstance(value, str):
      match = re.fullmatch(r"(?:DML_FEATURE_LEVEL_|FL_?)?(\d)[._](\d)", value.strip(), re.I)
      if match and f"FL_{match[1]}_{match[2]}" in cls.__members__:
        return cls[f"FL_{match[1]}_{match[2]}"]
    else:
      raise TypeError(
        f"feature_level must be a FeatureLevel, an int or a string such"
        f" as '3_0'; got {type(value).__name__}"
      )
    known = ", ".join(str(level) for level in cls)
    raise ValueError(f"unknown DML_FEATURE_LEVEL {value!r}; known levels: {known}")


NEWEST = FeatureLevel.FL_6_4

as_level = FeatureLevel.from_any
"""A `feature_level` argument as a FeatureLevel (None: the newest). Bound once: looking a
method up on an Enum class costs more than the call (about 0.1 us per dispatch)."""


@dataclasses.dataclass(frozen=True)
class TensorSupport:
  """One row of an operator's tensor-support table."""

  dimension_counts: tuple[int, int]  # inclusive (min, max)
  data_types: tuple[DataType, ...]

  def describe_dimension_counts(self) -> str:
    low, high = self.dimension_counts
    return str(low) if low == high else f"{low} to {high}"


def support(
  dimension_counts: tuple[int, int] | int, data_types: tuple[DataType, ...]
) -> TensorSupport:
  if isinstance(dimension_counts, int):
    dimension_counts = (dimension_counts, dimension_counts)
  return TensorSupport(dimension_counts, data_types)


@dataclasses.dataclass(frozen=True)
class SupportTable:
  """An operator's tensor-support tables, keyed by the level each applies from.

  A table headed "FL x.y and above" applies from x.y until a newer table.
  """

  operator: str
  tables: Mapping[FeatureLevel, Mapping[str, TensorSupport]]

  @property
  def introduced(self) -> FeatureLevel:
    return min(self.tables)

  def at(self, level: FeatureLevel) -> Mapping[str, TensorSupport] | None:
    """The table in force at `level`, or None before the operator existed."""
    applicable = [start for start in self.tables if start <= level]
    return self.tables[max(applicable)] if applicable else None
