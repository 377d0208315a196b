"""Benchmark cases: ARGMIN, ARGMAX, TOP_K and TOP_K1 (values ranked; index outputs)."""

from __future__ import annotations

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
  onnx_model,
  ort_impl,
  random_data,
  shape_text,
  stacked_outputs,
  take,
)
from dml_jax._src import reference


def _index_impl(env: Env, name: str, kind: str, fn, *args, note: str = "") -> Impl:
  """A jax peer whose index output has another integer type than dml_jax's UINT32: converted
  to it outside the timing, for the check."""
  return Impl(
    name,
    kind,
    lambda: fn(*args),
    jax.block_until_ready,
    lambda out: np.asarray(out).astype(np.uint32),
    pipelined=env.pipelined,
    note=note,
    kernel_timer=env.kernel_timer,
  )


_ARG_SIZES = {"large": (8192, 8192), "small": (2048, 2048), "tiny": (8, 16)}


@case(
  "ARGMIN",
  sizes=_ARG_SIZES,
  variants={"argmin_axis0": dict(axis=0, op="argmin")},
  shard=lambda axis, op: {"batch": (1 - axis,)},
)
@case(
  "ARGMAX",
  sizes=_ARG_SIZES,
  variants={"argmax_axis1": dict(axis=1, op="argmax")},
  shard=lambda axis, op: {"batch": (1 - axis,)},
)
def arg_min_max_case(shape: tuple[int, int], rng, *, axis: int, op: str) -> Case:
  """ARGMAX (or ARGMIN) of a float32 input of `shape` along `axis`: one position per lane,
  UINT32, the reduced axis kept with size 1."""
  host = [random_data(rng, shape, np.float32)]
  (x,) = device_put(host)
  out_shape = (1, shape[1]) if axis == 0 else (shape[0], 1)
  function, numpy_pick = (dml.argmax, np.argmax) if op == "argmax" else (dml.argmin, np.argmin)
  oracle = getattr(reference, op)

  def expected(host):  # no NaN in the data: NumPy's rule is DirectML's INCREASING
    return numpy_pick(host[0], axis=axis, keepdims=True).astype(np.uint32)

  def subset(host):
    lanes = edge(shape[1 - axis], 4)
    pick = (lambda a: take(a, every(a.shape[0]), lanes)) if axis == 0 else (lambda a: a[lanes])
    return oracle(pick(host[0]), axes=(axis,)), pick

  jnp_pick = jnp.argmax if op == "argmax" else jnp.argmin
  jnp_form = lambda x: jnp_pick(x, axis=axis, keepdims=True)

  def peers(env, host):
    impls = [_index_impl(env, f"jnp.{op}", "jax", jax.jit(jnp_form), x, note="int32 output")]
    if env.torch:
      torch_pick = env.torch.argmax if op == "argmax" else env.torch.argmin
      t = env.torch_from_numpy(host[0])
      impls.append(
        Impl(
          f"torch.{op}",
          "torch",
          lambda: torch_pick(t, dim=axis, keepdim=True),
          env.torch_sync,
          lambda out: out.cpu().numpy().astype(np.uint32).reshape(out_shape),
          pipelined=env.torch_device == "cuda",
          note="int64 output",
          kernel_timer=env.kernel_timer,
        )
      )
    if env.ort:
      feeds = {"x": host[0]}
      onnx_op = "ArgMax" if op == "argmax" else "ArgMin"
      model = onnx_model(
        env, onnx_op, list(feeds.items()), np.empty(out_shape, np.int64), axis=axis, keepdims=1
      )
      session_impl = ort_impl(env, onnx_op, model, feeds, out_shape, note="int64 output")
      session_impl.to_numpy = lambda out: out.astype(np.uint32).reshape(out_shape)
      impls.append(session_impl)
    return impls

  return Case(
    dtype="float32",
    shape=f"{shape_text(shape)} ax{axis}",
    description=f"{op.upper()} of a float32 {shape} input along axis {axis} -> UINT32 {out_shape}",
    bytes_moved=math.prod(shape) * 4 + math.prod(out_shape) * 4,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: function(x, axes=(axis,))),
    expected=expected,
    subset=subset,
    peers=peers,
    # Sharded, jnp's positions as UINT32 (a convert of the small output) to compare bits.
    jnp_peer=(f"jnp.{op}", lambda x: jnp_form(x).astype(jnp.uint32)),
  )


