"""A DxDispatch model loaded, validated and run: `load_model` and `Model`.

Loading parses the whole file and checks everything that can be checked before the
first command: every resource is built, every dispatchable parsed and validated (as
DirectML's CreateOperator would, at the chosen feature level), every name a command or a
dispatchable's ``bindings`` uses exists, the inputs flagged OWNED_BY_DML have their
initialization bindings, and every dispatch's bindings follow DirectML's rules (each bind
point bound, offsets aligned, each view at least the tensor's TotalTensorSizeInBytes,
naming the resource; no output aliasing an input but in place). Every problem is reported
at once, in one `DmlModelError`.

Running executes the commands in order on persistent buffers (one byte array per
resource, ``sizeInBytes`` long), in segments of at most `MAX_COMMANDS_PER_SEGMENT`
commands, each one XLA program: each dispatch reads its inputs from the buffers and
writes its outputs into them (`dml.compile_operator`, the bindings of `dml.Binding`), so
a segment is a chain of buffer updates that XLA compiles once, with no round trip to the
host between its dispatches; the buffers stay on the device from one segment to the next,
and segments of the same commands share one compiled program. A print or writeFile takes
the buffer as it is at that point of the chain (the segment's program returns those
snapshots too), and what they show is made on the host as soon as its segment ran
(`Model.execute_segments`).

Each dispatch applies its operator ``dispatch_iterations * dispatch_repeat`` times in a
row (DxDispatch's ``-i`` and ``-r``, 1 and 1 by default). That changes the result only
when the dispatch writes a buffer it also reads (an in-place ELEMENT_WISE_IDENTITY): each
application then reads what the one before wrote, and the repetitions run as a loop inside
the program. A dispatch whose outputs share no buffer with its inputs gives the same
buffers every time, so it runs once.

A dispatch binds each source at byte ``elementOffset * element size`` (the source's
``elementSizeInBytes``, else the buffer's element size), the view running to the
buffer's end (``elementCount`` plays no part). DirectML's binding rules apply (an
offset that is a multiple of 16, a view at least TotalTensorSizeInBytes, ...), and the
library's: an output bound to a buffer that is also an input is refused, except for the
operators with an in-place form (ELEMENT_WISE_IDENTITY, the fills and the scans). A dispatch that
breaks one stops the run there: the commands before it ran, none after it does
(`DmlCommandError`); loading finds every such binding, so a run stops only for what it
cannot see. OWNED_BY_DML inputs are read from the buffers' initial contents.

Examples:
  >>> import dml_jax as dml
  >>> model = dml.load_model({
  ...   "resources": {
  ...     "A": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3, 4]},
  ...     "B": {"initialValuesDataType": "FLOAT32", "initialValues": {"value": 0, "valueCount": 4}},
  ...   },
  ...   "dispatchables": {"copy": {"type": "ELEMENT_WISE_IDENTITY", "desc": {
  ...     "InputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
  ...     "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
  ...     "ScaleBias": {"Scale": 0.5, "Bias": 1}}}},
  ...   "commands": [{"type": "dispatch", "dispatchable": "copy", "bindings": {"InputTensor": "A", "OutputTensor": "B"}},
  ...                {"type": "print", "resource": "B"}],
  ... })
  >>> model.run()["B"]
  array([1.5, 2. , 2.5, 3. ], dtype=float32)
  >>> print(model.execute().stdout, end="")
  Resource 'B': 1.5, 2, 2.5, 3
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import jax
import numpy as np
from jax import lax

from dml_jax._src import device as device_lib
from dml_jax._src.buffers import Binding, check_binding
from dml_jax._src.errors import DmlBindingError, DmlCommandError, DmlModelError, counted
from dml_jax._src.execute import CompiledOperator
from dml_jax._src.feature_level import FeatureLevel, FeatureLevelLike
from dml_jax._src.model import files, jsonc, npy
from dml_jax._src.model.commands import Command, Dispatch, Print, WriteFile, describe, parse_command
from dml_jax._src.model.dispatchables import Dispatchable, Source, parse_dispatchable, validate
from dml_jax._src.model.printing import PrintError, print_text
from dml_jax._src.model.resources import FieldError, Resource, parse_resource
from dml_jax._src.tensor_desc import TensorFlags

Buffers = dict[str, jax.Array]

MAX_COMMANDS_PER_SEGMENT = 32
"""The most commands one XLA program of `Model.execute` holds.

Bounded so that no model is one program too large to compile: XLA fuses a chain of
dispatches into one kernel, and its CPU compiler crashes on a chain of several hundred
GATHERs (see the models page) and takes longer than linear time on long chains. 32 keeps
every segment an order of magnitude below the crash and compiles in well under a second
for the operators tried, while a long model costs one call per 32 commands and, where its
commands repeat, one compilation for each distinct segment."""

MIN_SNAPSHOT_BYTES = 64 * 2**20
"""The snapshot bytes a segment may always hold; past them, it holds at most the buffers'."""


