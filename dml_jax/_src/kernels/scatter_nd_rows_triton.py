"""SCATTER_ND of whole rows as a pull, a Pallas kernel (Triton backend): every output row is
read once, from its winning update or from the input.

XLA and torch scatter rows in two passes: the input copied into the output, then the updates
written over it, so a replaced row is read and written twice. Here a winner map comes first:
one unsigned integer a row of the indexed table, 1 + the position of the last kept update
aimed at it (a scatter-max, which does not depend on the order it runs in) or 0 where none
lands, 4 MiB for a table of 2**20 rows. Then each program takes a block of output rows and
loads each row, with masked loads, from the update its map names or from the input: the
input's replaced rows are never read, the output written once, ahead of `.at[].set` and
torch's index_copy (benchmark case `scatter_nd`). The policy is the library's: the last
update in row-major order wins, an update with a coordinate out of range is dropped.

`applies` decides from static shapes; `forms` runs the kernel (`ops.scatter_nd.KERNELS`) on CUDA
GPUs only, with the lax path's gradient.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dml_jax._src.kernels import _triton, availability


@dataclasses.dataclass(frozen=True)
class PullConfig:
  """The kernel's tuning.

  Attributes:
    min_row_bytes: the narrowest row that takes the kernel (a row's load should fill sectors).
    max_row_bytes: the widest row: a program's block stays in registers.
    block_bytes: the bytes of rows a program writes, at most; 32 KiB and 8 warps measured
      best on an H100 (0.743 ms; 8 rows and 4 warps 0.753, 16 rows 0.748 to 0.749).
    num_warps: a program's warps.

  Examples:
    >>> PullConfig().block_rows(1 << 20, 1024)
    32
  """

  min_row_bytes: int = 256
  max_row_bytes: int = 64 * 1024
  block_bytes: int = 32 * 1024
  num_warps: int = 8

  def block_rows(self, rows: int, row_bytes: int) -> int:
    """The rows a program writes: a power of two dividing `rows`, within `block_bytes`."""
    return _triton.largest_power_of_two_dividing(rows, max(1, self.block_bytes // row_bytes))


DEFAULT = PullConfig()


def applies(
  rows: int, width: int, count: int, dtype: np.dtype, config: PullConfig | None = None
) -> bool:
  """Whether SCATTER_ND of `count` updates into a table of `rows` rows of `width` elements can
  use the kernel: a data type the Triton kernels move, rows of a power-of-two width between
  `min_row_bytes` and `max_row_bytes`, input and updates below 2**31 elements (Triton's 32-bit
  offsets).

  Examples:
    >>> f32 = np.dtype(np.float32)
    >>> applies(1 << 20, 256, 65536, f32) == availability.probe().pallas_triton
    True
    >>> applies(1 << 20, 16, 65536, f32)  # 64-byte rows
    False
  """
  config = DEFAULT if config is None else config
  row_bytes = width * np.dtype(dtype).itemsize
  return (
    availability.probe().pallas_triton
    and np.dtype(dtype) in _triton.DTYPES
    and _triton.power_of_two(width)
    and config.min_row_bytes <= row_bytes <= config.max_row_bytes
    and max(rows, count) * width < 2**31
  )


def winner_map(target: jax.Array, rows: int) -> jax.Array:
  """Per table row, 1 + the row-major position of the last update aimed at it; 0 where none.

  `target` holds each update's row, `rows` (or more) where the update is dropped.

  Examples:
    >>> winner_map(np.array([2, 0, 2, 5], np.int32), 4).tolist()
    [2, 0, 3, 0]
  """
  position = lax.iota(np.uint32, target.shape[0]) + np.uint32(1)
  empty = jnp.zeros((rows,), np.uint32)
  return empty.at[target].max(position, mode="drop", indices_are_sorted=False)


def pull_rows(
  input: jax.Array,
  target: jax.Array,
  updates: jax.Array,
  *,
  config: PullConfig | None = None,
  interpret: bool = False,
) -> jax.Array:
  """The kernel: `input` (rows, width) with row `target[p]` replaced by `updates[p]`, the last
  update winning, updates whose target is `rows` or more dropped.

  Examples:
    >>> table = np.zeros((4, 64), np.float32)
    >>> new = np.arange(3 * 64, dtype=np.float32).reshape(3, 64)
    >>> out = pull_rows(table, np.array([3, 9, 3], np.int32), new, interpret=True)
    >>> out[:, 0].tolist()
    [0.0, 0.0, 0.0, 128.0]
  """
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it
  from jax.experimental.pallas import triton as pltriton

  config = DEFAULT if config is None else config
  rows, width = input.shape
  block = config.block_rows(rows, width * np.dtype(input.dtype).itemsize)
  winners = winner_map(target, rows)

  def kernel(winners_ref, input_ref, updates_ref, out_ref):
    source = winners_ref[...].astype(np.int32) - 1  # positions are below 2**31
    pulled = jnp.broadcast_to((source >= 0)[:, None], (block, width))
    own = pl.program_id(0) * block + lax.broadcasted_iota(np.int32, (block, 1), 0)
    column = lax.broadcasted_iota(np.int32, (1, width), 1)  # whole rows, as index arrays
    kept = pltriton.load(input_ref.at[own, column], mask=~pulled, other=0)
    new = pltriton.load(
      updates_ref.at[lax.max(source, np.int32(0))[:, None], column], mask=pulled, other=0
    )
    out_ref[...] = jnp.where(pulled, new, kept)

  return pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct(input.shape, input.dtype),
    grid=(rows // block,),
    in_specs=[
      pl.BlockSpec((block,), lambda k: (k,)),
      pl.BlockSpec(input.shape, lambda k: (0, 0)),
      pl.BlockSpec(updates.shape, lambda k: (0, 0)),
    ],
    out_specs=pl.BlockSpec((block, width), lambda k: (k, 0)),
    compiler_params=None if interpret else pltriton.CompilerParams(num_warps=config.num_warps),
    interpret=interpret,
  )(winners, input, updates)
