"""The README starts with its three commands, and CI runs the README's test command; the model
its opening shows is an example file, and prints what the README says it prints."""

import json
import pathlib
import re
import subprocess
import sys

import pytest

from tests.helpers import default_mode_env

# The README's text, the registry and a run of the example in an interpreter of its own, in
# JAX's default mode (as a reader runs it): no test here depends on the process's x64 mode.
pytestmark = pytest.mark.mode_independent

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _readme_commands():
  readme = (ROOT / "README.md").read_text()
  block = re.search(r"```sh\n(.*?)```", readme, re.S)
  assert block and readme.index("```sh") < readme.index("\n## "), "commands must come first"
  return [line.split("#")[0].strip() for line in block[1].strip().splitlines()]


def test_readme_starts_with_the_install_the_main_job_and_the_tests():
  install, main_job, tests = _readme_commands()
  assert install == "python -m pip install -e '.[test]'"
  assert main_job == "python -m dml_jax"
  # The x64 pass runs only the tests that can depend on the mode (tests/conftest.py).
  both_modes = "python -m pytest -n 2 && JAX_ENABLE_X64=1 python -m pytest -n 2"
  assert f'{both_modes} -m "not mode_independent"' in tests


def test_ci_runs_the_readme_test_command_after_its_install():
  _, _, tests = _readme_commands()
  ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
  assert tests in ci
  install = ci.index("python -m pip install -e '.[test,docs]'")  # the README's, and the docs'
  assert install < ci.index(tests)


def test_the_operator_table_lists_every_registered_operator():
  from dml_jax._src import registry

  readme = (ROOT / "README.md").read_text()
  listed = re.findall(r"^\| `([A-Z0-9_]+)` \| (\d_\d) \| `(\w+)` \| `dml\.(\w+)\(", readme, re.M)
  table = {op: (level, desc, function) for op, level, desc, function in listed}
  assert set(table) == set(registry.operators())
  for op, cls in registry.operators().items():
    assert table[op] == (str(cls.SUPPORT.introduced), cls.__name__, cls.FUNCTION), op


def _opening():
  """The README before its first section: the model's JSON, and the command with its output."""
  readme = (ROOT / "README.md").read_text()
  head = readme[: readme.index("\n## ")]
  model, shown = (
    re.search(r"```json\n(.*?)```", head, re.S),
    re.search(r"```text\n(.*?)```", head, re.S),
  )
  assert model and shown, "the opening shows a model file and its run"
  assert head.index("```python") < model.start() < shown.start()  # after the Python example
  return model[1], shown[1]


def test_the_opening_model_is_an_example_file():
  from dml_jax._src.model import jsonc

  model, shown = _opening()
  command = shown.splitlines()[0]
  assert re.fullmatch(r"\$ python -m dml_jax run --example \w+", command), command
  path = ROOT / "dml_jax" / "examples" / f"{command.split()[-1]}.json"
  assert jsonc.parse(path.read_text()) == json.loads(model)  # the file, less its comments
  assert len(model.splitlines()) <= 16  # short


@pytest.mark.subprocess
def test_the_opening_model_prints_what_the_readme_shows():
  _, shown = _opening()
  command, expected = shown.split("\n", 1)
  arguments = command.split()[1:]  # python -m dml_jax run --example NAME
  env = default_mode_env(PYTHONPATH=str(ROOT))
  result = subprocess.run(
    [sys.executable, *arguments[1:]], cwd=ROOT, env=env, capture_output=True, timeout=120
  )
  assert result.returncode == 0, result.stderr.decode()
  assert result.stdout.decode() == expected  # stdout holds the Resource lines only
  assert expected == (ROOT / "dml_jax" / "examples" / f"{arguments[-1]}.expected").read_text()
  assert "Running on" in result.stderr.decode()
