"""Benchmark cases: JOIN and SPLIT."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

import dml_jax as dml
from benchmarks.harness import (
  Case,
  Env,
  Impl,
  case,
  device_put,
  edge,
  every,
  jax_impl,
  onnx_model,
  ort_impl,
  random_data,
  take,
  torch_impl,
)
from dml_jax._src import reference


@case(
  "JOIN",
  sizes={"large": (4096, 8192), "small": (2048, 2048), "tiny": (8, 16)},
  variants={"join_axis0": dict(axis=0), "join_axis1": dict(axis=1)},
  shard=lambda axis: {"batch": (1 - axis,) * 4, "axis": (axis,) * 4},
)
def join_case(shape: tuple[int, int], rng, *, axis: int, dtype=np.float32) -> Case:
  """JOIN of 4 inputs of `shape` along `axis`."""
  rows, cols = shape
  host = [random_data(rng, (rows, cols), dtype) for _ in range(4)]
  xs = device_put(host)
  out_shape = (4 * rows, cols) if axis == 0 else (rows, 4 * cols)
  itemsize = np.dtype(dtype).itemsize

  def subset(host):
    # The whole join axis, a few positions of the other.
    other = edge(cols, 2) if axis == 0 else edge(rows, 2)
    pick = (
      (lambda a: take(a, every(a.shape[0]), other))
      if axis == 0
      else (lambda a: take(a, other, every(a.shape[1])))
    )
    return reference.join([pick(x) for x in host], axis=axis), pick

  concatenate = lambda *xs: jnp.concatenate(xs, axis=axis)

  def peers(env, host):
    impls = [jax_impl(env, "jnp.concatenate", "jax", jax.jit(concatenate), *xs)]
    if env.torch:
      ts = [env.torch_from_jax(x) for x in xs]
      impls.append(torch_impl(env, "torch.cat", lambda: env.torch.cat(ts, dim=axis), out_shape))
    if env.ort:
      feeds = {f"x{i}": x for i, x in enumerate(host)}
      model = onnx_model(env, "Concat", list(feeds.items()), np.empty(out_shape, dtype), axis=axis)
      impls.append(ort_impl(env, "Concat", model, feeds, out_shape))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"4x({rows},{cols}) ax{axis}",
    description=f"JOIN of 4 x ({rows}, {cols}) along axis {axis} -> {out_shape}",
    bytes_moved=2 * math.prod(out_shape) * itemsize,
    host=host,
    inputs=xs,
    dml=jax.jit(lambda *xs: dml.join(xs, axis=axis)),
    expected=lambda host: np.concatenate(host, axis=axis),
    subset=subset,
    peers=peers,
    jnp_peer=("jnp.concatenate", concatenate),
  )


@case(
  "SPLIT",
  sizes={"large": (16384, 8192), "small": (4096, 4096), "tiny": (8, 16)},
  variants={"split_axis0": dict(axis=0), "split_axis1": dict(axis=1)},
)
def split_case(shape: tuple[int, int], rng, *, axis: int, dtype=np.float32) -> Case:
  """SPLIT of an input of `shape` into 4 equal pieces along `axis`.

  The outputs are compared stacked: output k is row k of a (4, ...) array.
  """
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  piece = shape[axis] // 4
  sizes = (piece,) * 4
  piece_shape = (piece, shape[1]) if axis == 0 else (shape[0], piece)
  stacked = lambda outs: np.stack([np.asarray(o) for o in outs])

  def subset(host):
    # A few positions of each piece along the axis (the same in every piece), a few of the other.
    inside, other = edge(piece, 2), edge(shape[1 - axis], 2)
    along = np.concatenate([k * piece + inside for k in range(4)])
    chosen = (along, other) if axis == 0 else (other, along)
    pieces = reference.split(take(host[0], *chosen), axis=axis, split_sizes=(len(inside),) * 4)
    out_chosen = (every(4), inside, other) if axis == 0 else (every(4), other, inside)
    return np.stack(pieces), lambda a: take(a, *out_chosen)

  def peers(env, host):
    impls = [
      dataclasses.replace(
        jax_impl(env, "jnp.split", "jax", jax.jit(lambda x: jnp.split(x, 4, axis=axis)), x),
        to_numpy=stacked,
      )
    ]
    if env.torch:
      tx = env.torch_from_jax(x)
      # torch.split returns views; each piece is cloned so that it is copied, as SPLIT's are.
      impls.append(
        dataclasses.replace(
          torch_impl(
            env,
            "torch.split + clone",
            lambda: [p.clone() for p in env.torch.split(tx, piece, dim=axis)],
            piece_shape,
          ),
          to_numpy=lambda outs: np.stack([o.cpu().numpy() for o in outs]),
        )
      )
    if env.ort:
      impls.append(_ort_split(env, host[0], axis, sizes, piece_shape))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"({shape[0]},{shape[1]}) ax{axis} /4",
    description=f"SPLIT of {shape} along axis {axis} into 4 x {piece_shape}",
    bytes_moved=2 * math.prod(shape) * np.dtype(dtype).itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: dml.split(x, axis=axis, split_sizes=sizes)),
    expected=lambda host: np.stack(np.split(host[0], 4, axis=axis)),
    subset=subset,
    peers=peers,
    notes=["the outputs are compared stacked, output k as row k"],
  )


def _ort_split(env: Env, x: np.ndarray, axis: int, sizes, piece_shape) -> Impl:
  """ONNX Runtime's Split (opset 13: the sizes as an int64 input), one output per piece."""
  helper = env.onnx.helper
  names = [f"out{k}" for k in range(len(sizes))]
  info = lambda name, dtype, shape: helper.make_tensor_value_info(
    name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), list(shape)
  )
  node = helper.make_node("Split", ["x", "split"], names, axis=axis)
  graph = helper.make_graph(
    [node],
    "bench_Split",
    [info("x", x.dtype, x.shape), info("split", np.int64, (len(sizes),))],
    [info(name, x.dtype, piece_shape) for name in names],
  )
  model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
  model.ir_version = 7
  options = env.ort.SessionOptions()
  options.intra_op_num_threads = 2
  options.inter_op_num_threads = 1
  options.log_severity_level = 3
  session = env.ort.InferenceSession(
    model.SerializeToString(), options, providers=["CPUExecutionProvider"]
  )
  feeds = {"x": np.ascontiguousarray(x), "split": np.array(sizes, np.int64)}
  return Impl("ort Split", "ort", lambda: session.run(names, feeds), lambda _: None, np.stack)
