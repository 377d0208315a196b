"""DML_OPERATOR_JOIN: concatenates one or more tensors along Axis."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

import jax
from jax import lax

from dml_jax._src.dtypes import ALL_DATA, FLOAT_AND_INT_16_32, UP_TO_32_BIT
from dml_jax._src.errors import Checker
from dml_jax._src.feature_level import FeatureLevel, SupportTable, support
from dml_jax._src.ops import _base
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


@dataclasses.dataclass(frozen=True, repr=False)
class JoinDesc(_base.OperatorDesc):
  """`DML_JOIN_OPERATOR_DESC`.

  Attributes:
    input_tensors: InputTensors, one or more, in order.
    axis: Axis, in [0, DimensionCount).
    output_tensor: OutputTensor; None infers it.
    input_count: InputCount; None means len(input_tensors).

  Examples:
    >>> JoinDesc((TensorDesc("FLOAT32", (1, 1, 2, 3)), TensorDesc("FLOAT32", (1, 1, 2, 4))), axis=3)
    JoinDesc(inputs=(FLOAT32[1,1,2,3], FLOAT32[1,1,2,4]), axis=3) -> FLOAT32[1,1,2,7]
  """

  OPERATOR = "JOIN"
  SUPPORT = _SUPPORT

  input_tensors: tuple[TensorDesc, ...]
  axis: int
  output_tensor: TensorDesc | None = None
  input_count: int | None = None

  def __post_init__(self):
    if isinstance(self.input_tensors, TensorDesc) or not isinstance(self.input_tensors, Sequence):
      raise TypeError(
        f"InputTensors must be a sequence of TensorDesc; got {type(self.input_tensors).__name__}"
      )
    tensors = tuple(
      _base.as_tensor(t, f"InputTensors[{i}]") for i, t in enumerate(self.input_tensors)
    )
    object.__setattr__(self, "input_tensors", tensors)
    if self.output_tensor is not None:
      _base.as_tensor(self.output_tensor, "OutputTensor")
    object.__setattr__(self, "axis", _base.as_attribute(self.axis, "Axis"))
    count = len(tensors) if self.input_count is None else self.input_count
    object.__setattr__(self, "input_count", _base.as_attribute(count, "InputCount"))

  def _inputs(self):
    for i, tensor in enumerate(self.input_tensors):
      yield f"InputTensors[{i}]", "InputTensors", tensor

  def _infer_output(self) -> TensorDesc | None:
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

  def _check_fields(self, check: Checker) -> None:
    tensors = self.input_tensors
    check.expect(
      self.input_count == len(tensors),
      "InputCount",
      f"must equal the number of InputTensors ({len(tensors)})",
      self.input_count,
    )
    if not check.expect(
      len(tensors) > 0, "InputCount", "must be > 0 (at least one input)", len(tensors)
    ):
      return
    first = tensors[0]
    named = [(f"InputTensors[{i}]", t) for i, t in enumerate(tensors)]
    ranks_ok = _base.check_same_rank(check, named[0], *named[1:])
    for name, tensor in named[1:]:
      check.expect(
        tensor.data_type == first.data_type,
        f"{name}.DataType",
        f"must equal InputTensors[0].DataType ({first.data_type}); JOIN never converts types",
        tensor.data_type,
        hint="cast the inputs first (jnp.concatenate would promote them)",
      )
    if not (_base.check_axis(check, "Axis", self.axis, first.dimension_count) and ranks_ok):
      return
    for name, tensor in named[1 : len(tensors)]:
      off_axis = [
        d
        for d in range(first.dimension_count)
        if d != self.axis and tensor.sizes[d] != first.sizes[d]
      ]
      if off_axis:
        check.fail(
          f"{name}.Sizes",
          f"must equal InputTensors[0].Sizes"
          f" {_base._sizes(first.sizes)} in every dimension but Axis ({self.axis});"
          f" dimension {off_axis[0]} differs",
          tensor.sizes,
        )

  def _output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return f"must be the inputs' sizes with their Axis sizes summed: {_base._sizes(expected)}"

  def lower(self, *inputs: jax.Array) -> jax.Array:
    axis = self.axis
    if _cpu_form(inputs[0].shape, len(inputs), axis) is None:
      return lax.concatenate(inputs, axis)
    cpu = functools.partial(_join_cpu, axis=axis)
    return lax.platform_dependent(*inputs, cpu=cpu, default=lambda *xs: lax.concatenate(xs, axis))

  def _fields_repr(self) -> str:
    inputs = ", ".join(map(repr, self.input_tensors))
    inputs += "," if len(self.input_tensors) == 1 else ""
    return f"inputs=({inputs}), axis={self.axis}"


def _cpu_form(shape: tuple[int, ...], count: int, axis: int) -> str | None:
  """The CPU form of a JOIN of `count` inputs shaped like `shape` off `axis`, or None.

  XLA:CPU runs an unfused concatenate on one thread when no dimension before the joined one
  has a size above 1 (it splits the output along its first dimension, and a join along it
  cannot be split that way), while ONNX Runtime copies with every thread. Joined as 1-D views
  ("flat"), the reshapes fuse into the concatenate, which XLA:CPU then runs on all its threads;
  with leading dimensions of size 1 dropped ("squeezed"), the first dimension can be split.
  """
  if count < 2:
    return None
  if math.prod(shape[:axis]) == 1:
    return "flat"
  if shape[0] == 1:
    return "squeezed"
  return None


def _join_cpu(*inputs: jax.Array, axis: int) -> jax.Array:
  """JOIN on XLA:CPU: the same bits as `lax.concatenate`, in a form it runs on every thread."""
  shape = list(inputs[0].shape)
  shape[axis] = sum(x.shape[axis] for x in inputs)
  if _cpu_form(inputs[0].shape, len(inputs), axis) == "flat":
    # Views of (n,) fuse for rank 2 and up; for rank 1, views of (n, 1) do.
    view = (lambda x: (x.size,)) if len(shape) > 1 else (lambda x: (x.size, 1))
    joined = lax.concatenate([lax.reshape(x, view(x)) for x in inputs], 0)
  else:  # "squeezed": drop the leading dimensions of size 1
    lead = next(d for d, size in enumerate(shape) if size != 1)
    joined = lax.concatenate([lax.reshape(x, x.shape[lead:]) for x in inputs], axis - lead)
  return lax.reshape(joined, tuple(shape))


def join(inputs: Sequence[Any], *, axis: int, feature_level: Any = None) -> jax.Array:
  """DML_OPERATOR_JOIN: concatenates `inputs` along `axis`.

  All inputs share one dtype and one rank, and equal sizes off `axis`.

  Unlike ``jnp.concatenate`` there is no dtype promotion (mixed dtypes are an
  error), no rank broadcasting, and an empty list is an error.

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
  if type(inputs) not in (list, tuple) and (
    not isinstance(inputs, Sequence) or isinstance(inputs, str)
  ):
    raise TypeError(f"inputs must be a sequence of arrays; got {type(inputs).__name__}")
  arrays, types = _base.inputs(inputs, "InputTensors")
  level = _base.as_level(feature_level)
  return _join((level, types, _base.as_attribute(axis, "Axis")), *arrays)


def _describe_join(types, shapes, axis) -> JoinDesc:
  return JoinDesc(tuple(map(TensorDesc, types, shapes)), axis=axis)


_join = _base.operator_function(_describe_join, _base.list_roles("InputTensors"))
