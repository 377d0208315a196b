"""Benchmark cases: MAX_UNPOOLING and UNFOLD, a max pooling's values scattered back and a
convolution's windows laid out as columns."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import dml_jax as dml
from benchmarks.harness import (
  Case,
  case,
  device_put,
  edge,
  jax_impl,
  onnx_model,
  ort_impl,
  random_data,
  shape_text,
  torch_impl,
)
from dml_jax._src import reference


def _pooling_indices(rng: np.random.Generator, pooled: tuple[int, int, int, int]) -> np.ndarray:
  """The flat output positions a 2x2, stride-2 max pooling of a (N, C, 2H, 2W) tensor gives
  for its (N, C, H, W) maxima: one random point of each window, counted over the whole tensor
  (DirectML's and ONNX's indices), uint32."""
  n, c, h, w = pooled
  dy, dx = rng.integers(0, 2, pooled), rng.integers(0, 2, pooled)
  rows = 2 * np.arange(h)[:, None] + dy
  cols = 2 * np.arange(w)[None, :] + dx
  planes = np.arange(n * c).reshape(n, c, 1, 1)
  return ((planes * 2 * h + rows) * 2 * w + cols).astype(np.uint32)


@case(
  "MAX_UNPOOLING",
  sizes={"large": (8, 64, 128, 128), "small": (4, 16, 64, 64), "tiny": (2, 3, 4, 5)},
  variants={"max_unpooling_2x2": {}},
  shard=lambda: {"batch": (0, 0)},
)
def max_unpooling_case(pooled: tuple[int, int, int, int], rng, *, dtype=np.float32) -> Case:
  """MAX_UNPOOLING of a 2x2, stride-2 max pooling's (N, C, H, W) values and indices into
  (N, C, 2H, 2W): every index distinct, as such a pooling gives them."""
  n, c, h, w = pooled
  out_shape = (n, c, 2 * h, 2 * w)
  plane = 4 * h * w
  host = [random_data(rng, pooled, dtype), _pooling_indices(rng, pooled)]
  x, indices = device_put(host)
  itemsize = np.dtype(dtype).itemsize

  def expected(host):
    out = np.zeros(math.prod(out_shape), dtype)
    out[host[1].reshape(-1)] = host[0].reshape(-1)
    return out.reshape(out_shape)

  def subset(host):
    # The first and last batch entries, each unpooled alone (its indices less its offset).
    chosen = edge(n, 1)
    parts = [
      reference.max_unpooling(
        host[0][k : k + 1],
        host[1][k : k + 1] - np.uint32(k * c * plane),
        output_sizes=(1, c, 2 * h, 2 * w),
      )
      for k in chosen
    ]
    return np.concatenate(parts), lambda a: a[chosen]

  def scatter_flat(x, i):
    flat = (
      jnp.zeros(math.prod(out_shape), x.dtype).at[i.reshape(-1)].set(x.reshape(-1), mode="drop")
    )
    return flat.reshape(out_shape)

  def peers(env, host):
    impls = [jax_impl(env, "zeros.at[i].set", "jax", jax.jit(scatter_flat), x, indices)]
    if env.torch:
      offsets = (np.arange(n * c, dtype=np.int64) * plane).reshape(n, c, 1, 1)
      tx = env.torch_from_jax(x)
      ti = env.torch_from_numpy(host[1].astype(np.int64) - offsets)
      fn = lambda: env.torch.nn.functional.max_unpool2d(
        tx, ti, kernel_size=2, stride=2, output_size=out_shape[2:]
      )
      impls.append(
        torch_impl(env, "torch max_unpool2d", fn, out_shape, note="int64 indices within each plane")
      )
    if env.ort:
      feeds = {"x": host[0], "i": host[1].astype(np.int64)}
      model = onnx_model(
        env,
        "MaxUnpool",
        list(feeds.items()),
        np.empty(out_shape, dtype),
        kernel_shape=[2, 2],
        strides=[2, 2],
      )
      impls.append(ort_impl(env, "MaxUnpool", model, feeds, out_shape, note="int64 indices"))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{shape_text(pooled)} 2x2",
    description=f"MAX_UNPOOLING of {pooled} values and uint32 indices (a 2x2, stride-2 max"
    f" pooling's) into {out_shape}",
    bytes_moved=math.prod(pooled) * (itemsize + 4) + math.prod(out_shape) * itemsize,
    host=host,
    inputs=(x, indices),
    dml=jax.jit(lambda x, i: dml.max_unpooling(x, i, output_sizes=out_shape)),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("zeros.at[i].set", scatter_flat),
    notes=["bytes: values and indices read, the whole output written (zeros included)"],
  )


@case(
  "UNFOLD",
  sizes={"large": (8, 64, 128, 128), "small": (4, 16, 64, 64), "tiny": (2, 3, 5, 6)},
  variants={"unfold_3x3": {}},
  shard=lambda: {"batch": (0,)},
)
def unfold_case(shape: tuple[int, int, int, int], rng, *, dtype=np.float32) -> Case:
  """UNFOLD (im2col) of an NCHW input for a 3x3 convolution: stride 1, padding 1 on each side,
  so that every pixel starts a window."""
  n, c, h, w = shape
  out_shape = (n, c * 9, h * w)
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  itemsize = np.dtype(dtype).itemsize
  attributes = dict(window_sizes=(3, 3), start_padding=(1, 1), end_padding=(1, 1))

  def expected(host):
    padded = np.pad(host[0], ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    return windows.transpose(0, 1, 4, 5, 2, 3).reshape(out_shape)

  def subset(host):
    chosen = edge(n, 1)
    return reference.unfold(host[0][chosen], **attributes), lambda a: a[chosen]

  def patches(x):
    out = lax.conv_general_dilated_patches(
      x, (3, 3), (1, 1), ((1, 1), (1, 1)), precision=lax.Precision.HIGHEST
    )
    return out.reshape(out_shape)

  def peers(env, host):
    impls = [jax_impl(env, "lax.conv_general_dilated_patches", "jax", jax.jit(patches), x)]
    if env.torch:
      tx = env.torch_from_jax(x)
      fn = lambda: env.torch.nn.functional.unfold(tx, kernel_size=3, padding=1)
      impls.append(torch_impl(env, "torch unfold", fn, out_shape))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{shape_text(shape)} 3x3 p1",
    description=f"UNFOLD of {shape} into 3x3 windows, stride 1, padding 1 -> {out_shape}",
    bytes_moved=(math.prod(shape) + math.prod(out_shape)) * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: dml.unfold(x, **attributes)),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("lax.conv_general_dilated_patches", patches),
    notes=[
      "the jnp peer is a convolution with one-hot filters at HIGHEST precision (exact for"
      " finite float32 values; XLA may lower it as a convolution)"
    ],
  )
