"""Probe (CPU): where SPLIT's time goes against ONNX Runtime's Split.

Not part of the library. SPLIT of a (4096, 4096) float32 input into four equal pieces, along
axis 0 and axis 1, after `dml_jax.cpu.configure_allocator()` (the library's recommended CPU
setup; `--plain` leaves it out), in these forms, each checked bit for bit against NumPy:

- dml.split: one jitted program of four slices (the library's lowering);
- four programs: one jitted slice per piece, called one after another;
- chained barriers: one program whose slices are kept apart by optimization barriers;
- one piece: a single jitted slice, times four (what the copy of the bytes costs alone);
- ORT Split: ONNX Runtime with default session options.

Timing: rounds of one block per form (about 100 ms, a 100 ms rest before each), the order
rotating; median ms per SPLIT, and ONNX Runtime's time over each form's.

Usage: PYTHONPATH=. python3 benchmarks/split_cpu_probe.py [--plain] [--rounds 9]
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
  parser = argparse.ArgumentParser()
  parser.add_argument("--plain", action="store_true", help="no configure_allocator()")
  parser.add_argument("--rounds", type=int, default=9)
  args = parser.parse_args()
  import dml_jax as dml

  if not args.plain:
    dml.cpu.configure_allocator()
  import jax
  import numpy as np
  import onnx
  import onnxruntime as ort
  from jax import lax
  from onnx import helper

  rng = np.random.default_rng(0)
  x = rng.standard_normal((4096, 4096)).astype(np.float32)
  xd = jax.device_put(x)
  print(
    f"# jax {jax.__version__}, onnxruntime {ort.__version__},"
    f" {'plain process' if args.plain else 'configure_allocator()'}, {args.rounds} rounds"
  )

  def run_axis(axis: int) -> None:
    want = np.split(x, 4, axis=axis)
    piece = want[0].shape
    split = jax.jit(lambda x, a=axis: dml.split(x, axis=a, split_sizes=(1024,) * 4))

    def slicer(k, a=axis):
      start, limit = [0, 0], list(x.shape)
      start[a], limit[a] = 1024 * k, 1024 * (k + 1)
      return jax.jit(lambda x: lax.slice(x, start, limit))

    slices = [slicer(k) for k in range(4)]

    def chained(x, a=axis):
      # Each slice reads the input through a barrier shared with the previous piece, so XLA
      # cannot merge the four sibling slices into one multi-output loop.
      pieces = []
      for k in range(4):
        start, limit = [0, 0], list(x.shape)
        start[a], limit[a] = 1024 * k, 1024 * (k + 1)
        pieces.append(lax.slice(x, start, limit))
        x, pieces[-1] = lax.optimization_barrier((x, pieces[-1]))
      return tuple(pieces)

    chain = jax.jit(chained)
    info = lambda name, shape: helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, shape)
    node = helper.make_node("Split", ["x"], [f"y{k}" for k in range(4)], axis=axis, num_outputs=4)
    graph = helper.make_graph(
      [node], "g", [info("x", list(x.shape))], [info(f"y{k}", list(piece)) for k in range(4)]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [f"y{k}" for k in range(4)]
    forms = [
      ("dml.split", lambda: jax.block_until_ready(split(xd))),
      ("chained barriers", lambda: jax.block_until_ready(chain(xd))),
      ("four programs", lambda: [s(xd).block_until_ready() for s in slices]),
      ("one piece x4", lambda: [slices[0](xd).block_until_ready() for _ in range(4)]),
      ("ORT Split", lambda: session.run(names, {"x": x})),
    ]
    for name, fn in forms:
      got = [np.asarray(p) for p in fn()]
      expected = want if name != "one piece x4" else [want[0]] * 4
      assert all(np.array_equal(g, w) for g, w in zip(got, expected, strict=True)), name
    per_block = {}
    for name, fn in forms:
      start = time.perf_counter()
      fn()
      per_block[name] = max(1, int(0.1 / max(time.perf_counter() - start, 1e-6)))
    times = {name: [] for name, _ in forms}
    for r in range(args.rounds):
      for name, fn in forms[r % len(forms) :] + forms[: r % len(forms)]:
        time.sleep(0.1)
        start = time.perf_counter()
        for _ in range(per_block[name]):
          fn()
        times[name].append((time.perf_counter() - start) / per_block[name])
    ort_ms = statistics.median(times["ORT Split"]) * 1e3
    print(f"\nSPLIT (4096, 4096) f32 into 4 along axis {axis}")
    for name, _ in forms:
      ms = statistics.median(times[name]) * 1e3
      print(f"  {name:16s} {ms:8.3f} ms  ORT/this {ort_ms / ms:5.2f}")

  for axis in (0, 1):
    run_axis(axis)


if __name__ == "__main__":
  main()
