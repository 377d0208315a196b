"""Probe (CPU): the native transpose of the last two dimensions against XLA's and ONNX Runtime's.

Not part of the library. For each shape (N, R, C) of float32, after
`dml_jax.cpu.configure_allocator()` (the library's recommended CPU setup; `--plain` leaves it
out), these forms of (N, R, C) -> (N, C, R), each checked bit for bit against NumPy:

- native: the library's kernel (`kernels/transpose_cpu.py`, C++ in `kernels/native/transpose.cc`),
  called directly, whatever `applies` says;
- xla: `lax.transpose`, XLA:CPU's own;
- ort: ONNX Runtime's Transpose, a session with default options.

Timing: rounds of one block per form (about 100 ms, a 50 ms rest before each), in a shuffled
order each round; median ms per call, ONNX Runtime's median over each form's, and the quartiles
of the per-round ratios.

Usage: PYTHONPATH=. python3 benchmarks/cpu_transpose.py [--plain] [--rounds 11]
                                                        [--shapes 8,4096,32 8,32,4096]

Exits with status 2 where the native transpose does not run (no compiler, not x86-64, no AVX2),
1 if a form differs from NumPy.
"""

from __future__ import annotations

import argparse
import sys

from _timing import interleaved, print_against  # benchmarks/ is on sys.path when run

SHAPES = ["8,4096,32", "2,4096,32", "8,4096,24", "32,4096,32", "8,4096,128", "8,32,4096"]


def main() -> None:
  parser = argparse.ArgumentParser()
  parser.add_argument("--plain", action="store_true", help="no configure_allocator()")
  parser.add_argument("--rounds", type=int, default=11)
  parser.add_argument("--shapes", nargs="+", default=SHAPES, help="N,R,C of float32")
  args = parser.parse_args()
  import dml_jax as dml

  if not args.plain:
    dml.cpu.configure_allocator()
  import jax
  import numpy as np
  import onnxruntime as ort
  from jax import lax
  from onnx import TensorProto, helper

  from dml_jax._src.kernels import native_cpu, transpose_cpu

  status = native_cpu.status()
  if not (status.available and transpose_cpu.has_avx2()):
    print(f"the native transpose does not run here: {status.reason or 'no AVX2'}", file=sys.stderr)
    sys.exit(2)
  print(
    f"# jax {jax.__version__}, onnxruntime {ort.__version__},"
    f" {'plain process' if args.plain else 'configure_allocator()'}, {args.rounds} rounds"
  )
  print(f"{'shape':>16s} {'form':>10s} {'ms':>8s} {'ORT/form':>9s} {'[quartiles]':>13s}")

  def run_shape(text: str) -> None:
    n, r, c = (int(v) for v in text.split(","))
    x = np.random.default_rng(0).standard_normal((n, r, c)).astype(np.float32)
    xd = jax.device_put(x, jax.devices("cpu")[0])  # the CPU also where a GPU is the default
    graph = helper.make_graph(
      [helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 1])],
      "transpose",
      [helper.make_tensor_value_info("x", TensorProto.FLOAT, (n, r, c))],
      [helper.make_tensor_value_info("y", TensorProto.FLOAT, (n, c, r))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7  # opset 13's: loads in any onnxruntime since 1.6
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    native = jax.jit(transpose_cpu.transpose)
    xla = jax.jit(lambda x: lax.transpose(x, (0, 2, 1)))
    forms = {
      "native": lambda: native(xd).block_until_ready(),
      "xla": lambda: xla(xd).block_until_ready(),
      "ort": lambda: session.run(None, {"x": x}),
    }
    want = x.transpose(0, 2, 1)
    for name, form in forms.items():
      got = form()
      got = got[0] if name == "ort" else got
      if not np.array_equal(np.asarray(got).view(np.uint32), want.view(np.uint32)):
        raise SystemExit(f"{name} differs from NumPy for {text}")
    print_against(text, interleaved(forms, args.rounds))

  for text in args.shapes:
    run_shape(text)


if __name__ == "__main__":
  main()
