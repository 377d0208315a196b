"""The float scans (CUMULATIVE_SUMMATION, CUMULATIVE_PRODUCT) on GPUs, as a Pallas kernel (Triton
backend) that walks lanes in parallel and each lane in order.

A float tally must be taken one element after the other in walking order (docs/policies.md), so
the only parallelism is across lanes. The lax form is a loop over the axis, one step per kernel
launch (benchmark case `cumulative_summation_axis1`: 0.01 of the copy on an H100). Here each
program owns a run of lanes and walks the whole axis: it loads the next `ahead` elements of
every lane first (independent loads, in flight together), then adds (or multiplies) them into
the tallies one at a time, storing each partial tally. The lanes are the columns of each (axis,
inner) slab, where neighbouring lanes are neighbouring addresses; a scan along the last axis
walks the columns of the transpose (two transposes at the copy's speed cost less than walking
strided rows: the `--sweep` of case `cumulative_summation_axis1`).

`applies` decides from static shapes; `forms` runs the kernel (`ops.cumulative.KERNELS`) on
CUDA GPUs only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax
import numpy as np
from jax import lax

from dml_jax._src.kernels import _triton, availability

_DATA_TYPES = frozenset(np.dtype(t) for t in ("float32", "float16"))


@dataclasses.dataclass(frozen=True)
class LanesConfig:
  """The kernel's tuning.

  Attributes:
    lanes: the most lanes a program walks (a power of two).
    ahead: the elements of each lane loaded before they are combined.
    min_input_bytes: smaller inputs keep the lax form.
    num_warps: a program's warps.
  """

  lanes: int = 64
  ahead: int = 32
  min_input_bytes: int = 1 << 20
  num_warps: int = 2


DEFAULT = LanesConfig()


def applies(
  shape: tuple[int, ...], axis: int, dtype: np.dtype, config: LanesConfig | None = None
) -> bool:
  """Whether a float scan of this static shape takes the kernel: FLOAT32 or FLOAT16 data of at
  least `min_input_bytes`, 32 lanes or more, fewer than 2**31 elements.

  Examples:
    >>> f32 = np.dtype(np.float32)
    >>> applies((4096, 8192), 1, f32) == availability.probe().pallas_triton
    True
    >>> applies((4096, 8192), 1, np.dtype(np.int32))  # integers wrap: XLA's scan is exact
    False
  """
  config = DEFAULT if config is None else config
  dtype = np.dtype(dtype)
  count = math.prod(shape)
  return (
    availability.probe().pallas_triton
    and dtype in _DATA_TYPES
    and count // shape[axis] >= 32
    and count * dtype.itemsize >= config.min_input_bytes
    and count < 2**31
  )


def cumulative_lanes(
  input: jax.Array,
  *,
  axis: int,
  reverse: bool,
  exclusive: bool,
  product: bool,
  config: LanesConfig | None = None,
  interpret: bool = False,
) -> jax.Array:
  """The kernel: every lane's running tally along `axis`, in walking order (from the end where
  `reverse`), inclusive or `exclusive`, of sums or (`product`) products; the tally of one
  element is that element.

  With `interpret`, Pallas interprets the kernel on any backend.

  Examples:
    >>> x = np.arange(2 * 40, dtype=np.float32).reshape(40, 2)
    >>> out = cumulative_lanes(x, axis=0, reverse=False, exclusive=False, product=False,
    ...                        interpret=True)
    >>> bool((out == np.cumsum(x, axis=0)).all())
    True
  """
  from jax.experimental import pallas as pl  # imported late: only GPU programs trace it
  from jax.experimental.pallas import triton as pltriton

  config = DEFAULT if config is None else config
  shape = input.shape
  n = shape[axis]
  outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1 :])
  combine: Callable[[jax.Array, jax.Array], jax.Array] = lax.mul if product else lax.add
  identity = 1 if product else 0
  at = (lambda k: n - 1 - k) if reverse else (lambda k: k)
  if inner == 1:  # lanes along the last axis: walked as the columns of the transpose
    columns = lax.transpose(input.reshape(outer, n), (1, 0))
    out = cumulative_lanes(
      columns,
      axis=0,
      reverse=reverse,
      exclusive=exclusive,
      product=product,
      config=config,
      interpret=interpret,
    )
    return lax.transpose(out, (1, 0)).reshape(shape)
  # The lanes are the columns of each (n, inner) slab.
  view = input.reshape(outer, n, inner)
  runs = _triton.Runs.of(inner, config.lanes)
  grid = outer * runs.count

  def kernel(x_ref, out_ref):
    program = pl.program_id(0)
    slab, run = program // runs.count, program % runs.count
    columns = runs.start(run) + lax.iota(np.int32, runs.length)
    where = lambda k: (slab, at(k), columns)  # the k-th element of the walk, in each lane
    first = x_ref[where(0)]
    out_ref[where(0)] = lax.full_like(first, identity) if exclusive else first

    def walk(start, count, tally):
      """Elements start .. start + count - 1 of the walk (count static): loaded, then combined."""
      loaded = [x_ref[where(start + i)] for i in range(count)]
      for i, value in enumerate(loaded):
        following = combine(tally, value)
        out_ref[where(start + i)] = tally if exclusive else following
        tally = following
      return tally

    chunks, rest = divmod(n - 1, config.ahead)
    tally = lax.fori_loop(
      0, chunks, lambda c, tally: walk(1 + c * config.ahead, config.ahead, tally), first
    )
    if rest:
      walk(1 + chunks * config.ahead, rest, tally)

  spec = pl.BlockSpec(view.shape, lambda p: (0,) * view.ndim)
  out = pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct(view.shape, input.dtype),
    grid=(grid,),
    in_specs=[spec],
    out_specs=spec,
    compiler_params=None if interpret else pltriton.CompilerParams(num_warps=config.num_warps),
    interpret=interpret,
  )(view)
  return out.reshape(shape)
