"""DML_OPERATOR_CUMULATIVE_SUMMATION and DML_OPERATOR_CUMULATIVE_PRODUCT: running tallies.

A lane is the line of input elements along Axis through one coordinate. Each output
element holds the running tally (sum or product) of its lane, taken in the order
AxisDirection says: INCREASING from the lane's first element, DECREASING from its last.
An inclusive tally (HasExclusiveSum / HasExclusiveProduct FALSE) includes the element
at the output's own position; an exclusive one stops just before it, so the first
element in traversal order gets the empty tally (0 for the sum, 1 for the product)
and the last element's value is never counted. The output has the input's sizes and
data type, and may be bound to the input's buffer (in-place execution).

Arithmetic, where DirectML's pages say nothing (dml_jax's policy):

- Integers wrap (two's complement, modulo 2**bits), so the order of the terms does
  not matter and the lowering uses XLA's cumulative sum and product.
- Floats are accumulated strictly in traversal order, one rounding per step, in the
  tensor's own type (FLOAT16 rounds every partial tally to FLOAT16):
  ``tally[0] = x[0]``, ``tally[k] = tally[k - 1] + x[k]``. The tally of one element
  is that element, so a -0.0 first element stays -0.0 (``0.0 + -0.0`` would be
  +0.0); an exclusive scan's empty tally is +0.0 (or 1). A parallel (tree) scan, such
  as XLA's cumulative sum on the CPU and GPU, rounds differently; DirectML does not
  document its order. A NaN the arithmetic makes or carries has the platform's bits.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, SupportsIndex

import jax
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, kernels, natural, registry, rules
from dml_jax._src.axis_direction import AxisDirection
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import DataType
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
from dml_jax._src.kernels import cumulative_cpu, cumulative_lanes_triton
from dml_jax._src.kernels.partitioning import Roles, Shaped, around_axis
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

_FROM_2_1 = (DataType.FLOAT32, DataType.FLOAT16, DataType.INT32, DataType.UINT32)
_FROM_5_0 = (
  DataType.FLOAT32,
  DataType.FLOAT16,
  DataType.INT64,
  DataType.INT32,
  DataType.UINT64,
  DataType.UINT32,
)


def _table(dimension_counts: Any, data_types: tuple[DataType, ...]) -> dict[str, Any]:
  row = support(dimension_counts, data_types)
  return {"InputTensor": row, "OutputTensor": row}


_LATER_TABLES = {
  FeatureLevel.FL_4_0: _table((1, 8), _FROM_2_1),
  FeatureLevel.FL_5_0: _table((1, 8), _FROM_5_0),
}
_SUMMATION_SUPPORT = SupportTable(
  "CUMULATIVE_SUMMATION", {FeatureLevel.FL_2_1: _table(4, _FROM_2_1), **_LATER_TABLES}
)
_PRODUCT_SUPPORT = SupportTable(
  "CUMULATIVE_PRODUCT", {FeatureLevel.FL_3_1: _table(4, _FROM_2_1), **_LATER_TABLES}
)

_UNROLL = 8
"""Steps of the float scan's loop per iteration on lanes longer than `_UNROLL_FROM`: fewer
loop trips, the same order (shorter lanes keep one step, which compiles faster)."""
_UNROLL_FROM = 64


class _CumulativeDesc(OperatorDesc):
  """The fields, rules and lowering the two scans share."""

  IN_PLACE = True

  input_tensor: TensorDesc
  axis: int
  axis_direction: AxisDirection
  output_tensor: TensorDesc | None

  TALLY: str  # "sum" or "product"
  EXCLUSIVE_FIELD: str  # HasExclusiveSum or HasExclusiveProduct

  @property
  def exclusive(self) -> bool:
    raise NotImplementedError

  def infer_output(self) -> TensorDesc | None:
    return TensorDesc(self.input_tensor.data_type, self.input_tensor.sizes)

  def check_rules(self, check: Checker) -> None:
    rules.check_axis(check, "Axis", self.axis, self.input_tensor.dimension_count)

  def lower(self, input: jax.Array) -> jax.Array:
    walk = Walk(
      self.axis,
      self.axis_direction is AxisDirection.DECREASING,
      self.exclusive,
      self.TALLY == "product",
    )
    return kernels.lower(KERNELS, walk, functools.partial(_lax_form, walk), input)

  def explain_output(self) -> list[str]:
    data, axis = self.input_tensor, self.axis
    if not 0 <= axis < data.dimension_count:
      return [f"Axis {axis} is not a dimension of the {data.dimension_count}-D input."]
    start = "first" if self.axis_direction is AxisDirection.INCREASING else "last"
    empty = "1" if self.TALLY == "product" else "0"
    which = (
      f"the tally of the elements walked before it ({self.EXCLUSIVE_FIELD} TRUE: the first"
      f" element walked gets {empty}, the last one's value is never counted)"
      if self.exclusive
      else f"the tally of the elements up to and including it ({self.EXCLUSIVE_FIELD} FALSE)"
    )
    return [
      f"A lane is the line of {data.sizes[axis]} input element(s) along Axis {axis}, walked"
      f" from its {start} element (AxisDirection {self.axis_direction.name}).",
      f"Each output element holds its lane's running {self.TALLY}: {which}.",
      "Integers wrap; floats are accumulated one element at a time in walking order, in the"
      f" tensor's type ({data.data_type}), the first element itself starting the tally.",
      f"OutputTensor has InputTensor's sizes {braced(data.sizes)} and data type"
      f" {data.data_type}; it may alias the input (in-place execution).",
    ]


class Walk(NamedTuple):
  """A scan's `fields` for its lowering and its kernels."""

  axis: int
  reverse: bool
  exclusive: bool
  product: bool


