"""The files a model names, treated as untrusted input: contained paths, bounded reads,
atomic writes.

A model file comes from anyone (a bug report's repro), so the paths it gives stay inside
their base folder: a resource's ``sourcePath`` inside the input folder (the model's
folder, or ``--input-path``), a writeFile's ``targetPath`` inside the output folder
(``--output-path``, default the current one), and ``--compare``'s reference files inside
the compared folder. An absolute path, a ``..`` that climbs out, and a symbolic link that
resolves outside are refused (`UnsafePathError`); ``trust_paths=True`` (``--trust-paths``)
restores DxDispatch's behaviour, which follows every path as given.

Whatever the paths, only regular files are read (a FIFO, a device such as /dev/zero or a
folder is refused before anything is read), and no more bytes than the model's budget
(`Budget`) allows. Writes go to a temporary file in the target folder, renamed over the
target once complete: a failed write leaves no partial file.

Examples:
  >>> contained_relative("sub/x.npy", "targetPath")
  'sub/x.npy'
  >>> contained_relative("../x.npy", "targetPath")
  Traceback (most recent call last):
  ...
  dml_jax._src.model.files.UnsafePathError: targetPath '../x.npy' climbs out of its folder with '..'; give a path inside it, or pass --trust-paths (trust_paths=True) for a model you trust
"""

from __future__ import annotations

import os
import pathlib
import secrets
import stat

DEFAULT_MAX_BYTES = 4 * 2**30
"""The default budget of a model: 4 GiB, what a laptop runs without swapping."""

TRUST_HINT = "pass --trust-paths (trust_paths=True) for a model you trust"


class UnsafePathError(ValueError):
  """A path from a model file that leaves its base folder, or a file that is not a regular
  file: refused unless the user trusts the model."""


class BudgetError(ValueError):
  """A model that asks for more bytes than its budget allows."""


def show_bytes(count: int) -> str:
  """A byte count for a message: ``4294967296 bytes (4 GiB)``."""
  for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
    if count >= size:
      return f"{count} bytes ({count / size:.4g} {unit})"
  return f"{count} bytes"


class Budget:
  """The bytes a model may make the runner read or allocate, charged as it loads.

  Examples:
    >>> budget = Budget(1000)
    >>> budget.charge(600, "resource 'a'")
    >>> budget.charge(600, "resource 'b'")
    Traceback (most recent call last):
    ...
    dml_jax._src.model.files.BudgetError: resource 'b' needs 600 bytes, more than the 400 bytes left of the model's limit of 1000 bytes; raise the limit with --max-bytes N (load_model(..., max_bytes=N)) for a model you trust
  """

  def __init__(self, limit: int = DEFAULT_MAX_BYTES) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
      raise ValueError(f"max_bytes must be a non-negative integer (bytes); got {limit!r}")
    self.limit = limit
    self.used = 0

  @property
  def left(self) -> int:
    return self.limit - self.used

  def check(self, count: int, what: str) -> None:
    """Raises BudgetError if `count` more bytes do not fit; charges nothing."""
    if count > self.left:
      raise BudgetError(
        f"{what} needs {show_bytes(count)}, more than the {show_bytes(self.left)} left of the"
        f" model's limit of {show_bytes(self.limit)}; raise the limit with --max-bytes N"
        " (load_model(..., max_bytes=N)) for a model you trust"
      )

  def charge(self, count: int, what: str) -> None:
    """Charges `count` bytes for `what` (BudgetError if they do not fit)."""
    self.check(count, what)
    self.used += count


def contained_relative(path: str, what: str) -> str:
  """`path` if it is relative and never climbs above its folder (checked on the text
  alone, before any folder is known).

  Raises:
    UnsafePathError: an absolute path, or one whose ``..`` leave the folder.
  """
  pure = pathlib.PurePath(path)
  if pure.is_absolute() or pure.drive or pure.root:
    raise UnsafePathError(
      f"{what} {path!r} is an absolute path; give a path relative to its folder, or {TRUST_HINT}"
    )
  depth = 0
  for part in pure.parts:
    depth += -1 if part == ".." else 0 if part == "." else 1
    if depth < 0:
      raise UnsafePathError(
        f"{what} {path!r} climbs out of its folder with '..'; give a path inside it, or"
        f" {TRUST_HINT}"
      )
  return path


