"""`run.py --forms` and `run.py --sweep KERNEL`: a case's kernel forms, and a kernel's config.

--forms: each case's dml_jax call as the library chooses it ("dml_jax": a kernel of this
platform where one applies) and with every kernel of this platform forced off ("dml_jax
(lax)": the lax lowering the kernels fall back to). Both are traced afresh (jax's caches are
cleared first), checked as the one-device run checks dml_jax, and timed as it times them;
"peer/dml" of the lax row is its time over the chosen form's (above 1: the kernel is faster).
The kernels the chosen program calls are named (the custom-call targets that the lax program
lacks); where the two programs are the same, the case has one form here and the lax row is not
timed. Peers run as in the plain run unless --no-peers.

--sweep KERNEL: KERNEL is a module of `dml_jax/_src/kernels/` with a frozen `DEFAULT` config
(gather_rows_cpu, tile_rows_cpu, runs_cpu, transpose_cpu, gather_nd_rows_triton, ...). Each
integer field of the config is tried at 0, half and twice its value (a bool: flipped), one
field at a time, or at the values given as KERNEL:FIELD=V1,V2 (repeat --sweep for more fields);
each variant replaces the module's `DEFAULT` while the case is traced, so `applies` and the
kernel both see it. A variant whose program equals the default's is listed, not timed. Lowering
a threshold to 0 forces a kernel on where its shapes allow it.

The force-off switch is private to the library (`forms._without_kernels`); it is read when a
program is traced, which is why every form here is traced in a fresh cache.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np

from benchmarks.harness import (
  CASES,
  Env,
  Preset,
  Registered,
  Row,
  byte_text,
  dml_check,
  free_memory,
  jax_impl,
  run_case,
  run_impl,
)
from dml_jax._src.kernels import forms

_TARGET = re.compile(r'custom_call_target="([^"]+)"')
_METADATA = re.compile(r", metadata=\{[^}]*\}")
_TABLE_ROW = re.compile(r"^\s*(\d+ |FileNames|FunctionNames|FileLocations|StackFrames)")


def program_text(hlo: str) -> str:
  """A compiled program's HLO text less its source locations: equal for equal programs.

  Examples:
    >>> program_text('FileNames\\n1 "a.py"\\nx = f32[] add(y, z), metadata={op_name="add"}')
    'x = f32[] add(y, z)'
  """
  lines = (_METADATA.sub("", line) for line in hlo.splitlines())
  return "\n".join(line for line in lines if not _TABLE_ROW.match(line))


def kernel_calls(hlo: str) -> set[str]:
  """The custom-call targets of a compiled program's HLO text.

  Examples:
    >>> sorted(kernel_calls('x = f32[4] custom-call(y), custom_call_target="dml_jax_tile_rows"'))
    ['dml_jax_tile_rows']
  """
  return set(_TARGET.findall(hlo))


def platform_of_kernels() -> str:
  """The `forms.on_platforms` key of jax's default backend: "cuda" on an NVIDIA GPU."""
  device = jax.devices()[0]
  return (
    "cuda"
    if device.platform == "gpu" and "NVIDIA" in device.device_kind.upper()
    else (device.platform)
  )


def traced(
  registered: Registered, size: str, seed: int, context: Callable[[], Any]
) -> tuple[Any, str]:
  """The case built and its dml_jax call traced, compiled and called once within `context()`
  (jax's caches cleared first); the case and its compiled HLO."""
  jax.clear_caches()
  with context():
    case = registered.build(size, np.random.default_rng(seed))
    hlo = program_text(case.dml.lower(*case.inputs).compile().as_text())
    jax.block_until_ready(case.dml(*case.inputs))  # the call's cache now holds this form
  return case, hlo


def _timed_form(
  registered: Registered, case: Any, label: str, env: Env, preset: Preset, repeats: int
) -> Row:
  impl = jax_impl(env, label, "dml", case.dml, *case.inputs)
  row = Row(
    registered.name,
    registered.op,
    case.dtype,
    case.shape,
    label,
    "dml",
    case.bytes_moved,
  )
  return run_impl(row, impl, repeats, preset, dml_check(case, {}))


