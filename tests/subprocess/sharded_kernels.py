"""Runs every kernel of the operators' tables, partitioned (`kernels.forms.per_shard`), on
operands sharded over 8 devices.

Run in its own process: the device count must be set before JAX starts, e.g.
XLA_FLAGS=--xla_force_host_platform_device_count=8 JAX_PLATFORMS=cpu. The Pallas kernels run in
Pallas's interpreter; the native CPU kernels for real where they build (else each is skipped
with the reason). Each case shards the operands along a batch dimension, then along the
operator's own axis, and checks that the kernel's output
- has the bits of the same kernel on one device, unsharded;
- is sharded as jnp's formulation's output is, under the same shardings;
- comes from a compiled program holding no more collectives (all-gather, all-reduce,
  all-to-all, collective-permute, reduce-scatter) than jnp's, and none at all when only a
  batch dimension is sharded.
A kernel that needs its axis whole where XLA partitions jnp's formulation along it
(`GATHERS_ITS_AXIS`) is held to less there: with that axis sharded, its program's only
collectives are all-gathers, one an operand at most (the output is then sliced where the
program wants it sharded, which moves nothing).
Then vmap of a partitioned kernel over a sharded batch: the same checks.
Prints one line per case and `N passed, M failed, K skipped`; exits 1 on any failure.
"""

from __future__ import annotations

import re
import sys
import traceback

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec

from dml_jax._src import buffers
from dml_jax._src.kernels import forms, native_cpu
from dml_jax._src.ops import (
  arg_min_max,
  cumulative,
  depth_space,
  gather_elements,
  gather_nd,
  join,
  one_hot,
  scatter_elements,
  scatter_nd,
  split,
  tile,
  top_k,
)
from dml_jax._src.ops import slice as slice_op

COLLECTIVE = re.compile(
  r"\b(all-gather|all-reduce|all-to-all|collective-permute|reduce-scatter)(-start)?\("
)


GATHERS_ITS_AXIS = {
  "scatter_elements rows (triton), sharded on axis",
  "scatter_nd pull rows, sharded on axis",
  "slice rows (reversed, strided columns), sharded on axis",
  "split runs (cpu, axis 1), sharded on axis",
  "join runs (cpu, axis 1), sharded on axis",
  "space_to_depth rows, sharded on axis",
}
"""Cases where the kernel gathers the sharded axis that jnp's formulation keeps sharded (a
scatter into, a slice of, a split or join along the sharded axis, SPACE_TO_DEPTH of sharded
columns; docs/sharding.md)."""


def collectives(compiled) -> list[str]:
  """The collectives of the compiled program, one entry each."""
  return [m.group(1) for m in COLLECTIVE.finditer(compiled.as_text())]


def check(name, kernel, formulation, operands, specs, mesh, *, batch_only):
  """One case: `kernel` and `formulation` (jnp) on `operands` placed by `specs`."""
  placed = [
    jax.device_put(x, NamedSharding(mesh, PartitionSpec(*s)))
    for x, s in zip(operands, specs, strict=True)
  ]
  expected = jax.jit(kernel)(*operands)  # one device: the operands are not placed
  ours = jax.jit(kernel).lower(*placed).compile()
  theirs = jax.jit(formulation).lower(*placed).compile()
  got, reference = ours(*placed), theirs(*placed)
  got_leaves, want_leaves = jax.tree.leaves(got), jax.tree.leaves(expected)
  ref_leaves = jax.tree.leaves(reference)
  gathers = name in GATHERS_ITS_AXIS
  for g, e, r in zip(got_leaves, want_leaves, ref_leaves, strict=True):
    assert np.asarray(g).tobytes() == np.asarray(e).tobytes(), "bits differ from one device"
    assert np.array_equal(np.asarray(g), np.asarray(r)), "values differ from jnp's"
    assert gathers or g.sharding.is_equivalent_to(r.sharding, g.ndim), (
      f"sharded {g.sharding.spec}, jnp's {r.sharding.spec}"
    )
  mine, jnps = collectives(ours), collectives(theirs)
  if batch_only:
    assert not mine, f"collectives {mine} with only a batch dimension sharded"
  if gathers:
    assert set(mine) <= {"all-gather"} and len(mine) <= len(operands), f"collectives {mine}"
  else:
    assert len(mine) <= len(jnps), f"collectives {mine}, jnp's {jnps}"
  note = f" (the axis gathered; jnp's: {jnps or 'none'})" if gathers else ""
  return f"{name}: sharded {got_leaves[0].sharding.spec}, collectives {mine or 'none'}{note}"


