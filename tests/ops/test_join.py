"""JOIN: the operator's own rules and pinned cases, and its CPU lowering.

Its validation rules (InputCount, one data type, the sizes off the axis), its explanation
and HTML form, the NumPy reference on hand-written cases and against np.concatenate, and
its CPU lowering: views joined where XLA:CPU would copy on one thread, bit for bit. What
every operator shares (the tensor layer, the support tables, the fixtures, the property
tests against the reference) is tested in the cross-cutting files under tests/.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st
from jax import lax

import dml_jax as dml
from dml_jax import DataType, DmlValidationError, TensorDesc
from dml_jax._src import reference
from dml_jax._src.ops import join as join_op
from tests import sharding_cases, strategies
from tests.helpers import (
  ALL_DTYPES,
  CROSS_CHECK_SEEDS,
  assert_bits_equal,
  assert_rejected,
  assert_valid,
  braces,
  explain_section,
  in_turn,
  parse_html,
  random_shape,
  violation_pattern,
)

T = dml.TensorDesc

# =========================================================================== #
# Validation
# =========================================================================== #


def test_join_needs_at_least_one_input():
  error = assert_rejected(
    dml.JoinDesc((), axis=0), "6_4", "InputCount", "must be > 0 (at least one input)", "0"
  )
  assert len(error.violations) == 1


@pytest.mark.parametrize("count", [0, 1, 3])
def test_join_input_count_must_equal_the_number_of_inputs(count):
  desc = dml.JoinDesc((T("FLOAT32", (1, 1, 2, 3)),) * 2, axis=3, input_count=count)
  assert_rejected(
    desc, "6_4", "InputCount", "must equal the number of InputTensors (2)", str(count)
  )
  assert dml.JoinDesc((T("FLOAT32", (1, 1, 2, 3)),) * 2, axis=3).input_count == 2


@pytest.mark.parametrize("index, other", [(1, "INT32"), (2, "FLOAT16")])
def test_join_inputs_must_share_the_data_type(index, other):
  tensors = [T("FLOAT32", (1, 1, 2, 3))] * 3
  tensors[index] = T(other, (1, 1, 2, 3))
  assert_rejected(
    dml.JoinDesc(tuple(tensors), axis=3),
    "6_4",
    f"InputTensors[{index}].DataType",
    "must equal InputTensors[0].DataType (FLOAT32); JOIN never converts types",
    other,
    hint="jnp.concatenate",
  )


@pytest.mark.parametrize(
  "second, axis, dimension",
  [((1, 1, 3, 3), 3, 2), ((1, 2, 2, 5), 3, 1), ((2, 1, 2, 3), 2, 0)],
)
def test_join_sizes_must_agree_off_axis(second, axis, dimension):
  desc = dml.JoinDesc((T("FLOAT32", (1, 1, 2, 3)), T("FLOAT32", second)), axis=axis)
  assert_rejected(
    desc,
    "6_4",
    "InputTensors[1].Sizes",
    f"must equal InputTensors[0].Sizes {{1,1,2,3}} in every dimension but Axis ({axis});"
    f" dimension {dimension} differs",
    braces(second),
  )


def test_join_single_input_is_a_copy():
  desc = dml.JoinDesc((T("INT16", (1, 1, 2, 3)),), axis=1)
  assert_valid(desc, "1_0")
  assert desc.output == T("INT16", (1, 1, 2, 3))


def test_functional_join_validates_like_the_descriptor():
  with pytest.raises(
    DmlValidationError,
    match=violation_pattern(
      "InputTensors[0].DataType", "for DML_OPERATOR_JOIN", "INT8", "1_0", "from FL 2_1"
    ),
  ):
    dml.join([np.zeros((1, 1, 1, 2), np.int8)] * 2, axis=3, feature_level="1_0")
  with pytest.raises(
    DmlValidationError,
    match=violation_pattern(
      "InputTensors[1].DataType", "JOIN never converts types", "INT8", "6_4", "jnp.concatenate"
    ),
  ):
    dml.join([np.zeros((1, 2), np.float32), np.zeros((1, 2), np.int8)], axis=0)
  with pytest.raises(
    DmlValidationError, match=violation_pattern("InputCount", "must be > 0", "0", "6_4")
  ):
    dml.join([], axis=0)


# =========================================================================== #
# Explanation and HTML
# =========================================================================== #


def test_join_explains_the_summed_axis_and_where_each_input_lands():
  desc = dml.JoinDesc((T("UINT16", (2, 3)), T("UINT16", (2, 4)), T("UINT16", (2, 1))), axis=1)
  assert explain_section(dml.explain(desc), "Output:") == [
    "OutputTensor.Sizes = InputTensors[0].Sizes with Axis 1 replaced by 3 + 4 + 1 = 8: {2,8}.",
    "Along Axis 1: InputTensors[0] -> [0, 3), InputTensors[1] -> [3, 7),"
    " InputTensors[2] -> [7, 8).",
    "OutputTensor.DataType = InputTensors[0].DataType = UINT16; every input must have it (JOIN"
    " never converts; jnp.concatenate would promote).",
  ]
  single = dml.JoinDesc((T("UINT16", (2, 3)),), axis=0)
  assert (
    explain_section(dml.explain(single), "Output:")[-1] == "A single input: the output is a copy."
  )


def test_join_html_lists_every_input_and_an_output_that_cannot_be_inferred():
  desc = dml.JoinDesc((dml.TensorDesc("INT8", (1, 2)), dml.TensorDesc("INT8", (2,))), axis=0)
  tensors = parse_html(desc._repr_html_()).tables[0]
  assert [row[0] for row in tensors[1:]] == ["InputTensors[0]", "InputTensors[1]", "OutputTensor"]
  assert tensors[-1][:4] == ["OutputTensor", "output (inferred)", "-", "cannot be inferred"]
  given = dml.JoinDesc(
    (dml.TensorDesc("INT8", (2,)),), axis=0, output_tensor=dml.TensorDesc("INT8", (2,))
  )
  assert parse_html(given._repr_html_()).tables[0][-1][:2] == ["OutputTensor", "output"]


# =========================================================================== #
# The reference: pinned cases and cross-checks against plain NumPy
# =========================================================================== #


class TestReference:
  """reference.join on hand-written cases pinned from the spec."""

  @pytest.mark.parametrize("dtype", [np.int8, np.float16, np.uint64])
  def test_single_input_is_a_copy_with_same_dtype(self, dtype: type) -> None:
    data = np.array([[1, 2, 3], [4, 5, 6]], dtype=dtype)
    actual = reference.join([data], axis=1)
    assert_bits_equal(actual, data)
    assert not np.shares_memory(actual, data)

  def test_unequal_axis_sizes(self) -> None:
    a = np.array([[1], [2]], np.int32)
    b = np.array([[3, 4, 5], [6, 7, 8]], np.int32)
    c = np.array([[9, 10], [11, 12]], np.int32)
    actual = reference.join([a, b, c], axis=1)
    expected = np.array([[1, 3, 4, 5, 9, 10], [2, 6, 7, 8, 11, 12]], np.int32)
    assert_bits_equal(actual, expected)

  def test_64_bit_values_survive(self) -> None:
    a = np.array([2**64 - 1], np.uint64)
    b = np.array([2**63 + 1, 7], np.uint64)
    actual = reference.join((a, b), axis=0)
    assert_bits_equal(actual, np.array([2**64 - 1, 2**63 + 1, 7], np.uint64))

  def test_mismatches_are_rejected(self) -> None:
    a = np.zeros((2, 2), np.float32)
    with pytest.raises(AssertionError):
      reference.join([a, a.astype(np.float16)], axis=0)  # dtype
    with pytest.raises(AssertionError):
      reference.join([a, np.zeros((2, 3), np.float32)], axis=0)  # non-axis size
    with pytest.raises(AssertionError):
      reference.join([a, np.zeros((1, 2, 2), np.float32)], axis=0)  # rank
    with pytest.raises(AssertionError):
      reference.join([], axis=0)


@pytest.mark.parametrize("seed", CROSS_CHECK_SEEDS)
def test_join_matches_concatenate(seed: int) -> None:
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 5))
  shape = random_shape(rng, rank)
  axis = int(rng.integers(rank))
  dtype = ALL_DTYPES[rng.integers(len(ALL_DTYPES))]
  inputs = []
  for _ in range(int(rng.integers(1, 5))):
    piece_shape = shape[:axis] + (int(rng.integers(1, 4)),) + shape[axis + 1 :]
    inputs.append(rng.integers(0, 100, size=piece_shape).astype(dtype))

  expected = np.concatenate(inputs, axis=axis)
  assert_bits_equal(reference.join(inputs, axis=axis), expected)


# =========================================================================== #
# The CPU lowering
# =========================================================================== #


CASES = [  # (shape off the axis sizes, axis): flat, squeezed and plain forms
  ((5,), 0),
  ((3, 4), 0),
  ((3, 4), 1),
  ((1, 3, 4), 1),
  ((1, 2, 3, 4), 2),
  ((1, 1, 3, 4), 2),
  ((2, 1, 3, 4), 2),
  ((1, 2, 3, 4), 3),
]
# One integer type a width: _inputs draws the same bytes for int8 and uint8 (and so on), and
# joining copies them whatever their sign.
DTYPES = [np.int8, np.int16, np.int32, np.float16, np.float32]


def _inputs(shape, axis, count, dtype, rng):
  xs = []
  for i in range(count):
    sizes = list(shape)
    sizes[axis] = 1 + (sizes[axis] + i) % 3
    bits = rng.integers(0, 256, size=int(np.prod(sizes)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    xs.append(bits.view(dtype).reshape(sizes))  # every bit pattern, NaN payloads included
  return xs


# Every shape with every input count, each with one width in turn (the copies move bytes of
# a width whatever the shapes): 32 calls, not the 160 of the product.
@pytest.mark.parametrize(
  "dtype, case", in_turn(DTYPES, [(*c, count) for c in CASES for count in (1, 2, 3, 5)])
)
def test_cpu_join_is_bit_exact(dtype, case):
  shape, axis, count = case
  xs = _inputs(shape, axis, count, dtype, np.random.default_rng(count))
  want = np.concatenate(xs, axis)
  assert_bits_equal(dml.join(xs, axis=axis), want)
  assert_bits_equal(jax.jit(lambda *a: dml.join(a, axis=axis))(*xs), want)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, axis", CASES[:5])
def test_cpu_join_is_bit_exact_for_64_bit_types(shape, axis, dtype, x64):
  xs = _inputs(shape, axis, 3, dtype, np.random.default_rng(0))
  assert_bits_equal(dml.join(xs, axis=axis), np.concatenate(xs, axis))


@pytest.mark.parametrize("dtype", [np.bool_, jnp.bfloat16, np.float32], ids=str)
@pytest.mark.parametrize(
  "shapes, axis",
  [
    (((0, 3), (2, 3), (0, 3)), 0),
    (((1, 0, 3), (1, 2, 3)), 1),
    (((1, 2, 0), (1, 2, 0)), 1),
    (((0,), (4,), (1,)), 0),
    (((1, 2, 3),), 1),
  ],
)
def test_cpu_form_handles_empty_and_other_types(shapes, axis, dtype):
  # DirectML has no empty tensors, bool or bfloat16: the lowering itself must still be exact.
  rng = np.random.default_rng(1)
  xs = [(rng.standard_normal(s) * 40).astype(dtype) for s in shapes]
  got = jax.jit(lambda *a: join_op.join_on_cpu(*a, axis=axis))(*xs)
  assert_bits_equal(got, np.concatenate(xs, axis))


@pytest.mark.parametrize(
  "shape, axis, form",
  [
    ((2048,), 0, "flat"),
    ((64, 64), 0, "flat"),
    ((1, 64, 64), 1, "flat"),
    ((1, 4, 64, 64), 2, "squeezed"),
    ((64, 64), 1, None),
    ((2, 4, 64, 64), 1, None),
  ],
)
def test_cpu_form_choice(shape, axis, form):
  assert join_op.join_cpu_form(shape, 4, axis) == form
  assert join_op.join_cpu_form(shape, 1, axis) is None


_SPECIAL_BITS = np.array([0x7FC01234, 0x80000000, 0xFF800001, 0x00000001], np.uint32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint32], ids=str)
@pytest.mark.parametrize(
  "shapes, axis",
  [
    (((2, 3), (2, 1), (2, 4)), 1),
    (((3, 2, 5), (3, 4, 5)), 1),
    (((2, 3, 1), (2, 3, 2), (2, 3, 3), (2, 3, 1)), 2),
    (((4,), (3,)), 0),
    (((2, 2),), 1),
  ],
)
def test_join_by_select_is_bit_exact(shapes, axis, dtype):
  # NaN payloads, -0.0 and a denormal among the values: a select moves bits as they are.
  rng = np.random.default_rng(3)
  xs = []
  for shape in shapes:
    x = (rng.standard_normal(shape) * 40).astype(dtype)
    if np.dtype(dtype) == np.float32:
      x.reshape(-1)[: _SPECIAL_BITS.size] = _SPECIAL_BITS[: x.size].view(np.float32)
    xs.append(x)
  got = jax.jit(lambda *a: join_op.join_by_select(*a, axis=axis))(*xs)
  assert_bits_equal(got, np.concatenate(xs, axis))


def test_join_by_select_differentiates_as_concatenate():
  rng = np.random.default_rng(4)
  xs = [rng.standard_normal((3, k)).astype(np.float32) for k in (1, 2, 4)]
  weights = rng.standard_normal((3, 7)).astype(np.float32)
  loss = lambda *a: jnp.sum(join_op.join_by_select(*a, axis=1) * weights)
  reference_loss = lambda *a: jnp.sum(lax.concatenate(a, 1) * weights)
  for g, r in zip(
    jax.grad(loss, argnums=(0, 1, 2))(*xs),
    jax.grad(reference_loss, argnums=(0, 1, 2))(*xs),
    strict=True,
  ):
    assert_bits_equal(g, r)


def test_flat_form_compiles_to_one_fusion_without_a_branch():
  xs = [jnp.zeros((64, 64), jnp.float32)] * 4
  text = jax.jit(lambda *a: dml.join(a, axis=0)).lower(*xs).compile().as_text()
  entry = text[text.index("\nENTRY ") :]
  assert " fusion(" in entry and " concatenate(" not in entry
  assert "conditional" not in text


def test_cpu_form_under_vmap_and_grad():
  rng = np.random.default_rng(2)
  xs = [rng.standard_normal((3, 1, k, 4)).astype(np.float32) for k in (1, 2, 3)]
  got = jax.vmap(lambda *a: dml.join(a, axis=1))(*xs)
  assert_bits_equal(got, np.concatenate(xs, axis=2))
  weights = rng.standard_normal((1, 6, 4)).astype(np.float32)
  loss = lambda *a: jnp.sum(dml.join(a, axis=1) * weights)
  reference = lambda *a: jnp.sum(lax.concatenate(a, 1) * weights)
  for g, r in zip(
    jax.grad(loss, argnums=(0, 1, 2))(*(x[0] for x in xs)),
    jax.grad(reference, argnums=(0, 1, 2))(*(x[0] for x in xs)),
    strict=True,
  ):
    assert_bits_equal(g, np.asarray(r))


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def join_case(draw):
  level = draw(strategies.levels("JOIN"))
  table = strategies.table_at(dml.JoinDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputTensors"].data_types))
  sizes = strategies.draw_sizes(draw, n, max_elements=48)
  axis = draw(st.integers(0, n - 1))
  count = draw(st.integers(1, 4))
  shapes = [sizes[:axis] + (draw(st.integers(1, 3)),) + sizes[axis + 1 :] for _ in range(count)]
  xs = [strategies.draw_data(draw, data_type, s) for s in shapes]
  desc = dml.JoinDesc(tuple(TensorDesc(data_type, s) for s in shapes), axis=axis)
  return strategies.Case(
    desc,
    level,
    xs,
    lambda *args: dml.join(list(args[:-1]), axis=axis, feature_level=args[-1]),
    lambda: reference.join(xs, axis=axis),
  )


def join_mutations(desc, level, draw):
  """JOIN's own rules: no inputs, InputCount, mixed types, sizes off the axis."""
  yield "empty", dml.JoinDesc((), axis=0), "InputCount"
  yield (
    "input count",
    strategies.rebuild(desc, {"input_count": len(desc.input_tensors) + 1}),
    "InputCount",
  )
  first = desc.input_tensors[0]
  other = DataType.INT8 if first.data_type != DataType.INT8 else DataType.UINT8
  mixed = desc.input_tensors + (strategies.replace_tensor(first, data_type=other),)
  yield (
    "mixed types",
    strategies.rebuild(desc, {"input_tensors": mixed}),
    f"InputTensors[{len(mixed) - 1}].DataType",
  )
  n = first.dimension_count
  off = [d for d in range(n) if d != desc.axis]
  if off:
    d = draw(st.sampled_from(off))
    sizes = list(first.sizes)
    sizes[d] += 1
    extra = desc.input_tensors + (strategies.replace_tensor(first, sizes=tuple(sizes)),)
    yield (
      "off-axis sizes",
      strategies.rebuild(desc, {"input_tensors": extra}),
      f"InputTensors[{len(extra) - 1}].Sizes",
    )


