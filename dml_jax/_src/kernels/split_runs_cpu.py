"""SPLIT on the CPU as a native kernel: each output's contiguous runs of the input copied with
non-temporal stores, on the calling thread and XLA's intra-op pool.

XLA:CPU copies each piece with a loop whose stores go through the cache: each output line is
read before it is written, three bytes moved per byte copied. For SPLIT of (4096, 4096)
float32 into 4 (64 MiB in, 64 MiB out) its slices took 4.9 / 6.8 ms along axis 0 / 1 on a
2-core x86-64 machine, ONNX Runtime's Split 4.2 / 5.3; stores that bypass the cache take 3.2 /
3.6 (`benchmarks/cpu_ffi_probe.py`, BENCHMARKS.md). The code is `native/runs.cc` (JOIN's too),
built on first use (`native_cpu`).

`applies` decides from static shapes; `forms.split` runs the kernel on the CPU only, with the
lax path's gradient, where `native_cpu.status()` says it is available.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import jax
import numpy as np

TARGET = "dml_jax_split_runs"


@dataclasses.dataclass(frozen=True)
class SplitRunsConfig:
  """When the kernel runs.

  Attributes:
    min_bytes: smaller inputs take XLA's slices: their outputs fit the caches, where stores
      that bypass them would only send the next reader to memory.
    min_run_bytes: the shortest contiguous run (of one output, per position before the axis)
      worth a copy call of its own.
  """

  min_bytes: int = 16 * 1024 * 1024
  min_run_bytes: int = 1024


DEFAULT = SplitRunsConfig()


def applies(
  shape: tuple[int, ...],
  sizes: Sequence[int],
  axis: int,
  dtype: np.dtype | type,
  config: SplitRunsConfig | None = None,
) -> bool:
  """Whether the kernel runs SPLIT of `shape` along `axis` into `sizes`.

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


def split_runs(input: jax.Array, sizes: Sequence[int], axis: int) -> tuple[jax.Array, ...]:
  """`input` cut along `axis` into pieces of `sizes` (which sum to its size there), by the
  native kernel; `native_cpu.status()` must have registered it.

  Examples:
    >>> from dml_jax._src.kernels import native_cpu
    >>> native = native_cpu.status().available  # False: no compiler, or not x86-64
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
  call = jax.ffi.ffi_call(TARGET, results, vmap_method="expand_dims")
  return tuple(call(input, axis_from_end=np.int64(input.ndim - axis)))
