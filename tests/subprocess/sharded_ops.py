"""Runs every registered operator on arrays sharded over 8 devices, next to jnp's formulation.

Run in its own process: the device count must be set before JAX starts, e.g.
XLA_FLAGS=--xla_force_host_platform_device_count=8 on a CPU-only machine. On a machine with
several GPUs it uses them (at least 2), sharding over what exists.

Each case shards its operands along a batch dimension or along the operator's own axis (the
gathered, joined, split, padded, sliced, reversed or scattered one), compiles the operator and
jnp's formulation of it under the same input shardings, and checks three things:

- bits: the operator's output equals the NumPy reference (`dml_jax._src.reference`), computed
  on the whole arrays, bit for bit; so does jnp's formulation (a check on the case itself);
- sharding: every output is sharded as jnp's output is (or, where jnp's program replicates its
  output, as the first operand is: lax.top_k on GPUs gathers a batch-sharded input);
- communication: the compiled program (`Compiled.as_text()`) holds, of each collective kind
  (all-gather, all-reduce, all-to-all, collective-permute, reduce-scatter), no more
  instructions than jnp's program (on GPUs, a scatter whose colliding updates live on different
  devices may hold one all-reduce more: `Case.settles_across_devices`).

Every registered operator must have a case (`CASES` is checked against the registry, so a new
operator fails here until it has one). Prints one line per case and `N passed, M failed` last;
exits 1 on any failure.
"""

from __future__ import annotations

import collections
import dataclasses
import pathlib
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import dml_jax as dml
from dml_jax._src import reference, registry

# Run as a script (python tests/subprocess/sharded_ops.py), this file's folder heads sys.path,
# not the repository: put the repository there too, for the tests' shared helpers.
sys.path.insert(1, str(pathlib.Path(__file__).resolve().parents[2]))
from tests.helpers import bits_equal  # noqa: E402

COLLECTIVES = ("all-gather", "all-reduce", "all-to-all", "collective-permute", "reduce-scatter")
# An instruction's opcode follows its result's type: `%x = f32[2]{0} all-gather(...)`, or the
# asynchronous `all-gather-start(...)`; names such as `%all-gather.1` are not followed by "(".
_COLLECTIVE = re.compile(r"\s(" + "|".join(COLLECTIVES) + r")(?:-start)?\(")


@dataclasses.dataclass(frozen=True)
class Case:
  """One operator call on sharded operands.

  Attributes:
    operator: the registry's name of the operator ("JOIN").
    name: what is sharded and how the operator is called.
    dml: the operator's call on the operands.
    jnp: jnp's formulation of the same call (the same bits), or a string saying why there is
      none; then the output must be sharded as the first operand and the program hold no
      collective.
    operands: (array, the axis sharded over the devices or None: replicated) pairs.
    want: the NumPy reference's output(s).
    settles_across_devices: a scatter whose updates that may share a target live on different
      devices: on GPUs its program may hold one all-reduce more than jnp's, the one that agrees
      on each target's last update (jnp's scatter leaves duplicates' order open; see
      docs/sharding.md). Anywhere else, and beyond that one, the usual rule holds.
  """

  operator: str
  name: str
  dml: Callable[..., Any]
  jnp: Callable[..., Any] | str
  operands: Sequence[tuple[np.ndarray, int | None]]
  want: Any
  settles_across_devices: bool = False


def collectives(hlo: str) -> collections.Counter[str]:
  """The number of collective instructions of each kind in a compiled program's text."""
  return collections.Counter(match.group(1) for match in _COLLECTIVE.finditer(hlo))


def _describe(counts: collections.Counter[str]) -> str:
  return ", ".join(f"{kind} x{n}" for kind, n in sorted(counts.items())) or "none"


def _mesh() -> Mesh:
  devices = np.array(jax.devices())
  if len(devices) < 2:
    sys.exit(f"needs at least 2 devices; found {len(devices)}")
  return Mesh(devices, ("d",))


def _place(x: np.ndarray, mesh: Mesh, axis: int | None) -> jax.Array:
  spec: list[str | None] = [None] * x.ndim
  if axis is not None:
    spec[axis] = "d"
  return jax.device_put(x, NamedSharding(mesh, PartitionSpec(*spec)))


def _run(fn: Callable[..., Any], placed: Sequence[jax.Array]) -> tuple[list[jax.Array], str]:
  """The outputs (a list, one or several) and the compiled program's text of jit(fn)."""
  compiled = jax.jit(fn).lower(*placed).compile()
  out = compiled(*placed)
  return (list(out) if isinstance(out, list | tuple) else [out]), compiled.as_text()


