"""Each kernel of this folder with the roles of its dimensions, run per shard (`partitioning`).

A function here takes what a kernel's call fixes statically (ranks, axis, repeats...) and gives
the kernel as a callable of its operands that the partitioner runs on each device's shard:
the dimensions the kernel treats independently pass through (no collective, the output keeps
their sharding); the ones it needs whole (a gathered or scattered axis, a repeated or resized
dimension, an index tuple) are gathered first. `fits` says where a kernel cannot take a
shard's shape (a power-of-two width, a multiple of its tile): those dimensions stay whole.
docs/sharding.md has the table.

`interpret` runs a Pallas kernel in Pallas's interpreter (the tests' way, on the CPU).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import jax
import numpy as np  # noqa: F401 (the examples use it)

from dml_jax._src.kernels import (
  _triton,
  gather_elements_rows_triton,
  gather_elements_strips_triton,
  gather_nd_rows_triton,
  gather_rows_cpu,
  one_hot_tiles_triton,
  reverse_subsequences_strips_mosaic,
  runs_cpu,
  scatter_elements_rows_mosaic,
  scatter_elements_rows_triton,
  scatter_nd_rows_triton,
  slice_rows_triton,
  space_to_depth_rows_triton,
  tile_copies_triton,
  tile_rows_cpu,
  tile_rows_triton,
  transpose_cpu,
)
from dml_jax._src.kernels.partitioning import partitioned

Kernel = Callable[..., jax.Array]


def _names(prefix: str, count: int, start: int = 0) -> list[str]:
  return [f"{prefix}{d}" for d in range(start, start + count)]


def _dims(*groups: str | Sequence[str]) -> str:
  return " ".join(g if isinstance(g, str) else " ".join(g) for g in groups if g)


def _always(*shapes: jax.ShapeDtypeStruct) -> bool:
  return True


def gather_elements_rows(rank: int, *, interpret: bool = False) -> Kernel:
  """GATHER_ELEMENTS along the last axis (`gather_elements_rows_triton`): the leading
  dimensions and the indices' last pass through; the input's last is needed whole.

  Examples:
    >>> kernel = gather_elements_rows(2, interpret=True)
    >>> kernel(np.arange(6.0, dtype=np.float32).reshape(2, 3), np.ones((2, 2), np.int32))
    Array([[1., 1.],
           [4., 4.]], dtype=float32)
  """
  lead = _names("l", rank - 1)
  return partitioned(
    lambda x, i: functools.partial(
      gather_elements_rows_triton.gather_along_last_axis, interpret=interpret
    ),
    f"{_dims(lead, 'n')}, {_dims(lead, 'm')} -> {_dims(lead, 'm')}",
    whole=("n",),
    fits=lambda x, i: _triton.power_of_two(i.shape[-1]),
  )


def gather_elements_strips(rank: int, axis: int, *, interpret: bool = False) -> Kernel:
  """GATHER_ELEMENTS along an axis before the last (`gather_elements_strips_triton`): every
  dimension but the input's `axis` passes through, where the strips still tile the shards."""
  config = gather_elements_strips_triton.DEFAULT
  outer, inner = _names("o", axis), _names("i", rank - axis - 1)

  def fits(x, i):
    return (
      math.prod(i.shape[axis + 1 :]) % config.width == 0 and i.shape[axis] % config.min_rows == 0
    )

  return partitioned(
    lambda x, i: functools.partial(
      gather_elements_strips_triton.gather_in_strips, axis=axis, interpret=interpret
    ),
    f"{_dims(outer, 'n', inner)}, {_dims(outer, 'm', inner)} -> {_dims(outer, 'm', inner)}",
    whole=("n",),
    fits=fits,
  )


def _gather_nd_rule(
  input_rank: int, indices_rank: int, batch_dims: int, tuple_size: int
) -> tuple[str, tuple[str, ...]]:
  batch = _names("b", batch_dims)
  indexed = _names("t", tuple_size)
  kept = _names("w", input_rank - batch_dims - tuple_size)
  tuples = _names("q", indices_rank - batch_dims - 1)
  rule = (
    f"{_dims(batch, indexed, kept)}, {_dims(batch, tuples, 'k')} -> {_dims(batch, tuples, kept)}"
  )
  return rule, (*indexed, "k")


