"""The row gathers on the CPU as a native kernel: GATHER_ND, GATHER_ND1 and GATHER whose index
tuples leave whole rows, each row copied whole, past the cache with non-temporal stores, or by
memcpy where the call fits the cache (`native_cpu.stores_for`), with the next source rows
prefetched, on the calling thread and XLA's intra-op pool.

XLA:CPU copies a gathered row an element at a time and, with DirectML's index arithmetic fused
into the gather, redoes that arithmetic for every element; whole-row copies beat both it and
ONNX Runtime's Gather on a 2-core x86-64 machine (benchmark case `gather_rows`, `run.py
--forms`). The code is `native/gather_rows.cc`, built on first use (`native_cpu`).

The kernel takes the raw index tuples and applies DirectML's index rule itself (negative
indices of signed types count from the end, then every index is clamped into its dimension),
the rule `indexing.clamp_indices` applies on the lax path; the tests hold the two to the same
rows for every class of index value and every index type. A separate XLA step computing row
numbers first would cost more than the copy of a small output: on that machine any second
step in a CPU program added about 70 us a call.

`applies` decides from static shapes; `forms` runs the kernel (`ops.gather_nd.KERNELS`) on the CPU
only, with the lax path's gradient, where `native_cpu.kernel_ready("gather_rows.cc")` (built on
first use).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from dml_jax._src.kernels import native_cpu

TARGET = "dml_jax_gather_rows"


@dataclasses.dataclass(frozen=True)
class GatherRowsConfig:
  """When the kernel runs.

  Attributes:
    min_row_bytes: the narrowest row worth a copy of its own: rows of 64 bytes were level with
      lax on a 2-core x86-64 machine, 128 twice as fast (`run.py --sweep gather_rows_cpu`,
      case gather_rows).
    min_out_bytes: smaller outputs are level on the lax path, and a small lookup then never
      pays the kernel's build (seconds).
  """

  min_row_bytes: int = 128
  min_out_bytes: int = 1024 * 1024


DEFAULT = GatherRowsConfig()


def applies(
  input_shape: tuple[int, ...],
  indices_shape: tuple[int, ...],
  batch_dims: int,
  dtype: np.dtype | type,
  config: GatherRowsConfig | None = None,
) -> bool:
  """Whether the kernel runs GATHER_ND of a logical input of `input_shape` by index tuples of
  `indices_shape` (..., t) after `batch_dims` batch dimensions.

  Examples:
    >>> applies((256, 256, 256), (65536, 2), 0, np.float32)  # rows of 1 KiB
    True
    >>> applies((256, 256, 4), (65536, 2), 0, np.float32)  # rows of 16 bytes
    False
    >>> applies((256, 256, 256), (64, 2), 0, np.float32)  # 64 KiB out
    False
  """
  config = config or DEFAULT
  t = indices_shape[-1]
  leading = batch_dims + t
  row_bytes = math.prod(input_shape[leading:]) * np.dtype(dtype).itemsize
  out_bytes = math.prod(indices_shape[:-1]) * row_bytes
  return (
    t >= 1
    and 0 not in input_shape[:leading]
    and row_bytes >= config.min_row_bytes
    and out_bytes >= config.min_out_bytes
  )


def gather_rows(
  input: jax.Array, indices: jax.Array, *, batch_dims: int, stores: str = "auto"
) -> jax.Array:
  """GATHER_ND as whole-row copies by the native kernel;
  `native_cpu.kernel_ready("gather_rows.cc")` must have registered it. `stores`: a key of `native_cpu.STORES`, or "auto" (`native_cpu.stores_for`
  the call's bytes).

  `input` has the logical input sizes; `indices` (..., t) holds raw index tuples of int32,
  uint32, int64 or uint64 into its dimensions batch_dims .. batch_dims + t - 1, whose leading
  batch_dims sizes are the input's. The output is shaped indices.shape[:-1] +
  input.shape[batch_dims + t:].

  Examples:
    >>> from dml_jax._src.kernels import native_cpu
    >>> native = native_cpu.kernel_ready("gather_rows.cc")  # False: no compiler, or not x86-64
    >>> x = np.arange(12, dtype=np.float32).reshape(3, 4)
    >>> i = np.array([[2], [-3], [7]], np.int32)
    >>> (gather_rows(x, i, batch_dims=0) if native else x[[2, 0, 2]])[:, 0].tolist()
    [8.0, 0.0, 8.0]
  """
  return _kernel(batch_dims, stores)(input, indices)


@functools.cache
def _kernel(batch_dims: int, stores: str) -> Callable[[jax.Array, jax.Array], jax.Array]:
  """The kernel for `batch_dims` batch dimensions, as a function of (input, indices) that
  `jax.vmap` turns into one call: a batched input adds a batch dimension (the indices
  broadcast to it where they are not batched); batched indices alone are more tuples."""

  @jax.custom_batching.custom_vmap
  def call(input: jax.Array, indices: jax.Array) -> jax.Array:
    leading = batch_dims + indices.shape[-1]
    kept = input.shape[leading:]
    out = jax.ShapeDtypeStruct(indices.shape[:-1] + kept, input.dtype)
    out_bytes = math.prod(out.shape) * out.dtype.itemsize
    moved = out_bytes + min(out_bytes, input.size * input.dtype.itemsize)
    return jax.ffi.ffi_call(TARGET, out)(
      input,
      indices,
      sizes=np.array(input.shape[:leading], np.int64),
      batch_dims=np.int64(batch_dims),
      stores=native_cpu.stores_attribute(stores, moved),
    )

  @call.def_vmap
  def _batched(axis_size, in_batched, input, indices):
    input_batched, indices_batched = in_batched
    if input_batched:  # one more batch dimension
      if not indices_batched:
        indices = jnp.broadcast_to(indices, (axis_size,) + indices.shape)
      return _kernel(batch_dims + 1, stores)(input, indices), True
    if batch_dims == 0:  # the batch's tuples are more tuples
      return call(input, indices), True
    # The batch between the batch dimensions and the tuples' places, then moved to the front.
    moved = jnp.moveaxis(indices, 0, batch_dims)
    return jnp.moveaxis(call(input, moved), batch_dims, 0), True

  return call
