"""DML_OPERATOR_CAST: every element converted to the OutputTensor's data type.

DirectML's page says only that each element is cast to the output's data type.
dml_jax fixes every conversion, bit for bit and the same on every backend:

- float to float rounds to nearest, ties to even: 65520.0 becomes FLOAT16 infinity,
  values below FLOAT16's range become its subnormals or a signed zero, -0.0 stays
  -0.0. FLOAT64 to FLOAT16 rounds once (XLA's convert rounds twice, through
  float32, so the lowering rounds to odd in float32 first, which makes the second
  rounding exact). A NaN stays a NaN of the same sign, quiet, with its payload's
  leading bits (narrowing drops the low bits, widening appends zeros); a cast to the
  same type copies the bits, signalling NaNs included.
- integer to float rounds to nearest, ties to even (beyond FLOAT16's range: infinity).
- integer to integer wraps (two's complement): the low bits are kept, a narrower
  signed source is sign-extended, an unsigned one zero-extended (INT8 -1 to UINT16
  is 65535; UINT32 300 to UINT8 is 44).
- float to integer truncates toward zero; values beyond the integer type's range
  saturate to its minimum or maximum (infinities included), and NaN gives 0. XLA's
  own convert leaves these cases to the backend, so the lowering clamps first.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, registry
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import (
  ALL_DATA,
  X64_TIP,
  DataType,
  DataTypeLike,
  x64_enabled,
)
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
from dml_jax._src.tensor_desc import TensorDesc

_FL_1_0_TYPES = (
  DataType.FLOAT32,
  DataType.FLOAT16,
  DataType.INT16,
  DataType.INT8,
  DataType.UINT16,
  DataType.UINT8,
)
_NO_FLOAT64 = tuple(t for t in ALL_DATA if t != DataType.FLOAT64)


def _table(dimension_counts, data_types):
  row = support(dimension_counts, data_types)
  return {"InputTensor": row, "OutputTensor": row}


_SUPPORT = SupportTable(
  "CAST",
  {
    FeatureLevel.FL_1_0: _table(4, _FL_1_0_TYPES),
    FeatureLevel.FL_3_0: _table(4, _NO_FLOAT64),
    FeatureLevel.FL_3_1: _table((1, 8), _NO_FLOAT64),
    FeatureLevel.FL_4_1: _table((1, 8), ALL_DATA),
  },
)


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class CastDesc(OperatorDesc):
  """`DML_CAST_OPERATOR_DESC`.

  Attributes:
    input_tensor: InputTensor.
    output_tensor: OutputTensor, required: its DataType is the type to convert to,
      which no other field holds; its sizes are the input's.

  Examples:
    >>> desc = CastDesc(TensorDesc("FLOAT32", (2, 3)), TensorDesc("UINT8", (2, 3)))
    >>> desc
    CastDesc(input_tensor=TensorDesc("FLOAT32", (2, 3)), output_tensor=TensorDesc("UINT8", (2, 3)))
    >>> print(desc)
    DML_OPERATOR_CAST(InputTensor=FLOAT32[2,3]) -> UINT8[2,3]
  """

  OPERATOR = "CAST"
  SUPPORT = _SUPPORT
  FUNCTION = "cast"
  OUTPUT_DATA_TYPE_FROM = "OutputTensor"  # any type: the output's own is the one converted to

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  output_tensor: TensorDesc = dml_field("OutputTensor", FieldKind.TENSOR, output=True)

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(self, input_tensor: TensorDesc, output_tensor: TensorDesc) -> None: ...

  def infer_output(self) -> TensorDesc | None:
    # The data type is the given output's (the one field that holds it), the sizes the input's.
    return TensorDesc(self.output_tensor.data_type, self.input_tensor.sizes)

  def check_rules(self, check: Checker) -> None:
    # The output's rank and sizes are checked with every given output (validation.py).
    pass

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return f"must equal InputTensor.Sizes {braced(expected)}"

  def lower(self, input: jax.Array) -> jax.Array:
    return cast_array(input, self.output_tensor.data_type)

  def explain_output(self) -> list[str]:
    source, target = self.input_tensor.data_type, self.output_tensor.data_type
    return [
      f"OutputTensor.Sizes = InputTensor.Sizes = {braced(self.input_tensor.sizes)}; the"
      f" OutputTensor's DataType ({target}) is the type every element is converted to.",
      f"{source} -> {target}: {conversion_rule(source, target)}",
    ]


def conversion_rule(source: DataType, target: DataType) -> str:
  """The conversion from `source` to `target`, in a sentence."""
  if source == target:
    return "the same type: the bits are copied."
  if source.is_float and target.is_float:
    return (
      "rounded to nearest, ties to even (beyond the range: infinity); a NaN stays a quiet NaN"
      " of the same sign with its payload's leading bits."
    )
  if target.is_float:
    return "rounded to nearest, ties to even (beyond the range: infinity)."
  if source.is_float:
    return (
      "truncated toward zero; beyond the range saturated to the type's minimum or maximum;"
      " NaN gives 0."
    )
  return "wraps (two's complement): the low bits are kept, after sign or zero extension."


# -- the lowering -----------------------------------------------------------------------------

_UNSIGNED: dict[int, np.dtype[Any]] = {
  16: np.dtype(np.uint16),
  32: np.dtype(np.uint32),
  64: np.dtype(np.uint64),
}


def cast_array(x: jax.Array, data_type: DataType) -> jax.Array:
  """`x` converted to `data_type` by CAST's rules (see the module docstring)."""
  target = data_type.numpy_dtype
  assert target is not None
  if target.itemsize == 8 and not x64_enabled():
    raise TypeError(
      f"OutputTensor.DataType {data_type} is 64-bit, which JAX cannot hold with"
      f" jax_enable_x64 off; {X64_TIP}"
    )
  source = np.dtype(x.dtype)
  if source == target:
    return x
  if source.kind == "f" and target.kind == "f":
    return _float_to_float(x, target)
  if source.kind == "f":
    return _float_to_integer(x, target)
  return lax.convert_element_type(x, target)  # wraps between integers; rounds to floats


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _float_to_float(x: jax.Array, target: np.dtype) -> jax.Array:
  """The rounded value, and NaNs by the payload rule; the derivative is the tangent cast."""
  return lax.select(_is_nan(x), _nan_of(x, target), _rounded(x, target))


