"""DxDispatch model files: the JSON dialect, buffers, conversions, dispatchables, commands,
printing, writeFile, the CLI and the Python API.

The references here are written from the format's rules, independently of the module:
C's own snprintf (through ctypes) for ``%g``, a half-precision truncation built from
NumPy's round-to-nearest conversion, and plain-Python loops for sequences. Microsoft's
five data-movement samples are rebuilt as equivalent models of our own, and must print
the lines DirectML's tool prints for them.
"""

from __future__ import annotations

import copy
import ctypes
import importlib.util
import io
import json
import pathlib
import struct

import jax
import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src.dtypes import DataType
from dml_jax._src.model import cli, jsonc, npy, scalars
from dml_jax._src.model.printing import format_float, print_text

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "dml_jax" / "examples"
F32 = "FLOAT32"


def _tensor(sizes, data_type=F32, **extra):
  return {"DataType": data_type, "Sizes": list(sizes), **extra}


def _model(resources, dispatchables, commands):
  return {"resources": resources, "dispatchables": dispatchables, "commands": commands}


def _run_cli(args, cwd=None, monkeypatch=None):
  out, err = io.BytesIO(), io.StringIO()
  if cwd is not None and monkeypatch is not None:
    monkeypatch.chdir(cwd)
  status = cli.main([str(a) for a in args], stdout=out, stderr=err)
  return status, out.getvalue().decode("latin-1"), err.getvalue()


# -- independent references -----------------------------------------------------------------

_libc = ctypes.CDLL(None)


def c_g(value: float) -> str:
  """C's printf("%g") (glibc), for finite values and infinities."""
  buffer = ctypes.create_string_buffer(64)
  _libc.snprintf(buffer, 64, b"%g", ctypes.c_double(value))
  return buffer.value.decode()


def half_truncating_reference(x: np.ndarray) -> np.ndarray:
  """float32 -> float16 bits, toward zero: NumPy's nearest-even result, stepped one ulp
  toward zero where it rounded away from zero; 65520 <= |x| < 65536 gives the largest half."""
  x = np.asarray(x, np.float32)
  with np.errstate(over="ignore", invalid="ignore"):
    nearest = x.astype(np.float16)
    bits = nearest.view(np.uint16).astype(np.int32)
    away = np.abs(nearest.astype(np.float32)) > np.abs(x)
  finite = np.isfinite(x)
  bits = np.where(finite & away, bits - 1, bits)
  big = finite & (np.abs(x) >= 65504) & (np.abs(x) < 65536)
  bits = np.where(big, (np.signbit(x) * 0x8000) | 0x7BFF, bits)
  bits = np.where(finite & (np.abs(x) >= 65536), (np.signbit(x) * 0x8000) | 0x7C00, bits)
  return bits.astype(np.uint16)


def test_percent_g_matches_c_printf():
  rng = np.random.default_rng(0)
  values = np.concatenate(
    [
      rng.standard_normal(2000).astype(np.float32) * 10.0 ** rng.integers(-12, 12, 2000),
      [0.0, -0.0, 1, 0.1, 1e-5, 1234567, 100000, 1e6, np.inf, -np.inf, 3.2, 65504],
    ]
  )
  for v in values.astype(np.float64):
    assert format_float(float(v)) == c_g(float(v)), v


def test_nan_is_written_as_the_windows_runtime_writes_it():
  assert format_float(float("nan")) == "nan"
  assert format_float(-float("nan")) == "-nan(ind)"


def test_half_truncation_matches_the_reference():
  rng = np.random.default_rng(1)
  bits = rng.integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32)
  values = bits.view(np.float32)
  keep = np.isfinite(values)
  got = np.array([scalars.f32_to_f16_bits_truncating(int(b)) for b in bits[keep]], np.uint16)
  np.testing.assert_array_equal(got, half_truncating_reference(values[keep]))


@pytest.mark.parametrize(
  "value, bits",
  [(1.2, 0x3CCC), (2051, 0x6801), (65519, 0x7BFF), (65520, 0x7BFF), (65536, 0x7C00),
   (5.96e-8, 0), (6e-8, 1), ("nan", 0x7E00), ("INF", 0x7C00), ("-inf", 0xFC00), (-1.2, 0xBCCC)],
)  # fmt: skip
def test_float16_values_are_truncated(value, bits):
  assert scalars.as_float16_bits(value) == bits


def test_sequences_accumulate_in_the_element_type():
  def f32_loop(start, delta, n):
    v, out = np.float32(start), []
    for _ in range(n):
      out.append(v)
      v = np.float32(v + np.float32(delta))
    return np.array(out, np.float32)

  np.testing.assert_array_equal(
    scalars.sequence(0.1, 0.1, 50, DataType.FLOAT32), f32_loop(0.1, 0.1, 50)
  )
  halves = scalars.sequence(0.1, 0.1, 5, DataType.FLOAT16).view(np.uint16)
  assert [f"{b:04X}" for b in halves] == ["2E66", "3266", "34CC", "3665", "37FE"]
  assert scalars.sequence(250, 3, 3, DataType.UINT8).tolist() == [250, 253, 0]  # wraps
  assert scalars.sequence(126, 1, 3, DataType.INT8).tolist() == [126, 127, -128]


