"""A descriptor explained in words: where each output size comes from, which rules apply.

`explain(desc, feature_level)` returns text; `explain_html` the same as HTML
for a notebook. Both say what the operator computes, derive the OutputTensor's
sizes and data type step by step from the fields, name the tensor-support table
in force at the feature level with what it allows for each tensor, and end with
the validation result.

Examples:
  >>> from dml_jax import JoinDesc, TensorDesc
  >>> desc = JoinDesc((TensorDesc("FLOAT32", (1, 2)), TensorDesc("FLOAT32", (1, 3))), axis=1)
  >>> print(explain(desc, "3_0"))  # doctest: +ELLIPSIS
  DML_OPERATOR_JOIN (DML_JOIN_OPERATOR_DESC) at DML_FEATURE_LEVEL_3_0
  <BLANKLINE>
  Fields:
    InputTensors[0] = FLOAT32[1,2]
    InputTensors[1] = FLOAT32[1,3]
    Axis = 1
    InputCount = 2
    OutputTensor = FLOAT32[1,5] (inferred)
  <BLANKLINE>
  Output:
    OutputTensor.Sizes = InputTensors[0].Sizes with Axis 1 replaced by 2 + 3 = 5: {1,5}.
  ...
  Feature level 3_0:
    The tensor-support table in force is "DML_FEATURE_LEVEL_3_0 and above" (DML_OPERATOR_JOIN has tables from 1_0, 2_1, 3_0, 3_1, 4_1).
  ...
  Validation:
    invalid at FL 3_0 (...):
    - InputTensors[0].DimensionCount: DML_OPERATOR_JOIN supports 4 to 5 dimensions; got 2 (at FL 3_0). Hint: 2 dimensions are supported from FL 3_1
  ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from dml_jax._src import html as _html
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.errors import counted
from dml_jax._src.feature_level import FeatureLevel, FeatureLevelLike
from dml_jax._src.tensor_desc import TensorDesc


@dataclasses.dataclass
class _Section:
  title: str
  lines: list[str]
  table: tuple[Sequence[str], Sequence[Sequence[str]]] | None = None


# -- what the feature level allows ------------------------------------------------------


def _index_note(field: str, tensor: TensorDesc) -> str | None:
  if field == "IndicesTensor":
    if tensor.data_type.is_signed_integer:
      return (
        f"IndicesTensor is {tensor.data_type} (signed): negative indices count from the end"
        " (-1 is the last element); signed index types exist from FL 3_0."
      )
    return (
      f"IndicesTensor is {tensor.data_type} (unsigned): indices never wrap; the largest value"
      " is a large positive index, not -1."
    )
  if field == "SequenceLengthsTensor":
    return f"SequenceLengthsTensor is {tensor.data_type}: lengths are unsigned."
  return None


def _level_section(desc: OperatorDesc, level: FeatureLevel) -> _Section:
  support = desc.SUPPORT
  table = support.at(level)
  title = f"Feature level {level}:"
  if table is None:
    return _Section(
      title,
      [
        f"DML_OPERATOR_{desc.OPERATOR} does not exist at FL {level}; it was introduced at"
        f" FL {support.introduced}."
      ],
    )
  start = max(s for s in support.tables if s <= level)
  limit = level.max_dimension_count
  lines = [
    f'The tensor-support table in force is "DML_FEATURE_LEVEL_{start} and above"'
    f" (DML_OPERATOR_{desc.OPERATOR} has tables from"
    f" {', '.join(str(s) for s in sorted(support.tables))}).",
    f"Every tensor may have at most {limit} dimensions at FL {level}"
    f" (DML_TENSOR_DIMENSION_COUNT_MAX{'1' if limit == 8 else ''}: 8 from FL 3_0, 5 before).",
  ]
  roles = list(desc.dml_inputs())
  roles += [(field, row, t) for field, row, t in desc.dml_outputs(inferred=True) if t is not None]
  rows = []
  for field, row_name, tensor in roles:
    row = table[row_name]
    low, high = row.dimension_counts
    problems = []
    if not low <= tensor.dimension_count <= high:
      problems.append(f"{tensor.dimension_count} dimensions")
    if tensor.data_type not in row.data_types:
      problems.append(str(tensor.data_type))
    verdict = "ok" if not problems else "not allowed: " + ", ".join(problems)
    rows.append(
      (
        field,
        str(tensor),
        row.describe_dimension_counts(),
        ", ".join(map(str, row.data_types)),
        verdict,
      )
    )
    note = _index_note(field, tensor)
    if note:
      lines.append(note)
  if any(field == "IndicesTensor" for field, _, _ in roles):
    lines.append(f"Out-of-range indices: {desc.OUT_OF_RANGE_INDICES}")
  header = ("tensor", "is", "dimensions allowed", "data types allowed", "verdict")
  return _Section(title, lines, (header, rows))


# -- assembling ---------------------------------------------------------------------------


def _sections(desc: OperatorDesc, level: FeatureLevel) -> tuple[str, list[_Section]]:
  if not isinstance(desc, OperatorDesc):
    raise TypeError(f"explain takes an operator descriptor; got {type(desc).__name__}")
  title = (
    f"DML_OPERATOR_{desc.OPERATOR} (DML_{desc.OPERATOR}_OPERATOR_DESC) at DML_FEATURE_LEVEL_{level}"
  )
  fields = [f"{field} = {tensor}" for field, _, tensor in desc.dml_inputs()]
  fields += [f"{field} = {_html.show(value)}" for field, value in desc.dml_attributes()]
  inferred = {field: t for field, _, t in desc.dml_outputs(inferred=True)}
  given = {field: t for field, _, t in desc.dml_outputs() if t is not None}
  notes = []
  if not given:
    fields += [
      f"{field} = (none given, none inferred)" if t is None else f"{field} = {t} (inferred)"
      for field, t in inferred.items()
    ]
  for field, tensor in given.items():
    fields.append(f"{field} = {tensor} (given)")
    expected = _inferred_output(desc, field)
    if expected is not None:
      agrees = (tensor.sizes, tensor.data_type) == (expected.sizes, expected.data_type)
      notes.append(
        f"The given {field} {'matches' if agrees else 'differs from'} the sizes and data"
        f" type derived above ({expected})."
      )
  output = desc.explain_output() + notes
  found = desc.violations(level)
  if found:
    count = counted(len(found), "problem")
    verdict = [f"invalid at FL {level} ({count}):"] + [f"- {v}" for v in found]
  else:
    verdict = [f"valid: DirectML's CreateOperator would accept this descriptor at FL {level}."]
  return title, [
    _Section("Fields:", fields),
    _Section("Output:", output),
    _level_section(desc, level),
    _Section("Validation:", verdict),
  ]


def _inferred_output(desc: OperatorDesc, field: str) -> TensorDesc | None:
  """The output `field` (OutputTensor, OutputTensors[1], ...) as the fields infer it."""
  labels = [label for label, _, _ in desc.dml_outputs(inferred=True)]
  inferred = desc.infer_outputs()
  if inferred is None or field not in labels or labels.index(field) >= len(inferred):
    return None
  return inferred[labels.index(field)]


def explain(desc: OperatorDesc, feature_level: FeatureLevelLike = None) -> str:
  """The descriptor in words: what it computes, its output sizes derived, the level's rules.

  Args:
    desc: an operator descriptor (any registered operator's).
    feature_level: the DML_FEATURE_LEVEL whose rules to apply (default: newest).

  Returns:
    Several paragraphs of text: Fields, Output, Feature level, Validation.

  Raises:
    TypeError: if `desc` is not an operator descriptor.

  Examples:
    >>> from dml_jax import GatherElementsDesc, TensorDesc
    >>> desc = GatherElementsDesc(TensorDesc("FLOAT32", (3, 3)), TensorDesc("UINT32", (2, 3)), axis=0)
    >>> print(explain(desc).split("Output:")[1].split("Feature level")[0].strip())
    out[o] = InputTensor[o with o[0] := IndicesTensor[o]]: every output element reads one input element of its own lane along Axis 0.
      OutputTensor.Sizes = IndicesTensor.Sizes = {2,3}: one output element per index.
      IndicesTensor.Sizes must equal InputTensor.Sizes {3,3} off Axis 0; on Axis 0 it is free: 2 index(es) per lane of 3 element(s).
      OutputTensor.DataType = InputTensor.DataType = FLOAT32 (not the index type UINT32).
  """
  level = FeatureLevel.from_any(feature_level)
  title, sections = _sections(desc, level)
  parts = [title]
  for section in sections:
    text = [section.title] + [f"  {line}" for line in section.lines]
    if section.table is not None:
      header, rows = section.table
      text.append(_html.text_table(header, rows, "  "))
    parts.append("\n".join(text))
  return "\n\n".join(parts)


def explain_html(desc: OperatorDesc, feature_level: FeatureLevelLike = None) -> _html.Html:
  """`explain` as HTML for a notebook (its repr is the text of `explain`).

  Examples:
    >>> from dml_jax import JoinDesc, TensorDesc
    >>> page = explain_html(JoinDesc((TensorDesc("INT8", (2,)),), axis=0))
    >>> page.markup.startswith("<div")
    True
    >>> "A single input: the output is a copy." in page.text
    True
  """
  level = FeatureLevel.from_any(feature_level)
  title, sections = _sections(desc, level)
  parts = [f'<div class="dml-jax-explain"><div style="font-weight:600">{_html.escape(title)}</div>']
  for section in sections:
    items = "".join(f"<li>{_html.escape(line)}</li>" for line in section.lines)
    parts.append(f'<div style="margin-top:0.4em"><b>{_html.escape(section.title)}</b>')
    parts.append(f'<ul style="margin:0.2em 0">{items}</ul>')
    if section.table is not None:
      parts.append(_html.table(*section.table))
    parts.append("</div>")
  parts.append("</div>")
  return _html.Html("".join(parts), explain(desc, level))