def check(case: Case, mesh: Mesh) -> list[str]:
  """What is wrong with the operator's program in `case` (nothing: an empty list) and what
  communication each program holds."""
  placed = [_place(x, mesh, axis) for x, axis in case.operands]
  outs, hlo = _run(case.dml, placed)
  wants = list(case.want) if isinstance(case.want, list | tuple) else [case.want]
  problems = []
  if len(outs) != len(wants) or not all(map(bits_equal, outs, wants)):
    problems.append("bits differ from the reference")
  found = collectives(hlo)
  if isinstance(case.jnp, str):
    allowed: collections.Counter[str] = collections.Counter()
    shardings = [placed[0].sharding] * len(outs)
  else:
    jnp_outs, jnp_hlo = _run(case.jnp, placed)
    if len(jnp_outs) != len(wants) or not all(map(bits_equal, jnp_outs, wants)):
      problems.append("jnp's formulation differs from the reference (a wrong case)")
    allowed = collectives(jnp_hlo)
    shardings = [out.sharding for out in jnp_outs]
  for k, (out, sharding) in enumerate(zip(outs, shardings, strict=False)):
    if not out.sharding.is_equivalent_to(sharding, out.ndim) and not (
      sharding.is_fully_replicated and out.sharding == placed[0].sharding
    ):  # keeping the operand's sharding where jnp's program replicates moves less, never more
      spec = getattr(out.sharding, "spec", out.sharding)
      problems.append(f"output {k} sharded {spec}, jnp's {getattr(sharding, 'spec', sharding)}")
  if case.settles_across_devices and mesh.devices.flat[0].platform == "gpu":
    allowed["all-reduce"] += 1  # the winners' agreement, by design
  excess = found - allowed
  if excess:
    problems.append(f"collectives beyond jnp's: {_describe(excess)}")
  return problems, f"collectives: {_describe(found)}; jnp's: {_describe(allowed)}"


# --------------------------------------------------------------------------- #
# The cases, per operator
# --------------------------------------------------------------------------- #


def _normalized(index: jax.Array, size: int) -> jax.Array:
  """DirectML's index rule in jnp: negative indices count from the end, then clamped."""
  return jnp.clip(jnp.where(index < 0, index + size, index), 0, size - 1)


