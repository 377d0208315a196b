"""A/B of lax forms of GATHER_ELEMENTS along the inner axis and of REVERSE_SUBSEQUENCES.

Forms, all with in-range int32 source positions computed or given:
- batching: one lax.gather whose other dimensions are batching dims (dml_jax's form);
- columns: the other coordinates as iota columns of an index tuple (jnp advanced indexing);
- linear: one flat element number into the operand viewed as 1-D.
Each is checked against NumPy and timed as pipelined jitted calls against a device copy.

Usage: PYTHONPATH=. python3 benchmarks/gather_elements_forms.py
"""

import jax
import jax.numpy as jnp
import numpy as np
from _timing import copy_ceiling, report  # benchmarks/ is on sys.path when a script in it runs
from jax import lax

from dml_jax._src.indexing import gather_along_axis as batching  # dml_jax's form

IN_BOUNDS = lax.GatherScatterMode.PROMISE_IN_BOUNDS


def columns(x, src, axis):
  n = x.ndim
  coords = [src if d == axis else lax.broadcasted_iota(jnp.int32, src.shape, d) for d in range(n)]
  idx = jnp.stack(coords, axis=-1)
  dn = lax.GatherDimensionNumbers(
    offset_dims=(), collapsed_slice_dims=tuple(range(n)), start_index_map=tuple(range(n))
  )
  return lax.gather(x, idx, dn, (1,) * n, mode=IN_BOUNDS)


def linear(x, src, axis):
  strides = np.cumprod((x.shape[1:] + (1,))[::-1])[::-1]
  flat = jnp.zeros(src.shape, jnp.int32)
  for d in range(x.ndim):
    coord = src if d == axis else lax.broadcasted_iota(jnp.int32, src.shape, d)
    flat = flat + coord * int(strides[d])
  dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
  return lax.gather(x.reshape(-1), flat[..., None], dn, (1,), mode=IN_BOUNDS)


def reverse_source(lengths, shape, axis):
  position = lax.broadcasted_iota(jnp.int32, shape, axis)
  lengths = jnp.broadcast_to(lengths.astype(jnp.int32), shape)
  return jnp.where(position < lengths, lengths - 1 - position, position)


def main():
  rng = np.random.default_rng(0)
  ceiling = copy_ceiling(rng)
  x = rng.standard_normal((8192, 8192)).astype(np.float32)
  idx = rng.integers(0, 8192, (8192, 8192)).astype(np.int32)
  want = np.take_along_axis(x, idx, axis=1)
  moved = x.nbytes * 2 + idx.nbytes
  print("GATHER_ELEMENTS f32 (8192, 8192), int32 indices, axis 1")
  xd, idd = jnp.asarray(x), jnp.asarray(idx)
  for form in (batching, columns, linear):
    fn = jax.jit(lambda a, i, form=form: form(a, i, 1))
    report(form.__name__, fn, (xd, idd), want, moved, ceiling, width=9)
  del xd, idd, x, idx, want
  shape = (64, 4096, 1024)
  x = rng.standard_normal(shape).astype(np.float32)
  for label, lengths in (
    ("random per lane", rng.integers(0, 4097, (64, 1, 1024)).astype(np.uint32)),
    (
      "equal across the inner axis",
      np.repeat(rng.integers(0, 4097, (64, 1, 1)), 1024, axis=2).astype(np.uint32),
    ),
  ):
    src_np = np.arange(4096)[None, :, None]
    src_np = np.where(src_np < lengths, lengths.astype(np.int64) - 1 - src_np, src_np)
    want = np.take_along_axis(x, src_np, axis=1)
    moved = x.nbytes * 2 + lengths.nbytes
    print(f"REVERSE_SUBSEQUENCES f32 {shape}, axis 1, lengths {label}")
    xd, ld = jnp.asarray(x), jnp.asarray(lengths)
    for form in (batching, columns, linear):
      fn = jax.jit(lambda a, n, form=form: form(a, reverse_source(n, a.shape, 1), 1))
      report(form.__name__, fn, (xd, ld), want, moved, ceiling, width=9)
    del xd, ld, want


if __name__ == "__main__":
  main()
