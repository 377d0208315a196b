"""UNFOLD: the operator's own rules and pinned cases.

Its support table (FL 6_4 only; every data type dml_jax chose, the page listing none; 3 to 8
dimensions), its rules (one value per spatial dimension in each array, 1 to 6 of them, the
input's rank DimensionCount + 2, windows, strides and dilations of at least 1, a window that
fits its padded dimension), the output's rank (3-D inferred, leading 1s accepted), the layout
(the channel outermost, windows and their points in row-major order), zeros in the padding,
jit, vmap and grad, bits of every type, and the explanation. What every operator shares is
tested in tests/test_contract.py and the cross-cutting files.
"""

from __future__ import annotations

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


def _desc(data_type="FLOAT32", sizes=(1, 1, 5, 5), output=None, **changes):
  k = len(sizes) - 2
  arrays = dict(
    window_sizes=(3,) * k,
    strides=(1,) * k,
    dilations=(1,) * k,
    start_padding=(0,) * k,
    end_padding=(0,) * k,
  )
  arrays.update(changes)
  return dml.UnfoldDesc(T(data_type, sizes), **arrays, output_tensor=output)


@pytest.mark.parametrize(
  "level, data_type, sizes, valid",
  [
    ("6_3", "FLOAT32", (1, 1, 5, 5), False),  # introduced at 6_4
    ("6_4", "FLOAT64", (1, 1, 5, 5), True),  # every type that moves: dml_jax's choice
    ("6_4", "UINT8", (1, 1, 5), True),  # 1 spatial dimension
    ("6_4", "INT64", (1, 1, 3, 3, 3, 3, 3, 3), True),  # 6 of them: 8 dimensions
  ],
)
def test_support_table(level, data_type, sizes, valid):
  desc = _desc(data_type, sizes)
  assert desc.is_valid(level) is valid, desc.violations(level)


def test_rules_name_the_field():
  assert_rejected(
    _desc(end_padding=(0, 0, 0)),
    None,
    "EndPadding",
    "must hold DimensionCount (2) values",
    "{0,0,0}",
  )
  wrong_count = dml.UnfoldDesc(
    T("FLOAT32", (1, 1, 5, 5)), (3, 3), (1, 1), (1, 1), (0, 0), (0, 0), dimension_count=3
  )
  assert_rejected(
    wrong_count, None, "DimensionCount", "must equal the number of WindowSizes (2)", "3"
  )
  assert_rejected(
    _desc(
      sizes=(1, 5, 5),
      window_sizes=(3, 3),
      strides=(1, 1),
      dilations=(1, 1),
      start_padding=(0, 0),
      end_padding=(0, 0),
    ),
    None,
    "InputTensor.DimensionCount",
    "must be DimensionCount + 2 = 4",
    "3",
    "add a batch or channel dimension of size 1",
  )
  assert_rejected(_desc(strides=(1, 0)), None, "Strides", "every value must be >= 1", "{1,0}")
  assert_rejected(
    _desc(start_padding=(-1, 0)), None, "StartPadding", "every pad must be >= 0", "{-1,0}", "SLICE"
  )
  assert_rejected(_desc(dilations=(0, 1)), None, "Dilations", "every value must be >= 1", "{0,1}")
  assert_rejected(
    _desc(window_sizes=(0, 3)), None, "WindowSizes", "every value must be >= 1", "{0,3}"
  )
  # A window of 3 points 3 apart spans 7: it fits 5 + 1 + 1 padded points, not 5 + 1.
  assert_valid(_desc(dilations=(3, 1), start_padding=(1, 0), end_padding=(1, 0)), None)
  assert_rejected(
    _desc(dilations=(3, 1), start_padding=(1, 0)),
    None,
    "WindowSizes",
    "along spatial dimension 0 it spans Dilations[0] * (WindowSizes[0] - 1) + 1 = 7 points, more than InputTensor.Sizes[2] + StartPadding[0] + EndPadding[0] = 6",
    "{3,3}",
  )


