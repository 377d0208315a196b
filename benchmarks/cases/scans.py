"""Benchmark cases: CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT, the running tallies.

dml_jax adds (multiplies) floats one element at a time in walking order; jnp.cumsum and
torch.cumsum may add in another order, and round differently. So that every peer's bits can
be checked against dml_jax's, the data are small integers held as float32 (the sums) or
+-1 and +-2 (the products, whose tallies stay powers of two): every order rounds them alike,
and the work is the same as for any other data.
"""

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

_SIZES = {"large": (4096, 8192), "small": (1024, 2048), "tiny": (8, 16)}


@case(
  "CUMULATIVE_SUMMATION",
  sizes=_SIZES,
  variants={
    "cumulative_summation_axis1": dict(axis=1),
    "cumulative_summation_axis0": dict(axis=0),
    "cumulative_summation_i32": dict(axis=1, dtype=np.int32),
  },
  shard=lambda axis, **_: {"batch": (1 - axis,)},
)
@case(
  "CUMULATIVE_PRODUCT",
  sizes=_SIZES,
  variants={"cumulative_product_axis1": dict(axis=1, product=True)},
  shard=lambda axis, **_: {"batch": (1 - axis,)},
)
def cumulative_case(
  shape: tuple[int, int], rng, *, axis: int, product: bool = False, dtype=np.float32
) -> Case:
  """The running sum (or product) of a (rows, columns) input of `shape` along `axis`."""
  if product:  # +-1 and +-2 with few 2s: the tallies stay powers of two, far from overflow
    magnitude = np.where(rng.random(shape) < 16 / shape[axis], 2, 1)
    data = magnitude * rng.choice(np.array([-1, 1]), shape)
  else:
    data = rng.integers(-8, 9, shape)
  host = [data.astype(dtype)]
  (x,) = device_put(host)
  name = "cumulative_product" if product else "cumulative_summation"
  function, oracle = getattr(dml, name), getattr(reference, name)
  numpy_scan = np.cumprod if product else np.cumsum
  jnp_scan = jnp.cumprod if product else jnp.cumsum

  def subset(host):
    lanes = edge(shape[1 - axis], 2)
    pick = (lambda a: take(a, every(a.shape[0]), lanes)) if axis == 0 else (lambda a: a[lanes])
    return oracle(pick(host[0]), axis=axis), pick

  def peers(env, host):
    impls = [jax_impl(env, f"jnp.{jnp_scan.__name__}", "jax", jax.jit(jnp_form), x)]
    if env.torch:
      tx = env.torch_from_jax(x)
      torch_scan = env.torch.cumprod if product else env.torch.cumsum
      impls.append(
        # dtype: torch widens integers to int64 otherwise.
        torch_impl(
          env,
          f"torch.{torch_scan.__name__}",
          lambda: torch_scan(tx, dim=axis, dtype=tx.dtype),
          shape,
        )
      )
    if env.ort and not product:  # ONNX has CumSum, no cumulative product
      feeds = {"x": host[0], "axis": np.array(axis, np.int64)}
      model = onnx_model(env, "CumSum", list(feeds.items()), host[0])
      impls.append(ort_impl(env, "CumSum", model, feeds, shape))
    return impls

  jnp_form = lambda x: jnp_scan(x, axis=axis)
  kind = "product" if product else "sum"
  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{shape_text(shape)} ax{axis}",
    description=f"the running {kind} of a {np.dtype(dtype).name} {shape} input along axis"
    f" {axis}, in walking order",
    bytes_moved=2 * math.prod(shape) * np.dtype(dtype).itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: function(x, axis=axis)),
    expected=lambda host: numpy_scan(host[0], axis=axis, dtype=host[0].dtype),  # in order
    subset=subset,
    peers=peers,
    notes=["data exact in any order (small integers as float32), so every peer's bits check"]
    if dtype == np.float32
    else [],
    jnp_peer=(f"jnp.{jnp_scan.__name__}", jnp_form),
  )
