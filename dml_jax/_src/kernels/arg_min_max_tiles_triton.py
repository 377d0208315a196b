"""ARGMIN and ARGMAX of float data along an axis before the last on GPUs, as a Pallas kernel
(Triton backend) that walks tiles along the axis, every element read once and ranked in
registers.

The lax form maps the values to ordered integer keys (`axis_direction.ordered_keys`) and reduces
them with `lax.argmax`/`lax.argmin`, a reversed lane for DECREASING. Here each program owns a
run of neighbouring lanes (columns of each (axis, inner) slab) and loads `ahead` of their
elements at a time: a tile. It walks the axis one tile after the other, computes each element's
key in registers (the same order as `ordered_keys`: -0.0 equals 0.0, every NaN ranks above +inf),
and keeps, in each slot of the tile, the best key it has seen and its position: a greater key
replaces it, and an equal one too where the last of equal keys wins (DECREASING). At the end the
slots of each lane are reduced to the best key and the first (or last) position holding it.
ARGMIN ranks by the negated key, so both operators keep the greatest. Along the last axis the
lax form stays: there a kernel of this kind was no faster than it on an H100, even at its best
config (the benchmark case `argmax_axis1`).

Where the programs would be too few to fill the GPU (few lanes, a long axis), the axis is split
into pieces that programs walk in parallel, and the pieces' best keys and positions are merged
by a small lax reduction. The block that ends a piece whose length is no multiple of the block
starts early and overlaps the one before it (no masks; an element seen twice does not change
the answer), and so does the last run of lanes (written twice with the same values).

`applies` decides from static shapes; `forms` runs the kernel (`ops.arg_min_max.KERNELS`) on
CUDA GPUs only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dml_jax._src.kernels import _triton, availability

_DATA_TYPES = frozenset(np.dtype(t) for t in ("float32", "float16"))


@dataclasses.dataclass(frozen=True)
class TilesConfig:
  """The kernel's tuning.

  Attributes:
    lanes: the most neighbouring lanes a program reduces.
    ahead: the most elements of each lane loaded at a time.
    programs: the axis is split into the fewest pieces (a power of two dividing its length,
      each at least a block long) that give at least this many programs; 0 never splits.
    min_input_bytes: smaller inputs keep the lax form.
    num_warps: a program's warps.

  Triton's tiles have power-of-two sizes: `lanes` and `ahead` are rounded down to one (0 to 1,
  for a `--sweep`).
  """

  lanes: int = 64
  ahead: int = 32
  programs: int = 512
  min_input_bytes: int = 1 << 20
  num_warps: int = 8


DEFAULT = TilesConfig()


def applies(
  shape: tuple[int, ...], axis: int, dtype: np.dtype, config: TilesConfig | None = None
) -> bool:
  """Whether ARGMIN or ARGMAX along `axis` of this static shape takes the kernel: FLOAT32 or
  FLOAT16 data of at least `min_input_bytes` and fewer than 2**31 elements, reduced along an
  axis before the last with 32 lanes or more after it.

  Examples:
    >>> f32 = np.dtype(np.float32)
    >>> applies((8192, 8192), 0, f32) == availability.probe().pallas_triton
    True
    >>> applies((8192, 8192), 1, f32)  # the last axis: the lax form
    False
    >>> applies((8192, 8192), 0, np.dtype(np.int32))  # integer keys: the lax form
    False
    >>> applies((4096, 64, 4), 1, f32)  # 4 lanes after the axis: too few
    False
  """
  config = DEFAULT if config is None else config
  dtype = np.dtype(dtype)
  count = math.prod(shape)
  inner = math.prod(shape[axis + 1 :])
  return (
    availability.probe().pallas_triton
    and dtype in _DATA_TYPES
    and 0 <= axis < len(shape)
    and inner >= 32
    and count * dtype.itemsize >= config.min_input_bytes
    and count < 2**31
  )


def ranking_keys(x: jax.Array, largest: bool) -> jax.Array:
  """int32 keys that rank `x` (float32 or float16) in the selection order, negated for the
  smallest (`largest` False): the greatest key is the extreme. Its magnitude bits, negated for
  a negative number (so -0.0 and 0.0 tie), and one key above +inf for every NaN.

  Examples:
    >>> x = np.array([-np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, np.nan, -np.nan], np.float32)
    >>> keys = ranking_keys(jnp.asarray(x), largest=True).tolist()
    >>> keys == sorted(keys), keys[2] == keys[3], keys[6] == keys[7] > keys[5]
    (True, True, True)
  """
  info = np.finfo(x.dtype)
  signed = np.dtype(f"i{np.dtype(x.dtype).itemsize}")
  bits = lax.bitcast_convert_type(x, signed).astype(np.int32)  # sign-extended
  magnitude = bits & np.int32((1 << (info.bits - 1)) - 1)
  infinity = np.int32(((1 << info.nexp) - 1) << info.nmant)
  key = jnp.where(bits < 0, -magnitude, magnitude)
  key = jnp.where(magnitude > infinity, infinity + np.int32(1), key)
  return key if largest else -key


@dataclasses.dataclass(frozen=True)
class _Plan:
  """How a call is cut: the (outer, n, inner) view; the runs of lanes that programs own (a run
  of each slab a program), a run by `block` elements of the axis a tile; the axis in `pieces`
  pieces of `piece` elements."""

  outer: int
  n: int
  inner: int
  block: int
  runs: _triton.Runs
  pieces: int

  @property
  def piece(self) -> int:
    return self.n // self.pieces

  @classmethod
  def of(cls, shape: tuple[int, ...], axis: int, config: TilesConfig) -> _Plan:
    n = shape[axis]
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1 :])
    runs = _triton.Runs.of(inner, _tile_size(config.lanes))
    most_block, programs = _tile_size(config.ahead), outer * runs.count
    pieces = 1
    while (
      programs * pieces < config.programs
      and n % (pieces * 2) == 0
      and n // (pieces * 2) >= most_block
    ):
      pieces *= 2
    block = _triton.Runs.of(n // pieces, most_block).length
    return cls(outer, n, inner, block, runs, pieces)


def _tile_size(size: int) -> int:
  """A tile's size from the config: the largest power of two up to `size`, and 1 for 0 (a
  `--sweep` tries 0)."""
  return 1 << (max(1, size).bit_length() - 1)


def arg_min_max_tiles(
  input: jax.Array,
  *,
  axis: int,
  largest: bool,
  last_wins: bool,
  index_dtype: np.dtype | type = np.int32,
  config: TilesConfig | None = None,
  interpret: bool = False,
) -> jax.Array:
  """The kernel: the position along `axis` of the largest (or, `largest` False, the smallest)
  element of each lane of `input`, the first of equal ones or (`last_wins`) the last, as
  `index_dtype` (an integer type, stored so by the kernel: no conversion after it); the result
  has `input`'s shape less `axis`.

  With `interpret`, Pallas interprets the kernel on any backend.

  Examples:
    >>> x = np.array([[1, 3, 3, 0], [np.nan, 2, np.nan, 5]] * 16, np.float32).T
    >>> got = arg_min_max_tiles(jnp.asarray(x), axis=0, largest=True, last_wins=False,
    ...                         interpret=True)
    >>> got[:2].tolist()
    [1, 0]
    >>> arg_min_max_tiles(jnp.asarray(x.T), axis=0, largest=False, last_wins=True,
    ...                   interpret=True).tolist()
    [30, 31, 30, 30]
  """
  config = DEFAULT if config is None else config
  plan = _Plan.of(input.shape, axis, config)
  out_shape = input.shape[:axis] + input.shape[axis + 1 :]
  view = input.reshape(plan.outer, plan.n, plan.inner)
  index_dtype = np.dtype(index_dtype)
  keys, positions = _call(view, plan, largest, last_wins, index_dtype, config, interpret)
  if plan.pieces == 1:
    return positions[0].reshape(out_shape)
  # The pieces' winners, merged: positions grow with the piece, so the first (last) position
  # among the pieces holding the best key is the first (last) of the whole lane.
  best = jnp.max(keys, axis=0)
  holds = keys == best
  if last_wins:
    position = jnp.max(jnp.where(holds, positions, np.int32(-1)), axis=0)
  else:
    position = jnp.min(jnp.where(holds, positions, np.int32(plan.n)), axis=0)
  return position.astype(index_dtype).reshape(out_shape)


def _call(
  view: jax.Array,
  plan: _Plan,
  largest: bool,
  last_wins: bool,
  index_dtype: np.dtype,
  config: TilesConfig,
  interpret: bool,
) -> tuple[jax.Array, jax.Array]:
  """The pallas_call: each piece's best keys and positions, (pieces, outer * inner) each, int32
  (positions as `index_dtype` where the axis is one piece)."""
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it
  from jax.experimental.pallas import triton as pltriton

  runs, block, piece = plan.runs, plan.block, plan.piece
  out_lanes = plan.outer * plan.inner

  def kernel(x_ref, *out_refs):
    program, part = pl.program_id(0), pl.program_id(1)
    base = pl.multiple_of(part * piece, piece)
    slab, run = program // runs.count, program % runs.count
    first_lane = runs.start(run)
    load = lambda start: x_ref[slab, pl.ds(base + start, block), pl.ds(first_lane, runs.length)]
    out_at = pl.ds(slab * plan.inner + first_lane, runs.length)
    steps = lax.broadcasted_iota(np.int32, (block, runs.length), 0)
    key, position = _walk(load, steps, piece, block, largest, last_wins)
    best = jnp.max(key, axis=0, keepdims=True)
    holds = key == best
    if last_wins:
      winner = jnp.max(jnp.where(holds, position, np.int32(-1)), axis=0)
    else:
      winner = jnp.min(jnp.where(holds, position, np.int32(piece)), axis=0)
    keys_ref, positions_ref = out_refs if plan.pieces > 1 else (None, out_refs[0])
    positions_ref[part, out_at] = (winner + base).astype(positions_ref.dtype)
    if keys_ref is not None:
      keys_ref[part, out_at] = jnp.max(key, axis=0)

  out = jax.ShapeDtypeStruct((plan.pieces, out_lanes), np.int32)
  out_shapes = [out, out] if plan.pieces > 1 else [out.update(dtype=index_dtype)]
  whole = lambda shape: pl.BlockSpec(shape, lambda program, part: (0,) * len(shape))
  results = pl.pallas_call(
    kernel,
    out_shape=out_shapes,
    grid=(plan.outer * runs.count, plan.pieces),
    in_specs=[whole(view.shape)],
    out_specs=[whole(s.shape) for s in out_shapes],
    compiler_params=None
    if interpret
    else pltriton.CompilerParams(num_warps=max(1, config.num_warps)),
    interpret=interpret,
  )(view)
  if plan.pieces > 1:
    return results[0], results[1]
  return results[0], results[0]


def _walk(
  load: Callable[[jax.Array | int], jax.Array],
  steps: jax.Array,
  piece: int,
  block: int,
  largest: bool,
  last_wins: bool,
) -> tuple[jax.Array, jax.Array]:
  """Each slot's best key and its position over a piece of `piece` elements walked a tile at a
  time (`load(start)`: the tile of elements start .. start + block - 1; `steps`: each slot's
  offset in the tile). A greater key replaces the best, an equal one too where `last_wins`."""
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it

  # A slot keeps the start of the tile its best came from (a scalar per step: no add per
  # element); its position is that start plus its offset.
  def step(start, carry):
    best, best_start = carry
    key = ranking_keys(load(start), largest)
    better = key >= best if last_wins else key > best
    return jnp.where(better, key, best), jnp.where(better, start, best_start)

  first = (ranking_keys(load(0), largest), jnp.zeros(steps.shape, np.int32))
  chunks, rest = divmod(piece, block)
  whole_block = lambda c, carry: step(pl.multiple_of(c * block, block), carry)
  carry = lax.fori_loop(1, chunks, whole_block, first)
  if rest:  # the last block starts early, overlapping the one before
    carry = step(np.int32(piece - block), carry)
  best, best_start = carry
  return best, best_start + steps
