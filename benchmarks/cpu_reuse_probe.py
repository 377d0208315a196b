"""Probe (CPU): two gains that need no process-wide setting, against ONNX Runtime.

Not part of the library. In a plain process (or after `dml_jax.cpu.configure_allocator()`
with `--setup`), on this machine's CPU:

- REVERSE_SUBSEQUENCES of (512, 256, 256) float32 along axis 0 whose per-lane lengths are
  equal along the last axis (what an ONNX model's per-batch lengths become): the CPU's
  sub-row form, against ONNX Runtime's ReverseSequence (time axis 0, batch axis 1).
- JOIN of 4 x (1024, 2048) float32 along axis 1: `dml.join` (a new output every call)
  against the same operator executed on a bound output buffer that is donated and reused
  every call (`CompiledOperator.execute(..., donate=True)`, as DirectML writes into a bound
  buffer), against ONNX Runtime's Concat.

ONNX Runtime runs as a user gets it (default SessionOptions). Every implementation is
checked bit for bit against NumPy first. Timing: rounds of one block per implementation
(about 100 ms each, a 100 ms rest before every block), the order rotating each round;
the table gives each median ms per call, minor page faults per call, and ONNX Runtime's
time over it.

Usage: PYTHONPATH=. python3 benchmarks/cpu_reuse_probe.py [--setup] [--rounds 9]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time


def main() -> None:
  parser = argparse.ArgumentParser()
  parser.add_argument("--setup", action="store_true", help="configure_allocator() first")
  parser.add_argument("--rounds", type=int, default=9)
  args = parser.parse_args()
  import dml_jax as dml

  if args.setup:
    print(dml.cpu.configure_allocator().summary)
  import jax
  import numpy as np
  import onnx
  import onnxruntime as ort
  from onnx import helper

  def session(op, inputs, output, **attributes):
    info = lambda name, a: helper.make_tensor_value_info(
      name, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)
    )
    node = helper.make_node(op, [n for n, _ in inputs], ["out"], **attributes)
    graph = helper.make_graph([node], "g", [info(n, a) for n, a in inputs], [info("out", output)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = dict(inputs)
    return lambda: s.run(["out"], feeds)[0]

  rng = np.random.default_rng(0)
  cases = []

  # REVERSE_SUBSEQUENCES, lengths per lane, equal along the last axis.
  x = rng.standard_normal((512, 256, 256)).astype(np.float32)
  per_row = rng.integers(0, 513, 256).astype(np.int64)
  lengths = np.broadcast_to(per_row[None, :, None], (1, 256, 256)).astype(np.uint32).copy()
  want = x.copy()
  for j, n in enumerate(per_row):
    want[:n, j, :] = x[:n, j, :][::-1]
  xd, nd = jax.device_put(x), jax.device_put(lengths)
  reverse = jax.jit(lambda x, n: dml.reverse_subsequences(x, n, axis=0))
  ort_reverse = session("ReverseSequence", [("x", x), ("n", per_row)], x, time_axis=0, batch_axis=1)
  cases.append(
    (
      "REVERSE_SUBSEQUENCES (512,256,256) ax0, lengths equal along the last axis",
      want,
      [
        ("dml_jax", lambda: reverse(xd, nd).block_until_ready()),
        ("ORT ReverseSequence", ort_reverse),
      ],
    )
  )

  # JOIN along axis 1: a new output each call, or a bound output donated and reused.
  pieces = [rng.standard_normal((1024, 2048)).astype(np.float32) for _ in range(4)]
  joined = np.concatenate(pieces, axis=1)
  pd = [jax.device_put(p) for p in pieces]
  join = jax.jit(lambda *p: dml.join(list(p), axis=1))
  t = dml.TensorDesc("FLOAT32", (1024, 2048))
  op = dml.compile_operator(dml.JoinDesc((t,) * 4, axis=1))
  bound_inputs = [dml.Binding(p.reshape(-1)) for p in pd]
  state = {"out": jax.device_put(np.zeros(joined.size, np.float32))}

  def bound():
    (state["out"],) = op.execute(bound_inputs, [dml.Binding(state["out"])], donate=True)
    return state["out"].block_until_ready()

  ort_join = session("Concat", [(f"x{k}", p) for k, p in enumerate(pieces)], joined, axis=1)
  cases.append(
    (
      "JOIN 4 x (1024,2048) ax1",
      joined,
      [
        ("dml.join (new output)", lambda: join(*pd).block_until_ready()),
        ("bound output, donated", bound),
        ("ORT Concat", ort_join),
      ],
    )
  )

  print(
    f"# jax {jax.__version__}, onnxruntime {ort.__version__}, plain process"
    f"{' + configure_allocator()' if args.setup else ''}, {args.rounds} rounds"
  )
  for title, want, impls in cases:
    for name, fn in impls:
      got = np.asarray(fn()).reshape(want.shape)
      assert np.array_equal(got, want), f"{title}: {name} differs"
    per_block = {}
    for name, fn in impls:
      fn()
      start = time.perf_counter()
      fn()
      per_block[name] = max(1, int(0.1 / max(time.perf_counter() - start, 1e-6)))
    times = {name: [] for name, _ in impls}
    faults = {name: [] for name, _ in impls}
    for r in range(args.rounds):
      order = impls[r % len(impls) :] + impls[: r % len(impls)]
      for name, fn in order:
        time.sleep(0.1)
        k = per_block[name]
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.perf_counter()
        for _ in range(k):
          fn()
        times[name].append((time.perf_counter() - start) / k)
        faults[name].append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / k)
    ort_name = impls[-1][0]
    ort_ms = statistics.median(times[ort_name]) * 1e3
    print(f"\n{title}")
    print(f"  {'implementation':26s} {'ms':>8s} {'faults/call':>12s} {'ORT/this':>9s}")
    for name, _ in impls:
      ms = statistics.median(times[name]) * 1e3
      print(f"  {name:26s} {ms:8.3f} {statistics.median(faults[name]):12.0f} {ort_ms / ms:9.2f}")
  sys.stdout.flush()


if __name__ == "__main__":
  main()