@pytest.mark.parametrize(
  "value, data_type, message",
  [
    (1.0, "INT8", "Expected a signed integer."),
    ("1", "INT32", "Expected a signed integer."),
    (-1, "UINT8", "Expected an unsigned integer."),
    (128, "INT8", "narrowing_error: 128 is outside INT8's range [-128, 127]"),
    (65536, "UINT16", "narrowing_error"),
    ("infinity", "FLOAT32", "Expected 'NaN', 'Inf', or '-Inf'."),
    ("-nan", "FLOAT32", "Expected 'NaN', 'Inf', or '-Inf'."),
    (None, "FLOAT64", "Expected a number or 'NaN', 'Inf', or '-Inf'."),
    (True, "FLOAT32", "Expected a number or 'NaN', 'Inf', or '-Inf'."),
    (2**53 + 1, "FLOAT64", "is not exact as a double"),
  ],
)
def test_conversion_errors(value, data_type, message):
  with pytest.raises(
    scalars.ConversionError, match=message.replace("[", r"\[").replace("(", r"\(")
  ):
    scalars.element(value, DataType[data_type])


def test_float32_rounds_to_nearest_and_overflows_to_inf():
  assert scalars.element_bytes(3.2, DataType.FLOAT32) == struct.pack("<I", 0x404CCCCD)
  assert scalars.element_bytes(1e39, DataType.FLOAT32) == struct.pack("<f", float("inf"))
  assert scalars.element_bytes("NaN", DataType.FLOAT32) == struct.pack("<I", 0x7FC00000)


# -- the JSON dialect -------------------------------------------------------------------------


def test_json_dialect():
  text = '// c\n{"a": [1, 2,], /* b */ "b": {"x": 1,}, "a": 3, "s": "//no,]"} ignored'
  value = jsonc.parse(text)
  assert value == {"a": [1, 2], "b": {"x": 1}, "s": "//no,]"}  # the first "a" wins
  assert [k for k, _ in value.pairs] == ["a", "b", "a", "s"]
  assert jsonc.parse("[-0, -0.0, 1e2]") == [0, -0.0, 100.0]
  assert isinstance(jsonc.parse("[1]")[0], int) and isinstance(jsonc.parse("[1.0]")[0], float)
  for literal in ("NaN", "Infinity", "-Infinity"):
    with pytest.raises(jsonc.JsonError, match=f"{literal} is not a JSON value"):
      jsonc.parse(f'{{"a": {literal}}}')
  with pytest.raises(jsonc.JsonError, match=r"JSON parse error at char offset:5, line:1, column:6"):
    jsonc.parse('{"a":}')


# -- Microsoft's five data-movement samples, rebuilt -----------------------------------------


def _seq(start, delta, count, data_type=F32):
  return {
    "initialValuesDataType": data_type,
    "initialValues": {"valueStart": start, "valueDelta": delta, "valueCount": count},
  }


def _zeros(count, data_type=F32):
  return {"initialValuesDataType": data_type, "initialValues": {"value": 0, "valueCount": count}}


def _stdout(document):
  return dml.load_model(document).execute().stdout


def test_sample_identity_with_scale_bias():
  document = _model(
    {"A": {"initialValuesDataType": F32, "initialValues": [1, 2, 3]}, "Out": _zeros(3)},
    {"id": {"type": "DML_OPERATOR_ELEMENT_WISE_IDENTITY", "desc": {
      "InputTensor": _tensor([3]), "OutputTensor": _tensor([3]),
      "ScaleBias": {"Scale": 2, "Bias": 10}}}},
    [{"type": "dispatch", "dispatchable": "id", "bindings": {"InputTensor": "A", "OutputTensor": "Out"}},
     {"type": "print", "resource": "Out"}],
  )  # fmt: skip
  assert _stdout(document) == "Resource 'Out': 12, 14, 16\n"


def test_sample_fill_value_sequence():
  document = _model(
    {"Out": _zeros(5)},
    {"fill": {"type": "DML_OPERATOR_FILL_VALUE_SEQUENCE", "desc": {
      "ValueDataType": F32, "ValueStart": 3.2, "ValueDelta": 1.5,
      "OutputTensor": _tensor([1, 1, 1, 5])}}},
    [{"type": "dispatch", "dispatchable": "fill", "bindings": {"OutputTensor": "Out"}},
     {"type": "print", "resource": "Out"}],
  )  # fmt: skip
  assert _stdout(document) == "Resource 'Out': 3.2, 4.7, 6.2, 7.7, 9.2\n"
  bits = dml.load_model(document).run()["Out"].view(np.uint32)
  assert [f"{b:08X}" for b in bits] == ["404CCCCD", "40966666", "40C66666", "40F66666", "41133333"]


def test_sample_join_of_buffer_ranges():
  document = _model(
    {"A": _seq(1, 1, 10), "B": _seq(100, 15, 3), "Out": _zeros(10)},
    {"join": {"type": "DML_OPERATOR_JOIN", "desc": {
      "InputCount": 3, "Axis": 0, "OutputTensor": _tensor([10]),
      "InputTensors": [_tensor([3]), _tensor([2]), _tensor([5])]}}},
    [{"type": "dispatch", "dispatchable": "join", "bindings": {
      "InputTensors": [{"name": "A", "elementCount": 3, "elementOffset": 0}, "B",
                       {"name": "A", "elementCount": 5, "elementOffset": 4}],
      "OutputTensor": "Out"}},
     {"type": "print", "resource": "Out"}],
  )  # fmt: skip
  assert _stdout(document) == "Resource 'Out': 1, 2, 3, 100, 115, 5, 6, 7, 8, 9\n"


def test_sample_slice():
  document = _model(
    {"input": _seq(1, 1, 25), "output": _zeros(6)},
    {"slice": {"type": "DML_OPERATOR_SLICE", "desc": {
      "InputTensor": _tensor([1, 1, 5, 5]), "OutputTensor": _tensor([1, 1, 3, 2]),
      "DimensionCount": 4, "Offsets": [0, 0, 1, 1], "Sizes": [1, 1, 3, 2],
      "Strides": [1, 1, 1, 2]}}},
    [{"type": "dispatch", "dispatchable": "slice",
      "bindings": {"InputTensor": "input", "OutputTensor": "output"}},
     {"type": "print", "resource": "output"}],
  )  # fmt: skip
  assert _stdout(document) == "Resource 'output': 7, 9, 12, 14, 17, 19\n"


