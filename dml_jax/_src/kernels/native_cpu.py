"""The CPU kernels' native code: each built on first use with the machine's C++ compiler, cached.

`native/` holds C++ handlers for XLA's FFI (`runs.cc` for SPLIT and JOIN, `tile_rows.cc` for
TILE, `transpose.cc` for the tensor layer's transposes, `gather_rows.cc` for the row gathers,
sharing `streaming_copies.h`): copies that never read a line before writing it, past the caches
or in them (`stores_for`), which XLA:CPU's loops do not emit, a transpose in AVX2 registers
(chosen where the processor has AVX2, which the built library reports), and whole-row gathers
with DirectML's index rule; `cumulative.cc` (the scans) and `arg_min_max.cc` (ARGMIN and
ARGMAX) walk each lane once. The first trace that wants a kernel (an operator on a large enough
CPU output; `kernel_ready`) builds that kernel's source alone into a shared library, with the
compiler named by $CXX (split as a shell would: "ccache g++" works) or the first of c++, g++
and clang++ on PATH, and jaxlib's FFI headers (`jax.ffi.include_dir()`):

  c++ -O3 -std=c++17 -shared -fPIC -I<jax.ffi.include_dir()> -I<native/> SOURCE -o LIBRARY

The library goes to a cache folder ($DML_JAX_CACHE_DIR, else $XDG_CACHE_HOME/dml_jax, else
~/.cache/dml_jax), named by a hash of the sources, the command, the compiler's version line,
the C library and jaxlib's version, so that later processes load it without building. The
cache is trusted only as far as it can be checked (`_trusted`):

- the folder is created 0700 whatever the umask; a folder or library that belongs to another
  user, or that group or others may write, is refused with the reason and the fix (the lax
  forms run), and a library that is a symbolic link is refused;
- a build writes the library and a sidecar holding its SHA-256 (`<library>.sha256`) in a
  private scratch folder and renames both into place; a library whose bytes do not match its
  sidecar (truncated, replaced, planted without one) is never handed to the dynamic loader
  (a truncated one would kill the process with SIGBUS). It, or one that fails to load or lacks
  a symbol, is rebuilt once under a second name (`<stem>-<key>.rebuilt.so`); where that fails
  too, the operators take the lax forms and a RuntimeWarning says why;
- one process builds while the others wait on a lock (`fcntl.flock` on `.lock` in the folder,
  at most `LOCK_SECONDS`), then load what it built;
- a successful build removes the same kernel's older libraries of other keys.

A build logs a line when it starts and one with the seconds it took, at INFO on the "dml_jax"
logger (`logging`; hidden unless the program shows INFO). `status()` reports without building;
`build()` (`dml_jax.cpu.build_native_kernels()`, `python -m dml_jax build-native`) builds ahead.
DML_JAX_NATIVE_KERNELS=0 turns the kernels off: read at every trace, so programs traced after
it changes take the lax forms.

Where any of this fails (not x86-64, no compiler, a build error, a folder that cannot be
written or is refused), the operators take their lax forms, which give the same bits. A kernel
that failed is not tried again in the same process.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import errno
import fcntl
import functools
import hashlib
import logging
import math
import os
import pathlib
import platform
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator, Sequence

import jax
import numpy as np

SOURCES = pathlib.Path(__file__).resolve().parent / "native"
HEADERS = ("streaming_copies.h",)


@dataclasses.dataclass(frozen=True)
class Kernel:
  """What a source file of `native/` defines.

  Attributes:
    handlers: its FFI handlers, as (FFI target name, handler symbol).
    functions: the plain C functions beside them (looked up when the library loads, so that a
      library lacking one is rebuilt, not called).
  """

  handlers: tuple[tuple[str, str], ...]
  functions: tuple[str, ...] = ()


# The kernels, by source file.
KERNELS = {
  "runs.cc": Kernel(
    (("dml_jax_split_runs", "DmlJaxSplitRuns"), ("dml_jax_join_runs", "DmlJaxJoinRuns"))
  ),
  "tile_rows.cc": Kernel((("dml_jax_tile_rows", "DmlJaxTileRows"),)),
  "transpose.cc": Kernel((("dml_jax_transpose", "DmlJaxTranspose"),), ("DmlJaxTransposeAvx2",)),
  "gather_rows.cc": Kernel((("dml_jax_gather_rows", "DmlJaxGatherRows"),)),
  "cumulative.cc": Kernel((("dml_jax_cumulative", "DmlJaxCumulative"),)),
  "arg_min_max.cc": Kernel((("dml_jax_arg_min_max", "DmlJaxArgMinMax"),)),
  "top_k.cc": Kernel((("dml_jax_top_k", "DmlJaxTopK"),)),
}
# The copy kernels' `stores` attribute (streaming_copies.h): past the caches, or in them (by
# `rep movsb`; the row gathers by memcpy). `stores_for` picks one from a call's bytes.
STORES = {"streaming": 1, "in_cache": 2}
IN_CACHE_MAX_BYTES = 24 * 1024 * 1024  # the most a call copying in the cache may move
# Non-temporal stores are x86-64's (SSE2); elsewhere the lax forms run.
MACHINES = ("x86_64", "amd64")
SWITCH = "DML_JAX_NATIVE_KERNELS"  # "0" (or off, false, no) turns the kernels off
CACHE_FOLDER = "DML_JAX_CACHE_DIR"
BUILD_SECONDS = 120  # the longest one kernel's build may take
LOCK_SECONDS = 600  # the longest a process waits for another's build

_log = logging.getLogger("dml_jax")
_lock = threading.RLock()
_libraries: dict[str, ctypes.CDLL] = {}  # source file -> its loaded, registered library
_loaded_from: dict[str, pathlib.Path] = {}  # source file -> the library's path
_failures: dict[str, str] = {}  # source file -> why it does not run in this process
_warned: set[str] = set()  # the reasons already given as warnings


@dataclasses.dataclass(frozen=True)
class NativeStatus:
  """Whether the CPU kernels' native code runs in this process, and why not; found without
  building anything.

  Attributes:
    available: the kernels run here: the machine, the compiler, DML_JAX_NATIVE_KERNELS and the
      cache folder allow it, and none has failed to build or load in this process (each is
      built on first use, or ahead by `build()`).
    reason: why not (the switch, the machine, the compiler, a refused cache folder, each failed
      kernel's error); "" when available.
    library: the cache folder of the built libraries; None where the kernels cannot run.
    compiler: the compiler command found; None when none.
    kernels: each source file's state: "loaded: PATH", "built: PATH (loaded on first use)",
      "not built (built on first use)" or "failed: WHY"; empty where the kernels cannot run.

  Examples:
    >>> NativeStatus(available=False, reason="no C++ compiler", library=None, compiler=None)
    NativeStatus(available=False, reason='no C++ compiler', library=None, compiler=None, kernels={})
  """

  available: bool
  reason: str
  library: str | None
  compiler: str | None
  kernels: dict[str, str] = dataclasses.field(default_factory=dict)


class _RefusedError(Exception):
  """A folder or file of the cache that this user cannot trust: the reason and the fix."""


class _DamagedError(Exception):
  """A library that does not match its checksum, fails to load or lacks a symbol."""


class _BuildError(Exception):
  """The compiler's complaint, shortened; or no build lock in time."""


@dataclasses.dataclass(frozen=True)
class _Setup:
  compiler: tuple[str, ...]  # the command, $CXX split as a shell would
  folder: pathlib.Path


def lane_view(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
  """`shape` as (outer, length, inner) around `axis`: how the native kernels that walk lanes
  along an axis (the scans, ARGMIN/ARGMAX, TOP_K) see their input.

  Examples:
    >>> lane_view((2, 3, 4, 5), 2), lane_view((7,), 0)
    ((6, 4, 5), (1, 7, 1))
  """
  return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])


