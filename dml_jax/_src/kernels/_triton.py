"""What the Pallas-Triton kernels share: the data types they take, power-of-two block sizes,
rows written in overlapping runs, stores with a cache hint.

JAX 0.11 deprecates Pallas's Triton backend (it warns when it lowers a kernel) and will remove
it; where `jax.experimental.pallas.triton` cannot be imported (`availability`), the kernels
never apply and the lax path serves every platform.

Examples:
  >>> largest_power_of_two_dividing(96, at_most=64)
  32
  >>> power_of_two(96)
  False
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np
from jax import lax

DTYPES = frozenset(
  np.dtype(t) for t in ("float32", "float16", "int32", "uint32", "int16", "uint16", "int8", "uint8")
)
"""The data types the kernels move; 64-bit data takes the lax path."""


def power_of_two(n: int) -> bool:
  return n > 0 and n & (n - 1) == 0


def largest_power_of_two_dividing(n: int, at_most: int) -> int:
  block = 1
  while block * 2 <= at_most and n % (block * 2) == 0:
    block *= 2
  return block


@dataclasses.dataclass(frozen=True)
class Runs:
  """A row of `width` elements written in `count` runs of `length` (a power of two), the last
  one starting early so that runs overlap instead of spilling past the row (the overlap is
  written twice with the same values): no masks, which Pallas Triton's blocks lack.

  Examples:
    >>> runs = Runs.of(width=300, most=128)
    >>> runs.length, runs.count, [runs.start(k) for k in range(3)]
    (128, 3, [0, 128, 172])
  """

  width: int
  length: int
  count: int

  @classmethod
  def of(cls, width: int, most: int) -> Runs:
    """Runs of at most `most` elements (and of at most `width`)."""
    length = min(most, 1 << (width.bit_length() - 1))
    return cls(width, length, -(-width // length))

  def start(self, k: jax.Array | int) -> jax.Array | int:
    """Where run `k` starts."""
    if isinstance(k, int):
      return min(k * self.length, self.width - self.length)
    return lax.min(k * self.length, np.int32(self.width - self.length))


def store(ref: Any, value: jax.Array, *, eviction_policy: str | None, interpret: bool) -> None:
  """`ref[...] = value`, with Triton's cache hint `eviction_policy` ("evict_first": the kernel
  does not read the output again) where the kernel is compiled; interpreted kernels, and a
  None policy, store plainly (the same values)."""
  if interpret or eviction_policy is None:
    ref[...] = value
  else:
    from jax.experimental.pallas import triton as pltriton  # only GPU programs trace it

    pltriton.store(ref, value, eviction_policy=eviction_policy)