def test_sample_split():
  document = _model(
    {"A": {"initialValuesDataType": F32, "initialValues": [1, 2, 3, 4, 5, 6]},
     "Out1": _zeros(2), "Out2": _zeros(2), "Out3": _zeros(2)},
    {"split": {"type": "DML_OPERATOR_SPLIT", "desc": {
      "InputTensor": _tensor([6]), "OutputCount": 3, "Axis": 0,
      "OutputTensors": [_tensor([2]), _tensor([2]), _tensor([2])]}}},
    [{"type": "dispatch", "dispatchable": "split",
      "bindings": {"InputTensor": "A", "OutputTensors": ["Out1", "Out2", "Out3"]}},
     {"type": "print", "resource": "Out1"}, {"type": "print", "resource": "Out2"},
     {"type": "print", "resource": "Out3"}],
  )  # fmt: skip
  assert (
    _stdout(document) == "Resource 'Out1': 1, 2\nResource 'Out2': 3, 4\nResource 'Out3': 5, 6\n"
  )


# -- the example models, through the CLI ------------------------------------------------------


@pytest.mark.parametrize("name", ["join_ranges", "transpose_strides", "chain", "transpose_2x3"])
def test_examples_print_their_expected_output(name, tmp_path):
  status, out, err = _run_cli([EXAMPLES / f"{name}.json", "--output-path", tmp_path])
  assert status == 0, err
  expected = (EXAMPLES / f"{name}.expected").read_text()
  assert out == expected.replace(" written to '", f" written to '{tmp_path}/")
  assert "Running on" in err and "Running on" not in out  # progress on stderr only


def test_example_runs_an_installed_model_by_name(tmp_path, monkeypatch):
  assert cli.example_names() == ["chain", "join_ranges", "transpose_2x3", "transpose_strides"]
  status, out, err = _run_cli(["--example", "transpose_2x3"], cwd=tmp_path, monkeypatch=monkeypatch)
  assert status == 0, err
  assert out == (EXAMPLES / "transpose_2x3.expected").read_text()
  for neither_or_both in ([], ["--example", "chain", EXAMPLES / "chain.json"]):
    status, _, err = _run_cli(neither_or_both)
    assert status == 2 and "a model file or --example NAME" in err


def test_example_npy_file_and_compare(tmp_path):
  status, _, _ = _run_cli([EXAMPLES / "transpose_strides.json", "--output-path", tmp_path])
  written = (tmp_path / "nchw.npy").read_bytes()
  assert written[:10] == b"\x93NUMPY\x01\x00v\x00" and len(written) == 128 + 24
  np.testing.assert_array_equal(np.load(tmp_path / "nchw.npy").ravel()[:3], [0.5, 1, 1.5])
  status, out, _ = _run_cli([EXAMPLES / "transpose_strides.json", "--compare", tmp_path])
  assert status == 0 and "same: Resource 'nchw'" in out
  changed = bytearray(written)
  changed[128 + 2 : 128 + 4] = np.float16(7).tobytes()
  (tmp_path / "nchw.npy").write_bytes(bytes(changed))
  status, out, _ = _run_cli([EXAMPLES / "transpose_strides.json", "--compare", tmp_path])
  assert status == 1
  assert "1 of 12 elements differ" in out and "element 1: dml_jax 1, reference 7" in out


def test_cli_default_is_still_the_conformance_report(capsys):
  from dml_jax._src.conformance import main

  assert main(["--op", "TILE"]) == 0
  assert "passed, 0 failed" in capsys.readouterr().out


# -- resources ---------------------------------------------------------------------------------


def _one_resource(entry, tmp_path=None):
  document = _model({"r": entry}, {}, [{"type": "print", "resource": "r"}])
  return dml.load_model(document, input_path=tmp_path)


def test_buffer_sizes_and_padding():
  model = _one_resource({"initialValuesDataType": "FLOAT16", "initialValues": [1, 2, 3, 4, 5]})
  assert model.resources["r"].size_in_bytes == 12  # 10 rounded up to 4
  result = model.execute()
  assert result.stdout == "Resource 'r': 1, 2, 3, 4, 5\n"  # the padding is never printed
  assert model.run()["r"].tolist() == [1, 2, 3, 4, 5, 0]
  explicit = _one_resource(
    {"initialValuesDataType": "INT8", "initialValues": [65, 66, 67], "sizeInBytes": 7}
  )
  assert explicit.resources["r"].size_in_bytes == 7  # an explicit size is not rounded
  assert explicit.execute().stdout == "Resource 'r': A, B, C\n"  # INT8 prints characters


def test_mixed_list_initializer_packs_without_padding():
  entry = {"initialValues": [{"type": "FLOAT32", "value": 1}, {"type": "UINT8", "value": 2},
                             {"type": "INT16", "value": -1}, {"type": "FLOAT32", "value": 2}]}  # fmt: skip
  document = _model({"r": entry}, {}, [])
  resource = dml.load_model(document).resources["r"]
  assert len(resource.initial) == 11 and resource.size_in_bytes == 12
  assert resource.initial == struct.pack("<fBhf", 1, 2, -1, 2)


