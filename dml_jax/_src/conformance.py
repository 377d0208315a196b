"""The conformance report: every DirectML fixture run on a device, pass or fail.

`python -m dml_jax` prints, per operator and example, the device it ran on and
whether the output matched DirectML's bit for bit (shape-only examples check
the inferred output sizes), then a summary table (passed/failed per operator
and device) and the line ``N passed, M failed``. The exit status is 1 if any
example fails. Options: ``--device cpu|gpu|tpu|default|all``,
``--feature-level 4_1``, ``--op NAME`` (repeatable), ``--json``. ``python -m dml_jax run
MODEL.json`` runs a DxDispatch model; ``python -m dml_jax build-native`` builds the native CPU
kernels ahead (`native_cpu.command_line`); ``python -m dml_jax crosscheck-pack OUTDIR`` and
``crosscheck-compare PACK RESULTS`` write and compare the DirectML cross-check pack
(`dml_jax._src.crosscheck`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from dml_jax._src import device as device_lib
from dml_jax._src import html as _html
from dml_jax._src import registry
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import x64_enabled
from dml_jax._src.errors import DmlValidationError, UnknownOperatorError
from dml_jax._src.feature_level import NEWEST, FeatureLevel
from dml_jax._src.fields import FieldKind, dml_fields
from dml_jax._src.fixtures import Fixture, FixtureTensor, load_fixtures
from dml_jax._src.tensor_desc import TensorDesc


def _tensor(t: FixtureTensor) -> TensorDesc:
  return TensorDesc(t.data_type, t.sizes, strides=t.strides)


def descriptor_for(fixture: Fixture) -> OperatorDesc:
  """The operator descriptor of a fixture, its documented output(s) included.

  The fixture's tensor roles are the functional API's argument names (input,
  indices, inputs, ...), its parameters the descriptor's attribute fields; the
  registry gives the descriptor class, whose field declarations say which is which.
  Parameters that only the functional API takes (SPLIT's split_sizes and ONE_HOT's
  depth, which the descriptor holds in its outputs) are left out.
  """
  desc_type = registry.lookup(fixture.op)
  fields = dml_fields(desc_type)
  names = {field.name for field in fields}
  values: dict[str, Any] = {k: v for k, v in fixture.params.items() if k in names}
  outputs = tuple(map(_tensor, fixture.outputs))
  position = 0  # the next output tensor fixture.outputs holds for an output field
  for field in fields:
    if field.kind.is_tensor and not field.output:
      if field.optional and field.argument not in fixture.inputs:
        values[field.name] = None  # an optional input the example leaves out
        continue
      value = fixture.inputs[field.argument]
      values[field.name] = (
        tuple(map(_tensor, value)) if isinstance(value, tuple) else _tensor(value)
      )
    elif field.output and field.kind is FieldKind.TENSOR_ARRAY:
      values[field.name] = outputs[position:]
      position = len(outputs)
    elif field.output:
      values[field.name] = outputs[position]
      position += 1
  return desc_type(**values)


def input_arrays(fixture: Fixture) -> list[np.ndarray]:
  arrays: list[np.ndarray] = []
  for value in fixture.arrays().values():
    arrays.extend(value if isinstance(value, tuple) else [value])
  return arrays


def _bits(x: np.ndarray) -> np.ndarray:
  return np.ascontiguousarray(x).view(np.dtype(f"u{x.dtype.itemsize}"))


@dataclasses.dataclass(frozen=True)
class Outcome:
  """One row of the report.

  `not_at_level` marks an example that the chosen feature level rejects and
  the newest level accepts: DirectML would refuse it at that level too, so it
  is neither a pass nor a failure.
  """

  fixture: Fixture
  device: str  # describe(device), or "-" for a shape-only example
  passed: bool
  detail: str
  not_at_level: bool = False

  @property
  def status(self) -> str:
    """The row's status: passed, failed or not_at_level."""
    return "not_at_level" if self.not_at_level else "passed" if self.passed else "failed"

  @property
  def label(self) -> str:
    """The result column: PASS, FAIL, or NOT AT FL for an example the level rejects."""
    return {"passed": "PASS", "failed": "FAIL", "not_at_level": "NOT AT FL"}[self.status]

  def as_dict(self) -> dict[str, Any]:
    return {
      "id": self.fixture.id,
      "op": self.fixture.op,
      "device": self.device,
      "passed": self.passed,
      "status": self.status,
      "detail": self.detail,
    }


SIZES_ONLY = "-"
"""The device column of a shape-only example: it checks sizes, nothing runs."""


