"""Helpers shared by the test files: the one module they import besides strategies.py and
sharding_cases.py (what operators' strategies and sharded cases are made of) and
per_operator.py (which collects those from tests/ops/).

Test files never import each other; what two of them need lives here. Keep each group of
helpers in its own section, so that branches adding helpers merge cleanly
(tests/conftest.py registers this module for pytest's assertion rewriting):

* bit equality: `assert_bits_equal` (and the predicate `bits_equal`, and `bits`, the raw
  bits they compare), the one comparison of results bit for bit;
* the fixture file read as plain JSON, to derive counts instead of pinning them;
* validation messages: the DmlValidationError checks of the spec's rules;
* explanations and HTML: reading dml.explain's sections and parsing `_repr_html_` tables;
* reference cross-check data: random small cases for the NumPy oracles of the oracle;
* test data for the GPU kernels;
* fresh processes in JAX's default mode: `default_mode_env`.
"""

from __future__ import annotations

import html.parser
import importlib.resources
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
from typing import Any

import jax
import numpy as np
import pytest

import dml_jax as dml
from dml_jax import DmlValidationError, FeatureLevel
from dml_jax._src.fixtures import DATA_TYPES

# =========================================================================== #
# Bit equality
# =========================================================================== #


def _bits(a) -> np.ndarray:
  """`a`'s elements as unsigned integers of their width, to compare floats bit for bit."""
  a = np.asarray(a)
  return a.view(f"u{a.dtype.itemsize}")


def bits_equal(a: Any, b: Any) -> bool:
  """Whether `a` and `b` have the same dtype, shape and raw bytes (a predicate, for scripts
  that report rather than assert; tests use assert_bits_equal)."""
  a, b = np.asarray(a), np.asarray(b)
  return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(_bits(a), _bits(b))


def assert_bits_equal(got: Any, want: Any, *, context: str = "") -> None:
  """Asserts equal dtype, shape and raw bytes: -0.0 is not 0.0 and NaN payloads count.

  Value equality (np.testing.assert_array_equal) lets both through. `context` opens the
  message (what was compared: "jit", "grad wrt argument 0", a case's name).
  """
  got, want = np.asarray(got), np.asarray(want)
  where = f"{context}: " if context else ""
  assert got.dtype == want.dtype, f"{where}dtype {got.dtype} != {want.dtype}"
  assert got.shape == want.shape, f"{where}shape {got.shape} != {want.shape}"
  got_bits, want_bits = _bits(got), _bits(want)
  if not np.array_equal(got_bits, want_bits):
    wrong = np.argwhere(got_bits != want_bits)
    raise AssertionError(
      f"{where}{len(wrong)} of {got.size} elements differ"
      f" (compared as {got_bits.dtype.name} bits), first at"
      f" {[tuple(map(int, w)) for w in wrong[:8]]}\n"
      f"got:  {got!r}\nwant: {want!r}\n"
      f"got bits:  {got_bits.ravel().tolist()}\n"
      f"want bits: {want_bits.ravel().tolist()}"
    )


# =========================================================================== #
# The fixture file, read without dml_jax's loader
# =========================================================================== #


def fixture_file_entries() -> list[dict[str, Any]]:
  """The entries of dml_jax's fixture file as plain JSON: counts of fixtures (per operator,
  shape-only, ...) are derived from it, so adding a fixture or an operator breaks no test."""
  path = importlib.resources.files("dml_jax._src.fixtures") / "directml_examples.json"
  return json.loads(path.read_text(encoding="utf-8"))["fixtures"]


# =========================================================================== #
# Validation messages
# =========================================================================== #


def violation_pattern(
  field: str, rule: str, value: str | re.Pattern, level: str, hint: str | None = None
) -> str:
  """A regex for one line of a DmlValidationError message.

  The line reads ``  - {field}: {rule}; got {value} (at FL {level})[. Hint: {hint}]``;
  `rule` and `hint` are literal fragments, `field`, `value` and `level` exact
  (`value` may be a compiled regex instead).
  """
  value = value.pattern if isinstance(value, re.Pattern) else re.escape(value)
  pattern = (
    rf"(?m)^  - {re.escape(field)}: [^\n]*{re.escape(rule)}[^\n]*;"
    rf" got {value} \(at FL {re.escape(level)}\)"
  )
  if hint is not None:
    pattern += rf"\. Hint: [^\n]*{re.escape(hint)}"
  return pattern


