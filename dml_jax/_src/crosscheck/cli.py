"""``python -m dml_jax crosscheck-pack OUTDIR`` and ``python -m dml_jax crosscheck-compare
PACK RESULTS``: the DirectML cross-check pack, written and compared.

``crosscheck-pack`` writes the pack (`pack.write_pack`): one DxDispatch model per case of
every registered operator (``--op NAME`` for some only), their inputs, dml_jax's own
outputs, a manifest and a README for the Windows user who runs it with DxDispatch.

``crosscheck-compare`` compares the folder of outputs that came back with the pack's
(`compare.compare_pack`): one line per model and output (``equal``, ``different`` with
the first differing elements and their bits, ``missing``), a summary per operator, and
the differences as candidate fixtures (``--errata FILE``, default
``candidate_errata.json``). The exit status is 0 when every output is equal, 1 when one
differs or is missing, 2 for a command line that is refused.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from dml_jax._src.crosscheck import compare, pack
from dml_jax._src.crosscheck.cases import MissingFixturesError
from dml_jax._src.errors import DmlModelError, UnknownOperatorError
from dml_jax._src.model import files
from dml_jax._src.model.cli import _byte_count as byte_count


def pack_main(argv: Sequence[str], stdout: TextIO | None = None) -> int:
  """Runs ``python -m dml_jax crosscheck-pack`` with `argv` (the arguments after it)."""
  parser = argparse.ArgumentParser(
    prog="python -m dml_jax crosscheck-pack",
    description="Writes the DirectML cross-check pack into OUTDIR: a DxDispatch model per doc"
    " example and edge case of every registered operator, their inputs, dml_jax's outputs"
    " (expected/), a manifest and a README that says how to run it on Windows.",
  )
  parser.add_argument("outdir", help="the folder to write (made if absent)")
  parser.add_argument(
    "--op",
    action="append",
    metavar="NAME",
    help="only this operator's models, e.g. GATHER (repeatable; default: every operator)",
  )
  parser.add_argument(
    "--device",
    default="cpu",
    choices=("cpu", "gpu", "tpu", "default"),
    help="where dml_jax computes the expected outputs (default: cpu)",
  )
  args = parser.parse_args(list(argv))
  out = stdout if stdout is not None else sys.stdout
  start = time.perf_counter()
  try:
    cases = pack.select_cases(args.op)
  except (UnknownOperatorError, MissingFixturesError) as error:
    parser.error(str(error))
  device = None if args.device == "default" else args.device
  written = pack.write_pack(args.outdir, cases, device=device)
  ops = len({c.op for c in written})
  edge = sum(c.kind == "edge" for c in written)
  print(
    f"Wrote {len(written)} models of {ops} operators ({len(written) - edge} doc examples,"
    f" {edge} edge cases) and dml_jax's outputs to '{args.outdir}' in"
    f" {time.perf_counter() - start:.1f} s; its {pack.README} says how to run them with"
    " DxDispatch",
    file=out,
  )
  return 0


def compare_main(argv: Sequence[str], stdout: TextIO | None = None) -> int:
  """Runs ``python -m dml_jax crosscheck-compare`` with `argv` (the arguments after it)."""
  parser = argparse.ArgumentParser(
    prog="python -m dml_jax crosscheck-compare",
    description="Compares a folder of DxDispatch outputs (RESULTS) with the cross-check pack's"
    " expected ones: equal / different (first differing elements and their bits) / missing"
    " per model and output, a summary per operator, and the differences written as"
    " candidate fixtures. Exit status 1 if any output differs or is missing.",
  )
  parser.add_argument("pack", help="the folder crosscheck-pack wrote")
  parser.add_argument("results", help="the folder of outputs DxDispatch wrote (--output_path)")
  parser.add_argument(
    "--errata",
    default="candidate_errata.json",
    metavar="FILE",
    help="where the differences go as candidate fixtures (default: candidate_errata.json in"
    " the current folder); written only when an output differs",
  )
  parser.add_argument(
    "--max-bytes",
    type=byte_count,
    default=files.DEFAULT_MAX_BYTES,
    metavar="N",
    help="the most bytes the comparison reads: a number, or with a suffix K, M, G, T (default 4G)",
  )
  parser.add_argument(
    "--quiet", action="store_true", help="print only the outputs that are not equal"
  )
  args = parser.parse_args(list(argv))
  out = stdout if stdout is not None else sys.stdout
  try:
    results = compare.compare_pack(args.pack, args.results, max_bytes=args.max_bytes)
  except (compare.PackError, files.UnsafePathError, files.BudgetError) as error:
    print(f"error: {error}", file=sys.stderr)
    return 1
  for result in results:
    if not (args.quiet and result.status == "equal"):
      print("\n".join(result.lines()), file=out)
  print("", file=out)
  print("\n".join(compare.summary(results)), file=out)
  if any(r.status == "different" for r in results):
    try:
      document = compare.candidate_errata(args.pack, results, max_bytes=args.max_bytes)
    except (DmlModelError, OSError, ValueError) as error:
      print(f"error: the candidate errata could not be written: {error}", file=sys.stderr)
      return 1
    path = pathlib.Path(args.errata)
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(
      f"{len(document['fixtures'])} candidate errata written to '{path}' (provenance"
      f" {pack.PROVENANCE_PLACEHOLDER!r}: fill in the GPU and driver)",
      file=out,
    )
  return 0 if all(r.status == "equal" for r in results) else 1