def test_the_output_is_3d_and_may_take_leading_ones():
  inferred = _desc()
  assert inferred.outputs == (T("FLOAT32", (1, 9, 9)),)
  assert_valid(_desc(output=T("FLOAT32", (1, 1, 9, 9))), None)  # the input's rank: one more 1
  assert_valid(_desc(output=T("FLOAT32", (1, 1, 1, 9, 9))), None)
  assert_rejected(
    _desc(output=T("FLOAT32", (1, 9, 1, 9))),
    None,
    "OutputTensor.Sizes",
    "must be {N, C * prod(WindowSizes), BlockCount} = {1,9,9}, after any leading 1s: {1,1,9,9}",
    "{1,9,1,9}",
  )
  assert_rejected(
    _desc(output=T("FLOAT32", (9, 9))), None, "OutputTensor.DimensionCount", "3 to 8", "2"
  )


def test_channels_are_outermost_and_windows_row_major():
  x = np.arange(2 * 2 * 3, dtype=np.int8).reshape(1, 2, 2, 3)  # channel 1 is 6..11
  got = dml.unfold(x, window_sizes=(1, 2), strides=(1, 2), end_padding=(0, 1))
  # Windows (0,0), (0,1), (1,0), (1,1) start at columns 0 and 2; the second reads the padding.
  want = np.array(
    [[[0, 2, 3, 5], [1, 0, 4, 0], [6, 8, 9, 11], [7, 0, 10, 0]]], np.int8
  )  # rows: c0 w0, c0 w1, c1 w0, c1 w1
  assert_bits_equal(got, want)


@pytest.mark.parametrize(
  "sizes, attributes",
  [
    ((2, 1, 7), dict(window_sizes=(3,), strides=(2,), dilations=(2,), start_padding=(3,))),
    (
      (1, 2, 3, 2, 4),
      dict(window_sizes=(2, 1, 2), strides=(1, 3, 2), dilations=(2, 1, 1), end_padding=(1, 0, 2)),
    ),
  ],
)
def test_one_and_three_spatial_dimensions_match_the_reference(sizes, attributes):
  x = np.random.default_rng(2).standard_normal(sizes).astype(np.float16)
  assert_bits_equal(dml.unfold(x, **attributes), reference.unfold(x, **attributes))


def test_a_window_in_the_padding_alone_is_zeros():
  x = np.full((1, 1, 2), 7, np.uint16)
  got = dml.unfold(x, window_sizes=(1,), strides=(3,), start_padding=(3,), end_padding=(2,))
  assert_bits_equal(got, np.array([[[0, 7, 0]]], np.uint16))  # 0 0 0 7 7 0 0, read at 0, 3, 6


def test_jit_vmap_and_grad():
  rng = np.random.default_rng(3)
  x = rng.standard_normal((2, 1, 1, 3, 3)).astype(np.float32)
  attributes = dict(window_sizes=(2, 2), start_padding=(1, 0))
  got = jax.jit(jax.vmap(lambda x: dml.unfold(x, **attributes)))(x)
  for b in range(2):
    assert_bits_equal(got[b], reference.unfold(x[b], **attributes))
  # The gradient sums each input element's weights over the windows that read it: the
  # unfold of each basis element, weighted.
  weights = rng.standard_normal(got.shape[1:]).astype(np.float32)
  grad = jax.grad(lambda x: jnp.sum(dml.unfold(x, **attributes) * weights))(x[0])
  basis = np.eye(9, dtype=np.float32).reshape(9, 1, 1, 3, 3)
  want = [np.sum(reference.unfold(e, **attributes) * weights) for e in basis]
  np.testing.assert_allclose(grad.reshape(-1), want, rtol=1e-6)


