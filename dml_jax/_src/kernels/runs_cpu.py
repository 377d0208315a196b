"""SPLIT and JOIN on the CPU as one native kernel: the contiguous runs that each piece (an
output of SPLIT, an input of JOIN) has in the whole tensor, copied without reading the
destination first (non-temporal stores, or `rep movsb` where the call fits the cache:
`native_cpu.stores_for`), on the calling thread and XLA's intra-op pool.

XLA:CPU copies with loops whose stores go through the cache: each output line is read before
it is written, three bytes moved per byte copied; stores that bypass the cache put SPLIT and
JOIN ahead of ONNX Runtime on a 2-core x86-64 machine (benchmark cases `split_axis0`,
`join_axis0`; the FFI probe of commit c74af0f). The code is `native/runs.cc`, built on first
use (`native_cpu`).

`applies` decides from static shapes, for both operators; `forms` runs the kernel
(`ops.split.KERNELS`, `ops.join.KERNELS`) on the CPU only, with the lax path's gradient, where
`native_cpu.kernel_ready("runs.cc")` (built on first use).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import jax
import numpy as np

from dml_jax._src.kernels import native_cpu

SPLIT_TARGET = "dml_jax_split_runs"
JOIN_TARGET = "dml_jax_join_runs"


@dataclasses.dataclass(frozen=True)
class RunsConfig:
  """When the kernel runs.

  Attributes:
    min_bytes: smaller wholes take XLA's slices or concatenate: they fit the caches, where
      stores that bypass them would only send the next reader to memory.
    min_run_bytes: the shortest contiguous run (of one piece, per position before the axis)
      worth a copy call of its own.
  """

  min_bytes: int = 16 * 1024 * 1024
  min_run_bytes: int = 1024


DEFAULT = RunsConfig()


def applies(
  shape: tuple[int, ...],
  sizes: Sequence[int],
  axis: int,
  dtype: np.dtype | type,
  config: RunsConfig | None = None,
) -> bool:
  """Whether the kernel runs SPLIT of a whole of `shape` along `axis` into pieces of `sizes`,
  or JOIN of those pieces into it.

  Examples:
    >>> applies((4096, 4096), [1024] * 4, 0, np.float32)
    True
    >>> applies((64, 64), [32, 32], 0, np.float32)  # fits the caches
    False
  """
  config = config or DEFAULT
  itemsize = np.dtype(dtype).itemsize
  inner = math.prod(shape[axis + 1 :]) * itemsize
  return (
    math.prod(shape) * itemsize >= config.min_bytes
    and min(sizes) * inner >= config.min_run_bytes
    and len(sizes) <= 1024
  )


def split_runs(
  input: jax.Array, sizes: Sequence[int], axis: int, *, stores: str = "auto"
) -> tuple[jax.Array, ...]:
  """`input` cut along `axis` into pieces of `sizes` (which sum to its size there), by the
  native kernel; `native_cpu.kernel_ready("runs.cc")` must have registered it. `stores`: a key of
  `native_cpu.STORES`, or "auto" (`native_cpu.stores_for` the call's bytes).

  Examples:
    >>> from dml_jax._src.kernels import native_cpu
    >>> native = native_cpu.kernel_ready("runs.cc")  # False: no compiler, or not x86-64
    >>> x = np.arange(12, dtype=np.float32).reshape(3, 4)
    >>> pieces = split_runs(x, [1, 3], axis=1) if native else np.split(x, [1], axis=1)
    >>> [p.tolist() for p in pieces]
    [[[0.0], [4.0], [8.0]], [[1.0, 2.0, 3.0], [5.0, 6.0, 7.0], [9.0, 10.0, 11.0]]]
  """
  results = []
  for size in sizes:
    shape = list(input.shape)
    shape[axis] = size
    results.append(jax.ShapeDtypeStruct(tuple(shape), input.dtype))
  call = jax.ffi.ffi_call(SPLIT_TARGET, results, vmap_method="expand_dims")
  axis_from_end = np.int64(input.ndim - axis)
  attribute = native_cpu.stores_attribute(stores, 2 * input.size * input.dtype.itemsize)
  return tuple(call(input, axis_from_end=axis_from_end, stores=attribute))


def join_runs(*inputs: jax.Array, axis: int, stores: str = "auto") -> jax.Array:
  """`inputs` joined along `axis`, by the native kernel; `native_cpu.kernel_ready("runs.cc")`
  must have registered it. `stores`: a key of `native_cpu.STORES`, or "auto" (`native_cpu.stores_for`
  the call's bytes).

  Examples:
    >>> from dml_jax._src.kernels import native_cpu
    >>> native = native_cpu.kernel_ready("runs.cc")  # False: no compiler, or not x86-64
    >>> a, b = np.zeros((2, 1), np.float32), np.ones((2, 2), np.float32)
    >>> (join_runs(a, b, axis=1) if native else np.concatenate([a, b], 1)).tolist()
    [[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]]
  """
  shape = list(inputs[0].shape)
  shape[axis] = sum(x.shape[axis] for x in inputs)
  out = jax.ShapeDtypeStruct(tuple(shape), inputs[0].dtype)
  call = jax.ffi.ffi_call(JOIN_TARGET, out, vmap_method="expand_dims")
  attribute = native_cpu.stores_attribute(stores, 2 * math.prod(shape) * out.dtype.itemsize)
  return call(*inputs, axis_from_end=np.int64(len(shape) - axis), stores=attribute)