def test_file_initializers(tmp_path):
  np.save(tmp_path / "x.npy", np.array([[1, 2], [3, 4]], np.int16))
  (tmp_path / "raw.dat").write_bytes(np.float32([1.5, 2.5]).tobytes())
  model = dml.load_model(
    _model(
      {"n": {"initialValues": {"sourcePath": "x.npy"}},
       "d": {"initialValuesDataType": F32, "initialValues": {"sourcePath": "raw.dat"}}},
      {}, [{"type": "print", "resource": "n"}, {"type": "print", "resource": "d"}]),
    input_path=tmp_path,
  )  # fmt: skip
  assert model.resources["n"].data_type == DataType.INT16
  assert model.execute().stdout == "Resource 'n': 1, 2, 3, 4\nResource 'd': 1.5, 2.5\n"
  bools = tmp_path / "b.npy"
  np.save(bools, np.array([True, False]))
  assert npy.read_npy(bools.read_bytes())[0] == DataType.INT8  # NumPy's bool reads as INT8


RESOURCE_ERRORS = [
  ({}, "resource 'r': Field 'initialValues' is required."),
  ({"initialValues": 3}, "Field 'initialValues' must be an array of numbers, an object, or deferred."),
  ({"initialValues": "later"}, "The 'initialValuesDataType' only supports deferred"),
  ({"initialValues": "deferred"}, "filled by ONNX dispatchables only"),
  ({"initialValues": [1]}, "initialValues[0]: Expected an object."),
  ({"initialValues": [{"type": "FLOAT16", "value": 1}]}, "Data type not supported."),
  ({"initialValues": {"value": 1, "valueCount": 2}}, "Field 'initialValuesDataType' is required."),
  ({"initialValuesDataType": F32, "initialValues": {"value": 1, "valueStart": 1, "valueCount": 2}}, "excludes"),
  ({"initialValuesDataType": F32, "initialValues": {"value": 1}}, "Field 'valueCount' is required."),
  ({"initialValuesDataType": F32, "initialValues": {"valueStart": 1, "valueCount": 2}}, "Field 'valueDelta' is required."),
  ({"initialValuesDataType": F32, "initialValues": {"other": 1}}, "unknown generator type."),
  ({"initialValuesDataType": F32, "initialValues": []}, "'initialValues' must be non-empty."),
  ({"initialValuesDataType": F32, "initialValues": {"value": 1, "valueCount": 0}}, "must be non-empty."),
  ({"initialValuesDataType": "float32", "initialValues": [1]}, "unknown DML_TENSOR_DATA_TYPE 'float32'"),
  ({"initialValuesDataType": "UINT4", "initialValues": [1]}, "Invalid tensor data type."),
  ({"initialValuesDataType": "UINT8", "initialValues": [256]}, "initialValues[0]: narrowing_error"),
  ({"initialValuesDataType": "INT32", "initialValues": [1.5]}, "Expected a signed integer."),
  ({"initialValuesDataType": F32, "initialValues": [1, 2], "sizeInBytes": 4},
   "The buffer size (4 bytes) is too small for the initialValues (8 bytes) at offset 0 bytes."),
  ({"initialValuesDataType": F32, "initialValues": [1], "sizeInBytes": 6, "initialValuesOffsetInBytes": 4},
   "The buffer size (6 bytes) is too small for the initialValues (4 bytes) at offset 4 bytes."),
  ({"initialValuesDataType": F32, "initialValues": {"sourcePath": "missing.dat"}}, "could not be opened."),
  ({"initialValues": {"sourcePath": "x.png"}}, "image files (.png) are not supported"),
]  # fmt: skip


@pytest.mark.parametrize("entry, message", RESOURCE_ERRORS)
def test_resource_errors(entry, message):
  with pytest.raises(dml.DmlModelError) as caught:
    _one_resource(entry)
  assert message in str(caught.value)


# -- dispatchables and commands: every problem at once -----------------------------------------


def _identity(**desc):
  body = {"InputTensor": _tensor([4]), "OutputTensor": _tensor([4]), **desc}
  return {"type": "ELEMENT_WISE_IDENTITY", "desc": body}


