"""Benchmark cases: TILE, PADDING and PADDING1, SLICE, SLICE1 and SLICE_GRAD: the windowing layout
operators."""

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
  Shardings,
  case,
  device_put,
  edge,
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
  "TILE",
  sizes={"large": (4096, 4096), "small": (1024, 2048), "tiny": (8, 16)},
  variants={"tile_rows": dict(repeats=(4, 1)), "tile_columns": dict(repeats=(1, 4))},
  shard=lambda repeats, **_: _tile_shardings(repeats),
)
@case(
  "TILE",  # the layout target's case: a 4 MiB input repeated along both dimensions
  sizes={"large": (1024, 1024), "small": (512, 512), "tiny": (5, 7)},
  variants={"tile_both": dict(repeats=(4, 4))},
  shard=lambda repeats, **_: _tile_shardings(repeats),
)
def tile_case(shape: tuple[int, int], rng, *, repeats: tuple[int, int], dtype=np.float32) -> Case:
  """TILE of an input of `shape`, `repeats` copies along each dimension."""
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  out_shape = tuple(s * r for s, r in zip(shape, repeats, strict=True))
  itemsize = np.dtype(dtype).itemsize

  def subset(host):
    # A few positions of each dimension of the input, and the same positions in every copy:
    # out[r + t * rows, c + u * cols] = x[r, c], copies outermost as the oracle orders them.
    chosen = [edge(n, 2) for n in shape]
    pick = lambda a: take(
      a,
      *(
        np.concatenate([c + t * n for t in range(k)])
        for c, n, k in zip(chosen, shape, repeats, strict=True)
      ),
    )
    return reference.tile(take(host[0], *chosen), repeats=repeats), pick

  tile = lambda x: jnp.tile(x, repeats)

  def peers(env, host):
    impls = [jax_impl(env, "jnp.tile", "jax", jax.jit(tile), x)]
    if env.torch:
      tx = env.torch_from_jax(x)
      impls.append(torch_impl(env, "torch.Tensor.repeat", lambda: tx.repeat(*repeats), out_shape))
    if env.ort:
      feeds = {"x": host[0], "repeats": np.array(repeats, np.int64)}
      model = onnx_model(env, "Tile", list(feeds.items()), np.empty(out_shape, dtype))
      impls.append(ort_impl(env, "Tile", model, feeds, out_shape))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{shape_text(shape)} x{shape_text(repeats)}",
    description=f"TILE of {shape} by {repeats} -> {out_shape}",
    bytes_moved=(math.prod(shape) + math.prod(out_shape)) * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: dml.tile(x, repeats=repeats)),
    expected=lambda host: np.tile(host[0], repeats),
    subset=subset,
    peers=peers,
    jnp_peer=("jnp.tile", tile),
  )


def _tile_shardings(repeats: tuple[int, ...]) -> Shardings:
  """TILE's input sharded along an axis it does not repeat (batch), or the first it repeats."""
  once = [k for k, r in enumerate(repeats) if r == 1]
  shardings: Shardings = {"batch": (once[0],)} if once else {}
  shardings["axis"] = (next(k for k, r in enumerate(repeats) if r > 1),)
  return shardings


_PAD_MODES = ("CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC", "WRAP")
_NP_PAD_MODES = {
  "CONSTANT": "constant",
  "EDGE": "edge",
  "REFLECTION": "reflect",
  "SYMMETRIC": "symmetric",
  "WRAP": "wrap",
}
# torch.nn.functional.pad has no symmetric mode; ONNX Pad (opset 13) has constant, reflect, edge.
_TORCH_PAD_MODES = {
  "CONSTANT": "constant",
  "EDGE": "replicate",
  "REFLECTION": "reflect",
  "WRAP": "circular",
}
_ORT_PAD_MODES = {"CONSTANT": "constant", "EDGE": "edge", "REFLECTION": "reflect"}


