"""SPACE_TO_DEPTH(1) as a Pallas kernel (Triton backend) that splits each input row once.

SPACE_TO_DEPTH moves `in[n, c, h*b + i, w*b + j]` to channel `(i*b + j)*C + c` (order
DEPTH_COLUMN_ROW) or `c*b*b + i*b + j` (COLUMN_ROW_DEPTH) of output row `h`. XLA's transpose
copies the first order well below the copy (benchmark case `space_to_depth`). Each
input row of width W holds b output rows of W / b, interleaved: column `w*b + j` belongs to
the row of block column j.

Here each program takes a run of one input row: for each block column j in turn it loads the
run's elements of that column (one vector of positions `w*b + j`), and stores them contiguously
to their output row. The b loads of a run touch the same sectors one after the other, so DRAM
serves them once and L1 or L2 the rest. A row whose output length is not a multiple of the run
starts its last run early: runs overlap, and the overlap is written twice with the same value.

`applies` decides from static shapes; `forms` runs the kernel (`ops.depth_space.KERNELS`) on CUDA
GPUs only, with the lax path's gradient.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
from jax import lax

from dml_jax._src.kernels import _triton, availability

_DATA_TYPES = frozenset(np.dtype(t) for t in ("float32", "int32", "uint32"))


@dataclasses.dataclass(frozen=True)
class RowSplitConfig:
  """The kernel's tuning.

  Attributes:
    run: the most output elements a program writes per block column (a power of two; output
      rows shorter than it take the largest power of two they hold).
    min_output_bytes: smaller tensors stay on XLA's transpose (they fit L2).
    num_warps: a program's warps.
  """

  run: int = 1024
  min_output_bytes: int = 16 * 1024 * 1024
  num_warps: int = 4


DEFAULT = RowSplitConfig()


def applies(
  input_shape: tuple[int, ...],
  block_size: int,
  dtype: np.dtype,
  config: RowSplitConfig | None = None,
) -> bool:
  """Whether SPACE_TO_DEPTH(1) of this NCHW input can use the kernel: 32-bit data, at least
  `min_output_bytes`, output rows (W / BlockSize) of 32 or more.

  Examples:
    >>> f32 = np.dtype(np.float32)
    >>> applies((16, 64, 512, 512), 2, f32) == availability.probe().pallas_triton
    True
    >>> applies((16, 64, 512, 512), 2, np.dtype(np.float16))
    False
  """
  config = DEFAULT if config is None else config
  dtype = np.dtype(dtype)
  elements = int(np.prod(input_shape, dtype=np.int64))
  return (
    availability.probe().pallas_triton
    and dtype in _DATA_TYPES
    and len(input_shape) == 4
    and input_shape[-1] // block_size >= 32
    and elements * dtype.itemsize >= config.min_output_bytes
    and elements < 2**31
  )


def space_to_depth_rows(
  input: jax.Array,
  *,
  block_size: int,
  column_row_depth: bool,
  config: RowSplitConfig | None = None,
  interpret: bool = False,
) -> jax.Array:
  """The kernel: SPACE_TO_DEPTH of an NCHW `input` with `block_size`, channels packed as
  COLUMN_ROW_DEPTH (c*b*b + i*b + j) or else DEPTH_COLUMN_ROW ((i*b + j)*C + c).

  With `interpret`, Pallas interprets the kernel on any backend.

  Examples:
    >>> x = np.arange(2 * 4 * 64, dtype=np.float32).reshape(1, 2, 4, 64)
    >>> out = space_to_depth_rows(x, block_size=2, column_row_depth=False, interpret=True)
    >>> out.shape, float(out[0, 2, 0, 0]), float(out[0, 5, 1, 3])  # (i, j, c) = (0, 1, 0), (1, 0, 1)
    ((1, 8, 2, 32), 1.0, 454.0)
  """
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it
  from jax.experimental.pallas import triton as pltriton

  config = DEFAULT if config is None else config
  b = block_size
  n, c, height, width = input.shape
  h, w = height // b, width // b
  runs = _triton.Runs.of(w, config.run)

  def kernel(x_ref, out_ref):
    program = pl.program_id(0)
    row, k = program // runs.count, program % runs.count  # row: (n, c, h * b + i) of the input
    image, rest = row // (c * height), row % (c * height)
    channel, y = rest // height, rest % height
    i, out_h = y % b, y // b
    first = runs.start(k)
    positions = (first + lax.iota(np.int32, runs.length)) * b
    for j in range(b):
      if column_row_depth:
        depth = channel * (b * b) + i * b + j
      else:
        depth = (i * b + j) * c + channel
      out_row = (image * (c * b * b) + depth) * h + out_h
      out_ref[out_row, pl.ds(first, runs.length)] = x_ref[row, positions + j]

  out = pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((n * c * b * b * h, w), input.dtype),
    grid=(n * c * height * runs.count,),
    in_specs=[pl.BlockSpec((n * c * height, width), lambda p: (0, 0))],
    out_specs=pl.BlockSpec((n * c * b * b * h, w), lambda p: (0, 0)),
    compiler_params=None if interpret else pltriton.CompilerParams(num_warps=config.num_warps),
    interpret=interpret,
  )(input.reshape(n * c * height, width))
  return out.reshape(n, c * b * b, h, w)
