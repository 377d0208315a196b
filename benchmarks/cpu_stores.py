"""Probe (CPU): the copy kernels' two ways to store, against ONNX Runtime.

Not part of the library. The native TILE, SPLIT and JOIN kernels (`kernels/tile_rows_cpu.py`,
`kernels/runs_cpu.py`) store either past the caches (non-temporal stores, "streaming") or in
them (`rep movsb`, "in_cache"); the library picks by the bytes a call moves
(`native_cpu.stores_for`). This probe runs each case both ways and ONNX Runtime's operator,
after `dml_jax.cpu.configure_allocator()` (`--plain` leaves it out), each checked bit for bit
against NumPy:

- tile: TILE of (512, 512) float32 by (4, 4), 16 MiB out (17 MiB moved);
- split: SPLIT of (4096, 4096) float32 into 4 along axis 0 (128 MiB moved);
- join: JOIN of 4 x (1024, 4096) float32 along axis 0 (128 MiB moved).

Timing: rounds of one block per form (about 100 ms, a 50 ms rest before each), in a shuffled
order each round; median ms per call, ONNX Runtime's median over each form's, and the quartiles
of the per-round ratios. The first line says what the library picks on this machine.

Usage: PYTHONPATH=. python3 benchmarks/cpu_stores.py [--plain] [--rounds 11] [--cases tile split]

Exits with status 2 where the native kernels do not run (no compiler, not x86-64), 1 if a form
differs from NumPy.
"""

from __future__ import annotations

import sys

from _timing import (  # benchmarks/ is on sys.path when run
  interleaved,
  ort_session,
  print_against,
  probe_parser,
  start_probe,
)

CASES = ("tile", "split", "join")


def main() -> None:
  args = probe_parser(CASES, choices=CASES).parse_args()
  from dml_jax._src.kernels import native_cpu, runs_cpu, tile_rows_cpu

  start_probe(args, note=f"; in the cache up to {native_cpu.in_cache_bytes() / 2**20:g} MiB moved")
  import jax
  import numpy as np
  from onnx import TensorProto, helper

  cpu = jax.devices("cpu")[0]
  rng = np.random.default_rng(0)
  f32 = TensorProto.FLOAT
  session = ort_session

  def case_tile():
    x = rng.standard_normal((512, 512)).astype(np.float32)
    xd = jax.device_put(x, cpu)
    reps = helper.make_tensor("reps", TensorProto.INT64, (2,), [4, 4])
    s = session(
      [helper.make_node("Tile", ["x", "reps"], ["y"])],
      [helper.make_tensor_value_info("x", f32, x.shape)],
      [helper.make_tensor_value_info("y", f32, (2048, 2048))],
      [reps],
    )
    forms = {
      k: jax.jit(lambda x, k=k: tile_rows_cpu.tile_rows(x, (4, 4), stores=k))
      for k in native_cpu.STORES
    }
    sides = {k: (lambda f=f: [f(xd).block_until_ready()]) for k, f in forms.items()}
    sides["ort"] = lambda: s.run(None, {"x": x})
    return sides, [np.tile(x, (4, 4))]

  def case_split():
    x = rng.standard_normal((4096, 4096)).astype(np.float32)
    xd = jax.device_put(x, cpu)
    s = session(
      [helper.make_node("Split", ["x"], [f"y{k}" for k in range(4)], axis=0)],
      [helper.make_tensor_value_info("x", f32, x.shape)],
      [helper.make_tensor_value_info(f"y{k}", f32, (1024, 4096)) for k in range(4)],
    )
    forms = {
      k: jax.jit(lambda x, k=k: runs_cpu.split_runs(x, (1024,) * 4, 0, stores=k))
      for k in native_cpu.STORES
    }
    sides = {k: (lambda f=f: jax.block_until_ready(f(xd))) for k, f in forms.items()}
    sides["ort"] = lambda: s.run(None, {"x": x})
    return sides, np.split(x, 4)

  def case_join():
    xs = [rng.standard_normal((1024, 4096)).astype(np.float32) for _ in range(4)]
    xds = [jax.device_put(x, cpu) for x in xs]
    names = [f"x{k}" for k in range(4)]
    s = session(
      [helper.make_node("Concat", names, ["y"], axis=0)],
      [helper.make_tensor_value_info(n, f32, (1024, 4096)) for n in names],
      [helper.make_tensor_value_info("y", f32, (4096, 4096))],
    )
    forms = {
      k: jax.jit(lambda *xs, k=k: runs_cpu.join_runs(*xs, axis=0, stores=k))
      for k in native_cpu.STORES
    }
    sides = {k: (lambda f=f: [f(*xds).block_until_ready()]) for k, f in forms.items()}
    sides["ort"] = lambda: s.run(None, dict(zip(names, xs, strict=True)))
    return sides, [np.concatenate(xs)]

  makers = {"tile": case_tile, "split": case_split, "join": case_join}
  for name in args.cases:
    sides, want = makers[name]()
    for side, call in sides.items():
      for got, expected in zip(call(), want, strict=True):
        if not np.array_equal(np.asarray(got).view(np.uint32), expected.view(np.uint32)):
          print(f"{side} differs from NumPy for {name}", file=sys.stderr)
          sys.exit(1)
    print_against(name, interleaved(sides, args.rounds))


if __name__ == "__main__":
  main()
