"""DML_OPERATOR_ARGMIN and DML_OPERATOR_ARGMAX: the position of the smallest or largest element.

Each output element reduces the input elements that share its coordinates off the
reduced Axes. Their positions are numbered in row-major order of the reduced
dimensions, taken in increasing dimension order whatever order Axes lists them in:
reducing axes {0, 1} of a {3, 3} input numbers its elements 0 to 8 as they lie in
memory. The output keeps the input's rank, with size 1 on every reduced axis, and holds
the winning position as an index type (INT32, INT64, UINT32 or UINT64; the functional
API's default is UINT32, the type of DirectML's examples).

Values rank in one total order, the one TOP_K and TOP_K1 use too (DirectML's pages do
not say): -0.0 equals 0.0, and every NaN ranks above +inf, so ARGMAX picks a NaN where
there is one and ARGMIN picks one only where every element is NaN. Among equal values,
AxisDirection INCREASING picks the first position and DECREASING the last.

The lowering maps the values to integer keys that rank so (`axis_direction.ordered_keys`) and
merges the reduced axes into one (moving them last first where they are not adjacent). Along
the last axis, INCREASING, it reduces with `lax.argmax`/`lax.argmin`, which pick the first of
equal keys; elsewhere XLA:CPU's one-pass reduction is slow, so on the CPU it takes two plain
reductions instead, which XLA vectorizes along any axis: the extreme key, then the first (or
last) position holding it, where the CPU has one device (over several, the two passes
would all-reduce partial results where jnp's argmax gathers the axis, so the partitioner sees
the one-pass form). Elsewhere DECREASING reduces the reversed lane and counts the position
back from its end.

On CUDA GPUs a kernel (`kernels.arg_min_max_tiles_triton`, the table `KERNELS` below) takes
FLOAT32 and FLOAT16 inputs of 1 MiB or more whose reduced axes lie side by side, before the
last axis with 32 lanes or more after them: it reads each element once and ranks it in
registers in the same order, with the same answers. Along the last axis the lax form stays.
On the CPU a native kernel (`kernels.arg_min_max_cpu`) takes FLOAT32, FLOAT16, INT32 and UINT32
inputs of 64 KiB or more along any axis, in one pass with the same keys and tie rule.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, SupportsIndex

import jax
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, dtypes, natural, placement, registry, rules
from dml_jax._src.axis_direction import AxisDirection, ordered_keys
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import INDEX_TYPES, UP_TO_32_BIT, DataType, DataTypeLike
from dml_jax._src.errors import Checker
from dml_jax._src.feature_level import (
  FeatureLevel,
  FeatureLevelLike,
  SupportTable,
  as_level,
  support,
)
from dml_jax._src.fields import FieldKind, dml_field
from dml_jax._src.integers import as_int_tuple
from dml_jax._src.kernels import arg_min_max_cpu, arg_min_max_tiles_triton, forms
from dml_jax._src.kernels.partitioning import Roles, Shaped, around_axis, dims, factors
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc


def _support(operator: str) -> SupportTable:
  return SupportTable(
    operator,
    {
      FeatureLevel.FL_3_0: {
        "InputTensor": support((1, 8), UP_TO_32_BIT),
        "OutputTensor": support((1, 8), INDEX_TYPES),
      },
    },
  )


def index_dtype(data_type: DataType, role: str) -> np.dtype:
  """The dtype an index output of `data_type` is computed in; with x64 off a 64-bit one is
  refused (a TypeError that says how to turn x64 on), as 64-bit data is."""
  if data_type.is_64_bit and not dtypes.x64_enabled():
    raise TypeError(
      f"{role} is {data_type}, which JAX cannot hold with jax_enable_x64 off; use UINT32 or"
      f" INT32, or {dtypes.X64_TIP}"
    )
  dtype = data_type.numpy_dtype
  assert dtype is not None
  return dtype


class _ArgMinMaxDesc(OperatorDesc):
  """The fields and rules ARGMIN and ARGMAX share; `_PICKS` names the extreme."""

  _PICKS: ClassVar[str]
  input_tensor: TensorDesc
  axes: tuple[int, ...]
  output_tensor: TensorDesc | None
  axis_count: int
  axis_direction: AxisDirection

  def _reduced_sizes(self) -> tuple[int, ...] | None:
    """InputTensor.Sizes with 1 on every axis of Axes, or None if an axis is outside them."""
    sizes = list(self.input_tensor.sizes)
    for axis in self.axes:
      if not 0 <= axis < len(sizes):
        return None
      sizes[axis] = 1
    return tuple(sizes)

  def infer_output(self) -> TensorDesc | None:
    # The output's data type is free among the index types; inferred, it is UINT32 (the type
    # of DirectML's examples). A given OutputTensor keeps its own.
    sizes = self._reduced_sizes()
    if sizes is None:
      return None
    data_type = DataType.UINT32 if self.output_tensor is None else self.output_tensor.data_type
    return TensorDesc(data_type, sizes)

  def check_rules(self, check: Checker) -> None:
    n = self.input_tensor.dimension_count
    rules.check_count(check, "AxisCount", self.axis_count, "Axes", len(self.axes))
    check.expect(
      len(self.axes) >= 1,
      "Axes",
      "must name at least one axis to reduce",
      braced(self.axes),
      hint="reduce every axis for a single output element: Axes = {0,...,DimensionCount-1}",
    )
    for axis in self.axes:
      if not rules.check_axis(check, "Axes", axis, n):
        break
    repeated = sorted({a for a in self.axes if self.axes.count(a) > 1})
    check.expect(
      not repeated,
      "Axes",
      f"must name each axis once; {', '.join(map(str, repeated))} repeat(s)",
      braced(self.axes),
    )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return (
      f"must equal InputTensor.Sizes {braced(self.input_tensor.sizes)} with 1 on every axis of"
      f" Axes {braced(self.axes)}: {braced(expected)}"
    )

  def lower(self, input: jax.Array) -> jax.Array:
    output = self.outputs[0]
    dtype = index_dtype(output.data_type, "OutputTensor")
    reduced = sorted(self.axes)
    first, last = reduced[0], reduced[-1]
    adjacent = last - first + 1 == len(reduced)
    if not adjacent:  # scattered axes: moved last, in dimension order
      kept = [d for d in range(input.ndim) if d not in reduced]
      input = lax.transpose(input, (*kept, *reduced))
      first = len(kept)
      last = input.ndim - 1
    # The reduced axes, now adjacent, merged into one (row-major: the flattened position).
    count = math.prod(input.shape[first : last + 1])
    input = input.reshape(*input.shape[:first], count, *input.shape[last + 1 :])
    largest = self._PICKS == "largest"
    pick = Pick(first, largest, self.axis_direction is AxisDirection.INCREASING, adjacent, dtype)
    position = forms.lower(KERNELS, pick, functools.partial(_lax_form, pick), input)
    return position.reshape(output.sizes)

  def explain_output(self) -> list[str]:
    data, axes = self.input_tensor, self.axes
    sizes = self._reduced_sizes()
    if sizes is None or not axes:
      return [f"Axes {braced(axes)} name no valid set of axes of a {data.dimension_count}-D input."]
    reduced = sorted(axes)
    count = math.prod(data.sizes[d] for d in reduced)
    tie = "first" if self.axis_direction is AxisDirection.INCREASING else "last"
    return [
      f"Each output element is the position of the {self._PICKS} of the {count} input"
      f" element(s) that share its coordinates off Axes {braced(reduced)}; positions count"
      f" in row-major order of those axes (sizes {braced([data.sizes[d] for d in reduced])}).",
      f"AxisDirection {self.axis_direction.name}: among equal values the {tie} position wins."
      " -0.0 equals 0.0 and NaN ranks above +inf (dml_jax's order, shared with TOP_K).",
      f"OutputTensor.Sizes = InputTensor.Sizes with 1 on each reduced axis: {braced(sizes)}.",
      f"OutputTensor.DataType is an index type (INT32, INT64, UINT32 or UINT64), not"
      f" InputTensor's {data.data_type}; left out, it is UINT32.",
    ]


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class ArgMinDesc(_ArgMinMaxDesc):
  """`DML_ARGMIN_OPERATOR_DESC`: the position of the smallest value along Axes.

  Attributes:
    input_tensor: InputTensor, the values.
    axes: Axes, the distinct axes to reduce, each in [0, DimensionCount).
    output_tensor: OutputTensor: the input's sizes with 1 on each reduced axis, of an index
      type; None infers it, as UINT32.
    axis_count: AxisCount; None means len(axes).
    axis_direction: AxisDirection: INCREASING (the default) picks the first of equal
      smallest values, DECREASING the last.

  Examples:
    >>> desc = ArgMinDesc(TensorDesc("FLOAT32", (3, 3)), axes=(1,))
    >>> desc
    ArgMinDesc(input_tensor=TensorDesc("FLOAT32", (3, 3)), axes=(1,))
    >>> print(desc)
    DML_OPERATOR_ARGMIN(InputTensor=FLOAT32[3,3], Axes={1}, AxisCount=1, AxisDirection=INCREASING) -> UINT32[3,1]
  """

  OPERATOR = "ARGMIN"
  SUPPORT = _support("ARGMIN")
  FUNCTION = "argmin"
  _PICKS = "smallest"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  axes: tuple[int, ...] = dml_field("Axes", FieldKind.UINT_ARRAY)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, index=True, default=None
  )
  axis_count: int = dml_field("AxisCount", FieldKind.UINT, count_of="axes")
  axis_direction: AxisDirection = dml_field(
    "AxisDirection", FieldKind.ENUM, enum_type=AxisDirection, default=AxisDirection.INCREASING
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      axes: Sequence[SupportsIndex],
      output_tensor: TensorDesc | None = None,
      axis_count: SupportsIndex | None = None,
      axis_direction: AxisDirection | str | int = AxisDirection.INCREASING,
    ) -> None: ...


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class ArgMaxDesc(_ArgMinMaxDesc):
  """`DML_ARGMAX_OPERATOR_DESC`: the position of the largest value along Axes.

  Attributes:
    input_tensor: InputTensor, the values.
    axes: Axes, the distinct axes to reduce, each in [0, DimensionCount).
    output_tensor: OutputTensor: the input's sizes with 1 on each reduced axis, of an index
      type; None infers it, as UINT32.
    axis_count: AxisCount; None means len(axes).
    axis_direction: AxisDirection: INCREASING (the default) picks the first of equal
      largest values, DECREASING the last.

  Examples:
    >>> desc = ArgMaxDesc(TensorDesc("FLOAT32", (3, 3)), axes=(0, 1), axis_direction="DECREASING")
    >>> desc
    ArgMaxDesc(input_tensor=TensorDesc("FLOAT32", (3, 3)), axes=(0, 1), axis_direction=AxisDirection.DECREASING)
    >>> print(desc)
    DML_OPERATOR_ARGMAX(InputTensor=FLOAT32[3,3], Axes={0,1}, AxisCount=2, AxisDirection=DECREASING) -> UINT32[1,1]
  """

  OPERATOR = "ARGMAX"
  SUPPORT = _support("ARGMAX")
  FUNCTION = "argmax"
  _PICKS = "largest"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  axes: tuple[int, ...] = dml_field("Axes", FieldKind.UINT_ARRAY)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, index=True, default=None
  )
  axis_count: int = dml_field("AxisCount", FieldKind.UINT, count_of="axes")
  axis_direction: AxisDirection = dml_field(
    "AxisDirection", FieldKind.ENUM, enum_type=AxisDirection, default=AxisDirection.INCREASING
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      axes: Sequence[SupportsIndex],
      output_tensor: TensorDesc | None = None,
      axis_count: SupportsIndex | None = None,
      axis_direction: AxisDirection | str | int = AxisDirection.INCREASING,
    ) -> None: ...


class Pick(NamedTuple):
  """What a call reduces, as the kernel table sees it: the one `axis` of the merged input
  (`adjacent`: the reduced axes lay side by side, none moved), the extreme (`largest`), which
  of equal ones wins (`increasing`: the first), and the positions' dtype."""

  axis: int
  largest: bool
  increasing: bool
  adjacent: bool
  index_dtype: np.dtype


