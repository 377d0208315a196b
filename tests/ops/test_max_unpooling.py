"""MAX_UNPOOLING: the operator's own rules and pinned cases.

Its support tables (FL 3_0: FLOAT32 and FLOAT16 data, UINT32 indices; FL 5_0: every integer
type and UINT64 indices; always 4-D), its rules (one index per value, the required output of
the input's rank and data type, any sizes), the indices as flat positions of the whole output
(batch and channel included), the page's "no write" for indices past the output, dml_jax's
last-wins choice for repeated indices (and `dml.checked` reporting them), 64-bit indices judged
in their own width, jit, vmap and grad, bfloat16 bits, and the explanation. What every operator
shares is tested in tests/test_contract.py and the cross-cutting files.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import TensorDesc
from dml_jax._src import reference
from tests import sharding_cases, strategies
from tests.helpers import assert_bits_equal, assert_rejected, assert_valid, explain_section

T = dml.TensorDesc


def _desc(data_type="FLOAT32", index_type="UINT32", sizes=(1, 1, 2, 2), output=(1, 1, 4, 4)):
  return dml.MaxUnpoolingDesc(T(data_type, sizes), T(index_type, sizes), T(data_type, output))


@pytest.mark.parametrize(
  "level, data_type, index_type, valid",
  [
    ("2_1", "FLOAT32", "UINT32", False),  # introduced at 3_0
    ("3_0", "FLOAT16", "UINT32", True),
    ("3_0", "INT32", "UINT32", False),  # integer data from 5_0
    ("3_0", "FLOAT32", "UINT64", False),  # UINT64 indices from 5_0
    ("5_0", "UINT8", "UINT64", True),
    ("6_4", "INT64", "UINT32", True),
    ("6_4", "FLOAT64", "UINT32", False),  # never FLOAT64
    ("6_4", "FLOAT32", "INT32", False),  # unsigned indices only
  ],
)
def test_support_tables(level, data_type, index_type, valid):
  desc = _desc(data_type, index_type)
  assert desc.is_valid(level) is valid, desc.violations(level)


def test_rules_name_the_field():
  assert_valid(_desc(output=(3, 1, 1, 2)), None)  # any output sizes: the indices are flat
  bad = dml.MaxUnpoolingDesc(
    T("FLOAT32", (1, 1, 2, 2)), T("UINT32", (1, 1, 2, 3)), T("FLOAT32", (1, 1, 4, 4))
  )
  assert_rejected(
    bad, None, "IndicesTensor.Sizes", "must equal InputTensor.Sizes {1,1,2,2}", "{1,1,2,3}"
  )
  retyped = dml.MaxUnpoolingDesc(
    T("FLOAT32", (1, 1, 2, 2)), T("UINT32", (1, 1, 2, 2)), T("FLOAT16", (1, 1, 4, 4))
  )
  assert_rejected(retyped, None, "OutputTensor.DataType", "InputTensor.DataType", "FLOAT16")
  assert_rejected(_desc(output=(1, 4, 4)), None, "OutputTensor.DimensionCount", "supports 4", "3")
  assert_rejected(_desc(sizes=(2, 2)), None, "InputTensor.DimensionCount", "supports 4", "2")
  with pytest.raises(TypeError):
    dml.MaxUnpoolingDesc(T("FLOAT32", (1, 1, 2, 2)), T("UINT32", (1, 1, 2, 2)))  # required output


def test_indices_count_over_the_whole_output_batch_and_channel_included():
  # Two batch entries of two channels: index 5 of a {2,2,1,3} output is batch 0, channel 1,
  # column 2; torch's max_unpool2d would read it within each plane instead.
  x = np.array([1, 2, 3, 4], np.int16).reshape(2, 2, 1, 1)
  i = np.array([5, 0, 11, 6], np.uint32).reshape(2, 2, 1, 1)
  got = dml.max_unpooling(x, i, output_sizes=(2, 2, 1, 3))
  want = np.zeros(12, np.int16)
  want[[5, 0, 11, 6]] = [1, 2, 3, 4]
  assert_bits_equal(got, want.reshape(2, 2, 1, 3))


def test_indices_past_the_output_write_nothing():
  x = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 2, 2)
  i = np.array([3, 4, 0xFFFFFFFF, 0], np.uint32).reshape(1, 1, 2, 2)  # 4 is one past the end
  got = dml.max_unpooling(x, i, output_sizes=(1, 1, 2, 2))
  assert_bits_equal(got, np.array([4, 0, 0, 1], np.float32).reshape(1, 1, 2, 2))


def test_repeated_indices_keep_the_last_in_row_major_order_and_the_gradient_follows():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
  i = rng.integers(0, 11, x.shape).astype(np.uint32)  # 120 values into 9 of 24 elements, or past
  i[i > 8] += 20  # 29, 30: past the 24 elements, no write
  got = dml.max_unpooling(x, i, output_sizes=(1, 2, 3, 4))
  flat = np.zeros(30, np.float32)
  for value, index in zip(x.reshape(-1), i.reshape(-1), strict=True):  # in order: the last wins
    flat[min(index, 29)] = value
  assert_bits_equal(got, flat[:24].reshape(1, 2, 3, 4))
  assert_bits_equal(reference.max_unpooling(x, i, output_sizes=(1, 2, 3, 4)), got)
  # The gradient takes the settled form (winners by a scatter-max of positions, what other
  # platforms run): each element's weight reaches exactly the last value naming it; a value
  # overwritten later, or written nowhere, gets zero.
  weights = np.arange(1, 25, dtype=np.float32).reshape(1, 2, 3, 4)
  loss = lambda x: jnp.sum(dml.max_unpooling(x, i, output_sizes=(1, 2, 3, 4)) * weights)
  want = np.zeros(x.size, np.float32)
  for t in np.unique(i[i < 24]):
    want[np.flatnonzero(i.reshape(-1) == t)[-1]] = weights.reshape(-1)[t]
  assert_bits_equal(jax.grad(loss)(x), want.reshape(x.shape))


def test_checked_mode_reports_repeated_indices_but_not_the_defined_ones():
  x = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 2, 2)
  fn = dml.checked(lambda x, i: dml.max_unpooling(x, i, output_sizes=(1, 1, 2, 2)))
  distinct = np.array([3, 9, 1, 0], np.uint32).reshape(1, 1, 2, 2)  # 9 writes nothing: defined
  assert_bits_equal(fn(x, distinct), np.array([4, 3, 0, 1], np.float32).reshape(1, 1, 2, 2))
  repeated = np.array([3, 1, 1, 0], np.uint32).reshape(1, 1, 2, 2)
  with pytest.raises(
    dml.DmlIndexError, match=r"InputTensor\[0, 0, 0, 1\] targets OutputTensor\[1\]"
  ):
    fn(x, repeated)


def test_uint64_indices_are_judged_in_their_own_width(x64):
  x = np.array([5, 6], np.int64).reshape(1, 1, 1, 2)
  i = np.array([2**32 + 1, 1], np.uint64).reshape(1, 1, 1, 2)  # never element 1
  got = dml.max_unpooling(x, i, output_sizes=(1, 1, 1, 3))
  assert_bits_equal(got, np.array([0, 6, 0], np.int64).reshape(1, 1, 1, 3))


def test_jit_and_vmap():
  rng = np.random.default_rng(1)
  x = rng.standard_normal((3, 1, 2, 2, 2)).astype(np.float32)
  i = rng.integers(0, 10, x.shape).astype(np.uint32)
  got = jax.jit(jax.vmap(lambda x, i: dml.max_unpooling(x, i, output_sizes=(1, 2, 2, 2))))(x, i)
  for b in range(3):
    assert_bits_equal(got[b], reference.max_unpooling(x[b], i[b], output_sizes=(1, 2, 2, 2)))


def test_bfloat16_moves_as_bits():
  x = jnp.array([1.5, -0.0, 3.0, np.nan], jnp.bfloat16).reshape(1, 1, 2, 2)
  i = np.array([0, 1, 2, 3], np.uint32).reshape(1, 1, 2, 2)
  got = dml.max_unpooling(x, i, output_sizes=(1, 1, 1, 5))
  assert got.dtype == jnp.bfloat16
  bits = np.asarray(got).view(np.uint16).reshape(-1)
  assert bits.tolist() == np.asarray(x).view(np.uint16).reshape(-1).tolist() + [0]


def test_explanation():
  text = dml.explain(_desc(), None)
  output = explain_section(text, "Output:")
  assert any("flat(out)[IndicesTensor[u]] = InputTensor[u]" in line for line in output)
  assert any("past 16 writes nothing" in line and "keeps the last" in line for line in output)
  assert "no write" in text or "writes nothing" in text


def test_fewer_dimensions_read_with_leading_ones():
  x, i = np.array([5, 6, 7], np.int8), np.array([3, 0, 9], np.uint32)
  got = dml.max_unpooling(x, i, output_sizes=(2, 3))  # 9 is past the 6 elements: no write
  assert_bits_equal(got, np.array([[6, 0, 0], [5, 0, 0]], np.int8))
  (desc,) = dml.descriptors_of(dml.max_unpooling, x, i, output_sizes=(2, 3))
  assert desc.output_tensor == T("INT8", (1, 1, 2, 3)) and desc.input_tensor.sizes == (1, 1, 1, 3)
  with pytest.raises(dml.DmlValidationError, match="IndicesTensor.Sizes") as info:
    dml.max_unpooling(x, i[:2], output_sizes=(6,))
  assert "dml.max_unpooling(input.reshape(1, 1, 1, 3)" in "".join(info.value.__notes__)


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def max_unpooling_case(draw):
  """MAX_UNPOOLING: any 4-D output sizes (they are free), and flat indices that repeat, reach
  past the output's element count, or sit at the extremes of their type."""
  level = draw(strategies.levels("MAX_UNPOOLING"))
  table = strategies.table_at(dml.MaxUnpoolingDesc, level)
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  index_type = draw(st.sampled_from(table["IndicesTensor"].data_types))
  sizes = strategies.draw_sizes(draw, 4, max_elements=24)
  output_sizes = strategies.draw_sizes(draw, 4, max_elements=48)
  total = math.prod(output_sizes)
  rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
  i = rng.integers(0, total + 3, sizes).astype(index_type.numpy_dtype)
  if rng.integers(0, 4) == 0:
    i.flat[rng.integers(0, i.size)] = np.iinfo(index_type.numpy_dtype).max
  x = strategies.draw_data(draw, data_type, sizes)
  desc = dml.MaxUnpoolingDesc(
    TensorDesc(data_type, sizes), TensorDesc(index_type, sizes), TensorDesc(data_type, output_sizes)
  )
  return strategies.Case(
    desc,
    level,
    [x, i],
    lambda x, i, level: dml.max_unpooling(x, i, output_sizes=output_sizes, feature_level=level),
    lambda: reference.max_unpooling(x, i, output_sizes=output_sizes),
  )


