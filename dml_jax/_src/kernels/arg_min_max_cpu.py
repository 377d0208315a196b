"""ARGMIN and ARGMAX on the CPU as a native kernel: each lane's extreme found in one pass over
the input, on the calling thread and XLA's intra-op pool.

Along the last axis XLA:CPU's one-pass reduction (the lax form's `lax.argmax`) ran 2.5 times
behind ONNX Runtime's ArgMax on a 2-core x86-64 machine (benchmark case `argmax_axis1`, small
preset). Here the input is viewed as (outer, length, inner), and each element becomes an
integer key that ranks as the selection order does (`axis_direction`: -0.0 equals 0.0, every
NaN ranks above +inf, all NaNs tie), the complement for ARGMIN; a row (inner 1) is read in
chunks of 16 lanes, each keeping its best key and position, merged at the end with the tie
rule, and an earlier axis walks its rows in order, keeping a block of columns' bests: the same
positions as the lax form. The code is `native/arg_min_max.cc`, built on first use
(`native_cpu`), compiled plainly and for AVX2 (chosen where the processor has it). It writes
32-bit positions; 64-bit index types are converted after.

`applies` decides from static shapes; `forms` runs the kernel (`ops.arg_min_max.KERNELS`) on the
CPU only, with the lax form's gradient, where `native_cpu.kernel_ready("arg_min_max.cc")`.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np
from jax import lax

from dml_jax._src.kernels import native_cpu

TARGET = "dml_jax_arg_min_max"
DTYPES = frozenset(map(np.dtype, ("float32", "float16", "int32", "uint32")))
"""The element types the kernel ranks."""
MAX_LENGTH = 2**31 - 1  # positions are computed as int32


@dataclasses.dataclass(frozen=True)
class ArgMinMaxConfig:
  """When the kernel runs.

  Attributes:
    min_bytes: smaller inputs take the lax form, which XLA fuses with what is around it.
  """

  min_bytes: int = 64 * 1024


DEFAULT = ArgMinMaxConfig()


def applies(
  shape: tuple[int, ...],
  axis: int,
  dtype: np.dtype | type,
  config: ArgMinMaxConfig | None = None,
) -> bool:
  """Whether the kernel reduces `shape` along `axis`: a type it ranks, a lane of at most
  2**31 - 1 elements, and an input of at least `min_bytes`.

  Examples:
    >>> applies((1024, 1024), 1, np.float32), applies((1024, 1024), 1, np.int8)
    (True, False)
    >>> applies((64, 64), 0, np.float32)  # 16 KiB
    False
  """
  config = config or DEFAULT
  return (
    np.dtype(dtype) in DTYPES
    and 0 <= axis < len(shape)
    and 1 <= shape[axis] <= MAX_LENGTH
    and math.prod(shape) * np.dtype(dtype).itemsize >= config.min_bytes
  )


def arg_min_max(
  input: jax.Array, *, axis: int, largest: bool, last_wins: bool, index_dtype: np.dtype
) -> jax.Array:
  """The position along `axis` of each lane's largest (or smallest) element in the selection
  order, the last of equal ones where `last_wins`, else the first; the input's shape without
  `axis`, as `index_dtype`. `native_cpu.kernel_ready("arg_min_max.cc")` must have registered
  the kernel.

  Examples:
    >>> from dml_jax._src.kernels import native_cpu
    >>> native = native_cpu.kernel_ready("arg_min_max.cc")  # False: no compiler, or not x86-64
    >>> x = np.array([[1, 3, 3], [-0.0, 0.0, np.nan]], np.float32)
    >>> pick = lambda x: arg_min_max(x, axis=1, largest=True, last_wins=True, index_dtype=np.int32)
    >>> (pick(x) if native else np.array([2, 2])).tolist()
    [2, 2]
  """
  _, length, inner = native_cpu.lane_view(tuple(input.shape), axis)
  shape = input.shape[:axis] + input.shape[axis + 1 :]
  wide = np.dtype(index_dtype).itemsize > 4
  computed = np.dtype(np.uint32 if wide else index_dtype)
  call = jax.ffi.ffi_call(TARGET, jax.ShapeDtypeStruct(shape, computed), vmap_method="expand_dims")
  positions = call(
    input,
    length=np.int64(length),
    inner=np.int64(inner),
    largest=np.int64(largest),
    last_wins=np.int64(last_wins),
  )
  return lax.convert_element_type(positions, index_dtype)