def _lax_form(pick: Pick, input: jax.Array) -> jax.Array:
  """The lax lowering: ordered integer keys reduced along `pick.axis` (positions found as int32,
  or int64 past 2**31 - 1 elements, then converted to `pick.index_dtype`). Along the last axis,
  INCREASING, `lax.argmax`/`lax.argmin`; elsewhere on a one-device CPU, two plain reductions
  (XLA:CPU's one-pass reduction along an inner axis, or of a reversed lane, is slow)."""
  keys = ordered_keys(input)
  axis, count = pick.axis, input.shape[pick.axis]
  position_dtype = np.dtype(np.int32 if count <= 2**31 - 1 else np.int64)
  args = (axis, pick.largest, pick.increasing, position_dtype)
  one_pass = lambda keys: _pick_in_one_pass(keys, *args)
  two_passes = lambda keys: _pick_in_two_passes(keys, *args)
  if (axis == keys.ndim - 1 and pick.increasing) or not placement.one_device("cpu"):
    position = one_pass(keys)
  else:
    position = forms.on_platforms({"cpu": two_passes}, one_pass, keys)
  return lax.convert_element_type(position, pick.index_dtype)


def _pick_in_one_pass(
  keys: jax.Array, axis: int, largest: bool, increasing: bool, position_dtype: np.dtype
) -> jax.Array:
  """`lax.argmax`/`lax.argmin` along `axis`, which keep the first of equal keys; the last one
  is the first of the reversed lane, counted back from its end."""
  pick = lax.argmax if largest else lax.argmin
  if increasing:
    return pick(keys, axis, position_dtype)
  from_end = pick(lax.rev(keys, (axis,)), axis, position_dtype)
  return lax.sub(lax.full_like(from_end, keys.shape[axis] - 1), from_end)


