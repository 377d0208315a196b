"""What the operators' sharded cases are made of; tests/subprocess/sharded_ops.py runs them.

Each operator's test module (`tests/ops/test_<module>.py`) declares `SHARDED_CASES = fn`:
`fn(n, rng)` returns a list of `Case` for `n` devices, its arrays drawn from `rng` (a
generator of its own, so that one module's cases never change another's). Importing this
module sets up no device: `mesh()` looks at the devices only when a case calls it.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh


@dataclasses.dataclass(frozen=True)
class Case:
  """One operator call on sharded operands.

  Attributes:
    operator: the registry's name of the operator ("JOIN").
    name: what is sharded and how the operator is called.
    dml: the operator's call on the operands.
    jnp: jnp's formulation of the same call (the same bits), or a string saying why there is
      none; then the output must be sharded as the first operand and the program hold no
      collective.
    operands: (array, the axis sharded over the devices or None: replicated) pairs.
    want: the NumPy reference's output(s).
    settles_across_devices: a scatter whose updates that may share a target live on different
      devices: on GPUs its program may hold one all-reduce more than jnp's, the one that agrees
      on each target's last update (jnp's scatter leaves duplicates' order open; see
      docs/sharding.md). Anywhere else, and beyond that one, the usual rule holds.
  """

  operator: str
  name: str
  dml: Callable[..., Any]
  jnp: Callable[..., Any] | str
  operands: Sequence[tuple[np.ndarray, int | None]]
  want: Any
  settles_across_devices: bool = False


def mesh() -> Mesh:
  """One mesh axis, "d", over every device; at least 2 (on a CPU-only machine, set
  XLA_FLAGS=--xla_force_host_platform_device_count=8 before JAX starts)."""
  devices = np.array(jax.devices())
  if len(devices) < 2:
    sys.exit(f"needs at least 2 devices; found {len(devices)}")
  return Mesh(devices, ("d",))


def normalized(index: jax.Array, size: int) -> jax.Array:
  """DirectML's index rule in jnp: negative indices count from the end, then clamped."""
  return jnp.clip(jnp.where(index < 0, index + size, index), 0, size - 1)
