"""Which form each operator's lowering takes on each backend: a kernel of this folder, or lax.

An operator module lowers DirectML's contract once, with lax, and hands that lowering here as
`fallback` (or `lanes`); these functions decide from static shapes whether one of the kernels
applies and, where it does, let `lax.platform_dependent` pick it on CUDA GPUs only (`on_cuda`).
Every other platform, and every gradient, takes the lax path, which gives the same bits.
REVERSE_SUBSEQUENCES's CPU form is chosen here too: XLA:CPU copies whole rows several times
faster than it gathers elements (BENCHMARKS.md).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import jax
import jax.numpy as jnp
import numpy as np  # noqa: F401 (the examples use it)
from jax import lax

from dml_jax._src import indexing
from dml_jax._src.kernels import (
  gather_elements_rows_triton,
  gather_elements_strips_triton,
  gather_nd_rows_triton,
  gather_rows_cpu,
  native_cpu,
  one_hot_tiles_triton,
  per_shard,
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

Lowering = Callable[[jax.Array, jax.Array], jax.Array]
Out = TypeVar("Out")  # a kernel's result: an array, or a tuple of them (SPLIT)


def gather_elements(
  input: jax.Array, indices: jax.Array, axis: int, *, fallback: Lowering
) -> jax.Array:
  """GATHER_ELEMENTS along `axis`: the row kernel (the last axis) or the strip kernel (an axis
  before it) on CUDA GPUs where one applies, else `fallback(input, indices)`.

  `indices` are raw: the kernels normalize and clamp them, as `fallback` must.

  Examples:
    >>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> take = lambda x, i: jnp.take_along_axis(x, i, axis=1)
    >>> gather_elements(x, np.array([[2, 0], [1, 1]]), 1, fallback=take)
    Array([[2., 0.],
           [4., 4.]], dtype=float32)
  """
  shapes = (input.shape, indices.shape, input.dtype, axis)
  if gather_elements_rows_triton.applies(*shapes):
    return on_cuda(per_shard.gather_elements_rows(input.ndim), fallback, input, indices)
  if gather_elements_strips_triton.applies(*shapes):
    kernel = per_shard.gather_elements_strips(input.ndim, axis)
    return on_cuda(kernel, fallback, input, indices)
  return fallback(input, indices)


def gather_nd(
  input: jax.Array, indices: jax.Array, *, batch_dims: int, fallback: Lowering
) -> jax.Array:
  """GATHER_ND as whole-row copies: the row-copy kernel on CUDA GPUs where it applies, the
  native row kernel on the CPU where it applies (rows of 128 bytes or more) and its code is
  available; elsewhere `fallback(input, indices)`.

  `input` has the logical input sizes; `indices` (..., t) holds raw index tuples into its
  dimensions batch_dims .. batch_dims + t - 1, and its leading batch_dims sizes are the input's.
  `fallback` is the lax path with the same semantics, shaped indices.shape[:-1] +
  input.shape[batch_dims + t:].

  Examples:
    >>> table = np.arange(8, dtype=np.float32).reshape(4, 2)
    >>> rows = lambda x, i: x[jnp.clip(i[:, 0], 0, 3)]  # no negative indices here
    >>> gather_nd(table, np.array([[3], [1]], np.int32), batch_dims=0, fallback=rows).tolist()
    [[6.0, 7.0], [2.0, 3.0]]
  """
  kernels: dict[str, Lowering] = {}
  tuple_size = indices.shape[-1]
  ranks = (input.ndim, indices.ndim, batch_dims, tuple_size)
  if gather_nd_rows_triton.applies(input.shape, batch_dims, tuple_size, input.dtype):
    kernels["cuda"] = per_shard.gather_nd_rows(*ranks)
  if gather_rows_cpu.applies(input.shape, indices.shape, batch_dims, input.dtype) and (
    _native_cpu(partitioned=True)
  ):
    kernels["cpu"] = per_shard.gather_rows_cpu_kernel(*ranks)
  if not kernels:
    return fallback(input, indices)
  return on_platforms(kernels, fallback, input, indices)


def one_hot(
  position: jax.Array, values: jax.Array, *, axis: int, depth: int, fallback: Lowering
) -> jax.Array:
  """ONE_HOT of normalized positions (int32, `depth` where a sequence has no OnValue): the tile
  kernel on CUDA GPUs where it applies (an output of at least 32 MiB, tiles of long rows),
  else `fallback(position, values)`, whose gradient (with respect to the values) both take.

  Examples:
    >>> position = np.array([[1], [3]], np.int32)
    >>> select = lambda p, v: jnp.where(jnp.arange(3) == p, v[0, 1], v[0, 0])
    >>> one_hot(position, np.array([[0, 1]], np.float32), axis=1, depth=3, fallback=select)
    Array([[0., 1., 0.],
           [0., 0., 0.]], dtype=float32)
  """
  shape = position.shape[:axis] + (depth,) + position.shape[axis + 1 :]
  if not one_hot_tiles_triton.applies(shape, axis, values.dtype):
    return fallback(position, values)
  kernel = per_shard.one_hot_tiles(position.ndim, values.ndim, axis, depth)
  return on_cuda(kernel, fallback, position, values)


def reverse_subsequences_per_lane(
  input: jax.Array,
  lengths: jax.Array,
  *,
  axis: int,
  lanes: Lowering,
  rows: Lowering,
  sub_rows: tuple[int, Lowering] | None = None,
) -> jax.Array:
  """REVERSE_SUBSEQUENCES with a length per lane (`lengths`: `input`'s shape with 1 on `axis`,
  clamped to [0, size], int32 where the size allows), in the form each backend runs fastest.

  `lanes(input, lengths)` gathers every element from its lane's source position: the default,
  and the gradient. `rows(input, lengths)` moves whole rows (the dimensions after `axis`) by
  their first lane's length, right where every lane of a row shares one length. The CPU
  checks that at run time (`_reverse_lanes_or_rows`), and so do CUDA GPUs with TMA where the
  strip kernel applies (`_reverse_lanes_or_strips`). `sub_rows`, (n, lowering), moves the
  input's last n elements of every row together (a sub-row, several a row), right where the
  lanes of every sub-row share one length: the CPU's second choice, checked at run time after
  the first (lengths per lane that vary along a middle dimension only, as an ONNX model's
  per-batch lengths become after a transpose); other backends do not take it.

  Examples:
    >>> def lanes(x, n):  # every element from its lane's source position
    ...   t = jnp.arange(x.shape[1])[:, None]
    ...   return jnp.take_along_axis(x, jnp.where(t < n, n - 1 - t, t), axis=1)
    >>> x = np.arange(8, dtype=np.float32).reshape(1, 4, 2)
    >>> n = np.array([[[3, 0]]], np.int32)
    >>> reverse_subsequences_per_lane(x, n, axis=1, lanes=lanes, rows=lanes)[0]
    Array([[4., 1.],
           [2., 3.],
           [0., 5.],
           [6., 7.]], dtype=float32)
  """
  # Each conditional gets callables of its own, as when the operator made them: JAX traces a
  # callable it has traced once from its cache, so the CPU's and the GPU's branches would
  # share jaxprs.
  fresh = functools.partial
  cpu = functools.partial(
    _reverse_lanes_or_rows,
    axis=axis,
    lanes=fresh(lanes),
    rows=fresh(rows),
    sub_rows=sub_rows and (sub_rows[0], fresh(sub_rows[1])),
  )
  default = lanes
  if reverse_subsequences_strips_mosaic.applies(input.shape, input.dtype, axis):
    gpu = functools.partial(_reverse_lanes_or_strips, axis=axis, rows=fresh(rows))
    default = functools.partial(on_cuda, gpu, lanes)
  return lax.platform_dependent(input, lengths, cpu=cpu, default=default)


def scatter_elements(
  input: jax.Array,
  indices: jax.Array,
  updates: jax.Array,
  axis: int,
  *,
  fallback: Callable[[jax.Array, jax.Array, jax.Array], jax.Array],
) -> jax.Array:
  """SCATTER_ELEMENTS along `axis` on CUDA GPUs, where one applies (the last axis): the
  shared-memory row kernel (GPUs with TMA, rows that fit shared memory, any data type), else
  the Triton row kernel (32-bit data and indices); elsewhere `fallback(input, indices,
  updates)`. `indices` are raw.

  The gradient is fallback's, with respect to the input and the updates.

  Examples:
    >>> x = np.zeros(4, np.float32)
    >>> put = lambda x, i, u: jnp.asarray(x).at[i].set(u)
    >>> scatter_elements(x, np.array([3, 1]), np.array([5.0, 6.0], np.float32), 0, fallback=put)
    Array([0., 6., 0., 5.], dtype=float32)
  """
  shapes = (input.shape, indices.shape, input.dtype, indices.dtype, axis)
  if scatter_elements_rows_mosaic.applies(*shapes):
    kernel = per_shard.scatter_elements_rows(input.ndim, mosaic=True)
  elif scatter_elements_rows_triton.applies(*shapes):
    kernel = per_shard.scatter_elements_rows(input.ndim, mosaic=False)
  else:
    return fallback(input, indices, updates)
  return on_cuda(kernel, fallback, input, indices, updates)


def scatter_nd_rows(
  indexed: Sequence[int], window: Sequence[int], count: int, dtype: np.dtype
) -> dict[str, Callable[..., jax.Array]]:
  """SCATTER_ND's pulls, by platform, where they apply: forms of `scattering.scatter`'s
  operands (operand, updates, index, keep, dropped, position) that give its output.

  A pull reads each output row once, from the last update aimed at it or from the input, after
  a winner map (`scatter_nd_rows_triton.winner_map`) has named that update: on CUDA GPUs the
  Triton kernel where it applies; on XLA:CPU a row gather and a select, for rows of
  `cpu_pull_min_row_bytes` or more (narrower rows scatter faster in order there).

  `indexed` are the sizes the index tuples address, `window` the sizes after them that each
  update writes whole (a row of the table), `count` the number of updates.

  Examples:
    >>> sorted(scatter_nd_rows((8,), (4,), 3, np.dtype(np.float32)))  # 16-byte rows
    []
    >>> "cpu" in scatter_nd_rows((8,), (256,), 3, np.dtype(np.float32))
    True
  """
  rows, width = math.prod(indexed), math.prod(window)

  def pull(rows_of: Callable[..., jax.Array]) -> Callable[..., jax.Array]:
    def form(operand, updates, index, keep, dropped, position):
      del dropped, position  # the winner map numbers the updates in row-major order itself
      target = indexing.flat_offsets(indexed, index, keep, range(len(indexed)))  # rows: dropped
      out = rows_of(
        operand.reshape(rows, width), target.reshape(count), updates.reshape(count, width)
      )
      return out.reshape(operand.shape)

    return form

  chosen = {}
  if width * np.dtype(dtype).itemsize >= cpu_pull_min_row_bytes and rows < 2**31:
    chosen["cpu"] = pull(_pull_rows_lax)
  if scatter_nd_rows_triton.applies(rows, width, count, dtype):
    chosen["cuda"] = pull(per_shard.scatter_nd_pull_rows())
  return chosen


cpu_pull_min_row_bytes = 1024
"""The narrowest row XLA:CPU pulls: rows of 1 KiB took 6.4 to 7.3 ms against 8.4 to 8.9 for
the scatter in order, rows of 256 bytes 10.2 against 9.1 (BENCHMARKS.md)."""


def _pull_rows_lax(input: jax.Array, target: jax.Array, updates: jax.Array) -> jax.Array:
  """The pull in lax: each row of `input` (rows, width), or the update its winner map names."""
  source = scatter_nd_rows_triton.winner_map(target, input.shape[0]).astype(np.int32) - 1
  pulled = jnp.take(updates, lax.max(source, np.int32(0)), axis=0, mode="clip")
  return lax.select(jnp.broadcast_to((source >= 0)[:, None], input.shape), pulled, input)


def space_to_depth(
  input: jax.Array,
  block_size: int,
  column_row_depth: bool,
  *,
  fallback: Callable[[jax.Array], jax.Array],
) -> jax.Array:
  """SPACE_TO_DEPTH(1) of an NCHW input: the row-splitting kernel on CUDA GPUs where it applies
  (32-bit data, outputs of 16 MiB or more), else `fallback(input)`.

  Examples:
    >>> x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    >>> space_to_depth(x, 2, False, fallback=lambda x: x.reshape(1, 4, 1, 1)).ravel().tolist()
    [0.0, 1.0, 2.0, 3.0]
  """
  if not space_to_depth_rows_triton.applies(input.shape, block_size, input.dtype):
    return fallback(input)
  kernel = per_shard.space_to_depth_rows(block_size, column_row_depth)
  return on_cuda(kernel, fallback, input)


def strided_window(
  input: jax.Array,
  starts: Sequence[int],
  steps: Sequence[int],
  sizes: Sequence[int],
  *,
  fallback: Callable[[jax.Array], jax.Array],
) -> jax.Array:
  """The walk ``out[o] = input[starts + o * steps]`` of SLICE and SLICE1: the row kernel on CUDA
  GPUs where it applies (32-bit data, a walk XLA copies slowly: a strided or backward last
  axis, or any backward axis), else `fallback(input)`.

  Examples:
    >>> x = np.arange(6, dtype=np.float32)
    >>> strided_window(x, (5,), (-2,), (3,), fallback=lambda x: x[5::-2]).tolist()
    [5.0, 3.0, 1.0]
  """
  if not slice_rows_triton.applies(input.shape, steps, tuple(sizes), input.dtype):
    return fallback(input)
  kernel = per_shard.window_rows(input.shape, starts, steps, sizes)
  return on_cuda(kernel, fallback, input)


def split(
  input: jax.Array,
  sizes: Sequence[int],
  axis: int,
  *,
  fallback: Callable[[jax.Array], tuple[jax.Array, ...]],
) -> tuple[jax.Array, ...]:
  """SPLIT along `axis` into `sizes`: on the CPU the native kernel where it applies (an input of
  16 MiB or more, runs of 1 KiB or more) and its code is available; elsewhere
  `fallback(input)`.

  Examples:
    >>> x = np.arange(6, dtype=np.float32).reshape(3, 2)
    >>> pieces = split(x, [1, 2], 0, fallback=lambda x: (x[:1], x[1:]))
    >>> [p.tolist() for p in pieces]
    [[[0.0, 1.0]], [[2.0, 3.0], [4.0, 5.0]]]
  """
  if not (
    runs_cpu.applies(input.shape, sizes, axis, input.dtype) and _native_cpu(partitioned=True)
  ):
    return fallback(input)
  kernel = per_shard.split_runs(input.ndim, sizes, axis)
  return on_platforms({"cpu": kernel}, fallback, input)


def tile(
  input: jax.Array, repeats: tuple[int, ...], *, fallback: Callable[[jax.Array], jax.Array]
) -> jax.Array:
  """TILE by `repeats`. On CUDA GPUs: the read-once copies kernel where it applies (one
  repeated dimension, an input larger than L2), else the row-copies kernel where it applies
  (repeats on the last two dimensions, the rows repeated, an output of 16 MiB or more). On the
  CPU: the native row kernel where it applies (an output of 16 MiB or more, rows of 1 KiB or
  more) and its code is available. Elsewhere `fallback(input)`.

  Examples:
    >>> x = np.arange(4, dtype=np.float32).reshape(2, 2)
    >>> tile(x, (2, 1), fallback=lambda x: jnp.tile(x, (2, 1))).tolist()
    [[0.0, 1.0], [2.0, 3.0], [0.0, 1.0], [2.0, 3.0]]
  """
  kernels: dict[str, Callable[[jax.Array], jax.Array]] = {}
  if tile_copies_triton.applies(input.shape, repeats, input.dtype):
    kernels["cuda"] = per_shard.tile(repeats, kernel="copies")
  elif tile_rows_triton.applies(input.shape, repeats, input.dtype):
    kernels["cuda"] = per_shard.tile(repeats, kernel="rows")
  if tile_rows_cpu.applies(input.shape, repeats, input.dtype) and _native_cpu(partitioned=True):
    kernels["cpu"] = per_shard.tile(repeats, kernel="cpu")
  if not kernels:
    return fallback(input)
  return on_platforms(kernels, fallback, input)


def transpose(x: jax.Array, perm: tuple[int, ...]) -> jax.Array:
  """`lax.transpose(x, perm)`. On the CPU: the native kernel where it applies (the last two
  dimensions swapped, 32-bit elements, 1 MiB or more), its code is available and the processor
  has AVX2.

  Examples:
    >>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> transpose(x, (1, 0)).tolist()
    [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
  """
  fallback = functools.partial(lax.transpose, permutation=tuple(perm))
  if not (
    transpose_cpu.applies(x.shape, perm, x.dtype)
    and _native_cpu(partitioned=True)
    and transpose_cpu.has_avx2()
  ):
    return fallback(x)
  return on_platforms({"cpu": per_shard.transpose(x.ndim)}, fallback, x)


def _native_cpu(*, partitioned: bool = False) -> bool:
  """Whether the CPU's native kernels may run: built, and, unless the kernel is `partitioned`
  (`per_shard`: it runs per shard), one CPU device. Over several, XLA would gather an
  unpartitioned kernel's sharded operands and replicate its result, where the lax forms keep
  the sharding."""
  if not native_cpu.status().available:
    return False
  if partitioned:
    return True
  try:
    return len(jax.devices("cpu")) == 1
  except (RuntimeError, ValueError):  # no CPU backend here (JAX_PLATFORMS without cpu)
    return False


def on_cuda(
  kernel: Callable[..., jax.Array], fallback: Callable[..., jax.Array], *operands: jax.Array
) -> jax.Array:
  """`kernel(*operands)` on CUDA GPUs, `fallback(*operands)` elsewhere; the gradient is
  fallback's (integer operands, the indices or lengths, get none).
  """
  return on_platforms({"cuda": kernel}, fallback, *operands)


def on_platforms(
  kernels: Mapping[str, Callable[..., Out]],
  fallback: Callable[..., Out],
  *operands: jax.Array,
) -> Out:
  """`kernels[platform](*operands)` on each platform named ("cuda", "cpu", ...),
  `fallback(*operands)` elsewhere; the gradient is fallback's (integer operands get none).

  Examples:
    >>> on_platforms({"cpu": jnp.negative}, jnp.negative, np.float32(2.0))
    Array(-2., dtype=float32)
  """
  return lax.platform_dependent(
    *operands,
    **{
      platform: _with_gradient_of(_typed_as(kernel, fallback), fallback)
      for platform, kernel in kernels.items()
    },
    default=fallback,
  )


def _typed_as(kernel: Callable[..., Out], fallback: Callable[..., Out]) -> Callable[..., Out]:
  """`kernel`, its results resharded as `fallback`'s where shardings are part of the types
  (explicit mesh axes): the branches of `platform_dependent` must have one type."""

  def call(*operands):
    out = kernel(*operands)
    if not any(_explicitly_sharded(x) for x in operands):
      return out
    typed = jax.eval_shape(fallback, *operands)
    return jax.tree.map(lambda x, t: jax.sharding.reshard(x, t.sharding.spec), out, typed)

  return call


def _explicitly_sharded(x: jax.Array) -> bool:
  mesh = getattr(jax.typeof(x).sharding, "mesh", None)
  return mesh is not None and not mesh.empty and bool(mesh.explicit_axes)


def _with_gradient_of(
  kernel: Callable[..., Out], fallback: Callable[..., Out]
) -> Callable[..., Out]:
  """`kernel`, differentiated as `fallback` (which gives the same values)."""
  kernel_or_lax = jax.custom_vjp(kernel)
  kernel_or_lax.defvjp(
    lambda *args: (kernel(*args), args),
    lambda args, cotangent: jax.vjp(fallback, *args)[1](cotangent),
  )
  return kernel_or_lax


def _reverse_lanes_or_rows(
  input: jax.Array,
  lengths: jax.Array,
  *,
  axis: int,
  lanes: Lowering,
  rows: Lowering,
  sub_rows: tuple[int, Lowering] | None = None,
) -> jax.Array:
  """The CPU's lowering: XLA:CPU copies whole rows several times faster than it gathers
  elements (BENCHMARKS.md), so rows whose lanes share one length, checked at run time (the
  common per-batch case), take `rows`; else, with `sub_rows` (n, lowering), where every run of
  n lanes at the end of a row shares one length, those move together; else `lanes`. The
  result is the same either way."""
  if sub_rows is None:
    return lax.cond(_lanes_share_lengths(input, lengths, axis), rows, lanes, input, lengths)
  size, moved = sub_rows
  runs = lengths.reshape(-1, size)
  sub_rows_share = jnp.all(runs == runs[:, :1])
  # A cond of its own, taken only where the rows' check fails.
  rest = lambda x, n: lax.cond(sub_rows_share, moved, lanes, x, n)
  return lax.cond(_lanes_share_lengths(input, lengths, axis), rows, rest, input, lengths)


def _reverse_lanes_or_strips(
  input: jax.Array, lengths: jax.Array, *, axis: int, rows: Lowering
) -> jax.Array:
  """The lowering on CUDA GPUs with TMA: where the lanes of every row share one length (checked
  at run time, as on the CPU), XLA's gather of whole rows runs at copy speed; otherwise the
  strip kernel, which stages strips of lanes over the axis in shared memory. The check's
  predicate reaches the host before either runs; lengths with 1 after the axis say it from
  the shapes (the operator's `lower` takes the rows then, and never comes here)."""
  strips = functools.partial(reverse_subsequences_strips_mosaic.reverse_lanes, axis=axis)
  return lax.cond(_lanes_share_lengths(input, lengths, axis), rows, strips, input, lengths)


def _lanes_share_lengths(input: jax.Array, lengths: jax.Array, axis: int) -> jax.Array:
  lanes = lengths.reshape(input.shape[:axis] + (-1,))
  return jnp.all(lanes == lanes[..., :1])


def join(inputs: Sequence[jax.Array], axis: int, *, from_parts: bool = False) -> jax.Array:
  """JOIN along `axis`: `lax.concatenate`, or on the CPU the native kernel where it applies
  (an output of 16 MiB or more, runs of 1 KiB or more, whole inputs) and its code is
  available, else on XLA:CPU the same bits in a form it runs on every thread
  (`join_cpu_form`). `from_parts`: some inputs are cut out of larger buffers in the program
  (bound tensors at offsets); where `join_cpu_form` has no form, XLA:CPU then takes
  `join_by_select`, which reads them in place (a joined size below 2**31: int32 positions)."""
  concatenate = lambda *xs: lax.concatenate(xs, axis)  # noqa: E731
  sizes = [x.shape[axis] for x in inputs]
  joined = (*inputs[0].shape[:axis], sum(sizes), *inputs[0].shape[axis + 1 :])
  if (
    not from_parts  # the kernel's operands would be copied out of their buffers first
    and runs_cpu.applies(joined, sizes, axis, inputs[0].dtype)
    and _native_cpu()
  ):
    kernel = functools.partial(runs_cpu.join_runs, axis=axis)
    return on_platforms({"cpu": kernel}, concatenate, *inputs)
  if join_cpu_form(inputs[0].shape, len(inputs), axis) is not None:
    cpu = functools.partial(join_on_cpu, axis=axis)
  elif from_parts and sum(x.shape[axis] for x in inputs) < 2**31:
    cpu = functools.partial(join_by_select, axis=axis)
  else:
    return lax.concatenate(inputs, axis)
  return lax.platform_dependent(*inputs, cpu=cpu, default=concatenate)


def join_by_select(*inputs: jax.Array, axis: int) -> jax.Array:
  """JOIN as one loop: each input padded to the joined size along `axis`, and each output
  element selected from the input whose range holds it (the same bits as `lax.concatenate`).

  XLA:CPU runs a concatenate unfused, so an input cut out of a larger buffer is first copied
  out of it; pads and selects fuse with those slices, and the whole JOIN reads each input once
  where it lies. For 4 inputs of (1024, 1024) float32 at offsets of one buffer, joined along
  axis 1 into a padded pitch: 1.22 ms against 2.0 to 2.6 (BENCHMARKS.md). On whole arrays the
  concatenate is faster (1.5 against 2.2 ms for 32 MiB), so only bound parts take this form.

  Examples:
    >>> a, b = np.arange(4.0).reshape(2, 2), -np.arange(2.0).reshape(2, 1)
    >>> join_by_select(a, b, axis=1).tolist()
    [[0.0, 1.0, -0.0], [2.0, 3.0, -1.0]]
  """
  sizes = [x.shape[axis] for x in inputs]
  total = sum(sizes)
  zero = np.zeros((), inputs[0].dtype)
  padded, start = [], 0
  for x, size in zip(inputs, sizes, strict=True):
    config = [(0, 0, 0)] * x.ndim
    config[axis] = (start, total - start - size, 0)
    padded.append(lax.pad(x, zero, config))
    start += size
  shape = padded[0].shape
  position = lax.broadcasted_iota(np.int32, shape, axis)
  joined = padded[-1]
  end = total - sizes[-1]
  for x, size in zip(reversed(padded[:-1]), reversed(sizes[:-1]), strict=True):
    joined = lax.select(position < end, x, joined)
    end -= size
  return joined


def join_cpu_form(shape: tuple[int, ...], count: int, axis: int) -> str | None:
  """The CPU form of a JOIN of `count` inputs shaped like `shape` off `axis`, or None.

  XLA:CPU runs an unfused concatenate on one thread when no dimension before the joined one
  has a size above 1 (it splits the output along its first dimension, and a join along it
  cannot be split that way), while ONNX Runtime copies with every thread. Joined as 1-D views
  ("flat"), the reshapes fuse into the concatenate, which XLA:CPU then runs on all its threads;
  with leading dimensions of size 1 dropped ("squeezed"), the first dimension can be split.
  """
  if count < 2:
    return None
  if math.prod(shape[:axis]) == 1:
    return "flat"
  if shape[0] == 1:
    return "squeezed"
  return None


def join_on_cpu(*inputs: jax.Array, axis: int) -> jax.Array:
  """JOIN on XLA:CPU: the same bits as `lax.concatenate`, in a form it runs on every thread."""
  shape = list(inputs[0].shape)
  shape[axis] = sum(x.shape[axis] for x in inputs)
  if join_cpu_form(inputs[0].shape, len(inputs), axis) == "flat":
    # Views of (n,) fuse for rank 2 and up; for rank 1, views of (n, 1) do.
    view = lambda x: (x.size,) if len(shape) > 1 else (x.size, 1)
    joined = lax.concatenate([lax.reshape(x, view(x)) for x in inputs], 0)
  else:  # "squeezed": drop the leading dimensions of size 1
    lead = next(d for d, size in enumerate(shape) if size != 1)
    joined = lax.concatenate([lax.reshape(x, x.shape[lead:]) for x in inputs], axis - lead)
  return lax.reshape(joined, tuple(shape))
