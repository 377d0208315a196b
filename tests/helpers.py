"""Helpers shared by the test files: the one module they import besides strategies.py.

Test files never import each other; what two of them need lives here, one section per
kind of helper (tests/conftest.py registers this module for pytest's assertion rewriting):

* bit equality: `assert_bits_equal` (and the predicate `bits_equal`), the only comparison
  of results bit for bit;
* GPU kernel test data.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# =========================================================================== #
# Bit equality
# =========================================================================== #


def _bits(array: np.ndarray) -> np.ndarray:
  """The array's raw bits, as unsigned integers of its item size."""
  return array.view(np.dtype(f"u{array.dtype.itemsize}"))


def bits_equal(a: Any, b: Any) -> bool:
  """Whether `a` and `b` have the same dtype, shape and raw bytes (a predicate, for scripts
  that report rather than assert; tests use assert_bits_equal)."""
  a, b = np.asarray(a), np.asarray(b)
  return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(_bits(a), _bits(b))


def assert_bits_equal(got: Any, want: Any, *, context: str = "") -> None:
  """Asserts equal dtype, shape and raw bytes: -0.0 is not 0.0 and NaN payloads count.

  Value equality (np.testing.assert_array_equal) lets both through. `context` opens the
  message (what was compared: "jit", "grad wrt argument 0", a case's name).
  """
  got, want = np.asarray(got), np.asarray(want)
  where = f"{context}: " if context else ""
  assert got.dtype == want.dtype, f"{where}dtype {got.dtype} != {want.dtype}"
  assert got.shape == want.shape, f"{where}shape {got.shape} != {want.shape}"
  got_bits, want_bits = _bits(got), _bits(want)
  if not np.array_equal(got_bits, want_bits):
    wrong = np.argwhere(got_bits != want_bits)
    raise AssertionError(
      f"{where}{len(wrong)} of {got.size} elements differ"
      f" (compared as {got_bits.dtype.name} bits), first at"
      f" {[tuple(map(int, w)) for w in wrong[:8]]}\n"
      f"got:  {got!r}\nwant: {want!r}\n"
      f"got bits:  {got_bits.ravel().tolist()}\n"
      f"want bits: {want_bits.ravel().tolist()}"
    )


# =========================================================================== #
# GPU kernel test data
# =========================================================================== #


def kernel_data(rng: np.random.Generator, dtype, shape) -> np.ndarray:
  """The GPU kernels' test data: normal floats, full-range integers."""
  if np.issubdtype(dtype, np.floating):
    return rng.standard_normal(shape).astype(dtype)
  info = np.iinfo(dtype)
  return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
