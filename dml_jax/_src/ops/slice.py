"""DML_OPERATOR_SLICE and DML_OPERATOR_SLICE1: a strided sub-tensor of the input.

SLICE copies `Sizes[i]` elements per dimension, starting at `Offsets[i]` and
stepping `Strides[i]` (>= 1): ``out[o] = input[Offsets + Strides * o]``; its
`Sizes` are the output's sizes, and every element it reads must lie inside the
input. SLICE1 (FL 2_1) describes a window of the input instead: it starts at
`InputWindowOffsets[i]`, spans `InputWindowSizes[i]` elements, and is walked with
a signed step `InputWindowStrides[i]` (never 0); a negative step walks it from its
last element backwards. The output holds a prefix of each walk, of any length
from 1 to the whole walk, ``1 + (InputWindowSizes[i] - 1) // |InputWindowStrides[i]|``.
Neither operator clamps: windows and reads outside the input are invalid
descriptors, not clipped as ONNX Slice clips its starts and ends.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, SupportsIndex

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
from dml_jax._src.integers import as_int_tuple
from dml_jax._src.kernels import slice_rows_triton
from dml_jax._src.kernels.partitioning import Roles, Shaped, dims
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

_UINT_MAX = 2**32 - 1
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


def _table(dimension_counts, data_types):
  row = support(dimension_counts, data_types)
  return {"InputTensor": row, "OutputTensor": row}


_SLICE_SUPPORT = SupportTable(
  "SLICE",
  {
    FeatureLevel.FL_1_0: _table((4, 5), FLOAT_AND_INT_16_32),
    FeatureLevel.FL_2_1: _table((4, 5), UP_TO_32_BIT),
    FeatureLevel.FL_3_0: _table((1, 8), UP_TO_32_BIT),
    FeatureLevel.FL_4_1: _table((1, 8), ALL_DATA),
  },
)

_SLICE1_SUPPORT = SupportTable(
  "SLICE1",
  {
    FeatureLevel.FL_2_1: _table((4, 5), UP_TO_32_BIT),
    FeatureLevel.FL_3_0: _table((1, 8), UP_TO_32_BIT),
    FeatureLevel.FL_4_1: _table((1, 8), ALL_DATA),
  },
)


def _check_arrays(
  check: Checker,
  dimension_count: int,
  rank: int,
  counted: tuple[str, tuple[int, ...]],
  *others: tuple[str, tuple[int, ...]],
  tensor: str = "InputTensor",
) -> bool:
  """DimensionCount counts the first array, the others have as many values, and it is the
  rank of `tensor`; returns whether every array has one value per dimension."""
  name, values = counted
  ok = rules.check_count(check, "DimensionCount", dimension_count, name, len(values))
  for other, other_values in others:
    ok &= check.expect(
      len(other_values) == dimension_count,
      other,
      f"must hold DimensionCount ({dimension_count}) values, one per dimension",
      other_values,
    )
  ok &= check.expect(
    dimension_count == rank,
    "DimensionCount",
    f"must equal {tensor}.DimensionCount ({rank})",
    dimension_count,
    hint="pad the arrays for leading dimensions of size 1 with offset 0, size 1, stride 1"
    if dimension_count < rank
    else None,
  )
  return ok


def _check_range(
  check: Checker, field: str, values: tuple[int, ...], low: int, high: int, rule: str
) -> bool:
  return check.expect(all(low <= v <= high for v in values), field, rule, values)


def _beyond(ends: Sequence[int], sizes: Sequence[int]) -> list[int]:
  """The dimensions whose last position `ends[d]` (exclusive) passes `sizes[d]`."""
  return [d for d, (end, size) in enumerate(zip(ends, sizes, strict=True)) if end > size]


class Windows(NamedTuple):
  """SLICE1's InputWindowOffsets, InputWindowSizes and InputWindowStrides (SLICE_GRAD's too):
  one window a dimension, walked from its start (or, with a negative stride, its end)."""

  offsets: tuple[int, ...]
  sizes: tuple[int, ...]
  strides: tuple[int, ...]

  def fit(self, rank: int) -> bool:
    """One offset, size and stride per dimension, sizes >= 1, strides not 0."""
    return (
      all(len(a) == rank for a in self)
      and all(s >= 1 for s in self.sizes)
      and all(t != 0 for t in self.strides)
    )

  def walk_sizes(self, rank: int) -> tuple[int, ...] | None:
    """The length of each window's whole walk, ``1 + (size - 1) // |stride|`` (None if the
    arrays do not describe one window per dimension)."""
    if not self.fit(rank):
      return None
    return tuple(1 + (s - 1) // abs(t) for s, t in zip(self.sizes, self.strides, strict=True))

  def check(
    self, check: Checker, dimension_count: int, rank: int, tensor: str, zero_stride: str
  ) -> bool:
    """The arrays' counts and ranges; whether each describes one window a dimension."""
    fits = _check_arrays(
      check,
      dimension_count,
      rank,
      ("InputWindowOffsets", self.offsets),
      ("InputWindowSizes", self.sizes),
      ("InputWindowStrides", self.strides),
      tensor=tensor,
    )
    ok = _check_range(
      check, "InputWindowOffsets", self.offsets, 0, _UINT_MAX, "every offset must be a UINT (>= 0)"
    )
    ok &= _check_range(
      check,
      "InputWindowSizes",
      self.sizes,
      1,
      _UINT_MAX,
      "every window size must be >= 1 (no empty windows)",
    )
    ok &= check.expect(
      all(t != 0 for t in self.strides),
      "InputWindowStrides",
      zero_stride,
      self.strides,
      hint="use 1 to walk a window forwards, -1 backwards",
    )
    ok &= _check_range(
      check,
      "InputWindowStrides",
      self.strides,
      _INT_MIN,
      _INT_MAX,
      "every stride must be an INT (in [-2**31, 2**31 - 1])",
    )
    return fits and ok and self.fit(rank)

  def beyond(self, sizes: Sequence[int]) -> tuple[int, int] | None:
    """The first dimension whose window passes `sizes`, and where it ends; None if none."""
    ends = [o + s for o, s in zip(self.offsets, self.sizes, strict=True)]
    past = _beyond(ends, sizes)
    return (past[0], ends[past[0]]) if past else None


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class SliceDesc(OperatorDesc):
  """`DML_SLICE_OPERATOR_DESC`.

  Attributes:
    input_tensor: InputTensor.
    offsets: Offsets, the first element read in each dimension.
    sizes: Sizes, the number of elements copied per dimension (OutputTensor.Sizes).
    strides: Strides, the step per dimension (>= 1).
    output_tensor: OutputTensor; None infers it (Sizes, the input's data type).
    dimension_count: DimensionCount; None means len(offsets).

  Examples:
    >>> desc = SliceDesc(TensorDesc("FLOAT32", (1, 1, 4, 4)), offsets=(0, 0, 1, 0),
    ...                  sizes=(1, 1, 2, 2), strides=(1, 1, 2, 3))
    >>> desc
    SliceDesc(input_tensor=TensorDesc("FLOAT32", (1, 1, 4, 4)), offsets=(0, 0, 1, 0), sizes=(1, 1, 2, 2), strides=(1, 1, 2, 3))
    >>> print(desc)
    DML_OPERATOR_SLICE(InputTensor=FLOAT32[1,1,4,4], Offsets={0,0,1,0}, Sizes={1,1,2,2}, Strides={1,1,2,3}, DimensionCount=4) -> FLOAT32[1,1,2,2]
  """

  OPERATOR = "SLICE"
  SUPPORT = _SLICE_SUPPORT
  FUNCTION = "slice"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  offsets: tuple[int, ...] = dml_field("Offsets", FieldKind.UINT_ARRAY)
  sizes: tuple[int, ...] = dml_field("Sizes", FieldKind.UINT_ARRAY)
  strides: tuple[int, ...] = dml_field("Strides", FieldKind.UINT_ARRAY)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )
  dimension_count: int = dml_field("DimensionCount", FieldKind.UINT, count_of="offsets")

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      offsets: Iterable[SupportsIndex],
      sizes: Iterable[SupportsIndex],
      strides: Iterable[SupportsIndex],
      output_tensor: TensorDesc | None = None,
      dimension_count: SupportsIndex | None = None,
    ) -> None: ...

  def _fits(self) -> bool:
    """One offset, size and stride per input dimension."""
    n = self.input_tensor.dimension_count
    return len(self.offsets) == len(self.sizes) == len(self.strides) == n

  def _ends(self) -> tuple[int, ...]:
    """Per dimension, one past the last position read: Offsets + (Sizes - 1) * Strides + 1."""
    triples = zip(self.offsets, self.sizes, self.strides, strict=True)
    return tuple(o + (s - 1) * t + 1 for o, s, t in triples)

  def infer_output(self) -> TensorDesc | None:
    if not self._fits() or any(s < 1 for s in self.sizes):
      return None
    return TensorDesc(self.input_tensor.data_type, self.sizes)

  def check_rules(self, check: Checker) -> None:
    fits = _check_arrays(
      check,
      self.dimension_count,
      self.input_tensor.dimension_count,
      ("Offsets", self.offsets),
      ("Sizes", self.sizes),
      ("Strides", self.strides),
    )
    ok = _check_range(
      check, "Offsets", self.offsets, 0, _UINT_MAX, "every offset must be a UINT (>= 0)"
    )
    ok &= _check_range(
      check,
      "Sizes",
      self.sizes,
      1,
      _UINT_MAX,
      "every size must be >= 1 (DirectML has no empty tensors)",
    )
    ok &= _check_range(
      check,
      "Strides",
      self.strides,
      1,
      _UINT_MAX,
      "every stride must be >= 1",
    )
    if not (fits and ok and self._fits()):
      return
    ends = self._ends()
    beyond = _beyond(ends, self.input_tensor.sizes)
    if beyond:
      d = beyond[0]
      check.fail(
        "Offsets",
        f"every element read must lie inside InputTensor.Sizes {braced(self.input_tensor.sizes)}:"
        f" Offsets + (Sizes - 1) * Strides must be < InputTensor.Sizes; dimension {d} reads"
        f" {self.offsets[d]} + ({self.sizes[d]} - 1) * {self.strides[d]} = {ends[d] - 1}",
        self.offsets,
        hint="lower Sizes, Offsets or Strides there; DirectML never clips a slice",
      )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return f"must equal Sizes: {braced(expected)}"

  def lower(self, input: jax.Array) -> jax.Array:
    return _strided_window(input, self.offsets, self.strides, self.sizes, fallback=self._slice)

  def _slice(self, input: jax.Array) -> jax.Array:
    """The lax form: one strided slice."""
    return lax.slice(input, self.offsets, self._ends(), self.strides)

  def explain_output(self) -> list[str]:
    if not self._fits():
      return [
        f"Offsets, Sizes and Strides hold {len(self.offsets)}, {len(self.sizes)} and"
        f" {len(self.strides)} value(s) for {self.input_tensor.dimension_count} dimension(s):"
        f" no output can be inferred (DirectML needs one of each per dimension)."
      ]
    reads = ", ".join(
      f"[{o}, {o + (s - 1) * t}] step {t}"
      for o, s, t in zip(self.offsets, self.sizes, self.strides, strict=True)
    )
    return [
      f"OutputTensor.Sizes = Sizes = {braced(self.sizes)}.",
      f"out[o] = InputTensor[Offsets + Strides * o]: per dimension, input positions {reads};"
      f" every one must lie inside InputTensor.Sizes {braced(self.input_tensor.sizes)}.",
      f"OutputTensor.DataType = InputTensor.DataType = {self.input_tensor.data_type}.",
    ]


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class Slice1Desc(OperatorDesc):
  """`DML_SLICE1_OPERATOR_DESC`.

  Attributes:
    input_tensor: InputTensor.
    input_window_offsets: InputWindowOffsets, where each dimension's window starts.
    input_window_sizes: InputWindowSizes, each window's extent (>= 1).
    input_window_strides: InputWindowStrides, signed steps, never 0; a negative step
      walks the window from its last element.
    output_tensor: OutputTensor; None infers the whole walk of each window,
      ``1 + (InputWindowSizes - 1) // |InputWindowStrides|``. A given output may
      take any prefix of each walk (sizes from 1 to that).
    dimension_count: DimensionCount; None means len(input_window_offsets).

  Examples:
    >>> desc = Slice1Desc(TensorDesc("FLOAT32", (1, 1, 4, 4)), input_window_offsets=(0, 0, 0, 1),
    ...                   input_window_sizes=(1, 1, 4, 3), input_window_strides=(1, 1, -2, 2))
    >>> print(desc)
    DML_OPERATOR_SLICE1(InputTensor=FLOAT32[1,1,4,4], InputWindowOffsets={0,0,0,1}, InputWindowSizes={1,1,4,3}, InputWindowStrides={1,1,-2,2}, DimensionCount=4) -> FLOAT32[1,1,2,2]
  """

  OPERATOR = "SLICE1"
  SUPPORT = _SLICE1_SUPPORT
  FUNCTION = "slice1"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  input_window_offsets: tuple[int, ...] = dml_field("InputWindowOffsets", FieldKind.UINT_ARRAY)
  input_window_sizes: tuple[int, ...] = dml_field("InputWindowSizes", FieldKind.UINT_ARRAY)
  input_window_strides: tuple[int, ...] = dml_field("InputWindowStrides", FieldKind.INT_ARRAY)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )
  dimension_count: int = dml_field(
    "DimensionCount", FieldKind.UINT, count_of="input_window_offsets"
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      input_window_offsets: Iterable[SupportsIndex],
      input_window_sizes: Iterable[SupportsIndex],
      input_window_strides: Iterable[SupportsIndex],
      output_tensor: TensorDesc | None = None,
      dimension_count: SupportsIndex | None = None,
    ) -> None: ...

  @property
  def windows(self) -> Windows:
    return Windows(self.input_window_offsets, self.input_window_sizes, self.input_window_strides)

  def walk_sizes(self) -> tuple[int, ...] | None:
    """The length of each window's whole walk, ``1 + (size - 1) // |stride|`` (None if the
    arrays do not describe one window per dimension)."""
    return self.windows.walk_sizes(self.input_tensor.dimension_count)

  def infer_output(self) -> TensorDesc | None:
    walk = self.walk_sizes()
    if walk is None:
      return None
    given = self.output_tensor
    if given is not None and given.dimension_count == len(walk):
      if all(1 <= g <= w for g, w in zip(given.sizes, walk, strict=True)):
        return TensorDesc(self.input_tensor.data_type, given.sizes)  # a prefix of each walk
    return TensorDesc(self.input_tensor.data_type, walk)

  def check_rules(self, check: Checker) -> None:
    windows = self.windows
    rank = self.input_tensor.dimension_count
    if not windows.check(check, self.dimension_count, rank, "InputTensor", "no stride may be 0"):
      return
    beyond = windows.beyond(self.input_tensor.sizes)
    if beyond is not None:
      d, end = beyond
      check.fail(
        "InputWindowOffsets",
        f"every window must lie inside InputTensor.Sizes {braced(self.input_tensor.sizes)}:"
        f" InputWindowOffsets + InputWindowSizes must be <= InputTensor.Sizes; dimension {d}"
        f" ends at {windows.offsets[d]} + {windows.sizes[d]} = {end}",
        windows.offsets,
        hint="shrink the window or move it; DirectML never clips a window",
      )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    walk = self.walk_sizes()
    return (
      f"each size must be in [1, 1 + (InputWindowSizes - 1) // |InputWindowStrides|],"
      f" at most {braced(walk or expected)} (a prefix of each window's walk)"
    )

  def lower(self, input: jax.Array) -> jax.Array:
    # A negative walk starts at the window's last element.
    starts = tuple(
      o if t > 0 else o + s - 1
      for o, s, t in zip(
        self.input_window_offsets,
        self.input_window_sizes,
        self.input_window_strides,
        strict=True,
      )
    )
    steps = self.input_window_strides
    return _strided_window(input, starts, steps, self.output.sizes, fallback=self._walk)

  def _walk(self, input: jax.Array) -> jax.Array:
    """The lax form: each walk a forward strided slice of the window, reversed where the step
    is negative."""
    starts, ends, steps, reversed_axes = [], [], [], []
    output_sizes = self.output.sizes
    for d, (o, s, t, n) in enumerate(
      zip(
        self.input_window_offsets,
        self.input_window_sizes,
        self.input_window_strides,
        output_sizes,
        strict=True,
      )
    ):
      step = abs(t)
      first = o if t > 0 else o + s - 1 - (n - 1) * step
      starts.append(first)
      ends.append(first + (n - 1) * step + 1)
      steps.append(step)
      if t < 0 and n > 1:
        reversed_axes.append(d)
    out = lax.slice(input, tuple(starts), tuple(ends), tuple(steps))
    return lax.rev(out, tuple(reversed_axes)) if reversed_axes else out

  def explain_output(self) -> list[str]:
    walk = self.walk_sizes()
    if walk is None:
      return [
        "The windows are not one per dimension with sizes >= 1 and strides not 0:"
        " no output can be inferred."
      ]
    output = self.output.sizes if self.output_tensor is not None else walk
    walks = ", ".join(
      f"1 + ({s} - 1) // {abs(t)} = {w}"
      for s, t, w in zip(self.input_window_sizes, self.input_window_strides, walk, strict=True)
    )
    starts = ", ".join(
      f"{o + s - 1} step {t}" if t < 0 else f"{o} step {t}"
      for o, s, t in zip(
        self.input_window_offsets,
        self.input_window_sizes,
        self.input_window_strides,
        strict=True,
      )
    )
    lines = [
      f"Whole walk per dimension = 1 + (InputWindowSizes - 1) // |InputWindowStrides| = {walks}.",
      f"OutputTensor.Sizes = {braced(output)}"
      + (
        " (the whole walks; a given OutputTensor may take any prefix of each)."
        if self.output_tensor is None
        else f" (given: a prefix of each walk, at most {braced(walk)})."
      ),
      f"Walks start at {starts}: a negative stride starts at the window's last element"
      f" (InputWindowOffsets + InputWindowSizes - 1) and moves backwards.",
      f"OutputTensor.DataType = InputTensor.DataType = {self.input_tensor.data_type}.",
    ]
    return lines


