"""SLICE and SLICE1 walks that XLA copies slowly, as a Pallas kernel (Triton backend) a row at a
time.

A walk reads `input[start + o * step]` for every output position o, each step nonzero (negative:
backwards). Where the last axis steps by 1 and nothing walks backwards, XLA's slice is at the
copy; elsewhere it is not, and falls behind torch (benchmark cases `slice1_reversed`,
`slice_columns`).

Here each program writes a run of one output row: it computes the input row its output row
reads (one multiply-add per dimension, on scalars), then loads the run's elements from that
row with one vector of column positions (a warp's loads land on neighbouring addresses, in
whatever order the walk takes them) and stores them contiguously. A row whose length is not a
multiple of the run starts its last run early, so that runs overlap instead of spilling past
the row: the overlapping elements are written twice with the same value.

`applies` decides from static shapes; `forms` runs the kernel (`ops.slice.KERNELS`) on CUDA GPUs
only, with the lax path's gradient.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import numpy as np
from jax import lax

from dml_jax._src.kernels import _triton, availability

_DATA_TYPES = frozenset(np.dtype(t) for t in ("float32", "int32", "uint32"))


@dataclasses.dataclass(frozen=True)
class WindowConfig:
  """The kernel's tuning.

  Attributes:
    run: the most elements a program writes (a power of two; a row shorter than it takes the
      largest power of two it holds).
    min_output_bytes: smaller outputs stay on XLA's slice (they fit L2, where its speed is not
      in question).
    num_warps: a program's warps.
  """

  run: int = 1024
  min_output_bytes: int = 16 * 1024 * 1024
  num_warps: int = 4


DEFAULT = WindowConfig()


def applies(
  input_shape: tuple[int, ...],
  steps: Sequence[int],
  output_shape: tuple[int, ...],
  dtype: np.dtype,
  config: WindowConfig | None = None,
) -> bool:
  """Whether a walk of these static shapes takes the kernel: 32-bit data, an output of at least
  `min_output_bytes` with rows of 32 or more, and a walk XLA copies slowly (the last axis not
  stepping by 1, or some axis walking backwards).

  Examples:
    >>> f32 = np.dtype(np.float32)
    >>> rows = (8192, 8192)
    >>> applies(rows, (-1, 1), (8191, 8191), f32) == availability.probe().pallas_triton
    True
    >>> applies(rows, (2, 1), (4096, 8192), f32)  # XLA's slice is at the copy
    False
  """
  config = DEFAULT if config is None else config
  if not input_shape:
    return False
  dtype = np.dtype(dtype)
  outputs = int(np.prod(output_shape, dtype=np.int64))
  return (
    availability.probe().pallas_triton
    and dtype in _DATA_TYPES
    and (steps[-1] != 1 or min(steps) < 0)
    and output_shape[-1] >= 32
    and outputs * dtype.itemsize >= config.min_output_bytes
    and int(np.prod(input_shape, dtype=np.int64)) < 2**31
  )


def window_rows(
  input: jax.Array,
  *,
  starts: Sequence[int],
  steps: Sequence[int],
  sizes: Sequence[int],
  config: WindowConfig | None = None,
  interpret: bool = False,
) -> jax.Array:
  """The kernel: ``out[o] = input[starts + o * steps]`` for every o of `sizes` (each walk in
  range, steps nonzero).

  With `interpret`, Pallas interprets the kernel on any backend.

  Examples:
    >>> x = np.arange(4 * 64, dtype=np.float32).reshape(4, 64)
    >>> out = window_rows(x, starts=(3, 63), steps=(-2, -1), sizes=(2, 64), interpret=True)
    >>> bool((out == x[3::-2, ::-1]).all())
    True
  """
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it
  from jax.experimental.pallas import triton as pltriton

  config = DEFAULT if config is None else config
  *lead, width = sizes
  in_width = input.shape[-1]
  out_rows = int(np.prod(lead, dtype=np.int64))
  in_rows = int(np.prod(input.shape[:-1], dtype=np.int64))
  runs = _triton.Runs.of(width, config.run)
  # Input rows between neighbours along each leading dimension.
  row_strides = [int(np.prod(input.shape[d + 1 : -1], dtype=np.int64)) for d in range(len(lead))]

  def kernel(x_ref, out_ref):
    program = pl.program_id(0)
    row, k = program // runs.count, program % runs.count
    source: jax.Array | np.int32 = np.int32(0)
    rest = row
    for d in reversed(range(len(lead))):
      position = rest % lead[d]
      rest = rest // lead[d]
      source = source + (starts[d] + position * steps[d]) * row_strides[d]
    first = runs.start(k)
    columns = starts[-1] + (first + lax.iota(np.int32, runs.length)) * steps[-1]
    out_ref[row, pl.ds(first, runs.length)] = x_ref[source, columns]

  out = pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((out_rows, width), input.dtype),
    grid=(out_rows * runs.count,),
    in_specs=[pl.BlockSpec((in_rows, in_width), lambda p: (0, 0))],
    out_specs=pl.BlockSpec((out_rows, width), lambda p: (0, 0)),
    compiler_params=None if interpret else pltriton.CompilerParams(num_warps=config.num_warps),
    interpret=interpret,
  )(input.reshape(in_rows, in_width))
  return out.reshape(tuple(sizes))
