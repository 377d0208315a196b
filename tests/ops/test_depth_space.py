"""DEPTH_TO_SPACE, DEPTH_TO_SPACE1, SPACE_TO_DEPTH, SPACE_TO_DEPTH1: their own rules and cases.

Their support tables written out from DirectML's pages (the un-numbered operators from 1_0
with floats, the numbered ones from 2_1; every one 4-D only, integers up to 32 bits from 2_1,
64-bit types from 5_0), their rules (BlockSize >= 1, channels a multiple of b*b, height and
width multiples of b, exact output sizes), DepthSpaceOrder's spellings, both orders against
plain NumPy reshape/transpose forms and torch's pixel_shuffle packing, each operator the
other's inverse, and the functional API under jit, vmap and grad. What every operator shares
is tested in tests/test_contract.py and the cross-cutting files.
"""

from __future__ import annotations

import re

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
  examples,
)

T = dml.TensorDesc
Order = dml.DepthSpaceOrder
DCR, CRD = Order.DEPTH_COLUMN_ROW, Order.COLUMN_ROW_DEPTH
ORDERS = (DCR, CRD)

FLOATS = {"FLOAT32", "FLOAT16"}
UP_TO_32 = FLOATS | {"INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8"}
ALL = UP_TO_32 | {"FLOAT64", "INT64", "UINT64"}


def _desc(op: str, data_type: str, sizes, block_size=2, order=DCR, **kwargs):
  cls = {
    "DEPTH_TO_SPACE": dml.DepthToSpaceDesc,
    "DEPTH_TO_SPACE1": dml.DepthToSpace1Desc,
    "SPACE_TO_DEPTH": dml.SpaceToDepthDesc,
    "SPACE_TO_DEPTH1": dml.SpaceToDepth1Desc,
  }[op]
  if op.endswith("1"):
    kwargs["order"] = order
  return cls(T(data_type, sizes), block_size=block_size, **kwargs)


def _whole_blocks(op: str, rank: int = 4) -> tuple[int, ...]:
  sizes = (1, 4, 2, 2) if op.startswith("DEPTH") else (1, 1, 4, 4)
  return sizes if rank == 4 else (1,) * (rank - 4) + sizes if rank > 4 else sizes[4 - rank :]


# -- the tensor-support tables, from the pages ------------------------------------------


def _allowed(op: str, level: str) -> set[str]:
  numbered = op.endswith("1")
  if level < "2_1":
    return set() if numbered else FLOATS
  return UP_TO_32 if level < "5_0" else ALL


@pytest.mark.parametrize(
  "op", ["DEPTH_TO_SPACE", "DEPTH_TO_SPACE1", "SPACE_TO_DEPTH", "SPACE_TO_DEPTH1"]
)
@pytest.mark.parametrize("level", ["1_0", "2_0", "2_1", "4_1", "5_0", "6_4"])
def test_support_tables(op, level):
  allowed = _allowed(op, level)
  for data_type in sorted(ALL):
    fields = [v.field for v in _desc(op, data_type, _whole_blocks(op)).violations(level)]
    if not allowed:
      assert fields == ["DML_OPERATOR_TYPE"]
    elif data_type in allowed:
      assert fields == [], (data_type, fields)
    else:
      assert fields == ["InputTensor.DataType"], (data_type, fields)
  if allowed:  # 4-D only, at every level
    for rank in (3, 5):
      fields = [v.field for v in _desc(op, "FLOAT32", _whole_blocks(op, rank)).violations(level)]
      assert "InputTensor.DimensionCount" in fields, (rank, fields)


def test_introduction_levels():
  assert dml.DepthToSpaceDesc.SUPPORT.introduced == dml.FeatureLevel.FL_1_0
  assert dml.SpaceToDepthDesc.SUPPORT.introduced == dml.FeatureLevel.FL_1_0
  assert dml.DepthToSpace1Desc.SUPPORT.introduced == dml.FeatureLevel.FL_2_1
  assert dml.SpaceToDepth1Desc.SUPPORT.introduced == dml.FeatureLevel.FL_2_1
  assert_valid(dml.DepthToSpaceDesc(T("FLOAT16", (1, 8, 2, 3)), block_size=2), "1_0")
  assert_rejected(
    dml.DepthToSpace1Desc(T("FLOAT16", (1, 8, 2, 3)), block_size=2, order=DCR),
    "2_0",
    "DML_OPERATOR_TYPE",
    "DML_OPERATOR_DEPTH_TO_SPACE1 exists from FL 2_1 on",
    "FL 2_0",
  )


