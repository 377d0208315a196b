"""The README starts with the two commands, and CI runs the README's test command."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _readme_commands():
  readme = (ROOT / "README.md").read_text()
  block = re.search(r"```sh\n(.*?)```", readme, re.S)
  assert block and readme.index("```sh") < readme.index("\n## "), "commands must come first"
  return [line.split("#")[0].strip() for line in block[1].strip().splitlines()]


def test_readme_starts_with_the_main_job_and_the_tests():
  main_job, tests = _readme_commands()
  assert main_job.endswith("python -m dml_jax")
  assert "python -m pytest && JAX_ENABLE_X64=1 python -m pytest" in tests


def test_ci_runs_the_readme_test_command():
  _, tests = _readme_commands()
  ci = (ROOT / ".ci" / "run").read_text().splitlines()
  assert tests in [line.strip() for line in ci]


def test_the_operator_table_lists_every_registered_operator():
  from dml_jax._src import registry

  readme = (ROOT / "README.md").read_text()
  listed = re.findall(r"^\| `([A-Z0-9_]+)` \| (\d_\d) \| `(\w+)` \| `dml\.(\w+)\(", readme, re.M)
  table = {op: (level, desc, function) for op, level, desc, function in listed}
  assert set(table) == set(registry.operators())
  for op, cls in registry.operators().items():
    assert table[op] == (str(cls.SUPPORT.introduced), cls.__name__, cls.FUNCTION), op
