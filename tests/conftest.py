"""Shared test settings.

Tests that need one 64-bit mode use the `x64` / `no_x64` fixtures, which set
jax_enable_x64 for the test's duration (jax.enable_x64 is a context manager);
other tests run in whatever mode the process has.

Hypothesis profiles: "ci" (default; bounded so the suite stays fast on two
cores) and "long" (HYPOTHESIS_PROFILE=long, for the documented long runs).
"""

import os

if os.environ.get("PYTEST_XDIST_WORKER"):
  # Several test processes share a GPU: none takes most of its memory up front.
  os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402 (after the setting above, which jax reads when it starts a GPU)
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
  "ci",
  max_examples=40,
  deadline=None,
  derandomize=True,
  print_blob=True,
  suppress_health_check=[
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.function_scoped_fixture,
  ],
)
settings.register_profile(
  "long",
  max_examples=10_000,
  deadline=None,
  print_blob=True,
  suppress_health_check=[
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.function_scoped_fixture,
  ],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# The shared helpers assert too: rewrite their asserts as pytest does a test file's.
pytest.register_assert_rewrite("tests.helpers")


@pytest.fixture
def x64():
  with jax.enable_x64(True):
    yield


@pytest.fixture
def no_x64():
  with jax.enable_x64(False):
    yield


# -- Markers: what the x64 pass runs --------------------------------------------------------
# The README's test command runs the suite with jax_enable_x64 off, then on with
# `-m "not mode_independent"`: the second pass runs only what can depend on the mode
# (pyproject.toml registers the markers). Besides the modules that carry the mark themselves
# (`pytestmark`: no JAX arrays, or a subprocess whose environment pins the mode), a test that
# takes the `x64` or `no_x64` fixture runs in that mode whatever the process's, so it is
# mode-independent too. A test that picks its mode at run time (`request.getfixturevalue`) or
# runs operators in the process's mode is not, and runs in both passes.

MODE_FIXTURES = frozenset({"x64", "no_x64"})


def pytest_collection_modifyitems(items):
  for item in items:
    if MODE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
      item.add_marker(pytest.mark.mode_independent)


# -- end of markers ---------------------------------------------------------------------------
