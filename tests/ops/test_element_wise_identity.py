"""ELEMENT_WISE_IDENTITY's own rules: its tables, ScaleBias and its rounding, transformations."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import TensorDesc
from dml_jax._src import reference
from tests import sharding_cases, strategies
from tests.helpers import assert_bits_equal


def _bits_or_nan_equal(got, want):
  got, want = np.asarray(got), np.asarray(want)
  nan = np.isnan(want)
  assert np.array_equal(np.isnan(got), nan)
  assert_bits_equal(got[~nan], want[~nan])


@pytest.mark.parametrize(
  ("level", "data_type", "rank", "ok"),
  [
    ("1_0", "FLOAT16", 4, True),
    ("1_0", "INT32", 4, False),
    ("1_0", "FLOAT32", 3, False),
    ("2_1", "UINT8", 5, True),
    ("2_1", "UINT8", 2, False),
    ("3_0", "INT8", 1, True),
    ("3_0", "FLOAT64", 8, False),
    ("4_1", "FLOAT64", 8, True),
    ("4_1", "UINT64", 1, True),
  ],
)
def test_support_tables(level, data_type, rank, ok):
  desc = dml.ElementWiseIdentityDesc(TensorDesc(data_type, (1,) * rank))
  assert desc.is_valid(level) == ok, desc.violations(level)


def test_scale_bias_is_for_float_data_only():
  desc = dml.ElementWiseIdentityDesc(TensorDesc("INT32", (4,)), scale_bias=(2, 1))
  with pytest.raises(dml.DmlValidationError, match=r"ScaleBias: applies to float data only"):
    desc.validate()
  with pytest.raises(dml.DmlValidationError, match=r"ScaleBias: applies to float data only"):
    dml.element_wise_identity(np.arange(4, dtype=np.int32), scale_bias=(2, 1))


def test_output_must_match_the_input():
  bad = dml.ElementWiseIdentityDesc(TensorDesc("FLOAT32", (2, 3)), TensorDesc("FLOAT32", (3, 2)))
  with pytest.raises(dml.DmlValidationError, match=r"OutputTensor.Sizes: must equal InputTensor"):
    bad.validate()
  strided = dml.ElementWiseIdentityDesc(
    TensorDesc("FLOAT32", (2, 3)), TensorDesc("FLOAT32", (2, 3), strides=(1, 2))
  )
  assert strided.is_valid()


def test_scale_bias_struct_from_dml_and_repr():
  desc = dml.ElementWiseIdentityDesc.from_dml(
    {
      "InputTensor": {"DataType": "FLOAT16", "Sizes": [2]},
      "ScaleBias": {"Scale": 0.1, "Bias": -0.0},
    }
  )
  assert desc.scale_bias == dml.ScaleBias(np.float32(0.1), -0.0)
  assert desc.scale_bias != dml.ScaleBias(0.1, 0.0)  # -0.0 is its own bias
  assert eval(repr(desc), vars(dml)) == desc
  with pytest.raises(TypeError, match="ScaleBias must be"):
    dml.ElementWiseIdentityDesc(TensorDesc("FLOAT32", (2,)), scale_bias="big")


def test_copy_is_bit_exact_for_every_value():
  x = np.array([np.nan, -0.0, np.inf, 1e-45], np.float32)
  x[0] = np.frombuffer(np.uint32(0x7FC12345).tobytes(), np.float32)[0]
  assert_bits_equal(dml.element_wise_identity(x), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("scale_bias", [(0.1, 0.3), (3.7, -1e-3), (1e30, 1e30), (-0.0, 0.0)])
def test_scale_bias_rounds_the_product_then_the_sum(dtype, scale_bias):
  rng = np.random.default_rng(0)
  x = (rng.standard_normal(4096) * 100).astype(dtype)
  x[:3] = [np.inf, -0.0, 65504 if dtype == np.float16 else 3e38]
  want = reference.element_wise_identity(x, scale_bias=scale_bias)
  _bits_or_nan_equal(dml.element_wise_identity(x, scale_bias=scale_bias), want)
  jitted = jax.jit(lambda x: dml.element_wise_identity(x, scale_bias=scale_bias))
  _bits_or_nan_equal(jitted(x), want)
  batched = jax.vmap(lambda x: dml.element_wise_identity(x, scale_bias=scale_bias))
  _bits_or_nan_equal(batched(x.reshape(64, 64)).reshape(-1), want)


def test_scale_bias_in_float64(x64):
  x = np.random.default_rng(1).standard_normal(512)
  want = reference.element_wise_identity(x, scale_bias=(0.1, 0.3))
  assert_bits_equal(dml.element_wise_identity(x, scale_bias=(0.1, 0.3)), want)


def test_grad_is_the_scale():
  f = lambda x: dml.element_wise_identity(x, scale_bias=(0.5, 2.0)).sum()
  assert_bits_equal(jax.grad(f)(np.ones(3, np.float32)), np.full(3, 0.5, np.float32))
  g = lambda x: dml.element_wise_identity(x).sum()
  assert_bits_equal(jax.grad(g)(np.ones(3, np.float32)), np.ones(3, np.float32))


def test_identity_has_an_in_place_form():
  assert dml.ElementWiseIdentityDesc.IN_PLACE
  assert not getattr(dml.JoinDesc, "IN_PLACE", False)


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


_SCALES = (0.5, -3.25, 1e-3, 0.1, 7.0)


_BIASES = (0.0, -0.0, 1.5, 0.3, -2.0)


@st.composite
def element_wise_identity_case(draw):
  level = draw(strategies.levels("ELEMENT_WISE_IDENTITY"))
  table = strategies.table_at(dml.ElementWiseIdentityDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  sizes = strategies.draw_sizes(draw, n, max_elements=48)
  scale_bias = None
  if data_type.is_float and draw(st.booleans()):
    scale_bias = dml.ScaleBias(draw(st.sampled_from(_SCALES)), draw(st.sampled_from(_BIASES)))
  x = strategies.draw_data(draw, data_type, sizes)
  desc = dml.ElementWiseIdentityDesc(TensorDesc(data_type, sizes), scale_bias=scale_bias)
  return strategies.Case(
    desc,
    level,
    [x],
    lambda x, level: dml.element_wise_identity(x, scale_bias=scale_bias, feature_level=level),
    lambda: reference.element_wise_identity(x, scale_bias=scale_bias),
  )


def element_wise_identity_mutations(desc, level, draw):
  """ELEMENT_WISE_IDENTITY's own rule: ScaleBias on float data only."""
  table = desc.SUPPORT.at(level)
  integers = [t for t in table["InputTensor"].data_types if not t.is_float]
  if integers:
    data_type = draw(st.sampled_from(integers))
    yield (
      "scale and bias on integer data",
      dml.ElementWiseIdentityDesc(
        strategies.replace_tensor(
          desc.input_tensor, data_type=data_type, total_tensor_size_in_bytes=None
        ),
        scale_bias=(2.0, 1.0),
      ),
      "ScaleBias",
    )


def element_wise_identity_cases(n, rng):
  x = rng.standard_normal((2 * n, n)).astype(np.float32)
  # Scale 2 makes the product exact: a fused multiply-add gives jnp's formulation the same bits.
  return [
    sharding_cases.Case(
      "ELEMENT_WISE_IDENTITY",
      f"scale 2, bias 0.5, sharded on axis {shard}",
      lambda x: dml.element_wise_identity(x, scale_bias=(2.0, 0.5)),
      lambda x: x * np.float32(2) + np.float32(0.5),
      [(x, shard)],
      reference.element_wise_identity(x, scale_bias=(2.0, 0.5)),
    )
    for shard in (0, 1)
  ]


VALID = {"ELEMENT_WISE_IDENTITY": element_wise_identity_case}
MUTANTS = {"ELEMENT_WISE_IDENTITY": element_wise_identity_mutations}
SHARDED_CASES = element_wise_identity_cases
BFLOAT16_CALLS = {"element_wise_identity": lambda x: dml.element_wise_identity(x)}
