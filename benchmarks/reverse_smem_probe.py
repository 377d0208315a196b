"""Probe: REVERSE_SUBSEQUENCES with per-lane lengths staged in shared memory (Mosaic GPU).

Not part of the library; it records how its REVERSE_SUBSEQUENCES kernel came about
(`dml_jax/_src/kernels/reverse_subsequences_strips_mosaic.py`, once `strip_kernel.py`), and
times that kernel with variants of its tuning, each passed as a `StripConfig`.

Prediction: the Triton kernels stall at 0.44 of a copy because the lanes of one 32-byte
sector read it at different times, so it comes from L2 once per lane. If a thread block owns a
strip of W lanes over the whole axis, copies it into shared memory, and gathers each lane's
mirrored rows from there, DRAM sees each byte once each way, and a strip small enough for
three blocks per SM (W = 4 float32 lanes, 64 KiB) should run at 0.75 or better.

What it found (an H100, BENCHMARKS.md): narrow strips are bounded by the width of a strip's
rows, not by the exchange. A TMA round trip with no gather ran at 0.12 (16-byte rows, batch
fastest), 0.22 (16 bytes, strips fastest) and 0.81 (32 bytes); 128-byte rows reached 0.90.
Plain row loads through L1 did worse (0.21 and 0.39). So the kernel takes 32-byte rows (one
sector) with one block per SM, and gathers at the same speed as the bare round trip.

Later variants of the kernel (in the library at commit 685eb07, measured with this script on
an H100 and an H200, BENCHMARKS.md): wider rows split over a thread-block cluster, each block
reading mirrored values from its peers' shared memory, ran at 0.14 to 0.40 on an H200; an L2
prefetch of the neighbouring strips' sectors lowered 0.69 to 0.49 to 0.63; storing the output
straight from the threads instead of through TMA kept float32 where it was (0.80 / 0.68) and,
with no values held across a barrier, lets float16 and int8 use the kernel (int8 0.71 on an
H100, against 0.16 for XLA's gather). The library kernel now stores that way. Launching
neighbouring 32-byte strips as clusters of two lifted float32 to 0.82 / 0.72, and strips as wide
as shared memory allows reach 0.94 to 0.98 / 0.87 to 0.93 where the axis is at most 3072 long.
Pairs of blocks swapping halves of 64-byte rows (9a493de) and the strip staged in parts with
each output stored once its source is in (62c1cc6) were slower (0.54; 0.11 to 0.22 on an H200).
Strips held all but their last rows, which replace rows a first pass has done with, let a
4096-long float32 axis take 64-byte rows: 0.90 / 0.83 (the "late rows" variants). Packing
float16 and int8 lanes into 32-bit words and doing the row arithmetic in 32 bits rather than on
MLIR's 64-bit index type lifted int8 from 0.73 / 0.55 to 0.77 / 0.63 and float16 from 0.86 /
0.71 to 0.86 / 0.78 (the "bit rows" and "a lane a thread" variants); two blocks an SM, each
holding half as much, were slower for every type (0.51 to 0.69 on an H200). The lengths
copied into shared memory by TMA with the strip, not loaded after it, added 0.01 to 0.04 to
float16 and int8 (the "lengths" variants).

Usage: PYTHONPATH=.:benchmarks python3 benchmarks/reverse_smem_probe.py [--lower] [--only TEXT]
  --lower: only lower every variant for CUDA (no GPU needed), to check the code builds.
  --only TEXT: only the variants whose label contains TEXT (or one of A|B|...).
"""

import functools
import sys

import jax
import jax.numpy as jnp
import numpy as np
from _timing import copy_ceiling, report
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import arith, gpu, memref, vector
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

from dml_jax._src.kernels import reverse_subsequences_strips_mosaic as strips

_BOX = 256  # a TMA copy spans at most 256 elements along each dimension


def _index(value):
  return arith.constant(ir.IndexType.get(), value)


def _grid(n_size, strips, strips_fastest):
  """Mosaic GPU numbers blocks with the last grid axis fastest."""
  if strips_fastest:
    return dict(grid=(n_size, strips), grid_names=("n", "c"))
  return dict(grid=(strips, n_size), grid_names=("c", "n"))


