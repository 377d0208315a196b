"""A model's resources: byte buffers built from their initializers, as DxDispatch builds them.

Every resource is a buffer of ``sizeInBytes`` bytes: its initializer's bytes at byte 0,
zeros after them. Without ``sizeInBytes`` the size is the initializer's length rounded
up to a multiple of 4; an explicit size is used as given, and must hold the initializer
(plus ``initialValuesOffsetInBytes``, which is checked but never moves the data).

``initialValues`` is one of:

- an array of numbers, converted to ``initialValuesDataType`` (`scalars`);
- an array of ``{"type": T, "value": v}`` objects when ``initialValuesDataType`` is
  absent or UNKNOWN: each value converted to its own T and packed with no padding
  (FLOAT16 is not allowed there); the buffer then has no element type;
- ``{"value": v, "valueCount": n}``: n copies of v;
- ``{"valueStart": a, "valueDelta": d, "valueCount": n}``: a, a + d, ... summed in the
  element type;
- ``{"sourcePath": "file"}``: a .npy file (its type is the buffer's) or, for any other
  extension, the file's raw bytes (the type must be given). The path is relative to the
  input folder and must stay inside it, and the file must be a regular file (`files`).

A model is untrusted input: everything it makes the runner read or allocate is charged
to a `Budget` (``max_bytes``) before it is read or allocated. A buffer is charged
`RUN_COPIES` times its ``sizeInBytes`` (what running it holds at once), a sourcePath
file its size.

The buffer's element type (``initialValuesDataType``, or the .npy file's) is what print
and writeFile show it as and the unit of a binding's ``elementOffset``.
"""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from dml_jax._src.dtypes import DataType
from dml_jax._src.fields import FieldError, parse_data_type, parse_unsigned
from dml_jax._src.model import files, npy, scalars
from dml_jax._src.model.files import Budget
from dml_jax._src.model.scalars import ConversionError

RUN_COPIES = 5
"""How many copies of a buffer a load and a run hold at once, measured on the CPU with a
256 MiB buffer (5.0 copies at the peak, 1.33 GB): the initializer's bytes
(`Resource.initial`), the host image `Resource.image` builds (which `jax.device_put`
shares on the CPU rather than copying), and three in the program that dispatches on it
(its output and XLA's temporaries for the views a binding reads and writes). A print or
writeFile of the buffer adds up to two more while the run lasts (its snapshot and the
bytes taken from it), which the budget does not charge."""


@dataclasses.dataclass(frozen=True)
class Resource:
  """One buffer of a model.

  Attributes:
    name: the resource's name.
    data_type: its element type (UNKNOWN for a mixed list).
    initial: the initializer's bytes (what print shows, from byte 0).
    size_in_bytes: the buffer's allocated size.
  """

  name: str
  data_type: DataType
  initial: bytes
  size_in_bytes: int

  @property
  def element_size(self) -> int:
    return scalars.element_size(self.data_type)

  def image(self) -> np.ndarray:
    """The buffer's initial bytes: the initializer, then zeros to `size_in_bytes`."""
    out = np.zeros(self.size_in_bytes, np.uint8)
    out[: len(self.initial)] = np.frombuffer(self.initial, np.uint8)
    return out


def resolve_source(
  source: str, input_path: pathlib.Path, *, trust_paths: bool = False
) -> pathlib.Path:
  """A sourcePath: under the input path, where it must stay (`files.contained`); with
  `trust_paths`, as DxDispatch resolves it: under the input path if there, else as given.

  Raises:
    files.UnsafePathError: a path that leaves the input folder (unless `trust_paths`).
  """
  if not trust_paths:
    return files.contained(input_path, source, "sourcePath")
  under = (input_path / source).absolute()
  return under if under.exists() else pathlib.Path(source).absolute()