@_float_to_float.defjvp
def _float_to_float_jvp(target, primals, tangents):
  (x,), (dx,) = primals, tangents
  return _float_to_float(x, target), lax.convert_element_type(dx, target)


def _rounded(x: jax.Array, target: np.dtype) -> jax.Array:
  """`x` rounded once to nearest even in `target` (finite values and infinities)."""
  if x.dtype == np.float64 and target == np.float16:
    return lax.convert_element_type(_float32_rounded_to_odd(x), np.float16)
  return lax.convert_element_type(x, target)


def _float32_rounded_to_odd(x: jax.Array) -> jax.Array:
  """float64 `x` in float32, rounded to odd (truncated, the last bit set where bits were
  lost), after which rounding to float16 is exact: float32 has 13 more significand bits.

  Computed on the bits, not by converting to float32 and back: XLA may fold such a round
  trip away (it allows excess precision), which on GPUs made the rounding double. Values
  below float32's normal range keep their sign and become the smallest odd denormal (float16
  rounds them to zero); values at or above 2**128 become float32's largest (float16's
  infinity). NaNs are the caller's.
  """
  bits = lax.bitcast_convert_type(x, np.uint64)
  sign = (bits >> np.uint64(63)) << np.uint64(31)
  exponent = (bits >> np.uint64(52)) & np.uint64(0x7FF)  # float32's is this - (1023 - 127)
  mantissa = bits & np.uint64((1 << 52) - 1)
  lost = (mantissa & np.uint64((1 << 29) - 1)) != np.uint64(0)
  kept = (mantissa >> np.uint64(29)) | lost.astype(np.uint64)
  rebiased = exponent - np.uint64(1023 - 127)  # wraps below the range, where it is not used
  normal = sign | (rebiased << np.uint64(23)) | kept
  nonzero = (bits & np.uint64((1 << 63) - 1)) != np.uint64(0)
  tiny = sign | nonzero.astype(np.uint64)  # zero keeps its sign; anything else is odd
  huge = sign | np.uint64(0x7F7FFFFF)
  below, above = exponent < np.uint64(1023 - 126), exponent > np.uint64(1023 + 127)
  single = lax.select(below, tiny, lax.select(above, huge, normal))
  return lax.bitcast_convert_type(single.astype(np.uint32), np.float32)


def _layout(dtype: np.dtype) -> tuple[int, int]:
  """(width, significand bits) of a float dtype."""
  return dtype.itemsize * 8, np.finfo(dtype).nmant


def _is_nan(x: jax.Array) -> jax.Array:
  """An integer test of the bits (no float compare that a compiler could treat as ordered)."""
  width, _ = _layout(np.dtype(x.dtype))
  unsigned = _UNSIGNED[width]
  bits = lax.bitcast_convert_type(x, unsigned)
  magnitude = bits & unsigned.type((1 << (width - 1)) - 1)
  infinity = np.array(np.inf, x.dtype).view(unsigned)
  return magnitude > infinity


