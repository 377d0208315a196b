"""The device layer: devices, placement, the executable cache, the run log, threads."""

import concurrent.futures

import jax
import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src import device as device_lib
from dml_jax._src import reference
from tests.helpers import assert_bits_equal


def _gather_desc(rows=3):
  return dml.GatherElementsDesc(
    dml.TensorDesc("FLOAT32", (rows, 4)), dml.TensorDesc("INT32", (2, 4)), axis=0
  )


def test_cpu_is_always_available():
  cpus = device_lib.available_devices("cpu")
  assert cpus and all(d.platform == "cpu" for d in cpus)
  assert device_lib.default_device() in device_lib.available_devices("all")


def test_unknown_platform_is_an_error():
  with pytest.raises(ValueError, match=r"unknown platform 'cuda'; expected one of cpu, gpu, tpu"):
    device_lib.available_devices("cuda")


def test_missing_platform_is_reported():
  if device_lib.available_devices("tpu"):
    pytest.skip("this machine has a TPU")  # pragma: no cover
  with pytest.raises(ValueError, match=r"no tpu device is available; available: cpu:0"):
    device_lib.Runner().run(
      _gather_desc(), np.zeros((3, 4), np.float32), np.zeros((2, 4), np.int32), device="tpu"
    )


def test_runner_reports_what_ran_where():
  runner = device_lib.Runner("4_1")
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  i = np.array([[0, 1, 2, -1], [5, -9, 0, 1]], np.int32)
  first = runner.run(_gather_desc(), x, i, device="cpu")
  second = runner.run(_gather_desc(), x, i, device="cpu")
  np.testing.assert_array_equal(first.output, reference.gather_elements(x, i, axis=0))
  assert first.device.platform == "cpu" and first.compiled and not second.compiled
  assert first.operator == "GATHER_ELEMENTS" and str(first.feature_level) == "4_1"
  assert runner.records == (first, second)
  report = runner.report()
  assert report.count("GATHER_ELEMENTS") == 2 and "cpu:0" in report and "(compiled)" in report
  assert str(first).startswith("GATHER_ELEMENTS at FL 4_1 on cpu:0: ")


def test_runner_validates_at_its_feature_level():
  with pytest.raises(dml.DmlValidationError, match=r"at DML_FEATURE_LEVEL_2_1"):
    device_lib.Runner("2_1").run(
      _gather_desc(), np.zeros((3, 4), np.float32), np.zeros((2, 4), np.int32)
    )


def test_runner_rejects_arrays_that_do_not_match_the_descriptor():
  runner = device_lib.Runner()
  with pytest.raises(
    ValueError,
    match=r"IndicesTensor is described as INT32\[2,4\]; got an"
    r" array of UINT32\[2,4\]",
  ):
    runner.run(_gather_desc(), np.zeros((3, 4), np.float32), np.zeros((2, 4), np.uint32))
  with pytest.raises(
    TypeError,
    match=r"GATHER_ELEMENTS takes 2 input arrays \(InputTensor,"
    r" IndicesTensor\); got 1",
  ):
    runner.run(_gather_desc(), np.zeros((3, 4), np.float32))


def test_runner_runs_join_with_one_array_per_input():
  a, b = np.ones((1, 2), np.int16), np.full((2, 2), 7, np.int16)
  desc = dml.JoinDesc((dml.TensorDesc("INT16", (1, 2)), dml.TensorDesc("INT16", (2, 2))), axis=0)
  record = device_lib.Runner().run(desc, a, b)
  np.testing.assert_array_equal(record.output, np.concatenate([a, b]))


def test_runner_runs_join_with_a_list_as_dml_join_takes_it():
  a, b = np.ones((1, 2), np.int16), np.full((2, 2), 7, np.int16)
  desc = dml.JoinDesc((dml.TensorDesc("INT16", (1, 2)), dml.TensorDesc("INT16", (2, 2))), axis=0)
  for inputs in ([a, b], (a, b)):
    record = device_lib.Runner().run(desc, inputs)
    np.testing.assert_array_equal(record.output, dml.join([a, b], axis=0))
  with pytest.raises(TypeError, match=r"JOIN takes 2 input arrays .*; got 3"):
    device_lib.Runner().run(desc, [a, b, b])


def test_runner_inside_jit_points_to_the_functional_api():
  x = np.ones((2, 3), np.float32)
  desc = dml.JoinDesc([dml.TensorDesc("FLOAT32", (2, 3))] * 2, axis=0)
  runner = device_lib.Runner()
  with pytest.raises(TypeError, match=r"cannot be traced .*call the functional API, dml\.join"):
    jax.jit(lambda a: runner.run(desc, [a, a]).output)(x)
  assert not runner.records