def test_64_bit_data_types_from_5_0_with_a_hint():
  assert_rejected(
    dml.SpaceToDepthDesc(T("INT64", (1, 1, 2, 2)), block_size=2),
    "4_1",
    "InputTensor.DataType",
    "must be one of",
    "INT64",
    hint="INT64 is supported here from FL 5_0",
  )


# -- DepthSpaceOrder --------------------------------------------------------------------


def test_order_values_are_directmls():
  assert [(o.name, o.value) for o in Order] == [("DEPTH_COLUMN_ROW", 0), ("COLUMN_ROW_DEPTH", 1)]


@pytest.mark.parametrize(
  "spelling, order",
  [
    (CRD, CRD),
    (0, DCR),
    (np.uint32(1), CRD),
    ("COLUMN_ROW_DEPTH", CRD),
    ("DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW", DCR),
    ("depth_column_row", DCR),
  ],
)
def test_order_spellings(spelling, order):
  assert Order.from_any(spelling) is order
  desc = dml.DepthToSpace1Desc(T("FLOAT32", (1, 4, 1, 1)), block_size=2, order=spelling)
  assert desc.order is order


def test_unknown_orders_are_refused_listing_the_names():
  names = "DEPTH_COLUMN_ROW (0), COLUMN_ROW_DEPTH (1)"
  with pytest.raises(ValueError, match=rf"Order must be one of {re.escape(names)}.*'ROW_COLUMN'"):
    Order.from_any("ROW_COLUMN")
  with pytest.raises(ValueError, match=rf"Order must be one of {re.escape(names)}; got 2"):
    dml.depth_to_space1(np.zeros((1, 4, 1, 1), np.float32), block_size=2, order=2)
  with pytest.raises(TypeError, match=r"Order must be a DepthSpaceOrder.*got float 1\.0"):
    Order.from_any(1.0)
  with pytest.raises(TypeError, match="got bool True"):
    Order.from_any(True)


def test_the_repr_names_the_order_and_round_trips():
  desc = dml.SpaceToDepth1Desc(T("UINT8", (1, 1, 2, 2)), block_size=2, order="COLUMN_ROW_DEPTH")
  assert repr(desc) == (
    'SpaceToDepth1Desc(input_tensor=TensorDesc("UINT8", (1, 1, 2, 2)), block_size=2,'
    " order=DepthSpaceOrder.COLUMN_ROW_DEPTH)"
  )
  assert eval(repr(desc), vars(dml)) == desc
  assert desc.dml_attributes() == (("BlockSize", 2), ("Order", CRD))
  json_form = {"InputTensor": {"DataType": "UINT8", "Sizes": [1, 1, 2, 2]}, "BlockSize": 2}
  assert (
    dml.SpaceToDepth1Desc.from_dml({**json_form, "Order": "DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH"})
    == desc
  )


# -- the rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
  "op", ["DEPTH_TO_SPACE", "DEPTH_TO_SPACE1", "SPACE_TO_DEPTH", "SPACE_TO_DEPTH1"]
)
def test_block_size_must_be_at_least_1(op):
  assert_rejected(
    _desc(op, "FLOAT32", (1, 4, 4, 4), block_size=0),
    None,
    "BlockSize",
    "must be >= 1 (1 copies the input unchanged)",
    "0",
    hint="a block holds b x b pixels: there are no empty blocks",
  )
  desc = _desc(op, "FLOAT32", (1, 4, 4, 4), block_size=1)
  assert_valid(desc, None)
  assert desc.output == T("FLOAT32", (1, 4, 4, 4))


def test_block_size_must_be_an_integer():
  with pytest.raises(TypeError, match=r"BlockSize must be an integer; got float 2\.0"):
    dml.depth_to_space(np.zeros((1, 4, 1, 1), np.float32), block_size=2.0)
  with pytest.raises(TypeError, match="BlockSize must be an integer; got bool"):
    dml.SpaceToDepthDesc(T("FLOAT32", (1, 1, 2, 2)), block_size=True)


