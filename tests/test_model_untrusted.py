"""Hostile model files: paths that leave their folder, files that are not files, sizes
that do not fit, deep nesting; and the opt-in that restores DxDispatch's behaviour.

Every test loads or runs a small model and checks that the runner refuses what it must
(with an error naming the resource or command, the size and the limit) and leaves the
file system as it was.
"""

from __future__ import annotations

import io
import json
import os
import pathlib

import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src.model import cli, jsonc, npy

F32 = "FLOAT32"


def _model(resources, commands=()):
  return {"resources": resources, "dispatchables": {}, "commands": list(commands)}


def _floats(*values):
  return {"initialValuesDataType": F32, "initialValues": list(values)}


def _from_file(path, data_type=F32):
  return {"initialValuesDataType": data_type, "initialValues": {"sourcePath": str(path)}}


def _write(name, target):
  return {"type": "writeFile", "resource": name, "targetPath": str(target)}


def _run_cli(*args):
  out, err = io.BytesIO(), io.StringIO()
  status = cli.main([str(a) for a in args], stdout=out, stderr=err)
  return status, out.getvalue().decode("latin-1"), err.getvalue()


def _save(folder: pathlib.Path, document) -> pathlib.Path:
  path = folder / "model.json"
  path.write_text(json.dumps(document))
  return path


def _refused(document, *messages, **load):
  with pytest.raises(dml.DmlModelError) as caught:
    dml.load_model(document, **load)
  for message in messages:
    assert message in str(caught.value)
  return str(caught.value)


@pytest.fixture
def folders(tmp_path):
  """(the model's folder, the output folder, a folder outside both holding a secret)."""
  names = ("model", "out", "outside")
  made = [tmp_path / n for n in names]
  for folder in made:
    folder.mkdir()
  (made[2] / "secret.dat").write_bytes(np.float32([7, 8]).tobytes())
  return made


# -- writeFile's targetPath ---------------------------------------------------------------


@pytest.mark.parametrize("target", ["../escaped.bin", "sub/../../escaped.bin", "/tmp/abs.bin"])
def test_a_target_outside_the_output_folder_is_refused_at_load(folders, target):
  model, out, _ = folders
  document = _model({"r": _floats(1)}, [_write("r", target)])
  _refused(document, "command 0 (writeFile 'r'): targetPath", "--trust-paths")
  status, stdout, err = _run_cli(_save(model, document), "--output-path", out)
  assert status == 1 and "Failed to parse the model" in err and stdout == ""
  assert not (out.parent / "escaped.bin").exists()


def test_a_symbolic_link_out_of_the_output_folder_is_refused_at_write(folders):
  model, out, outside = folders
  (out / "linked").symlink_to(outside)  # a folder on the way
  (out / "planted.dat").symlink_to(outside / "secret.dat")  # the file itself
  before = (outside / "secret.dat").read_bytes()
  for target in ("linked/x.bin", "planted.dat"):
    document = _model({"r": _floats(1)}, [_write("r", target)])
    status, stdout, err = _run_cli(_save(model, document), "--output-path", out)
    assert status == 1, err
    assert f"Failed to write resource to file '{target}' (writeFile 'r')" in err
    assert "outside" in err and "written to" not in stdout
  assert sorted(p.name for p in outside.iterdir()) == ["secret.dat"]
  assert (outside / "secret.dat").read_bytes() == before


def test_folders_are_created_inside_the_output_folder_and_links_inside_are_followed(folders):
  model, out, _ = folders
  (out / "real").mkdir()
  (out / "alias").symlink_to(out / "real")
  document = _model({"r": _floats(1, 2)}, [_write("r", "a/b/r.bin"), _write("r", "alias/r.bin")])
  status, stdout, err = _run_cli(_save(model, document), "--output-path", out)
  assert status == 0, err
  assert (out / "a" / "b" / "r.bin").read_bytes() == np.float32([1, 2]).tobytes()
  assert (out / "real" / "r.bin").read_bytes() == np.float32([1, 2]).tobytes()
  assert f"written to '{out}/a/b/r.bin'" in stdout


