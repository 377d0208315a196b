"""Scatters whose result is the same on every backend: the last update wins, and an update
whose target lies outside the output is dropped.

DirectML leaves both cases undefined; dml_jax's policy (documented in docs/policies.md and
by SCATTER_ELEMENTS and SCATTER_ND) is:

* an index is first mapped by the negative-index rule (signed index types count from the
  end; unsigned ones never wrap), in the index's own dtype; if it is still outside
  [0, size), its update is dropped: nothing is written for it and it wins no tie;
* where several kept updates write one output element, the last of them in row-major
  order of UpdatesTensor wins.

XLA's scatter leaves the order of duplicate writes unspecified, and on GPUs it really
varies from run to run, so off the CPU `scatter` never hands XLA two writes to one element.
It decides the winners first:

1. every kept update scatters its *position* (its rank in row-major order among the
   updates that can collide with it) into a small "winner" array with `max`; integer max
   does not depend on the order it is applied in, so the result is deterministic;
2. every update reads the winner back at its own target and wins if it is itself;
3. one scatter with `unique_indices=True` writes the winning updates; losers and dropped
   updates are sent past the end of the output and dropped by the scatter.

The winner array holds one unsigned integer of the narrowest width that numbers the
updates that can collide (8, 16 or 32 bits) per element that can be targeted, and is
skipped when no two updates can share a target (a single candidate per target). The
final scatter's gradient (JAX's own transpose of a unique scatter) is then the policy's:
the input's cotangent with zeros where an update lands, and for the updates the
cotangent at their target for winners and zero for losers and dropped updates.

XLA:CPU applies a scatter's updates one at a time, in row-major order of the update
positions: there the last update wins in one scatter of every kept update, which is what
`scatter` runs on the CPU (with the settled form's gradient; checked mode, which reports the
losers, settles them on every platform).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dml_jax._src import indexing, placement
from dml_jax._src.dtypes import DataType
from dml_jax._src.feature_level import TensorSupport, support
from dml_jax._src.kernels import forms


def support_rows(
  dimension_counts: int | tuple[int, int],
  data_types: tuple[DataType, ...],
  index_types: tuple[DataType, ...],
) -> dict[str, TensorSupport]:
  """One level's tensor-support rows of a scatter: the input, updates and output share theirs."""
  data = support(dimension_counts, data_types)
  return {
    "InputTensor": data,
    "IndicesTensor": support(dimension_counts, index_types),
    "UpdatesTensor": data,
    "OutputTensor": data,
  }


def position_dtype(count: int) -> np.dtype:
  """The narrowest unsigned dtype that numbers `count` positions from 0."""
  for dtype in (np.uint8, np.uint16, np.uint32):
    if count <= np.iinfo(dtype).max + 1:
      return np.dtype(dtype)
  return np.dtype(np.uint64)


class Targets(NamedTuple):
  """Where each update goes: `coordinates` (in range where `keep`) and `keep`."""

  coordinates: jax.Array
  keep: jax.Array


def targets(indices: jax.Array, sizes: int | Sequence[int]) -> Targets:
  """The negative-index rule applied to `indices`, and which of them stay in range.

  `sizes` is the indexed size, or one size per entry of the last axis of `indices`.
  The arithmetic happens in the index dtype, so a 64-bit index is never narrowed before
  it is judged; `index` is narrowed (to int32 where every size allows it) only after.
  Out-of-range entries of `coordinates` hold a clamped, in-range value (never written at).
  """
  keep = lax.bitwise_not(indexing.out_of_range(indices, sizes))
  index = indexing.clamp_indices(indices, sizes)
  biggest = max(sizes) if isinstance(sizes, Sequence) else sizes
  if biggest >= 2**31 and index.dtype == np.int32:  # the drop position `size` must fit
    index = lax.convert_element_type(index, np.uint32)
  return Targets(index, keep)


class Scattered(NamedTuple):
  """The scatter's output, and for checked mode which updates lost to a later one."""

  output: jax.Array
  loses: jax.Array | None  # kept updates that a later update overwrites (None: none can)
  winner: jax.Array | None  # the position of the update that wins each one's target