def _lax_form(walk: Walk, input: jax.Array) -> jax.Array:
  """The lax form: integers (which wrap, so any order is exact) through XLA's cumulative sum
  and product, floats by the walk in order (`_in_order`)."""
  axis, reverse, product = walk.axis, walk.reverse, walk.product
  if not np.issubdtype(np.dtype(input.dtype), np.floating):
    scan = lax.cumprod if product else lax.cumsum
    tally = scan(input, axis, reverse=reverse)
    if walk.exclusive:
      tally = _shifted(tally, axis, reverse, 1 if product else 0)
    return tally
  return _in_order(input, axis, reverse, walk.exclusive, lax.mul if product else lax.add)


def _shifted(tally: jax.Array, axis: int, reverse: bool, identity: int) -> jax.Array:
  """An inclusive tally made exclusive: moved one step along the walk, the empty tally first."""
  n = tally.shape[axis]
  empty = lax.full_like(lax.slice_in_dim(tally, 0, 1, axis=axis), identity)
  if reverse:
    return lax.concatenate([lax.slice_in_dim(tally, 1, n, axis=axis), empty], axis)
  return lax.concatenate([empty, lax.slice_in_dim(tally, 0, n - 1, axis=axis)], axis)


def _in_order(
  input: jax.Array,
  axis: int,
  reverse: bool,
  exclusive: bool,
  combine: Callable[[jax.Array, jax.Array], jax.Array],
) -> jax.Array:
  """The running tally of every lane, one element at a time in walking order.

  A loop over the axis: the tally of all lanes at once is the carry, each step combines it
  with the next slice of the input and writes it (or, exclusive, the tally before it) into
  the output in place. The tally starts as the first element itself.
  """
  n = input.shape[axis]
  first = n - 1 if reverse else 0
  position = (lambda k: (n - 1) - k) if reverse else (lambda k: k)
  start = lax.dynamic_index_in_dim(input, first, axis, keepdims=True)
  output = input
  if exclusive:
    identity = 1 if combine is lax.mul else 0
    output = lax.dynamic_update_index_in_dim(output, lax.full_like(start, identity), first, axis)

  def step(k: jax.Array, carry: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
    output, tally = carry
    at = position(k)
    following = combine(tally, lax.dynamic_index_in_dim(input, at, axis, keepdims=True))
    written = tally if exclusive else following
    return lax.dynamic_update_index_in_dim(output, written, at, axis), following

  unroll = _UNROLL if n > _UNROLL_FROM else 1
  output, _ = lax.fori_loop(1, n, step, (output, start), unroll=unroll)
  return output


def _describe(
  desc_type: type[_CumulativeDesc],
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  axis: int,
  direction: AxisDirection,
  exclusive: bool,
) -> _CumulativeDesc:
  data = TensorDesc(types[0], shapes[0])
  return desc_type(data, axis, direction, exclusive, TensorDesc(types[0], shapes[0]))  # type: ignore[call-arg]


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class CumulativeSummationDesc(_CumulativeDesc):
  """`DML_CUMULATIVE_SUMMATION_OPERATOR_DESC`: running sums along Axis.

  Attributes:
    input_tensor: InputTensor, the values.
    axis: Axis, in [0, DimensionCount): the dimension the lanes run along.
    axis_direction: AxisDirection: INCREASING sums from each lane's first element,
      DECREASING from its last.
    has_exclusive_sum: HasExclusiveSum: True leaves each element out of its own sum.
    output_tensor: OutputTensor; None infers it (the input's sizes and data type).

  Examples:
    >>> desc = CumulativeSummationDesc(TensorDesc("FLOAT32", (1, 1, 3, 4)), axis=3,
    ...                                axis_direction="DECREASING", has_exclusive_sum=True)
    >>> desc
    CumulativeSummationDesc(input_tensor=TensorDesc("FLOAT32", (1, 1, 3, 4)), axis=3, axis_direction=AxisDirection.DECREASING, has_exclusive_sum=True)
    >>> print(desc)
    DML_OPERATOR_CUMULATIVE_SUMMATION(InputTensor=FLOAT32[1,1,3,4], Axis=3, AxisDirection=DECREASING, HasExclusiveSum=TRUE) -> FLOAT32[1,1,3,4]
  """

  OPERATOR = "CUMULATIVE_SUMMATION"
  SUPPORT = _SUMMATION_SUPPORT
  FUNCTION = "cumulative_summation"
  TALLY = "sum"
  EXCLUSIVE_FIELD = "HasExclusiveSum"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  axis: int = dml_field("Axis", FieldKind.UINT)
  axis_direction: AxisDirection = dml_field(
    "AxisDirection", FieldKind.ENUM, enum_type=AxisDirection, default=AxisDirection.INCREASING
  )
  has_exclusive_sum: bool = dml_field("HasExclusiveSum", FieldKind.BOOL, default=False)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      axis: SupportsIndex,
      axis_direction: AxisDirection | str | int = AxisDirection.INCREASING,
      has_exclusive_sum: bool = False,
      output_tensor: TensorDesc | None = None,
    ) -> None: ...

  @property
  def exclusive(self) -> bool:
    return self.has_exclusive_sum


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class CumulativeProductDesc(_CumulativeDesc):
  """`DML_CUMULATIVE_PRODUCT_OPERATOR_DESC`: running products along Axis.

  Attributes:
    input_tensor: InputTensor, the values.
    axis: Axis, in [0, DimensionCount): the dimension the lanes run along.
    axis_direction: AxisDirection: INCREASING multiplies from each lane's first
      element, DECREASING from its last.
    has_exclusive_product: HasExclusiveProduct: True leaves each element out of its
      own product.
    output_tensor: OutputTensor; None infers it (the input's sizes and data type).

  Examples:
    >>> desc = CumulativeProductDesc(TensorDesc("UINT32", (2, 5)), axis=1)
    >>> desc
    CumulativeProductDesc(input_tensor=TensorDesc("UINT32", (2, 5)), axis=1)
    >>> print(desc)
    DML_OPERATOR_CUMULATIVE_PRODUCT(InputTensor=UINT32[2,5], Axis=1, AxisDirection=INCREASING, HasExclusiveProduct=FALSE) -> UINT32[2,5]
  """

  OPERATOR = "CUMULATIVE_PRODUCT"
  SUPPORT = _PRODUCT_SUPPORT
  FUNCTION = "cumulative_product"
  TALLY = "product"
  EXCLUSIVE_FIELD = "HasExclusiveProduct"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  axis: int = dml_field("Axis", FieldKind.UINT)
  axis_direction: AxisDirection = dml_field(
    "AxisDirection", FieldKind.ENUM, enum_type=AxisDirection, default=AxisDirection.INCREASING
  )
  has_exclusive_product: bool = dml_field("HasExclusiveProduct", FieldKind.BOOL, default=False)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      axis: SupportsIndex,
      axis_direction: AxisDirection | str | int = AxisDirection.INCREASING,
      has_exclusive_product: bool = False,
      output_tensor: TensorDesc | None = None,
    ) -> None: ...

  @property
  def exclusive(self) -> bool:
    return self.has_exclusive_product


