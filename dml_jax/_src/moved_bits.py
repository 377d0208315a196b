"""JAX dtypes DirectML lacks (bfloat16, the float8 types) through operators that only move data.

DirectML has no bfloat16 and no 8-bit float type. An operator that only copies
elements (GATHER, JOIN, TILE, SLICE, ...) never looks at their values, so a
DirectML program would bind such data as the unsigned integer type of its width:
UINT16 for bfloat16, UINT8 for a float8 type. The functional API does the same,
as an extension beyond DirectML: the data is bitcast to that type, the operator
validated and lowered with it (what `dml.explain` shows), and the result bitcast
back, so every bit (NaN payloads, signed zeros) comes out as it went in. Operators
whose results depend on the values (PADDING's PaddingValue, ELEMENT_WISE_IDENTITY
with a ScaleBias) refuse these dtypes with the exact widening to cast to instead.

Derivatives flow as through any linear operator: the tangents go through the same
operator in float32, which holds every value of these types exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dml_jax._src.dtypes import DataType

CARRIED: dict[np.dtype[Any], DataType] = {
  np.dtype(jnp.bfloat16): DataType.UINT16,
  **{
    np.dtype(getattr(jnp, name)): DataType.UINT8
    for name in (
      "float8_e3m4",
      "float8_e4m3",
      "float8_e4m3b11fnuz",
      "float8_e4m3fn",
      "float8_e4m3fnuz",
      "float8_e5m2",
      "float8_e5m2fnuz",
      "float8_e8m0fnu",
    )
    if hasattr(jnp, name)
  },
}


def widening(dtype: np.dtype[Any]) -> str:
  """The DirectML type that holds every value of `dtype` exactly, for error hints."""
  return "float16" if dtype.itemsize == 1 and dtype.name != "float8_e8m0fnu" else "float32"


def moved_dtype(function: str, arrays: Sequence[Any], data: Sequence[bool]) -> np.dtype | None:
  """The one extension dtype among the data arrays (`data[i]`: not indices), or None.

  Raises:
    TypeError: where such a dtype meets another dtype (a JOIN of bfloat16 and uint16
      would pass DirectML's checks as UINT16).
  """
  found = {np.dtype(a.dtype) for a, d in zip(arrays, data, strict=True) if d}
  moved = [dt for dt in found if dt in CARRIED]
  if not moved:
    return None
  if len(found) > 1:
    names = ", ".join(sorted(dt.name for dt in found))
    raise TypeError(
      f"dml.{function} got data of dtypes {names}: {moved[0].name} passes through as the bits of"
      f" {CARRIED[moved[0]].name.lower()} only where all the data has that one dtype; cast"
      f" the arrays to one dtype first"
    )
  return moved[0]


def refused(function: str, dtype: np.dtype[Any]) -> TypeError:
  """The error of an operator that needs the values of data DirectML has no type for."""
  return TypeError(
    f"dml.{function} reads the values of its data, and DirectML has no data type for"
    f" {dtype.name}; dml_jax passes {dtype.name} only through operators that move data"
    f" without reading it. Cast to {widening(dtype)} first, which holds every {dtype.name}"
    f" value exactly: x.astype(jnp.{widening(dtype)}), and the result back with"
    f" .astype(jnp.{dtype.name})"
  )


def through_unsigned(
  run: Callable[..., Any],
  run_float32: Callable[..., Any],
  arrays: Sequence[jax.Array],
  data: Sequence[bool],
  dtype: np.dtype[Any],
) -> Any:
  """`run` on the data arrays bitcast to their unsigned type, its outputs bitcast back to
  `dtype`; tangents through `run_float32` (the same operator on float32 data)."""
  unsigned = np.dtype(f"uint{dtype.itemsize * 8}")

  @jax.custom_jvp
  def moved(*xs: jax.Array) -> Any:
    ins = [lax.bitcast_convert_type(x, unsigned) if d else x for x, d in zip(xs, data, strict=True)]
    return jax.tree.map(lambda y: lax.bitcast_convert_type(y, dtype), run(*ins))

  @moved.defjvp
  def moved_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
    ins = [
      t.astype(np.float32) if d else p for p, t, d in zip(primals, tangents, data, strict=True)
    ]
    return moved(*primals), jax.tree.map(lambda y: y.astype(dtype), run_float32(*ins))

  return moved(*arrays)
