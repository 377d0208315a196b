"""Runs every registered operator on arrays sharded over 8 devices, next to jnp's formulation.

Run in its own process: the device count must be set before JAX starts, e.g.
XLA_FLAGS=--xla_force_host_platform_device_count=8 on a CPU-only machine. On a machine with
several GPUs it uses them (at least 2), sharding over what exists.

Each case shards its operands along a batch dimension or along the operator's own axis (the
gathered, joined, split, padded, sliced, reversed or scattered one), compiles the operator and
jnp's formulation of it under the same input shardings, and checks three things:

- bits: the operator's output equals the NumPy reference (`dml_jax._src.reference`), computed
  on the whole arrays, bit for bit; so does jnp's formulation (a check on the case itself);
- sharding: every output is sharded as jnp's output is (or, where jnp's program replicates its
  output, as the first operand is: lax.top_k on GPUs gathers a batch-sharded input);
- communication: the compiled program (`Compiled.as_text()`) holds, of each collective kind
  (all-gather, all-reduce, all-to-all, collective-permute, reduce-scatter), no more
  instructions than jnp's program (on GPUs, a scatter whose colliding updates live on different
  devices may hold one all-reduce more: `Case.settles_across_devices`).

The cases are the operators' own: each `tests/ops/test_<module>.py` declares `SHARDED_CASES`
(`tests/sharding_cases.py` says how), collected by `tests/per_operator.py`. Every registered
operator must have a case (checked against the registry, so a new operator fails here until it
has one). Prints one line per case and `N passed, M failed` last; exits 1 on any failure.
"""

from __future__ import annotations

import collections
import pathlib
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from dml_jax._src import registry

# Run as a script (python tests/subprocess/sharded_ops.py), this file's folder heads sys.path,
# not the repository: put the repository there too, for the tests' shared helpers.
sys.path.insert(1, str(pathlib.Path(__file__).resolve().parents[2]))
from tests import per_operator, sharding_cases  # noqa: E402
from tests.helpers import bits_equal  # noqa: E402

COLLECTIVES = ("all-gather", "all-reduce", "all-to-all", "collective-permute", "reduce-scatter")
# An instruction's opcode follows its result's type: `%x = f32[2]{0} all-gather(...)`, or the
# asynchronous `all-gather-start(...)`; names such as `%all-gather.1` are not followed by "(".
_COLLECTIVE = re.compile(r"\s(" + "|".join(COLLECTIVES) + r")(?:-start)?\(")


def collectives(hlo: str) -> collections.Counter[str]:
  """The number of collective instructions of each kind in a compiled program's text."""
  return collections.Counter(match.group(1) for match in _COLLECTIVE.finditer(hlo))


def _describe(counts: collections.Counter[str]) -> str:
  return ", ".join(f"{kind} x{n}" for kind, n in sorted(counts.items())) or "none"


def _place(x: np.ndarray, mesh: Mesh, axis: int | None) -> jax.Array:
  spec: list[str | None] = [None] * x.ndim
  if axis is not None:
    spec[axis] = "d"
  return jax.device_put(x, NamedSharding(mesh, PartitionSpec(*spec)))


def _run(fn: Callable[..., Any], placed: Sequence[jax.Array]) -> tuple[list[jax.Array], str]:
  """The outputs (a list, one or several) and the compiled program's text of jit(fn)."""
  compiled = jax.jit(fn).lower(*placed).compile()
  out = compiled(*placed)
  return (list(out) if isinstance(out, list | tuple) else [out]), compiled.as_text()


def check(case: sharding_cases.Case, mesh: Mesh) -> list[str]:
  """What is wrong with the operator's program in `case` (nothing: an empty list) and what
  communication each program holds."""
  placed = [_place(x, mesh, axis) for x, axis in case.operands]
  outs, hlo = _run(case.dml, placed)
  wants = list(case.want) if isinstance(case.want, list | tuple) else [case.want]
  problems = []
  if len(outs) != len(wants) or not all(map(bits_equal, outs, wants)):
    problems.append("bits differ from the reference")
  found = collectives(hlo)
  if isinstance(case.jnp, str):
    allowed: collections.Counter[str] = collections.Counter()
    shardings = [placed[0].sharding] * len(outs)
  else:
    jnp_outs, jnp_hlo = _run(case.jnp, placed)
    if len(jnp_outs) != len(wants) or not all(map(bits_equal, jnp_outs, wants)):
      problems.append("jnp's formulation differs from the reference (a wrong case)")
    allowed = collectives(jnp_hlo)
    shardings = [out.sharding for out in jnp_outs]
  for k, (out, sharding) in enumerate(zip(outs, shardings, strict=False)):
    if not out.sharding.is_equivalent_to(sharding, out.ndim) and not (
      sharding.is_fully_replicated and out.sharding == placed[0].sharding
    ):  # keeping the operand's sharding where jnp's program replicates moves less, never more
      spec = getattr(out.sharding, "spec", out.sharding)
      problems.append(f"output {k} sharded {spec}, jnp's {getattr(sharding, 'spec', sharding)}")
  if case.settles_across_devices and mesh.devices.flat[0].platform == "gpu":
    allowed["all-reduce"] += 1  # the winners' agreement, by design
  excess = found - allowed
  if excess:
    problems.append(f"collectives beyond jnp's: {_describe(excess)}")
  return problems, f"collectives: {_describe(found)}; jnp's: {_describe(allowed)}"


def main(argv: Sequence[str]) -> int:
  mesh = sharding_cases.mesh()
  n = len(mesh.devices)
  only = {registry.canonical_name(name) for name in argv}
  # One generator per module: a module's cases draw the same arrays whatever the others do.
  cases = [
    case
    for make in per_operator.SHARDED_CASES.values()
    for case in make(n, np.random.default_rng(0))
  ]
  failed = 0
  uncovered = sorted(set(registry.operators()) - {case.operator for case in cases})
  for operator in uncovered:
    failed += 1
    print(
      f"FAIL  {operator}: no sharded case; declare SHARDED_CASES in its tests/ops/test_<module>.py"
    )
  cases = [case for case in cases if not only or case.operator in only]
  platform = jax.devices()[0].platform
  for case in cases:
    try:
      problems, communication = check(case, mesh)
    except Exception as error:  # a crash fails its case, and the others still run
      problems, communication = [f"raised {type(error).__name__}: {error}"], ""
    failed += bool(problems)
    verdict = "; ".join(problems) if problems else communication
    print(
      f"{'FAIL' if problems else 'PASS'}  {case.operator}: {case.name} over {n} {platform}"
      f" devices ({verdict})"
    )
  print(f"{len(cases) + len(uncovered) - failed} passed, {failed} failed")
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
