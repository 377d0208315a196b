"""Benchmark cases: SCATTER_ELEMENTS and SCATTER_ND."""

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


def _rows_of_permutations(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
  """(rows, cols) int32: each row a random permutation of range(cols) (distinct targets)."""
  return rng.permuted(np.broadcast_to(np.arange(cols, dtype=np.int32), (rows, cols)), axis=1)


@case(
  "SCATTER_ELEMENTS",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (16, 24)},
  variants={"scatter_elements_axis1": {}},
  shard=lambda: {"batch": (0, 0, 0), "axis": (1, 1, 1)},
)
def scatter_elements_case(shape: tuple[int, int], rng, *, dtype=np.float32) -> Case:
  """SCATTER_ELEMENTS along axis 1 of `shape`: indices of `shape`, each row a random
  permutation (every target distinct), updates of `shape`."""
  rows, cols = shape
  host = [
    random_data(rng, shape, dtype),
    _rows_of_permutations(rng, rows, cols),
    random_data(rng, shape, dtype),
  ]
  x, indices, updates = device_put(host)
  itemsize = np.dtype(dtype).itemsize

  def expected(host):
    out = host[0].copy()
    np.put_along_axis(out, host[1], host[2], axis=1)
    return out

  def subset(host):
    pick = lambda a: take(a, edge(rows, 1), every(a.shape[1]))  # a few whole rows
    return reference.scatter_elements(*map(pick, host), axis=1), pick

  def set_rows(x, i, u, **set_options):
    return x.at[jnp.arange(rows)[:, None], i].set(u, **set_options)

  def peers(env, host):
    impls = [
      jax_impl(env, "x.at[r, i].set", "jax", jax.jit(set_rows), *host_inputs),
      jax_impl(
        env,
        "x.at[r, i].set (unique)",
        "jax",
        jax.jit(lambda x, i, u: set_rows(x, i, u, unique_indices=True)),
        *host_inputs,
      ),
    ]
    if env.torch:
      tx, tu = env.torch_from_jax(x), env.torch_from_jax(updates)
      ti = env.torch_from_numpy(host[1].astype(np.int64))
      impls.append(
        torch_impl(
          env,
          "torch.scatter",
          lambda: env.torch.scatter(tx, 1, ti, tu),
          shape,
          note="int64 indices (torch takes no int32)",
        )
      )
    if env.ort:
      feeds = {"data": host[0], "indices": host[1], "updates": host[2]}
      model = onnx_model(env, "ScatterElements", list(feeds.items()), host[0], axis=1)
      impls.append(ort_impl(env, "ScatterElements", model, feeds, shape, note="int32 indices"))
    return impls

  host_inputs = (x, indices, updates)
  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{shape_text(shape)} idx i32 ax1",
    description=f"SCATTER_ELEMENTS along axis 1 of {SHORT_DTYPES[np.dtype(dtype).name]} {shape}, int32"
    f" indices {shape} (each row a permutation: distinct targets), updates {shape}",
    bytes_moved=3 * math.prod(shape) * itemsize + math.prod(shape) * 4,
    host=host,
    inputs=host_inputs,
    dml=jax.jit(lambda x, i, u: dml.scatter_elements(x, i, u, axis=1)),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("x.at[r, i].set", set_rows),
    notes=[
      "bytes: input read, output written, updates and indices read (the input is not donated,"
      " so every implementation copies it)"
    ],
  )


@case(
  "SCATTER_ND",
  sizes={
    "large": ((1 << 20, 256), 65536),
    "small": ((1 << 16, 256), 16384),
    "tiny": ((16, 8), 6),
  },
  variants={"scatter_nd": {}},
  shard=lambda: {"batch": (1, None, 1), "axis": (0, None, None)},
)
def scatter_nd_case(sizes: tuple[tuple[int, int], int], rng) -> Case:
  """SCATTER_ND of `count` rows into an input of `shape`: indices (count, 1) int32, distinct
  random rows; updates (count, row)."""
  shape, count = sizes
  table, row = shape
  host = [
    random_data(rng, shape, np.float32),
    rng.choice(table, count, replace=False).astype(np.int32)[:, None],
    random_data(rng, (count, row), np.float32),
  ]
  x, indices, updates = device_put(host)

  def expected(host):
    out = host[0].copy()
    out[host[1][:, 0]] = host[2]
    return out

  def subset(host):
    chosen = edge(count, 16)
    targets = host[1][chosen, 0]
    local = np.arange(len(chosen), dtype=np.int32)[:, None]  # the same rows, renumbered
    picked = reference.scatter_nd(host[0][targets], local, host[2][chosen])
    return picked, lambda a: a[targets]

  set_rows = lambda x, i, u: x.at[i[:, 0]].set(u)

  def peers(env, host):
    impls = [
      jax_impl(env, "x.at[i].set", "jax", jax.jit(set_rows), *host_inputs),
      jax_impl(
        env,
        "x.at[i].set (unique)",
        "jax",
        jax.jit(lambda x, i, u: x.at[i[:, 0]].set(u, unique_indices=True)),
        *host_inputs,
      ),
    ]
    if env.torch:
      tx, tu = env.torch_from_jax(x), env.torch_from_jax(updates)
      ti = env.torch_from_numpy(host[1][:, 0].astype(np.int64))
      note = "int64 indices (torch takes no int32)"
      impls.append(
        torch_impl(env, "torch index_copy", lambda: tx.index_copy(0, ti, tu), shape, note=note)
      )
      impls.append(
        torch_impl(env, "torch index_put", lambda: tx.index_put((ti,), tu), shape, note=note)
      )
    if env.ort:
      feeds = {"data": host[0], "indices": host[1].astype(np.int64), "updates": host[2]}
      model = onnx_model(env, "ScatterND", list(feeds.items()), host[0])
      impls.append(
        ort_impl(
          env,
          "ScatterND",
          model,
          feeds,
          shape,
          note="int64 indices (ONNX ScatterND takes no int32)",
        )
      )
    return impls

  host_inputs = (x, indices, updates)
  return Case(
    dtype="float32",
    shape=f"{shape_text(shape)} idx{shape_text((count, 1))}",
    description=f"SCATTER_ND of {count} distinct rows of {row} (int32 indices ({count}, 1)) into"
    f" f32 {shape}",
    bytes_moved=2 * math.prod(shape) * 4 + count * row * 4 + count * 4,
    host=host,
    inputs=host_inputs,
    dml=jax.jit(lambda x, i, u: dml.scatter_nd(x, i, u)),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("x.at[i].set", set_rows),
    notes=[
      "bytes: the input copied (read and written: it is not donated), updates and indices read"
    ],
  )
