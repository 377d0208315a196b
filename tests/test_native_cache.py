"""The native kernels' cache is trusted only as far as it can be checked: a private folder, this
user's files, libraries that match the checksum written when they were built; damaged entries
are rebuilt once, refused ones leave the lax forms with the reason; one process builds while
others wait; nothing is built until a kernel is wanted; DML_JAX_NATIVE_KERNELS=0 turns it off.

These tests build a one-function library (`tiny.cc`, well under a second) in place of the real
kernels, in a folder of their own; `tests/test_native_cpu.py` builds and runs the real ones.
"""

import logging
import os
import pathlib
import platform
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time

import pytest

from dml_jax._src import conformance
from dml_jax._src.kernels import native_cpu

# The cache's rules build and load a C library: nothing here depends on JAX's 64-bit mode.
pytestmark = pytest.mark.mode_independent

ROOT = pathlib.Path(__file__).resolve().parents[1]
TINY = 'extern "C" int DmlJaxTiny() { return 7; }\n'
# A process of its own that uses the tiny kernel: argv[1] the sources' folder; prints where the
# library came from. The cache folder, the compiler and the switch come from the environment.
PROCESS = """
import logging, pathlib, sys
from dml_jax._src.kernels import native_cpu
native_cpu.SOURCES, native_cpu.HEADERS = pathlib.Path(sys.argv[1]), ()
native_cpu.KERNELS = {"tiny.cc": native_cpu.Kernel((), ("DmlJaxTiny",))}
logging.basicConfig(filename=sys.argv[2], level=logging.INFO, format="%(message)s")
assert native_cpu.kernel_ready("tiny.cc"), native_cpu.status()
assert native_cpu.library("tiny.cc").DmlJaxTiny() == 7
print(native_cpu.status().kernels["tiny.cc"])
"""


def _on_x86_with_a_compiler():
  if platform.machine().lower() not in native_cpu.MACHINES or not shutil.which("c++"):
    pytest.skip("the native kernels build on x86-64 with a C++ compiler (c++) only")


@pytest.fixture
def tiny(monkeypatch, tmp_path):
  """The tiny kernel in place of the real ones, a fresh process state, and a cache folder
  (not made yet) of this test's; returns the folder."""
  _on_x86_with_a_compiler()
  sources = tmp_path / "sources"
  sources.mkdir()
  (sources / "tiny.cc").write_text(TINY)
  monkeypatch.setattr(native_cpu, "SOURCES", sources)
  monkeypatch.setattr(native_cpu, "HEADERS", ())
  monkeypatch.setattr(native_cpu, "KERNELS", {"tiny.cc": native_cpu.Kernel((), ("DmlJaxTiny",))})
  for state in ("_libraries", "_loaded_from", "_failures"):
    monkeypatch.setattr(native_cpu, state, {})
  monkeypatch.setattr(native_cpu, "_warned", set())
  monkeypatch.delenv(native_cpu.SWITCH, raising=False)
  monkeypatch.delenv("CXX", raising=False)
  folder = tmp_path / "private" / "cache"
  monkeypatch.setenv(native_cpu.CACHE_FOLDER, str(folder))
  return folder


def _paths(folder, compiler=("c++",)):
  """Where the tiny kernel's library is built, and rebuilt, by `compiler`."""
  setup = native_cpu._Setup(tuple(compiler), folder)
  return native_cpu._library_paths(setup, "tiny.cc")


def test_the_test_run_has_a_cache_folder_of_its_own():
  """tests/conftest.py: the checkout's private test cache (or a run's own folder), never a
  user's cache."""
  folder = pathlib.Path(os.environ[native_cpu.CACHE_FOLDER])
  assert folder.name.startswith("dml_jax-test-kernels-"), folder
  assert folder.parent == pathlib.Path(tempfile.gettempdir())
  found = folder.lstat()
  assert found.st_uid == os.getuid() and stat.S_IMODE(found.st_mode) == 0o700
  assert native_cpu._cache_folder() == folder


def test_status_builds_nothing(tiny):
  status = native_cpu.status()
  assert status.available and status.reason == "" and status.compiler == "c++"
  assert status.kernels == {"tiny.cc": "not built (built on first use)"}
  assert not tiny.exists()  # not even the folder


