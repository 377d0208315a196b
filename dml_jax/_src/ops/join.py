"""DML_OPERATOR_JOIN: concatenates one or more tensors along Axis."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, SupportsIndex

import jax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, kernels, registry, rules
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
from dml_jax._src.integers import as_int
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc


def _table(dimension_counts, data_types):
  row = support(dimension_counts, data_types)
  return {"InputTensors": row, "OutputTensor": row}


# The page has no FL 3_1 table although the history says JOIN went to 8
# dimensions at 3_1 (DirectML 1.5 notes agree): from 3_1, 1 to 8 is assumed.
_SUPPORT = SupportTable(
  "JOIN",
  {
    FeatureLevel.FL_1_0: _table(4, FLOAT_AND_INT_16_32),
    FeatureLevel.FL_2_1: _table(4, UP_TO_32_BIT),
    FeatureLevel.FL_3_0: _table((4, 5), UP_TO_32_BIT),
    FeatureLevel.FL_3_1: _table((1, 8), UP_TO_32_BIT),
    FeatureLevel.FL_4_1: _table((1, 8), ALL_DATA),
  },
)


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class JoinDesc(OperatorDesc):
  """`DML_JOIN_OPERATOR_DESC`.

  Attributes:
    input_tensors: InputTensors, one or more, in order.
    axis: Axis, in [0, DimensionCount).
    output_tensor: OutputTensor; None infers it.
    input_count: InputCount; None means len(input_tensors).

  Examples:
    >>> desc = JoinDesc((TensorDesc("FLOAT32", (1, 1, 2, 3)), TensorDesc("FLOAT32", (1, 1, 2, 4))), axis=3)
    >>> desc
    JoinDesc(input_tensors=(TensorDesc("FLOAT32", (1, 1, 2, 3)), TensorDesc("FLOAT32", (1, 1, 2, 4))), axis=3)
    >>> print(desc)
    DML_OPERATOR_JOIN(InputTensors[0]=FLOAT32[1,1,2,3], InputTensors[1]=FLOAT32[1,1,2,4], Axis=3, InputCount=2) -> FLOAT32[1,1,2,7]
  """

  OPERATOR = "JOIN"
  SUPPORT = _SUPPORT
  FUNCTION = "join"

  input_tensors: tuple[TensorDesc, ...] = dml_field("InputTensors", FieldKind.TENSOR_ARRAY)
  axis: int = dml_field("Axis", FieldKind.UINT)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )
  input_count: int = dml_field("InputCount", FieldKind.UINT, count_of="input_tensors")

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensors: Sequence[TensorDesc],
      axis: SupportsIndex,
      output_tensor: TensorDesc | None = None,
      input_count: SupportsIndex | None = None,
    ) -> None: ...

  def infer_output(self) -> TensorDesc | None:
    if not self.input_tensors:
      return None
    first = self.input_tensors[0]
    if not 0 <= self.axis < first.dimension_count or any(
      t.dimension_count != first.dimension_count for t in self.input_tensors
    ):
      return None
    sizes = list(first.sizes)
    sizes[self.axis] = sum(t.sizes[self.axis] for t in self.input_tensors)
    return TensorDesc(first.data_type, tuple(sizes))

  def check_rules(self, check: Checker) -> None:
    tensors = self.input_tensors
    rules.check_count(check, "InputCount", self.input_count, "InputTensors", len(tensors))
    if not check.expect(
      len(tensors) > 0, "InputCount", "must be > 0 (at least one input)", len(tensors)
    ):
      return
    first = tensors[0]
    named = [(f"InputTensors[{i}]", t) for i, t in enumerate(tensors)]
    ranks_ok = rules.check_same_rank(check, named[0], *named[1:])
    for name, tensor in named[1:]:
      check.expect(
        tensor.data_type == first.data_type,
        f"{name}.DataType",
        f"must equal InputTensors[0].DataType ({first.data_type}); JOIN never converts types",
        tensor.data_type,
        hint="cast the inputs first (jnp.concatenate would promote them)",
      )
    if not (rules.check_axis(check, "Axis", self.axis, first.dimension_count) and ranks_ok):
      return
    for name, tensor in named[1:]:
      rules.check_sizes_off_axis(
        check, f"{name}.Sizes", tensor.sizes, ("InputTensors[0].Sizes", first.sizes), self.axis
      )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return f"must be the inputs' sizes with their Axis sizes summed: {braced(expected)}"

  def lower(self, *inputs: jax.Array) -> jax.Array:
    return kernels.join(inputs, self.axis)

  def lower_bound(self, arrays: Sequence[jax.Array], parts: Sequence[bool]) -> jax.Array:
    # Inputs cut out of larger buffers are read in place on XLA:CPU (`forms.join_by_select`)
    # instead of being copied out for its unfused concatenate.
    return kernels.join(arrays, self.axis, from_parts=any(parts))

  def explain_output(self) -> list[str]:
    tensors, axis = self.input_tensors, self.axis
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
      f" {' + '.join(map(str, pieces))} = {sum(pieces)}: {braced(output)}.",
      f"Along Axis {axis}: {placed}.",
      f"OutputTensor.DataType = InputTensors[0].DataType = {first.data_type}; every input must"
      f" have it (JOIN never converts; jnp.concatenate would promote).",
    ]
    if len(tensors) == 1:
      lines.append("A single input: the output is a copy.")
    return lines


def join(
  inputs: Sequence[ArrayLike], *, axis: int, feature_level: FeatureLevelLike = None
) -> jax.Array:
  """DML_OPERATOR_JOIN: concatenates `inputs` along `axis`.

  All inputs share one dtype and one rank, and equal sizes off `axis`.

  Unlike ``jnp.concatenate`` there is no dtype promotion (mixed dtypes are an
  error), no rank broadcasting, and an empty list is an error.

  See also: `split`, the exact inverse.

  Args:
    inputs: InputTensors, one or more arrays.
    axis: Axis, in [0, rank).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: if `inputs` is not a sequence of arrays, or for a non-integer axis.

  Examples:
    >>> import numpy as np
    >>> join([np.zeros((1, 2), np.int8), np.ones((1, 1), np.int8)], axis=1)
    Array([[0, 0, 1]], dtype=int8)
  """
  arrays, types = arguments.tensor_operands(
    JoinDesc, *arguments.sequence_argument(inputs, "inputs")
  )
  level = as_level(feature_level)
  return _join((level, types, as_int(axis, "Axis")), *arrays)


def _describe_join(
  types: tuple[DataType, ...], shapes: tuple[tuple[int, ...], ...], axis: int
) -> JoinDesc:
  return JoinDesc(tuple(map(TensorDesc, types, shapes)), axis=axis)


_join = dispatch.operator_function(_describe_join, JoinDesc)
