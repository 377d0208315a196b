"""Comparing a returned folder of DirectML outputs with the pack's expected ones.

`compare_pack` reads the pack's manifest, and for every model and output looks for the
file of the same name in the results folder: *equal* (the same bytes as dml_jax's),
*different* (the first differing elements, with their values and bits), or *missing*.
`summary` counts them per operator, and `candidate_errata` turns every model with a
difference into a fixture in the fixtures' format (``dml_jax-fixtures/1``), DirectML's
output as its output and a provenance to fill in (`PROVENANCE_PLACEHOLDER`), so that a
confirmed difference becomes a fixture.

The returned folder, and the pack too, are untrusted input, as model files are: every
path read stays inside its folder (no absolute path, no ``..``, no symbolic link out),
only regular files are read, and what is read is bounded (``max_bytes``).

Examples:
  >>> import tempfile, pathlib
  >>> from dml_jax._src.crosscheck import cases, compare, pack
  >>> scratch = tempfile.TemporaryDirectory()
  >>> folder = pathlib.Path(scratch.name)
  >>> _ = pack.write_pack(folder, cases.operator_cases("JOIN")[:2])
  >>> results = compare.compare_pack(folder, folder / "expected")
  >>> [(r.model, r.status) for r in results]
  [('join.doc-1', 'equal'), ('join.doc-2', 'equal')]
  >>> print(compare.summary(results)[-1])
  all: 2 equal, 0 different, 0 missing
  >>> scratch.cleanup()
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dml_jax._src.crosscheck.pack import (
  EXPECTED,
  FORMAT,
  MANIFEST,
  PROVENANCE_PLACEHOLDER,
  resource_name,
)
from dml_jax._src.dtypes import DataType
from dml_jax._src.fields import FieldKind, dml_fields
from dml_jax._src.fixtures import FORMAT as FIXTURES_FORMAT
from dml_jax._src.model import files, npy
from dml_jax._src.model.program import load_model
from dml_jax._src.tensor_desc import TensorDesc

MAX_DIFFERENCES_SHOWN = 5
"""The most differing elements an output's report lists."""

STATUSES = ("equal", "different", "missing")


class PackError(ValueError):
  """A pack folder that cannot be compared: no manifest, or one of another format."""


@dataclasses.dataclass(frozen=True)
class OutputResult:
  """One output of one model, compared.

  Attributes:
    model: the case's name (``gather.doc-1``).
    op: the operator, as model files name it.
    output: the output's label (``OutputTensor``).
    file: the file's name in the results folder.
    status: ``equal``, ``different`` or ``missing``.
    details: for a difference: what differs, a line each (the first elements).
    returned: DirectML's file's bytes, for a difference.
  """

  model: str
  op: str
  output: str
  file: str
  status: str
  details: tuple[str, ...] = ()
  returned: bytes | None = dataclasses.field(default=None, repr=False)

  def lines(self) -> list[str]:
    """The report's lines for this output."""
    head = f"{self.status}: {self.model} {self.output} ({self.file})"
    return [head, *(f"  {line}" for line in self.details)]


def read_manifest(pack: pathlib.Path, budget: files.Budget) -> dict[str, Any]:
  """The pack's manifest.

  Raises:
    PackError: no manifest, not JSON, or not a cross-check manifest.
  """
  try:
    path = files.contained(pack, MANIFEST, "the manifest")
    document = json.loads(files.read_regular(path, budget, "the manifest").decode("utf-8"))
  except (OSError, ValueError) as error:
    raise PackError(
      f"'{pack}' is not a cross-check pack ({error}); give the folder"
      " `python -m dml_jax crosscheck-pack` wrote"
    ) from None
  if not isinstance(document, dict) or document.get("format") != FORMAT:
    raise PackError(f"'{pack}/{MANIFEST}' is not a manifest of format {FORMAT!r}")
  if not isinstance(document.get("models"), list):
    raise PackError(f"'{pack}/{MANIFEST}' lists no models")
  return document


