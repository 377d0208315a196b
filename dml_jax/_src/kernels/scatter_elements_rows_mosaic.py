"""SCATTER_ELEMENTS along the last axis, as a Pallas kernel (Mosaic GPU backend) that settles
each row's winners in shared memory.

The deterministic policy (the last update of a target in row-major order wins, out-of-range
updates are dropped) needs each target's winner before any value is written. Settled in global
memory (the lax form's scatter-max, or the Triton row kernel's atomics into an L2 scratch),
every update costs a random 4-byte atomic in L2, and the scatter runs far below the copy
(benchmark case `scatter_elements_axis1`). Here one thread block owns a row, and everything random happens in
shared memory:

1. TMA copies the row's indices and updates into shared memory, while the threads zero the
   row's winner array (one 32-bit word per output element, and a sink past the end);
2. after a block barrier (every zero written), each thread takes updates in turn and applies
   a shared-memory atomic max of the update's position + 1 at its target (an update out of
   range after the negative-index rule goes to the sink). A max does not depend on the order
   the atomics run in;
3. after a block barrier, each thread writes output elements in turn: the winner's update,
   read from the staged updates, or where no update landed the input's element, read from
   global memory. A warp reads and writes whole sectors.

DRAM sees the indices, the updates and the input read once and the output written once, each in
whole sectors. It needs TMA (compute capability 9.0 or newer); `applies` checks the static shapes:
the last axis, rows of a power-of-two length that fit shared memory, any data type (an element is
moved whole: NaN payloads and -0.0 are kept), indices of 32 or 64 bits (judged in their own width,
narrowed only once in range). `forms` runs it (`ops.scatter_elements.KERNELS`) on CUDA GPUs only,
with the lax path's gradient.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np
from jax import lax

from dml_jax._src.kernels import _triton, availability

_BOX = 256  # a TMA copy spans at most 256 elements along a dimension
_WARPGROUP_THREADS = 128


@dataclasses.dataclass(frozen=True)
class RowScatterConfig:
  """The kernel's tuning.

  Attributes:
    warpgroups: a block's warpgroups (128 threads each), at most: rows shorter than 1024 take
      fewer, so that every thread has a whole share. On an H100, for a (8192, 8192) float32
      permutation per row: 2, 4 and 8 warpgroups gave 0.58, 0.82 and 0.96 of the copy.
    max_shared_bytes: the most shared memory a block may use (the staged indices and updates
      and the winner array). Above about 113 KiB one block runs on an SM at a time: rows of
      16384 (192 KiB) ran at 0.78 of the copy on an H100.
  """

  warpgroups: int = 8
  max_shared_bytes: int = 200 * 1024


DEFAULT = RowScatterConfig()

_INDEX_TYPES = frozenset(np.dtype(t) for t in ("int32", "uint32", "int64", "uint64"))
_DATA_TYPES = _triton.DTYPES | frozenset(np.dtype(t) for t in ("float64", "int64", "uint64"))


def shared_bytes(width: int, count: int, data_bytes: int = 4, index_bytes: int = 4) -> int:
  """A block's shared memory for rows of `width` outputs and `count` updates: the staged
  indices and updates, and a 32-bit winner per output and one for the sink.

  Examples:
    >>> shared_bytes(8192, 8192) // 1024, shared_bytes(8192, 8192, 2, 8) // 1024
    (96, 112)
  """
  return count * (index_bytes + data_bytes) + 4 * (width + 1)


def applies(
  input_shape: tuple[int, ...],
  indices_shape: tuple[int, ...],
  dtype: np.dtype,
  index_dtype: np.dtype,
  axis: int,
  config: RowScatterConfig | None = None,
) -> bool:
  """Whether SCATTER_ELEMENTS of these static shapes can use the kernel: the last axis, data
  of any DirectML type JAX holds, integer indices of 32 or 64 bits, rows of a power-of-two
  length of at least 256 and at most what shared memory holds, on GPUs with TMA.

  Examples:
    >>> f32, i32 = np.dtype(np.float32), np.dtype(np.int32)
    >>> applies((8192, 8192), (8192, 8192), f32, i32, 1) == availability.probe().tma
    True
    >>> applies((8192, 8192), (8192, 8192), f32, i32, 0)  # not the last axis
    False
  """
  config = DEFAULT if config is None else config
  rank = len(input_shape)
  width, count = input_shape[-1], indices_shape[-1]
  return (
    availability.probe().mosaic_gpu
    and availability.probe().tma
    and axis == rank - 1
    and np.dtype(dtype) in _DATA_TYPES
    and np.dtype(index_dtype) in _INDEX_TYPES
    and _triton.power_of_two(width)
    and _triton.power_of_two(count)
    and min(width, count) >= _BOX
    and shared_bytes(width, count, np.dtype(dtype).itemsize, np.dtype(index_dtype).itemsize)
    <= config.max_shared_bytes
  )


def scatter_rows(
  input: jax.Array,
  indices: jax.Array,
  updates: jax.Array,
  *,
  config: RowScatterConfig | None = None,
) -> jax.Array:
  """The kernel: SCATTER_ELEMENTS along the last axis; `indices` raw (normalized here).

  Lowers for CUDA GPUs with TMA only; the caller checked `applies`.
  """
  from jax.experimental import pallas as pl  # imported late: only CUDA programs trace it
  from jax.experimental.pallas import mosaic_gpu as plgpu

  config = DEFAULT if config is None else config
  width, count = input.shape[-1], indices.shape[-1]
  rows = int(np.prod(input.shape[:-1], dtype=np.int64))
  # Elements move as unsigned words of their width: every bit kept, and TMA copies any of them.
  word = np.dtype(f"uint{8 * input.dtype.itemsize}")
  x = lax.bitcast_convert_type(input, word).reshape(rows, width)
  boxed = (rows, count // _BOX, _BOX)  # TMA copies a row as (count / 256, 256) boxes
  idx = indices.reshape(boxed)
  upd = lax.bitcast_convert_type(updates, word).reshape(boxed)
  signed = np.issubdtype(indices.dtype, np.signedinteger)
  # Every thread takes the same number of updates and of outputs (both powers of two).
  warpgroups = min(config.warpgroups, min(width, count) // _WARPGROUP_THREADS)
  threads = warpgroups * _WARPGROUP_THREADS
  scatter = _scatter_row(plgpu, width, count, threads, signed)
  zero = _zero_winners(plgpu, width, threads)

  def body(x_ref, i_ref, u_ref, o_ref, idx_smem, upd_smem, winners, barriers):
    row = lax.axis_index("block")

    @pl.when(lax.axis_index("warpgroup") == 0)
    def _():
      plgpu.copy_gmem_to_smem(i_ref.at[row], idx_smem, barriers.at[0])
      plgpu.copy_gmem_to_smem(u_ref.at[row], upd_smem, barriers.at[1])

    zero(winners)
    plgpu.barrier_wait(barriers.at[0])
    plgpu.barrier_wait(barriers.at[1])
    scatter(idx_smem, upd_smem, winners, x_ref.at[row], o_ref.at[row])

  out = plgpu.kernel(
    body,
    out_type=jax.ShapeDtypeStruct((rows, width), word),
    scratch_types=[
      plgpu.SMEM(boxed[1:], idx.dtype),
      plgpu.SMEM(boxed[1:], upd.dtype),
      plgpu.SMEM((width + 1,), np.uint32),
      plgpu.Barrier(num_arrivals=1, num_barriers=2),
    ],
    grid=(rows,),
    grid_names=("block",),
    num_threads=warpgroups,
    thread_name="warpgroup",
  )(x, idx, upd)
  return lax.bitcast_convert_type(out, input.dtype).reshape(input.shape)


def _i32(value: int) -> Any:
  """Mosaic GPU code: an int32 constant."""
  from jax.experimental.mosaic.gpu import utils

  from dml_jax._src.jax_compat import mlir_ir as ir

  return utils.c(value, ir.IntegerType.get_signless(32))


def _index(*values: Any) -> list[Any]:
  """Mosaic GPU code: int32 values as memref indices."""
  from dml_jax._src.jax_compat import mlir_arith as arith
  from dml_jax._src.jax_compat import mlir_ir as ir

  return [arith.index_castui(ir.IndexType.get(), v) for v in values]


def _boxed(position: Any) -> tuple[Any, Any]:
  """Mosaic GPU code: an update's place in a row staged as (count / 256, 256) boxes."""
  from dml_jax._src.jax_compat import mlir_arith as arith

  return arith.shrui(position, _i32(8)), arith.andi(position, _i32(_BOX - 1))


