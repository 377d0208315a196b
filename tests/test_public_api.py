"""`dml_jax.__all__` lists every name `dml_jax/__init__.py` re-exports, and `help(dml_jax)`
shows them.

The docs' API reference (docs/api.md) is built from `__all__`, so a name missing there is
missing from the docs too. Adding an operator: put its function(s), descriptor class(es) and
any enum of its fields in `__all__` beside their re-export lines.
"""

import ast
import pathlib
import pydoc
import re

import pytest

import dml_jax

# Names and help text, no JAX arrays: the x64 pass leaves the module out.
pytestmark = pytest.mark.mode_independent

INIT = pathlib.Path(dml_jax.__file__)


def _re_exported() -> list[str]:
  """The public names `from ... import X as X` binds in dml_jax/__init__.py, in order."""
  tree = ast.parse(INIT.read_text())
  names = []
  for node in tree.body:
    if isinstance(node, ast.ImportFrom):
      names += [alias.asname or alias.name for alias in node.names]
  return [name for name in names if not name.startswith("_")]


def test_all_lists_every_re_exported_name():
  exported = _re_exported()
  missing = [name for name in exported if name not in dml_jax.__all__]
  assert not missing, (
    f"dml_jax/__init__.py re-exports {missing} but dml_jax.__all__ does not list them: add"
    " each to __all__ (an operator's function and descriptor go in its first group), so that"
    " help(dml_jax) and the docs' API reference show them"
  )
  extra = [name for name in dml_jax.__all__ if name not in exported]
  assert not extra, f"dml_jax.__all__ lists {extra}, which dml_jax/__init__.py does not re-export"
  duplicates = sorted({name for name in dml_jax.__all__ if dml_jax.__all__.count(name) > 1})
  assert not duplicates, f"dml_jax.__all__ lists {duplicates} more than once"


def test_all_names_resolve():
  for name in dml_jax.__all__:
    assert hasattr(dml_jax, name), name


def test_every_registered_operator_is_public():
  from dml_jax._src import registry

  for op, cls in registry.operators().items():
    assert getattr(dml_jax, cls.__name__, None) is cls and cls.__name__ in dml_jax.__all__, (
      f"DML_OPERATOR_{op}: re-export {cls.__name__} in dml_jax/__init__.py and list it in __all__"
    )
    assert cls.FUNCTION in dml_jax.__all__, (
      f"DML_OPERATOR_{op}: re-export dml_jax.{cls.FUNCTION} and list it in __all__"
    )


def test_help_lists_every_public_name():
  text = pydoc.render_doc(dml_jax, renderer=pydoc.plaintext)
  shown = set(re.findall(r"^    (?:class )?(\w+)\b", text, re.M))  # classes, functions, modules
  missing = [name for name in dml_jax.__all__ if name not in shown]
  assert not missing, f"help(dml_jax) does not list {missing}"