def compare_pack(
  pack: str | pathlib.Path,
  results: str | pathlib.Path,
  *,
  max_bytes: int = files.DEFAULT_MAX_BYTES,
) -> list[OutputResult]:
  """Compares every output the pack's manifest lists with the file of the same name in
  `results`, byte for byte.

  Raises:
    PackError: `pack` is not a cross-check pack.
    files.UnsafePathError: a manifest entry that names a path outside its folder.
    files.BudgetError: more than `max_bytes` to read.
  """
  root, returned = pathlib.Path(pack), pathlib.Path(results)
  budget = files.Budget(max_bytes)
  manifest = read_manifest(root, budget)
  found = []
  for entry in manifest["models"]:
    if not isinstance(entry, dict) or not all(
      isinstance(entry.get(key), str) for key in ("name", "op")
    ):
      raise PackError(f"a manifest entry without its name and operator: {entry!r:.200}")
    given = entry.get("elements")
    elements: dict[str, Any] = given if isinstance(given, dict) else {}
    for output, name in _outputs(entry).items():
      count = elements.get(output)
      found.append(
        _compare_one(
          root,
          returned,
          (str(entry["name"]), str(entry["op"]), output, name),
          count if isinstance(count, int) and not isinstance(count, bool) else None,
          budget,
        )
      )
  return found


def _outputs(entry: Any) -> dict[str, str]:
  outputs = entry.get("outputs") if isinstance(entry, dict) else None
  if not isinstance(outputs, dict) or not all(
    isinstance(k, str) and isinstance(v, str) for k, v in outputs.items()
  ):
    raise PackError(f"a manifest entry without its outputs: {entry!r:.200}")
  return outputs


def _compare_one(
  root: pathlib.Path,
  returned: pathlib.Path,
  names: tuple[str, str, str, str],
  elements: int | None,
  budget: files.Budget,
) -> OutputResult:
  model, op, output, name = names
  ours = files.read_regular(
    files.contained(root / EXPECTED, name, "an expected output"), budget, "an expected output"
  )
  path = files.contained(returned, name, "a returned output")
  try:
    theirs = files.read_regular(path, budget, "a returned output")
  except FileNotFoundError:
    return OutputResult(model, op, output, name, "missing")
  if theirs == ours:
    return OutputResult(model, op, output, name, "equal")
  lines = differences(ours, theirs, elements)
  if not lines:  # the tensor's elements are equal; DirectML wrote the padding after them
    note = f"equal in the tensor's {elements} elements; the bytes after them differ"
    return OutputResult(model, op, output, name, "equal", (note,))
  return OutputResult(model, op, output, name, "different", lines, theirs)


def differences(ours: bytes, theirs: bytes, elements: int | None = None) -> tuple[str, ...]:
  """What differs between dml_jax's .npy file and DirectML's: the header, the size, or
  the first elements that differ, each with both values and their bits. With `elements`
  (the output tensor's element count), only the tensor's elements count: DirectML may
  write the rest of the buffer (the padding to 4 bytes), and no difference there is
  reported (an empty tuple when the elements are equal)."""
  try:
    our_type, our_data = npy.read_npy(ours)
  except npy.NpyError as error:
    return (f"dml_jax's file is not a .npy file DxDispatch writes: {error}",)
  try:
    their_type, their_data = npy.read_npy(theirs)
  except npy.NpyError as error:
    return (f"the returned file is not a .npy file: {error}",)
  if our_type != their_type:
    return (f"data types differ: dml_jax {our_type.name}, returned {their_type.name}",)
  lines = []
  if elements is not None:
    size = _dtype(our_type).itemsize
    our_data, their_data = our_data[: elements * size], their_data[: elements * size]
  if len(our_data) != len(their_data):
    lines.append(f"sizes differ: dml_jax {len(our_data)} bytes, returned {len(their_data)} bytes")
  dtype = _dtype(our_type)
  size = dtype.itemsize
  count = min(len(our_data), len(their_data)) // size
  a = np.frombuffer(our_data[: count * size], dtype)
  b = np.frombuffer(their_data[: count * size], dtype)
  bits = np.dtype(f"<u{size}")
  different = np.flatnonzero(a.view(bits) != b.view(bits))
  if len(different):
    lines.append(f"{len(different)} of {count} elements differ")
  for i in different[:MAX_DIFFERENCES_SHOWN]:
    i = int(i)
    lines.append(
      f"element {i}: dml_jax {_show(a[i])} ({_bits(a[i], size)}),"
      f" DirectML {_show(b[i])} ({_bits(b[i], size)})"
    )
  if elements is not None:
    return tuple(lines)
  return tuple(lines) or ("the files differ outside the elements (the header)",)


