"""Probe (CPU): the row gathers' native kernel against the lax path, XLA's take and ONNX Runtime.

Not part of the library. For each case (a float32 table of R rows of W elements, C random row
ids), after `dml_jax.cpu.configure_allocator()` (the library's recommended CPU setup; `--plain`
leaves it out), these forms of GATHER along axis 0 (an embedding lookup), each checked bit for
bit against NumPy:

- dml: `dml_jax.gather` as a user calls it (the native row kernel where `applies` says so:
  `kernels/gather_rows_cpu.py`, C++ in `kernels/native/gather_rows.cc`);
- lax: the same operator traced with the native kernels switched off (its lax path);
- take: `jnp.take(..., mode="clip")`, XLA:CPU's gather without DirectML's index rules;
- ort: ONNX Runtime's Gather, a session with default options.

Timing: rounds of one block per form (about 100 ms, a 50 ms rest before each), in a shuffled
order each round; median ms per call, ONNX Runtime's median over each form's, and the quartiles
of the per-round ratios.

Usage: PYTHONPATH=. python3 benchmarks/cpu_gather_rows.py [--plain] [--rounds 11]
                                                          [--cases 65536,256,65536 ...]

Exits with status 2 where the native kernels do not run (no compiler, not x86-64), 1 if a form
differs from NumPy.
"""

from __future__ import annotations

import os

from _timing import (  # benchmarks/ is on sys.path when run
  check_and_time,
  ort_session,
  probe_parser,
  start_probe,
)

CASES = [
  "65536,256,65536",  # rows of 1 KiB, a 64 MiB table and output (run.py's small gather_rows)
  "65536,64,65536",  # rows of 256 bytes, 16 MiB
  "65536,32,65536",  # rows of 128 bytes, the narrowest the kernel takes
  "65536,16,65536",  # rows of 64 bytes: the lax path (both "dml" and "lax")
  "65536,256,64",  # a 64 KiB output: the lax path (under the kernel's 1 MiB)
  "65536,256,1024",  # a 1 MiB output
  "256,256,16384",  # a table the caches hold
]


def main() -> None:
  args = probe_parser(CASES, help="R,W,C: rows, width, ids").parse_args()
  start_probe(args)
  import jax
  import jax.numpy as jnp
  import numpy as np
  from onnx import TensorProto, helper

  import dml_jax as dml
  from dml_jax._src.kernels import native_cpu

  cpu = jax.devices("cpu")[0]  # the CPU also where a GPU is the default

  def gather(x, ids):
    return dml.gather(x, ids, axis=0, index_dimensions=1)

  def lax_path(*args):
    """`gather` compiled for `args` with the native kernels switched off (DML_JAX_NATIVE_KERNELS,
    read at trace time; JAX's caches cleared before and after: the operator's traces are
    cached)."""
    saved = os.environ.get(native_cpu.SWITCH)
    os.environ[native_cpu.SWITCH] = "0"
    jax.clear_caches()
    try:
      return jax.jit(gather).lower(*args).compile()
    finally:
      if saved is None:
        del os.environ[native_cpu.SWITCH]
      else:
        os.environ[native_cpu.SWITCH] = saved
      jax.clear_caches()

  def run_case(text: str) -> None:
    rows, width, count = (int(v) for v in text.split(","))
    rng = np.random.default_rng(0)
    table = rng.standard_normal((rows, width)).astype(np.float32)
    ids = rng.integers(0, rows, (1, count)).astype(np.int32)
    xd, idd = jax.device_put(table, cpu), jax.device_put(ids, cpu)
    session = ort_session(
      [helper.make_node("Gather", ["x", "i"], ["y"], axis=0)],
      [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, table.shape),
        helper.make_tensor_value_info("i", TensorProto.INT32, (count,)),
      ],
      [helper.make_tensor_value_info("y", TensorProto.FLOAT, (count, width))],
    )
    kernel, lax_form = jax.jit(gather).lower(xd, idd).compile(), lax_path(xd, idd)
    take = jax.jit(lambda x, i: jnp.take(x, i[0], axis=0, mode="clip"))
    forms = {
      "dml": lambda: kernel(xd, idd).block_until_ready(),
      "lax": lambda: lax_form(xd, idd).block_until_ready(),
      "take": lambda: take(xd, idd).block_until_ready(),
      "ort": lambda: session.run(None, {"x": table, "i": ids[0]}),
    }
    want = table[ids[0]]
    check_and_time(text, forms, want, args.rounds)

  for text in args.cases:
    run_case(text)


if __name__ == "__main__":
  main()
