"""Fuzzing the descriptor layer against the reference.

Valid descriptors, drawn at random feature levels within each level's tables,
give the NumPy reference's output bit for bit through the functional API at
that level. Mutants that break one rule are rejected with DmlValidationError
naming the broken field, never with another exception.

CI runs a bounded budget, a fixed total shared out among the operators (so that each new
operator adds no time to the suite, only fewer draws per operator, never fewer than a floor).
The long run draws 10,000 valid and 10,000 invalid
descriptors per operator in 16 shards:
  HYPOTHESIS_PROFILE=long JAX_PLATFORMS=cpu python -m pytest tests/test_fuzz.py -n 16 -p no:benchmark
(pytest-xdist; recorded in the README)
"""

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dml_jax as dml
from tests import per_operator, strategies
from tests.helpers import assert_bits_equal

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
SHARDS = 16 if LONG else 1
VALID_BUDGET, INVALID_BUDGET = 160, 1200  # draws per CI run, all operators together
VALID_EXAMPLES = 10_000 // SHARDS if LONG else max(4, VALID_BUDGET // len(strategies.OPERATORS))
INVALID_EXAMPLES = (
  10_000 // SHARDS if LONG else max(30, INVALID_BUDGET // len(strategies.OPERATORS))
)


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(SHARDS))
@pytest.mark.parametrize("op", strategies.OPERATORS)
@settings(max_examples=VALID_EXAMPLES)
@given(data=st.data())
def test_valid_descriptor_matches_reference(op, shard, data, x64):
  case = data.draw(per_operator.VALID[op](), label="case")
  assert case.desc.is_valid(case.level), case.desc.violations(case.level)
  out = case.run(*case.arrays, case.level)
  if isinstance(out, list | tuple):  # OutputTensors (SPLIT) or several outputs: one array each
    expected = case.expected()
    assert [o.shape for o in out] == [t.sizes for t in case.desc.outputs]
    assert len(out) == len(expected)
    for got, want in zip(out, expected, strict=True):
      assert_bits_equal(got, want)
    return
  assert out.shape == case.desc.output.sizes
  assert_bits_equal(out, case.expected())


@pytest.mark.slow
@pytest.mark.mode_independent  # descriptors alone, no JAX arrays
@pytest.mark.parametrize("shard", range(SHARDS))
@pytest.mark.parametrize("op", strategies.OPERATORS)
@settings(max_examples=INVALID_EXAMPLES)
@given(data=st.data())
def test_mutated_descriptor_is_rejected_naming_the_field(op, shard, data):
  case, name, mutant, field = data.draw(
    strategies.invalid_case(
      per_operator.VALID[op](),
      per_operator.MUTANTS.get(op),
      per_operator.FREE_OUTPUT_DIMENSIONS.get(op),
    ),
    label="mutant",
  )
  try:
    mutant.validate(case.level)
  except dml.DmlValidationError as error:
    fields = [v.field for v in error.violations]
    assert field in fields, (name, fields)
    assert f"  - {field}: " in str(error)
  else:
    pytest.fail(f"{name}: {mutant!r} accepted at FL {case.level}")


@pytest.mark.parametrize(
  "call, message",
  [
    (
      lambda: dml.gather_elements(np.zeros(3, np.float32), np.zeros(3, np.float32), axis=0),
      r"IndicesTensor must have an integer dtype; got float32",
    ),
    (
      lambda: dml.gather_nd(np.zeros(3, np.float32), np.zeros((1, 1), bool)),
      r"IndicesTensor must have an integer dtype; got bool",
    ),
    (
      lambda: dml.reverse_subsequences(np.zeros(3, np.float32), np.ones(1, np.float16), axis=0),
      r"SequenceLengthsTensor must have an integer dtype; got float16",
    ),
    (
      lambda: dml.gather_elements(np.zeros(3, np.float32), np.zeros(3, np.int32), axis=0.0),
      r"Axis must be an integer; got float 0\.0",
    ),
    (lambda: dml.join([np.zeros(3, np.float32)], axis="0"), r"Axis must be an integer; got str"),
    (
      lambda: dml.gather_nd(
        np.zeros(3, np.float32), np.zeros((1, 1), np.int32), batch_dimension_count=None
      ),
      r"BatchDimensionCount must be an integer; got NoneType",
    ),
    (
      lambda: dml.join(np.zeros((2, 3), np.float32), axis=0),
      r"inputs must be a sequence of arrays; got ndarray",
    ),
    (
      lambda: dml.gather_elements(np.zeros(3, bool), np.zeros(3, np.int32), axis=0),
      r"DirectML has no data type for dtype bool",
    ),
    (
      lambda: dml.GatherElementsDesc("FLOAT32[3]", dml.TensorDesc("INT32", (3,)), axis=0),
      r"InputTensor must be a TensorDesc; got str",
    ),
    (lambda: dml.TensorDesc("FLOAT32", (2.5,)), r"Sizes\[0\] must be an integer; got float 2\.5"),
  ],
)
def test_wrong_kinds_of_argument_are_type_errors(call, message):
  with pytest.raises(TypeError, match=message):
    call()
