"""SCATTER_ELEMENTS along the last axis, as a Pallas kernel (Triton backend) that settles each
row's winners on chip.

The lax form settles the last update of each target with a scatter-max of positions into an
array of the input's size, reads it back, and scatters the winners, a third of XLA's own
(nondeterministic) scatter's speed; this kernel is faster, still below XLA's scatter: the
atomics bound it (benchmark case `scatter_elements_axis1`). Each program owns a row at a time,
and the row's winner array is a row of a small scratch (one per program, so it stays in L2):
the program zeroes it, applies an atomic max of every update's position + 1 at its target
(in float32: Pallas lowers an int32 vector's atomic max as a float one), and reads it back: each
output element then takes its winning update (gathered from the update row) or, where no
update landed, the input's element, in one contiguous store. Thread-block barriers order the
steps. A max does not depend on the order the atomics run in, so the result is the
policy's (the last update in row-major order wins, out-of-range updates are dropped) on every
run.

`applies` decides from static shapes; `forms` runs the kernel (`ops.scatter_elements.KERNELS`) on
CUDA GPUs only, with the lax path's gradient.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dml_jax._src import indexing
from dml_jax._src.kernels import _triton, availability


@dataclasses.dataclass(frozen=True)
class RowScatterConfig:
  """The kernel's tuning.

  Attributes:
    max_row: the longest input row and update row, in elements (each is one block of
      registers in a program).
    programs: the most programs (each owns a row of scratch, and loops over rows).
    chunk: the elements a program handles at a time (a power of two).
    num_warps: a program's warps. 256-element chunks and 8 warps measured best on an H100
      (2.22 ms for the (8192, 8192) permutation per row; 2.7 to 3.3 ms for the other
      chunks, warps and program counts tried).
  """

  max_row: int = 8192
  programs: int = 1024
  chunk: int = 256
  num_warps: int = 8


DEFAULT = RowScatterConfig()

_INDEX_TYPES = frozenset(np.dtype(t) for t in ("int32", "uint32"))
_DATA_TYPES = frozenset(np.dtype(t) for t in ("float32", "int32", "uint32"))


def applies(
  input_shape: tuple[int, ...],
  indices_shape: tuple[int, ...],
  dtype: np.dtype,
  index_dtype: np.dtype,
  axis: int,
  config: RowScatterConfig | None = None,
) -> bool:
  """Whether SCATTER_ELEMENTS of these static shapes can use the kernel: the last axis, 32-bit
  data and indices, rows of a power-of-two length up to `max_row`.

  Examples:
    >>> f32, i32 = np.dtype(np.float32), np.dtype(np.int32)
    >>> applies((8192, 8192), (8192, 8192), f32, i32, 1) == availability.probe().pallas_triton
    True
    >>> applies((8192, 8192), (8192, 8192), f32, i32, 0)  # not the last axis
    False
  """
  config = DEFAULT if config is None else config
  rank = len(input_shape)
  width, count = input_shape[-1], indices_shape[-1]
  rows = int(np.prod(input_shape[:-1], dtype=np.int64))
  return (
    availability.probe().pallas_triton
    and axis == rank - 1
    and np.dtype(dtype) in _DATA_TYPES
    and np.dtype(index_dtype) in _INDEX_TYPES
    and _triton.power_of_two(width)
    and _triton.power_of_two(count)
    and 16 <= width <= config.max_row
    and 16 <= count <= config.max_row
    and rows * width < 2**31
  )


def scatter_rows(
  input: jax.Array,
  indices: jax.Array,
  updates: jax.Array,
  *,
  config: RowScatterConfig | None = None,
  interpret: bool = False,
) -> jax.Array:
  """The kernel: SCATTER_ELEMENTS along the last axis; `indices` raw (normalized here).

  With `interpret`, Pallas interprets the kernel on any backend.

  Examples:
    >>> x = np.zeros((2, 16), np.float32)
    >>> i = np.tile(np.array([3, 1, 3, 99] + [15] * 12, np.int32), (2, 1))
    >>> u = np.tile(np.arange(1, 17, dtype=np.float32), (2, 1))
    >>> out = scatter_rows(x, i, u, interpret=True)
    >>> out[0, :4].tolist(), float(out[0, 15])
    ([0.0, 2.0, 0.0, 3.0], 16.0)
  """
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it
  from jax.experimental.pallas import triton as pltriton

  config = DEFAULT if config is None else config
  width, count = input.shape[-1], indices.shape[-1]
  rows = int(np.prod(input.shape[:-1], dtype=np.int64))
  programs = _triton.largest_power_of_two_dividing(rows, config.programs)
  chunk = min(config.chunk, width, count)
  steps = rows // programs
  x = input.reshape(rows, width)
  idx = indices.reshape(rows, count)
  upd = updates.reshape(rows, count)

  # A thread-block barrier between the steps; interpreted, the steps run in order anyway.
  barrier = (lambda: None) if interpret else pltriton.debug_barrier

  def kernel(x_ref, idx_ref, upd_ref, out_ref, scratch_ref):
    program = pl.program_id(0)
    # Positions + 1 as float32 (exact below 2**24), 0 in the scratch: no update yet. Pallas lowers
    # an atomic max of an int32 vector as a float one, so the scratch holds floats.

    def row_step(step, carry):
      row = program + step * programs
      # In chunks of `chunk` elements: few registers a thread, so many programs run at once.
      for c in range(width // chunk):
        scratch_ref[program, pl.ds(c * chunk, chunk)] = jnp.zeros((chunk,), np.float32)
      barrier()
      for c in range(count // chunk):
        raw = idx_ref[row, pl.ds(c * chunk, chunk)]
        keep = lax.bitwise_not(indexing.out_of_range(raw, width))
        # A dropped update goes to the scratch's last column, a sink no kept update shares
        # (the atomics take no masks in interpret mode).
        slot = jnp.where(keep, indexing.clamp_indices(raw, width), np.int32(width))
        position = lax.iota(np.float32, chunk) + np.float32(c * chunk + 1)
        if interpret:  # one update at a time: interpreted atomics are not atomic among repeats

          def offer(j, carry, slot=slot, position=position):
            pltriton.atomic_max(scratch_ref, (program, slot[j]), position[j])
            return carry

          lax.fori_loop(0, chunk, offer, 0)
        else:
          pltriton.atomic_max(scratch_ref, (program, slot), position)
      barrier()
      for c in range(width // chunk):
        # Each output element's winning update (its position + 1), or 0: a volatile load, never
        # served from a line an earlier row left in L1.
        winner = pltriton.load(scratch_ref.at[program, pl.ds(c * chunk, chunk)], volatile=True)
        chosen = upd_ref[row, jnp.maximum(winner.astype(np.int32) - 1, 0)]
        out_ref[row, pl.ds(c * chunk, chunk)] = jnp.where(
          winner > 0, chosen, x_ref[row, pl.ds(c * chunk, chunk)]
        )
      barrier()  # the next row zeroes the scratch these reads used
      return carry

    lax.fori_loop(0, steps, row_step, 0)

  out, _ = pl.pallas_call(
    kernel,
    out_shape=(
      jax.ShapeDtypeStruct((rows, width), input.dtype),
      jax.ShapeDtypeStruct((programs, width + 1), np.float32),
    ),
    grid=(programs,),
    in_specs=[
      pl.BlockSpec((rows, width), lambda p: (0, 0)),
      pl.BlockSpec((rows, count), lambda p: (0, 0)),
      pl.BlockSpec((rows, count), lambda p: (0, 0)),
    ],
    out_specs=(
      pl.BlockSpec((rows, width), lambda p: (0, 0)),
      pl.BlockSpec((programs, width + 1), lambda p: (0, 0)),
    ),
    compiler_params=None if interpret else pltriton.CompilerParams(num_warps=config.num_warps),
    interpret=interpret,
  )(x, idx, upd)
  return out.reshape(input.shape)
