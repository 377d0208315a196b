"""``python -m dml_jax run MODEL.json``: a DxDispatch model run, printing what DxDispatch prints.

stdout holds what DxDispatch's stdout holds for the same model, less its timing lines:
each print's ``Resource '<name>': ...`` text and each writeFile's ``Resource '<name>'
written to '<path>'``. Progress, timing, warnings and errors go to stderr. The exit status
is 1 for a model that cannot run (every problem is listed, and nothing runs), for a
command that stops the run (a failed writeFile too: the output of the commands before it
stands, none after it runs), and, with ``--compare DIR``, when a file differs from the
same-named file in DIR; 0 otherwise. The commands run in segments (`Model.execute_segments`),
and each segment's prints and writeFiles are done as soon as it ran.

``--example NAME`` runs one of the model files installed with the package
(dml_jax/examples/NAME.json, listed by ``--help``) instead of a path.

A model file is untrusted input (docs/security.md): its paths stay inside their folders
unless ``--trust-paths`` is given, and what it may read and allocate is bounded by
``--max-bytes`` (default 4G). A writeFile that fails (a path outside the output folder, a
buffer it cannot write, an OSError) leaves no partial file.

DxDispatch's own options: ``-i/--dispatch_iterations N`` and ``-r/--dispatch_repeat N``
apply each dispatch N times (both multiply), which changes the buffers a dispatch both
reads and writes; ``--input_path`` and ``--output_path`` are ``--input-path`` and
``--output-path``. ``-t/--milliseconds_to_run`` is refused (a count that depends on the
clock gives results that depend on the machine's speed; give ``-i``), with exit status 2.
The options that only time, draw or configure DxDispatch's device (`IGNORED`) are
accepted and ignored, each with a note on stderr.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from collections.abc import Sequence
from typing import BinaryIO, TextIO

import jax
import numpy as np

from dml_jax._src import device as device_lib
from dml_jax._src.dtypes import x64_enabled
from dml_jax._src.errors import DmlModelError, counted
from dml_jax._src.model import files, npy
from dml_jax._src.model.commands import Print, WriteFile, describe
from dml_jax._src.model.files import DEFAULT_MAX_BYTES
from dml_jax._src.model.printing import PrintError, element_texts, print_text
from dml_jax._src.model.program import (
  MAX_COMMANDS_PER_SEGMENT,
  Model,
  Output,
  file_bytes,
  load_model,
  target_path,
)
from dml_jax._src.model.resources import Resource
from dml_jax._src.model.scalars import element_size

MAX_DIFFERENCES_SHOWN = 10

# DxDispatch's options that change nothing in what dml_jax computes or prints:
# (option strings, takes a value, why it is ignored).
IGNORED: tuple[tuple[tuple[str, ...], bool, str], ...] = (
  (("-I", "--dispatch_interval"), True, "timing only"),
  (("-w", "--warmup_samples"), True, "timing only"),
  (("--max_gpu_time_measurements",), True, "timing only"),
  (("-v", "--timing_verbosity"), True, "timing lines only; dml_jax prints no per-dispatch timings"),
  (
    ("--print_commands",),
    False,
    "its framing lines are not printed; stdout holds the Resource lines only",
  ),
  (("-d", "--debug"), False, "dml_jax always validates every desc and binding"),
  (("-a", "--adapter"), True, "a DirectX adapter; choose the JAX device with --device"),
  (("-q", "--queue_type"), True, "a Direct3D queue setting"),
  (
    ("--post_dispatch_barriers",),
    True,
    "each repetition of a dispatch always sees the one before it",
  ),
  (
    ("--dml_feature_level",),
    True,
    "a minimum for DirectML's device; validate at a level with --feature-level",
  ),
  *(
    ((flag,), False, "a Direct3D, driver or tooling setting")
    for flag in (
      "--disable_custom_heaps",
      "--clear_shader_caches",
      "--disable_gpu_timeout",
      "--enable_dred",
      "--disable_background_processing",
      "--set_stable_power_state",
      "--disable_agility_sdk",
      "--present_separator",
    )
  ),
)


EXAMPLES = pathlib.Path(__file__).resolve().parent.parent.parent / "examples"
"""The model files installed with the package (dml_jax/examples/)."""


def example_names() -> list[str]:
  """The names `--example` takes: the .json files under dml_jax/examples/, sorted."""
  return sorted(path.stem for path in EXAMPLES.glob("*.json"))


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
    prog="python -m dml_jax run",
    description="Runs a DxDispatch model file (DirectML operators, buffers, dispatch/print/"
    "writeFile commands) as XLA programs of at most 32 commands and prints what DxDispatch"
    " prints, each segment's output as soon as it ran.",
    allow_abbrev=False,
  )
  parser.add_argument("model", nargs="?", help="the model's .json file")
  parser.add_argument(
    "--example",
    choices=example_names(),
    help="run a model file installed with the package instead of a path",
  )
  parser.add_argument(
    "--device",
    default="default",
    choices=("cpu", "gpu", "tpu", "default"),
    help="where to run: a platform's first device, or JAX's default device (default)",
  )
  parser.add_argument(
    "--feature-level",
    default=None,
    help="DML_FEATURE_LEVEL to validate the dispatchables at, e.g. 4_1 (default: newest)",
  )
  parser.add_argument(
    "-i",
    "--dispatch_iterations",
    "--dispatch-iterations",
    type=_positive,
    default=1,
    metavar="N",
    help="apply each dispatch N times (default 1); this changes the result only where a"
    " dispatch writes a buffer it also reads",
  )
  parser.add_argument(
    "-r",
    "--dispatch_repeat",
    "--dispatch-repeat",
    type=_positive,
    default=1,
    metavar="N",
    help="dispatches per iteration (default 1): each dispatch applies its operator -i x -r"
    " times in a row",
  )
  parser.add_argument(
    "-t",
    "--milliseconds_to_run",
    default=None,
    metavar="MS",
    help="refused (exit status 2): a count set by the clock depends on the machine; use -i",
  )
  parser.add_argument(
    "--input-path",
    "--input_path",
    default=None,
    help="where sourcePath files are looked for first (default: the model's directory)",
  )
  parser.add_argument(
    "--output-path",
    "--output_path",
    default=None,
    help="the directory writeFile's targetPath is relative to (default: the current one)",
  )
  parser.add_argument(
    "--trust-paths",
    action="store_true",
    help="follow the model's paths as DxDispatch does (absolute paths, '..', symbolic links"
    " out of the folder); by default sourcePath stays in the input folder, targetPath in the"
    " output folder: use this only for a model you trust",
  )
  parser.add_argument(
    "--max-bytes",
    type=_byte_count,
    default=DEFAULT_MAX_BYTES,
    metavar="N",
    help="the most bytes the model may make the runner read or allocate (each buffer counts"
    " 5 times its size, what a run holds); a number, or with a suffix K, M, G, T (powers of"
    " 1024); default 4G",
  )
  parser.add_argument(
    "--compare",
    metavar="DIR",
    default=None,
    help="compare each file writeFile would write with the same-named file in DIR (written"
    " by DxDispatch), byte for byte, instead of writing it; exit 1 if any differs",
  )
  ignored = parser.add_argument_group(
    "DxDispatch options accepted and ignored (each gives a note on stderr)"
  )
  for flags, takes_value, why in IGNORED:
    dest = f"ignored_{flags[-1].lstrip('-')}"
    if takes_value:
      ignored.add_argument(*flags, dest=dest, default=None, metavar="X", help=why)
    else:
      ignored.add_argument(*flags, dest=dest, default=None, action="store_true", help=why)
  return parser


def _byte_count(text: str) -> int:
  units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
  stripped = text.strip().upper().removesuffix("IB").removesuffix("B")
  scale = units.get(stripped[-1:], 1)
  try:
    value = int(stripped[:-1] if scale > 1 else stripped) * scale
  except ValueError:
    value = -1
  if value < 0:
    raise argparse.ArgumentTypeError(
      f"expected a byte count such as 8G, 512M or 1000000; got {text!r}"
    )
  return value


def _positive(text: str) -> int:
  try:
    value = int(text)
  except ValueError:
    value = 0
  if value < 1:
    raise argparse.ArgumentTypeError(f"expected a positive integer; got {text!r}")
  return value


def main(argv: Sequence[str], stdout: BinaryIO | None = None, stderr: TextIO | None = None) -> int:
  """Runs ``python -m dml_jax run`` with `argv` (the arguments after ``run``)."""
  parser = _parser()
  args = parser.parse_args(list(argv))
  out = stdout if stdout is not None else sys.stdout.buffer
  err = stderr if stderr is not None else sys.stderr
  if (args.model is None) == (args.example is None):
    parser.print_usage(err)
    print("error: give a model file or --example NAME, one of the two", file=err)
    return 2
  if args.example is not None:
    args.model = EXAMPLES / f"{args.example}.json"
  if args.milliseconds_to_run is not None:
    print(
      "-t/--milliseconds_to_run is not supported: it repeats each dispatch for a span of"
      " time, so how often an in-place dispatch runs, and what it leaves, would depend on the"
      " machine's speed; give the count instead, with -i/--dispatch_iterations N",
      file=err,
    )
    return 2
  for flags, _, why in IGNORED:
    if getattr(args, f"ignored_{flags[-1].lstrip('-')}") not in (None, False):
      print(f"note: {'/'.join(flags)} ignored ({why})", file=err)
  try:
    model = load_model(
      args.model,
      feature_level=args.feature_level,
      input_path=args.input_path,
      trust_paths=args.trust_paths,
      max_bytes=args.max_bytes,
    )
  except DmlModelError as error:
    print(f"Failed to parse the model: {error}", file=err)
    return 1
  except (OSError, ValueError) as error:
    print(f"Failed to load the model: {error}", file=err)
    return 1
  for warning in model.warnings:
    print(f"warning: {warning}", file=err)
  if model.uses_64_bit() and not x64_enabled():
    jax.config.update("jax_enable_x64", True)
  try:
    target = device_lib.resolve(None if args.device == "default" else args.device)
  except ValueError as error:
    print(str(error), file=err)
    return 1
  print(f"Running on '{device_lib.describe(target)}' (jax {jax.__version__})", file=err)
  start = time.perf_counter()
  ran, segments, status, failure = 0, 0, 0, None
  for segment in model.execute_segments(
    target, dispatch_iterations=args.dispatch_iterations, dispatch_repeat=args.dispatch_repeat
  ):
    segments += 1
    for output in segment.outputs:
      code, failure = _emit(model, output, args, out, err)
      status |= code
      if failure is not None:
        ran = output.index
        break
    out.flush()  # each segment's output as soon as it ran
    if failure is not None:
      break
    ran = segment.stop
    if segment.error is not None:
      failure = str(segment.error)
  seconds = time.perf_counter() - start
  times = args.dispatch_iterations * args.dispatch_repeat
  repeated = f", each dispatch {times} times" if times > 1 else ""
  total = len(model.commands)
  if ran or failure is None:  # only what ran
    print(
      f"Ran {f'{ran} of {total}' if ran < total else total} command{'' if total == 1 else 's'}"
      f" ({counted(len(model.dispatchables), 'dispatchable')}, FL {model.feature_level}"
      f"{repeated}) in {counted(segments, 'segment')} (XLA programs of at most"
      f" {MAX_COMMANDS_PER_SEGMENT} commands), {seconds * 1e3:.1f} ms (compilation included)",
      file=err,
    )
  if failure is not None:
    print(f"Failed to execute the model: {failure}", file=err)
    return 1
  return status


def _emit(
  model: Model, output: Output, args: argparse.Namespace, out: BinaryIO, err: TextIO
) -> tuple[int, str | None]:
  """Prints a print's text or does a writeFile: (exit status, None), or (1, why the command
  failed) when the run must stop there. A file that differs from --compare's is not a
  failure of the command: the run goes on and exits 1."""
  command = output.command
  resource = model.resources[command.resource]
  if isinstance(command, Print):
    try:
      text = print_text(
        resource.name,
        resource.data_type,
        output.data,
        len(resource.initial),
        verbose=command.verbose,
      )
    except PrintError as error:
      return 1, f"command {output.index} ({describe(command)}): {error}"
    out.write(text)
    return 0, None
  code = _write_file(model, resource, command, output.data, args, out, err)
  if code and args.compare is None:
    return 1, (
      f"command {output.index} ({describe(command)}): the file was not written, so no later"
      " command ran"
    )
  return code, None


def _write_file(
  model: Model,
  resource: Resource,
  command: WriteFile,
  data: bytes,
  args: argparse.Namespace,
  out: BinaryIO,
  err: TextIO,
) -> int:
  """Writes (or, with --compare, compares) one writeFile's file: 0 when done, 1 when the
  command failed (a refused path, a conversion error, an OSError, a file that differs);
  the reason is on stderr (on stdout for a comparison), and no partial file is left."""
  trust = getattr(args, "trust_paths", False)
  try:
    path = target_path(command, args.output_path, trust_paths=trust)
    content = file_bytes(resource, data, command)
    if args.compare is not None:
      reference = _reference_path(pathlib.Path(args.compare), command, path, trust)
      limit = getattr(args, "max_bytes", DEFAULT_MAX_BYTES)
      lines = compare(resource, content, reference, max_bytes=limit)
      for line in lines:
        out.write(line.encode("utf-8", "backslashreplace") + b"\n")
      return 1 if any(not line.startswith("same:") for line in lines) else 0
    base = pathlib.Path(args.output_path) if args.output_path is not None else pathlib.Path.cwd()
    written = files.write_atomic(
      base, command.target_path, content, "targetPath", trust_paths=trust
    )
  except (ValueError, OSError) as error:  # UnsafePathError is a ValueError
    out.flush()
    verb = "compare" if args.compare is not None else "write"
    print(
      f"Failed to {verb} resource to file '{command.target_path}' ({describe(command)}): {error}",
      file=err,
    )
    return 1
  out.write(f"Resource '{resource.name}' written to '{written}'\n".encode())
  return 0


def _reference_path(
  folder: pathlib.Path, command: WriteFile, path: pathlib.Path, trust: bool
) -> pathlib.Path:
  """The file --compare reads for a writeFile: targetPath under `folder` (an absolute
  targetPath, allowed by --trust-paths, gives its file name)."""
  if trust:
    relative = pathlib.PurePath(command.target_path)
    return folder / (path.name if relative.is_absolute() else relative)
  return files.contained(folder, command.target_path, "targetPath (under --compare)")


def compare(
  resource: Resource,
  content: bytes,
  reference: pathlib.Path,
  *,
  max_bytes: int = DEFAULT_MAX_BYTES,
) -> list[str]:
  """Lines comparing a file's bytes with the file DxDispatch wrote: ``same: ...`` when
  they are equal byte for byte, else what differs (the header, or each element: its
  index and both values, the first few of them). The reference must be a regular file
  of at most `max_bytes`."""
  name = resource.name
  try:
    expected = files.read_regular(reference, files.Budget(max_bytes), "the reference file")
  except OSError:
    return [f"differs: Resource '{name}': no reference file '{reference}'"]
  except ValueError as error:  # not a regular file, or too large
    return [f"differs: Resource '{name}': {error}"]
  if expected == content:
    return [f"same: Resource '{name}' equals '{reference}' ({len(content)} bytes)"]
  ours, theirs = content, expected
  if reference.suffix.lower() == ".npy":
    header = len(content) - len(_npy_data(content))
    if content[:header] != expected[:header]:
      return [f"differs: Resource '{name}': the .npy header differs from '{reference}'"]
    ours, theirs = content[header:], expected[header:]
  lines = [f"differs: Resource '{name}' and '{reference}'"]
  if len(ours) != len(theirs):
    lines.append(f"  sizes differ: dml_jax {len(ours)} bytes, reference {len(theirs)} bytes")
  size = element_size(resource.data_type) or 1
  count = min(len(ours), len(theirs)) // size
  a = np.frombuffer(ours[: count * size], np.dtype(f"V{size}"))
  b = np.frombuffer(theirs[: count * size], np.dtype(f"V{size}"))
  different = np.flatnonzero(a != b)
  if len(different):
    lines[0] += f": {len(different)} of {count} elements differ"
  for i in different[:MAX_DIFFERENCES_SHOWN]:
    i = int(i)
    mine, other = (_show(resource, x[i * size : (i + 1) * size]) for x in (ours, theirs))
    lines.append(f"  element {i}: dml_jax {mine}, reference {other}")
  return lines


def _show(resource: Resource, data: bytes) -> str:
  if not element_size(resource.data_type):
    return data.hex()
  text = element_texts(resource.data_type, data)[0]
  return text.decode("latin-1") if resource.data_type.is_float or len(data) > 1 else repr(text)


def _npy_data(content: bytes) -> bytes:
  length = int.from_bytes(content[8:10], "little")
  return content[10 + length :]


__all__ = ["main", "compare", "npy"]