def _pick_in_two_passes(
  keys: jax.Array, axis: int, largest: bool, increasing: bool, position_dtype: np.dtype
) -> jax.Array:
  """The extreme key along `axis`, then the first (or last) position holding it: two plain
  reductions, which XLA:CPU vectorizes along any axis."""
  extreme = (lax.reduce_max if largest else lax.reduce_min)(keys, (axis,))
  shape = keys.shape
  kept = tuple(d for d in range(len(shape)) if d != axis)
  holds = keys == lax.broadcast_in_dim(extreme, shape, kept)
  positions = lax.broadcasted_iota(position_dtype, shape, axis)
  if increasing:
    none = lax.full_like(positions, np.iinfo(position_dtype).max)
    return lax.reduce_min(lax.select(holds, positions, none), (axis,))
  none = lax.full_like(positions, -1)
  return lax.reduce_max(lax.select(holds, positions, none), (axis,))


def argmin(
  input: ArrayLike,
  *,
  axes: Sequence[int],
  axis_direction: AxisDirection | str | int = AxisDirection.INCREASING,
  output_data_type: DataTypeLike = DataType.UINT32,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_ARGMIN: the position of the smallest element over `axes`.

  The output keeps the input's rank with size 1 on each of `axes`; each element is
  the position of the smallest of the input elements it reduces, counted in
  row-major order of the reduced dimensions (taken in increasing order). Among equal
  values INCREASING picks the first position and DECREASING the last. -0.0 equals
  0.0; NaN ranks above every number, so a NaN is picked only where all are NaN.

  Unlike ``jnp.argmin``: the reduced axes stay (size 1), several axes give one
  flattened position, a NaN does not win, the output is UINT32 by default, and the
  tie rule is selectable.

  Args:
    input: InputTensor (float16, float32 or an integer type of up to 32 bits).
    axes: Axes, the distinct axes to reduce, each in [-input.ndim, input.ndim) (negative
      ones count from the end).
    axis_direction: AxisDirection, ``"INCREASING"`` or ``"DECREASING"`` (or the enum).
    output_data_type: OutputTensor.DataType: UINT32 (default), INT32, UINT64 or INT64
      (the 64-bit ones need jax_enable_x64).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer axes, a dtype DirectML lacks, or a 64-bit output with x64 off.

  Examples:
    >>> import numpy as np
    >>> x = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)
    >>> argmin(x, axes=(1,))
    Array([[0],
           [1],
           [0]], dtype=uint32)
    >>> argmin(np.array([[2, 0, 0, 2]], np.int8), axes=(1,), axis_direction="DECREASING")
    Array([[2]], dtype=uint32)
  """
  return _call(ArgMinDesc, _argmin, input, axes, axis_direction, output_data_type, feature_level)


def argmax(
  input: ArrayLike,
  *,
  axes: Sequence[int],
  axis_direction: AxisDirection | str | int = AxisDirection.INCREASING,
  output_data_type: DataTypeLike = DataType.UINT32,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_ARGMAX: the position of the largest element over `axes`.

  The output keeps the input's rank with size 1 on each of `axes`; each element is
  the position of the largest of the input elements it reduces, counted in
  row-major order of the reduced dimensions (taken in increasing order). Among equal
  values INCREASING picks the first position and DECREASING the last. -0.0 equals
  0.0; NaN ranks above every number (and +inf), so the first (or last) NaN wins.

  Unlike ``jnp.argmax``: the reduced axes stay (size 1), several axes give one
  flattened position, the output is UINT32 by default, and the tie rule is selectable.

  Args:
    input: InputTensor (float16, float32 or an integer type of up to 32 bits).
    axes: Axes, the distinct axes to reduce, each in [-input.ndim, input.ndim) (negative
      ones count from the end).
    axis_direction: AxisDirection, ``"INCREASING"`` or ``"DECREASING"`` (or the enum).
    output_data_type: OutputTensor.DataType: UINT32 (default), INT32, UINT64 or INT64
      (the 64-bit ones need jax_enable_x64).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer axes, a dtype DirectML lacks, or a 64-bit output with x64 off.

  Examples:
    >>> import numpy as np
    >>> x = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)
    >>> argmax(x, axes=(0,))
    Array([[1, 2, 1]], dtype=uint32)
    >>> argmax(x, axes=(0, 1), output_data_type="INT32")
    Array([[7]], dtype=int32)
    >>> argmax(np.array([[3, 2, 1, 2, 3]], np.float32), axes=(1,), axis_direction="DECREASING")
    Array([[4]], dtype=uint32)
  """
  return _call(ArgMaxDesc, _argmax, input, axes, axis_direction, output_data_type, feature_level)


