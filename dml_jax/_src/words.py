"""Narrow elements moved as wider unsigned words: a copy does not care what its bits mean.

GPU kernels, XLA's included, move an element a thread; for int8 or float16 that is a quarter or
half of what a thread could move, so the row copies and the strip kernel see such data as
32-bit words of several lanes.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np
from jax import lax


class Words(NamedTuple):
  """A word of `nbytes` holding `lanes` lanes of `itemsize` bytes, lane j in its bits
  [j * bits, (j + 1) * bits) (what XLA's bitcasts give on little-endian machines).

  Examples:
    >>> words = Words(itemsize=1, nbytes=4)
    >>> packed = words.pack(np.arange(8, dtype=np.int8).reshape(2, 4))
    >>> packed.shape, hex(int(packed[0, 0]))
    ((2, 1), '0x3020100')
    >>> words.unpack(packed, np.dtype(np.int8)).reshape(2, 4)[1]
    Array([4, 5, 6, 7], dtype=int8)
  """

  itemsize: int
  nbytes: int

  @property
  def lanes(self) -> int:
    return self.nbytes // self.itemsize

  @property
  def bits(self) -> int:
    return 8 * self.itemsize

  def pack(self, x: jax.Array) -> jax.Array:
    """(..., inner) lanes as (..., inner / lanes) words."""
    x = lax.bitcast_convert_type(x, np.dtype(f"uint{self.bits}"))
    if self.lanes > 1:
      x = x.reshape(*x.shape[:-1], x.shape[-1] // self.lanes, self.lanes)
    return lax.bitcast_convert_type(x, np.dtype(f"uint{8 * self.nbytes}"))

  def unpack(self, words: jax.Array, dtype: np.dtype) -> jax.Array:
    """(..., words) back as (..., words, lanes) of `dtype`: the caller reshapes."""
    x = lax.bitcast_convert_type(words, np.dtype(f"uint{self.bits}"))
    return lax.bitcast_convert_type(x, dtype)
