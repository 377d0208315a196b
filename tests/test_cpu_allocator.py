"""dml_jax.cpu: the opt-in allocator setup, each case in a fresh interpreter (it changes malloc
for the whole process, and only before JAX's CPU client exists)."""

import json
import os
import pathlib
import platform
import subprocess
import sys
import textwrap

import jax.numpy as jnp
import pytest

from dml_jax import cpu
from dml_jax._src import cpu_allocator

ROOT = pathlib.Path(__file__).resolve().parents[1]
GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
needs_glibc = pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
# malloc's settings: no outcome here depends on the x64 mode (the fresh interpreters start in
# JAX's default one), so the x64 pass leaves the module out.
pytestmark = pytest.mark.mode_independent

# Minor page faults per 64 MiB block: malloc, touch every page, free, `calls` times; on the main
# thread and on a new thread (which gets an arena of its own unless M_ARENA_MAX is 1).
_FAULTS = """
import ctypes, resource, threading
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]

def faults(calls=4, size=64 << 20):
  counts = []
  for _ in range(calls):
    p = libc.malloc(size)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    ctypes.memset(p, 1, size)
    counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    libc.free(p)
  return counts

def thread_faults():
  out = []
  t = threading.Thread(target=lambda: out.extend(faults()))
  t.start()
  t.join()
  return out
"""


