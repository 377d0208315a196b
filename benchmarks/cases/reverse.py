"""Benchmark cases: REVERSE_SUBSEQUENCES: lengths per lane, equal by value, one per batch entry."""

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
  onnx_model,
  ort_impl,
  random_data,
  shape_text,
  take,
  torch_impl,
)
from dml_jax._src import reference

_REVERSE_LENGTHS = {
  "per lane": "random per lane",
  "equal": "equal across the last axis",
  "per batch": "per batch",
}


@case(
  "REVERSE_SUBSEQUENCES",
  sizes={"large": (64, 4096, 1024), "small": (16, 1024, 1024), "tiny": (8, 16, 6)},
  variants={
    "reverse_subsequences": {},
    "reverse_subsequences_equal": dict(form="equal"),
    "reverse_subsequences_per_batch": dict(form="per batch"),
    "reverse_subsequences_i8": dict(dtype=np.int8),
  },
  shard=lambda **_: {"batch": (0, 0), "axis": (1, None)},
)
def reverse_case(
  shape: tuple[int, int, int], rng, *, form: str = "per lane", dtype=np.float32
) -> Case:
  """REVERSE_SUBSEQUENCES of a (batch, time, feature) input of `shape` along time. `form`:
  "per lane" (random), "equal" (one per batch entry, repeated across the last axis: DirectML's
  full lengths tensor) or "per batch" (the same as a (batch, 1, 1) array, which the functional
  API describes with zero strides)."""
  batch, steps, features = shape
  said = _REVERSE_LENGTHS[form]
  equal = form != "per lane"
  if equal:  # one length per batch entry
    per_batch = rng.integers(0, steps + 1, (batch, 1, 1), dtype=np.uint32)
    full = (batch, 1, features) if form == "equal" else (batch, 1, 1)
    lengths = np.ascontiguousarray(np.broadcast_to(per_batch, full))
  else:
    lengths = rng.integers(0, steps + 1, (batch, 1, features), dtype=np.uint32)
  host = [random_data(rng, shape, dtype), lengths]
  x, lengths = device_put(host)
  itemsize = np.dtype(dtype).itemsize

  def expected(host):
    x, lengths = host
    clipped = np.minimum(lengths, steps).astype(np.int32)
    position = np.arange(steps, dtype=np.int32).reshape(1, steps, 1)
    source = np.where(position < clipped, clipped - 1 - position, position)
    return np.take_along_axis(x, source, axis=1)

  def subset(host):
    x, lengths = host
    lengths = np.broadcast_to(lengths, (batch, 1, features))  # DirectML's sizes
    chosen_b, chosen_f = edge(batch, 1), edge(features, 1)
    pick = lambda a: take(a, chosen_b, every(a.shape[1]), chosen_f)
    return reference.reverse_subsequences(pick(x), pick(lengths), axis=1), pick

  def jnp_reverse(x, lengths):
    clipped = jnp.minimum(lengths, steps).astype(jnp.int32)
    position = lax.broadcasted_iota(jnp.int32, shape, 1)
    source = jnp.where(position < clipped, clipped - 1 - position, position)
    return jnp.take_along_axis(x, jnp.broadcast_to(source, shape), axis=1)

  def peers(env, host):
    impls = [jax_impl(env, "jnp take_along_axis(src)", "jax", jax.jit(jnp_reverse), x, lengths)]
    if env.torch:
      torch = env.torch
      tx = env.torch_from_jax(x)
      tl = env.torch_from_numpy(host[1].astype(np.int64))
      position = torch.arange(steps, device=env.torch_device).view(1, steps, 1)

      def torch_reverse():
        clipped = torch.clamp(tl, max=steps)
        source = torch.where(position < clipped, clipped - 1 - position, position)
        return torch.gather(tx, 1, source.expand(shape))

      impls.append(torch_impl(env, "torch.gather(src)", torch_reverse, shape, note="int64 lengths"))
    if env.ort and equal:
      feeds = {"x": host[0], "lengths": host[1][:, 0, 0].astype(np.int64)}
      model = onnx_model(
        env, "ReverseSequence", list(feeds.items()), host[0], batch_axis=0, time_axis=1
      )
      impls.append(
        ort_impl(
          env, "ReverseSequence", model, feeds, shape, note="int64 lengths, one per batch entry"
        )
      )
    return impls

  notes = []
  if not equal:
    notes.append(
      "no ONNX Runtime peer: ONNX ReverseSequence takes one length per batch entry"
      " (1-D sequence_lens), not one per lane"
    )
  short = SHORT_DTYPES[np.dtype(dtype).name]
  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{shape_text(shape)} L{shape_text(host[1].shape)}{' eq' if form == 'equal' else ''} ax1",
    description=f"REVERSE_SUBSEQUENCES of {short} {shape} along axis 1, uint32 lengths"
    f" {host[1].shape} in [0, {steps}], {said}",
    bytes_moved=2 * math.prod(shape) * itemsize + host[1].nbytes,
    host=host,
    inputs=(x, lengths),
    dml=jax.jit(lambda x, n: dml.reverse_subsequences(x, n, axis=1)),
    expected=expected,
    subset=subset,
    peers=peers,
    notes=notes,
    jnp_peer=("jnp take_along_axis(src)", jnp_reverse),
  )
