"""Argument conversion for the functional API: arrays JAX can hold, and their DataTypes.

The public functions' preludes run on every eager call, so for the common case,
concrete JAX arrays, they only check the arrays' classes and declare no data
types (None): the jitted body derives them from the dtypes at trace time, once
per key, through `operands`, which owns every rule and error message and handles
everything else eagerly. The slow path declares None too wherever the types are
the arrays' own, so that a NumPy argument and a JAX argument of one dtype share a
trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dml_jax._src import dtypes, moved_bits
from dml_jax._src.dtypes import DataType
from dml_jax._src.fields import DmlField, FieldKind, dml_fields

CARRIED = moved_bits.CARRIED
"""The dtypes DirectML lacks that the functional API passes as the bits of an unsigned type."""

Role = tuple[str, bool]
"""(DML field, is_index) of one array argument."""

_ARRAY_TYPES = dtypes.ARRAY_TYPES


def input_fields(desc_type: type) -> tuple[DmlField, ...]:
  """The input tensor fields of a descriptor class, in struct order."""
  return tuple(f for f in dml_fields(desc_type) if f.kind.is_tensor and not f.output)


def _present(fields: Sequence[DmlField], count: int) -> list[DmlField]:
  """The input tensor fields that `count` arrays fill: where there are fewer arrays than
  tensor fields, the optional ones are left out first (DIAGONAL_MATRIX1 without its input)."""
  fields = list(fields)
  missing = len(fields) - count
  if missing > 0 and all(field.kind is FieldKind.TENSOR for field in fields):
    optional = [field for field in fields if field.optional][:missing]
    fields = [field for field in fields if field not in optional]
  return fields


def roles(desc_type: type, count: int) -> tuple[Role, ...]:
  """The roles of `count` input arrays of `desc_type`, in order: one per input tensor
  field, and the rest for its tensor array (JOIN's InputTensors[0], [1], ...)."""
  found: list[Role] = []
  fields = _present(input_fields(desc_type), count)
  for field in fields:
    if field.kind is FieldKind.TENSOR:
      found.append((field.dml_name, field.index))
    else:
      length = count - (len(fields) - 1)
      found += [(f"{field.dml_name}[{i}]", field.index) for i in range(length)]
  return tuple(found)


def argument_names(desc_type: type, count: int) -> tuple[str, ...]:
  """The functional API's names of `count` input arrays of `desc_type` (input, indices,
  inputs[0], inputs[1], ...), in order."""
  found: list[str] = []
  fields = _present(input_fields(desc_type), count)
  for field in fields:
    if field.kind is FieldKind.TENSOR:
      found.append(field.argument)
    else:
      found += [f"{field.argument}[{i}]" for i in range(count - (len(fields) - 1))]
  return tuple(found)


def operands(*arguments: tuple[Any, str, bool]) -> tuple[list[Any], tuple[DataType, ...]]:
  """(argument, DML field, is_index) triples -> arrays JAX can hold and their DataTypes."""
  arrays, types = [], []
  for x, role, is_index in arguments:
    array, data_type = dtypes.as_operand(x, role=role, is_index=is_index, carried=CARRIED)
    arrays.append(array)
    types.append(data_type)
  return arrays, tuple(types)


def tensor_operands(
  desc_type: type, *values: Any
) -> tuple[Sequence[Any], tuple[DataType, ...] | None]:
  """The arrays of a functional call, one per input tensor of `desc_type` (flattened), and
  their DataTypes (None where they are the arrays' own: see the module docstring)."""
  for x in values:  # the eager fast path: a loop, cheaper than all() on a generator
    if type(x) not in _ARRAY_TYPES:
      break
  else:
    return values, None
  arrays, types = operands(
    *((x, *role) for x, role in zip(values, roles(desc_type, len(values)), strict=True))
  )
  return arrays, _unless_own(types, arrays)


def sequence_argument(values: Any, name: str) -> Sequence[Any]:
  """A list or tuple of arrays (TypeError for anything else, a string or a lone array)."""
  if type(values) in (list, tuple):
    return values
  if not isinstance(values, Sequence) or isinstance(values, str):
    raise TypeError(f"{name} must be a sequence of arrays; got {type(values).__name__}")
  return values


def _unless_own(types: tuple[DataType, ...], arrays: Sequence[Any]) -> tuple[DataType, ...] | None:
  """None if `types` are what the arrays' dtypes give (a narrowed 64-bit host index is not)."""
  own = tuple(dtypes.data_type_of_dtype(np.dtype(a.dtype)) for a in arrays)
  return None if own == types else types
