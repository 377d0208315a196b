"""Every DirectML fixture through the functional API, the descriptors and the Runner."""

import chex
import pytest
from absl.testing import parameterized

import dml_jax as dml
from dml_jax._src import conformance, reference, registry
from dml_jax._src.device import Runner
from dml_jax._src.fields import dml_fields
from dml_jax._src.fixtures import get_fixture, load_fixtures
from tests.helpers import assert_bits_equal, fixture_file_entries

FIXTURES = load_fixtures()
WITH_DATA = [f for f in FIXTURES if not f.shape_only]
SHAPE_ONLY = [f for f in FIXTURES if f.shape_only]


def _run(fixture, arrays):
  """The operator's functional API (found through the registry) on the fixture's arrays."""
  function = getattr(dml, registry.lookup(fixture.op).FUNCTION)
  return function(**arrays, **fixture.params)


def _outputs(out):
  """A functional call's outputs as a list: one array, OutputTensors' list (SPLIT), or the
  tuple of several outputs (NONZERO_COORDINATES, TOP_K's values and indices)."""
  return list(out) if isinstance(out, list | tuple) else [out]


def test_every_registered_operator_has_fixtures():
  assert {f.op for f in FIXTURES} == set(registry.operators())
  # Every entry of the fixture file is loaded, the shape-only ones flagged (counted from the
  # file, so that a new fixture or operator changes no number here).
  entries = fixture_file_entries()
  assert [f.id for f in FIXTURES] == [e["id"] for e in entries]
  assert [f.id for f in SHAPE_ONLY] == [e["id"] for e in entries if e["shape_only"]]
  assert SHAPE_ONLY and WITH_DATA


class FunctionalApiTest(chex.TestCase):
  """Each fixture through the functional API, eagerly, jitted and with device-put inputs."""

  @chex.variants(with_jit=True, without_jit=True, with_device=True)
  @parameterized.named_parameters((f.id.replace("/", "__"), f.id) for f in WITH_DATA)
  def test_reproduces_fixture(self, fixture_id):
    fixture = get_fixture(fixture_id)
    run = self.variant(lambda arrays: _run(fixture, arrays))
    outputs = _outputs(run(fixture.arrays()))
    assert len(outputs) == len(fixture.outputs)
    for out, expected in zip(outputs, fixture.outputs, strict=True):
      chex.assert_shape(out, expected.sizes)
      chex.assert_type(out, expected.dtype)
      assert_bits_equal(out, expected.data)


@pytest.mark.jax_range  # every operator, jitted, at both ends of jax's range
@pytest.mark.parametrize("fixture", WITH_DATA, ids=lambda f: f.id)
def test_runner_reproduces_fixture(fixture):
  desc = conformance.descriptor_for(fixture)
  record = Runner().run(desc, *conformance.input_arrays(fixture), device="cpu")
  assert len(record.outputs) == len(fixture.outputs)
  for out, expected in zip(record.outputs, fixture.outputs, strict=True):
    assert_bits_equal(out, expected.data)


@pytest.mark.mode_independent  # NumPy and descriptors: no JAX array
@pytest.mark.parametrize("fixture", WITH_DATA, ids=lambda f: f.id)
def test_reference_reproduces_fixture(fixture):
  fn = getattr(reference, registry.lookup(fixture.op).FUNCTION)  # named like the function
  outputs = _outputs(fn(**fixture.arrays(), **fixture.params))
  for out, expected in zip(outputs, fixture.outputs, strict=True):
    assert_bits_equal(out, expected.data)


@pytest.mark.mode_independent  # NumPy and descriptors: no JAX array
@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.id)
def test_descriptor_infers_documented_output(fixture):
  desc = conformance.descriptor_for(fixture).validate()
  documented = tuple(dml.TensorDesc(t.data_type, t.sizes) for t in fixture.outputs)
  if not all(f.optional for f in dml_fields(desc) if f.output):
    # Required outputs (SPLIT's OutputTensors, ONE_HOT's OutputTensor, which alone holds the
    # depth): given, and accepted as is.
    assert desc.infer_outputs() == documented
    return
  outputs = {f.name: None for f in dml_fields(desc) if f.output}
  inferred = type(desc)(**{**vars(desc), **outputs})
  assert inferred.outputs == documented


@pytest.mark.parametrize("fixture", SHAPE_ONLY, ids=lambda f: f.id)
def test_shape_only_fixture_rejects_the_page_formula(fixture):
  # The page's size formula keeps InputTensor.Sizes[n - t:], here {5,6,7}: DirectML's
  # own example (and DirectMLX) say {6,7}. The descriptor must reject the formula's shape:
  # GATHER_ND's output, or the updates SCATTER_ND takes (the output GATHER_ND would give).
  desc = conformance.descriptor_for(fixture)
  wrong = dml.TensorDesc("FLOAT32", (1, 2, 5, 6, 7))
  field, name = (
    ("updates_tensor", "UpdatesTensor")
    if hasattr(desc, "updates_tensor")
    else ("output_tensor", "OutputTensor")
  )
  bad = type(desc)(**{**vars(desc), field: wrong})
  with pytest.raises(
    dml.DmlValidationError,
    match=rf"{name}\.Sizes: must be exactly"
    r" \{1,1,2,6,7\}[^;\n]*; got \{1,2,5,6,7\}",
  ):
    bad.validate()


def test_fixtures_record_provenance_and_errata():
  for fixture in FIXTURES:
    assert fixture.provenance["repository"] and fixture.provenance["example"]
  errata = {f.id: f.errata for f in FIXTURES}
  assert any("UINT32" in e.issue for e in errata["gather_elements/axis-0"])
  assert all(errata[f.id] for f in SHAPE_ONLY)