def status() -> NativeStatus:
  """Whether the kernels run in this process, and each kernel's state; builds nothing (a
  kernel is built by the first call that needs it, or by `build()`).

  Examples:
    >>> isinstance(status().available, bool)
    True
  """
  try:
    setup = _setup(create=False)
  except _UnavailableError as unavailable:
    return NativeStatus(False, str(unavailable), None, unavailable.compiler)
  compiler = shlex.join(setup.compiler)
  kernels = {}
  failures = dict(_failures)  # read without the lock, which a build in progress holds
  for name in KERNELS:
    if (loaded := _loaded_from.get(name)) is not None:
      kernels[name] = f"loaded: {loaded}"
    elif name in failures:
      kernels[name] = f"failed: {failures[name]}"
    else:
      built = [p for p in _library_paths(setup, name) if p.exists()]
      kernels[name] = (
        f"built: {built[-1]} (loaded on first use)" if built else "not built (built on first use)"
      )
  reason = "; ".join(f"{name}: {why}" for name, why in failures.items())
  return NativeStatus(not reason, reason, str(setup.folder), compiler, kernels)


def kernel_ready(name: str) -> bool:
  """Whether the kernel of native/`name` (a key of `KERNELS`) runs in this process: built
  (here, now, where no usable build is cached), loaded and registered with XLA's FFI. False
  where the kernels are off or cannot run (`status()` says why), or where this kernel failed,
  which a RuntimeWarning reports once.

  Examples:
    >>> if kernel_ready("tile_rows.cc"):
    ...   assert status().kernels["tile_rows.cc"].startswith("loaded")
  """
  with _lock:
    settled = name in _libraries or name in _failures
    try:
      setup = _setup(create=not settled)  # the folder made where a build may come
    except _UnavailableError as unavailable:
      if unavailable.folder:  # refused or not made: a warning; the rest only in `status()`
        _warn(str(unavailable))
      return False
    if settled:
      return name in _libraries
    try:
      _libraries[name], _loaded_from[name] = _obtain(setup, name)
      return True
    except (
      _RefusedError,
      _DamagedError,
      _BuildError,
      OSError,
      subprocess.SubprocessError,
    ) as error:
      _failures[name] = str(error)
      _warn(f"the native CPU kernel {name} does not run: {error}")
      return False