def test_bfloat16_and_64_bit_integers_move_as_bits(x64):
  x = jnp.array([1.5, -0.0, np.nan], jnp.bfloat16).reshape(1, 1, 3)
  got = dml.unfold(x, window_sizes=(2,), end_padding=(1,))
  assert got.dtype == jnp.bfloat16
  bits = np.asarray(got).view(np.uint16)
  assert_bits_equal(
    bits, reference.unfold(np.asarray(x).view(np.uint16), window_sizes=(2,), end_padding=(1,))
  )
  big = np.array([2**62 + 1, -(2**63)], np.int64).reshape(1, 1, 2)
  assert_bits_equal(dml.unfold(big, window_sizes=(1,)), big)


def test_levels_before_6_4_refuse_the_call():
  with pytest.raises(dml.DmlValidationError, match="exists from FL 6_4"):
    dml.unfold(np.ones((1, 1, 3), np.float32), window_sizes=(2,), feature_level="6_3")


def test_explanation():
  text = dml.explain(_desc(start_padding=(1, 0), end_padding=(1, 0)), None)
  output = explain_section(text, "Output:")
  assert any("(5 + 1 + 1 - 1 x (3 - 1) - 1) / 1 + 1 = 5" in line for line in output)
  assert any("BlockCount = 15" in line for line in output)
  assert any("{1,9,15}" in line for line in output)


def test_an_input_without_the_batch_reads_as_one_entry():
  x = np.arange(12, dtype=np.float32).reshape(3, 4)  # {C, S}: one spatial dimension
  got = dml.unfold(x, window_sizes=(2,), strides=(2,))
  assert_bits_equal(got, dml.unfold(x[None], window_sizes=(2,), strides=(2,))[0])
  assert got.shape == (6, 2)
  (desc,) = dml.descriptors_of(dml.unfold, x, window_sizes=(2,))
  assert desc.input_tensor.sizes == (1, 3, 4) and desc.outputs == (T("FLOAT32", (1, 6, 3)),)


def test_padding_far_beyond_the_windows_is_never_built():
  # Windows 10**9 apart in 10**9 zeros on each side: three windows, read without padding the
  # input (the padded input would hold 3 * 10**9 elements).
  x = np.arange(10, dtype=np.float32).reshape(1, 1, 10)
  far = dict(window_sizes=(2,), strides=(10**9,), start_padding=(10**9,), end_padding=(10**9,))
  assert_bits_equal(dml.unfold(x, **far), np.array([[[0, 0, 0], [0, 1, 0]]], np.float32))


def test_the_gathered_form_agrees_with_the_sliced_one(monkeypatch):
  from dml_jax._src.ops import unfold as module

  x = np.random.default_rng(4).standard_normal((2, 3, 5, 4, 3)).astype(np.float32)
  attributes = dict(
    window_sizes=(2, 3, 1),
    strides=(2, 1, 3),
    dilations=(2, 1, 1),
    start_padding=(1, 2, 0),
    end_padding=(0, 1, 2),
  )
  sliced = dml.unfold(x, **attributes)
  (desc,) = dml.descriptors_of(dml.unfold, x, **attributes)
  monkeypatch.setattr(module, "_PADDED_LIMIT", 0)  # every padded input is too big: gathered
  gathered = jax.jit(desc.lower)(x)
  assert_bits_equal(gathered, sliced)
  assert_bits_equal(gathered, reference.unfold(x, **attributes))


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


