"""Which form each operator's lowering takes on each backend: a kernel of this folder, or lax.

An operator module lowers DirectML's contract once, with lax, and hands that lowering here as
`fallback` (or `lanes`); these functions decide from static shapes whether one of the kernels
applies and, where it does, let `lax.platform_dependent` pick it on CUDA GPUs only (`on_cuda`).
Every other platform, and every gradient, takes the lax path, which gives the same bits.
Where XLA:CPU runs one lax form faster than another (JOIN's, REVERSE_SUBSEQUENCES's), the
operator module chooses it and hands it here as the CPU's lowering.

Every kernel runs per shard (`per_shard`). The kernels that need whole an axis that jnp's
formulation keeps sharded (the row gathers, SCATTER_ND's pull, SLICE's walk, SPACE_TO_DEPTH's
rows, SPLIT and JOIN on the CPU) run only where the platform has one device
(`placement.one_device`): the sharding is not known when an operator is traced, and over
several devices the partitioner would gather that axis where XLA moves less with the lax
form (a row gather from a table sharded along its rows: 2.07 ms against jnp's 0.32 on two
H200s).
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TypeVar

import jax
import jax.numpy as jnp  # noqa: F401 (the examples use it)
import numpy as np  # noqa: F401 (the examples use it)
from jax import lax

from dml_jax._src import indexing, placement
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
  native row kernel on the CPU where it applies (rows of 128 bytes or more, an output of 1
  MiB or more) and its code is available; elsewhere `fallback(input, indices)`.

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
  # Over several devices the kernels would gather a table sharded along its rows.
  if gather_nd_rows_triton.applies(
    input.shape, batch_dims, tuple_size, input.dtype
  ) and placement.one_device("cuda"):
    kernels["cuda"] = per_shard.gather_nd_rows(*ranks)
  if (
    gather_rows_cpu.applies(input.shape, indices.shape, batch_dims, input.dtype)
    and placement.one_device("cpu")
    and _native_cpu("gather_rows.cc")
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
  cpu: Lowering,
  rows_where_shared: Callable[[Lowering], Lowering] | None = None,
) -> jax.Array:
  """REVERSE_SUBSEQUENCES with a length per lane (`lengths`: `input`'s shape with 1 on `axis`,
  clamped to [0, size], int32 where the size allows), in the form each backend runs fastest.

  `lanes(input, lengths)` gathers every element from its lane's source position: the default,
  and the gradient. `cpu(input, lengths)` is the CPU's lowering, which the operator chooses
  (`dml_jax._src.ops.reverse_subsequences`). On CUDA GPUs with TMA where the strip kernel
  applies: `rows_where_shared(strips)`, which moves whole rows where the lanes of every row
  share one length (checked at run time) and runs the kernel otherwise, or the kernel alone
  where `rows_where_shared` is None.

  Examples:
    >>> def lanes(x, n):  # every element from its lane's source position
    ...   t = jnp.arange(x.shape[1])[:, None]
    ...   return jnp.take_along_axis(x, jnp.where(t < n, n - 1 - t, t), axis=1)
    >>> x = np.arange(8, dtype=np.float32).reshape(1, 4, 2)
    >>> n = np.array([[[3, 0]]], np.int32)
    >>> reverse_subsequences_per_lane(x, n, axis=1, lanes=lanes, cpu=lanes)[0]
    Array([[4., 1.],
           [2., 3.],
           [0., 5.],
           [6., 7.]], dtype=float32)
  """
  default = lanes
  if reverse_subsequences_strips_mosaic.applies(input.shape, input.dtype, axis):
    strips = per_shard.reverse_lanes(input.ndim, axis)
    gpu = strips if rows_where_shared is None else rows_where_shared(strips)
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
  indexed: Sequence[int],
  window: Sequence[int],
  count: int,
  dtype: np.dtype,
  *,
  cpu_rows: Callable[..., jax.Array] | None = None,
) -> dict[str, Callable[..., jax.Array]]:
  """SCATTER_ND's pulls, by platform, where they apply: forms of `scattering.scatter`'s
  operands (operand, updates, index, keep, dropped, position) that give its output.

  A pull reads each output row once, from the last update aimed at it or from the input, after
  a winner map (`scatter_nd_rows_triton.winner_map`) has named that update: on CUDA GPUs the
  Triton kernel where it applies; on the CPU `cpu_rows` where the operator gives one
  (`dml_jax._src.ops.scatter_nd.cpu_pull`: a row gather and a select in lax). Each is a
  function of (table, target rows, updates) on the input viewed as (rows, width).

  `indexed` are the sizes the index tuples address, `window` the sizes after them that each
  update writes whole (a row of the table), `count` the number of updates.

  Examples:
    >>> sorted(scatter_nd_rows((8,), (4,), 3, np.dtype(np.float32)))  # 16-byte rows
    []
    >>> f32 = np.dtype(np.float32)
    >>> "cpu" in scatter_nd_rows((8,), (256,), 3, f32, cpu_rows=lambda table, rows, u: table)
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
  if cpu_rows is not None:
    chosen["cpu"] = pull(cpu_rows)
  if scatter_nd_rows_triton.applies(rows, width, count, dtype) and placement.one_device("cuda"):
    chosen["cuda"] = pull(per_shard.scatter_nd_pull_rows())
  return chosen


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
  if not (
    space_to_depth_rows_triton.applies(input.shape, block_size, input.dtype)
    and placement.one_device("cuda")
  ):
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
  if not (
    slice_rows_triton.applies(input.shape, steps, tuple(sizes), input.dtype)
    and placement.one_device("cuda")
  ):
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
    runs_cpu.applies(input.shape, sizes, axis, input.dtype)
    and placement.one_device("cpu")
    and _native_cpu("runs.cc")
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
  if tile_rows_cpu.applies(input.shape, repeats, input.dtype) and _native_cpu("tile_rows.cc"):
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
    and _native_cpu("transpose.cc")
    and transpose_cpu.has_avx2()
  ):
    return fallback(x)
  return on_platforms({"cpu": per_shard.transpose(x.ndim)}, fallback, x)