def run_forms(
  names: list[str], size: str, env: Env, preset: Preset, repeats: int
) -> tuple[list[Row], list[dict[str, Any]]]:
  """--forms over `names`: the rows (per case: dml_jax chosen, its peers, dml_jax lax) and a
  JSON summary per case."""
  platform = platform_of_kernels()
  rows: list[Row] = []
  summaries = []
  for name in names:
    registered = CASES[name]
    seed = 1000 + list(CASES).index(name)
    case, chosen_hlo = traced(registered, size, seed, contextlib.nullcontext)
    case_rows = run_case(registered, case, env, preset, repeats)
    del case
    free_memory(env, preset)
    lax_case, lax_hlo = traced(registered, size, seed, lambda: forms._without_kernels(platform))
    kernels = sorted(kernel_calls(chosen_hlo) - kernel_calls(lax_hlo))
    same = chosen_hlo == lax_hlo
    print(
      f"# {name}: {lax_case.description}; {byte_text(lax_case.bytes_moved)} to move at least;"
      f" kernels on {platform}: {', '.join(kernels) or 'none'}"
      + ("; one form here (the programs are the same)" if same else ""),
      flush=True,
    )
    if not same:
      off = _timed_form(registered, lax_case, "dml_jax (lax)", env, preset, repeats)
      chosen = case_rows[0]
      if off.timing and chosen.timing:
        off.ratio = off.timing.median_s / chosen.timing.median_s
      case_rows.append(off)
    summaries.append({"case": name, "platform": platform, "kernels": kernels, "one_form": same})
    rows.extend(case_rows)
    del lax_case
    free_memory(env, preset)
  return rows, summaries


# -- --sweep -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Variant:
  """One config of a kernel module: `DEFAULT` with `field` set to `value` (None: DEFAULT)."""

  module: Any  # None: every config as it is
  field: str | None = None
  value: Any = None

  @property
  def label(self) -> str:
    return "dml_jax DEFAULT" if self.field is None else f"dml_jax {self.field}={self.value}"

  @contextlib.contextmanager
  def applied(self) -> Iterator[None]:
    """The module's DEFAULT with the field replaced, within the block."""
    before = self.module.DEFAULT if self.module is not None else None
    if self.module is not None:
      self.module.DEFAULT = dataclasses.replace(before, **{self.field: self.value})
    try:
      yield
    finally:
      if self.module is not None:
        self.module.DEFAULT = before


def _trial_values(value: Any) -> list[Any]:
  if isinstance(value, bool):
    return [not value]
  if isinstance(value, int):
    return sorted({0, value // 2, value * 2} - {value})
  return []


def _parse_value(text: str, like: Any) -> Any:
  if isinstance(like, bool):
    return text.lower() in ("1", "true", "yes", "on")
  return type(like)(text) if isinstance(like, int | float | str) else text


def variants(specs: list[str]) -> list[Variant]:
  """The variants --sweep asks for: KERNEL (every field, trial values) or KERNEL:FIELD=V1,V2.
  Raises ValueError with what to pass instead where a module or field does not exist."""
  out: list[Variant] = []
  for spec in specs:
    module_name, _, setting = spec.partition(":")
    try:
      module = importlib.import_module(f"dml_jax._src.kernels.{module_name}")
    except ImportError:
      raise ValueError(f"--sweep {spec}: no kernel module {module_name!r}") from None
    default = getattr(module, "DEFAULT", None)
    if default is None or not dataclasses.is_dataclass(default):
      raise ValueError(f"--sweep {spec}: {module_name} has no frozen DEFAULT config to sweep")
    fields = {f.name: getattr(default, f.name) for f in dataclasses.fields(default)}
    if setting:
      field, _, values = setting.partition("=")
      if field not in fields or not values:
        raise ValueError(f"--sweep {spec}: give FIELD=V1,V2 with FIELD one of {', '.join(fields)}")
      out.extend(Variant(module, field, _parse_value(v, fields[field])) for v in values.split(","))
    else:
      for field, value in fields.items():
        out.extend(Variant(module, field, v) for v in _trial_values(value))
  return out


def run_sweep(
  specs: list[str], names: list[str], size: str, env: Env, preset: Preset, repeats: int
) -> tuple[list[Row], list[dict[str, Any]]]:
  """--sweep over `names`: a row per case and variant whose program differs from DEFAULT's."""
  chosen = [Variant(None), *variants(specs)]
  rows: list[Row] = []
  summaries = []
  for name in names:
    registered = CASES[name]
    seed = 1000 + list(CASES).index(name)
    default_hlo = None
    default_row = None
    for variant in chosen:
      case, hlo = traced(registered, size, seed, variant.applied)
      if variant.field is None:
        default_hlo = hlo
        print(
          f"# {name}: {case.description}; kernels: {', '.join(sorted(kernel_calls(hlo))) or 'none'}",
          flush=True,
        )
      elif hlo == default_hlo:
        print(f"#   {variant.label}: the same program as DEFAULT", flush=True)
        summaries.append({"case": name, "variant": variant.label, "same_as_default": True})
        continue
      row = _timed_form(registered, case, variant.label, env, preset, repeats)
      if default_row is None:
        default_row = row
      elif row.timing and default_row.timing:
        row.ratio = row.timing.median_s / default_row.timing.median_s
      summaries.append({"case": name, "variant": variant.label, "same_as_default": False})
      rows.append(row)
      del case
      free_memory(env, preset)
  return rows, summaries


if __name__ == "__main__":  # pragma: no cover
  sys.exit("run benchmarks/run.py --forms or --sweep KERNEL")