@dataclasses.dataclass(frozen=True)
class Output:
  """What a print or writeFile command shows: the command's index, the command, and the
  buffer's bytes at that point of the run."""

  index: int
  command: Print | WriteFile
  data: bytes


@dataclasses.dataclass
class RunResult:
  """One run of a model's commands.

  Attributes:
    buffers: every resource's final bytes (a uint8 array of ``sizeInBytes``).
    outputs: the prints' and writeFiles' buffers, in command order.
    error: the command error that stopped the run, or None.
    model: the model that ran.
  """

  buffers: dict[str, np.ndarray]
  outputs: list[Output]
  error: DmlCommandError | None
  model: Model

  @property
  def stdout(self) -> str:
    """What the prints write (INT8/UINT8 bytes read as Latin-1 characters)."""
    return b"".join(self.print_bytes()).decode("latin-1")

  def print_bytes(self) -> list[bytes]:
    """Each print's text as bytes, as DxDispatch writes it to stdout."""
    found = []
    for output in self.outputs:
      if isinstance(output.command, Print):
        resource = self.model.resources[output.command.resource]
        found.append(
          print_text(
            resource.name,
            resource.data_type,
            output.data,
            len(resource.initial),
            verbose=output.command.verbose,
          )
        )
    return found

  def typed(self) -> dict[str, np.ndarray]:
    """The final buffers as arrays of their element types (`Model.typed`)."""
    return self.model.typed(self.buffers)


@dataclasses.dataclass(frozen=True)
class Segment:
  """Commands [start, stop) of a run, one XLA program, after it ran.

  Attributes:
    start: the first command's index.
    stop: one past the last command that ran.
    outputs: the prints' and writeFiles' buffers of these commands, in command order.
    buffers: every resource's buffer after these commands (on the run's device).
    error: the refused dispatch (index `stop`) that ended the run, or None.
  """

  start: int
  stop: int
  outputs: list[Output]
  buffers: Buffers
  error: DmlCommandError | None


class _RefusedError(Exception):
  """A dispatch refused while a sequence of commands is traced, at `position` in it."""

  def __init__(self, position: int, error: Exception):
    super().__init__(position, error)
    self.position = position
    self.error = error


def _command_key(command: Command) -> tuple[Any, ...]:
  """What a command contributes to its segment's program (hashable): the dispatchable
  and bindings of a dispatch, the resource a print or writeFile shows."""
  if isinstance(command, Dispatch):
    return ("dispatch", command.dispatchable, tuple(sorted(command.bindings.items())))
  return ("show", command.resource)