def _static(
  desc_type: type[_CumulativeDesc],
  input: ArrayLike,
  axis: int,
  axis_direction: AxisDirection | str | int,
  exclusive: bool,
  exclusive_name: str,
  feature_level: FeatureLevelLike,
) -> tuple[tuple[Any, ...], Any]:
  (input,), types = arguments.tensor_operands(desc_type, input)
  if not isinstance(exclusive, bool | np.bool_):
    raise TypeError(
      f"{exclusive_name} must be a bool; got {type(exclusive).__name__} {exclusive!r}"
    )
  static = (
    as_level(feature_level),
    types,
    as_int(axis, "Axis"),
    AxisDirection.from_any(axis_direction),
    bool(exclusive),
  )
  return static, input


def cumulative_summation(
  input: ArrayLike,
  *,
  axis: int,
  axis_direction: AxisDirection | str | int = AxisDirection.INCREASING,
  has_exclusive_sum: bool = False,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_CUMULATIVE_SUMMATION: the running sum of every lane along `axis`.

  INCREASING sums from each lane's first element, DECREASING from its last; with
  `has_exclusive_sum` each element's own value is left out of its sum (the first
  element in walking order gets 0). Integers wrap; floats are added one element at
  a time in walking order, in the input's dtype, so results are reproducible bit for
  bit (``jnp.cumsum`` adds in a tree on the CPU and GPU, which rounds differently).

  Args:
    input: InputTensor.
    axis: Axis, in [-n, n) (negative: from the end).
    axis_direction: AxisDirection, ``"INCREASING"`` (default) or ``"DECREASING"``.
    has_exclusive_sum: HasExclusiveSum.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor, of the input's shape and dtype.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for a non-integer axis, a non-bool flag, or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> x = np.array([[2, 1, 3, 5], [3, 8, 7, 3]], np.float32)
    >>> cumulative_summation(x, axis=1)
    Array([[ 2.,  3.,  6., 11.],
           [ 3., 11., 18., 21.]], dtype=float32)
    >>> cumulative_summation(x, axis=-1, axis_direction="DECREASING", has_exclusive_sum=True)
    Array([[ 9.,  8.,  5.,  0.],
           [18., 10.,  3.,  0.]], dtype=float32)
  """
  static, input = _static(
    CumulativeSummationDesc,
    input,
    axis,
    axis_direction,
    has_exclusive_sum,
    "has_exclusive_sum",
    feature_level,
  )
  return _cumulative_summation(static, input)


def cumulative_product(
  input: ArrayLike,
  *,
  axis: int,
  axis_direction: AxisDirection | str | int = AxisDirection.INCREASING,
  has_exclusive_product: bool = False,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_CUMULATIVE_PRODUCT: the running product of every lane along `axis`.

  INCREASING multiplies from each lane's first element, DECREASING from its last;
  with `has_exclusive_product` each element's own value is left out of its product
  (the first element in walking order gets 1). Integers wrap; floats are multiplied
  one element at a time in walking order, in the input's dtype.

  Args:
    input: InputTensor.
    axis: Axis, in [-n, n) (negative: from the end).
    axis_direction: AxisDirection, ``"INCREASING"`` (default) or ``"DECREASING"``.
    has_exclusive_product: HasExclusiveProduct.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor, of the input's shape and dtype.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for a non-integer axis, a non-bool flag, or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> x = np.array([2, 1, 3, 5], np.uint32)
    >>> cumulative_product(x, axis=0)
    Array([ 2,  2,  6, 30], dtype=uint32)
    >>> cumulative_product(x, axis=0, has_exclusive_product=True)
    Array([1, 2, 2, 6], dtype=uint32)
  """
  static, input = _static(
    CumulativeProductDesc,
    input,
    axis,
    axis_direction,
    has_exclusive_product,
    "has_exclusive_product",
    feature_level,
  )
  return _cumulative_product(static, input)


