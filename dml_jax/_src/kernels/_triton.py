"""What the Pallas-Triton kernels share: the data types they take, power-of-two block sizes.

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

import numpy as np

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
