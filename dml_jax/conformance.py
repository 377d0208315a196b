"""The conformance report: DirectML's documented examples run on JAX devices, bit for bit.

`python -m dml_jax` is `main()`. The pieces are public for notebooks and scripts:
`descriptor_for` and `input_arrays` turn a fixture into what the operator takes,
`check_fixture` runs one, `run_report` runs many on several devices, `summarize`
counts the outcomes per operator and device.

Examples:
  >>> from dml_jax import conformance, fixtures
  >>> from dml_jax.device import Runner
  >>> fixture = fixtures.get_fixture("join/example-2-axis-1")
  >>> print(conformance.descriptor_for(fixture))
  DML_OPERATOR_JOIN(InputTensors[0]=FLOAT32[1,1,2,2], InputTensors[1]=FLOAT32[1,1,2,2], InputTensors[2]=FLOAT32[1,1,2,2], Axis=1, InputCount=3) -> FLOAT32[1,3,2,2]
  >>> outcome = conformance.check_fixture(fixture, Runner(), "cpu")
  >>> outcome.status, outcome.detail
  ('passed', 'bit-exact')
"""

from dml_jax._src.conformance import Outcome as Outcome
from dml_jax._src.conformance import check_fixture as check_fixture
from dml_jax._src.conformance import descriptor_for as descriptor_for
from dml_jax._src.conformance import input_arrays as input_arrays
from dml_jax._src.conformance import main as main
from dml_jax._src.conformance import run_report as run_report
from dml_jax._src.conformance import summarize as summarize

__all__ = [
  "Outcome",
  "check_fixture",
  "descriptor_for",
  "input_arrays",
  "main",
  "run_report",
  "summarize",
]