def _dtype(data_type: DataType) -> np.dtype:
  dtype = data_type.numpy_dtype
  return np.dtype(dtype).newbyteorder("<") if dtype is not None else np.dtype("u1")


def _show(value: Any) -> str:
  if isinstance(value, np.floating):
    return repr(float(value)) if not math.isnan(value) else "nan"
  return str(int(value))


def _bits(value: Any, size: int) -> str:
  return f"0x{int(np.asarray(value).view(f'<u{size}')):0{2 * size}x}"


def summary(results: Sequence[OutputResult]) -> list[str]:
  """One line per operator, ``OP: e equal, d different, m missing``, then ``all: ...``."""
  counts: dict[str, dict[str, int]] = {}
  for result in results:
    counts.setdefault(result.op, dict.fromkeys(STATUSES, 0))[result.status] += 1
  total = dict.fromkeys(STATUSES, 0)
  lines = []
  for op in sorted(counts):
    lines.append(f"{op}: " + ", ".join(f"{counts[op][s]} {s}" for s in STATUSES))
    for status in STATUSES:
      total[status] += counts[op][status]
  lines.append("all: " + ", ".join(f"{total[s]} {s}" for s in STATUSES))
  return lines


def candidate_errata(
  pack: str | pathlib.Path,
  results: Sequence[OutputResult],
  *,
  max_bytes: int = files.DEFAULT_MAX_BYTES,
) -> dict[str, Any]:
  """Every model with a different output as a fixture (``dml_jax-fixtures/1``): its
  operator, parameters and inputs from the pack's model, DirectML's outputs as its
  outputs, ``documented_output`` false, and a provenance whose ``source`` is
  `PROVENANCE_PLACEHOLDER` until the sender's GPU and driver are filled in.

  Each returned output is read through the output tensor's sizes; a NaN's payload,
  which JSON cannot hold, is kept in the fixture's notes with every differing element's
  bits.
  """
  root = pathlib.Path(pack)
  budget = files.Budget(max_bytes)
  manifest = read_manifest(root, budget)
  entries = {str(e.get("name")): e for e in manifest["models"] if isinstance(e, dict)}
  by_model: dict[str, list[OutputResult]] = {}
  for result in results:
    by_model.setdefault(result.model, []).append(result)
  fixtures = []
  for model, outputs in by_model.items():
    if not any(r.status == "different" for r in outputs):
      continue
    fixtures.append(_fixture(root, entries[model], outputs, max_bytes))
  return {
    "format": FIXTURES_FORMAT,
    "source": {
      "description": "Candidate errata: outputs of DirectML that differ from dml_jax's, from"
      " a cross-check pack run with DxDispatch. Each becomes a fixture once confirmed and"
      " its provenance filled in.",
      "generated_by": "python -m dml_jax crosscheck-compare",
    },
    "fixtures": fixtures,
  }


