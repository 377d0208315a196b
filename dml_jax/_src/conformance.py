"""The conformance report: every DirectML fixture run on a device, pass or fail.

`python -m dml_jax` prints, per operator and example, the device it ran on and
whether the output matched DirectML's bit for bit (shape-only examples check
the inferred output sizes). The exit status is 1 if any example fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np

from dml_jax._src import device as device_lib
from dml_jax._src.errors import DmlValidationError
from dml_jax._src.feature_level import FeatureLevel
from dml_jax._src.fixtures import Fixture, FixtureTensor, load_fixtures
from dml_jax._src.ops._base import OperatorDesc
from dml_jax._src.ops.gather_elements import GatherElementsDesc
from dml_jax._src.ops.gather_nd import GatherNdDesc
from dml_jax._src.ops.join import JoinDesc
from dml_jax._src.ops.reverse_subsequences import ReverseSubsequencesDesc
from dml_jax._src.tensor_desc import TensorDesc

_Builder = Callable[[Mapping[str, Any], Mapping[str, int], TensorDesc], OperatorDesc]

_BUILDERS: dict[str, _Builder] = {
  "GATHER_ELEMENTS": lambda t, p, out: GatherElementsDesc(
    t["input"], t["indices"], output_tensor=out, **p
  ),
  "GATHER_ND": lambda t, p, out: GatherNdDesc(t["input"], t["indices"], output_tensor=out, **p),
  "GATHER_ND1": lambda t, p, out: GatherNdDesc(t["input"], t["indices"], output_tensor=out, **p),
  "REVERSE_SUBSEQUENCES": lambda t, p, out: ReverseSubsequencesDesc(
    t["input"], t["sequence_lengths"], output_tensor=out, **p
  ),
  "JOIN": lambda t, p, out: JoinDesc(t["inputs"], output_tensor=out, **p),
}


def _tensor(t: FixtureTensor) -> TensorDesc:
  return TensorDesc(t.data_type, t.sizes)


def descriptor_for(fixture: Fixture) -> OperatorDesc:
  """The operator descriptor of a fixture, its documented output included."""
  tensors = {
    role: tuple(map(_tensor, value)) if isinstance(value, tuple) else _tensor(value)
    for role, value in fixture.inputs.items()
  }
  return _BUILDERS[fixture.op](tensors, fixture.params, _tensor(fixture.output))


def _input_arrays(fixture: Fixture) -> list[np.ndarray]:
  arrays = []
  for value in fixture.arrays().values():
    arrays.extend(value if isinstance(value, tuple) else [value])
  return arrays


def _bits(x: np.ndarray) -> np.ndarray:
  return np.ascontiguousarray(x).view(np.dtype(f"u{x.dtype.itemsize}"))


@dataclasses.dataclass(frozen=True)
class Outcome:
  fixture: Fixture
  device: str
  passed: bool
  detail: str


def check_fixture(fixture: Fixture, runner: device_lib.Runner, device: Any) -> Outcome:
  """Runs one fixture and compares with DirectML's output, bit for bit."""
  target = device_lib._resolve(device)
  where = device_lib.describe(target)
  try:
    desc = descriptor_for(fixture).validate(runner.feature_level)
  except DmlValidationError as error:
    return Outcome(fixture, where, False, f"rejected: {error.violations[0]}")
  if fixture.shape_only:
    return Outcome(fixture, "-", True, f"output sizes {list(desc.output.sizes)}")
  record = runner.run(desc, *_input_arrays(fixture), device=target)
  got, want = np.asarray(record.output), fixture.output.data
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


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(
    prog="python -m dml_jax",
    description="Runs every DirectML fixture on a JAX device and reports pass/fail.",
  )
  parser.add_argument(
    "--device", default="default", help="cpu, gpu, tpu or default (JAX's default device)"
  )
  parser.add_argument(
    "--feature-level",
    default=None,
    help="DML_FEATURE_LEVEL to validate against, e.g. 4_1 (default: newest)",
  )
  args = parser.parse_args(argv)
  level = FeatureLevel.from_any(args.feature_level)
  runner = device_lib.Runner(level)
  target = device_lib.available_devices(args.device)
  if not target:
    parser.error(f"no {args.device} device available")
  print(f"dml_jax conformance: DirectML fixtures at FL {level}, jax {jax.__version__}")
  outcomes = [check_fixture(f, runner, target[0]) for f in load_fixtures()]
  width = max(len(o.fixture.id) for o in outcomes)
  print(f"{'operator':<21} {'example':<{width}}  {'device':<10} result")
  for o in outcomes:
    print(
      f"{o.fixture.op:<21} {o.fixture.id:<{width}}  {o.device:<10}"
      f" {'PASS' if o.passed else 'FAIL'}  {o.detail}"
    )
  failed = sum(not o.passed for o in outcomes)
  print(f"{len(outcomes) - failed} passed, {failed} failed")
  return 1 if failed else 0


def console_main() -> None:
  """Entry point of the `dml-jax` console script."""
  sys.exit(main())
