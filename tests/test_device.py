"""The device layer: devices, placement, the executable cache, the run log, threads."""

import concurrent.futures

import jax
import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src import device as device_lib
from dml_jax._src import reference


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


def test_describe_names_the_device():
  cpu = jax.devices("cpu")[0]
  assert device_lib.describe(cpu) == "cpu:0"
