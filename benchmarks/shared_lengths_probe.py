"""Probe: REVERSE_SUBSEQUENCES with one length per batch entry, in the lowering's forms.

Not part of the library. With the lengths as a (batch, 1, 1) array (zero strides after the
batch axis) the lowering knows from the shapes that whole rows move; with DirectML's full
(batch, 1, features) tensor it checks at run time (`lax.cond`, whose predicate the host waits
for on a GPU). Forms, each checked bit for bit and timed pipelined against a 1 GiB copy:

- "dml_jax, (B, 1, 1)": the public function on the compact lengths, as the lowering chooses;
- "lanes": XLA's element gather, every element's source from its row's length;
- "rows, as elements": XLA's gather of whole rows (slices of the features) of the data's type;
- "rows, as words": the same of the rows seen as 32-bit words (the lowering's row gather);
- "dml_jax, (B, 1, F) equal": the public function on the full tensor (the run-time check).

Usage: PYTHONPATH=.:benchmarks python3 benchmarks/shared_lengths_probe.py [--dtypes f32,i8]
"""

import argparse
import functools

import jax
import jax.numpy as jnp
import numpy as np
from _timing import copy_ceiling, report  # benchmarks/ is on sys.path when a script in it runs

import dml_jax as dml
from dml_jax._src.ops import reverse_subsequences as ops

SHAPE = (64, 4096, 1024)
DTYPES = {"f32": np.float32, "f16": np.float16, "i8": np.int8}


def _data(rng, dtype):
  if np.dtype(dtype).kind == "i":
    return rng.integers(-128, 128, SHAPE, dtype=np.int8).astype(dtype)
  return rng.standard_normal(SHAPE).astype(dtype)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--dtypes", default="f32,i8")
  args = parser.parse_args(argv)
  rng = np.random.default_rng(0)
  ceiling = copy_ceiling(rng)
  batch, steps, features = SHAPE
  for short in args.dtypes.split(","):
    x = _data(rng, DTYPES[short])
    per_batch = rng.integers(0, steps + 1, (batch, 1, 1), dtype=np.uint32)
    position = np.arange(steps).reshape(1, steps, 1)
    source = np.where(position < per_batch, per_batch - 1 - position, position)
    want = np.take_along_axis(x, np.broadcast_to(source, SHAPE), axis=1)
    moved = 2 * x.nbytes
    xd = jnp.asarray(x)
    compact, full = (
      jnp.asarray(per_batch),
      jnp.asarray(np.broadcast_to(per_batch, (batch, 1, features))),
    )
    lengths32 = jnp.asarray(per_batch.astype(np.int32))
    print(f"REVERSE_SUBSEQUENCES {short} {SHAPE} along axis 1, one length per batch entry")
    public = jax.jit(lambda x, n: dml.reverse_subsequences(x, n, axis=1))
    forms = [
      ("dml_jax, (B, 1, 1)", public, compact),
      ("lanes", jax.jit(functools.partial(ops._reverse_lanes, axis=1)), lengths32),
      ("rows, as elements", jax.jit(functools.partial(ops._gather_rows, axis=1)), lengths32),
      ("rows, as words", jax.jit(functools.partial(ops._reverse_rows, axis=1)), lengths32),
      ("dml_jax, (B, 1, F) equal", public, full),
    ]
    for name, fn, lengths in forms:
      report(name, fn, (xd, lengths), want, moved, ceiling)


if __name__ == "__main__":
  main()