def table_kernel(table, name, fields, *operands):
  """The kernel `name` of an operator's table for these operands and `fields`, run per shard
  (a Pallas kernel in Pallas's interpreter)."""
  entry = next(k for k in table if k.name == name)
  return forms.per_shard(entry, fields, *operands, interpret=True)


def cases(n: int, rng: np.random.Generator, native: bool):
  """(name, kernel, jnp formulation, operands, specs per sharding, skip reason or None)."""
  f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
  ints = lambda low, high, *shape: rng.integers(low, high, shape).astype(np.int32)  # noqa: E731
  pallas = None
  no_native = None if native else f"no native kernels here: {native_cpu.status().reason}"
  d = "d"

  x, i = f32(n, 64), ints(-70, 70, n, 8 * n)
  yield (
    "gather_elements rows (last axis)",
    table_kernel(gather_elements.KERNELS, "gather_elements_rows_triton", 1, x, i),
    lambda x, i: jnp.take_along_axis(x, jnp.clip(jnp.where(i < 0, i + 64, i), 0, 63), axis=1),
    (x, i),
    {"batch": [(d, None), (d, None)], "axis": [(None, d), (None, d)]},
    pallas,
  )
  x = f32(2 * n, 4, 32 * n)
  i = ints(-5, 5, 2 * n, 8, 32 * n)
  yield (
    "gather_elements strips (axis 1)",
    table_kernel(gather_elements.KERNELS, "gather_elements_strips_triton", 1, x, i),
    lambda x, i: jnp.take_along_axis(x, jnp.clip(jnp.where(i < 0, i + 4, i), 0, 3), axis=1),
    (x, i),
    {"batch": [(d,), (d,)], "axis": [(None, None, d), (None, None, d)]},
    pallas,
  )
  table, rows = f32(4 * n, 64), ints(0, 4 * n, 2 * n, 1)
  gather = lambda t, r: jnp.take(t, r[:, 0], axis=0)  # noqa: E731
  specs = {"batch": [(), (d,)], "axis": [(d,), ()], "rows": [(None, d), (d,)]}
  row_copies = table_kernel(gather_nd.KERNELS, "gather_nd_rows_triton", 0, table, rows)
  yield ("gather_nd rows", row_copies, gather, (table, rows), specs, pallas)
  native_rows = table_kernel(gather_nd.KERNELS, "gather_rows_cpu", 0, table, rows)
  yield ("gather_nd rows (cpu)", native_rows, gather, (table, rows), specs, no_native)
  position, values = ints(0, 17, n, 1, 2 * n), np.array([[-1.0, 3.0]], np.float32)
  yield (
    "one_hot tiles (axis 1)",
    table_kernel(one_hot.KERNELS, "one_hot_tiles_triton", (1, 16), position, values),
    lambda p, v: jnp.where(jnp.arange(16)[:, None] == p, v[0, 1], v[0, 0]),
    (position, values),
    {"batch": [(d,), ()], "axis": [(None, None, d), ()]},
    pallas,
  )
  x, u = f32(n, 32), f32(n, 16)
  i = np.stack([rng.permutation(32)[:16] for _ in range(n)]).astype(np.int32)  # no duplicates
  yield (
    "scatter_elements rows (triton)",
    table_kernel(scatter_elements.KERNELS, "scatter_elements_rows_triton", 1, x, i, u),
    lambda x, i, u: jnp.put_along_axis(x, i, u, axis=1, inplace=False),
    (x, i, u),
    {"batch": [(d,), (d,), (d,)], "axis": [(None, d), (None, d), (None, d)]},
    pallas,
  )
  yield ("scatter_elements rows (mosaic)", None, None, (), {},
         "Mosaic GPU kernels have no interpreter on the CPU")  # fmt: skip
  yield ("reverse_subsequences strips (mosaic)", None, None, (), {},
         "Mosaic GPU kernels have no interpreter on the CPU")  # fmt: skip
  x, t, u = f32(4 * n, 8 * n), rng.permutation(4 * n)[:n].astype(np.int32), f32(n, 8 * n)
  yield (
    "scatter_nd pull rows",
    table_kernel(scatter_nd.KERNELS, "scatter_nd_rows_triton", None, x, t, u),
    lambda x, t, u: x.at[t].set(u),
    (x, t, u),
    {"width": [(None, d), (), (None, d)], "axis": [(d,), (d,), (d,)]},
    pallas,
  )
  x = f32(2 * n, 96)
  walk = slice_op.Walk(x.shape, (0, 95), (1, -2), (2 * n, 40))
  yield (
    "slice rows (reversed, strided columns)",
    table_kernel(slice_op.KERNELS, "slice_rows_triton", walk, x),
    lambda x: x[:, 95:15:-2],
    (x,),
    {"batch": [(d,)], "axis": [(None, d)]},
    pallas,
  )
  x = f32(n, 2, 4, 64)
  yield (
    "space_to_depth rows",
    table_kernel(depth_space.KERNELS, "space_to_depth_rows_triton", (2, False), x),
    lambda x: x.reshape(n, 2, 2, 2, 32, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, 8, 2, 32),
    (x,),
    {"batch": [(d,)], "axis": [(None, None, None, d)]},
    pallas,
  )
  x = f32(n, 2, 256)
  yield (
    "tile copies",
    table_kernel(tile.KERNELS, "tile_copies_triton", (1, 3, 1), x),
    lambda x: jnp.tile(x, (1, 3, 1)),
    (x,),
    {"batch": [(d,)], "axis": [(None, None, d)]},
    pallas,
  )
  x = f32(n, 4, 256)
  yield (
    "tile rows",
    table_kernel(tile.KERNELS, "tile_rows_triton", (1, 2, 3), x),
    lambda x: jnp.tile(x, (1, 2, 3)),
    (x,),
    {"batch": [(d,)], "axis": [(None, None, d)]},
    pallas,
  )
  x = f32(n, 4, 256)
  yield ("tile rows (cpu)", table_kernel(tile.KERNELS, "tile_rows_cpu", (1, 2, 3), x),
         lambda x: jnp.tile(x, (1, 2, 3)), (x,), {"batch": [(d,)], "axis": [(None, None, d)]},
         no_native)  # fmt: skip
  x = ints(-8, 9, n, 2 * n, 64).astype(np.float32)  # sums exact in jnp's order too
  yield (
    "cumulative lanes (triton, axis 1)",
    table_kernel(
      cumulative.KERNELS, "cumulative_lanes_triton", cumulative.Walk(1, False, False, False), x
    ),
    lambda x: jnp.cumsum(x, axis=1),
    (x,),
    {"batch": [(d,)], "axis": [(None, d)]},
    pallas,
  )
  x = f32(8 * n, 4 * n)  # distinct values: the tie rules agree with jnp's
  yield (
    "arg_min_max tiles (triton, axis 0)",
    table_kernel(
      arg_min_max.KERNELS,
      "arg_min_max_tiles_triton",
      arg_min_max.Pick(0, True, True, True, np.dtype(np.int32)),
      x,
    ),
    lambda x: jnp.argmax(x, axis=0),
    (x,),
    {"axis": [(d,)], "lanes": [(None, d)]},
    pallas,
  )
  x = f32(n, 4 * n, 64)
  yield (
    "arg_min_max tiles (triton, axis 1)",
    table_kernel(
      arg_min_max.KERNELS,
      "arg_min_max_tiles_triton",
      arg_min_max.Pick(1, False, False, True, np.dtype(np.int32)),
      x,
    ),
    lambda x: jnp.argmin(x, axis=1),
    (x,),
    {"batch": [(d,)], "axis": [(None, d)], "lanes": [(None, None, d)]},
    pallas,
  )
  x = ints(-8, 9, n, 4 * n, 64).astype(np.float32)  # sums exact in jnp's order too
  yield (
    "cumulative walk (cpu, axis 1)",
    table_kernel(cumulative.KERNELS, "cumulative_cpu", cumulative.Walk(1, True, False, False), x),
    lambda x: jnp.flip(jnp.cumsum(jnp.flip(x, 1), axis=1), 1),
    (x,),
    {"batch": [(d,)], "axis": [(None, d)]},
    no_native,
  )
  x = f32(n, 4 * n, 64)
  top_3 = lambda x: jax.lax.top_k(jnp.moveaxis(x, 1, -1), 3)  # noqa: E731
  yield (
    "top_k selection (cpu, axis 1)",
    table_kernel(top_k.KERNELS, "top_k_cpu", top_k.Selection(1, 3, True, np.dtype(np.uint32)), x),
    lambda x: tuple(jnp.moveaxis(a, -1, 1) for a in top_3(x)),
    (x,),
    {"batch": [(d,)], "lanes": [(None, None, d)]},
    no_native,
  )
  x = f32(n, 8 * n, 256)
  yield (
    "split runs (cpu, axis 1)",
    table_kernel(split.KERNELS, "runs_cpu", ((3 * n, 5 * n), 1), x),
    lambda x: tuple(jnp.split(x, [3 * n], axis=1)),
    (x,),
    {"batch": [(d,)], "axis": [(None, d)]},
    no_native,
  )
  a, b = f32(n, 2 * n, 256), f32(n, 6 * n, 256)
  yield (
    "join runs (cpu, axis 1)",
    table_kernel(join.KERNELS, "runs_cpu", (1, False), a, b),
    lambda a, b: jnp.concatenate([a, b], axis=1),
    (a, b),
    {"batch": [(d,), (d,)], "axis": [(None, d), (None, d)]},
    no_native,
  )
  x = f32(n, 16 * n, 8 * n)
  yield (
    "transpose (cpu)",
    table_kernel(buffers.TRANSPOSE_KERNELS, "transpose_cpu", (0, 2, 1), x),
    lambda x: jnp.swapaxes(x, 1, 2),
    (x,),
    {"batch": [(d,)], "rows": [(None, d)], "columns": [(None, None, d)]},
    no_native,
  )