@pytest.mark.parametrize("op", ["DEPTH_TO_SPACE", "DEPTH_TO_SPACE1"])
def test_depth_to_space_needs_channels_a_multiple_of_b_squared(op):
  desc = _desc(op, "FLOAT32", (1, 6, 2, 3), block_size=2)
  assert_rejected(
    desc,
    None,
    "InputTensor.Sizes",
    "the channel count Sizes[1] must be a multiple of BlockSize * BlockSize = 4",
    "{1,6,2,3}",
    hint="each output channel takes 4 input channels, one per pixel of a block",
  )
  with pytest.raises(dml.DmlValidationError):
    desc.output  # noqa: B018  (no output for partial blocks)


@pytest.mark.parametrize("op", ["SPACE_TO_DEPTH", "SPACE_TO_DEPTH1"])
def test_space_to_depth_needs_height_and_width_multiples_of_b(op):
  desc = _desc(op, "FLOAT32", (1, 2, 4, 5), block_size=2)
  assert_rejected(
    desc,
    None,
    "InputTensor.Sizes",
    "the width Sizes[3] must be a multiple of BlockSize (2)",
    "{1,2,4,5}",
    hint="crop or pad the input to whole blocks first",
  )
  both = _desc(op, "FLOAT32", (1, 2, 3, 5), block_size=2)
  rules = [v.rule for v in both.violations()]
  assert [r.split(" must")[0] for r in rules] == ["the height Sizes[2]", "the width Sizes[3]"]


def test_output_sizes():
  assert dml.DepthToSpaceDesc(T("INT8", (2, 18, 2, 1)), block_size=3).output == T(
    "INT8", (2, 2, 6, 3)
  )
  assert dml.SpaceToDepthDesc(T("INT8", (2, 2, 6, 3)), block_size=3).output == T(
    "INT8", (2, 18, 2, 1)
  )


@pytest.mark.parametrize(
  "op, sizes, given, formula",
  [
    ("DEPTH_TO_SPACE1", (1, 8, 2, 3), (1, 8, 2, 3), "{N, C/(b*b), H*b, W*b} = {1,2,4,6}"),
    ("SPACE_TO_DEPTH", (1, 2, 4, 6), (1, 2, 4, 6), "{N, C*b*b, H/b, W/b} = {1,8,2,3}"),
  ],
)
def test_a_given_output_must_have_the_exact_sizes(op, sizes, given, formula):
  desc = _desc(op, "FLOAT32", sizes, output_tensor=T("FLOAT32", given))
  assert_rejected(
    desc,
    None,
    "OutputTensor.Sizes",
    f"must be {formula} (b = BlockSize = 2)",
    "{" + ",".join(map(str, given)) + "}",
  )


def test_every_violation_at_once():
  desc = dml.SpaceToDepth1Desc(T("INT64", (1, 1, 3, 3)), block_size=2, order=CRD)
  assert [v.field for v in desc.violations("4_1")] == [
    "InputTensor.DataType",
    "InputTensor.Sizes",
    "InputTensor.Sizes",
  ]


# -- the values --------------------------------------------------------------------------


def _numpy_depth_to_space(x, b, order):
  """The depth-to-space transform as one NumPy reshape/transpose/reshape."""
  n, depth, h, w = x.shape
  c = depth // (b * b)
  if order is DCR:
    return x.reshape(n, b, b, c, h, w).transpose(0, 3, 4, 1, 5, 2).reshape(n, c, h * b, w * b)
  return x.reshape(n, c, b, b, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, c, h * b, w * b)


@pytest.mark.parametrize("seed", CROSS_CHECK_SEEDS)
def test_reference_agrees_with_numpy_reshapes(seed):
  rng = np.random.default_rng(seed)
  b = int(rng.integers(1, 4))
  n, c, h, w = (int(s) for s in rng.integers(1, 4, 4))
  x = rng.standard_normal((n, c * b * b, h, w)).astype(np.float32)
  for order in ORDERS:
    expected = _numpy_depth_to_space(x, b, order)
    assert_bits_equal(reference.depth_to_space1(x, block_size=b, order=order.name), expected)
    assert_bits_equal(reference.space_to_depth1(expected, block_size=b, order=int(order)), x)
  assert_bits_equal(reference.depth_to_space(x, block_size=b), _numpy_depth_to_space(x, b, DCR))


