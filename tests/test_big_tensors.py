"""Tensors of more than 2**31 elements: indexing beyond 2**31 is exact.

DirectML allows up to 2**32 - 1 elements per tensor. Sizes above 2**31 need
unsigned 32-bit (or 64-bit) index arithmetic; dml_jax picks it from the static
sizes. Each tensor here is a 2**31 + 2**20 element uint8 array (2.1 GB) whose
element p is PATTERN[p % 251], so any read can be checked without a copy.
These run on the CPU in CI and on a GPU where one is the default device.
"""

import jax
import numpy as np
import pytest
from jax import lax

import dml_jax as dml

N = 2**31 + 2**20
PATTERN = ((np.arange(251) * 97 + 13) % 256).astype(np.uint8)
# 2.1 GB a tensor. Not mode_independent: the operators run in the process's mode, and the
# index arithmetic past 2**31 is where the mode could matter.
pytestmark = pytest.mark.slow


def value_at(position):
  return PATTERN[np.asarray(position, np.uint64) % 251]


@pytest.fixture(scope="module")
def big():
  # Computed where it lives, element by element (a host array filled and copied over takes
  # twice the memory and about four times as long): PATTERN[p % 251] is (p % 251) * 97 + 13
  # modulo 256.
  @jax.jit
  def patterned():
    period = lax.rem(lax.iota(np.uint32, N), np.uint32(PATTERN.size))
    return lax.convert_element_type(period * np.uint32(97) + np.uint32(13), np.uint8)

  return patterned()


def test_gather_elements_beyond_2_to_the_31(big):
  unsigned = np.array([0, 2**31, 2**31 + 77, N - 1, N, 2**32 - 1], np.uint32)
  want = value_at([0, 2**31, 2**31 + 77, N - 1, N - 1, N - 1])
  np.testing.assert_array_equal(dml.gather_elements(big, unsigned, axis=0), want)
  signed = np.array([-1, 2**31 - 1, -(2**31)], np.int32)
  want = value_at([N - 1, 2**31 - 1, N - 2**31])
  np.testing.assert_array_equal(dml.gather_elements(big, signed, axis=0), want)


def test_gather_nd_rows_beyond_2_to_the_31(big):
  rows = big.reshape(N // 1024, 1024)
  tuples = np.array([[N // 1024 - 1], [2**21 + 5], [-1], [0]], np.int32)
  out = np.asarray(dml.gather_nd(rows, tuples))
  for k, row in enumerate([N // 1024 - 1, 2**21 + 5, N // 1024 - 1, 0]):
    np.testing.assert_array_equal(out[k], value_at(row * 1024 + np.arange(1024)))


def test_reverse_subsequences_lanes_beyond_2_to_the_31(big):
  lanes = big.reshape(2, N // 2)
  lengths = np.array([[N // 2], [5]], np.uint32)
  out = dml.reverse_subsequences(lanes, lengths, axis=1)
  last = N // 2 - 1
  np.testing.assert_array_equal(out[1, :6], value_at(N // 2 + np.array([4, 3, 2, 1, 0, 5])))
  np.testing.assert_array_equal(out[0, :3], value_at([last, last - 1, last - 2]))
  np.testing.assert_array_equal(out[1, -3:], value_at(N - 3 + np.arange(3)))


def test_join_beyond_2_to_the_31(big):
  half = big[: N // 2]
  out = dml.join([half, half[:7]], axis=0)
  assert out.shape == (N // 2 + 7,)
  np.testing.assert_array_equal(out[-8:], value_at([N // 2 - 1, 0, 1, 2, 3, 4, 5, 6]))


def test_element_counts_of_2_to_the_32_are_refused():
  desc = dml.GatherElementsDesc(
    dml.TensorDesc("UINT8", (2**32,)), dml.TensorDesc("UINT32", (1,)), axis=0
  )
  with pytest.raises(
    dml.DmlValidationError,
    match=r"InputTensor\.Sizes: a buffer tensor may"
    r" address at most 2\*\*32 - 1 elements, these address 4294967296",
  ):
    desc.validate()
  dml.GatherElementsDesc(
    dml.TensorDesc("UINT8", (2**32 - 1,)), dml.TensorDesc("UINT32", (1,)), axis=0
  ).validate()