DISPATCHABLE_ERRORS = [
  ({}, "dispatchable 'd': Field 'type' is required."),
  ({"type": "hlsl"}, "dispatchable 'd' (hlsl): HLSL shader dispatchables are not supported"),
  ({"type": "onnx"}, "ONNX model dispatchables are not supported"),
  ({"type": "DMLSERIALIZEDGRAPH"}, "serialized DirectML graph dispatchables are not supported"),
  ({"type": "ELEMENT_WISE_ADD"}, "(ELEMENT_WISE_ADD): Type: Unknown operator type."),
  ({"type": "join"}, "operator names are case-sensitive: write JOIN"),
  ({"type": "SCATTER_ELEMENTS"}, "model files name it SCATTER"),
  ({"type": "JOIN", "desc": {}}, "dispatchable 'd' (JOIN): Field 'InputCount' is required."),
  (_identity(InputTensor={"DataType": F32}), "(ELEMENT_WISE_IDENTITY): InputTensor: Field 'Sizes' is required."),
  (_identity(InputTensor=_tensor([4], "float32")), "InputTensor.DataType: unknown DML_TENSOR_DATA_TYPE"),
  (_identity(InputTensor=_tensor([4], Flags="OWNED")), "InputTensor.Flags: unknown flag 'OWNED'"),
  (_identity(InputTensor=_tensor([4], Flags=3)), "Expected a string or an array of strings."),
  (_identity(InputTensor=_tensor([4], DimensionCount=2)), "DimensionCount is 2 but Sizes has 1 entries"),
  (_identity(ScaleBias={"Scale": 1}), "ScaleBias: Field 'Bias' is required."),
  (_identity(ScaleBias={"Scale": "x", "Bias": 0}), "ScaleBias.Scale: Expected 'NaN', 'Inf', or '-Inf'."),
  (_identity(OutputTensor=_tensor([5])), "OutputTensor.Sizes: must equal InputTensor.Sizes"),
  ({"type": "TILE", "desc": {"InputTensor": _tensor([2]), "OutputTensor": _tensor([4]), "RepeatsCount": 1,
    "Repeats": [2.0]}}, "(TILE): Repeats[0]: Expected an unsigned integer"),
  ({"type": "PADDING", "desc": {"InputTensor": _tensor([2]), "OutputTensor": _tensor([4]), "PaddingMode": 0,
    "PaddingValue": 0, "DimensionCount": 1, "StartPadding": [1], "EndPadding": [1]}},
   "PaddingMode: DML_PADDING_MODE must be a string."),
  ({"type": "PADDING", "desc": {"InputTensor": _tensor([2]), "OutputTensor": _tensor([4]), "PaddingMode": "WRAP",
    "PaddingValue": 0, "DimensionCount": 1, "StartPadding": [1], "EndPadding": [1]}},
   "unknown DML_PADDING_MODE value 'WRAP'"),
  ({"type": "FILL_VALUE_CONSTANT", "desc": {"OutputTensor": _tensor([4]), "ValueDataType": F32, "Value": "nan"}},
   "Value: Expected a non-null JSON object or number."),
  ({"type": "FILL_VALUE_CONSTANT", "desc": {"OutputTensor": _tensor([4], "INT16"), "ValueDataType": "INT16",
    "Value": {"Int8": -100}}}, "Value: Field 'Int16' is required"),
  ({"type": "FILL_VALUE_CONSTANT", "desc": {"OutputTensor": _tensor([4], "INT16"), "ValueDataType": F32,
    "Value": 1}}, "ValueDataType: must equal OutputTensor.DataType (INT16)"),
  ({**_identity(), "executionFlags": ["FAST"]}, "executionFlags: unknown flag 'FAST'"),
  ({**_identity(), "dmlCompileType": "dmlcompileop"}, "dmlCompileType: must be DmlCompileOp or DmlCompileGraph"),
]  # fmt: skip


@pytest.mark.parametrize("entry, message", DISPATCHABLE_ERRORS)
def test_dispatchable_errors(entry, message):
  document = _model({}, {"d": entry}, [])
  with pytest.raises(dml.DmlModelError) as caught:
    dml.load_model(document)
  assert message in str(caught.value)


def test_every_problem_is_reported_at_once_and_nothing_runs(tmp_path, monkeypatch):
  document = _model(
    {"A": _zeros(4), "bad": {"initialValuesDataType": "INT8", "initialValues": [300]}},
    {"j": {"type": "JOIN", "desc": {"InputCount": 2, "Axis": 0, "OutputTensor": _tensor([4]),
           "InputTensors": [_tensor([2]), _tensor([2], "INT32")]}},
     "h": {"type": "hlsl"}},
    [{"type": "print", "resource": "A"},
     {"type": "dispatch", "dispatchable": "nope", "bindings": {"X": "missing"}},
     {"type": "print", "resource": "gone"},
     {"type": "writeFile", "resource": "gone2", "targetPath": "x.dat"},
     {"type": "launch"}],
  )  # fmt: skip
  with pytest.raises(dml.DmlModelError) as caught:
    dml.load_model(document)
  problems = caught.value.problems
  assert problems == (
    "resource 'bad': initialValues[0]: narrowing_error: 300 is outside INT8's range [-128, 127]",
    "dispatchable 'j' (JOIN): InputTensors[1].DataType: must equal InputTensors[0].DataType"
    " (FLOAT32); JOIN never converts types; got INT32 (at FL 6_4). Hint: cast the inputs first"
    " (jnp.concatenate would promote them)",
    "dispatchable 'h' (hlsl): HLSL shader dispatchables are not supported; dml_jax runs DirectML"
    " operator dispatchables only",
    "command 1 (dispatch 'nope'): Command attempts to dispatch 'nope', which does not exist in"
    " the model",
    "command 1 (dispatch 'nope'): Command attempts to bind resource 'missing', which does not"
    " exist in the model",
    "command 2 (print 'gone'): Command attempts to print resource 'gone', which does not exist"
    " in the model",
    "command 3 (writeFile 'gone2'): Command attempts to write to a file the resource 'gone2',"
    " which does not exist in the model",
    "command 4: type: Unrecognized command 'launch': write dispatch, print or writeFile",
  )
  path = tmp_path / "m.json"
  path.write_text(json.dumps(document))
  status, out, err = _run_cli([path])
  assert status == 1 and out == "" and "Failed to parse the model" in err and "hlsl" in err


@pytest.mark.parametrize(
  "document, message",
  [
    ({"dispatchables": {}, "commands": []}, "Expected an object named 'resources'"),
    ({"resources": {}, "commands": []}, "Expected an object named 'dispatchables'"),
    (
      {"resources": {}, "dispatchables": {}, "commands": {}},
      "Expected an array field named 'commands'",
    ),
  ],
)
def test_root_members(document, message):
  with pytest.raises(dml.DmlModelError, match=message):
    dml.load_model(document)


def test_unknown_desc_members_are_ignored_with_a_warning():
  model = dml.load_model(_model({}, {"d": {**_identity(), "Scalebias": 1}}, []))
  assert model.warnings == []  # outside the desc: a dispatchable-level member, ignored
  model = dml.load_model(_model({}, {"d": _identity(ScaleBais={"Scale": 1, "Bias": 0})}, []))
  assert (
    "'ScaleBais' is not a field of DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC" in model.warnings[0]
  )


