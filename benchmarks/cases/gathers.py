"""Benchmark cases: GATHER_ELEMENTS, GATHER_ND, GATHER_ND1 and GATHER."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import dml_jax as dml
from benchmarks.harness import (
  SHORT_DTYPES,
  Case,
  case,
  device_put,
  edge,
  every,
  jax_impl,
  normalized,
  onnx_model,
  ort_impl,
  random_data,
  random_indices,
  shape_text,
  take,
  torch_impl,
)
from dml_jax._src import reference


@case(
  "GATHER_ELEMENTS",
  sizes={"large": (8192, 8192), "small": (4096, 4096), "tiny": (16, 24)},
  variants={
    "gather_elements_axis1": dict(axis=1),
    "gather_elements_axis0": dict(axis=0),
    "gather_elements_axis1_f16": dict(axis=1, dtype=np.float16),
    "gather_elements_axis1_i8": dict(axis=1, dtype=np.int8),
  },
  shard=lambda axis, **_: {"batch": (1 - axis,) * 2, "axis": (axis,) * 2},
)
def gather_elements_case(shape: tuple[int, int], rng, *, axis: int, dtype=np.float32) -> Case:
  """GATHER_ELEMENTS of an input of `shape` along `axis`, random int32 indices of the same shape."""
  host = [random_data(rng, shape, dtype), random_indices(rng, shape, shape[axis])]
  x, indices = device_put(host)
  itemsize = np.dtype(dtype).itemsize
  out_bytes = math.prod(shape) * itemsize

  def subset(host):
    x, indices = host
    # A few whole lanes along the axis.
    selection = (
      (every(shape[0]), edge(shape[1], 1)) if axis == 0 else (edge(shape[0], 1), every(shape[1]))
    )
    pick = lambda a: take(a, *selection)
    return reference.gather_elements(pick(x), pick(indices), axis=axis), pick

  take_along_axis = lambda x, i: jnp.take_along_axis(x, i, axis=axis)

  def peers(env, host):
    impls = [
      jax_impl(env, "jnp.take_along_axis", "jax", jax.jit(take_along_axis), x, indices),
      jax_impl(
        env,
        "lax.gather (in bounds)",
        "jax",
        jax.jit(lambda x, i: jnp.take_along_axis(x, i, axis=axis, mode="promise_in_bounds")),
        x,
        indices,
      ),
    ]
    if env.torch:
      tx, ti = env.torch_from_jax(x), env.torch_from_jax(indices)
      impls.append(
        torch_impl(
          env, "torch.gather", lambda: env.torch.gather(tx, axis, ti), shape, note="int32 indices"
        )
      )
    if env.ort:
      feeds = {"data": host[0], "indices": host[1]}
      model = onnx_model(env, "GatherElements", list(feeds.items()), host[0], axis=axis)
      impls.append(ort_impl(env, "GatherElements", model, feeds, shape, note="int32 indices"))
    return impls

  short = SHORT_DTYPES[np.dtype(dtype).name]
  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{shape_text(shape)} idx i32 ax{axis}",
    description=f"GATHER_ELEMENTS of {short} {shape} with random int32 indices {shape} along"
    f" axis {axis}",
    bytes_moved=2 * out_bytes + math.prod(shape) * 4,
    host=host,
    inputs=(x, indices),
    dml=jax.jit(lambda x, i: dml.gather_elements(x, i, axis=axis)),
    expected=lambda host: np.take_along_axis(host[0], normalized(host[1], shape[axis]), axis),
    subset=subset,
    peers=peers,
    jnp_peer=("jnp.take_along_axis", take_along_axis),
  )


@case(
  "GATHER_ND",
  sizes={
    "large": ((1024, 1024, 256), 65536),
    "small": ((256, 256, 256), 65536),
    "tiny": ((8, 6, 4), 16),
  },
  variants={"gather_nd": {}},
  shard=lambda: {"batch": (None, 1), "axis": (0, None)},
)
def gather_nd_case(sizes: tuple[tuple[int, int, int], int], rng) -> Case:
  """GATHER_ND: `sizes` is the input's (H, W, row) and the count of (H, W) tuples."""
  shape, tuples = sizes
  height, width, row = shape
  host = [
    random_data(rng, shape, np.float32),
    np.stack(
      [random_indices(rng, (1, tuples), height), random_indices(rng, (1, tuples), width)], axis=-1
    ),
  ]  # (1, tuples, 2)
  x, indices = device_put(host)
  out_shape = (1, tuples, row)

  def expected(host):
    x, i = host
    return x[normalized(i[..., 0], height), normalized(i[..., 1], width)]

  def subset(host):
    x, i = host
    chosen = edge(tuples, 32)
    pick = lambda a: a[:, chosen]
    return reference.gather_nd(x, pick(i)), pick

  rows_jnp = lambda x, i: x[i[..., 0], i[..., 1]]

  def peers(env, host):
    impls = [
      jax_impl(env, "jnp x[i0,i1]", "jax", jax.jit(rows_jnp), x, indices),
      jax_impl(
        env,
        "lax.gather (in bounds)",
        "jax",
        jax.jit(lambda x, i: x.at[i[..., 0], i[..., 1]].get(mode="promise_in_bounds")),
        x,
        indices,
      ),
    ]
    if env.torch:
      tx, ti = env.torch_from_jax(x), env.torch_from_jax(indices)
      impls.append(
        torch_impl(
          env, "torch x[i0,i1]", lambda: tx[ti[..., 0], ti[..., 1]], out_shape, note="int32 indices"
        )
      )
    if env.ort:
      feeds = {"data": host[0], "indices": host[1].astype(np.int64)}
      model = onnx_model(env, "GatherND", list(feeds.items()), np.empty(out_shape, np.float32))
      impls.append(
        ort_impl(
          env,
          "GatherND",
          model,
          feeds,
          out_shape,
          note="int64 indices (ONNX GatherND takes no int32)",
        )
      )
    return impls

  return Case(
    dtype="float32",
    shape=f"{shape_text(shape)} idx{shape_text((1, tuples, 2))}",
    description=f"GATHER_ND of {tuples} int32 2-tuples (indices (1, {tuples}, 2)) into f32"
    f" {shape}: row gathers of {row} -> {out_shape}",
    bytes_moved=2 * math.prod(out_shape) * 4 + tuples * 2 * 4,
    host=host,
    inputs=(x, indices),
    dml=jax.jit(lambda x, i: dml.gather_nd(x, i)),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("jnp x[i0,i1]", rows_jnp),
  )


