"""DML_OPERATOR_UNFOLD (FL 6_4): every sliding window of the input as a column (im2col).

InputTensor is {N, C, S_1, .., S_k}, k = DimensionCount spatial dimensions (1 to 6).
Each spatial dimension d is padded with StartPadding[d] zeros before and EndPadding[d]
after; a window holds W_d = WindowSizes[d] points spaced Dilations[d] apart, and the
windows start every Strides[d] points of the padded dimension, so that

    B_d = (S_d + StartPadding[d] + EndPadding[d] - Dilations[d] * (W_d - 1) - 1) / Strides[d] + 1

windows fit along it (integer division), L = prod(B_d) in all. The output is
{N, C * prod(W_d), L}:

    out[n, c * prod(W) + w, b] = input[n, c, p_1, .., p_k],  p_d = b_d * Strides[d] + w_d * Dilations[d] - StartPadding[d]

with w the window point and b the window, each numbered in row-major order of their
coordinates (w_d, b_d), and zero where a p_d falls in the padding. The channel is the
outer part of the output's second dimension (the layout of torch's ``unfold``, and of
DirectML's FOLD example with two channels, which reads it back).

Two things the page leaves open or contradicts, and what dml_jax decides:

* ranks: the page's tensor constraint says InputTensor and OutputTensor have one
  DimensionCount, yet its text calls the output a 3-D tensor and both examples turn a
  {1,1,5,5} input into a 3-D output (ONNX Runtime's DirectML provider, too, passes FOLD,
  UNFOLD's inverse, a 3-D input and a 4-D output). dml_jax infers the 3-D output of the
  examples, and accepts a given output of any rank the table allows (3 to 8) whose last
  three sizes are {N, C * prod(W), L} and whose others are 1: the input's rank among
  them.
* data types: the page's table lists none. UNFOLD moves elements and writes zeros, so
  dml_jax takes every type that the data-movement operators take at FL 6_4: FLOAT64,
  FLOAT32, FLOAT16, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8.

At least one window must fit each padded dimension (B_d >= 1: DirectML has no empty
tensors); WindowSizes, Strides and Dilations are at least 1, and the paddings, UINTs, never
negative.

The lowering pads the input (with zeros, only as far as a window reads) and copies one
strided slice per window point, concatenated: data movement that XLA fuses into one
pass over the output; its gradient is the same slices' transpose. Where padding and
strides far larger than the windows would make the padded input more than 4 times the
input or the output, each spatial dimension is gathered at the coordinates its windows
read instead (zero in the padding), so that no descriptor DirectML accepts builds a
tensor far larger than its own.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, natural, registry, rules
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import ALL_DATA, DataType
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
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

MAX_SPATIAL_DIMENSIONS = 6

_ROW = support((3, 8), ALL_DATA)
_SUPPORT = SupportTable(
  "UNFOLD", {FeatureLevel.FL_6_4: {"InputTensor": _ROW, "OutputTensor": _ROW}}
)

# The padded input the lax form builds may hold this many times the elements of the input or
# the output (whichever is larger); beyond it (padding and strides far larger than the windows)
# the windows are gathered instead.
_PADDED_LIMIT = 4

_ARRAYS = (
  ("WindowSizes", "window_sizes"),
  ("Strides", "strides"),
  ("Dilations", "dilations"),
  ("StartPadding", "start_padding"),
  ("EndPadding", "end_padding"),
)


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class UnfoldDesc(OperatorDesc):
  """`DML_UNFOLD_OPERATOR_DESC`: the sliding windows of the input as columns (im2col).

  Attributes:
    input_tensor: InputTensor, {N, C, S_1, .., S_k} with k = DimensionCount.
    window_sizes: WindowSizes, the points of a window per spatial dimension (>= 1).
    strides: Strides, the step between windows per spatial dimension (>= 1).
    dilations: Dilations, the step between a window's points (>= 1).
    start_padding: StartPadding, zeros before each spatial dimension.
    end_padding: EndPadding, zeros after each spatial dimension.
    output_tensor: OutputTensor; None infers it: {N, C * prod(WindowSizes), L}, L the
      number of windows, the input's data type. A given one may have up to 8 dimensions,
      the leading ones 1.
    dimension_count: DimensionCount, the spatial dimensions (1 to 6); None means
      len(window_sizes).

  Examples:
    >>> desc = UnfoldDesc(TensorDesc("FLOAT32", (1, 1, 5, 5)), window_sizes=(3, 3), strides=(1, 1),
    ...                   dilations=(1, 1), start_padding=(1, 0), end_padding=(1, 0))
    >>> print(desc)
    DML_OPERATOR_UNFOLD(InputTensor=FLOAT32[1,1,5,5], WindowSizes={3,3}, Strides={1,1}, Dilations={1,1}, StartPadding={1,0}, EndPadding={1,0}, DimensionCount=2) -> FLOAT32[1,9,15]
  """

  OPERATOR = "UNFOLD"
  SUPPORT = _SUPPORT
  FUNCTION = "unfold"
  OUTPUT_RANKS_FOLLOW_INPUT = False

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  window_sizes: tuple[int, ...] = dml_field("WindowSizes", FieldKind.UINT_ARRAY)
  strides: tuple[int, ...] = dml_field("Strides", FieldKind.UINT_ARRAY)
  dilations: tuple[int, ...] = dml_field("Dilations", FieldKind.UINT_ARRAY)
  start_padding: tuple[int, ...] = dml_field("StartPadding", FieldKind.UINT_ARRAY)
  end_padding: tuple[int, ...] = dml_field("EndPadding", FieldKind.UINT_ARRAY)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )
  dimension_count: int = dml_field("DimensionCount", FieldKind.UINT, count_of="window_sizes")

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      window_sizes: Iterable[SupportsIndex],
      strides: Iterable[SupportsIndex],
      dilations: Iterable[SupportsIndex],
      start_padding: Iterable[SupportsIndex],
      end_padding: Iterable[SupportsIndex],
      output_tensor: TensorDesc | None = None,
      dimension_count: SupportsIndex | None = None,
    ) -> None: ...

  # -- the windows ---------------------------------------------------------------------------

  def _arrays_fit(self) -> bool:
    """Whether every array holds one value per spatial dimension of the input."""
    k = self.input_tensor.dimension_count - 2
    return k >= 1 and all(len(getattr(self, name)) == k for _, name in _ARRAYS)

  def blocks_per_dimension(self) -> tuple[int, ...] | None:
    """B_d, the windows along each spatial dimension (None: the arrays do not fit the input,
    or a window does not fit its padded dimension)."""
    if not self._arrays_fit() or min(self.strides + self.window_sizes + self.dilations) < 1:
      return None
    counts = []
    for size, window, stride, dilation, start, end in zip(
      self.input_tensor.sizes[2:],
      self.window_sizes,
      self.strides,
      self.dilations,
      self.start_padding,
      self.end_padding,
      strict=True,
    ):
      reach = size + start + end - dilation * (window - 1) - 1
      if reach < 0:
        return None
      counts.append(reach // stride + 1)
    return tuple(counts)

  def _logical_output_sizes(self) -> tuple[int, int, int] | None:
    blocks = self.blocks_per_dimension()
    if blocks is None:
      return None
    n, c = self.input_tensor.sizes[:2]
    return n, c * math.prod(self.window_sizes), math.prod(blocks)

  def infer_output(self) -> TensorDesc | None:
    sizes = self._logical_output_sizes()
    if sizes is None:
      return None
    given = self.output_tensor
    rank = given.dimension_count if given is not None and 3 <= given.dimension_count <= 8 else 3
    return TensorDesc(self.input_tensor.data_type, (1,) * (rank - 3) + sizes)

  def check_rules(self, check: Checker) -> None:
    data = self.input_tensor
    k = self.dimension_count
    rules.check_count(check, "DimensionCount", k, "WindowSizes", len(self.window_sizes))
    arrays_ok = True
    for dml_name, name in _ARRAYS[1:]:
      values = getattr(self, name)
      arrays_ok &= check.expect(
        len(values) == k,
        dml_name,
        f"must hold DimensionCount ({k}) values, one per spatial dimension",
        values,
      )
    check.expect(
      1 <= k <= MAX_SPATIAL_DIMENSIONS,
      "DimensionCount",
      f"must be in [1, {MAX_SPATIAL_DIMENSIONS}]",
      k,
    )
    rank_ok = check.expect(
      data.dimension_count == k + 2,
      "InputTensor.DimensionCount",
      f"must be DimensionCount + 2 = {k + 2}: {{N, C}} and one size per spatial dimension",
      data.dimension_count,
      hint="add a batch or channel dimension of size 1" if data.dimension_count < k + 2 else None,
    )
    for dml_name, name in _ARRAYS[:3]:
      values = getattr(self, name)
      arrays_ok &= check.expect(
        all(v >= 1 for v in values), dml_name, "every value must be >= 1", values
      )
    for dml_name, name in _ARRAYS[3:]:
      values = getattr(self, name)
      arrays_ok &= check.expect(
        all(v >= 0 for v in values),
        dml_name,
        "every pad must be >= 0 (UINTs: UNFOLD pads, it never crops)",
        values,
        hint="crop the input with SLICE first",
      )
    if not (arrays_ok and rank_ok and len(self.window_sizes) == k):
      return
    for d, (size, window, dilation, start, end) in enumerate(
      zip(
        data.sizes[2:],
        self.window_sizes,
        self.dilations,
        self.start_padding,
        self.end_padding,
        strict=True,
      )
    ):
      span = dilation * (window - 1) + 1
      padded = size + start + end
      check.expect(
        span <= padded,
        "WindowSizes",
        f"a window must fit its padded dimension: along spatial dimension {d} it spans"
        f" Dilations[{d}] * (WindowSizes[{d}] - 1) + 1 = {span} points, more than"
        f" InputTensor.Sizes[{d + 2}] + StartPadding[{d}] + EndPadding[{d}] = {padded}",
        self.window_sizes,
        hint="DirectML has no empty tensors: at least one window must fit",
      )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return (
      f"must be {{N, C * prod(WindowSizes), BlockCount}} = {braced(expected[-3:])}, after any"
      f" leading 1s: {braced(expected)}"
    )

  # -- the lowering --------------------------------------------------------------------------

  def lower(self, input: jax.Array) -> jax.Array:
    blocks = self.blocks_per_dimension()
    assert blocks is not None  # validated
    output = self.outputs[0]
    assert output is not None
    # The padded extent each dimension's windows read (EndPadding may reach further).
    extents = [
      (b - 1) * s + (w - 1) * d + 1
      for b, s, w, d in zip(blocks, self.strides, self.window_sizes, self.dilations, strict=True)
    ]
    n, c = input.shape[:2]
    padded_count = n * c * math.prod(extents)
    if padded_count > _PADDED_LIMIT * max(math.prod(input.shape), output.element_count):
      return self._gathered(input, blocks).reshape(output.sizes)
    return self._sliced(input, blocks, extents).reshape(output.sizes)

  def _sliced(self, input: jax.Array, blocks: Sequence[int], extents: Sequence[int]) -> jax.Array:
    """The input padded as far as the windows read, and one strided slice per window point,
    concatenated: {N, C, prod(WindowSizes), BlockCount}."""
    config = (
      [(0, 0, 0)] * 2
      + [
        (start, extent - start - size, 0)  # a negative high pad crops what no window reads
        for start, extent, size in zip(self.start_padding, extents, input.shape[2:], strict=True)
      ]
    )
    padded = lax.pad(input, lax.full((), 0, input.dtype), config)
    n, c = input.shape[:2]
    columns = []
    for point in itertools.product(*(range(w) for w in self.window_sizes)):
      starts = [p * d for p, d in zip(point, self.dilations, strict=True)]
      limits = [s + (b - 1) * t + 1 for s, b, t in zip(starts, blocks, self.strides, strict=True)]
      window = lax.slice(padded, (0, 0, *starts), (n, c, *limits), (1, 1, *self.strides))
      columns.append(window.reshape(n, c, 1, math.prod(blocks)))
    return columns[0] if len(columns) == 1 else lax.concatenate(columns, 2)

  def _gathered(self, input: jax.Array, blocks: Sequence[int]) -> jax.Array:
    """Each spatial dimension read at its (point, window) coordinates, one dimension at a time,
    zero where a coordinate lies in the padding: for padding and strides so large that the
    padded input would be far bigger than the input and the output."""
    x, k = input, len(blocks)
    for d, (b, s, w, dilation, start) in enumerate(
      zip(blocks, self.strides, self.window_sizes, self.dilations, self.start_padding, strict=True)
    ):
      size = input.shape[2 + d]
      read = np.arange(w)[:, None] * dilation + np.arange(b)[None, :] * s - start  # (w, b)
      inside = (read >= 0) & (read < size)
      axis = 2 + 2 * d  # dimensions before it: N, C and (point, window) pairs
      x = jnp.take(x, np.clip(read, 0, size - 1).reshape(-1), axis=axis, mode="clip")
      x = x.reshape(x.shape[:axis] + (w, b) + x.shape[axis + 1 :])
      mask = lax.broadcast_in_dim(jnp.asarray(inside), x.shape, (axis, axis + 1))
      x = lax.select(mask, x, lax.full_like(x, 0))
    # (N, C, w_1, b_1, .., w_k, b_k) -> (N, C, w_1, .., w_k, b_1, .., b_k)
    order = (0, 1, *range(2, 2 + 2 * k, 2), *range(3, 3 + 2 * k, 2))
    n, c = input.shape[:2]
    return lax.transpose(x, order).reshape(n, c, math.prod(self.window_sizes), math.prod(blocks))

  def explain_output(self) -> list[str]:
    data, windows = self.input_tensor, self.window_sizes
    blocks = self.blocks_per_dimension()
    if blocks is None:
      return [
        f"WindowSizes, Strides, Dilations, StartPadding and EndPadding need one value per"
        f" spatial dimension of the {data.dimension_count}-D input (its dimensions after N and"
        f" C), and every window must fit its padded dimension: no output can be inferred."
      ]
    sizes = self._logical_output_sizes()
    assert sizes is not None
    formulas = ", ".join(
      f"({s} + {lo} + {hi} - {d} x ({w} - 1) - 1) / {t} + 1 = {b}"
      for s, lo, hi, d, w, t, b in zip(
        data.sizes[2:],
        self.start_padding,
        self.end_padding,
        self.dilations,
        windows,
        self.strides,
        blocks,
        strict=True,
      )
    )
    return [
      f"InputTensor {braced(data.sizes)} is {{N, C}} and {len(windows)} spatial dimension(s),"
      f" padded with StartPadding {braced(self.start_padding)} and EndPadding"
      f" {braced(self.end_padding)} zeros.",
      f"Windows per spatial dimension, (size + start + end - Dilations x (WindowSizes - 1) - 1)"
      f" / Strides + 1: {formulas}; BlockCount = {sizes[2]}.",
      f"out[n, c x {math.prod(windows)} + w, b] = the input at window b's point w (both in"
      f" row-major order; Dilations {braced(self.dilations)} apart), zero in the padding.",
      f"OutputTensor.Sizes = {{N, C x prod(WindowSizes), BlockCount}} = {braced(sizes)} (a given"
      f" OutputTensor may add leading 1s); OutputTensor.DataType = InputTensor.DataType ="
      f" {data.data_type}.",
    ]


def unfold(
  input: ArrayLike,
  *,
  window_sizes: Sequence[int],
  strides: Sequence[int] | None = None,
  dilations: Sequence[int] | None = None,
  start_padding: Sequence[int] | None = None,
  end_padding: Sequence[int] | None = None,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_UNFOLD: the sliding windows of `input` as columns (im2col).

  `input` is {N, C, S_1, .., S_k}, k = len(window_sizes) spatial dimensions (1 to 6).
  The output is {N, C * prod(window_sizes), L}: column b holds window b (windows in
  row-major order), row ``c * prod(window_sizes) + w`` its point w of channel c, and
  zero where the point lies in the padding. Along spatial dimension d there are
  ``(S_d + start_padding[d] + end_padding[d] - dilations[d] * (window_sizes[d] - 1) - 1)
  // strides[d] + 1`` windows; L is their product.

  Like ``torch.nn.functional.unfold`` (the same layout), with any number of spatial
  dimensions from 1 to 6, padding that may differ between the ends, and every data
  type DirectML moves. An input without the batch dimension, {C, S_1, .., S_k}, reads as
  one batch entry and gives {C * prod(window_sizes), L}, as torch's does.

  Args:
    input: InputTensor, {N, C, S_1, .., S_k} (or {C, S_1, .., S_k}).
    window_sizes: WindowSizes, one per spatial dimension (>= 1).
    strides: Strides (>= 1); None: all 1.
    dilations: Dilations (>= 1); None: all 1.
    start_padding: StartPadding; None: all 0.
    end_padding: EndPadding; None: all 0.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest; FL 6_4 at
      least).

  Returns:
    OutputTensor, 3-D (2-D for an input without the batch dimension).

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer sizes, or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> x = np.arange(12, dtype=np.int32).reshape(1, 1, 3, 4)
    >>> unfold(x, window_sizes=(2, 2), strides=(1, 2))
    Array([[[ 0,  2,  4,  6],
            [ 1,  3,  5,  7],
            [ 4,  6,  8, 10],
            [ 5,  7,  9, 11]]], dtype=int32)
  """
  (input,), types = arguments.tensor_operands(UnfoldDesc, input)
  level = as_level(feature_level)
  windows = as_int_tuple(window_sizes, "window_sizes")
  k = len(windows)
  static = (
    level,
    types,
    windows,
    (1,) * k if strides is None else as_int_tuple(strides, "strides"),
    (1,) * k if dilations is None else as_int_tuple(dilations, "dilations"),
    (0,) * k if start_padding is None else as_int_tuple(start_padding, "start_padding"),
    (0,) * k if end_padding is None else as_int_tuple(end_padding, "end_padding"),
  )
  return _unfold(static, input)


