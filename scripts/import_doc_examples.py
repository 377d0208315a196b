#!/usr/bin/env python3
"""Imports DirectML's documented examples into dml_jax's fixture file.

Adding an operator's examples: transcribe its page first, one page entry with its examples
in ``scripts/directml_worked_examples.json`` (the keys below: the fields and tensors as
the page prints them, ``corrected_fields``, ``page_slip``, ``arguments``, ``notes``), then
run this script. Extend the importer only where the transcription's keys cannot say what
the operator needs, and then by what its descriptor declares (field kinds, output fields)
or by a new transcription key, never by the operator's name. An operator in the registry
without examples in the transcription stops the import (and ``--check``).

Reads the developers' transcription of DirectML's worked examples,
``scripts/directml_worked_examples.json`` (format ``dml_jax-transcription/1``), keeps
the examples of the operators in dml_jax's operator registry, and writes them to
``dml_jax/_src/fixtures/directml_examples.json`` in the ``dml_jax-fixtures/1``
format.

The transcription holds one entry per page (``page``, ``repository``, ``path``,
``commit``, and ``notes`` that apply to each of its examples) with its ``examples``:

* ``op`` (the DML_OPERATOR_* name; ``TENSOR_STRIDES`` for the strides page),
  ``heading`` (the page's), ``slug`` (the fixture id's second half);
* ``fields``: the DML fields as the page gives them; ``corrected_fields``: those the
  example's own sizes and data contradict, with the value they need;
* ``tensors``: by DML field name, the outputs among them (the descriptor's output
  fields: ``OutputTensor``, ``OutputTensors``' list, or several, such as
  NONZERO_COORDINATES' ``OutputCountTensor`` and ``OutputCoordinatesTensor``), each
  ``{data_type, sizes, data}`` (data null for a shape-only example); an optional input
  the example does not pass is left out; ``printed_sizes``: sizes the page prints that
  its data contradict;
* ``arguments``: the functional API's keywords that no descriptor field holds, with the
  values the example implies (``sizes`` and ``data_type`` of a generated output, a cast's
  ``data_type``, ``coordinate_size``);
* ``documented_output`` (false: computed, not on the page), ``shape_only``,
  ``page_slip`` (what the page gets wrong, where it does), ``corrected_because`` (why
  ``corrected_fields`` hold the values they do, where no rule of the importer's says it),
  ``kept_because`` (why the example is kept as the page gives it despite its
  ``page_slip``: the erratum is then ``{issue: page_slip, resolution: kept_because}``),
  ``notes``.

An INT or UINT field (or array) may hold the name of a C limit the page prints
(``INT32_MIN``, ``INT32_MAX``, ``UINT32_MAX``); the fixture has its value. An enum field
holds a name of the descriptor's enum type (checked, written as transcribed); a BOOL
field holds true or false. A scalar
union field (DML_SCALAR_UNION) holds a number read by its data type field (ValueDataType):
an integer for an integer type, and, outside that type's range, only in an example whose
``page_slip`` says why (FILL_VALUE_SEQUENCE's UINT8 step of -2).

The fixtures have:

* snake_case parameter and tensor-role names that match the keyword arguments of
  ``dml_jax._src.reference`` (``input``, ``indices``, ``sequence_lengths``,
  ``inputs``; ``axis``, ``input_dimension_count``, ...), taken from each
  descriptor's field declarations (counts such as InputCount are implied), and
  the functional API's own keywords where no field holds them (SPLIT's
  ``split_sizes``, ONE_HOT's ``depth``, and an example's ``arguments``: after the
  fields, or before them for an operator without input tensors, whose call they
  define);
* ``"outputs"``, a list, for an operator with OutputTensors (SPLIT) or with several
  output fields (in the descriptor's order: TOP_K's values, then its indices), else
  ``"output"``;
* structured provenance (page, repository, path, commit, example heading);
* the documentation errata that were applied, each as ``{issue, resolution}``;
* the strides page's examples (op ``TENSOR_STRIDES``: a linear buffer of letters viewed
  through Sizes and Strides) as ELEMENT_WISE_IDENTITY fixtures, the operator DirectML
  copies layouts with: the input tensor carries ``strides`` and ``buffer`` (the page's
  linear memory), its ``data`` is the view the page documents, and the letters are
  stored as their ASCII codes in UINT8 (``"A"`` is 65).

Usage::

    python scripts/import_doc_examples.py [--check] [--transcription PATH] [--output PATH]

``--check`` writes nothing and exits with status 1 if the fixture file is not what
the importer would write (tests/test_reference.py runs it). It reads the registry of
the checkout it is in.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))  # this checkout's registry, installed or not

from dml_jax._src import registry  # noqa: E402
from dml_jax._src.dtypes import DataType  # noqa: E402
from dml_jax._src.fields import DmlField, FieldKind, dml_fields  # noqa: E402

DEFAULT_OUTPUT = REPO_ROOT / "dml_jax" / "_src" / "fixtures" / "directml_examples.json"
FORMAT = "dml_jax-fixtures/1"
TRANSCRIPTION = REPO_ROOT / "scripts" / "directml_worked_examples.json"
TRANSCRIPTION_FORMAT = "dml_jax-transcription/1"


def _fields(op: str) -> dict[str, DmlField]:
  """DML field name -> its declaration, for a registered operator."""
  return {field.dml_name: field for field in dml_fields(registry.lookup(op))}


# Parameters the functional API implies, left out of the fixtures where the example gives
# the implied value (the descriptor derives it too): (op, DML field) -> that value, from the
# example's inputs. Another value is an error: the fixture could not be replayed.
IMPLIED_PARAMS = {
  ("PADDING1", "PaddingValueDataType"): lambda inputs: inputs["InputTensor"]["data_type"],
}

_SDK_API_PAGE_URL = "https://learn.microsoft.com/windows/win32/api/directml/{name}"
_AI_DOCS_PAGE_URL = "https://learn.microsoft.com/windows/ai/{name}"  # the path under docs/
_SLUG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")

# C limits an INT or UINT field may be printed as (DIAGONAL_MATRIX1's INT32_MIN).
C_LIMITS = {"INT32_MIN": -(2**31), "INT32_MAX": 2**31 - 1, "UINT32_MAX": 2**32 - 1}
_INTEGER_RANGES = {
  FieldKind.INT: (-(2**31), 2**31 - 1),
  FieldKind.INT_ARRAY: (-(2**31), 2**31 - 1),
  FieldKind.UINT: (0, 2**32 - 1),
  FieldKind.UINT_ARRAY: (0, 2**32 - 1),
}

# The strides page's examples run as this operator (see convert_strides_example).
STRIDES_EXAMPLES = "TENSOR_STRIDES"
STRIDES_OPERATOR = "ELEMENT_WISE_IDENTITY"

# --------------------------------------------------------------------------- #
# Conversion
# --------------------------------------------------------------------------- #


def read_transcription(document: Mapping[str, Any]) -> list[dict[str, Any]]:
  """The transcription's examples, each with its page's provenance and notes, and its output
  (``OutputTensor``, the list ``OutputTensors``, or None where the page documents no output
  tensor) apart from its input tensors."""
  if document.get("format") != TRANSCRIPTION_FORMAT:
    raise ValueError(f"expected a {TRANSCRIPTION_FORMAT} transcription")
  examples = []
  for page in document["pages"]:
    for entry in page["examples"]:
      if not _SLUG.match(entry["slug"]):
        raise ValueError(f"{entry['op']}: slug {entry['slug']!r} is not lower-case-with-dashes")
      inputs, output = split_outputs(entry["op"], entry["tensors"])
      examples.append(
        {
          **entry,
          "inputs": inputs,
          "output": output,
          "provenance": provenance(page, entry["heading"]),
          "notes": [*page.get("notes", ()), *entry.get("notes", ())],
        }
      )
  return examples


def split_outputs(op: str, tensors: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
  """An example's input tensors, and its output: the tensor of the descriptor's one output
  field (a list for OutputTensors), a list of the tensors of several output fields in the
  descriptor's order, or None where the page documents none. An operator outside the
  registry (the strides page's) has its output in ``OutputTensor``."""
  inputs = dict(tensors)
  if op not in registry.operators():
    return inputs, inputs.pop("OutputTensor", None)
  names = [field.dml_name for field in dml_fields(registry.lookup(op)) if field.output]
  found = [inputs.pop(name) for name in names if name in inputs]
  if len(names) == 1:
    return inputs, found[0] if found else None
  if found and len(found) != len(names):
    raise ValueError(f"{op}: an example gives some of the outputs {names}, not all")
  return inputs, found or None


def fixture_id(example: Mapping[str, Any]) -> str:
  """Stable id ``"<op>/<slug>"`` of a transcribed example."""
  op = STRIDES_OPERATOR if example["op"] == STRIDES_EXAMPLES else example["op"]
  return f"{op.lower()}/{example['slug']}"


def provenance(page: Mapping[str, Any], heading: str) -> dict[str, Any]:
  """A fixture's provenance: the page's, its address where the pages are published, and the
  example's heading."""
  url = None
  if page["repository"] == "MicrosoftDocs/sdk-api":
    url = _SDK_API_PAGE_URL.format(name=Path(page["path"]).stem)
  elif page["repository"] == "MicrosoftDocs/windows-ai-docs":
    url = _AI_DOCS_PAGE_URL.format(
      name=Path(page["path"]).relative_to("docs").with_suffix("").as_posix()
    )
  return {
    "page": page["page"],
    "repository": page["repository"],
    "path": page["path"],
    "commit": page["commit"],
    "url": url,
    "example": heading,
  }


def convert_tensor(tensor: Mapping[str, Any]) -> dict[str, Any]:
  """Converts one transcribed tensor to ``{data_type, sizes, data}``."""
  return {
    "data_type": tensor["data_type"],
    "sizes": [int(s) for s in tensor["sizes"]],
    "data": tensor["data"],
  }


def convert_params(
  op: str,
  params: Mapping[str, Any],
  inputs: Mapping[str, Any],
  outputs: list[Any] | None = None,
  *,
  page_slip: str | None = None,
) -> dict:
  """Renames DML parameters to snake_case and drops the counts the arrays imply.

  ``outputs`` are the example's OutputTensors, for a count of them (SPLIT's
  OutputCount); ``page_slip`` the example's, which lets a scalar union hold a value
  outside its data type's range (see `scalar_union_value`).
  """
  fields, converted = _fields(op), {}
  for name, value in params.items():
    field = fields[name]
    implied = IMPLIED_PARAMS.get((op, name))
    if implied is not None:
      if value != implied(inputs):
        raise ValueError(f"{op}: {name} {value} is not the implied {implied(inputs)}")
      continue
    if field.count_of is not None:
      counted = next(f for f in fields.values() if f.name == field.count_of)
      if counted.output:
        length = len(outputs or ())
      else:
        length = len(inputs.get(counted.dml_name) or params.get(counted.dml_name) or ())
      if value != length:
        raise ValueError(f"{op}: {name} {value} != the length of {counted.dml_name}")
      continue
    if field.kind is FieldKind.ENUM:
      converted[field.name] = enum_value(op, field, value)
    elif field.kind is FieldKind.BOOL:
      if not isinstance(value, bool):
        raise ValueError(f"{op}: {field.dml_name} {value!r} must be true or false (a BOOL)")
      converted[field.name] = value
    elif field.kind is FieldKind.SCALAR_UNION:
      converted[field.name] = scalar_union_value(op, field, value, params, page_slip)
    else:
      converted[field.name] = integer_value(op, field, value)
  return converted


def enum_value(op: str, field: DmlField, value: Any) -> Any:
  """An enum field's value as transcribed, once the descriptor's enum type accepts it."""
  if not isinstance(value, str):
    raise ValueError(
      f"{op}: {field.dml_name} {value!r} must be a name of {field.enum_type.__name__}"
    )
  try:
    field.enum_type.from_any(value)
  except (TypeError, ValueError) as error:
    raise ValueError(f"{op}: {field.dml_name}: {error}") from None
  return value


def scalar_union_value(
  op: str, field: DmlField, value: Any, params: Mapping[str, Any], page_slip: str | None
) -> Any:
  """A scalar union's number, checked against the data type its data type field gives: an
  integer for an integer type, within the type's range unless the example's page_slip
  says why not (the value is kept as the page gives it)."""
  if isinstance(value, bool) or not isinstance(value, int | float):
    raise ValueError(f"{op}: {field.dml_name} {value!r} is not a number")
  declared = field.data_type_field
  if declared is None or declared not in params:  # implied (IMPLIED_PARAMS): checked at replay
    return value
  data_type = DataType.from_any(params[declared])
  dtype = data_type.numpy_dtype
  if dtype is None or dtype.kind == "f":
    return value
  if not isinstance(value, int):
    raise ValueError(f"{op}: {field.dml_name} {value!r} is not an integer, as {data_type} needs")
  limits = np.iinfo(dtype)
  if not limits.min <= value <= limits.max and not page_slip:
    raise ValueError(
      f"{op}: {field.dml_name} {value} is outside {data_type}'s range"
      f" [{limits.min}, {limits.max}]; if the page gives it so, say why in page_slip and kept_because"
    )
  return value


def integer_value(op: str, field: DmlField, value: Any) -> Any:
  """An INT or UINT field's value (or array's values), C limit names replaced by their value
  and each checked against the kind's range; any other field's value as it is."""
  bounds = _INTEGER_RANGES.get(field.kind)
  if bounds is None:
    return value

  def one(item: Any) -> int:
    if isinstance(item, str):
      if item not in C_LIMITS:
        raise ValueError(
          f"{op}: {field.dml_name} {item!r} is neither a number nor one of {sorted(C_LIMITS)}"
        )
      item = C_LIMITS[item]
    if isinstance(item, bool) or not isinstance(item, int) or not bounds[0] <= item <= bounds[1]:
      raise ValueError(f"{op}: {field.dml_name} {item!r} is not a {field.kind.value} in {bounds}")
    return item

  return [one(item) for item in value] if isinstance(value, list) else one(value)


def function_params(example: Mapping[str, Any]) -> dict[str, Any]:
  """The functional API's keywords that no descriptor field holds, from the example: its
  transcribed ``arguments``, or, for two operators, computed from its outputs.

  SPLIT's descriptor has its pieces' sizes only in OutputTensors; ``dml.split``
  (and its oracle) take them as ``split_sizes``, the outputs' sizes along Axis.
  ONE_HOT's depth, too, is only OutputTensor.Sizes[Axis]; ``dml.one_hot`` takes it
  as ``depth``.
  """
  if example["op"] == "SPLIT":
    axis = example["fields"]["Axis"]
    return {"split_sizes": [int(t["sizes"][axis]) for t in example["output"]]}
  if example["op"] == "ONE_HOT":
    return {"depth": int(example["output"]["sizes"][example["fields"]["Axis"]])}
  return dict(example.get("arguments") or {})


def convert_inputs(op: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
  """Renames tensor roles to the functional API's arguments; arrays become lists."""
  fields, converted = _fields(op), {}
  for role, tensor in inputs.items():
    if isinstance(tensor, list):
      converted[fields[role].argument] = [convert_tensor(t) for t in tensor]
    else:
      converted[fields[role].argument] = convert_tensor(tensor)
  return converted


def _page_formula_output_sizes(example: Mapping[str, Any]) -> list[int]:
  """GATHER_ND(1) output sizes by the pages' (wrong) pseudocode, for errata.

  The pages keep ``IndicesTensor.Sizes[n - IndicesDimensionCount : n - 1]``
  followed by ``InputTensor.Sizes[n - indexTupleSize : n]``, right-aligned.
  """
  input_sizes = example["inputs"]["InputTensor"]["sizes"]
  indices_sizes = example["inputs"]["IndicesTensor"]["sizes"]
  rank = len(indices_sizes)
  tuple_size = indices_sizes[-1]
  count = example["fields"]["IndicesDimensionCount"]
  logical = indices_sizes[rank - count : rank - 1] + input_sizes[rank - tuple_size :]
  return [1] * max(rank - len(logical), 0) + logical


def _scatter_nd_page_updates_sizes(example: Mapping[str, Any]) -> list[int]:
  """SCATTER_ND's UpdatesTensor sizes by the page's (wrong) formula, for errata: the
  indices' sizes but the last, then InputTensor.Sizes[n - indexTupleSize:], right-aligned."""
  input_sizes = example["inputs"]["InputTensor"]["sizes"]
  indices_sizes = example["inputs"]["IndicesTensor"]["sizes"]
  rank, tuple_size = len(indices_sizes), indices_sizes[-1]
  count = example["fields"]["IndicesDimensionCount"]
  logical = indices_sizes[rank - count : rank - 1] + input_sizes[rank - tuple_size :]
  return [1] * max(rank - len(logical), 0) + logical


def corrected(example: Mapping[str, Any]) -> dict[str, Any]:
  """The example with the corrections dml_jax needs to replay it (see `errata_for`).

  SCATTER_ND's worked example is typed FLOAT32 indices with tensors of ranks 1, 2
  and 1; its data is kept, as a rank-2 descriptor with UINT32 indices. Its
  shape-only example gives the expected UpdatesTensor sizes: they become the
  UpdatesTensor, and the output is the input's sizes.
  """
  example = json.loads(json.dumps(example))  # a deep copy
  if example["op"] != "SCATTER_ND":
    return example
  inputs = example["inputs"]
  if example["shape_only"]:
    data = inputs["InputTensor"]
    example["output"] = {"data_type": data["data_type"], "sizes": data["sizes"], "data": None}
    return example
  rank = max(len(t["sizes"]) for t in inputs.values())

  def padded(tensor: dict[str, Any], dtype: str | None = None) -> dict[str, Any]:
    lead = rank - len(tensor["sizes"])
    data = tensor["data"]
    for _ in range(lead):
      data = [data]
    return {
      "data_type": dtype or tensor["data_type"],
      "sizes": [1] * lead + tensor["sizes"],
      "data": data if dtype is None else json.loads(json.dumps(data), parse_float=int),
    }

  example["inputs"] = {
    "InputTensor": padded(inputs["InputTensor"]),
    "IndicesTensor": padded(inputs["IndicesTensor"], "UINT32"),
    "UpdatesTensor": padded(inputs["UpdatesTensor"]),
  }
  example["output"] = padded(example["output"])
  return example


def params_override(example: Mapping[str, Any]) -> dict[str, Any]:
  """The parameters the transcription corrected to reproduce the example (a documented value
  that contradicts the example's own sizes and data), by DML field name."""
  return dict(example.get("corrected_fields") or {})


def _gather_errata(example: Mapping[str, Any]) -> list[dict[str, str]]:
  """GATHER's documentation slips that touch one example (see errata_for)."""
  errata = []
  params, corrected = example["fields"], params_override(example)
  input_sizes = example["inputs"]["InputTensor"]["sizes"]
  indices_sizes = example["inputs"]["IndicesTensor"]["sizes"]
  rank, axis = len(input_sizes), params["Axis"]
  if "IndexDimensions" in corrected:
    printed, used = params["IndexDimensions"], corrected["IndexDimensions"]
    logical = input_sizes[:axis] + indices_sizes[rank - printed :] + input_sizes[axis + 1 :]
    errata.append(
      {
        "issue": f"The page gives IndexDimensions {printed}: the logical output would then be"
        f" {logical}, {len(logical)} dimensions for a rank-{rank} OutputTensor, and its leading"
        f" sizes {logical[: len(logical) - rank]} are not 1s that could be cropped.",
        "resolution": f"IndexDimensions {used}, the one value the example's sizes and data (and"
        " its comment output[y, x] = input[y, indices[x]]) agree with.",
      }
    )
  if corrected.get("IndexDimensions", params["IndexDimensions"]) == len(indices_sizes):
    errata.append(
      {
        "issue": "The page gives IndexDimensions the range [0, IndicesTensor.DimensionCount),"
        " which leaves out this example's own value, the indices' DimensionCount.",
        "resolution": "IndexDimensions is accepted in [0, DimensionCount], the bound included,"
        " as the example (and DirectMLX) require.",
      }
    )
  heading = re.search(r"Axis (\d+)", example["heading"])
  if heading and int(heading[1]) != axis:
    errata.append(
      {
        "issue": f"The example's heading names Axis {heading[1]}, an axis of the 2-D tensor"
        f" before its padding to {rank} dimensions; its fields give Axis {axis}.",
        "resolution": f"The fields are right for the padded tensors: the fixture keeps Axis {axis}.",
      }
    )
  return errata


def errata_for(example: Mapping[str, Any]) -> list[dict[str, str]]:
  """The documentation corrections that apply to one example.

  Derived from the example's ``page_slip``, ``corrected_fields`` and ``printed_sizes``
  and from what the operator's page is known to get wrong, in dml_jax's own words.
  """
  op = example["op"]
  errata = []
  if op == "GATHER":
    errata += _gather_errata(example)
  if op == "GATHER_ELEMENTS" and example.get("page_slip"):
    if example["output"]["data_type"] != example["inputs"]["InputTensor"]["data_type"]:
      raise ValueError("expected the transcription to carry the corrected OutputTensor data type")
    errata.append(
      {
        "issue": "The page prints the OutputTensor DataType as UINT32.",
        "resolution": "OutputTensor.DataType must equal InputTensor.DataType; recorded as FLOAT32.",
      }
    )
  if op in ("GATHER_ND", "GATHER_ND1"):
    page_sizes = _page_formula_output_sizes(example)
    documented = example["output"]["sizes"]
    if page_sizes != documented:
      errata.append(
        {
          "issue": "The page's OutputTensor.Sizes pseudocode (trailing part "
          "InputTensor.Sizes[DimensionCount - indexTupleSize ..]) gives "
          f"{page_sizes}, but the page documents {documented}.",
          "resolution": "Trailing output sizes are I[B + t:], the logical "
          "input sizes after the batch and indexed dims, as the page's "
          "examples and DirectMLX do; the documented sizes are kept.",
        }
      )
  if op == "REVERSE_SUBSEQUENCES":
    errata.append(
      {
        "issue": "The page's examples call the second input 'SequenceTensor'.",
        "resolution": "It is the SequenceLengthsTensor field; stored under "
        "the role 'sequence_lengths'.",
      }
    )
  if op in ("SPACE_TO_DEPTH", "SPACE_TO_DEPTH1"):
    errata.append(
      {
        "issue": "The page's OutputTensor field gives DEPTH_TO_SPACE's sizes,"
        " {N, C / (BlockSize * BlockSize), H * BlockSize, W * BlockSize}.",
        "resolution": "SPACE_TO_DEPTH's output is {N, C * BlockSize * BlockSize,"
        " H / BlockSize, W / BlockSize}, as the page's examples show; the documented"
        " sizes are kept.",
      }
    )
  if op == "SLICE1" and example.get("page_slip"):
    errata.append(
      {
        "issue": "The page's walk-through of this example names InputWindowSizes[0] where it"
        " computes the last element of dimension 2's window.",
        "resolution": "The window of dimension 2 ends at InputWindowOffsets[2] +"
        " InputWindowSizes[2] - 1 = 3, the value the page uses; the example's data agree.",
      }
    )
  if op == "SCATTER_ELEMENTS":
    errata.append(
      {
        "issue": "The page says the operator was introduced in DML_FEATURE_LEVEL_1_0 and heads"
        " its first tensor-support table '1_0 and above'.",
        "resolution": "The operator exists from FL 2_0 (its enum value and the FL 2_0 release"
        " notes); that table applies from 2_0.",
      }
    )
    if "printed_sizes" in example:
      was = example["printed_sizes"]["InputTensor"]
      errata.append(
        {
          "issue": f"The page prints InputTensor.Sizes as {_braced(was)}, but its data and"
          f" its output are {_braced(example['output']['sizes'])}.",
          "resolution": "InputTensor.Sizes must equal OutputTensor.Sizes; recorded as"
          f" {_braced(example['inputs']['InputTensor']['sizes'])}.",
        }
      )
    if _repeats_a_target(example["inputs"]["IndicesTensor"], example["fields"]["Axis"]):
      errata.append(
        {
          "issue": "The example writes one element twice (a repeated index), although the page"
          " says that overlapping targets are invalid and that no write is guaranteed to win;"
          " its output shows the later update.",
          "resolution": "Kept as documented: dml_jax's policy (the last update in row-major"
          " order wins) gives the documented output.",
        }
      )
  if op == "SCATTER_ND" and example["shape_only"]:
    page = _scatter_nd_page_updates_sizes(example)
    documented = example["inputs"]["UpdatesTensor"]["sizes"]
    errata.append(
      {
        "issue": "The page's UpdatesTensor.Sizes formula (trailing part InputTensor.Sizes"
        f"[DimensionCount - indexTupleSize ..]) gives {page}, but the page documents"
        f" {documented}.",
        "resolution": "The trailing sizes are I[t:], the logical input sizes after the indexed"
        " dims, as GATHER_ND's output; the documented sizes are kept as the UpdatesTensor,"
        " and the output has the input's sizes.",
      }
    )
  elif op == "SCATTER_ND":
    errata.append(
      {
        "issue": "The page's example types IndicesTensor as FLOAT32 and gives its tensors"
        " ranks 1, 2 and 1, without InputDimensionCount or IndicesDimensionCount.",
        "resolution": "Recorded with UINT32 indices and every tensor of rank 2 (leading 1s),"
        " InputDimensionCount 1 and IndicesDimensionCount 2; the data are the page's.",
      }
    )
  if example.get("kept_because"):  # kept as the page gives it, in the transcription's words
    if not example.get("page_slip") or example.get("corrected_fields"):
      raise ValueError(
        f"{fixture_id(example)}: kept_because needs a page_slip and no corrected_fields"
      )
    errata.append({"issue": example["page_slip"], "resolution": example["kept_because"]})
  if example.get("corrected_because") and not errata:  # a corrected field, by the transcription
    printed, used = example["fields"], params_override(example)
    if not used or not example.get("page_slip"):
      raise ValueError(
        f"{fixture_id(example)}: corrected_because needs corrected_fields and a page_slip"
      )
    errata.append(
      {
        "issue": "The example sets "
        + ", ".join(f"{name} {_shown(printed[name])}" for name in used)
        + f" but {example['page_slip']}.",
        "resolution": "Recorded with "
        + ", ".join(f"{name} {_shown(value)}" for name, value in used.items())
        + f", {example['corrected_because']}"
        + ("; the output is the page's." if example["documented_output"] else "."),
      }
    )
  if example.get("page_slip") and not errata:  # any other operator's documented slip
    errata.append(
      {
        "issue": f"The page's example: {example['page_slip']}.",
        "resolution": "Recorded as the operator's definition and the example's own data require.",
      }
    )
  return errata


def _shown(value: Any) -> str:
  """A field's value as a page prints it: 7, not 7.0."""
  if isinstance(value, float) and value.is_integer():
    return str(int(value))
  return str(value)


def _braced(sizes: list[int]) -> str:
  return "{" + ",".join(map(str, sizes)) + "}"


def _repeats_a_target(indices: Mapping[str, Any], axis: int) -> bool:
  """Whether two SCATTER_ELEMENTS updates write one element: one lane, one index."""
  targets = []

  def walk(data: Any, position: tuple[int, ...]) -> None:
    if isinstance(data, list):
      for i, item in enumerate(data):
        walk(item, (*position, i))
    else:
      targets.append(position[:axis] + (data,) + position[axis + 1 :])

  walk(indices["data"], ())
  return len(set(targets)) < len(targets)


def _letter_codes(data: Any) -> Any:
  """The page's letters (nested lists) as their ASCII codes."""
  if isinstance(data, list):
    return [_letter_codes(item) for item in data]
  if not (isinstance(data, str) and len(data) == 1 and data.isascii()):
    raise ValueError(f"expected one ASCII letter; got {data!r}")
  return ord(data)


def convert_strides_example(example: Mapping[str, Any]) -> dict[str, Any]:
  """A strides-page example as an ELEMENT_WISE_IDENTITY fixture (see the module docstring)."""
  buffer, view = example["inputs"]["Buffer"], example["output"]
  if buffer["data_type"] != "CHAR" or view["data_type"] != "CHAR":
    raise ValueError("expected the strides page's CHAR letters")
  sizes = [int(s) for s in example["fields"]["Sizes"]]
  if [int(s) for s in view["sizes"]] != sizes:
    raise ValueError("the documented view must have the example's Sizes")
  data = _letter_codes(view["data"])
  return {
    "id": fixture_id(example),
    "op": STRIDES_OPERATOR,
    "provenance": example["provenance"],
    "params": {},
    "inputs": {
      "input": {
        "data_type": "UINT8",
        "sizes": sizes,
        "strides": [int(s) for s in example["fields"]["Strides"]],
        "data": data,
        "buffer": _letter_codes(buffer["data"]),
      }
    },
    "output": {"data_type": "UINT8", "sizes": sizes, "data": data},
    "shape_only": False,
    "documented_output": bool(example["documented_output"]),
    "errata": errata_for(example),
    "notes": list(example["notes"]),
  }


def convert_example(example: Mapping[str, Any]) -> dict[str, Any]:
  """Converts one transcribed example to a fixture."""
  example = corrected(example)
  op = example["op"]
  if op == STRIDES_EXAMPLES:
    return convert_strides_example(example)
  ident = fixture_id(example)
  output = example["output"]
  several = isinstance(output, list)  # OutputTensors (SPLIT): a list of tensors
  in_force = {**example["fields"], **params_override(example)}  # see errata_for
  params = convert_params(
    op,
    in_force,
    example["inputs"],
    output if several else None,
    page_slip=example.get("page_slip"),
  )
  arguments = function_params(example)
  clash = set(arguments) & set(params)
  if clash:
    raise ValueError(
      f"{ident}: arguments {sorted(clash)} are descriptor fields; give them in fields"
    )
  # An operator without input tensors (a generator) is defined by its arguments: they lead.
  generator = not any(f.kind.is_tensor and not f.output for f in _fields(op).values())
  return {
    "id": ident,
    "op": op,
    "provenance": example["provenance"],
    "params": {**arguments, **params} if generator else {**params, **arguments},
    "inputs": convert_inputs(op, example["inputs"]),
    **(
      {"outputs": [convert_tensor(t) for t in output]}
      if several
      else {"output": convert_tensor(output)}
    ),
    "shape_only": bool(example["shape_only"]),
    "documented_output": bool(example["documented_output"]),
    "errata": errata_for(example),
    "notes": list(example["notes"]),
  }


def build_fixture_document(transcription: Path = TRANSCRIPTION) -> dict[str, Any]:
  """Reads the transcription and builds the whole fixture document."""
  raw = transcription.read_bytes()
  examples = read_transcription(json.loads(raw))
  ops = registry.operators()
  fixtures = [convert_example(e) for e in examples if e["op"] in ops or e["op"] == STRIDES_EXAMPLES]
  ids = [f["id"] for f in fixtures]
  if len(set(ids)) != len(ids):
    raise ValueError(f"duplicate fixture ids: {sorted(ids)}")
  missing = set(ops) - {f["op"] for f in fixtures}
  if missing:
    raise ValueError(
      f"no examples found for {sorted(missing)}: transcribe each operator's worked examples"
      f" (its page, fields, tensors, notes) into {TRANSCRIPTION.relative_to(REPO_ROOT)} first,"
      " then run this script; extend the importer only where the transcription cannot say"
      " what the operator needs (see this script's docstring)"
    )
  return {
    "format": FORMAT,
    "source": {
      "transcription": TRANSCRIPTION.relative_to(REPO_ROOT).as_posix(),
      "sha256": hashlib.sha256(raw).hexdigest(),
      "description": "Worked examples of the DirectML API reference pages "
      "(MicrosoftDocs/sdk-api), of the strides page (MicrosoftDocs/windows-ai-docs) "
      "and DxDispatch samples (microsoft/DirectML), "
      "transcribed by the dml_jax developers; each fixture's provenance names "
      "its page, repository, path and commit.",
      "generated_by": "scripts/import_doc_examples.py",
    },
    "fixtures": fixtures,
  }


# --------------------------------------------------------------------------- #
# Output formatting
# --------------------------------------------------------------------------- #


def _compact(value: Any) -> str:
  return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def format_json(value: Any, indent: int = 0, width: int = 100, lead: int = 0) -> str:
  """JSON text with containers kept on one line when they fit in ``width``.

  Args:
    value: A JSON-serialisable value.
    indent: Indentation (spaces) of the line the value starts on.
    width: Maximum line length for one-line containers.
    lead: Characters already on that line after the indentation (a key).
  """
  compact = _compact(value)
  if not isinstance(value, (dict, list)) or not value:
    return compact
  if indent + lead + len(compact) <= width:
    return compact
  inner = " " * (indent + 2)
  if isinstance(value, dict):
    opening, closing = "{", "}"
    items = []
    for key, item in value.items():
      key_text = _compact(key) + ": "
      items.append(inner + key_text + format_json(item, indent + 2, width, len(key_text)))
  else:
    opening, closing = "[", "]"
    items = [inner + format_json(item, indent + 2, width) for item in value]
  return opening + "\n" + ",\n".join(items) + "\n" + " " * indent + closing


# --------------------------------------------------------------------------- #
# Command line
# --------------------------------------------------------------------------- #


def main(argv: list[str] | None = None) -> int:
  """Command-line entry point; returns the process exit status."""
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument(
    "--transcription",
    type=Path,
    default=TRANSCRIPTION,
    help="the transcription of DirectML's worked examples (default: %(default)s)",
  )
  parser.add_argument(
    "--output",
    type=Path,
    default=DEFAULT_OUTPUT,
    help="fixture file to write (default: %(default)s)",
  )
  parser.add_argument(
    "--check", action="store_true", help="only report whether the output is up to date"
  )
  args = parser.parse_args(argv)

  try:
    document = build_fixture_document(args.transcription)
  except ValueError as error:
    print(f"{Path(__file__).name}: {error}", file=sys.stderr)
    return 1
  text = format_json(document) + "\n"
  if args.check:
    current = args.output.read_text(encoding="utf-8") if args.output.exists() else None
    if current != text:
      print(f"{args.output} is out of date: run python scripts/{Path(__file__).name}")
      return 1
    print(f"{args.output} is up to date")
    return 0
  args.output.parent.mkdir(parents=True, exist_ok=True)
  args.output.write_text(text, encoding="utf-8")
  print(f"wrote {len(document['fixtures'])} fixtures to {args.output}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
