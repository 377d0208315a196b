"""GPU kernels (Pallas, Triton backend) for the cases XLA's gather leaves slow.

GATHER_ELEMENTS along the last axis: XLA spreads one row's outputs over many
thread blocks, each fetching the row's cache lines again. Here one program owns
whole rows: its random reads within a row hit that SM's L1 after the first touch.
On an H100 this ran at 0.95 of a device copy against 0.57 for XLA's gather
(BENCHMARKS.md). The indices are normalized and clamped inside the kernel, with
the same arithmetic as the lax path (`indexing.clamp_indices`), so both give the
same bits; `lax.platform_dependent` picks the kernel on CUDA GPUs only, and the
gradient is the lax path's.

JAX 0.11 deprecates Pallas's Triton backend (it warns when it lowers the kernel) and will
remove it; where `jax.experimental.pallas.triton` cannot be imported, the lax path serves
every platform.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import numpy as np
from jax import lax

from dml_jax._src import indexing

_MIN_COLUMNS = 128  # narrower rows gain nothing and make tiny Triton blocks
_MAX_ROW_BYTES = 128 * 1024  # a row beyond this no longer fits in L1 with the rest
_DTYPES = {
  np.dtype(t) for t in ("float32", "float16", "int32", "uint32", "int16", "uint16", "int8", "uint8")
}


def _power_of_two(n: int) -> bool:
  return n > 0 and n & (n - 1) == 0


@functools.cache
def _pallas_triton_available() -> bool:
  try:
    from jax.experimental.pallas import triton  # noqa: F401
  except ImportError:
    return False
  return True


def rows_kernel_applies(
  input_shape: tuple[int, ...], indices_shape: tuple[int, ...], dtype: np.dtype, axis: int
) -> bool:
  """Whether GATHER_ELEMENTS of these static shapes can use the row kernel."""
  columns = indices_shape[-1]
  return (
    _pallas_triton_available()
    and axis == len(input_shape) - 1
    and np.dtype(dtype) in _DTYPES
    and _power_of_two(columns)
    and columns >= _MIN_COLUMNS
    and input_shape[-1] * np.dtype(dtype).itemsize <= _MAX_ROW_BYTES  # so int32 positions
  )


def gather_last_axis(
  input: jax.Array, indices: jax.Array, fallback: Callable[[jax.Array, jax.Array], jax.Array]
) -> jax.Array:
  """GATHER_ELEMENTS along the last axis: the row kernel on CUDA, `fallback` elsewhere.

  `indices` are raw (normalized and clamped here); `fallback(input, indices)` is the lax
  path with the same semantics, used on other platforms and for the gradient.
  """
  kernel = jax.custom_vjp(functools.partial(_rows, interpret=False))
  kernel.defvjp(
    lambda x, i: (_rows(x, i, interpret=False), (x, i)), functools.partial(_fallback_vjp, fallback)
  )
  return lax.platform_dependent(input, indices, cuda=kernel, default=fallback)


def _fallback_vjp(fallback, residuals, cotangent):
  x, indices = residuals
  _, vjp = jax.vjp(lambda x: fallback(x, indices), x)
  return vjp(cotangent)[0], np.zeros(indices.shape, jax.dtypes.float0)


def _rows(input: jax.Array, indices: jax.Array, *, interpret: bool) -> jax.Array:
  """The kernel: rows of `indices` (collapsed leading dims) against rows of `input`."""
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it
  from jax.experimental.pallas import triton as pltriton

  size, columns = input.shape[-1], indices.shape[-1]
  rows = int(np.prod(indices.shape[:-1], dtype=np.int64))
  x = input.reshape(rows, size)
  idx = indices.reshape(rows, columns)

  def kernel(x_ref, idx_ref, out_ref):
    row = pl.program_id(0)
    positions = indexing.clamp_indices(idx_ref[...], size)  # (1, columns), in range
    out_ref[...] = x_ref[row, positions]

  out = pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((rows, columns), input.dtype),
    grid=(rows,),
    in_specs=[
      pl.BlockSpec((rows, size), lambda r: (0, 0)),
      pl.BlockSpec((1, columns), lambda r: (r, 0)),
    ],
    out_specs=pl.BlockSpec((1, columns), lambda r: (r, 0)),
    compiler_params=None
    if interpret
    else pltriton.CompilerParams(num_warps=int(min(16, max(4, columns // 512)))),
    interpret=interpret,
  )(x, idx)
  return out.reshape(indices.shape)
