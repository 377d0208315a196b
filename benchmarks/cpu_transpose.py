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

from _timing import (  # benchmarks/ is on sys.path when run
  check_and_time,
  ort_session,
  probe_parser,
  start_probe,
)

SHAPES = ["8,4096,32", "2,4096,32", "8,4096,24", "32,4096,32", "8,4096,128", "8,32,4096"]


def main() -> None:
  args = probe_parser(SHAPES, flag="--shapes", help="N,R,C of float32").parse_args()
  from dml_jax._src.kernels import transpose_cpu

  start_probe(args, label="shape", runs=lambda: "" if transpose_cpu.has_avx2() else "no AVX2")
  import jax
  import numpy as np
  from jax import lax
  from onnx import TensorProto, helper

  def run_shape(text: str) -> None:
    n, r, c = (int(v) for v in text.split(","))
    x = np.random.default_rng(0).standard_normal((n, r, c)).astype(np.float32)
    xd = jax.device_put(x, jax.devices("cpu")[0])  # the CPU also where a GPU is the default
    session = ort_session(
      [helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 1])],
      [helper.make_tensor_value_info("x", TensorProto.FLOAT, (n, r, c))],
      [helper.make_tensor_value_info("y", TensorProto.FLOAT, (n, c, r))],
    )
    native = jax.jit(transpose_cpu.transpose)
    xla = jax.jit(lambda x: lax.transpose(x, (0, 2, 1)))
    forms = {
      "native": lambda: native(xd).block_until_ready(),
      "xla": lambda: xla(xd).block_until_ready(),
      "ort": lambda: session.run(None, {"x": x}),
    }
    want = x.transpose(0, 2, 1)
    check_and_time(text, forms, want, args.rounds)

  for text in args.shapes:
    run_shape(text)


if __name__ == "__main__":
  main()