def _describe_summation(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  axis: int,
  direction: AxisDirection,
  exclusive: bool,
) -> _CumulativeDesc:
  return _describe(CumulativeSummationDesc, types, shapes, axis, direction, exclusive)


def _describe_product(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  axis: int,
  direction: AxisDirection,
  exclusive: bool,
) -> _CumulativeDesc:
  return _describe(CumulativeProductDesc, types, shapes, axis, direction, exclusive)


_cumulative_summation = dispatch.operator_function(
  _describe_summation,
  CumulativeSummationDesc,
  natural.Ranks(names=("axis", "axis_direction", "has_exclusive_sum"), axes=((0, None),)),
)
_cumulative_product = dispatch.operator_function(
  _describe_product,
  CumulativeProductDesc,
  natural.Ranks(names=("axis", "axis_direction", "has_exclusive_product"), axes=((0, None),)),
)


# -- kernels ---------------------------------------------------------------------------------


def _lanes_roles(walk: Walk, config: Any, x: Shaped) -> Roles:
  """Every dimension but the axis passes through per shard; the axis is needed whole."""
  lanes = around_axis(x.ndim, walk.axis, "n")
  return Roles(f"{lanes} -> {lanes}", whole=("n",))


KERNELS = (
  kernels.Kernel(
    "cumulative_lanes_triton",
    "cuda",
    applies=lambda walk, config, x: cumulative_lanes_triton.applies(
      x.shape, walk.axis, x.dtype, config
    ),
    roles=_lanes_roles,
    call=lambda walk, config, interpret, x: functools.partial(
      cumulative_lanes_triton.cumulative_lanes,
      axis=walk.axis,
      reverse=walk.reverse,
      exclusive=walk.exclusive,
      product=walk.product,
      config=config,
      interpret=interpret,
    ),
  ),
  kernels.Kernel(
    "cumulative_cpu",
    "cpu",
    applies=lambda walk, config, x: cumulative_cpu.applies(x.shape, walk.axis, x.dtype, config),
    roles=_lanes_roles,
    call=lambda walk, config, interpret, x: functools.partial(
      cumulative_cpu.cumulative,
      axis=walk.axis,
      reverse=walk.reverse,
      exclusive=walk.exclusive,
      product=walk.product,
    ),
    native="cumulative.cc",
  ),
)
"""The scans' kernels (`kernels.forms` chooses): on CUDA GPUs, the float walk of lanes in
parallel (FLOAT32 and FLOAT16, 1 MiB or more, 32 lanes or more); on the CPU, the native walk
(32- and 64-bit data, inputs of 64 KiB or more); the rest keeps the lax form."""
