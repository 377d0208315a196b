"""`DML_AXIS_DIRECTION`, and the order dml_jax's selection operators rank values in.

ARGMIN, ARGMAX and TOP_K1 take an AxisDirection. Their ranking of values is one total
order, the same for all of them (DirectML's pages leave NaN and signed zeros open):

- numbers rank by value, and -0.0 equals 0.0 (they tie);
- every NaN, whatever its sign and payload, ranks above +inf, and all NaNs tie.

`ordered_keys` maps an array to integers that rank exactly so; the operators compare
those keys, never the floats, so the result does not depend on how a device treats
NaN or subnormal numbers in float comparisons.
"""

from __future__ import annotations

import enum
from typing import Any

import jax
import numpy as np
from jax import lax

from dml_jax._src import enums

_PREFIX = "DML_AXIS_DIRECTION_"


class AxisDirection(enum.IntEnum):
  """`DML_AXIS_DIRECTION`, with DirectML's values.

  For ARGMIN and ARGMAX it says which of several equal extreme values wins:
  INCREASING the first (lowest index), DECREASING the last. For TOP_K1 it says
  which end is kept: INCREASING the K smallest values in ascending order,
  DECREASING the K largest in descending order.

  Examples:
    >>> AxisDirection.from_any("DML_AXIS_DIRECTION_DECREASING")
    <AxisDirection.DECREASING: 1>
    >>> AxisDirection.from_any("increasing") is AxisDirection.from_any(0)
    True
  """

  INCREASING = 0
  DECREASING = 1

  @classmethod
  def from_any(cls, value: Any) -> AxisDirection:
    """The direction from the enum, its value, or its name with or without the DML prefix.

    Raises:
      ValueError: for a name or value that is no direction (the message lists them).
      TypeError: for anything but a string or an integer.
    """
    return enums.member(cls, value, what="AxisDirection", prefix=_PREFIX)


def ordered_keys(x: jax.Array) -> jax.Array:
  """Integers that rank like `x` in the selection order (see the module docstring).

  Integer arrays are their own keys. A float array becomes its bits as a signed integer
  of the same width, with both zeros made +0, every NaN made one positive NaN, and the
  bits of negative numbers flipped (all but the sign), so that the integers order as
  the numbers do. Only integer operations touch the bits.
  """
  dtype = np.dtype(x.dtype)
  if not np.issubdtype(dtype, np.floating):
    return x
  bits = canonical_bits(x)
  width = dtype.itemsize * 8
  magnitude_mask = np.asarray((1 << (width - 1)) - 1, bits.dtype)
  sign = lax.shift_right_arithmetic(bits, lax.full_like(bits, width - 1))
  return lax.bitwise_xor(bits, lax.bitwise_and(sign, magnitude_mask))


def canonical_bits(x: jax.Array) -> jax.Array:
  """The bits of a float array as signed integers of its width, with -0.0 made +0.0 and every
  NaN made one positive quiet NaN: equal in the selection order means equal bits. (XLA's total
  order of floats, which `lax.top_k` and `lax.sort` use, then ranks them as the selection order
  does.)"""
  dtype = np.dtype(x.dtype)
  info = np.finfo(dtype)
  signed = np.dtype(f"i{dtype.itemsize}")
  bits = lax.bitcast_convert_type(x, signed)
  magnitude_mask = np.asarray((1 << (info.bits - 1)) - 1, signed)
  infinity = np.asarray(((1 << info.nexp) - 1) << info.nmant, signed)
  quiet_nan = np.asarray(infinity | (1 << (info.nmant - 1)), signed)
  magnitude = lax.bitwise_and(bits, magnitude_mask)
  bits = lax.select(magnitude == np.asarray(0, signed), lax.full_like(bits, 0), bits)
  return lax.select(magnitude > infinity, lax.full_like(bits, quiet_nan), bits)
