"""The contract every registered operator keeps, checked for each one the registry holds.

A new operator module that registers a descriptor is tested here without a line of
its own: its support tables, its fixtures (valid from its introduction level, outputs
inferred as documented), its repr, HTML and explanation, `from_dml`, its functional
API against the fixtures and the NumPy oracle, one trace per shapes, a jaxpr of data
movement only, the 64-bit policy, and that it has an oracle, a strategy and fixtures.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types

import hypothesis
import jax
import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src import dispatch, reference, registry
from dml_jax._src.fields import FieldKind, dml_fields
from dml_jax._src.fixtures import load_fixtures
from tests import per_operator
from tests.helpers import assert_bits_equal

OPERATORS = sorted(registry.operators())
OLDEST = min(dml.FeatureLevel)
NEWEST = max(dml.FeatureLevel)


def _desc_type(op):
  return registry.lookup(op)


def _fixture_descriptors(op):
  from dml_jax._src.conformance import descriptor_for

  return [(fixture, descriptor_for(fixture)) for fixture in load_fixtures(op)]


def _without_outputs(desc):
  """`desc` with the outputs it can infer left out; a required output (SPLIT's
  OutputTensors, which DirectML never infers) stays as given."""
  changes = {f.name: None for f in dml_fields(desc) if f.output and f.optional}
  return dataclasses.replace(desc, **changes)


def _outputs_are_inferred(desc):
  return all(f.optional for f in dml_fields(desc) if f.output)


def _one_more_where_fixed(desc, sizes):
  """`sizes` with one more element in the last dimension that the inputs fix (None: they fix
  none, as for an operator that reads no input: the fills). Output dimensions whose size no
  input fixes (any size there makes another valid descriptor) are the operators' own
  `FREE_OUTPUT_DIMENSIONS` (ONE_HOT's depth, on Axis)."""
  free = per_operator.FREE_OUTPUT_DIMENSIONS.get(desc.OPERATOR, lambda desc: set())(desc)
  fixed = [d for d in range(len(sizes)) if d not in free] if desc.dml_inputs() else []
  if not fixed:
    return None
  d = fixed[-1]
  return sizes[:d] + (sizes[d] + 1,) + sizes[d + 1 :]


@pytest.mark.mode_independent  # descriptors only
@pytest.mark.parametrize("op", OPERATORS)
def test_registered_under_directml_names(op):
  cls = registry.lookup(op)
  assert cls.OPERATOR == op
  assert registry.lookup(f"DML_OPERATOR_{op}") is cls
  assert registry.lookup(op.lower()) is cls
  assert registry.lookup(op.lower().replace("_", "-")) is cls  # a command line's spelling
  assert getattr(dml, cls.__name__) is cls  # re-exported
  assert callable(getattr(dml, cls.FUNCTION))
  assert ">>>" in cls.__doc__ and ">>>" in getattr(dml, cls.FUNCTION).__doc__


def test_registering_a_name_twice_is_refused():
  cls = registry.lookup("JOIN")
  with pytest.raises(ValueError, match="DML_OPERATOR_JOIN is registered already"):
    registry.register(cls)


def test_unknown_names_are_reported_all_at_once():
  with pytest.raises(dml.UnknownOperatorError) as info:
    registry.lookup_all(["JOIN", "NOPE", "dml_operator_nada"])
  assert info.value.names == ("NOPE", "dml_operator_nada")
  assert isinstance(info.value, KeyError) and isinstance(info.value, dml.DmlError)
  assert "2 unknown DirectML operators: 'NOPE', 'dml_operator_nada'" in str(info.value)


@pytest.mark.mode_independent  # tables of callables, no JAX arrays
def test_the_per_operator_tables_are_checked():
  """tests/per_operator.py refuses a name declared twice, a key that names no operator and a
  registered operator without a strategy: a new operator fails loudly until it has one."""
  first = types.SimpleNamespace(__name__="tests.ops.test_a", VALID={"JOIN": None})
  second = types.SimpleNamespace(__name__="tests.ops.test_b", VALID={"JOIN": None})
  with pytest.raises(ValueError, match=r"VALID\['JOIN'\] is declared in both tests.ops.test_a and"):
    per_operator.merge([first, second], "VALID", by_operator=True)
  typo = types.SimpleNamespace(__name__="tests.ops.test_c", MUTANTS={"JION": None})
  with pytest.raises(ValueError, match="names 'JION', which is no registered operator"):
    per_operator.merge([typo], "MUTANTS", by_operator=True)
  assert per_operator.merge([typo], "VALID", by_operator=True) == {}
  with pytest.raises(LookupError, match="no VALID strategy for ARGMAX, ARGMIN, "):
    per_operator.require_strategies({})
  per_operator.require_strategies(per_operator.VALID)


@pytest.mark.mode_independent  # descriptors only
@pytest.mark.parametrize("op", OPERATORS)
def test_support_tables_name_every_tensor_role(op):
  cls = _desc_type(op)
  roles = {f.dml_name for f in dml_fields(cls) if f.kind.is_tensor}
  assert cls.SUPPORT.operator == op
  for level, table in cls.SUPPORT.tables.items():
    assert set(table) == roles, level
    for row in table.values():
      low, high = row.dimension_counts
      assert 1 <= low <= high <= 8 and row.data_types, (level, row)
  for level in dml.FeatureLevel:
    assert (cls.SUPPORT.at(level) is None) == (level < cls.SUPPORT.introduced)


@pytest.mark.mode_independent  # descriptors only
@pytest.mark.parametrize("op", OPERATORS)
def test_has_fixtures_an_oracle_and_a_strategy(op):
  cls = _desc_type(op)
  assert load_fixtures(op)
  assert callable(getattr(reference, cls.FUNCTION))
  assert op in per_operator.VALID


@pytest.mark.mode_independent  # descriptors only
@pytest.mark.parametrize("op", OPERATORS)
def test_fixtures_are_valid_from_the_introduction_level_only(op):
  for fixture, desc in _fixture_descriptors(op):
    introduced = type(desc).SUPPORT.introduced
    assert desc.is_valid(NEWEST), (fixture.id, desc.violations(NEWEST))
    for level in dml.FeatureLevel:
      if level < introduced:
        assert [v.field for v in desc.violations(level)] == ["DML_OPERATOR_TYPE"], fixture.id


def _left_free(desc, rule):
  """Whether no field but the first output fixes its `rule` (DataType or Sizes): what the
  descriptor infers there is what that output says, whatever it says."""
  attribute = {"DataType": "data_type", "Sizes": "sizes"}[rule]
  inferred = (desc.infer_outputs() or (None,))[0]
  return inferred is not None and getattr(inferred, attribute) == getattr(
    desc.outputs[0], attribute
  )


@pytest.mark.mode_independent  # descriptors only
@pytest.mark.parametrize("op", OPERATORS)
def test_outputs_are_inferred_as_documented_and_a_wrong_output_is_refused(op):
  for fixture, desc in _fixture_descriptors(op):
    inferred = _without_outputs(desc)
    assert [(t.data_type.name, t.sizes) for t in inferred.outputs] == [
      (t.data_type, t.sizes) for t in fixture.outputs
    ], fixture.id
    if not _outputs_are_inferred(desc):  # given outputs: what infer_outputs accepts as is
      assert desc.infer_outputs() == desc.outputs, fixture.id
    first = desc.outputs[0]
    other_type = dml.DataType.INT8 if first.data_type != dml.DataType.INT8 else dml.DataType.UINT8
    wrong_type = dataclasses.replace(first, data_type=other_type, total_tensor_size_in_bytes=None)
    wrongs = [(wrong_type, "DataType")]
    more = _one_more_where_fixed(desc, first.sizes)
    if more is not None:
      wrong_sizes = dataclasses.replace(first, sizes=more, total_tensor_size_in_bytes=None)
      wrongs.append((wrong_sizes, "Sizes"))
    output_field = next(f for f in dml_fields(desc) if f.output)
    for wrong, rule in wrongs:
      value = wrong if output_field.kind is FieldKind.TENSOR else (wrong, *desc.outputs[1:])
      bad = dataclasses.replace(desc, **{output_field.name: value})
      if _left_free(bad, rule):  # the output alone holds it: CAST's type, DIAGONAL_MATRIX's sizes
        continue
      fields = [v.field for v in bad.violations(NEWEST)]
      named = [f for f in fields if f.endswith(f".{rule}") and "Output" in f]
      if rule == "DataType":  # or the DataType field the outputs must match (ValueDataType)
        named += [f for f in fields if f == desc.OUTPUT_DATA_TYPE_FROM]
      assert named, (fixture.id, fields)


@pytest.mark.mode_independent  # descriptors only
@pytest.mark.parametrize("op", OPERATORS)
def test_repr_round_trips_and_every_view_renders(op):
  namespace = {"TensorDesc": dml.TensorDesc, "TensorFlags": dml.TensorFlags, **vars(dml)}
  for fixture, desc in _fixture_descriptors(op):
    for d in {desc: None, _without_outputs(desc): None}:  # one view if nothing can be left out
      assert eval(repr(d), namespace) == d, repr(d)
      assert str(d).startswith(f"DML_OPERATOR_{op}(")
      text = str(d.html())
      assert all(field in text for field, _ in d.dml_attributes())
      for level in (OLDEST, NEWEST):
        explanation = dml.explain(d, level)
        for section in ("Fields:", "Output:", f"Feature level {level}:", "Validation:"):
          assert section in explanation, (fixture.id, section)
        assert dml.explain_html(d, level).text == explanation
      assert d.explain_output()


@pytest.mark.mode_independent  # descriptors only
@pytest.mark.parametrize("op", OPERATORS)
def test_from_dml_reads_directml_field_names(op):
  for fixture, desc in _fixture_descriptors(op):
    document = desc.to_dml()
    assert json.loads(json.dumps(document)) == document, fixture.id  # plain JSON
    given = {f.dml_name for f in dml_fields(desc) if getattr(desc, f.name) is not None}
    assert set(document) == given, fixture.id
    assert type(desc).from_dml(document) == desc, fixture.id
  with pytest.raises(ValueError, match="has no field 'NotAField'"):
    type(desc).from_dml({**desc.to_dml(), "NotAField": 1})


def _quiet_nans_only(desc):
  """Whether every NaN the descriptor holds is the quiet NaN JSON's "nan" reads as."""
  return all(
    not isinstance(value, float)
    or not math.isnan(value)
    or np.float64(value).tobytes() == np.float64(math.nan).tobytes()
    for _, value in desc.dml_attributes()
  )


@pytest.mark.mode_independent  # descriptors only
@pytest.mark.parametrize("op", OPERATORS)
@hypothesis.settings(max_examples=8, deadline=None, database=None)
@hypothesis.given(data=hypothesis.strategies.data())
def test_to_dml_round_trips_through_from_dml(op, data):
  desc = data.draw(per_operator.VALID[op]()).desc
  hypothesis.assume(_quiet_nans_only(desc))  # JSON keeps no NaN payload
  document = desc.to_dml()
  assert json.loads(json.dumps(document, allow_nan=False)) == document
  assert type(desc).from_dml(document) == desc
  complete = type(desc).from_dml(desc.to_dml(infer_outputs=True))
  assert complete.outputs == desc.outputs
  assert all(t is not None for _, _, t in complete.dml_outputs())


def _runnable(op):
  return [f for f in load_fixtures(op) if not f.shape_only]


def _call(fixture, **arrays):
  cls = registry.lookup(fixture.op)
  inputs = {**fixture.arrays(), **arrays}
  return getattr(dml, cls.FUNCTION)(**inputs, **fixture.params)


@pytest.mark.parametrize("op", OPERATORS)
def test_functional_api_and_oracle_give_the_documented_outputs(op):
  cls = _desc_type(op)
  for fixture in _runnable(op):
    got = _call(fixture)
    oracle = getattr(reference, cls.FUNCTION)(**fixture.arrays(), **fixture.params)
    outputs = got if isinstance(got, list | tuple) else [got]
    oracles = oracle if isinstance(oracle, list | tuple) else [oracle]
    for out, want, expected in zip(outputs, oracles, fixture.outputs, strict=True):
      assert_bits_equal(out, expected.data)
      assert_bits_equal(want, expected.data)


@pytest.mark.parametrize("op", OPERATORS)
def test_one_trace_per_shapes(op, monkeypatch):
  traces = []
  original = dispatch.apply  # the functional API lowers through it, once per trace
  monkeypatch.setattr(dispatch, "apply", lambda desc, *a: traces.append(1) or original(desc, *a))
  jax.clear_caches()
  for fixture in _runnable(op)[:1]:
    for _ in range(3):
      jax.block_until_ready(_call(fixture))
    assert len(traces) == 1, fixture.id


ALLOWED_PRIMITIVES = {
  # data movement
  "gather",
  "concatenate",
  "reshape",
  "broadcast_in_dim",
  "squeeze",
  "slice",
  "dynamic_slice",
  "dynamic_update_slice",
  "pad",
  "transpose",
  "rev",
  "scatter",
  "select_n",
  "convert_element_type",
  "bitcast_convert_type",
  "iota",
  # index arithmetic and the range rule
  "add",
  "sub",
  "mul",
  "rem",
  "min",
  "max",
  "lt",
  "le",
  "eq",
  "ne",
  "not",
  "and",
  "reduce_and",
  # the scatters' range rule (dropped updates) and their winners (a max of positions)
  "gt",
  "ge",
  "scatter-max",
  # conversions by bits (CAST's NaN payloads and single rounding) and running counts
  # (NONZERO_COORDINATES's output rows)
  "or",
  "shift_left",
  "shift_right_logical",
  "cumsum",
  "reduce_sum",
  # FILL_VALUE_SEQUENCE's arithmetic: constants XLA must not simplify on (x + 0.0 is not x
  # for -0.0), and sign(p) * |p|, which keeps its product from fusing into an FMA on the CPU
  "optimization_barrier",
  "sign",
  "abs",
  # the selection operators (ARGMIN, ARGMAX, TOP_K, TOP_K1): integer keys that rank floats,
  # compared and picked, never computed with
  "argmax",
  "argmin",
  "reduce_max",
  "reduce_min",
  "top_k",
  "xor",
  "shift_right_arithmetic",
  # the scans (CUMULATIVE_SUMMATION, CUMULATIVE_PRODUCT): running tallies, floats in a loop
  # over the axis (add and mul in walking order), integers through XLA's cumulative ones
  "scan",
  "cumprod",
  # choices between forms of the same result
  "platform_index",
  "cond",
  "custom_jvp_call",
  "custom_vjp_call",
  "jit",
  "pjit",
}


def _primitives(jaxpr):
  for eqn in jaxpr.eqns:
    yield eqn.primitive.name
    for param in eqn.params.values():
      for sub in param if isinstance(param, tuple | list) else [param]:
        inner = getattr(sub, "jaxpr", sub)
        if hasattr(inner, "eqns"):
          yield from _primitives(inner)


@pytest.mark.parametrize("op", OPERATORS)
def test_the_jaxpr_holds_data_movement_only(op):
  for fixture in _runnable(op):
    arrays = fixture.arrays()
    jaxpr = jax.make_jaxpr(lambda a, fixture=fixture: _call(fixture, **a))(arrays)
    found = set(_primitives(jaxpr.jaxpr))
    assert found <= ALLOWED_PRIMITIVES, (fixture.id, found - ALLOWED_PRIMITIVES)


@pytest.mark.parametrize("op", OPERATORS)
def test_64_bit_policy_with_x64_off(op, no_x64):
  cls = _desc_type(op)
  for fixture in _runnable(op)[:1]:
    arrays = fixture.arrays()
    for field in dml_fields(cls):
      if field.output or not field.kind.is_tensor or field.kind is FieldKind.TENSOR_ARRAY:
        continue
      if field.argument not in arrays:  # an optional input the fixture leaves out
        continue
      value = np.asarray(arrays[field.argument])
      if field.index:  # host indices that do not fit in 32 bits are refused, never wrapped
        wide = value.astype(np.uint64 if value.dtype.kind == "u" else np.int64)
        wide.flat[0] = 2**40
        with pytest.raises(ValueError, match="does not fit"):
          _call(fixture, **{field.argument: wide})
      elif value.dtype.kind == "f":  # 64-bit data cannot be held: a TypeError that says why
        with pytest.raises(TypeError, match="jax_enable_x64"):
          _call(fixture, **{field.argument: value.astype(np.float64)})
