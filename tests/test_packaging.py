"""What `pip install -e .` and `pip install .` put on a user's machine.

The editable install must be a plain path entry (a .pth line naming the checkout), which
mypy and pyright follow, not an import hook, which they cannot: the README's install line
then leaves the package visible to a user's type checker.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.mode_independent, pytest.mark.subprocess]


def _setuptools_version() -> tuple[int, ...]:
  try:
    import setuptools
  except ImportError:
    return (0,)
  return tuple(int(p) for p in setuptools.__version__.split(".")[:1] if p.isdigit())


def _build(hook: str, out: pathlib.Path) -> zipfile.ZipFile:
  """Runs setuptools' PEP 517 `hook` (build_wheel, build_editable) on the checkout."""
  code = f"import sys; from setuptools import build_meta; print(build_meta.{hook}(sys.argv[1]))"
  done = subprocess.run(
    [sys.executable, "-c", code, str(out)],
    cwd=ROOT,
    capture_output=True,
    text=True,
    timeout=120,
  )
  assert done.returncode == 0, done.stderr[-2000:]
  return zipfile.ZipFile(out / done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(
  _setuptools_version() < (77,), reason="pyproject.toml needs setuptools >= 77 to build"
)
def test_the_editable_install_is_a_path_entry_type_checkers_follow(tmp_path):
  wheel = _build("build_editable", tmp_path)
  names = wheel.namelist()
  assert not [n for n in names if n.endswith("_finder.py")], names
  (pth,) = [n for n in names if n.endswith(".pth")]
  lines = wheel.read(pth).decode().split()
  assert [pathlib.Path(line).resolve() for line in lines] == [ROOT]


@pytest.mark.skipif(
  _setuptools_version() < (77,), reason="pyproject.toml needs setuptools >= 77 to build"
)
def test_the_wheel_holds_the_typed_package_and_its_example_models(tmp_path):
  names = _build("build_wheel", tmp_path).namelist()
  assert {n.split("/")[0].split("-")[0] for n in names} == {"dml_jax"}, names
  assert "dml_jax/py.typed" in names
  examples = sorted((ROOT / "dml_jax" / "examples").iterdir())
  assert examples and {f"dml_jax/examples/{p.name}" for p in examples} <= set(names)
