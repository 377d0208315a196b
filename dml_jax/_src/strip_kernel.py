"""A GPU kernel (Pallas, Mosaic GPU backend) for REVERSE_SUBSEQUENCES with per-lane lengths.

With a length per lane, the lanes of one output row read different input rows: XLA's gather
fetches each 32-byte sector from L2 once per lane that needs it, 0.45 of a device copy on an
H100 (BENCHMARKS.md). Here one thread block owns a strip of lanes over the whole reversed
axis, 128, 64 or 32 bytes of lanes (one DRAM sector, e.g. 8 float32 lanes) a row, the widest
that fits, since wider rows reach DRAM faster:

1. TMA copies the strip into shared memory, 256 rows per copy;
2. every thread reads its share of the output from shared memory, each lane from its own
   mirrored row, and stores it straight to the output: a warp writes whole sectors.

A strip too long for shared memory may still fit all but its last rows: output row t reads
row t or, mirrored, a row below T - t, so a first pass over the held rows stores most of the
output and keeps the rest of its first rows in registers; then the last rows replace rows no
longer read, and a second pass stores what is left (`_late_pass`). So a 4096-long float32 axis
takes 64-byte rows instead of 32-byte ones, and an 8192-long one fits at all.

One-sector strips are launched in neighbouring pairs, as a thread-block cluster, so that their
TMA copies reach DRAM side by side. DRAM sees each byte read once and written once, in whole
sectors. By kernel time, float32 with a 4096-long axis (64-byte rows, the last 512 late): 0.89
of a device copy on an H100 and 0.82 on an H200; int8 (one-sector strips) 0.71 and 0.55; by
wall time, with 1024 to 2048 steps (128-byte rows), 0.95 to 0.98 and 0.92 to 0.93 for float32
(BENCHMARKS.md). Spreading a strip over blocks that read each other's shared memory
(distributed shared memory), or storing partial rows in several passes, ran at 0.11 to 0.54
on an H200.

It needs TMA (compute capability 9.0 or newer), and the strip must fit in shared memory:
`applies` checks these on static shapes. The lengths come in clamped to [0, T] as int32, as the
lax path takes them.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import numpy as np
from jax import lax

_SECTOR_BYTES = 32  # DRAM's unit of access
_STRIP_BYTES = (128, 64, _SECTOR_BYTES)  # a strip's row, widest first: wider rows are faster
_BOX_ROWS = 256  # a TMA copy spans at most 256 elements along a dimension
_WARPGROUPS = 4  # 512 threads
_THREADS = 128 * _WARPGROUPS
_MAX_STRIP_BYTES = 224 * 1024  # of a strip held in shared memory (227 KiB on an H100)
_CLUSTER = 2  # neighbouring narrow strips launched together, as one thread-block cluster
_LATE = True  # strips too long to hold whole may be held all but their last rows
_MAX_STAGED_REGISTERS = 32  # values of such a strip's first rows of output a thread keeps


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


class _Plan(NamedTuple):
  """How the kernel holds a strip: `width` bytes of lanes a row, and `late` rows (0: none) at
  the end of the axis that shared memory takes only after a first pass over the others."""

  width: int
  late: int


def _plan(shape: tuple[int, ...], itemsize: int, axis: int) -> _Plan | None:
  """The widest strip whose lanes tile the inner axes and which fits shared memory whole or,
  held all but its last rows, with the rest of the kernel's constraints (see `_late_pass`)."""
  steps = shape[axis]
  outer = int(np.prod(shape[:axis], dtype=np.int64))
  inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
  for width in _STRIP_BYTES:
    lanes = width // itemsize
    if inner % lanes or outer * (inner // lanes) >= 2**31:
      continue
    if steps * width <= _MAX_STRIP_BYTES:
      return _Plan(width, late=0)
    late = steps - _MAX_STRIP_BYTES // width // _BOX_ROWS * _BOX_ROWS
    registers = late * lanes // _THREADS * max(1, itemsize // 4)  # a thread's staged values
    if _LATE and 2 * late <= steps - late and registers <= _MAX_STAGED_REGISTERS:
      return _Plan(width, late)
  return None


def applies(shape: tuple[int, ...], dtype: np.dtype, axis: int) -> bool:
  """Whether REVERSE_SUBSEQUENCES of this static shape along `axis` can use the kernel."""
  itemsize = np.dtype(dtype).itemsize
  return (
    itemsize in (1, 2, 4, 8)
    and shape[axis] % _BOX_ROWS == 0
    and _plan(shape, itemsize, axis) is not None
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
  plan = _plan(input.shape, input.dtype.itemsize, axis)
  lanes = plan.width // input.dtype.itemsize
  strips = inner // lanes
  boxes = steps // _BOX_ROWS
  bits = np.dtype(f"uint{8 * input.dtype.itemsize}")  # TMA takes no float64: move bits
  x = lax.bitcast_convert_type(input, bits).reshape(outer, steps, inner)
  n = lengths.reshape(outer, inner)
  cluster = _CLUSTER if plan.width == _SECTOR_BYTES and outer * strips % _CLUSTER == 0 else 1
  late_boxes = plan.late // _BOX_ROWS
  held_boxes = boxes - late_boxes
  if plan.late:
    first, second = _late_pass(plgpu, steps, plan.late, lanes, bits)
  else:
    gather = _gather_strip(plgpu, steps, lanes)

  def body(x_ref, n_ref, o_ref, strip_ref, barriers):
    block = lax.axis_index("block")
    if cluster > 1:
      block = block * cluster + lax.axis_index("neighbour")
    b, col = block // strips, block % strips * lanes
    rows = lambda k: pl.ds(k * _BOX_ROWS, _BOX_ROWS)
    lengths, out = n_ref.at[b, pl.ds(col, lanes)], o_ref.at[b, :, pl.ds(col, lanes)]

    def load(boxes_, slot):  # TMA copies of input boxes into the strip's boxes, then wait
      @pl.when(lax.axis_index("warpgroup") == 0)
      def _():
        for k, j in zip(boxes_, slot, strict=True):
          source = x_ref.at[b, rows(k), pl.ds(col, lanes)]
          plgpu.copy_gmem_to_smem(source, strip_ref.at[rows(j)], barriers.at[k])

      for k in boxes_:
        plgpu.barrier_wait(barriers.at[k])

    load(range(held_boxes), range(held_boxes))
    if not plan.late:
      gather(lengths, strip_ref, out)
      return
    staged = first(lengths, strip_ref, out)
    load(range(held_boxes, boxes), range(late_boxes, 2 * late_boxes))
    second(lengths, strip_ref, out, staged)

  out = plgpu.kernel(
    body,
    out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
    scratch_types=[
      plgpu.SMEM((held_boxes * _BOX_ROWS, lanes), x.dtype),
      plgpu.Barrier(num_arrivals=1, num_barriers=boxes),
    ],
    grid=(outer * strips // cluster,),
    grid_names=("block",),
    num_threads=_WARPGROUPS,
    thread_name="warpgroup",
    **(dict(cluster=(cluster,), cluster_names=("neighbour",)) if cluster > 1 else {}),
  )(x, n)
  return lax.bitcast_convert_type(out, input.dtype).reshape(input.shape)


def _thread_view(lanes: int):
  """Mosaic GPU code shared by the exchanges. Thread `i` owns lane `i % lanes` of rows
  `i // lanes + k * (threads / lanes)`: `start(lengths)` gives its lane, `rows(begin, end)` (its
  rows in [begin, end)) and `source(row)` (the row an output row reads: mirrored below the
  lane's length, else itself). The thread count is read here, at trace time, as the launch's."""
  from jax._src.lib.mlir import ir
  from jax._src.lib.mlir.dialects import arith, gpu, memref

  step = _THREADS // lanes  # rows between a thread's rows

  def start(lengths):
    index = ir.IndexType.get()
    thread = gpu.thread_id(gpu.Dimension.x)
    lane = arith.remui(thread, _index(lanes))
    first_row = arith.divui(thread, _index(lanes))
    length = arith.index_cast(index, memref.load(lengths, [lane]))
    last = arith.subi(length, _index(1))

    def rows(begin, end):
      return (arith.addi(first_row, _index(row)) for row in range(begin, end, step))

    def source(row):
      inside = arith.cmpi(arith.CmpIPredicate.ult, row, length)
      return arith.select(inside, arith.subi(last, row), row)

    return lane, rows, source

  return start


def _store_from_held(strip, out, lane, rows, source):
  """Mosaic GPU code: each of the thread's `rows` of the output, from its source in `strip`."""
  from jax._src.lib.mlir.dialects import memref

  for row in rows:
    memref.store(memref.load(strip, [source(row), lane]), out, [row, lane])


def _index(value: int):
  from jax._src.lib.mlir import ir
  from jax._src.lib.mlir.dialects import arith

  return arith.constant(ir.IndexType.get(), value)


def _gather_strip(plgpu, steps: int, lanes: int):
  """The exchange, as Mosaic GPU code (threads laid out as in `_thread_view`): every thread
  reads each of its rows' mirrored source from the strip in shared memory (the row itself past
  the lane's length) and stores it to the output. A warp's stores cover whole rows of the
  strip, so they reach memory as whole sectors."""
  start = _thread_view(lanes)

  @plgpu.inline_mgpu(arg_types=(plgpu.RefType(),) * 3)
  def gather(launch_ctx, lengths, strip, out):
    del launch_ctx
    lane, rows, source = start(lengths)
    _store_from_held(strip, out, lane, rows(0, steps), source)

  return gather


def _late_pass(plgpu, steps: int, late: int, lanes: int, bits: np.dtype):
  """The exchange of a strip held all but its last `late` rows, as two pieces of Mosaic GPU code.

  Output row t reads input row t or, mirrored, a row below `steps - t`. So with rows
  [0, held) in shared memory (held = steps - late >= 2 late), `first` stores output rows
  [late, held) and keeps in registers each value of output rows [0, late) whose source is held.
  Rows [late, held) are then no longer read: the late rows replace rows [late, 2 late), and
  `second` stores output rows [held, steps) (whose sources are late rows or rows below `late`)
  and rows [0, late), reading the values whose source is late. Every output row leaves whole,
  once.
  """
  from jax._src.lib.mlir import ir
  from jax._src.lib.mlir.dialects import arith, gpu, memref, vector
  from jax.experimental.mosaic import gpu as mgpu

  held = steps - late
  staged_shape = (late * lanes // _WARPGROUPS,)  # a warpgroup's staged values, one register each
  staged_layout = plgpu.Layout.WG_STRIDED(staged_shape, vec_size=1)
  staged_type = plgpu.ShapeDtypeStruct(staged_shape, bits, layout=staged_layout)
  start = _thread_view(lanes)

  def slot(source):  # whether the source is a late row, and where it is held
    is_late = arith.cmpi(arith.CmpIPredicate.uge, source, _index(held))
    return is_late, arith.select(is_late, arith.subi(source, _index(held - late)), source)

  @plgpu.inline_mgpu(arg_types=(plgpu.RefType(),) * 3, return_type=staged_type)
  def first(launch_ctx, lengths, strip, out):
    del launch_ctx
    lane, rows, source = start(lengths)
    _store_from_held(strip, out, lane, rows(late, held), source)
    element = ir.VectorType.get([1], ir.MemRefType(strip.type).element_type)
    staged = []
    for row in rows(0, late):
      is_late, _ = slot(source(row))
      value = memref.load(strip, [arith.select(is_late, _index(0), source(row)), lane])
      staged.append(vector.broadcast(element, value))
    gpu.barrier()  # no thread reads rows [late, held) any more
    return mgpu.FragmentedArray(
      _registers=np.array(staged), _layout=staged_layout.to_mgpu(), _is_signed=False
    )

  @plgpu.inline_mgpu(arg_types=(plgpu.RefType(),) * 3 + (staged_layout,))
  def second(launch_ctx, lengths, strip, out, staged):
    del launch_ctx
    lane, rows, source = start(lengths)
    _store_from_held(strip, out, lane, rows(held, steps), lambda row: slot(source(row))[1])
    for row, register in zip(rows(0, late), staged.registers, strict=True):
      is_late, held_at = slot(source(row))
      value = memref.load(strip, [arith.select(is_late, held_at, _index(0)), lane])
      kept = vector.extract(register, static_position=[0], dynamic_position=[])
      memref.store(arith.select(is_late, value, kept), out, [row, lane])

  return first, second
