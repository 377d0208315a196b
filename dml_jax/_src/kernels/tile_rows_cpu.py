"""TILE on the CPU as a native kernel: every output row written from its input row without
reading the destination first (non-temporal stores, or `rep movsb` where the call fits the
cache: `native_cpu.stores_for`), on the calling thread and XLA's intra-op pool.

XLA:CPU writes TILE's output one element an iteration, through the cache; whole rows stored
past it are faster (benchmark case `tile_both`; the FFI probe of commit c74af0f). The code is
`native/tile_rows.cc`, built on first use (`native_cpu`).

`applies` decides from static shapes; `forms` runs the kernel (`ops.tile.KERNELS`) on the CPU only,
with the lax path's gradient, where `native_cpu.kernel_ready("tile_rows.cc")` (built on first use).
"""

from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np

from dml_jax._src.kernels import native_cpu

TARGET = "dml_jax_tile_rows"


@dataclasses.dataclass(frozen=True)
class TileRowsConfig:
  """When the kernel runs.

  Attributes:
    min_output_bytes: smaller outputs take XLA's loop: they fit the caches, where stores that
      bypass them would only send the next reader to memory.
    min_row_bytes: the shortest input row (the last dimension) worth a copy call of its own.
  """

  min_output_bytes: int = 16 * 1024 * 1024
  min_row_bytes: int = 1024


DEFAULT = TileRowsConfig()


def applies(
  shape: tuple[int, ...],
  repeats: tuple[int, ...],
  dtype: np.dtype | type,
  config: TileRowsConfig | None = None,
) -> bool:
  """Whether the kernel runs TILE of `shape` by `repeats`.

  Examples:
    >>> applies((512, 512), (4, 4), np.float32)
    True
    >>> applies((512, 8), (4, 4), np.float32)  # rows of 32 bytes
    False
  """
  config = config or DEFAULT
  itemsize = np.dtype(dtype).itemsize
  output = math.prod(n * r for n, r in zip(shape, repeats, strict=True)) * itemsize
  return (
    len(shape) >= 1
    and output >= config.min_output_bytes
    and shape[-1] * itemsize >= config.min_row_bytes
  )


def tile_rows(input: jax.Array, repeats: tuple[int, ...], *, stores: str = "auto") -> jax.Array:
  """`input` tiled by `repeats`, by the native kernel; `native_cpu.kernel_ready("tile_rows.cc")`
  must have registered it. `stores`: a key of `native_cpu.STORES`, or "auto" (`native_cpu.stores_for`
  the call's bytes).

  Examples:
    >>> from dml_jax._src.kernels import native_cpu
    >>> native = native_cpu.kernel_ready("tile_rows.cc")  # False: no compiler, or not x86-64
    >>> x = np.arange(4, dtype=np.float32).reshape(2, 2)
    >>> (tile_rows(x, (2, 1)) if native else np.tile(x, (2, 1))).tolist()
    [[0.0, 1.0], [2.0, 3.0], [0.0, 1.0], [2.0, 3.0]]
  """
  shape = tuple(n * r for n, r in zip(input.shape, repeats, strict=True))
  call = jax.ffi.ffi_call(
    TARGET, jax.ShapeDtypeStruct(shape, input.dtype), vmap_method="expand_dims"
  )
  moved = (input.size + math.prod(shape)) * input.dtype.itemsize
  return call(input, stores=native_cpu.stores_attribute(stores, moved))
