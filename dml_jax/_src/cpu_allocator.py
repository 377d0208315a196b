"""An opt-in setup of glibc's malloc for XLA:CPU's outputs, and a way to give memory back.

XLA:CPU takes every output buffer from malloc. glibc serves a block above its mmap threshold
(adaptive, at most 32 MiB by default) with a fresh mmap, and unmaps it on free, so each call
with a large output touches new pages: a minor page fault per 4 KiB, on every call. Blocks that
XLA's worker threads allocate come from per-thread arenas whose heaps are 64 MiB, which cannot
hold a block of 64 MiB or more, so those take fresh pages too. `configure_allocator` sets three
malloc parameters through `mallopt` so that such blocks come from the main heap and are reused:
the effect of the environment recipe MALLOC_ARENA_MAX=1 MALLOC_MMAP_THRESHOLD_=...
MALLOC_TRIM_THRESHOLD_=..., chosen from inside the program.

Nothing here runs at import: only a call changes anything, for the whole process.
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import platform
import sys
import threading
from collections.abc import Mapping
from typing import Any, Literal

from dml_jax._src import jax_compat

# glibc's <malloc.h>
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

INT_MAX = 2**31 - 1  # mallopt takes an int
# The cap older glibc releases (2.34 and before; 2.36 has none) put on M_MMAP_THRESHOLD, through
# mallopt and the environment alike: HEAP_MAX_SIZE / 2 on 64-bit. mallopt returns 0 above it.
OLD_GLIBC_MMAP_THRESHOLD_MAX = 32 << 20


@dataclasses.dataclass(frozen=True)
class _Setting:
  parameter: str  # mallopt's name
  number: int  # mallopt's constant
  values: tuple[int, ...]  # tried in order until glibc accepts one
  variable: str  # the environment variable glibc reads at start-up
  tunable: str  # the same as a GLIBC_TUNABLES entry


SETTINGS = (
  # Blocks below the threshold come from the heap, and are reused once freed.
  _Setting(
    "M_MMAP_THRESHOLD",
    M_MMAP_THRESHOLD,
    (INT_MAX, OLD_GLIBC_MMAP_THRESHOLD_MAX),
    "MALLOC_MMAP_THRESHOLD_",
    "glibc.malloc.mmap_threshold",
  ),
  # Free memory at the top of the heap stays mapped up to this much (not handed back on free).
  _Setting(
    "M_TRIM_THRESHOLD",
    M_TRIM_THRESHOLD,
    (INT_MAX,),
    "MALLOC_TRIM_THRESHOLD_",
    "glibc.malloc.trim_threshold",
  ),
  # One arena: the threads that have none yet (XLA's, once it starts them) share the main heap.
  _Setting("M_ARENA_MAX", M_ARENA_MAX, (1,), "MALLOC_ARENA_MAX", "glibc.malloc.arena_max"),
)

# Allocators that replace glibc's malloc when preloaded; mallopt does not configure them.
_PRELOADED_ALLOCATORS = ("jemalloc", "tcmalloc", "mimalloc", "hoard", "snmalloc")


@dataclasses.dataclass(frozen=True)
class AllocatorSetup:
  """What `dml_jax.cpu.configure_allocator` did.

  Attributes:
    applied: each malloc parameter set (mallopt's name, such as "M_ARENA_MAX") and the value
      glibc accepted.
    skipped: each parameter left alone, and why (the user's own setting of it; a value glibc
      refused).
    note: one line saying what happened, and what it means for large outputs.
    too_late: True when JAX had created its CPU client before the call (see `if_late`).
    libc: "glibc 2.36", or what the platform has instead.
  """

  applied: Mapping[str, int]
  skipped: Mapping[str, str]
  note: str
  too_late: bool = False
  libc: str = ""

  @property
  def summary(self) -> str:
    """The record in one line."""
    parts = [" ".join(f"{k}={v}" for k, v in self.applied.items()) or "nothing set"]
    parts += [f"{k} left alone ({why})" for k, why in self.skipped.items()]
    return "; ".join(parts) + f": {self.note}"

  def as_dict(self) -> dict[str, Any]:
    """The record as plain data (for JSON)."""
    return {
      "applied": dict(self.applied),
      "skipped": dict(self.skipped),
      "note": self.note,
      "too_late": self.too_late,
      "libc": self.libc,
      "summary": self.summary,
    }

  def __str__(self) -> str:
    return self.summary


_lock = threading.Lock()
_done: AllocatorSetup | None = None  # the first call's record, once it set something


def jax_cpu_client_exists() -> bool:
  """Whether JAX has created its clients (the CPU one among them) in this process.

  JAX creates them at the first computation, transfer or device query, not at import.
  """
  return jax_compat.backends_initialized()


def _glibc() -> tuple[ctypes.CDLL | None, str]:
  """glibc's C library and its version, or (None, what there is instead)."""
  if not sys.platform.startswith("linux"):
    return None, f"not Linux ({sys.platform})"
  name, version = platform.libc_ver()
  if name != "glibc":
    return None, f"not glibc ({name or 'another C library'})"
  preload = os.environ.get("LD_PRELOAD", "")
  if any(allocator in preload for allocator in _PRELOADED_ALLOCATORS):
    return None, f"glibc {version}, but LD_PRELOAD={preload} replaces its malloc"
  try:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.mallopt.restype = ctypes.c_int
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    libc.malloc_trim.restype = ctypes.c_int
  except (OSError, AttributeError) as e:
    return None, f"glibc {version}, but its mallopt cannot be called ({e})"
  return libc, f"glibc {version}"


def _user_setting(setting: _Setting) -> str | None:
  """The user's own setting of a parameter in the environment, as "NAME=value", if any."""
  if setting.variable in os.environ:
    return f"{setting.variable}={os.environ[setting.variable]} is set in the environment"
  for entry in os.environ.get("GLIBC_TUNABLES", "").split(":"):
    if entry.split("=", 1)[0] == setting.tunable:
      return f"GLIBC_TUNABLES has {entry}"
  return None


_TOO_LATE = (
  "dml_jax.cpu.configure_allocator() ran after JAX created its CPU client: XLA's worker threads"
  " may already have their own malloc arenas, which the setting cannot change, so large"
  " outputs would still take fresh pages. Call it at the top of the program, before anything"
  " computes with JAX (importing jax and dml_jax is fine), or set MALLOC_ARENA_MAX=1"
  " MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 in the environment"
  " before Python starts. if_late='apply' sets what still helps instead of raising."
)


def configure_allocator(*, if_late: Literal["raise", "apply"] = "raise") -> AllocatorSetup:
  """Sets glibc's malloc up so that XLA:CPU's large outputs reuse memory; an opt-in step.

  On the CPU, XLA takes every output from malloc, and glibc serves blocks above its mmap
  threshold (at most 32 MiB by default) with fresh pages each time: a call with a 64 MiB output
  pays 16,384 page faults, often more time than the operator's own work. This sets, through
  glibc's `mallopt`, for the whole process:

  - M_MMAP_THRESHOLD = 2147483647 (the largest value mallopt takes): blocks below 2 GiB come
    from the heap and are reused once freed. Older glibc releases (2.34 and before) refuse more
    than 32 MiB, through mallopt and the environment alike; then 32 MiB is set, and the record
    says that larger blocks still take fresh pages.
  - M_TRIM_THRESHOLD = 2147483647: free memory at the top of the heap stays with the process
    instead of going back to the system at every free.
  - M_ARENA_MAX = 1: the threads that have no arena yet (XLA's worker threads, which it starts
    with its CPU client) share the main heap; their own arenas are 64 MiB heaps, too small for a
    64 MiB block.

  It is the environment recipe MALLOC_ARENA_MAX=1 MALLOC_MMAP_THRESHOLD_=...
  MALLOC_TRIM_THRESHOLD_=... (docs/performance.md) set from inside the program. Nothing changes
  at import; only this call changes malloc, and only for this process.

  It is permanent for the process: dml_jax has no call that undoes it (the threads that
  started while one arena was the limit keep sharing the main heap whatever is set later).
  A program that must keep glibc's defaults, or code that shares its process with others,
  should not call it; run the work that wants it in a process of its own.

  When to call it: before anything computes with JAX (the first computation, transfer or
  device query creates the CPU client and its threads); importing jax and dml_jax first is
  fine. Called later, it raises (`if_late="raise"`, the default), or sets the parameters anyway
  (`if_late="apply"`), which helps blocks that the main thread allocates but not those of the
  threads that already have arenas; the record then says `too_late=True`. A second call returns
  the first call's record.

  What it leaves alone: a parameter the user set, as MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_,
  MALLOC_ARENA_MAX or a glibc.malloc tunable in GLIBC_TUNABLES (the record lists each under
  `skipped`); every platform other than Linux with glibc, and a preloaded malloc replacement
  (jemalloc, tcmalloc, mimalloc): there it sets nothing and says so.

  The cost: memory freed by the program stays resident. After a burst of large outputs the
  process keeps the pages the burst used, and freed blocks in the middle of the heap wait for
  reuse. `dml_jax.cpu.release_memory()` calls glibc's `malloc_trim(0)`, which hands the free
  memory back to the system; call it after such a burst. One arena for every thread can also
  slow a program whose own threads allocate heavily at the same time.

  Args:
    if_late: "raise" (default): raise if JAX's CPU client already exists; "apply": set the
      parameters anyway and report `too_late=True`.

  Returns:
    An `AllocatorSetup`: what was set, what was left alone and why, and a one-line note.

  Raises:
    RuntimeError: JAX's CPU client exists already and `if_late` is "raise", on a platform
      where there is something to set (off glibc it returns its record instead); the message
      says where to call it instead.

  Examples:
    The intended use is the first lines of a program::

      import dml_jax
      dml_jax.cpu.configure_allocator()   # before anything computes with JAX

    Once JAX has computed something, it is too late, and it says so:

    >>> import jax.numpy as jnp
    >>> from dml_jax import cpu
    >>> _ = jnp.ones(2) + 1  # JAX's CPU client exists from here on
    >>> cpu.configure_allocator()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    RuntimeError: dml_jax.cpu.configure_allocator() ran after JAX created its CPU client: ...
  """
  global _done
  if if_late not in ("raise", "apply"):
    raise ValueError(f"if_late must be 'raise' or 'apply', not {if_late!r}")
  with _lock:
    if _done is not None:
      return _done
    too_late = jax_cpu_client_exists()
    libc, libc_name = _glibc()
    if libc is None:  # nothing to set, so never too late either
      return AllocatorSetup({}, {}, f"{libc_name}: nothing to set", too_late, libc_name)
    if too_late and if_late == "raise":
      raise RuntimeError(_TOO_LATE)
    applied: dict[str, int] = {}
    skipped: dict[str, str] = {}
    users = False  # whether a parameter was left alone for the user's own setting
    for setting in SETTINGS:
      user = _user_setting(setting)
      if user:
        skipped[setting.parameter] = user
        users = True
        continue
      for value in setting.values:
        if libc.mallopt(setting.number, value) == 1:
          applied[setting.parameter] = value
          break
      else:
        skipped[setting.parameter] = f"glibc refused {', '.join(map(str, setting.values))}"
    note = _note(applied, users, too_late)
    _done = AllocatorSetup(applied, skipped, note, too_late, libc_name)
    return _done


def _note(applied: Mapping[str, int], users: bool, too_late: bool) -> str:
  threshold = applied.get("M_MMAP_THRESHOLD")
  if threshold is not None and threshold < INT_MAX:
    reach = f"blocks up to {threshold >> 20} MiB reuse memory; larger ones still take fresh pages"
  elif threshold is not None:
    reach = "blocks below 2 GiB reuse memory once freed"
  else:
    reach = "the mmap threshold is the user's or glibc's"
  if too_late:
    reach += (
      "; set after JAX created its CPU client: threads with an arena of their own keep it, and"
      " their blocks of 64 MiB or more still take fresh pages"
    )
  if users:  # a value glibc refused is in `skipped` only, with its reason
    reach += "; the user's settings are kept"
  return reach + ". release_memory() gives freed memory back"


def release_memory() -> bool:
  """Hands the memory malloc holds free back to the system: glibc's `malloc_trim(0)`.

  With `configure_allocator`'s settings, freed blocks stay with the process for reuse; after a
  burst of large outputs that is memory the program no longer needs. This trims the top of
  every heap and returns the free pages inside them to the system (the next large output then
  takes fresh pages once). Anywhere but Linux with glibc it does nothing.

  Returns:
    True if glibc gave memory back, False if there was none to give (or no glibc).

  Examples:
    >>> from dml_jax import cpu
    >>> released = cpu.release_memory()  # True when glibc handed pages back
  """
  libc, _ = _glibc()
  return bool(libc.malloc_trim(0)) if libc is not None else False
