"""DML_OPERATOR_SPLIT: cuts one tensor along Axis into consecutive pieces, JOIN's inverse.

DirectML keeps the pieces' sizes only in OutputTensors: output k holds the input's
slab ``[offset_k, offset_k + OutputTensors[k].Sizes[Axis])`` along Axis, where
``offset_k`` is the sum of the earlier outputs' Axis sizes. So OutputTensors is
given, never inferred, and the rules check it: one rank and data type with the
input, the input's sizes off Axis, Axis sizes summing to the input's.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex

import jax
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, kernels, natural, registry, rules
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import ALL_DATA, FLOAT_AND_INT_16_32, UP_TO_32_BIT, DataType
from dml_jax._src.errors import Checker
from dml_jax._src.feature_level import (
  FeatureLevel,
  FeatureLevelLike,
  SupportTable,
  as_level,
  support,
)
from dml_jax._src.fields import FieldKind, dml_field
from dml_jax._src.integers import as_int, as_int_tuple
from dml_jax._src.kernels import runs_cpu
from dml_jax._src.kernels.partitioning import Roles, Shaped, around_axis, factors
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc


def _table(dimension_counts, data_types):
  row = support(dimension_counts, data_types)
  return {"InputTensor": row, "OutputTensors": row}


# Unlike JOIN, SPLIT goes straight from 4 dimensions (FL 1_0 to 2_1) to 1 to 8 at FL 3_0.
_SUPPORT = SupportTable(
  "SPLIT",
  {
    FeatureLevel.FL_1_0: _table(4, FLOAT_AND_INT_16_32),
    FeatureLevel.FL_2_1: _table(4, UP_TO_32_BIT),
    FeatureLevel.FL_3_0: _table((1, 8), UP_TO_32_BIT),
    FeatureLevel.FL_4_1: _table((1, 8), ALL_DATA),
  },
)


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class SplitDesc(OperatorDesc):
  """`DML_SPLIT_OPERATOR_DESC`.

  Attributes:
    input_tensor: InputTensor.
    output_tensors: OutputTensors, one or more, in order. Required: DirectML
      keeps the pieces' sizes only here, so they cannot be inferred.
    axis: Axis, in [0, DimensionCount).
    output_count: OutputCount; None means len(output_tensors).

  Examples:
    >>> desc = SplitDesc(
    ...     TensorDesc("FLOAT32", (1, 1, 6, 2)),
    ...     (TensorDesc("FLOAT32", (1, 1, 2, 2)), TensorDesc("FLOAT32", (1, 1, 4, 2))),
    ...     axis=2,
    ... )
    >>> desc
    SplitDesc(input_tensor=TensorDesc("FLOAT32", (1, 1, 6, 2)), output_tensors=(TensorDesc("FLOAT32", (1, 1, 2, 2)), TensorDesc("FLOAT32", (1, 1, 4, 2))), axis=2)
    >>> print(desc)
    DML_OPERATOR_SPLIT(InputTensor=FLOAT32[1,1,6,2], Axis=2, OutputCount=2) -> (FLOAT32[1,1,2,2], FLOAT32[1,1,4,2])
  """

  OPERATOR = "SPLIT"
  SUPPORT = _SUPPORT
  FUNCTION = "split"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  output_tensors: tuple[TensorDesc, ...] = dml_field(
    "OutputTensors", FieldKind.TENSOR_ARRAY, output=True
  )
  axis: int = dml_field("Axis", FieldKind.UINT)
  output_count: int = dml_field("OutputCount", FieldKind.UINT, count_of="output_tensors")

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      output_tensors: Sequence[TensorDesc],
      axis: SupportsIndex,
      output_count: SupportsIndex | None = None,
    ) -> None: ...

  def _outputs_fit(self) -> bool:
    """Whether OutputTensors are pieces of InputTensor along Axis (every rule but the tables)."""
    source, outputs, axis = self.input_tensor, self.output_tensors, self.axis
    if not outputs or self.output_count != len(outputs):
      return False
    if not 0 <= axis < source.dimension_count:
      return False
    for tensor in outputs:
      if tensor.data_type != source.data_type:
        return False
      if tensor.dimension_count != source.dimension_count:
        return False
      if _off_axis(tensor.sizes, axis) != _off_axis(source.sizes, axis):
        return False
    return sum(t.sizes[axis] for t in outputs) == source.sizes[axis]

  def infer_outputs(self) -> tuple[TensorDesc | None, ...] | None:
    # Nothing to infer: the given OutputTensors, if they fit the input.
    return self.output_tensors if self._outputs_fit() else None

  def check_rules(self, check: Checker) -> None:
    # The outputs' ranks and data types are checked with every given output (validation.py).
    source, outputs = self.input_tensor, self.output_tensors
    rules.check_count(check, "OutputCount", self.output_count, "OutputTensors", len(outputs))
    if not check.expect(
      len(outputs) > 0, "OutputCount", "must be > 0 (at least one output)", len(outputs)
    ):
      return
    if not rules.check_axis(check, "Axis", self.axis, source.dimension_count):
      return
    axis, n = self.axis, source.dimension_count
    sizes_ok = True
    for i, tensor in enumerate(outputs):
      if tensor.dimension_count == n:
        sizes_ok &= rules.check_sizes_off_axis(
          check,
          f"OutputTensors[{i}].Sizes",
          tensor.sizes,
          ("InputTensor.Sizes", source.sizes),
          axis,
        )
      else:
        sizes_ok = False
    if sizes_ok:
      pieces = tuple(t.sizes[axis] for t in outputs)
      check.expect(
        sum(pieces) == source.sizes[axis],
        "OutputTensors.Sizes",
        f"the outputs' sizes along Axis ({axis}) must sum to InputTensor.Sizes[{axis}]"
        f" ({source.sizes[axis]}); they sum to {sum(pieces)}",
        pieces,
        hint="SPLIT copies every input element to exactly one output",
      )

  def lower(self, input: jax.Array) -> tuple[jax.Array, ...]:
    pieces = tuple(t.sizes[self.axis] for t in self.output_tensors)
    return kernels.lower(KERNELS, (pieces, self.axis), self._slices, input)

  def _slices(self, input: jax.Array) -> tuple[jax.Array, ...]:
    """The lax form: one slice per output."""
    axis, pieces = self.axis, [t.sizes[self.axis] for t in self.output_tensors]
    outputs, offset = [], 0
    for size in pieces:
      start = [0] * input.ndim
      limit = list(input.shape)
      start[axis], limit[axis] = offset, offset + size
      outputs.append(lax.slice(input, start, limit))
      offset += size
    return tuple(outputs)

  def explain_output(self) -> list[str]:
    source, outputs, axis = self.input_tensor, self.output_tensors, self.axis
    if not outputs:
      return ["No OutputTensors: OutputCount must be > 0."]
    if not 0 <= axis < source.dimension_count or any(
      t.dimension_count != source.dimension_count for t in outputs
    ):
      return ["Axis or the outputs' ranks do not fit the input: no piece can be placed."]
    pieces = [t.sizes[axis] for t in outputs]
    starts = [sum(pieces[:k]) for k in range(len(pieces))]
    placed = ", ".join(
      f"[{s}, {s + p}) -> OutputTensors[{k}] {braced(t.sizes)}"
      for k, (s, p, t) in enumerate(zip(starts, pieces, outputs, strict=True))
    )
    lines = [
      "OutputTensors are given, not inferred: DirectML keeps the pieces' sizes only there.",
      f"Each output has InputTensor.Sizes {braced(source.sizes)} off Axis {axis}; their Axis"
      f" sizes {' + '.join(map(str, pieces))} = {sum(pieces)} must equal"
      f" InputTensor.Sizes[{axis}] = {source.sizes[axis]}.",
      f"Along Axis {axis}: {placed}.",
      f"OutputTensors[k].DataType = InputTensor.DataType = {source.data_type} (no conversion).",
    ]
    if len(outputs) == 1:
      lines.append("A single output: it is a copy of the input.")
    return lines


def _off_axis(sizes: tuple[int, ...], axis: int) -> tuple[int, ...]:
  return sizes[:axis] + sizes[axis + 1 :]


def split(
  input: ArrayLike,
  *,
  axis: int,
  split_sizes: Sequence[int],
  feature_level: FeatureLevelLike = None,
) -> list[jax.Array]:
  """DML_OPERATOR_SPLIT: cuts `input` along `axis` into pieces of `split_sizes`.

  Output k is ``input``'s slab ``[sum(split_sizes[:k]), sum(split_sizes[:k + 1]))``
  along `axis`, with the input's dtype and its sizes elsewhere.

  Unlike ``jnp.split``, `split_sizes` gives each piece's size (not a count of
  equal pieces, nor cut indices), every size must be at least 1, and they must
  add up to ``input.shape[axis]`` exactly.

  See also: `join`, the exact inverse (``join(split(x, ...), axis=axis)`` is x).

  Args:
    input: InputTensor.
    axis: Axis, in [-n, n) for the common rank n (negative: from the end).
    split_sizes: the sizes along `axis` of OutputTensors, one per output.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensors, as a list of arrays in order.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for a non-integer axis or size, or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> split(np.arange(6, dtype=np.int8).reshape(1, 6), axis=1, split_sizes=(2, 1, 3))
    [Array([[0, 1]], dtype=int8), Array([[2]], dtype=int8), Array([[3, 4, 5]], dtype=int8)]
  """
  (input,), types = arguments.tensor_operands(SplitDesc, input)
  level = as_level(feature_level)
  static = (level, types, as_int(axis, "Axis"), as_int_tuple(split_sizes, "split_sizes"))
  return list(_split(static, input))


def _describe_split(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  axis: int,
  split_sizes: tuple[int, ...],
) -> SplitDesc:
  sizes = shapes[0]
  inside = 0 <= axis < len(sizes)  # else validation names the Axis; the pieces keep the sizes

  def piece(size: int) -> TensorDesc:
    return TensorDesc(types[0], sizes[:axis] + (size,) + sizes[axis + 1 :] if inside else sizes)

  return SplitDesc(TensorDesc(types[0], sizes), tuple(map(piece, split_sizes)), axis=axis)


_split = dispatch.operator_function(
  _describe_split,
  SplitDesc,
  natural.Ranks(names=("axis", "split_sizes"), axes=((0, 0),)),
  moves_bits=True,
)


# -- kernels ---------------------------------------------------------------------------------
# `fields`: (the outputs' sizes along the axis, the axis). The operand: the input.


def _runs_roles(fields: tuple[tuple[int, ...], int], config: Any, x: Shaped) -> Roles:
  """Every dimension but `axis` passes through."""
  sizes, axis = fields
  pieces = factors("s", len(sizes))
  outs = ", ".join(around_axis(x.ndim, axis, s) for s in pieces)
  return Roles(f"{around_axis(x.ndim, axis, 'n')} -> {outs}", whole=("n", *pieces))


KERNELS = (
  kernels.Kernel(
    "runs_cpu",
    "cpu",
    applies=lambda fields, config, x: runs_cpu.applies(
      x.shape, fields[0], fields[1], x.dtype, config
    ),
    roles=_runs_roles,
    call=lambda fields, config, interpret, x: functools.partial(
      runs_cpu.split_runs, sizes=fields[0], axis=fields[1]
    ),
    one_device=True,  # over several devices it would gather the axis sharded along it
    native="runs.cc",
  ),
)
"""SPLIT's kernel (`kernels.forms` chooses): on the CPU, each piece's runs copied with stores
that never read the destination (an input of 16 MiB or more, runs of 1 KiB or more)."""
