"""Benchmark cases: RESAMPLE's and UPSAMPLE_2D's nearest-neighbour 2x upsampling of NCHW
images (a copy: each input element written to a 2x2 block of the output)."""

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
  onnx_chain,
  ort_impl,
  random_data,
  shape_text,
  take,
  torch_impl,
)
from dml_jax._src import reference

_SIZES = {
  "large": (16, 64, 256, 256),
  "small": (8, 32, 128, 128),
  "tiny": (2, 3, 5, 7),
}
_SHARDS: Shardings = {"batch": (0,), "axis": (2,)}


@case(
  "RESAMPLE",
  sizes=_SIZES,
  variants={"resample_nearest_2x": dict(op="RESAMPLE")},
  shard=lambda **_: _SHARDS,
)
@case(
  "RESAMPLE1",
  sizes=_SIZES,
  variants={"resample1_nearest_2x": dict(op="RESAMPLE1")},
  shard=lambda **_: _SHARDS,
)
@case(
  "RESAMPLE2",
  sizes=_SIZES,
  variants={"resample2_nearest_2x": dict(op="RESAMPLE2")},
  shard=lambda **_: _SHARDS,
)
@case(
  "UPSAMPLE_2D",
  sizes=_SIZES,
  variants={"upsample_2d_nearest_2x": dict(op="UPSAMPLE_2D")},
  shard=lambda **_: _SHARDS,
)
def resample_case(shape: tuple[int, int, int, int], rng, *, op: str, dtype=np.float32) -> Case:
  """`op` NEAREST_NEIGHBOR doubling the height and width of an NCHW `shape` image."""
  n, c, h, w = shape
  out_shape = (n, c, 2 * h, 2 * w)
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  itemsize = np.dtype(dtype).itemsize
  nearest = dict(interpolation_mode="NEAREST_NEIGHBOR", scales=(1, 1, 2, 2))
  calls = {
    "RESAMPLE": lambda x: dml.resample(x, **nearest),
    "RESAMPLE1": lambda x: dml.resample1(x, **nearest),
    # ONNX's round_prefer_floor as ONNX Runtime writes it: INCREASING, InputPixelOffset + 0.5.
    "RESAMPLE2": lambda x: dml.resample2(
      x, rounding_direction="INCREASING", input_pixel_offsets=(0.5, 0.5, 1, 1), **nearest
    ),
    "UPSAMPLE_2D": lambda x: dml.upsample_2d(x, scale_size={"Width": 2, "Height": 2}),
  }
  call = calls[op]

  def numpy_form(a):
    # Each element broadcast to a 2x2 block (x[..., h // 2, w // 2]).
    blocks = a[:, :, :, None, :, None]
    return jax.numpy.broadcast_to(blocks, (n, c, h, 2, w, 2)).reshape(out_shape)

  def subset(host):
    # A few images and channels, the top-left rows and columns: nearest 2x reads input rows
    # and columns [0, k) for output rows and columns [0, 2k), clamped the same way.
    chosen_n, chosen_c, k = edge(n, 1), edge(c, 1), min(h, w, 3)
    part = take(host[0], chosen_n, chosen_c, every(k), every(k))
    want = reference.resample(
      part,
      interpolation_mode="NEAREST_NEIGHBOR",
      scales=(1, 1, 2, 2),
      output_sizes=part.shape[:2] + (2 * k, 2 * k),
    )
    return want, lambda a: take(a, chosen_n, chosen_c, every(2 * k), every(2 * k))

  def peers(env, host):
    impls = [
      jax_impl(env, "jnp broadcast/reshape", "jax", jax.jit(numpy_form), x),
      jax_impl(
        env,
        "jax.image.resize nearest",
        "jax",
        jax.jit(lambda a: jax.image.resize(a, out_shape, "nearest")),
        x,
      ),
    ]
    if env.ort:
      # ONNX Resize as ONNX Runtime's DirectML provider reads it onto RESAMPLE2.
      scales = np.array([1, 1, 2, 2], np.float32)
      feeds = {"x": host[0], "scales": scales}
      model = onnx_chain(
        env,
        [
          (
            "Resize",
            ["x", "", "scales"],
            dict(
              mode="nearest",
              coordinate_transformation_mode="half_pixel",
              nearest_mode="round_prefer_floor",
            ),
          )
        ],
        list(feeds.items()),
        np.empty(out_shape, dtype),
      )
      impls.append(ort_impl(env, "Resize nearest", model, feeds, out_shape))
    if env.torch:
      tx = env.torch_from_jax(x)
      interpolate = env.torch.nn.functional.interpolate
      impls.append(
        torch_impl(
          env, "torch interpolate nearest", lambda: interpolate(tx, scale_factor=2), out_shape
        )
      )
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{shape_text(shape)} x2",
    description=f"{op} NEAREST_NEIGHBOR of {shape}, height and width x2 -> {out_shape}",
    bytes_moved=(1 + 4) * math.prod(shape) * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(call),
    expected=lambda host: np.asarray(numpy_form(host[0])),
    subset=subset,
    peers=peers,
    jnp_peer=("jnp broadcast/reshape", numpy_form),
  )