def test_a_failed_write_leaves_no_file_and_exits_non_zero(folders):
  model, out, _ = folders
  (out / "taken").mkdir()  # a folder where the file would go: the rename fails
  document = _model({"r": _floats(1)}, [_write("r", "taken"), _write("r", "kept.bin")])
  status, stdout, err = _run_cli(_save(model, document), "--output-path", out)
  assert status == 1 and "(writeFile 'r')" in err
  # No temporary file left, and the failed command stopped the run: nothing after it ran.
  assert sorted(p.name for p in out.iterdir()) == ["taken"]
  assert "no later command ran" in err
  assert list((out / "taken").iterdir()) == []


def test_trust_paths_restores_dxdispatchs_behaviour(folders):
  model, out, outside = folders
  document = _model(
    {"r": _from_file(outside / "secret.dat"), "s": _from_file("../outside/secret.dat")},
    [_write("r", "../escaped.bin"), _write("s", outside / "absolute.bin")],
  )
  _refused(document, "resource 'r'", "resource 's'", "targetPath", input_path=model)
  path = _save(model, document)
  status, stdout, err = _run_cli(path, "--output-path", out, "--trust-paths")
  assert status == 0, err
  assert (out.parent / "escaped.bin").read_bytes() == np.float32([7, 8]).tobytes()
  assert (outside / "absolute.bin").read_bytes() == np.float32([7, 8]).tobytes()
  loaded = dml.load_model(path, trust_paths=True)
  assert loaded.run()["s"].tolist() == [7, 8]


def test_compare_reads_only_inside_its_folder(folders):
  model, out, outside = folders
  (out / "r.bin").symlink_to(outside / "secret.dat")
  document = _model({"r": _floats(7, 8)}, [_write("r", "r.bin")])
  status, stdout, err = _run_cli(_save(model, document), "--compare", out)
  assert status == 1 and "Failed to compare resource to file 'r.bin'" in err
  assert "same:" not in stdout


# -- sourcePath ---------------------------------------------------------------------------


def test_a_source_outside_the_input_folder_is_refused(folders):
  model, _, outside = folders
  (model / "inside.dat").symlink_to(outside / "secret.dat")
  (model / "linked").symlink_to(outside)
  for source in (
    "../outside/secret.dat",
    outside / "secret.dat",
    "inside.dat",
    "linked/secret.dat",
  ):
    document = _model({"r": _from_file(source)})
    _refused(document, "resource 'r': initialValues.sourcePath:", "--trust-paths", input_path=model)
  (model / "alias.dat").symlink_to(model / "linked" / ".." / "model" / "inside.dat")
  (model / "data.dat").write_bytes(np.float32([1, 2]).tobytes())
  (model / "good.dat").symlink_to(model / "data.dat")  # a link that stays inside is fine
  loaded = dml.load_model(_model({"r": _from_file("good.dat")}), input_path=model)
  assert loaded.run()["r"].tolist() == [1, 2]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_or_a_device_is_refused_without_reading(folders):
  model, _, _ = folders
  os.mkfifo(model / "pipe.dat")  # opening it to read would wait for a writer
  _refused(_model({"r": _from_file("pipe.dat")}), "is not a regular file", input_path=model)
  if os.path.exists("/dev/zero"):  # read to the end, it never ends
    document = _model({"r": _from_file("/dev/zero")})
    _refused(document, "'/dev/zero' is not a regular file", input_path=model, trust_paths=True)


# -- sizes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
  "entry, asked",
  [
    ({"initialValuesDataType": "FLOAT64", "initialValues": {"value": 1, "valueCount": 2**32 - 1}},
     "valueCount 4294967295 of FLOAT64"),
    ({"initialValuesDataType": F32, "initialValues": {"valueStart": 0, "valueDelta": 1,
      "valueCount": 2**31}}, "valueCount 2147483648 of FLOAT32"),
    ({**_floats(1), "sizeInBytes": 2**40}, "sizeInBytes 1099511627776"),
  ],
)  # fmt: skip
def test_a_buffer_over_the_budget_is_refused_before_it_is_built(entry, asked):
  message = _refused(_model({"big": entry}), "resource 'big':", asked)
  assert "limit of 4294967296 bytes (4 GiB)" in message and "--max-bytes N" in message


