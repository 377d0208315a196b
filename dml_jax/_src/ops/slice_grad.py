"""DML_OPERATOR_SLICE_GRAD: SLICE1's gradient, its input gradient written into zeros.

SLICE1 reads ``input[start + InputWindowStrides * o]`` for each output position o,
starting each dimension's walk at InputWindowOffsets (a positive stride) or at the
window's last element, ``InputWindowOffsets + InputWindowSizes - 1`` (a negative one).
SLICE_GRAD takes the same windows, an InputGradientTensor shaped like SLICE1's output
and an OutputGradientTensor shaped like SLICE1's input, and writes
``OutputGradient[start + InputWindowStrides * o] = InputGradient[o]``; every other
element of the OutputGradientTensor is 0. No two positions of a walk meet, so nothing
is summed: the elements are moved bit for bit (a -0.0 or a NaN payload stays as it is).

The OutputGradientTensor is required: its sizes (SLICE1's input's) are in no other field;
each window must lie inside it. As SLICE1's output may be any prefix of each walk, the
InputGradientTensor's sizes may be too, from 1 to
``1 + (InputWindowSizes - 1) // |InputWindowStrides|``. The result is what ``jax.vjp``
of `dml.slice1` gives for the same windows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex

import jax
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, natural, registry
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import ALL_DATA, UP_TO_32_BIT, DataType
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
from dml_jax._src.ops.slice import Windows
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc


def _table(dimension_counts: Any, data_types: tuple[DataType, ...]) -> dict[str, Any]:
  row = support(dimension_counts, data_types)
  return {"InputGradientTensor": row, "OutputGradientTensor": row}


_SUPPORT = SupportTable(
  "SLICE_GRAD",
  {
    FeatureLevel.FL_3_0: _table((4, 5), UP_TO_32_BIT),
    FeatureLevel.FL_3_1: _table((1, 8), UP_TO_32_BIT),
    FeatureLevel.FL_4_1: _table((1, 8), ALL_DATA),
  },
)


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class SliceGradDesc(OperatorDesc):
  """`DML_SLICE_GRAD_OPERATOR_DESC`.

  Attributes:
    input_gradient_tensor: InputGradientTensor, shaped like SLICE1's output: a prefix of
      each window's walk, ``1 + (InputWindowSizes - 1) // |InputWindowStrides|`` at most.
    output_gradient_tensor: OutputGradientTensor, required: SLICE1's input's sizes, which
      no other field holds; each window must lie inside them.
    input_window_offsets: InputWindowOffsets, where each dimension's window starts.
    input_window_sizes: InputWindowSizes, each window's extent (>= 1).
    input_window_strides: InputWindowStrides, signed steps, never 0; a negative step
      walks the window from its last element.
    dimension_count: DimensionCount; None means len(input_window_offsets).

  Examples:
    >>> desc = SliceGradDesc(TensorDesc("FLOAT32", (2, 2)), TensorDesc("FLOAT32", (4, 4)),
    ...                      input_window_offsets=(0, 0), input_window_sizes=(4, 4),
    ...                      input_window_strides=(2, -2))
    >>> print(desc)
    DML_OPERATOR_SLICE_GRAD(InputGradientTensor=FLOAT32[2,2], InputWindowOffsets={0,0}, InputWindowSizes={4,4}, InputWindowStrides={2,-2}, DimensionCount=2) -> FLOAT32[4,4]
  """

  OPERATOR = "SLICE_GRAD"
  SUPPORT = _SUPPORT
  FUNCTION = "slice_grad"

  input_gradient_tensor: TensorDesc = dml_field("InputGradientTensor", FieldKind.TENSOR)
  output_gradient_tensor: TensorDesc = dml_field(
    "OutputGradientTensor", FieldKind.TENSOR, output=True
  )
  input_window_offsets: tuple[int, ...] = dml_field("InputWindowOffsets", FieldKind.UINT_ARRAY)
  input_window_sizes: tuple[int, ...] = dml_field("InputWindowSizes", FieldKind.UINT_ARRAY)
  input_window_strides: tuple[int, ...] = dml_field("InputWindowStrides", FieldKind.INT_ARRAY)
  dimension_count: int = dml_field(
    "DimensionCount", FieldKind.UINT, count_of="input_window_offsets"
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_gradient_tensor: TensorDesc,
      output_gradient_tensor: TensorDesc,
      input_window_offsets: Iterable[SupportsIndex],
      input_window_sizes: Iterable[SupportsIndex],
      input_window_strides: Iterable[SupportsIndex],
      dimension_count: SupportsIndex | None = None,
    ) -> None: ...

  @property
  def windows(self) -> Windows:
    return Windows(self.input_window_offsets, self.input_window_sizes, self.input_window_strides)

  def walk_sizes(self) -> tuple[int, ...] | None:
    """The length of each window's whole walk, ``1 + (size - 1) // |stride|`` (None if the
    arrays do not describe one window per dimension)."""
    return self.windows.walk_sizes(self.input_gradient_tensor.dimension_count)

  def infer_output(self) -> TensorDesc | None:
    # The sizes are the given output's (the one field that holds them), the data type the
    # input gradient's.
    return TensorDesc(self.input_gradient_tensor.data_type, self.output_gradient_tensor.sizes)

  def check_rules(self, check: Checker) -> None:
    windows = self.windows
    rank = self.input_gradient_tensor.dimension_count
    zero_stride = (
      "no stride may be 0: with a zero stride no output gradient element could be told which"
      " input gradient element it takes"
    )
    if not windows.check(check, self.dimension_count, rank, "InputGradientTensor", zero_stride):
      return
    target = self.output_gradient_tensor.sizes
    beyond = windows.beyond(target) if len(target) == rank else None
    if beyond is not None:
      d, end = beyond
      check.fail(
        "InputWindowOffsets",
        f"every window must lie inside OutputGradientTensor.Sizes {braced(target)} (SLICE1's"
        f" input): InputWindowOffsets + InputWindowSizes must be <= OutputGradientTensor.Sizes;"
        f" dimension {d} ends at {windows.offsets[d]} + {windows.sizes[d]} = {end}",
        windows.offsets,
        hint="shrink the window or move it, or give the OutputGradientTensor SLICE1's input's"
        " sizes",
      )
    walk = self.walk_sizes()
    assert walk is not None
    given = self.input_gradient_tensor.sizes
    check.expect(
      all(1 <= g <= w for g, w in zip(given, walk, strict=True)),
      "InputGradientTensor.Sizes",
      f"each size must be in [1, 1 + (InputWindowSizes - 1) // |InputWindowStrides|], at most"
      f" {braced(walk)} (SLICE1's output: a prefix of each window's walk)",
      given,
      hint="give the InputGradientTensor the sizes of SLICE1's output for these windows",
    )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return f"must be SLICE1's input's sizes: {braced(expected)}"

  def lower(self, input_gradient: jax.Array) -> jax.Array:
    """SLICE1's walk undone: each dimension reversed where its stride is negative, then
    padded with zeros, the step's gaps as interior padding."""
    target = self.output_gradient_tensor.sizes
    walked = input_gradient.shape
    config, flipped = [], []
    for d, (o, s, t, n, size) in enumerate(
      zip(
        self.input_window_offsets,
        self.input_window_sizes,
        self.input_window_strides,
        walked,
        target,
        strict=True,
      )
    ):
      step = abs(t)
      first = o if t > 0 else o + s - 1 - (n - 1) * step  # the lowest position written
      last = first + (n - 1) * step
      config.append((first, size - 1 - last, step - 1))
      if t < 0 and n > 1:
        flipped.append(d)
    forward = lax.rev(input_gradient, tuple(flipped)) if flipped else input_gradient
    zero = np.zeros((), forward.dtype)
    return lax.pad(forward, zero, config)

  def explain_output(self) -> list[str]:
    walk = self.walk_sizes()
    if walk is None:
      return [
        "The windows are not one per dimension with sizes >= 1 and strides not 0:"
        " the positions written are undefined."
      ]
    starts = ", ".join(
      f"{o + s - 1} step {t}" if t < 0 else f"{o} step {t}"
      for o, s, t in zip(
        self.input_window_offsets,
        self.input_window_sizes,
        self.input_window_strides,
        strict=True,
      )
    )
    target = self.output_gradient_tensor
    return [
      f"OutputGradientTensor.Sizes = {braced(target.sizes)} (given: SLICE1's input's sizes,"
      f" which no other field holds); OutputGradientTensor.DataType ="
      f" InputGradientTensor.DataType = {self.input_gradient_tensor.data_type}.",
      f"OutputGradient[start + InputWindowStrides * o] = InputGradient[o]; walks start at"
      f" {starts} (a negative stride at the window's last element) and every other element"
      " is 0.",
      f"InputGradientTensor.Sizes {braced(self.input_gradient_tensor.sizes)}: a prefix of"
      f" each walk, at most {braced(walk)} (SLICE1's output).",
    ]


