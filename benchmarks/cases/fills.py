"""Benchmark cases: FILL_VALUE_CONSTANT and FILL_VALUE_SEQUENCE (a write of the output only;
bytes moved count the output written, nothing is read)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

import dml_jax as dml
from benchmarks.harness import Case, case, edge, every, jax_impl, shape_text, take, torch_impl
from dml_jax._src import reference


@case(
  "FILL_VALUE_CONSTANT",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (6, 10)},
  variants={"fill_value_constant": {}},
)
@case(
  "FILL_VALUE_SEQUENCE",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (6, 10)},
  variants={"fill_value_sequence": dict(sequence=True)},
)
def fill_value_case(shape: tuple[int, int], rng, *, sequence: bool = False) -> Case:
  """A float32 output of `shape` filled with 1.5, or with 0.5 + 0.25 i: a write of the output
  only. Peers: jnp.full or jnp.arange (the same bits: i * 0.25 is exact), torch.full or
  torch.arange."""
  del rng
  count = math.prod(shape)
  if sequence:
    kwargs = dict(sizes=shape, value_data_type="FLOAT32", value_start=0.5, value_delta=0.25)
    fill = lambda: dml.fill_value_sequence(**kwargs)
    jnp_fill = lambda: (0.5 + 0.25 * jnp.arange(count, dtype=jnp.float32)).reshape(shape)
    # i as float32 (exact below 2**24), 0.25 i exact, one rounding: the operator's bits
    values = lambda i: np.float32(0.5) + np.float32(0.25) * i.astype(np.float32)
    expected = lambda host: values(np.arange(count)).reshape(shape)
  else:
    kwargs = dict(sizes=shape, value_data_type="FLOAT32", value=1.5)
    fill = lambda: dml.fill_value_constant(**kwargs)
    jnp_fill = lambda: jnp.full(shape, 1.5, jnp.float32)
    expected = lambda host: np.full(shape, 1.5, np.float32)

  def subset(host):
    rows = edge(shape[0], 2)
    oracle = reference.fill_value_sequence if sequence else reference.fill_value_constant
    if shape[0] <= 8:  # the oracle, element by element, on the whole of a small output
      return oracle(**kwargs)[rows], lambda a: take(a, rows, every(shape[1]))
    return expected(host)[rows], lambda a: take(a, rows, every(shape[1]))

  def peers(env, host):
    impls = [jax_impl(env, "jnp.arange" if sequence else "jnp.full", "jax", jax.jit(jnp_fill))]
    if env.torch:
      torch = env.torch
      if sequence:
        fn = lambda: 0.5 + 0.25 * torch.arange(count, dtype=torch.float32, device=env.torch_device)
      else:
        fn = lambda: torch.full(shape, 1.5, dtype=torch.float32, device=env.torch_device)
      impls.append(torch_impl(env, "torch.arange" if sequence else "torch.full", fn, shape))
    return impls

  return Case(
    dtype="float32",
    shape=shape_text(shape),
    description=f"{'FILL_VALUE_SEQUENCE 0.5 + 0.25 i' if sequence else 'FILL_VALUE_CONSTANT 1.5'}"
    f" into f32 {shape}",
    bytes_moved=count * 4,
    host=[],
    inputs=(),
    dml=jax.jit(fill),
    expected=expected,
    subset=subset,
    peers=peers,
    notes=["bytes: the output written; nothing is read"],
  )
