"""Shared test settings.

Tests that need one 64-bit mode use the `x64` / `no_x64` fixtures, which set
jax_enable_x64 for the test's duration (jax.enable_x64 is a context manager);
other tests run in whatever mode the process has.

Hypothesis profiles: "ci" (default; bounded so the suite stays fast on two
cores) and "long" (HYPOTHESIS_PROFILE=long, for the documented long runs).

The native CPU kernels' cache is the checkout's own test cache, never the user's:
`pytest_configure` points DML_JAX_CACHE_DIR at a private folder in the temporary directory
named after the checkout (the pytest-xdist workers and the tests' subprocesses inherit it), so
the test command's two passes build each kernel they need once (a few seconds each); the
library's own checks (the folder's owner and mode, each library's recorded digest) guard what
is loaded from it. Where that folder exists but is not this user's private one, a fresh folder
serves the run and is removed at its end. The tests of the cache itself make their own folders.
JAX's persistent compilation cache gets a folder of the same kind (dml_jax-test-xla-...), so
the x64 pass loads the programs the first pass compiled rather than compiling them again.
"""

import hashlib
import os
import pathlib
import shutil
import stat
import tempfile

if os.environ.get("PYTEST_XDIST_WORKER"):
  # Several test processes share a GPU: none takes most of its memory up front.
  os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402 (after the setting above, which jax reads when it starts a GPU)
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
  "ci",
  max_examples=20,
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

TEST_KERNEL_CACHE_PREFIX = "dml_jax-test-kernels-"
TEST_XLA_CACHE_PREFIX = "dml_jax-test-xla-"
_XLA_CACHE = "_DML_JAX_TEST_XLA_CACHE"  # the run's compilation cache, shared with its workers
_KERNEL_CACHE = "_DML_JAX_TEST_KERNEL_CACHE"  # the run's kernel cache, made by its first process
_KERNEL_CACHE_KEY = pytest.StashKey[str]()


def pytest_configure(config):
  if os.environ.get(_KERNEL_CACHE):  # a pytest-xdist worker: the controller's folders
    os.environ["DML_JAX_CACHE_DIR"] = os.environ[_KERNEL_CACHE]
    _use_compilation_cache(os.environ.get(_XLA_CACHE))
    return
  folder = _checkout_cache(config.rootpath, TEST_KERNEL_CACHE_PREFIX)
  if folder is None:
    folder = tempfile.mkdtemp(prefix=TEST_KERNEL_CACHE_PREFIX)  # made 0700
    config.stash[_KERNEL_CACHE_KEY] = folder  # removed at the run's end
  os.environ["DML_JAX_CACHE_DIR"] = os.environ[_KERNEL_CACHE] = folder
  xla = _checkout_cache(config.rootpath, TEST_XLA_CACHE_PREFIX)
  if xla is not None:
    os.environ[_XLA_CACHE] = xla
  _use_compilation_cache(xla)


def _use_compilation_cache(folder: str | None) -> None:
  """JAX's persistent compilation cache in `folder`, for every program however quick to
  compile (the x64 pass compiles many of the first pass's programs again: float32 data with
  explicit index types is the same program in both modes). The tests' subprocesses inherit it."""
  if folder is None:
    return
  settings = {
    "jax_compilation_cache_dir": folder,
    "jax_persistent_cache_min_compile_time_secs": 0,
    "jax_persistent_cache_min_entry_size_bytes": 0,
  }
  for name, value in settings.items():
    jax.config.update(name, value)
    os.environ[name.upper()] = str(value)


def _checkout_cache(root: pathlib.Path, prefix: str) -> str | None:
  """This checkout's cache folder for tests, kept between runs: made 0700 if missing; None if
  the name is taken by a folder that is not this user's private one."""
  digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:12]
  folder = pathlib.Path(tempfile.gettempdir()) / f"{prefix}{os.getuid()}-{digest}"
  try:
    folder.mkdir(mode=0o700)
  except FileExistsError:
    pass
  except OSError:
    return None
  found = folder.lstat()
  private = stat.S_ISDIR(found.st_mode) and stat.S_IMODE(found.st_mode) == 0o700
  return str(folder) if private and found.st_uid == os.getuid() else None


def pytest_unconfigure(config):
  folder = config.stash.get(_KERNEL_CACHE_KEY, None)
  if folder:
    shutil.rmtree(folder, ignore_errors=True)
    os.environ.pop(_KERNEL_CACHE, None)


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
  # The longest first, so that pytest-xdist's workers end together: a minute-long child
  # process started last would keep one worker busy while the other waits. Slow tests by the
  # seconds their mark states (`pytest.mark.slow(seconds=80)`), then the other slow tests,
  # then the rest, each in collection order.
  items.sort(key=_start_order)


def _start_order(item: pytest.Item) -> tuple[int, float]:
  slow = item.get_closest_marker("slow")
  return (2, 0.0) if slow is None else (1, -float(slow.kwargs.get("seconds", 0)))


# -- end of markers ---------------------------------------------------------------------------
