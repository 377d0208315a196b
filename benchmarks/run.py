"""Benchmarks dml_jax's operators against a device copy (the ceiling) and peer implementations.

Run from the repository root (one process does everything):

  PYTHONPATH=. python3 benchmarks/run.py                          # sizes for the default device
  PYTHONPATH=. python3 benchmarks/run.py --size small --only 'gather_elements*' --json out.json
  PYTHONPATH=. python3 benchmarks/run.py --devices 2 --only join_axis1,one_hot_last  # 2 GPUs

Options:
  --size auto|tiny|small|large  auto (default): large on a GPU or TPU, small on the CPU. large is
                                 sized for an 80 GB GPU (inputs several times its L2: 50 MB on an
                                 H100); small for 2 CPU cores (a few minutes); tiny for the smoke
                                 test (seconds).
  --only PATTERN                 the cases to run: a name, an fnmatch pattern, a substring or
                                 a DirectML operator (GATHER_ND1); repeat it or separate
                                 patterns with commas. The copy ceiling always runs.
  --repeats N                    timed repeats per implementation (>= 5, default 7); the median
                                 is reported.
  --json PATH                    also write every number and every check as JSON.
  --no-peers                     time the copy and dml_jax only.
  --devices N                    N >= 2: the sharded runs (benchmarks/harness.py) instead of
                                 the one-device table (default 1: none).
  --forms                        each case as the library chooses its form and with this
                                 platform's kernels forced off (benchmarks/forms_study.py).
  --sweep KERNEL[:FIELD=V1,V2]   each case with a kernel module's DEFAULT config changed, a
                                 field at a time (repeatable).
  --table [--check]              regenerate docs/performance.md's tables from the committed
                                 results, benchmarks/results/<machine>.json, and exit
                                 (--check: exit 1 if the page is stale, write nothing).

The process exits with status 1 if any correctness check fails (or an implementation raised),
2 for bad arguments, else 0.

Cases: benchmarks/cases/<family>.py; each is registered next to the function that makes it, with `@case(OPERATOR, sizes=...,
variants=...)`: the DirectML operator it times, the sizes each preset (--size) gives it, and
the case names it makes with their parameters. A preset runs every case that has sizes for it,
in the order they are registered; a preset itself fixes only the copy ceiling's buffer and the
timing's targets (PRESETS). Adding a case is registering it; nothing else lists the cases.
What is measured and how (the copy ceiling, bytes, timing, checks, peers, sharded runs,
memory): benchmarks/harness.py.
"""

from __future__ import annotations

import pathlib
import sys

if __package__ in (None, ""):  # run as a script: the repository root holds the package
  sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import benchmarks.cases  # noqa: E402, F401 (registers every case)
from benchmarks.harness import (  # noqa: E402, F401 (the command line's names, for the tests)
  CASES,
  MESH_AXIS,
  PRESETS,
  Env,
  Impl,
  bit_equal,
  cases_of,
  collectives,
  collectives_text,
  jax_impl,
  load_average,
  main,
  make_env,
  mismatch,
  parse_args,
  run_batch,
  run_sharded_case,
  sharded_json,
  version_of,
)

if __name__ == "__main__":
  sys.exit(main())