def file_bytes(resource: Resource, data: bytes, command: WriteFile) -> bytes:
  """The bytes writeFile puts in its file: .npy (DxDispatch's header) or the raw buffer.

  Raises:
    ValueError: for an image target, or a .npy of a buffer with no type and no dimensions.
  """
  extension = pathlib.PurePath(command.target_path).suffix.lower()
  if extension in (".jpg", ".png"):
    raise ValueError(f"image files ({extension}) are not supported by dml_jax")
  if extension != ".npy":
    return data
  dimensions = command.dimensions
  if dimensions is None:
    if not resource.element_size:
      raise ValueError(
        "the buffer has no element type (a mixed-list initializer): give 'dimensions'"
      )
    dimensions = (resource.size_in_bytes // resource.element_size,)
  return npy.npy_bytes(data, resource.data_type, dimensions)


def target_path(
  command: WriteFile, output_path: str | os.PathLike[str] | None, *, trust_paths: bool = False
) -> pathlib.Path:
  """Where writeFile writes: targetPath under the output path (default: the current
  directory), links not resolved. With `trust_paths`, an absolute targetPath stands as it
  is (DxDispatch's behaviour); without, it is refused, as is a ``..`` that climbs out (a
  symbolic link that leads out is refused when the file is written: `files.write_atomic`).

  Raises:
    files.UnsafePathError: a targetPath outside the output path (unless `trust_paths`).
  """
  base = pathlib.Path(output_path) if output_path is not None else pathlib.Path.cwd()
  if not trust_paths:
    files.contained_relative(command.target_path, "targetPath")
  return (base / command.target_path).absolute()


class Model:
  """A DxDispatch model: its resources, dispatchables and commands, validated.

  Use `load_model` to make one. `run` returns the final buffers; `execute` also gives
  what the prints and writeFiles show, and `execute_segments` gives it segment by segment
  as the run goes; `as_function` is the command list as one jitted function of the
  buffers.

  Attributes:
    source: where the model came from (a path, or "<dict>").
    resources: name -> `Resource`, in file order.
    dispatchables: name -> `Dispatchable`.
    commands: the commands, in order.
    feature_level: the DML_FEATURE_LEVEL the dispatchables were validated at.
    warnings: members the model holds that DxDispatch ignores (a misspelled field, ...).
    trust_paths: whether the model's paths may leave their folders (`load_model`).
    budget: the bytes the model may make the runner read or allocate, and those it did.
  """

  def __init__(
    self,
    document: Any,
    *,
    source: str = "<dict>",
    input_path: pathlib.Path | None = None,
    feature_level: FeatureLevelLike = None,
    trust_paths: bool = False,
    max_bytes: int = files.DEFAULT_MAX_BYTES,
    budget: files.Budget | None = None,
  ) -> None:
    self.source = source
    self.feature_level = FeatureLevel.from_any(feature_level)
    self.input_path = input_path if input_path is not None else pathlib.Path.cwd()
    self.trust_paths = trust_paths
    self.budget = budget if budget is not None else files.Budget(max_bytes)
    self.resources: dict[str, Resource] = {}
    self.dispatchables: dict[str, Dispatchable] = {}
    self.commands: list[Command] = []
    self.warnings: list[str] = []
    problems = self._parse(document)
    problems += self._check_dispatches()
    if problems:
      raise DmlModelError(source, problems)
    self._programs: dict[tuple[Any, ...], Callable[..., Any]] = {}

  # -- loading -------------------------------------------------------------------------

  def _parse(self, document: Any) -> list[str]:
    if not isinstance(document, Mapping):
      return [f"the model must be a JSON object; got {type(document).__name__}"]
    problems: list[str] = []
    sections = (
      ("resources", Mapping, "Expected an object named 'resources'"),
      ("dispatchables", Mapping, "Expected an object named 'dispatchables'"),
      ("commands", list, "Expected an array field named 'commands'"),
    )
    for key, kind, message in sections:
      if not isinstance(document.get(key), kind):
        problems.append(message)
    if problems:
      return problems
    for name, entry in _pairs(document["resources"]):
      try:
        self.resources[name] = parse_resource(
          name, entry, self.input_path, budget=self.budget, trust_paths=self.trust_paths
        )
      except FieldError as error:
        problems.append(f"resource '{name}': {error}")
    declared_resources = {name for name, _ in _pairs(document["resources"])}
    for name, entry in _pairs(document["dispatchables"]):
      dispatchable, found, warnings = parse_dispatchable(name, entry)
      problems += found
      self.warnings += warnings
      if dispatchable is not None:
        self.dispatchables[name] = dispatchable
        problems += validate(dispatchable, self.feature_level)
        problems += self._check_init_bindings(dispatchable, declared_resources)
    declared_dispatchables = {name for name, _ in _pairs(document["dispatchables"])}
    for i, entry in enumerate(document["commands"]):
      try:
        command = parse_command(entry)
      except FieldError as error:
        problems.append(f"command {i}: {error}")
        continue
      self.commands.append(command)
      if isinstance(command, WriteFile) and not self.trust_paths:
        try:
          files.contained_relative(command.target_path, "targetPath")
        except files.UnsafePathError as error:
          problems.append(f"command {i} ({describe(command)}): {error}")
      problems += [
        f"command {i} ({describe(command)}): {p}"
        for p in _references(command, declared_resources, declared_dispatchables)
      ]
    return problems

  def _check_init_bindings(self, dispatchable: Dispatchable, resources: set[str]) -> list[str]:
    problems = []
    owned = {
      row
      for _, row, tensor in dispatchable.desc.dml_inputs()
      if tensor.flags & TensorFlags.OWNED_BY_DML
    }
    points = dispatchable.bind_points(output=False)
    for point, sources in dispatchable.init_bindings.items():
      for source in sources:
        if source.name not in resources:
          problems.append(
            f"{dispatchable.where}: bindings.{point}: DML dispatchable attempts to bind resource"
            f" '{source.name}' for initialization, which does not exist in the model"
          )
      if point in points and point not in owned:
        problems.append(
          f"{dispatchable.where}: bindings.{point}: only inputs flagged OWNED_BY_DML are bound"
          f" at initialization; bind {point} in the dispatch command instead"
        )
      elif point in points and len(sources) != points[point]:
        problems.append(
          f"{dispatchable.where}: bindings.{point}: Bind point '{point}' requires"
          f" {points[point]} resources, but {len(sources)} were bound."
        )
    for point in sorted(owned - set(dispatchable.init_bindings)):
      problems.append(
        f"{dispatchable.where}: {point} is OWNED_BY_DML: give its resource in the"
        f' dispatchable\'s "bindings" (DirectML copies it when the operator is initialized)'
      )
    return problems

  # -- buffers ---------------------------------------------------------------------------

  def initial_buffers(self, device: Any = None) -> Buffers:
    """Every resource's initial bytes (uint8 arrays of ``sizeInBytes``), on `device`."""
    target = device_lib.resolve(device)
    return {name: jax.device_put(r.image(), target) for name, r in self.resources.items()}

  def typed(self, buffers: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Buffers' bytes as NumPy arrays of each resource's element type (whole elements
    only: ``sizeInBytes // element size`` of them; uint8 for a mixed list)."""
    found = {}
    for name, data in buffers.items():
      resource = self.resources[name]
      raw = np.asarray(data).tobytes()
      dtype = resource.data_type.numpy_dtype or np.dtype(np.uint8)
      found[name] = np.frombuffer(raw, dtype, count=len(raw) // dtype.itemsize).copy()
    return found

  # -- running ---------------------------------------------------------------------------

  def segment_bounds(self) -> list[tuple[int, int]]:
    """The segments `execute` runs: (start, stop) command ranges, in order, each of at
    most `MAX_COMMANDS_PER_SEGMENT` commands, whose prints and writeFiles snapshot at most
    as many bytes as all the buffers hold, or `MIN_SNAPSHOT_BYTES` (a segment keeps each
    snapshot until it ends: a model printing a large buffer many times must not hold them
    all at once). A segment holds one command at least."""
    buffers = sum(r.size_in_bytes for r in self.resources.values())
    limit = max(buffers, MIN_SNAPSHOT_BYTES)
    bounds: list[tuple[int, int]] = []
    start, shown = 0, 0
    for index, command in enumerate(self.commands):
      size = 0 if isinstance(command, Dispatch) else self.resources[command.resource].size_in_bytes
      if index > start and (index - start == MAX_COMMANDS_PER_SEGMENT or shown + size > limit):
        bounds.append((start, index))
        start, shown = index, 0
      shown += size
    if start < len(self.commands):
      bounds.append((start, len(self.commands)))
    return bounds

  def _apply_commands(
    self,
    commands: Sequence[Command],
    buffers: Buffers,
    initial: Buffers,
    times: int,
    operators: dict[str, CompiledOperator] | None,
  ) -> tuple[Buffers, list[jax.Array]]:
    """`commands` on `buffers`, each dispatch applied `times` times: the final buffers, and
    the buffer of each print and writeFile as it stands at that command. The OWNED_BY_DML
    inputs are read from `initial` (the run's initial buffers).

    Raises:
      _RefusedError: a dispatch whose bindings are refused (its position in `commands`).
    """
    buffers = dict(buffers)
    operators = {} if operators is None else operators
    snapshots = []
    for position, command in enumerate(commands):
      if isinstance(command, Dispatch):
        try:
          self._dispatch(command, buffers, initial, operators, times)
        except (ValueError, TypeError) as error:
          raise _RefusedError(position, error) from error
      else:
        snapshots.append(buffers[command.resource])
    return buffers, snapshots

  def _refused(self, index: int, error: Exception) -> DmlCommandError:
    return DmlCommandError(index, f"command {index} ({describe(self.commands[index])}): {error}")

  def _commands(
    self,
    buffers: Buffers,
    until: int,
    times: int = 1,
    operators: dict[str, CompiledOperator] | None = None,
  ) -> tuple[Buffers, list[jax.Array]]:
    """The commands before `until` on `buffers` (the run's initial buffers): the final
    buffers, and the buffer of each print and writeFile as it stands at that command.

    Traced under `jax.jit` this is one program; called as it is, each dispatch is its
    own jitted call. `operators` keeps the operators made (and initialized from the
    initial buffers) from one call to the next; default: made afresh.

    Raises:
      DmlCommandError: a dispatch whose bindings are refused."""
    try:
      return self._apply_commands(self.commands[:until], buffers, dict(buffers), times, operators)
    except _RefusedError as refused:
      raise self._refused(refused.position, refused.error) from refused.error

  def _dispatch(
    self,
    command: Dispatch,
    buffers: Buffers,
    initial: Buffers,
    operators: dict[str, CompiledOperator],
    times: int,
  ) -> None:
    dispatchable = self.dispatchables[command.dispatchable]
    op = operators.get(command.dispatchable)
    if op is None:  # initialized once per run, from the buffers' initial contents
      op = CompiledOperator(dispatchable.desc, self.feature_level)
      if op.owned_inputs:
        op.initialize(
          self._bindings(dispatchable, dispatchable.init_bindings, initial, False, True)
        )
      operators[command.dispatchable] = op
    written = _names(command, dispatchable.bind_points(True))
    read = _names(command, dispatchable.bind_points(False))
    if times == 1 or not written & read:  # the same buffers every time: once is enough
      self._apply(op, dispatchable, command, buffers)
      return
    names = sorted(written | read)

    def again(_: Any, carried: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
      touched = dict(zip(names, carried, strict=True))
      self._apply(op, dispatchable, command, touched)
      return tuple(touched[name] for name in names)

    results = lax.fori_loop(0, times, again, tuple(buffers[name] for name in names))
    buffers.update(zip(names, results, strict=True))

  def _apply(
    self,
    op: CompiledOperator,
    dispatchable: Dispatchable,
    command: Dispatch,
    buffers: Buffers,
  ) -> None:
    """One application of the dispatch's operator: reads its views, writes its outputs."""
    inputs = self._bindings(dispatchable, command.bindings, buffers, False, False)
    outputs = self._bindings(dispatchable, command.bindings, buffers, True, False)
    results = op.execute(inputs, outputs)  # type: ignore[arg-type]
    sources = [s for point in dispatchable.bind_points(True) for s in command.bindings[point]]
    for source, result in zip(sources, results, strict=True):
      buffers[source.name] = result

  def _bindings(
    self,
    dispatchable: Dispatchable,
    bindings: Mapping[str, tuple[Source, ...]],
    buffers: Mapping[str, Any],
    output: bool,
    initialization: bool,
  ) -> list[Binding | None]:
    """One Binding (or None) per tensor of the bind points, in struct order."""
    return [
      binding
      for binding, _ in self._sources(dispatchable, bindings, buffers, output, initialization)
    ]

  def _sources(
    self,
    dispatchable: Dispatchable,
    bindings: Mapping[str, tuple[Source, ...]],
    buffers: Mapping[str, Any],
    output: bool,
    initialization: bool,
  ) -> list[tuple[Binding | None, str | None]]:
    """`_bindings`, each with the name of the resource bound (None for an empty slot).

    Raises:
      ValueError: a bind point not bound, or bound to the wrong number of resources.
    """
    entries = (
      dispatchable.desc.dml_outputs(inferred=True) if output else dispatchable.desc.dml_inputs()
    )
    owned = {row for _, row, t in entries if t is not None and t.flags & TensorFlags.OWNED_BY_DML}
    found: list[tuple[Binding | None, str | None]] = []
    for point, count in dispatchable.bind_points(output).items():
      sources = bindings.get(point)
      if sources is None or (initialization and point not in owned):
        if not initialization and point not in owned:
          raise ValueError(
            f"Bind point '{point}' is not bound: DirectML needs a resource for every tensor"
            f' of {dispatchable.where} but those flagged OWNED_BY_DML; add "{point}" to the'
            " command's bindings"
          )
        found += [(None, None)] * count
        continue
      if len(sources) != count:
        raise ValueError(
          f"Bind point '{point}' requires {count} resources, but {len(sources)} were bound."
        )
      for source in sources:
        resource = self.resources[source.name]
        size = source.element_size_in_bytes or resource.element_size
        binding = Binding(buffers[source.name], source.element_offset * size)
        found.append((binding, source.name))
    return found

  def _check_dispatches(self) -> list[str]:
    """Every dispatch's bindings checked as running it would check them (bind points,
    DirectML's binding rules, aliasing), on placeholders of the buffers' sizes: nothing is
    allocated or run. A problem names the command, and the resource where one is at fault."""
    placeholders = {
      name: np.broadcast_to(np.zeros((), np.uint8), (resource.size_in_bytes,))
      for name, resource in self.resources.items()
    }
    operators: dict[str, CompiledOperator | None] = {}
    problems: list[str] = []
    for name, dispatchable in self.dispatchables.items():
      try:
        operators[name] = CompiledOperator(dispatchable.desc, self.feature_level)
      except (ValueError, TypeError):  # reported by the dispatchable's own checks
        operators[name] = None
        continue
      init = dispatchable.init_bindings
      if any(s.name not in self.resources for v in init.values() for s in v):
        continue  # reported as a missing resource
      found = self._check_sources(dispatchable, init, placeholders, initialization=True)
      problems += [f"{dispatchable.where}: bindings: {p}" for p in found]
    checked: dict[tuple[Any, ...], list[str]] = {}  # identical dispatches: checked once
    for i, command in enumerate(self.commands):
      if not isinstance(command, Dispatch) or operators.get(command.dispatchable) is None:
        continue
      if any(s.name not in self.resources for v in command.bindings.values() for s in v):
        continue  # reported as a missing resource
      key = _command_key(command)
      if key not in checked:
        checked[key] = self._check_dispatch(command, operators, placeholders)
      problems += [f"command {i} ({describe(command)}): {p}" for p in checked[key]]
    return problems

  def _check_dispatch(
    self,
    command: Dispatch,
    operators: Mapping[str, CompiledOperator | None],
    placeholders: Mapping[str, Any],
  ) -> list[str]:
    dispatchable, op = self.dispatchables[command.dispatchable], operators[command.dispatchable]
    found = self._check_sources(dispatchable, command.bindings, placeholders, False)
    if found:
      return found
    try:
      inputs = self._bindings(dispatchable, command.bindings, placeholders, False, False)
      outputs = self._bindings(dispatchable, command.bindings, placeholders, True, False)
      assert op is not None
      op.check(inputs, outputs)  # type: ignore[arg-type]
    except DmlBindingError as error:
      return [str(error)]
    except TypeError:  # a 64-bit type with x64 off: the CLI turns x64 on before running
      pass
    return []

  def _check_sources(
    self,
    dispatchable: Dispatchable,
    bindings: Mapping[str, tuple[Source, ...]],
    placeholders: Mapping[str, Any],
    initialization: bool,
  ) -> list[str]:
    """The bind points' counts, and DirectML's rules for each bound tensor (offset
    alignment, a view of at least TotalTensorSizeInBytes), naming the resource."""
    problems = []
    for output in (False, True) if not initialization else (False,):
      entries = (
        dispatchable.desc.dml_outputs(inferred=True) if output else dispatchable.desc.dml_inputs()
      )
      try:
        found = self._sources(dispatchable, bindings, placeholders, output, initialization)
      except ValueError as error:
        if not initialization:  # bind point counts at initialization: `_check_init_bindings`
          problems.append(str(error))
        continue
      for (field, _, tensor), (binding, name) in zip(entries, found, strict=True):
        if binding is None or tensor is None:
          continue
        try:
          check_binding(tensor, binding, binding.buffer, field)
        except DmlBindingError as error:
          problems.append(f"resource '{name}': {error}")
    return problems

  def _segment_program(self, start: int, stop: int, times: int) -> Callable[..., Any]:
    """The jitted program of commands [start, stop): (buffers, initial) -> (buffers,
    snapshots). Segments of the same commands (dispatchables, bindings, shown resources)
    share one program, compiled once."""
    commands = tuple(self.commands[start:stop])
    key = (times, tuple(_command_key(c) for c in commands))
    program = self._programs.get(key)
    if program is None:

      def segment(buffers: Buffers, initial: Buffers) -> tuple[Buffers, list[jax.Array]]:
        return self._apply_commands(commands, buffers, initial, times, None)

      program = jax.jit(segment)
      self._programs[key] = program
    return program

  def execute_segments(
    self, device: Any = None, *, dispatch_iterations: int = 1, dispatch_repeat: int = 1
  ) -> Iterator[Segment]:
    """Runs the commands segment by segment (`segment_bounds`), yielding each `Segment`
    as soon as it ran: the prints' and writeFiles' buffers of its commands, and the
    buffers after it. Each segment is one XLA program; the buffers stay on `device`
    between segments.

    The run is lazy: a caller that stops iterating stops the run there (the CLI does when
    a writeFile fails). A dispatch whose bindings are refused ends the run: the last
    segment holds the commands before it, and the error.

    Raises:
      ValueError: a repetition count that is not a positive integer.

    Examples:
      >>> import dml_jax as dml
      >>> model = dml.load_model({
      ...   "resources": {"x": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2]}},
      ...   "dispatchables": {"double": {"type": "ELEMENT_WISE_IDENTITY", "desc": {
      ...     "InputTensor": {"DataType": "FLOAT32", "Sizes": [2]},
      ...     "OutputTensor": {"DataType": "FLOAT32", "Sizes": [2]},
      ...     "ScaleBias": {"Scale": 2, "Bias": 0}}}},
      ...   "commands": [{"type": "dispatch", "dispatchable": "double",
      ...                 "bindings": {"InputTensor": "x", "OutputTensor": "x"}},
      ...                {"type": "print", "resource": "x"}] * 20,
      ... })
      >>> for segment in model.execute_segments():
      ...   print(segment.start, segment.stop, [o.index for o in segment.outputs][-2:])
      0 32 [29, 31]
      32 40 [37, 39]
      >>> model.typed(segment.buffers)["x"].tolist()          # doubled 20 times
      [1048576.0, 2097152.0]
    """
    times = repetitions(dispatch_iterations, dispatch_repeat)
    buffers = self.initial_buffers(device)
    initial = {name: buffers[name] for name in self._initialization_resources()}
    for start, stop in self.segment_bounds():
      error = None
      try:
        buffers, snapshots = self._segment_program(start, stop, times)(buffers, initial)
      except _RefusedError as refused:
        error = self._refused(start + refused.position, refused.error)
        stop = error.index
        if stop > start:
          buffers, snapshots = self._segment_program(start, stop, times)(buffers, initial)
        else:
          snapshots = []
      shown = [
        (i, c)
        for i, c in enumerate(self.commands[start:stop], start)
        if not isinstance(c, Dispatch)
      ]
      outputs = [
        Output(i, c, np.asarray(data).tobytes())
        for (i, c), data in zip(shown, snapshots, strict=True)
      ]
      yield Segment(start, stop, outputs, buffers, error)
      if error is not None:
        return

  def _initialization_resources(self) -> list[str]:
    """The resources bound at initialization (OWNED_BY_DML inputs), read from the run's
    initial buffers whatever segment first dispatches them."""
    names = {
      source.name
      for dispatchable in self.dispatchables.values()
      for sources in dispatchable.init_bindings.values()
      for source in sources
    }
    return sorted(names & set(self.resources))

  def execute(
    self, device: Any = None, *, dispatch_iterations: int = 1, dispatch_repeat: int = 1
  ) -> RunResult:
    """Runs the commands in order on `device` (None: JAX's default; "cpu", "gpu", "tpu"
    or a jax.Device), in segments of at most `MAX_COMMANDS_PER_SEGMENT` commands, each one
    XLA program (`execute_segments`). Nothing is printed or written: the result holds what
    the prints and writeFiles show (`RunResult.print_bytes`, `file_bytes`).

    `dispatch_iterations` and `dispatch_repeat` are DxDispatch's ``-i`` and ``-r``: each
    dispatch applies its operator ``dispatch_iterations * dispatch_repeat`` times, which
    changes the buffers only where a dispatch writes a buffer it reads (in place).

    A dispatch whose binding DirectML would refuse stops the run: the result then holds
    the commands before it, and the error (`RunResult.error`). Loading checks every
    binding, so this happens only for what loading cannot see.

    Raises:
      ValueError: a repetition count that is not a positive integer."""
    buffers = None
    outputs: list[Output] = []
    error = None
    for segment in self.execute_segments(
      device, dispatch_iterations=dispatch_iterations, dispatch_repeat=dispatch_repeat
    ):
      buffers, error = segment.buffers, segment.error
      outputs += segment.outputs
    if buffers is None:  # no commands
      buffers = self.initial_buffers(device)
    return RunResult({k: np.asarray(v) for k, v in buffers.items()}, outputs, error, self)

  def run(
    self, device: Any = None, *, dispatch_iterations: int = 1, dispatch_repeat: int = 1
  ) -> dict[str, np.ndarray]:
    """Runs the commands (as `execute` does) and returns the final buffers: name -> NumPy
    array of the resource's element type (see `typed`).

    `dispatch_iterations` and `dispatch_repeat` repeat each dispatch as `execute` does.

    Raises:
      DmlCommandError: a dispatch DirectML would refuse (the run stops there).
      ValueError: a repetition count that is not a positive integer.

    Examples:
      >>> import dml_jax as dml
      >>> model = dml.load_model({
      ...   "resources": {"x": {"initialValuesDataType": "FLOAT32", "initialValues": [0, 1, 2, 3]}},
      ...   "dispatchables": {"twice_plus_one": {"type": "ELEMENT_WISE_IDENTITY", "desc": {
      ...     "InputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
      ...     "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
      ...     "ScaleBias": {"Scale": 2, "Bias": 1}}}},
      ...   "commands": [{"type": "dispatch", "dispatchable": "twice_plus_one",
      ...                 "bindings": {"InputTensor": "x", "OutputTensor": "x"}}],
      ... })
      >>> model.run()["x"]                                    # x -> 2x + 1, in place
      array([1., 3., 5., 7.], dtype=float32)
      >>> model.run(dispatch_iterations=3, dispatch_repeat=2)["x"]   # applied 6 times
      array([ 63., 127., 191., 255.], dtype=float32)
    """
    result = self.execute(
      device, dispatch_iterations=dispatch_iterations, dispatch_repeat=dispatch_repeat
    )
    if result.error is not None:
      raise result.error
    return result.typed()

  def as_function(
    self, *, dispatch_iterations: int = 1, dispatch_repeat: int = 1
  ) -> Callable[[Mapping[str, Any]], Buffers]:
    """The command list as one jitted function: initial buffers -> final buffers.

    Its argument and result map every resource name to the buffer's bytes (a uint8
    array of ``sizeInBytes``; `initial_buffers` gives the model's own); every dispatch
    is part of one XLA program, compiled on the first call, which can be composed with
    other JAX transformations. Unlike `execute`, it is not cut into segments: a model of
    hundreds of dispatches may compile slowly, and a chain of several hundred GATHERs
    crashes XLA:CPU's compiler (see the models page); run such models with `execute`.
    Prints and writeFiles do nothing here. `dispatch_iterations` and `dispatch_repeat`
    repeat each dispatch as `execute` does; they are fixed in the function (another
    count is another function).

    Raises:
      ValueError: a repetition count that is not a positive integer.

    Raises (when called):
      DmlCommandError: a dispatch DirectML would refuse.
    """
    times = repetitions(dispatch_iterations, dispatch_repeat)
    until = len(self.commands)
    return jax.jit(lambda buffers: self._commands(dict(buffers), until, times)[0])

  def check_prints(self) -> list[str]:
    """Problems of the prints: a buffer with no element type cannot be printed."""
    found = []
    for i, command in enumerate(self.commands):
      if isinstance(command, Print):
        resource = self.resources[command.resource]
        try:
          print_text(resource.name, resource.data_type, b"", 0)
        except PrintError as error:
          found.append(f"command {i} ({describe(command)}): {error}")
    return found

  def uses_64_bit(self) -> bool:
    """Whether a dispatchable has a 64-bit tensor (which needs jax_enable_x64)."""
    for dispatchable in self.dispatchables.values():
      tensors = [t for _, t, _ in dispatchable.desc.dml_tensors() if t is not None]
      if any(t.data_type.is_64_bit for t in tensors):
        return True
    return False

  def __repr__(self) -> str:
    return (
      f"<Model {self.source}: {counted(len(self.resources), 'resource')},"
      f" {counted(len(self.dispatchables), 'dispatchable')},"
      f" {counted(len(self.commands), 'command')}, FL {self.feature_level}>"
    )


def repetitions(dispatch_iterations: int, dispatch_repeat: int) -> int:
  """How many times each dispatch applies its operator: DxDispatch's ``-i`` times ``-r``.

  Raises:
    ValueError: a count that is not a positive integer.
  """
  for name, count in (
    ("dispatch_iterations", dispatch_iterations),
    ("dispatch_repeat", dispatch_repeat),
  ):
    if isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 1:
      raise ValueError(
        f"{name} must be a positive integer (how many times each dispatch runs); got {count!r}"
      )
  return int(dispatch_iterations) * int(dispatch_repeat)


def _names(command: Dispatch, points: Mapping[str, int]) -> set[str]:
  """The buffers a dispatch binds to the given bind points."""
  return {source.name for point in points for source in command.bindings.get(point, ())}


def _pairs(mapping: Mapping[str, Any]) -> list[tuple[str, Any]]:
  """Every (name, value), duplicates too (the later one wins in the name maps)."""
  return list(getattr(mapping, "pairs", mapping.items()))


def _references(command: Command, resources: set[str], dispatchables: set[str]) -> list[str]:
  if isinstance(command, Dispatch):
    found = []
    if command.dispatchable not in dispatchables:
      found.append(
        f"Command attempts to dispatch '{command.dispatchable}', which does not exist in the model"
      )
    for sources in command.bindings.values():
      for source in sources:
        if source.name not in resources:
          found.append(
            f"Command attempts to bind resource '{source.name}', which does not exist in the model"
          )
    return found
  if command.resource in resources:
    return []
  if isinstance(command, Print):
    return [
      f"Command attempts to print resource '{command.resource}', which does not exist in the model"
    ]
  return [
    f"Command attempts to write to a file the resource '{command.resource}', which does not"
    " exist in the model"
  ]


def load_model(
  model: str | os.PathLike[str] | Mapping[str, Any],
  *,
  feature_level: FeatureLevelLike = None,
  input_path: str | os.PathLike[str] | None = None,
  trust_paths: bool = False,
  max_bytes: int = files.DEFAULT_MAX_BYTES,
) -> Model:
  """Loads a DxDispatch model: a .json file's path, JSON text, or the parsed document.

  Args:
    model: a path to the model file, its text (anything holding ``{`` that is not an
      existing path), or a dict.
    feature_level: the DML_FEATURE_LEVEL to validate the dispatchables at (default:
      the newest).
    input_path: the folder ``sourcePath`` files are read from (default: the model
      file's directory; the current directory for text and dicts).
    trust_paths: a model file is untrusted input, so by default its ``sourcePath``
      files must stay inside `input_path` and its writeFile ``targetPath`` inside the
      output folder (absolute paths, ``..`` and symbolic links that lead out are
      refused). True restores DxDispatch's behaviour, which follows every path as
      given: for a model you trust.
    max_bytes: the most bytes the model may make the runner read or allocate (the
      model file, its ``sourcePath`` files, and each buffer five times its
      ``sizeInBytes``, what a run holds; default 4 GiB). Raise it for a large model
      you trust.

  Returns:
    The validated `Model`.

  Raises:
    DmlModelError: every problem of the model at once (each names the resource,
      dispatchable and type, or command, and the field), a path that leaves its folder,
      a limit passed.
    FileNotFoundError: for a model path that does not exist.
  """
  budget = files.Budget(max_bytes)
  source = "<dict>"
  base = pathlib.Path(input_path) if input_path is not None else None
  if isinstance(model, Mapping):
    document: Any = model
  elif isinstance(model, str) and ("{" in model or "\n" in model) and not os.path.exists(model):
    source = "<text>"
    document = _parse_text(model, source)
  else:
    path = pathlib.Path(model)
    if not path.exists() and base is not None and (base / path).exists():
      path = base / path
    if path.is_dir():
      raise IsADirectoryError(f"{path} is a directory; give the model's .json file")
    if not path.exists():
      raise FileNotFoundError(f"no model file {path}")
    source = str(path)
    document = _parse_text(_read_model(path, budget, source), source)
    base = base if base is not None else path.absolute().parent
  return Model(
    document,
    source=source,
    input_path=base,
    feature_level=feature_level,
    trust_paths=trust_paths,
    budget=budget,
  )


def _read_model(path: pathlib.Path, budget: files.Budget, source: str) -> str:
  try:
    content = files.read_regular(path, budget, "the model file")
  except (files.UnsafePathError, files.BudgetError) as error:
    raise DmlModelError(source, [str(error)]) from None
  try:
    return content.decode("utf-8")
  except UnicodeDecodeError as error:
    raise DmlModelError(source, [f"the model file is not UTF-8 text: {error}"]) from None


def _parse_text(text: str, source: str) -> Any:
  try:
    return jsonc.parse(text)
  except jsonc.JsonError as error:
    raise DmlModelError(source, [str(error)]) from None
  except MemoryError:
    raise DmlModelError(
      source,
      [
        f"not enough memory to parse the model's {len(text)} characters; lower --max-bytes"
        " (load_model(..., max_bytes=N)) to what this machine holds, or free memory"
      ],
    ) from None
