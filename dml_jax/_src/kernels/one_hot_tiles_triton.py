"""ONE_HOT as a Pallas kernel (Triton backend) that writes the output in wide tiles.

ONE_HOT writes an output `depth` times the size of its indices and reads almost nothing, so
the write bandwidth bounds it, where XLA's fused compare-and-select falls short on an H200
(benchmark cases `one_hot`, `one_hot_last`). Here each program compares an iota with the positions it loads and writes
its tile with evict-first stores:

- along the last axis, one output row of up to 1024 elements a program (1.08 / 1.10 of the
  copy on an H100 / H200);
- along an earlier axis, the output is (depth, inner) slabs, and a program writes 2 rows of
  up to 1024 contiguous columns, one row after the other, from one load of those columns'
  positions; programs side by side take side-by-side columns, so the stores sweep the output
  in order as a fill does. The positions are loaded in the narrowest integer type that holds
  `depth` (int16 for depth 1024): they are read again for every pair of rows, and their
  bytes compete with the stores for L2. (32, 1024) tiles of int32 positions took 1.000 ms on
  an H200 for run.py's 4 GiB case, int16 pairs of rows 0.932, a plain fill of the same bytes
  0.912 (`one_hot_probe --parts`, a probe at commit 04e086b): 1.06 / 1.07 of the copy on an
  H100 / H200, 1.04x / 1.05x torch's zeros + scatter_.

The output is viewed as (outer, depth, inner) around the one-hot axis. With inner == 1 (the
last axis, or only 1s after it) it is 2-D, (outer, depth), and a row's element is hot where
its column is the row's position; otherwise an element (a, d, i) is hot where d is
position[a, i]. Tiles are powers of two that divide the view's dimensions: Pallas's Triton
lowering does not mask a tile that would reach past the array's end (interpret mode pads such
arrays, the GPU would write past them), so a dimension with few factors of 2 gets a narrow
tile, and `applies` refuses tiles whose rows are too short to write at full speed.

The kernel selects between OffValue and OnValue, moving their bits as they are (NaN payloads and
-0.0 included). `applies` decides from static shapes; `forms` runs the kernel
(`ops.one_hot.KERNELS`) on CUDA GPUs only, with the lax path's gradient.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dml_jax._src.kernels import _triton, availability


@dataclasses.dataclass(frozen=True)
class TilesConfig:
  """The kernel's tuning.

  Attributes:
    slab_rows: the most rows of a (depth, inner) slab that a program writes, one after the
      other, from one load of its columns' positions (a power of two): 2 rows took 0.932 ms
      on an H200 for run.py's case, 1 row 0.967, 4 rows 0.942, 8 rows 0.968; on an H100
      1.313, 1.304, 1.337 and 1.361.
    row_tile_elements: the most elements a program writes along the last axis, where a
      tile's rows are whole output rows: one row of 1024 float32 a program wrote at 1.10 of
      the copy on an H100, (32, 1024) tiles 1.07, XLA's compare-and-select (2 KiB a block)
      1.08 (`one_hot_probe`, a probe at commit 04e086b).
    max_columns: the most columns of a tile, contiguous in memory (a power of two): 1024
      float32 columns wrote as fast as 2048 or 4096 on an H100 and an H200.
    min_row_bytes: the shortest tile row that takes the kernel: along the last axis, float32
      tiles of 64 columns (256 bytes) reached 0.93 of the copy and tiles of 16 columns 0.39,
      against 0.80 for XLA's compare-and-select.
    min_output_bytes: smaller outputs take XLA's compare-and-select: it writes them in a few
      microseconds, where the launch counts as much as the bandwidth, and XLA can fuse it
      into the operations around it, which a kernel call prevents.
    num_warps: a program's warps.
    eviction_policy: the stores' cache hint: "evict_first" (the output is not read again
      by the kernel) wrote 1 to 2% faster than none on an H100, "evict_last" 3% slower.
  """

  slab_rows: int = 2
  row_tile_elements: int = 1024
  max_columns: int = 1024
  min_row_bytes: int = 256
  min_output_bytes: int = 32 * 1024 * 1024
  num_warps: int = 4
  eviction_policy: str | None = "evict_first"


DEFAULT = TilesConfig()


def view(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
  """The output of this shape as (outer, depth, inner) around `axis`.

  Examples:
    >>> view((2, 5, 3, 4), 1), view((6, 10), 1)
    ((2, 5, 12), (6, 10, 1))
  """
  outer = int(np.prod(shape[:axis], dtype=np.int64))
  inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
  return outer, shape[axis], inner


def tile(shape: tuple[int, ...], axis: int, config: TilesConfig | None = None) -> tuple[int, int]:
  """A program's tile of the output of this shape, (rows, columns): the largest powers of two
  dividing the 2-D view's dimensions, (outer, depth) with nothing after `axis`, else
  (depth, inner), within `max_columns` columns, and `row_tile_elements` elements or
  `slab_rows` rows.

  Examples:
    >>> tile((1 << 20, 1024), 1), tile((1024, 1 << 20), 0), tile((1 << 20, 64), 1)
    ((1, 1024), (2, 1024), (16, 64))
    >>> tile((1000, 1000), 1)
    (8, 8)
  """
  config = DEFAULT if config is None else config
  outer, depth, inner = view(shape, axis)
  rows, columns = (outer, depth) if inner == 1 else (depth, inner)
  width = _triton.largest_power_of_two_dividing(columns, config.max_columns)
  most = max(1, config.row_tile_elements // width) if inner == 1 else config.slab_rows
  return _triton.largest_power_of_two_dividing(rows, most), width


def position_dtype(depth: int) -> np.dtype:
  """The narrowest integer type holding the positions of a slab kernel, [0, depth]
  (`depth`: no hot element).

  Examples:
    >>> position_dtype(100), position_dtype(1024), position_dtype(1 << 15)
    (dtype('int8'), dtype('int16'), dtype('int32'))
  """
  for dtype in (np.int8, np.int16):
    if depth <= np.iinfo(dtype).max:
      return np.dtype(dtype)
  return np.dtype(np.int32)


def applies(
  output_shape: tuple[int, ...],
  axis: int,
  dtype: np.dtype,
  config: TilesConfig | None = None,
) -> bool:
  """Whether ONE_HOT with this output can take the kernel: data of the kernels' types, an
  output of at least `min_output_bytes` and fewer than 2**31 elements (32-bit offsets and
  int32 positions), tiles whose rows hold at least `min_row_bytes`.

  Examples:
    >>> f32 = np.dtype(np.float32)
    >>> applies((1 << 20, 1024), 1, f32) == availability.probe().pallas_triton
    True
    >>> applies((1 << 20, 1000), 1, f32)  # tiles of 8 columns: XLA's compare-and-select
    False
  """
  config = DEFAULT if config is None else config
  itemsize = np.dtype(dtype).itemsize
  total = int(np.prod(output_shape, dtype=np.int64))
  _, width = tile(output_shape, axis, config)
  return (
    availability.probe().pallas_triton
    and np.dtype(dtype) in _triton.DTYPES
    and total * itemsize >= config.min_output_bytes
    and total < 2**31
    and width * itemsize >= config.min_row_bytes
  )


def one_hot_tiles(
  position: jax.Array,
  values: jax.Array,
  *,
  axis: int,
  depth: int,
  config: TilesConfig | None = None,
  interpret: bool = False,
) -> jax.Array:
  """The kernel: ONE_HOT of normalized positions.

  `position` (int32) has the indices' shape, 1 on `axis`: each sequence's OnValue position in
  [0, depth), or `depth` where the sequence has none. OffValue and OnValue are the first two
  elements of `values` in row-major order. The output has `position`'s shape with `depth` on
  `axis`, and `values`'s dtype. With `interpret`, Pallas interprets the kernel on any backend.

  Examples:
    >>> position = np.array([[2], [0], [4]], np.int32)
    >>> one_hot_tiles(position, np.array([[0, 7]], np.int8), axis=1, depth=4, interpret=True)
    Array([[0, 0, 7, 0],
           [7, 0, 0, 0],
           [0, 0, 0, 0]], dtype=int8)
    >>> position = np.array([[1, 0, 1]], np.int32)
    >>> one_hot_tiles(position, np.array([[0, 1]], np.float32), axis=0, depth=2, interpret=True)
    Array([[0., 1., 0.],
           [1., 0., 1.]], dtype=float32)
  """
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it
  from jax.experimental.pallas import triton as pltriton

  config = DEFAULT if config is None else config
  shape = position.shape[:axis] + (depth,) + position.shape[axis + 1 :]
  outer, _, inner = view(shape, axis)
  height, width = tile(shape, axis, config)
  flat = values.reshape(-1)
  off_on = lax.slice(flat, (0,), (2,))  # OffValue, OnValue
  params = None if interpret else pltriton.CompilerParams(num_warps=config.num_warps)
  store = functools.partial(
    _triton.store, eviction_policy=config.eviction_policy, interpret=interpret
  )

  if inner == 1:  # (outer, depth): a row's element is hot at the row's position

    def rows_kernel(position_ref, values_ref, out_ref):
      tile_shape = (height, width)
      column = pl.program_id(1) * width + lax.broadcasted_iota(np.int32, tile_shape, 1)
      hot = column == position_ref[...][:, None]
      store(out_ref, jnp.where(hot, values_ref[1], values_ref[0]))

    out = pl.pallas_call(
      rows_kernel,
      out_shape=jax.ShapeDtypeStruct((outer, depth), off_on.dtype),
      grid=(outer // height, depth // width),
      in_specs=[
        pl.BlockSpec((height,), lambda i, j: (i,)),
        pl.BlockSpec((2,), lambda i, j: (0,)),
      ],
      out_specs=pl.BlockSpec((height, width), lambda i, j: (i, j)),
      compiler_params=params,
      interpret=interpret,
    )(position.reshape(outer), off_on)
    return out.reshape(shape)

  # (outer, depth, inner): (a, d, i) is hot where d == position[a, i]. Program k writes rows
  # [i * height, (i + 1) * height) of slab a, columns [j * width, (j + 1) * width), with j
  # varying fastest: side-by-side programs write side-by-side columns of the same rows.
  column_blocks, row_blocks = inner // width, depth // height

  def blocks(k):
    return k // (column_blocks * row_blocks), k // column_blocks % row_blocks, k % column_blocks

  def slabs_kernel(position_ref, values_ref, out_ref):
    _, i, _ = blocks(pl.program_id(0))
    position = position_ref[...].astype(np.int32)
    for r in range(height):
      hot = position == i * height + r
      store(out_ref.at[r], jnp.where(hot, values_ref[1], values_ref[0]))

  out = pl.pallas_call(
    slabs_kernel,
    out_shape=jax.ShapeDtypeStruct((outer, depth, inner), off_on.dtype),
    grid=(outer * row_blocks * column_blocks,),
    in_specs=[
      pl.BlockSpec((None, width), lambda k: (blocks(k)[0], blocks(k)[2])),
      pl.BlockSpec((2,), lambda k: (0,)),
    ],
    out_specs=pl.BlockSpec((None, height, width), blocks),
    compiler_params=params,
    interpret=interpret,
  )(position.reshape(outer, inner).astype(position_dtype(depth)), off_on)
  return out.reshape(shape)
