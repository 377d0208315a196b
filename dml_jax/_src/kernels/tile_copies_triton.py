"""TILE with one repeated dimension, as a Pallas kernel (Triton backend) that reads the input once.

XLA lowers TILE to one loop over the output that reads, for each output element, its input
element: an input larger than the GPU's L2 is read from DRAM once per copy (benchmark case
`tile_rows`).
Here the input, viewed as (outer, inner) around the repeated dimension, is copied in blocks of
`inner`: consecutive programs read the same block (from DRAM once, then from L2) and each
writes one of its copies.

`applies` decides from static shapes; `forms` runs the kernel (`ops.tile.KERNELS`) on CUDA GPUs
only, with the lax path's gradient.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from dml_jax._src.kernels import _triton, availability


@dataclasses.dataclass(frozen=True)
class CopiesConfig:
  """The kernel's tuning.

  Attributes:
    min_inner_bytes: the shortest run (the repeated dimension's slice) that takes the kernel;
      XLA's loop re-reads short runs from L1 or L2 (TILE of (4096, 4096) by (1, 4), 16 KiB
      runs, is at 0.95 of the copy that way).
    min_input_bytes: inputs smaller than this stay in L2 between copies: XLA's loop is at the
      copy there.
    block_bytes: the bytes a program copies (8 KiB, 4 warps measured best on an H100).
    num_warps: a program's warps.
  """

  min_inner_bytes: int = 64 * 1024
  min_input_bytes: int = 32 * 1024 * 1024
  block_bytes: int = 8 * 1024
  num_warps: int = 4


DEFAULT = CopiesConfig()


def repeated_dimension(repeats: tuple[int, ...]) -> int | None:
  """The one dimension whose count is above 1, or None (none, or several).

  Examples:
    >>> repeated_dimension((4, 1)), repeated_dimension((1, 1)), repeated_dimension((2, 2))
    (0, None, None)
  """
  above = [d for d, r in enumerate(repeats) if r > 1]
  return above[0] if len(above) == 1 else None


def applies(
  shape: tuple[int, ...],
  repeats: tuple[int, ...],
  dtype: np.dtype,
  config: CopiesConfig | None = None,
) -> bool:
  """Whether TILE of this input can take the kernel: one repeated dimension, long runs, an
  input larger than L2, and an output Triton addresses with 32-bit offsets.

  Examples:
    >>> f32 = np.dtype(np.float32)
    >>> applies((4096, 4096), (4, 1), f32) == availability.probe().pallas_triton
    True
    >>> applies((4096, 4096), (4, 4), f32)  # two repeated dimensions: XLA's loop
    False
  """
  config = DEFAULT if config is None else config
  d = repeated_dimension(repeats)
  if d is None:
    return False
  itemsize = np.dtype(dtype).itemsize
  inner = int(np.prod(shape[d:], dtype=np.int64))
  total = int(np.prod(shape, dtype=np.int64))
  block = _triton.largest_power_of_two_dividing(inner, config.block_bytes // itemsize)
  return (
    availability.probe().pallas_triton
    and np.dtype(dtype) in _triton.DTYPES
    and inner * itemsize >= config.min_inner_bytes
    and total * itemsize >= config.min_input_bytes
    and block * itemsize >= 1024
    and total * repeats[d] < 2**31
  )


def tile_copies(
  input: jax.Array,
  repeats: tuple[int, ...],
  *,
  config: CopiesConfig | None = None,
  interpret: bool = False,
) -> jax.Array:
  """The kernel: TILE of `input` by `repeats`, whose counts are 1 but on one dimension.

  With `interpret`, Pallas interprets the kernel on any backend.

  Examples:
    >>> x = np.arange(2 * 256, dtype=np.float32).reshape(2, 256)
    >>> out = tile_copies(x, (3, 1), interpret=True)
    >>> out.shape, bool((out == np.tile(x, (3, 1))).all())
    ((6, 256), True)
  """
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it
  from jax.experimental.pallas import triton as pltriton

  config = DEFAULT if config is None else config
  d = repeated_dimension(repeats)
  assert d is not None, repeats
  copies = repeats[d]
  outer = int(np.prod(input.shape[:d], dtype=np.int64))
  inner = int(np.prod(input.shape[d:], dtype=np.int64))
  block = _triton.largest_power_of_two_dividing(
    inner, max(1, config.block_bytes // np.dtype(input.dtype).itemsize)
  )

  def kernel(input_ref, out_ref):
    out_ref[...] = input_ref[...]

  out = pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((outer, copies, inner), input.dtype),
    # The first grid dimension varies fastest (CUDA's x): the copies of one input block come
    # from consecutive programs, which read it from DRAM once and then from L2.
    grid=(copies, inner // block, outer),
    in_specs=[pl.BlockSpec((None, block), lambda c, j, a: (a, j))],
    out_specs=pl.BlockSpec((None, None, block), lambda c, j, a: (a, c, j)),
    compiler_params=None if interpret else pltriton.CompilerParams(num_warps=config.num_warps),
    interpret=interpret,
  )(input.reshape(outer, inner))
  sizes = tuple(s * r for s, r in zip(input.shape, repeats, strict=True))
  return out.reshape(sizes)
