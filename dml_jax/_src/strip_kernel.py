"""A GPU kernel (Pallas, Mosaic GPU backend) for REVERSE_SUBSEQUENCES with per-lane lengths.

With a length per lane, the lanes of one output row read different input rows: XLA's gather
fetches each 32-byte sector from L2 once per lane that needs it, 0.45 of a device copy on an
H100 (BENCHMARKS.md). Here one thread block owns a strip of lanes one sector wide (8 float32
lanes) over the whole reversed axis:

1. TMA copies the strip into shared memory, 256 rows per copy;
2. every thread reads its share of the output from shared memory, each lane from its own
   mirrored row, into registers; a block barrier; it writes them back in place;
3. TMA copies the strip out.

DRAM sees each byte read once and written once, in whole sectors: 0.79 of a device copy on
an H100 and 0.69 on an H200 by kernel time, 2.1x to 2.2x XLA's gather (BENCHMARKS.md). A bare
TMA round trip of the same strips runs at 0.81 / 0.75: the rows' width bounds it. Narrower
rows are slower (16 bytes: 0.22, and 0.12 with the batch fastest rather than the strips, as
blocks are numbered here so that neighbouring strips run side by side); 128-byte rows reach
0.90 / 0.97 but would need 512 KiB of shared memory for a 4096-long axis.

It needs TMA (compute capability 9.0 or newer), and the strip must fit in shared memory and
a thread's share in registers: `applies` checks these on static shapes. The lengths come in
clamped to [0, T] as int32, as the lax path takes them.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
from jax import lax

_SECTOR_BYTES = 32  # a strip's row: one DRAM sector
_BOX_ROWS = 256  # a TMA copy spans at most 256 elements along a dimension
_WARPGROUPS = 4  # 512 threads
_THREADS = 128 * _WARPGROUPS
_MAX_VALUES_PER_THREAD = 64  # registers a thread holds between reading and writing back
_MAX_STRIP_BYTES = 192 * 1024  # shared memory is 227 KiB on an H100


@functools.cache
def _mosaic_gpu_available() -> bool:
  try:
    from jax.experimental.pallas import mosaic_gpu  # noqa: F401
  except ImportError:
    return False
  return True


@functools.cache
def _gpus_have_tma() -> bool:
  """Whether every local CUDA GPU is a Hopper or newer (the kernel's TMA copies)."""
  try:
    gpus = jax.devices("cuda")
  except (RuntimeError, ValueError):  # no CUDA backend: the kernel is never lowered
    return False
  return all(float(getattr(d, "compute_capability", 0)) >= 9.0 for d in gpus)


def applies(shape: tuple[int, ...], dtype: np.dtype, axis: int) -> bool:
  """Whether REVERSE_SUBSEQUENCES of this static shape along `axis` can use the kernel."""
  itemsize = np.dtype(dtype).itemsize
  if itemsize not in (1, 2, 4, 8):
    return False
  lanes = _SECTOR_BYTES // itemsize
  steps = shape[axis]
  outer = int(np.prod(shape[:axis], dtype=np.int64))
  inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
  return (
    _mosaic_gpu_available()
    and _gpus_have_tma()
    and inner % lanes == 0
    and steps % _BOX_ROWS == 0
    and steps * _SECTOR_BYTES <= _MAX_STRIP_BYTES
    and steps * lanes // _THREADS <= _MAX_VALUES_PER_THREAD
    and outer * (inner // lanes) < 2**31
  )


def reverse_lanes(input: jax.Array, lengths: jax.Array, *, axis: int) -> jax.Array:
  """The kernel: `input` reversed along `axis`, each lane over its first `lengths` elements.

  `lengths` has `input`'s shape with 1 on `axis`, int32, already clamped to [0, size].
  """
  from jax.experimental import pallas as pl  # imported late: only CUDA programs trace it
  from jax.experimental.pallas import mosaic_gpu as plgpu

  steps = input.shape[axis]
  outer = int(np.prod(input.shape[:axis], dtype=np.int64))
  inner = int(np.prod(input.shape[axis + 1 :], dtype=np.int64))
  lanes = _SECTOR_BYTES // input.dtype.itemsize
  strips = inner // lanes
  boxes = steps // _BOX_ROWS
  bits = np.dtype(f"uint{8 * input.dtype.itemsize}")  # TMA takes no float64: move bits
  x = lax.bitcast_convert_type(input, bits).reshape(outer, steps, inner)
  n = lengths.reshape(outer, inner)
  permute = _permute_in_place(plgpu, steps, lanes)

  def body(x_ref, n_ref, o_ref, strip_ref, barriers):
    block = lax.axis_index("block")
    b, col = block // strips, block % strips * lanes
    leader = lax.axis_index("warpgroup") == 0
    rows = lambda k: pl.ds(k * _BOX_ROWS, _BOX_ROWS)
    lanes_of = lambda ref, k: ref.at[b, rows(k), pl.ds(col, lanes)]

    @pl.when(leader)
    def _():
      for k in range(boxes):
        plgpu.copy_gmem_to_smem(lanes_of(x_ref, k), strip_ref.at[rows(k)], barriers.at[k])

    for k in range(boxes):
      plgpu.barrier_wait(barriers.at[k])
    permute(n_ref.at[b, pl.ds(col, lanes)], strip_ref)
    plgpu.commit_smem()  # this warpgroup's writes, visible to TMA
    _block_barrier(plgpu)()  # ... and every warpgroup's

    @pl.when(leader)
    def _():
      for k in range(boxes):
        plgpu.copy_smem_to_gmem(strip_ref.at[rows(k)], lanes_of(o_ref, k))
      plgpu.wait_smem_to_gmem(0)

  out = plgpu.kernel(
    body,
    out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
    scratch_types=[
      plgpu.SMEM((steps, lanes), x.dtype),
      plgpu.Barrier(num_arrivals=1, num_barriers=boxes),
    ],
    grid=(outer * strips,),
    grid_names=("block",),
    num_threads=_WARPGROUPS,
    thread_name="warpgroup",
  )(x, n)
  return lax.bitcast_convert_type(out, input.dtype).reshape(input.shape)


def _permute_in_place(plgpu, steps: int, lanes: int):
  """The in-SM exchange, as Mosaic GPU code: thread `i` owns lane `i % lanes` of rows
  `i // lanes + k * (threads / lanes)`; it reads each row's mirrored source (the row itself
  past the lane's length), waits for the block, and writes the values back in place."""
  from jax._src.lib.mlir import ir
  from jax._src.lib.mlir.dialects import arith, gpu, memref

  @plgpu.inline_mgpu(arg_types=(plgpu.RefType(), plgpu.RefType()))
  def permute(launch_ctx, lengths, strip):
    del launch_ctx
    index = ir.IndexType.get()
    constant = lambda v: arith.constant(index, v)
    thread = gpu.thread_id(gpu.Dimension.x)
    lane = arith.remui(thread, constant(lanes))
    first_row = arith.divui(thread, constant(lanes))
    length = arith.index_cast(index, memref.load(lengths, [lane]))
    last = arith.subi(length, constant(1))
    rows, values = [], []
    for k in range(steps * lanes // _THREADS):
      row = arith.addi(first_row, constant(k * (_THREADS // lanes)))
      inside = arith.cmpi(arith.CmpIPredicate.ult, row, length)
      source = arith.select(inside, arith.subi(last, row), row)
      rows.append(row)
      values.append(memref.load(strip, [source, lane]))
    gpu.barrier()
    for row, value in zip(rows, values, strict=True):
      memref.store(value, strip, [row, lane])

  return permute


def _block_barrier(plgpu):
  """A barrier across the thread block (Pallas's own barriers span a warpgroup)."""
  from jax._src.lib.mlir.dialects import gpu

  @plgpu.inline_mgpu()
  def barrier(launch_ctx):
    del launch_ctx
    gpu.barrier()

  return barrier