def check_fixture(fixture: Fixture, runner: device_lib.Runner, device: Any) -> Outcome:
  """Runs one fixture and compares with DirectML's output, bit for bit.

  Shape-only fixtures check the inferred output sizes; nothing runs on a
  device. An error raised while running is a failure, not a crash. An example
  that the runner's feature level rejects and the newest level accepts is
  reported as not at that level (`Outcome.not_at_level`), not as a failure.
  """
  target = device_lib.resolve(device)
  where = SIZES_ONLY if fixture.shape_only else device_lib.describe(target)
  try:
    desc = descriptor_for(fixture).validate(runner.feature_level)
  except DmlValidationError as error:
    try:
      descriptor_for(fixture).validate(NEWEST)
    except DmlValidationError:
      return Outcome(fixture, where, False, f"rejected: {error.violations[0]}")
    detail = f"rejected, as DirectML would at FL {runner.feature_level}: {error.violations[0]}"
    return Outcome(fixture, where, False, detail, not_at_level=True)
  if fixture.shape_only:
    sizes = ", ".join(str(list(t.sizes)) for t in desc.outputs)
    return Outcome(fixture, where, True, f"output sizes {sizes}")
  try:
    record = runner.run(desc, *input_arrays(fixture), device=target)
  except Exception as error:  # a device failure is a FAIL row, not a crash
    return Outcome(fixture, where, False, f"error: {type(error).__name__}: {error}")
  if len(record.outputs) != len(fixture.outputs):
    return Outcome(
      fixture, where, False, f"got {len(record.outputs)} outputs, expected {len(fixture.outputs)}"
    )
  for output, expected in zip(record.outputs, fixture.outputs, strict=True):
    got, want = np.asarray(output), expected.data
    assert want is not None  # not shape-only: every tensor has its data
    if got.dtype != want.dtype or got.shape != want.shape:
      return Outcome(
        fixture,
        where,
        False,
        f"got {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}",
      )
    mismatches = int(np.count_nonzero(_bits(got) != _bits(want)))
    if mismatches:
      return Outcome(fixture, where, False, f"{mismatches} elements differ")
  return Outcome(fixture, device_lib.describe(record.device), True, "bit-exact")


def run_report(
  fixtures: Sequence[Fixture], devices: Sequence[jax.Device], feature_level: Any = None
) -> list[Outcome]:
  """Every fixture on every device (shape-only fixtures once), in fixture order."""
  runner = device_lib.Runner(feature_level)
  outcomes = []
  for fixture in fixtures:
    for target in devices[:1] if fixture.shape_only else devices:
      outcomes.append(check_fixture(fixture, runner, target))
  return outcomes


def summarize(outcomes: Sequence[Outcome]) -> dict[str, dict[str, dict[str, int]]]:
  """operator -> device -> {"passed": n, "failed": m, "not_at_level": k}, in first-seen order."""
  summary: dict[str, dict[str, dict[str, int]]] = {}
  for o in outcomes:
    cell = summary.setdefault(o.fixture.op, {}).setdefault(
      o.device, {"passed": 0, "failed": 0, "not_at_level": 0}
    )
    cell[o.status] += 1
  return summary


def _counts_line(outcomes: Sequence[Outcome], level: FeatureLevel) -> str:
  """The last line: "N passed, M failed", and how many examples the level rejects, if any."""
  counts = {"passed": 0, "failed": 0, "not_at_level": 0}
  for o in outcomes:
    counts[o.status] += 1
  line = f"{counts['passed']} passed, {counts['failed']} failed"
  if counts["not_at_level"]:
    line += f", {counts['not_at_level']} not at FL {level} (valid from a later level)"
  return line


def _devices_for(choice: str) -> list[jax.Device]:
  """--device: one platform's first device, JAX's default one, or every platform's first."""
  if choice == "all":
    firsts = (device_lib.available_devices(p)[:1] for p in device_lib.PLATFORMS)
    return [d for found in firsts for d in found]
  return device_lib.available_devices(choice)[:1]


def _summary_table(outcomes: Sequence[Outcome]) -> str:
  summary = summarize(outcomes)
  columns = list(dict.fromkeys(o.device for o in outcomes if o.device != SIZES_ONLY))
  if any(o.device == SIZES_ONLY for o in outcomes):
    columns.append(SIZES_ONLY)
  header = ["operator"] + [("sizes only" if c == SIZES_ONLY else c) for c in columns]
  rows = []
  for op, cells in summary.items():
    row = [op]
    for column in columns:
      cell = cells.get(column)
      if not cell:
        row.append("")
      else:
        later = f" +{cell['not_at_level']}" if cell["not_at_level"] else ""
        row.append(f"{cell['passed']}/{cell['failed']}{later}")
    rows.append(row)
  title = "summary (passed/failed, +n: not at this feature level)"
  return f"{title}:\n" + _html.text_table(header, rows)