def test_pinned_pixels_of_both_orders():
  # 2 channels of 2 x 2 blocks: depth channel k holds value k at every pixel.
  x = np.broadcast_to(np.arange(8, dtype=np.uint16).reshape(1, 8, 1, 1), (1, 8, 1, 2))
  dcr = np.asarray(dml.depth_to_space1(x, block_size=2, order=DCR))
  crd = np.asarray(dml.depth_to_space1(x, block_size=2, order=CRD))
  # DEPTH_COLUMN_ROW: channel c, pixel (i, j) <- depth (i*2 + j)*2 + c.
  assert dcr[0, 1, :, :2].tolist() == [[1, 3], [5, 7]]
  # COLUMN_ROW_DEPTH: channel c, pixel (i, j) <- depth c*4 + i*2 + j.
  assert crd[0, 1, :, :2].tolist() == [[4, 5], [6, 7]]
  assert_bits_equal(dml.depth_to_space(x, block_size=2), dcr)


def test_column_row_depth_is_pixel_shuffle():
  # torch.nn.functional.pixel_shuffle's documented mapping, written out:
  # out[n, c, h*r + i, w*r + j] = in[n, c*r*r + i*r + j, h, w].
  rng = np.random.default_rng(7)
  r, x = 3, rng.standard_normal((2, 18, 2, 3)).astype(np.float32)
  out = np.asarray(dml.depth_to_space1(x, block_size=r, order="COLUMN_ROW_DEPTH"))
  for n, c, y, xx in np.ndindex(*out.shape):
    (h, i), (w, j) = divmod(y, r), divmod(xx, r)
    assert out[n, c, y, xx] == x[n, c * r * r + i * r + j, h, w]


@pytest.mark.parametrize("order", ORDERS)
@examples(0.5, deadline=None)
@given(
  b=st.integers(1, 3),
  dims=st.tuples(*(st.integers(1, 3) for _ in range(4))),
  data_type=st.sampled_from(sorted(UP_TO_32)),
  seed=st.integers(0, 2**32 - 1),
)
def test_each_is_the_others_inverse(order, b, dims, data_type, seed):
  n, c, h, w = dims
  dtype = dml.DataType[data_type].numpy_dtype
  rng = np.random.default_rng(seed)
  depth = rng.integers(0, 100, (n, c * b * b, h, w)).astype(dtype)
  space = rng.integers(0, 100, (n, c, h * b, w * b)).astype(dtype)
  to_space = dml.depth_to_space1(depth, block_size=b, order=order)
  assert to_space.shape == (n, c, h * b, w * b)
  assert_bits_equal(dml.space_to_depth1(to_space, block_size=b, order=order), depth)
  to_depth = dml.space_to_depth1(space, block_size=b, order=order)
  assert_bits_equal(dml.depth_to_space1(to_depth, block_size=b, order=order), space)
  if order is DCR:  # the operators without Order
    assert_bits_equal(
      dml.space_to_depth(dml.depth_to_space(depth, block_size=b), block_size=b), depth
    )


def test_the_orders_agree_only_for_one_channel_or_block_size_1():
  x = np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2)
  one_channel = [np.asarray(dml.depth_to_space1(x, block_size=2, order=o)) for o in ORDERS]
  assert_bits_equal(one_channel[0], one_channel[1])  # C = 1: (i, j, c) and (c, i, j) coincide
  y = np.arange(32, dtype=np.float32).reshape(1, 8, 2, 2)
  two = [np.asarray(dml.depth_to_space1(y, block_size=2, order=o)) for o in ORDERS]
  assert not np.array_equal(two[0], two[1])
  for order in ORDERS:
    assert_bits_equal(dml.space_to_depth1(y, block_size=1, order=order), y)


def test_unlike_a_reshape_partial_blocks_are_refused():
  x = np.zeros((1, 2, 3, 4), np.float32)
  with pytest.raises(dml.DmlValidationError, match=r"the height Sizes\[2\] must be a multiple"):
    dml.space_to_depth(x, block_size=2)
  with pytest.raises(dml.DmlValidationError, match="InputTensor.DimensionCount"):
    dml.depth_to_space(np.zeros((1, 1, 4, 2, 2), np.float32), block_size=2)
  # A 3-D CHW image reads as N = 1; a 2-D one would need its new channels cut: refused.
  image = np.arange(16, dtype=np.float32).reshape(4, 2, 2)
  assert_bits_equal(
    dml.depth_to_space(image, block_size=2), dml.depth_to_space(image[None], block_size=2)[0]
  )
  with pytest.raises(dml.DmlValidationError, match="InputTensor.DimensionCount"):
    dml.space_to_depth(image[0], block_size=2)


