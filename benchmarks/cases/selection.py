"""Benchmark cases: CAST, ELEMENT_WISE_IF, DIAGONAL_MATRIX, DIAGONAL_MATRIX1 and
NONZERO_COORDINATES (the selection operators)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

import dml_jax as dml
from benchmarks.harness import (
  SHORT_DTYPES,
  Case,
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


@case(
  "CAST",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (8, 24)},
  variants={"cast_f32_f16": dict(target=np.float16), "cast_f32_i32": dict(target=np.int32)},
  shard=lambda target: {"batch": (0,)},
)
def cast_case(shape: tuple[int, int], rng, *, target) -> Case:
  """CAST of a float32 `shape` to float16 (values in [-1, 1)) or to int32 (values in
  [-1000, 1000): truncation, inside the range)."""
  target = np.dtype(target)
  scale = 1 if target.kind == "f" else 1000
  host = [random_data(rng, shape, np.float32) * np.float32(scale)]
  (x,) = device_put(host)
  name = target.name.upper()

  def subset(host):
    pick = lambda a: take(a, edge(shape[0], 2), every(shape[1]))
    return reference.cast(pick(host[0]), data_type=name), pick

  astype = lambda x: x.astype(target)

  def peers(env, host):
    impls = [jax_impl(env, "x.astype", "jax", jax.jit(astype), x)]
    if env.torch:
      tx = env.torch_from_jax(x)
      torch_type = getattr(env.torch, target.name)
      impls.append(torch_impl(env, "tensor.to", lambda: tx.to(torch_type), shape))
    if env.ort:
      to = env.onnx.helper.np_dtype_to_tensor_dtype(target)
      model = onnx_model(env, "Cast", [("x", host[0])], np.empty(shape, target), to=to)
      impls.append(ort_impl(env, "Cast", model, {"x": host[0]}, shape))
    return impls

  return Case(
    dtype=f"f32->{SHORT_DTYPES.get(target.name, target.name)}",
    shape=shape_text(shape),
    description=f"CAST of float32 {shape} to {target.name}",
    bytes_moved=math.prod(shape) * (4 + target.itemsize),
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: dml.cast(x, data_type=name)),
    expected=lambda host: host[0].astype(target),
    subset=subset,
    peers=peers,
    jnp_peer=("x.astype", astype),
  )


@case(
  "ELEMENT_WISE_IF",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (8, 24)},
  variants={"element_wise_if": {}},
  shard=lambda: {"batch": (0, 0, 0)},
)
def element_wise_if_case(shape: tuple[int, int], rng) -> Case:
  """ELEMENT_WISE_IF of a random 0/1 uint8 condition between two float32 tensors of `shape`."""
  host = [
    rng.integers(0, 2, shape, dtype=np.uint8),
    random_data(rng, shape, np.float32),
    random_data(rng, shape, np.float32),
  ]
  condition, a, b = device_put(host)

  def subset(host):
    pick = lambda m: take(m, edge(shape[0], 2), every(shape[1]))
    return reference.element_wise_if(*(pick(h) for h in host)), pick

  where = lambda c, a, b: jnp.where(c != 0, a, b)

  def peers(env, host):
    impls = [jax_impl(env, "jnp.where", "jax", jax.jit(where), condition, a, b)]
    if env.torch:
      tc, ta, tb = (env.torch_from_jax(t) for t in (condition, a, b))
      impls.append(torch_impl(env, "torch.where", lambda: env.torch.where(tc != 0, ta, tb), shape))
    if env.ort:
      feeds = {"c": host[0].astype(bool), "a": host[1], "b": host[2]}
      model = onnx_model(env, "Where", list(feeds.items()), host[1])
      impls.append(ort_impl(env, "Where", model, feeds, shape, note="bool condition"))
    return impls

  return Case(
    dtype="float32",
    shape=shape_text(shape),
    description=f"ELEMENT_WISE_IF of a uint8 condition and float32 values {shape}",
    bytes_moved=math.prod(shape) * (1 + 4 + 4 + 4),
    host=host,
    inputs=(condition, a, b),
    dml=jax.jit(dml.element_wise_if),
    expected=lambda host: np.where(host[0] != 0, host[1], host[2]),
    subset=subset,
    peers=peers,
    jnp_peer=("jnp.where", where),
  )


@case(
  "DIAGONAL_MATRIX",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (8, 24)},
  variants={"diagonal_matrix": {}},
)
def diagonal_matrix_case(shape: tuple[int, int], rng) -> Case:
  """DIAGONAL_MATRIX: a float32 identity of `shape` (no input: only the write)."""
  del rng
  rows, columns = shape

  def subset(host):
    pick = lambda a: a[:4]
    return reference.diagonal_matrix(sizes=(min(4, rows), columns)), pick

  def peers(env, host):
    impls = [jax_impl(env, "jnp.eye", "jax", jax.jit(lambda: jnp.eye(rows, columns)))]
    if env.torch:
      eye = lambda: env.torch.eye(rows, columns, device=env.torch_device)
      impls.append(torch_impl(env, "torch.eye", eye, shape))
    return impls

  return Case(
    dtype="float32",
    shape=shape_text(shape),
    description=f"DIAGONAL_MATRIX: a float32 identity {shape}",
    bytes_moved=math.prod(shape) * 4,
    host=[],
    inputs=(),
    dml=jax.jit(lambda: dml.diagonal_matrix(sizes=shape)),
    expected=lambda host: np.eye(rows, columns, dtype=np.float32),
    subset=subset,
    peers=peers,
  )


@case(
  "DIAGONAL_MATRIX1",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (8, 24)},
  variants={"diagonal_matrix1_triu": {}},
)
def diagonal_matrix1_case(shape: tuple[int, int], rng) -> Case:
  """DIAGONAL_MATRIX1 as an upper triangle: 0 written where column - row < 0, a float32
  input of `shape` kept elsewhere (ONNX Trilu, jnp.triu)."""
  host = [random_data(rng, shape, np.float32)]
  (x,) = device_put(host)
  params = dict(value=0.0, diagonal_fill_begin=-(2**31), diagonal_fill_end=0)

  def subset(host):
    pick = lambda a: a[:4]
    return reference.diagonal_matrix1(host[0][:4], **params), pick

  def peers(env, host):
    impls = [jax_impl(env, "jnp.triu", "jax", jax.jit(jnp.triu), x)]
    if env.torch:
      tx = env.torch_from_jax(x)
      impls.append(torch_impl(env, "torch.triu", lambda: env.torch.triu(tx), shape))
    return impls

  return Case(
    dtype="float32",
    shape=shape_text(shape),
    description=f"DIAGONAL_MATRIX1 keeping the upper triangle of float32 {shape}",
    bytes_moved=2 * math.prod(shape) * 4,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: dml.diagonal_matrix1(x, **params)),
    expected=lambda host: np.triu(host[0]),
    subset=subset,
    peers=peers,
    jnp_peer=("jnp.triu", jnp.triu),
  )


@case(
  "NONZERO_COORDINATES",
  sizes={"large": (4096, 4096), "small": (1024, 1024), "tiny": (8, 24)},
  variants={"nonzero_coordinates": {}},
)
def nonzero_coordinates_case(shape: tuple[int, int], rng) -> Case:
  """NONZERO_COORDINATES of a float32 `shape` with half its elements zero: the (M, 2) uint32
  coordinates output (the count, a by-product, is not timed apart)."""
  x_host = random_data(rng, shape, np.float32)
  x_host[rng.integers(0, 2, shape) == 0] = 0
  host = [x_host]
  (x,) = device_put(host)
  m = math.prod(shape)

  def subset(host):
    count, rows = reference.nonzero_coordinates(host[0][:2])
    k = int(count.reshape(()))
    return rows[:k], lambda a: a[:k]

  def jnp_nonzero(x):
    return jnp.stack(jnp.nonzero(x, size=m, fill_value=0), axis=1).astype(jnp.uint32)

  def expected(host):
    rows = np.zeros((m, 2), np.uint32)
    found = np.argwhere(host[0] != 0)
    rows[: len(found)] = found
    return rows

  return Case(
    dtype="float32",
    shape=shape_text(shape),
    description=f"NONZERO_COORDINATES of float32 {shape}, half zeros -> ({m}, 2) uint32",
    bytes_moved=m * (4 + 8),
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: dml.nonzero_coordinates(x)[1]),
    expected=expected,
    subset=subset,
    peers=lambda env, host: [jax_impl(env, "jnp.nonzero", "jax", jax.jit(jnp_nonzero), x)],
    jnp_peer=("jnp.nonzero", jnp_nonzero),
  )
