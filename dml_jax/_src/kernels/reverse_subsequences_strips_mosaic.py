"""REVERSE_SUBSEQUENCES with per-lane lengths as a Pallas kernel (Mosaic GPU backend), in strips.

With a length per lane, the lanes of one output row read different input rows: XLA's gather
fetches each 32-byte sector from L2 once per lane that needs it (benchmark case
`reverse_subsequences`). Here one
thread block owns a strip of lanes over the whole reversed axis, 128, 64 or 32 bytes of lanes
(one DRAM sector, e.g. 8 float32 lanes) a row, the widest that fits, since wider rows reach
DRAM faster:

1. TMA copies the strip into shared memory, 256 rows per copy, and its lanes' lengths;
2. every thread reads its share of the output from shared memory, a 32-bit word at a time (one
   float32 lane, or two float16 or four int8 lanes packed), each lane from its own mirrored row,
   and stores the word straight to the output: a warp writes whole sectors.

For narrow types the exchange's own instructions bound the kernel more than memory does
(case `reverse_subsequences_i8`), so its row arithmetic is 32-bit (MLIR's index type is 64-bit on the GPU, two
instructions an operation) and narrow lanes travel packed: one store a word, not one a lane.

A strip too long for shared memory may still fit all but its last rows: output row t reads
row t or, mirrored, a row below T - t, so a first pass over the held rows stores most of the
output and keeps the rest of its first rows in registers; then the last rows replace rows no
longer read, and a second pass stores what is left (`_late_pass`). So a 4096-long float32 axis
takes 64-byte rows instead of 32-byte ones, and an 8192-long one fits at all.

One-sector strips are launched in neighbouring pairs, as a thread-block cluster, so that their
TMA copies reach DRAM side by side. DRAM sees each byte read once and written once, in whole
sectors. The designs that ran slower (BENCHMARKS.md at commit 688224b has their figures):
spreading a strip over blocks that read each other's shared memory (distributed shared
memory), storing partial rows in several passes, two blocks an SM holding half as much each,
late rows for int8 (four lanes a word cost more than wider rows gain).

It needs TMA (compute capability 9.0 or newer), and the strip must fit in shared memory:
`applies` checks these on static shapes (`availability` says whether the GPUs have TMA). The
lengths come in clamped to [0, T] as int32, as the lax path takes them. The tuning is a
`StripConfig`; `reverse_smem_probe` (a probe at commit 04e086b) passed variants of it. `forms`
runs the kernel on CUDA GPUs only, where the lanes of a row do not all share one length.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import numpy as np
from jax import lax

from dml_jax._src.kernels import availability
from dml_jax._src.words import Words

if TYPE_CHECKING:
  from dml_jax._src.jax_compat import mlir_ir as ir

_SECTOR_BYTES = 32  # DRAM's unit of access
_BOX_ROWS = 256  # a TMA copy spans at most 256 elements along a dimension
_MIN_COPY_BYTES = 128  # Pallas's TMA copies move a multiple of 128 bytes (a warpgroup's threads)
_WARPGROUP_THREADS = 128


@dataclasses.dataclass(frozen=True)
class StripConfig:
  """The strip kernel's tuning (`run.py --sweep reverse_subsequences_strips_mosaic`).

  Attributes:
    strip_bytes: a strip's row, in bytes of lanes, widest first: the kernel takes the widest
      that fits (wider rows reach DRAM faster).
    max_strip_bytes: the most of a strip held in shared memory (227 KiB on an H100).
    warpgroups: a thread block's warpgroups of 128 threads.
    cluster: neighbouring one-sector strips launched together, as one thread-block cluster.
    late: whether strips too long to hold whole may be held all but their last rows.
    max_staged_registers: the words of such a strip's first rows of output a thread keeps.
    max_late_lanes: lanes a word where late rows pay (not int8's 4: case
      `reverse_subsequences_i8`).
    word_bytes: a thread moves whole words of this many bytes: 4 int8 or 2 float16 lanes at
      once (1: a lane a thread).
    row_bits: the exchange's row arithmetic: 32-bit, or 64 (MLIR's index type on the GPU).
    lengths_by_tma: whether the strip's lengths come to shared memory with its rows (by TMA)
      rather than loaded after them.

  Examples:
    >>> StripConfig().words(1)  # int8: four lanes a 32-bit word
    Words(itemsize=1, nbytes=4)
    >>> StripConfig(strip_bytes=(32,), late=False).threads
    512
  """

  strip_bytes: tuple[int, ...] = (128, 64, _SECTOR_BYTES)
  max_strip_bytes: int = 224 * 1024
  warpgroups: int = 4
  cluster: int = 2
  late: bool = True
  max_staged_registers: int = 32
  max_late_lanes: int = 2
  word_bytes: int = 4
  row_bits: int = 32
  lengths_by_tma: bool = True

  @property
  def threads(self) -> int:
    return _WARPGROUP_THREADS * self.warpgroups

  def words(self, itemsize: int) -> Words:
    """What a thread moves at once: words of `word_bytes`, or single lanes where those are
    wider. The kernel sees every input as unsigned words (TMA takes no float64 either: it
    moves their bits)."""
    return Words(itemsize, max(self.word_bytes, itemsize))


DEFAULT = StripConfig()


class Plan(NamedTuple):
  """How the kernel holds a strip: `width` bytes of lanes a row, and `late` rows (0: none) at
  the end of the axis that shared memory takes only after a first pass over the others."""

  width: int
  late: int


def plan(
  shape: tuple[int, ...], itemsize: int, axis: int, config: StripConfig | None = None
) -> Plan | None:
  """The widest strip whose lanes tile the inner axes and which fits shared memory whole or,
  held all but its last rows, with the rest of the kernel's constraints (see `_late_pass`).

  Examples:
    >>> plan((2, 4096, 1024), 4, 1)  # float32: 64-byte rows, the last 512 held late
    Plan(width=64, late=512)
    >>> plan((2, 4096, 1024), 4, 1, StripConfig(late=False))
    Plan(width=32, late=0)
  """
  config = DEFAULT if config is None else config
  steps = shape[axis]
  outer = int(np.prod(shape[:axis], dtype=np.int64))
  inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
  for width in config.strip_bytes:
    lanes = width // itemsize
    if inner % lanes or outer * (inner // lanes) >= 2**31:
      continue
    if steps * width <= config.max_strip_bytes:
      return Plan(width, late=0)
    late = steps - config.max_strip_bytes // width // _BOX_ROWS * _BOX_ROWS
    words = config.words(itemsize)
    staged = late * (width // words.nbytes) // config.threads  # a thread's staged words
    registers = staged * max(1, words.nbytes // 4)
    fits = 2 * late <= steps - late and registers <= config.max_staged_registers
    if config.late and words.lanes <= config.max_late_lanes and fits:
      return Plan(width, late)
  return None


def applies(
  shape: tuple[int, ...], dtype: np.dtype, axis: int, config: StripConfig | None = None
) -> bool:
  """Whether REVERSE_SUBSEQUENCES of this static shape along `axis` can use the kernel.

  Examples:
    >>> f32 = np.dtype(np.float32)
    >>> can_run = availability.probe().mosaic_gpu and availability.probe().tma
    >>> applies((2, 256, 64), f32, 1) == can_run
    True
    >>> applies((2, 300, 64), f32, 1)  # the axis is not whole 256-row TMA boxes
    False
  """
  itemsize = np.dtype(dtype).itemsize
  can_run = availability.probe()
  return (
    itemsize in (1, 2, 4, 8)
    and shape[axis] % _BOX_ROWS == 0
    and plan(shape, itemsize, axis, config) is not None
    and can_run.mosaic_gpu
    and can_run.tma
  )


def reverse_lanes(
  input: jax.Array, lengths: jax.Array, *, axis: int, config: StripConfig | None = None
) -> jax.Array:
  """The kernel: `input` reversed along `axis`, each lane over its first `lengths` elements.

  `lengths` has `input`'s shape with 1 on `axis`, int32, already clamped to [0, size]. The shape
  must have a `plan` under `config`; the kernel runs on CUDA GPUs with TMA only (it lowers for
  them anywhere).
  """
  from jax.experimental import pallas as pl  # imported late: only CUDA programs trace it
  from jax.experimental.pallas import mosaic_gpu as plgpu

  steps = input.shape[axis]
  outer = int(np.prod(input.shape[:axis], dtype=np.int64))
  inner = int(np.prod(input.shape[axis + 1 :], dtype=np.int64))
  config = DEFAULT if config is None else config
  strip_plan = plan(input.shape, input.dtype.itemsize, axis, config)
  assert strip_plan is not None  # the caller checked `applies`
  words = config.words(input.dtype.itemsize)
  lanes = strip_plan.width // input.dtype.itemsize
  width = strip_plan.width // words.nbytes  # a strip's row, in words
  strips = inner // lanes
  boxes = steps // _BOX_ROWS
  x = words.pack(input.reshape(outer, steps, inner))
  n = lengths.reshape(outer, inner)
  one_sector = strip_plan.width == _SECTOR_BYTES
  cluster = config.cluster if one_sector and outer * strips % config.cluster == 0 else 1
  late_boxes = strip_plan.late // _BOX_ROWS
  held_boxes = boxes - late_boxes
  ints = _Ints(config.row_bits)
  lengths_box = max(lanes, _MIN_COPY_BYTES // n.dtype.itemsize)  # the strip's, then the next's
  by_tma = config.lengths_by_tma and lengths_box <= inner
  if strip_plan.late:
    first, second = _late_pass(plgpu, steps, strip_plan.late, width, words, ints, config.warpgroups)
  else:
    gather = _gather_strip(plgpu, steps, width, words, ints, config.threads)

  def body(x_ref, n_ref, o_ref, strip_ref, lengths_ref, barriers, lengths_barrier):
    block = lax.axis_index("block")
    if cluster > 1:
      block = block * cluster + lax.axis_index("neighbour")
    b, strip = block // strips, block % strips
    rows = lambda k: pl.ds(k * _BOX_ROWS, _BOX_ROWS)
    columns = pl.ds(strip * width, width)
    lengths, out = n_ref.at[b, pl.ds(strip * lanes, lanes)], o_ref.at[b, :, columns]
    lengths_box_in = n_ref.at[b, pl.ds(strip * lanes, lengths_box)]  # zeros past the end

    def load(boxes_, slot, with_lengths=False):  # TMA copies into the strip's boxes, then wait
      @pl.when(lax.axis_index("warpgroup") == 0)
      def _():
        if with_lengths:  # a global load after the copies would wait for them, then for itself
          plgpu.copy_gmem_to_smem(lengths_box_in, lengths_ref, lengths_barrier)
        for k, j in zip(boxes_, slot, strict=True):
          source = x_ref.at[b, rows(k), columns]
          plgpu.copy_gmem_to_smem(source, strip_ref.at[rows(j)], barriers.at[k])

      for k in boxes_:
        plgpu.barrier_wait(barriers.at[k])
      if with_lengths:
        plgpu.barrier_wait(lengths_barrier)

    load(range(held_boxes), range(held_boxes), with_lengths=by_tma)
    if by_tma:
      lengths = lengths_ref
    if not strip_plan.late:
      gather(lengths, strip_ref, out)
      return
    staged = first(lengths, strip_ref, out)
    load(range(held_boxes, boxes), range(late_boxes, 2 * late_boxes))
    second(lengths, strip_ref, out, staged)

  # Any: the keywords of plgpu.kernel are of several types
  clusters: dict[str, Any] = (
    dict(cluster=(cluster,), cluster_names=("neighbour",)) if cluster > 1 else {}
  )
  out = plgpu.kernel(
    body,
    out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
    scratch_types=[
      plgpu.SMEM((held_boxes * _BOX_ROWS, width), x.dtype),
      plgpu.SMEM((lengths_box,), n.dtype),
      plgpu.Barrier(num_arrivals=1, num_barriers=boxes),
      plgpu.Barrier(num_arrivals=1),
    ],
    grid=(outer * strips // cluster,),
    grid_names=("block",),
    num_threads=config.warpgroups,
    thread_name="warpgroup",
    **clusters,
  )(x, n)
  return words.unpack(out, input.dtype).reshape(input.shape)


def _constant(result: ir.Type, value: Any) -> ir.Value:
  """Mosaic GPU code: `arith.constant(result, value)`, as jaxlib's arith.py defines it. It
  replaces the generated constant(value, *, results), which is all a type checker sees."""
  from dml_jax._src.jax_compat import mlir_arith as arith

  constant: Callable[..., ir.Value] = arith.constant
  return constant(result, value)


class _Ints(NamedTuple):
  """Mosaic GPU code: the integers of the exchange's row arithmetic, `bits` wide (64: MLIR's
  index type, as memrefs are indexed; 32: cast to it only there)."""

  bits: int

  @property
  def type(self) -> ir.Type:
    from dml_jax._src.jax_compat import mlir_ir as ir

    return ir.IndexType.get() if self.bits == 64 else ir.IntegerType.get_signless(self.bits)

  def const(self, value: int) -> ir.Value:
    return _constant(self.type, value)

  def of(self, value):
    """An index or an integer of another width, as one of these."""
    from dml_jax._src.jax_compat import mlir_arith as arith

    return value if value.type == self.type else arith.index_castui(self.type, value)

  def at(self, *values):
    """Memref indices of these."""
    from dml_jax._src.jax_compat import mlir_arith as arith
    from dml_jax._src.jax_compat import mlir_ir as ir

    index = ir.IndexType.get()
    return [v if v.type == index else arith.index_castui(index, v) for v in values]


def _thread_view(width: int, words: Words, ints: _Ints, threads: int) -> Callable[..., Any]:
  """Mosaic GPU code shared by the exchanges. Thread `i` owns word `i % width` of rows
  `i // width + k * (threads / width)`: `start(lengths)` gives its word, `rows(begin, end)` (its
  rows in [begin, end)) and `sources(row)` (for each of the word's lanes, the row that lane of
  an output row reads: mirrored below the lane's length, else itself). `threads` is the
  launch's thread count."""
  from dml_jax._src.jax_compat import mlir_arith as arith
  from dml_jax._src.jax_compat import mlir_gpu as gpu
  from dml_jax._src.jax_compat import mlir_memref as memref

  step = threads // width  # rows between a thread's rows

  def start(lengths):
    thread = ints.of(gpu.thread_id(gpu.Dimension.x))
    word = arith.remui(thread, ints.const(width))
    first_row = arith.divui(thread, ints.const(width))
    first_lane = arith.muli(word, ints.const(words.lanes))
    lanes = [arith.addi(first_lane, ints.const(j)) for j in range(words.lanes)]
    lengths = [ints.of(memref.load(lengths, ints.at(lane))) for lane in lanes]
    last = [arith.subi(length, ints.const(1)) for length in lengths]

    def rows(begin, end):
      return (arith.addi(first_row, ints.const(row)) for row in range(begin, end, step))

    def sources(row):
      return [
        arith.select(arith.cmpi(arith.CmpIPredicate.ult, row, n), arith.subi(m, row), row)
        for n, m in zip(lengths, last, strict=True)
      ]

    return word, rows, sources

  return start


def _lane_masks(strip: Any, words: Words) -> list[Any]:
  """Mosaic GPU code: each lane's bits of a word of `strip`, as constants (None: a lane a word)."""
  from dml_jax._src.jax_compat import mlir_ir as ir

  if words.lanes == 1:
    return [None]
  element = ir.MemRefType(strip.type).element_type
  ones = (1 << words.bits) - 1
  signed = lambda v: v - (1 << 8 * words.nbytes) if v >> (8 * words.nbytes - 1) else v
  return [
    _constant(element, ir.IntegerAttr.get(element, signed(ones << (j * words.bits))))
    for j in range(words.lanes)
  ]


def _word(strip, column, sources, masks, ints, keep=None):
  """Mosaic GPU code: the word whose lane j is lane j of `strip`'s row `sources[j]`, at word
  `column`; with `keep`, only the lanes j where `keep[j]` holds, the others zero."""
  from dml_jax._src.jax_compat import mlir_arith as arith
  from dml_jax._src.jax_compat import mlir_memref as memref

  value: ir.Value | None = None
  for j, (source, mask) in enumerate(zip(sources, masks, strict=True)):
    part = memref.load(strip, ints.at(source, column))
    if mask is not None:
      part = arith.andi(part, mask)
    if keep is not None:
      part = arith.select(keep[j], part, _zero(part))
    value = part if value is None else arith.ori(value, part)
  return value


def _store_from_held(strip, out, word, rows, sources, masks, ints):
  """Mosaic GPU code: each of the thread's `rows` of the output, from its sources in `strip`."""
  from dml_jax._src.jax_compat import mlir_memref as memref

  for row in rows:
    memref.store(_word(strip, word, sources(row), masks, ints), out, ints.at(row, word))


def _zero(like):
  from dml_jax._src.jax_compat import mlir_ir as ir

  return _constant(like.type, ir.IntegerAttr.get(like.type, 0))


def _gather_strip(
  plgpu: types.ModuleType, steps: int, width: int, words: Words, ints: _Ints, threads: int
) -> Callable[..., Any]:
  """The exchange, as Mosaic GPU code (threads laid out as in `_thread_view`): every thread
  reads each of its rows' mirrored sources from the strip in shared memory (the row itself past
  a lane's length) and stores the word to the output. A warp's stores cover whole rows of the
  strip, so they reach memory as whole sectors."""
  start = _thread_view(width, words, ints, threads)

  @plgpu.inline_mgpu(arg_types=(plgpu.RefType(),) * 3)
  def gather(launch_ctx, lengths, strip, out):
    del launch_ctx
    word, rows, sources = start(lengths)
    masks = _lane_masks(strip, words)
    _store_from_held(strip, out, word, rows(0, steps), sources, masks, ints)

  return gather


def _late_pass(
  plgpu: types.ModuleType,
  steps: int,
  late: int,
  width: int,
  words: Words,
  ints: _Ints,
  warpgroups: int,
) -> tuple[Callable[..., Any], Callable[..., Any]]:
  """The exchange of a strip held all but its last `late` rows, as two pieces of Mosaic GPU code.

  Output row t reads input row t or, mirrored, a row below `steps - t`. So with rows
  [0, held) in shared memory (held = steps - late >= 2 late), `first` stores output rows
  [late, held) and keeps in registers the lanes of output rows [0, late) whose source is held.
  Rows [late, held) are then no longer read: the late rows replace rows [late, 2 late), and
  `second` stores output rows [held, steps) (whose sources are late rows or rows below `late`)
  and rows [0, late), adding the lanes whose source is late. Every output row leaves whole, once.
  """
  from jax.experimental.mosaic import gpu as mgpu

  from dml_jax._src.jax_compat import mlir_arith as arith
  from dml_jax._src.jax_compat import mlir_gpu as gpu
  from dml_jax._src.jax_compat import mlir_ir as ir
  from dml_jax._src.jax_compat import mlir_memref as memref
  from dml_jax._src.jax_compat import mlir_vector as vector

  held = steps - late
  word_dtype = np.dtype(f"uint{8 * words.nbytes}")
  staged_shape = (late * width // warpgroups,)  # a warpgroup's staged words, one register each
  staged_layout = plgpu.Layout.WG_STRIDED(staged_shape, vec_size=1)
  staged_type = plgpu.ShapeDtypeStruct(staged_shape, word_dtype, layout=staged_layout)
  start = _thread_view(width, words, ints, _WARPGROUP_THREADS * warpgroups)

  def slot(source):  # whether the source is a late row, and where it is held
    is_late = arith.cmpi(arith.CmpIPredicate.uge, source, ints.const(held))
    return is_late, arith.select(is_late, arith.subi(source, ints.const(held - late)), source)

  @plgpu.inline_mgpu(arg_types=(plgpu.RefType(),) * 3, return_type=staged_type)
  def first(launch_ctx, lengths, strip, out):
    del launch_ctx
    word, rows, sources = start(lengths)
    masks = _lane_masks(strip, words)
    _store_from_held(strip, out, word, rows(late, held), sources, masks, ints)
    vector_type = ir.VectorType.get([1], ir.MemRefType(strip.type).element_type)
    staged = []
    for row in rows(0, late):
      row_sources = sources(row)
      keep = [arith.cmpi(arith.CmpIPredicate.ult, s, ints.const(held)) for s in row_sources]
      at = [arith.select(k, s, ints.const(0)) for k, s in zip(keep, row_sources, strict=True)]
      staged.append(vector.broadcast(vector_type, _word(strip, word, at, masks, ints, keep)))
    gpu.barrier()  # no thread reads rows [late, held) any more
    return mgpu.FragmentedArray(
      _registers=np.array(staged), _layout=staged_layout.to_mgpu(), _is_signed=False
    )

  @plgpu.inline_mgpu(arg_types=(plgpu.RefType(),) * 3 + (staged_layout,))
  def second(launch_ctx, lengths, strip, out, staged):
    del launch_ctx
    word, rows, sources = start(lengths)
    masks = _lane_masks(strip, words)
    in_strip = lambda row: [slot(source)[1] for source in sources(row)]
    _store_from_held(strip, out, word, rows(held, steps), in_strip, masks, ints)
    for row, register in zip(rows(0, late), staged.registers, strict=True):
      slots = [slot(source) for source in sources(row)]
      is_late = [late_ for late_, _ in slots]
      at = [arith.select(late_, held_at, ints.const(0)) for late_, held_at in slots]
      kept = vector.extract(register, static_position=[0], dynamic_position=[])
      value = arith.ori(kept, _word(strip, word, at, masks, ints, is_late))
      memref.store(value, out, ints.at(row, word))

  return first, second
