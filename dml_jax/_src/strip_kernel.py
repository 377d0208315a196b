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

import dataclasses
import functools

import jax
import numpy as np
from jax import lax

_BOX_ROWS = 256  # a TMA copy spans at most 256 elements along a dimension
_WARPGROUPS = 4  # 512 threads
_THREADS = 128 * _WARPGROUPS
_MAX_VALUES_PER_THREAD = 64  # registers a thread holds between reading and writing back
_MAX_PART_BYTES = 192 * 1024  # shared memory is 227 KiB on an H100
_CLUSTERS = (1, 2, 4, 8)  # blocks sharing one strip (8 is the largest portable cluster)


@dataclasses.dataclass(frozen=True)
class Plan:
  """How the kernel cuts the work: strips of `strip_bytes`-wide rows over the whole axis, each
  held by a cluster of `cluster` blocks, `steps / cluster` consecutive rows each."""

  strip_bytes: int = 32
  cluster: int = 1
  direct_stores: bool = False  # each thread stores its values to global memory, no TMA out
  vector_stores: bool = True  # with direct stores: 16 bytes of a row per thread
  prefetch_bytes: int = 0  # rows this wide go to L2 first, by one block per group of strips
  prefetch_all: bool = False  # ... or by every block


_PLANS = (Plan(32, 1),)  # in order of preference


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