def test_the_folder_is_private_whatever_the_umask_and_a_build_is_logged(tiny, caplog):
  before = os.umask(0)
  try:
    with caplog.at_level(logging.INFO, logger="dml_jax"):
      assert native_cpu.kernel_ready("tiny.cc")
  finally:
    os.umask(before)
  library, _ = _paths(tiny)
  assert native_cpu.library("tiny.cc").DmlJaxTiny() == 7
  for folder in (tiny, tiny.parent):  # the parent was missing too
    assert os.stat(folder).st_mode & 0o777 == 0o700, folder
  assert os.stat(library).st_mode & 0o777 == 0o700
  assert os.stat(f"{library}.sha256").st_mode & 0o777 == 0o600
  assert sorted(p.name for p in tiny.iterdir()) == [".lock", library.name, f"{library.name}.sha256"]
  assert native_cpu.status().kernels == {"tiny.cc": f"loaded: {library}"}
  messages = [r.getMessage() for r in caplog.records if r.name == "dml_jax"]
  assert messages[0].startswith("dml_jax: building the native CPU kernel tiny.cc with c++ into")
  assert messages[1].startswith("dml_jax: built tiny.cc in ") and messages[1].endswith(" s")


@pytest.mark.parametrize("way", ["open to all", "another user's"])
def test_a_library_planted_in_an_open_or_foreign_folder_is_refused(tiny, monkeypatch, way):
  tiny.mkdir(parents=True)
  library, _ = _paths(tiny)
  native_cpu._build(native_cpu._Setup(("c++",), tiny), "tiny.cc", library)  # checks out
  if way == "open to all":
    os.chmod(tiny, 0o777)
    why = f"writable by group and others (mode 777), who could replace the code dml_jax loads: run `chmod go-w {tiny}`"
  else:
    monkeypatch.setattr(os, "getuid", lambda: os.stat(tiny).st_uid + 1)
    why = f"belongs to user id {os.stat(tiny).st_uid}, not to you"
  status = native_cpu.status()
  assert not status.available and why in status.reason and status.kernels == {}
  assert f"or set {native_cpu.CACHE_FOLDER} to a folder of your own" in status.reason
  with pytest.warns(RuntimeWarning, match="kernel cache folder") as caught:
    assert not native_cpu.kernel_ready("tiny.cc")
  assert why in str(caught[0].message) and "lax forms" in str(caught[0].message)
  assert native_cpu._libraries == {}  # never loaded
  with pytest.raises(RuntimeError, match="not available"):
    native_cpu.library("tiny.cc")


def test_a_library_writable_by_others_or_a_link_is_refused(tiny):
  tiny.mkdir(parents=True, mode=0o700)
  library, _ = _paths(tiny)
  native_cpu._build(native_cpu._Setup(("c++",), tiny), "tiny.cc", library)
  os.chmod(library, 0o720)
  with pytest.warns(RuntimeWarning, match="kernel library .* is writable by group"):
    assert not native_cpu.kernel_ready("tiny.cc")
  assert native_cpu.status().kernels["tiny.cc"].startswith("failed: the kernel library")
  native_cpu._failures.clear()
  elsewhere = tiny.parent / "elsewhere.so"
  os.chmod(library, 0o700)
  os.replace(library, elsewhere)
  library.symlink_to(elsewhere)
  with pytest.warns(RuntimeWarning, match="is not a plain file"):
    assert not native_cpu.kernel_ready("tiny.cc")
  assert native_cpu._libraries == {}