@case(
  "PADDING",
  sizes={"large": (64, 64, 512, 512), "small": (8, 16, 256, 256), "tiny": (8, 2, 8, 7)},
  variants={"padding_reflection": dict(mode="REFLECTION", op="PADDING")},
  shard=lambda **_: {"batch": (0,), "axis": (2,)},
)
@case(
  "PADDING1",
  sizes={"large": (64, 64, 512, 512), "small": (8, 16, 256, 256), "tiny": (8, 2, 8, 7)},
  variants={f"padding1_{mode.lower()}": dict(mode=mode) for mode in _PAD_MODES},
  shard=lambda **_: {"batch": (0,), "axis": (2,)},
)
def padding_case(
  shape: tuple[int, int, int, int], rng, *, mode: str, op: str = "PADDING1", pad: int = 3
) -> Case:
  """PADDING1 (or PADDING) of a float32 NCHW input, `pad` elements on each spatial side."""
  dtype = np.float32
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  start = end = (0, 0, pad, pad)
  widths = tuple(zip(start, end, strict=True))
  out_shape = tuple(s + 2 * p for s, p in zip(shape, start, strict=True))
  itemsize = np.dtype(dtype).itemsize
  function = dml.padding1 if op == "PADDING1" else dml.padding
  oracle = reference.padding1 if op == "PADDING1" else reference.padding
  kwargs = dict(padding_mode=mode, start_padding=start, end_padding=end)

  def subset(host):
    # Two planes, and the first and last 8 rows and columns of each: with pads below 8, the
    # padded crop is the same rows and columns of the padded whole, in every mode.
    k = 8
    planes = [edge(shape[0], 1), edge(shape[1], 1)]
    chosen = planes + [edge(n, k) for n in shape[2:]]

    def rows(n: int) -> np.ndarray:
      m = n + 2 * pad
      return (
        np.arange(m)
        if n <= 2 * k
        else np.concatenate([np.arange(k + pad), np.arange(m - k - pad, m)])
      )

    pick = lambda a: take(a, *planes, rows(shape[2]), rows(shape[3]))
    return oracle(take(host[0], *chosen), **kwargs), pick

  pad_jnp = lambda x: jnp.pad(x, widths, mode=_NP_PAD_MODES[mode])

  def peers(env, host):
    impls = [jax_impl(env, "jnp.pad", "jax", jax.jit(pad_jnp), x)]
    if env.torch and mode in _TORCH_PAD_MODES:
      tx = env.torch_from_jax(x)
      pads = (pad, pad, pad, pad)  # last dimension first
      fn = lambda: env.torch.nn.functional.pad(tx, pads, mode=_TORCH_PAD_MODES[mode])
      impls.append(torch_impl(env, "torch.nn.functional.pad", fn, out_shape))
    if env.ort and mode in _ORT_PAD_MODES:
      feeds = {"x": host[0], "pads": np.array(start + end, np.int64)}
      model = onnx_model(
        env, "Pad", list(feeds.items()), np.empty(out_shape, dtype), mode=_ORT_PAD_MODES[mode]
      )
      impls.append(ort_impl(env, "Pad", model, feeds, out_shape))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{shape_text(shape)} +{pad} {mode.lower()}",
    description=f"{op} {mode} of {shape}, {pad} on each spatial side -> {out_shape}",
    bytes_moved=(math.prod(shape) + math.prod(out_shape)) * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: function(x, **kwargs)),
    expected=lambda host: np.pad(host[0], widths, mode=_NP_PAD_MODES[mode]),
    subset=subset,
    peers=peers,
    jnp_peer=("jnp.pad", pad_jnp),
  )


def ort_slice_impl(env: Env, x: np.ndarray, starts, ends, steps, sizes) -> Impl:
  """ONNX Runtime's Slice of `x` over every axis (opset 13: starts, ends and steps as inputs)."""
  as64 = lambda v: np.array(v, np.int64)
  feeds = {
    "x": x,
    "starts": as64(starts),
    "ends": as64(ends),
    "axes": as64(range(x.ndim)),
    "steps": as64(steps),
  }
  model = onnx_model(env, "Slice", list(feeds.items()), np.empty(sizes, x.dtype))
  return ort_impl(env, "Slice", model, feeds, sizes)


