"""CPU probe: lax forms of the four cases where XLA:CPU trailed ONNX Runtime, and the allocator.

`benchmarks/run.py --size small` on a 2-core CPU put dml_jax 2x to 5x behind ONNX Runtime (2
threads) on GATHER_ND's and GATHER_ND1's row gathers, the equal-lengths REVERSE_SUBSEQUENCES and
GATHER_ELEMENTS along the inner axis. Every case writes a 64 MiB output. Here each case is tried in
several lax forms next to dml_jax itself and ONNX Runtime, each checked bit for bit against NumPy
and timed with `_timing.timed`, every call waited for (XLA:CPU may overlap dispatched calls).

Three numbers per form:
- fresh ms: the jitted call as a user makes it, with a new output buffer per call;
- faults: minor page faults per fresh call (getrusage). XLA:CPU takes each output from malloc, and
  glibc serves a block above its mmap threshold with new pages: 16384 faults for 64 MiB;
- donated ms: the same computation writing into a donated buffer of the output's shape
  (`donate_argnums`, `keep_unused=True`: XLA aliases the output to it), the previous call's output
  each time, so nothing is allocated: the kernel's own time.

The bare forms take in-range int32 positions (no clamping), like gather_nd_forms.py; dml_jax's
rows include its clamping. glibc's heap state depends on what ran before in the process, so the
fault counts of one form can change with the order; the donated column does not depend on it.

Process settings change the fresh column: run the script plain, with
MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 (README), with MALLOC_ARENA_MAX=1
added (one malloc arena for every thread), with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (transparent
huge pages for malloc), or with XLA_FLAGS; the header prints them. The "(equal only)" forms are
wrong for lengths that differ across the last axis; the cond forms check and fall back to dml_jax.

Usage: PYTHONPATH=.:benchmarks python3 benchmarks/cpu_forms.py [--only CASE,...] [--no-ort] [--hlo]
"""

import argparse
import os
import re
import resource

import gather_elements_forms  # benchmarks/ is on sys.path when a script in it runs
import jax
import jax.numpy as jnp
import numpy as np
from _timing import timed
from jax import lax

import dml_jax as dml
from dml_jax._src import indexing

IN_BOUNDS = lax.GatherScatterMode.PROMISE_IN_BOUNDS
CLIP = lax.GatherScatterMode.CLIP
CALLS, REPEATS = 10, 5

# -- forms -----------------------------------------------------------------------------------


def rows_gather(rows, row, mode=IN_BOUNDS):
  """rows (R, C), row (...) int32 -> (..., C): one collapsed dimension."""
  dn = lax.GatherDimensionNumbers(
    offset_dims=(row.ndim,), collapsed_slice_dims=(0,), start_index_map=(0,)
  )
  return lax.gather(rows, row[..., None], dn, (1, rows.shape[1]), mode=mode)


def tuple_gather(x, idx, mode=IN_BOUNDS):
  """GATHER_ND without batch dimensions: x (H, W, C), idx (N, 2) -> (N, C)."""
  dn = lax.GatherDimensionNumbers(
    offset_dims=(1,), collapsed_slice_dims=(0, 1), start_index_map=(0, 1)
  )
  return lax.gather(x, idx, dn, (1, 1, x.shape[2]), mode=mode)


def batched_tuple_gather(x, idx):
  """GATHER_ND1's form in dml_jax: x (B, H, W, C), idx (B, N, 2), batching dims."""
  dn = lax.GatherDimensionNumbers(
    offset_dims=(2,),
    collapsed_slice_dims=(1, 2),
    start_index_map=(1, 2),
    operand_batching_dims=(0,),
    start_indices_batching_dims=(0,),
  )
  return lax.gather(x, idx, dn, (1, 1, 1, x.shape[3]), mode=IN_BOUNDS)


def column_tuple_gather(x, idx):
  """GATHER_ND1 with the batch coordinate as an iota column (jnp advanced indexing's form)."""
  b = lax.broadcasted_iota(idx.dtype, idx.shape[:-1] + (1,), 0)
  dn = lax.GatherDimensionNumbers(
    offset_dims=(2,), collapsed_slice_dims=(0, 1, 2), start_index_map=(0, 1, 2)
  )
  full = lax.concatenate([b, idx], 2)
  return lax.gather(x, full, dn, (1, 1, 1, x.shape[3]), mode=IN_BOUNDS)