def test_jit_vmap_and_grad():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((1, 8, 2, 3)).astype(np.float32)
  f = jax.jit(lambda x: dml.depth_to_space1(x, block_size=2, order=CRD))
  assert_bits_equal(f(x), _numpy_depth_to_space(x, 2, CRD))
  batch = np.stack([x, -x])  # vmap over a leading axis: each example is 4-D
  got = jax.vmap(lambda x: dml.depth_to_space1(x, block_size=2, order=DCR))(batch)
  assert_bits_equal(got, np.stack([_numpy_depth_to_space(e, 2, DCR) for e in batch]))
  weights = rng.standard_normal((1, 2, 4, 6)).astype(np.float32)
  for order in ORDERS:
    grad = jax.grad(
      lambda x, o=order: jnp.sum(dml.depth_to_space1(x, block_size=2, order=o) * weights)
    )(x)
    # A permutation's gradient is the inverse permutation of the weights.
    assert_bits_equal(grad, reference.space_to_depth1(weights, block_size=2, order=int(order)))
    space_grad = jax.grad(
      lambda y, o=order: jnp.sum(dml.space_to_depth1(y, block_size=2, order=o) * x)
    )(weights)
    assert_bits_equal(space_grad, reference.depth_to_space1(x, block_size=2, order=int(order)))


def test_explanations_name_the_order_and_the_formula():
  explained = dml.explain(dml.DepthToSpace1Desc(T("FLOAT32", (1, 8, 2, 3)), 2, CRD))
  assert "out[n, c, h*b + i, w*b + j] = in[n, c * b * b + i * b + j, h, w]" in explained
  assert "ONNX mode CRD" in explained
  plain = dml.explain(dml.SpaceToDepthDesc(T("FLOAT32", (1, 2, 4, 6)), 2))
  assert "OutputTensor.Sizes = {N, C*b*b, H, W} = {1,8,2,3}." in plain
  assert "no Order field: it packs as DEPTH_COLUMN_ROW" in plain
  assert "no output can be inferred" in dml.explain(
    dml.SpaceToDepthDesc(T("FLOAT32", (1, 2, 4, 6)), 0)
  )


# -- The generic tests' data (collected by tests/per_operator.py) ------------------------------


_DEPTH_SPACE_DESCS = {
  "DEPTH_TO_SPACE": (dml.DepthToSpaceDesc, "depth_to_space"),
  "DEPTH_TO_SPACE1": (dml.DepthToSpace1Desc, "depth_to_space1"),
  "SPACE_TO_DEPTH": (dml.SpaceToDepthDesc, "space_to_depth"),
  "SPACE_TO_DEPTH1": (dml.SpaceToDepth1Desc, "space_to_depth1"),
}


@st.composite
def depth_space_case(draw, op="DEPTH_TO_SPACE"):
  """DEPTH_TO_SPACE(1) or SPACE_TO_DEPTH(1): a small NCHW input of whole blocks, either order
  for the numbered operators."""
  desc_type, function = _DEPTH_SPACE_DESCS[op]
  level = draw(strategies.levels(op))
  data_type = draw(st.sampled_from(strategies.table_at(desc_type, level)["InputTensor"].data_types))
  b = draw(st.integers(1, 3))
  n, c, h, w = (draw(st.integers(1, 2)) for _ in range(4))
  to_space = op.startswith("DEPTH")
  sizes = (n, c * b * b, h, w) if to_space else (n, c, h * b, w * b)
  x = strategies.draw_data(draw, data_type, sizes)
  attributes = dict(block_size=b)
  if op.endswith("1"):
    attributes["order"] = draw(st.sampled_from(list(dml.DepthSpaceOrder)))
  desc = desc_type(TensorDesc(data_type, sizes), **attributes)
  return strategies.Case(
    desc,
    level,
    [x],
    lambda x, level: getattr(dml, function)(x, **attributes, feature_level=level),
    lambda: getattr(reference, function)(x, **attributes),
  )