def _thread() -> Any:
  """Mosaic GPU code: the thread's index in its block, int32."""
  from dml_jax._src.jax_compat import mlir_arith as arith
  from dml_jax._src.jax_compat import mlir_gpu as gpu
  from dml_jax._src.jax_compat import mlir_ir as ir

  return arith.index_castui(ir.IntegerType.get_signless(32), gpu.thread_id(gpu.Dimension.x))


def _zero_winners(plgpu: Any, width: int, threads: int) -> Any:
  """Mosaic GPU code: every thread zeroes its share of the winner array (not the sink)."""

  @plgpu.inline_mgpu(arg_types=(plgpu.RefType(),))
  def zero(launch_ctx, winners):
    del launch_ctx
    from dml_jax._src.jax_compat import mlir_arith as arith
    from dml_jax._src.jax_compat import mlir_memref as memref

    thread = _thread()
    nothing = _i32(0)
    for k in range(width // threads):
      at = arith.addi(thread, _i32(k * threads))
      memref.store(nothing, winners, _index(at))

  return zero


def _scatter_row(plgpu: Any, width: int, count: int, threads: int, signed: bool) -> Any:
  """Mosaic GPU code: a block barrier, the atomics of a row's updates into the winner array,
  another, then the row's output."""

  @plgpu.inline_mgpu(arg_types=(plgpu.RefType(),) * 5)
  def scatter(launch_ctx, idx, upd, winners, x, out):
    del launch_ctx
    from jax.experimental.mosaic.gpu import utils

    from dml_jax._src.jax_compat import mlir_arith as arith
    from dml_jax._src.jax_compat import mlir_gpu as gpu
    from dml_jax._src.jax_compat import mlir_ir as ir
    from dml_jax._src.jax_compat import mlir_llvm as llvm
    from dml_jax._src.jax_compat import mlir_memref as memref

    i32 = ir.IntegerType.get_signless(32)
    index_type = ir.MemRefType(idx.type).element_type  # 32 or 64 bits, judged in its width
    thread = _thread()
    base = utils.memref_ptr(winners)
    size = utils.c(width, index_type)
    # Every thread's zeros are in before any thread's atomics: waiting for the TMA copies
    # orders each thread with the copies only, not with the other threads.
    gpu.barrier()
    # Each update's target: in range, or the sink at `width`.
    for k in range(count // threads):
      raw = memref.load(idx, _index(*_boxed(arith.addi(thread, _i32(k * threads)))))
      if signed:  # [-width, width): a negative index counts from the end
        negative = arith.cmpi(arith.CmpIPredicate.slt, raw, utils.c(0, index_type))
        target = arith.select(negative, arith.addi(raw, size), raw)
      else:
        target = raw
      keep = arith.cmpi(arith.CmpIPredicate.ult, target, size)  # unsigned: negatives too
      slot = arith.select(keep, target, size)
      if index_type != i32:  # in [0, width] now: narrowed only after the range rule
        slot = arith.trunci(i32, slot)
      position = arith.addi(thread, _i32(k * threads + 1))
      llvm.inline_asm(
        ir.Type.parse("!llvm.void"),
        [utils.getelementptr(base, [slot], i32), position],
        "red.shared.max.u32 [$0], $1;",
        "r,r",
        has_side_effects=True,
      )
    gpu.barrier()
    for k in range(width // threads):
      at = arith.addi(thread, _i32(k * threads))
      winner = memref.load(winners, _index(at))
      mine = memref.load(x, _index(at))
      landed = arith.cmpi(arith.CmpIPredicate.ne, winner, _i32(0))
      source = arith.select(landed, arith.subi(winner, _i32(1)), _i32(0))
      update = memref.load(upd, _index(*_boxed(source)))
      memref.store(arith.select(landed, update, mine), out, _index(at))

  return scatter
