"""Benchmark cases: ONE_HOT along the first and the last axis."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

import dml_jax as dml
from benchmarks.harness import (
  Case,
  case,
  device_put,
  edge,
  every,
  jax_impl,
  onnx_model,
  ort_impl,
  shape_text,
  take,
  torch_impl,
)
from dml_jax._src import reference


@case(
  "ONE_HOT",
  sizes={"large": (1 << 20, 1024), "small": (1 << 14, 1024), "tiny": (40, 16)},
  variants={"one_hot": dict(axis=0), "one_hot_last": dict(axis=1)},
  shard=lambda axis: {"batch": (1 - axis, None)},
)
def one_hot_case(sizes: tuple[int, int], rng, *, axis: int) -> Case:
  """ONE_HOT of `count` random in-range int32 indices into `depth`, float32 values [0, 1]:
  indices (1, count) along axis 0, output (depth, count); or indices (count, 1) along axis 1,
  output (count, depth), the layout jax.nn.one_hot and torch give by default."""
  count, depth = sizes
  index_shape = (1, count) if axis == 0 else (count, 1)
  out_shape = (depth, count) if axis == 0 else (count, depth)
  values_host = np.array([[0, 1]], np.float32)
  host = [rng.integers(0, depth, index_shape, dtype=np.int32), values_host]
  indices, values = device_put(host)

  def expected(host):
    positions = np.arange(depth, dtype=np.int32).reshape((depth, 1) if axis == 0 else (1, depth))
    return (positions == host[0]).astype(np.float32)

  def subset(host):
    chosen = edge(count, 16)  # a few whole sequences
    if axis == 0:
      pick = lambda a: take(a, every(a.shape[0]), chosen)
      return reference.one_hot(host[0][:, chosen], host[1], axis=0, depth=depth), pick
    pick = lambda a: take(a, chosen, every(a.shape[1]))
    return reference.one_hot(host[0][chosen], host[1], axis=1, depth=depth), pick

  def jnp_one_hot(indices, values):  # values [0, 1]: jax.nn.one_hot's own
    return jax.nn.one_hot(indices.reshape(-1), depth, dtype=jnp.float32, axis=axis)

  def peers(env, host):
    impls = [jax_impl(env, "jax.nn.one_hot", "jax", jax.jit(jnp_one_hot), indices, values)]
    if env.torch:
      torch = env.torch
      ti = env.torch_from_numpy(host[0].reshape(-1).astype(np.int64))
      functional = torch.nn.functional
      if axis == 0:  # torch's class axis is the last: transposed into DirectML's layout
        fn = lambda: functional.one_hot(ti, depth).to(torch.float32).t().contiguous()
        note = "int64 indices; int64 one-hot, then float32 and transposed"
      else:
        fn = lambda: functional.one_hot(ti, depth).to(torch.float32)
        note = "int64 indices; int64 one-hot, then float32"
      impls.append(torch_impl(env, "torch F.one_hot", fn, out_shape, note=note))
      target = ti.view(index_shape)
      impls.append(
        torch_impl(
          env,
          "torch zeros.scatter_",
          lambda: torch.zeros(out_shape, device=env.torch_device).scatter_(axis, target, 1.0),
          out_shape,
          note="int64 indices",
        )
      )
    if env.ort:
      feeds = {
        "indices": host[0].reshape(-1),
        "depth": np.array([depth], np.int32),
        "values": host[1].reshape(-1),
      }
      model = onnx_model(
        env, "OneHot", list(feeds.items()), np.empty(out_shape, np.float32), axis=axis
      )
      impls.append(ort_impl(env, "OneHot", model, feeds, out_shape, note="1-D indices"))
    return impls

  return Case(
    dtype="float32",
    shape=f"idx{shape_text(index_shape)} D{depth} ax{axis}",
    description=f"ONE_HOT of int32 indices {index_shape} into depth {depth} along axis {axis},"
    f" float32 values [0, 1] -> {out_shape}",
    bytes_moved=math.prod(out_shape) * 4 + count * 4,
    host=host,
    inputs=(indices, values),
    dml=jax.jit(lambda i, v: dml.one_hot(i, v, axis=axis, depth=depth)),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("jax.nn.one_hot", jnp_one_hot),
  )
