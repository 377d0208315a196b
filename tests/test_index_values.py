"""Every index value a dtype can hold follows the documented policy, x64 on and off.

Policy: a signed index below 0 counts from the end (i + size); the result is
clamped to [0, size - 1]. So no read ever leaves the input, and 64-bit values
are never truncated (2**32 + 1 must not read element 1). With x64 off, 64-bit
host indices are accepted when they fit in 32 bits and refused otherwise.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src import reference

SIZE = 5
INPUT = np.array([10, 11, 12, 13, 14], np.int16)  # distinct values: the read element is visible
VALUES = [
  0,
  -1,
  SIZE,
  SIZE - 1,
  -SIZE,
  -SIZE - 1,
  2**31 - 1,
  -(2**31),
  2**32 - 1,
  2**32 + 1,
  2**63 - 1,
  -(2**63),
  2**64 - 1,
]
INDEX_TYPES = [np.int32, np.int64, np.uint32, np.uint64]
CASES = [
  (np.dtype(t), v) for t in INDEX_TYPES for v in VALUES if np.iinfo(t).min <= v <= np.iinfo(t).max
]


def expected(value, dtype):
  signed = np.issubdtype(dtype, np.signedinteger)
  return INPUT[reference.normalize_index(value, SIZE, signed=signed)]


def _ops(index):
  """The element read by each gather for one index value, as numpy scalars."""
  elements = dml.gather_elements(INPUT, index.reshape(1), axis=0)
  nd = dml.gather_nd(INPUT, index.reshape(1))  # a 1-tuple into a 1-D input
  nd2 = dml.gather_nd(
    np.broadcast_to(INPUT, (2, SIZE)).copy(), np.stack([np.zeros_like(index), index]).reshape(1, 2)
  )
  rows = dml.gather(INPUT, index.reshape(1), axis=0)
  columns = dml.gather(
    np.broadcast_to(INPUT, (2, SIZE)).copy(), index.reshape(1, 1), axis=1, index_dimensions=1
  )
  return [
    np.asarray(elements)[0],
    np.asarray(nd)[0],
    np.asarray(nd2)[0, 0],
    np.asarray(rows)[0],
    np.asarray(columns)[1, 0],
  ]


@pytest.mark.parametrize("dtype, value", CASES, ids=lambda c: str(c))
def test_index_value_with_x64(dtype, value, x64):
  index = np.array([value], dtype)
  assert all(got == expected(value, dtype) for got in _ops(index))
  # The same through a jitted function on device arrays of the 64-bit dtype.
  jitted = jax.jit(lambda x, i: dml.gather_elements(x, i, axis=0))
  assert jitted(jnp.asarray(INPUT), jnp.asarray(index))[0] == expected(value, dtype)


@pytest.mark.parametrize("dtype, value", CASES, ids=lambda c: str(c))
def test_index_value_without_x64(dtype, value, no_x64):
  index = np.array([value], dtype)
  fits = np.iinfo(np.int32 if dtype.kind == "i" else np.uint32)
  if dtype.itemsize == 8 and not fits.min <= value <= fits.max:
    with pytest.raises(
      ValueError,
      match=rf"IndicesTensor holds {dtype.name} value {value},"
      rf" which does not fit in u?int32.*never wraps",
    ):
      _ops(index)
  else:
    assert all(got == expected(value, dtype) for got in _ops(index))


def test_values_never_read_outside_the_input(x64):
  rng = np.random.default_rng(7)
  for dtype in INDEX_TYPES:
    info = np.iinfo(dtype)
    index = rng.integers(info.min, info.max, 256, dtype=dtype, endpoint=True)
    got = np.asarray(dml.gather_elements(INPUT, index, axis=0))
    assert set(got.tolist()) <= set(INPUT.tolist())
    np.testing.assert_array_equal(got, reference.gather_elements(INPUT, index, axis=0))


def test_64_bit_data_without_x64_says_how_to_enable_it(no_x64):
  with pytest.raises(
    TypeError,
    match=r"InputTensor has 64-bit dtype float64.*"
    r"jax\.config\.update\('jax_enable_x64', True\)",
  ):
    dml.gather_elements(INPUT.astype(np.float64), np.zeros(1, np.int32), axis=0)
  with pytest.raises(TypeError, match=r"InputTensors\[1\] has 64-bit dtype uint64"):
    dml.join([INPUT, INPUT.astype(np.uint64)], axis=0)


def test_narrowed_host_indices_keep_their_64_bit_type_for_validation(no_x64):
  x = np.zeros((1, 1, 2, 2), np.float32)
  with pytest.raises(dml.DmlValidationError, match=r"IndicesTensor\.DataType: .* got INT64"):
    dml.gather_elements(x, np.zeros((1, 1, 1, 2), np.int64), axis=2, feature_level="2_1")