def _describe_unfold(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  window_sizes: tuple[int, ...],
  strides: tuple[int, ...],
  dilations: tuple[int, ...],
  start_padding: tuple[int, ...],
  end_padding: tuple[int, ...],
) -> UnfoldDesc:
  return UnfoldDesc(
    TensorDesc(types[0], shapes[0]), window_sizes, strides, dilations, start_padding, end_padding
  )


@dataclasses.dataclass(frozen=True)
class _Unbatched(natural.Ranks):
  """UNFOLD's declaration: an input of one dimension fewer than DirectML needs (no batch, as
  torch's ``unfold`` takes it) reads with a leading 1, the result cut back to 2 dimensions
  {C * prod(WindowSizes), L}; any other input is DirectML's call.

  Nothing is padded up to the level's least rank (`to_level` off): the input's rank is 2
  plus the count of window dimensions, so a further leading 1 would shift the batch,
  channel and spatial dimensions, not add an empty one.
  """

  def read(self, shapes: Sequence[natural.Shape], attributes: Sequence[Any]) -> natural.Reading:
    (shape,) = shapes
    if len(shape) == len(attributes[0]) + 1:
      return natural.Reading(((1, *shape),), tuple(attributes), 2)
    return natural.Reading((tuple(shape),), tuple(attributes))


_unfold = dispatch.operator_function(
  _describe_unfold,
  UnfoldDesc,
  _Unbatched(
    names=("window_sizes", "strides", "dilations", "start_padding", "end_padding"),
    to_level=False,
  ),
  moves_bits=True,
)