def scatter(
  operand: jax.Array,
  updates: jax.Array,
  index: jax.Array,
  keep: jax.Array,
  sizes: Sequence[int],
  dimension_numbers: lax.ScatterDimensionNumbers,
  *,
  position: jax.Array | None,
  winner_shape: Sequence[int],
  winner_dimension_numbers: lax.ScatterDimensionNumbers,
  report: bool = False,
  forms_by_platform: Mapping[str, Callable[..., jax.Array]] | None = None,
) -> Scattered:
  """Writes `updates` into `operand` where `index` says, the last update winning, out-of-range
  updates dropped.

  On the CPU, unless `report`, one scatter writes every kept update: XLA:CPU applies a
  scatter's updates one at a time in row-major order of the update positions, so the last
  one wins there without the winners' scatter-max and read-back (1.5x to 1.9x faster: benchmark
  case `scatter_elements_axis1`). The gradient is the settled form's, and
  the tests hold the CPU to the policy with duplicate targets.

  Args:
    operand: the tensor written into (its values stay where nothing lands).
    updates: the values; its shape is the update positions P followed by the window.
    index: shape P + (k,): for each update the k coordinates (into the dimensions of
      `dimension_numbers.scatter_dims_to_operand_dims`) it writes at, in range where `keep`.
    keep: shape P: the updates whose target lies in the operand.
    sizes: the k indexed sizes (a coordinate equal to its size is dropped by the scatter).
    dimension_numbers: the scatter of `updates` into `operand` at `index`.
    position: shape P, an unsigned order key: among updates that can share a target,
      larger means later in row-major order of UpdatesTensor. None where no two updates
      can share a target.
    winner_shape: the shape of the space the targets are taken in (the operand's shape, or
      its indexed dimensions only when an update writes a whole window).
    winner_dimension_numbers: the scatter of one position per update into `winner_shape`
      at `index`.
    report: also give which updates lose (`Scattered.loses`, `winner`), for checked mode.
    forms_by_platform: faster forms of the policy's output from the same operands
      (operand, updates, index, keep, dropped, position), by platform ("cuda", "cpu"), such
      as SCATTER_ND's pull (`ops.scatter_nd.pull_forms`); one given for "cpu" replaces the
      scatter in order. Checked mode takes none of them.
  """
  dropped = jnp.broadcast_to(np.asarray(sizes, index.dtype), index.shape)
  settled = functools.partial(
    _settled,
    dimension_numbers=dimension_numbers,
    winner_shape=winner_shape,
    winner_dimension_numbers=winner_dimension_numbers,
  )
  if report or position is None:
    return settled(operand, updates, index, keep, dropped, position)
  # Every array the forms use is an operand: a custom gradient closes over no tracer.
  operands = (operand, updates, index, keep, dropped, position)

  def in_order(operand, updates, index, keep, dropped, position):
    del position  # the scatter's own order is row-major order
    if _flattens(operand.shape, dimension_numbers) and placement.one_device("cpu"):
      return _in_order_flat(operand, updates, index, keep, dimension_numbers)
    chosen = lax.select(_expand(keep, index), index, dropped)
    return lax.scatter(operand, chosen, updates, dimension_numbers, mode=_DROP)

  chosen = {"cpu": in_order, **(forms_by_platform or {})}
  output = forms.on_platforms(chosen, lambda *xs: settled(*xs).output, *operands)
  return Scattered(output, None, None)


_DROP = lax.GatherScatterMode.FILL_OR_DROP


def _flattens(shape: Sequence[int], numbers: lax.ScatterDimensionNumbers) -> bool:
  """Whether a scatter of single elements into `shape` can run on flat int32 offsets."""
  return not numbers.update_window_dims and math.prod(shape) < 2**31 - 1


def _in_order_flat(
  operand: jax.Array,
  updates: jax.Array,
  index: jax.Array,
  keep: jax.Array,
  numbers: lax.ScatterDimensionNumbers,
) -> jax.Array:
  """The scatter in order of single elements, on the operand viewed flat: each update's
  offset (its coordinates, and its batch position for batching dimensions, times the
  operand's strides) in one int32, dropped updates past the end. XLA:CPU runs this 1.2x
  faster than the scatter of coordinate vectors with batching dimensions (benchmark case
  `scatter_elements_axis1`), in the same order. Only where the
  process has one CPU device: the flat view merges a sharded dimension with the others, and
  XLA would gather the operand and replicate the output."""
  shape = operand.shape
  batching = zip(numbers.operand_batching_dims, numbers.scatter_indices_batching_dims, strict=True)
  offset = indexing.flat_offsets(
    shape, index, keep, numbers.scatter_dims_to_operand_dims, tuple(batching)
  )
  total = math.prod(shape)
  flat = lax.ScatterDimensionNumbers(
    update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
  )
  written = lax.scatter(
    operand.reshape(total), offset.reshape(-1, 1), updates.reshape(-1), flat, mode=_DROP
  )
  return written.reshape(shape)


def _settled(
  operand: jax.Array,
  updates: jax.Array,
  index: jax.Array,
  keep: jax.Array,
  dropped: jax.Array,
  position: jax.Array | None,
  *,
  dimension_numbers: lax.ScatterDimensionNumbers,
  winner_shape: Sequence[int],
  winner_dimension_numbers: lax.ScatterDimensionNumbers,
) -> Scattered:
  """The winners settled first (`scatter`'s steps 1 to 3), then one unique scatter."""
  loses = winner = None
  if position is None:
    wins = keep
  else:
    kept = lax.select(_expand(keep, index), index, dropped)
    lowest = lax.full(winner_shape, 0, position.dtype)
    best = lax.scatter_max(lowest, kept, position, winner_dimension_numbers, mode=_DROP)
    winner = lax.gather(
      best,
      index,
      _gather_numbers(winner_dimension_numbers),
      slice_sizes=(1,) * len(winner_shape),
      mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS,
    )
    wins = lax.bitwise_and(keep, winner == position)
    loses = lax.bitwise_and(keep, lax.bitwise_not(wins))
  chosen = lax.select(_expand(wins, index), index, dropped)
  output = lax.scatter(operand, chosen, updates, dimension_numbers, unique_indices=True, mode=_DROP)
  return Scattered(output, loses, winner)


def _expand(mask: jax.Array, index: jax.Array) -> jax.Array:
  """A mask of the update positions P, broadcast over the k coordinates of each index."""
  return lax.broadcast_in_dim(mask, index.shape, tuple(range(mask.ndim)))


def _gather_numbers(numbers: lax.ScatterDimensionNumbers) -> lax.GatherDimensionNumbers:
  """The gather that reads back, one element per update, what a scatter of scalars wrote."""
  return lax.GatherDimensionNumbers(
    offset_dims=(),
    collapsed_slice_dims=tuple(numbers.inserted_window_dims),
    start_index_map=tuple(numbers.scatter_dims_to_operand_dims),
    operand_batching_dims=tuple(numbers.operand_batching_dims),
    start_indices_batching_dims=tuple(numbers.scatter_indices_batching_dims),
  )


def flat_positions(shape: Sequence[int]) -> jax.Array:
  """Each position of `shape` numbered in row-major order, in the narrowest unsigned dtype."""
  count = math.prod(shape)
  return lax.iota(position_dtype(count), count).reshape(tuple(shape))
