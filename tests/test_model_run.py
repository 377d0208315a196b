"""Model runs that finish: long command lists in segments, output as each segment runs,
failures named with what came before them kept, and bindings checked before anything runs.

References are NumPy loops written here: a row permutation applied n times, and
``x * 0.5 + 1`` in float32 with two roundings (NumPy rounds the product, then the sum).
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src.model import cli, program

ROOT = pathlib.Path(__file__).resolve().parent.parent
F32 = "FLOAT32"
ROWS, COLS = 8, 4
PERMUTATION = [3, 0, 6, 1, 7, 2, 5, 4]


def _tensor(sizes, data_type=F32):
  return {"DataType": data_type, "Sizes": list(sizes)}


def _values(count, start=0.0, delta=1.0):
  return {"initialValuesDataType": F32,
          "initialValues": {"valueStart": start, "valueDelta": delta, "valueCount": count}}  # fmt: skip


def _dispatch(name, **bindings):
  return {"type": "dispatch", "dispatchable": name, "bindings": bindings}


def _ping_pong(name, count, **extra):
  """`count` dispatches of `name` from a to b, then b to a, and so on."""
  pairs = [("a", "b"), ("b", "a")]
  return [
    _dispatch(name, InputTensor=pairs[i % 2][0], OutputTensor=pairs[i % 2][1], **extra)
    for i in range(count)
  ]


def _gather_chain(count):
  return {
    "resources": {"a": _values(ROWS * COLS), "b": _values(ROWS * COLS, 0, 0),
                  "rows": {"initialValuesDataType": "UINT32", "initialValues": PERMUTATION}},
    "dispatchables": {"g": {"type": "GATHER", "desc": {
      "InputTensor": _tensor([ROWS, COLS]), "IndicesTensor": _tensor([1, ROWS], "UINT32"),
      "OutputTensor": _tensor([ROWS, COLS]), "Axis": 0, "IndexDimensions": 1}}},
    "commands": _ping_pong("g", count, IndicesTensor="rows"),
  }  # fmt: skip


def _scale_bias_chain(count, size=16):
  return {
    "resources": {"a": _values(size, -3.25, 0.75), "b": _values(size, 0, 0)},
    "dispatchables": {"half_plus_one": {"type": "ELEMENT_WISE_IDENTITY", "desc": {
      "InputTensor": _tensor([size]), "OutputTensor": _tensor([size]),
      "ScaleBias": {"Scale": 0.5, "Bias": 1}}}},
    "commands": _ping_pong("half_plus_one", count),
  }  # fmt: skip


def _half_plus_one(x, times):
  x = np.asarray(x, np.float32)
  for _ in range(times):
    x = x * np.float32(0.5) + np.float32(1)  # two roundings: NumPy never fuses
  return x


def _run_cli(args):
  out, err = io.BytesIO(), io.StringIO()
  status = cli.main([str(a) for a in args], stdout=out, stderr=err)
  return status, out.getvalue().decode("latin-1"), err.getvalue()


def test_a_thousand_chained_gathers_run_in_segments_compiled_twice():
  model = dml.load_model(_gather_chain(1000))
  assert len(model.segment_bounds()) == -(-1000 // program.MAX_COMMANDS_PER_SEGMENT)
  assert program.MAX_COMMANDS_PER_SEGMENT <= 64  # far below the ~300 that crash XLA:CPU
  final = model.run()
  x = np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS)
  for _ in range(1000):
    x = x[PERMUTATION]
  np.testing.assert_array_equal(final["a"].reshape(ROWS, COLS), x)  # an even count ends in a
  # 31 full segments of the same 32 commands share one program; the last 8 are another.
  assert len(model._programs) == 2


def test_a_thousand_chained_scale_bias_dispatches_through_the_cli(tmp_path):
  document = _scale_bias_chain(1000)
  document["commands"] += [{"type": "print", "resource": "a"}]
  path = tmp_path / "chain.json"
  path.write_text(json.dumps(document))
  status, out, err = _run_cli([path])
  assert status == 0, err
  want = _half_plus_one(-3.25 + 0.75 * np.arange(16), 1000)
  got = np.array(out.removeprefix("Resource 'a': ").split(", "), np.float32)
  np.testing.assert_array_equal(got, want)
  assert "Ran 1001 commands (1 dispatchable, FL 6_4) in 32 segments" in err


def test_thirty_chained_scale_bias_dispatches_compile_as_one_program_quickly():
  # A NaN guard of `select(p == p, p, nan)` made this compile in time doubling with each
  # dispatch (24 dispatches: about 13 s, 30: many minutes); it must stay a few seconds. In a
  # subprocess, so that a regression fails at the timeout instead of holding the suite.
  script = textwrap.dedent(f"""
    import time, numpy as np, dml_jax as dml
    model = dml.load_model({_scale_bias_chain(30)!r})
    fn, initial = model.as_function(), model.initial_buffers()
    start = time.perf_counter()
    compiled = fn.lower(initial).compile()
    print(time.perf_counter() - start)
    print(model.typed(compiled(initial))["a"].tolist())
  """)
  env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
  result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
  assert result.returncode == 0, result.stderr
  seconds, values = result.stdout.splitlines()
  assert float(seconds) < 20
  want = _half_plus_one(-3.25 + 0.75 * np.arange(16), 30)
  np.testing.assert_array_equal(np.array(json.loads(values), np.float32), want)


def _prints_between(count, failing_at):
  """`count` commands: a dispatch and a print of b, alternately, with a writeFile of b at
  `failing_at` (which the tests make fail)."""
  document = _scale_bias_chain(count)
  commands = []
  for i in range(count):
    if i == failing_at:
      commands.append({"type": "writeFile", "resource": "b", "targetPath": "b.bin"})
    elif i % 2:
      commands.append({"type": "print", "resource": "b"})
    else:
      commands.append(_dispatch("half_plus_one", InputTensor="a", OutputTensor="b"))
  document["commands"] = commands
  return document


def test_a_failed_write_file_stops_the_run_after_the_output_before_it(tmp_path, monkeypatch):
  count, failing_at = 80, 45  # in the second of three segments
  path = tmp_path / "m.json"
  path.write_text(json.dumps(_prints_between(count, failing_at)))
  written = []

  def fails(model, resource, command, data, args, out, err):
    written.append(command.target_path)
    print(f"Failed to write resource to file '{command.target_path}': disk full", file=err)
    return 1

  monkeypatch.setattr(cli, "_write_file", fails)
  status, out, err = _run_cli([path, "--output-path", tmp_path])
  assert status == 1 and written == ["b.bin"]
  prints = [i for i in range(count) if i % 2 and i < failing_at]
  once = _half_plus_one(-3.25 + 0.75 * np.arange(16), 1)
  assert out == f"Resource 'b': {', '.join(f'{v:g}' for v in once)}\n" * len(prints)
  lines = err.splitlines()
  ran = next(i for i, line in enumerate(lines) if line.startswith("Ran "))
  assert lines[ran].startswith(f"Ran {failing_at} of {count} commands (1 dispatchable")
  assert lines[ran + 1] == (
    f"Failed to execute the model: command {failing_at} (writeFile 'b'): the file was not"
    " written, so no later command ran"
  )


def test_segments_are_yielded_as_they_run_and_a_refused_dispatch_keeps_what_ran(monkeypatch):
  count, refused_at = 80, 40
  document = _prints_between(count, failing_at=-1)
  document["dispatchables"]["refused"] = document["dispatchables"]["half_plus_one"]
  document["commands"][refused_at]["dispatchable"] = "refused"
  model = dml.load_model(document)
  apply = program.Model._apply

  def refusing(self, op, dispatchable, command, buffers):
    if command.dispatchable == "refused":  # as a binding refused only when it runs would be
      raise dml.DmlBindingError("InputTensor: refused while running")
    apply(self, op, dispatchable, command, buffers)

  monkeypatch.setattr(program.Model, "_apply", refusing)
  segments = model.execute_segments()
  first = next(segments)  # lazy: the first segment ran, nothing after it yet
  assert (first.start, first.stop, first.error) == (0, 32, None)
  assert [o.index for o in first.outputs] == list(range(1, 32, 2))
  second = next(segments)
  assert (second.start, second.stop) == (32, refused_at)
  assert second.error.index == refused_at
  assert str(second.error) == (
    f"command {refused_at} (dispatch 'refused'): InputTensor: refused while running"
  )
  assert [o.index for o in second.outputs] == list(range(33, refused_at, 2))
  assert next(segments, None) is None
  result = model.execute()
  assert result.error.index == refused_at and len(result.outputs) == refused_at // 2
  once = _half_plus_one(-3.25 + 0.75 * np.arange(16), 1)
  np.testing.assert_array_equal(result.typed()["b"], once)


def test_the_cli_names_a_refused_dispatch_after_the_output_before_it(tmp_path, monkeypatch):
  document = _prints_between(6, failing_at=-1)
  document["dispatchables"]["refused"] = document["dispatchables"]["half_plus_one"]
  document["commands"][4]["dispatchable"] = "refused"
  path = tmp_path / "m.json"
  path.write_text(json.dumps(document))
  apply = program.Model._apply

  def refusing(self, op, dispatchable, command, buffers):
    if command.dispatchable == "refused":
      raise dml.DmlBindingError("InputTensor: refused while running")
    apply(self, op, dispatchable, command, buffers)

  monkeypatch.setattr(program.Model, "_apply", refusing)
  status, out, err = _run_cli([path])
  assert status == 1 and out.count("Resource 'b'") == 2  # the prints at 1 and 3
  assert err.splitlines()[-2].startswith("Ran 4 of 6 commands")
  assert err.splitlines()[-1] == (
    "Failed to execute the model: command 4 (dispatch 'refused'): InputTensor: refused while"
    " running"
  )


def test_every_binding_problem_is_found_at_load_naming_the_resource(tmp_path):
  document = _scale_bias_chain(3)
  document["resources"]["small"] = _values(8)  # 32 bytes: fewer than the 64 a tensor needs
  document["commands"] = [
    {"type": "print", "resource": "a"},
    _dispatch("half_plus_one", InputTensor="a", OutputTensor="b"),
    _dispatch("half_plus_one", InputTensor="a"),  # no OutputTensor
    _dispatch("half_plus_one", InputTensor="small", OutputTensor="b"),
    _dispatch("half_plus_one", InputTensor="a", OutputTensor={"name": "b", "elementOffset": 8}),
  ]
  with pytest.raises(dml.DmlModelError) as caught:
    dml.load_model(document)
  problems = caught.value.problems
  assert len(problems) == 3
  assert problems[0].startswith(
    "command 2 (dispatch 'half_plus_one'): Bind point 'OutputTensor' is not bound"
  )
  assert problems[1] == (
    "command 3 (dispatch 'half_plus_one'): resource 'small': InputTensor bound at offset 0 of a"
    " buffer of 32 bytes: the bound range holds 32 bytes (buffer size minus offset), fewer than"
    " InputTensor.TotalTensorSizeInBytes = 64. Use a larger buffer, a smaller offset, or a"
    " tensor that needs fewer bytes"
  )
  assert problems[2].startswith(
    "command 4 (dispatch 'half_plus_one'): resource 'b': OutputTensor bound at offset 32"
  )
  path = tmp_path / "m.json"
  path.write_text(json.dumps(document))
  status, out, err = _run_cli([path])
  assert status == 1 and out == ""  # the print before the problems did not run either
  assert "Ran " not in err and "resource 'small'" in err


def test_segments_end_before_their_snapshots_outgrow_the_buffers(monkeypatch):
  # Each print keeps a snapshot of its buffer until its segment ends: past the floor, 8
  # prints of the only buffer make 8 segments (a snapshot each), never 8 held at once.
  monkeypatch.setattr(program, "MIN_SNAPSHOT_BYTES", 1)
  model = dml.load_model(
    {
      "resources": {"x": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2]}},
      "dispatchables": {},
      "commands": [{"type": "print", "resource": "x"}] * 8,
    }
  )
  assert model.segment_bounds() == [(i, i + 1) for i in range(8)]
  assert [len(s.outputs) for s in model.execute_segments()] == [1] * 8