def _nan_of(x: jax.Array, target: np.dtype) -> jax.Array:
  """The NaN of `target` that a NaN `x` becomes: its sign, quiet, its payload's leading bits."""
  source = np.dtype(x.dtype)
  (ws, ms), (wt, mt) = _layout(source), _layout(target)
  wide = _UNSIGNED[max(ws, wt)]
  one = lambda v: wide.type(v)  # noqa: E731
  bits = lax.convert_element_type(lax.bitcast_convert_type(x, _UNSIGNED[ws]), wide)
  sign = bits >> one(ws - 1)
  payload = bits & one((1 << ms) - 1)
  payload = payload >> one(ms - mt) if ms > mt else payload << one(mt - ms)
  exponent_and_quiet = ((1 << (wt - 1 - mt)) - 1) << mt | 1 << (mt - 1)
  nan = (sign << one(wt - 1)) | one(exponent_and_quiet) | payload
  return lax.bitcast_convert_type(lax.convert_element_type(nan, _UNSIGNED[wt]), target)


def integer_bounds(source: np.dtype, target: np.dtype) -> tuple[Any, Any]:
  """The largest and smallest `source` floats whose truncation fits `target` (an integer type)."""
  info = np.iinfo(target)
  finfo = np.finfo(source)
  with np.errstate(over="ignore"):
    high = source.type(info.max)
  if not np.isfinite(high):
    high = finfo.max
  elif int(high) > int(info.max):
    high = np.nextafter(high, source.type(0))
  if info.min == 0:
    low = source.type(0)
  else:
    with np.errstate(over="ignore"):
      low = source.type(info.min)  # -2**(b - 1): a power of two, exact where it is finite
    if not np.isfinite(low):
      low = -finfo.max
  return high, low


def _float_to_integer(x: jax.Array, target: np.dtype) -> jax.Array:
  source = np.dtype(x.dtype)
  info = np.iinfo(target)
  high, low = integer_bounds(source, target)
  high_x, low_x = np.asarray(high, source), np.asarray(low, source)
  nan = _is_nan(x)
  zero = lax.full_like(x, 0)
  safe = lax.select(nan, zero, x)
  above, below = safe > high_x, safe < low_x
  inside = lax.select(
    above, lax.full_like(x, high_x), lax.select(below, lax.full_like(x, low_x), safe)
  )
  converted = lax.convert_element_type(inside, target)  # in range: truncates toward zero
  converted = lax.select(above, lax.full_like(converted, info.max), converted)
  converted = lax.select(below, lax.full_like(converted, info.min), converted)
  return lax.select(nan, lax.full_like(converted, 0), converted)


# -- the functional API -----------------------------------------------------------------------


def cast(
  input: ArrayLike, *, data_type: DataTypeLike, feature_level: FeatureLevelLike = None
) -> jax.Array:
  """DML_OPERATOR_CAST: `input` converted, element by element, to `data_type`.

  The output has the input's shape and `data_type` (OutputTensor.DataType). Float to
  float and integer to float round to nearest, ties to even (65520.0 to float16 is
  inf; -0.0 stays -0.0; a NaN stays a quiet NaN of the same sign with its payload's
  leading bits); integer to integer wraps (two's complement); float to integer
  truncates toward zero, saturates beyond the type's range and gives 0 for NaN. The
  same bits on every backend.

  Unlike ``x.astype(dtype)``: float to integer is defined everywhere (saturating, NaN
  to 0) and float64 to float16 rounds once; a 64-bit `data_type` with x64 off is a
  TypeError, never a silent 32-bit result.

  Args:
    input: InputTensor.
    data_type: OutputTensor.DataType: a `DataType`, its name ("UINT8") or a dtype.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator (a data type or rank the
      level lacks).
    TypeError: for a data type DirectML lacks, or a 64-bit one with x64 off.

  Examples:
    >>> import numpy as np
    >>> cast(np.array([1.5, -2.7, 300.0, np.nan], np.float32), data_type="UINT8")
    Array([  1,   0, 255,   0], dtype=uint8)
    >>> cast(np.array([-1, 300], np.int32), data_type=np.int8)
    Array([-1, 44], dtype=int8)
    >>> cast(np.array([65519.0, 65520.0, -0.0], np.float32), data_type="FLOAT16").tolist()
    [65504.0, inf, -0.0]
  """
  (input,), types = arguments.tensor_operands(CastDesc, input)
  target = DataType.from_any(data_type)
  if target.numpy_dtype is None:
    raise TypeError(f"data_type must be a DML_TENSOR_DATA_TYPE JAX can hold; got {target}")
  if target.is_64_bit and not x64_enabled():
    raise TypeError(
      f"data_type {target} is 64-bit, which JAX cannot hold with jax_enable_x64 off; {X64_TIP}"
    )
  return _cast((as_level(feature_level), types, target), input)


def _describe_cast(
  types: tuple[DataType, ...], shapes: tuple[tuple[int, ...], ...], target: DataType
) -> CastDesc:
  return CastDesc(TensorDesc(types[0], shapes[0]), TensorDesc(target, shapes[0]))


_cast = dispatch.operator_function(_describe_cast, CastDesc)