def _call(
  desc_type: type[OperatorDesc],
  function: Any,
  input: ArrayLike,
  axes: Sequence[int],
  axis_direction: Any,
  output_data_type: DataTypeLike,
  feature_level: FeatureLevelLike,
) -> jax.Array:
  (input,), types = arguments.tensor_operands(desc_type, input)
  static = (
    as_level(feature_level),
    types,
    as_int_tuple(axes, "Axes"),
    AxisDirection.from_any(axis_direction),
    DataType.from_any(output_data_type),
  )
  return function(static, input)


def _describer(desc_type: type[_ArgMinMaxDesc]) -> Any:
  def describe(
    types: tuple[DataType, ...],
    shapes: tuple[tuple[int, ...], ...],
    axes: tuple[int, ...],
    axis_direction: AxisDirection,
    output_data_type: DataType,
  ) -> _ArgMinMaxDesc:
    sizes = shapes[0]
    if all(0 <= axis < len(sizes) for axis in axes):  # else validation names the axis
      reduced = tuple(1 if d in axes else size for d, size in enumerate(sizes))
      output = TensorDesc(output_data_type, reduced)
    else:
      output = None
    return desc_type(  # type: ignore[call-arg]
      TensorDesc(types[0], sizes), axes, output, axis_direction=axis_direction
    )

  describe.__name__ = f"_describe_{desc_type.FUNCTION}"
  return describe