def build(names: Sequence[str] | None = None) -> NativeStatus:
  """Builds (where no usable build is cached) and loads the kernels of `names` (keys of
  `KERNELS`; all by default) now, rather than on first use; returns `status()`.

  Examples:
    >>> build(["tile_rows.cc"]).available in (True, False)
    True
  """
  unknown = sorted(set(names or ()) - set(KERNELS))
  if unknown:
    raise ValueError(f"no native kernel {unknown}: the kernels are {sorted(KERNELS)}")
  for name in names or KERNELS:
    kernel_ready(name)
  return status()


def library(name: str) -> ctypes.CDLL:
  """The loaded library of native/`name`, for the plain C functions beside its handlers;
  built and loaded here where it is not yet.

  Examples:
    >>> if kernel_ready("transpose.cc"):
    ...   assert library("transpose.cc").DmlJaxTransposeAvx2() in (0, 1)
  """
  if not kernel_ready(name):
    why = _failures.get(name) or status().reason
    raise RuntimeError(f"dml_jax's native CPU kernel {name} is not available: {why}")
  return _libraries[name]


def command_line(argv: Sequence[str]) -> int:
  """`python -m dml_jax build-native`: builds the kernels ahead, with the log lines shown, and
  prints each kernel's state; exit status 0 where they all run, 1 where not."""
  parser = argparse.ArgumentParser(
    prog="python -m dml_jax build-native",
    description="Builds dml_jax's native CPU kernels into the cache folder now, rather than in"
    f" the first program that needs them, and says how each went. {CACHE_FOLDER} names the"
    f" folder; {SWITCH}=0 turns the kernels off.",
  )
  parser.add_argument(
    "kernels", nargs="*", metavar="SOURCE", help=f"only these ({', '.join(KERNELS)}; default: all)"
  )
  args = parser.parse_args(list(argv))
  handler = logging.StreamHandler(sys.stderr)
  handler.setFormatter(logging.Formatter("%(message)s"))
  _log.addHandler(handler)
  level = _log.level
  _log.setLevel(logging.INFO)
  try:
    with warnings.catch_warnings():
      warnings.simplefilter("ignore", RuntimeWarning)  # the states below say it
      try:
        result = build(args.kernels or None)
      except ValueError as error:
        parser.error(str(error))
  finally:
    _log.removeHandler(handler)
    _log.setLevel(level)
  if result.library:
    print(f"cache folder: {result.library}")
    print(f"compiler: {result.compiler}")
  for name, state in result.kernels.items():
    print(f"{name}: {state}")
  wanted = args.kernels or list(KERNELS)
  ran = bool(result.kernels) and all(result.kernels[n].startswith("loaded") for n in wanted)
  if not ran:
    print(f"the native kernels do not run: {result.reason}", file=sys.stderr)
  return 0 if ran else 1


class _UnavailableError(Exception):
  """Why the kernels cannot run here at all (the switch, the machine, the compiler, the
  folder); the compiler found, if any."""

  def __init__(self, reason: str, compiler: str | None = None, *, folder: bool = False):
    super().__init__(reason)
    self.compiler = compiler
    self.folder = folder  # the cache folder is the reason (refused, or not made)