def test_the_budget_covers_the_whole_model_and_can_be_raised(folders):
  model, _, _ = folders
  document = _model({f"r{i}": {**_floats(1), "sizeInBytes": 256} for i in range(4)})
  _refused(document, "resource 'r3'", "limit of 5119 bytes", max_bytes=4 * 256 * 5 - 1)
  assert dml.load_model(document, max_bytes=4 * 256 * 5).budget.used == 5120
  path = _save(model, document)
  status, _, err = _run_cli(path, "--max-bytes", "6K")  # the model file counts too
  assert status == 0, err
  status, _, err = _run_cli(path, "--max-bytes", "5000")
  assert status == 1 and "resource 'r3'" in err
  with pytest.raises(SystemExit) as exited:  # argparse: a refused command line
    _run_cli(path, "--max-bytes", "lots")
  assert exited.value.code == 2
  (model / "big.dat").write_bytes(bytes(2000))
  _refused(_model({"r": _from_file("big.dat")}), "2000 bytes", input_path=model, max_bytes=1999)


def _npy_with_header(header: str, data: bytes = b"", version: int = 1) -> bytes:
  text = header.encode("latin-1")
  size = len(text).to_bytes(2 if version == 1 else 4, "little")
  return b"\x93NUMPY" + bytes([version, 0]) + size + text + data


def test_a_npy_that_claims_more_than_it_holds_is_refused(folders):
  model, _, _ = folders
  claim = _npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }")
  (model / "claims.npy").write_bytes(claim)
  assert len(claim) < 100
  _refused(_model({"r": _from_file("claims.npy")}), "claims 4398046511104 bytes", input_path=model)
  with pytest.raises(npy.NpyError, match="not a tuple of sizes"):
    npy.read_npy(_npy_with_header("{'descr': '<f4', 'shape': (-1,), }"))


def test_a_npy_header_over_ten_thousand_bytes_is_refused_unread():
  header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }" + " " * 9_000_000
  with pytest.raises(npy.NpyError, match="over the 10000 bytes numpy.load reads"):
    npy.read_npy(_npy_with_header(header, b"\0" * 4, version=2))
  ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }" + " " * 9_000
  assert npy.read_npy(_npy_with_header(ok, b"\0" * 4))[1] == b"\0" * 4


# -- the JSON ---------------------------------------------------------------------------------


def test_deep_nesting_is_a_model_error_not_a_recursion_error():
  deep = '{"resources": ' + "[" * 100_000 + "]" * 100_000 + "}"
  message = _refused(deep, "nest deeper than 128 levels")
  assert "char offset:141" in message  # the 128th [ is the 129th level
  shallow = "[" * jsonc.MAX_DEPTH + "]" * jsonc.MAX_DEPTH
  assert jsonc.parse(shallow) is not None
  assert jsonc.parse('["[[[[' + "[" * 200 + '"]') == ["[[[[" + "[" * 200]  # in a string


def test_the_parser_reads_comments_and_long_integers_as_before():
  text = '{"a": [18446744073709551615, 18446744073709551616, -9223372036854775809,],'
  text += ' /* } */ "b": "\\"//", // ]\n "a": 1}'
  value = jsonc.parse(text)
  assert value["a"] == [2**64 - 1, float(2**64), -float(2**63 + 1)]
  assert isinstance(value["a"][0], int) and isinstance(value["a"][1], float)
  assert value["b"] == '"//' and [k for k, _ in value.pairs] == ["a", "b", "a"]


def test_a_misspelled_required_field_is_named_beside_the_missing_one():
  tensor = {"DataType": F32, "Sizes": [2, 2]}
  desc = {"InputTensor": tensor, "IndicesTensor": {**tensor, "DataType": "UINT32"},
          "OutputTensor": tensor, "Axiss": 0, "IndexDimensions": 2}  # fmt: skip
  document = {"resources": {}, "dispatchables": {"g": {"type": "GATHER", "desc": desc}}}
  _refused(
    {**document, "commands": []},
    "dispatchable 'g' (GATHER): Field 'Axis' is required. The desc has 'Axiss', which is not"
    " a field: did you mean 'Axis'?",
  )


def test_a_long_float16_sequence_is_built_from_its_cycle():
  count = 2**20  # one Python step per element took seconds; the halves repeat from 2048
  entry = {"initialValuesDataType": "FLOAT16",
           "initialValues": {"valueStart": 0, "valueDelta": 1, "valueCount": count}}  # fmt: skip
  values = dml.load_model(_model({"r": entry})).resources["r"].initial
  halves = np.frombuffer(values, np.float16)
  assert len(halves) == count and halves[:2049].tolist() == list(range(2049))
  assert (halves[2049:] == 2048).all()  # 2048 + 1 truncates back to 2048
