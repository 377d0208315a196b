"""UPSAMPLE_2D: its own rules and pinned cases.

Its support table (FL 1_0: 4 or 5 dimensions of FLOAT32 or FLOAT16), ScaleSize (a
DML_SIZE_2D {Width, Height} of whole factors, each in [1, UINT_MAX / the input's size]),
the inferred output, NEAREST_NEIGHBOR as repetition, LINEAR as RESAMPLE's bilinear
about pixel centres (DxDispatch's sample), 5-D inputs, grad, a model file, and the
explanation. What every operator shares is tested in tests/test_contract.py.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax._src import reference
from dml_jax._src.dtypes import DataType
from tests import sharding_cases, strategies
from tests.helpers import assert_bits_equal, assert_rejected, explain_section

T = dml.TensorDesc


@pytest.mark.parametrize(
  "level, data_type, rank, valid",
  [
    ("1_0", "FLOAT16", 4, True),
    ("1_0", "FLOAT32", 5, True),
    ("6_4", "FLOAT32", 3, False),  # 4 or 5 dimensions only
    ("6_4", "UINT8", 4, False),  # floats only
  ],
)
def test_support_table(level, data_type, rank, valid):
  desc = dml.Upsample2dDesc(T(data_type, (1,) * (rank - 2) + (2, 3)), {"Width": 2, "Height": 1})
  assert desc.is_valid(level) is valid, desc.violations(level)


def test_scale_size_rules_and_the_inferred_output():
  desc = dml.Upsample2dDesc(T("FLOAT32", (1, 2, 3, 4)), dml.Size2D(width=3, height=2))
  assert desc.output == T("FLOAT32", (1, 2, 6, 12))
  assert dml.Upsample2dDesc(T("FLOAT32", (1, 2, 3, 4)), (3, 2)) == desc  # (Width, Height)
  assert_rejected(
    dml.Upsample2dDesc(T("FLOAT32", (1, 1, 2, 2)), {"Width": 0, "Height": 1}),
    None,
    "ScaleSize.Width",
    "must be in [1, UINT_MAX / InputWidth] = [1, 2147483647]",
    "0",
  )
  assert_rejected(
    dml.Upsample2dDesc(T("FLOAT32", (1, 1, 3, 2)), {"Width": 1, "Height": 2**31}),
    None,
    "ScaleSize.Height",
    "= [1, 1431655765]",
    str(2**31),
  )
  bad = dml.Upsample2dDesc(T("FLOAT32", (1, 1, 2, 2)), (2, 2), T("FLOAT32", (1, 1, 4, 2)))
  assert_rejected(bad, None, "OutputTensor.Sizes", "times ScaleSize.Width: {1,1,4,4}", "{1,1,4,2}")
  with pytest.raises(TypeError, match='must hold exactly "Width" and "Height"'):
    dml.upsample_2d(np.ones((1, 1, 2, 2), np.float32), scale_size={"W": 2})


def test_nearest_repeats_and_linear_is_bilinear_about_pixel_centres():
  rng = np.random.default_rng(3)
  x = rng.standard_normal((1, 2, 3, 2, 3)).astype(np.float16)  # 5-D: depth passes through
  got = dml.upsample_2d(x, scale_size={"Width": 3, "Height": 2})
  assert_bits_equal(got, np.repeat(np.repeat(x, 2, axis=3), 3, axis=4))
  x = np.array([[[[1, 2], [3, 4]]]], np.float32)  # DxDispatch's dml_upsample_2d.json
  got = dml.upsample_2d(x, scale_size=(2, 2), interpolation_mode="LINEAR")
  assert_bits_equal(got[0, 0, 1], np.array([1.5, 1.75, 2.25, 2.5], np.float32))
  assert_bits_equal(
    got, reference.upsample_2d(x, scale_size={"Width": 2, "Height": 2}, interpolation_mode="LINEAR")
  )
  same = dml.resample(x, interpolation_mode="LINEAR", scales=(1, 1, 2, 2))
  assert_bits_equal(got, same)


def test_grad_sums_the_copies():
  x = np.zeros((1, 1, 2, 2), np.float32)
  grad = jax.grad(lambda x: jnp.sum(dml.upsample_2d(x, scale_size=(3, 2))))(x)
  assert_bits_equal(grad, np.full((1, 1, 2, 2), 6, np.float32))


def test_a_directml_model_runs_upsample_2d():
  model = dml.load_model(
    {
      "resources": {
        "x": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2]},
        "y": {"initialValuesDataType": "FLOAT32", "initialValues": {"value": 0, "valueCount": 4}},
      },
      "dispatchables": {
        "up": {
          "type": "DML_OPERATOR_UPSAMPLE_2D",
          "desc": {
            "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 1, 2]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 1, 4]},
            "ScaleSize": {"Width": 2, "Height": 1},
            "InterpolationMode": "DML_INTERPOLATION_MODE_LINEAR",
          },
        }
      },
      "commands": [
        {
          "type": "dispatch",
          "dispatchable": "up",
          "bindings": {"InputTensor": "x", "OutputTensor": "y"},
        }
      ],
    }
  )
  assert model.run()["y"].tolist() == [1, 1.25, 1.75, 2]


def test_explanation():
  desc = dml.Upsample2dDesc(T("FLOAT32", (1, 1, 2, 3)), {"Width": 2, "Height": 3})
  output = explain_section(dml.explain(desc), "Output:")
  assert any("out[..., h, w] = in[..., h // 3, w // 2]" in line for line in output)
  assert any("{1,1,6,6}" in line for line in output)


def test_an_image_without_batch_or_channel_is_padded():
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  assert_bits_equal(dml.upsample_2d(x, scale_size=(2, 1)), np.repeat(x, 2, axis=1))


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def upsample_2d_case(draw):
  level = draw(strategies.levels("UPSAMPLE_2D"))
  n = draw(st.integers(4, 5))
  data_type = draw(st.sampled_from([DataType.FLOAT32, DataType.FLOAT16]))
  sizes = strategies.draw_sizes(draw, n, max_elements=12)
  scale = {"Width": draw(st.integers(1, 3)), "Height": draw(st.integers(1, 3))}
  mode = draw(st.sampled_from(["NEAREST_NEIGHBOR", "LINEAR"]))
  x = strategies.draw_data(draw, data_type, sizes)
  desc = dml.Upsample2dDesc(T(data_type, sizes), scale, interpolation_mode=mode)
  return strategies.Case(
    desc,
    level,
    [x],
    lambda x, level: dml.upsample_2d(
      x, scale_size=scale, interpolation_mode=mode, feature_level=level
    ),
    lambda: reference.upsample_2d(x, scale_size=scale, interpolation_mode=mode),
  )


def upsample_2d_mutations(desc, level, draw):
  zero = {"Width": 0, "Height": desc.scale_size.height}
  yield "zero width", strategies.rebuild(desc, {"scale_size": zero}), "ScaleSize.Width"


def upsample_2d_cases(n, rng):
  x = rng.standard_normal((n, 2, 2 * n, 3)).astype(np.float32)
  return [
    sharding_cases.Case(
      "UPSAMPLE_2D",
      f"nearest x2, sharded on axis {shard}",
      lambda x: dml.upsample_2d(x, scale_size=(2, 2)),
      lambda x: jnp.repeat(jnp.repeat(x, 2, axis=2), 2, axis=3),
      [(x, shard)],
      reference.upsample_2d(x, scale_size={"Width": 2, "Height": 2}),
    )
    for shard in (0, 2)
  ]


VALID = {"UPSAMPLE_2D": upsample_2d_case}
MUTANTS = {"UPSAMPLE_2D": upsample_2d_mutations}
SHARDED_CASES = upsample_2d_cases
