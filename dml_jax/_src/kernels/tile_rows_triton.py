"""TILE whose repeats are on the last two dimensions, as a Pallas kernel (Triton backend): each
program loads a block of one input row once and stores every copy of it.

XLA lowers TILE to one loop over the output that loads, for each output element, its input
element. For TILE of (1024, 1024) float32 by (4, 4) (a 4 MiB input that stays in L2, a 64 MiB
output) that loop stays below the copy's bandwidth on an H200 (benchmark case `tile_both`).
Here the input is viewed as (outer, rows, width), with copies along rows and
width (`repeats[-2]`, `repeats[-1]`); a program loads a block of up to `max_block_bytes` of one
row and stores it at each of its copies with evict-first stores (the output is not read again),
at the copy (`tile_probe`, a probe at commit 04e086b).

`applies` decides from static shapes; `forms` runs the kernel (`ops.tile.KERNELS`) on CUDA GPUs
only, with the lax path's gradient.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import numpy as np
from jax import lax

from dml_jax._src.kernels import _triton, availability


@dataclasses.dataclass(frozen=True)
class RowCopiesConfig:
  """The kernel's tuning.

  Attributes:
    min_output_bytes: smaller outputs take XLA's loop, which writes them in a few microseconds
      and fuses with the operations around it.
    min_block_bytes: the narrowest block of a row a program moves (a power of two dividing the
      row): shorter stores waste the sectors they touch.
    max_block_bytes: the widest block (a program holds it in registers).
    max_copies: the most copies a program stores (`repeats[-2] * repeats[-1]`; the stores are
      unrolled).
    num_warps: a program's warps.
    eviction_policy: the stores' cache hint: "evict_first" stored 1.04 of the copy on an H200,
      plain stores 0.97 (`tile_probe`, a probe at commit 04e086b).
  """

  min_output_bytes: int = 16 * 1024 * 1024
  min_block_bytes: int = 1024
  max_block_bytes: int = 16 * 1024
  max_copies: int = 64
  num_warps: int = 4
  eviction_policy: str | None = "evict_first"

  def block(self, width: int, itemsize: int) -> int:
    """The elements of a row a program moves: a power of two dividing `width`."""
    return _triton.largest_power_of_two_dividing(width, max(1, self.max_block_bytes // itemsize))


DEFAULT = RowCopiesConfig()


def view(shape: tuple[int, ...], repeats: tuple[int, ...]) -> tuple[int, int, int] | None:
  """The input as (outer, rows, width) when only its last two dimensions repeat, else None.

  Examples:
    >>> view((2, 3, 5, 7), (1, 1, 4, 2)), view((5, 7), (1, 3)), view((6,), (4,))
    ((6, 5, 7), (1, 5, 7), (1, 1, 6))
    >>> view((2, 5, 7), (2, 1, 1)) is None
    True
  """
  if any(r != 1 for r in repeats[:-2]):
    return None
  if len(shape) == 1:
    return 1, 1, shape[0]
  return math.prod(shape[:-2]), shape[-2], shape[-1]


def applies(
  shape: tuple[int, ...],
  repeats: tuple[int, ...],
  dtype: np.dtype,
  config: RowCopiesConfig | None = None,
) -> bool:
  """Whether TILE of this input can take the kernel: repeats on the last two dimensions only,
  the rows repeated (where only the last dimension repeats, XLA's loop reads each input row
  from L1 and was level or faster: 114.6 against 117.4 us for (4096, 4096) by (1, 4) on an
  H100), at most `max_copies` copies, a data type the Triton kernels move, an output of at
  least `min_output_bytes` and fewer than 2**31 elements, blocks of at least
  `min_block_bytes`.

  Examples:
    >>> f32 = np.dtype(np.float32)
    >>> applies((1024, 1024), (4, 4), f32) == availability.probe().pallas_triton
    True
    >>> applies((1024, 1000), (4, 4), f32)  # blocks of 8 elements
    False
    >>> applies((1024, 4096), (1, 4), f32)  # only the last dimension repeats
    False
  """
  config = DEFAULT if config is None else config
  shape_view = view(shape, repeats)
  if shape_view is None:
    return False
  itemsize = np.dtype(dtype).itemsize
  copies = math.prod(repeats[-2:])
  total = math.prod(shape) * math.prod(repeats)
  return (
    availability.probe().pallas_triton
    and np.dtype(dtype) in _triton.DTYPES
    and len(shape) >= 2
    and repeats[-2] > 1
    and copies <= config.max_copies
    and total * itemsize >= config.min_output_bytes
    and total < 2**31
    and config.block(shape_view[2], itemsize) * itemsize >= config.min_block_bytes
  )


def tile_rows(
  input: jax.Array,
  repeats: tuple[int, ...],
  *,
  config: RowCopiesConfig | None = None,
  interpret: bool = False,
) -> jax.Array:
  """The kernel: TILE of `input` by `repeats`, whose counts are 1 but on the last two
  dimensions. With `interpret`, Pallas interprets the kernel on any backend.

  Examples:
    >>> x = np.arange(3 * 512, dtype=np.float32).reshape(3, 512)
    >>> out = tile_rows(x, (2, 3), interpret=True)
    >>> out.shape, bool((out == np.tile(x, (2, 3))).all())
    ((6, 1536), True)
  """
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it
  from jax.experimental.pallas import triton as pltriton

  config = DEFAULT if config is None else config
  shape_view = view(input.shape, repeats)
  assert shape_view is not None, repeats
  outer, rows, width = shape_view
  down, across = (1, repeats[0]) if input.ndim == 1 else repeats[-2:]
  block = config.block(width, np.dtype(input.dtype).itemsize)
  blocks = width // block

  store = functools.partial(
    _triton.store, eviction_policy=config.eviction_policy, interpret=interpret
  )

  def kernel(input_ref, out_ref):
    program = pl.program_id(0)  # one grid dimension over rows and their blocks
    j, row = program % blocks, program // blocks  # row: of the (outer * rows) input rows
    o, r = row // rows, row % rows
    column = j * block + lax.broadcasted_iota(np.int32, (1, block), 1)
    at = lax.broadcast(row, (1, 1))
    value = input_ref[at, column]
    for a in range(down):
      target = lax.broadcast((o * down + a) * rows + r, (1, 1))
      for c in range(across):
        store(out_ref.at[target, c * width + column], value)

  out = pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((outer * down * rows, across * width), input.dtype),
    grid=(outer * rows * blocks,),
    in_specs=[pl.BlockSpec((outer * rows, width), lambda p: (0, 0))],
    out_specs=pl.BlockSpec((outer * down * rows, across * width), lambda p: (0, 0)),
    compiler_params=None if interpret else pltriton.CompilerParams(num_warps=config.num_warps),
    interpret=interpret,
  )(input.reshape(outer * rows, width))
  sizes = tuple(s * n for s, n in zip(input.shape, repeats, strict=True))
  return out.reshape(sizes)
