"""SLICE_GRAD: the operator's own rules and pinned cases.

Its support tables (from 3_0 with 4 or 5 dimensions and data of up to 32 bits, 1 to 8
dimensions from 3_1, 64-bit data from 4_1), each rule with its wording (one offset, size and
stride per dimension, no zero stride, the windows inside the OutputGradientTensor, the input
gradient a prefix of each walk), negative strides flipping, the elements moved bit for bit,
and the equality with jax.vjp of SLICE1. What every operator shares is tested in
tests/test_contract.py and the cross-cutting files.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax._src import reference
from tests import strategies
from tests.helpers import assert_bits_equal, assert_rejected, assert_valid, explain_section

T = dml.TensorDesc


def _desc(
  data_type="FLOAT32", gradient=(2, 2), target=(4, 4), offsets=(0, 0), sizes=(4, 4), strides=(2, 2)
):
  return dml.SliceGradDesc(
    T(data_type, gradient),
    T(data_type, target),
    input_window_offsets=offsets,
    input_window_sizes=sizes,
    input_window_strides=strides,
  )


@pytest.mark.parametrize(
  "level, data_type, rank, valid",
  [
    ("2_1", "FLOAT32", 4, False),  # introduced at 3_0
    ("3_0", "INT8", 5, True),
    ("3_0", "FLOAT16", 3, False),  # 4 or 5 dimensions before 3_1
    ("3_1", "UINT16", 1, True),
    ("3_1", "INT64", 2, False),  # 64-bit data from 4_1
    ("4_1", "FLOAT64", 8, True),
  ],
)
def test_support_tables(level, data_type, rank, valid):
  lead = (1,) * (rank - 1)
  desc = _desc(data_type, lead + (2,), lead + (4,), (0,) * rank, lead + (4,), lead + (2,))
  assert desc.is_valid(level) == valid, desc.violations(level)


def test_rules():
  assert_valid(_desc(), None)
  assert_rejected(
    _desc(strides=(2, 0)),
    None,
    "InputWindowStrides",
    "no stride may be 0",
    "{2,0}",
    hint="use 1 to walk a window forwards, -1 backwards",
  )
  assert_rejected(
    _desc(offsets=(1, 0)),
    None,
    "InputWindowOffsets",
    "every window must lie inside OutputGradientTensor.Sizes {4,4} (SLICE1's input):"
    " InputWindowOffsets + InputWindowSizes must be <= OutputGradientTensor.Sizes;"
    " dimension 0 ends at 1 + 4 = 5",
    "{1,0}",
  )
  assert_rejected(
    _desc(gradient=(3, 2)),
    None,
    "InputGradientTensor.Sizes",
    "each size must be in [1, 1 + (InputWindowSizes - 1) // |InputWindowStrides|], at most"
    " {2,2} (SLICE1's output: a prefix of each window's walk)",
    "{3,2}",
  )
  assert_rejected(
    _desc(sizes=(4,)), None, "InputWindowSizes", "must hold DimensionCount (2) values", "{4}"
  )
  assert_rejected(
    _desc(target=(4, 4, 1)), None, "OutputGradientTensor.DimensionCount", "must equal", "3"
  )
  assert_rejected(
    dml.SliceGradDesc(T("FLOAT32", (2, 2)), T("INT32", (4, 4)), (0, 0), (4, 4), (2, 2)),
    None,
    "OutputGradientTensor.DataType",
    "must equal",
    "INT32",
  )
  assert_valid(_desc(gradient=(1, 2)), None)  # a prefix of a walk, as SLICE1's output may be


def test_the_page_example_and_negative_strides():
  g = np.array([[1, 2], [3, 4]], np.int16)
  got = dml.slice_grad(
    g,
    output_gradient_sizes=(4, 5),
    input_window_offsets=(0, 1),
    input_window_sizes=(3, 4),
    input_window_strides=(-2, 3),
  )
  # Dimension 0 walks from the window's last element, 2, back to 0; dimension 1 from 1 to 4.
  want = np.zeros((4, 5), np.int16)
  want[2, 1], want[2, 4], want[0, 1], want[0, 4] = 1, 2, 3, 4
  assert_bits_equal(got, want)


def test_elements_move_bit_for_bit():
  nan = np.array(0x7FC01234, np.uint32).view(np.float32)
  g = np.array([-0.0, nan], np.float32)
  got = dml.slice_grad(
    g,
    output_gradient_sizes=(3,),
    input_window_offsets=(0,),
    input_window_sizes=(3,),
    input_window_strides=(-2,),
  )
  assert_bits_equal(got, np.array([nan, 0.0, -0.0], np.float32))


def test_equals_the_vjp_of_slice1_under_jit_and_vmap():
  rng = np.random.default_rng(1)
  x = rng.standard_normal((5, 6)).astype(np.float32)
  windows = dict(
    input_window_offsets=(1, 0), input_window_sizes=(4, 6), input_window_strides=(-3, 2)
  )
  y, vjp = jax.vjp(lambda x: dml.slice1(x, **windows), x)
  g = rng.standard_normal(y.shape).astype(np.float32)
  (want,) = vjp(g)
  grad = jax.jit(lambda g: dml.slice_grad(g, output_gradient_sizes=x.shape, **windows))
  assert_bits_equal(grad(g), want)
  assert_bits_equal(want, reference.slice_grad(g, output_gradient_sizes=x.shape, **windows))
  batched = jax.vmap(lambda g: dml.slice_grad(g, output_gradient_sizes=x.shape, **windows))
  assert_bits_equal(batched(np.stack([g, 2 * g])), np.stack([want, 2 * want]))
  # SLICE_GRAD is linear: its own vjp is SLICE1 again.
  _, back = jax.vjp(grad, g)
  assert_bits_equal(back(want)[0], dml.slice1(want, **windows))


def test_explanation():
  lines = explain_section(dml.explain(_desc(strides=(2, -2))), "Output:")
  assert "OutputGradientTensor.Sizes = {4,4} (given: SLICE1's input's sizes" in lines[0]
  assert "walks start at 0 step 2, 3 step -2" in lines[1]


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def slice_grad_case(draw):
  """Windows of any offset, size and signed stride in a small output gradient; the input
  gradient a prefix of each walk, whole in the last dimension."""
  level = draw(strategies.levels("SLICE_GRAD"))
  table = strategies.table_at(dml.SliceGradDesc, level)
  n = draw(st.integers(*strategies.rank_range(table, level)))
  data_type = draw(st.sampled_from(table["InputGradientTensor"].data_types))
  target = tuple(
    draw(st.integers(1, 5)) if d >= n - 3 else draw(st.integers(1, 2)) for d in range(n)
  )
  offsets, sizes, strides, walks = [], [], [], []
  for extent in target:
    offset = draw(st.integers(0, extent - 1))
    size = draw(st.integers(1, extent - offset))
    stride = draw(st.sampled_from([-3, -2, -1, 1, 2, 3]))
    offsets.append(offset)
    sizes.append(size)
    strides.append(stride)
    walks.append((size - 1) // abs(stride) + 1)
  gradient = tuple(draw(st.integers(1, w)) for w in walks[:-1]) + (walks[-1],)
  g = strategies.draw_data(draw, data_type, gradient)
  windows = dict(
    input_window_offsets=tuple(offsets),
    input_window_sizes=tuple(sizes),
    input_window_strides=tuple(strides),
  )
  desc = dml.SliceGradDesc(T(data_type, gradient), T(data_type, target), **windows)
  return strategies.Case(
    desc,
    level,
    [g],
    lambda g, level: dml.slice_grad(
      g, output_gradient_sizes=target, **windows, feature_level=level
    ),
    lambda: reference.slice_grad(g, output_gradient_sizes=target, **windows),
  )


def slice_grad_mutations(desc, level, draw):
  """SLICE_GRAD's own rules: a window outside, a zero stride, a gradient past the walk, the
  counts."""
  del level
  n = desc.input_gradient_tensor.dimension_count
  d = draw(st.integers(0, n - 1))
  sizes = list(desc.input_window_sizes)
  sizes[d] = desc.output_gradient_tensor.sizes[d] - desc.input_window_offsets[d] + 1
  yield (
    "window outside",
    strategies.rebuild(desc, {"input_window_sizes": tuple(sizes)}),
    "InputWindowOffsets",
  )
  strides = list(desc.input_window_strides)
  strides[d] = 0
  yield (
    "zero stride",
    strategies.rebuild(desc, {"input_window_strides": tuple(strides)}),
    "InputWindowStrides",
  )
  gradient = desc.input_gradient_tensor
  walk = desc.walk_sizes()
  longer = gradient.sizes[:d] + (walk[d] + 1,) + gradient.sizes[d + 1 :]
  yield (
    "gradient past the walk",
    strategies.rebuild(
      desc, {"input_gradient_tensor": strategies.replace_tensor(gradient, sizes=longer)}
    ),
    "InputGradientTensor.Sizes",
  )
  yield "dimension count", strategies.rebuild(desc, {"dimension_count": n + 1}), "DimensionCount"


def sharded_cases(n, rng):
  """The gradient of a strided, backward SLICE1 of a (2n, 2n) array, sharded along either
  axis; jnp's formulation writes it into zeros with `.at[...].set`."""
  from tests.sharding_cases import Case

  cases = []
  g = rng.standard_normal((n, 2 * n)).astype(np.float32)
  windows = dict(
    input_window_offsets=(0, 0), input_window_sizes=(2 * n, 2 * n), input_window_strides=(2, -1)
  )
  for shard in (0, 1):
    cases.append(
      Case(
        "SLICE_GRAD",
        f"strides (2, -1) into (2n, 2n), sharded on axis {shard}",
        lambda g: dml.slice_grad(g, output_gradient_sizes=(2 * n, 2 * n), **windows),
        lambda g: jnp.zeros((2 * n, 2 * n), g.dtype).at[::2, ::-1].set(g),
        [(g, shard)],
        reference.slice_grad(g, output_gradient_sizes=(2 * n, 2 * n), **windows),
      )
    )
  return cases


VALID = {"SLICE_GRAD": slice_grad_case}
MUTANTS = {"SLICE_GRAD": slice_grad_mutations}
SHARDED_CASES = sharded_cases
FREE_OUTPUT_DIMENSIONS = {"SLICE_GRAD": lambda desc: set(range(desc.dimension_count))}
TRACING_CALLS = {
  "slice_grad": lambda k: dml.slice_grad(
    jnp.full((2, 3), k, jnp.float32),
    output_gradient_sizes=(4, 5),
    input_window_offsets=(0, 0),
    input_window_sizes=(4, 5),
    input_window_strides=(-2, 2),
  )
}
BFLOAT16_CALLS = {
  "slice_grad": lambda x: dml.slice_grad(
    x[:2, :2],
    output_gradient_sizes=(4, 4),
    input_window_offsets=(0, 0),
    input_window_sizes=(4, 4),
    input_window_strides=(2, -2),
  )
}
