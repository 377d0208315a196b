"""Benchmark cases: ELEMENT_WISE_IDENTITY, plain and on buffers with strides and offsets (dml.execute)."""

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
  onnx_chain,
  onnx_model,
  ort_impl,
  random_data,
  shape_text,
  take,
  torch_impl,
)
from dml_jax._src import reference


@case(
  "ELEMENT_WISE_IDENTITY",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (6, 10)},
  variants={"element_wise_identity_scale_bias": dict(scale=0.5, bias=-1.25)},
)
def element_wise_identity_case(
  shape: tuple[int, int], rng, *, scale: float, bias: float, dtype=np.float32
) -> Case:
  """ELEMENT_WISE_IDENTITY of an input of `shape` with a ScaleBias: x * scale + bias, the
  product rounded before the sum."""
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  itemsize = np.dtype(dtype).itemsize
  s, b = np.float32(scale), np.float32(bias)

  def subset(host):
    chosen = [edge(n, 2) for n in shape]
    pick = lambda a: take(a, *chosen)
    oracle = reference.element_wise_identity(pick(host[0]), scale_bias=(scale, bias))
    return oracle, pick

  def peers(env, host):
    # Two calls each, so that the product is rounded before the sum (one fused call would
    # contract them into an FMA: another result).
    multiply, add = jax.jit(lambda x: x * s), jax.jit(lambda p: p + b)
    impls = [jax_impl(env, "jnp x * s, then + b", "jax", lambda x: add(multiply(x)), x)]
    if env.torch:
      tx = env.torch_from_jax(x)
      impls.append(torch_impl(env, "torch x * s, then + b", lambda: (tx * scale).add_(bias), shape))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{shape_text(shape)} *{scale}+{bias}",
    description=f"ELEMENT_WISE_IDENTITY of {shape} with ScaleBias {{{scale}, {bias}}}",
    bytes_moved=2 * math.prod(shape) * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: dml.element_wise_identity(x, scale_bias=(scale, bias))),
    expected=lambda host: (host[0] * s) + b,
    subset=subset,
    peers=peers,
    notes=["the peers run the product and the sum as two calls: two roundings, as dml_jax"],
  )


@case(
  "ELEMENT_WISE_IDENTITY",
  sizes={"large": (32, 256, 256, 64), "small": (8, 64, 64, 32), "tiny": (8, 3, 4, 5)},
  variants={"element_wise_identity_nhwc_to_nchw": {}},
  shard=lambda: {"batch": (0,)},
)
def nhwc_to_nchw_case(shape: tuple[int, int, int, int], rng, *, dtype=np.float32) -> Case:
  """ELEMENT_WISE_IDENTITY run on buffers (`dml.execute`): an NHWC buffer read through
  permuted strides as NCHW, written packed into an output buffer, the layout change DirectML
  makes with this operator."""
  n, h, w, c = shape
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  itemsize = np.dtype(dtype).itemsize
  data_type = dml.DataType.from_dtype(np.dtype(dtype))
  nchw = dml.TensorDesc(data_type, (n, c, h, w), strides=(h * w * c, 1, w * c, c))
  desc = dml.ElementWiseIdentityDesc(nchw, dml.TensorDesc(data_type, (n, c, h, w)))
  size = n * h * w * c

  def on_buffers(x):
    output = jnp.zeros(size, x.dtype)
    (out,) = dml.execute(desc, inputs=[dml.Binding(x.reshape(-1))], outputs=[dml.Binding(output)])
    return out.reshape(n, c, h, w)

  def subset(host):
    chosen = [edge(n, 1), every(h) if h <= 8 else edge(h, 2), edge(w, 2), every(c)]
    oracle = reference.element_wise_identity(take(host[0], *chosen)).transpose(0, 3, 1, 2)
    return oracle, lambda a: take(a, chosen[0], chosen[3], chosen[1], chosen[2])

  transpose = lambda x: jnp.transpose(x, (0, 3, 1, 2))

  def peers(env, host):
    impls = [jax_impl(env, "jnp.transpose", "jax", jax.jit(transpose), x)]
    if env.torch:
      tx = env.torch_from_jax(x)
      impls.append(
        torch_impl(
          env,
          "torch permute().contiguous()",
          lambda: tx.permute(0, 3, 1, 2).contiguous(),
          (n, c, h, w),
        )
      )
    if env.ort:
      feeds = {"x": host[0]}
      out = np.empty((n, c, h, w), dtype)
      model = onnx_model(env, "Transpose", list(feeds.items()), out, perm=[0, 3, 1, 2])
      impls.append(ort_impl(env, "Transpose", model, feeds, (n, c, h, w)))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"NHWC {shape_text(shape)} -> NCHW",
    description=f"ELEMENT_WISE_IDENTITY on buffers: NHWC {shape} read as NCHW through strides,"
    " written packed",
    bytes_moved=2 * size * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(on_buffers),
    expected=lambda host: host[0].transpose(0, 3, 1, 2),
    subset=subset,
    peers=peers,
    jnp_peer=("jnp.transpose", transpose),
  )