_TOP_K_SIZES = {"large": (256, 131072, 64), "small": (64, 16384, 16), "tiny": (8, 64, 4)}


@case(
  "TOP_K1",
  sizes=_TOP_K_SIZES,
  variants={"top_k1_increasing": dict(op="top_k1")},
  shard=lambda op: {"batch": (0,)},
)
@case(
  "TOP_K",
  sizes=_TOP_K_SIZES,
  variants={"top_k": dict(op="top_k")},
  shard=lambda op: {"batch": (0,)},
)
def top_k_case(sizes: tuple[int, int, int], rng, *, op: str) -> Case:
  """TOP_K (largest first) or TOP_K1 INCREASING (smallest first) of `k` values per row of a
  float32 (rows, cols) input along axis 1, like a sampler over a vocabulary. Each row is a
  permutation of 0 .. cols - 1 (distinct values: peers that do not order ties agree)."""
  rows, cols, k = sizes
  host = [rng.permuted(np.tile(np.arange(cols, dtype=np.float32), (rows, 1)), axis=1)]
  (x,) = device_put(host)
  out_shape = (rows, k)
  descending = op == "top_k"
  if descending:
    dml_form = lambda x: dml.top_k(x, axis=1, k=k)
  else:
    dml_form = lambda x: dml.top_k1(x, axis=1, k=k, axis_direction="INCREASING")

  def expected(host):
    order = np.argsort(-host[0] if descending else host[0], axis=1, kind="stable")[:, :k]
    return stacked_outputs(np.take_along_axis(host[0], order, axis=1), order)

  def subset(host):
    lanes = edge(rows, 2)
    want = reference.top_k1(
      host[0][lanes], axis=1, k=k, axis_direction="DECREASING" if descending else "INCREASING"
    )
    return stacked_outputs(*want), lambda a: a[:, lanes]

  def lax_form(x):
    values, indices = jax.lax.top_k(x if descending else -x, k)
    return (values if descending else -values), indices

  def peers(env, host):
    jitted = jax.jit(lax_form)
    impls = [
      Impl(
        "jax.lax.top_k" if descending else "jax.lax.top_k(-x)",
        "jax",
        lambda: jitted(x),
        jax.block_until_ready,
        lambda out: stacked_outputs(*out),
        pipelined=env.pipelined,
        note="int32 indices",
        kernel_timer=env.kernel_timer,
      )
    ]
    if env.torch:
      t = env.torch_from_numpy(host[0])
      impls.append(
        Impl(
          "torch.topk",
          "torch",
          lambda: env.torch.topk(t, k, dim=1, largest=descending, sorted=True),
          env.torch_sync,
          lambda out: stacked_outputs(out[0].cpu().numpy(), out[1].cpu().numpy()),
          pipelined=env.torch_device == "cuda",
          note="int64 indices",
          kernel_timer=env.kernel_timer,
        )
      )
    if env.ort:
      feeds = {"x": host[0], "k": np.array([k], np.int64)}
      helper = env.onnx.helper
      info = lambda name, dtype, shape: helper.make_tensor_value_info(
        name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), list(shape)
      )
      node = helper.make_node(
        "TopK", ["x", "k"], ["values", "indices"], axis=1, largest=int(descending), sorted=1
      )
      graph = helper.make_graph(
        [node],
        "bench_TopK",
        [info("x", np.float32, host[0].shape), info("k", np.int64, (1,))],
        [info("values", np.float32, out_shape), info("indices", np.int64, out_shape)],
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
      impls.append(
        Impl(
          "ort TopK",
          "ort",
          lambda: session.run(["values", "indices"], feeds),
          lambda _: None,
          lambda out: stacked_outputs(*out),
          note="int64 indices",
        )
      )
    return impls

  return Case(
    dtype="float32",
    shape=f"{shape_text((rows, cols))} k{k}",
    description=f"{op.upper()} {'largest' if descending else 'smallest'} {k} of each row of a"
    f" float32 ({rows}, {cols}) input -> values and UINT32 indices {out_shape}",
    bytes_moved=rows * cols * 4 + 2 * rows * k * 4,
    host=host,
    inputs=(x,),
    dml=jax.jit(dml_form),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("jax.lax.top_k", lax_form),
  )
