"""dml_jax's errors: one base class, `DmlError`, and what each kind says.

`DmlValidationError` lists every rule a descriptor breaks, at once;
`UnknownOperatorError` every operator name the registry lacks; `DmlBindingError` a
buffer binding that breaks a binding rule; `DmlIndexError`
(in `checked`) the out-of-range indices `dml.checked` found. Each is also the
built-in exception a caller would catch without knowing dml_jax (ValueError,
KeyError, IndexError), and shows its public path, ``dml_jax.X``, in tracebacks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, TypeVar

from dml_jax._src import html as _html

_C = TypeVar("_C", bound=type)


def counted(count: int, noun: str) -> str:
  """`count` and `noun`, plural unless the count is 1.

  Examples:
    >>> counted(1, "problem"), counted(3, "problem")
    ('1 problem', '3 problems')
  """
  return f"{count} {noun}{'' if count == 1 else 's'}"


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


def public(cls: _C) -> _C:
  """Shows `cls` as ``dml_jax.Name`` in tracebacks and reprs (it is re-exported there)."""
  cls.__module__ = "dml_jax"
  return cls


@public
class DmlError(Exception):
  """Base of the errors dml_jax raises on its own account."""


@public
class UnknownOperatorError(DmlError, KeyError):
  """Operator names the registry does not have, all of them at once."""

  def __init__(self, names: Sequence[str], known: Sequence[str]):
    self.names = tuple(names)
    self.known = tuple(known)
    count = len(self.names)
    super().__init__(
      f"{counted(count, 'unknown DirectML operator')}:"
      f" {', '.join(map(repr, self.names))}; dml_jax has {', '.join(self.known)}"
    )

  def __str__(self) -> str:  # KeyError would quote the message
    return str(self.args[0])

  def __reduce__(self):
    return type(self), (self.names, self.known)


@public
class DmlValidationError(DmlError, ValueError):
  """A DirectML operator descriptor that DirectML would reject.

  `violations` lists every broken rule; the message has one line per rule.
  `operator` is the operator's name, or None for a lone tensor description
  (`TensorDesc.validate`).
  """

  def __init__(self, operator: str | None, feature_level: str, violations: Sequence[Violation]):
    self.operator = operator
    self.feature_level = feature_level
    self.violations = tuple(violations)
    count = len(self.violations)
    lines = [
      f"{self.subject} is invalid at DML_FEATURE_LEVEL_{feature_level}"
      f" ({counted(count, 'problem')}):"
    ]
    lines += [f"  - {v}" for v in self.violations]
    super().__init__("\n".join(lines))

  def __reduce__(self):
    return type(self), (self.operator, self.feature_level, self.violations)

  @property
  def subject(self) -> str:
    """What is invalid: "DML_OPERATOR_JOIN descriptor", or "DML_BUFFER_TENSOR_DESC"."""
    if self.operator is None:
      return "DML_BUFFER_TENSOR_DESC"
    return f"DML_OPERATOR_{self.operator} descriptor"

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
    subject = "DML_BUFFER_TENSOR_DESC" if self.operator is None else f"DML_OPERATOR_{self.operator}"
    return _html.violations(subject, self.feature_level, self.violations)

  def _repr_html_(self) -> str:
    return self.table().markup


@public
class DmlBindingError(DmlError, ValueError):
  """A buffer binding DirectML would refuse: misaligned, too small, overlapping or aliased.

  The message names the tensor, the binding and the numbers, and says what to do.
  """


@public
class DmlModelError(DmlError, ValueError):
  """A DxDispatch model file that dml_jax cannot run, with every problem found, at once.

  Each line of `problems` names where the problem is (a resource, a dispatchable and its
  operator type, a command by index), the field, and what is wrong.
  """

  def __init__(self, source: str, problems: Sequence[str]):
    self.source = source
    self.problems = tuple(problems)
    count = len(self.problems)
    lines = [f"{source} cannot run ({counted(count, 'problem')}):"]
    lines += [f"  - {p}" for p in self.problems]
    super().__init__("\n".join(lines))

  def __reduce__(self):
    return type(self), (self.source, self.problems)


@public
class DmlCommandError(DmlError, ValueError):
  """A model's command that failed while the commands ran: the run stops there.

  `index` is the command's position in the model's command list; the commands before it
  ran (their output stands), none after it did.
  """

  def __init__(self, index: int, message: str):
    self.index = index
    super().__init__(message)

  def __reduce__(self):
    return type(self), (self.index, self.args[0])


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