def _version_line() -> str:
  import jaxlib

  import dml_jax  # imported by now: this module is reached through the package

  return f"dml_jax {dml_jax.__version__} (jax {jax.__version__}, jaxlib {jaxlib.__version__})"


def main(argv: Sequence[str] | None = None) -> int:
  args_given = list(sys.argv[1:] if argv is None else argv)
  if args_given[:1] == ["run"]:  # python -m dml_jax run MODEL.json: a DxDispatch model
    from dml_jax._src.model import cli

    return cli.main(args_given[1:])
  if args_given[:1] in (["crosscheck-pack"], ["crosscheck-compare"]):  # the DirectML pack
    from dml_jax._src.crosscheck import cli as crosscheck_cli

    if args_given[0] == "crosscheck-pack":
      return crosscheck_cli.pack_main(args_given[1:])
    return crosscheck_cli.compare_main(args_given[1:])
  if args_given[:1] == ["build-native"]:  # python -m dml_jax build-native: the CPU kernels now
    from dml_jax._src.kernels import native_cpu

    return native_cpu.command_line(args_given[1:])
  parser = argparse.ArgumentParser(
    prog="python -m dml_jax",
    description="Runs every DirectML fixture on JAX devices and reports pass/fail, bit for bit."
    " Exits with status 1 if any example fails. `python -m dml_jax run MODEL.json` runs a"
    " DxDispatch model file instead (see `python -m dml_jax run --help`); `python -m dml_jax"
    " build-native` builds the native CPU kernels ahead of their first use; `python -m dml_jax"
    " crosscheck-pack OUTDIR` writes DxDispatch models of every operator to run against"
    " DirectML, and `python -m dml_jax crosscheck-compare PACK RESULTS` compares what came"
    " back.",
  )
  parser.add_argument(
    "--device",
    default="default",
    choices=("cpu", "gpu", "tpu", "default", "all"),
    help="where to run: a platform's first device, JAX's default device (default), or all:"
    " the first device of every platform present, one row per example per device",
  )
  parser.add_argument(
    "--feature-level",
    default=None,
    help="DML_FEATURE_LEVEL to validate against, e.g. 4_1 (default: newest)",
  )
  parser.add_argument(
    "--op",
    action="append",
    metavar="NAME",
    help="only this operator's examples, e.g. GATHER_ND (repeatable; default: all)",
  )
  parser.add_argument("--version", action="version", version=_version_line())
  parser.add_argument(
    "--json",
    action="store_true",
    help="print one JSON document instead of the tables (the summary line goes to stderr)",
  )
  args = parser.parse_args(args_given)
  try:
    level = FeatureLevel.from_any(args.feature_level)
    if args.op:
      registry.lookup_all(args.op)  # every unknown name at once
      names = dict.fromkeys(registry.canonical_name(o) for o in args.op)
      fixtures = [f for op in names for f in load_fixtures(op)]
    else:
      fixtures = list(load_fixtures())
  except (ValueError, UnknownOperatorError) as error:
    parser.error(str(error))
  devices = _devices_for(args.device)
  if not devices:
    parser.error(f"no {args.device} device available")
  outcomes = run_report(fixtures, devices, level)
  failed = sum(o.status == "failed" for o in outcomes)
  passed = sum(o.status == "passed" for o in outcomes)
  last_line = _counts_line(outcomes, level)
  if args.json:
    document = {
      "format": "dml_jax-conformance/1",
      "jax": jax.__version__,
      "x64": x64_enabled(),
      "feature_level": str(level),
      "devices": [device_lib.describe(d) for d in devices],
      "results": [o.as_dict() for o in outcomes],
      "summary": summarize(outcomes),
      "passed": passed,
      "failed": failed,
      "not_at_level": len(outcomes) - passed - failed,
    }
    print(json.dumps(document, indent=2))
    print(last_line, file=sys.stderr)
    return 1 if failed else 0
  where = ", ".join(map(device_lib.describe, devices))
  x64 = "on" if x64_enabled() else "off"
  print(
    f"dml_jax conformance: DirectML fixtures at FL {level} on {where},"
    f" jax {jax.__version__}, x64 {x64}"
  )
  width = max(len(o.fixture.id) for o in outcomes)
  device_width = max(10, *(len(o.device) for o in outcomes))
  print(f"{'operator':<21} {'example':<{width}}  {'device':<{device_width}} result")
  for o in outcomes:
    print(
      f"{o.fixture.op:<21} {o.fixture.id:<{width}}  {o.device:<{device_width}}"
      f" {o.label}  {o.detail}"
    )
  print()
  print(_summary_table(outcomes))
  print(last_line)
  return 1 if failed else 0


def console_main() -> None:
  """Entry point of the `dml-jax` console script."""
  sys.exit(main())
