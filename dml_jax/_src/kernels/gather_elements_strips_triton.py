"""GATHER_ELEMENTS along an axis before the last as a Pallas kernel (Triton backend), in strips.

XLA's gather walks the output row by row, so the reads in flight land on random rows of the
whole input and cost DRAM a sector per element. Here the input is seen as (outer, size, inner)
and cut into strips of a few inner columns; each program gathers a block of rows of one strip,
and the grid runs a strip's blocks first, so the programs in flight read a few strips of the
input, which L2 holds, instead of random rows of all of it (about three times faster: benchmark
case `gather_elements_axis0`). The indices are clamped in the kernel, with the lax path's
arithmetic.

`applies` decides from static shapes; `forms` runs the kernel (`ops.gather_elements.KERNELS`) on
CUDA GPUs only, with the lax path's gradient.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
from jax import lax

from dml_jax._src import indexing
from dml_jax._src.kernels import _triton, availability


@dataclasses.dataclass(frozen=True)
class StripsConfig:
  """The strip kernel's tuning.

  Attributes:
    width: columns of a strip (32: one 128-byte line of int32 indices).
    min_rows: index rows must be a multiple of this (the smallest block of rows).
    rows: rows a program gathers, at most (the largest power of two dividing the index rows);
      one strip's programs run side by side.
    warps: a program's warps.
  """

  width: int = 32
  min_rows: int = 8
  rows: int = 32
  warps: int = 4


DEFAULT = StripsConfig()


def applies(
  input_shape: tuple[int, ...],
  indices_shape: tuple[int, ...],
  dtype: np.dtype,
  axis: int,
  config: StripsConfig | None = None,
) -> bool:
  """Whether GATHER_ELEMENTS along an axis before the last can use the strip kernel.

  Examples:
    >>> f32 = np.dtype(np.float32)
    >>> applies((64, 64), (64, 64), f32, 0) == availability.probe().pallas_triton
    True
    >>> applies((64, 48), (64, 48), f32, 0)  # 48 columns: no whole strips
    False
  """
  config = DEFAULT if config is None else config
  inner = int(np.prod(input_shape[axis + 1 :], dtype=np.int64))
  return (
    availability.probe().pallas_triton
    and axis < len(input_shape) - 1
    and np.dtype(dtype) in _triton.DTYPES
    and inner % config.width == 0
    and indices_shape[axis] % config.min_rows == 0
    and int(np.prod(input_shape, dtype=np.int64)) < 2**31  # int32 element offsets
  )


def gather_in_strips(
  input: jax.Array,
  indices: jax.Array,
  *,
  axis: int,
  config: StripsConfig | None = None,
  interpret: bool = False,
) -> jax.Array:
  """The kernel: GATHER_ELEMENTS along `axis`, a block of rows of a strip a program.

  `indices` are raw: normalized and clamped here. With `interpret`, Pallas interprets the
  kernel on any backend (the tests' way to run it).

  Examples:
    >>> x = np.arange(64, dtype=np.int32).reshape(2, 32)
    >>> i = np.eye(8, 32, dtype=np.int32)  # index row r reads input row 1 at column r
    >>> out = gather_in_strips(x, i, axis=0, interpret=True)
    >>> out[0, :3].tolist(), out[1, :3].tolist()
    ([32, 1, 2], [0, 33, 2])
  """
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it
  from jax.experimental.pallas import triton as pltriton

  config = DEFAULT if config is None else config
  width = config.width
  outer = int(np.prod(input.shape[:axis], dtype=np.int64))
  size, inner = input.shape[axis], int(np.prod(input.shape[axis + 1 :], dtype=np.int64))
  count = indices.shape[axis]
  rows = _triton.largest_power_of_two_dividing(count, config.rows)
  x = input.reshape(outer, size, inner)
  idx = indices.reshape(outer, count, inner)

  def kernel(x_ref, idx_ref, out_ref):
    o = pl.program_id(2)
    columns = pl.program_id(1) * width + lax.broadcasted_iota(np.int32, (rows, width), 1)
    positions = indexing.clamp_indices(idx_ref[0], size)  # (rows, width), in range
    out_ref[0] = x_ref[o, positions, columns]

  out = pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((outer, count, inner), input.dtype),
    grid=(count // rows, inner // width, outer),
    in_specs=[
      pl.BlockSpec((outer, size, inner), lambda r, s, o: (0, 0, 0)),
      pl.BlockSpec((1, rows, width), lambda r, s, o: (o, r, s)),
    ],
    out_specs=pl.BlockSpec((1, rows, width), lambda r, s, o: (o, r, s)),
    compiler_params=None if interpret else pltriton.CompilerParams(num_warps=config.warps),
    interpret=interpret,
  )(x, idx)
  return out.reshape(indices.shape)