def _native_cpu(kernel: str) -> bool:
  """Whether the CPU's native `kernel` (a source file of `native_cpu.KERNELS`) may run: the
  process has a CPU backend, and the kernel is built (here, on first use) and loaded. Every
  native kernel is partitioned (`per_shard`), so over several CPU devices it runs per shard."""
  try:
    jax.devices("cpu")
  except (RuntimeError, ValueError):  # no CPU backend here (JAX_PLATFORMS without cpu)
    return False
  return native_cpu.kernel_ready(kernel)


def on_cuda(
  kernel: Callable[..., jax.Array], fallback: Callable[..., jax.Array], *operands: jax.Array
) -> jax.Array:
  """`kernel(*operands)` on CUDA GPUs, `fallback(*operands)` elsewhere; the gradient is
  fallback's (integer operands, the indices or lengths, get none).
  """
  return on_platforms({"cuda": kernel}, fallback, *operands)


# Platforms whose kernels traces leave out, for `benchmarks/run.py --forms` (private; read at
# trace time: a program traced before a change keeps its forms until jax's caches are cleared).
_kernels_off: frozenset[str] = frozenset()


@contextlib.contextmanager
def _without_kernels(*platforms: str) -> Iterator[None]:
  """Within the block, programs traced take `fallback` where they would take a kernel on one
  of `platforms` ("cpu", "cuda")."""
  global _kernels_off
  before, _kernels_off = _kernels_off, _kernels_off | frozenset(platforms)
  try:
    yield
  finally:
    _kernels_off = before


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
  kernels = {platform: k for platform, k in kernels.items() if platform not in _kernels_off}
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


def join(
  inputs: Sequence[jax.Array],
  axis: int,
  *,
  from_parts: bool = False,
  cpu: Callable[..., jax.Array] | None = None,
) -> jax.Array:
  """JOIN along `axis`: `lax.concatenate`, or on the CPU the native kernel where it applies
  (an output of 16 MiB or more, runs of 1 KiB or more, whole inputs) and its code is
  available, else `cpu(*inputs)` where the operator gives a lax form that XLA:CPU runs faster
  (`dml_jax._src.ops.join.cpu_form`). `from_parts`: some inputs are cut out of larger buffers
  in the program (bound tensors at offsets), which the kernel would copy out first.

  Examples:
    >>> x = np.arange(4, dtype=np.float32).reshape(2, 2)
    >>> join([x, x], 0).shape
    (4, 2)
  """
  concatenate = lambda *xs: lax.concatenate(xs, axis)  # noqa: E731
  sizes = [x.shape[axis] for x in inputs]
  joined = (*inputs[0].shape[:axis], sum(sizes), *inputs[0].shape[axis + 1 :])
  if (
    not from_parts  # the kernel's operands would be copied out of their buffers first
    and runs_cpu.applies(joined, sizes, axis, inputs[0].dtype)
    and placement.one_device("cpu")
    and _native_cpu("runs.cc")
  ):
    kernel = per_shard.join_runs(len(joined), len(inputs), axis)
    return on_platforms({"cpu": kernel}, concatenate, *inputs)
  if cpu is None:
    return lax.concatenate(inputs, axis)
  return lax.platform_dependent(*inputs, cpu=cpu, default=concatenate)