def _fixture(
  root: pathlib.Path, entry: Mapping[str, Any], outputs: Sequence[OutputResult], max_bytes: int
) -> dict[str, Any]:
  path = files.contained(root, str(entry["model"]), "a model of the pack")
  model = load_model(path, max_bytes=max_bytes)
  desc = model.dispatchables["op"].desc
  params: dict[str, Any] = {}
  inputs: dict[str, Any] = {}
  for field in dml_fields(desc):
    value = getattr(desc, field.name)
    if field.is_attribute:
      params[field.name] = _param(field.kind, value)
  for label, _, t in desc.dml_inputs():
    resource = model.resources[resource_name(label)]
    buffer = np.frombuffer(resource.image().tobytes(), _dtype(t.data_type))
    tensor = _tensor_json(t, _view(buffer, t))
    if t.strides is not None:
      tensor["strides"] = list(t.strides)
      tensor["buffer"] = buffer[: _extent(t)].tolist()
    role = _role(desc, label)
    if "[" in label:
      inputs.setdefault(role, []).append(tensor)
    else:
      inputs[role] = tensor
  returned = {r.output: r for r in outputs}
  tensors, notes = [], []
  for label, _, given in desc.dml_outputs(inferred=True):
    assert given is not None
    t = given
    result = returned.get(label)
    data = None
    if result is not None and result.returned is not None:
      _, raw = npy.read_npy(result.returned)
      size = t.data_type.size_in_bits // 8
      data = np.frombuffer(raw[: len(raw) // size * size], _dtype(t.data_type))
      notes += [f"{label}: {line}" for line in result.details]
    elif result is not None and result.status == "missing":
      notes.append(f"{label}: no file came back")
    tensors.append(_tensor_json(t, None if data is None else _view(data, t)))
  fixture: dict[str, Any] = {
    "id": f"{desc.OPERATOR.lower()}/crosscheck-{str(entry['name']).split('.', 1)[-1]}",
    "op": desc.OPERATOR,
    "provenance": {
      "page": None,
      "repository": None,
      "path": str(entry["model"]),
      "commit": None,
      "url": None,
      "example": str(entry.get("note", "")),
      "source": PROVENANCE_PLACEHOLDER,
    },
    "params": params,
    "inputs": inputs,
    "shape_only": False,
    "documented_output": False,
    "errata": [
      {
        "issue": f"DirectML's output of the cross-check model {entry['name']} differs from"
        " dml_jax's.",
        "resolution": "Candidate: confirm on a second device, fill in the provenance's source,"
        " then record DirectML's output here (or fix dml_jax).",
      }
    ],
    "notes": notes,
  }
  if len(tensors) == 1:
    fixture["output"] = tensors[0]
  else:
    fixture["outputs"] = tensors
  return fixture


def _role(desc: Any, label: str) -> str:
  name = label.split("[", 1)[0]
  for field in dml_fields(desc):
    if field.dml_name == name:
      return field.argument
  raise KeyError(label)


def _param(kind: FieldKind, value: Any) -> Any:
  if kind is FieldKind.ENUM:
    return value.name
  if kind is FieldKind.SCALE_BIAS:
    return None if value is None else {"Scale": value.scale, "Bias": value.bias}
  if isinstance(value, tuple):
    return list(value)
  return value


def _extent(t: TensorDesc) -> int:
  strides = t.strides if t.strides is not None else ()
  return 1 + sum((n - 1) * s for n, s in zip(t.sizes, strides, strict=False))


def _view(buffer: np.ndarray, t: TensorDesc) -> np.ndarray | None:
  count = math.prod(t.sizes)
  if t.strides is None:
    if len(buffer) < count:
      return None
    return buffer[:count].reshape(t.sizes)
  if len(buffer) < _extent(t):
    return None
  size = buffer.dtype.itemsize
  return np.lib.stride_tricks.as_strided(
    buffer, t.sizes, tuple(s * size for s in t.strides), writeable=False
  ).copy()


def _tensor_json(t: TensorDesc, data: np.ndarray | None) -> dict[str, Any]:
  return {
    "data_type": t.data_type.name,
    "sizes": list(t.sizes),
    "data": None if data is None else data.tolist(),
  }


def report_lines(results: Sequence[OutputResult]) -> list[str]:
  """Every output's lines, then the summary per operator."""
  lines = [line for result in results for line in result.lines()]
  return [*lines, "", *summary(results)]


__all__ = [
  "OutputResult",
  "PackError",
  "candidate_errata",
  "compare_pack",
  "differences",
  "read_manifest",
  "report_lines",
  "summary",
]
