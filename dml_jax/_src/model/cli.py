"""``python -m dml_jax run MODEL.json``: a DxDispatch model run, printing what DxDispatch prints.

stdout holds what DxDispatch's stdout holds for the same model, less its timing lines:
each print's ``Resource '<name>': ...`` text and each writeFile's ``Resource '<name>'
written to '<path>'``. Progress, timing, warnings and errors go to stderr. The exit status
is 1 for a model that cannot run (every problem is listed), for a command that stops the
run (the output of the commands before it stands), and, with ``--compare DIR``, when a
file differs from the same-named file in DIR; 0 otherwise.
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
from dml_jax._src.errors import DmlModelError
from dml_jax._src.model import npy
from dml_jax._src.model.commands import Print, WriteFile
from dml_jax._src.model.printing import PrintError, element_texts, print_text
from dml_jax._src.model.program import Model, file_bytes, load_model, target_path
from dml_jax._src.model.resources import Resource
from dml_jax._src.model.scalars import element_size

MAX_DIFFERENCES_SHOWN = 10


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
    prog="python -m dml_jax run",
    description="Runs a DxDispatch model file (DirectML operators, buffers, dispatch/print/"
    "writeFile commands) as one JAX program and prints what DxDispatch prints.",
  )
  parser.add_argument("model", help="the model's .json file")
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
    "--input-path",
    default=None,
    help="where sourcePath files are looked for first (default: the model's directory)",
  )
  parser.add_argument(
    "--output-path",
    default=None,
    help="the directory writeFile's targetPath is relative to (default: the current one)",
  )
  parser.add_argument(
    "--compare",
    metavar="DIR",
    default=None,
    help="compare each file writeFile would write with the same-named file in DIR (written"
    " by DxDispatch), byte for byte, instead of writing it; exit 1 if any differs",
  )
  return parser


def main(argv: Sequence[str], stdout: BinaryIO | None = None, stderr: TextIO | None = None) -> int:
  """Runs ``python -m dml_jax run`` with `argv` (the arguments after ``run``)."""
  args = _parser().parse_args(list(argv))
  out = stdout if stdout is not None else sys.stdout.buffer
  err = stderr if stderr is not None else sys.stderr
  try:
    model = load_model(args.model, feature_level=args.feature_level, input_path=args.input_path)
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
  result = model.execute(target)
  seconds = time.perf_counter() - start
  print(
    f"Ran {len(model.commands)} commands ({len(model.dispatchables)} dispatchables, FL"
    f" {model.feature_level}) as one program in {seconds * 1e3:.1f} ms (compilation included)",
    file=err,
  )
  status = 0
  for output in result.outputs:
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
        out.flush()
        print(f"Failed to execute the model: command {output.index}: {error}", file=err)
        return 1
      out.write(text)
      continue
    status |= _write_file(model, resource, command, output.data, args, out, err)
  out.flush()
  if result.error is not None:
    print(f"Failed to execute the model: {result.error}", file=err)
    return 1
  return status


def _write_file(
  model: Model,
  resource: Resource,
  command: WriteFile,
  data: bytes,
  args: argparse.Namespace,
  out: BinaryIO,
  err: TextIO,
) -> int:
  path = target_path(command, args.output_path)
  try:
    content = file_bytes(resource, data, command)
  except ValueError as error:
    print(f"Failed to write resource to file '{path}': {error}", file=err)
    return 0
  if args.compare is not None:
    reference = pathlib.Path(args.compare) / (
      command.target_path if not pathlib.PurePath(command.target_path).is_absolute() else path.name
    )
    lines = compare(resource, content, reference)
    for line in lines:
      out.write(line.encode("utf-8", "backslashreplace") + b"\n")
    return 1 if any(not line.startswith("same:") for line in lines) else 0
  try:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
  except OSError as error:
    print(f"Failed to write resource to file '{path}': {error}", file=err)
    return 0
  out.write(f"Resource '{resource.name}' written to '{path}'\n".encode())
  return 0


def compare(resource: Resource, content: bytes, reference: pathlib.Path) -> list[str]:
  """Lines comparing a file's bytes with the file DxDispatch wrote: ``same: ...`` when
  they are equal byte for byte, else what differs (the header, or each element: its
  index and both values, the first few of them)."""
  name = resource.name
  try:
    expected = reference.read_bytes()
  except OSError:
    return [f"differs: Resource '{name}': no reference file '{reference}'"]
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