def _setup(*, create: bool) -> _Setup:
  """The compiler and the trusted cache folder (made where `create` and missing), or
  _UnavailableError saying why the kernels cannot run."""
  switch = os.environ.get(SWITCH, "").strip().lower()
  if switch in ("0", "off", "false", "no"):
    raise _UnavailableError(f"switched off by {SWITCH}={os.environ[SWITCH]}")
  if platform.machine().lower() not in MACHINES:
    raise _UnavailableError(f"the machine is {platform.machine()}, not x86-64")
  given = os.environ.get("CXX", "")
  if given.strip():
    try:
      compiler = tuple(shlex.split(given))
    except ValueError as error:
      raise _UnavailableError(f"CXX={given!r} cannot be split into words: {error}") from None
    if not shutil.which(compiler[0]):
      raise _UnavailableError(
        f"CXX={given!r} names {compiler[0]!r}, which is not a program on PATH"
      )
  else:
    found = next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)
    if not found:
      raise _UnavailableError("no C++ compiler ($CXX, c++, g++ or clang++)")
    compiler = (found,)
  try:
    folder = _trusted_folder(create)
  except (_RefusedError, OSError) as error:
    raise _UnavailableError(str(error), shlex.join(compiler), folder=True) from None
  return _Setup(compiler, folder)


def _cache_folder() -> pathlib.Path:
  base = os.environ.get(CACHE_FOLDER)
  if base:
    return pathlib.Path(base).expanduser()
  xdg = os.environ.get("XDG_CACHE_HOME") or str(pathlib.Path.home() / ".cache")
  return pathlib.Path(xdg) / "dml_jax"


def _trusted_folder(create: bool) -> pathlib.Path:
  """The cache folder, checked (`_trusted`); where missing and `create`, made 0700 with any
  missing parents, whatever the umask."""
  folder = _cache_folder()
  if create and not folder.exists():
    for missing in reversed([folder, *folder.parents]):
      if not missing.exists():
        with contextlib.suppress(FileExistsError):
          os.mkdir(missing, 0o700)
          os.chmod(missing, 0o700)  # mkdir's mode passes through the umask
  try:
    found = os.stat(folder)  # a link to a folder: the folder it names is checked
  except FileNotFoundError:
    if create:
      raise
    return folder  # made by the first build
  if not stat.S_ISDIR(found.st_mode):
    raise _RefusedError(
      f"the kernel cache {folder} is not a folder; remove it or set {CACHE_FOLDER}"
    )
  _trusted(folder, found, "kernel cache folder")
  return folder


def _trusted(path: pathlib.Path, found: os.stat_result, what: str) -> None:
  """_RefusedError unless `found` (path's stat) belongs to this user and neither group nor others
  may write it."""
  user = os.getuid()
  fix = f"or set {CACHE_FOLDER} to a folder of your own"
  if found.st_uid != user:
    raise _RefusedError(
      f"the {what} {path} belongs to user id {found.st_uid}, not to you ({user}), so dml_jax"
      f" does not load code from it: remove it, {fix}"
    )
  if found.st_mode & 0o022:
    who = " and ".join(w for bit, w in ((0o020, "group"), (0o002, "others")) if found.st_mode & bit)
    raise _RefusedError(
      f"the {what} {path} is writable by {who} (mode {stat.S_IMODE(found.st_mode):o}), who"
      f" could replace the code dml_jax loads: run `chmod go-w {shlex.quote(str(path))}`, {fix}"
    )


def _command(compiler: Sequence[str], source: pathlib.Path, library: pathlib.Path) -> list[str]:
  return [
    *compiler,
    "-O3",
    "-std=c++17",
    "-shared",
    "-fPIC",
    f"-I{jax.ffi.include_dir()}",
    f"-I{SOURCES}",
    str(source),
    "-o",
    str(library),
  ]


@functools.cache
def _compiler_version(compiler: tuple[str, ...]) -> str:
  """The first line `compiler --version` prints ("" where it prints none)."""
  try:
    result = subprocess.run(
      [*compiler, "--version"], capture_output=True, text=True, timeout=30, check=False
    )
  except (OSError, subprocess.SubprocessError):
    return ""
  return (result.stdout or result.stderr).strip().partition("\n")[0]


