"""The cross-check cases: every registered operator's doc examples and edge cases.

A `Case` is one dispatch of one operator: a complete, valid descriptor (its outputs
given) and the linear buffer each input tensor is a view of. Nothing here is written per
operator. The doc examples come from the fixtures (`dml_jax.fixtures`); the edge cases
from builders that read the descriptor's field declarations (`dml_fields`) and the
operator's tensor-support table, and rewrite the operator's first doc example:

- `index_extremes`: each index tensor in each index type the newest level supports, its
  first element the type's largest value, its smallest, -1, and 2**32 plus the value
  (a 64-bit index that a 32-bit reading would take for an in-range one);
- `index_output_types`: an index output (ARGMAX's, TOP_K's) in each index type;
- `zero_stride` and `padded_pitch`: each input read through a stride of 0 on its
  outermost dimension (a broadcast), or with a gap after each row (the gap holds a
  sentinel: the index type's largest value, a NaN for floats);
- `float_specials`: the data tensors as FLOAT16 (and FLOAT32) holding NaNs with
  payloads, a negative NaN, -0.0, infinities and subnormals;
- `data_types`: the data tensors in FLOAT64, INT64, UINT64, INT8 and UINT8;
- `largest_rank`: the tensors padded with leading 1s to the largest rank of each level's
  support table (axes shifted, per-dimension arrays extended);
- `ties`: for operators with an index output, inputs of equal values (and +0.0 beside
  -0.0), whose order DirectML's pages leave open;
- `nearest_ties`: for resampling operators, NEAREST_NEIGHBOR with sampling coordinates
  exactly halfway between two input elements (and past both edges), in each
  RoundingDirection, over distinct input values;
- `scalar_specials`: a DML_SCALAR_UNION or DML_SCALE_BIAS holding -0.0, a NaN, an
  infinity or an integer type's extremes.

A rewrite that the newest feature level refuses is dropped; each case records the lowest
level that accepts it (`Case.feature_level`), so the pack shows which cases exist from
which level (a signed index from the level that added signed index types).

Examples:
  >>> from dml_jax._src.crosscheck import cases
  >>> found = cases.operator_cases("GATHER")
  >>> [c.name for c in found][:2]
  ['gather.doc-1', 'gather.doc-2']
  >>> sum(c.kind == "edge" for c in found) >= 5
  True
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

import numpy as np

from dml_jax._src import registry
from dml_jax._src.conformance import descriptor_for
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import INDEX_TYPES, DataType
from dml_jax._src.errors import DmlValidationError
from dml_jax._src.feature_level import NEWEST, FeatureLevel
from dml_jax._src.fields import DmlField, FieldKind, dml_fields, widened
from dml_jax._src.fixtures import Fixture, load_fixtures
from dml_jax._src.scale_bias import ScaleBias
from dml_jax._src.size_2d import Size2D
from dml_jax._src.tensor_desc import TensorDesc

MIN_EDGE_CASES = 5
"""The fewest edge cases each operator contributes (`tests/test_crosscheck.py` checks it)."""

FLOAT16_SPECIALS = (0x8000, 0x7E00, 0x7C01, 0xFE01, 0x7DFF, 0x0001, 0x7C00, 0xFC00, 0x3C00, 0x7BFF)
"""Half bit patterns: -0.0, the quiet NaN, a signalling NaN with payload 1, a negative NaN
with a payload, a NaN with every payload bit, the smallest subnormal, +inf, -inf, 1, the
largest finite half."""

FLOAT32_SPECIALS = (
  0x80000000,
  0x7FC00000,
  0x7F800001,
  0xFFC00001,
  0x7FFFFFFF,
  0x00000001,
  0x7F800000,
  0xFF800000,
  0x3F800000,
  0x7F7FFFFF,
)
"""The same patterns for FLOAT32 (a subnormal that flushing to zero would change)."""

EXTRA_DATA_TYPES = (
  DataType.FLOAT64,
  DataType.INT64,
  DataType.UINT64,
  DataType.INT8,
  DataType.UINT8,
)
"""The data types `data_types` rewrites an example into, where the operator takes them."""


@dataclasses.dataclass(frozen=True, eq=False)
class Case:
  """One dispatch of the pack.

  Attributes:
    op: the operator as model files name it (SCATTER for SCATTER_ELEMENTS).
    name: ``"<op in lower case>.<slug>"``, unique in the pack; the model's file name.
    kind: ``"doc"`` (a fixture) or ``"edge"`` (a builder's rewrite of one).
    note: what the case exercises, in a sentence.
    desc: the descriptor, its outputs given.
    buffers: each input tensor's linear buffer (1-D, its data type), keyed by the desc's
      input label (``InputTensor``, ``InputTensors[1]``), in the desc's order.
    source: the fixture id it comes from.
    feature_level: the lowest DML_FEATURE_LEVEL that accepts the desc.
  """

  op: str
  name: str
  kind: str
  note: str
  desc: OperatorDesc
  buffers: Mapping[str, np.ndarray]
  source: str
  feature_level: FeatureLevel


@dataclasses.dataclass(frozen=True, eq=False)
class _Draft:
  """A case before it is named and checked: a desc and its input buffers."""

  slug: str
  note: str
  desc: OperatorDesc
  buffers: dict[str, np.ndarray]


class MissingFixturesError(ValueError):
  """A registered operator has no doc example to build its cases from."""


# -- buffers ---------------------------------------------------------------------------------


def _numpy(data_type: DataType) -> np.dtype:
  dtype = data_type.numpy_dtype
  if dtype is None:
    raise ValueError(f"{data_type} has no NumPy type; the cross-check pack cannot hold it")
  return np.dtype(dtype)


def _converted(values: np.ndarray, data_type: DataType) -> np.ndarray:
  """`values` as `data_type`: floats to integers truncated and wrapped, as a cast would."""
  dtype = _numpy(data_type)
  with np.errstate(all="ignore"):
    if values.dtype.kind == "f" and dtype.kind in "iu":
      wide = np.nan_to_num(values.astype(np.float64), nan=0, posinf=0, neginf=0)
      return np.trunc(wide).astype(np.int64).astype(dtype)
    return values.astype(dtype)


def _filler(tensor: TensorDesc, index: bool) -> np.ndarray:
  """Values for a tensor of a shape-only example: zeros for indices (always in range),
  else 1, 2, 3, ..."""
  count = tensor.buffer_element_count
  if index:
    return np.zeros(count, _numpy(tensor.data_type))
  return _converted(np.arange(1, count + 1) % 100, tensor.data_type)


def _view(buffer: np.ndarray, tensor: TensorDesc) -> np.ndarray:
  """The logical tensor a buffer holds through the tensor's strides."""
  strides = tensor.strides
  if strides is None:
    return buffer[: math.prod(tensor.sizes)].reshape(tensor.sizes)
  size = buffer.dtype.itemsize
  return np.lib.stride_tricks.as_strided(
    buffer, tensor.sizes, tuple(s * size for s in strides), writeable=False
  ).copy()


def _buffer_for(values: np.ndarray, strides: Sequence[int], fill: Any) -> np.ndarray:
  """A linear buffer holding `values` at `strides` and `fill` everywhere else."""
  sizes = values.shape
  length = 1 + sum((n - 1) * s for n, s in zip(sizes, strides, strict=True)) if values.size else 0
  buffer = np.full(max(length, 1), fill, values.dtype)
  size = buffer.dtype.itemsize
  view = np.lib.stride_tricks.as_strided(buffer, sizes, tuple(s * size for s in strides))
  view[...] = values
  return buffer


def _sentinel(data_type: DataType) -> Any:
  """What fills a gap no element addresses: a NaN, or the type's largest value (an
  out-of-range index, should a gap be read)."""
  dtype = _numpy(data_type)
  return np.array(np.nan, dtype) if dtype.kind == "f" else np.iinfo(dtype).max


# -- descriptors -----------------------------------------------------------------------------


def _tensor_labels(desc: OperatorDesc) -> Iterator[tuple[str, DmlField, int | None, bool]]:
  """(label, field, position in an array or None, is output) for every tensor of `desc`."""
  for field in dml_fields(desc):
    if not field.kind.is_tensor:
      continue
    value = getattr(desc, field.name)
    if value is None:
      continue
    if field.kind is FieldKind.TENSOR:
      yield field.dml_name, field, None, field.output
    else:
      for i in range(len(value)):
        yield f"{field.dml_name}[{i}]", field, i, field.output


def tensor(desc: OperatorDesc, label: str) -> TensorDesc:
  """The tensor of `desc` a label (``InputTensor``, ``InputTensors[1]``) names."""
  for found, field, position, _ in _tensor_labels(desc):
    if found == label:
      value = getattr(desc, field.name)
      return value if position is None else value[position]
  raise KeyError(label)


def _rebuilt(
  desc: OperatorDesc,
  tensors: Callable[[str, DmlField, TensorDesc], TensorDesc] | None = None,
  attributes: Mapping[str, Any] | None = None,
) -> OperatorDesc:
  """`desc` with each tensor mapped by `tensors` and some attributes replaced (by Python
  field name); counts and derived fields whose value is None are computed again."""
  values: dict[str, Any] = {}
  for field in dml_fields(desc):
    value = getattr(desc, field.name)
    if field.kind.is_tensor and value is not None and tensors is not None:
      if field.kind is FieldKind.TENSOR:
        value = tensors(field.dml_name, field, value)
      else:
        value = tuple(tensors(f"{field.dml_name}[{i}]", field, t) for i, t in enumerate(value))
    values[field.name] = value
  values.update(attributes or {})
  for field in dml_fields(desc):
    if field.count_of is not None:
      values[field.name] = None
  return type(desc)(**values)


def lowest_level(desc: OperatorDesc) -> FeatureLevel | None:
  """The lowest DML_FEATURE_LEVEL that accepts `desc`, or None if none does."""
  for level in FeatureLevel:
    if desc.is_valid(level):
      return level
  return None


def _data_labels(desc: OperatorDesc) -> list[str]:
  """The inputs that hold data (not indices), in order."""
  return [label for label, field, _, out in _tensor_labels(desc) if not out and not field.index]


def _retyped(desc: OperatorDesc, old: DataType, new: DataType) -> OperatorDesc:
  """`desc` with every data tensor (not indices) of type `old`, and every DataType field
  holding `old`, in type `new`; scalar unions converted to it."""

  def retype(label: str, field: DmlField, t: TensorDesc) -> TensorDesc:
    if field.index or t.data_type != old:
      return t
    return TensorDesc(new, t.sizes, strides=t.strides)

  attributes: dict[str, Any] = {}
  for field in dml_fields(desc):
    value = getattr(desc, field.name)
    if field.kind is FieldKind.ENUM and value == old and field.enum_type is DataType:
      attributes[field.name] = new
  for field in dml_fields(desc):
    if field.kind is FieldKind.SCALAR_UNION and field.data_type_field is not None:
      holder = next(f for f in dml_fields(desc) if f.dml_name == field.data_type_field)
      if attributes.get(holder.name) is new:
        attributes[field.name] = _scalar_as(getattr(desc, field.name), new)
  return _rebuilt(desc, retype, attributes)


def _buffers_for(desc: OperatorDesc, buffers: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
  """`buffers` converted to the types `desc` gives their tensors."""
  return {label: _converted(b, tensor(desc, label).data_type) for label, b in buffers.items()}


def _anchor(desc: OperatorDesc, data_type: DataType) -> str | None:
  """The first data input (else data output) whose row takes `data_type` at the newest
  level: the tensor whose type a rewrite into `data_type` follows."""
  labels = _data_labels(desc) or [
    label for label, f, _, out in _tensor_labels(desc) if out and not f.index
  ]
  return next((label for label in labels if data_type in _supported(desc, label)), None)


def _scalar_as(value: int | float, data_type: DataType) -> int | float:
  converted = _converted(np.array([value], np.float64), data_type)[0]
  return float(converted) if data_type.is_float else int(converted)


# -- the doc examples -------------------------------------------------------------------------


def _doc_drafts(fixture: Fixture, number: int) -> _Draft | None:
  try:
    desc = descriptor_for(fixture)
  except (TypeError, ValueError):
    return None
  if not desc.is_valid(NEWEST):
    return None
  buffers: dict[str, np.ndarray] = {}
  for field in dml_fields(desc):
    if not field.kind.is_tensor or field.output:
      continue
    given = fixture.inputs.get(field.argument)
    if given is None:
      continue
    for i, item in enumerate(given if isinstance(given, tuple) else (given,)):
      label = field.dml_name if field.kind is FieldKind.TENSOR else f"{field.dml_name}[{i}]"
      t = tensor(desc, label)
      if item.buffer is not None:
        buffer = np.asarray(item.buffer)
      elif item.data is not None:
        buffer = np.asarray(item.data).ravel()
      else:
        buffer = _filler(t, field.index)
      buffers[label] = np.ascontiguousarray(buffer, _numpy(t.data_type))
  example = fixture.provenance.get("example") or fixture.id
  shape_only = " (its sizes only: the data is made up)" if fixture.shape_only else ""
  return _Draft(f"doc-{number}", f"the doc example {example!r}{shape_only}", desc, buffers)


# -- the edge-case builders -------------------------------------------------------------------

Builder = Callable[[_Draft], list[_Draft]]


def _supported(desc: OperatorDesc, label: str) -> tuple[DataType, ...]:
  """The data types the newest level's support table allows for a tensor's row."""
  table = desc.SUPPORT.at(NEWEST) if desc.SUPPORT is not None else None
  row = re.sub(r"\[\d+\]$", "", label)
  if table is None or row not in table:
    return ()
  return tuple(table[row].data_types)


def _one_retyped(desc: OperatorDesc, label: str, data_type: DataType) -> OperatorDesc:
  """`desc` with the one tensor `label` names in `data_type`."""

  def retype(name: str, f: DmlField, t: TensorDesc) -> TensorDesc:
    return TensorDesc(data_type, t.sizes, strides=t.strides) if name == label else t

  return _rebuilt(desc, retype)


def index_extremes(base: _Draft) -> list[_Draft]:
  """Each index input in each supported index type, its first element at an extreme."""
  drafts = []
  for label, field, _, out in _tensor_labels(base.desc):
    if out or not field.index:
      continue
    original = tensor(base.desc, label)
    for data_type in (t for t in INDEX_TYPES if t in _supported(base.desc, label)):
      info = np.iinfo(_numpy(data_type))
      values: list[tuple[str, int, str]] = [("max", int(info.max), "its largest value")]
      if data_type.is_signed_integer:
        values += [("min", int(info.min), "its smallest value"), ("minus-1", -1, "-1")]
      if data_type.is_64_bit:
        first = int(base.buffers[label][0])
        values.append(("plus-2-32", 2**32 + first, "2**32 more than the example's"))
      for slug, value, what in values:
        buffer = _converted(base.buffers[label], data_type).copy()
        buffer[0] = value
        buffers = {**base.buffers, label: buffer}
        drafts.append(
          _Draft(
            f"{_slug(label)}-{data_type.name.lower()}-{slug}",
            f"{label} as {data_type.name} ({original.data_type.name} in the example), its"
            f" first element {what} ({value})",
            _one_retyped(base.desc, label, data_type),
            buffers,
          )
        )
  return drafts


def index_output_types(base: _Draft) -> list[_Draft]:
  """An index output in each supported index type."""
  drafts = []
  for label, field, _, out in _tensor_labels(base.desc):
    if not out or not field.index:
      continue
    current = tensor(base.desc, label).data_type
    for data_type in (t for t in INDEX_TYPES if t in _supported(base.desc, label)):
      if data_type == current:
        continue
      drafts.append(
        _Draft(
          f"{_slug(label)}-{data_type.name.lower()}",
          f"{label} as {data_type.name}",
          _one_retyped(base.desc, label, data_type),
          dict(base.buffers),
        )
      )
  return drafts


def _restrided(
  base: _Draft, label: str, values: np.ndarray, strides: Sequence[int], fill: Any
) -> _Draft:
  """`base` with the input `label` holding `values` through `strides` (slug and note to
  be given), `fill` in the buffer's gaps."""

  def restride(name: str, f: DmlField, old: TensorDesc) -> TensorDesc:
    return TensorDesc(old.data_type, old.sizes, strides=tuple(strides)) if name == label else old

  buffer = _buffer_for(values, strides, fill)
  return _Draft("", "", _rebuilt(base.desc, restride), {**base.buffers, label: buffer})


def zero_stride(base: _Draft) -> list[_Draft]:
  """Each input read through a stride of 0 on its outermost dimension of more than one
  element: that dimension repeats its first slice."""
  drafts = []
  for label, _, _, out in _tensor_labels(base.desc):
    if out:
      continue
    t = tensor(base.desc, label)
    dims = [d for d, n in enumerate(t.sizes) if n > 1]
    if not dims:
      continue
    strides = list(_packed_strides(t.sizes))
    strides[dims[0]] = 0
    values = _view(base.buffers[label], t)
    first = values[
      tuple(slice(0, 1) if d == dims[0] else slice(None) for d in range(t.dimension_count))
    ]
    draft = _restrided(
      base, label, np.broadcast_to(first, t.sizes), strides, _sentinel(t.data_type)
    )
    drafts.append(
      dataclasses.replace(
        draft,
        slug=f"{_slug(label)}-zero-stride",
        note=f"{label} with Strides {strides}: dimension {dims[0]} broadcast (stride 0)",
      )
    )
  return drafts


def _packed_strides(sizes: Sequence[int]) -> tuple[int, ...]:
  strides, step = [], 1
  for n in reversed(sizes):
    strides.append(step)
    step *= n
  return tuple(reversed(strides))


def padded_pitch(base: _Draft) -> list[_Draft]:
  """Each input with 3 unused elements after each row (each element, for one dimension),
  holding a sentinel no element should read."""
  drafts = []
  for label, _, _, out in _tensor_labels(base.desc):
    if out:
      continue
    t = tensor(base.desc, label)
    if not t.sizes:
      continue
    strides, step = [], 1
    for d, n in enumerate(reversed(t.sizes)):
      strides.append(step)
      step *= n
      if d == 0:
        step += 3 if len(t.sizes) > 1 else 1
    if len(t.sizes) == 1:
      strides = [2]
    strides = list(reversed(strides))
    values = _view(base.buffers[label], t)
    draft = _restrided(base, label, values, strides, _sentinel(t.data_type))
    drafts.append(
      dataclasses.replace(
        draft,
        slug=f"{_slug(label)}-padded-pitch",
        note=f"{label} with Strides {strides}: gaps after each row hold a sentinel",
      )
    )
  return drafts


def float_specials(base: _Draft) -> list[_Draft]:
  """The data tensors as FLOAT16 and as FLOAT32, the first data input that takes them
  holding NaN payloads, -0.0, infinities and subnormals."""
  drafts = []
  for data_type, patterns, bits in (
    (DataType.FLOAT16, FLOAT16_SPECIALS, np.uint16),
    (DataType.FLOAT32, FLOAT32_SPECIALS, np.uint32),
  ):
    first = _anchor(base.desc, data_type)
    if first is None or first not in base.buffers:
      continue
    old = tensor(base.desc, first).data_type
    desc = _retyped(base.desc, old, data_type) if old != data_type else base.desc
    buffers = _buffers_for(desc, base.buffers)
    pattern = np.resize(np.array(patterns, bits), len(buffers[first]))
    buffers[first] = pattern.view(_numpy(data_type))
    drafts.append(
      _Draft(
        f"{data_type.name.lower()}-specials",
        f"the data as {data_type.name}, {first} cycling through the bit patterns"
        f" {', '.join(hex(p) for p in patterns)}",
        desc,
        buffers,
      )
    )
  return drafts


def data_types(base: _Draft) -> list[_Draft]:
  """The data tensors in each of `EXTRA_DATA_TYPES` the newest level supports."""
  drafts = []
  for data_type in EXTRA_DATA_TYPES:
    anchor = _anchor(base.desc, data_type)
    if anchor is None:
      continue
    old = tensor(base.desc, anchor).data_type
    if old == data_type:
      continue
    desc = _retyped(base.desc, old, data_type)
    drafts.append(
      _Draft(
        data_type.name.lower(),
        f"the example's {old.name} data as {data_type.name}",
        desc,
        _buffers_for(desc, base.buffers),
      )
    )
  return drafts


_AXIS_FIELDS = ("Axis", "Axes")
_ZERO_PREPENDED = ("Offset", "Padding", "Begin")
# RESAMPLE1's PixelOffsets are Offsets too: a size-1 dimension reads its one element anyway.
_PER_DIMENSION_ARRAYS = (FieldKind.UINT_ARRAY, FieldKind.INT_ARRAY, FieldKind.FLOAT_ARRAY)


def largest_rank(base: _Draft) -> list[_Draft]:
  """The tensors padded with leading 1s to each level's largest rank: Axis and Axes
  shifted, per-dimension arrays given a neutral first entry (0 for offsets and paddings,
  else 1); a derived count is derived again where that gives a valid desc."""
  if base.desc.SUPPORT is None:
    return []
  tensors = list(_tensor_labels(base.desc))
  if not tensors:
    return []
  rank = max(tensor(base.desc, label).dimension_count for label, *_ in tensors)
  ranks = sorted(
    {
      row.dimension_counts[1]
      for table in base.desc.SUPPORT.tables.values()
      for row in table.values()
    }
  )
  drafts = []
  for target in ranks:
    added = target - rank
    if added <= 0:
      continue
    for derive_again in (True, False):
      desc = _padded(base.desc, rank, added, derive_again)
      if desc is not None and desc.is_valid(NEWEST):
        break
    else:
      continue
    drafts.append(
      _Draft(
        f"rank-{target}",
        f"every tensor padded with leading 1s to rank {target} (from {rank})",
        desc,
        dict(base.buffers),
      )
    )
  return drafts


def _padded(desc: OperatorDesc, rank: int, added: int, derive_again: bool) -> OperatorDesc | None:
  def pad(label: str, f: DmlField, t: TensorDesc) -> TensorDesc:
    sizes = (1,) * (added + rank - t.dimension_count) + t.sizes if t.dimension_count else t.sizes
    strides = None
    if t.strides is not None:
      strides = (0,) * (len(sizes) - len(t.sizes)) + t.strides
    return TensorDesc(t.data_type, sizes, strides=strides)

  attributes: dict[str, Any] = {}
  for field in dml_fields(desc):
    value = getattr(desc, field.name)
    if field.dml_name in _AXIS_FIELDS:
      attributes[field.name] = (
        tuple(v + added for v in value) if isinstance(value, tuple) else value + added
      )
    elif field.kind in _PER_DIMENSION_ARRAYS and len(value) == rank:
      neutral = 0 if any(word in field.dml_name for word in _ZERO_PREPENDED) else 1
      attributes[field.name] = (neutral,) * added + tuple(value)
    elif field.derive is not None and derive_again:
      attributes[field.name] = None
  try:
    return _rebuilt(desc, pad, attributes)
  except (TypeError, ValueError, DmlValidationError):
    return None


def ties(base: _Draft) -> list[_Draft]:
  """For an operator with an index output: its data input all equal, in pairs of
  equal values, and as +0.0 beside -0.0 (equal, with different bits)."""
  if not any(out and field.index for _, field, _, out in _tensor_labels(base.desc)):
    return []
  labels = _data_labels(base.desc)
  if not labels:
    return []
  first = labels[0]
  buffer = base.buffers[first]
  data_type = tensor(base.desc, first).data_type
  count = len(buffer)
  patterns = [
    ("ties-all-equal", "every element equal", np.full(count, 7)),
    (
      "ties-in-pairs",
      "elements equal in pairs (2, 2, 1, 1, 2, 2, ...)",
      np.resize([2, 2, 1, 1], count),
    ),
  ]
  drafts = [
    _Draft(
      slug, f"{first}: {what}", base.desc, {**base.buffers, first: _converted(values, data_type)}
    )
    for slug, what, values in patterns
  ]
  if data_type.is_float:
    zeros = np.resize(np.array([0.0, -0.0]), count)
    drafts.append(
      _Draft(
        "ties-signed-zeros",
        f"{first}: +0.0 and -0.0 in turn (equal values, different bits)",
        base.desc,
        {**base.buffers, first: _converted(zeros, data_type)},
      )
    )
  return drafts


@dataclasses.dataclass(frozen=True)
class _Axis:
  """One dimension of a resampling: its sizes and fields. Output element o samples the
  input at x = (o - output_offset) / scale - input_offset (DirectML's definition)."""

  input_size: int
  output_size: int
  scale: float = 1.0
  input_offset: float = 0.5
  output_offset: float = -0.5

  @property
  def centred(self) -> bool:
    """The offsets are pixel centres (RESAMPLE's, UPSAMPLE_2D's: no field holds them)."""
    return (self.input_offset, self.output_offset) == (0.5, -0.5)

  @property
  def whole_factor(self) -> int | None:
    """The scale as UPSAMPLE_2D's ScaleSize holds it (centres, output = input x scale)."""
    factor = int(self.scale)
    whole = factor == self.scale >= 1 and self.output_size == self.input_size * factor
    return factor if whole and self.centred else None


NEAREST_GEOMETRIES: tuple[tuple[str, str, tuple[_Axis, _Axis]], ...] = (
  (
    "nearest-ties-downscale-2",
    "the last dimension halved about pixel centres: x = 2o + 0.5, every output on a tie",
    (_Axis(3, 3), _Axis(8, 4, 0.5)),
  ),
  (
    "nearest-ties-downscale-2x2",
    "both dimensions halved about pixel centres: x = 2o + 0.5, every output on a tie in both",
    (_Axis(4, 2, 0.5), _Axis(6, 3, 0.5)),
  ),
  (
    "nearest-ties-upscale-1.5",
    "both dimensions scaled by 1.5 about pixel centres: x = (o + 0.5) / 1.5 - 0.5, a tie"
    " at o = 1, 4 (x = 0.5, 2.5)",
    (_Axis(4, 6, 1.5), _Axis(4, 6, 1.5)),
  ),
  (
    "nearest-ties-upscale-2-offsets-0",
    "the last dimension doubled with both offsets 0: x = o / 2, every odd o on a tie",
    (_Axis(3, 3), _Axis(4, 8, 2.0, 0.0, 0.0)),
  ),
  (
    "nearest-ties-upscale-3-offsets-half-0",
    "the first dimension tripled with InputPixelOffset 0.5, OutputPixelOffset 0:"
    " x = o / 3 - 0.5, a tie at every third o (x = -0.5 below the first element)",
    (_Axis(4, 12, 3.0, 0.5, 0.0), _Axis(3, 3)),
  ),
  (
    "nearest-ties-clamped-edges",
    "scales 1.5 and 0.5 about pixel centres with outputs past the scaled input:"
    " x from -1/6 (below 0) to 2.5 and 4.5 (past the last element), ties at 0.5, 2.5, 4.5",
    (_Axis(3, 5, 1.5), _Axis(4, 3, 0.5)),
  ),
  (
    "nearest-ties-clamped-offsets",
    "the last dimension halved with InputPixelOffset 0.5, OutputPixelOffset 1:"
    " x = 2o - 2.5, every output a tie, from -2.5 and -0.5 (below 0) to 5.5 (past the end)",
    (_Axis(2, 2), _Axis(4, 5, 0.5, 0.5, 1.0)),
  ),
  (
    "nearest-upscale-3x2",
    "whole factors 3 and 2 about pixel centres: no output on a tie (x = (o + 0.5) / f -"
    " 0.5): the nearest index is o // f",
    (_Axis(2, 6, 3.0), _Axis(3, 6, 2.0)),
  ),
)
"""The geometries of `nearest_ties`: (slug, what it samples, the last two dimensions)."""


def nearest_ties(base: _Draft) -> list[_Draft]:
  """For a resampling operator (one with an InterpolationMode): NEAREST_NEIGHBOR over each
  of `NEAREST_GEOMETRIES`, in each RoundingDirection it has, its input values all distinct
  (so each output shows which neighbour a tie took).

  A descriptor qualifies by its fields: InterpolationMode; Scales (any scales) or a
  ScaleSize (UPSAMPLE_2D's whole factors of the last two dimensions); InputPixelOffsets
  and OutputPixelOffsets where it has them (without them, only the geometries about pixel
  centres apply). Dimensions before the last two keep the example's sizes, scale 1.
  """
  fields = {f.dml_name: f for f in dml_fields(base.desc)}
  mode = fields.get("InterpolationMode")
  inputs = [label for label, _, _, out in _tensor_labels(base.desc) if not out]
  if mode is None or len(inputs) != 1 or ("Scales" not in fields and "ScaleSize" not in fields):
    return []
  label = inputs[0]
  sizes = tensor(base.desc, label).sizes
  if len(sizes) < 2:
    return []
  offsets = "InputPixelOffsets" in fields and "OutputPixelOffsets" in fields
  rounding = fields.get("RoundingDirection")
  directions: list[tuple[str, dict[str, Any]]] = [("", {})]
  if rounding is not None:
    directions = [(d.name, {rounding.name: d}) for d in rounding.enum_type]
  drafts = []
  for slug, what, last in NEAREST_GEOMETRIES:
    axes = tuple(_Axis(n, n) for n in sizes[:-2]) + last
    attributes: dict[str, Any] = {mode.name: mode.enum_type.from_any("NEAREST_NEIGHBOR")}
    if "Scales" in fields:
      if not offsets and not all(a.centred for a in axes):
        continue
      attributes[fields["Scales"].name] = tuple(a.scale for a in axes)
      if offsets:
        attributes[fields["InputPixelOffsets"].name] = tuple(a.input_offset for a in axes)
        attributes[fields["OutputPixelOffsets"].name] = tuple(a.output_offset for a in axes)
    else:
      height, width = (a.whole_factor for a in last)
      if height is None or width is None:
        continue
      attributes[fields["ScaleSize"].name] = Size2D(width=width, height=height)
    inputs_at = _braced_sizes(a.input_size for a in axes)
    outputs_at = _braced_sizes(a.output_size for a in axes)
    resized = _resizer(axes)
    for direction, chosen in directions:
      desc = _try_rebuilt(base.desc, resized, {**attributes, **chosen})
      if desc is None:
        continue
      values = np.arange(1, math.prod(a.input_size for a in axes) + 1)
      shown = f", RoundingDirection {direction}" if direction else ""
      drafts.append(
        _Draft(
          f"{slug}-{direction.lower()}" if direction else slug,
          f"NEAREST_NEIGHBOR{shown}, {label} {inputs_at} -> {outputs_at}: {what};"
          f" {label} holds 1, 2, 3, ... (all distinct)",
          desc,
          {label: _converted(values, tensor(desc, label).data_type)},
        )
      )
  return drafts


def _resizer(axes: Sequence[_Axis]) -> Callable[[str, DmlField, TensorDesc], TensorDesc]:
  """A `_rebuilt` tensor map: inputs (packed) at the axes' input sizes, outputs at theirs."""

  def resized(label: str, field: DmlField, t: TensorDesc) -> TensorDesc:
    chosen = [a.output_size if field.output else a.input_size for a in axes]
    return TensorDesc(t.data_type, tuple(chosen))

  return resized


def _braced_sizes(sizes: Iterable[int]) -> str:
  return "{" + ",".join(str(n) for n in sizes) + "}"


def _try_rebuilt(
  desc: OperatorDesc,
  tensors: Callable[[str, DmlField, TensorDesc], TensorDesc],
  attributes: Mapping[str, Any],
) -> OperatorDesc | None:
  try:
    changed = _rebuilt(desc, tensors, attributes)
  except (TypeError, ValueError):
    return None
  return changed if changed.is_valid(NEWEST) else None


def scalar_specials(base: _Draft) -> list[_Draft]:
  """Each DML_SCALAR_UNION (in FLOAT16 where the operator takes it, with a NaN payload)
  and DML_SCALE_BIAS holding -0.0, a NaN, an infinity, or an integer type's extremes."""
  drafts = []
  for field in dml_fields(base.desc):
    value = getattr(base.desc, field.name)
    if field.kind is FieldKind.SCALE_BIAS:
      for slug, scale, bias in (
        ("negative-zeros", -0.0, -0.0),
        ("nan-bias", 1.0, math.nan),
        ("infinite-scale", math.inf, 0.0),
      ):
        desc = _try(base.desc, {field.name: ScaleBias(scale, bias)})
        if desc is not None:
          drafts.append(
            _Draft(
              f"{_slug(field.dml_name)}-{slug}",
              f"{field.dml_name} Scale {scale}, Bias {bias}",
              desc,
              dict(base.buffers),
            )
          )
    if field.kind is FieldKind.FLOAT and value is not None:
      for slug, special in (("negative-zero", -0.0), ("nan", math.nan), ("infinity", math.inf)):
        desc = _try(base.desc, {field.name: special})
        if desc is not None:
          drafts.append(
            _Draft(
              f"{_slug(field.dml_name)}-{slug}",
              f"{field.dml_name} = {special}",
              desc,
              dict(base.buffers),
            )
          )
    if field.kind is not FieldKind.SCALAR_UNION or field.data_type_field is None:
      continue
    holder = next(f for f in dml_fields(base.desc) if f.dml_name == field.data_type_field)
    current = getattr(base.desc, holder.name)
    for data_type, specials in _union_specials(base.desc, current):
      desc = base.desc if data_type == current else _retyped(base.desc, current, data_type)
      for slug, special in specials:
        changed = _try(desc, {field.name: special})
        if changed is None:
          continue
        buffers = _buffers_for(changed, base.buffers)
        drafts.append(
          _Draft(
            f"{_slug(field.dml_name)}-{data_type.name.lower()}-{slug}",
            f"{field.dml_name} = {_show_scalar(special, data_type)} ({data_type.name})",
            changed,
            buffers,
          )
        )
  return drafts


def _union_specials(
  desc: OperatorDesc, current: DataType
) -> list[tuple[DataType, list[tuple[str, int | float]]]]:
  """(data type, [(slug, value)]) for a scalar union: in FLOAT16 where the operator takes
  it (a NaN with payload 1, which the union's half bits keep), in its own type, and in
  INT8 where the operator takes it (a sequence from 127 wraps)."""
  found: list[tuple[DataType, list[tuple[str, int | float]]]] = []
  for data_type in dict.fromkeys((DataType.FLOAT16, current, DataType.INT8)):
    if data_type != current and _retyped_or_none(desc, current, data_type) is None:
      continue
    if data_type.is_float:
      nan = (
        widened(np.uint16(0x7C01).view(np.float16)) if data_type is DataType.FLOAT16 else math.nan
      )
      specials: list[tuple[str, int | float]] = [
        ("negative-zero", -0.0),
        ("infinity", math.inf),
        ("nan-payload" if data_type is DataType.FLOAT16 else "nan", nan),
      ]
    else:
      info = np.iinfo(_numpy(data_type))
      specials = [("max", int(info.max)), ("min", int(info.min))]
    found.append((data_type, specials))
  return found


def _retyped_or_none(desc: OperatorDesc, old: DataType, new: DataType) -> OperatorDesc | None:
  try:
    changed = _retyped(desc, old, new)
  except (TypeError, ValueError):
    return None
  return changed if changed.is_valid(NEWEST) else None


def _show_scalar(value: int | float, data_type: DataType) -> str:
  if isinstance(value, float) and math.isnan(value) and data_type is DataType.FLOAT16:
    bits = int(np.array(value, np.float16).view(np.uint16))
    return f"NaN (half bits {bits:#06x})"
  return repr(value)


def _try(desc: OperatorDesc, attributes: Mapping[str, Any]) -> OperatorDesc | None:
  try:
    changed = dataclasses.replace(cast(Any, desc), **attributes)
  except (TypeError, ValueError):
    return None
  return changed if changed.is_valid(NEWEST) else None


def _slug(label: str) -> str:
  """A field label as part of a file name: InputTensors[1] -> inputtensors1."""
  return re.sub(r"[^a-z0-9]+", "", label.lower())


BUILDERS: tuple[Builder, ...] = (
  index_extremes,
  index_output_types,
  zero_stride,
  padded_pitch,
  float_specials,
  data_types,
  largest_rank,
  ties,
  nearest_ties,
  scalar_specials,
)
"""Every edge-case builder, in the order their cases appear."""


# -- putting it together ----------------------------------------------------------------------


def operator_cases(op: str) -> list[Case]:
  """The doc examples and edge cases of one operator (any registered name).

  Raises:
    MissingFixturesError: the operator has no doc example that the newest feature level
      accepts (add its fixtures: every operator needs them to be cross-checked).
  """
  desc_type = registry.lookup(op)
  name = registry.model_file_name(desc_type.OPERATOR)
  try:
    fixtures = [f for f in load_fixtures(desc_type.OPERATOR)]
  except ValueError:
    fixtures = []
  drafts: list[tuple[_Draft, str, str]] = []
  docs: list[tuple[_Draft, Fixture]] = []
  for number, fixture in enumerate(fixtures, 1):
    draft = _doc_drafts(fixture, number)
    if draft is not None:
      drafts.append((draft, "doc", fixture.id))
      docs.append((draft, fixture))
  if not docs:
    raise MissingFixturesError(
      f"DML_OPERATOR_{desc_type.OPERATOR} has no doc example the newest feature level accepts;"
      " add its documented examples to the fixtures (dml_jax/_src/fixtures/) so that the"
      " cross-check pack covers it"
    )
  base, base_fixture = next(((d, f) for d, f in docs if not f.shape_only), docs[0])
  source = base_fixture.id
  for builder in BUILDERS:
    for draft in builder(base):
      drafts.append((draft, "edge", source))
  found = []
  seen: set[str] = set()
  for draft, kind, fixture_id in drafts:
    level = lowest_level(draft.desc)
    if level is None or draft.slug in seen:
      continue
    seen.add(draft.slug)
    found.append(
      Case(
        op=name,
        name=f"{name.lower()}.{draft.slug}",
        kind=kind,
        note=draft.note,
        desc=draft.desc,
        buffers=draft.buffers,
        source=fixture_id,
        feature_level=level,
      )
    )
  return found


def all_cases() -> list[Case]:
  """Every registered operator's cases, operators in model-file name order.

  Raises:
    MissingFixturesError: naming every operator without a usable doc example.
  """
  found, missing = [], []
  for name in registry.model_file_operators():
    try:
      found += operator_cases(name)
    except MissingFixturesError as error:
      missing.append(str(error))
  if missing:
    raise MissingFixturesError("; ".join(missing))
  return found


def logical_inputs(case: Case) -> dict[str, np.ndarray]:
  """Each input tensor's logical values (its buffer read through its strides)."""
  return {label: _view(buffer, tensor(case.desc, label)) for label, buffer in case.buffers.items()}