def test_desc_may_be_inline_and_type_may_be_capitalised():
  inline = {"type": "x", "Type": "DML_OPERATOR_ELEMENT_WISE_IDENTITY",
            "InputTensor": _tensor([4]), "OutputTensor": {"Type": "BUFFER", "Desc": _tensor([4])}}  # fmt: skip
  model = dml.load_model(_model({}, {"d": inline}, []))
  assert model.dispatchables["d"].desc.OPERATOR == "ELEMENT_WISE_IDENTITY"


def test_scalar_union_float16_numbers_truncate():
  entry = {"type": "FILL_VALUE_CONSTANT", "desc": {"OutputTensor": _tensor([1, 1, 1, 2], "FLOAT16"),
           "ValueDataType": "FLOAT16", "Value": 1.2}}  # fmt: skip
  document = _model({"o": _zeros(2, "FLOAT16")}, {"f": entry},
                    [{"type": "dispatch", "dispatchable": "f", "bindings": {"OutputTensor": "o"}},
                     {"type": "print", "resource": "o"}])  # fmt: skip
  assert _stdout(document) == "Resource 'o': 1.19922, 1.19922\n"  # 0x3CCC, not 0x3CCD
  raw = copy.deepcopy(document)
  raw["dispatchables"]["f"]["desc"]["Value"] = {"UInt16": 0x7E00}
  assert _stdout(raw) == "Resource 'o': nan, nan\n"


# -- running -----------------------------------------------------------------------------------


def _copy_model(offset, commands_after=()):
  return _model(
    {"A": _seq(1, 1, 8), "B": _zeros(4)},
    {"copy": _identity()},
    [{"type": "print", "resource": "B"},
     {"type": "dispatch", "dispatchable": "copy",
      "bindings": {"InputTensor": {"name": "A", "elementOffset": offset}, "OutputTensor": "B"}},
     {"type": "print", "resource": "B"}, *commands_after],
  )  # fmt: skip


def test_element_offset_counts_buffer_elements():
  assert _stdout(_copy_model(4)) == "Resource 'B': 0, 0, 0, 0\nResource 'B': 5, 6, 7, 8\n"


def test_a_refused_binding_is_found_at_load_and_nothing_runs(tmp_path, monkeypatch):
  misaligned = _copy_model(1, [{"type": "writeFile", "resource": "B", "targetPath": "b.dat"}])
  with pytest.raises(dml.DmlModelError) as caught:
    dml.load_model(misaligned)
  assert caught.value.problems == (
    "command 1 (dispatch 'copy'): resource 'A': InputTensor bound at offset 4 of a buffer of"
    " 32 bytes: the offset must be a multiple of 16 (DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT); got"
    " 4 = 16 * 0 + 4. Move the tensor to offset 0 or 16",
  )
  path = tmp_path / "m.json"
  path.write_text(json.dumps(misaligned))
  status, out, err = _run_cli([path, "--output-path", tmp_path])
  assert status == 1 and out == "" and "Failed to parse the model" in err
  assert "Ran " not in err and not (tmp_path / "b.dat").exists()
  with pytest.raises(
    dml.DmlModelError, match="resource 'A': InputTensor bound at offset 32"
  ) as caught:
    dml.load_model(_copy_model(8))  # 0 bytes left after offset 32
  assert "fewer than InputTensor.TotalTensorSizeInBytes = 16" in str(caught.value)


def test_bind_point_counts_and_missing_bindings_are_found_at_load():
  model = _copy_model(0)
  model["commands"][1]["bindings"]["InputTensor"] = ["A", "A"]
  with pytest.raises(dml.DmlModelError, match=r"command 1 \(dispatch 'copy'\): Bind point"
                     r" 'InputTensor' requires 1 resources, but 2 were bound\."):  # fmt: skip
    dml.load_model(model)
  del model["commands"][1]["bindings"]["InputTensor"]
  with pytest.raises(dml.DmlModelError, match="Bind point 'InputTensor' is not bound"):
    dml.load_model(model)


def test_owned_by_dml_inputs_are_read_before_the_first_command():
  entry = _identity(InputTensor=_tensor([4], Flags="OWNED_BY_DML"))
  entry["bindings"] = {"InputTensor": "W"}
  document = _model(
    {"W": _seq(1, 1, 4), "out": _zeros(4)},
    {"owned": entry, "overwrite": {"type": "FILL_VALUE_CONSTANT", "desc": {
      "OutputTensor": _tensor([4]), "ValueDataType": F32, "Value": 9}}},
    [{"type": "dispatch", "dispatchable": "overwrite", "bindings": {"OutputTensor": "W"}},
     {"type": "dispatch", "dispatchable": "owned", "bindings": {"OutputTensor": "out"}},
     {"type": "print", "resource": "W"}, {"type": "print", "resource": "out"}],
  )  # fmt: skip
  assert _stdout(document) == "Resource 'W': 9, 9, 9, 9\nResource 'out': 1, 2, 3, 4\n"
  del document["dispatchables"]["owned"]["bindings"]
  with pytest.raises(dml.DmlModelError, match="InputTensor is OWNED_BY_DML: give its resource"):
    dml.load_model(document)


def test_print_formats():
  assert print_text("x", DataType.FLOAT32, b"", 0) == b"Resource 'x': \n"
  text = print_text(
    "Out", DataType.FLOAT32, np.float32(np.arange(1, 11)).tobytes(), 40, verbose=True
  )
  lines = text.decode().split("\n")
  assert lines[:2] == ["Resource 'Out':", "[ 0] 1 (0x3F800000)"] and lines[-2:] == ["", ""]
  with pytest.raises(ValueError, match="Unexpected DML_TENSOR_DATA_TYPE"):
    print_text("m", DataType.UNKNOWN, b"\x00" * 4, 4)