def test_runner_is_thread_safe():
  runner = device_lib.Runner()
  rng = np.random.default_rng(0)
  jobs = []
  for k in range(48):
    rows = 2 + k % 4
    x = rng.standard_normal((rows, 4)).astype(np.float32)
    i = rng.integers(-rows - 1, rows + 1, (2, 4)).astype(np.int32)
    jobs.append((_gather_desc(rows), x, i))
  with concurrent.futures.ThreadPoolExecutor(8) as pool:
    records = list(pool.map(lambda job: runner.run(job[0], *job[1:]), jobs))
  for (_, x, i), record in zip(jobs, records, strict=True):
    np.testing.assert_array_equal(record.output, reference.gather_elements(x, i, axis=0))
  assert len(runner.records) == 48
  assert sum(r.compiled for r in records) >= 4  # one per descriptor at least
  assert len(runner._executables) == 4


def test_functional_api_is_thread_safe():
  rng = np.random.default_rng(1)
  cases = [
    (
      rng.standard_normal((k % 3 + 1, 5)).astype(np.float32),
      rng.integers(0, 9, (k % 3 + 1, 1)).astype(np.uint32),
    )
    for k in range(32)
  ]
  with concurrent.futures.ThreadPoolExecutor(8) as pool:
    outs = list(pool.map(lambda c: dml.reverse_subsequences(*c, axis=1), cases))
  for (x, n), out in zip(cases, outs, strict=True):
    np.testing.assert_array_equal(out, reference.reverse_subsequences(x, n, axis=1))


# -- Runner.execute: buffers and bindings --------------------------------------------------------


def _zero_stride_input():
  """A (1, 5) buffer read as (3, 5): the leading dimension has stride 0."""
  row = np.arange(5, dtype=np.float32) - 2.5
  desc = dml.ElementWiseIdentityDesc(
    dml.TensorDesc("FLOAT32", (3, 5), strides=(0, 1)), dml.TensorDesc("FLOAT32", (3, 5))
  )
  return desc, [dml.Binding(row)], [dml.Binding(np.full(16, -7, np.float32))]


def _padded_pitch_output():
  """Rows of 3 written at a pitch of 5 into a buffer of sentinels: the gaps keep them."""
  desc = dml.ElementWiseIdentityDesc(
    dml.TensorDesc("INT16", (4, 3)), dml.TensorDesc("INT16", (4, 3), strides=(5, 1))
  )
  source = np.arange(12, dtype=np.int16)
  return desc, [dml.Binding(source)], [dml.Binding(np.full(32, 0x5A5A, np.uint16), offset=16)]


def _nhwc_input():
  n, h, w, c = 2, 3, 4, 5
  nhwc = np.arange(n * h * w * c, dtype=np.float32)
  as_nchw = dml.TensorDesc("FLOAT32", (n, c, h, w), strides=(h * w * c, 1, w * c, c))
  desc = dml.ElementWiseIdentityDesc(as_nchw, dml.TensorDesc("FLOAT32", (n, c, h, w)))
  return desc, [dml.Binding(nhwc)], [dml.Binding(np.zeros(nhwc.size, np.float32))]


def _join_at_offsets_of_one_buffer():
  """Three inputs bound at offsets of one uint8 buffer, bytes read as UINT32."""
  sizes = ((1, 2, 4), (1, 1, 4), (1, 3, 4))
  tensors = tuple(dml.TensorDesc("UINT32", s) for s in sizes)
  source = np.random.default_rng(3).integers(0, 256, 160, dtype=np.uint8)
  offsets = (16, 64, 112)  # in between: bytes no input reads
  desc = dml.JoinDesc(tensors, axis=1)
  inputs = [dml.Binding(source, offset) for offset in offsets]
  return desc, inputs, [dml.Binding(np.zeros(24, np.uint32))]


BUFFER_CASES = {
  "zero_stride_input": _zero_stride_input,
  "padded_pitch_output": _padded_pitch_output,
  "nhwc_input": _nhwc_input,
  "join_at_offsets_of_one_buffer": _join_at_offsets_of_one_buffer,
}


@pytest.mark.parametrize("case", BUFFER_CASES)
def test_runner_execute_is_dml_execute_on_a_device(case):
  desc, inputs, outputs = BUFFER_CASES[case]()
  want = dml.execute(desc, inputs, outputs)
  runner = device_lib.Runner()
  record = runner.execute(desc, inputs, outputs, device="cpu")
  assert len(record.outputs) == len(want) == 1
  assert_bits_equal(record.output, want[0], context=case)
  assert record.device.platform == "cpu" and record.compiled
  assert record.operator == desc.OPERATOR and record.descriptor is desc


def test_runner_execute_keeps_the_gap_bytes():
  desc, inputs, outputs = _padded_pitch_output()
  out = np.asarray(device_lib.Runner().execute(desc, inputs, outputs).output)
  assert out.dtype == np.uint16 and out.shape == (32,)
  want = np.full(32, 0x5A5A, np.uint16)  # 16 bytes of offset = 8 elements, then rows of 5
  want[8:28].reshape(4, 5)[:, :3] = np.arange(12, dtype=np.uint16).reshape(4, 3)
  assert_bits_equal(out, want)


