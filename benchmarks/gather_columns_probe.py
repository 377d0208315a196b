"""Probe: GATHER of random columns along the last axis, as XLA's gather and as the
GATHER_ELEMENTS row kernel with the column indices repeated for every row.

Not part of the library. Checked bit for bit against NumPy, timed like the other A/B scripts
(pipelined jitted calls, median of repeats, against a 1 GiB device copy).

Usage: PYTHONPATH=.:benchmarks python3 benchmarks/gather_columns_probe.py
"""

import jax
import jax.numpy as jnp
import numpy as np
from _timing import copy_ceiling, report  # benchmarks/ is on sys.path when a script in it runs

import dml_jax as dml


def main():
  rng = np.random.default_rng(0)
  ceiling = copy_ceiling(rng)
  height, width, count = 4096, 8192, 4096
  x = rng.standard_normal((height, width)).astype(np.float32)
  ids = rng.integers(0, width, (1, count)).astype(np.int32)
  want = x[:, ids[0]]
  xd, idd = jnp.asarray(x), jnp.asarray(ids)
  moved = 2 * want.nbytes + ids.nbytes
  print(f"GATHER of {count} random columns of ({height}, {width}) float32")
  report(
    "dml.gather",
    jax.jit(lambda x, i: dml.gather(x, i, axis=1, index_dimensions=1)),
    (xd, idd),
    want,
    moved,
    ceiling,
  )
  report(
    "jnp.take", jax.jit(lambda x, i: jnp.take(x, i[0], axis=1)), (xd, idd), want, moved, ceiling
  )
  rows_kernel = jax.jit(
    lambda x, i: dml.gather_elements(x, jnp.broadcast_to(i, (height, count)), axis=1)
  )
  report("row kernel, indices repeated", rows_kernel, (xd, idd), want, moved, ceiling)


if __name__ == "__main__":
  main()