def test_write_file_paths_and_formats(tmp_path, monkeypatch):
  commands = [
    {"type": "writeFile", "resource": "h", "targetPath": "sub/h.npy"},
    {"type": "writeFile", "resource": "h", "targetPath": "h.bin"},
    {"type": "writeFile", "resource": "m", "targetPath": "m.npy"},
  ]
  document = _model(
    {"h": {"initialValuesDataType": "FLOAT16", "initialValues": [1, 2, 3, 4, 5]},
     "m": {"initialValues": [{"type": "INT8", "value": 1}]}},
    {}, commands,
  )  # fmt: skip
  path = tmp_path / "model.json"
  path.write_text(json.dumps(document))
  work = tmp_path / "cwd"
  work.mkdir()
  status, out, err = _run_cli([path], cwd=work, monkeypatch=monkeypatch)
  assert status == 1  # a failed writeFile is a failed command
  assert f"Resource 'h' written to '{work}/sub/h.npy'" in out  # relative to the current directory
  assert np.load(work / "sub" / "h.npy").shape == (6,)  # the allocated 12 bytes, as FLOAT16
  assert (work / "h.bin").read_bytes() == np.float16([1, 2, 3, 4, 5, 0]).tobytes()
  assert "Failed to write resource to file" in err and "give 'dimensions'" in err


def test_as_function_is_one_program_from_buffers_to_buffers():
  model = dml.load_model(EXAMPLES / "chain.json")
  fn = model.as_function()
  initial = model.initial_buffers()
  final = fn(initial)
  assert set(final) == set(model.resources)
  typed = model.typed(final)
  assert typed["picked"].tolist() == [10, 12, 10, 12, 2, 4, 2, 4]
  assert all(np.array_equal(typed[k], v) for k, v in model.run().items())
  text = jax.jit(fn).lower(initial).as_text()
  assert text.count("func.func public @main") == 1
  assert fn._cache_size() == 1  # type: ignore[attr-defined]


# -- repetition: DxDispatch's -i and -r ---------------------------------------------------------


def _in_place(count=4, sizes=(4,), output_offset=0):
  """x -> 2x + 1, the output bound to the buffer it reads (at `output_offset` elements)."""
  return _model(
    {"x": _seq(0, 1, count)},
    {"twice_plus_one": _identity(InputTensor=_tensor(sizes), OutputTensor=_tensor(sizes),
                                 ScaleBias={"Scale": 2, "Bias": 1})},
    [{"type": "dispatch", "dispatchable": "twice_plus_one",
      "bindings": {"InputTensor": "x", "OutputTensor": {"name": "x", "elementOffset": output_offset}}},
     {"type": "print", "resource": "x"}],
  )  # fmt: skip


def _applied(x, times, output_offset=0, count=None):
  """The in-place dispatch applied `times` times, in NumPy: each application reads a snapshot
  of the buffer (the right side is computed before it is stored)."""
  x = np.array(x, np.float32)
  count = len(x) - output_offset if count is None else count
  for _ in range(times):
    x[output_offset : output_offset + count] = x[:count] * np.float32(2) + np.float32(1)
  return x


def test_in_place_dispatch_repeated_i_times_r(tmp_path):
  document = _in_place()
  path = tmp_path / "in_place.json"
  path.write_text(json.dumps(document))
  status, out, err = _run_cli([path, "-i", 3, "-r", 2])
  assert status == 0, err
  assert out == "Resource 'x': 63, 127, 191, 255\n"  # 2x + 1 six times: 64x + 63
  assert "each dispatch 6 times" in err and "Running on" in err
  np.testing.assert_array_equal(_applied([0, 1, 2, 3], 6), [63, 127, 191, 255])
  status, out, _ = _run_cli([path, "--dispatch_iterations", 2, "--dispatch-repeat", 1])
  assert out == "Resource 'x': 3, 7, 11, 15\n"
  model = dml.load_model(document)
  assert model.run()["x"].tolist() == [1, 3, 5, 7]
  assert model.run(dispatch_iterations=3, dispatch_repeat=2)["x"].tolist() == [63, 127, 191, 255]
  result = model.execute(dispatch_iterations=6)
  assert result.stdout == "Resource 'x': 63, 127, 191, 255\n"


def test_repetitions_read_a_snapshot_of_overlapping_views():
  # The output view starts 4 elements (16 bytes) into the input's: each application reads
  # what the previous one wrote, shifted.
  document = _in_place(count=12, sizes=(8,), output_offset=4)
  model = dml.load_model(document)
  for times in (1, 2, 5):
    got = model.run(dispatch_iterations=times)["x"]
    np.testing.assert_array_equal(got, _applied(np.arange(12), times, output_offset=4))


def test_repetitions_are_a_loop_in_the_one_program():
  model = dml.load_model(_in_place())
  initial = model.initial_buffers()
  sizes = []
  for times in (1, 6, 60):
    fn = model.as_function(dispatch_iterations=times)
    final = model.typed(fn(initial))["x"]
    np.testing.assert_array_equal(final, _applied([0, 1, 2, 3], times))
    fn(initial)
    assert fn._cache_size() == 1  # type: ignore[attr-defined]
    sizes.append(str(jax.make_jaxpr(fn)(initial)).count("\n"))  # lines of the program
  assert sizes[1] == sizes[2] > sizes[0]  # the same loop, whatever the count


def test_repetition_leaves_models_without_aliasing_unchanged(tmp_path):
  for name in ("join_ranges", "transpose_strides", "chain", "transpose_2x3"):
    status, out, err = _run_cli(
      [EXAMPLES / f"{name}.json", "-i", 3, "-r", 2, "--output-path", tmp_path]
    )
    assert status == 0, err
    expected = (EXAMPLES / f"{name}.expected").read_text()
    assert out == expected.replace(" written to '", f" written to '{tmp_path}/")
  model = dml.load_model(EXAMPLES / "chain.json")
  once, again = model.run(), model.run(dispatch_iterations=3, dispatch_repeat=2)
  assert all(once[k].tobytes() == again[k].tobytes() for k in once)


