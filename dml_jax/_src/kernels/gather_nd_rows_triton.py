"""GATHER_ND whose index tuples leave whole rows to copy, as a Pallas kernel (Triton backend).

The rows are the trailing sizes after the batch dimensions and the index tuple's (256 bytes to
64 KiB); each program turns a block of raw index tuples into row numbers and copies those rows
whole. XLA's gather copies rows an element at a time, we think (viewing float32 rows as 64-bit
words made it faster), so it falls behind for narrow types, where the kernel keeps its speed
for every type (benchmark cases `gather_nd`, `gather_nd1`). The index tuples are clamped and the row numbers made in the
kernel, with the lax path's arithmetic: a separate XLA fusion for either cost a launch, as long
as the copy's gain.

`applies` decides from static shapes; `forms` runs the kernel (`ops.gather_nd.KERNELS`) on CUDA GPUs
only, with the lax path's gradient.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dml_jax._src import indexing
from dml_jax._src.kernels import _triton, availability


@dataclasses.dataclass(frozen=True)
class RowCopyConfig:
  """The row-copy kernel's tuning.

  Attributes:
    min_row_bytes: the narrowest row that takes the kernel (narrower rows gained nothing for
      float32: `run.py --sweep gather_nd_rows_triton`, case gather_nd).
    max_row_bytes: the widest row: a program's block stays in registers.
    block_bytes: the bytes of rows a program copies, at most (4 KiB and 4 warps measured best).
    max_warps, bytes_per_warp: a program's warps, one per `bytes_per_warp` of its block, within
      [1, max_warps].

  Examples:
    >>> RowCopyConfig().warps(4096)
    4
  """

  min_row_bytes: int = 256
  max_row_bytes: int = 64 * 1024
  block_bytes: int = 4096
  max_warps: int = 8
  bytes_per_warp: int = 1024

  def warps(self, block_bytes: int) -> int:
    return int(min(self.max_warps, max(1, block_bytes // self.bytes_per_warp)))


DEFAULT = RowCopyConfig()


def applies(
  input_shape: tuple[int, ...],
  batch_dims: int,
  tuple_size: int,
  dtype: np.dtype,
  config: RowCopyConfig | None = None,
) -> bool:
  """Whether GATHER_ND of a logical input of this shape can copy whole rows with the kernel.

  The rows are the sizes after the batch dimensions and the index tuple's. Triton addresses the
  table with 32-bit offsets (row number times width), so the whole input must hold fewer than
  2**31 elements; larger inputs take XLA's gather.

  Examples:
    >>> f32 = np.dtype(np.float32)
    >>> applies((1024, 1024, 256), 0, 2, f32) == availability.probe().pallas_triton
    True
    >>> applies((8, 16, 32), 0, 2, f32)  # 128-byte rows: below the measured gain
    False
  """
  config = DEFAULT if config is None else config
  leading = batch_dims + tuple_size
  width = int(np.prod(input_shape[leading:], dtype=np.int64))
  return (
    availability.probe().pallas_triton
    and np.dtype(dtype) in _triton.DTYPES
    and _triton.power_of_two(width)
    and _triton.power_of_two(tuple_size)  # the kernel loads (rows, tuple size) blocks
    and config.min_row_bytes <= width * np.dtype(dtype).itemsize <= config.max_row_bytes
    and int(np.prod(input_shape, dtype=np.int64)) < 2**31
  )


def copy_rows(
  input: jax.Array,
  indices: jax.Array,
  *,
  batch_dims: int,
  config: RowCopyConfig | None = None,
  interpret: bool = False,
) -> jax.Array:
  """The kernel: `input` viewed as a table (rows, width), whose rows the index tuples name.

  `input` has the logical input sizes; `indices` (..., t) holds raw index tuples into its
  dimensions batch_dims .. batch_dims + t - 1 (normalized and clamped here), and its leading
  batch_dims sizes are the input's. The output is shaped indices.shape[:-1] +
  input.shape[batch_dims + t:]. With `interpret`, Pallas interprets the kernel on any backend.

  Examples:
    >>> table = np.arange(3 * 64, dtype=np.float32).reshape(3, 64)
    >>> out = copy_rows(table, np.array([[2], [-3], [7]], np.int32), batch_dims=0, interpret=True)
    >>> out[:, 0].tolist()
    [128.0, 0.0, 128.0]
  """
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it
  from jax.experimental.pallas import triton as pltriton

  config = DEFAULT if config is None else config
  t = indices.shape[-1]
  leading = batch_dims + t
  kept = input.shape[leading:]
  width = int(np.prod(kept, dtype=np.int64))
  strides = [int(s) for s in np.cumprod((input.shape[1:leading] + (1,))[::-1])[::-1]]  # rows
  batch = indices.shape[:-1]
  inner = [int(np.prod(batch[d + 1 :], dtype=np.int64)) for d in range(batch_dims)]
  count = int(np.prod(batch, dtype=np.int64))
  row_bytes = width * np.dtype(input.dtype).itemsize
  block = _triton.largest_power_of_two_dividing(count, max(1, config.block_bytes // row_bytes))

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
    else pltriton.CompilerParams(num_warps=config.warps(block * row_bytes)),
    interpret=interpret,
  )(indices.reshape(count, t), input.reshape(-1, width))
  return out.reshape(batch + kept)
