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
import math
from collections.abc import Callable, Sequence
from typing import Any

from dml_jax._src import html as _html
from dml_jax._src.feature_level import FeatureLevel
from dml_jax._src.ops._base import OperatorDesc
from dml_jax._src.ops.gather_elements import GatherElementsDesc
from dml_jax._src.ops.gather_nd import GatherNdDesc
from dml_jax._src.ops.join import JoinDesc
from dml_jax._src.ops.reverse_subsequences import ReverseSubsequencesDesc
from dml_jax._src.tensor_desc import TensorDesc

_sizes = _html.sizes


@dataclasses.dataclass
class _Section:
  title: str
  lines: list[str]
  table: tuple[Sequence[str], list[Sequence[str]]] | None = None


# -- the output, per operator ----------------------------------------------------------


def _gather_elements(desc: GatherElementsDesc) -> list[str]:
  data, indices, axis = desc.input_tensor, desc.indices_tensor, desc.axis
  lines = [
    f"out[o] = InputTensor[o with o[{axis}] := IndicesTensor[o]]: every output element reads"
    f" one input element of its own lane along Axis {axis}.",
    f"OutputTensor.Sizes = IndicesTensor.Sizes = {_sizes(indices.sizes)}: one output element"
    f" per index.",
  ]
  if 0 <= axis < data.dimension_count == indices.dimension_count:
    lines.append(
      f"IndicesTensor.Sizes must equal InputTensor.Sizes {_sizes(data.sizes)} off Axis {axis};"
      f" on Axis {axis} it is free: {indices.sizes[axis]} index(es) per lane of"
      f" {data.sizes[axis]} element(s)."
    )
  lines.append(
    f"OutputTensor.DataType = InputTensor.DataType = {data.data_type} (not the index type"
    f" {indices.data_type})."
  )
  return lines


def _gather_nd(desc: GatherNdDesc) -> list[str]:
  data, indices = desc.input_tensor, desc.indices_tensor
  n, m, q = data.dimension_count, desc.input_dimension_count, desc.indices_dimension_count
  b, t = desc.batch_dimension_count, desc.index_tuple_size
  lines = [
    f"n = DimensionCount = {n}; m = InputDimensionCount = {m}; q = IndicesDimensionCount = {q};"
    f" B = BatchDimensionCount = {b}."
  ]
  if indices.dimension_count != n or not (1 <= m <= n and 1 <= q <= n):
    return lines + ["The counts do not fit the tensors' ranks: no output can be inferred."]
  logical_input, logical_indices = data.sizes[n - m :], indices.sizes[n - q :]
  padding = lambda k: f" (the {k} leading size(s) before it must be 1)" if k else ""  # noqa: E731
  lines += [
    f"Logical input I = InputTensor.Sizes[n - m:] = {_sizes(logical_input)}{padding(n - m)}.",
    f"Logical indices X = IndicesTensor.Sizes[n - q:] = {_sizes(logical_indices)}{padding(n - q)}.",
    f"Tuple length t = X[-1] = {t}: each index tuple holds {t} coordinate(s) into"
    f" I[B:B + t] = {_sizes(logical_input[b : b + t])}.",
  ]
  if b:
    lines.append(
      f"The first B = {b} dimension(s) of I and X are batches ({_sizes(logical_input[:b])} and"
      f" {_sizes(logical_indices[:b])}, which must be equal): the tuples of batch j index"
      f" into I[j] only."
    )
  if not 1 <= t <= m - b:
    return lines + [f"t must be in [1, m - B] = [1, {m - b}]: no output can be inferred."]
  kept = logical_input[b + t :]
  block = f"a sub-block of {math.prod(kept)} element(s)" if kept else "a single element"
  logical = logical_indices[:-1] + kept
  lines += [
    f"Each tuple selects I[B + t:] = {_sizes(kept)}: {block} is copied per tuple.",
    f"Logical output = X[:-1] ++ I[B + t:] = {_sizes(logical_indices[:-1])} ++ {_sizes(kept)}"
    f" = {_sizes(logical)} (k = {len(logical)} dimension(s)).",
  ]
  if len(logical) > n:
    return lines + [f"k = {len(logical)} > n = {n}: the output does not fit; no output."]
  output = (1,) * (n - len(logical)) + logical
  pad = f"with {n - len(logical)} leading 1(s)" if n > len(logical) else "without padding"
  lines += [
    f"Right-aligned into n = {n} dimensions {pad}: OutputTensor.Sizes = {_sizes(output)}.",
    "out[b, p, r] = I[b, X[b, p, 0], ..., X[b, p, t - 1], r] (b: batch, p: tuple position,"
    " r: within the sub-block).",
    f"OutputTensor.DataType = InputTensor.DataType = {data.data_type}.",
    f"BatchDimensionCount {b} > 0 makes this DML_OPERATOR_GATHER_ND1 (from FL 3_0)."
    if b
    else "BatchDimensionCount 0: DML_OPERATOR_GATHER_ND (from FL 2_1); GATHER_ND1 with"
    " BatchDimensionCount 0 computes the same.",
  ]
  return lines