@st.composite
def unfold_case(draw):
  """UNFOLD: 1 to 4 spatial dimensions, windows, strides and dilations that skip points,
  padding at either end (a window may lie in the padding alone)."""
  level = draw(strategies.levels("UNFOLD"))
  table = strategies.table_at(dml.UnfoldDesc, level)
  data_type = draw(st.sampled_from(table["InputTensor"].data_types))
  k = draw(st.integers(1, 4))
  sizes = strategies.draw_sizes(draw, 2, max_elements=4) + strategies.draw_sizes(
    draw, k, max_elements=24
  )
  windows, strides, dilations, starts, ends = [], [], [], [], []
  for size in sizes[2:]:
    start, end = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    dilation = draw(st.integers(1, 2))
    most = (size + start + end - 1) // dilation + 1  # the most points that fit
    windows.append(draw(st.integers(1, min(3, most))))
    strides.append(draw(st.integers(1, 3)))
    dilations.append(dilation)
    starts.append(start)
    ends.append(end)
  attributes = dict(
    window_sizes=tuple(windows),
    strides=tuple(strides),
    dilations=tuple(dilations),
    start_padding=tuple(starts),
    end_padding=tuple(ends),
  )
  x = strategies.draw_data(draw, data_type, sizes)
  desc = dml.UnfoldDesc(TensorDesc(data_type, sizes), **attributes)
  return strategies.Case(
    desc,
    level,
    [x],
    lambda x, level: dml.unfold(x, **attributes, feature_level=level),
    lambda: reference.unfold(x, **attributes),
  )


def unfold_mutations(desc, level, draw):
  """UNFOLD's own rules: a window that does not fit, a stride or dilation of 0, negative
  padding, an array of another length, one spatial dimension too many."""
  del level
  d = draw(st.integers(0, desc.dimension_count - 1))

  def one(name, value):
    values = list(getattr(desc, name))
    values[d] = value
    return strategies.rebuild(desc, {name: tuple(values)})

  size = desc.input_tensor.sizes[2 + d] + desc.start_padding[d] + desc.end_padding[d]
  too_wide = (size - 1) // desc.dilations[d] + 2  # one point more than fits
  yield "window too wide", one("window_sizes", too_wide), "WindowSizes"
  yield "stride 0", one("strides", 0), "Strides"
  yield "dilation 0", one("dilations", 0), "Dilations"
  yield "negative padding", one("start_padding", -1), "StartPadding"
  yield (
    "end padding length",
    strategies.rebuild(desc, {"end_padding": desc.end_padding + (0,)}),
    "EndPadding",
  )
  grown = {
    "window_sizes": desc.window_sizes + (1,),
    "strides": desc.strides + (1,),
    "dilations": desc.dilations + (1,),
    "start_padding": desc.start_padding + (0,),
    "end_padding": desc.end_padding + (0,),
    "dimension_count": None,
  }
  yield "spatial dimensions", strategies.rebuild(desc, grown), "InputTensor.DimensionCount"


def unfold_cases(n, rng):
  x = rng.standard_normal((n, n, 2 * n, 5)).astype(np.float32)
  attributes = dict(window_sizes=(3, 2), start_padding=(1, 0), end_padding=(1, 1))

  def jnp_patches(x):
    out = jax.lax.conv_general_dilated_patches(
      x, (3, 2), (1, 1), ((1, 1), (0, 1)), precision=jax.lax.Precision.HIGHEST
    )
    return out.reshape(out.shape[0], out.shape[1], -1)

  return [
    sharding_cases.Case(
      "UNFOLD",
      f"3x2 windows, padded, sharded on axis {shard}",
      lambda x: dml.unfold(x, **attributes),
      jnp_patches,
      [(x, shard)],
      reference.unfold(x, **attributes),
    )
    # Sharded along a spatial dimension, each window point's slice exchanges its own halo
    # (docs/sharding.md), where the patches convolution exchanges one: not a case here.
    for shard in (0, 1)
  ]


VALID = {"UNFOLD": unfold_case}
MUTANTS = {"UNFOLD": unfold_mutations}
SHARDED_CASES = unfold_cases
TRACING_CALLS = {
  "unfold": lambda k: dml.unfold(jnp.full((1, 2, 3, 4), k, jnp.int8), window_sizes=(2, 2)),
}
BFLOAT16_CALLS = {
  "unfold": lambda x: dml.unfold(
    x.reshape(1, 1, 4, 6), window_sizes=(2, 3), strides=(1, 2), start_padding=(1, 0)
  ),
}
