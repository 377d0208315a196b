"""DML_OPERATOR_ELEMENT_WISE_IDENTITY: out[c] = input[c], or input[c] * Scale + Bias.

The operator DirectML uses to copy a tensor and, through strides, to move data
between layouts (bound with `dml.execute`, an NHWC input described with permuted
strides comes out packed NCHW). It is the one operator of the library with an
in-place form: its output may be bound to its input's buffer.

With a ScaleBias (float data only), dml_jax computes ``x * Scale + Bias`` with two
roundings and no fused multiply-add: FLOAT32 data in float32 (the product rounded
to float32, then the sum); FLOAT16 data in float32 the same way, the result rounded
once to float16; FLOAT64 data in float64 (Scale and Bias are float32 values, exact
in float64). Compilers contract ``a * b + c`` into one FMA when they may (XLA's CPU
backend does, even through bitcasts, optimization barriers and a maximum with -inf);
the product here passes through a select, on an integer test of its bits, that turns
a NaN product into the default NaN, which no compiler can see through, so the product
is rounded on its own everywhere. A NaN result is a quiet NaN whose payload dml_jax
does not promise.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, registry
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
from dml_jax._src.rules import braced
from dml_jax._src.scale_bias import ScaleBias
from dml_jax._src.tensor_desc import TensorDesc

_FLOATS = (DataType.FLOAT32, DataType.FLOAT16)


def _table(dimension_counts, data_types):
  row = support(dimension_counts, data_types)
  return {"InputTensor": row, "OutputTensor": row}


_SUPPORT = SupportTable(
  "ELEMENT_WISE_IDENTITY",
  {
    FeatureLevel.FL_1_0: _table((4, 5), _FLOATS),
    FeatureLevel.FL_2_1: _table((4, 5), UP_TO_32_BIT),
    FeatureLevel.FL_3_0: _table((1, 8), UP_TO_32_BIT),
    FeatureLevel.FL_4_1: _table((1, 8), ALL_DATA),
  },
)


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class ElementWiseIdentityDesc(OperatorDesc):
  """`DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC`.

  Attributes:
    input_tensor: InputTensor.
    output_tensor: OutputTensor; None infers it (the input's data type and sizes,
      packed). Its strides are free: that is how the operator changes layouts.
    scale_bias: ScaleBias, an optional `dml.ScaleBias` (or a (scale, bias) pair);
      float data only.

  Examples:
    >>> desc = ElementWiseIdentityDesc(TensorDesc("FLOAT16", (2, 3), strides=(1, 2)))
    >>> desc
    ElementWiseIdentityDesc(input_tensor=TensorDesc("FLOAT16", (2, 3), strides=(1, 2)))
    >>> print(ElementWiseIdentityDesc(TensorDesc("FLOAT32", (4,)), scale_bias=(2, 1)))
    DML_OPERATOR_ELEMENT_WISE_IDENTITY(InputTensor=FLOAT32[4], ScaleBias={Scale=2.0,Bias=1.0}) -> FLOAT32[4]
  """

  OPERATOR = "ELEMENT_WISE_IDENTITY"
  SUPPORT = _SUPPORT
  FUNCTION = "element_wise_identity"
  IN_PLACE = True
  """DirectML allows OutputTensor to alias InputTensor when binding (see `dml.execute`)."""

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )
  scale_bias: ScaleBias | None = dml_field(
    "ScaleBias", FieldKind.SCALE_BIAS, default=None, optional=True
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      output_tensor: TensorDesc | None = None,
      scale_bias: ScaleBias | tuple[float, float] | None = None,
    ) -> None: ...

  def infer_output(self) -> TensorDesc | None:
    return TensorDesc(self.input_tensor.data_type, self.input_tensor.sizes)

  def check_rules(self, check: Checker) -> None:
    data_type = self.input_tensor.data_type
    if self.scale_bias is not None:
      check.expect(
        data_type.is_float,
        "ScaleBias",
        f"applies to float data only (FLOAT16, FLOAT32, FLOAT64); InputTensor is {data_type}",
        self.scale_bias,
        hint="leave ScaleBias null (None) for integer data",
      )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return f"must equal InputTensor.Sizes {braced(expected)}"

  def lower(self, input: jax.Array) -> jax.Array:
    if self.scale_bias is None:
      return input
    return scale_and_bias(input, self.scale_bias)

  def explain_output(self) -> list[str]:
    data = self.input_tensor
    lines = [
      f"OutputTensor.Sizes = InputTensor.Sizes = {braced(data.sizes)}; OutputTensor.DataType"
      f" = InputTensor.DataType = {data.data_type}.",
    ]
    if self.scale_bias is None:
      lines.append("out[c] = InputTensor[c], bit for bit (no ScaleBias).")
    else:
      s = self.scale_bias
      work = "float64" if data.data_type == DataType.FLOAT64 else "float32"
      lines.append(
        f"out[c] = InputTensor[c] * {s.scale!r} + {s.bias!r}, computed in {work}: the product"
        f" rounded, then the sum (no fused multiply-add)"
        + (", then rounded to FLOAT16." if data.data_type == DataType.FLOAT16 else ".")
      )
    lines.append(
      "Strides of either tensor change where elements sit in their buffers, not the values:"
      " with buffer bindings (dml.execute) this copies between layouts."
    )
    return lines


def _apart(product: jax.Array) -> jax.Array:
  """`product`, but for NaN payloads (a NaN becomes the default NaN), as an operand no
  compiler can fuse with the sum that follows into one FMA: a select whose condition is
  an integer test of the bits (``|bits| <= bits of inf``: not a NaN).

  A select on the float comparison ``product == product`` is not fused either, but LLVM's
  optimizer takes time that doubles with each such select in a chain of them whose result
  is written out as bytes: the model runner's chained ScaleBias dispatches, which XLA:CPU
  fuses into one kernel. The integer test keeps that time linear in the chain's length.
  """
  bits = np.dtype(f"uint{product.dtype.itemsize * 8}")
  raw = lax.bitcast_convert_type(product, bits)
  magnitude = raw & np.asarray(np.iinfo(bits).max >> 1, bits)
  infinity = np.asarray(np.array(np.inf, product.dtype).view(bits), bits)
  return lax.select(magnitude <= infinity, product, jax.numpy.full_like(product, np.nan))


def scale_and_bias(x: jax.Array, scale_bias: ScaleBias) -> jax.Array:
  """``x * Scale + Bias`` with two roundings (see the module docstring)."""
  work = np.float64 if x.dtype == np.float64 else np.float32
  wide = x.astype(work) if x.dtype != work else x
  product = wide * np.asarray(scale_bias.scale, work)
  product = _apart(product)
  if scale_bias.bias == 0 and np.signbit(scale_bias.bias) == 0:
    # x + 0.0 is x but for -0.0, which becomes +0.0. XLA drops the addition of a constant
    # zero, not of one behind an optimization barrier (which costs nothing at run time).
    total = product + lax.optimization_barrier(np.zeros((), work))
  else:
    total = product + np.asarray(scale_bias.bias, work)
  return total.astype(x.dtype) if x.dtype != work else total


def element_wise_identity(
  input: ArrayLike,
  *,
  scale_bias: ScaleBias | tuple[float, float] | Any = None,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_ELEMENT_WISE_IDENTITY: a copy of `input`, or ``input * scale + bias``.

  Without `scale_bias` the output is the input bit for bit (NaN payloads and -0.0
  included), for every data type. With it (float data only; Scale and Bias are
  FLOATs, rounded to float32 first), the product and the sum are each rounded, never
  fused into one multiply-add: in float32 for FLOAT32 and FLOAT16 data (FLOAT16 rounded
  once more, at the end, to float16), in float64 for FLOAT64 data. A NaN result is a
  quiet NaN of unspecified payload.

  On buffers, with strides (DirectML's use of it to change layouts), run its
  descriptor with `dml.execute`.

  Args:
    input: InputTensor.
    scale_bias: ScaleBias: a `dml.ScaleBias`, a (scale, bias) pair, DirectML's
      ``{"Scale": s, "Bias": b}``, or None.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator (ScaleBias on integer data,
      a rank or data type the level lacks).
    TypeError: for a scale or bias that is not a number, or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> element_wise_identity(np.array([[1, 2, 3]], np.float16), scale_bias=(0.5, 1))
    Array([[1.5, 2. , 2.5]], dtype=float16)
  """
  (input,), types = arguments.tensor_operands(ElementWiseIdentityDesc, input)
  level = as_level(feature_level)
  scale = None if scale_bias is None else ScaleBias.from_any(scale_bias)
  return _element_wise_identity((level, types, scale), input)


def _describe_element_wise_identity(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  scale_bias: ScaleBias | None,
) -> ElementWiseIdentityDesc:
  return ElementWiseIdentityDesc(TensorDesc(types[0], shapes[0]), scale_bias=scale_bias)


def _copies(attributes: tuple) -> bool:
  """Without a ScaleBias the operator copies its input (the bfloat16 extension applies)."""
  return attributes[0] is None


_element_wise_identity = dispatch.operator_function(
  _describe_element_wise_identity, ElementWiseIdentityDesc, moves_bits=_copies
)
