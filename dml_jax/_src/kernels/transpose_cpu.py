"""The last two dimensions swapped on the CPU as a native kernel: 8 x 8 blocks transposed in
AVX2 registers, whole output lines stored with non-temporal stores, on the calling thread and
XLA's intra-op pool.

The tensor layer reads a strided tensor through one transpose of its merged axes
(`buffers.transpose_merged`); an NHWC buffer read as NCHW is (N, H * W, C) -> (N, C, H * W).
The kernel is 1.5x to 2.4x faster than XLA:CPU's transpose on a 2-core x86-64 machine (case
`element_wise_identity_nhwc_to_nchw`, `run.py --forms`). The code is `native/transpose.cc`,
built on first use (`native_cpu`).

`applies` decides from static shapes; `forms` runs the kernel (`buffers.TRANSPOSE_KERNELS`) on the
CPU only, with the lax path's gradient, where `native_cpu.kernel_ready("transpose.cc")` (built on
first use) and the processor has AVX2.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import numpy as np

from dml_jax._src.kernels import native_cpu

TARGET = "dml_jax_transpose"


@dataclasses.dataclass(frozen=True)
class TransposeConfig:
  """When the kernel runs.

  Attributes:
    min_bytes: smaller tensors take XLA's transpose: the kernel was measured from 1 MiB up.
    min_rows: the fewest rows (the second-last dimension) of each matrix: two 8 x 8 blocks
      take 16.
    min_columns: the fewest columns (the last dimension): a group of 8 fills a block.
  """

  min_bytes: int = 1024 * 1024
  min_rows: int = 16
  min_columns: int = 8


DEFAULT = TransposeConfig()


def applies(
  shape: tuple[int, ...],
  perm: tuple[int, ...],
  dtype: np.dtype | type,
  config: TransposeConfig | None = None,
) -> bool:
  """Whether the kernel runs `lax.transpose` of `shape` by `perm`: the last two dimensions
  swapped, every other in place, 32-bit elements, rows a multiple of 8 long (whole 32-byte
  pieces of output rows).

  Examples:
    >>> applies((8, 4096, 32), (0, 2, 1), np.float32)
    True
    >>> applies((8, 4096, 32), (1, 0, 2), np.float32)  # not the last two
    False
    >>> applies((8, 64, 32), (0, 2, 1), np.float32)  # 64 KiB: XLA's transpose
    False
  """
  config = config or DEFAULT
  rank = len(shape)
  swapped = tuple(range(rank - 2)) + (rank - 1, rank - 2)
  return (
    rank >= 2
    and tuple(perm) == swapped
    and np.dtype(dtype).itemsize == 4
    and math.prod(shape) * 4 >= config.min_bytes
    and shape[-2] >= config.min_rows
    and shape[-2] % 8 == 0
    and shape[-1] >= config.min_columns
  )


def has_avx2() -> bool:
  """Whether the kernel's blocks run in AVX2 registers on this processor (else the library
  keeps XLA's transpose); False where the kernel is not available. Builds the kernel where it
  is not yet.

  Examples:
    >>> isinstance(has_avx2(), bool)
    True
  """
  return native_cpu.kernel_ready("transpose.cc") and _library_has_avx2()


@functools.cache
def _library_has_avx2() -> bool:
  return bool(native_cpu.library("transpose.cc").DmlJaxTransposeAvx2())


def transpose(x: jax.Array) -> jax.Array:
  """`x` with its last two dimensions swapped, by the native kernel;
  `native_cpu.kernel_ready("transpose.cc")` must have registered it.

  Examples:
    >>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> (transpose(x) if native_cpu.kernel_ready("transpose.cc") else x.T).tolist()
    [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
  """
  shape = (*x.shape[:-2], x.shape[-1], x.shape[-2])
  call = jax.ffi.ffi_call(TARGET, jax.ShapeDtypeStruct(shape, x.dtype), vmap_method="expand_dims")
  return call(x)
