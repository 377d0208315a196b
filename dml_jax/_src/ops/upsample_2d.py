"""DML_OPERATOR_UPSAMPLE_2D: the last two dimensions (height, width) enlarged by whole factors.

ScaleSize is a `Size2D` {Width, Height} of UINT factors >= 1. The output is the input with
its height times ScaleSize.Height and its width times ScaleSize.Width; the other dimensions
(batch, channel, and depth for 5-D) pass through. dml_jax reads it as RESAMPLE with scales
(1, ..., 1, Height, Width) about pixel centres (`resample.resampled`):

- NEAREST_NEIGHBOR: out[..., h, w] = in[..., h // Height, w // Width] (with whole factors
  no coordinate falls on a tie);
- LINEAR: bilinear, interpolated in float32 along the height and then the width, edges
  clamped; FLOAT16 rounded once at the end.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import jax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, natural, registry
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
from dml_jax._src.ops.resample import InterpolationMode, Rounding, Sampling, resampled
from dml_jax._src.rules import braced
from dml_jax._src.size_2d import Size2D
from dml_jax._src.tensor_desc import TensorDesc

_ROW = support((4, 5), (DataType.FLOAT32, DataType.FLOAT16))
_SUPPORT = SupportTable(
  "UPSAMPLE_2D", {FeatureLevel.FL_1_0: {"InputTensor": _ROW, "OutputTensor": _ROW}}
)
_UINT_MAX = 2**32 - 1


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class Upsample2dDesc(OperatorDesc):
  """`DML_UPSAMPLE_2D_OPERATOR_DESC`.

  Attributes:
    input_tensor: InputTensor, 4-D (N, C, H, W) or 5-D (N, C, D, H, W).
    scale_size: ScaleSize, a `Size2D` {Width, Height} of factors >= 1 (a pair is read
      (Width, Height), in the struct's order).
    output_tensor: OutputTensor; None infers it (H x Height, W x Width, the input's
      data type).
    interpolation_mode: InterpolationMode, NEAREST_NEIGHBOR (the default) or LINEAR.

  Examples:
    >>> desc = Upsample2dDesc(TensorDesc("FLOAT32", (1, 1, 2, 3)), {"Width": 2, "Height": 3})
    >>> print(desc)
    DML_OPERATOR_UPSAMPLE_2D(InputTensor=FLOAT32[1,1,2,3], ScaleSize={Width:2,Height:3}, InterpolationMode=NEAREST_NEIGHBOR) -> FLOAT32[1,1,6,6]
  """

  OPERATOR = "UPSAMPLE_2D"
  SUPPORT = _SUPPORT
  FUNCTION = "upsample_2d"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  scale_size: Size2D = dml_field("ScaleSize", FieldKind.SIZE_2D)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )
  interpolation_mode: InterpolationMode = dml_field(
    "InterpolationMode",
    FieldKind.ENUM,
    enum_type=InterpolationMode,
    default=InterpolationMode.NEAREST_NEIGHBOR,
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      scale_size: Size2D | Any,
      output_tensor: TensorDesc | None = None,
      interpolation_mode: InterpolationMode | str | int = InterpolationMode.NEAREST_NEIGHBOR,
    ) -> None: ...

  def _output_sizes(self) -> tuple[int, ...] | None:
    sizes = self.input_tensor.sizes
    if len(sizes) < 2:
      return None
    return sizes[:-2] + (sizes[-2] * self.scale_size.height, sizes[-1] * self.scale_size.width)

  def infer_output(self) -> TensorDesc | None:
    sizes = self._output_sizes()
    return None if sizes is None else TensorDesc(self.input_tensor.data_type, sizes)

  def check_rules(self, check: Checker) -> None:
    sizes = self.input_tensor.sizes
    if len(sizes) < 2:
      return  # the support table names the rank
    for name, scale, size in (
      ("Height", self.scale_size.height, sizes[-2]),
      ("Width", self.scale_size.width, sizes[-1]),
    ):
      bound = _UINT_MAX // size
      check.expect(
        0 < scale <= bound,
        f"ScaleSize.{name}",
        f"must be in [1, UINT_MAX / Input{name}] = [1, {bound}]",
        scale,
        hint="an upsampling factor is a whole number >= 1" if scale < 1 else None,
      )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return (
      f"must be InputTensor.Sizes with the height times ScaleSize.Height and the width times"
      f" ScaleSize.Width: {braced(expected)}"
    )

  def lower(self, input: jax.Array) -> jax.Array:
    sizes = input.shape
    factors = (1,) * (len(sizes) - 2) + (self.scale_size.height, self.scale_size.width)
    samplings = tuple(
      Sampling(n, n * f, float(f), 0.5, -0.5) for n, f in zip(sizes, factors, strict=True)
    )
    return resampled(input, samplings, self.interpolation_mode, Rounding.HALF_DOWN)

  def explain_output(self) -> list[str]:
    data, scale = self.input_tensor, self.scale_size
    sizes = self._output_sizes()
    if sizes is None:
      return [f"The {data.dimension_count}-D input has no height and width to upsample."]
    how = (
      f"out[..., h, w] = in[..., h // {scale.height}, w // {scale.width}]"
      if self.interpolation_mode is InterpolationMode.NEAREST_NEIGHBOR
      else "bilinear about pixel centres, in float32, along the height then the width, edges"
      " clamped"
    )
    return [
      f"{self.interpolation_mode}: {how}; the other dimensions pass through.",
      f"OutputTensor.Sizes = InputTensor.Sizes with height x {scale.height} and width x"
      f" {scale.width}: {braced(sizes)}.",
      f"OutputTensor.DataType = InputTensor.DataType = {data.data_type}.",
    ]


def upsample_2d(
  input: ArrayLike,
  *,
  scale_size: Size2D | Any,
  interpolation_mode: InterpolationMode | str | int = InterpolationMode.NEAREST_NEIGHBOR,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_UPSAMPLE_2D: the last two dimensions enlarged by whole factors.

  `input` is 4-D (N, C, H, W) or 5-D (N, C, D, H, W); the output has H x Height and
  W x Width. NEAREST_NEIGHBOR repeats each element; LINEAR is bilinear about pixel
  centres in float32, edges clamped.

  Args:
    input: InputTensor (float32 or float16).
    scale_size: ScaleSize: ``{"Width": w, "Height": h}``, a `Size2D`, or a pair
      ``(Width, Height)`` in DirectML's struct order.
    interpolation_mode: InterpolationMode, ``"NEAREST_NEIGHBOR"`` (default) or ``"LINEAR"``.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for a dtype DirectML lacks, or a ScaleSize that is no size.

  Examples:
    >>> import numpy as np
    >>> x = np.array([[[[1, 2]]]], np.float32)
    >>> upsample_2d(x, scale_size={"Width": 2, "Height": 2})
    Array([[[[1., 1., 2., 2.],
             [1., 1., 2., 2.]]]], dtype=float32)
    >>> upsample_2d(x, scale_size={"Width": 2, "Height": 1}, interpolation_mode="LINEAR")
    Array([[[[1.  , 1.25, 1.75, 2.  ]]]], dtype=float32)
  """
  (input,), types = arguments.tensor_operands(Upsample2dDesc, input)
  level = as_level(feature_level)
  static = (
    level,
    types,
    Size2D.from_any(scale_size),
    InterpolationMode.from_any(interpolation_mode),
  )
  return _upsample_2d(static, input)


def _describe(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  scale_size: Size2D,
  mode: InterpolationMode,
) -> Upsample2dDesc:
  return Upsample2dDesc(TensorDesc(types[0], shapes[0]), scale_size, interpolation_mode=mode)


# A 2-D or 3-D call (an image without batch or channel) is padded with leading 1s to the
# 4 dimensions DirectML takes, and its output cut back.
_upsample_2d = dispatch.operator_function(
  _describe,
  Upsample2dDesc,
  natural.PerDimension(names=("scale_size", "interpolation_mode")),
)