@case(
  "SLICE",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (9, 12)},
  variants={"slice_rows": dict(strides=(2, 1)), "slice_columns": dict(strides=(1, 2))},
)
def slice_case(shape: tuple[int, int], rng, *, strides: tuple[int, int], dtype=np.float32) -> Case:
  """SLICE of an input of `shape` from (1, 2), every `strides` element, to the last one read."""
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  offsets = (1, 2)
  sizes = tuple((n - 1 - o) // t + 1 for n, o, t in zip(shape, offsets, strides, strict=True))
  ends = tuple(o + (s - 1) * t + 1 for o, s, t in zip(offsets, sizes, strides, strict=True))
  attributes = dict(offsets=offsets, sizes=sizes, strides=strides)
  index = tuple(np.s_[o:e:t] for o, e, t in zip(offsets, ends, strides, strict=True))
  itemsize = np.dtype(dtype).itemsize
  walk_bytes, walk_notes = _walk_bytes(math.prod(sizes), strides[-1], itemsize)

  def subset(host):
    # A few output positions of each dimension, and the input positions they read.
    chosen = [edge(n, 2) for n in sizes]
    read = [o + t * c for o, t, c in zip(offsets, strides, chosen, strict=True)]
    ones = (1,) * len(shape)
    window = take(host[0], *read)
    picked = reference.slice(window, offsets=(0, 0), sizes=window.shape, strides=ones)
    return picked, lambda a: take(a, *chosen)

  def peers(env, host):
    impls = [jax_impl(env, "jnp x[a:b:s]", "jax", jax.jit(lambda x: x[index]), x)]
    if env.torch:
      tx = env.torch_from_jax(x)
      impls.append(torch_impl(env, "torch x[a:b:s] (copied)", lambda: tx[index].clone(), sizes))
    if env.ort:
      impls.append(ort_slice_impl(env, host[0], offsets, ends, strides, sizes))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{shape_text(shape)} s{shape_text(strides)}",
    description=f"SLICE of {shape} from {offsets} by {strides} -> {sizes}",
    bytes_moved=walk_bytes,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: dml.slice(x, **attributes)),
    expected=lambda host: host[0][index],
    subset=subset,
    peers=peers,
    notes=walk_notes,
  )


@case(
  "SLICE1",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (9, 12)},
  variants={"slice1_reversed": dict(strides=(-1, 1)), "slice1_strided": dict(strides=(1, -2))},
)
@case(
  "SLICE1",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (16, 24)},
  variants={"slice1_reversed_columns": dict(strides=(1, -1), offsets=(0, 0))},
  shard=lambda **_: {"batch": (0,), "axis": (1,)},
)
def slice1_case(
  shape: tuple[int, int],
  rng,
  *,
  strides: tuple[int, int],
  offsets: tuple[int, int] = (1, 1),
  dtype=np.float32,
) -> Case:
  """SLICE1 of the window of `shape` from `offsets` to its end (by default less its first row and
  column), walked by `strides`."""
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  windows = tuple(n - o for n, o in zip(shape, offsets, strict=True))
  sizes = tuple((w - 1) // abs(t) + 1 for w, t in zip(windows, strides, strict=True))
  attributes = dict(
    input_window_offsets=offsets, input_window_sizes=windows, input_window_strides=strides
  )
  starts = tuple(
    o if t > 0 else o + w - 1 for o, w, t in zip(offsets, windows, strides, strict=True)
  )
  # As Python slices: a negative walk stops before offset - 1 (from offset 0: runs to the start).
  index = tuple(
    np.s_[b::t] if t > 0 else np.s_[b : o - 1 if o else None : t]
    for b, o, t in zip(starts, offsets, strides, strict=True)
  )
  itemsize = np.dtype(dtype).itemsize
  walk_bytes, walk_notes = _walk_bytes(math.prod(sizes), strides[-1], itemsize)

  def subset(host):
    chosen = [edge(n, 2) for n in sizes]
    read = [b + t * c for b, t, c in zip(starts, strides, chosen, strict=True)]
    window = take(host[0], *read)
    picked = reference.slice1(
      window,
      input_window_offsets=(0, 0),
      input_window_sizes=window.shape,
      input_window_strides=(1, 1),
    )
    return picked, lambda a: take(a, *chosen)

  walk = lambda x: x[index]

  def peers(env, host):
    impls = [jax_impl(env, "jnp x[a:b:s]", "jax", jax.jit(walk), x)]
    if env.torch:
      tx = env.torch_from_jax(x)
      flips = [d for d, t in enumerate(strides) if t < 0]
      forward = tuple(
        np.s_[b - (n - 1) * -t : b + 1 : -t] if t < 0 else np.s_[b::t]
        for b, n, t in zip(starts, sizes, strides, strict=True)
      )
      impls.append(torch_impl(env, "torch.flip(x[a:b:s])", lambda: tx[forward].flip(flips), sizes))
    if env.ort:
      stops = tuple(
        2**62 if t > 0 else o - 1 if o else -(2**62) for o, t in zip(offsets, strides, strict=True)
      )
      impls.append(ort_slice_impl(env, host[0], starts, stops, strides, sizes))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{shape_text(shape)} s{shape_text(strides)}",
    description=f"SLICE1 of {shape}, windows from {offsets} of {windows} by {strides} -> {sizes}",
    bytes_moved=walk_bytes,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: dml.slice1(x, **attributes)),
    expected=lambda host: host[0][index],
    subset=subset,
    peers=peers,
    notes=walk_notes,
    jnp_peer=("jnp x[a:b:s]", walk),
  )