def assert_rejected(
  desc: dml.OperatorDesc,
  level: str | None,
  field: str,
  rule: str,
  value: str | re.Pattern,
  hint: str | None = None,
) -> DmlValidationError:
  """Asserts desc.validate(level) raises a DmlValidationError naming this violation."""
  shown = str(FeatureLevel.from_any(level))
  with pytest.raises(
    DmlValidationError, match=violation_pattern(field, rule, value, shown, hint)
  ) as info:
    desc.validate(level)
  error = info.value
  assert isinstance(error, ValueError)
  assert str(error).startswith(
    f"DML_OPERATOR_{desc.OPERATOR} descriptor is invalid at DML_FEATURE_LEVEL_{shown} ("
  )
  assert error.operator == desc.OPERATOR and error.feature_level == shown
  assert any(v.field == field and v.feature_level == shown for v in error.violations)
  assert not desc.is_valid(level)
  assert desc.violations(level) == error.violations
  return error


def assert_valid(desc: dml.OperatorDesc, level: str | None) -> None:
  assert desc.violations(level) == (), "\n".join(map(str, desc.violations(level)))
  assert desc.is_valid(level)
  assert desc.validate(level) is desc


def fields_of(desc: dml.OperatorDesc, level: str | None) -> list[str]:
  return [v.field for v in desc.violations(level)]


def gather_nd_desc(*tensors: Any, batch_dimension_count: Any = 0, **counts: Any) -> Any:
  """GATHER_ND's descriptor, or GATHER_ND1's when there is a batch count: the choice
  `dml.gather_nd` makes."""
  if batch_dimension_count:
    return dml.GatherNd1Desc(*tensors, batch_dimension_count=batch_dimension_count, **counts)
  return dml.GatherNdDesc(*tensors, **counts)


def braces(sizes) -> str:
  """DirectML's brace notation, as the messages write sizes: {2,3}."""
  return "{" + ",".join(map(str, sizes)) + "}"


# =========================================================================== #
# Explanations and HTML
# =========================================================================== #


def explain_section(text: str, title: str) -> list[str]:
  """The lines of one section of a dml.explain text, without their indentation."""
  block = text.split(f"\n\n{title}")[1].split("\n\n")[0]
  return [line.strip() for line in block.splitlines()[1:]]


_VOID = {"br", "hr", "img"}


class HtmlTables(html.parser.HTMLParser):
  """Checks that tags nest, and collects every table as rows of cell texts."""

  def __init__(self):
    super().__init__(convert_charrefs=True)
    self.open: list[str] = []
    self.tables: list[list[list[str]]] = []
    self.captions: list[str] = []
    self._cell: list[str] | None = None
    self._caption: list[str] | None = None

  def handle_starttag(self, tag, attrs):
    if tag not in _VOID:
      self.open.append(tag)
    if tag == "table":
      self.tables.append([])
    elif tag == "tr":
      self.tables[-1].append([])
    elif tag in ("td", "th"):
      self._cell = []
    elif tag == "caption":
      self._caption = []

  def handle_endtag(self, tag):
    assert self.open and self.open[-1] == tag, f"</{tag}> closes {self.open}"
    self.open.pop()
    if tag in ("td", "th"):
      self.tables[-1][-1].append("".join(self._cell))
      self._cell = None
    elif tag == "caption":
      self.captions.append("".join(self._caption))
      self._caption = None

  def handle_data(self, data):
    for part in (self._cell, self._caption):
      if part is not None:
        part.append(data)


def parse_html(markup: str) -> HtmlTables:
  """The markup's tables and captions; asserts that every tag is closed, in order."""
  parser = HtmlTables()
  parser.feed(markup)
  parser.close()
  assert not parser.open, f"unclosed: {parser.open}"
  return parser


# =========================================================================== #
# Reference cross-check data: random small cases for plain-NumPy oracles
# =========================================================================== #

ALL_DTYPES = tuple(DATA_TYPES.values())
"""Every data type the fixtures and the reference take."""

_INDEX_DTYPES = (np.int32, np.int64, np.uint32, np.uint64)

CROSS_CHECK_SEEDS = range(25)
"""The random cases each cross-check of the reference runs."""


def random_shape(rng: np.random.Generator, rank: int, high: int = 4) -> tuple[int, ...]:
  return tuple(int(s) for s in rng.integers(1, high + 1, size=rank))


