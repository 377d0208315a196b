"""Benchmark cases: DEPTH_TO_SPACE(1) and SPACE_TO_DEPTH(1) in both orders."""

from __future__ import annotations

import math

import jax
import numpy as np

import dml_jax as dml
from benchmarks.harness import (
  Case,
  Shardings,
  case,
  device_put,
  edge,
  every,
  jax_impl,
  onnx_model,
  ort_impl,
  random_data,
  shape_text,
  take,
  torch_impl,
)
from dml_jax._src import reference

_DEPTH_SPACE_MODES = {"DEPTH_COLUMN_ROW": "DCR", "COLUMN_ROW_DEPTH": "CRD"}  # ONNX's modes
_DEPTH_SPACE_SIZES = {
  "large": (16, 256, 256, 256),
  "small": (8, 64, 128, 128),
  "tiny": (8, 32, 3, 5),
}
_DEPTH_SPACE_SHARDS: Shardings = {"batch": (0,), "axis": (1,)}


@case(
  "DEPTH_TO_SPACE1",
  sizes=_DEPTH_SPACE_SIZES,
  variants={
    "depth_to_space1_dcr": dict(op="DEPTH_TO_SPACE1", order="DEPTH_COLUMN_ROW"),
    "depth_to_space1_crd": dict(op="DEPTH_TO_SPACE1", order="COLUMN_ROW_DEPTH"),
  },
  shard=lambda **_: _DEPTH_SPACE_SHARDS,
)
@case(
  "DEPTH_TO_SPACE",
  sizes=_DEPTH_SPACE_SIZES,
  variants={"depth_to_space": {}},
  shard=lambda **_: _DEPTH_SPACE_SHARDS,
)
@case(
  "SPACE_TO_DEPTH1",
  sizes=_DEPTH_SPACE_SIZES,
  variants={"space_to_depth1_crd": dict(op="SPACE_TO_DEPTH1", order="COLUMN_ROW_DEPTH")},
  shard=lambda **_: _DEPTH_SPACE_SHARDS,
)
@case(
  "SPACE_TO_DEPTH",
  sizes=_DEPTH_SPACE_SIZES,
  variants={"space_to_depth": dict(op="SPACE_TO_DEPTH")},
  shard=lambda **_: _DEPTH_SPACE_SHARDS,
)
def depth_space_case(
  depth_shape: tuple[int, int, int, int],
  rng,
  *,
  op: str = "DEPTH_TO_SPACE",
  order: str = "DEPTH_COLUMN_ROW",
  block_size: int = 2,
  dtype=np.float32,
) -> Case:
  """`op` (DEPTH_TO_SPACE(1) or SPACE_TO_DEPTH(1)) between the NCHW depth side `depth_shape`
  and its space side, blocks of `block_size` packed in `order` (the operators without the 1:
  DEPTH_COLUMN_ROW)."""
  b = block_size
  n, depth, h, w = depth_shape
  c = depth // (b * b)
  space_shape = (n, c, h * b, w * b)
  to_space = op.startswith("DEPTH")
  in_shape, out_shape = (depth_shape, space_shape) if to_space else (space_shape, depth_shape)
  host = [random_data(rng, in_shape, dtype)]
  (x,) = device_put(host)
  itemsize = np.dtype(dtype).itemsize
  mode, crd = _DEPTH_SPACE_MODES[order], order == "COLUMN_ROW_DEPTH"
  # The depth side's channel axis split as the order packs it, and the space side's blocks.
  packed = (n, c, b, b, h, w) if crd else (n, b, b, c, h, w)
  blocks = (n, c, h, b, w, b)
  to_blocks = (0, 1, 4, 2, 5, 3) if crd else (0, 3, 4, 1, 5, 2)  # packed -> blocks
  to_packed = (0, 1, 3, 5, 2, 4) if crd else (0, 3, 5, 1, 2, 4)  # blocks -> packed

  def numpy_form(a):
    if to_space:
      return a.reshape(packed).transpose(to_blocks).reshape(out_shape)
    return a.reshape(blocks).transpose(to_packed).reshape(out_shape)

  def subset(host):
    # A few batch entries and block positions, every channel, on both sides.
    chosen_n, chosen_h, chosen_w = edge(n, 1), edge(h, 2), edge(w, 2)
    pixels = lambda chosen: np.concatenate([p * b + np.arange(b) for p in chosen])
    depth_pick = lambda a: take(a, chosen_n, every(depth), chosen_h, chosen_w)
    space_pick = lambda a: take(a, chosen_n, every(c), pixels(chosen_h), pixels(chosen_w))
    attributes = dict(block_size=b) | (dict(order=order) if op.endswith("1") else {})
    oracle = getattr(reference, op.lower())
    if to_space:
      return oracle(depth_pick(host[0]), **attributes), space_pick
    return oracle(space_pick(host[0]), **attributes), depth_pick

  def peers(env, host):
    impls = [jax_impl(env, "jnp reshape/transpose", "jax", jax.jit(numpy_form), x)]
    if env.torch and crd:
      tx = env.torch_from_jax(x)
      functional = env.torch.nn.functional
      torch_op = functional.pixel_shuffle if to_space else functional.pixel_unshuffle
      name = "torch pixel_shuffle" if to_space else "torch pixel_unshuffle"
      impls.append(torch_impl(env, name, lambda: torch_op(tx, b), out_shape))
    if env.ort and (to_space or not crd):
      feeds = {"x": host[0]}
      onnx_op, extra = ("DepthToSpace", dict(mode=mode)) if to_space else ("SpaceToDepth", {})
      model = onnx_model(
        env, onnx_op, list(feeds.items()), np.empty(out_shape, dtype), blocksize=b, **extra
      )
      impls.append(ort_impl(env, f"{onnx_op} {mode}", model, feeds, out_shape))
    return impls

  notes = []
  if not crd:
    notes.append(
      "no torch peer: torch's pixel_shuffle and pixel_unshuffle pack channels as"
      " COLUMN_ROW_DEPTH (ONNX CRD), not DEPTH_COLUMN_ROW"
    )
  if crd and not to_space:
    notes.append("no ONNX Runtime peer: ONNX SpaceToDepth packs as DEPTH_COLUMN_ROW (DCR) only")
  attributes = dict(block_size=b) | (dict(order=order) if op.endswith("1") else {})
  function = getattr(dml, op.lower())
  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{shape_text(in_shape)} b{b} {mode}",
    description=f"{op} of {in_shape}, block {b}, {order} (ONNX {mode}) -> {out_shape}",
    bytes_moved=2 * math.prod(in_shape) * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: function(x, **attributes)),
    expected=lambda host: numpy_form(host[0]),
    subset=subset,
    peers=peers,
    notes=notes,
    jnp_peer=("jnp reshape/transpose", numpy_form),
  )
