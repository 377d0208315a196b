"""A GPU kernel (Pallas, Mosaic GPU backend) for REVERSE_SUBSEQUENCES with per-lane lengths.

With a length per lane, the lanes of one output row read different input rows: XLA's gather
fetches each 32-byte sector from L2 once per lane that needs it, 0.45 of a device copy on an
H100 (BENCHMARKS.md). Here one thread block owns a strip of lanes over the whole reversed
axis, as wide as fits in shared memory: 128, 64 or 32 bytes of lanes (one DRAM sector, e.g. 8
float32 lanes), since wider rows reach DRAM faster:

1. TMA copies the strip into shared memory, 256 rows per copy;
2. every thread reads its share of the output from shared memory, each lane from its own
   mirrored row, and stores it straight to the output: a warp writes whole sectors.

One-sector strips are launched in neighbouring pairs, as a thread-block cluster, so that their
TMA copies reach DRAM side by side. DRAM sees each byte read once and written once, in whole
sectors. By kernel time, with a 4096-long axis (one-sector strips): 0.81 of a device copy on an
H100 and 0.71 on an H200 for float32, 0.71 and 0.55 for int8; by wall time, with 1024 to 2048
steps (128- and 64-byte strips), 0.94 to 0.98 and 0.91 to 0.93 for float32 (BENCHMARKS.md).
A bare TMA round trip of one-sector strips runs at 0.84 / 0.75: the rows' width bounds it.
Spreading a wider strip over blocks that read each other's shared memory (distributed shared
memory), or staging it in parts, ran at 0.11 to 0.54 on an H200.

It needs TMA (compute capability 9.0 or newer), and the strip must fit in shared memory:
`applies` checks these on static shapes. The lengths come in clamped to [0, T] as int32, as the
lax path takes them.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
from jax import lax

_SECTOR_BYTES = 32  # DRAM's unit of access
_STRIP_BYTES = (128, 64, _SECTOR_BYTES)  # a strip's row, widest first: wider rows are faster
_BOX_ROWS = 256  # a TMA copy spans at most 256 elements along a dimension
_WARPGROUPS = 4  # 512 threads
_THREADS = 128 * _WARPGROUPS
_MAX_STRIP_BYTES = 192 * 1024  # shared memory is 227 KiB on an H100
_CLUSTER = 2  # neighbouring narrow strips launched together, as one thread-block cluster


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


def _strip_bytes(shape: tuple[int, ...], itemsize: int, axis: int) -> int | None:
  """The widest strip row whose lanes tile the inner axes and whose strip fits shared memory."""
  steps = shape[axis]
  outer = int(np.prod(shape[:axis], dtype=np.int64))
  inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
  for width in _STRIP_BYTES:
    lanes = width // itemsize
    if (
      inner % lanes == 0 and steps * width <= _MAX_STRIP_BYTES and outer * (inner // lanes) < 2**31
    ):
      return width
  return None


def applies(shape: tuple[int, ...], dtype: np.dtype, axis: int) -> bool:
  """Whether REVERSE_SUBSEQUENCES of this static shape along `axis` can use the kernel."""
  itemsize = np.dtype(dtype).itemsize
  return (
    itemsize in (1, 2, 4, 8)
    and shape[axis] % _BOX_ROWS == 0
    and _strip_bytes(shape, itemsize, axis) is not None
    and _mosaic_gpu_available()
    and _gpus_have_tma()
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
  width = _strip_bytes(input.shape, input.dtype.itemsize, axis)
  lanes = width // input.dtype.itemsize
  strips = inner // lanes
  boxes = steps // _BOX_ROWS
  bits = np.dtype(f"uint{8 * input.dtype.itemsize}")  # TMA takes no float64: move bits
  x = lax.bitcast_convert_type(input, bits).reshape(outer, steps, inner)
  n = lengths.reshape(outer, inner)
  gather = _gather_strip(plgpu, steps, lanes)
  cluster = _CLUSTER if width == _SECTOR_BYTES and outer * strips % _CLUSTER == 0 else 1

  def body(x_ref, n_ref, o_ref, strip_ref, barriers):
    block = lax.axis_index("block")
    if cluster > 1:
      block = block * cluster + lax.axis_index("neighbour")
    b, col = block // strips, block % strips * lanes
    rows = lambda k: pl.ds(k * _BOX_ROWS, _BOX_ROWS)

    @pl.when(lax.axis_index("warpgroup") == 0)
    def _():
      for k in range(boxes):
        source = x_ref.at[b, rows(k), pl.ds(col, lanes)]
        plgpu.copy_gmem_to_smem(source, strip_ref.at[rows(k)], barriers.at[k])

    for k in range(boxes):
      plgpu.barrier_wait(barriers.at[k])
    gather(n_ref.at[b, pl.ds(col, lanes)], strip_ref, o_ref.at[b, :, pl.ds(col, lanes)])

  out = plgpu.kernel(
    body,
    out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
    scratch_types=[
      plgpu.SMEM((steps, lanes), x.dtype),
      plgpu.Barrier(num_arrivals=1, num_barriers=boxes),
    ],
    grid=(outer * strips // cluster,),
    grid_names=("block",),
    num_threads=_WARPGROUPS,
    thread_name="warpgroup",
    **(dict(cluster=(cluster,), cluster_names=("neighbour",)) if cluster > 1 else {}),
  )(x, n)
  return lax.bitcast_convert_type(out, input.dtype).reshape(input.shape)


def _gather_strip(plgpu, steps: int, lanes: int):
  """The exchange, as Mosaic GPU code: thread `i` owns lane `i % lanes` of rows
  `i // lanes + k * (threads / lanes)`; for each it reads the row's mirrored source from the
  strip in shared memory (the row itself past the lane's length) and stores it to the output.
  A warp's stores cover whole rows of the strip, so they reach memory as whole sectors."""
  from jax._src.lib.mlir import ir
  from jax._src.lib.mlir.dialects import arith, gpu, memref

  @plgpu.inline_mgpu(arg_types=(plgpu.RefType(),) * 3)
  def gather(launch_ctx, lengths, strip, out):
    del launch_ctx
    index = ir.IndexType.get()
    constant = lambda v: arith.constant(index, v)
    thread = gpu.thread_id(gpu.Dimension.x)
    lane = arith.remui(thread, constant(lanes))
    first_row = arith.divui(thread, constant(lanes))
    length = arith.index_cast(index, memref.load(lengths, [lane]))
    last = arith.subi(length, constant(1))
    for k in range(steps * lanes // _THREADS):
      row = arith.addi(first_row, constant(k * (_THREADS // lanes)))
      inside = arith.cmpi(arith.CmpIPredicate.ult, row, length)
      source = arith.select(inside, arith.subi(last, row), row)
      memref.store(memref.load(strip, [source, lane]), out, [row, lane])

  return gather