def contained(base: pathlib.Path, path: str, what: str) -> pathlib.Path:
  """``base / path``, checked to stay in `base` once every symbolic link is resolved.

  Raises:
    UnsafePathError: an absolute path, a ``..`` that leaves `base`, or a symbolic link
      (of the path or of a folder on it) that resolves outside `base`.
  """
  contained_relative(path, what)
  root = base.resolve()
  found = (base / path).resolve()
  if not found.is_relative_to(root):
    raise UnsafePathError(
      f"{what} {path!r} resolves to '{found}', outside '{root}' (through a symbolic link);"
      f" {TRUST_HINT}"
    )
  return found


def read_regular(path: pathlib.Path, budget: Budget, what: str, *, follow: bool = True) -> bytes:
  """The bytes of a regular file, its size charged to `budget` before it is read.

  A FIFO, a device or a folder is refused without blocking and without reading; with
  ``follow=False`` a symbolic link in the last component is refused too (a link put in
  place after the path was checked).

  Raises:
    OSError: a file that cannot be opened or read.
    UnsafePathError: not a regular file.
    BudgetError: a file larger than what is left of the budget.
  """
  flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
  if not follow:
    flags |= getattr(os, "O_NOFOLLOW", 0)
  descriptor = os.open(path, flags)
  try:
    status = os.fstat(descriptor)
    if not stat.S_ISREG(status.st_mode):
      raise UnsafePathError(
        f"{what} '{path}' is not a regular file (a FIFO, a device or a folder); give a file"
      )
    budget.charge(status.st_size, f"{what} '{path}'")
    chunks, left = [], status.st_size
    while left > 0:
      chunk = os.read(descriptor, min(left, 2**30))
      if not chunk:  # the file shrank while it was read
        break
      chunks.append(chunk)
      left -= len(chunk)
    return b"".join(chunks)
  finally:
    os.close(descriptor)


def write_atomic(
  base: pathlib.Path, path: str, content: bytes, what: str, *, trust_paths: bool = False
) -> pathlib.Path:
  """Writes `content` to ``base / path`` through a temporary file renamed into place; the
  missing folders on the way are created (inside `base` unless `trust_paths`).

  Returns the path written (``base / path`` made absolute, links not resolved).

  Raises:
    UnsafePathError: a path outside `base` (unless `trust_paths`).
    OSError: a failed write; no partial file is left behind.
  """
  target = (base / path).absolute()
  if trust_paths:
    target.parent.mkdir(parents=True, exist_ok=True)
    folder = target.parent
  else:
    contained_relative(path, what)
    root = base.resolve()
    folder = root
    for part in pathlib.PurePath(path).parent.parts:
      folder = folder / part
      if not folder.exists() and not folder.is_symlink():
        folder.mkdir()
      folder = folder.resolve()
      if not folder.is_relative_to(root):
        raise UnsafePathError(
          f"{what} {path!r}: the folder '{folder}' is outside '{root}' (through a symbolic"
          f" link); {TRUST_HINT}"
        )
    final = folder / target.name
    if final.is_symlink() and not final.resolve().is_relative_to(root):
      raise UnsafePathError(
        f"{what} {path!r} is a symbolic link to '{final.resolve()}', outside '{root}'; {TRUST_HINT}"
      )
  temporary = folder / f".{target.name}.{secrets.token_hex(6)}.tmp"
  flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
  descriptor = os.open(temporary, flags, 0o666)
  try:
    with os.fdopen(descriptor, "wb") as file:
      file.write(content)
    os.replace(temporary, folder / target.name)
  except BaseException:
    temporary.unlink(missing_ok=True)
    raise
  return target