def _depth_to_space(x, b, column_row_depth):
  n, depth, h, w = x.shape
  c = depth // (b * b)
  if column_row_depth:  # channel slowest, then block row, block column
    blocks = x.reshape(n, c, b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
  else:  # block row slowest, then block column, channel
    blocks = x.reshape(n, b, b, c, h, w).transpose(0, 3, 4, 1, 5, 2)
  return blocks.reshape(n, c, h * b, w * b)


def _space_to_depth(x, b, column_row_depth):
  n, c, h, w = x.shape
  blocks = x.reshape(n, c, h // b, b, w // b, b)
  if column_row_depth:
    blocks = blocks.transpose(0, 1, 3, 5, 2, 4)
  else:
    blocks = blocks.transpose(0, 3, 5, 1, 2, 4)
  return blocks.reshape(n, c * b * b, h // b, w // b)


def depth_space_cases(n, rng):
  """DEPTH_TO_SPACE and SPACE_TO_DEPTH (DEPTH_COLUMN_ROW) sharded on the batch, the channels
  and the height; their "1" forms with the other order on the channels and the height."""
  cases = []
  deep = rng.standard_normal((n, 4 * n, n, 2)).astype(np.float32)
  wide = rng.standard_normal((n, n, 2 * n, 4)).astype(np.float32)
  calls = (
    ("DEPTH_TO_SPACE", dml.depth_to_space, {}, (0, 1, 2)),
    ("DEPTH_TO_SPACE1", dml.depth_to_space1, {"order": "COLUMN_ROW_DEPTH"}, (1, 2)),
    ("SPACE_TO_DEPTH", dml.space_to_depth, {}, (0, 1, 2)),
    ("SPACE_TO_DEPTH1", dml.space_to_depth1, {"order": "COLUMN_ROW_DEPTH"}, (1, 2)),
  )
  for op, fn, kwargs, shards in calls:
    order = kwargs.get("order", "DEPTH_COLUMN_ROW")
    crd = order == "COLUMN_ROW_DEPTH"
    if op.startswith("DEPTH"):
      x, form = deep, _depth_to_space
      want = reference.depth_to_space1(deep, block_size=2, order=order)
    else:
      x, form = wide, _space_to_depth
      want = reference.space_to_depth1(wide, block_size=2, order=order)
    for shard in shards:
      cases.append(
        Case(
          op,
          f"{order}, block 2, sharded on axis {shard}",
          lambda x, fn=fn, kwargs=kwargs: fn(x, block_size=2, **kwargs),
          lambda x, form=form, crd=crd: form(x, 2, crd),
          [(x, shard)],
          want,
        )
      )
  return cases


def element_wise_identity_cases(n, rng):
  x = rng.standard_normal((2 * n, n)).astype(np.float32)
  # Scale 2 makes the product exact: a fused multiply-add gives jnp's formulation the same bits.
  return [
    Case(
      "ELEMENT_WISE_IDENTITY",
      f"scale 2, bias 0.5, sharded on axis {shard}",
      lambda x: dml.element_wise_identity(x, scale_bias=(2.0, 0.5)),
      lambda x: x * np.float32(2) + np.float32(0.5),
      [(x, shard)],
      reference.element_wise_identity(x, scale_bias=(2.0, 0.5)),
    )
    for shard in (0, 1)
  ]


def fill_value_cases(n, rng):
  """The fills read nothing: their output is written sharded on either axis (a sharding
  constraint on the call), as jnp's formulation under the same constraint is."""
  del rng
  sizes = (2 * n, n)

  def sharded(fn, axis):
    spec = PartitionSpec(*("d" if d == axis else None for d in range(len(sizes))))
    return lambda: jax.lax.with_sharding_constraint(fn(), NamedSharding(_mesh(), spec))

  constant = dict(sizes=sizes, value_data_type="FLOAT32", value=1.5)
  sequence = dict(sizes=sizes, value_data_type="INT32", value_start=5, value_delta=-3)
  count = sizes[0] * sizes[1]
  return [
    case
    for axis in (0, 1)
    for case in (
      Case(
        "FILL_VALUE_CONSTANT",
        f"value 1.5, written sharded on axis {axis}",
        sharded(lambda: dml.fill_value_constant(**constant), axis),
        sharded(lambda: jnp.full(sizes, 1.5, jnp.float32), axis),
        [],
        reference.fill_value_constant(**constant),
      ),
      Case(
        "FILL_VALUE_SEQUENCE",
        f"5 - 3i, written sharded on axis {axis}",
        sharded(lambda: dml.fill_value_sequence(**sequence), axis),
        sharded(lambda: (5 - 3 * jnp.arange(count, dtype=jnp.int32)).reshape(sizes), axis),
        [],
        reference.fill_value_sequence(**sequence),
      ),
    )
  ]


def gather_cases(n, rng):
  cases = []
  x = rng.standard_normal((n, 2 * n, n)).astype(np.float32)
  ids = rng.integers(-2 * n - 2, 2 * n + 2, (1, 1, 3 * n)).astype(np.int32)

  def dml_gather(x, i):
    return dml.gather(x, i, axis=1, index_dimensions=1)

  def jnp_gather(x, i):
    return jnp.take(x, _normalized(i.reshape(-1), x.shape[1]), axis=1)

  want = reference.gather(x, ids, axis=1, index_dimensions=1)
  for shard, id_shard in ((0, None), (1, None), (None, 2), (0, 2), (2, 2)):
    cases.append(
      Case(
        "GATHER",
        f"along axis 1, input sharded on axis {shard}, indices on axis {id_shard}",
        dml_gather,
        jnp_gather,
        [(x, shard), (ids, id_shard)],
        want,
      )
    )
  # Rows of a table by ids sharded over the devices (an embedding lookup).
  table = rng.standard_normal((2 * n, 8)).astype(np.float32)
  row_ids = rng.integers(-2 * n, 2 * n, (1, 4 * n)).astype(np.int32)
  for shard, id_shard in ((None, 1), (0, 1), (1, 1)):
    cases.append(
      Case(
        "GATHER",
        f"rows, table sharded on axis {shard}, ids on axis {id_shard}",
        lambda t, i: dml.gather(t, i, axis=0, index_dimensions=1),
        lambda t, i: jnp.take(t, _normalized(i.reshape(-1), t.shape[0]), axis=0),
        [(table, shard), (row_ids, id_shard)],
        reference.gather(table, row_ids, axis=0, index_dimensions=1),
      )
    )
  return cases


def gather_elements_cases(n, rng):
  cases = []
  x = rng.standard_normal((n, 2 * n, n)).astype(np.float32)
  for axis, shape in ((1, (n, 3 * n, n)), (2, (n, 2 * n, 2 * n)), (0, (2 * n, 2 * n, n))):
    idx = rng.integers(-x.shape[axis] - 2, x.shape[axis] + 2, shape).astype(np.int32)
    for shard in sorted({0 if axis else 1, axis, 2}):  # a batch axis, the gathered one, the last
      cases.append(
        Case(
          "GATHER_ELEMENTS",
          f"along axis {axis}, sharded on axis {shard}",
          lambda a, b, axis=axis: dml.gather_elements(a, b, axis=axis),
          lambda a, b, axis=axis: jnp.take_along_axis(a, _normalized(b, a.shape[axis]), axis=axis),
          [(x, shard), (idx, shard)],
          reference.gather_elements(x, idx, axis=axis),
        )
      )
  # The shapes of the CUDA GPUs' row kernel (the last axis, 128-wide index rows) and strip
  # kernel (axis 0, 64 inner columns); the lax path elsewhere.
  wide = rng.standard_normal((2 * n, 256)).astype(np.float32)
  wide_idx = rng.integers(-300, 300, (2 * n, 128)).astype(np.int32)
  tall = rng.standard_normal((2 * n, 64)).astype(np.float32)
  tall_idx = rng.integers(-2 * n - 2, 2 * n + 2, (8 * n, 64)).astype(np.int32)
  for x, idx, axis, kernel in ((wide, wide_idx, 1, "row"), (tall, tall_idx, 0, "strip")):
    for shard in (0, 1):
      cases.append(
        Case(
          "GATHER_ELEMENTS",
          f"{kernel}-kernel shape {x.shape}, along axis {axis}, sharded on axis {shard}",
          lambda a, b, axis=axis: dml.gather_elements(a, b, axis=axis),
          lambda a, b, axis=axis: jnp.take_along_axis(a, _normalized(b, a.shape[axis]), axis=axis),
          [(x, shard), (idx, shard)],
          reference.gather_elements(x, idx, axis=axis),
        )
      )
  return cases


def _jnp_gather_nd(x, tuples, batch):
  """GATHER_ND with `batch` batch dimensions, the tuples indexing the dimensions after them."""
  count = tuples.shape[-1]
  coords = [_normalized(tuples[..., j], x.shape[batch + j]) for j in range(count)]
  if batch == 0:
    return x[tuple(coords)]
  lead = [
    jnp.arange(x.shape[d]).reshape((-1,) + (1,) * (tuples.ndim - 2 - d)) for d in range(batch)
  ]
  return x[tuple(lead + coords)]


def gather_nd_cases(n, rng):
  cases = []
  x = rng.standard_normal((n, 2 * n, n)).astype(np.float32)
  tuples = rng.integers(-3, 2 * n + 3, (n, 5, 1)).astype(np.int32)
  for shard in (0, 1, 2):
    cases.append(
      Case(
        "GATHER_ND1",
        f"one batch dimension, sharded on axis {shard}",
        lambda a, b: dml.gather_nd(a, b, batch_dimension_count=1),
        lambda a, b: _jnp_gather_nd(a, b, 1),
        [(x, shard), (tuples, 0 if shard == 0 else None)],
        reference.gather_nd(x, tuples, batch_dimension_count=1),
      )
    )
  table = rng.standard_normal((2 * n, 3, 8)).astype(np.float32)
  pairs = np.stack(
    [rng.integers(-2 * n - 2, 2 * n + 2, (1, 4 * n)), rng.integers(-5, 5, (1, 4 * n))], axis=-1
  ).astype(np.int32)
  for shard, index_shard in ((0, None), (2, None), (None, 1), (0, 1)):
    cases.append(
      Case(
        "GATHER_ND",
        f"pairs, table sharded on axis {shard}, tuples on axis {index_shard}",
        dml.gather_nd,
        lambda a, b: _jnp_gather_nd(a, b[0], 0)[None],
        [(table, shard), (pairs, index_shard)],
        reference.gather_nd(table, pairs),
      )
    )
  return cases


def join_cases(n, rng):
  cases = []
  x = rng.standard_normal((n, 2 * n, n)).astype(np.float32)
  y = rng.standard_normal((n, n, n)).astype(np.float32)
  for shard in (0, 1, 2):
    cases.append(
      Case(
        "JOIN",
        f"along axis 1, sharded on axis {shard}",
        lambda a, b: dml.join([a, b], axis=1),
        lambda a, b: jnp.concatenate([a, b], axis=1),
        [(x, shard), (y, shard)],
        reference.join([x, y], axis=1),
      )
    )
  # Along the first axis (XLA:CPU's "flat" form on one device), and along an axis after
  # leading 1s (its "squeezed" form).
  for shard in (0, 1, 2):
    cases.append(
      Case(
        "JOIN",
        f"along axis 0, sharded on axis {shard}",
        lambda a, b: dml.join([a, b, a], axis=0),
        lambda a, b: jnp.concatenate([a, b, a], axis=0),
        [(x, shard), (x[::-1].copy(), shard)],
        reference.join([x, x[::-1], x], axis=0),
      )
    )
  # After leading 1s: 1-D views on one CPU device ("flat"), and the 1s dropped ("squeezed").
  flat = rng.standard_normal((1, n, 2 * n)).astype(np.float32)
  squeezed = rng.standard_normal((1, 2, 2 * n, n)).astype(np.float32)
  for x, axis, what in ((flat, 1, "1-D views"), (squeezed, 2, "leading 1 dropped")):
    for shard in range(axis, x.ndim):
      cases.append(
        Case(
          "JOIN",
          f"along axis {axis} of {x.shape} ({what} on one CPU), sharded on axis {shard}",
          lambda a, b, axis=axis: dml.join([a, b], axis=axis),
          lambda a, b, axis=axis: jnp.concatenate([a, b], axis=axis),
          [(x, shard), (np.flip(x, axis).copy(), shard)],
          reference.join([x, np.flip(x, axis)], axis=axis),
        )
      )
  return cases


def one_hot_cases(n, rng):
  cases = []
  depth = 2 * n
  values = np.array([[[-1.5, 2.5]]], np.float32)
  for axis, shape in ((1, (2 * n, 1, n)), (2, (n, 2 * n, 1))):
    indices = rng.integers(-depth - 2, depth + 2, shape).astype(np.int32)

    def jnp_one_hot(i, v, axis=axis):
      i = jnp.where(i < 0, i + depth, i)
      positions = jax.lax.broadcasted_iota(
        np.int32, i.shape[:axis] + (depth,) + i.shape[axis + 1 :], axis
      )
      return jnp.where(positions == i, v.reshape(-1)[1], v.reshape(-1)[0])

    for shard in (0, 1, 2):
      if shape[shard] == 1:
        continue
      cases.append(
        Case(
          "ONE_HOT",
          f"along axis {axis}, depth {depth}, sharded on axis {shard}",
          lambda i, v, axis=axis: dml.one_hot(i, v, axis=axis, depth=depth),
          jnp_one_hot,
          [(indices, shard), (values, None)],
          reference.one_hot(indices, values, axis=axis, depth=depth),
        )
      )
  return cases


def padding_cases(n, rng):
  cases = []
  x = rng.standard_normal((2 * n, n)).astype(np.float32)
  modes = {
    "CONSTANT": "constant",
    "EDGE": "edge",
    "REFLECTION": "reflect",
    "SYMMETRIC": "symmetric",
    "WRAP": "wrap",
  }
  # Pads that keep the sizes multiples of the device count (the output can stay sharded), and
  # pads that do not.
  for start, end in (((3, 6), (5, 2)), ((1, 0), (0, 3))):
    for mode, jnp_mode in modes.items():
      if start == (1, 0) and mode not in ("REFLECTION", "WRAP"):
        continue
      for shard in (0, 1):
        operator, fn = ("PADDING1", dml.padding1) if mode == "WRAP" else ("PADDING", dml.padding)
        extra = {"constant_values": np.float32(-2.0)} if mode == "CONSTANT" else {}
        kwargs = dict(padding_mode=mode, padding_value=-2.0, start_padding=start, end_padding=end)
        want = getattr(reference, fn.__name__)(x, **kwargs)
        cases.append(
          Case(
            operator,
            f"{mode}, pads {start} and {end}, sharded on axis {shard}",
            lambda x, fn=fn, kwargs=kwargs: fn(x, **kwargs),
            lambda x, jnp_mode=jnp_mode, extra=extra, start=start, end=end: jnp.pad(
              x, list(zip(start, end, strict=True)), mode=jnp_mode, **extra
            ),
            [(x, shard)],
            want,
          )
        )
  return cases


def _jnp_reverse_subsequences(x, lengths, axis):
  size = x.shape[axis]
  lengths = jnp.minimum(lengths, size).astype(np.int32)
  position = jax.lax.broadcasted_iota(np.int32, x.shape, axis)
  source = jnp.where(position < lengths, lengths - 1 - position, position)
  return jnp.take_along_axis(x, source, axis=axis)


def reverse_subsequences_cases(n, rng):
  cases = []
  x = rng.standard_normal((n, 2 * n, n)).astype(np.float32)
  per_lane = rng.integers(0, 3 * n, (n, 1, n)).astype(np.uint32)
  # Lengths per lane that all rows share: the rows' form at run time on the CPU.
  shared = np.broadcast_to(rng.integers(0, 3 * n, (n, 1, 1)), (n, 1, n)).astype(np.uint32)
  per_batch = rng.integers(0, 3 * n, (n, 1, 1)).astype(np.uint32)
  for lengths, what in (
    (per_lane, "per lane"),
    (shared, "equal in each row"),
    (per_batch, "(n, 1, 1)"),
  ):
    full = np.broadcast_to(lengths, (n, 1, n))
    for shard in (0, 1, 2):
      cases.append(
        Case(
          "REVERSE_SUBSEQUENCES",
          f"along axis 1, lengths {what}, sharded on axis {shard}",
          lambda a, b: dml.reverse_subsequences(a, b, axis=1),
          lambda a, b: _jnp_reverse_subsequences(a, b, 1),
          [(x, shard), (lengths, shard if lengths.shape[shard] > 1 else None)],
          reference.reverse_subsequences(x, full, axis=1),
        )
      )
  # Sub-rows (lanes sharing a length along the last dimension, varying along the middle one).
  sub = rng.standard_normal((n, 2 * n, 2, n)).astype(np.float32)
  sub_lengths = np.broadcast_to(rng.integers(0, 3 * n, (n, 1, 2, 1)), (n, 1, 2, n))
  sub_lengths = sub_lengths.astype(np.uint32)
  for shard in (0, 1, 3):
    cases.append(
      Case(
        "REVERSE_SUBSEQUENCES",
        f"along axis 1, sub-rows sharing lengths, sharded on axis {shard}",
        lambda a, b: dml.reverse_subsequences(a, b, axis=1),
        lambda a, b: _jnp_reverse_subsequences(a, b, 1),
        [(sub, shard), (sub_lengths, None if shard == 1 else shard)],
        reference.reverse_subsequences(sub, sub_lengths, axis=1),
      )
    )
  # Lengths above the axis size everywhere: jnp's x[::-1] of a sharded axis.
  whole = np.full((n, 1, n), 4 * n, np.uint32)
  for shard in (1,):
    cases.append(
      Case(
        "REVERSE_SUBSEQUENCES",
        f"whole lanes along axis 1, sharded on axis {shard}",
        lambda a, b: dml.reverse_subsequences(a, b, axis=1),
        lambda a, b: _jnp_reverse_subsequences(a, b, 1),
        [(x, shard), (whole, None)],
        reference.reverse_subsequences(x, whole, axis=1),
      )
    )
  return cases


def scatter_elements_cases(n, rng):
  cases = []
  x = rng.standard_normal((2 * n, 2 * n)).astype(np.float32)
  # Distinct targets in each row (jnp's scatter leaves the order of duplicates open).
  idx = np.stack([rng.permutation(2 * n)[:n] for _ in range(2 * n)]).astype(np.int32)
  idx[::3] -= 2 * n  # some count from the end
  updates = rng.standard_normal(idx.shape).astype(np.float32)

  def jnp_scatter(x, i, u):
    rows = jnp.arange(x.shape[0])[:, None]
    return x.at[rows, jnp.where(i < 0, i + x.shape[1], i)].set(u)

  for shard in (0, 1):
    cases.append(
      Case(
        "SCATTER_ELEMENTS",
        f"along axis 1, sharded on axis {shard}",
        lambda x, i, u: dml.scatter_elements(x, i, u, axis=1),
        jnp_scatter,
        [(x, shard), (idx, shard), (updates, shard)],
        reference.scatter_elements(x, idx, updates, axis=1),
        settles_across_devices=shard == 1,
      )
    )
  columns, column_updates = idx.T.copy(), updates.T.copy()

  def jnp_scatter_columns(x, i, u):
    return x.at[jnp.where(i < 0, i + x.shape[0], i), jnp.arange(x.shape[1])].set(u)

  for shard in (0, 1):
    cases.append(
      Case(
        "SCATTER_ELEMENTS",
        f"along axis 0, sharded on axis {shard}",
        lambda x, i, u: dml.scatter_elements(x, i, u, axis=0),
        jnp_scatter_columns,
        [(x, shard), (columns, 1), (column_updates, 1)],
        reference.scatter_elements(x, columns, column_updates, axis=0),
      )
    )
  return cases


def scatter_nd_cases(n, rng):
  cases = []
  x = rng.standard_normal((2 * n, 8)).astype(np.float32)
  rows = rng.permutation(2 * n)[:n].astype(np.int32).reshape(n, 1)
  updates = rng.standard_normal((n, 8)).astype(np.float32)

  def jnp_scatter(x, i, u):
    return x.at[i[:, 0]].set(u)

  # Rows of 1 KiB: XLA:CPU's pull (each output row read once, from its winning update or the
  # input) on one device.
  wide = rng.standard_normal((2 * n, 256)).astype(np.float32)
  wide_updates = rng.standard_normal((n, 256)).astype(np.float32)
  for shard in (0, 1):
    cases.append(
      Case(
        "SCATTER_ND",
        f"1 KiB rows, input and updates sharded on axis {shard}",
        lambda x, i, u: dml.scatter_nd(x, i, u),
        jnp_scatter,
        [(wide, shard), (rows, None), (wide_updates, 1 if shard == 1 else None)],
        reference.scatter_nd(wide, rows, wide_updates),
      )
    )
  # Rows of 1 KiB over two dimensions, which the pull views as one.
  deep = rng.standard_normal((2 * n, n, 64)).astype(np.float32)
  deep_updates = rng.standard_normal((n, n, 64)).astype(np.float32)
  for shard in (1, 2):
    cases.append(
      Case(
        "SCATTER_ND",
        f"1 KiB rows of shape {deep.shape[1:]}, input and updates sharded on axis {shard}",
        lambda x, i, u: dml.scatter_nd(x, i, u, indices_dimension_count=2),
        lambda x, i, u: x.at[i[0, :, 0]].set(u),
        [(deep, shard), (rows[None], None), (deep_updates, shard)],
        reference.scatter_nd(deep, rows[None], deep_updates, indices_dimension_count=2),
      )
    )
  for shard, index_shard in ((0, None), (1, None), (None, 0), (0, 0)):
    cases.append(
      Case(
        "SCATTER_ND",
        f"rows, input sharded on axis {shard}, tuples on axis {index_shard}",
        lambda x, i, u: dml.scatter_nd(x, i, u),
        jnp_scatter,
        [(x, shard), (rows, index_shard), (updates, 1 if shard == 1 else index_shard)],
        reference.scatter_nd(x, rows, updates),
        settles_across_devices=index_shard is not None,
      )
    )
  return cases


def slice_cases(n, rng):
  cases = []
  x = rng.standard_normal((2 * n, 2 * n)).astype(np.float32)
  for shard in (0, 1):
    cases.append(
      Case(
        "SLICE",
        f"offsets (1, 2), strides (2, 1), sharded on axis {shard}",
        lambda x: dml.slice(x, offsets=(1, 2), sizes=(n, 2 * n - 2), strides=(2, 1)),
        lambda x: x[1::2, 2:],
        [(x, shard)],
        reference.slice(x, offsets=(1, 2), sizes=(n, 2 * n - 2), strides=(2, 1)),
      )
    )
    for strides, jnp_slice in (((1, -1), lambda x: x[:, ::-1]), ((-1, 2), lambda x: x[::-1, ::2])):
      kwargs = dict(
        input_window_offsets=(0, 0), input_window_sizes=(2 * n, 2 * n), input_window_strides=strides
      )
      cases.append(
        Case(
          "SLICE1",
          f"strides {strides}, sharded on axis {shard}",
          lambda x, kwargs=kwargs: dml.slice1(x, **kwargs),
          jnp_slice,
          [(x, shard)],
          reference.slice1(x, **kwargs),
        )
      )
  return cases


def split_cases(n, rng):
  cases = []
  x = rng.standard_normal((2 * n, 2 * n)).astype(np.float32)
  for axis in (0, 1):
    for shard in (0, 1):
      sizes = (n, n // 2, n // 2)
      cases.append(
        Case(
          "SPLIT",
          f"along axis {axis} into {sizes}, sharded on axis {shard}",
          lambda x, axis=axis, sizes=sizes: dml.split(x, axis=axis, split_sizes=sizes),
          lambda x, axis=axis, sizes=sizes: jnp.split(x, np.cumsum(sizes)[:-1], axis=axis),
          [(x, shard)],
          reference.split(x, axis=axis, split_sizes=sizes),
        )
      )
  return cases


def tile_cases(n, rng):
  x = rng.standard_normal((n, 2 * n)).astype(np.float32)
  return [
    Case(
      "TILE",
      f"repeats {repeats}, sharded on axis {shard}",
      lambda x, repeats=repeats: dml.tile(x, repeats=repeats),
      lambda x, repeats=repeats: jnp.tile(x, repeats),
      [(x, shard)],
      reference.tile(x, repeats=repeats),
    )
    for repeats in ((2, 1), (1, 3))
    for shard in (0, 1)
  ]


def cast_cases(n, rng):
  x = (rng.standard_normal((2 * n, n)) * 1000).astype(np.float32)
  return [
    Case(
      "CAST",
      f"float32 to {target}, sharded on axis {shard}",
      lambda x, target=target: dml.cast(x, data_type=target),
      lambda x, target=target: x.astype(target),
      [(x, shard)],
      reference.cast(x, data_type=target),
    )
    for target in ("float16", "int32")
    for shard in (0, 1)
  ]


def element_wise_if_cases(n, rng):
  condition = rng.integers(0, 2, (2 * n, n), dtype=np.uint8)
  a, b = (rng.standard_normal((2 * n, n)).astype(np.float32) for _ in range(2))
  return [
    Case(
      "ELEMENT_WISE_IF",
      f"sharded on axis {shard}",
      dml.element_wise_if,
      lambda c, a, b: jnp.where(c != 0, a, b),
      [(condition, shard), (a, shard), (b, shard)],
      reference.element_wise_if(condition, a, b),
    )
    for shard in (0, 1)
  ]


def diagonal_matrix_cases(n, rng):
  del rng
  return [
    Case(
      "DIAGONAL_MATRIX",
      "no operand (replicated output)",
      lambda: dml.diagonal_matrix(sizes=(2 * n, n), offset=1),
      lambda: jnp.eye(2 * n, n, k=1, dtype=jnp.float32),
      [],
      reference.diagonal_matrix(sizes=(2 * n, n), offset=1),
    )
  ]


def diagonal_matrix1_cases(n, rng):
  x = rng.standard_normal((n, 2 * n)).astype(np.float32)
  params = dict(value=0.0, diagonal_fill_begin=-(2**31), diagonal_fill_end=0)
  return [
    Case(
      "DIAGONAL_MATRIX1",
      f"the upper triangle, sharded on axis {shard}",
      lambda x: dml.diagonal_matrix1(x, **params),
      jnp.triu,
      [(x, shard)],
      reference.diagonal_matrix1(x, **params),
    )
    for shard in (0, 1)
  ]


def nonzero_coordinates_cases(n, rng):
  x = rng.integers(-1, 2, (2 * n, n)).astype(np.float32)
  m = x.size

  def jnp_nonzero(x):
    count = jnp.count_nonzero(x).astype(jnp.uint32).reshape(1, 1)
    rows = jnp.stack(jnp.nonzero(x, size=m, fill_value=0), axis=1).astype(jnp.uint32)
    return count, rows

  return [
    Case(
      "NONZERO_COORDINATES",
      f"sharded on axis {shard}",
      dml.nonzero_coordinates,
      jnp_nonzero,
      [(x, shard)],
      reference.nonzero_coordinates(x),
    )
    for shard in (0, 1)
  ]


def arg_min_max_cases(n, rng):
  cases = []
  x = rng.standard_normal((2 * n, 2 * n)).astype(np.float32)
  for operator, function, jnp_pick in (
    ("ARGMIN", dml.argmin, jnp.argmin),
    ("ARGMAX", dml.argmax, jnp.argmax),
  ):
    oracle = getattr(reference, function.__name__)
    for axis in (0, 1):
      for shard in (0, 1):
        cases.append(
          Case(
            operator,
            f"along axis {axis}, sharded on axis {shard}",
            lambda x, function=function, axis=axis: function(x, axes=(axis,)),
            lambda x, jnp_pick=jnp_pick, axis=axis: jnp_pick(x, axis, keepdims=True).astype(
              jnp.uint32
            ),
            [(x, shard)],
            oracle(x, axes=(axis,)),
          )
        )
  return cases


def top_k_cases(n, rng):
  cases = []
  x = rng.permuted(np.tile(np.arange(2 * n, dtype=np.float32), (2 * n, 1)), axis=1)
  for operator, direction in (("TOP_K", "DECREASING"), ("TOP_K1", "INCREASING")):
    descending = direction == "DECREASING"
    if descending:
      call = lambda x: dml.top_k(x, axis=1, k=3)
    else:
      call = lambda x: dml.top_k1(x, axis=1, k=3, axis_direction="INCREASING")

    def jnp_top_k(x, descending=descending):
      values, indices = jax.lax.top_k(x if descending else -x, 3)
      return (values if descending else -values), indices.astype(jnp.uint32)

    # Sharded along the lanes (axis 1), jax.lax.top_k all-gathers them; dml_jax does too, and
    # then gathers the K values from the sharded input, one all-reduce of the (.., K) output
    # more (docs/sharding.md). So only the batch is sharded here.
    for shard in (0,):
      cases.append(
        Case(
          operator,
          f"k 3 along axis 1 ({direction}), sharded on axis {shard}",
          call,
          jnp_top_k,
          [(x, shard)],
          reference.top_k1(x, axis=1, k=3, axis_direction=direction),
        )
      )
  return cases


def resample_cases(n, rng):
  # NCHW images sharded over the batch (nothing moves) or over the height (the rows stay put:
  # every output row reads its own shard's input row); nearest 2x and a linear downscale.
  x = rng.standard_normal((n, 2, 2 * n, 3)).astype(np.float32)
  nearest = dict(interpolation_mode="NEAREST_NEIGHBOR", scales=(1, 1, 2, 2))
  up = lambda x: jnp.repeat(jnp.repeat(x, 2, axis=2), 2, axis=3)  # noqa: E731
  cases = []
  for shard in (0, 2):
    cases += [
      Case(
        "RESAMPLE",
        f"nearest x2, sharded on axis {shard}",
        lambda x: dml.resample(x, **nearest),
        up,
        [(x, shard)],
        reference.resample(x, **nearest),
      ),
      Case(
        "RESAMPLE1",
        f"nearest x2, sharded on axis {shard}",
        lambda x: dml.resample1(x, **nearest),
        up,
        [(x, shard)],
        reference.resample1(x, **nearest),
      ),
      Case(
        "RESAMPLE2",
        f"nearest x2 (floor), sharded on axis {shard}",
        lambda x: dml.resample2(
          x, rounding_direction="DECREASING", input_pixel_offsets=(0.5, 0.5, 0.0, 0.0), **nearest
        ),
        up,
        [(x, shard)],
        reference.resample2(
          x, rounding_direction="DECREASING", input_pixel_offsets=(0.5, 0.5, 0.0, 0.0), **nearest
        ),
      ),
      Case(
        "UPSAMPLE_2D",
        f"nearest x2, sharded on axis {shard}",
        lambda x: dml.upsample_2d(x, scale_size=(2, 2)),
        up,
        [(x, shard)],
        reference.upsample_2d(x, scale_size={"Width": 2, "Height": 2}),
      ),
    ]
  # LINEAR along the width only, the data sharded over the batch: per-shard arithmetic.
  data = np.round(x * 8) + np.float32(0)  # whole numbers (no -0.0): every product exact
  linear = dict(interpolation_mode="LINEAR", scales=(1, 1, 1, 2))
  weights = np.array(
    [[1, 0, 0], [0.75, 0.25, 0], [0.25, 0.75, 0], [0, 0.75, 0.25], [0, 0.25, 0.75], [0, 0, 1]],
    np.float32,
  )
  cases.append(
    Case(
      "RESAMPLE",
      "linear x2 on the width, sharded on axis 0",
      lambda x: dml.resample(x, **linear),
      lambda x: jnp.einsum("nchw,ow->ncho", x, weights, precision="highest"),
      [(data, 0)],
      reference.resample(data, **linear),
    )
  )
  return cases


CASES = (
  arg_min_max_cases,
  depth_space_cases,
  element_wise_identity_cases,
  fill_value_cases,
  gather_cases,
  gather_elements_cases,
  gather_nd_cases,
  join_cases,
  one_hot_cases,
  padding_cases,
  reverse_subsequences_cases,
  scatter_elements_cases,
  scatter_nd_cases,
  slice_cases,
  split_cases,
  tile_cases,
  cast_cases,
  element_wise_if_cases,
  diagonal_matrix_cases,
  diagonal_matrix1_cases,
  nonzero_coordinates_cases,
  top_k_cases,
  resample_cases,
)


def main(argv: Sequence[str]) -> int:
  mesh = _mesh()
  n = len(mesh.devices)
  rng = np.random.default_rng(0)
  only = {registry.canonical_name(name) for name in argv}
  cases = [case for make in CASES for case in make(n, rng)]
  failed = 0
  uncovered = sorted(set(registry.operators()) - {case.operator for case in cases})
  for operator in uncovered:
    failed += 1
    print(f"FAIL  {operator}: no sharded case; add one to {pathlib.Path(__file__).name}")
  cases = [case for case in cases if not only or case.operator in only]
  platform = jax.devices()[0].platform
  for case in cases:
    try:
      problems, communication = check(case, mesh)
    except Exception as error:  # a crash fails its case, and the others still run
      problems, communication = [f"raised {type(error).__name__}: {error}"], ""
    failed += bool(problems)
    verdict = "; ".join(problems) if problems else communication
    print(
      f"{'FAIL' if problems else 'PASS'}  {case.operator}: {case.name} over {n} {platform}"
      f" devices ({verdict})"
    )
  print(f"{len(cases) + len(uncovered) - failed} passed, {failed} failed")
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