@case(
  "JOIN",
  sizes={"large": (4096, 4096), "small": (1024, 1024), "tiny": (8, 16)},
  variants={"join_padded_pitch": dict(pad=64)},
)
def join_padded_pitch_case(shape: tuple[int, int], rng, *, pad: int, dtype=np.float32) -> Case:
  """JOIN run on buffers (`dml.execute`): 4 inputs of `shape`, back to back in one buffer and
  bound at their byte offsets, joined along axis 1 into an output buffer whose rows are `pad`
  elements longer than the joined rows (a padded pitch); the pad keeps the zeros the buffer was
  made with."""
  rows, cols = shape
  itemsize = np.dtype(dtype).itemsize
  piece = rows * cols
  assert piece * itemsize % 16 == 0, "each input's offset must be a multiple of 16 bytes"
  host = [random_data(rng, (4 * piece,), dtype)]
  (x,) = device_put(host)
  width = 4 * cols  # the joined row
  pitch = width + pad
  data_type = dml.DataType.from_dtype(np.dtype(dtype))
  desc = dml.JoinDesc(
    [dml.TensorDesc(data_type, (rows, cols))] * 4,
    axis=1,
    output_tensor=dml.TensorDesc(data_type, (rows, width), strides=(pitch, 1)),
  )
  out_shape = (rows, pitch)

  def pieces(buffer):
    return [buffer[k * piece : (k + 1) * piece].reshape(rows, cols) for k in range(4)]

  def on_buffers(buffer):
    output = jnp.zeros(rows * pitch, buffer.dtype)
    inputs = [dml.Binding(buffer, offset=k * piece * itemsize) for k in range(4)]
    (out,) = dml.execute(desc, inputs=inputs, outputs=[dml.Binding(output)])
    return out.reshape(out_shape)

  def padded(joined):
    return np.pad(joined, ((0, 0), (0, pad)))

  def subset(host):
    chosen = edge(rows, 2)
    oracle = padded(reference.join([p[chosen] for p in pieces(host[0])], axis=1))
    return oracle, lambda a: a[chosen]

  def peers(env, host):
    concat_pad = jax.jit(lambda b: jnp.pad(jnp.concatenate(pieces(b), axis=1), ((0, 0), (0, pad))))
    impls = [jax_impl(env, "jnp.concatenate + jnp.pad", "jax", concat_pad, x)]
    if env.torch:
      views = pieces(env.torch_from_jax(x))  # views of the one buffer
      pad_rows = env.torch.nn.functional.pad
      impls.append(
        torch_impl(
          env,
          "torch.cat + F.pad",
          lambda: pad_rows(env.torch.cat(views, dim=1), (0, pad)),
          out_shape,
        )
      )
    if env.ort:
      feeds = {f"x{k}": p for k, p in enumerate(pieces(host[0]))}
      feeds["pads"] = np.array([0, 0, 0, pad], np.int64)
      nodes = [
        ("Concat", [f"x{k}" for k in range(4)], {"axis": 1}),
        ("Pad", ["t0", "pads"], {}),
      ]
      model = onnx_chain(env, nodes, list(feeds.items()), np.empty(out_shape, dtype))
      impls.append(ort_impl(env, "Concat + Pad", model, feeds, out_shape))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"4x({rows},{cols}) ax1 +{pad}",
    description=f"JOIN on buffers: 4 x ({rows}, {cols}) at offsets of one buffer along axis 1,"
    f" written with row pitch {pitch} -> buffer {out_shape}",
    bytes_moved=(4 * piece + rows * pitch) * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(on_buffers),
    expected=lambda host: padded(np.concatenate(pieces(host[0]), axis=1)),
    subset=subset,
    peers=peers,
    notes=["the output is the whole padded buffer: the pad's zeros are written and checked too"],
  )


@case(
  "ELEMENT_WISE_IDENTITY",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (6, 10)},
  variants={"zero_stride_broadcast": {}},
)
def zero_stride_broadcast_case(shape: tuple[int, int], rng, *, dtype=np.float32) -> Case:
  """ELEMENT_WISE_IDENTITY run on buffers (`dml.execute`): a buffer of one row of `shape[1]`
  elements read through a zero leading stride as `shape`, written packed: a broadcast."""
  rows, cols = shape
  itemsize = np.dtype(dtype).itemsize
  host = [random_data(rng, (cols,), dtype)]
  (x,) = device_put(host)
  data_type = dml.DataType.from_dtype(np.dtype(dtype))
  desc = dml.ElementWiseIdentityDesc(
    dml.TensorDesc(data_type, shape, strides=(0, 1)), dml.TensorDesc(data_type, shape)
  )

  def on_buffers(row):
    output = jnp.zeros(rows * cols, row.dtype)
    (out,) = dml.execute(desc, inputs=[dml.Binding(row)], outputs=[dml.Binding(output)])
    return out.reshape(shape)

  def subset(host):
    chosen = [edge(rows, 2), edge(cols, 2)]
    logical = np.broadcast_to(host[0], shape)
    return reference.element_wise_identity(take(logical, *chosen)), lambda a: take(a, *chosen)

  def peers(env, host):
    # A jitted function's result is a buffer of its own: the broadcast is written out.
    broadcast = jax.jit(lambda r: jnp.broadcast_to(r, shape))
    impls = [jax_impl(env, "jnp.broadcast_to", "jax", broadcast, x)]
    if env.torch:
      row = env.torch_from_jax(x).reshape(1, cols)
      impls.append(
        torch_impl(
          env, "torch expand().contiguous()", lambda: row.expand(rows, cols).contiguous(), shape
        )
      )
    if env.ort:
      feeds = {"x": host[0].reshape(1, cols), "shape": np.array(shape, np.int64)}
      model = onnx_model(env, "Expand", list(feeds.items()), np.empty(shape, dtype))
      impls.append(ort_impl(env, "Expand", model, feeds, shape))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"(1,{cols}) -> {shape_text(shape)}",
    description=f"ELEMENT_WISE_IDENTITY on buffers: a row of {cols} read with strides {{0, 1}}"
    f" as {shape}, written packed",
    bytes_moved=(cols + rows * cols) * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(on_buffers),
    expected=lambda host: np.tile(host[0], (rows, 1)),
    subset=subset,
    peers=peers,
  )