def fits(plan: Plan, shape: tuple[int, ...], dtype: np.dtype, axis: int) -> bool:
  """Whether `plan` can cut REVERSE_SUBSEQUENCES of this static shape along `axis`."""
  itemsize = np.dtype(dtype).itemsize
  if itemsize not in (1, 2, 4, 8) or plan.cluster not in _CLUSTERS:
    return False
  lanes = plan.strip_bytes // itemsize
  steps = shape[axis]
  rows = steps // plan.cluster  # held by one block
  outer = int(np.prod(shape[:axis], dtype=np.int64))
  inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
  return (
    inner % lanes == 0
    and _THREADS % lanes == 0
    and steps % (plan.cluster * _BOX_ROWS) == 0
    and rows * plan.strip_bytes <= _MAX_PART_BYTES
    and rows * lanes // _THREADS <= _MAX_VALUES_PER_THREAD
    and outer * (inner // lanes) * plan.cluster < 2**31
  )


def plan_for(shape: tuple[int, ...], dtype: np.dtype, axis: int) -> Plan | None:
  """The kernel's plan for this static shape, or None where the kernel does not apply."""
  if not (_mosaic_gpu_available() and _gpus_have_tma()):
    return None
  return next((plan for plan in _PLANS if fits(plan, shape, dtype, axis)), None)


def applies(shape: tuple[int, ...], dtype: np.dtype, axis: int) -> bool:
  """Whether REVERSE_SUBSEQUENCES of this static shape along `axis` can use the kernel."""
  return plan_for(shape, dtype, axis) is not None


def reverse_lanes(
  input: jax.Array, lengths: jax.Array, *, axis: int, plan: Plan | None = None
) -> jax.Array:
  """The kernel: `input` reversed along `axis`, each lane over its first `lengths` elements.

  `lengths` has `input`'s shape with 1 on `axis`, int32, already clamped to [0, size].
  """
  from jax.experimental import pallas as pl  # imported late: only CUDA programs trace it
  from jax.experimental.pallas import mosaic_gpu as plgpu

  plan = plan or plan_for(input.shape, input.dtype, axis) or Plan()
  steps = input.shape[axis]
  outer = int(np.prod(input.shape[:axis], dtype=np.int64))
  inner = int(np.prod(input.shape[axis + 1 :], dtype=np.int64))
  lanes = plan.strip_bytes // input.dtype.itemsize
  strips = inner // lanes
  rows = steps // plan.cluster  # held by one block
  boxes = rows // _BOX_ROWS
  bits = np.dtype(f"uint{8 * input.dtype.itemsize}")  # TMA takes no float64: move bits
  x = lax.bitcast_convert_type(input, bits).reshape(outer, steps, inner)
  n = lengths.reshape(outer, inner)
  permute = _permute_in_place(plgpu, rows, lanes, plan.cluster)

  def body(x_ref, n_ref, o_ref, part_ref, barriers):
    strip = lax.axis_index("strip")
    b, col = strip // strips, strip % strips * lanes
    first = lax.axis_index("peer") * rows if plan.cluster > 1 else 0
    leader = lax.axis_index("warpgroup") == 0
    box = lambda k: pl.ds(k * _BOX_ROWS, _BOX_ROWS)
    lanes_of = lambda ref, k: ref.at[b, pl.ds(first + k * _BOX_ROWS, _BOX_ROWS), pl.ds(col, lanes)]

    if plan.prefetch_bytes:
      group = plan.prefetch_bytes // plan.strip_bytes
      wide = plan.prefetch_bytes // input.dtype.itemsize
      first_of_group = (strip % group == 0) | plan.prefetch_all

      @pl.when(leader & first_of_group)
      def _():
        for k in range(boxes):
          plgpu.async_prefetch(
            x_ref.at[b, pl.ds(first + k * _BOX_ROWS, _BOX_ROWS), pl.ds(col // wide * wide, wide)]
          )

    @pl.when(leader)
    def _():
      for k in range(boxes):
        plgpu.copy_gmem_to_smem(lanes_of(x_ref, k), part_ref.at[box(k)], barriers.at[k])

    for k in range(boxes):
      plgpu.barrier_wait(barriers.at[k])
    if plan.direct_stores:
      gather = _gather_to_global(plgpu, rows, lanes, plan.vector_stores)
      gather(n_ref.at[b, pl.ds(col, lanes)], part_ref, o_ref.at[b, :, pl.ds(col, lanes)])
      return
    permute(n_ref.at[b, pl.ds(col, lanes)], part_ref)
    plgpu.commit_smem()  # this warpgroup's writes, visible to TMA
    _block_barrier(plgpu)()  # ... and every warpgroup's

    @pl.when(leader)
    def _():
      for k in range(boxes):
        plgpu.copy_smem_to_gmem(part_ref.at[box(k)], lanes_of(o_ref, k))
      plgpu.wait_smem_to_gmem(0)

  cluster = dict(cluster=(plan.cluster,), cluster_names=("peer",)) if plan.cluster > 1 else {}
  out = plgpu.kernel(
    body,
    out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
    scratch_types=[
      plgpu.SMEM((rows, lanes), x.dtype),
      plgpu.Barrier(num_arrivals=1, num_barriers=boxes),
    ],
    grid=(outer * strips,),
    grid_names=("strip",),
    num_threads=_WARPGROUPS,
    thread_name="warpgroup",
    **cluster,
  )(x, n)
  return lax.bitcast_convert_type(out, input.dtype).reshape(input.shape)


def _permute_in_place(plgpu, rows: int, lanes: int, cluster: int):
  """The exchange, as Mosaic GPU code: thread `i` owns lane `i % lanes` of its block's rows
  `i // lanes + k * (threads / lanes)`; it reads each row's mirrored source (the row itself
  past the lane's length), from the shared memory of whichever block of the cluster holds
  it, waits for the cluster, and writes the values back in place."""
  from jax._src.lib.mlir import ir
  from jax._src.lib.mlir.dialects import arith, gpu, llvm, memref, nvvm
  from jax.experimental.mosaic.gpu import utils as mgpu_utils

  @plgpu.inline_mgpu(arg_types=(plgpu.RefType(), plgpu.RefType()))
  def permute(launch_ctx, lengths, part):
    del launch_ctx
    index, i32 = ir.IndexType.get(), ir.IntegerType.get_signless(32)
    element = ir.MemRefType(part.type).element_type
    constant = lambda v: arith.constant(index, v)
    thread = gpu.thread_id(gpu.Dimension.x)
    lane = arith.remui(thread, constant(lanes))
    first_row = arith.divui(thread, constant(lanes))
    length = arith.index_cast(index, memref.load(lengths, [lane]))
    last = arith.subi(length, constant(1))
    if cluster > 1:  # every block's part has landed before any is read
      nvvm.cluster_arrive(aligned=True)
      nvvm.cluster_wait(aligned=True)
      offset = arith.muli(gpu.cluster_block_id(gpu.Dimension.x), constant(rows))
      base = mgpu_utils.memref_ptr(part)
    local_rows, values = [], []
    for k in range(rows * lanes // _THREADS):
      row = arith.addi(first_row, constant(k * (_THREADS // lanes)))
      local_rows.append(row)
      if cluster > 1:
        row = arith.addi(row, offset)
      inside = arith.cmpi(arith.CmpIPredicate.ult, row, length)
      source = arith.select(inside, arith.subi(last, row), row)
      if cluster == 1:
        values.append(memref.load(part, [source, lane]))
        continue
      peer = arith.index_cast(i32, arith.divui(source, constant(rows)))
      source = arith.addi(arith.muli(arith.remui(source, constant(rows)), constant(lanes)), lane)
      address = mgpu_utils.getelementptr(base, [arith.index_cast(i32, source)], element)
      values.append(llvm.load(element, nvvm.mapa(llvm.PointerType.get(7), address, peer)))
    if cluster > 1:  # every read in the cluster is done before any write
      nvvm.cluster_arrive(aligned=True)
      nvvm.cluster_wait(aligned=True)
    else:
      gpu.barrier()
    for row, value in zip(local_rows, values, strict=True):
      memref.store(value, part, [row, lane])

  return permute


def _gather_to_global(plgpu, rows: int, lanes: int, vector_stores: bool):
  """The exchange with the output written straight to global memory: thread `i` owns `vector`
  consecutive lanes (16 bytes) of rows `i // groups + k * (threads / groups)`; it reads each
  lane's mirrored source from shared memory and stores the row piece with one vector store."""
  from jax._src.lib.mlir import ir
  from jax._src.lib.mlir.dialects import arith, gpu, llvm, memref, vector
  from jax.experimental.mosaic.gpu import utils as mgpu_utils

  @plgpu.inline_mgpu(arg_types=(plgpu.RefType(),) * 3)
  def gather(launch_ctx, lengths, part, out):
    del launch_ctx
    index, i64 = ir.IndexType.get(), ir.IntegerType.get_signless(64)
    element = ir.MemRefType(part.type).element_type
    width = min(lanes, 16 // (mgpu_utils.bitwidth(element) // 8)) if vector_stores else 1
    groups = lanes // width
    row_stride = ir.MemRefType(out.type).get_strides_and_offset()[0][0]
    constant = lambda v: arith.constant(index, v)
    thread = gpu.thread_id(gpu.Dimension.x)
    lane = arith.muli(arith.remui(thread, constant(groups)), constant(width))
    first_row = arith.divui(thread, constant(groups))
    own = [arith.addi(lane, constant(j)) for j in range(width)]
    length = [arith.index_cast(index, memref.load(lengths, [c])) for c in own]
    base = mgpu_utils.memref_ptr(out)
    for k in range(rows * groups // _THREADS):
      row = arith.addi(first_row, constant(k * (_THREADS // groups)))
      piece = []
      for c, n in zip(own, length, strict=True):
        inside = arith.cmpi(arith.CmpIPredicate.ult, row, n)
        source = arith.select(inside, arith.subi(arith.subi(n, constant(1)), row), row)
        piece.append(memref.load(part, [source, c]))
      if width == 1:
        memref.store(piece[0], out, [row, lane])
        continue
      offset = arith.addi(arith.muli(row, constant(row_stride)), lane)
      address = mgpu_utils.getelementptr(base, [arith.index_cast(i64, offset)], element)
      value = vector.from_elements(ir.VectorType.get([width], element), piece)
      llvm.store(value, address, alignment=16)

  return gather


def _block_barrier(plgpu):
  """A barrier across the thread block (Pallas's own barriers span a warpgroup)."""
  from jax._src.lib.mlir.dialects import gpu

  @plgpu.inline_mgpu()
  def barrier(launch_ctx):
    del launch_ctx
    gpu.barrier()

  return barrier
