"""The functional API traces and validates once per shapes and dtypes, never per call.

The repeated calls are the operators' own (`TRACING_CALLS` in tests/ops/test_<module>.py).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dml_jax as dml
from dml_jax import GatherElementsDesc
from dml_jax._src import dtypes, registry
from dml_jax._src.arguments import tensor_operands
from tests import per_operator


@pytest.fixture
def traces(monkeypatch):
  """Counts calls of each descriptor's lowering (one per trace) and of validation."""
  counts = {"lower": 0, "validate": 0}
  for cls in registry.operators().values():
    original = cls.lower

    def lower(self, *arrays, _original=original):
      counts["lower"] += 1
      return _original(self, *arrays)

    monkeypatch.setattr(cls, "lower", lower)
  original_validate = dml.OperatorDesc.validate

  def validate(self, *args):
    counts["validate"] += 1
    return original_validate(self, *args)

  monkeypatch.setattr(dml.OperatorDesc, "validate", validate)
  jax.clear_caches()  # every shape below is traced afresh
  yield counts


@pytest.mark.parametrize("name", list(per_operator.TRACING_CALLS))
def test_repeated_calls_trace_and_validate_once(name, traces):
  for k in range(5):
    per_operator.TRACING_CALLS[name](k).block_until_ready()
  assert traces == {"lower": 1, "validate": 1}


def test_new_shapes_trace_again(traces):
  x = np.zeros((3, 5), np.float32)
  dml.gather_elements(x, np.zeros((2, 5), np.int32), axis=0)
  dml.gather_elements(x, np.zeros((2, 5), np.int32), axis=0)
  dml.gather_elements(x, np.zeros((4, 5), np.int32), axis=0)
  dml.gather_elements(x, np.zeros((4, 5), np.int32), axis=0, feature_level="4_1")
  # A new level validates again (in a new trace: the level is a static argument).
  assert traces == {"lower": 3, "validate": 3}


def test_the_eager_fast_path_agrees_with_as_operand():
  """JAX arrays skip as_operand on an eager call and declare no types (the jitted body derives
  them): same static key as NumPy arguments of the same dtypes, same errors, no tracers."""
  x = jnp.zeros(3, jnp.float32)
  dml.gather_elements(x, jnp.zeros(3, jnp.int32), axis=0)  # as_operand records ArrayImpl
  assert type(x) in dtypes.ARRAY_TYPES
  for data, index in [(np.float32, np.int32), (np.int8, np.uint32), (np.float16, np.uint8)]:
    fast = tensor_operands(GatherElementsDesc, jnp.zeros(3, data), jnp.zeros(3, index))
    general = tensor_operands(GatherElementsDesc, np.zeros(3, data), np.zeros(3, index))
    assert fast[1] is None and general[1] is None
    assert tensor_operands(dml.JoinDesc, *[jnp.zeros(3, data)] * 2)[1] is None
    assert tensor_operands(dml.JoinDesc, np.zeros(3, data), jnp.zeros(3, data))[1] is None
  with pytest.raises(TypeError, match="IndicesTensor must have an integer dtype; got float32"):
    dml.gather_elements(x, x, axis=0)
  with pytest.raises(TypeError, match="DirectML has no data type for dtype bool"):
    dml.join([x, jnp.zeros(3, bool)], axis=0)
  with pytest.raises(TypeError, match="Axis must be an integer; got bool True"):
    dml.reverse_subsequences(x.reshape(1, 3), jnp.ones((1, 1), jnp.uint32), axis=True)
  jax.jit(lambda x: dml.join([x, x], axis=0))(x)
  jax.vmap(lambda x: dml.join([x, x], axis=0))(x.reshape(3, 1))
  assert all(jax.Array in cls.__mro__ for cls in dtypes.ARRAY_TYPES)  # never a tracer class


def test_numpy_and_jax_arguments_share_a_trace(traces):
  x, i = np.zeros((3, 5), np.float32), np.zeros((2, 5), np.int32)
  dml.gather_elements(x, i, axis=0)
  dml.gather_elements(jnp.asarray(x), jnp.asarray(i), axis=0)
  dml.join([x, jnp.asarray(x)], axis=1)
  dml.join([jnp.asarray(x), x], axis=1)
  assert traces == {"lower": 2, "validate": 2}


def test_narrowed_host_indices_keep_their_declared_type(traces, no_x64):
  """With x64 off, int64 host indices run as int32 but validate as INT64: their own key."""
  x, i = np.zeros((3, 5), np.float32), np.zeros((2, 5), np.int64)
  assert tensor_operands(GatherElementsDesc, x, i)[1] == (
    dtypes.DataType.FLOAT32,
    dtypes.DataType.INT64,
  )
  dml.gather_elements(x, i, axis=0)
  dml.gather_elements(x, i.astype(np.int32), axis=0)
  assert traces == {"lower": 2, "validate": 2}
  with pytest.raises(dml.DmlValidationError, match="got INT64"):
    dml.gather_elements(x, i, axis=0, feature_level="2_1")
