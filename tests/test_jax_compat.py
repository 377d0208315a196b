"""dml_jax reaches JAX's private modules through `jax_compat` only, and each of its shims works
on the jax that runs this (CI runs the `jax_range` tests at the newest supported jax too)."""

import ast
import pathlib
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import pytest

from dml_jax._src import jax_compat
from dml_jax._src.kernels import availability
from tests.helpers import default_mode_env

pytestmark = [pytest.mark.jax_range, pytest.mark.mode_independent]

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dml_jax"
COMPAT = PACKAGE / "_src" / "jax_compat.py"
_PRIVATE_JAX = re.compile(r"\bjax\s*\.\s*_src\b|\bfrom\s+jax\s+import\s+[^\n]*\b_src\b")


def test_only_the_compat_module_names_jax_private_modules():
  sources = sorted(PACKAGE.rglob("*.py"))
  assert COMPAT in sources
  offenders = [
    f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
    for path in sources
    if path != COMPAT
    for n, line in enumerate(path.read_text().splitlines(), 1)
    if _PRIVATE_JAX.search(line)
  ]
  assert not offenders, "import these through dml_jax/_src/jax_compat.py:\n" + "\n".join(offenders)


def _mlir_attributes_the_kernels_use() -> set[tuple[str, tuple[str, ...]]]:
  """(compat module name, attribute path) for each `ir.X.y` chain in the Mosaic kernels, where
  `ir` (or a dialect) is imported from jax_compat."""
  used = set()
  for path in sorted((PACKAGE / "_src" / "kernels").glob("*.py")):
    tree = ast.parse(path.read_text())
    aliases = {
      alias.asname or alias.name: alias.name
      for node in ast.walk(tree)
      if isinstance(node, ast.ImportFrom) and node.module == "dml_jax._src.jax_compat"
      for alias in node.names
      if alias.name.startswith("mlir_")
    }
    for node in ast.walk(tree):
      chain: list[str] = []
      while isinstance(node, ast.Attribute):
        chain.insert(0, node.attr)
        node = node.value
      if chain and isinstance(node, ast.Name) and node.id in aliases:
        used.add((aliases[node.id], tuple(chain)))
  return used


def test_the_mlir_names_the_kernels_use_exist():
  used = _mlir_attributes_the_kernels_use()
  assert {module for module, _ in used} >= {"mlir_ir", "mlir_arith", "mlir_gpu", "mlir_memref"}
  missing = []
  for module, chain in sorted(used):
    value = getattr(jax_compat, module)
    for name in chain:  # names of modules and classes (a call ends a chain)
      if not hasattr(value, name):
        missing.append(f"{module}.{'.'.join(chain)}")
        break
      value = getattr(value, name)
  assert not missing, f"jax {jax.__version__} lacks {missing}"


def test_unknown_names_are_attribute_errors():
  with pytest.raises(AttributeError, match="no attribute 'mlir_tosa'"):
    _ = jax_compat.mlir_tosa


def test_a_bool_state_is_part_of_the_jit_key():
  flag = jax_compat.bool_state(
    name="dml_jax_test_compat_flag",
    default=False,
    help="tests/test_jax_compat.py's flag",
    include_in_jit_key=True,
    include_in_trace_context=True,
  )
  seen = []

  @jax.jit
  def f(x):
    seen.append(flag.value)
    return x + 1

  f(jnp.int32(1))
  with flag(True):
    f(jnp.int32(1))
  f(jnp.int32(1))  # the first trace again, from the cache
  assert seen == [False, True]


@pytest.mark.subprocess
def test_backends_are_initialized_by_a_computation_not_by_an_import():
  code = """
    import jax, jax.numpy as jnp
    from dml_jax._src import jax_compat
    before = jax_compat.backends_initialized()
    jnp.zeros(1).block_until_ready()
    print(before, jax_compat.backends_initialized())
  """
  result = subprocess.run(
    [sys.executable, "-c", textwrap.dedent(code)],
    cwd=ROOT,
    env=default_mode_env(PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu"),
    capture_output=True,
    text=True,
    timeout=120,
  )
  assert result.returncode == 0, result.stderr
  assert result.stdout.split() == ["False", "True"]


def test_the_supported_jax_versions_have_both_pallas_backends():
  # jax 0.10 to 0.12 ship Pallas Triton (deprecated from 0.11) and Mosaic GPU; a release that
  # drops one needs jax_compat's comment, and pyproject.toml's range, updated.
  assert jax_compat.has_pallas_triton() and jax_compat.has_pallas_mosaic_gpu()
  probe = availability.probe()
  assert (probe.pallas_triton, probe.mosaic_gpu) == (True, True)


def test_ci_runs_every_jax_range_test_at_the_newest_jax():
  ci = (ROOT / ".ci" / "run").read_text().splitlines()
  (command,) = [line for line in ci if "pytest -m jax_range" in line]
  named = {ROOT / word for word in command.split() if word.startswith("tests/")}
  marked = {
    path
    for path in (ROOT / "tests").rglob("test_*.py")
    if re.search(r"pytest\.mark\.jax_range\b", path.read_text())
  }
  assert named == marked
