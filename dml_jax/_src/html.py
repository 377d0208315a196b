"""HTML for notebooks: tables of DML fields, validation status and violations.

Jupyter shows an object through its ``_repr_html_`` method. The descriptors
(`TensorDesc`, every `OperatorDesc`), `DmlValidationError.table()` and
`explain_html` render through the helpers here. The markup is plain tables with
inline styles that read in light and dark themes; every value is escaped. This
module imports nothing from the package, so any module may import it.

Examples:
  >>> page = Html("<b>x &lt; 1</b>", "x < 1")
  >>> page._repr_html_()
  '<b>x &lt; 1</b>'
  >>> page
  x < 1
  >>> page == "x < 1"
  True
  >>> print(text_table(("field", "value"), [("Axis", 0), ("DataType", "FLOAT32")]))
  field     value
  Axis      0
  DataType  FLOAT32
"""

from __future__ import annotations

import enum
import html
from collections.abc import Iterable, Sequence
from typing import Any

_TABLE = "border-collapse:collapse;margin:0.3em 0"
_CELL = "text-align:left;padding:0.1em 0.6em"
_HEAD = _CELL + ";font-weight:600"
_OK = "color:#1a7f37"
_BAD = "color:#cf222e"

OK_MARK = "\u2713"  # check mark
BAD_MARK = "\u2717"  # ballot x


class Html(str):
  """Text for terminals that a notebook renders as HTML.

  A `str` holding the plain-text form (what ``print`` and ``repr`` show), with
  the HTML in `markup` (what ``_repr_html_`` returns).

  Attributes:
    markup: the HTML.
    text: the plain-text form (the string itself).
  """

  markup: str

  def __new__(cls, markup: str, text: str) -> Html:
    self = super().__new__(cls, text)
    self.markup = markup
    return self

  @property
  def text(self) -> str:
    return str.__str__(self)

  def _repr_html_(self) -> str:
    return self.markup

  def __repr__(self) -> str:
    return self.text

  def __reduce__(self):
    return type(self), (self.markup, self.text)


def escape(value: Any) -> str:
  """`str(value)` with &, <, > and quotes escaped."""
  return html.escape(str(value), quote=True)


def code(value: Any) -> str:
  """`value` escaped, in a <code> element."""
  return f"<code>{escape(value)}</code>"


def ok(text: str) -> str:
  return f'<span style="{_OK}">{OK_MARK} {escape(text)}</span>'


def bad(text: str) -> str:
  return f'<span style="{_BAD}">{BAD_MARK} {escape(text)}</span>'


def table(
  header: Sequence[str],
  rows: Iterable[Sequence[str]],
  *,
  caption: str | None = None,
  escaped: bool = False,
) -> str:
  """An HTML table; cells are escaped unless `escaped` says they are markup already."""
  cell = (lambda v: str(v)) if escaped else escape
  parts = [f'<table style="{_TABLE}">']
  if caption:
    parts.append(f'<caption style="text-align:left;font-weight:600">{caption}</caption>')
  parts.append("<tr>" + "".join(f'<th style="{_HEAD}">{escape(h)}</th>' for h in header) + "</tr>")
  for row in rows:
    parts.append("<tr>" + "".join(f'<td style="{_CELL}">{cell(v)}</td>' for v in row) + "</tr>")
  parts.append("</table>")
  return "".join(parts)


