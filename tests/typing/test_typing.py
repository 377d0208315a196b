"""The typed constructors agree with the fields, and the user script type-checked by CI runs."""

import ast
import dataclasses
import inspect
import pathlib
import runpy
import textwrap

import pytest

import dml_jax as dml
from dml_jax._src import registry

HERE = pathlib.Path(__file__).resolve().parent


def _typed_init(cls: type) -> ast.FunctionDef:
  """The `__init__` a class declares under `if TYPE_CHECKING:` (what type checkers see)."""
  tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
  for node in ast.walk(tree):
    if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
      for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
          return stmt
  raise AssertionError(f"{cls.__name__} declares no __init__ under TYPE_CHECKING")


@pytest.mark.parametrize(
  "cls", [dml.TensorDesc, *registry.operators().values()], ids=lambda cls: cls.__name__
)
def test_the_typed_constructor_takes_the_dataclass_fields(cls: type) -> None:
  init = _typed_init(cls)
  names = [arg.arg for arg in init.args.args[1:]]
  fields = [f for f in dataclasses.fields(cls) if f.init]
  assert names == [f.name for f in fields], "the typed __init__ must list the fields in order"
  optional = names[len(names) - len(init.args.defaults) :]
  with_default = [f.name for f in fields if f.default is not dataclasses.MISSING]
  assert optional == with_default, "the typed __init__ must give defaults where the fields do"
  assert not init.args.kwonlyargs and init.args.vararg is None and init.args.kwarg is None


def test_the_user_script_runs() -> None:
  runpy.run_path(str(HERE / "user_script.py"), run_name="__main__")