# Axes counted on the input as given, negative ones from its end.
_RANKS = natural.Ranks(names=("axes", "axis_direction", "output_data_type"), axis_sets=(0,))
_argmin = dispatch.operator_function(_describer(ArgMinDesc), ArgMinDesc, _RANKS)
_argmax = dispatch.operator_function(_describer(ArgMaxDesc), ArgMaxDesc, _RANKS)


# -- kernels ---------------------------------------------------------------------------------


def _tiles_roles(pick: Pick, config: Any, x: Shaped) -> Roles:
  """Every dimension but the reduced axis passes through per shard (the output lacks it); the
  axis is needed whole."""
  rank, axis = x.ndim, pick.axis
  kept = dims(factors("o", axis), factors("i", rank - axis - 1))
  return Roles(f"{around_axis(rank, axis, 'n')} -> {kept}", whole=("n",))


KERNELS = (
  forms.Kernel(
    "arg_min_max_tiles_triton",
    "cuda",
    applies=lambda pick, config, x: (
      pick.adjacent and arg_min_max_tiles_triton.applies(x.shape, pick.axis, x.dtype, config)
    ),
    roles=_tiles_roles,
    call=lambda pick, config, interpret, x: functools.partial(
      arg_min_max_tiles_triton.arg_min_max_tiles,
      axis=pick.axis,
      largest=pick.largest,
      last_wins=not pick.increasing,
      index_dtype=pick.index_dtype,
      config=config,
      interpret=interpret,
    ),
  ),
  forms.Kernel(
    "arg_min_max_cpu",
    "cpu",
    applies=lambda pick, config, x: arg_min_max_cpu.applies(x.shape, pick.axis, x.dtype, config),
    roles=_tiles_roles,
    call=lambda pick, config, interpret, x: functools.partial(
      arg_min_max_cpu.arg_min_max,
      axis=pick.axis,
      largest=pick.largest,
      last_wins=not pick.increasing,
      index_dtype=pick.index_dtype,
    ),
    native="arg_min_max.cc",
  ),
)
"""ARGMIN's and ARGMAX's kernels (`kernels.forms` chooses): on CUDA GPUs, the walk of tiles along
the one reduced axis (or adjacent axes merged into one), FLOAT32 and FLOAT16 of 1 MiB or more,
along an axis before the last with 32 lanes or more after it; the rest, the last axis included,
keeps the lax form. On the CPU, the native pass (`kernels.arg_min_max_cpu`) along any axis,
FLOAT32, FLOAT16, INT32 and UINT32 inputs of 64 KiB or more; the rest keeps the lax form."""