def test_a_truncated_library_is_rebuilt_not_loaded(tiny):
  tiny.mkdir(parents=True, mode=0o700)
  library, rebuilt = _paths(tiny)
  native_cpu._build(native_cpu._Setup(("c++",), tiny), "tiny.cc", library)
  size = library.stat().st_size
  os.truncate(library, size // 2)  # loading it would end this process with SIGBUS
  assert native_cpu.kernel_ready("tiny.cc")
  assert native_cpu._loaded_from["tiny.cc"] == rebuilt
  assert native_cpu.library("tiny.cc").DmlJaxTiny() == 7
  assert library.stat().st_size == size // 2  # left as found: the second name is the rebuild


def test_a_planted_library_without_its_checksum_is_not_loaded(tiny):
  tiny.mkdir(parents=True, mode=0o700)
  library, rebuilt = _paths(tiny)
  library.write_bytes(b"\x7fELF" + bytes(60))  # the expected name, in the user's own folder
  os.chmod(library, 0o700)
  assert native_cpu.kernel_ready("tiny.cc")
  assert native_cpu._loaded_from["tiny.cc"] == rebuilt


def test_a_library_lacking_a_symbol_is_rebuilt_once_then_the_lax_forms_with_a_warning(
  tiny, monkeypatch
):
  kernel = native_cpu.Kernel((), ("DmlJaxTiny", "DmlJaxMissing"))
  monkeypatch.setattr(native_cpu, "KERNELS", {"tiny.cc": kernel})
  with pytest.warns(RuntimeWarning, match="lacks a symbol") as caught:
    assert not native_cpu.kernel_ready("tiny.cc")
  assert len(caught) == 1 and "lax forms" in str(caught[0].message)
  library, rebuilt = _paths(tiny)
  assert library.exists() and rebuilt.exists()  # built, then rebuilt once
  status = native_cpu.status()  # reports; never AttributeError
  assert not status.available and "DmlJaxMissing" in status.reason
  assert status.kernels["tiny.cc"].startswith("failed: ")
  assert not native_cpu.kernel_ready("tiny.cc")  # not tried again, not warned again
  with pytest.raises(RuntimeError, match="lacks a symbol"):
    native_cpu.library("tiny.cc")


def test_a_build_error_leaves_the_lax_forms_and_says_why(tiny, monkeypatch):
  monkeypatch.setenv("CXX", shutil.which("false") or "/bin/false")
  with pytest.warns(RuntimeWarning, match="could not build tiny.cc"):
    assert not native_cpu.kernel_ready("tiny.cc")
  assert "could not build tiny.cc" in native_cpu.status().reason
  assert [p.name for p in tiny.iterdir()] == [".lock"]  # nothing half-written left behind


def test_the_switch_turns_the_kernels_off(tiny, monkeypatch):
  monkeypatch.setenv(native_cpu.SWITCH, "0")
  status = native_cpu.status()
  assert not status.available and status.reason == "switched off by DML_JAX_NATIVE_KERNELS=0"
  assert not native_cpu.kernel_ready("tiny.cc")  # silently: no warning (the suite errors on one)
  assert not tiny.exists()
  assert native_cpu.build().reason == status.reason
  monkeypatch.setenv(native_cpu.SWITCH, "1")
  assert native_cpu.status().available


def test_cxx_may_carry_arguments_and_must_name_a_program(tiny, monkeypatch):
  monkeypatch.setenv("CXX", "env DML_JAX_SAYS=hello c++")
  assert native_cpu.status().compiler == "env DML_JAX_SAYS=hello c++"
  assert native_cpu.kernel_ready("tiny.cc")
  monkeypatch.setenv("CXX", "no-such-compiler-here -O2")
  assert "names 'no-such-compiler-here', which is not a program" in native_cpu.status().reason


def test_a_build_removes_older_builds_of_other_keys(tiny, monkeypatch):
  tiny.mkdir(parents=True, mode=0o700)
  setup = native_cpu._Setup(("c++",), tiny)
  old, _ = _paths(tiny)
  native_cpu._build(setup, "tiny.cc", old)
  os.utime(old, (time.time() - 60, time.time() - 60))
  other = tiny / "other-0123456789abcdef.so"  # another kernel's: kept
  other.write_bytes(b"")
  (native_cpu.SOURCES / "tiny.cc").write_text(TINY + "// changed\n")  # a new key
  new, _ = _paths(tiny)
  assert new != old
  native_cpu._build(setup, "tiny.cc", new)
  assert sorted(p.name for p in tiny.iterdir()) == sorted(
    [new.name, f"{new.name}.sha256", other.name]
  )


def test_build_native_builds_ahead_from_the_shell(tiny, capsys):
  assert conformance.main(["build-native"]) == 0
  library, _ = _paths(tiny)
  assert f"tiny.cc: loaded: {library}" in capsys.readouterr().out
  with pytest.raises(SystemExit):
    conformance.main(["build-native", "nothing.cc"])
  assert "no native kernel ['nothing.cc']" in capsys.readouterr().err


def test_two_processes_building_at_once_build_once(tiny, tmp_path):
  """One builds (its compiler held until the other is seen waiting on the lock); the other
  waits, then loads what the first built. $CXX is a script with an argument."""
  marks = tmp_path / "marks"
  marks.mkdir()
  wrapper = tmp_path / "slow compiler.sh"  # a space in the path: $CXX is split as a shell would
  wrapper.write_text(
    '[ "$1" = --version ] && exec c++ --version\n'
    f'echo build >> "{marks}/builds"\n'
    f'while [ ! -e "{marks}/go" ]; do sleep 0.05; done\n'
    'exec c++ "$@"\n'
  )
  env = dict(
    os.environ,
    CXX=f"sh {shlex.quote(str(wrapper))}",
    PYTHONPATH=str(ROOT),
    JAX_PLATFORMS="cpu",
  )
  sources = str(native_cpu.SOURCES)

  def start(log):
    return subprocess.Popen(
      [sys.executable, "-c", PROCESS, sources, str(tmp_path / log)],
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.PIPE,
      text=True,
    )

  def wait_for(condition, what):
    deadline = time.monotonic() + 120
    while not condition():
      assert time.monotonic() < deadline, f"no {what} in 120 s"
      time.sleep(0.05)

  first = start("first.log")
  second = None
  try:
    wait_for((marks / "builds").exists, "build")
    second = start("second.log")
    second_log = tmp_path / "second.log"
    wait_for(lambda: second_log.exists() and "waiting" in second_log.read_text(), "wait")
    (marks / "go").touch()
    outputs = [p.communicate(timeout=120) for p in (first, second)]
  finally:
    (marks / "go").touch()
    for process in (first, second):
      if process and process.poll() is None:
        process.kill()
  for process, (_, err) in zip((first, second), outputs, strict=True):
    assert process.returncode == 0, err
  library, _ = _paths(tiny, ("sh", str(wrapper)))
  assert [out.strip() for out, _ in outputs] == [f"loaded: {library}"] * 2
  assert (marks / "builds").read_text() == "build\n"  # once
  assert "dml_jax: building" in (tmp_path / "first.log").read_text()
  assert "dml_jax: building" not in (tmp_path / "second.log").read_text()


def test_small_calls_build_nothing(monkeypatch, tmp_path):
  """A 10 KB embedding lookup, and a SPLIT, TILE and transpose under their thresholds, take the
  lax forms without building a kernel (the real kernels, a fresh process state)."""
  import jax
  import numpy as np

  import dml_jax as dml
  from dml_jax._src import buffers

  for state in ("_libraries", "_loaded_from", "_failures"):
    monkeypatch.setattr(native_cpu, state, {})
  monkeypatch.setenv(native_cpu.CACHE_FOLDER, str(tmp_path / "cache"))
  table = np.arange(1000 * 64, dtype=np.float32).reshape(1000, 64)  # rows of 256 bytes
  ids = np.arange(40, dtype=np.int32).reshape(1, 40) * 7
  with jax.default_device(jax.devices("cpu")[0]):
    lookup = jax.jit(lambda t, i: dml.gather(t, i, axis=0, index_dimensions=1))(table, ids)
    np.testing.assert_array_equal(np.reshape(lookup, (40, 64)), table[ids[0]])
    x = table[:512]
    jax.jit(lambda x: dml.split(x, axis=0, split_sizes=(256, 256)))(x)
    jax.jit(lambda x: dml.tile(x, repeats=(2, 2)))(x)
    jax.jit(lambda x: buffers.transpose(x, (1, 0)))(x)
  assert not (tmp_path / "cache").exists()
  assert native_cpu._libraries == {}


def test_a_read_only_cache_built_ahead_is_loaded(tiny, monkeypatch):
  """A folder of the user's that this process may not write (a cache built ahead, then made
  read-only; here the lock file's creation refused as it would be): its libraries load
  without the lock."""
  tiny.mkdir(parents=True, mode=0o700)
  library, _ = _paths(tiny)
  native_cpu._build(native_cpu._Setup(("c++",), tiny), "tiny.cc", library)  # no lock file
  opened = os.open

  def read_only(path, flags, *args, **kwargs):
    if str(path).endswith(".lock") and flags & os.O_CREAT:
      raise PermissionError(13, "Permission denied", str(path))
    return opened(path, flags, *args, **kwargs)

  monkeypatch.setattr(os, "open", read_only)
  assert native_cpu.kernel_ready("tiny.cc")
  assert native_cpu._loaded_from["tiny.cc"] == library
