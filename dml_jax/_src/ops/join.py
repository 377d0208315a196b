"""DML_OPERATOR_JOIN: concatenates one or more tensors along Axis."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex

import jax
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, kernels, natural, placement, registry, rules
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
from dml_jax._src.kernels import runs_cpu
from dml_jax._src.kernels.partitioning import Roles, Shaped, around_axis, factors
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
    return _joined(inputs, self.axis, cpu=cpu_form(inputs, self.axis))

  def lower_bound(self, arrays: Sequence[jax.Array], parts: Sequence[bool]) -> jax.Array:
    # Inputs cut out of larger buffers are read in place on XLA:CPU (`join_by_select`)
    # instead of being copied out for its unfused concatenate.
    from_parts = any(parts)
    cpu = cpu_form(arrays, self.axis, from_parts=from_parts)
    return _joined(arrays, self.axis, from_parts=from_parts, cpu=cpu)

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
    axis: Axis, in [-n, n) for the common rank n (negative: from the end).
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


def cpu_form(
  inputs: Sequence[jax.Array], axis: int, *, from_parts: bool = False
) -> Callable[..., jax.Array] | None:
  """The lax form in which XLA:CPU runs this JOIN faster than `lax.concatenate`, or None.

  `join_on_cpu` where `join_cpu_form` names a form; else, for `from_parts` (some inputs cut
  out of larger buffers in the program), `join_by_select`, which reads them in place (a joined
  size below 2**31: int32 positions). The 1-D views only in a process with one CPU device
  (`join_cpu_form`).
  """
  if join_cpu_form(inputs[0].shape, len(inputs), axis) is not None:
    return functools.partial(join_on_cpu, axis=axis)
  if from_parts and sum(x.shape[axis] for x in inputs) < 2**31:
    return functools.partial(join_by_select, axis=axis)
  return None


def join_by_select(*inputs: jax.Array, axis: int) -> jax.Array:
  """JOIN as one loop: each input padded to the joined size along `axis`, and each output
  element selected from the input whose range holds it (the same bits as `lax.concatenate`).

  XLA:CPU runs a concatenate unfused, so an input cut out of a larger buffer is first copied
  out of it; pads and selects fuse with those slices, and the whole JOIN reads each input once
  where it lies, about twice as fast (benchmark case `join_padded_pitch`). On whole arrays the
  concatenate is faster, so only bound parts take this form.

  Examples:
    >>> a, b = np.arange(4.0).reshape(2, 2), -np.arange(2.0).reshape(2, 1)
    >>> join_by_select(a, b, axis=1).tolist()
    [[0.0, 1.0, -0.0], [2.0, 3.0, -1.0]]
  """
  sizes = [x.shape[axis] for x in inputs]
  total = sum(sizes)
  zero = np.zeros((), inputs[0].dtype)
  padded, start = [], 0
  for x, size in zip(inputs, sizes, strict=True):
    config = [(0, 0, 0)] * x.ndim
    config[axis] = (start, total - start - size, 0)
    padded.append(lax.pad(x, zero, config))
    start += size
  shape = padded[0].shape
  position = lax.broadcasted_iota(np.int32, shape, axis)
  joined = padded[-1]
  end = total - sizes[-1]
  for x, size in zip(reversed(padded[:-1]), reversed(sizes[:-1]), strict=True):
    joined = lax.select(position < end, x, joined)
    end -= size
  return joined


def join_cpu_form(shape: tuple[int, ...], count: int, axis: int) -> str | None:
  """The CPU form of a JOIN of `count` inputs shaped like `shape` off `axis`, or None.

  XLA:CPU runs an unfused concatenate on one thread when no dimension before the joined one
  has a size above 1 (it splits the output along its first dimension, and a join along it
  cannot be split that way), while ONNX Runtime copies with every thread. Joined as 1-D views
  ("flat"), the reshapes fuse into the concatenate, which XLA:CPU then runs on all its threads;
  with leading dimensions of size 1 dropped ("squeezed"), the first dimension can be split.

  The flat form only where the process has one CPU device: over several, the 1-D views would
  merge a sharded dimension with the others, and XLA would gather the inputs onto every device
  and replicate the output where `lax.concatenate` keeps the sharding. Dropping dimensions of
  size 1 changes no partitioning.
  """
  if count < 2:
    return None
  if math.prod(shape[:axis]) == 1:
    return "flat" if placement.one_device("cpu") else None
  if shape[0] == 1:
    return "squeezed"
  return None


def join_on_cpu(*inputs: jax.Array, axis: int) -> jax.Array:
  """JOIN on XLA:CPU: the same bits as `lax.concatenate`, in a form it runs on every thread."""
  shape = list(inputs[0].shape)
  shape[axis] = sum(x.shape[axis] for x in inputs)
  if join_cpu_form(inputs[0].shape, len(inputs), axis) == "flat":
    # Views of (n,) fuse for rank 2 and up; for rank 1, views of (n, 1) do.
    view = lambda x: (x.size,) if len(shape) > 1 else (x.size, 1)
    joined = lax.concatenate([lax.reshape(x, view(x)) for x in inputs], 0)
  else:  # "squeezed": drop the leading dimensions of size 1
    lead = next(d for d, size in enumerate(shape) if size != 1)
    joined = lax.concatenate([lax.reshape(x, x.shape[lead:]) for x in inputs], axis - lead)
  return lax.reshape(joined, tuple(shape))


def _describe_join(
  types: tuple[DataType, ...], shapes: tuple[tuple[int, ...], ...], axis: int
) -> JoinDesc:
  return JoinDesc(tuple(map(TensorDesc, types, shapes)), axis=axis)


_join = dispatch.operator_function(
  _describe_join, JoinDesc, natural.Ranks(names=("axis",), axes=((0, None),)), moves_bits=True
)


# -- kernels ---------------------------------------------------------------------------------
# `fields`: (axis, from_parts). The operands: the inputs.


def _joined(
  inputs: Sequence[jax.Array],
  axis: int,
  *,
  from_parts: bool = False,
  cpu: Callable[..., jax.Array] | None = None,
) -> jax.Array:
  """JOIN along `axis`: on the CPU the native kernel where it applies (`KERNELS`), else
  `cpu(*inputs)` where the operator gives a lax form that XLA:CPU runs faster (`cpu_form`);
  `lax.concatenate` elsewhere. `from_parts`: some inputs are cut out of larger buffers in the
  program (bound tensors at offsets), which the kernel would copy out first.

  Examples:
    >>> x = np.arange(4, dtype=np.float32).reshape(2, 2)
    >>> _joined([x, x], 0).shape
    (4, 2)
  """
  concatenate = lambda *xs: lax.concatenate(xs, axis)  # noqa: E731
  chosen = kernels.chosen(KERNELS, (axis, from_parts), *inputs)
  if chosen:
    return kernels.on_platforms(chosen, concatenate, *inputs)
  if cpu is None:
    return lax.concatenate(inputs, axis)
  return lax.platform_dependent(*inputs, cpu=cpu, default=concatenate)


def _runs_apply(fields: tuple[int, bool], config: Any, *inputs: Shaped) -> bool:
  """Whole inputs (the kernel's operands would be copied out of their buffers first), an
  output of 16 MiB or more, runs of 1 KiB or more (`runs_cpu.applies`)."""
  axis, from_parts = fields
  sizes = [x.shape[axis] for x in inputs]
  joined = (*inputs[0].shape[:axis], sum(sizes), *inputs[0].shape[axis + 1 :])
  return not from_parts and runs_cpu.applies(joined, sizes, axis, inputs[0].dtype, config)


def _runs_roles(fields: tuple[int, bool], config: Any, *inputs: Shaped) -> Roles:
  """Every dimension but `axis` passes through."""
  axis, rank = fields[0], inputs[0].ndim
  pieces = factors("s", len(inputs))
  ins = ", ".join(around_axis(rank, axis, s) for s in pieces)
  return Roles(f"{ins} -> {around_axis(rank, axis, 'n')}", whole=("n", *pieces))


KERNELS = (
  kernels.Kernel(
    "runs_cpu",
    "cpu",
    applies=_runs_apply,
    roles=_runs_roles,
    call=lambda fields, config, interpret, *xs: functools.partial(
      runs_cpu.join_runs, axis=fields[0]
    ),
    one_device=True,  # over several devices it would gather the axis sharded along it
    native="runs.cc",
  ),
)
"""JOIN's kernel (`kernels.forms` chooses): on the CPU, each input's runs copied with stores
that never read the destination."""
