"""GATHER_ELEMENTS along the last axis as a Pallas kernel (Triton backend): a program a row.

XLA's gather spreads one row's outputs over many thread blocks, each fetching the row's cache
lines again. Here one program owns a whole row: its random reads within the row hit that SM's
L1 after the first touch, which brings the gather close to a device copy's speed where XLA's
stays far below it (benchmark case `gather_elements_axis1`). The indices are normalized and clamped
inside the kernel, with the same arithmetic as the lax path (`indexing.clamp_indices`), so both
give the same bits.

`applies` decides from static shapes; `forms` runs the kernel (`ops.gather_elements.KERNELS`) on
CUDA GPUs only, with the lax path's gradient.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from dml_jax._src import indexing
from dml_jax._src.kernels import _triton, availability


@dataclasses.dataclass(frozen=True)
class RowsConfig:
  """The row kernel's tuning.

  Attributes:
    min_columns: the narrowest index row that takes the kernel (narrower rows gain nothing and
      make tiny Triton blocks).
    max_row_bytes: the widest input row: beyond it a row no longer fits in L1 with the rest.
    min_warps, max_warps, columns_per_warp: a program's warps, one per `columns_per_warp`
      index columns, within [min_warps, max_warps].

  Examples:
    >>> RowsConfig().warps(8192)
    16
  """

  min_columns: int = 128
  max_row_bytes: int = 128 * 1024
  min_warps: int = 4
  max_warps: int = 16
  columns_per_warp: int = 512

  def warps(self, columns: int) -> int:
    return int(min(self.max_warps, max(self.min_warps, columns // self.columns_per_warp)))


DEFAULT = RowsConfig()


def applies(
  input_shape: tuple[int, ...],
  indices_shape: tuple[int, ...],
  dtype: np.dtype,
  axis: int,
  config: RowsConfig | None = None,
) -> bool:
  """Whether GATHER_ELEMENTS of these static shapes can use the row kernel.

  Examples:
    >>> f32 = np.dtype(np.float32)
    >>> applies((8, 8192), (8, 8192), f32, 1) == availability.probe().pallas_triton
    True
    >>> applies((8, 8192), (8, 8192), f32, 0)  # not the last axis
    False
  """
  config = DEFAULT if config is None else config
  columns = indices_shape[-1]
  return (
    availability.probe().pallas_triton
    and axis == len(input_shape) - 1
    and np.dtype(dtype) in _triton.DTYPES
    and _triton.power_of_two(columns)
    and columns >= config.min_columns
    and input_shape[-1] * np.dtype(dtype).itemsize <= config.max_row_bytes  # int32 positions
  )


def gather_along_last_axis(
  input: jax.Array,
  indices: jax.Array,
  *,
  config: RowsConfig | None = None,
  interpret: bool = False,
) -> jax.Array:
  """The kernel: rows of `indices` (collapsed leading dims) against rows of `input`.

  `indices` are raw: normalized and clamped here. With `interpret`, Pallas interprets the
  kernel on any backend (the tests' way to run it).

  Examples:
    >>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> i = np.tile(np.array([2, -1, 0, 9], np.int32), (2, 1))
    >>> gather_along_last_axis(x, i, interpret=True)
    Array([[2., 2., 0., 2.],
           [5., 5., 3., 5.]], dtype=float32)
  """
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it
  from jax.experimental.pallas import triton as pltriton

  config = DEFAULT if config is None else config
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
    compiler_params=None if interpret else pltriton.CompilerParams(num_warps=config.warps(columns)),
    interpret=interpret,
  )(x, idx)
  return out.reshape(indices.shape)