def test_runner_execute_reads_fewer_elements_than_the_logical_sizes():
  desc, inputs, outputs = _zero_stride_input()
  assert inputs[0].buffer.size == 5 < 15  # the (3, 5) tensor's 15 elements are 5 values
  record = device_lib.Runner().execute(desc, inputs, outputs)
  want = np.full(16, -7, np.float32)
  want[:15] = np.tile(np.arange(5, dtype=np.float32) - 2.5, 3)
  assert_bits_equal(record.output, want)


def test_runner_execute_compiles_once_and_records_the_run():
  runner = device_lib.Runner("4_1")
  desc, inputs, outputs = _join_at_offsets_of_one_buffer()
  first = runner.execute(desc, inputs, outputs, device="cpu")
  # New buffers of the same shapes, bound at the same offsets: the same executable.
  source = np.zeros(160, np.uint8)
  again = [dml.Binding(source, b.offset) for b in inputs]
  second = runner.execute(desc, again, [dml.Binding(np.ones(24, np.uint32))], device="cpu")
  assert first.compiled and not second.compiled
  assert_bits_equal(second.output, np.zeros(24, np.uint32))
  # Other offsets are another program.
  moved = [dml.Binding(source, offset) for offset in (0, 48, 96)]
  third = runner.execute(desc, moved, [dml.Binding(np.ones(24, np.uint32))], device="cpu")
  assert third.compiled
  assert runner.records == (first, second, third)
  report = runner.report()
  assert report.count("JOIN") == 3 and report.count("(compiled)") == 2 and "cpu:0" in report
  assert str(second).startswith("JOIN at FL 4_1 on cpu:0: ")


def test_runner_execute_returns_one_buffer_per_output_binding():
  desc = dml.SplitDesc(
    dml.TensorDesc("FLOAT32", (4,)),
    axis=0,
    output_tensors=(dml.TensorDesc("FLOAT32", (2,)), dml.TensorDesc("FLOAT32", (2,))),
  )
  buffer = np.zeros(8, np.float32)
  inputs = [dml.Binding(np.arange(4, dtype=np.float32))]
  outputs = [dml.Binding(buffer), dml.Binding(buffer, 16)]
  record = device_lib.Runner().execute(desc, inputs, outputs)
  want = dml.execute(desc, inputs, outputs)
  assert isinstance(record.output, tuple) and len(record.outputs) == 2
  for got, expected in zip(record.outputs, want, strict=True):
    assert_bits_equal(got, expected)


def test_runner_execute_binds_owned_by_dml_inputs_like_dml_execute():
  owned = dml.TensorDesc("FLOAT32", (2, 2), flags=dml.TensorFlags.OWNED_BY_DML)
  desc = dml.ElementWiseIdentityDesc(owned, dml.TensorDesc("FLOAT32", (2, 2)), scale_bias=(2, 1))
  inputs = [dml.Binding(np.arange(4, dtype=np.float32))]
  outputs = [dml.Binding(np.zeros(4, np.float32))]
  record = device_lib.Runner().execute(desc, inputs, outputs)
  assert_bits_equal(record.output, dml.execute(desc, inputs, outputs)[0])
  assert_bits_equal(record.output, np.array([1, 3, 5, 7], np.float32))


def test_runner_execute_with_donation():
  desc, inputs, _ = _padded_pitch_output()
  target = jax.device_put(np.full(32, 0x5A5A, np.uint16), jax.devices("cpu")[0])
  record = device_lib.Runner().execute(
    desc, inputs, [dml.Binding(target, offset=16)], device="cpu", donate=True
  )
  assert_bits_equal(record.output, dml.execute(*_padded_pitch_output())[0])


def test_runner_execute_checks_like_dml_execute():
  desc, inputs, outputs = _join_at_offsets_of_one_buffer()
  old = device_lib.Runner("2_1")
  with pytest.raises(dml.DmlValidationError, match=r"at DML_FEATURE_LEVEL_2_1"):
    old.execute(desc, inputs, outputs)  # 3 dimensions: JOIN takes them from 3_1
  runner = device_lib.Runner()
  with pytest.raises(
    dml.DmlBindingError, match=r"InputTensors\[1\] bound at offset 8 .*multiple of 16"
  ):
    runner.execute(desc, [inputs[0], dml.Binding(inputs[1].buffer, 8), inputs[2]], outputs)
  with pytest.raises(TypeError, match=r"inputs: one entry per tensor"):
    runner.execute(desc, inputs[:2], outputs)
  assert not runner.records and not old.records


def test_runner_execute_inside_jit_points_to_dml_execute():
  desc, inputs, outputs = _zero_stride_input()
  runner = device_lib.Runner()
  with pytest.raises(
    TypeError, match=r"cannot\s+be traced .*call dml\.execute\(desc, inputs, outputs\)"
  ):
    jax.jit(lambda row: runner.execute(desc, [dml.Binding(row)], outputs).output)(inputs[0].buffer)
  assert not runner.records


def test_describe_names_the_device():
  cpu = jax.devices("cpu")[0]
  assert device_lib.describe(cpu) == "cpu:0"