def join_cases(n, rng):
  cases = []
  x = rng.standard_normal((n, 2 * n, n)).astype(np.float32)
  y = rng.standard_normal((n, n, n)).astype(np.float32)
  for shard in (0, 1, 2):
    cases.append(
      sharding_cases.Case(
        "JOIN",
        f"along axis 1, sharded on axis {shard}",
        lambda a, b: dml.join([a, b], axis=1),
        lambda a, b: jnp.concatenate([a, b], axis=1),
        [(x, shard), (y, shard)],
        reference.join([x, y], axis=1),
      )
    )
  # Along the first axis (XLA:CPU's "flat" form on one device), and along an axis after
  # leading 1s (its "squeezed" form).
  for shard in (0, 1, 2):
    cases.append(
      sharding_cases.Case(
        "JOIN",
        f"along axis 0, sharded on axis {shard}",
        lambda a, b: dml.join([a, b, a], axis=0),
        lambda a, b: jnp.concatenate([a, b, a], axis=0),
        [(x, shard), (x[::-1].copy(), shard)],
        reference.join([x, x[::-1], x], axis=0),
      )
    )
  # After leading 1s: 1-D views on one CPU device ("flat"), and the 1s dropped ("squeezed").
  flat = rng.standard_normal((1, n, 2 * n)).astype(np.float32)
  squeezed = rng.standard_normal((1, 2, 2 * n, n)).astype(np.float32)
  for x, axis, what in ((flat, 1, "1-D views"), (squeezed, 2, "leading 1 dropped")):
    for shard in range(axis, x.ndim):
      cases.append(
        sharding_cases.Case(
          "JOIN",
          f"along axis {axis} of {x.shape} ({what} on one CPU), sharded on axis {shard}",
          lambda a, b, axis=axis: dml.join([a, b], axis=axis),
          lambda a, b, axis=axis: jnp.concatenate([a, b], axis=axis),
          [(x, shard), (np.flip(x, axis).copy(), shard)],
          reference.join([x, np.flip(x, axis)], axis=axis),
        )
      )
  return cases


VALID = {"JOIN": join_case}
MUTANTS = {"JOIN": join_mutations}
SHARDED_CASES = join_cases
TRACING_CALLS = {
  "join": lambda k: dml.join([jnp.full((1, 5), k, jnp.int16), jnp.ones((2, 5), jnp.int16)], axis=0),
}
BFLOAT16_CALLS = {"join": lambda x: dml.join([x, x[:1]], axis=0)}