def parse_resource(
  name: str,
  entry: Any,
  input_path: pathlib.Path,
  *,
  budget: Budget | None = None,
  trust_paths: bool = False,
) -> Resource:
  """One resource entry as a Resource, its cost charged to `budget` (default: a fresh
  `files.DEFAULT_MAX_BYTES`).

  Raises:
    FieldError: naming the field and DxDispatch's reason (or the limit it passes).
  """
  budget = Budget() if budget is None else budget
  try:
    return _parse_resource(name, entry, input_path, budget, trust_paths)
  except (files.BudgetError, files.UnsafePathError) as error:
    raise FieldError(None, str(error)) from None
  except MemoryError:
    raise FieldError(
      None,
      "not enough memory to build this buffer; lower --max-bytes (load_model(...,"
      " max_bytes=N)) to what this machine holds, or free memory",
    ) from None


def _parse_resource(
  name: str, entry: Any, input_path: pathlib.Path, budget: Budget, trust_paths: bool
) -> Resource:
  if not isinstance(entry, Mapping):
    raise FieldError(None, f"a resource must be an object; got {type(entry).__name__}")
  if "initialValues" not in entry:
    raise FieldError(None, "Field 'initialValues' is required.")
  data_type = DataType.UNKNOWN
  if "initialValuesDataType" in entry:
    data_type = parse_data_type(entry["initialValuesDataType"], "initialValuesDataType")
  values = entry["initialValues"]
  declared = None
  if "sizeInBytes" in entry:
    declared = parse_unsigned(entry["sizeInBytes"], "sizeInBytes")
    budget.check(declared * RUN_COPIES, _buffer_cost(f"sizeInBytes {declared}"))
  if isinstance(values, str):
    if values != "deferred":
      raise FieldError("initialValues", "The 'initialValuesDataType' only supports deferred")
    raise FieldError(
      "initialValues",
      '"deferred" resources are filled by ONNX dispatchables only, which dml_jax does not run',
    )
  if isinstance(values, list):
    if data_type == DataType.UNKNOWN:
      initial = _list_initializer(values)
    else:
      _check_buffer_type(data_type, "initialValuesDataType")
      initial = b"".join(
        _convert(v, data_type, f"initialValues[{i}]") for i, v in enumerate(values)
      )
  elif isinstance(values, Mapping):
    data_type, initial = _object_initializer(
      values, data_type, input_path, entry, budget, trust_paths
    )
  else:
    raise FieldError(
      None, "Field 'initialValues' must be an array of numbers, an object, or deferred."
    )
  if not initial:
    raise FieldError("initialValues", "'initialValues' must be non-empty.")
  offset = parse_unsigned(entry.get("initialValuesOffsetInBytes", 0), "initialValuesOffsetInBytes")
  if declared is not None:
    size = declared
    if len(initial) + offset > size:
      raise FieldError(
        "sizeInBytes",
        f"The buffer size ({size} bytes) is too small for the initialValues ({len(initial)}"
        f" bytes) at offset {offset} bytes.",
      )
  else:
    size = (len(initial) + 3) // 4 * 4
  budget.charge(size * RUN_COPIES, _buffer_cost(f"a buffer of {size} bytes"))
  return Resource(name, data_type, initial, size)


def _buffer_cost(what: str) -> str:
  return f"{what} ({RUN_COPIES} copies of the buffer while it runs)"


def _check_buffer_type(data_type: DataType, field: str) -> None:
  if data_type not in scalars.BUFFER_TYPES:
    raise FieldError(
      field, f"Invalid tensor data type. ({data_type.name} buffers are not supported)"
    )


def _convert(value: Any, data_type: DataType, field: str) -> bytes:
  try:
    return scalars.element_bytes(value, data_type)
  except ConversionError as error:
    raise FieldError(field, str(error)) from None


def _list_initializer(values: list[Any]) -> bytes:
  parts = []
  for i, item in enumerate(values):
    where = f"initialValues[{i}]"
    if not isinstance(item, Mapping):
      raise FieldError(where, "Expected an object.")
    for key in ("type", "value"):
      if key not in item:
        raise FieldError(where, f"Field '{key}' is required.")
    data_type = parse_data_type(item["type"], f"{where}.type")
    if data_type not in scalars.BUFFER_TYPES or data_type == DataType.FLOAT16:
      raise FieldError(f"{where}.type", f"Data type not supported. ({data_type.name})")
    parts.append(_convert(item["value"], data_type, f"{where}.value"))
  return b"".join(parts)


