"""JOIN on the CPU as a native kernel: each input's contiguous runs copied into the output with
non-temporal stores, on the calling thread and XLA's intra-op pool.

XLA:CPU's concatenate stores through the cache: each output line is read before it is
written. For JOIN of 4 x (2048, 2048) float32 along axis 0 (64 MiB out) it sat level with or
just behind ONNX Runtime's Concat on a 2-core x86-64 machine (0.90 to 0.95 with the
allocator setup, BENCHMARKS.md); stores that bypass the cache move two bytes per byte copied
instead of three, as they do for SPLIT (`split_runs_cpu`). The code is `native/runs.cc`,
built on first use (`native_cpu`).

`applies` decides from static shapes; `forms.join` runs the kernel on the CPU only, with the
lax path's gradient, where `native_cpu.status()` says it is available.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import jax
import numpy as np

TARGET = "dml_jax_join_runs"


@dataclasses.dataclass(frozen=True)
class JoinRunsConfig:
  """When the kernel runs.

  Attributes:
    min_bytes: smaller outputs take XLA's concatenate: they fit the caches, where stores that
      bypass them would only send the next reader to memory.
    min_run_bytes: the shortest contiguous run (of one input, per position before the axis)
      worth a copy call of its own.
  """

  min_bytes: int = 16 * 1024 * 1024
  min_run_bytes: int = 1024


DEFAULT = JoinRunsConfig()


def applies(
  shapes: Sequence[tuple[int, ...]],
  axis: int,
  dtype: np.dtype | type,
  config: JoinRunsConfig | None = None,
) -> bool:
  """Whether the kernel runs JOIN of inputs of `shapes` along `axis`.

  Examples:
    >>> applies([(2048, 2048)] * 4, 0, np.float32)
    True
    >>> applies([(64, 64)] * 2, 0, np.float32)  # fits the caches
    False
  """
  config = config or DEFAULT
  itemsize = np.dtype(dtype).itemsize
  runs = [math.prod(shape[axis:]) * itemsize for shape in shapes]
  outer = math.prod(shapes[0][:axis])
  return (
    len(shapes) <= 1024
    and sum(runs) * outer >= config.min_bytes
    and min(runs) >= config.min_run_bytes
  )


def join_runs(*inputs: jax.Array, axis: int) -> jax.Array:
  """`inputs` joined along `axis`, by the native kernel; `native_cpu.status()` must have
  registered it.

  Examples:
    >>> from dml_jax._src.kernels import native_cpu
    >>> native = native_cpu.status().available  # False: no compiler, or not x86-64
    >>> a, b = np.zeros((2, 1), np.float32), np.ones((2, 2), np.float32)
    >>> (join_runs(a, b, axis=1) if native else np.concatenate([a, b], 1)).tolist()
    [[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]]
  """
  shape = list(inputs[0].shape)
  shape[axis] = sum(x.shape[axis] for x in inputs)
  out = jax.ShapeDtypeStruct(tuple(shape), inputs[0].dtype)
  call = jax.ffi.ffi_call(TARGET, out, vmap_method="expand_dims")
  return call(*inputs, axis_from_end=np.int64(len(shape) - axis))
