"""RESAMPLE, RESAMPLE1 and RESAMPLE2: the family's own rules and pinned cases.

Their support tables (4 dimensions of FLOAT32 or FLOAT16 at introduction, 1 to 4 from 5_1,
INT8 and UINT8 from 6_2), each rule with its wording (the counts, one finite scale > 0 and
one finite offset per dimension, the output's rank and data type; its sizes are free), the
coordinate transform, NEAREST_NEIGHBOR's rounding per version (ties to the smaller index
for RESAMPLE and RESAMPLE1, floor or ceil for RESAMPLE2) and clamping, LINEAR's float32
arithmetic (against the oracle, bit for bit, never fused), 8-bit rounding,
jit, vmap and grad, a model file, and the explanation. What every operator shares is tested
in tests/test_contract.py and the cross-cutting files.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax._src import reference
from dml_jax._src.dtypes import DataType
from tests import sharding_cases, strategies
from tests.helpers import assert_bits_equal, assert_rejected, assert_valid, explain_section

T = dml.TensorDesc
NEAREST, LINEAR = "NEAREST_NEIGHBOR", "LINEAR"


def _desc(desc_type, data_type="FLOAT32", sizes=(1, 1, 2, 2), out=(1, 1, 4, 4), scales=None):
  scales = (1.0, 1.0, 2.0, 2.0)[-len(sizes) :] if scales is None else scales
  n = len(scales)
  inputs, output = T(data_type, sizes), T(data_type, out)
  if desc_type is dml.ResampleDesc:
    return desc_type(inputs, output, NEAREST, scales)
  offsets = ((0.5,) * n, (-0.5,) * n)
  if desc_type is dml.Resample1Desc:
    return desc_type(inputs, output, NEAREST, scales, *offsets)
  return desc_type(inputs, output, NEAREST, "DECREASING", scales, *offsets)


FAMILY = [dml.ResampleDesc, dml.Resample1Desc, dml.Resample2Desc]


@pytest.mark.parametrize(
  "desc_type, level, data_type, rank, valid",
  [
    (dml.ResampleDesc, "1_0", "FLOAT32", 4, False),  # introduced at 2_0
    (dml.ResampleDesc, "2_0", "FLOAT16", 4, True),
    (dml.ResampleDesc, "2_0", "FLOAT32", 2, False),  # 4 dimensions before 5_1
    (dml.Resample1Desc, "2_0", "FLOAT32", 4, False),  # introduced at 2_1
    (dml.Resample1Desc, "2_1", "FLOAT32", 4, True),
    (dml.Resample1Desc, "5_1", "FLOAT32", 1, True),
    (dml.Resample2Desc, "5_0", "FLOAT32", 4, False),  # introduced at 5_1
    (dml.Resample2Desc, "5_1", "INT8", 2, False),  # 8-bit data from 6_2
    (dml.Resample2Desc, "6_2", "UINT8", 2, True),
    (dml.ResampleDesc, "6_4", "INT32", 2, False),  # never 32-bit integers
    (dml.Resample1Desc, "6_4", "FLOAT32", 5, False),  # at most 4 dimensions
  ],
)
def test_support_tables(desc_type, level, data_type, rank, valid):
  sizes, out = (1,) * (rank - 1) + (2,), (1,) * (rank - 1) + (4,)
  desc = _desc(desc_type, data_type, sizes, out, scales=(1.0,) * (rank - 1) + (2.0,))
  assert desc.is_valid(level) is valid, desc.violations(level)


@pytest.mark.parametrize("desc_type", FAMILY)
def test_rules_name_the_field(desc_type):
  assert_valid(_desc(desc_type, out=(1, 1, 3, 7)), None)  # any output sizes: not the ratio
  count = "ScaleCount" if desc_type is dml.ResampleDesc else "DimensionCount"
  assert_rejected(
    _desc(desc_type, sizes=(1, 2), out=(1, 4), scales=(1.0, 2.0, 1.0)),
    None,
    "Scales",
    "one value per dimension of InputTensor (DimensionCount 2)",
    "{1.0,2.0,1.0}",
  )
  assert_rejected(
    _desc(desc_type, scales=(1.0, 1.0, 0.0, 2.0)),
    None,
    "Scales",
    "finite and > 0",
    "{1.0,1.0,0.0,2.0}",
  )
  assert_rejected(
    _desc(desc_type, scales=(1.0, 1.0, float("inf"), 2.0)),
    None,
    "Scales",
    "> 0",
    "{1.0,1.0,inf,2.0}",
  )
  assert_rejected(
    _desc(desc_type, out=(1, 4, 4)), None, "OutputTensor.DimensionCount", "InputTensor", "3"
  )
  bad_type = desc_type(**{**_fields(_desc(desc_type)), "output_tensor": T("FLOAT16", (1, 1, 4, 4))})
  assert_rejected(bad_type, None, "OutputTensor.DataType", "InputTensor.DataType", "FLOAT16")
  counted = desc_type(**{**_fields(_desc(desc_type)), _snake(count): 3})
  assert_rejected(counted, None, count, "must equal the number of Scales (4)", "3")
  if desc_type is not dml.ResampleDesc:
    offsets = desc_type(
      **{**_fields(_desc(desc_type)), "output_pixel_offsets": (0.0, float("nan"), 0.0, 0.0)}
    )
    assert_rejected(offsets, None, "OutputPixelOffsets", "finite", "{0.0,nan,0.0,0.0}")


def _fields(desc):
  return {f.name: getattr(desc, f.name) for f in dataclasses.fields(desc)}


def _snake(name):
  return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def test_the_fields_are_float32():
  desc = dml.Resample1Desc(T("FLOAT32", (3,)), T("FLOAT32", (3,)), LINEAR, (0.1,), (0.1,), (0,))
  assert desc.scales == (float(np.float32(0.1)),)
  with pytest.raises(TypeError, match=r"Scales\[0\] must be a number"):
    dml.ResampleDesc(T("FLOAT32", (3,)), T("FLOAT32", (3,)), LINEAR, ("x",))
  with pytest.raises(ValueError, match="InterpolationMode must be one of"):
    dml.resample(np.ones(3, np.float32), interpolation_mode="CUBIC", scales=(1,))


def test_nearest_ties_go_to_the_smaller_index_in_resample_and_resample1():
  # Halving puts every output element at x = 2 o + 0.5, between 2 o and 2 o + 1.
  x = np.arange(8, dtype=np.float32)
  for fn in (dml.resample, dml.resample1):
    assert_bits_equal(fn(x, interpolation_mode=NEAREST, scales=(0.5,)), x[[0, 2, 4, 6]])
  # RESAMPLE2: floor takes the smaller, ceil the larger; ONNX Runtime's round_prefer_floor
  # (INCREASING with InputPixelOffsets + 0.5) is RESAMPLE1's rule.
  for direction, picks in (("DECREASING", [0, 2, 4, 6]), ("INCREASING", [1, 3, 5, 7])):
    got = dml.resample2(x, interpolation_mode=NEAREST, rounding_direction=direction, scales=(0.5,))
    assert_bits_equal(got, x[picks])
  onnx = dml.resample2(
    x,
    interpolation_mode=NEAREST,
    rounding_direction="INCREASING",
    scales=(0.5,),
    input_pixel_offsets=(1.0,),
  )
  assert_bits_equal(onnx, x[[0, 2, 4, 6]])


def test_nearest_clamps_at_the_edges_and_follows_the_offsets():
  x = np.array([10, 20, 30], np.int8)
  # An output larger than the scaled input repeats the last element; offsets shift.
  got = dml.resample1(
    x,
    interpolation_mode=NEAREST,
    scales=(1.0,),
    input_pixel_offsets=(0.0,),
    output_pixel_offsets=(2.0,),
    output_sizes=(6,),
  )
  assert_bits_equal(got, np.array([10, 10, 10, 20, 30, 30], np.int8))
  assert_bits_equal(
    dml.resample(x, interpolation_mode=NEAREST, scales=(1.0,), output_sizes=(5,)),
    np.array([10, 20, 30, 30, 30], np.int8),
  )


def test_linear_is_the_documented_weighted_average():
  x = np.array([[0, 10], [20, 30]], np.float32)
  got = dml.resample(x, interpolation_mode=LINEAR, scales=(1, 2))
  assert_bits_equal(got, np.array([[0, 2.5, 7.5, 10], [20, 22.5, 27.5, 30]], np.float32))
  # Each dimension separately, weights from the clamped coordinate: 2-D is the product.
  got = dml.resample(x, interpolation_mode=LINEAR, scales=(2, 2))
  assert_bits_equal(got, reference.resample(x, interpolation_mode=LINEAR, scales=(2, 2)))
  assert got[1, 1] == np.float32(0.75 * (0.75 * 0 + 0.25 * 10) + 0.25 * (0.75 * 20 + 0.25 * 30))


def test_linear_general_fields_match_the_oracle_bit_for_bit():
  rng = np.random.default_rng(5)
  x = rng.standard_normal((3, 4, 5)).astype(np.float32)
  kwargs = dict(
    interpolation_mode=LINEAR,
    scales=(0.7, 1.3, 2.9),
    input_pixel_offsets=(0.3, 0.5, -0.1),
    output_pixel_offsets=(0.1, -0.5, 0.2),
    output_sizes=(4, 5, 9),
  )
  # Two rounded products and their rounded sum: no fused multiply-add rounds once.
  assert_bits_equal(dml.resample1(x, **kwargs), reference.resample1(x, **kwargs))


def test_linear_does_not_leak_a_neighbour_of_weight_zero():
  x = np.array([1.0, np.inf, 3.0], np.float32)
  got = dml.resample(x, interpolation_mode=LINEAR, scales=(1,))
  assert_bits_equal(got, x)  # x lands on each element: inf * 0 never enters


def test_float16_and_8_bit_data_are_interpolated_in_float32_and_rounded_once():
  x16 = np.array([1, 1.0009765625], np.float16)  # 1 and 1 + 1 ulp
  got = dml.resample(x16, interpolation_mode=LINEAR, scales=(2,))
  assert_bits_equal(got, reference.resample(x16, interpolation_mode=LINEAR, scales=(2,)))
  # INT8: the float32 average rounded to the nearest integer, ties to even.
  x8 = np.array([0, 1, 2, 5], np.int8)
  got = dml.resample(x8, interpolation_mode=LINEAR, scales=(0.5,))  # x = 0.5, 2.5
  assert_bits_equal(got, np.array([0, 4], np.int8))  # 0.5 -> 0, 3.5 -> 4
  u8 = np.array([255, 254], np.uint8)
  got = dml.resample(u8, interpolation_mode=LINEAR, scales=(2,))
  assert_bits_equal(got, np.array([255, 255, 254, 254], np.uint8))  # 254.75, 254.25


def test_jit_vmap_and_grad():
  rng = np.random.default_rng(4)
  x = rng.standard_normal((3, 2, 4)).astype(np.float32)
  call = lambda x: dml.resample(x, interpolation_mode=NEAREST, scales=(1, 0.5))  # noqa: E731
  got = jax.jit(jax.vmap(call))(x)
  for i in range(3):
    assert_bits_equal(got[i], reference.resample(x[i], interpolation_mode=NEAREST, scales=(1, 0.5)))
  # Nearest: each input element's gradient counts the outputs that copy it.
  grad = jax.grad(lambda x: jnp.sum(dml.resample(x, interpolation_mode=NEAREST, scales=(1.5,))))(
    np.arange(2, dtype=np.float32)
  )
  assert_bits_equal(grad, np.array([2, 1], np.float32))  # [x0, x0, x1], as RESAMPLE_GRAD's page
  # Linear: the weights.
  grad = jax.grad(lambda x: dml.resample(x, interpolation_mode=LINEAR, scales=(2,))[1])(
    np.zeros(2, np.float32)
  )
  assert_bits_equal(grad, np.array([0.75, 0.25], np.float32))


def test_a_directml_model_runs_resample2():
  model = dml.load_model(
    {
      "resources": {
        "x": {"initialValuesDataType": "FLOAT32", "initialValues": [0, 1, 2, 3, 4, 5]},
        "y": {"initialValuesDataType": "FLOAT32", "initialValues": {"value": 0, "valueCount": 3}},
      },
      "dispatchables": {
        "down": {
          "type": "DML_OPERATOR_RESAMPLE2",
          "desc": {
            "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 1, 6]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 1, 3]},
            "InterpolationMode": "DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR",
            "RoundingDirection": "DML_AXIS_DIRECTION_INCREASING",
            "DimensionCount": 4,
            "Scales": [1, 1, 1, 0.5],
            "InputPixelOffsets": [0.5, 0.5, 0.5, 0.5],
            "OutputPixelOffsets": [-0.5, -0.5, -0.5, -0.5],
          },
        }
      },
      "commands": [
        {
          "type": "dispatch",
          "dispatchable": "down",
          "bindings": {"InputTensor": "x", "OutputTensor": "y"},
        }
      ],
    }
  )
  assert model.run()["y"].tolist() == [1, 3, 5]


def test_explanation():
  desc = _desc(dml.Resample2Desc, out=(1, 1, 3, 3))
  output = explain_section(dml.explain(desc, "5_1"), "Output:")
  assert any("floor(x)" in line for line in output)
  assert any("(o3 - -0.5) / 2 - 0.5" in line for line in output)
  assert any("{1,1,3,3}" in line for line in output)
  linear = dml.ResampleDesc(T("FLOAT32", (4,)), T("FLOAT32", (8,)), LINEAR, (2,))
  assert any("weighted average" in line for line in linear.explain_output())


def test_a_lower_rank_call_is_padded_to_the_levels_rank():
  # Before FL 5_1 DirectML takes 4 dimensions: a 2-D call reads with leading 1s, scale 1 and
  # centre offsets there, and its output is cut back.
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  got = dml.resample1(x, interpolation_mode=NEAREST, scales=(2, 1), feature_level="2_1")
  assert_bits_equal(got, x[[0, 0, 1, 1]])
  assert dml.descriptors_of(
    lambda x: dml.resample(x, interpolation_mode=NEAREST, scales=(2, 1), feature_level="2_0"), x
  )[0].scales == (1.0, 1.0, 2.0, 1.0)


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------

# Dyadic scales and offsets and small whole numbers: pictures a reader can check by hand
# (the tests above compare general fields too).
_SCALES = (0.25, 0.5, 1.0, 2.0, 4.0)
_OFFSETS = (0.0, 0.5, -0.5, 0.25, 1.0)


def whole_numbers(draw, data_type, sizes):
  rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
  low, high = (0, 64) if data_type is DataType.UINT8 else (-64, 64)
  return rng.integers(low, high, sizes).astype(data_type.numpy_dtype)


@st.composite
def resample_case(draw, op="RESAMPLE"):
  """RESAMPLE, RESAMPLE1 or RESAMPLE2: either mode, free output sizes, dyadic fields."""
  desc_type = strategies.DESCS[op]
  level = draw(strategies.levels(op))
  table = strategies.table_at(desc_type, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  sizes = strategies.draw_sizes(draw, n, max_elements=24)
  out = strategies.draw_sizes(draw, n, max_elements=24)
  mode = draw(st.sampled_from([NEAREST, LINEAR]))
  scales = tuple(draw(st.sampled_from(_SCALES)) for _ in range(n))
  x = whole_numbers(draw, data_type, sizes)
  inputs, output = T(data_type, sizes), T(data_type, out)
  kwargs: dict = {"interpolation_mode": mode, "scales": scales, "output_sizes": out}
  if op == "RESAMPLE":
    desc = dml.ResampleDesc(inputs, output, mode, scales)
  else:
    for name in ("input_pixel_offsets", "output_pixel_offsets"):
      kwargs[name] = tuple(draw(st.sampled_from(_OFFSETS)) for _ in range(n))
    fields = (kwargs["input_pixel_offsets"], kwargs["output_pixel_offsets"])
    if op == "RESAMPLE1":
      desc = dml.Resample1Desc(inputs, output, mode, scales, *fields)
    else:
      kwargs["rounding_direction"] = draw(st.sampled_from(["DECREASING", "INCREASING"]))
      desc = dml.Resample2Desc(inputs, output, mode, kwargs["rounding_direction"], scales, *fields)
  function, oracle = getattr(dml, op.lower()), getattr(reference, op.lower())
  return strategies.Case(
    desc,
    level,
    [x],
    lambda x, level: function(x, feature_level=level, **kwargs),
    lambda: oracle(x, **kwargs),
  )


def resample_mutations(desc, level, draw):
  n = desc.input_tensor.dimension_count
  count = "scale_count" if isinstance(desc, dml.ResampleDesc) else "dimension_count"
  count_field = "ScaleCount" if count == "scale_count" else "DimensionCount"
  yield "scale count", strategies.rebuild(desc, {count: n + 1}), count_field
  bad = draw(st.sampled_from([0.0, -1.0, float("inf"), float("nan")]))
  yield "bad scale", strategies.rebuild(desc, {"scales": (bad,) + desc.scales[1:]}), "Scales"
  longer = strategies.rebuild(desc, {"scales": desc.scales + (1.0,), count: None})
  yield "long scales", longer, "Scales"
  output = strategies.replace_tensor(desc.output_tensor, sizes=desc.output_tensor.sizes + (1,))
  yield (
    "output rank",
    strategies.rebuild(desc, {"output_tensor": output}),
    ("OutputTensor.DimensionCount"),
  )
  if not isinstance(desc, dml.ResampleDesc):
    offsets = (float("inf"),) + desc.input_pixel_offsets[1:]
    yield (
      "bad offset",
      strategies.rebuild(desc, {"input_pixel_offsets": offsets}),
      "InputPixelOffsets",
    )


def resample_cases(n, rng):
  # NCHW images sharded over the batch (nothing moves) or over the height (the rows stay put:
  # every output row reads its own shard's input row); nearest 2x, and LINEAR on the width.
  x = rng.standard_normal((n, 2, 2 * n, 3)).astype(np.float32)
  nearest = dict(interpolation_mode=NEAREST, scales=(1, 1, 2, 2))
  floor = dict(rounding_direction="DECREASING", input_pixel_offsets=(0.5, 0.5, 0.0, 0.0))
  up = lambda x: jnp.repeat(jnp.repeat(x, 2, axis=2), 2, axis=3)  # noqa: E731
  cases = []
  for shard in (0, 2):
    cases += [
      sharding_cases.Case(
        "RESAMPLE",
        f"nearest x2, sharded on axis {shard}",
        lambda x: dml.resample(x, **nearest),
        up,
        [(x, shard)],
        reference.resample(x, **nearest),
      ),
      sharding_cases.Case(
        "RESAMPLE1",
        f"nearest x2, sharded on axis {shard}",
        lambda x: dml.resample1(x, **nearest),
        up,
        [(x, shard)],
        reference.resample1(x, **nearest),
      ),
      sharding_cases.Case(
        "RESAMPLE2",
        f"nearest x2 (floor), sharded on axis {shard}",
        lambda x: dml.resample2(x, **floor, **nearest),
        up,
        [(x, shard)],
        reference.resample2(x, **floor, **nearest),
      ),
    ]
  data = np.round(x * 8) + np.float32(0)  # whole numbers (no -0.0): every product exact
  linear = dict(interpolation_mode=LINEAR, scales=(1, 1, 1, 2))
  weights = np.array(
    [[1, 0, 0], [0.75, 0.25, 0], [0.25, 0.75, 0], [0, 0.75, 0.25], [0, 0.25, 0.75], [0, 0, 1]],
    np.float32,
  )
  cases.append(
    sharding_cases.Case(
      "RESAMPLE",
      "linear x2 on the width, sharded on axis 0",
      lambda x: dml.resample(x, **linear),
      lambda x: jnp.einsum("nchw,ow->ncho", x, weights, precision="highest"),
      [(data, 0)],
      reference.resample(data, **linear),
    )
  )
  return cases


def _all_free(desc):
  # Given, never inferred: the scales need not be the sizes' ratio.
  return set(range(desc.input_tensor.dimension_count))


VALID = {
  "RESAMPLE": resample_case,
  "RESAMPLE1": lambda: resample_case(op="RESAMPLE1"),
  "RESAMPLE2": lambda: resample_case(op="RESAMPLE2"),
}
MUTANTS = {op: resample_mutations for op in VALID}
FREE_OUTPUT_DIMENSIONS = {op: _all_free for op in VALID}
SHARDED_CASES = resample_cases
TRACING_CALLS = {
  "resample": lambda k: dml.resample(
    np.full((2, 3), k, np.float32), interpolation_mode=LINEAR, scales=(1, 2)
  ),
}