def slice_grad(
  input_gradient: ArrayLike,
  *,
  output_gradient_sizes: Sequence[int],
  input_window_offsets: Sequence[int],
  input_window_sizes: Sequence[int],
  input_window_strides: Sequence[int],
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_SLICE_GRAD: `input_gradient` written back where `slice1` read it, zeros
  elsewhere.

  With the windows of a `slice1` call, ``out[start + strides * o] = input_gradient[o]``
  in an array of `output_gradient_sizes` (the `slice1` input's shape); every other
  element is 0. It equals ``jax.vjp`` of `slice1` with the same windows, applied to
  `input_gradient`, and moves the elements bit for bit (integers too).

  Args:
    input_gradient: InputGradientTensor, of `slice1`'s output shape.
    output_gradient_sizes: OutputGradientTensor.Sizes, `slice1`'s input's shape.
    input_window_offsets: InputWindowOffsets, where each window starts.
    input_window_sizes: InputWindowSizes, each window's extent, >= 1.
    input_window_strides: InputWindowStrides, signed steps, never 0.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputGradientTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer arguments or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> g = np.array([[1, 2], [3, 4]], np.float32)
    >>> slice_grad(g, output_gradient_sizes=(4, 4), input_window_offsets=(0, 0),
    ...            input_window_sizes=(4, 4), input_window_strides=(2, -2))
    Array([[0., 2., 0., 1.],
           [0., 0., 0., 0.],
           [0., 4., 0., 3.],
           [0., 0., 0., 0.]], dtype=float32)
  """
  (input_gradient,), types = arguments.tensor_operands(SliceGradDesc, input_gradient)
  level = as_level(feature_level)
  attributes = (
    as_int_tuple(output_gradient_sizes, "OutputGradientTensor.Sizes"),
    as_int_tuple(input_window_offsets, "InputWindowOffsets"),
    as_int_tuple(input_window_sizes, "InputWindowSizes"),
    as_int_tuple(input_window_strides, "InputWindowStrides"),
  )
  return _slice_grad((level, types, *attributes), input_gradient)


def _describe_slice_grad(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  output_sizes: tuple[int, ...],
  offsets: tuple[int, ...],
  sizes: tuple[int, ...],
  strides: tuple[int, ...],
) -> SliceGradDesc:
  return SliceGradDesc(
    TensorDesc(types[0], shapes[0]),
    TensorDesc(types[0], output_sizes),
    input_window_offsets=offsets,
    input_window_sizes=sizes,
    input_window_strides=strides,
  )


# Below the rank the level takes (4 before FL 3_1), the input gradient gets leading 1s and the
# per-dimension attributes their neutral values (an output size of 1, offset 0, window 1,
# stride 1); the output is cut back.
_slice_grad = dispatch.operator_function(
  _describe_slice_grad,
  SliceGradDesc,
  natural.PerDimension(
    names=(
      "output_gradient_sizes",
      "input_window_offsets",
      "input_window_sizes",
      "input_window_strides",
    ),
    neutral=((0, 1), (1, 0), (2, 1), (3, 1)),
  ),
  moves_bits=True,
)
