"""TOP_K and TOP_K1: the operators' own rules and pinned cases.

Their support tables (TOP_K from 2_0 with float data, both from 2_1 with data of up to
32 bits and 4 dimensions, 1 to 8 dimensions from 3_1, 64-bit data and UINT64 indices from
5_0), each rule with its wording (Axis, K from 1 to the lane's length, the outputs' sizes,
ranks and data types), the order of equal values (ascending positions in either direction),
dml_jax's order for NaN and signed zeros (shared with ARGMIN and ARGMAX; the values copied
bit for bit), the 64-bit index policy, jit, vmap and grad, and the explanation. What every
operator shares is tested in tests/test_contract.py and the cross-cutting files.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import DataType, TensorDesc
from dml_jax._src import reference
from tests import sharding_cases, strategies
from tests.helpers import assert_bits_equal, assert_rejected, assert_valid, explain_section

T = dml.TensorDesc


def _desc(desc_type, data_type="FLOAT32", sizes=(1, 1, 3, 4), axis=3, k=2, index_type=None):
  outputs = ()
  if index_type is not None:
    out = sizes[:axis] + (k,) + sizes[axis + 1 :]
    outputs = (T(data_type, out), T(index_type, out))
  return desc_type(T(data_type, sizes), axis, k, *outputs)


@pytest.mark.parametrize(
  "desc_type, level, data_type, rank, index_type, valid",
  [
    (dml.TopKDesc, "1_0", "FLOAT32", 4, "UINT32", False),  # introduced at 2_0
    (dml.TopKDesc, "2_0", "FLOAT16", 4, "UINT32", True),
    (dml.TopKDesc, "2_0", "INT32", 4, "UINT32", False),  # integer data from 2_1
    (dml.TopK1Desc, "2_0", "FLOAT32", 4, "UINT32", False),  # introduced at 2_1
    (dml.TopK1Desc, "2_1", "UINT8", 4, "UINT32", True),
    (dml.TopK1Desc, "2_1", "FLOAT32", 3, "UINT32", False),  # 4 dimensions before 3_1
    (dml.TopK1Desc, "3_1", "FLOAT32", 1, "UINT32", True),
    (dml.TopKDesc, "3_1", "FLOAT32", 8, "UINT64", False),  # UINT64 indices from 5_0
    (dml.TopKDesc, "3_1", "INT64", 2, "UINT32", False),  # 64-bit data from 5_0
    (dml.TopKDesc, "5_0", "INT64", 2, "UINT64", True),
    (dml.TopK1Desc, "6_4", "UINT64", 2, "UINT32", True),
    (dml.TopK1Desc, "6_4", "FLOAT64", 2, "UINT32", False),  # never FLOAT64
    (dml.TopK1Desc, "6_4", "FLOAT32", 2, "INT32", False),  # unsigned indices only
  ],
)
def test_support_tables(desc_type, level, data_type, rank, index_type, valid):
  sizes = (1,) * (rank - 1) + (4,)
  desc = _desc(desc_type, data_type, sizes, axis=rank - 1, index_type=index_type)
  assert desc.is_valid(level) is valid, desc.violations(level)


@pytest.mark.parametrize("desc_type", [dml.TopKDesc, dml.TopK1Desc])
def test_rules_name_the_field(desc_type):
  assert_valid(_desc(desc_type, k=4), None)  # K may equal the lane's length
  assert_rejected(_desc(desc_type, k=0), None, "K", "must be in [1, InputTensor.Sizes[Axis]]", "0")
  assert_rejected(_desc(desc_type, k=5), None, "K", "= [1, 4]", "5", "has 4 element(s)")
  assert_rejected(
    _desc(desc_type, axis=4), None, "Axis", "must be in [0, DimensionCount) = [0, 4)", "4"
  )
  good = _desc(desc_type, index_type="UINT32")
  values, indices = good.outputs
  bad_values = desc_type(T("FLOAT32", (1, 1, 3, 4)), 3, 2, T("FLOAT16", values.sizes), indices)
  assert_rejected(bad_values, None, "OutputValueTensor.DataType", "InputTensor.DataType", "FLOAT16")
  bad_sizes = desc_type(T("FLOAT32", (1, 1, 3, 4)), 3, 2, values, T("UINT32", (1, 1, 3, 3)))
  assert_rejected(
    bad_sizes, None, "OutputIndexTensor.Sizes", "with K (2) on Axis (3): {1,1,3,2}", "{1,1,3,3}"
  )


def test_outputs_are_inferred_and_a_given_index_type_is_kept():
  desc = _desc(dml.TopK1Desc, "INT16", k=3)
  assert desc.outputs == (T("INT16", (1, 1, 3, 3)), T("UINT32", (1, 1, 3, 3)))
  given = _desc(dml.TopKDesc, "INT64", k=3, index_type="UINT64")
  assert given.infer_outputs() == given.outputs
  with pytest.raises(TypeError, match="use .outputs"):
    desc.output  # noqa: B018


def test_equal_values_keep_ascending_positions_in_either_direction():
  x = np.array([[5, 1, 5, 1, 5, 1]], np.int8)
  values, indices = dml.top_k1(x, axis=1, k=4)
  assert_bits_equal(values, np.array([[5, 5, 5, 1]], np.int8))
  assert_bits_equal(indices, np.array([[0, 2, 4, 1]], np.uint32))
  values, indices = dml.top_k1(x, axis=1, k=4, axis_direction="INCREASING")
  assert_bits_equal(values, np.array([[1, 1, 1, 5]], np.int8))
  assert_bits_equal(indices, np.array([[1, 3, 5, 0]], np.uint32))


def test_nan_ranks_above_infinity_and_values_are_copied_bit_for_bit():
  payload = np.array([0x7FC00123], np.uint32).view(np.float32)[0]
  x = np.array([[1.0, -0.0, payload, -np.inf, 0.0, -np.nan, np.inf]], np.float32)
  values, indices = dml.top_k(x, axis=1, k=7)
  assert_bits_equal(indices, np.array([[2, 5, 6, 0, 1, 4, 3]], np.uint32))
  assert_bits_equal(values, x[:, [2, 5, 6, 0, 1, 4, 3]])  # payloads and -0.0 kept
  values, indices = dml.top_k1(x, axis=1, k=3, axis_direction="INCREASING")
  assert_bits_equal(indices, np.array([[3, 1, 4]], np.uint32))  # -0.0 before 0.0: positions
  assert_bits_equal(values, x[:, [3, 1, 4]])


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_subnormals_rank_by_value(dtype):
  tiny = np.finfo(dtype).smallest_subnormal
  x = np.array([[0.0, tiny, -tiny, 2 * tiny, -0.0]], dtype)
  _, indices = dml.top_k(x, axis=1, k=5)
  assert_bits_equal(indices, np.array([[3, 1, 0, 4, 2]], np.uint32))
  _, indices = dml.top_k1(x, axis=1, k=5, axis_direction="INCREASING")
  assert_bits_equal(indices, np.array([[2, 0, 4, 1, 3]], np.uint32))


def test_argmax_is_top_1():
  rng = np.random.default_rng(2)
  x = rng.choice(np.array([0.0, -0.0, 1.0, np.nan, np.inf], np.float32), (4, 7))
  for direction, pick in (("DECREASING", dml.argmax), ("INCREASING", dml.argmin)):
    _, indices = dml.top_k1(x, axis=1, k=1, axis_direction=direction)
    assert_bits_equal(indices, pick(x, axes=(1,)))


def test_any_axis_and_every_integer_type():
  rng = np.random.default_rng(3)
  for dtype in (np.uint16, np.int32):  # ranked as float32 keys, and as integer keys
    info = np.iinfo(dtype)
    x = rng.choice(np.array([info.min, info.max, 0, 1], dtype), (3, 5, 2))
    got = dml.top_k1(x, axis=1, k=4, axis_direction="INCREASING")
    want = reference.top_k1(x, axis=1, k=4, axis_direction="INCREASING")
    for g, w in zip(got, want, strict=True):
      assert_bits_equal(g, w)


def test_uint64_indices_with_x64_off_are_refused(no_x64):
  with pytest.raises(TypeError, match=r"OutputIndexTensor is UINT64.*jax_enable_x64"):
    dml.top_k(np.ones((1, 3), np.float32), axis=1, k=1, index_data_type="UINT64")


def test_64_bit_data_and_indices_with_x64_on(x64):
  x = np.array([[2**40, -1, 2**40 + 1]], np.int64)
  values, indices = dml.top_k(x, axis=1, k=2, index_data_type="UINT64")
  assert_bits_equal(values, np.array([[2**40 + 1, 2**40]], np.int64))
  assert_bits_equal(indices, np.array([[2, 0]], np.uint64))


def test_jit_vmap_and_grad():
  rng = np.random.default_rng(4)
  x = rng.standard_normal((3, 2, 5)).astype(np.float32)
  fn = jax.jit(jax.vmap(lambda x: dml.top_k1(x, axis=1, k=2, axis_direction="INCREASING")))
  values, indices = fn(x)
  for i in range(3):
    want = reference.top_k1(x[i], axis=1, k=2, axis_direction="INCREASING")
    assert_bits_equal(values[i], want[0])
    assert_bits_equal(indices[i], want[1])
  # The values' gradient reaches the selected elements, one each (the gather's transpose).
  weights = np.arange(1, 5, dtype=np.float32).reshape(1, 2, 2)
  grad = jax.grad(lambda x: jnp.sum(dml.top_k(x, axis=2, k=2)[0] * weights))(x[:1])
  _, top = reference.top_k(x[:1], axis=2, k=2)
  want = np.zeros_like(x[:1])
  np.put_along_axis(want, top.astype(np.int64), weights, axis=2)
  assert_bits_equal(grad, want)


def test_bad_arguments_are_type_and_value_errors():
  x = np.ones((2, 2), np.float32)
  with pytest.raises(TypeError, match="K must be an integer"):
    dml.top_k(x, axis=1, k=1.5)
  with pytest.raises(ValueError, match="AxisDirection must be one of"):
    dml.top_k1(x, axis=1, k=1, axis_direction="SIDEWAYS")


def test_explanation():
  text = dml.explain(_desc(dml.TopK1Desc, k=3), "3_1")
  output = explain_section(text, "Output:")
  assert any("each lane's 3 largest, in descending order" in line for line in output)
  assert any("{1,1,3,3}" in line for line in output)
  increasing = dml.TopK1Desc(T("FLOAT32", (4,)), 0, 2, axis_direction="INCREASING")
  assert any("smallest, in ascending" in line for line in increasing.explain_output())


def test_a_directml_model_runs_top_k1_and_argmax():
  # DirectML's JSON form, as DxDispatch model files hold it (enum names with or without the
  # DML_AXIS_DIRECTION_ prefix); TOP_K1's example 3 and ARGMAX's last-of-equal rule.
  x = [1, 2, 2, 3, 3, 4, 5, 5, 6, 6, 6, 6]
  model = dml.load_model(
    {
      "resources": {
        "x": {"initialValuesDataType": "FLOAT32", "initialValues": x},
        "v": {"initialValuesDataType": "FLOAT32", "initialValues": {"value": 0, "valueCount": 9}},
        "i": {"initialValuesDataType": "UINT32", "initialValues": {"value": 0, "valueCount": 9}},
        "a": {"initialValuesDataType": "UINT32", "initialValues": {"value": 0, "valueCount": 3}},
      },
      "dispatchables": {
        "top": {
          "type": "DML_OPERATOR_TOP_K1",
          "desc": {
            "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 3, 4]},
            "OutputValueTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 3, 3]},
            "OutputIndexTensor": {"DataType": "UINT32", "Sizes": [1, 1, 3, 3]},
            "Axis": 3,
            "K": 3,
            "AxisDirection": "DML_AXIS_DIRECTION_DECREASING",
          },
        },
        "argmax": {
          "type": "ARGMAX",
          "desc": {
            "InputTensor": {"DataType": "FLOAT32", "Sizes": [3, 4]},
            "OutputTensor": {"DataType": "UINT32", "Sizes": [3, 1]},
            "AxisCount": 1,
            "Axes": [1],
            "AxisDirection": "DECREASING",
          },
        },
      },
      "commands": [
        {
          "type": "dispatch",
          "dispatchable": "top",
          "bindings": {"InputTensor": "x", "OutputValueTensor": "v", "OutputIndexTensor": "i"},
        },
        {
          "type": "dispatch",
          "dispatchable": "argmax",
          "bindings": {"InputTensor": "x", "OutputTensor": "a"},
        },
      ],
    }
  )
  buffers = model.run()
  assert buffers["v"].tolist() == [3, 2, 2, 5, 5, 4, 6, 6, 6]
  assert buffers["i"].tolist() == [3, 1, 2, 2, 3, 1, 0, 1, 2]
  assert buffers["a"].tolist() == [3, 3, 3]


@pytest.mark.parametrize(
  "shape, axis, k, data_type, direction",
  [
    ((3, 5000), 1, 16, np.float32, "DECREASING"),  # groups of 16, the last one padded
    ((2, 8192, 2), 1, 7, np.float16, "INCREASING"),  # a lane off the last axis
    ((9000,), 0, 40, np.int32, "DECREASING"),
    ((2, 6000), 1, 5, np.uint8, "INCREASING"),
  ],
)
def test_pruned_ranking_keeps_the_order_of_a_full_one(shape, axis, k, data_type, direction):
  # The ranking long lanes take off the CPU (where XLA's TopK is a partial sort), run here
  # directly. Lanes of 0s with 1s here and there and K / 2 2s: the K first are the 2s and the
  # earliest 1s, which the groups holding a 2 must not overtake.
  from dml_jax._src.ops import top_k

  rng = np.random.default_rng(5)
  rank = (rng.random(shape) < 0.1).astype(np.int32)
  lanes = np.moveaxis(rank, axis, -1).reshape(-1, shape[axis])
  for lane in lanes:
    lane[rng.choice(shape[axis], k // 2, replace=False)] = 2
  rank = np.moveaxis(lanes.reshape(np.moveaxis(rank, axis, -1).shape), -1, axis)
  descending = direction == "DECREASING"
  x = (rank if descending else 2 - rank).astype(data_type)
  if data_type == np.float32:
    x[x == 0] = -0.0
  group = top_k._group_size(shape[axis], k)
  assert group is not None
  got = jax.jit(lambda x: top_k._pruned_positions(x, k, axis, descending, group))(x)
  _, want = reference.top_k1(x, axis=axis, k=k, axis_direction=direction)
  np.testing.assert_array_equal(got, want)


def test_a_negative_axis_counts_from_the_end():
  x = np.random.default_rng(4).integers(0, 4, (2, 5, 3)).astype(np.float32)
  for axis in (-1, -2, -3):
    assert_bits_equal(dml.top_k(x, axis=axis, k=2), dml.top_k(x, axis=axis % 3, k=2))
    increasing = dict(k=1, axis_direction="INCREASING")
    assert_bits_equal(
      dml.top_k1(x, axis=axis, **increasing), dml.top_k1(x, axis=axis % 3, **increasing)
    )
  with pytest.raises(dml.DmlValidationError, match="Axis"):
    dml.top_k(x, axis=-4, k=1)


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def top_k_case(draw, op="TOP_K"):
  """TOP_K or TOP_K1: any axis, K from 1 to the lane's length, either direction (TOP_K1), any
  index type of the level, and values with many ties, signed zeros and NaNs."""
  desc_type = strategies.DESCS[op]
  level = draw(strategies.levels(op))
  table = strategies.table_at(desc_type, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  index_type = draw(st.sampled_from(table["OutputIndexTensor"].data_types))
  sizes = strategies.draw_sizes(draw, n, max_elements=48)
  axis = draw(st.integers(0, n - 1))
  k = draw(st.integers(1, sizes[axis]))
  extra = {}
  if op == "TOP_K1":
    extra["axis_direction"] = draw(st.sampled_from(list(dml.AxisDirection)))
  x = strategies.draw_selection_data(draw, data_type, sizes)
  out_sizes = sizes[:axis] + (k,) + sizes[axis + 1 :]
  desc = desc_type(
    TensorDesc(data_type, sizes),
    axis,
    k,
    TensorDesc(data_type, out_sizes),
    TensorDesc(index_type, out_sizes),
    **extra,
  )
  function, oracle = getattr(dml, desc_type.FUNCTION), getattr(reference, desc_type.FUNCTION)
  named = {key: value.name for key, value in extra.items()}
  return strategies.Case(
    desc,
    level,
    [x],
    lambda x, level: function(
      x, axis=axis, k=k, index_data_type=index_type, feature_level=level, **extra
    ),
    lambda: oracle(x, axis=axis, k=k, index_data_type=index_type.name, **named),
  )


def top_k_mutations(desc, level, draw):
  """TOP_K(1)'s own rules: K in the lane, unsigned indices, the outputs' ranks."""
  length = desc.input_tensor.sizes[desc.axis]
  yield "k 0", strategies.rebuild(desc, {"k": 0}), "K"
  yield "k past the lane", strategies.rebuild(desc, {"k": length + draw(st.integers(1, 3))}), "K"
  values, indices = desc.outputs
  yield (
    "signed indices",
    dataclasses.replace(
      desc,
      output_value_tensor=values,
      output_index_tensor=strategies.replace_tensor(indices, data_type=DataType.INT32),
    ),
    "OutputIndexTensor.DataType",
  )
  yield (
    "values rank",
    dataclasses.replace(
      desc,
      output_value_tensor=strategies.replace_tensor(values, sizes=(1,) + values.sizes),
      output_index_tensor=indices,
    ),
    "OutputValueTensor.DimensionCount",
  )


def top_k_cases(n, rng):
  cases = []
  x = rng.permuted(np.tile(np.arange(2 * n, dtype=np.float32), (2 * n, 1)), axis=1)
  for operator, direction in (("TOP_K", "DECREASING"), ("TOP_K1", "INCREASING")):
    descending = direction == "DECREASING"
    if descending:
      call = lambda x: dml.top_k(x, axis=1, k=3)
    else:
      call = lambda x: dml.top_k1(x, axis=1, k=3, axis_direction="INCREASING")

    def jnp_top_k(x, descending=descending):
      values, indices = jax.lax.top_k(x if descending else -x, 3)
      return (values if descending else -values), indices.astype(jnp.uint32)

    # Sharded along the lanes (axis 1), jax.lax.top_k all-gathers them; dml_jax does too, and
    # then gathers the K values from the sharded input, one all-reduce of the (.., K) output
    # more (docs/sharding.md). So only the batch is sharded here.
    for shard in (0,):
      cases.append(
        sharding_cases.Case(
          operator,
          f"k 3 along axis 1 ({direction}), sharded on axis {shard}",
          call,
          jnp_top_k,
          [(x, shard)],
          reference.top_k1(x, axis=1, k=3, axis_direction=direction),
        )
      )
  return cases


VALID = {"TOP_K": top_k_case, "TOP_K1": lambda: top_k_case(op="TOP_K1")}
MUTANTS = {"TOP_K": top_k_mutations, "TOP_K1": top_k_mutations}
SHARDED_CASES = top_k_cases
