"""TOP_K and TOP_K1 on the CPU as a native kernel: each lane's K first elements by a partial
selection, lanes in parallel on the calling thread and XLA's intra-op pool.

The lax form ranks with XLA:CPU's TopK, which on the integer-valued keys of the selection order
ran at 0.23x (TOP_K) and 0.36x (TOP_K1 INCREASING) ONNX Runtime's TopK, a partial sort, on a
2-core x86-64 machine (benchmark cases `top_k`, `top_k1_increasing`, small preset). Here the
input is viewed as (outer, length, inner); each lane keeps a heap of its K best elements so far,
whose last key is the threshold a later element must beat, so that most elements of a long lane
cost one vectorized comparison (a block of 16 at a time). The order is the lax form's
(`ops.top_k`): keys from the elements' bits with -0.0 equal to 0.0 and NaN above +inf, equal
keys in ascending positions; the values are the input's own elements, bit for bit. Lanes along
an earlier axis are walked 16 neighbours at a time, a row of adjacent elements a step. The code
is `native/top_k.cc`, built on first use (`native_cpu`). FLOAT16 and 8- and 16-bit integers keep
the lax form.

`applies` decides from static shapes; `forms` runs the kernel (`ops.top_k.KERNELS`) on the CPU
only, with the lax form's gradient, where `native_cpu.kernel_ready("top_k.cc")`.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np

from dml_jax._src.kernels import native_cpu

TARGET = "dml_jax_top_k"
DTYPES = frozenset(map(np.dtype, ("float32", "float64", "int32", "uint32", "int64", "uint64")))
"""The element types the kernel ranks."""
MAX_LENGTH = 2**32 - 1  # the positions are UINT32


@dataclasses.dataclass(frozen=True)
class TopKConfig:
  """When the kernel runs.

  Attributes:
    min_bytes: smaller inputs take the lax form, which XLA fuses with what is around it (on
      their own, inputs of 4 KiB already ran faster through the kernel on a 2-core x86-64
      machine; 1 KiB ones did not).
  """

  min_bytes: int = 8 * 1024


DEFAULT = TopKConfig()


def applies(
  shape: tuple[int, ...], axis: int, dtype: np.dtype | type, config: TopKConfig | None = None
) -> bool:
  """Whether the kernel selects along `axis` of `shape`: a type it ranks, lanes it can number
  in UINT32, and an input of at least `min_bytes`.

  Examples:
    >>> applies((64, 16384), 1, np.float32), applies((64, 16384), 1, np.float16)
    (True, False)
    >>> applies((32, 32), 0, np.int32)  # 4 KiB
    False
  """
  config = config or DEFAULT
  return (
    np.dtype(dtype) in DTYPES
    and 0 <= axis < len(shape)
    and shape[axis] <= MAX_LENGTH
    and math.prod(shape) * np.dtype(dtype).itemsize >= config.min_bytes
  )


def top_k(input: jax.Array, *, axis: int, k: int, descending: bool) -> tuple[jax.Array, jax.Array]:
  """Each lane's `k` largest values along `axis`, largest first (or, not `descending`, its `k`
  smallest, smallest first), and their positions (uint32), in the selection order of
  `ops.top_k`; `native_cpu.kernel_ready("top_k.cc")` must have registered the kernel.

  Examples:
    >>> from dml_jax._src.kernels import native_cpu
    >>> native = native_cpu.kernel_ready("top_k.cc")  # False: no compiler, or not x86-64
    >>> x = np.array([[3, 1, 3, 2], [0, -0.0, np.nan, 5]], np.float32)
    >>> values, positions = (top_k(x, axis=1, k=3, descending=True) if native
    ...   else ([[3, 3, 2], [np.nan, 5, 0]], [[0, 2, 3], [2, 3, 0]]))
    >>> np.asarray(values).tolist(), np.asarray(positions).tolist()
    ([[3.0, 3.0, 2.0], [nan, 5.0, 0.0]], [[0, 2, 3], [2, 3, 0]])
  """
  _, length, inner = native_cpu.lane_view(tuple(input.shape), axis)
  shape = (*input.shape[:axis], k, *input.shape[axis + 1 :])
  call = jax.ffi.ffi_call(
    TARGET,
    (jax.ShapeDtypeStruct(shape, input.dtype), jax.ShapeDtypeStruct(shape, np.uint32)),
    vmap_method="expand_dims",
  )
  values, positions = call(
    input,
    length=np.int64(length),
    inner=np.int64(inner),
    k=np.int64(k),
    descending=np.int64(descending),
  )
  return values, positions
