"""Runs every operator on arrays sharded over 8 devices and compares bits with the reference.

Run in its own process: the device count must be set before JAX starts, e.g.
XLA_FLAGS=--xla_force_host_platform_device_count=8 on a CPU-only machine. On a
machine with several GPUs it uses them (at least 2), sharding over what exists.
Prints one line per case and `N passed, M failed`; exits 1 on any failure.
"""

import pathlib
import sys

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import dml_jax as dml
from dml_jax._src import reference

# Run as a script (python tests/subprocess/sharded_ops.py), this file's folder heads sys.path,
# not the repository: put the repository there too, for the tests' shared helpers.
sys.path.insert(1, str(pathlib.Path(__file__).resolve().parents[2]))
from tests.helpers import bits_equal  # noqa: E402


def _mesh():
  devices = np.array(jax.devices())
  if len(devices) < 2:
    sys.exit(f"needs at least 2 devices; found {len(devices)}")
  return Mesh(devices, ("d",))


def _place(x, mesh, axis):
  spec = [None] * x.ndim
  spec[axis] = "d"
  return jax.device_put(x, NamedSharding(mesh, PartitionSpec(*spec)))


def main():
  mesh = _mesh()
  n = len(mesh.devices)
  rng = np.random.default_rng(0)
  x = rng.standard_normal((n, 2 * n, n)).astype(np.float32)
  cases = []
  # GATHER_ELEMENTS along axis 1; shard the batch (0), the gathered (1), the untouched (2) axis.
  idx = rng.integers(-2 * n - 2, 2 * n + 2, (n, 3 * n, n)).astype(np.int32)
  for shard in (0, 1, 2):
    cases.append(
      (
        f"gather_elements, sharded on axis {shard}",
        lambda a, b: dml.gather_elements(a, b, axis=1),
        [(x, shard), (idx, shard if shard != 1 else 0)],
        reference.gather_elements(x, idx, axis=1),
      )
    )
  # GATHER_ELEMENTS along the last axis with 128-wide index rows: the shape that takes the row
  # kernel on CUDA GPUs (the lax path elsewhere); rows sharded, then the gathered axis.
  wide = rng.standard_normal((2 * n, 256)).astype(np.float32)
  wide_idx = rng.integers(-300, 300, (2 * n, 128)).astype(np.int32)
  for shard in (0, 1):
    cases.append(
      (
        f"gather_elements (row-kernel shape), sharded on axis {shard}",
        lambda a, b: dml.gather_elements(a, b, axis=1),
        [(wide, shard), (wide_idx, shard)],
        reference.gather_elements(wide, wide_idx, axis=1),
      )
    )
  # GATHER_ELEMENTS along axis 0 with 64 inner columns: the shape that takes the strip kernel
  # on CUDA GPUs (the lax path elsewhere); the gathered axis sharded, then the columns.
  tall = rng.standard_normal((2 * n, 64)).astype(np.float32)
  tall_idx = rng.integers(-2 * n - 2, 2 * n + 2, (8 * n, 64)).astype(np.int32)
  for shard in (0, 1):
    cases.append(
      (
        f"gather_elements (strip-kernel shape), sharded on axis {shard}",
        lambda a, b: dml.gather_elements(a, b, axis=0),
        [(tall, shard), (tall_idx, shard)],
        reference.gather_elements(tall, tall_idx, axis=0),
      )
    )
  # GATHER_ND1 with one batch dimension: shard the batch and the copied trailing axis.
  tuples = rng.integers(-3, 2 * n + 3, (n, 5, 1)).astype(np.int32)
  for shard in (0, 2):
    cases.append(
      (
        f"gather_nd1, sharded on axis {shard}",
        lambda a, b: dml.gather_nd(a, b, batch_dimension_count=1),
        [(x, shard), (tuples, 0)],
        reference.gather_nd(x, tuples, batch_dimension_count=1),
      )
    )
  # GATHER_ND and GATHER_ND1 copying 1 KiB rows: the shapes that take the row-copy kernel on
  # CUDA GPUs (the lax path elsewhere); the table's rows sharded, then the copied axis.
  table = rng.standard_normal((2 * n, 3, 256)).astype(np.float32)
  pairs = np.stack(
    [rng.integers(-2 * n - 2, 2 * n + 2, (1, 4 * n)), rng.integers(-5, 5, (1, 4 * n))], axis=-1
  ).astype(np.int32)
  for shard in (0, 2):
    cases.append(
      (
        f"gather_nd (row-copy shape), sharded on axis {shard}",
        dml.gather_nd,
        [(table, shard), (pairs, 1)],
        reference.gather_nd(table, pairs),
      )
    )
  rows = rng.integers(-4, 4, (2 * n, 6, 1)).astype(np.int32)
  cases.append(
    (
      "gather_nd1 (row-copy shape), sharded on axis 0",
      lambda a, b: dml.gather_nd(a, b, batch_dimension_count=1),
      [(table, 0), (rows, 0)],
      reference.gather_nd(table, rows, batch_dimension_count=1),
    )
  )
  lengths = rng.integers(0, 3 * n, (n, 1, n)).astype(np.uint32)
  for shard in (0, 1):
    cases.append(
      (
        f"reverse_subsequences, sharded on axis {shard}",
        lambda a, b: dml.reverse_subsequences(a, b, axis=1),
        [(x, shard), (lengths, 0)],
        reference.reverse_subsequences(x, lengths, axis=1),
      )
    )
  # One length per batch entry, as an (n, 1, 1) array (zero strides): the row gather, with the
  # batch sharded and then the rows' lanes.
  per_batch = rng.integers(0, 3 * n, (n, 1, 1)).astype(np.uint32)
  for shard in (0, 2):
    cases.append(
      (
        f"reverse_subsequences, (n, 1, 1) lengths, sharded on axis {shard}",
        lambda a, b: dml.reverse_subsequences(a, b, axis=1),
        [(x, shard), (per_batch, 0)],
        reference.reverse_subsequences(x, np.broadcast_to(per_batch, (n, 1, n)), axis=1),
      )
    )
  # Shapes that take the strip kernel on an H100: 8 float32 lanes a strip over 256 steps, and
  # 16 lanes over 4096 steps, held all but the last 512 (the same strips after sharding)
  for shape in [(n, 256, 16), (n, 4096, 32)]:
    steps = rng.standard_normal(shape).astype(np.float32)
    per_lane = rng.integers(0, shape[1] + 40, (n, 1, shape[2])).astype(np.uint32)
    for shard in (0, 2):
      cases.append(
        (
          f"reverse_subsequences (strip-kernel shape {shape}), sharded on axis {shard}",
          lambda a, b: dml.reverse_subsequences(a, b, axis=1),
          [(steps, shard), (per_lane, shard)],
          reference.reverse_subsequences(steps, per_lane, axis=1),
        )
      )
  for shard in (0, 1):
    cases.append(
      (
        f"join, sharded on axis {shard}",
        lambda a, b: dml.join([a, b], axis=1),
        [(x, shard), (x[:, ::-1], shard)],
        reference.join([x, x[:, ::-1].copy()], axis=1),
      )
    )
  failed = 0
  for name, fn, args, want in cases:
    placed = [_place(a, mesh, axis) for a, axis in args]
    got = np.asarray(jax.jit(fn)(*placed))
    ok = bits_equal(got, want)
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'}  {name} over {n} {jax.devices()[0].platform} devices")
  print(f"{len(cases) - failed} passed, {failed} failed")
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
