"""The CPU kernels' native code: built on first use with the machine's C++ compiler, cached.

`native/` holds C++ handlers for XLA's FFI (`runs.cc` for SPLIT and JOIN, `tile_rows.cc` for
TILE, `transpose.cc` for the tensor layer's transposes, `gather_rows.cc` for the row gathers,
sharing `streaming_copies.h`): copies that never read a line before writing it, past the caches
or in them (`stores_for`), which XLA:CPU's loops do not emit, a transpose in AVX2 registers
(chosen where the processor has AVX2, which the built library reports), and whole-row gathers
with DirectML's index rule. The first trace that wants one (an operator on a large enough CPU
output) builds its source into a shared library, with the compiler named by $CXX or the first
of c++, g++ and clang++ on PATH, and jaxlib's FFI headers (`jax.ffi.include_dir()`):

  c++ -O3 -std=c++17 -shared -fPIC -I<jax.ffi.include_dir()> -I<native/> SOURCE -o LIBRARY

The library goes to a cache folder ($DML_JAX_CACHE_DIR, else $XDG_CACHE_HOME/dml_jax, else
~/.cache/dml_jax), named by a hash of the sources, the command and jaxlib's version, so that
later processes load it without building. Builds write a temporary file and rename it, so
processes that build at once do not see each other's half-written library.

Where any of this fails (not x86-64, no compiler, a build error, a folder that cannot be
written), the operators take their lax forms, which give the same bits; `status()` says which
kernels are in use and why not. dml_jax does not change how a kernel is chosen from run to run:
the answer is found once per process.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import hashlib
import os
import pathlib
import platform
import shutil
import subprocess
import tempfile
import threading

import jax
import numpy as np

SOURCES = pathlib.Path(__file__).resolve().parent / "native"
HEADERS = ("streaming_copies.h",)
# The kernels: source file -> its handlers, as (FFI target name, handler symbol).
KERNELS = {
  "runs.cc": (("dml_jax_split_runs", "DmlJaxSplitRuns"), ("dml_jax_join_runs", "DmlJaxJoinRuns")),
  "tile_rows.cc": (("dml_jax_tile_rows", "DmlJaxTileRows"),),
  "transpose.cc": (("dml_jax_transpose", "DmlJaxTranspose"),),
  "gather_rows.cc": (("dml_jax_gather_rows", "DmlJaxGatherRows"),),
}
# The copy kernels' `stores` attribute (streaming_copies.h): past the caches, or in them (by
# `rep movsb`; the row gathers by memcpy). `stores_for` picks one from a call's bytes.
STORES = {"streaming": 1, "in_cache": 2}
IN_CACHE_MAX_BYTES = 24 * 1024 * 1024  # the most a call copying in the cache may move
# Non-temporal stores are x86-64's (SSE2); elsewhere the lax forms run.
MACHINES = ("x86_64", "amd64")
BUILD_SECONDS = 120

_lock = threading.Lock()
_libraries: dict[str, ctypes.CDLL] = {}  # source file -> its loaded library


@dataclasses.dataclass(frozen=True)
class NativeStatus:
  """Whether the CPU kernels' native code runs in this process, and why not.

  Attributes:
    available: the kernels are built, loaded and registered with XLA's FFI.
    reason: why not (the machine, the compiler, the build's error); "" when available.
    library: the folder of the built libraries; None when not built.
    compiler: the compiler found; None when none.

  Examples:
    >>> NativeStatus(available=False, reason="no C++ compiler", library=None, compiler=None)
    NativeStatus(available=False, reason='no C++ compiler', library=None, compiler=None)
  """

  available: bool
  reason: str
  library: str | None
  compiler: str | None


def status() -> NativeStatus:
  """Builds (once per machine), loads and registers the kernels (once per process); says how
  it went. Calling it is what the first operator to want a kernel does.

  Examples:
    >>> isinstance(status().available, bool)
    True
  """
  with _lock:
    return _load()


@functools.cache
def _load() -> NativeStatus:
  if platform.machine().lower() not in MACHINES:
    return NativeStatus(False, f"the machine is {platform.machine()}, not x86-64", None, None)
  compiler = os.environ.get("CXX") or next(
    (found for name in ("c++", "g++", "clang++") if (found := shutil.which(name))), None
  )
  if not compiler:
    return NativeStatus(False, "no C++ compiler ($CXX, c++, g++ or clang++)", None, None)
  try:
    folder = _cache_folder()
    libraries = {name: _build(compiler, name, folder) for name in KERNELS}
    for name, handlers in KERNELS.items():
      library = ctypes.cdll.LoadLibrary(str(libraries[name]))
      _libraries[name] = library
      for target, symbol in handlers:
        handler = jax.ffi.pycapsule(getattr(library, symbol))
        jax.ffi.register_ffi_target(target, handler, platform="cpu")
  except (OSError, subprocess.SubprocessError, _BuildError) as error:
    return NativeStatus(False, str(error), None, compiler)
  return NativeStatus(True, "", str(folder), compiler)


def library(name: str) -> ctypes.CDLL:
  """The loaded library of native/`name`, for the plain C functions beside its handlers;
  `status()` must say available.

  Examples:
    >>> if status().available:
    ...   assert library("transpose.cc").DmlJaxTransposeAvx2() in (0, 1)
  """
  if not status().available:
    raise RuntimeError(f"dml_jax's native CPU kernels are not available: {status().reason}")
  return _libraries[name]


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

  Measured (`benchmarks/cpu_stores.py`, BENCHMARKS.md): on a 2-core AMD machine with a 32 MiB
  last-level cache, TILE by (4, 4) into 16 MiB took 0.40 ms in the cache against 0.64
  streaming (ONNX Runtime 0.55), while SPLIT and JOIN of 64 MiB (128 MiB moved) took 3.7 to 3.8
  ms in the cache against 2.9 to 3.1 streaming. On a 16-core Intel host whose reported
  last-level cache is 300 MiB, streaming was faster for all three (TILE 0.18 against 0.23 ms,
  SPLIT and JOIN by a fifth): the cap keeps its large calls streaming. glibc's
  sysconf(_SC_LEVEL3_CACHE_SIZE) said 320 MiB on the 2-core machine, so it is not used.

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


class _BuildError(Exception):
  """The compiler's complaint, shortened."""


def _command(compiler: str, source: pathlib.Path, library: pathlib.Path) -> list[str]:
  return [
    compiler,
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


def _cache_folder() -> pathlib.Path:
  base = os.environ.get("DML_JAX_CACHE_DIR")
  if base:
    folder = pathlib.Path(base)
  else:
    xdg = os.environ.get("XDG_CACHE_HOME") or str(pathlib.Path.home() / ".cache")
    folder = pathlib.Path(xdg) / "dml_jax"
  folder.mkdir(parents=True, exist_ok=True)
  return folder


def _build(compiler: str, name: str, folder: pathlib.Path) -> pathlib.Path:
  """The library of native/`name`, built into `folder` unless a build of the same sources,
  command and jaxlib is there."""
  import jaxlib

  digest = hashlib.sha256()
  for part in (name, *HEADERS):
    digest.update((SOURCES / part).read_bytes())
  placeholder = pathlib.Path("SOURCE"), pathlib.Path("LIBRARY")
  digest.update(" ".join(_command(compiler, *placeholder)).encode())
  digest.update(jaxlib.__version__.encode())
  library = folder / f"{pathlib.Path(name).stem}-{digest.hexdigest()[:16]}.so"
  if library.exists():
    return library
  with tempfile.TemporaryDirectory(dir=folder) as scratch:
    built = pathlib.Path(scratch) / library.name
    result = subprocess.run(
      _command(compiler, SOURCES / name, built),
      capture_output=True,
      text=True,
      timeout=BUILD_SECONDS,
    )
    if result.returncode != 0:
      raise _BuildError(f"{compiler} could not build {name}: {result.stderr.strip()[-1500:]}")
    os.replace(built, library)  # atomic: a reader sees the whole library or none
  return library