def reverse_by_loads(x, lengths, *, lanes, strips_fastest=True, threads=128):
  """(N, T, C) f32 along axis 1, int32 lengths (N, C) in [0, T]: the strip loaded into shared
  memory with a vector load per row, then each thread writes whole output rows of W lanes."""
  n_size, t_size, c_size = x.shape

  @plgpu.inline_mgpu(arg_types=(plgpu.RefType(),) * 4)
  def strip(launch_ctx, x_strip, len_strip, o_strip, smem):
    del launch_ctx
    index = ir.IndexType.get()
    row = ir.VectorType.get([lanes], ir.MemRefType(smem.type).element_type)
    tid = gpu.thread_id(gpu.Dimension.x)
    rows = [arith.addi(tid, _index(k * threads)) for k in range(t_size // threads)]
    for t in rows:
      vector.store(vector.load(row, x_strip, [t, _index(0)]), smem, [t, _index(0)])
    gpu.barrier()
    n = [arith.index_cast(index, memref.load(len_strip, [_index(c)])) for c in range(lanes)]
    for t in rows:
      out = None
      for c in range(lanes):
        inside = arith.cmpi(arith.CmpIPredicate.ult, t, n[c])
        source = arith.select(inside, arith.subi(arith.subi(n[c], _index(1)), t), t)
        value = memref.load(smem, [source, _index(c)])
        if out is None:
          out = vector.broadcast(row, value)
        else:
          out = vector.insert(value, out, static_position=[c], dynamic_position=[])
      vector.store(out, o_strip, [t, _index(0)])

  def body(x_ref, len_ref, o_ref, smem_ref):
    col = jax.lax.axis_index("c") * lanes
    n = jax.lax.axis_index("n")
    strip(
      x_ref.at[n, :, pl.ds(col, lanes)],
      len_ref.at[n, pl.ds(col, lanes)],
      o_ref.at[n, :, pl.ds(col, lanes)],
      smem_ref,
    )

  return plgpu.kernel(
    body,
    out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
    scratch_types=[plgpu.SMEM((t_size, lanes), x.dtype)],
    **_grid(n_size, c_size // lanes, strips_fastest),
  )(x, lengths)


def tma_round_trip(x, lengths, *, lanes, strips_fastest=True, read_only=True):
  """The strip copied in and out by TMA in 256-row boxes, with no exchange: the speed of the
  memory traffic alone for strips of W lanes. With read_only, a block ends once TMA has read
  its shared memory, not when the writes land."""
  del lengths
  n_size, t_size, c_size = x.shape
  boxes = t_size // _BOX

  def body(x_ref, o_ref, smem_ref, barriers):
    col = jax.lax.axis_index("c") * lanes
    n = jax.lax.axis_index("n")
    rows = lambda k: pl.ds(k * _BOX, _BOX)
    for k in range(boxes):
      plgpu.copy_gmem_to_smem(
        x_ref.at[n, rows(k), pl.ds(col, lanes)], smem_ref.at[rows(k)], barriers.at[k]
      )
    for k in range(boxes):
      plgpu.barrier_wait(barriers.at[k])
      plgpu.copy_smem_to_gmem(smem_ref.at[rows(k)], o_ref.at[n, rows(k), pl.ds(col, lanes)])
    plgpu.wait_smem_to_gmem(0, wait_read_only=read_only)

  return plgpu.kernel(
    body,
    out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
    scratch_types=[
      plgpu.SMEM((t_size, lanes), x.dtype),
      plgpu.Barrier(num_arrivals=1, num_barriers=boxes),
    ],
    **_grid(n_size, c_size // lanes, strips_fastest),
  )(x)


def library_kernel(x, lengths, config=None):
  """The library's kernel (`reverse_lanes`) with `config`, a `StripConfig` (None: the library's
  own). Its fields name what the variants change: `strip_bytes` (rows that wide), `cluster`
  (that many neighbouring strips as one thread-block cluster), `late` (False: strips held
  whole only), `max_strip_bytes` (strips held all but their last rows hold that much),
  `word_bytes` (1: a lane a thread instead of a word of lanes), `row_bits` (64: row arithmetic
  on MLIR's index type), `max_late_lanes` (4: late rows for int8 too), `lengths_by_tma` (False:
  the lengths loaded from global memory by the exchange, the traced code)."""
  return strips.reverse_lanes(x, lengths[:, None, :], axis=1, config=config)


def library(**changes):
  """The library's kernel with its default `StripConfig` changed by `changes`."""
  return functools.partial(library_kernel, config=strips.StripConfig(**changes))


F32, F16, I8 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.int8)
SHAPE = (64, 4096, 1024)
SHORT = (256, 1024, 1024)  # the same bytes, for 128-byte strips that fit shared memory
HALF = (128, 2048, 1024)  # the same bytes, for 64-byte strips
LONG = (32, 8192, 1024)  # the same bytes, too long for any whole strip
VARIANTS = [  # (label, function, shape, dtype, the result is the reversal)
  ("loads, 4 lanes, batch fastest", functools.partial(reverse_by_loads, lanes=4, strips_fastest=False), SHAPE, F32, True),
  ("loads, 4 lanes", functools.partial(reverse_by_loads, lanes=4), SHAPE, F32, True),
  ("loads, 8 lanes", functools.partial(reverse_by_loads, lanes=8), SHAPE, F32, True),
  ("tma trip, 4 lanes, batch fastest", functools.partial(tma_round_trip, lanes=4, strips_fastest=False), SHAPE, F32, False),
  ("tma trip, 4 lanes", functools.partial(tma_round_trip, lanes=4), SHAPE, F32, False),
  ("tma trip, 8 lanes, wait for writes", functools.partial(tma_round_trip, lanes=8, read_only=False), SHAPE, F32, False),
  ("tma trip, 8 lanes", functools.partial(tma_round_trip, lanes=8), SHAPE, F32, False),
  ("tma trip, 32 lanes, T=1024", functools.partial(tma_round_trip, lanes=32), SHORT, F32, False),
  ("tma trip, 8 lanes, T=2048", functools.partial(tma_round_trip, lanes=8), HALF, F32, False),
  ("tma trip, 16 lanes, T=2048", functools.partial(tma_round_trip, lanes=16), HALF, F32, False),
  ("strip_kernel, 32-byte rows, T=2048", library(strip_bytes=(32,)), HALF, F32, True),
  ("strip_kernel, 64-byte rows, T=2048", library(strip_bytes=(64,)), HALF, F32, True),
  ("strip_kernel, 128-byte rows, T=1024", library(strip_bytes=(128,)), SHORT, F32, True),
  *[("strip_kernel, widest rows, T=2048", library_kernel, HALF, t, True) for t in (F32, F16, I8)],
  *[("strip_kernel, widest rows, T=1024", library_kernel, SHORT, t, True) for t in (F32, F16, I8)],
  *[("strip_kernel, as chosen", library_kernel, SHAPE, t, True) for t in (F32, F16, I8)],
  *[("strip_kernel, whole strips", library(late=False), SHAPE, t, True) for t in (F32, F16, I8)],
  *[(f"strip_kernel, late rows, {w}-byte rows, {h} KiB held", library(strip_bytes=(w,), late=True, max_strip_bytes=h * 1024), SHAPE, t, True) for w, h, t in ((64, 192, F32), (64, 208, F32), (64, 224, F32), (64, 224, F16))],
  *[(f"strip_kernel, late rows, {w}-byte rows, {h} KiB held, T=2048", library(strip_bytes=(w,), late=True, max_strip_bytes=h * 1024), HALF, F32, True) for w, h in ((128, 192), (128, 224))],
  *[(f"strip_kernel, late rows, {w}-byte rows, {h} KiB held, T=8192", library(strip_bytes=(w,), late=True, max_strip_bytes=h * 1024), LONG, t, True) for w, h, t in ((32, 192, F32), (32, 224, F32), (32, 224, F16))],
  *[("strip_kernel, a lane a thread", library(word_bytes=1), SHAPE, t, True) for t in (F16, I8)],
  *[("strip_kernel, a word a thread, 32-byte rows", library(strip_bytes=(32,)), SHAPE, t, True) for t in (F16, I8)],
  *[("strip_kernel, a lane a thread, T=2048", library(word_bytes=1), HALF, t, True) for t in (F16, I8)],
  *[(f"strip_kernel, {b}-bit rows", library(row_bits=b), SHAPE, t, True) for b in (64, 32) for t in (F32, F16, I8)],
  *[(f"strip_kernel, {b}-bit rows, a word a thread, 32-byte rows", library(strip_bytes=(32,), row_bits=b), SHAPE, t, True) for b in (64, 32) for t in (F16, I8)],
  *[(f"strip_kernel, two blocks an SM: 32-byte rows, {h} KiB held", library(strip_bytes=(32,), late=True, max_strip_bytes=h * 1024, max_late_lanes=4), SHAPE, t, True) for h in (104, 112) for t in (F32, F16, I8)],
  *[(f"strip_kernel, lengths {'by TMA' if t else 'loaded'}", library(lengths_by_tma=t), s, d, True) for s in (SHAPE, HALF) for d in (F32, F16, I8) for t in (False, True)],
  ("strip_kernel, int8 late: 64-byte rows, 512 late", library(strip_bytes=(64,), max_late_lanes=4), SHAPE, I8, True),
  *[(f"strip_kernel, clusters of {c}", library(cluster=c), SHAPE, t, True) for c in (1, 4, 8) for t in (F32, I8)],
]  # fmt: skip


def _case(rng, shape, dtype):
  x = rng.standard_normal(shape).astype(dtype)
  if dtype == I8:
    x = rng.integers(-128, 128, size=shape).astype(dtype)
  n = rng.integers(0, shape[1] + 1, size=(shape[0], shape[2])).astype(np.int32)
  t = np.arange(shape[1])[None, :, None]
  source = np.where(t < n[:, None, :], n[:, None, :] - 1 - t, t)
  return x, n, np.take_along_axis(x, source, axis=1)


def main():
  """Options: see the module docstring."""
  rng = np.random.default_rng(0)
  only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
  variants = [v for v in VARIANTS if any(part in v[0] for part in only.split("|"))]
  if "--lower" in sys.argv:
    for label, fn, shape, dtype, _ in variants:
      args = (
        jax.ShapeDtypeStruct(shape, dtype),
        jax.ShapeDtypeStruct((shape[0], shape[2]), jnp.int32),
      )
      jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))
      print(f"  {label}: lowered")
    return
  ceiling = copy_ceiling(rng)
  cases = {}
  for label, fn, shape, dtype, reverses in variants:
    if (shape, dtype) not in cases:
      cases[shape, dtype] = _case(rng, shape, dtype)
    x, n, reversed_ = cases[shape, dtype]
    want = reversed_ if reverses else x
    name = f"{label} [{dtype.name}]"
    report(name, jax.jit(fn), (jnp.asarray(x), jnp.asarray(n)), want, 2 * x.nbytes, ceiling, 60)


if __name__ == "__main__":
  main()