def gather_nd_rows(
  input_rank: int, indices_rank: int, batch_dims: int, tuple_size: int, *, interpret: bool = False
) -> Kernel:
  """GATHER_ND's whole-row copies (`gather_nd_rows_triton`): the batch dimensions, the
  tuples' dimensions and the rows pass through (rows of a power-of-two width); the indexed
  dimensions and the index tuples are needed whole."""
  rule, whole = _gather_nd_rule(input_rank, indices_rank, batch_dims, tuple_size)
  leading = batch_dims + tuple_size
  return partitioned(
    lambda x, i: functools.partial(
      gather_nd_rows_triton.copy_rows, batch_dims=batch_dims, interpret=interpret
    ),
    rule,
    whole=whole,
    fits=lambda x, i: _triton.power_of_two(math.prod(x.shape[leading:])),
  )


def gather_rows_cpu_kernel(
  input_rank: int, indices_rank: int, batch_dims: int, tuple_size: int
) -> Kernel:
  """GATHER_ND's row copies on the CPU (`gather_rows_cpu`), partitioned as `gather_nd_rows`."""
  rule, whole = _gather_nd_rule(input_rank, indices_rank, batch_dims, tuple_size)
  return partitioned(
    lambda x, i: functools.partial(gather_rows_cpu.gather_rows, batch_dims=batch_dims),
    rule,
    whole=whole,
  )


def one_hot_tiles(
  rank: int, values_rank: int, axis: int, depth: int, *, interpret: bool = False
) -> Kernel:
  """ONE_HOT (`one_hot_tiles_triton`): every dimension of the positions but `axis` passes
  through; the output's `axis` (the depth) and the two values are needed whole."""
  outer, inner = _names("o", axis), _names("i", rank - axis - 1)
  values = _names("v", values_rank)
  return partitioned(
    lambda p, v: functools.partial(
      one_hot_tiles_triton.one_hot_tiles, axis=axis, depth=depth, interpret=interpret
    ),
    f"{_dims(outer, 'one', inner)}, {_dims(values)} -> {_dims(outer, 'depth', inner)}",
    whole=("one", "depth", *values),
  )


def _scatter_rows_rule(rank: int) -> str:
  lead = _names("l", rank - 1)
  return f"{_dims(lead, 'w')}, {_dims(lead, 'c')}, {_dims(lead, 'c')} -> {_dims(lead, 'w')}"


def scatter_elements_rows(rank: int, *, mosaic: bool, interpret: bool = False) -> Kernel:
  """SCATTER_ELEMENTS along the last axis (`scatter_elements_rows_triton`, or with `mosaic`
  `scatter_elements_rows_mosaic`): the leading dimensions pass through; the rows and the
  updates of a row are needed whole."""
  if mosaic:
    kernel = scatter_elements_rows_mosaic.scatter_rows
  else:
    kernel = functools.partial(scatter_elements_rows_triton.scatter_rows, interpret=interpret)
  return partitioned(lambda x, i, u: kernel, _scatter_rows_rule(rank), whole=("w", "c"))


def scatter_nd_pull_rows(*, interpret: bool = False) -> Kernel:
  """SCATTER_ND's pull (`scatter_nd_rows_triton.pull_rows`) of (rows, width) tables: the
  width passes through (a power of two); the rows and the updates are needed whole."""

  def make(x, t, u):  # the kernel looked up when called: tests replace it
    kernel = scatter_nd_rows_triton.pull_rows
    return functools.partial(kernel, interpret=True) if interpret else kernel

  return partitioned(
    make,
    "r w, c, c w -> r w",
    whole=("r", "c"),
    fits=lambda x, t, u: _triton.power_of_two(x.shape[-1]),
  )


def window_rows(
  shape: Sequence[int],
  starts: Sequence[int],
  steps: Sequence[int],
  sizes: Sequence[int],
  *,
  interpret: bool = False,
) -> Kernel:
  """SLICE's walk (`slice_rows_triton`): a dimension the walk keeps whole (start 0, step 1,
  every element) passes through; the others are needed whole."""
  kept = [
    start == 0 and step == 1 and size == n
    for n, start, step, size in zip(shape, starts, steps, sizes, strict=True)
  ]
  ins = [f"p{d}" if k else f"i{d}" for d, k in enumerate(kept)]
  outs = [f"p{d}" if k else f"o{d}" for d, k in enumerate(kept)]
  whole = [f for f in ins + outs if not f.startswith("p")]

  def make(x):
    local = tuple(n if k else s for n, s, k in zip(x.shape, sizes, kept, strict=True))
    return functools.partial(
      slice_rows_triton.window_rows, starts=starts, steps=steps, sizes=local, interpret=interpret
    )

  last = len(shape) - 1
  return partitioned(
    make,
    f"{_dims(ins)} -> {_dims(outs)}",
    whole=whole,
    fits=lambda x: (x.shape[last] if kept[last] else sizes[last]) >= 32,
  )