@pytest.mark.parametrize("count", [0, -1, 1.5, True, "2"])
def test_repetition_counts_must_be_positive_integers(count):
  model = dml.load_model(_in_place())
  with pytest.raises(ValueError, match="dispatch_iterations must be a positive integer"):
    model.run(dispatch_iterations=count)
  with pytest.raises(ValueError, match="dispatch_repeat must be a positive integer"):
    model.as_function(dispatch_repeat=count)


def test_cli_refuses_a_timed_run_and_bad_counts(tmp_path, capsys):
  path = tmp_path / "in_place.json"
  path.write_text(json.dumps(_in_place()))
  status, out, err = _run_cli([path, "-t", 1000])
  assert status == 2 and out == ""
  assert "-t/--milliseconds_to_run is not supported" in err and "-i/--dispatch_iterations" in err
  for bad in ("0", "x"):
    with pytest.raises(SystemExit) as stopped:
      _run_cli([path, "-i", bad])
    assert stopped.value.code == 2
    assert "expected a positive integer" in capsys.readouterr().err


def test_cli_ignores_timing_and_device_options_and_says_so(tmp_path):
  path = tmp_path / "in_place.json"
  path.write_text(json.dumps(_in_place()))
  options = ["-I", 10, "-w", 3, "--max_gpu_time_measurements", 50, "-v", 2, "--print_commands",
             "-d", "-a", "NVIDIA", "-q", "compute", "--post_dispatch_barriers", "none",
             "--dml_feature_level", "5.0", "--disable_gpu_timeout", "--set_stable_power_state"]  # fmt: skip
  status, out, err = _run_cli([path, *options])
  assert status == 0, err
  assert out == "Resource 'x': 1, 3, 5, 7\n"  # DxDispatch's deterministic lines only
  assert all(line.startswith("Resource '") for line in out.splitlines())
  notes = [line for line in err.splitlines() if line.startswith("note: ")]
  assert len(notes) == 12 and "note: -w/--warmup_samples ignored (timing only)" in notes
  assert any(line.startswith("note: --print_commands ignored") for line in notes)


def _benchmark_script():
  """benchmarks/model_dispatch.py as a module (a script, not part of a package)."""
  path = ROOT / "benchmarks" / "model_dispatch.py"
  spec = importlib.util.spec_from_file_location("dml_jax_model_dispatch", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _primitives(jaxpr):
  """The names of every primitive of a jaxpr, the jaxprs nested in its equations included."""
  for eqn in jaxpr.eqns:
    yield eqn.primitive.name
    for value in eqn.params.values():
      for item in value if isinstance(value, tuple | list) else (value,):
        inner = getattr(item, "jaxpr", item)  # a ClosedJaxpr holds a Jaxpr
        if hasattr(inner, "eqns"):
          yield from _primitives(inner)


def test_fifty_dispatches_are_one_program_traced_once():
  script = _benchmark_script()
  model = dml.load_model(script.chain_model(50, rows=8, cols=8))
  dispatches = [c for c in model.commands if not hasattr(c, "resource")]
  assert len(dispatches) == 50
  assert {"SLICE", "ELEMENT_WISE_IDENTITY", "GATHER", "JOIN"} == {
    d.desc.OPERATOR for d in model.dispatchables.values()
  }
  assert any(s.element_offset for c in dispatches for b in c.bindings.values() for s in b)
  fn = model.as_function()
  initial = model.initial_buffers()
  first = fn(initial)
  second = fn(model.initial_buffers())
  assert fn._cache_size() == 1  # type: ignore[attr-defined]  # traced once for both calls
  lowered = fn.lower(initial)
  text = lowered.as_text()
  assert text.count("func.func public") == 1 and "callback" not in text.lower()
  names = set(_primitives(jax.make_jaxpr(fn)(initial).jaxpr))
  assert {"gather", "concatenate"} <= names  # the walk reached the operators' bodies
  assert not [name for name in names if "callback" in name]
  run = model.run()
  for name, final in model.typed(first).items():
    assert final.tobytes() == run[name].tobytes(), name
    assert np.asarray(second[name]).tobytes() == np.asarray(first[name]).tobytes()
  assert not np.array_equal(run["x"], model.typed(initial)["x"])  # the chain changed x


def test_load_model_from_text_and_path():
  text = (EXAMPLES / "join_ranges.json").read_text()
  assert dml.load_model(text).run()["joined"].tolist() == [0, 2, 1, 3, 5, 16, 18, 20, 22]
  model = dml.load_model(str(EXAMPLES / "join_ranges.json"))
  assert "join_ranges.json" in repr(model)
  with pytest.raises(FileNotFoundError):
    dml.load_model(EXAMPLES / "nope.json")


def test_the_models_page_example_prints_what_the_page_shows():
  page = (ROOT / "docs" / "models.md").read_text()
  section = page[page.index("## DirectML model files") :]
  model_json = section[
    section.index("```json\n") + 8 : section.index("```", section.index("```json\n") + 8)
  ]
  shown = section[
    section.index("```text\n") + 8 : section.index("```", section.index("```text\n") + 8)
  ]
  command, expected = shown.split("\n", 1)
  assert command == "$ python -m dml_jax run --example join_ranges"
  assert _stdout(json.loads(model_json)) == expected
  assert expected == (EXAMPLES / "join_ranges.expected").read_text()  # the file prints it too