def _run(code: str, **env: str) -> dict:
  """Runs `code` in a fresh interpreter (no MALLOC_* settings but `env`, JAX's default mode); its
  last stdout line is JSON."""
  environ = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
  environ.pop("GLIBC_TUNABLES", None)
  environ.pop("JAX_ENABLE_X64", None)
  environ.update(env, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
  result = subprocess.run(
    [sys.executable, "-c", _FAULTS + textwrap.dedent(code)],
    cwd=ROOT,
    env=environ,
    capture_output=True,
    text=True,
    timeout=120,
  )
  assert result.returncode == 0, result.stdout + result.stderr
  return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.subprocess
@needs_glibc
def test_it_sets_what_it_says_and_large_blocks_stop_faulting():
  out = _run(
    """
    import json
    import dml_jax
    plain = faults()
    setup = dml_jax.cpu.configure_allocator()
    print(json.dumps(dict(setup=setup.as_dict(), plain=plain, main=faults(), thread=thread_faults(),
                          again=dml_jax.cpu.configure_allocator() is setup)))
    """
  )
  setup = out["setup"]
  assert (
    setup["applied"]
    == {
      "M_MMAP_THRESHOLD": 2**31 - 1,
      "M_TRIM_THRESHOLD": 2**31 - 1,
      "M_ARENA_MAX": 1,
    }
    or setup["applied"]["M_MMAP_THRESHOLD"] == 32 << 20
  )  # glibc 2.34 and older cap the threshold at 32 MiB
  assert setup["skipped"] == {} and not setup["too_late"] and setup["libc"].startswith("glibc")
  assert out["again"]
  pages = (64 << 20) // 4096
  # Importing dml_jax changed nothing: glibc mmaps each 64 MiB block afresh.
  assert min(out["plain"]) >= pages, out["plain"]
  if setup["applied"]["M_MMAP_THRESHOLD"] > 64 << 20:
    # The first block grows the heap; the next ones reuse it, on the main thread and on another.
    assert out["main"][1:] == [0, 0, 0], out["main"]
    assert max(out["thread"]) < pages // 100, out["thread"]


@pytest.mark.slow
@pytest.mark.subprocess
@needs_glibc
def test_xla_outputs_reuse_memory_after_the_setup():
  code = """
    import json, resource, sys
    import dml_jax
    if {setup}:
      dml_jax.cpu.configure_allocator()
    import jax, jax.numpy as jnp
    x = jnp.zeros(16 << 20, jnp.float32)  # 64 MiB
    reverse = jax.jit(lambda x: x[::-1])
    counts = []
    for _ in range(20):
      before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
      reverse(x).block_until_ready()
      counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    print(json.dumps(counts))
    """
  plain, setup = (_run(code.format(setup=flag)) for flag in (False, True))
  pages = (64 << 20) // 4096
  assert min(plain[1:]) >= pages, plain  # every output on fresh pages
  # The heap grows over the first calls (jax may free an output after the next call has
  # allocated its own), then outputs reuse it; an occasional call still gets fresh pages.
  later = sorted(setup[8:])
  assert later[len(later) // 2] == 0, setup


@pytest.mark.subprocess
@needs_glibc
def test_a_users_own_settings_are_kept():
  out = _run(
    """
    import json
    from dml_jax import cpu
    print(json.dumps(cpu.configure_allocator().as_dict()))
    """,
    MALLOC_ARENA_MAX="2",
    GLIBC_TUNABLES="glibc.malloc.trim_threshold=1048576",
  )
  assert set(out["applied"]) == {"M_MMAP_THRESHOLD"}
  assert out["skipped"] == {
    "M_TRIM_THRESHOLD": "GLIBC_TUNABLES has glibc.malloc.trim_threshold=1048576",
    "M_ARENA_MAX": "MALLOC_ARENA_MAX=2 is set in the environment",
  }
  assert "M_ARENA_MAX left alone (MALLOC_ARENA_MAX=2 is set in the environment)" in out["summary"]


@pytest.mark.subprocess
def test_after_a_jax_computation_it_is_too_late():
  out = _run(
    """
    import json
    import jax.numpy as jnp
    from dml_jax import cpu
    assert not cpu.configure_allocator.__module__.startswith("jax")
    (jnp.ones(3) + 1).block_until_ready()
    try:
      cpu.configure_allocator()
      raised = ""
    except RuntimeError as e:
      raised = str(e)
    late = cpu.configure_allocator(if_late="apply")
    print(json.dumps(dict(raised=raised, late=late.as_dict())))
    """
  )
  assert "ran after JAX created its CPU client" in out["raised"]
  assert "before anything computes with JAX" in out["raised"]
  assert "MALLOC_ARENA_MAX=1" in out["raised"]  # the environment recipe instead
  assert out["late"]["too_late"]
  if GLIBC:
    assert out["late"]["applied"] and "after JAX created its CPU client" in out["late"]["note"]


@pytest.mark.subprocess
@pytest.mark.jax_range  # jax_compat.backends_initialized
def test_importing_jax_is_not_too_late():
  out = _run(
    """
    import json
    import jax, jax.numpy
    import dml_jax
    from dml_jax._src import cpu_allocator
    print(json.dumps(cpu_allocator.jax_cpu_client_exists()))
    """
  )
  assert out is False


def test_without_glibc_it_sets_nothing_and_says_so(monkeypatch):
  monkeypatch.setattr(cpu_allocator, "_glibc", lambda: (None, "not Linux (darwin)"))
  monkeypatch.setattr(cpu_allocator, "_done", None)
  setup = cpu.configure_allocator(if_late="apply")
  assert setup.applied == {} and setup.note == "not Linux (darwin): nothing to set"
  assert str(setup).startswith("nothing set: not Linux (darwin)")
  assert cpu_allocator._done is None  # nothing cached: nothing was set
  assert cpu.release_memory() is False


def test_without_glibc_a_late_call_does_not_raise(monkeypatch):
  """Off glibc there is nothing to set, so a call after JAX started is not "too late": it
  returns the record, with too_late noted."""
  monkeypatch.setattr(cpu_allocator, "_glibc", lambda: (None, "musl"))
  monkeypatch.setattr(cpu_allocator, "_done", None)
  _ = jnp.ones(2) + 1  # JAX's CPU client exists from here on
  setup = cpu.configure_allocator()  # if_late="raise"
  assert setup.applied == {} and setup.note == "musl: nothing to set"
  assert setup.too_late


def test_a_bad_if_late_says_what_it_takes():
  with pytest.raises(ValueError, match="if_late must be 'raise' or 'apply'"):
    cpu.configure_allocator(if_late="warn")  # type: ignore[arg-type]


def test_release_memory_returns_a_bool():
  assert isinstance(cpu.release_memory(), bool)