def text_table(header: Sequence[str], rows: Iterable[Sequence[Any]], indent: str = "") -> str:
  """Columns aligned with spaces, two between columns, no trailing blanks."""
  rows = [tuple(map(str, header))] + [tuple(map(str, row)) for row in rows]
  widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
  return "\n".join(
    (indent + "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True))).rstrip()
    for row in rows
  )


def sizes(values: Sequence[int] | None) -> str:
  """DirectML's brace notation: {2,3}."""
  return "null" if values is None else "{" + ",".join(map(str, values)) + "}"


# -- tensors ---------------------------------------------------------------------


def _flags(flags: Any) -> str:
  value = int(flags)
  if value == 0:
    return "DML_TENSOR_FLAG_NONE (0x0)"
  if value == 1:
    return "DML_TENSOR_FLAG_OWNED_BY_DML (0x1)"
  return f"{hex(value)} (unknown bits; the only flag is OWNED_BY_DML = 0x1)"


def tensor_rows(tensor: Any, packed_strides: Sequence[int]) -> list[tuple[str, str]]:
  """(DML field, value) rows of a `DML_BUFFER_TENSOR_DESC`."""
  data_type = tensor.data_type
  strides = (
    f"null (packed row-major: {sizes(packed_strides)})"
    if tensor.strides is None
    else sizes(tensor.strides)
  )
  minimum = tensor.minimum_size_in_bytes
  total = tensor.total_tensor_size_in_bytes
  alignment = tensor.guaranteed_base_offset_alignment
  return [
    (
      "DataType",
      f"DML_TENSOR_DATA_TYPE_{data_type.name} ({int(data_type)}), {data_type.size_in_bits}-bit",
    ),
    ("Flags", _flags(tensor.flags)),
    ("DimensionCount", str(tensor.dimension_count)),
    ("Sizes", f"{sizes(tensor.sizes)} ({tensor.element_count} elements)"),
    ("Strides", strides),
    (
      "TotalTensorSizeInBytes",
      f"{total} (DMLCalcBufferTensorSize: {minimum})"
      if total != minimum
      else f"{total} (= DMLCalcBufferTensorSize)",
    ),
    (
      "GuaranteedBaseOffsetAlignment",
      f"{alignment}" if alignment else "0 (no promise beyond the 16-byte minimum)",
    ),
  ]


def tensor_desc(tensor: Any, packed_strides: Sequence[int]) -> Html:
  """The HTML and text forms of a `TensorDesc`."""
  rows = tensor_rows(tensor, packed_strides)
  caption = f"DML_BUFFER_TENSOR_DESC {code(str(tensor))}"
  markup = table(("field", "value"), rows, caption=caption)
  text = f"DML_BUFFER_TENSOR_DESC {tensor}\n" + text_table(("field", "value"), rows, "  ")
  return Html(markup, text)


# -- operators and violations -------------------------------------------------------


def violation_rows(violations: Iterable[Any]) -> list[tuple[str, str, str, str]]:
  """(field, rule, found, hint) rows, one per violated rule."""
  return [(v.field, v.rule, show(v.value), v.hint or "") for v in violations]


def show(value: Any) -> str:
  """A field value as DirectML's docs write it: {1,2} for arrays, names for enums."""
  if isinstance(value, tuple):
    return "{" + ",".join(show(v) for v in value) + "}"
  if isinstance(value, enum.Enum):
    return value.name or str(value)
  if isinstance(value, bool):  # a BOOL, as C writes it
    return "TRUE" if value else "FALSE"
  if value is None:  # an optional struct left out (ELEMENT_WISE_IDENTITY's ScaleBias)
    return "null"
  return str(value)


def violations(subject: str, feature_level: str, found: Sequence[Any]) -> Html:
  """A table of violated rules of `subject` ("DML_OPERATOR_JOIN"), as `DmlValidationError.table()`
  shows them."""
  rows = violation_rows(found)
  header = ("field", "rule", "found", "hint")
  count = f"{len(rows)} problem{'s' if len(rows) != 1 else ''}"
  title = f"{subject} is invalid at DML_FEATURE_LEVEL_{feature_level} ({count})"
  markup = table(header, rows, caption=bad(title))
  text = f"{title}:\n" + text_table(header, rows, "  ")
  return Html(markup, text)


def status(operator: str, feature_level: str, found: Sequence[Any]) -> Html:
  """Valid, or the violations table."""
  if found:
    return violations(f"DML_OPERATOR_{operator}", feature_level, found)
  text = f"valid at DML_FEATURE_LEVEL_{feature_level}"
  return Html(f"<div>{ok(text)}</div>", text)


def operator_desc(
  operator: str,
  struct: str,
  tensors: Sequence[tuple[str, str, Any, bool]],
  attributes: Sequence[tuple[str, Any]],
  feature_level: str,
  found: Sequence[Any],
) -> Html:
  """The HTML and text forms of an operator descriptor.

  Args:
    operator: the operator name (GATHER_ELEMENTS).
    struct: the C struct (DML_GATHER_ELEMENTS_OPERATOR_DESC).
    tensors: (DML field, kind, TensorDesc or None, inferred) per tensor.
    attributes: (DML field, value) per attribute.
    feature_level: the level validated at.
    found: the violations at that level.
  """

  def mark(field: str) -> str:
    broken = [v for v in found if v.field == field or v.field.startswith(field + ".")]
    return BAD_MARK if broken else OK_MARK

  header = ("field", "kind", "DataType", "Sizes", "Strides", "TotalTensorSizeInBytes", "Flags", "")
  rows = []
  for field, kind, tensor, inferred in tensors:
    kind += " (inferred)" if inferred else ""
    if tensor is None:
      rows.append((field, kind, "-", "cannot be inferred", "-", "-", "-", BAD_MARK))
      continue
    rows.append(
      (
        field,
        kind,
        tensor.data_type.name,
        sizes(tensor.sizes),
        sizes(tensor.strides),
        str(tensor.total_tensor_size_in_bytes),
        (tensor.flags.name or hex(tensor.flags)) if tensor.flags else "NONE",
        mark(field),
      )
    )
  attribute_rows = [(field, "attribute", show(value), mark(field)) for field, value in attributes]
  title = f"DML_OPERATOR_{operator} ({struct})"
  result = status(operator, feature_level, found)
  markup = (
    f'<div class="dml-jax-operator"><div style="font-weight:600">{escape(title)}</div>'
    + table(header, rows)
    + table(("field", "kind", "value", ""), attribute_rows)
    + result.markup
    + "</div>"
  )
  text = "\n".join(
    [
      title,
      text_table(header, rows, "  "),
      text_table(("field", "kind", "value", ""), attribute_rows, "  "),
      result.text,
    ]
  )
  return Html(markup, text)