def random_data(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
  """Integers in [0, 100) in a random data type."""
  dtype = ALL_DTYPES[rng.integers(len(ALL_DTYPES))]
  return rng.integers(0, 100, size=shape).astype(dtype)


def random_indices(
  rng: np.random.Generator, shape: tuple[int, ...], size: int | np.ndarray
) -> np.ndarray:
  """Indices around the valid range: negatives and overshoots included."""
  dtype = np.dtype(_INDEX_DTYPES[rng.integers(len(_INDEX_DTYPES))])
  low = -size - 2 if dtype.kind == "i" else 0
  return rng.integers(low, size + 3, size=shape).astype(dtype)


def numpy_normalize(indices: np.ndarray, size: int | np.ndarray) -> np.ndarray:
  """Vectorised negative-index rule + clamp (for small index values)."""
  values = indices.astype(np.int64)
  values = np.where(values < 0, values + size, values)
  return np.clip(values, 0, np.asarray(size) - 1)


# -- test data for the GPU kernels (tests/test_kernels.py, tests/test_strip_kernel.py) ------


def examples(fraction: float, **changes: Any) -> Any:
  """Hypothesis settings drawing `fraction` of the loaded profile's max_examples (at least 5):
  the "ci" profile's 20 make 10 at 0.5, the "long" profile's 10,000 make 5,000."""
  from hypothesis import settings

  return settings(max_examples=max(5, int(settings().max_examples * fraction)), **changes)


def in_turn(first: list[Any], second: list[Any]) -> list[Any]:
  """Parameters pairing each of `first` with one of `second` in turn, and each of `second` at
  least once: max(len) pairs, not the product. For kernel bodies that move elements by their
  width whatever the shapes, every element type meets a shape and every shape a type.

  Examples:
    >>> [p.id for p in in_turn([np.int8, np.float32], ["a", "b", "c"])]
    ['int8-a', 'float32-b', 'int8-c']
  """
  count = max(len(first), len(second))
  pairs = [(first[i % len(first)], second[i % len(second)]) for i in range(count)]
  return [pytest.param(a, b, id=f"{_name(a)}-{_name(b)}") for a, b in pairs]


def in_turn_off_gpus(first: list[Any], second: list[Any]) -> list[Any]:
  """Every pair of `first` and `second` where the default device is a GPU (each pair runs a
  kernel on its own shapes), `in_turn` elsewhere (where the pairs run the same lax form).

  Examples:
    >>> pairs = in_turn_off_gpus([1, 2], ["a", "b", "c"])
    >>> len(pairs) == (6 if jax.default_backend() == "gpu" else 3)
    True
  """
  if jax.default_backend() != "gpu":
    return in_turn(first, second)
  return [pytest.param(a, b, id=f"{_name(a)}-{_name(b)}") for a in first for b in second]


def _name(value: Any) -> str:
  return np.dtype(value).name if isinstance(value, type) else str(value)


def kernel_data(rng: np.random.Generator, dtype, shape) -> np.ndarray:
  """Data of every bit pattern a kernel must move: normal floats, integers over their range."""
  if np.issubdtype(dtype, np.floating):
    return rng.standard_normal(shape).astype(dtype)
  info = np.iinfo(dtype)
  return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def kernel_indices(rng: np.random.Generator, dtype, shape, size: int) -> np.ndarray:
  """Raw indices into a dimension of `size` of every value class: in range, negative (signed
  types), past either end, and the type's extremes."""
  info = np.iinfo(dtype)
  low = -size - 3 if info.min < 0 else 0
  out = rng.integers(low, size + 3, shape).astype(dtype)
  out.flat[:4] = [info.max, info.min, size, size - 1]
  return out


def load_script(path: pathlib.Path, name: str) -> Any:
  """A script (benchmarks/*.py: not part of a package) imported as module `name`, once."""
  if name not in sys.modules:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    try:
      spec.loader.exec_module(module)
    except BaseException:
      del sys.modules[name]
      raise
  return sys.modules[name]


# -- Fresh processes in JAX's default mode ----------------------------------------------------


def default_mode_env(**extra: str) -> dict[str, str]:
  """This process's environment less JAX_ENABLE_X64, plus `extra`: a child started with it runs
  in JAX's default mode (x64 off) in both passes of the test command, so a test whose JAX runs
  only in such children is `mode_independent`."""
  env = {key: value for key, value in os.environ.items() if key != "JAX_ENABLE_X64"}
  env.update(extra)
  return env


def run_on_cpu_devices(
  *argv: str | os.PathLike[str], devices: int = 8, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
  """`python *argv` in a child with `devices` virtual CPU devices, in JAX's default mode
  (`default_mode_env`), from the repository root with it on the path; output captured."""
  root = pathlib.Path(__file__).resolve().parents[1]
  env = default_mode_env(
    XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
    JAX_PLATFORMS="cpu",
    PYTHONPATH=str(root),
  )
  return subprocess.run(
    [sys.executable, *map(str, argv)],
    cwd=root,
    env=env,
    capture_output=True,
    text=True,
    timeout=timeout,
  )