def max_unpooling_mutations(desc, level, draw):
  """MAX_UNPOOLING's own rules: indices of other sizes, an output of another rank."""
  del level
  indices, output = desc.indices_tensor, desc.output_tensor
  d = draw(st.integers(0, 3))
  sizes = tuple(s + (i == d) for i, s in enumerate(indices.sizes))
  yield (
    "indices sizes",
    dataclasses.replace(desc, indices_tensor=strategies.replace_tensor(indices, sizes=sizes)),
    "IndicesTensor.Sizes",
  )
  yield (
    "output rank",
    dataclasses.replace(
      desc, output_tensor=strategies.replace_tensor(output, sizes=output.sizes[1:])
    ),
    "OutputTensor.DimensionCount",
  )


def max_unpooling_cases(n, rng):
  # A 2x2, stride-2 max pooling's indices of a (2n, 2, 2, 3) input: distinct (jnp's scatter
  # leaves the order of duplicates open), flat over the whole (2n, 2, 4, 6) output.
  pooled, out_sizes = (2 * n, 2, 2, 3), (2 * n, 2, 4, 6)
  x = rng.standard_normal(pooled).astype(np.float32)
  dy, dx = rng.integers(0, 2, pooled), rng.integers(0, 2, pooled)
  planes = np.arange(4 * n).reshape(2 * n, 2, 1, 1)
  rows, cols = 2 * np.arange(2)[:, None] + dy, 2 * np.arange(3)[None, :] + dx
  idx = ((planes * 4 + rows) * 6 + cols).astype(np.uint32)

  def jnp_unpool(x, i):
    flat = jnp.zeros(math.prod(out_sizes), x.dtype).at[i.reshape(-1)].set(x.reshape(-1))
    return flat.reshape(out_sizes)

  return [
    sharding_cases.Case(
      "MAX_UNPOOLING",
      "2x2 pooling's indices, sharded on axis 0",
      lambda x, i: dml.max_unpooling(x, i, output_sizes=out_sizes),
      jnp_unpool,
      [(x, 0), (idx, 0)],
      reference.max_unpooling(x, idx, output_sizes=out_sizes),
      settles_across_devices=True,
    )
  ]


VALID = {"MAX_UNPOOLING": max_unpooling_case}
MUTANTS = {"MAX_UNPOOLING": max_unpooling_mutations}
SHARDED_CASES = max_unpooling_cases
TRACING_CALLS = {
  "max_unpooling": lambda k: dml.max_unpooling(
    jnp.full((1, 1, 2, 2), k, jnp.float32),
    jnp.full((1, 1, 2, 2), k % 4, jnp.uint32),
    output_sizes=(1, 1, 2, 3),
  ),
}
BFLOAT16_CALLS = {
  "max_unpooling": lambda x: dml.max_unpooling(
    x.reshape(1, 1, 4, 6),
    (np.arange(24, dtype=np.uint32) * 7 % 25).reshape(1, 1, 4, 6),
    output_sizes=(1, 1, 5, 5),
  ),
}
# The flat indices fit an output of any sizes: no input fixes any of them.
FREE_OUTPUT_DIMENSIONS = {
  "MAX_UNPOOLING": lambda desc: set(range(desc.output_tensor.dimension_count))
}
