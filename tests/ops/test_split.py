"""SPLIT: the operator's own rules and pinned cases, and that it is JOIN's exact inverse.

Its support tables written out from DirectML's page (1_0: 4 dimensions, 16- and 32-bit
types; 2_1: 8-bit types; 3_0: 1 to 8 dimensions; 4_1: 64-bit types), its rules (OutputCount
> 0 and equal to the number of OutputTensors, every output of the input's rank and data
type, the input's sizes off Axis, Axis sizes summing to the input's), that the outputs are
given and never inferred, the NumPy reference against np.split, the functional API under
jit, vmap and grad, and the property: joining what SPLIT cut gives the input back, and
splitting what JOIN joined gives its inputs back. What every operator shares is tested in
tests/test_contract.py and the cross-cutting files.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import TensorDesc
from dml_jax._src import reference
from tests import sharding_cases, strategies
from tests.helpers import (
  CROSS_CHECK_SEEDS,
  assert_bits_equal,
  assert_rejected,
  assert_valid,
  braces,
  examples,
  explain_section,
)

T = dml.TensorDesc


def _split_desc(data_type, sizes, axis, pieces, **kwargs):
  outputs = tuple(
    T(data_type, tuple(sizes[:axis]) + (p,) + tuple(sizes[axis + 1 :])) for p in pieces
  )
  return dml.SplitDesc(T(data_type, tuple(sizes)), outputs, axis=axis, **kwargs)


# =========================================================================== #
# Support tables and validation
# =========================================================================== #


@pytest.mark.parametrize(
  "level, rank, data_type, valid",
  [
    ("1_0", 4, "FLOAT16", True),
    ("1_0", 4, "UINT16", True),
    ("1_0", 4, "INT8", False),  # 8-bit types from 2_1
    ("2_1", 4, "UINT8", True),
    ("2_1", 3, "FLOAT32", False),  # 4 dimensions only before 3_0
    ("2_1", 5, "FLOAT32", False),
    ("3_0", 1, "INT8", True),  # 1 to 8 from 3_0 (JOIN has 4 to 5 there)
    ("3_0", 8, "UINT16", True),
    ("3_0", 4, "INT64", False),  # 64-bit types from 4_1
    ("4_1", 2, "INT64", True),
    ("4_1", 2, "UINT64", True),
    ("4_1", 2, "FLOAT64", True),
  ],
)
def test_support_tables(level, rank, data_type, valid):
  desc = _split_desc(data_type, (2,) * rank, 0, (1, 1))
  fields = [v.field for v in desc.violations(level)]
  assert (fields == []) is valid, fields
  if not valid:
    roles = {f.split(".")[0].split("[")[0] + "." + f.split(".")[1] for f in fields}
    assert roles <= {
      "InputTensor.DataType",
      "InputTensor.DimensionCount",
      "OutputTensors.DataType",
      "OutputTensors.DimensionCount",
    }


def test_split_exists_from_1_0():
  assert dml.SplitDesc.SUPPORT.introduced == dml.FeatureLevel.FL_1_0
  assert_valid(_split_desc("FLOAT32", (1, 1, 6, 2), 2, (2, 1, 3)), "1_0")


def test_split_needs_at_least_one_output():
  error = assert_rejected(
    dml.SplitDesc(T("FLOAT32", (2, 3)), (), axis=0),
    None,
    "OutputCount",
    "must be > 0 (at least one output)",
    "0",
  )
  assert len(error.violations) == 1


@pytest.mark.parametrize("count", [0, 1, 3])
def test_output_count_must_equal_the_number_of_outputs(count):
  desc = _split_desc("FLOAT32", (1, 1, 4, 3), 2, (2, 2), output_count=count)
  assert_rejected(
    desc, None, "OutputCount", "must equal the number of OutputTensors (2)", str(count)
  )
  assert _split_desc("FLOAT32", (1, 1, 4, 3), 2, (2, 2)).output_count == 2


def test_axis_must_be_in_range():
  desc = dml.SplitDesc(T("FLOAT32", (2, 3)), (T("FLOAT32", (2, 3)),), axis=2)
  error = assert_rejected(desc, None, "Axis", "must be in [0, DimensionCount) = [0, 2)", "2")
  assert [v.field for v in error.violations] == ["Axis"]


def test_outputs_must_have_the_input_data_type():
  desc = dml.SplitDesc(T("FLOAT32", (4, 3)), (T("FLOAT32", (1, 3)), T("INT32", (3, 3))), axis=0)
  assert_rejected(
    desc, None, "OutputTensors[1].DataType", "must equal InputTensor.DataType (FLOAT32)", "INT32"
  )


def test_outputs_must_have_the_input_rank():
  desc = dml.SplitDesc(
    T("FLOAT32", (4, 3)), (T("FLOAT32", (1, 3)), T("FLOAT32", (1, 3, 3))), axis=0
  )
  error = assert_rejected(
    desc, None, "OutputTensors[1].DimensionCount", "must equal InputTensor.DimensionCount (2)", "3"
  )
  assert [v.field for v in error.violations] == ["OutputTensors[1].DimensionCount"]


@pytest.mark.parametrize(
  "second, axis, dimension",
  [((1, 1, 3, 3), 3, 2), ((1, 2, 2, 1), 3, 1), ((2, 1, 2, 3), 1, 0)],
)
def test_output_sizes_must_equal_the_input_off_axis(second, axis, dimension):
  first = (1, 1, 2, 2) if axis == 3 else (1, 1, 2, 3)
  desc = dml.SplitDesc(
    T("FLOAT32", (1, 1, 2, 3) if axis == 3 else (1, 2, 2, 3)),
    (T("FLOAT32", first), T("FLOAT32", second)),
    axis=axis,
  )
  shown = "{1,1,2,3}" if axis == 3 else "{1,2,2,3}"
  assert_rejected(
    desc,
    None,
    "OutputTensors[1].Sizes",
    f"must equal InputTensor.Sizes {shown} in every dimension but Axis ({axis});"
    f" dimension {dimension} differs",
    braces(second),
  )


@pytest.mark.parametrize("pieces", [(2, 1, 2), (2, 1, 4), (6, 1)])
def test_axis_sizes_must_sum_to_the_input_axis(pieces):
  desc = dml.SplitDesc(T("INT8", (2, 6)), tuple(T("INT8", (2, p)) for p in pieces), axis=1)
  assert_rejected(
    desc,
    None,
    "OutputTensors.Sizes",
    f"the outputs' sizes along Axis (1) must sum to InputTensor.Sizes[1] (6);"
    f" they sum to {sum(pieces)}",
    braces(pieces),
    hint="exactly one output",
  )


def test_a_zero_sized_piece_is_refused():
  desc = dml.SplitDesc(T("FLOAT32", (2, 3)), (T("FLOAT32", (2, 3)), T("FLOAT32", (2, 0))), axis=1)
  assert "OutputTensors[1].Sizes" in [v.field for v in desc.violations()]
  with pytest.raises(dml.DmlValidationError, match=r"OutputTensors\[1\]\.Sizes"):
    dml.split(np.zeros((2, 3), np.float32), axis=1, split_sizes=(3, 0))


def test_an_owned_output_is_refused():
  desc = dml.SplitDesc(T("FLOAT32", (2,)), (T("FLOAT32", (2,), flags=1),), axis=0)
  assert "OutputTensors[0].Flags" in [v.field for v in desc.violations()]


# =========================================================================== #
# Outputs: given, never inferred
# =========================================================================== #


def test_output_tensors_are_required():
  with pytest.raises(TypeError, match="output_tensors"):
    dml.SplitDesc(T("FLOAT32", (2, 3)), axis=0)  # type: ignore[call-arg]
  with pytest.raises(ValueError, match="DML_SPLIT_OPERATOR_DESC needs OutputTensors"):
    dml.SplitDesc.from_dml({"InputTensor": {"DataType": "FLOAT32", "Sizes": [2]}, "Axis": 0})


def test_infer_outputs_returns_the_given_outputs_only_when_they_fit():
  desc = _split_desc("FLOAT16", (3, 4), 0, (1, 2))
  assert desc.infer_outputs() == desc.outputs == desc.output_tensors
  assert [f for f, _, _ in desc.dml_outputs()] == ["OutputTensors[0]", "OutputTensors[1]"]
  wrong = dataclasses.replace(desc, output_tensors=(T("FLOAT16", (1, 4)), T("FLOAT16", (1, 4))))
  assert wrong.infer_outputs() is None
  retyped = dataclasses.replace(desc, output_tensors=(T("INT16", (1, 4)), T("FLOAT16", (2, 4))))
  assert retyped.infer_outputs() is None
  with pytest.raises(TypeError, match="use .outputs"):
    desc.output  # noqa: B018


def test_descriptor_shows_the_outputs_and_reads_directml_json():
  desc = _split_desc("FLOAT32", (6,), 0, (2, 2, 2))
  assert str(desc) == (
    "DML_OPERATOR_SPLIT(InputTensor=FLOAT32[6], Axis=0, OutputCount=3)"
    " -> (FLOAT32[2], FLOAT32[2], FLOAT32[2])"
  )
  assert desc.dml_attributes() == (("Axis", 0), ("OutputCount", 3))
  document = {
    "InputTensor": {"DataType": "FLOAT32", "Sizes": [6]},
    "OutputCount": 3,
    "OutputTensors": [{"DataType": "FLOAT32", "Sizes": [2]}] * 3,
    "Axis": 0,
  }
  assert dml.SplitDesc.from_dml(document) == desc


def test_split_explains_where_each_piece_comes_from():
  desc = _split_desc("FLOAT32", (1, 1, 6, 2), 2, (2, 1, 3))
  lines = explain_section(dml.explain(desc), "Output:")
  assert any("given, not inferred" in line for line in lines)
  assert any("2 + 1 + 3 = 6" in line for line in lines)
  assert any(
    "[0, 2) -> OutputTensors[0] {1,1,2,2}, [2, 3) -> OutputTensors[1] {1,1,1,2}" in line
    for line in lines
  )
  single = _split_desc("INT8", (2,), 0, (2,))
  assert any("copy" in line for line in single.explain_output())


# =========================================================================== #
# Values
# =========================================================================== #


def test_pinned_split_of_the_documented_example():
  x = np.arange(1, 13, dtype=np.float32).reshape(1, 1, 6, 2)
  first, second, third = dml.split(x, axis=2, split_sizes=(2, 1, 3))
  assert_bits_equal(first, np.array([[[[1, 2], [3, 4]]]], np.float32))
  assert_bits_equal(second, np.array([[[[5, 6]]]], np.float32))
  assert_bits_equal(third, np.array([[[[7, 8], [9, 10], [11, 12]]]], np.float32))
  left, right = dml.split(x, axis=3, split_sizes=[1, 1])
  assert_bits_equal(left, x[..., :1])
  assert_bits_equal(right, x[..., 1:])


def test_a_single_output_is_a_copy_and_the_result_is_a_list():
  x = np.arange(6, dtype=np.uint16).reshape(2, 3)
  out = dml.split(x, axis=0, split_sizes=(2,))
  assert isinstance(out, list) and len(out) == 1
  assert_bits_equal(out[0], x)


@pytest.mark.parametrize("seed", CROSS_CHECK_SEEDS)
def test_reference_agrees_with_np_split(seed):
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 5))
  axis = int(rng.integers(0, rank))
  pieces = [int(p) for p in rng.integers(1, 4, int(rng.integers(1, 5)))]
  shape = [int(n) for n in rng.integers(1, 4, rank)]
  shape[axis] = sum(pieces)
  x = rng.standard_normal(shape).astype(np.float32)
  want = np.split(x, np.cumsum(pieces)[:-1], axis=axis)
  got = reference.split(x, axis=axis, split_sizes=pieces)
  assert len(got) == len(want)
  for g, w in zip(got, want, strict=True):
    assert_bits_equal(g, w)
  for g, w in zip(dml.split(x, axis=axis, split_sizes=pieces), want, strict=True):
    assert_bits_equal(g, w)


def test_unlike_jnp_split_sizes_are_given_and_must_cover_the_axis():
  x = np.arange(12, dtype=np.int32).reshape(2, 6)
  assert len(jnp.split(x, 3, axis=1)) == 3  # jnp: a count of equal pieces
  assert [p.shape for p in jnp.split(x, [1, 2], axis=1)] == [(2, 1), (2, 1), (2, 4)]  # cuts
  with pytest.raises(dml.DmlValidationError, match="must sum to InputTensor.Sizes"):
    dml.split(x, axis=1, split_sizes=(1, 2))
  with pytest.raises(dml.DmlValidationError, match=r"Axis: must be in \[0, DimensionCount\)"):
    dml.split(x, axis=2, split_sizes=(6,))
  with pytest.raises(dml.DmlValidationError, match="OutputCount: must be > 0"):
    dml.split(x, axis=1, split_sizes=())
  with pytest.raises(TypeError, match=r"split_sizes\[0\] must be an integer; got float"):
    dml.split(x, axis=1, split_sizes=(1.0, 5))
  with pytest.raises(TypeError, match="Axis must be an integer"):
    dml.split(x, axis="1", split_sizes=(6,))


def test_functional_split_validates_at_the_level():
  with pytest.raises(dml.DmlValidationError, match=r"InputTensor\.DimensionCount"):
    dml.split(np.zeros((1, 2, 1, 2, 2), np.float32), axis=0, split_sizes=(1,), feature_level="2_1")
  out = dml.split(np.zeros((2, 2), np.float32), axis=0, split_sizes=(1, 1), feature_level="2_1")
  assert [o.shape for o in out] == [(1, 2)] * 2  # read at 4-D, cut back
  with pytest.raises(dml.DmlValidationError, match=r"InputTensor\.DataType"):
    dml.split(np.zeros((1, 1, 2, 2), np.int8), axis=2, split_sizes=(1, 1), feature_level="1_0")
  out = dml.split(np.zeros((1, 1, 2, 2), np.int8), axis=2, split_sizes=(1, 1), feature_level="2_1")
  assert [o.shape for o in out] == [(1, 1, 1, 2)] * 2


def test_jit_vmap_and_grad():
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  left, right = jax.jit(lambda x: dml.split(x, axis=1, split_sizes=(1, 3)))(x)
  assert_bits_equal(left, x[:, :1])
  assert_bits_equal(right, x[:, 1:])
  batch = np.stack([x, -x])
  top, bottom = jax.vmap(lambda x: dml.split(x, axis=0, split_sizes=(2, 1)))(batch)
  assert_bits_equal(top, batch[:, :2])
  assert_bits_equal(bottom, batch[:, 2:])
  weights = np.arange(12, dtype=np.float32).reshape(3, 4) + 1

  def loss(x):
    first, second = dml.split(x, axis=1, split_sizes=(1, 3))
    return jnp.sum(first * weights[:, :1]) + 2 * jnp.sum(second * weights[:, 1:])

  grad = jax.grad(loss)(x)
  # Each input element lands in exactly one output: it gets that output's weight.
  assert_bits_equal(grad, np.concatenate([weights[:, :1], 2 * weights[:, 1:]], axis=1))


# =========================================================================== #
# SPLIT is JOIN's exact inverse
# =========================================================================== #


_DATA_TYPES = ("FLOAT32", "FLOAT16", "INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8")


@st.composite
def _pieces(draw):
  rank = draw(st.integers(1, 4))
  axis = draw(st.integers(0, rank - 1))
  shape = [draw(st.integers(1, 3)) for _ in range(rank)]
  sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
  data_type = dml.DataType.from_any(draw(st.sampled_from(_DATA_TYPES)))
  dtype = data_type.numpy_dtype
  rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
  shape[axis] = sum(sizes)
  if np.issubdtype(dtype, np.floating):
    x = rng.standard_normal(shape).astype(dtype)
  else:
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
  return x, axis, tuple(sizes)


@examples(0.5, deadline=None)
@given(_pieces())
def test_join_undoes_split_and_split_undoes_join(case):
  x, axis, sizes = case
  pieces = dml.split(x, axis=axis, split_sizes=sizes)
  assert [p.shape[axis] for p in pieces] == list(sizes)
  assert_bits_equal(dml.join(pieces, axis=axis), x)
  again = dml.split(dml.join(pieces, axis=axis), axis=axis, split_sizes=sizes)
  for got, want in zip(again, pieces, strict=True):
    assert_bits_equal(got, want)
  # And the descriptors mirror each other: JOIN's inputs are SPLIT's outputs.
  split_desc = dml.SplitDesc(
    T(str(dml.DataType.from_any(x.dtype)), x.shape),
    tuple(T(str(dml.DataType.from_any(p.dtype)), p.shape) for p in pieces),
    axis=axis,
  )
  join_desc = dml.JoinDesc(split_desc.output_tensors, axis=axis)
  assert join_desc.output == split_desc.input_tensor
  assert split_desc.is_valid() and join_desc.is_valid()


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def split_case(draw):
  level = draw(strategies.levels("SPLIT"))
  table = strategies.table_at(dml.SplitDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  axis = draw(st.integers(0, n - 1))
  split_sizes = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=4)))
  sizes = list(strategies.draw_sizes(draw, n, max_elements=48))
  sizes[axis] = sum(split_sizes)
  x = strategies.draw_data(draw, data_type, tuple(sizes))
  pieces = tuple(
    TensorDesc(data_type, tuple(sizes[:axis]) + (s,) + tuple(sizes[axis + 1 :]))
    for s in split_sizes
  )
  desc = dml.SplitDesc(TensorDesc(data_type, tuple(sizes)), pieces, axis=axis)
  return strategies.Case(
    desc,
    level,
    [x],
    lambda x, level: dml.split(x, axis=axis, split_sizes=split_sizes, feature_level=level),
    lambda: reference.split(x, axis=axis, split_sizes=split_sizes),
  )


def split_mutations(desc, level, draw):
  """SPLIT's own rules: OutputCount, the sizes on and off the axis, the outputs' rank."""
  outputs, axis = desc.output_tensors, desc.axis
  yield "empty", dml.SplitDesc(desc.input_tensor, (), axis=0), "OutputCount"
  yield "output count", strategies.rebuild(desc, {"output_count": len(outputs) + 1}), "OutputCount"
  k = draw(st.integers(0, len(outputs) - 1))

  def resized(d, delta):
    sizes = list(outputs[k].sizes)
    sizes[d] += delta
    changed = list(outputs)
    changed[k] = strategies.replace_tensor(outputs[k], sizes=tuple(sizes))
    return strategies.rebuild(desc, {"output_tensors": tuple(changed)})

  yield "axis sum", resized(axis, 1), "OutputTensors.Sizes"
  off = [d for d in range(desc.input_tensor.dimension_count) if d != axis]
  if off:
    yield "off-axis sizes", resized(draw(st.sampled_from(off)), 1), f"OutputTensors[{k}].Sizes"
  taller = strategies.replace_tensor(outputs[k], sizes=(1,) + outputs[k].sizes)
  yield (
    "output rank",
    strategies.rebuild(desc, {"output_tensors": outputs[:k] + (taller,) + outputs[k + 1 :]}),
    f"OutputTensors[{k}].DimensionCount",
  )


def split_cases(n, rng):
  cases = []
  x = rng.standard_normal((2 * n, 2 * n)).astype(np.float32)
  for axis in (0, 1):
    for shard in (0, 1):
      sizes = (n, n // 2, n // 2)
      cases.append(
        sharding_cases.Case(
          "SPLIT",
          f"along axis {axis} into {sizes}, sharded on axis {shard}",
          lambda x, axis=axis, sizes=sizes: dml.split(x, axis=axis, split_sizes=sizes),
          lambda x, axis=axis, sizes=sizes: jnp.split(x, np.cumsum(sizes)[:-1], axis=axis),
          [(x, shard)],
          reference.split(x, axis=axis, split_sizes=sizes),
        )
      )
  return cases


VALID = {"SPLIT": split_case}
MUTANTS = {"SPLIT": split_mutations}
SHARDED_CASES = split_cases
BFLOAT16_CALLS = {"split": lambda x: dml.split(x, axis=1, split_sizes=(2, 4))[1]}