def _reverse_subsequences(desc: ReverseSubsequencesDesc) -> list[str]:
  data, axis = desc.input_tensor, desc.axis
  lines = [
    f"OutputTensor.Sizes = InputTensor.Sizes = {_sizes(data.sizes)}; OutputTensor.DataType ="
    f" InputTensor.DataType = {data.data_type}."
  ]
  if 0 <= axis < data.dimension_count:
    size = data.sizes[axis]
    lengths = data.sizes[:axis] + (1,) + data.sizes[axis + 1 :]
    lines += [
      f"Lanes run along Axis {axis}, {size} element(s) each; there are {math.prod(lengths)}"
      f" lane(s), one length per lane: SequenceLengthsTensor.Sizes = InputTensor.Sizes with 1"
      f" on Axis = {_sizes(lengths)}.",
      f"In each lane, with L = min(length, {size}): out[i] = in[L - 1 - i] for i < L and"
      f" out[i] = in[i] for i >= L. Lengths 0 and 1 leave the lane unchanged; lengths above"
      f" {size} reverse the whole lane.",
    ]
  return lines


def _join(desc: JoinDesc) -> list[str]:
  tensors, axis = desc.input_tensors, desc.axis
  if not tensors:
    return ["No InputTensors: no output can be inferred."]
  first = tensors[0]
  rank = first.dimension_count
  if not 0 <= axis < rank or any(t.dimension_count != rank for t in tensors):
    return ["Axis or the inputs' ranks do not fit: no output can be inferred."]
  pieces = [t.sizes[axis] for t in tensors]
  output = first.sizes[:axis] + (sum(pieces),) + first.sizes[axis + 1 :]
  starts = [sum(pieces[:k]) for k in range(len(pieces))]
  placed = ", ".join(
    f"InputTensors[{k}] -> [{s}, {s + p})"
    for k, (s, p) in enumerate(zip(starts, pieces, strict=True))
  )
  lines = [
    f"OutputTensor.Sizes = InputTensors[0].Sizes with Axis {axis} replaced by"
    f" {' + '.join(map(str, pieces))} = {sum(pieces)}: {_sizes(output)}.",
    f"Along Axis {axis}: {placed}.",
    f"OutputTensor.DataType = InputTensors[0].DataType = {first.data_type}; every input must"
    f" have it (JOIN never converts; jnp.concatenate would promote).",
  ]
  if len(tensors) == 1:
    lines.append("A single input: the output is a copy.")
  return lines


_OUTPUT: dict[type, Callable[[Any], list[str]]] = {
  GatherElementsDesc: _gather_elements,
  GatherNdDesc: _gather_nd,
  ReverseSubsequencesDesc: _reverse_subsequences,
  JoinDesc: _join,
}


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
  roles = [(field, row, tensor) for field, row, tensor in desc._inputs()]
  output = desc.output_tensor if desc.output_tensor is not None else desc._infer_output()
  if output is not None:
    roles.append(("OutputTensor", "OutputTensor", output))
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
        repr(tensor),
        row.describe_dimension_counts(),
        ", ".join(map(str, row.data_types)),
        verdict,
      )
    )
    note = _index_note(field, tensor)
    if note:
      lines.append(note)
  if any(field == "IndicesTensor" for field, _, _ in roles):
    lines.append(
      "Out-of-range indices: DirectML leaves the result undefined; dml_jax applies the"
      " negative-index rule, then clamps into [0, size - 1]."
    )
  header = ("tensor", "is", "dimensions allowed", "data types allowed", "verdict")
  return _Section(title, lines, (header, rows))


# -- assembling ---------------------------------------------------------------------------


def _sections(desc: OperatorDesc, level: FeatureLevel) -> tuple[str, list[_Section]]:
  if not isinstance(desc, OperatorDesc):
    raise TypeError(f"explain takes an operator descriptor; got {type(desc).__name__}")
  title = (
    f"DML_OPERATOR_{desc.OPERATOR} (DML_{desc.OPERATOR}_OPERATOR_DESC) at DML_FEATURE_LEVEL_{level}"
  )
  fields = [f"{field} = {tensor!r}" for field, tensor, _ in desc.dml_tensors()[:-1]]
  fields += [f"{field} = {_html._show(value)}" for field, value in desc.dml_attributes()]
  inferred = desc._infer_output()
  output = []
  if desc.output_tensor is None:
    fields.append(
      "OutputTensor = (none given, none inferred)"
      if inferred is None
      else f"OutputTensor = {inferred!r} (inferred)"
    )
  else:
    given = desc.output_tensor
    agrees = inferred is not None and (given.sizes, given.data_type) == (
      inferred.sizes,
      inferred.data_type,
    )
    fields.append(f"OutputTensor = {given!r} (given)")
    if inferred is not None:
      output.append(
        f"The given OutputTensor {'matches' if agrees else 'differs from'} the sizes and data"
        f" type derived above ({inferred!r})."
      )
  output = _OUTPUT[type(desc)](desc) + output
  found = desc.violations(level)
  if found:
    count = f"{len(found)} problem{'s' if len(found) != 1 else ''}"
    verdict = [f"invalid at FL {level} ({count}):"] + [f"- {v}" for v in found]
  else:
    verdict = [f"valid: DirectML's CreateOperator would accept this descriptor at FL {level}."]
  return title, [
    _Section("Fields:", fields),
    _Section("Output:", output),
    _level_section(desc, level),
    _Section("Validation:", verdict),
  ]


def explain(desc: OperatorDesc, feature_level: Any = None) -> str:
  """The descriptor in words: what it computes, its output sizes derived, the level's rules.

  Args:
    desc: an operator descriptor (GatherElementsDesc, GatherNdDesc,
      ReverseSubsequencesDesc, JoinDesc).
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


def explain_html(desc: OperatorDesc, feature_level: Any = None) -> _html.Html:
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