def space_to_depth_rows(
  block_size: int, column_row_depth: bool, *, interpret: bool = False
) -> Kernel:
  """SPACE_TO_DEPTH of NCHW (`space_to_depth_rows_triton`): the batch passes through; the
  channels and the spatial dimensions, which change size, are needed whole."""
  kernel = functools.partial(
    space_to_depth_rows_triton.space_to_depth_rows,
    block_size=block_size,
    column_row_depth=column_row_depth,
    interpret=interpret,
  )
  return partitioned(
    lambda x: kernel, "n c h w -> n c2 h2 w2", whole=("c", "h", "w", "c2", "h2", "w2")
  )


def _tile_rule(repeats: Sequence[int]) -> tuple[str, list[str]]:
  ins = [f"p{d}" if r == 1 else f"i{d}" for d, r in enumerate(repeats)]
  outs = [f"p{d}" if r == 1 else f"o{d}" for d, r in enumerate(repeats)]
  return f"{_dims(ins)} -> {_dims(outs)}", [f for f in ins + outs if not f.startswith("p")]


def tile(repeats: tuple[int, ...], *, kernel: str, interpret: bool = False) -> Kernel:
  """TILE by `repeats` (`kernel`: "copies" for `tile_copies_triton`, "rows" for
  `tile_rows_triton`, "cpu" for `tile_rows_cpu`): dimensions repeated once pass through; the
  repeated ones are needed whole."""
  rule, whole = _tile_rule(repeats)
  fits: Callable[..., bool] = _always
  if kernel == "copies":
    call = functools.partial(tile_copies_triton.tile_copies, repeats=repeats, interpret=interpret)
  elif kernel == "rows":
    call = functools.partial(tile_rows_triton.tile_rows, repeats=repeats, interpret=interpret)
    fits = lambda x: tile_rows_triton.view(x.shape, repeats) is not None  # noqa: E731
  else:
    call = functools.partial(tile_rows_cpu.tile_rows, repeats=repeats)
  return partitioned(lambda x: call, rule, whole=whole, fits=fits)


def _runs_dims(rank: int, axis: int, factor: str) -> str:
  return _dims(_names("o", axis), factor, _names("i", rank - axis - 1))


def split_runs(rank: int, sizes: Sequence[int], axis: int) -> Callable[..., tuple[jax.Array, ...]]:
  """SPLIT on the CPU (`runs_cpu.split_runs`): every dimension but `axis` passes through."""
  pieces = _names("s", len(sizes))
  rule = f"{_runs_dims(rank, axis, 'n')} -> " + ", ".join(_runs_dims(rank, axis, s) for s in pieces)
  call = functools.partial(runs_cpu.split_runs, sizes=tuple(sizes), axis=axis)
  return partitioned(lambda x: call, rule, whole=("n", *pieces))


def join_runs(rank: int, count: int, axis: int) -> Kernel:
  """JOIN on the CPU (`runs_cpu.join_runs`): every dimension but `axis` passes through."""
  pieces = _names("s", count)
  rule = ", ".join(_runs_dims(rank, axis, s) for s in pieces) + f" -> {_runs_dims(rank, axis, 'n')}"
  call = functools.partial(runs_cpu.join_runs, axis=axis)
  return partitioned(lambda *xs: call, rule, whole=("n", *pieces))


def transpose(rank: int) -> Kernel:
  """The last two dimensions swapped on the CPU (`transpose_cpu`): every dimension passes
  through (a shard's transpose is the transpose's shard), where the shards keep whole 8 x 8
  blocks."""
  config = transpose_cpu.DEFAULT
  lead = _names("l", rank - 2)

  def fits(x):
    rows, columns = x.shape[-2:]
    return rows % 8 == 0 and rows >= config.min_rows and columns >= config.min_columns

  return partitioned(
    lambda x: transpose_cpu.transpose, f"{_dims(lead, 'a b')} -> {_dims(lead, 'b a')}", fits=fits
  )


def reverse_lanes(rank: int, axis: int) -> Kernel:
  """REVERSE_SUBSEQUENCES's strips (`reverse_subsequences_strips_mosaic`): every dimension but
  `axis` passes through, where the strips still plan on the shards."""
  outer, inner = _names("o", axis), _names("i", rank - axis - 1)

  def fits(x, n):
    plan = reverse_subsequences_strips_mosaic.plan(x.shape, np.dtype(x.dtype).itemsize, axis)
    return plan is not None

  return partitioned(
    lambda x, n: functools.partial(reverse_subsequences_strips_mosaic.reverse_lanes, axis=axis),
    f"{_dims(outer, 'n', inner)}, {_dims(outer, 'one', inner)} -> {_dims(outer, 'n', inner)}",
    whole=("n", "one"),
    fits=fits,
  )
