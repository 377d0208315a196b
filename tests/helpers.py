"""Helpers that several test modules share.

Keep each group of helpers in its own section, so that branches adding helpers merge cleanly.
"""

import numpy as np

# -- test data for the GPU kernels (tests/test_kernels.py, tests/test_strip_kernel.py) ------


def kernel_data(rng: np.random.Generator, dtype, shape) -> np.ndarray:
  """Data of every bit pattern a kernel must move: normal floats, integers over their range."""
  if np.issubdtype(dtype, np.floating):
    return rng.standard_normal(shape).astype(dtype)
  info = np.iinfo(dtype)
  return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def kernel_indices(rng: np.random.Generator, dtype, shape, size: int) -> np.ndarray:
  """Raw indices into a dimension of `size` of every value class: in range, negative (signed
  types), past either end, and the type's extremes."""
  info = np.iinfo(dtype)
  low = -size - 3 if info.min < 0 else 0
  out = rng.integers(low, size + 3, shape).astype(dtype)
  out.flat[:4] = [info.max, info.min, size, size - 1]
  return out


def bits(a) -> np.ndarray:
  """`a`'s elements as unsigned integers of their width, to compare floats bit for bit."""
  a = np.asarray(a)
  return a.view(f"u{a.dtype.itemsize}")
