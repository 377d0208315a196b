"""DML_OPERATOR_RESAMPLE, RESAMPLE1 and RESAMPLE2: every dimension rescaled, one shared core.

DirectML relates the coordinates of the input and the output, per dimension, by

    output coordinate = (input coordinate + InputPixelOffset) x Scale + OutputPixelOffset

(RESAMPLE has no offset fields: its offsets are 0.5 and -0.5, pixel centres). Each output
element o is sampled at the input coordinate this maps it to,

    x = (o - OutputPixelOffset) / Scale - InputPixelOffset,

computed in float32, in this order (the float32 of o, a subtraction, a division, a
subtraction), from the fields rounded to float32 as DirectML holds them. The output's sizes
are given (OutputTensor is required): the scales need not be their ratio to the input's.

NEAREST_NEIGHBOR takes the input element at x rounded to an index, then clamped into
[0, size - 1]:

- RESAMPLE and RESAMPLE1 round to the nearest index, a tie to the smaller one:
  ``ceil(x - 0.5)`` (the subtraction in float32). DirectML's RESAMPLE_GRAD page shows
  a forward RESAMPLE1 whose ties go to the smaller index (a 2x2 input scaled by 0.5 and 1.5
  gives [1, 1, 2]), as WebNN's conformance tests expect.
- RESAMPLE2 says how: RoundingDirection DECREASING is ``floor(x)``, INCREASING
  ``ceil(x)``. (ONNX Runtime's DirectML provider maps ONNX's round_prefer_floor to
  INCREASING with InputPixelOffset + 0.5, that is ``ceil(x - 0.5)``: RESAMPLE1's rule.)

LINEAR interpolates between the two input elements around x in each dimension, one
dimension after another from the first to the last: with x clamped into [0, size - 1],
i = floor(x), w = x - i and j = min(i + 1, size - 1), each step is
``a x (1 - w) + b x w`` for a = y[i], b = y[j] in float32 (1 - w rounded first; each
product rounded, then their sum, never fused into a multiply-add), and where w is 0 the
step is a alone (an infinite or NaN neighbour of weight 0 does not leak in).
FLOAT16 data is interpolated in float32 and rounded to float16 once at the end; INT8 and
UINT8 data (FL 6_2) likewise, rounded to the nearest integer, ties to even.

The sampling positions depend on static shapes and fields only: the lowering computes them
in NumPy at trace time (with the oracle's float32 operations) and gathers with them.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex

import jax
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, enums, natural, registry, rules
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
from dml_jax._src.fields import FieldKind, dml_field, dml_fields
from dml_jax._src.integers import as_int_tuple
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

_PREFIX = "DML_INTERPOLATION_MODE_"


class InterpolationMode(enum.IntEnum):
  """`DML_INTERPOLATION_MODE`, with DirectML's values.

  Examples:
    >>> InterpolationMode.from_any("DML_INTERPOLATION_MODE_LINEAR")
    <InterpolationMode.LINEAR: 1>
    >>> InterpolationMode.from_any("nearest_neighbor") is InterpolationMode.from_any(0)
    True
  """

  NEAREST_NEIGHBOR = 0
  LINEAR = 1

  def __str__(self) -> str:
    return self.name

  @classmethod
  def from_any(cls, value: Any) -> InterpolationMode:
    """The mode from the enum, its value, or its name with or without the DML prefix.

    Raises:
      ValueError: for a name or value that is no mode (the message lists them).
      TypeError: for anything but a string or an integer.
    """
    return enums.member(cls, value, what="InterpolationMode", prefix=_PREFIX)


_FLOATS = (DataType.FLOAT32, DataType.FLOAT16)
_WITH_8_BIT = _FLOATS + (DataType.INT8, DataType.UINT8)


def _table(dimension_counts: Any, data_types: tuple[DataType, ...]) -> dict[str, Any]:
  row = support(dimension_counts, data_types)
  return {"InputTensor": row, "OutputTensor": row}


_FROM_5_1 = {
  FeatureLevel.FL_5_1: _table((1, 4), _FLOATS),
  FeatureLevel.FL_6_2: _table((1, 4), _WITH_8_BIT),
}
_RESAMPLE_SUPPORT = SupportTable("RESAMPLE", {FeatureLevel.FL_2_0: _table(4, _FLOATS), **_FROM_5_1})
_RESAMPLE1_SUPPORT = SupportTable(
  "RESAMPLE1", {FeatureLevel.FL_2_1: _table(4, _FLOATS), **_FROM_5_1}
)
_RESAMPLE2_SUPPORT = SupportTable("RESAMPLE2", dict(_FROM_5_1))


class Rounding(enum.Enum):
  """How NEAREST_NEIGHBOR turns a coordinate into an index (before clamping)."""

  HALF_DOWN = "ceil(x - 0.5)"  # RESAMPLE, RESAMPLE1, UPSAMPLE_2D
  FLOOR = "floor(x)"  # RESAMPLE2 DECREASING
  CEIL = "ceil(x)"  # RESAMPLE2 INCREASING


@dataclasses.dataclass(frozen=True)
class Sampling:
  """One dimension's mapping: output size, input size, and the float32 fields."""

  input_size: int
  output_size: int
  scale: float
  input_pixel_offset: float
  output_pixel_offset: float

  def coordinates(self) -> np.ndarray:
    """x = (o - OutputPixelOffset) / Scale - InputPixelOffset, in float32, in that order."""
    o = np.arange(self.output_size, dtype=np.float32)
    f32 = np.float32
    return (o - f32(self.output_pixel_offset)) / f32(self.scale) - f32(self.input_pixel_offset)

  def nearest(self, rounding: Rounding) -> np.ndarray:
    """The input index each output element takes (int64)."""
    x = self.coordinates()
    if rounding is Rounding.HALF_DOWN:
      index = np.ceil(x - np.float32(0.5))
    elif rounding is Rounding.FLOOR:
      index = np.floor(x)
    else:
      index = np.ceil(x)
    return np.clip(index, 0, self.input_size - 1).astype(np.int64)

  def linear(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, 1 - w, w): the two neighbours and their float32 weights."""
    x = np.clip(self.coordinates(), np.float32(0), np.float32(self.input_size - 1))
    low = np.floor(x)
    w = (x - low).astype(np.float32)
    i = low.astype(np.int64)
    j = np.minimum(i + 1, self.input_size - 1)
    return i, j, (np.float32(1) - w).astype(np.float32), w


def resampled(
  input: jax.Array,
  samplings: Sequence[Sampling],
  mode: InterpolationMode,
  rounding: Rounding,
) -> jax.Array:
  """The shared core: `input` resampled per `samplings` (one per dimension)."""
  if mode is InterpolationMode.NEAREST_NEIGHBOR:
    return _nearest(input, samplings, rounding)
  return _linear(input, samplings)


def _nearest(input: jax.Array, samplings: Sequence[Sampling], rounding: Rounding) -> jax.Array:
  # Dimensions enlarged by a whole factor f (index o // f: every element copied f times) take
  # one broadcast and reshape, which XLA writes as a single copy; the others one gather of
  # constant indices each.
  tables = [s.nearest(rounding) for s in samplings]
  factors = [_whole_factor(s, t) for s, t in zip(samplings, tables, strict=True)]
  y = input
  if any(f > 1 for f in factors):
    shape = y.shape
    spread = tuple(n for size, f in zip(shape, factors, strict=True) for n in (size, max(f, 1)))
    y = lax.broadcast_in_dim(y, spread, tuple(range(0, 2 * len(shape), 2)))
    y = y.reshape(tuple(size * max(f, 1) for size, f in zip(shape, factors, strict=True)))
  for d, (sampling, table, f) in enumerate(zip(samplings, tables, factors, strict=True)):
    if f == 0:
      y = jax.numpy.take(y, table.astype(_index_type(sampling)), axis=d, mode="clip")
  return y


def _index_type(sampling: Sampling) -> type:
  return np.int32 if sampling.input_size < 2**31 else np.int64


def _whole_factor(sampling: Sampling, table: np.ndarray) -> int:
  """f where the dimension's indices are o // f over f x its size (1: kept as it is), else 0."""
  n, m = sampling.input_size, sampling.output_size
  if m % n or not np.array_equal(table, np.arange(m) // (m // n)):
    return 0
  return m // n


@jax.custom_jvp
def _exact(product: jax.Array) -> jax.Array:
  """`product` as sign(p) x |p|, an exact product: XLA:CPU fuses a product and a sum into
  one multiply-add (rounded once); fused with this one, the sum rounds as the two rounded
  products' sum does (XLA:GPU does not fuse). Its derivative is 1 (sign's 0 would lose it
  where p is 0)."""
  return lax.sign(product) * lax.abs(product)


@_exact.defjvp
def _exact_jvp(
  primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
  return _exact(primals[0]), tangents[0]


def _linear(input: jax.Array, samplings: Sequence[Sampling]) -> jax.Array:
  dtype = np.dtype(input.dtype)
  y = input if dtype == np.float32 else lax.convert_element_type(input, np.float32)
  for d, sampling in enumerate(samplings):
    i, j, keep, w = sampling.linear()
    if not w.any():
      if sampling.input_size != sampling.output_size or not np.array_equal(
        i, np.arange(sampling.output_size)
      ):
        y = jax.numpy.take(y, i.astype(_index_type(sampling)), axis=d, mode="clip")
      continue
    shape = [1] * y.ndim
    shape[d] = sampling.output_size
    a = jax.numpy.take(y, i.astype(_index_type(sampling)), axis=d, mode="clip")
    b = jax.numpy.take(y, j.astype(_index_type(sampling)), axis=d, mode="clip")
    keep_b = lax.broadcast_in_dim(keep.reshape(shape), a.shape, tuple(range(y.ndim)))
    w_b = lax.broadcast_in_dim(w.reshape(shape), a.shape, tuple(range(y.ndim)))
    y = lax.select(w_b == np.float32(0), a, _exact(a * keep_b) + _exact(b * w_b))
  if dtype == np.float32:
    return y
  if np.issubdtype(dtype, np.integer):
    info = np.iinfo(dtype)
    y = lax.round(y, lax.RoundingMethod.TO_NEAREST_EVEN)
    y = lax.clamp(np.float32(info.min), y, np.float32(info.max))
  return lax.convert_element_type(y, dtype)


def _is_float32_finite(value: float) -> bool:
  return math.isfinite(value) and math.isfinite(float(np.float32(value)))


class _ResampleDesc(OperatorDesc):
  """The fields, rules and lowering the RESAMPLE family shares."""

  input_tensor: TensorDesc
  output_tensor: TensorDesc
  interpolation_mode: InterpolationMode
  scales: tuple[float, ...]

  _COUNT_FIELD = "DimensionCount"
  _ARRAYS: tuple[tuple[str, str], ...] = (("Scales", "scales"),)

  def pixel_offsets(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(InputPixelOffsets, OutputPixelOffsets): RESAMPLE's are pixel centres, 0.5 and -0.5."""
    return (0.5,) * len(self.scales), (-0.5,) * len(self.scales)

  @property
  def rounding(self) -> Rounding:
    return Rounding.HALF_DOWN

  def samplings(self) -> tuple[Sampling, ...]:
    ins, outs = self.pixel_offsets()
    return tuple(
      Sampling(n, m, s, i, o)
      for n, m, s, i, o in zip(
        self.input_tensor.sizes, self.output_tensor.sizes, self.scales, ins, outs, strict=True
      )
    )

  def infer_output(self) -> TensorDesc | None:
    # The sizes are the given output's (the scales need not be their ratio); the data type
    # is the input's, which validation compares with the given one.
    if self.output_tensor.dimension_count != self.input_tensor.dimension_count:
      return None
    return TensorDesc(self.input_tensor.data_type, self.output_tensor.sizes)

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return f"are free (any sizes of InputTensor's rank): {braced(expected)}"

  def check_rules(self, check: Checker) -> None:
    data, out = self.input_tensor, self.output_tensor
    n = data.dimension_count
    rules.check_same_rank(check, ("InputTensor", data), ("OutputTensor", out))
    count = getattr(self, _snake(self._COUNT_FIELD))
    counted = self._ARRAYS[0][0]
    rules.check_count(check, self._COUNT_FIELD, count, counted, len(self.scales))
    for dml_name, name in self._ARRAYS:
      values = getattr(self, name)
      check.expect(
        len(values) == n,
        dml_name,
        f"must hold one value per dimension of InputTensor (DimensionCount {n})",
        values,
      )
    check.expect(
      all(_is_float32_finite(s) and np.float32(s) > 0 for s in self.scales),
      "Scales",
      "every scale must be finite and > 0 (as a float32)",
      self.scales,
      hint="a scale > 1 enlarges that dimension, < 1 shrinks it; 1 keeps it",
    )
    for dml_name, name in self._ARRAYS[1:]:
      values = getattr(self, name)
      check.expect(
        all(_is_float32_finite(v) for v in values),
        dml_name,
        "every offset must be finite (as a float32)",
        values,
      )

  def lower(self, input: jax.Array) -> jax.Array:
    return resampled(input, self.samplings(), self.interpolation_mode, self.rounding)

  def explain_output(self) -> list[str]:
    data, out = self.input_tensor, self.output_tensor
    if len(self.scales) != data.dimension_count or out.dimension_count != data.dimension_count:
      return [
        f"Scales has {len(self.scales)} value(s) and OutputTensor {out.dimension_count}"
        f" dimension(s) for the {data.dimension_count}-D input: they must all match."
      ]
    ins, outs = self.pixel_offsets()
    offsets = ", ".join(
      f"(o{d} - {p:g}) / {s:g} - {i:g}"
      for d, (s, i, p) in enumerate(zip(self.scales, ins, outs, strict=True))
    )
    mode = self.interpolation_mode
    how = (
      f"the input element at x rounded by {self.rounding.value}, clamped into [0, size - 1]"
      if mode is InterpolationMode.NEAREST_NEIGHBOR
      else "the float32 weighted average of the two input elements around x per dimension"
      " (x clamped into [0, size - 1]), dimension by dimension from the first"
    )
    return [
      f"Output element o samples the input at x = (o - OutputPixelOffset) / Scale -"
      f" InputPixelOffset per dimension, in float32: {offsets}.",
      f"{mode}: {how}.",
      f"OutputTensor.Sizes are given, {braced(out.sizes)} (the scales need not be their"
      f" ratio to InputTensor.Sizes {braced(data.sizes)}).",
      f"OutputTensor.DataType = InputTensor.DataType = {data.data_type}.",
    ]


def _snake(name: str) -> str:
  return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class ResampleDesc(_ResampleDesc):
  """`DML_RESAMPLE_OPERATOR_DESC`: every dimension rescaled about pixel centres.

  Attributes:
    input_tensor: InputTensor.
    output_tensor: OutputTensor, required: its sizes are free (the scales need not be
      their ratio to the input's); its data type is the input's.
    interpolation_mode: InterpolationMode, NEAREST_NEIGHBOR or LINEAR.
    scales: Scales, one finite scale > 0 per dimension.
    scale_count: ScaleCount; None means len(scales).

  Examples:
    >>> desc = ResampleDesc(TensorDesc("FLOAT32", (1, 1, 2, 2)), TensorDesc("FLOAT32", (1, 1, 4, 4)),
    ...                     "NEAREST_NEIGHBOR", scales=(1, 1, 2, 2))
    >>> print(desc)
    DML_OPERATOR_RESAMPLE(InputTensor=FLOAT32[1,1,2,2], InterpolationMode=NEAREST_NEIGHBOR, Scales={1.0,1.0,2.0,2.0}, ScaleCount=4) -> FLOAT32[1,1,4,4]
  """

  OPERATOR = "RESAMPLE"
  SUPPORT = _RESAMPLE_SUPPORT
  FUNCTION = "resample"

  _COUNT_FIELD = "ScaleCount"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  output_tensor: TensorDesc = dml_field("OutputTensor", FieldKind.TENSOR, output=True)
  interpolation_mode: InterpolationMode = dml_field(
    "InterpolationMode", FieldKind.ENUM, enum_type=InterpolationMode
  )
  scales: tuple[float, ...] = dml_field("Scales", FieldKind.FLOAT_ARRAY)
  scale_count: int = dml_field("ScaleCount", FieldKind.UINT, count_of="scales")

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      output_tensor: TensorDesc,
      interpolation_mode: InterpolationMode | str | int,
      scales: Iterable[float],
      scale_count: SupportsIndex | None = None,
    ) -> None: ...


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class Resample1Desc(_ResampleDesc):
  """`DML_RESAMPLE1_OPERATOR_DESC`: RESAMPLE with the pixel offsets as fields.

  Attributes:
    input_tensor: InputTensor.
    output_tensor: OutputTensor, required: its sizes are free; its data type is the input's.
    interpolation_mode: InterpolationMode, NEAREST_NEIGHBOR or LINEAR.
    scales: Scales, one finite scale > 0 per dimension.
    input_pixel_offsets: InputPixelOffsets, one finite offset per dimension (0.5: centres).
    output_pixel_offsets: OutputPixelOffsets, one finite offset per dimension (-0.5: centres).
    dimension_count: DimensionCount; None means len(scales).

  Examples:
    >>> desc = Resample1Desc(TensorDesc("FLOAT32", (1, 1, 2, 2)), TensorDesc("FLOAT32", (1, 1, 1, 3)),
    ...                      "NEAREST_NEIGHBOR", (1, 1, 0.5, 1.5), (0.5,) * 4, (-0.5,) * 4)
    >>> print(desc)
    DML_OPERATOR_RESAMPLE1(InputTensor=FLOAT32[1,1,2,2], InterpolationMode=NEAREST_NEIGHBOR, Scales={1.0,1.0,0.5,1.5}, InputPixelOffsets={0.5,0.5,0.5,0.5}, OutputPixelOffsets={-0.5,-0.5,-0.5,-0.5}, DimensionCount=4) -> FLOAT32[1,1,1,3]
  """

  OPERATOR = "RESAMPLE1"
  SUPPORT = _RESAMPLE1_SUPPORT
  FUNCTION = "resample1"

  _ARRAYS = (
    ("Scales", "scales"),
    ("InputPixelOffsets", "input_pixel_offsets"),
    ("OutputPixelOffsets", "output_pixel_offsets"),
  )

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  output_tensor: TensorDesc = dml_field("OutputTensor", FieldKind.TENSOR, output=True)
  interpolation_mode: InterpolationMode = dml_field(
    "InterpolationMode", FieldKind.ENUM, enum_type=InterpolationMode
  )
  scales: tuple[float, ...] = dml_field("Scales", FieldKind.FLOAT_ARRAY)
  input_pixel_offsets: tuple[float, ...] = dml_field("InputPixelOffsets", FieldKind.FLOAT_ARRAY)
  output_pixel_offsets: tuple[float, ...] = dml_field("OutputPixelOffsets", FieldKind.FLOAT_ARRAY)
  dimension_count: int = dml_field("DimensionCount", FieldKind.UINT, count_of="scales")

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      output_tensor: TensorDesc,
      interpolation_mode: InterpolationMode | str | int,
      scales: Iterable[float],
      input_pixel_offsets: Iterable[float],
      output_pixel_offsets: Iterable[float],
      dimension_count: SupportsIndex | None = None,
    ) -> None: ...

  def pixel_offsets(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
    return self.input_pixel_offsets, self.output_pixel_offsets


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class Resample2Desc(_ResampleDesc):
  """`DML_RESAMPLE2_OPERATOR_DESC`: RESAMPLE1 with the rounding of NEAREST_NEIGHBOR chosen.

  Attributes:
    input_tensor: InputTensor.
    output_tensor: OutputTensor, required: its sizes are free; its data type is the input's.
    interpolation_mode: InterpolationMode, NEAREST_NEIGHBOR or LINEAR.
    rounding_direction: RoundingDirection (NEAREST_NEIGHBOR only): DECREASING rounds the
      input coordinate down (floor), INCREASING up (ceil).
    scales: Scales, one finite scale > 0 per dimension.
    input_pixel_offsets: InputPixelOffsets, one finite offset per dimension.
    output_pixel_offsets: OutputPixelOffsets, one finite offset per dimension.
    dimension_count: DimensionCount; None means len(scales).

  Examples:
    >>> desc = Resample2Desc(TensorDesc("FLOAT16", (6,)), TensorDesc("FLOAT16", (3,)),
    ...                      "NEAREST_NEIGHBOR", "INCREASING", (0.5,), (0.5,), (-0.5,))
    >>> print(desc)
    DML_OPERATOR_RESAMPLE2(InputTensor=FLOAT16[6], InterpolationMode=NEAREST_NEIGHBOR, RoundingDirection=INCREASING, Scales={0.5}, InputPixelOffsets={0.5}, OutputPixelOffsets={-0.5}, DimensionCount=1) -> FLOAT16[3]
  """

  OPERATOR = "RESAMPLE2"
  SUPPORT = _RESAMPLE2_SUPPORT
  FUNCTION = "resample2"

  _ARRAYS = Resample1Desc._ARRAYS

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  output_tensor: TensorDesc = dml_field("OutputTensor", FieldKind.TENSOR, output=True)
  interpolation_mode: InterpolationMode = dml_field(
    "InterpolationMode", FieldKind.ENUM, enum_type=InterpolationMode
  )
  rounding_direction: AxisDirection = dml_field(
    "RoundingDirection", FieldKind.ENUM, enum_type=AxisDirection
  )
  scales: tuple[float, ...] = dml_field("Scales", FieldKind.FLOAT_ARRAY)
  input_pixel_offsets: tuple[float, ...] = dml_field("InputPixelOffsets", FieldKind.FLOAT_ARRAY)
  output_pixel_offsets: tuple[float, ...] = dml_field("OutputPixelOffsets", FieldKind.FLOAT_ARRAY)
  dimension_count: int = dml_field("DimensionCount", FieldKind.UINT, count_of="scales")

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      output_tensor: TensorDesc,
      interpolation_mode: InterpolationMode | str | int,
      rounding_direction: AxisDirection | str | int,
      scales: Iterable[float],
      input_pixel_offsets: Iterable[float],
      output_pixel_offsets: Iterable[float],
      dimension_count: SupportsIndex | None = None,
    ) -> None: ...

  def pixel_offsets(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
    return self.input_pixel_offsets, self.output_pixel_offsets

  @property
  def rounding(self) -> Rounding:
    return Rounding.FLOOR if self.rounding_direction is AxisDirection.DECREASING else Rounding.CEIL


# -- the functional API ----------------------------------------------------------------------


def default_output_sizes(sizes: Sequence[int], scales: Sequence[float]) -> tuple[int, ...]:
  """floor(size x scale) in float32 per dimension, at least 1: the output the functional API
  gives when no output sizes are passed."""
  return tuple(
    max(1, int(np.floor(np.float32(n) * np.float32(s)))) if math.isfinite(s) and s > 0 else n
    for n, s in zip(sizes, scales, strict=False)
  ) + tuple(sizes[len(scales) :])


def resample(
  input: ArrayLike,
  *,
  interpolation_mode: InterpolationMode | str | int,
  scales: Sequence[float],
  output_sizes: Sequence[int] | None = None,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_RESAMPLE: `input` rescaled in every dimension about pixel centres.

  Output element o samples the input at ``x = (o + 0.5) / scale - 0.5`` per dimension
  (float32). NEAREST_NEIGHBOR takes the nearest element, a tie going to the smaller
  index, clamped at the edges; LINEAR interpolates the two neighbours per dimension, in
  float32, one dimension after another.

  Unlike ``jax.image.resize``: the scales and the output's shape are separate (an output
  larger than the scaled input repeats the edge), nearest ties go to the smaller index,
  and no antialiasing.

  Args:
    input: InputTensor (float32, float16; int8 and uint8 from FL 6_2).
    interpolation_mode: InterpolationMode, ``"NEAREST_NEIGHBOR"`` or ``"LINEAR"``.
    scales: Scales, one finite scale > 0 per dimension.
    output_sizes: OutputTensor.Sizes; None gives floor(size x scale) per dimension.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for a dtype DirectML lacks, or scales that are not numbers.

  Examples:
    >>> import numpy as np
    >>> resample(np.array([[1, 2], [3, 4]], np.float32), interpolation_mode="NEAREST_NEIGHBOR",
    ...          scales=(0.5, 1.5))
    Array([[1., 1., 2.]], dtype=float32)
    >>> resample(np.array([0, 10], np.float32), interpolation_mode="LINEAR", scales=(2,))
    Array([ 0. ,  2.5,  7.5, 10. ], dtype=float32)
  """
  return _call(
    ResampleDesc, input, interpolation_mode, None, scales, None, None, output_sizes, feature_level
  )


def resample1(
  input: ArrayLike,
  *,
  interpolation_mode: InterpolationMode | str | int,
  scales: Sequence[float],
  input_pixel_offsets: Sequence[float] | None = None,
  output_pixel_offsets: Sequence[float] | None = None,
  output_sizes: Sequence[int] | None = None,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_RESAMPLE1: `input` rescaled in every dimension, with pixel offsets.

  Output element o samples the input at ``x = (o - output_pixel_offset) / scale -
  input_pixel_offset`` per dimension (float32). NEAREST_NEIGHBOR takes the nearest
  element, a tie going to the smaller index (``ceil(x - 0.5)``), clamped at the edges;
  LINEAR interpolates the two neighbours per dimension, in float32.

  Args:
    input: InputTensor (float32, float16; int8 and uint8 from FL 6_2).
    interpolation_mode: InterpolationMode, ``"NEAREST_NEIGHBOR"`` or ``"LINEAR"``.
    scales: Scales, one finite scale > 0 per dimension.
    input_pixel_offsets: InputPixelOffsets; None gives 0.5 (pixel centres) everywhere.
    output_pixel_offsets: OutputPixelOffsets; None gives -0.5 (pixel centres) everywhere.
    output_sizes: OutputTensor.Sizes; None gives floor(size x scale) per dimension.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for a dtype DirectML lacks, or fields that are not numbers.

  Examples:
    >>> import numpy as np
    >>> resample1(np.arange(4, dtype=np.float32), interpolation_mode="NEAREST_NEIGHBOR",
    ...           scales=(2,), input_pixel_offsets=(0,), output_pixel_offsets=(0,))
    Array([0., 0., 1., 1., 2., 2., 3., 3.], dtype=float32)
  """
  return _call(
    Resample1Desc,
    input,
    interpolation_mode,
    None,
    scales,
    input_pixel_offsets,
    output_pixel_offsets,
    output_sizes,
    feature_level,
  )


def resample2(
  input: ArrayLike,
  *,
  interpolation_mode: InterpolationMode | str | int,
  rounding_direction: AxisDirection | str | int,
  scales: Sequence[float],
  input_pixel_offsets: Sequence[float] | None = None,
  output_pixel_offsets: Sequence[float] | None = None,
  output_sizes: Sequence[int] | None = None,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_RESAMPLE2: RESAMPLE1 with NEAREST_NEIGHBOR's rounding chosen.

  Output element o samples the input at ``x = (o - output_pixel_offset) / scale -
  input_pixel_offset`` per dimension (float32). NEAREST_NEIGHBOR takes ``floor(x)``
  (``rounding_direction="DECREASING"``) or ``ceil(x)`` (``"INCREASING"``), clamped at the
  edges; LINEAR interpolates as RESAMPLE1 does (the direction is then unused).

  Args:
    input: InputTensor (float32, float16; int8 and uint8 from FL 6_2).
    interpolation_mode: InterpolationMode, ``"NEAREST_NEIGHBOR"`` or ``"LINEAR"``.
    rounding_direction: RoundingDirection, ``"DECREASING"`` (floor) or ``"INCREASING"`` (ceil).
    scales: Scales, one finite scale > 0 per dimension.
    input_pixel_offsets: InputPixelOffsets; None gives 0.5 (pixel centres) everywhere.
    output_pixel_offsets: OutputPixelOffsets; None gives -0.5 (pixel centres) everywhere.
    output_sizes: OutputTensor.Sizes; None gives floor(size x scale) per dimension.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for a dtype DirectML lacks, or fields that are not numbers.

  Examples:
    >>> import numpy as np
    >>> x = np.arange(6, dtype=np.float32)
    >>> resample2(x, interpolation_mode="NEAREST_NEIGHBOR", rounding_direction="DECREASING",
    ...           scales=(0.5,))   # x = 2 o + 0.5: floor picks the even elements
    Array([0., 2., 4.], dtype=float32)
    >>> resample2(x, interpolation_mode="NEAREST_NEIGHBOR", rounding_direction="INCREASING",
    ...           scales=(0.5,))
    Array([1., 3., 5.], dtype=float32)
  """
  return _call(
    Resample2Desc,
    input,
    interpolation_mode,
    rounding_direction,
    scales,
    input_pixel_offsets,
    output_pixel_offsets,
    output_sizes,
    feature_level,
  )


def _floats(values: Sequence[float] | None, what: str) -> tuple[float, ...] | None:
  if values is None:
    return None
  field = dataclasses.replace(_FLOAT_ARRAY_FIELD, dml_name=what)
  return FieldKind.FLOAT_ARRAY.codec.coerce(field, values)


def _call(
  desc_type: type[_ResampleDesc],
  input: ArrayLike,
  interpolation_mode: Any,
  rounding_direction: Any,
  scales: Sequence[float],
  input_pixel_offsets: Sequence[float] | None,
  output_pixel_offsets: Sequence[float] | None,
  output_sizes: Sequence[int] | None,
  feature_level: FeatureLevelLike,
) -> jax.Array:
  (input,), types = arguments.tensor_operands(desc_type, input)
  level = as_level(feature_level)
  mode = InterpolationMode.from_any(interpolation_mode)
  direction = None if rounding_direction is None else AxisDirection.from_any(rounding_direction)
  scale_values = _floats(scales, "Scales")
  assert scale_values is not None
  n = len(scale_values)
  ins, outs = None, None  # RESAMPLE's are pixel centres: no field holds them
  if desc_type is not ResampleDesc:
    ins = _floats(input_pixel_offsets, "InputPixelOffsets") or (0.5,) * n
    outs = _floats(output_pixel_offsets, "OutputPixelOffsets") or (-0.5,) * n
  sizes = None if output_sizes is None else as_int_tuple(output_sizes, "output_sizes")
  static = (level, types, mode, direction, scale_values, ins, outs, sizes)
  return _FUNCTIONS[desc_type.OPERATOR](static, input)


def _describe(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  operator: str,
  mode: InterpolationMode,
  direction: AxisDirection | None,
  scales: tuple[float, ...],
  ins: tuple[float, ...] | None,
  outs: tuple[float, ...] | None,
  sizes: tuple[int, ...] | None,
) -> _ResampleDesc:
  input = TensorDesc(types[0], shapes[0])
  output = TensorDesc(types[0], default_output_sizes(shapes[0], scales) if sizes is None else sizes)
  if operator == "RESAMPLE":
    return ResampleDesc(input, output, mode, scales)
  ins = (0.5,) * len(scales) if ins is None else ins
  outs = (-0.5,) * len(scales) if outs is None else outs
  if operator == "RESAMPLE1":
    return Resample1Desc(input, output, mode, scales, ins, outs)
  assert direction is not None, "RESAMPLE2's calls pass a RoundingDirection"
  return Resample2Desc(input, output, mode, direction, scales, ins, outs)


_FUNCTIONS = {
  desc_type.OPERATOR: dispatch.operator_function(
    lambda types, shapes, *attributes, operator=desc_type.OPERATOR: _describe(
      types, shapes, operator, *attributes
    ),
    desc_type,
    # A call of lower rank than the level's table takes (4 dimensions before FL 5_1) is
    # padded with leading 1s, each scale 1 and the offsets pixel centres; the output is cut
    # back. Fewer scales than dimensions are left for validation to refuse.
    natural.PerDimension(
      names=(
        "interpolation_mode",
        "rounding_direction",
        "scales",
        "input_pixel_offsets",
        "output_pixel_offsets",
        "output_sizes",
      ),
      neutral=((2, 1.0), (3, 0.5), (4, -0.5), (5, natural.SIZE)),  # type: ignore[arg-type]
    ),
  )
  for desc_type in (ResampleDesc, Resample1Desc, Resample2Desc)
}
_FLOAT_ARRAY_FIELD = next(f for f in dml_fields(ResampleDesc) if f.dml_name == "Scales")
