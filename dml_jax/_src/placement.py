"""Whether this process's arrays can be sharded: what lets a form chosen for one device's speed
stand where it would change how XLA partitions a program.

Some lax forms exist only because one device runs them faster than the plain formulation: JOIN
as 1-D views on XLA:CPU, REVERSE_SUBSEQUENCES's run-time choice of whole rows, PADDING's
gathers of static positions, SCATTER_ELEMENTS's scatter at flat offsets on XLA:CPU. Over
several devices a reshape that merges a sharded dimension gathers it, a `lax.cond` on a check
of all the lengths needs an all-reduce for its predicate, and a gather along a sharded axis
all-reduces its whole output, replicated, where jnp's slices and concatenates keep the
sharding. The operators take those forms only where the platform has one device in this
process, decided when they are traced; over several, the form jnp's formulation would take.

Examples:
  >>> one_device("cpu") == (len(jax.devices("cpu")) == 1)
  True
  >>> one_device("no-such-platform")  # nothing here can be sharded over it
  True
"""

from __future__ import annotations

import jax


def one_device(platform: str | None = None) -> bool:
  """Whether this process has at most one device of `platform` ("cpu", "cuda", ...; None: the
  default backend's): none of its arrays can then be sharded over that platform. True where
  the platform has no backend here (a program lowered for another platform, as the tests and
  `jax.export` do, takes the one-device forms, as it did before sharding was considered)."""
  try:
    return len(jax.devices(platform)) <= 1
  except (RuntimeError, ValueError):  # no such backend (JAX_PLATFORMS without it)
    return True
