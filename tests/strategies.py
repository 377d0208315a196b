"""Hypothesis strategies: the shared machinery of valid operator descriptors, and mutants.

Each operator's test module (`tests/ops/test_<module>.py`) declares its strategy in `VALID`
(`tests/per_operator.py` collects them): it draws a feature level at which the operator
exists (`levels`), then a descriptor that level's tables accept (`table_at`, `rank_range`:
ranks, data types, index types), with small sizes (`draw_sizes`), and input data
(`draw_data`) with in-range, negative and out-of-range indices (`draw_indices`), and returns
a `Case`. `invalid_case(valid, own_mutations, free_output_dimensions)` draws a valid case
and breaks exactly one rule, a generic one (data types, ranks, sizes, the tensor layer,
outputs, Axis) or one of the operator's own (its module's `MUTANTS` entry, built with
`replace_tensor` and `rebuild`), returning the DML field that the error must name.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import DataType, FeatureLevel, FieldKind, TensorDesc
from dml_jax._src import registry
from dml_jax._src.fields import dml_fields

DESCS = dict(registry.operators())
OPERATORS = tuple(DESCS)


@dataclasses.dataclass
class Case:
  """A descriptor, the level it is valid at, its input arrays and how to run it."""

  desc: Any
  level: FeatureLevel
  arrays: list[np.ndarray]
  run: Callable[..., Any]  # the functional API, given the arrays and the level
  expected: Callable[[], np.ndarray]  # the NumPy reference's output


GATHER_ND_DESCS = (dml.GatherNdDesc, dml.GatherNd1Desc)


def table_at(desc_type, level):
  """The operator's support table at `level` (None before its introduction)."""
  return desc_type.SUPPORT.at(level)


def rank_range(table, level):
  """The ranks every tensor of `table` allows at `level`: (lowest, highest)."""
  low = max(row.dimension_counts[0] for row in table.values())
  high = min(min(row.dimension_counts[1] for row in table.values()), level.max_dimension_count)
  return low, high


@st.composite
def levels(draw, op):
  """A feature level at which the registered operator `op` exists."""
  desc_type = DESCS[op]
  return draw(st.sampled_from([lv for lv in FeatureLevel if table_at(desc_type, lv)]))


def draw_data(draw, data_type: DataType, shape):
  """Random values of `data_type`: standard normal floats, integers over the whole type."""
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  dtype = data_type.numpy_dtype
  if data_type.is_float:
    return rng.standard_normal(shape).astype(dtype)
  info = np.iinfo(dtype)
  return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def draw_indices(draw, data_type: DataType, shape, size_of):
  """Indices around [-size - 2, size + 2) plus extremes of the type; size_of(pos) -> size."""
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  dtype = data_type.numpy_dtype
  info = np.iinfo(dtype)
  out = np.empty(shape, dtype)
  extremes = [info.min, info.max, 2**31 - 1, 2**32 + 1, -(2**31)]
  for pos in np.ndindex(*shape):
    size = size_of(pos)
    kind = rng.integers(0, 10)
    if kind == 0:
      value = int(rng.choice(extremes))
    elif kind <= 2:
      value = int(rng.integers(-size - 2, size + 3))
    else:
      value = int(rng.integers(0, size))
      if data_type.is_signed_integer and rng.integers(0, 2):
        value -= size
    out[pos] = min(max(value, info.min), info.max)
  return out