@case(
  "GATHER_ND1",
  sizes={
    "large": ((64, 128, 128, 256), 1024),
    "small": ((16, 64, 64, 256), 4096),
    "tiny": ((8, 8, 4, 3), 6),
  },
  variants={"gather_nd1": {}},
  shard=lambda: {"batch": (0, 1), "axis": (1, None)},
)
def gather_nd1_case(sizes: tuple[tuple[int, int, int, int], int], rng) -> Case:
  """GATHER_ND1 with one batch dimension: `sizes` is the input's (batch, H, W, row) and the count
  of (H, W) tuples per batch entry."""
  shape, tuples = sizes
  batch, height, width, row = shape
  host = [
    random_data(rng, shape, np.float32),
    np.stack(
      [
        random_indices(rng, (1, batch, tuples), height),
        random_indices(rng, (1, batch, tuples), width),
      ],
      axis=-1,
    ),
  ]
  x, indices = device_put(host)
  out_shape = (1, batch, tuples, row)
  counts = dict(input_dimension_count=4, indices_dimension_count=3, batch_dimension_count=1)

  def expected(host):
    x, i = host
    b = np.arange(batch)[:, None]
    return x[b, normalized(i[0, ..., 0], height), normalized(i[0, ..., 1], width)].reshape(
      out_shape
    )

  def subset(host):
    x, i = host
    chosen_b, chosen_t = edge(batch, 1), edge(tuples, 16)
    pick = lambda a: take(a, [0], chosen_b, chosen_t, every(a.shape[3]))
    return reference.gather_nd(x[chosen_b], i[:, chosen_b][:, :, chosen_t], **counts), pick

  def jnp_rows(x, i, **get):
    b = lax.broadcasted_iota(jnp.int32, (batch, tuples), 0)
    out = x.at[b, i[0, ..., 0], i[0, ..., 1]].get(**get)
    return out.reshape(out_shape)

  def peers(env, host):
    impls = [
      jax_impl(env, "jnp x[b,i0,i1]", "jax", jax.jit(jnp_rows), x, indices),
      jax_impl(
        env,
        "lax.gather (in bounds)",
        "jax",
        jax.jit(lambda x, i: jnp_rows(x, i, mode="promise_in_bounds")),
        x,
        indices,
      ),
    ]
    if env.torch:
      tx, ti = env.torch_from_jax(x), env.torch_from_jax(indices)
      tb = env.torch.arange(batch, device=env.torch_device).view(batch, 1)
      impls.append(
        torch_impl(
          env,
          "torch x[b,i0,i1]",
          lambda: tx[tb, ti[0, ..., 0], ti[0, ..., 1]],
          out_shape,
          note="int32 indices",
        )
      )
    if env.ort:
      feeds = {"data": host[0], "indices": host[1][0].astype(np.int64)}
      model = onnx_model(
        env, "GatherND", list(feeds.items()), np.empty(out_shape[1:], np.float32), batch_dims=1
      )
      impls.append(
        ort_impl(
          env,
          "GatherND batch_dims=1",
          model,
          feeds,
          out_shape,
          note="int64 indices (batch, tuples, 2)",
        )
      )
    return impls

  return Case(
    dtype="float32",
    shape=f"{shape_text(shape)} idx{shape_text((1, batch, tuples, 2))} b1",
    description=f"GATHER_ND1, 1 batch dimension: f32 {shape}, int32 indices"
    f" (1, {batch}, {tuples}, 2), counts 4/3/1 -> {out_shape}",
    bytes_moved=2 * math.prod(out_shape) * 4 + batch * tuples * 2 * 4,
    host=host,
    inputs=(x, indices),
    dml=jax.jit(lambda x, i: dml.gather_nd(x, i, **counts)),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("jnp x[b,i0,i1]", jnp_rows),
  )


