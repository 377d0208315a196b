"""DirectML's documented examples, stored in the package with their provenance.

Each `Fixture` is one worked example of an operator's documentation page (or a
model file of DirectML's samples): the operator, its parameters, its input
tensors, the output DirectML computes, where it comes from, and the documentation
errata applied to it. `dml_jax.conformance` runs them.

Examples:
  >>> from dml_jax import fixtures
  >>> fixture = fixtures.get_fixture("gather_elements/axis-0")
  >>> fixture.op, fixture.params
  ('GATHER_ELEMENTS', mappingproxy({'axis': 0}))
  >>> sorted(fixture.arrays())
  ['indices', 'input']
  >>> len(fixtures.load_fixtures("JOIN")) >= 1
  True
"""

from dml_jax._src.fixtures import DATA_TYPES as DATA_TYPES
from dml_jax._src.fixtures import FORMAT as FORMAT
from dml_jax._src.fixtures import Erratum as Erratum
from dml_jax._src.fixtures import Fixture as Fixture
from dml_jax._src.fixtures import FixtureTensor as FixtureTensor
from dml_jax._src.fixtures import get_fixture as get_fixture
from dml_jax._src.fixtures import load_fixtures as load_fixtures

__all__ = [
  "DATA_TYPES",
  "FORMAT",
  "Erratum",
  "Fixture",
  "FixtureTensor",
  "get_fixture",
  "load_fixtures",
]