def _library_paths(setup: _Setup, name: str) -> tuple[pathlib.Path, pathlib.Path]:
  """Where native/`name`'s library is built, and where it is rebuilt once if that one is
  damaged: named by a hash of the sources, the command, the compiler's version, the C library
  and jaxlib's version."""
  import jaxlib

  digest = hashlib.sha256()
  for part in (name, *HEADERS):
    digest.update((SOURCES / part).read_bytes())
  placeholder = pathlib.Path("SOURCE"), pathlib.Path("LIBRARY")
  for part in (
    shlex.join(_command(setup.compiler, *placeholder)),
    _compiler_version(setup.compiler),
    " ".join(platform.libc_ver()),
    jaxlib.__version__,
  ):
    digest.update(part.encode() + b"\0")
  stem = f"{pathlib.Path(name).stem}-{digest.hexdigest()[:16]}"
  return setup.folder / f"{stem}.so", setup.folder / f"{stem}.rebuilt.so"


def _obtain(setup: _Setup, name: str) -> tuple[ctypes.CDLL, pathlib.Path]:
  """native/`name`'s library, loaded and registered: the cached build where it checks out,
  else built (under the build lock); a damaged one rebuilt once under the second name."""
  damages = []
  with _build_lock(setup.folder):
    for path in _library_paths(setup, name):
      if not os.path.lexists(path):
        _build(setup, name, path)
      try:
        return _load(name, path), path
      except _DamagedError as damage:
        damages.append(str(damage))
  raise _DamagedError(" ".join(damages) + f" Remove {setup.folder} to build afresh.")


@contextlib.contextmanager
def _build_lock(folder: pathlib.Path) -> Iterator[None]:
  """Holds `folder`/.lock (flock), waiting at most LOCK_SECONDS for a process building. In a
  folder this process may not write (a read-only cache built ahead), nothing can be built, and
  the libraries there are loaded without it."""
  path = folder / ".lock"
  try:
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
  except OSError as error:
    if error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
      raise
    _log.debug("dml_jax: no build lock in %s (%s)", folder, error)
    yield
    return
  try:
    deadline = time.monotonic() + LOCK_SECONDS
    waiting = False
    while True:
      try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        break
      except BlockingIOError:
        if not waiting:
          _log.info("dml_jax: waiting for another process's build of the native kernels (%s)", path)
          waiting = True
        if time.monotonic() > deadline:
          raise _BuildError(
            f"another process held {path} for over {LOCK_SECONDS} s; where none is building,"
            " remove the file"
          ) from None
        time.sleep(0.05)
    yield
  finally:
    os.close(descriptor)  # releases the lock


def _build(setup: _Setup, name: str, library: pathlib.Path) -> None:
  """Builds native/`name` into `library` and its checksum beside it (renamed into place from a
  private scratch folder); then removes the kernel's older builds of other keys."""
  compiler = shlex.join(setup.compiler)
  _log.info("dml_jax: building the native CPU kernel %s with %s into %s", name, compiler, library)
  started = time.monotonic()
  with tempfile.TemporaryDirectory(dir=setup.folder, prefix=".build-") as scratch:
    built = pathlib.Path(scratch) / library.name
    result = subprocess.run(
      _command(setup.compiler, SOURCES / name, built),
      capture_output=True,
      text=True,
      timeout=BUILD_SECONDS,
      check=False,
    )
    if result.returncode != 0:
      raise _BuildError(f"{compiler} could not build {name}: {result.stderr.strip()[-1500:]}")
    os.chmod(built, 0o700)  # whatever the umask
    checksum = pathlib.Path(scratch) / "checksum"
    checksum.write_text(hashlib.sha256(built.read_bytes()).hexdigest() + "\n")
    os.chmod(checksum, 0o600)
    os.replace(checksum, _checksum_path(library))  # first: a library is never without its own
    os.replace(built, library)
  _log.info("dml_jax: built %s in %.1f s", name, time.monotonic() - started)
  _prune(library)


def _checksum_path(library: pathlib.Path) -> pathlib.Path:
  return library.with_name(library.name + ".sha256")


def _prune(library: pathlib.Path) -> None:
  """Removes the same kernel's libraries (and checksums) of other keys, older than `library`
  and this user's."""
  kernel = library.name.partition("-")[0]
  key = library.name.partition("-")[2].partition(".")[0]
  pattern = re.compile(rf"{re.escape(kernel)}-([0-9a-f]{{16}})(\.rebuilt)?\.so(\.sha256)?")
  newest = os.stat(library).st_mtime
  for path in library.parent.iterdir():
    match = pattern.fullmatch(path.name)
    if not match or match[1] == key:
      continue
    with contextlib.suppress(OSError):
      found = os.lstat(path)
      if found.st_uid == os.getuid() and found.st_mtime < newest:
        path.unlink()