# Decorators register bottom up: the rows' case first.
@case(
  "GATHER",
  sizes={
    "large": ((4096, 8192), 4096),
    "small": ((2048, 4096), 2048),
    "tiny": ((8, 16), 7),
  },
  variants={"gather_axis1": dict(axis=1)},
  shard=lambda axis: {"batch": (0, None), "axis": (1, None)},
)
@case(
  "GATHER",
  sizes={
    "large": ((1 << 20, 256), 65536),
    "small": ((1 << 16, 256), 65536),
    "tiny": ((16, 8), 16),
  },
  variants={"gather_rows": dict(axis=0)},
  shard=lambda axis: {"batch": (None, 1), "axis": (0, None)},
)
def gather_case(sizes: tuple[tuple[int, int], int], rng, *, axis: int) -> Case:
  """GATHER of a 2-D float32 input along `axis`: `sizes` is the input's shape and the count of
  random indices, given as (1, count) with IndexDimensions 1 (dml_jax wants equal ranks).

  Along axis 0 it is an embedding lookup: whole rows of a table, output (count, width); along
  axis 1 it picks columns, output (height, count).
  """
  shape, count = sizes
  host = [random_data(rng, shape, np.float32), random_indices(rng, (1, count), shape[axis])]
  x, ids = device_put(host)
  out_shape = (count, shape[1]) if axis == 0 else (shape[0], count)
  what = "rows" if axis == 0 else "columns"

  def subset(host):
    data, ids = host
    if axis == 0:
      chosen = edge(count, 32)
      return reference.gather(data, ids[:, chosen], axis=0, index_dimensions=1), lambda a: a[chosen]
    chosen = edge(shape[0], 4)
    return reference.gather(data[chosen], ids, axis=1, index_dimensions=1), lambda a: a[chosen]

  take = lambda x, i: jnp.take(x, i[0], axis=axis)

  def peers(env, host):
    pick = (
      (lambda x, i: x.at[i[0]].get(mode="promise_in_bounds"))
      if axis == 0
      else (lambda x, i: x.at[:, i[0]].get(mode="promise_in_bounds"))
    )
    impls = [
      jax_impl(env, "jnp.take", "jax", jax.jit(take), x, ids),
      jax_impl(env, "lax.gather (in bounds)", "jax", jax.jit(pick), x, ids),
    ]
    if env.torch:
      tx, ti = env.torch_from_jax(x), env.torch_from_jax(ids)
      impls.append(
        torch_impl(
          env,
          "torch.index_select",
          lambda: env.torch.index_select(tx, axis, ti[0]),
          out_shape,
          note="int32 indices",
        )
      )
    if env.ort:
      feeds = {"data": host[0], "indices": host[1][0]}
      out = np.empty(out_shape, np.float32)
      model = onnx_model(env, "Gather", list(feeds.items()), out, axis=axis)
      name = "Gather" if axis == 0 else f"Gather axis={axis}"
      impls.append(ort_impl(env, name, model, feeds, out_shape, note="int32 indices"))
    return impls

  def expected(host):
    positions = normalized(host[1][0], shape[axis])
    return host[0][positions] if axis == 0 else host[0][:, positions]

  return Case(
    dtype="float32",
    shape=f"{shape_text(shape)} idx{shape_text((1, count))}" + (" ax1" if axis else ""),
    description=f"GATHER of {count} random {what} (int32 indices (1, {count})) of an f32"
    f" {shape} input along axis {axis} -> {out_shape}",
    bytes_moved=2 * math.prod(out_shape) * 4 + count * 4,
    host=host,
    inputs=(x, ids),
    dml=jax.jit(lambda x, i: dml.gather(x, i, axis=axis, index_dimensions=1)),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("jnp.take", take),
  )


# REVERSE_SUBSEQUENCES's lengths: form -> how they are drawn