def slice(
  input: ArrayLike,
  *,
  offsets: Sequence[int],
  sizes: Sequence[int],
  strides: Sequence[int],
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_SLICE: ``out[o] = input[offsets + strides * o]`` for ``o < sizes``.

  `sizes` is the output's shape; every element read must lie inside `input`.

  Unlike ``lax.slice`` and numpy indexing, it takes an offset, a count and a step
  (>= 1) for every dimension, and nothing is clipped: a slice reaching past the
  input is an error, not a shorter result. For negative steps see `slice1`.

  Ranks: `offsets`, `sizes` and `strides` hold one value per dimension; more values than
  `input` has dimensions promote it with leading 1s, fewer are refused: they read two ways
  (NumPy's indexing applies a shorter list to the first dimensions, DirectML's padding of
  ranks to the last), and the error prints the call of each. Where the feature level needs
  more dimensions, the input gets leading 1s (offset 0, size 1, stride 1 there) and the
  output loses them again.

  See also: `slice1` (DML_OPERATOR_SLICE1: input windows, negative strides, any
  prefix of each walk).

  Args:
    input: InputTensor.
    offsets: Offsets, the first element read per dimension.
    sizes: Sizes, the number of elements per dimension (the output's shape), >= 1.
    strides: Strides, the step per dimension, >= 1.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer arguments or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> x = np.arange(16, dtype=np.int8).reshape(4, 4)
    >>> slice(x, offsets=(1, 0), sizes=(2, 2), strides=(2, 3))
    Array([[ 4,  7],
           [12, 15]], dtype=int8)
  """
  (input,), types = arguments.tensor_operands(SliceDesc, input)
  level = as_level(feature_level)
  attributes = (
    as_int_tuple(offsets, "Offsets"),
    as_int_tuple(sizes, "Sizes"),
    as_int_tuple(strides, "Strides"),
  )
  return _slice((level, types, *attributes), input)


def _describe_slice(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  offsets: tuple[int, ...],
  sizes: tuple[int, ...],
  strides: tuple[int, ...],
) -> SliceDesc:
  return SliceDesc(TensorDesc(types[0], shapes[0]), offsets=offsets, sizes=sizes, strides=strides)


_slice = dispatch.operator_function(
  _describe_slice,
  SliceDesc,
  natural.PerDimension(
    names=("offsets", "sizes", "strides"), neutral=((0, 0), (1, natural.SIZE), (2, 1))
  ),
  moves_bits=True,
)


def slice1(
  input: ArrayLike,
  *,
  input_window_offsets: Sequence[int],
  input_window_sizes: Sequence[int],
  input_window_strides: Sequence[int],
  output_sizes: Sequence[int] | None = None,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_SLICE1: walks a window of `input` per dimension with a signed stride.

  Dimension i's window is ``[offset, offset + size)``; it is walked from its first
  element with a positive stride and from its last (``offset + size - 1``) with a
  negative one: ``out[o] = input[start + strides * o]``.

  Unlike ``input[a:b:-k]`` in numpy, a negative stride starts at the window's end,
  not at its first index, the window must lie inside the input (nothing is
  clipped), and a stride of 0 is an error.

  Ranks: the windows' offsets, sizes and strides and `output_sizes` hold one value per
  dimension; more values than `input` has dimensions promote it with leading 1s, fewer are
  refused: they read two ways (NumPy's indexing applies a shorter list to the first
  dimensions, DirectML's padding of ranks to the last), and the error prints the call of
  each. Where the feature level needs more dimensions, the input gets leading 1s (offset
  0, size 1, stride 1 there) and the output loses them again.

  See also: `slice` (DML_OPERATOR_SLICE: offsets, output sizes and positive strides).

  Args:
    input: InputTensor.
    input_window_offsets: InputWindowOffsets, where each window starts.
    input_window_sizes: InputWindowSizes, each window's extent, >= 1.
    input_window_strides: InputWindowStrides, signed steps, never 0.
    output_sizes: OutputTensor.Sizes; None takes each window's whole walk,
      ``ceil(size / |stride|)``; given, any prefix of each walk (sizes from 1 to that).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer arguments or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> x = np.arange(16, dtype=np.int8).reshape(4, 4)
    >>> slice1(x, input_window_offsets=(0, 1), input_window_sizes=(4, 3),
    ...        input_window_strides=(-2, 2))
    Array([[13, 15],
           [ 5,  7]], dtype=int8)
  """
  (input,), types = arguments.tensor_operands(Slice1Desc, input)
  level = as_level(feature_level)
  attributes = (
    as_int_tuple(input_window_offsets, "InputWindowOffsets"),
    as_int_tuple(input_window_sizes, "InputWindowSizes"),
    as_int_tuple(input_window_strides, "InputWindowStrides"),
    None if output_sizes is None else as_int_tuple(output_sizes, "OutputTensor.Sizes"),
  )
  return _slice1((level, types, *attributes), input)


def _describe_slice1(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  offsets: tuple[int, ...],
  sizes: tuple[int, ...],
  strides: tuple[int, ...],
  output_sizes: tuple[int, ...] | None,
) -> Slice1Desc:
  return Slice1Desc(
    TensorDesc(types[0], shapes[0]),
    input_window_offsets=offsets,
    input_window_sizes=sizes,
    input_window_strides=strides,
    output_tensor=None if output_sizes is None else TensorDesc(types[0], output_sizes),
  )


_slice1 = dispatch.operator_function(
  _describe_slice1,
  Slice1Desc,
  natural.PerDimension(
    names=("input_window_offsets", "input_window_sizes", "input_window_strides", "output_sizes"),
    neutral=((0, 0), (1, natural.SIZE), (2, 1), (3, natural.SIZE)),
  ),
  moves_bits=True,
)


# -- kernels ---------------------------------------------------------------------------------
# The walk ``out[o] = input[starts + o * steps]`` of SLICE and SLICE1.


class Walk(NamedTuple):
  """The kernels' `fields`: the input's whole shape and the walk."""

  shape: tuple[int, ...]
  starts: tuple[int, ...]
  steps: tuple[int, ...]
  sizes: tuple[int, ...]

  @property
  def kept(self) -> list[bool]:
    """The dimensions the walk keeps whole: start 0, step 1, every element."""
    return [
      start == 0 and step == 1 and size == n
      for n, start, step, size in zip(self.shape, self.starts, self.steps, self.sizes, strict=True)
    ]


def _strided_window(
  input: jax.Array,
  starts: Sequence[int],
  steps: Sequence[int],
  sizes: Sequence[int],
  *,
  fallback: Callable[[jax.Array], jax.Array],
) -> jax.Array:
  """The walk: the row kernel on CUDA GPUs where it applies (`KERNELS`), else `fallback`."""
  walk = Walk(tuple(input.shape), tuple(starts), tuple(steps), tuple(sizes))
  return kernels.lower(KERNELS, walk, fallback, input)


def _window_roles(walk: Walk, config: Any, x: Shaped) -> Roles:
  """A dimension the walk keeps whole passes through; the others are needed whole (and the
  last stays whole unless its shards are 32 or more wide)."""
  kept = walk.kept
  ins = [f"p{d}" if k else f"i{d}" for d, k in enumerate(kept)]
  outs = [f"p{d}" if k else f"o{d}" for d, k in enumerate(kept)]
  whole = tuple(f for f in ins + outs if not f.startswith("p"))
  last = len(walk.shape) - 1
  sizes = walk.sizes
  fits = lambda x: (x.shape[last] if kept[last] else sizes[last]) >= 32  # noqa: E731
  return Roles(f"{dims(ins)} -> {dims(outs)}", whole=whole, fits=fits)


def _window_call(
  walk: Walk, config: Any, interpret: bool, x: Shaped
) -> Callable[[jax.Array], jax.Array]:
  """The kernel for a shard `x`: a dimension kept whole walks the shard's own size."""
  local = tuple(n if k else s for n, s, k in zip(x.shape, walk.sizes, walk.kept, strict=True))
  return functools.partial(
    slice_rows_triton.window_rows,
    starts=walk.starts,
    steps=walk.steps,
    sizes=local,
    config=config,
    interpret=interpret,
  )


KERNELS = (
  kernels.Kernel(
    "slice_rows_triton",
    "cuda",
    applies=lambda walk, config, x: slice_rows_triton.applies(
      x.shape, walk.steps, walk.sizes, x.dtype, config
    ),
    roles=_window_roles,
    call=_window_call,
    one_device=True,  # over several devices it would gather the axes it cuts
  ),
)
"""SLICE's and SLICE1's kernel (`kernels.forms` chooses): a run of an output row a program,
for 32-bit data and a walk XLA copies slowly (a strided or backward last axis, or any
backward axis)."""
