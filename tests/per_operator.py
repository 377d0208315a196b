"""The per-operator data of the generic tests, collected from every operator's test module.

The generic tests (test_fuzz, test_contract, test_buffers, test_tracing, test_moved_bits and
the sharded script, tests/subprocess/sharded_ops.py) keep no table of operators: each
`tests/ops/test_<module>.py` declares its operators' data under these module-level names, and
this module imports every one of them once (in sorted order) and merges what they declare:

- `VALID = {"OPERATOR": factory}` (required for every registered operator): `factory()`
  returns the hypothesis strategy of a valid `strategies.Case`.
- `MUTANTS = {"OPERATOR": fn}`: `fn(desc, level, draw)` yields `(label, mutant descriptor,
  DML field the error must name)` for the operator's own rules, after the generic mutants.
- `SHARDED_CASES = fn` (required, checked by the sharded script): `fn(n, rng)` returns the
  module's `sharding_cases.Case` list for `n` devices, drawing from its own `rng`.
- `TRACING_CALLS = {"name": lambda k: ...}`: a call that must trace and validate once for
  every `k` (test_tracing).
- `BFLOAT16_CALLS = {"name": lambda x: ...}`: an operator that only moves bits, as one call
  taking the data first (test_moved_bits).
- `FREE_OUTPUT_DIMENSIONS = {"OPERATOR": lambda desc: {...}}`: the output dimensions whose
  size no input fixes (test_contract, and the mutants of test_fuzz).

A registered operator without a strategy, a name declared twice, or a key that names no
registered operator fails the import of this module, so every generic test fails loudly.
"""

from __future__ import annotations

import importlib
import pathlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dml_jax._src import registry

MODULES = tuple(
  importlib.import_module(f"tests.ops.{path.stem}")
  for path in sorted((pathlib.Path(__file__).parent / "ops").glob("test_*.py"))
)


def merge(modules: Sequence[Any], name: str, *, by_operator: bool) -> dict[str, Any]:
  """The `name` tables of `modules`, as one; each key declared once (a registered operator's
  name where `by_operator`)."""
  merged: dict[str, Any] = {}
  owners: dict[str, str] = {}
  for module in modules:
    for key, value in getattr(module, name, {}).items():
      if key in merged:
        raise ValueError(
          f"{name}[{key!r}] is declared in both {owners[key]} and {module.__name__}; keep one"
        )
      if by_operator and key not in registry.operators():
        raise ValueError(
          f"{module.__name__}.{name} names {key!r}, which is no registered operator; use the"
          " registry's name (the descriptor's OPERATOR)"
        )
      merged[key], owners[key] = value, module.__name__
  return merged


def require_strategies(valid: Mapping[str, Any]) -> None:
  """Raises LookupError naming every registered operator that has no strategy in `valid`."""
  missing = sorted(set(registry.operators()) - set(valid))
  if missing:
    raise LookupError(
      f"no VALID strategy for {', '.join(missing)}: declare VALID = {{'OPERATOR': factory}}"
      " in the operator's tests/ops/test_<module>.py (see CONTRIBUTING.md)"
    )


VALID: dict[str, Callable[[], Any]] = merge(MODULES, "VALID", by_operator=True)
require_strategies(VALID)
MUTANTS: dict[str, Callable[..., Any]] = merge(MODULES, "MUTANTS", by_operator=True)
FREE_OUTPUT_DIMENSIONS: dict[str, Callable[[Any], set[int]]] = merge(
  MODULES, "FREE_OUTPUT_DIMENSIONS", by_operator=True
)
TRACING_CALLS: dict[str, Callable[[int], Any]] = merge(MODULES, "TRACING_CALLS", by_operator=False)
BFLOAT16_CALLS: dict[str, Callable[[Any], Any]] = merge(
  MODULES, "BFLOAT16_CALLS", by_operator=False
)
SHARDED_CASES: dict[str, Callable[..., list[Any]]] = {
  module.__name__: module.SHARDED_CASES for module in MODULES if hasattr(module, "SHARDED_CASES")
}
