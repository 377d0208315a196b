"""CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT on the CPU as a native kernel: each lane's
running tally, one element at a time in walking order, in one pass over the input, on the
calling thread and XLA's intra-op pool.

The lax form walks the axis as a loop of XLA:CPU steps, each a slice of every lane, and XLA's
own cumulative sum is a tree of such steps: both stayed 3 to 5 times behind ONNX Runtime's
CumSum on a 2-core x86-64 machine (benchmark cases `cumulative_summation_axis0`,
`cumulative_summation_axis1`, small preset). Here the input is viewed as (outer, length,
inner): a work item carries the tallies of a block of up to 4,096 lanes (inner positions) down
the length, the same additions (or multiplications) in the same order as the lax form, so the
same bits; integers wrap. Where the axis is the last, 4 rows are walked in lockstep, so that
their chains of additions overlap. The code is `native/cumulative.cc`, built on first use
(`native_cpu`). FLOAT16 keeps the lax form.

`applies` decides from static shapes; `forms` runs the kernel (`ops.cumulative.KERNELS`) on the
CPU only, with the lax path's gradient, where `native_cpu.kernel_ready("cumulative.cc")`.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np

from dml_jax._src.kernels import native_cpu

TARGET = "dml_jax_cumulative"
DTYPES = frozenset(map(np.dtype, ("float32", "float64", "int32", "uint32", "int64", "uint64")))
"""The element types the kernel computes with."""


@dataclasses.dataclass(frozen=True)
class CumulativeConfig:
  """When the kernel runs.

  Attributes:
    min_bytes: smaller inputs take the lax form, which XLA fuses with what is around it.
  """

  min_bytes: int = 64 * 1024


DEFAULT = CumulativeConfig()


def applies(
  shape: tuple[int, ...], axis: int, dtype: np.dtype | type, config: CumulativeConfig | None = None
) -> bool:
  """Whether the kernel runs a scan of `shape` along `axis`: a type it computes with and an
  input of at least `min_bytes`.

  Examples:
    >>> applies((1024, 1024), 1, np.float32), applies((1024, 1024), 1, np.float16)
    (True, False)
    >>> applies((64, 64), 0, np.int32)  # 16 KiB
    False
  """
  config = config or DEFAULT
  return (
    np.dtype(dtype) in DTYPES
    and 0 <= axis < len(shape)
    and math.prod(shape) * np.dtype(dtype).itemsize >= config.min_bytes
  )


def cumulative(
  input: jax.Array, *, axis: int, reverse: bool, exclusive: bool, product: bool
) -> jax.Array:
  """The running sum (or product) of `input` along `axis` by the native kernel;
  `native_cpu.kernel_ready("cumulative.cc")` must have registered it.

  Examples:
    >>> from dml_jax._src.kernels import native_cpu
    >>> native = native_cpu.kernel_ready("cumulative.cc")  # False: no compiler, or not x86-64
    >>> x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    >>> (cumulative(x, axis=1, reverse=True, exclusive=False, product=False) if native
    ...  else np.flip(np.cumsum(np.flip(x, 1), 1), 1)).tolist()
    [[6.0, 5.0, 3.0], [15.0, 11.0, 6.0]]
  """
  _, length, inner = native_cpu.lane_view(tuple(input.shape), axis)
  call = jax.ffi.ffi_call(
    TARGET, jax.ShapeDtypeStruct(input.shape, input.dtype), vmap_method="expand_dims"
  )
  return call(
    input,
    length=np.int64(length),
    inner=np.int64(inner),
    reverse=np.int64(reverse),
    exclusive=np.int64(exclusive),
    product=np.int64(product),
  )