def depth_space_mutations(desc, level, draw):
  """DEPTH_TO_SPACE(1) and SPACE_TO_DEPTH(1)'s own rules: BlockSize, whole blocks."""
  yield "block size 0", strategies.rebuild(desc, {"block_size": 0}), "BlockSize"
  b = desc.block_size + 1  # a block edge the input's sizes are not all multiples of
  n, c, h, w = desc.input_tensor.sizes
  sizes = (n, b * b * c + 1, h, w) if desc.OPERATOR.startswith("DEPTH") else (n, c, h, b * w + 1)
  yield (
    "partial blocks",
    strategies.rebuild(
      desc,
      {"block_size": b, "input_tensor": strategies.replace_tensor(desc.input_tensor, sizes=sizes)},
    ),
    "InputTensor.Sizes",
  )


def _depth_to_space(x, b, column_row_depth):
  n, depth, h, w = x.shape
  c = depth // (b * b)
  if column_row_depth:  # channel slowest, then block row, block column
    blocks = x.reshape(n, c, b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
  else:  # block row slowest, then block column, channel
    blocks = x.reshape(n, b, b, c, h, w).transpose(0, 3, 4, 1, 5, 2)
  return blocks.reshape(n, c, h * b, w * b)


def _space_to_depth(x, b, column_row_depth):
  n, c, h, w = x.shape
  blocks = x.reshape(n, c, h // b, b, w // b, b)
  if column_row_depth:
    blocks = blocks.transpose(0, 1, 3, 5, 2, 4)
  else:
    blocks = blocks.transpose(0, 3, 5, 1, 2, 4)
  return blocks.reshape(n, c * b * b, h // b, w // b)


def depth_space_cases(n, rng):
  """DEPTH_TO_SPACE and SPACE_TO_DEPTH (DEPTH_COLUMN_ROW) sharded on the batch, the channels
  and the height; their "1" forms with the other order on the channels and the height."""
  cases = []
  deep = rng.standard_normal((n, 4 * n, n, 2)).astype(np.float32)
  wide = rng.standard_normal((n, n, 2 * n, 4)).astype(np.float32)
  calls = (
    ("DEPTH_TO_SPACE", dml.depth_to_space, {}, (0, 1, 2)),
    ("DEPTH_TO_SPACE1", dml.depth_to_space1, {"order": "COLUMN_ROW_DEPTH"}, (1, 2)),
    ("SPACE_TO_DEPTH", dml.space_to_depth, {}, (0, 1, 2)),
    ("SPACE_TO_DEPTH1", dml.space_to_depth1, {"order": "COLUMN_ROW_DEPTH"}, (1, 2)),
  )
  for op, fn, kwargs, shards in calls:
    order = kwargs.get("order", "DEPTH_COLUMN_ROW")
    crd = order == "COLUMN_ROW_DEPTH"
    if op.startswith("DEPTH"):
      x, form = deep, _depth_to_space
      want = reference.depth_to_space1(deep, block_size=2, order=order)
    else:
      x, form = wide, _space_to_depth
      want = reference.space_to_depth1(wide, block_size=2, order=order)
    for shard in shards:
      cases.append(
        sharding_cases.Case(
          op,
          f"{order}, block 2, sharded on axis {shard}",
          lambda x, fn=fn, kwargs=kwargs: fn(x, block_size=2, **kwargs),
          lambda x, form=form, crd=crd: form(x, 2, crd),
          [(x, shard)],
          want,
        )
      )
  return cases


VALID = {
  "DEPTH_TO_SPACE": depth_space_case,
  "DEPTH_TO_SPACE1": lambda: depth_space_case(op="DEPTH_TO_SPACE1"),
  "SPACE_TO_DEPTH": lambda: depth_space_case(op="SPACE_TO_DEPTH"),
  "SPACE_TO_DEPTH1": lambda: depth_space_case(op="SPACE_TO_DEPTH1"),
}
MUTANTS = dict.fromkeys(_DEPTH_SPACE_DESCS, depth_space_mutations)
SHARDED_CASES = depth_space_cases
BFLOAT16_CALLS = {
  "depth_to_space": lambda x: dml.depth_to_space(x.reshape(1, 4, 2, 3), block_size=2),
  "space_to_depth1": lambda x: dml.space_to_depth1(
    x.reshape(1, 1, 4, 6), block_size=2, order="COLUMN_ROW_DEPTH"
  ),
}