def _load(name: str, path: pathlib.Path) -> ctypes.CDLL:
  """The library at `path`, checked (not a link, this user's, not writable by others, the
  bytes of its checksum), loaded, its symbols found and its handlers registered."""
  checksum = _checksum_path(path)
  for file in (path, checksum):
    try:
      found = os.lstat(file)
    except FileNotFoundError:
      raise _DamagedError(f"{file} is missing.") from None
    if not stat.S_ISREG(found.st_mode):
      raise _RefusedError(f"{file} is not a plain file (a link?): remove it")
    _trusted(file, found, "kernel library" if file == path else "kernel checksum")
  with open(checksum, "rb") as stream:
    recorded = stream.read(128).decode(errors="replace").strip()
  if hashlib.sha256(path.read_bytes()).hexdigest() != recorded:
    raise _DamagedError(f"{path} does not match the checksum written when it was built.")
  try:
    library = ctypes.CDLL(str(path))
  except OSError as error:
    raise _DamagedError(f"{path} does not load: {error}.") from None
  kernel = KERNELS[name]
  try:
    handlers = [(target, getattr(library, symbol)) for target, symbol in kernel.handlers]
    for function in kernel.functions:
      getattr(library, function)
  except AttributeError as error:
    raise _DamagedError(f"{path} lacks a symbol: {error}.") from None
  for target, handler in handlers:
    jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(handler), platform="cpu")
  _log.debug("dml_jax: loaded %s", path)
  return library


def _warn(message: str) -> None:
  """`message` as a RuntimeWarning, once per process."""
  if message not in _warned:
    _warned.add(message)
    warnings.warn(
      f"dml_jax: {message.rstrip('.')}. The operators take their lax forms (the same bits, slower);"
      f" {SWITCH}=0 turns the native kernels off.",
      RuntimeWarning,
      stacklevel=3,
    )


def stores_for(bytes_moved: int) -> str:
  """How a copy kernel's call that reads and writes `bytes_moved` should store: "in_cache" where
  they fit in `in_cache_bytes()` (never where that is 0), else "streaming" (non-temporal
  stores).

  Examples:
    >>> stores_for(1 << 40)
    'streaming'
  """
  fits = in_cache_bytes()
  return "in_cache" if 0 < fits and bytes_moved <= fits else "streaming"


def stores_attribute(stores: str, bytes_moved: int) -> np.int64:
  """The copy kernels' `stores` attribute for `stores`, a key of `STORES` or "auto"
  (`stores_for(bytes_moved)`).

  Examples:
    >>> int(stores_attribute("streaming", 0))
    1
  """
  return np.int64(STORES[stores_for(bytes_moved) if stores == "auto" else stores])


@functools.cache
def in_cache_bytes() -> int:
  """The most bytes a copy kernel's call may move and still copy in the cache: three quarters
  of the last-level cache as Linux reports it (sysfs, what lscpu reads), at most
  `IN_CACHE_MAX_BYTES`, on processors with fast strings (`erms` in /proc/cpuinfo), where `rep
  movsb` writes whole lines without reading them first; 0 elsewhere (every call streams).

  In the cache won for a 16 MiB TILE (case `tile_both`) and lost for 128 MiB SPLIT and JOIN
  (`split_axis0`, `join_axis0`) on a 2-core AMD machine; on a 16-core Intel host reporting 300
  MiB, streaming won all three, hence the cap (the form study at commit 688224b). glibc's
  sysconf(_SC_LEVEL3_CACHE_SIZE) overstates the cache tenfold there, so it is not used.

  Examples:
    >>> 0 <= in_cache_bytes() <= IN_CACHE_MAX_BYTES
    True
  """
  cache = _in_cache_bytes(
    pathlib.Path("/proc/cpuinfo"), pathlib.Path("/sys/devices/system/cpu/cpu0/cache")
  )
  return min(cache, IN_CACHE_MAX_BYTES)


def _in_cache_bytes(cpuinfo: pathlib.Path, caches: pathlib.Path) -> int:
  """`in_cache_bytes` from these files: /proc/cpuinfo's flags and sysfs's cache folders."""
  try:
    flags = next(line for line in cpuinfo.read_text().splitlines() if line.startswith("flags"))
    if "erms" not in flags.split():
      return 0
    sizes = {}
    for index in caches.glob("index*"):
      level = int((index / "level").read_text())
      text = (index / "size").read_text().strip()
      scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
      sizes[level] = int(text.rstrip("KMG")) * scale
  except (OSError, StopIteration, ValueError):
    return 0
  return sizes[max(sizes)] // 4 * 3 if sizes else 0