def draw_sizes(draw, rank, max_elements=96):
  """`rank` sizes of 1 to 4, at most about `max_elements` elements in all."""
  sizes = []
  for _ in range(rank):
    room = max(1, max_elements // max(1, math.prod(sizes)))
    sizes.append(draw(st.integers(1, min(4, room))))
  return tuple(sizes)


def draw_selection_data(draw, data_type: DataType, shape):
  """Values with many ties: a few distinct values, and for floats -0.0, 0.0, +-inf and NaNs
  of both signs and two payloads (all of which rank as one value above +inf)."""
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  dtype = data_type.numpy_dtype
  if data_type.is_float:
    nans = np.array([np.nan, -np.nan], dtype)
    other_payload = (nans.view(f"u{dtype.itemsize}") | np.array(1, f"u{dtype.itemsize}")).view(
      dtype
    )
    numbers = np.array([-2.5, -1, -0.0, 0.0, 1, 3, np.inf, -np.inf], dtype)
    pool = np.concatenate([numbers, nans, other_payload])
  else:
    info = np.iinfo(dtype)
    pool = np.array([info.min, info.max, 0, 1, 2, 3, info.max - 1], dtype)
  return rng.choice(pool, size=shape)


# -- mutants ---------------------------------------------------------------------------------


def replace_tensor(tensor: TensorDesc, **changes) -> TensorDesc:
  """`tensor` with `changes` (TensorDesc's fields)."""
  return dataclasses.replace(tensor, **changes)


def _mutated_fields(desc):
  """The tensor fields the generic mutants change: the inputs, or the outputs of an operator
  that reads no tensor (the fills)."""
  inputs = [f for f in dml_fields(desc) if f.kind.is_tensor and not f.output]
  return inputs or [f for f in dml_fields(desc) if f.output]


def replace_input(desc, position, **changes):
  """`desc` with its `position`-th input tensor (in `dml_inputs` order) changed; for an
  operator without inputs, its `position`-th output."""
  values, k = {}, 0
  for field in _mutated_fields(desc):
    value = getattr(desc, field.name)
    if field.kind is FieldKind.TENSOR:
      if k == position:
        values[field.name] = replace_tensor(value, **changes)
      k += 1
      continue
    if k <= position < k + len(value):
      tensors = list(value)
      tensors[position - k] = replace_tensor(tensors[position - k], **changes)
      values[field.name] = tuple(tensors)
    k += len(value)
  return dataclasses.replace(desc, **values)


def _with_input(desc, **changes):
  return replace_input(desc, 0, **changes)


def _input_name(desc):
  return desc.dml_inputs()[0][0]


def _mutations(desc, level, draw, own_mutations, free_output_dimensions):
  """Yields (name, mutant descriptor, field the error must name): the generic mutants, then
  the operator's own (`own_mutations(desc, level, draw)`, None: none).
  `free_output_dimensions(desc)` (None: none) are the output dimensions no input fixes."""
  table = desc.SUPPORT.at(level)
  inputs = list(desc.dml_inputs())
  if not inputs:  # an operator with no input (DIAGONAL_MATRIX): its output's own rules
    yield from _output_only_mutations(desc, level, draw, own_mutations)
    return
  name, row, tensor = inputs[0]
  n = tensor.dimension_count
  # Forbidden data types per role at this level.
  for position, (field, role, _) in enumerate(inputs[:2]):
    forbidden = [t for t in DataType if t not in table[role].data_types and t.numpy_dtype]
    if forbidden:
      bad = draw(st.sampled_from(forbidden))
      yield "data type", replace_input(desc, position, data_type=bad), f"{field}.DataType"
  yield (
    "unknown type",
    _with_input(desc, data_type=DataType.UNKNOWN),
    f"{_input_name(desc)}.DataType",
  )
  # A rank the level does not allow: every tensor gets it (so only the rank is wrong).
  low, high = table[inputs[0][1]].dimension_counts
  wrong = [r for r in range(1, 10) if not low <= r <= high and r <= 9]
  if wrong:
    yield (
      "rank",
      _with_rank(desc, draw(st.sampled_from(wrong))),
      f"{_input_name(desc)}.DimensionCount",
    )
  # Zero sizes and too many elements.
  yield "zero size", _with_input(desc, sizes=(0,) + tensor.sizes[1:]), f"{_input_name(desc)}.Sizes"
  yield (
    "too many elements",
    _with_input(desc, sizes=(2**16, 2**16) + tensor.sizes[2:] if n >= 2 else (2**32,)),
    f"{_input_name(desc)}.Sizes",
  )
  # Strides, total size, alignment, flags.
  yield "strides length", _with_input(desc, strides=(1,) * (n + 1)), f"{_input_name(desc)}.Strides"
  yield (
    "total size",
    _with_input(desc, total_tensor_size_in_bytes=tensor.minimum_size_in_bytes - 4),
    f"{_input_name(desc)}.TotalTensorSizeInBytes",
  )
  yield (
    "alignment",
    _with_input(desc, guaranteed_base_offset_alignment=3),
    f"{_input_name(desc)}.GuaranteedBaseOffsetAlignment",
  )
  yield "flags", _with_input(desc, flags=2), f"{_input_name(desc)}.Flags"
  if isinstance(desc, dml.NonzeroCoordinatesDesc):  # two output tensors: see its mutations
    pass
  elif not hasattr(desc, "output_tensor"):  # OutputTensors (SPLIT): see _output_array_mutations
    yield from _output_array_mutations(desc)
  else:
    output = desc.output
    yield (
      "owned output",
      dataclasses.replace(desc, output_tensor=replace_tensor(output, flags=1)),
      "OutputTensor.Flags",
    )
    # Output sizes and data type.
    free = set() if free_output_dimensions is None else free_output_dimensions(desc)
    bigger = _bigger_output_sizes(desc, output.sizes, free)
    if bigger is not None:
      yield (
        "output sizes",
        dataclasses.replace(desc, output_tensor=replace_tensor(output, sizes=bigger)),
        "OutputTensor.Sizes",
      )
    other = DataType.INT8 if output.data_type != DataType.INT8 else DataType.UINT8
    retyped = dataclasses.replace(desc, output_tensor=replace_tensor(output, data_type=other))
    if retyped.infer_outputs()[0].data_type != other:  # not CAST's, which any type may be
      yield ("output type", retyped, "OutputTensor.DataType")
  # Axis out of range.
  if hasattr(desc, "axis"):
    yield "axis", dataclasses.replace(desc, axis=n + draw(st.integers(0, 3))), "Axis"
  if own_mutations is not None:
    yield from own_mutations(desc, level, draw)


def _output_only_mutations(desc, level, draw, own_mutations):
  """The mutants of an operator whose one tensor is its OutputTensor (DIAGONAL_MATRIX, and
  DIAGONAL_MATRIX1 without an input): a type or rank the level lacks, the tensor layer."""
  table = desc.SUPPORT.at(level)
  output = desc.output_tensor
  row = table["OutputTensor"]
  forbidden = [t for t in DataType if t not in row.data_types and t.numpy_dtype]
  if forbidden:
    bad = replace_tensor(output, data_type=draw(st.sampled_from(forbidden)))
    yield "output type", _rebuild_output(desc, bad), "OutputTensor.DataType"
  low, high = row.dimension_counts
  wrong = [r for r in range(1, 10) if not low <= r <= high]
  rank = draw(st.sampled_from(wrong))
  sizes = (output.sizes + (1,) * 9)[:rank]
  yield (
    "rank",
    _rebuild_output(desc, replace_tensor(output, sizes=sizes)),
    ("OutputTensor.DimensionCount"),
  )
  zero = replace_tensor(output, sizes=(0,) + output.sizes[1:])
  yield "zero size", _rebuild_output(desc, zero), "OutputTensor.Sizes"
  yield "flags", _rebuild_output(desc, replace_tensor(output, flags=1)), "OutputTensor.Flags"
  if own_mutations is not None:
    yield from own_mutations(desc, level, draw)


def _rebuild_output(desc, output):
  """`desc` with `output` as its OutputTensor, a value that must follow its type following."""
  changes = {"output_tensor": output}
  if isinstance(desc, dml.DiagonalMatrix1Desc):
    changes["value_data_type"] = None
    changes["value"] = 0
  return dataclasses.replace(desc, **changes)


def _bigger_output_sizes(desc, sizes, free):
  """`sizes` with one more element in the last dimension the inputs fix (all but `free`), or
  None where they fix none: ONE_HOT's size on Axis is the depth, which only the OutputTensor
  holds, so any value there is valid."""
  if not desc.dml_inputs():  # an operator without inputs (the fills): no size is fixed
    free = set(range(len(sizes)))
  fixed = [d for d in range(len(sizes)) if d not in free]
  if not fixed:
    return None
  d = fixed[-1]
  return sizes[:d] + (sizes[d] + 1,) + sizes[d + 1 :]


def _output_array_mutations(desc):
  """The generic output mutants for given OutputTensors, or for the first of several outputs
  (TOP_K's values and indices): owned or retyped. (Which field wrong output sizes break
  depends on the operator: see _operator_mutations.)"""
  output_fields = [f for f in dml_fields(desc) if f.output]
  field = output_fields[0]
  if field.kind is FieldKind.TENSOR:
    given = {f.name: t for f, t in zip(output_fields, desc.outputs, strict=True)}
    output = desc.outputs[0]
    for name, changes, rule in (
      ("owned output", {"flags": 1}, "Flags"),
      ("output type", {"data_type": _other_type(output.data_type)}, "DataType"),
    ):
      mutant = {**given, field.name: replace_tensor(output, **changes)}
      yield name, dataclasses.replace(desc, **mutant), f"{field.dml_name}.{rule}"
    return
  outputs = getattr(desc, field.name)

  def first(**changes):
    return dataclasses.replace(
      desc, **{field.name: (replace_tensor(outputs[0], **changes), *outputs[1:])}
    )

  yield "owned output", first(flags=1), f"{field.dml_name}[0].Flags"
  other = DataType.INT8 if outputs[0].data_type != DataType.INT8 else DataType.UINT8
  yield "output type", first(data_type=other), f"{field.dml_name}[0].DataType"


def _other_type(data_type):
  return DataType.INT8 if data_type != DataType.INT8 else DataType.UINT8


def _with_rank(desc, rank):
  """Every tensor given `rank` dimensions; axes 0 and counts computed again (from the new
  ranks), so that mostly the rank is wrong."""

  def fit(t: TensorDesc):
    sizes = (t.sizes + (1,) * 9)[:rank] if rank > t.dimension_count else t.sizes[-rank:]
    return replace_tensor(t, sizes=(1,) * (rank - len(sizes)) + sizes)

  changes = {}
  for field in dml_fields(desc):
    value = getattr(desc, field.name)
    if field.kind is FieldKind.TENSOR and not field.output:
      changes[field.name] = fit(value)
    elif field.kind is FieldKind.TENSOR_ARRAY and not field.output:
      changes[field.name] = tuple(fit(t) for t in value)
    elif field.output and not field.optional:  # required outputs: OutputTensors, ONE_HOT's
      changes[field.name] = fit(value) if field.kind is FieldKind.TENSOR else tuple(map(fit, value))
    elif field.derive is not None:
      changes[field.name] = None
    elif field.dml_name == "Axis":
      changes[field.name] = 0
  return rebuild(desc, changes)


def rebuild(desc, changes):
  """`desc` with `changes` (its fields by name), its optional outputs inferred again."""
  fields = {f.name: getattr(desc, f.name) for f in dataclasses.fields(desc)}
  fields.update(changes)
  for field in dml_fields(desc):  # an output that can be inferred is, from the changed fields
    if field.output and field.optional:
      fields[field.name] = None
  desc_type = type(desc)
  if isinstance(desc, GATHER_ND_DESCS):  # the batch count picks GATHER_ND or GATHER_ND1
    b = fields.pop("batch_dimension_count", 0)
    desc_type = dml.GatherNd1Desc if b else dml.GatherNdDesc
    fields.update({"batch_dimension_count": b} if b else {})
  return desc_type(**fields)


def dml_name(desc, name):
  """The DirectML name of `desc`'s field `name` ("value_start": "ValueStart")."""
  return next(f.dml_name for f in dml_fields(desc) if f.name == name)


def updates_mutations(desc, draw):
  """The scatters' rules on UpdatesTensor (SCATTER_ELEMENTS, SCATTER_ND): updates of
  another type than the input, of other sizes than the indices', of another rank."""
  updates = desc.updates_tensor
  other = DataType.INT8 if updates.data_type != DataType.INT8 else DataType.UINT8
  yield (
    "updates type",
    rebuild(desc, {"updates_tensor": replace_tensor(updates, data_type=other)}),
    "UpdatesTensor.DataType",
  )
  d = draw(st.integers(0, updates.dimension_count - 1))
  sizes = list(updates.sizes)
  sizes[d] += 1
  yield (
    "updates sizes",
    rebuild(desc, {"updates_tensor": replace_tensor(updates, sizes=tuple(sizes))}),
    "UpdatesTensor.Sizes",
  )
  yield (
    "updates rank",
    rebuild(desc, {"updates_tensor": replace_tensor(updates, sizes=(1,) + updates.sizes)}),
    "UpdatesTensor.DimensionCount",
  )


@st.composite
def invalid_case(draw, valid, own_mutations=None, free_output_dimensions=None):
  """(valid case, mutation name, mutant descriptor, DML field the error must name): a case of
  the strategy `valid`, broken by a generic mutant or one of `own_mutations`; the operator's
  tables `MUTANTS` and `FREE_OUTPUT_DIMENSIONS` hold its `own_mutations` and
  `free_output_dimensions`."""
  case = draw(valid)
  mutants = list(_mutations(case.desc, case.level, draw, own_mutations, free_output_dimensions))
  name, mutant, field = draw(st.sampled_from(mutants))
  return case, name, mutant, field
