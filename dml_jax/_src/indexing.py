"""Index arithmetic shared by the gathers: DirectML's negative-index rule and the
out-of-range policy, computed in the index's own dtype so that nothing wraps.

Policy (documented in docs/policies.md): a signed index i < 0 counts from the end,
i + size (only signed index types, which DirectML allows from FL 3_0); the
result is then clamped to [0, size - 1], so no read leaves the input. The
clamped index is finally narrowed to int32 when the size allows it (a value in
[0, size) is exact in int32 for size <= 2**31); that narrowing happens after
clamping, so 2**32 + 1 clamps to size - 1 and never reads element 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

_UNSIGNED: dict[np.dtype[Any], np.dtype[Any]] = {
  np.dtype(np.int32): np.dtype(np.uint32),
  np.dtype(np.int64): np.dtype(np.uint64),
  np.dtype(np.uint32): np.dtype(np.uint32),
  np.dtype(np.uint64): np.dtype(np.uint64),
}


def clamp_indices(indices: jax.Array, sizes: int | Sequence[int]) -> jax.Array:
  """Normalizes negative indices and clamps to [0, size - 1], without overflow.

  Args:
    indices: INT32/INT64/UINT32/UINT64 indices.
    sizes: the axis size, or one size per entry of the last axis of `indices`.

  Returns:
    In-range indices, int32 when every size is <= 2**31, else the unsigned
    counterpart of the index dtype.
  """
  dtype = np.dtype(indices.dtype)
  unsigned = _UNSIGNED[dtype]
  size = jnp.broadcast_to(np.asarray(sizes, unsigned), indices.shape)
  last = size - np.asarray(1, unsigned)
  if np.issubdtype(dtype, np.signedinteger):
    # |i| of a negative i as ~i + 1, exact in the unsigned type (|-2**31| = 2**31).
    magnitude = lax.convert_element_type(lax.bitwise_not(indices), unsigned) + np.asarray(
      1, unsigned
    )
    from_end = lax.select(magnitude <= size, size - magnitude, lax.full_like(size, 0))
    from_start = lax.min(lax.convert_element_type(indices, unsigned), last)
    clamped = lax.select(indices < np.asarray(0, dtype), from_end, from_start)
  else:
    clamped = lax.min(indices, last)
  biggest = max(sizes) if isinstance(sizes, Sequence) else sizes
  return lax.convert_element_type(clamped, np.int32) if biggest <= 2**31 else clamped


def flat_offsets(
  shape: Sequence[int],
  index: jax.Array,
  keep: jax.Array,
  index_dims: Sequence[int],
  batching: Sequence[tuple[int, int]] = (),
) -> jax.Array:
  """Each entry's row-major offset into an array of `shape`, as int32, and `prod(shape)` (one
  past the end) where `keep` is False; `prod(shape)` must be below 2**31.

  `index` (keep.shape + (k,)) holds in-range coordinates along `index_dims`; each pair
  (dim, axis) of `batching` adds the entry's own position along `axis` of `keep` as its
  coordinate along `dim` (a scatter's batching dimensions).

  Examples:
    >>> index = np.array([[1, 2], [0, 3], [2, 0]], np.int32)
    >>> flat_offsets((3, 4), index, np.array([True, True, False]), (0, 1)).tolist()
    [6, 3, 12]
  """
  strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
  offset = lax.full(keep.shape, 0, np.int32)
  for j, d in enumerate(index_dims):
    offset += index[..., j].astype(np.int32) * np.int32(strides[d])
  for d, axis in batching:
    offset += lax.broadcasted_iota(np.int32, keep.shape, axis) * np.int32(strides[d])
  return lax.select(keep, offset, lax.full_like(offset, math.prod(shape)))


def out_of_range(indices: jax.Array, sizes: int | Sequence[int]) -> jax.Array:
  """Where an index is out of range after the negative-index rule (for checked mode).

  Signed indices must lie in [-size, size), unsigned ones in [0, size).
  """
  dtype = np.dtype(indices.dtype)
  unsigned = _UNSIGNED[dtype]
  size = jnp.broadcast_to(np.asarray(sizes, unsigned), indices.shape)
  as_unsigned = lax.convert_element_type(indices, unsigned)
  if not np.issubdtype(dtype, np.signedinteger):
    return as_unsigned >= size
  magnitude = lax.convert_element_type(lax.bitwise_not(indices), unsigned) + np.asarray(1, unsigned)
  return lax.select(indices < np.asarray(0, dtype), magnitude > size, as_unsigned >= size)


def gather_along_axis(operand: jax.Array, indices: jax.Array, axis: int) -> jax.Array:
  """out[o] = operand[o with o[axis] := indices[o]] for in-range indices.

  `indices` has operand's shape except on `axis`; one lax.gather whose other
  dimensions are batch dimensions.
  """
  return _gather_on_axis(operand, indices, axis, [d for d in range(operand.ndim) if d != axis])


def gather_slices_along_axis(operand: jax.Array, indices: jax.Array, axis: int) -> jax.Array:
  """out[o, i, ...] = operand[o, indices[o, i], ...] for in-range indices: whole trailing slices.

  `indices` has operand's shape up to `axis` and any size on `axis`; the
  dimensions before `axis` are batch dimensions, those after it are copied whole.
  """
  return _gather_on_axis(operand, indices, axis, list(range(axis)))


def _gather_on_axis(
  operand: jax.Array, indices: jax.Array, axis: int, batch: list[int]
) -> jax.Array:
  """One lax.gather of in-range positions on `axis`: the `batch` dimensions pair operand and
  indices, the other dimensions (after `axis`) are copied whole."""
  whole = [d for d in range(axis + 1, operand.ndim) if d not in batch]
  dnums = lax.GatherDimensionNumbers(
    offset_dims=tuple(whole),
    collapsed_slice_dims=(axis,),
    start_index_map=(axis,),
    operand_batching_dims=tuple(batch),
    start_indices_batching_dims=tuple(batch),
  )
  return lax.gather(
    operand,
    indices[..., None],
    dnums,
    slice_sizes=tuple(operand.shape[d] if d in whole else 1 for d in range(operand.ndim)),
    mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS,
  )
