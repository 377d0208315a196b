"""GPU kernels (Pallas, Triton backend) for the cases XLA's gather leaves slow.

GATHER_ELEMENTS along the last axis: XLA spreads one row's outputs over many
thread blocks, each fetching the row's cache lines again. Here one program owns
whole rows: its random reads within a row hit that SM's L1 after the first touch.
On an H100 this ran at 0.95 of a device copy against 0.57 for XLA's gather
(BENCHMARKS.md). The indices are normalized and clamped inside the kernel, with
the same arithmetic as the lax path (`indexing.clamp_indices`), so both give the
same bits.

GATHER_ELEMENTS along an earlier axis, in strips of 32 columns: XLA's gather walks
the output row by row, so the reads in flight land on random rows of the whole input,
a DRAM sector per element (0.12 of a copy on an H100). Here each program gathers a
block of rows of one strip, and a strip's programs run side by side, so the rows
they read stay in L2: 0.41 of a copy on an H100, 0.29 on an H200, 3.3x / 2.6x
faster (BENCHMARKS.md).

GATHER_ND whose tuples leave whole rows to copy (the trailing sizes, 256 bytes to
64 KiB): each program copies a few whole rows. By kernel time it reaches 0.92 of a
device copy on an H100 and an H200, where XLA's gather reaches 0.92 / 0.88 for
float32 rows, 0.80 / 0.69 for float16 and 0.52 / 0.39 for int8 (BENCHMARKS.md;
per-element copies, we think: viewing float32 rows as 64-bit words made XLA's
faster). The index tuples are clamped in the kernel, as for GATHER_ELEMENTS.

For each, `lax.platform_dependent` picks the kernel on CUDA GPUs only, and the
gradient is the lax path's (`on_cuda`). REVERSE_SUBSEQUENCES's kernel, on Pallas's
Mosaic GPU backend, is in `strip_kernel`.

JAX 0.11 deprecates Pallas's Triton backend (it warns when it lowers the kernel) and will
remove it; where `jax.experimental.pallas.triton` cannot be imported, the lax path serves
every platform.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dml_jax._src import indexing

_MIN_COLUMNS = 128  # narrower rows gain nothing and make tiny Triton blocks
_MAX_ROW_BYTES = 128 * 1024  # a row beyond this no longer fits in L1 with the rest
_MIN_ROW_COPY_BYTES = 256  # narrower rows gained nothing for float32 (BENCHMARKS.md)
_MAX_ROW_COPY_BYTES = 64 * 1024  # a program's block stays in registers
_ROW_COPY_BLOCK_BYTES = 4096  # rows a program copies; 4 KiB and 4 warps measured best
_STRIP_WIDTH = 32  # columns of a strip: one 128-byte line of int32 indices
_STRIP_MIN_ROWS = 8
_STRIP_ROWS = 32  # rows a program gathers; one strip's programs run side by side
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


def strips_kernel_applies(
  input_shape: tuple[int, ...], indices_shape: tuple[int, ...], dtype: np.dtype, axis: int
) -> bool:
  """Whether GATHER_ELEMENTS along an axis before the last can use the strip kernel."""
  inner = int(np.prod(input_shape[axis + 1 :], dtype=np.int64))
  return (
    _pallas_triton_available()
    and axis < len(input_shape) - 1
    and np.dtype(dtype) in _DTYPES
    and inner % _STRIP_WIDTH == 0
    and indices_shape[axis] % _STRIP_MIN_ROWS == 0
    and int(np.prod(input_shape, dtype=np.int64)) < 2**31  # int32 element offsets
  )


def gather_outer_axis(
  input: jax.Array,
  indices: jax.Array,
  axis: int,
  fallback: Callable[[jax.Array, jax.Array], jax.Array],
) -> jax.Array:
  """GATHER_ELEMENTS along an axis before the last: the strip kernel on CUDA, `fallback`
  elsewhere (raw indices, as for `gather_last_axis`)."""
  return on_cuda(functools.partial(_strips, axis=axis, interpret=False), fallback, input, indices)


def gather_last_axis(
  input: jax.Array, indices: jax.Array, fallback: Callable[[jax.Array, jax.Array], jax.Array]
) -> jax.Array:
  """GATHER_ELEMENTS along the last axis: the row kernel on CUDA, `fallback` elsewhere.

  `indices` are raw (normalized and clamped here); `fallback(input, indices)` is the lax
  path with the same semantics, used on other platforms and for the gradient.
  """
  return on_cuda(functools.partial(_rows, interpret=False), fallback, input, indices)


def row_copies_apply(
  input_shape: tuple[int, ...], batch_dims: int, tuple_size: int, dtype: np.dtype
) -> bool:
  """Whether GATHER_ND of a logical input of this shape can copy whole rows with the kernel.

  The rows are the sizes after the batch dimensions and the index tuple's; their count,
  the product of the sizes before, must fit an int32 row number.
  """
  leading = batch_dims + tuple_size
  width = int(np.prod(input_shape[leading:], dtype=np.int64))
  return (
    _pallas_triton_available()
    and np.dtype(dtype) in _DTYPES
    and _power_of_two(width)
    and _power_of_two(tuple_size)  # the kernel loads (rows, tuple size) blocks
    and _MIN_ROW_COPY_BYTES <= width * np.dtype(dtype).itemsize <= _MAX_ROW_COPY_BYTES
    and int(np.prod(input_shape[:leading], dtype=np.int64)) < 2**31
  )


def gather_rows(
  input: jax.Array,
  indices: jax.Array,
  *,
  batch_dims: int,
  fallback: Callable[[jax.Array, jax.Array], jax.Array],
) -> jax.Array:
  """GATHER_ND as whole-row copies: the row-copy kernel on CUDA, `fallback` elsewhere.

  `input` has the logical input sizes; `indices` (..., t) holds raw index tuples into its
  dimensions batch_dims .. batch_dims + t - 1 (normalized and clamped here), and its leading
  batch_dims sizes are the input's. `fallback(input, indices)` is the lax path with the same
  semantics, shaped indices.shape[:-1] + input.shape[batch_dims + t:].
  """
  kernel = functools.partial(_row_copies, batch_dims=batch_dims, interpret=False)
  return on_cuda(kernel, fallback, input, indices)


def on_cuda(kernel, fallback, input, indices):
  """`kernel(input, indices)` on CUDA GPUs, `fallback` elsewhere; the gradient is fallback's.

  Shared with `strip_kernel`'s REVERSE_SUBSEQUENCES, whose lengths take the indices' place.
  """
  kernel_or_lax = jax.custom_vjp(kernel)
  kernel_or_lax.defvjp(
    lambda x, i: (kernel(x, i), (x, i)), functools.partial(_fallback_vjp, fallback)
  )
  return lax.platform_dependent(input, indices, cuda=kernel_or_lax, default=fallback)


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


def _row_copies(
  input: jax.Array, indices: jax.Array, *, batch_dims: int, interpret: bool
) -> jax.Array:
  """The kernel: `input` viewed as a table (rows, width); each program turns `block` raw index
  tuples into row numbers and copies those rows. The indices are clamped and the row numbers
  made in the kernel: a separate XLA fusion for either cost a launch, as long as the copy's
  gain on an H200."""
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it
  from jax.experimental.pallas import triton as pltriton

  t = indices.shape[-1]
  leading = batch_dims + t
  kept = input.shape[leading:]
  width = int(np.prod(kept, dtype=np.int64))
  strides = [int(s) for s in np.cumprod((input.shape[1:leading] + (1,))[::-1])[::-1]]  # rows
  batch = indices.shape[:-1]
  inner = [int(np.prod(batch[d + 1 :], dtype=np.int64)) for d in range(batch_dims)]
  count = int(np.prod(batch, dtype=np.int64))
  row_bytes = width * np.dtype(input.dtype).itemsize
  block = _largest_power_of_two_dividing(count, max(1, _ROW_COPY_BLOCK_BYTES // row_bytes))

  def kernel(indices_ref, table_ref, out_ref):
    rows = jnp.zeros((block,), np.int32)
    for j in range(t):  # int32: every size is below 2**31
      coordinate = indexing.clamp_indices(indices_ref[:, j], input.shape[batch_dims + j])
      rows += coordinate * np.int32(strides[batch_dims + j])
    tuple_number = pl.program_id(0) * block + lax.broadcasted_iota(np.int32, (block,), 0)
    for d in range(batch_dims):  # batch coordinates follow from the tuple's position
      rows += (tuple_number // inner[d]) % batch[d] * np.int32(strides[d])
    out_ref[...] = table_ref[rows, :]

  out = pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((count, width), input.dtype),
    grid=(count // block,),
    in_specs=[
      pl.BlockSpec((block, t), lambda i: (i, 0)),
      pl.BlockSpec((int(np.prod(input.shape[:leading])), width), lambda i: (0, 0)),
    ],
    out_specs=pl.BlockSpec((block, width), lambda i: (i, 0)),
    compiler_params=None
    if interpret
    else pltriton.CompilerParams(num_warps=int(min(8, max(1, block * row_bytes // 1024)))),
    interpret=interpret,
  )(indices.reshape(count, t), input.reshape(-1, width))
  return out.reshape(batch + kept)


def _largest_power_of_two_dividing(n: int, at_most: int) -> int:
  block = 1
  while block * 2 <= at_most and n % (block * 2) == 0:
    block *= 2
  return block


def _strips(input: jax.Array, indices: jax.Array, *, axis: int, interpret: bool) -> jax.Array:
  """The kernel: the input as (outer, size, inner), cut into strips of _STRIP_WIDTH inner
  columns; each program gathers a block of rows of one strip. The grid runs a strip's blocks
  first, so the programs in flight read a few strips of the input, which L2 holds, instead of
  random rows of all of it."""
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it
  from jax.experimental.pallas import triton as pltriton

  outer = int(np.prod(input.shape[:axis], dtype=np.int64))
  size, inner = input.shape[axis], int(np.prod(input.shape[axis + 1 :], dtype=np.int64))
  count = indices.shape[axis]
  rows = _largest_power_of_two_dividing(count, _STRIP_ROWS)
  x = input.reshape(outer, size, inner)
  idx = indices.reshape(outer, count, inner)

  def kernel(x_ref, idx_ref, out_ref):
    o = pl.program_id(2)
    columns = pl.program_id(1) * _STRIP_WIDTH + lax.broadcasted_iota(
      np.int32, (rows, _STRIP_WIDTH), 1
    )
    positions = indexing.clamp_indices(idx_ref[0], size)  # (rows, width), in range
    out_ref[0] = x_ref[o, positions, columns]

  out = pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((outer, count, inner), input.dtype),
    grid=(count // rows, inner // _STRIP_WIDTH, outer),
    in_specs=[
      pl.BlockSpec((outer, size, inner), lambda r, s, o: (0, 0, 0)),
      pl.BlockSpec((1, rows, _STRIP_WIDTH), lambda r, s, o: (o, r, s)),
    ],
    out_specs=pl.BlockSpec((1, rows, _STRIP_WIDTH), lambda r, s, o: (o, r, s)),
    compiler_params=None if interpret else pltriton.CompilerParams(num_warps=4),
    interpret=interpret,
  )(x, idx)
  return out.reshape(indices.shape)