def linear_rows(x, idx):
  """(rows view of x, linear row numbers) for idx (..., 2) into x (B?, H, W, C)."""
  *lead, height, width, size = x.shape
  row = idx[..., 0] * width + idx[..., 1]
  if lead:  # one batch dimension: idx (B, N, 2)
    row = row + lax.broadcasted_iota(jnp.int32, row.shape, 0) * (height * width)
  return x.reshape(-1, size), row


def fori_blocks(rows, row, block=128):
  """Row gathers as a fori_loop over blocks of `block` rows: unrolled dynamic_slices, one DUS."""
  flat = row.reshape(-1)
  n, size = flat.shape[0], rows.shape[1]

  def body(k, out):
    ids = lax.dynamic_slice(flat, (k * block,), (block,))
    got = [lax.dynamic_slice(rows, (ids[r], 0), (1, size)) for r in range(block)]
    return lax.dynamic_update_slice(out, lax.concatenate(got, 0), (k * block, 0))

  out = lax.fori_loop(0, n // block, body, jnp.zeros((n, size), rows.dtype))
  return out.reshape(row.shape + (size,))


def scan_rows(rows, row, unroll=64):
  def body(_, r):
    return None, lax.dynamic_slice(rows, (r, 0), (1, rows.shape[1]))[0]

  _, out = lax.scan(body, None, row.reshape(-1), unroll=unroll)
  return out.reshape(row.shape + (rows.shape[1],))


def reverse_source(lengths, shape):
  """DirectML's source positions along axis 1 for lengths (B, 1, C) broadcast to `shape`."""
  n = jnp.minimum(lengths, shape[1]).astype(jnp.int32)
  p = lax.broadcasted_iota(jnp.int32, shape, 1)
  return jnp.where(p < n, n - 1 - p, p)


def along_axis(x, src, axis, mode=IN_BOUNDS):
  """GATHER_ELEMENTS' form in dml_jax: the other dimensions are batching dimensions."""
  others = tuple(d for d in range(x.ndim) if d != axis)
  dn = lax.GatherDimensionNumbers(
    offset_dims=(),
    collapsed_slice_dims=(axis,),
    start_index_map=(axis,),
    operand_batching_dims=others,
    start_indices_batching_dims=others,
  )
  return lax.gather(x, src[..., None], dn, (1,) * x.ndim, mode=mode)


def int32_clamp(i, size):
  """DirectML's index rule for int32 indices and size < 2**31 in three ops: i + size when
  negative (cannot overflow), then clamped; dml_jax computes it in uint32 (`clamp_indices`)."""
  return lax.clamp(0, jnp.where(i < 0, i + size, i), size - 1)


def check_int32_clamp():
  """int32_clamp, and negatives wrapped then XLA's own clamp (gather mode CLIP), against
  dml_jax's clamp_indices at the edges of int32 and of the axis."""
  for size in (1, 4096, 2**31 - 1):
    edges = [-(2**31), -size - 1, -size, -size + 1, -1, 0, 1, size - 1, size, 2**31 - 1]
    v = jnp.asarray(np.clip(edges, -(2**31), 2**31 - 1).astype(np.int32))
    want = np.asarray(indexing.clamp_indices(v, size))
    assert np.array_equal(int32_clamp(v, size), want), (size, int32_clamp(v, size), want)
    if size <= 4096:  # mode CLIP, checked through a gather of positions
      wrapped = jnp.where(v < 0, v + size, v)[:, None]
      got = along_axis(jnp.broadcast_to(jnp.arange(size), (v.shape[0], size)), wrapped, 1, CLIP)
      assert np.array_equal(got[:, 0], want), (size, got[:, 0], want)


def row_loop_along_last(x, idx, block=64):
  """GATHER_ELEMENTS along axis 1 as a fori_loop over blocks of rows (a block fits in L2)."""

  def body(k, out):
    xs = lax.dynamic_slice(x, (k * block, 0), (block, x.shape[1]))
    ids = lax.dynamic_slice(idx, (k * block, 0), (block, idx.shape[1]))
    return lax.dynamic_update_slice(out, along_axis(xs, ids, 1), (k * block, 0))

  return lax.fori_loop(0, x.shape[0] // block, body, jnp.zeros(idx.shape, x.dtype))


def reverse_rows(x, lengths):
  """Equal lengths only: one length per batch entry, a row gather of whole (C,) rows."""
  batch, steps, size = x.shape
  n = jnp.minimum(lengths[:, 0, 0], steps).astype(jnp.int32)[:, None]
  p = lax.broadcasted_iota(jnp.int32, (batch, steps), 1)
  src = jnp.where(p < n, n - 1 - p, p) + lax.broadcasted_iota(jnp.int32, (batch, steps), 0) * steps
  return rows_gather(x.reshape(-1, size), src)


def reverse_shift(x, lengths):
  """Equal lengths only: lax.rev along the axis, shifted per batch entry, selected against x."""
  batch, steps, size = x.shape
  n = jnp.minimum(lengths[:, 0, 0], steps).astype(jnp.int32)
  both = lax.concatenate([lax.rev(x, (1,)), x], 1)  # rev(x)[S - n + p] = x[n - 1 - p]
  shifted = jax.vmap(lambda b, s: lax.dynamic_slice(b, (s, 0), (steps, size)))(both, steps - n)
  p = lax.broadcasted_iota(jnp.int32, x.shape, 1)
  return jnp.where(p < n[:, None, None], shifted, x)


def guarded(equal_form):
  """`equal_form` when the lengths are equal across the last axis (by value), else dml_jax."""

  def form(x, lengths):
    equal = jnp.all(lengths == lengths[:, :, :1])
    return lax.cond(
      equal,
      equal_form,
      lambda x, n: dml.reverse_subsequences(x, n, axis=1),
      x,
      lengths,
    )

  return form


def check_guarded():
  """The cond forms on small inputs, lengths equal across the last axis and not: dml_jax's bits."""
  rng = np.random.default_rng(1)
  x = jnp.asarray(rng.standard_normal((3, 9, 5)).astype(np.float32))
  per_lane = rng.integers(0, 12, (3, 1, 5), dtype=np.uint32)
  for lengths in (per_lane, np.repeat(per_lane[:, :, :1], 5, axis=2)):
    want = dml.reverse_subsequences(x, lengths, axis=1)
    for form in (guarded(reverse_rows), guarded(reverse_shift)):
      assert np.array_equal(jax.jit(form)(x, jnp.asarray(lengths)), want)


# -- cases -----------------------------------------------------------------------------------


def case_gather_nd(rng):
  x = rng.standard_normal((256, 256, 256)).astype(np.float32)
  idx = rng.integers(0, 256, (65536, 2)).astype(np.int32)
  forms = {
    "dml_jax": lambda x, i: dml.gather_nd(x, i[None]),
    "tuple gather": tuple_gather,
    "tuple gather, mode clip": lambda x, i: tuple_gather(x, i, CLIP),
    "tuple gather, uint32 indices": lambda x, i: tuple_gather(x, i.astype(jnp.uint32)),
    "rows view, linear row": lambda x, i: rows_gather(*linear_rows(x, i)),
    "jnp.take(rows, row)": lambda x, i: jnp.take(*linear_rows(x, i), axis=0),
    "x[i0, i1]": lambda x, i: x[i[:, 0], i[:, 1]],
    "fori_loop, 128-row blocks": lambda x, i: fori_blocks(*linear_rows(x, i)),
    "scan, unroll 64": lambda x, i: scan_rows(*linear_rows(x, i)),
  }
  ort = ("GatherND", {"data": x, "indices": idx.astype(np.int64)}, {})
  return (
    "GATHER_ND f32 (256,256,256), 65536 int32 2-tuples",
    (x, idx),
    x[idx[:, 0], idx[:, 1]],
    forms,
    ort,
  )


def case_gather_nd1(rng):
  x = rng.standard_normal((16, 64, 64, 256)).astype(np.float32)
  idx = rng.integers(0, 64, (16, 4096, 2)).astype(np.int32)
  counts = dict(input_dimension_count=4, indices_dimension_count=3, batch_dimension_count=1)
  forms = {
    "dml_jax": lambda x, i: dml.gather_nd(x, i[None], **counts),
    "batching dims": batched_tuple_gather,
    "iota column": column_tuple_gather,
    "rows view, linear row": lambda x, i: rows_gather(*linear_rows(x, i)),
    "x[b, i0, i1]": lambda x, i: x[jnp.arange(16)[:, None], i[..., 0], i[..., 1]],
    "fori_loop, 128-row blocks": lambda x, i: fori_blocks(*linear_rows(x, i)),
  }
  want = x[np.arange(16)[:, None], idx[..., 0], idx[..., 1]]
  ort = ("GatherND", {"data": x, "indices": idx.astype(np.int64)}, {"batch_dims": 1})
  return (
    "GATHER_ND1 f32 (16,64,64,256), (16,4096) 2-tuples, 1 batch dim",
    (x, idx),
    want,
    forms,
    ort,
  )


def case_reverse_equal(rng):
  x = rng.standard_normal((16, 1024, 1024)).astype(np.float32)
  per_batch = rng.integers(0, 1025, (16, 1, 1), dtype=np.uint32)
  lengths = np.ascontiguousarray(np.broadcast_to(per_batch, (16, 1, 1024)))
  forms = {
    "dml_jax": lambda x, n: dml.reverse_subsequences(x, n, axis=1),
    "along-axis gather (src)": lambda x, n: along_axis(x, reverse_source(n, x.shape), 1),
    "row gather (equal only)": reverse_rows,
    "rev + per-batch shift (equal only)": reverse_shift,
    "cond(equal, row gather, dml)": guarded(reverse_rows),
    "cond(equal, rev + shift, dml)": guarded(reverse_shift),
  }
  clipped = np.minimum(lengths, 1024).astype(np.int32)
  p = np.arange(1024, dtype=np.int32).reshape(1, 1024, 1)
  want = np.take_along_axis(x, np.where(p < clipped, clipped - 1 - p, p), axis=1)
  ort = (
    "ReverseSequence",
    {"x": x, "lengths": lengths[:, 0, 0].astype(np.int64)},
    {"batch_axis": 0, "time_axis": 1},
  )
  name = "REVERSE_SUBSEQUENCES f32 (16,1024,1024) axis 1, lengths equal across the last axis"
  return name, (x, lengths), want, forms, ort


def case_gather_elements(rng):
  x = rng.standard_normal((4096, 4096)).astype(np.float32)
  idx = rng.integers(0, 4096, (4096, 4096)).astype(np.int32)
  forms = {
    "dml_jax": lambda x, i: dml.gather_elements(x, i, axis=1),
    "batching dims": lambda x, i: along_axis(x, i, 1),
    "batching dims, mode clip": lambda x, i: along_axis(x, i, 1, CLIP),
    "batching dims, int32_clamp": lambda x, i: along_axis(x, int32_clamp(i, 4096), 1),
    "batching dims, negatives wrapped, clip": lambda x, i: along_axis(
      x, jnp.where(i < 0, i + 4096, i), 1, CLIP
    ),
    "iota columns": lambda x, i: gather_elements_forms.columns(x, i, 1),
    "flat 1-D": lambda x, i: gather_elements_forms.linear(x, i, 1),
    "jnp.take_along_axis": lambda x, i: jnp.take_along_axis(x, i, axis=1),
    "fori_loop, 64-row blocks": row_loop_along_last,
  }
  ort = ("GatherElements", {"data": x, "indices": idx}, {"axis": 1})
  name = "GATHER_ELEMENTS f32 (4096,4096) axis 1, int32 indices"
  return name, (x, idx), np.take_along_axis(x, idx, axis=1), forms, ort


def join_padded(axis):
  """JOIN as one elementwise loop: each input padded to the output's shape, selected by position."""

  def form(*xs):
    total = sum(x.shape[axis] for x in xs)
    position = lax.broadcasted_iota(
      jnp.int32, xs[0].shape[:axis] + (total,) + xs[0].shape[axis + 1 :], axis
    )
    out, start = None, 0
    for x in xs:
      config = [(0, 0, 0)] * x.ndim
      config[axis] = (start, total - start - x.shape[axis], 0)
      padded = lax.pad(x, np.zeros((), x.dtype), config)
      out = padded if out is None else lax.select(position < start, out, padded)
      start += x.shape[axis]
    return out

  return form


def join_updates(axis):
  """JOIN as a chain of dynamic_update_slice into an empty output."""

  def form(*xs):
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    out, start = jnp.zeros(shape, xs[0].dtype), 0
    for x in xs:
      index = [0] * x.ndim
      index[axis] = start
      out = lax.dynamic_update_slice(out, x, index)
      start += x.shape[axis]
    return out

  return form


def join_flat(axis):
  """JOIN with each input as one contiguous run per outer index: (outer, inner) 2-D views."""

  def form(*xs):
    outer = int(np.prod(xs[0].shape[:axis], dtype=np.int64))
    views = [x.reshape(outer, -1) for x in xs]
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return (
      lax.concatenate(views, 1).reshape(shape)
      if outer > 1
      else lax.concatenate([v.reshape(-1) for v in views], 0).reshape(shape)
    )

  return form


def join_stacked(axis):
  """JOIN of equal inputs as jnp.stack on a new axis at `axis`, then a reshape (a bitcast)."""

  def form(*xs):
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return jnp.stack(xs, axis=axis).reshape(shape)

  return form


def _case_join(rng, axis):
  xs = tuple(rng.standard_normal((2048, 2048)).astype(np.float32) for _ in range(4))
  forms = {
    "dml_jax": lambda *xs: dml.join(xs, axis=axis),
    "lax.concatenate": lambda *xs: lax.concatenate(xs, axis),
    "pad + select, one loop": join_padded(axis),
    "dynamic_update_slice chain": join_updates(axis),
    "rows as 1-D: one run per input": join_flat(axis),
    "jnp.stack on a new axis + reshape": join_stacked(axis),
  }
  ort = ("Concat", {f"x{i}": x for i, x in enumerate(xs)}, {"axis": axis})
  name = f"JOIN f32 4 x (2048, 2048) along axis {axis}"
  return name, xs, np.concatenate(xs, axis=axis), forms, ort


CASES = {
  "gather_nd": case_gather_nd,
  "gather_nd1": case_gather_nd1,
  "reverse_equal": case_reverse_equal,
  "gather_elements": case_gather_elements,
  "join_axis0": lambda rng: _case_join(rng, 0),
  "join_axis1": lambda rng: _case_join(rng, 1),
}

# -- measuring -------------------------------------------------------------------------------


def _faults() -> int:
  return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _waited(fn):
  return lambda *args: fn(*args).block_until_ready()


def _fresh(fn, args):
  """(ms per call, faults per call)."""
  before = _faults()
  seconds = timed(_waited(fn), *args, calls=CALLS, repeats=REPEATS)
  return seconds * 1e3, (_faults() - before) / (2 + CALLS * REPEATS)


def _donating(form, args):
  """A zero-argument call running `form` into the previous call's (donated) output buffer."""
  out = jax.eval_shape(form, *args)
  jitted = jax.jit(lambda *a: form(*a[:-1]), donate_argnums=len(args), keep_unused=True)
  state = [jnp.zeros(out.shape, out.dtype)]
  aliased = "input_output_alias" in jitted.lower(*args, state[0]).compile().as_text()

  def call():
    state[0] = jitted(*args, state[0])
    return state[0]

  return call, aliased


class _Host:
  def __init__(self, array):
    self.array = array

  def block_until_ready(self):
    return self


def _ort(op, feeds, attributes, out_shape, dtype, spinning=True):
  import onnx
  import onnxruntime as ort
  from onnx import helper

  info = lambda name, shape, dt: helper.make_tensor_value_info(
    name, helper.np_dtype_to_tensor_dtype(np.dtype(dt)), list(shape)
  )
  node = helper.make_node(op, list(feeds), ["out"], **attributes)
  graph = helper.make_graph(
    [node],
    op,
    [info(k, v.shape, v.dtype) for k, v in feeds.items()],
    [info("out", out_shape, dtype)],
  )
  model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
  model.ir_version = 7
  onnx.checker.check_model(model)
  options = ort.SessionOptions()
  options.intra_op_num_threads, options.inter_op_num_threads = 2, 1
  options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
  session = ort.InferenceSession(model.SerializeToString(), options, ["CPUExecutionProvider"])
  return lambda: _Host(session.run(["out"], feeds)[0])


def _fusions(fn, args) -> str:
  """The optimized HLO's entry instructions, without metadata: what XLA runs."""
  text = fn.lower(*args).compile().as_text()
  entry = text[text.index("\nENTRY ") :]
  lines = [re.sub(r", metadata=\{[^}]*\}", "", line).strip() for line in entry.splitlines()[1:]]
  return "\n".join(
    f"      {line[:200]}" for line in lines if "=" in line and "parameter(" not in line
  )


def run_case(name, host, want, forms, ort, use_ort, hlo=False):
  print(f"\n{name}")
  print(f"  {'form':<40} {'fresh ms':>9} {'faults':>7} {'donated ms':>10}  check")
  args = tuple(jax.block_until_ready(jax.device_put(h)) for h in host)
  copy = jax.jit(jnp.copy)
  out_like = jnp.asarray(want)
  ms, faults = _fresh(copy, (out_like,))
  print(f"  {'jnp.copy of the output':<40} {ms:9.2f} {faults:7.0f} {'':>10}  (allocator ceiling)")
  del out_like
  for form_name, form in forms.items():
    fn = jax.jit(form)
    try:
      ok = np.array_equal(np.asarray(fn(*args)).reshape(want.shape), want)
      ms, faults = _fresh(fn, args)
      donated, aliased = _donating(form, args)
      ok &= np.array_equal(np.asarray(donated()).reshape(want.shape), want)
      donated_ms = timed(_waited(donated), calls=CALLS, repeats=REPEATS) * 1e3
      note = ("ok" if ok else "WRONG") + ("" if aliased else " (not aliased)")
      print(f"  {form_name:<40} {ms:9.2f} {faults:7.0f} {donated_ms:10.2f}  {note}", flush=True)
      if hlo:
        print(_fusions(fn, args))
    except Exception as e:  # a probe: report and go on
      print(f"  {form_name:<40} failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
  if use_ort and ort is not None:
    op, feeds, attributes = ort
    try:
      call = _ort(op, feeds, attributes, want.shape, want.dtype)
      ok = np.array_equal(call().array.reshape(want.shape), want)
      ms, faults = _fresh(call, ())
      label = f"ONNX Runtime {op}, 2 threads"
      print(f"  {label:<40} {ms:9.2f} {faults:7.0f} {'':>10}  {'ok' if ok else 'WRONG'}")
    except Exception as e:
      print(f"  ONNX Runtime failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}")


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument(
    "--only", default=",".join(CASES), help=f"comma-separated: {', '.join(CASES)}"
  )
  parser.add_argument("--no-ort", action="store_true")
  parser.add_argument("--hlo", action="store_true", help="print each form's optimized entry HLO")
  args = parser.parse_args(argv)
  settings = [
    f"{k}={os.environ[k]}"
    for k in sorted(os.environ)
    if k.startswith("MALLOC_") or k in ("GLIBC_TUNABLES", "XLA_FLAGS")
  ]
  print(
    f"# {jax.devices()[0].device_kind}, {os.cpu_count()} cpus, jax {jax.__version__};"
    f" {' '.join(settings) or 'no malloc or XLA settings'}"
  )
  print(f"# each call waited for; median of {REPEATS} repeats of {CALLS} calls")
  check_int32_clamp()
  check_guarded()
  rng = np.random.default_rng(0)
  for case in args.only.split(","):
    run_case(*CASES[case](rng), use_ort=not args.no_ort, hlo=args.hlo)


if __name__ == "__main__":
  main()
