"""DmlValidationError: every violated rule of a descriptor, reported at once."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from dml_jax._src import html as _html


@dataclasses.dataclass(frozen=True)
class Violation:
  """One broken rule: the DML field, the rule, the value found, the level."""

  field: str
  rule: str
  value: Any
  feature_level: str
  hint: str | None = None

  def __str__(self) -> str:
    text = f"{self.field}: {self.rule}; got {_show(self.value)} (at FL {self.feature_level})"
    return f"{text}. Hint: {self.hint}" if self.hint else text


def _show(value: Any) -> str:
  if isinstance(value, tuple):
    return "{" + ",".join(_show(v) for v in value) + "}"
  return str(value)


class DmlValidationError(ValueError):
  """A DirectML operator descriptor that DirectML would reject.

  `violations` lists every broken rule; the message has one line per rule.
  """

  def __init__(self, operator: str, feature_level: str, violations: Sequence[Violation]):
    self.operator = operator
    self.feature_level = feature_level
    self.violations = tuple(violations)
    count = len(self.violations)
    lines = [
      f"DML_OPERATOR_{operator} descriptor is invalid at DML_FEATURE_LEVEL_{feature_level}"
      f" ({count} problem{'s' if count != 1 else ''}):"
    ]
    lines += [f"  - {v}" for v in self.violations]
    super().__init__("\n".join(lines))

  def __reduce__(self):
    return type(self), (self.operator, self.feature_level, self.violations)

  def table(self) -> _html.Html:
    """The violated rules as a table: field, rule, value found, hint.

    A notebook renders it as HTML (Jupyter shows a raised exception as text
    only; catch the error and end a cell with ``error.table()``); its repr is
    an aligned text table.

    Examples:
      >>> error = DmlValidationError("JOIN", "3_0", [Violation("Axis", "must be in [0, 4)", 4, "3_0")])
      >>> error.table()
      DML_OPERATOR_JOIN is invalid at DML_FEATURE_LEVEL_3_0 (1 problem):
        field  rule               found  hint
        Axis   must be in [0, 4)  4
    """
    return _html.violations(self.operator, self.feature_level, self.violations)

  def _repr_html_(self) -> str:
    return self.table().markup


class Checker:
  """Collects violations for one descriptor at one feature level."""

  def __init__(self, feature_level: Any):
    self.feature_level = str(feature_level)
    self.violations: list[Violation] = []

  def fail(self, field: str, rule: str, value: Any, hint: str | None = None) -> None:
    self.violations.append(Violation(field, rule, value, self.feature_level, hint))

  def expect(self, ok: bool, field: str, rule: str, value: Any, hint: str | None = None) -> bool:
    if not ok:
      self.fail(field, rule, value, hint)
    return ok
