"""GATHER: the operator's own rules and pinned cases.

Its validation rules (IndexDimensions in [0, n], the padding index dimensions, the sizes right
alignment crops, its support tables level by level), its explanation, HTML and DirectML JSON
forms, its fixtures' errata, its index rules and checked mode, jit / vmap / grad on
hand-written cases, the lowering's form, and the NumPy reference on hand-written cases and
against np.take. What every operator shares (the tensor layer, the fixtures through every
path, the property tests against the reference, the fuzzed descriptors) is tested in the
cross-cutting files under tests/.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import DmlValidationError, TensorDesc
from dml_jax._src import conformance, reference
from dml_jax._src.fixtures import get_fixture
from tests import sharding_cases, strategies
from tests.helpers import (
  CROSS_CHECK_SEEDS,
  assert_bits_equal,
  assert_rejected,
  assert_valid,
  explain_section,
  fields_of,
  numpy_normalize,
  parse_html,
  random_data,
  random_indices,
  random_shape,
)

T = dml.TensorDesc


def _desc(input_sizes, indices_sizes, axis, count, data="FLOAT32", index="UINT32", **output):
  return dml.GatherDesc(
    T(data, input_sizes), T(index, indices_sizes), axis=axis, index_dimensions=count, **output
  )


# =========================================================================== #
# Validation
# =========================================================================== #


@pytest.mark.parametrize("count", [4, 9, -1])
def test_index_dimensions_in_0_to_n(count):
  desc = _desc((1, 3, 4), (1, 1, 2), 1, count)
  assert_rejected(
    desc,
    "6_4",
    "IndexDimensions",
    "must be in [0, IndicesTensor.DimensionCount] = [0, 3]",
    str(count),
  )
  assert desc.infer_output() is None


@pytest.mark.parametrize(
  "indices_sizes, count, expected",
  [((1, 1, 1), 0, (1, 1, 4)), ((1, 1, 2), 3, (1, 2, 4)), ((1, 1, 2), None, (1, 2, 4))],
)
def test_index_dimensions_0_and_n_are_both_valid(indices_sizes, count, expected):
  # The documented range, [0, IndicesTensor.DimensionCount), would refuse n, which the
  # page's first example uses; None is n.
  desc = _desc((1, 3, 4), indices_sizes, 1, count)
  assert_valid(desc, "6_4")
  assert desc.output.sizes == expected
  assert desc.index_dimensions == (3 if count is None else count)


def test_leading_index_dimensions_must_be_1():
  # Indices {3,2} with IndexDimensions 1: DirectML was seen to accept it, two devices disagreed.
  desc = _desc((1, 5), (3, 2), 1, 1)
  assert_rejected(
    desc,
    "6_4",
    "IndicesTensor.Sizes",
    "dimensions before the trailing 1 meaningful ones must be 1",
    "{3,2}",
    hint="dml_jax refuses them. Raise IndexDimensions to 2",
  )
  assert _desc((1, 5), (3, 2), 1, 2).output.sizes == (3, 2)


@pytest.mark.parametrize(
  "input_sizes, indices_sizes, axis, count, logical, cropped, remedy",
  [
    # the page's example 3 as printed
    ((3, 2), (1, 2), 1, 2, "{3,1,2}", (3,), "IndexDimensions 1 fits these tensors"),
    # an index size among the cropped ones
    ((1, 3, 2), (1, 2, 2), 0, 3, "{1,2,2,3,2}", (1, 2), "No lower IndexDimensions fits"),
    # an input size before Axis, and indices no lower count fits
    ((2, 1, 3, 4), (1, 3, 2, 2), 2, 3, "{2,1,3,2,2,4}", (2, 1), "No lower IndexDimensions fits"),
    # IndexDimensions 2 would not fit either, 1 does
    ((2, 3, 4), (1, 1, 5), 1, 3, "{2,1,1,5,4}", (2, 1), "IndexDimensions 1 fits these tensors"),
  ],
)
def test_only_leading_1s_may_be_cropped(
  input_sizes, indices_sizes, axis, count, logical, cropped, remedy
):
  desc = _desc(input_sizes, indices_sizes, axis, count)
  n = len(input_sizes)
  error = assert_rejected(
    desc,
    "6_4",
    "OutputTensor.DimensionCount",
    "the logical output InputTensor.Sizes[:Axis] ++ IndicesTensor.Sizes[n - IndexDimensions:] ++"
    f" InputTensor.Sizes[Axis + 1:] = {logical} has {n - 1 + count} dimensions; right-aligned"
    f" into DimensionCount {n}, only leading 1s may be cropped, and its first {count - 1} size(s)"
    " must be 1",
    "{" + ",".join(map(str, cropped)) + "}",
    hint="DirectML has been seen to accept such descriptors, with results that differ between"
    f" devices; dml_jax refuses them. {remedy}",
  )
  assert fields_of(desc, "6_4") == ["OutputTensor.DimensionCount"]
  assert error.violations[0].value == cropped
  with pytest.raises(DmlValidationError, match=r"OutputTensor\.DimensionCount"):
    desc.output  # noqa: B018  (no output can be inferred: the property raises)
  with pytest.raises(AssertionError, match="only leading 1s may be cropped"):
    reference.gather_output_sizes(input_sizes, indices_sizes, axis=axis, index_dimensions=count)


def test_axis_in_0_to_n_and_equal_ranks():
  assert_rejected(
    _desc((3, 4), (1, 2), 2, None), "6_4", "Axis", "must be in [0, DimensionCount) = [0, 2)", "2"
  )
  assert_rejected(
    _desc((3, 4), (2,), 0, 1),
    "6_4",
    "IndicesTensor.DimensionCount",
    "must equal InputTensor.DimensionCount (2); pad lower-rank tensors with leading 1s",
    "1",
  )


def test_a_given_output_has_the_right_aligned_sizes_and_the_input_type():
  args = (1, 3, 2), (1, 2, 2), 1, 2, "FLOAT16", "INT64"
  assert_valid(_desc(*args, output_tensor=T("FLOAT16", (2, 2, 2))), "6_4")
  assert_rejected(
    _desc(*args, output_tensor=T("FLOAT16", (1, 2, 2, 2))),  # the logical rank, not aligned
    "6_4",
    "OutputTensor.DimensionCount",
    "must equal InputTensor.DimensionCount (3)",
    "4",
  )
  assert_rejected(
    _desc(*args, output_tensor=T("FLOAT16", (2, 2, 1))),
    "6_4",
    "OutputTensor.Sizes",
    "must be exactly {2,2,2}",
    "{2,2,1}",
  )
  assert_rejected(
    _desc(*args, output_tensor=T("INT64", (2, 2, 2))),
    "6_4",
    "OutputTensor.DataType",
    "must equal InputTensor.DataType (FLOAT16)",
    "INT64",
  )


@pytest.mark.parametrize(
  "input_sizes, indices_sizes, axis, count, expected",
  [
    ((4,), (5,), 0, 1, (5,)),  # example 1
    ((3, 2), (1, 4), 0, 1, (4, 2)),  # example 2
    ((1, 3, 3), (1, 1, 2), 2, 2, (3, 1, 2)),  # example 4: {1,3,1,2}, one 1 cropped
    ((3, 2), (1, 1), 1, 0, (1, 3)),  # a scalar index: the axis is dropped, a 1 added
    ((1, 1, 5, 6), (1, 2, 3, 4), 2, 3, (2, 3, 4, 6)),  # {1,1,2,3,4,6}: two 1s cropped
    ((2, 3, 4), (1, 1, 5), 2, 1, (2, 3, 5)),  # the last axis
  ],
)
def test_output_sizes(input_sizes, indices_sizes, axis, count, expected):
  desc = _desc(input_sizes, indices_sizes, axis, count, data="INT8")
  assert_valid(desc, "6_4")
  assert desc.output == T("INT8", expected)
  sizes = reference.gather_output_sizes(
    input_sizes, indices_sizes, axis=axis, index_dimensions=count
  )
  assert sizes == expected


# -- the support tables, level by level --------------------------------------------------


def test_fl_1_0_and_2_0_take_4_d_float_data_and_uint32_indices():
  for level in ("1_0", "2_0"):
    assert_valid(_desc((1, 1, 3, 2), (1, 1, 1, 4), 2, 1, data="FLOAT16"), level)
    assert_rejected(
      _desc((1, 1, 3, 2), (1, 1, 1, 4), 2, 1, data="INT8"),
      level,
      "InputTensor.DataType",
      "must be one of FLOAT32, FLOAT16 for DML_OPERATOR_GATHER",
      "INT8",
      hint="INT8 is supported here from FL 2_1",
    )
    assert_rejected(
      _desc((3, 2), (1, 4), 0, 1),
      level,
      "InputTensor.DimensionCount",
      "DML_OPERATOR_GATHER supports 4 dimensions",
      "2",
      hint="2 dimensions are supported from FL 3_0",
    )


def test_fl_2_1_adds_integer_data_and_keeps_4_d_uint32_indices():
  assert_valid(_desc((1, 1, 3, 2), (1, 1, 1, 4), 2, 1, data="UINT8"), "2_1")
  assert_rejected(
    _desc((1, 1, 3, 2), (1, 1, 1, 4), 2, 1, index="INT32"),
    "2_1",
    "IndicesTensor.DataType",
    "must be one of UINT32",
    "INT32",
    hint="negative (signed) indices need FL >= 3_0",
  )


def test_fl_3_0_takes_1_to_8_d_and_every_index_type_and_fl_4_1_64_bit_data():
  for index in ("INT32", "INT64", "UINT32", "UINT64"):
    assert_valid(_desc((4,), (5,), 0, 1, index=index), "3_0")
  assert_valid(_desc((1,) * 7 + (4,), (1,) * 8, 7, 8), "3_0")
  assert_rejected(
    _desc((4,), (5,), 0, 1, data="FLOAT64"),
    "3_0",
    "InputTensor.DataType",
    "must be one of",
    "FLOAT64",
    hint="FLOAT64 is supported here from FL 4_1",
  )
  for data in ("FLOAT64", "INT64", "UINT64"):
    assert_valid(_desc((4,), (5,), 0, 1, data=data), "4_1")


def test_functional_gather_validates_like_the_descriptor():
  x, i = np.zeros((3, 2), np.float32), np.zeros((1, 2), np.uint32)
  with pytest.raises(DmlValidationError) as info:
    dml.gather(x, i, axis=1, index_dimensions=2)  # example 3 as printed
  assert info.value.violations == _desc((3, 2), (1, 2), 1, 2).violations()
  old = dml.gather(x, i, axis=1, index_dimensions=1, feature_level="2_1")  # read at 4-D
  assert_bits_equal(old, dml.gather(x, i, axis=1, index_dimensions=1))
  with pytest.raises(DmlValidationError, match=r"InputTensor\.DimensionCount"):
    dml.gather(x[None, None, None], i[None, None, None], axis=4, feature_level="2_1")
  with pytest.raises(TypeError, match="IndexDimensions must be an integer"):
    dml.gather(x, i, axis=1, index_dimensions=1.0)
  with pytest.raises(TypeError, match="IndicesTensor must have an integer dtype"):
    dml.gather(x, i.astype(np.float32), axis=1)


# =========================================================================== #
# Explanation, HTML, DirectML's JSON form, fixtures
# =========================================================================== #


def test_sizes_are_derived_step_by_step():
  desc = conformance.descriptor_for(get_fixture("gather/example-4-nested-axis-2"))
  assert explain_section(dml.explain(desc), "Output:")[:6] == [
    "n = DimensionCount = 3; Axis = 2; q = IndexDimensions = 2.",
    "Logical indices J = IndicesTensor.Sizes[n - q:] = {1,2} (the 1 leading size(s) before it"
    " must be 1): 2 index(es) into InputTensor.Sizes[2] = 3.",
    "Logical output = InputTensor.Sizes[:Axis] ++ J ++ InputTensor.Sizes[Axis + 1:] = {1,3} ++"
    " {1,2} ++ {} = {1,3,1,2} (n - 1 + q = 4 dimension(s)).",
    "Right-aligned into n = 3 dimensions with the leading 1 size(s) {1} cropped (all 1):"
    " OutputTensor.Sizes = {3,1,2}.",
    "out[a, j, b] = InputTensor[a, IndicesTensor[j], b] (a: the dimensions before Axis, j: a"
    " logical index position, b: the dimensions after Axis): each index copies a whole slice"
    " of 3 element(s).",
    "OutputTensor.DataType = InputTensor.DataType = FLOAT32 (not the index type UINT32).",
  ]


def test_explanation_of_padding_plain_and_impossible_outputs():
  scalar = explain_section(dml.explain(_desc((3, 2), (1, 1), 1, 0)), "Output:")
  assert scalar[3] == (
    "Right-aligned into n = 2 dimensions with 1 leading 1(s) added: OutputTensor.Sizes = {1,3}."
  )
  rows = explain_section(dml.explain(_desc((3, 2), (1, 4), 0, 1)), "Output:")
  assert rows[3] == "Right-aligned into n = 2 dimensions as it is: OutputTensor.Sizes = {4,2}."
  printed = explain_section(dml.explain(_desc((3, 2), (1, 2), 1, 2)), "Output:")
  assert printed[-1] == (
    "Right-aligning it into n = 2 dimensions would crop {3}, which are not all 1: no output."
  )
  unfit = explain_section(dml.explain(_desc((3, 2), (1, 2), 1, 3)), "Output:")
  assert unfit[-1] == (
    "The ranks, Axis or IndexDimensions do not fit the tensors: no output can be inferred."
  )


def test_html_and_from_dml_name_directml_fields():
  desc = _desc((1, 3, 2), (1, 2, 2), 1, 2)
  markup = desc._repr_html_()
  assert "(DML_GATHER_OPERATOR_DESC)" in markup
  attributes = parse_html(markup).tables[1]
  assert [row[0] for row in attributes[1:]] == ["Axis", "IndexDimensions"]
  document = {
    "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 3, 2]},
    "IndicesTensor": {"DataType": "UINT32", "Sizes": [1, 2, 2]},
    "OutputTensor": {"DataType": "FLOAT32", "Sizes": [2, 2, 2]},
    "Axis": 1,
    "IndexDimensions": 2,
  }
  given = dataclasses.replace(desc, output_tensor=T("FLOAT32", (2, 2, 2)))
  assert dml.GatherDesc.from_dml(document) == given
  del document["IndexDimensions"], document["OutputTensor"]
  assert dml.GatherDesc.from_dml(document).index_dimensions == 3  # absent: the indices' rank


def test_fixtures_record_the_pages_slips():
  example_3 = get_fixture("gather/example-3-swap-columns")
  assert example_3.params == {"axis": 1, "index_dimensions": 1}
  assert any("IndexDimensions 2" in e.issue for e in example_3.errata)
  assert any(
    "IndicesTensor.DimensionCount)" in e.issue
    for e in get_fixture("gather/example-1-1d-remapping").errata
  )
  for ident, heading, axis in (
    ("example-4-nested-axis-2", 1, 2),
    ("example-5-nested-axis-1", 0, 1),
  ):
    fixture = get_fixture(f"gather/{ident}")
    assert fixture.params["axis"] == axis
    assert [e.issue for e in fixture.errata if f"heading names Axis {heading}" in e.issue]
  assert not get_fixture("gather/example-2-rows").errata


# =========================================================================== #
# Index rules, checked mode
# =========================================================================== #

X = np.array([10, 11, 12, 13], np.float32)


@pytest.mark.parametrize(
  "dtype, values, expected",
  [
    (np.int32, [-1, -4, -5, 4, -(2**31), 2**31 - 1], [13, 10, 10, 13, 10, 13]),
    (np.uint32, [2**32 - 1, 2**32 - 4, 3, 4], [13, 13, 13, 13]),  # never wrap to -1 or -4
  ],
)
def test_negative_indices_for_signed_types_only_and_clamping(dtype, values, expected):
  out = dml.gather(X, np.array(values, dtype), axis=0)
  assert_bits_equal(out, np.array(expected, np.float32))


@pytest.mark.parametrize(
  "dtype, value, element",
  [
    (np.int64, 2**32 + 1, 3),  # 1 if truncated to 32 bits
    (np.int64, -(2**32) + 1, 0),
    (np.int64, -(2**63), 0),
    (np.uint64, 2**64 - 2, 3),
    (np.uint64, 2**32, 3),
  ],
)
def test_64_bit_indices_are_clamped_in_their_own_width(x64, dtype, value, element):
  table = np.arange(12, dtype=np.int16).reshape(4, 3)
  index = np.array([[value]], dtype)
  for fn in (dml.gather, jax.jit(dml.gather, static_argnames=("axis", "index_dimensions"))):
    assert_bits_equal(fn(table, index, axis=0, index_dimensions=1), table[[element]])


def test_checked_mode_reports_the_first_out_of_range_index_inside_jit():
  x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  f = jax.jit(lambda x, i: dml.gather(x, i, axis=1, index_dimensions=1))
  fine = np.array([[[0, -3, 2]]], np.int32)
  assert_bits_equal(dml.checked(f)(x, fine), x[:, [0, 0, 2]])
  with pytest.raises(
    dml.DmlIndexError,
    match=r"^dml\.GATHER: IndicesTensor\[0, 0, 2\] = 3 is out of range for"
    r" InputTensor\.Sizes\[1\] = 3 \(signed indices must be in \[-3, 3\)\)$",
  ):
    dml.checked(f)(x, np.array([[[0, -3, 3]]], np.int32))
  # The natural reading pads (1, 2) indices to (1, 1, 2): positions are DirectML's.
  with pytest.raises(dml.DmlIndexError, match=r"IndicesTensor\[0, 0, 1\] = 4294967295 .*unsign"):
    dml.checked(lambda t, i: dml.gather(t, i, axis=0))(x[0], np.array([[1, 2**32 - 1]], np.uint32))
  assert_bits_equal(f(x, np.array([[[0, -3, 3]]], np.int32)), x[:, [0, 0, 2]])  # clamped


# =========================================================================== #
# jit, vmap, grad
# =========================================================================== #


def test_vmap_over_inputs_indices_or_both():
  rng = np.random.default_rng(0)
  xs = rng.standard_normal((3, 2, 5, 4)).astype(np.float32)
  idx = np.array([[[[4, -1, 0]]], [[[2, 2, 9]]], [[[-6, 1, 3]]]], np.int32)  # (3, 1, 1, 3)
  f = lambda x, i: dml.gather(x, i, axis=1, index_dimensions=1)
  ref = lambda x, i: reference.gather(x, i, axis=1, index_dimensions=1)
  assert_bits_equal(
    jax.vmap(f)(xs, idx), np.stack([ref(x, i) for x, i in zip(xs, idx, strict=True)])
  )
  assert_bits_equal(
    jax.jit(jax.vmap(f, in_axes=(None, 0)))(xs[0], idx), np.stack([ref(xs[0], i) for i in idx])
  )
  assert_bits_equal(
    jax.vmap(f, in_axes=(0, None))(xs, idx[1]), np.stack([ref(x, idx[1]) for x in xs])
  )


@pytest.mark.parametrize("jit", [False, True])
def test_grad_wrt_input_adds_up_the_rows_each_index_reads(jit):
  x = np.arange(6, dtype=np.float32).reshape(3, 2)
  i = np.array([[0, 2, 2, -1, 7]], np.int32)  # -1 and 7 read row 2 too
  w = np.arange(1, 11, dtype=np.float32).reshape(5, 2)
  grad = jax.grad(lambda x: jnp.sum(dml.gather(x, i, axis=0, index_dimensions=1) * w))
  got = (jax.jit(grad) if jit else grad)(x)
  assert_bits_equal(got, np.array([[1, 2], [0, 0], [3 + 5 + 7 + 9, 4 + 6 + 8 + 10]], np.float32))


def test_grad_of_a_middle_axis_and_of_a_scalar_index():
  x = np.zeros((2, 3, 2), np.float32)
  columns = jax.grad(
    lambda x: jnp.sum(dml.gather(x, np.array([[[1, 1]]], np.uint32), axis=1, index_dimensions=1))
  )
  expected = np.zeros((2, 3, 2), np.float32)
  expected[:, 1] = 2
  assert_bits_equal(columns(x), expected)
  scalar = jax.grad(
    lambda x: jnp.sum(dml.gather(x, np.array([[[-1]]], np.int64), axis=2, index_dimensions=0))
  )
  expected = np.zeros((2, 3, 2), np.float32)
  expected[..., 1] = 1
  assert_bits_equal(scalar(x), expected)


# =========================================================================== #
# The lowering's form
# =========================================================================== #


def _gathers(fn, *args):
  jaxpr = jax.make_jaxpr(fn)(*args)
  found = []
  stack = [jaxpr.jaxpr]
  while stack:
    for eqn in stack.pop().eqns:
      if eqn.primitive.name == "gather":
        found.append(eqn)
      for param in eqn.params.values():
        for inner in param if isinstance(param, tuple) else (param,):  # cond's branches
          inner = getattr(inner, "jaxpr", None)
          if inner is not None:
            stack.append(getattr(inner, "jaxpr", inner))
  return found


def test_an_embedding_lookup_is_one_gather_of_whole_rows():
  """The lax path: one gather (the CPU's native row kernel, where it runs, is another branch)."""
  table, ids = np.zeros((64, 8, 4), np.float32), np.zeros((1, 1, 35), np.int32)
  (gather,) = _gathers(lambda t, i: dml.gather(t, i, axis=0, index_dimensions=1), table, ids)
  assert gather.invars[0].aval.shape == (64, 32)  # the rows, flattened
  assert gather.params["slice_sizes"] == (1, 32)
  assert gather.params["mode"] == jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS  # clamped first


def test_a_middle_axis_is_one_gather_of_whole_slices():
  x, i = np.zeros((2, 3, 5, 4), np.float16), np.zeros((1, 1, 1, 6), np.uint32)
  (gather,) = _gathers(lambda x, i: dml.gather(x, i, axis=2, index_dimensions=1), x, i)
  assert gather.invars[0].aval.shape == (6, 5, 4)
  assert gather.params["slice_sizes"] == (6, 1, 4)


# =========================================================================== #
# The reference: pinned cases and cross-checks against plain NumPy
# =========================================================================== #


class TestReference:
  """reference.gather on hand-written cases."""

  def test_nested_indices_and_cropping(self) -> None:
    data = np.arange(1, 7, dtype=np.float32).reshape(1, 3, 2)
    indices = np.array([[[0, 1], [1, 2]]], np.uint32)
    actual = reference.gather(data, indices, axis=1, index_dimensions=2)
    assert_bits_equal(actual, np.array([[[1, 2], [3, 4]], [[3, 4], [5, 6]]], np.float32))

  def test_scalar_index_adds_a_leading_1(self) -> None:
    data = np.arange(6, dtype=np.uint16).reshape(2, 3)
    actual = reference.gather(data, np.array([[-2]], np.int64), axis=1, index_dimensions=0)
    assert_bits_equal(actual, np.array([[1, 4]], np.uint16))

  def test_out_of_range_and_unsigned(self) -> None:
    data = np.arange(6, dtype=np.int8).reshape(3, 2)
    actual = reference.gather(
      data, np.array([[2**32 - 1, 5, 0]], np.uint32), axis=0, index_dimensions=1
    )
    assert_bits_equal(actual, np.array([[4, 5], [4, 5], [0, 1]], np.int8))

  def test_non_1_leading_index_dims_are_refused(self) -> None:
    with pytest.raises(AssertionError):
      reference.gather(np.zeros((4, 5)), np.zeros((3, 2), np.int32), axis=0, index_dimensions=1)


@pytest.mark.parametrize("seed", CROSS_CHECK_SEEDS)
def test_gather_matches_np_take(seed: int) -> None:
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 6))
  axis = int(rng.integers(rank))
  count = int(rng.integers(0, rank + 1))
  shape = list(random_shape(rng, rank))
  logical_indices = list(random_shape(rng, count, high=3))
  for k in range(max(count - 1, 0)):  # what right alignment crops must be 1
    if k < axis:
      shape[k] = 1
    else:
      logical_indices[k - axis] = 1
  data = random_data(rng, tuple(shape))
  indices = random_indices(rng, tuple(logical_indices), shape[axis])
  taken = np.take(data, numpy_normalize(indices, shape[axis]), axis=axis)
  aligned = ((1,) * rank + taken.shape)[taken.ndim :]
  padded = indices.reshape((1,) * (rank - count) + indices.shape)
  actual = reference.gather(data, padded, axis=axis, index_dimensions=count)
  assert_bits_equal(actual, taken.reshape(aligned))


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def gather_case(draw):
  """GATHER: q = IndexDimensions in [0, n], leading index dims 1, and the logical output's
  sizes that right alignment crops (its first q - 1) set to 1."""
  level = draw(strategies.levels("GATHER"))
  table = strategies.table_at(dml.GatherDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  index_type = draw(st.sampled_from(table["IndicesTensor"].data_types))
  axis = draw(st.integers(0, n - 1))
  q = draw(st.integers(0, n))
  sizes = list(strategies.draw_sizes(draw, n, max_elements=48))
  logical_indices = list(strategies.draw_sizes(draw, q, max_elements=8))
  for k in range(max(q - 1, 0)):  # the cropped sizes: input sizes before the axis, then J's
    if k < axis:
      sizes[k] = 1
    else:
      logical_indices[k - axis] = 1
  sizes, index_sizes = tuple(sizes), (1,) * (n - q) + tuple(logical_indices)
  x = strategies.draw_data(draw, data_type, sizes)
  i = strategies.draw_indices(draw, index_type, index_sizes, lambda pos: sizes[axis])
  # None is the default count (n); pass it that way now and then.
  count = None if q == n and draw(st.booleans()) else q
  desc = dml.GatherDesc(
    TensorDesc(data_type, sizes),
    TensorDesc(index_type, index_sizes),
    axis=axis,
    index_dimensions=count,
  )
  return strategies.Case(
    desc,
    level,
    [x, i],
    # Through the functional API with the count set: unset, it reads the call as np.take.
    lambda x, i, level: dml.gather(x, i, axis=axis, index_dimensions=q, feature_level=level),
    lambda: reference.gather(x, i, axis=axis, index_dimensions=count),
  )


def gather_mutations(desc, level, draw):
  """GATHER's own rules: IndexDimensions, the indices' rank and leading sizes, crops."""
  n, q, axis = desc.input_tensor.dimension_count, desc.index_dimensions, desc.axis
  indices = desc.indices_tensor
  yield (
    "index dimensions",
    strategies.rebuild(desc, {"index_dimensions": draw(st.sampled_from([n + 1, n + 2, -1]))}),
    "IndexDimensions",
  )
  yield (
    "rank mismatch",
    strategies.rebuild(
      desc, {"indices_tensor": strategies.replace_tensor(indices, sizes=(1,) + indices.sizes)}
    ),
    "IndicesTensor.DimensionCount",
  )
  if q < n:  # a leading (padding) index dimension that is not 1
    sizes = list(indices.sizes)
    sizes[draw(st.integers(0, n - q - 1))] = 2
    yield (
      "leading index size",
      strategies.rebuild(
        desc, {"indices_tensor": strategies.replace_tensor(indices, sizes=tuple(sizes))}
      ),
      "IndicesTensor.Sizes",
    )
  if q >= 2:  # the first size that right alignment crops is not 1
    if axis > 0:
      data = desc.input_tensor
      changes = {"input_tensor": strategies.replace_tensor(data, sizes=(2,) + data.sizes[1:])}
    else:
      sizes = list(indices.sizes)
      sizes[n - q] = 2
      changes = {"indices_tensor": strategies.replace_tensor(indices, sizes=tuple(sizes))}
    yield "cropped size", strategies.rebuild(desc, changes), "OutputTensor.DimensionCount"


def gather_cases(n, rng):
  cases = []
  x = rng.standard_normal((n, 2 * n, n)).astype(np.float32)
  ids = rng.integers(-2 * n - 2, 2 * n + 2, (1, 1, 3 * n)).astype(np.int32)

  def dml_gather(x, i):
    return dml.gather(x, i, axis=1, index_dimensions=1)

  def jnp_gather(x, i):
    return jnp.take(x, sharding_cases.normalized(i.reshape(-1), x.shape[1]), axis=1)

  want = reference.gather(x, ids, axis=1, index_dimensions=1)
  for shard, id_shard in ((0, None), (1, None), (None, 2), (0, 2), (2, 2)):
    cases.append(
      sharding_cases.Case(
        "GATHER",
        f"along axis 1, input sharded on axis {shard}, indices on axis {id_shard}",
        dml_gather,
        jnp_gather,
        [(x, shard), (ids, id_shard)],
        want,
      )
    )
  # Rows of a table by ids sharded over the devices (an embedding lookup).
  table = rng.standard_normal((2 * n, 8)).astype(np.float32)
  row_ids = rng.integers(-2 * n, 2 * n, (1, 4 * n)).astype(np.int32)
  for shard, id_shard in ((None, 1), (0, 1), (1, 1)):
    cases.append(
      sharding_cases.Case(
        "GATHER",
        f"rows, table sharded on axis {shard}, ids on axis {id_shard}",
        lambda t, i: dml.gather(t, i, axis=0, index_dimensions=1),
        lambda t, i: jnp.take(t, sharding_cases.normalized(i.reshape(-1), t.shape[0]), axis=0),
        [(table, shard), (row_ids, id_shard)],
        reference.gather(table, row_ids, axis=0, index_dimensions=1),
      )
    )
  return cases


VALID = {"GATHER": gather_case}
MUTANTS = {"GATHER": gather_mutations}
SHARDED_CASES = gather_cases
TRACING_CALLS = {
  "gather": lambda k: dml.gather(
    jnp.full((3, 5), k, jnp.float32), jnp.full((1, 4), -k, jnp.int32), axis=1, index_dimensions=1
  ),
}
BFLOAT16_CALLS = {"gather": lambda x: dml.gather(x, np.array([[3, 0], [0, 2]], np.int32), axis=0)}
