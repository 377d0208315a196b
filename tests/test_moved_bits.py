"""bfloat16 and the float8 types through the operators that only move data, bit for bit.

DirectML has no such types; the functional API carries their bits as UINT16 / UINT8 (see
docs/policies.md). Each case is compared with the same call on the bits viewed as unsigned
integers, which DirectML supports, and NaN payloads and signed zeros must survive. The calls
are the operators' own (`BFLOAT16_CALLS` in tests/ops/test_<module>.py, each taking the 4 x 6
data first), one for every operator that only moves bits.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dml_jax as dml
from tests import per_operator
from tests.helpers import assert_bits_equal

RNG = np.random.default_rng(7)
BITS = RNG.integers(0, 2**16, (4, 6), dtype=np.uint16)
BITS[0, :3] = [0x7FC1, 0x8000, 0xFF81]  # a NaN with a payload, -0.0, a negative NaN
IDS = np.array([[3, 0], [0, 2]], np.int32)


@pytest.mark.parametrize("op", sorted(per_operator.BFLOAT16_CALLS))
def test_bfloat16_moves_bit_for_bit(op):
  call = per_operator.BFLOAT16_CALLS[op]
  got = call(jnp.asarray(BITS).view(jnp.bfloat16))
  assert got.dtype == jnp.bfloat16
  assert_bits_equal(np.asarray(got).view(np.uint16), np.asarray(call(BITS)))


def test_float8_and_numpy_bfloat16_arguments():
  bits = BITS.astype(np.uint8)
  x = np.asarray(bits).view(jnp.float8_e4m3fn)  # a NumPy (ml_dtypes) array: the slow path
  got = dml.tile(x, repeats=(1, 2))
  assert got.dtype == jnp.float8_e4m3fn
  assert_bits_equal(np.asarray(got).view(np.uint8), np.tile(bits, (1, 2)))
  table = BITS.view(jnp.bfloat16)
  assert_bits_equal(np.asarray(dml.gather(table, IDS, axis=0)).view(np.uint16), BITS[IDS])


def test_jit_vmap_and_grad():
  x = jnp.asarray(RNG.standard_normal((4, 6)), jnp.bfloat16)
  ids = np.array([3, 0, 0], np.int32)
  assert_bits_equal(jax.jit(lambda x: dml.gather(x, ids, axis=0))(x), x[ids])
  assert_bits_equal(jax.vmap(lambda row: dml.tile(row, repeats=(2,)))(x), jnp.tile(x, (1, 2)))
  grad = jax.grad(lambda x: dml.gather(x, ids, axis=0).astype(jnp.float32).sum())(x)
  assert grad.dtype == jnp.bfloat16
  assert_bits_equal(grad[:, 0], np.array([2, 0, 0, 1], jnp.bfloat16))


@pytest.mark.parametrize(
  "call, match",
  [
    (
      lambda x: dml.padding(x, padding_mode="CONSTANT", start_padding=(1, 0), end_padding=(0, 0)),
      r"dml\.padding reads the values .* Cast to float32 first",
    ),
    (
      lambda x: dml.element_wise_identity(x, scale_bias=(2, 0)),
      r"no data type for bfloat16.*x\.astype\(jnp\.float32\)",
    ),
    (lambda x: dml.join([x, x.view(jnp.uint16)], axis=0), r"dtypes bfloat16, uint16"),
  ],
)
def test_where_values_matter_a_clear_type_error(call, match):
  with pytest.raises(TypeError, match=match):
    call(jnp.asarray(BITS).view(jnp.bfloat16))


def test_the_device_layer_still_refuses_bfloat16():
  with pytest.raises(TypeError, match="no data type for dtype bfloat16"):
    dml.DataType.from_dtype(jnp.bfloat16)