def main() -> int:
  devices = np.array(jax.devices())
  if len(devices) < 2:
    sys.exit(f"needs at least 2 devices; found {len(devices)}")
  n = len(devices)
  mesh = jax.sharding.Mesh(devices, ("d",), axis_types=(AxisType.Auto,))
  rng = np.random.default_rng(0)
  native = native_cpu.build().available  # every native kernel, built and loaded
  passed = failed = skipped = 0
  for name, kernel, formulation, operands, by_sharding, skip in cases(n, rng, native):
    if skip:
      print(f"SKIP  {name}: {skip}")
      skipped += 1
      continue
    for sharding, specs in by_sharding.items():
      label = f"{name}, sharded on {sharding}"
      try:
        line = check(label, kernel, formulation, operands, specs, mesh,
                     batch_only=sharding in ("batch", "width"))  # fmt: skip
        print(f"PASS  {line}")
        passed += 1
      except Exception:  # noqa: BLE001 (every failure is reported, then counted)
        print(f"FAIL  {label}\n{traceback.format_exc()}")
        failed += 1
  # vmap of a partitioned kernel over a batch sharded across the devices.
  x, i = rng.standard_normal((n, 4, 64)).astype(np.float32), rng.integers(0, 64, (n, 4, 16))
  i = i.astype(np.int32)
  label = "vmap of gather_elements rows, the vmapped batch sharded"
  try:
    rows = table_kernel(gather_elements.KERNELS, "gather_elements_rows_triton", 1, x[0], i[0])
    line = check(label, jax.vmap(rows), lambda x, i: jnp.take_along_axis(x, i, axis=2),
                 (x, i), [("d",), ("d",)], mesh, batch_only=True)  # fmt: skip
    print(f"PASS  {line}")
    passed += 1
  except Exception:  # noqa: BLE001
    print(f"FAIL  {label}\n{traceback.format_exc()}")
    failed += 1
  # Shardings in the types (explicit mesh axes): the kernel is shard_mapped, and its result
  # typed as the fallback's, which platform_dependent's branches must share.
  explicit = jax.sharding.Mesh(devices, ("d",), axis_types=(AxisType.Explicit,))
  take = lambda x, i: jnp.take_along_axis(x, i, axis=1)  # noqa: E731
  x, i = rng.standard_normal((n, 64)).astype(np.float32), rng.integers(0, 64, (n, 16))
  i = i.astype(np.int32)
  label = "gather_elements rows through forms.on_platforms, explicit mesh axes"
  try:
    rows = table_kernel(gather_elements.KERNELS, "gather_elements_rows_triton", 1, x, i)
    via_forms = lambda x, i: forms.on_platforms({"cpu": rows}, take, x, i)  # noqa: E731
    with jax.set_mesh(explicit):
      line = check(label, via_forms, take, (x, i), [("d",), ("d",)], explicit, batch_only=True)
    print(f"PASS  {line}")
    passed += 1
  except Exception:  # noqa: BLE001
    print(f"FAIL  {label}\n{traceback.format_exc()}")
    failed += 1
  print(f"{passed} passed, {failed} failed, {skipped} skipped")
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