def _walk_bytes(kept: int, step: int, itemsize: int) -> tuple[int, list[str]]:
  """The fewest bytes DRAM must move to walk `kept` elements by `step` along the last axis.

  DRAM moves 32-byte sectors. A step of more than one element still fetches every sector of
  the rows it visits, up to one sector an element, so the reads are counted in sectors and the
  writes (contiguous) in elements. Returns the bytes and a note that gives the element count's
  figure beside it.
  """
  written = kept * itemsize
  per_sector = max(1, 32 // itemsize)  # elements a sector holds
  reads = min(abs(step), per_sector)  # sectors' bytes over the bytes kept
  if reads == 1:
    return 2 * written, []
  bound = 2 / (1 + reads)
  return (1 + reads) * written, [
    f"bytes: a step of {step} along the last axis fetches every 32-byte sector of the rows it"
    f" visits, {reads}x the bytes it keeps, so the reads are counted in sectors; counted in"
    f" elements, the ceiling is {bound:.2f} times the one shown"
  ]


@case(
  "SLICE_GRAD",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (9, 16)},
  variants={"slice_grad_rows_reversed": dict(strides=(2, -1))},
  shard=lambda strides: {"axis": (1,)},  # the reversed columns: no dimension is left alone
)
def slice_grad_case(shape: tuple[int, int], rng, *, strides: tuple[int, int]) -> Case:
  """SLICE_GRAD into zeros of `shape`: SLICE1's windows over the whole of it, walked by
  `strides` (every other row, the columns reversed); the gradient is the walk's shape."""
  sizes = tuple((n - 1) // abs(t) + 1 for n, t in zip(shape, strides, strict=True))
  host = [random_data(rng, sizes, np.float32)]
  (g,) = device_put(host)
  windows = dict(
    input_window_offsets=(0, 0), input_window_sizes=shape, input_window_strides=strides
  )
  index = tuple(np.s_[::t] for t in strides)  # the walk, as the whole input is the window

  def expected(host):
    out = np.zeros(shape, np.float32)
    out[index] = host[0]
    return out

  def subset(host):
    rows, columns = edge(sizes[0], 2), edge(sizes[1], 2)
    picked = reference.slice_grad(
      take(host[0], rows, columns),
      output_gradient_sizes=(len(rows), len(columns)),
      input_window_offsets=(0, 0),
      input_window_sizes=(len(rows), len(columns)),
      input_window_strides=(1, 1),
    )
    walked_rows = rows * abs(strides[0])
    walked_columns = (shape[1] - 1 - columns) if strides[1] < 0 else columns * strides[1]
    return picked, lambda a: take(a, walked_rows, walked_columns)

  jnp_form = lambda g: jnp.zeros(shape, g.dtype).at[index].set(g)

  def peers(env, host):
    impls = [jax_impl(env, "jnp zeros.at[a:b:s].set", "jax", jax.jit(jnp_form), g)]
    if env.torch:
      torch = env.torch
      tg = env.torch_from_jax(g)
      flips = [d for d, t in enumerate(strides) if t < 0]
      forward = tuple(np.s_[:: abs(t)] for t in strides)

      def torch_grad():
        out = torch.zeros(shape, dtype=tg.dtype, device=env.torch_device)
        out[forward] = tg.flip(flips)
        return out

      impls.append(torch_impl(env, "torch zeros[a:b:s] = flip(g)", torch_grad, shape))
    return impls

  return Case(
    dtype="float32",
    shape=f"{shape_text(shape)} s{shape_text(strides)}",
    description=f"SLICE_GRAD of a {sizes} gradient into zeros of {shape}, windows walked by"
    f" {strides}",
    bytes_moved=(math.prod(sizes) + math.prod(shape)) * 4,
    host=host,
    inputs=(g,),
    dml=jax.jit(lambda g: dml.slice_grad(g, output_gradient_sizes=shape, **windows)),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("jnp zeros.at[a:b:s].set", jnp_form),
  )