def _object_initializer(
  values: Mapping[str, Any],
  data_type: DataType,
  input_path: pathlib.Path,
  entry: Mapping[str, Any],
  budget: Budget,
  trust_paths: bool,
) -> tuple[DataType, bytes]:
  if "value" in values:
    if "valueStart" in values or "sourcePath" in values:
      raise FieldError(
        "initialValues", "'value' excludes 'valueStart' and 'sourcePath': give one of them"
      )
    _require_type(data_type)
    count = _count(values, data_type, budget)
    return data_type, _convert(values["value"], data_type, "initialValues.value") * count
  if "valueStart" in values:
    _require_type(data_type)
    count = _count(values, data_type, budget)
    for key in ("valueDelta",):
      if key not in values:
        raise FieldError("initialValues", f"Field '{key}' is required.")
    _convert(values["valueStart"], data_type, "initialValues.valueStart")
    _convert(values["valueDelta"], data_type, "initialValues.valueDelta")
    return data_type, scalars.sequence(
      values["valueStart"], values["valueDelta"], count, data_type
    ).tobytes()
  if "sourcePath" in values:
    return _file_initializer(values, data_type, input_path, entry, budget, trust_paths)
  raise FieldError("initialValues", "Error parsing 'initialValues' object: unknown generator type.")


def _require_type(data_type: DataType) -> None:
  if data_type == DataType.UNKNOWN:
    raise FieldError(None, "Field 'initialValuesDataType' is required.")
  _check_buffer_type(data_type, "initialValuesDataType")


def _count(values: Mapping[str, Any], data_type: DataType, budget: Budget) -> int:
  if "valueCount" not in values:
    raise FieldError("initialValues", "Field 'valueCount' is required.")
  count = parse_unsigned(values["valueCount"], "initialValues.valueCount", 32)
  size = count * scalars.element_size(data_type)
  budget.check(size * RUN_COPIES, _buffer_cost(f"valueCount {count} of {data_type.name}"))
  return count


def _file_initializer(
  values: Mapping[str, Any],
  data_type: DataType,
  input_path: pathlib.Path,
  entry: Mapping[str, Any],
  budget: Budget,
  trust_paths: bool,
) -> tuple[DataType, bytes]:
  source = values["sourcePath"]
  if not isinstance(source, str):
    raise FieldError("initialValues.sourcePath", f"must be a path (a string); got {source!r}")
  resample = entry.get("resampleSize", [])
  if not isinstance(resample, list) or (resample and len(resample) != 4):
    raise FieldError("resampleSize", "must be empty or hold exactly 4 sizes")
  try:
    path = resolve_source(source, input_path, trust_paths=trust_paths)
  except files.UnsafePathError as error:
    raise FieldError("initialValues.sourcePath", str(error)) from None
  extension = path.suffix.lower()
  if extension in (".jpg", ".png"):
    raise FieldError(
      "initialValues.sourcePath", f"image files ({extension}) are not supported by dml_jax"
    )
  try:  # the file is held while its buffer is built: charged apart from the buffer
    content = files.read_regular(path, Budget(budget.left), "sourcePath", follow=trust_paths)
  except (files.UnsafePathError, files.BudgetError) as error:
    raise FieldError("initialValues.sourcePath", str(error)) from None
  except OSError as error:
    raise FieldError(
      "initialValues.sourcePath",
      f"Given filename '{path}' could not be opened. ({error.strerror or error})",
    ) from None
  if extension == ".npy":
    try:
      file_type, data = npy.read_npy(content)
    except npy.NpyError as error:
      raise FieldError("initialValues.sourcePath", f"{path}: {error}") from None
    if file_type != DataType.UNKNOWN:
      if data_type not in (DataType.UNKNOWN, file_type):
        raise FieldError(
          "initialValuesDataType",
          f"Data type from file '{path}' does not match field 'initialValuesDataType'."
          f" (the file holds {file_type.name}, the field says {data_type.name})",
        )
      return file_type, data
    _require_type(data_type)
    return data_type, data
  _require_type(data_type)
  return data_type, content
