"""Where operators run: the JAX devices, placement, and a record of each run.

A `Runner` runs operator descriptors on a chosen device, on arrays (`Runner.run`)
or on buffer bindings (`Runner.execute`), compiles each (descriptor, device, shapes)
once, and keeps a log of what ran where.

Examples:
  >>> import numpy as np
  >>> from dml_jax import GatherElementsDesc, TensorDesc
  >>> desc = GatherElementsDesc(TensorDesc("FLOAT32", (2, 2)), TensorDesc("UINT32", (1, 2)), axis=0)
  >>> runner = Runner()
  >>> record = runner.run(desc, np.eye(2, dtype=np.float32), np.array([[1, 0]], np.uint32),
  ...                     device="cpu")
  >>> record.output
  Array([[0., 0.]], dtype=float32)
  >>> record.device.platform
  'cpu'
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax.typing import ArrayLike

from dml_jax._src import dtypes
from dml_jax._src import execute as execute_lib
from dml_jax._src.buffers import Binding
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dispatch import apply_jitted
from dml_jax._src.feature_level import FeatureLevel, FeatureLevelLike
from dml_jax._src.fields import FieldKind, dml_fields, field_by_dml_name

PLATFORMS = ("cpu", "gpu", "tpu")


def _backend_devices(platform: str) -> list[jax.Device]:
  try:
    return list(jax.devices(platform))
  except RuntimeError:  # no backend of that platform in this process
    return []


def available_devices(platform: str = "all") -> list[jax.Device]:
  """The devices of one platform ('cpu', 'gpu', 'tpu'), the default one ('default'), or all."""
  if platform == "default":
    return [default_device()]
  if platform == "all":
    return [d for p in PLATFORMS for d in _backend_devices(p)]
  if platform not in PLATFORMS:
    raise ValueError(
      f"unknown platform {platform!r}; expected one of {', '.join(PLATFORMS + ('all', 'default'))}"
    )
  return _backend_devices(platform)


def default_device() -> jax.Device:
  """JAX's default device: a GPU or TPU when present, else the CPU."""
  return jax.devices()[0]


def describe(device: jax.Device) -> str:
  """A short name such as 'cpu:0' or 'gpu:0 (NVIDIA H100 80GB HBM3)'."""
  kind = getattr(device, "device_kind", "")
  name = f"{device.platform}:{device.id}"
  return f"{name} ({kind})" if kind and device.platform != "cpu" else name


def resolve(device: jax.Device | str | None) -> jax.Device:
  """A jax.Device from a device, a platform name ('cpu', 'gpu', 'tpu', 'default') or None."""
  if device is None:
    return default_device()
  if isinstance(device, str):
    found = available_devices(device)
    if not found:
      raise ValueError(
        f"no {device} device is available; available:"
        f" {', '.join(map(describe, available_devices()))}"
      )
    return found[0]
  return device


@dataclasses.dataclass(frozen=True)
class RunRecord:
  """What ran where: one operator execution."""

  operator: str
  descriptor: OperatorDesc
  feature_level: FeatureLevel
  device: jax.Device
  output: Any  # the output array; a tuple of arrays for an operator with OutputTensors
  # (Runner.execute: the output buffer; a tuple of buffers for several output bindings)
  compiled: bool  # this call compiled the executable
  seconds: float  # wall time of the call, compile included, output ready

  @property
  def outputs(self) -> tuple[jax.Array, ...]:
    """Every output array (Runner.execute: output buffer), in field order."""
    return self.output if isinstance(self.output, tuple) else (self.output,)

  def __str__(self) -> str:
    first = " (compiled)" if self.compiled else ""
    return (
      f"{self.operator} at FL {self.feature_level} on {describe(self.device)}:"
      f" {self.seconds * 1e3:.2f} ms{first}"
    )


class Runner:
  """Runs descriptors on devices; thread-safe.

  Args:
    feature_level: the DML_FEATURE_LEVEL descriptors are validated against.
  """

  def __init__(self, feature_level: FeatureLevelLike = None) -> None:
    self.feature_level = FeatureLevel.from_any(feature_level)
    self._lock = threading.Lock()
    # run: (desc, device, shapes); execute: (bound program's static, device, donate, shapes)
    self._executables: dict[tuple[Any, ...], Any] = {}
    self._records: list[RunRecord] = []

  @property
  def records(self) -> tuple[RunRecord, ...]:
    with self._lock:
      return tuple(self._records)

  def run(
    self, desc: OperatorDesc, *arrays: ArrayLike, device: jax.Device | str | None = None
  ) -> RunRecord:
    """Validates `desc`, places `arrays` on `device` and runs the operator there.

    Args:
      desc: an operator descriptor.
      *arrays: its input tensors in field order; a tensor-array field (JOIN's
        InputTensors) takes a list of arrays, as the functional API does, or
        one array per element.
      device: a jax.Device, a platform name, or None for the default device.

    Raises:
      DmlValidationError: if `desc` is invalid at the runner's feature level.
      ValueError, TypeError: if the arrays do not match the descriptor, or are
        traced (the Runner runs eagerly; inside jax.jit use the functional API).
    """
    desc.validate(self.feature_level)
    target = resolve(device)
    operands = _operands(desc, _flatten_tensor_arrays(desc, arrays))
    if any(isinstance(x, jax.core.Tracer) for x in operands):
      raise TypeError(
        f"Runner.run compiles and runs {desc.OPERATOR} eagerly on one device and cannot be"
        f" traced (it was called inside jax.jit, vmap or grad). Inside a transformation call"
        f" the functional API, dml.{desc.FUNCTION}(...), which validates the same way."
      )
    start = time.perf_counter()
    placed = [jax.device_put(x, target) for x in operands]
    return self._compile_and_run(
      desc, (desc, target), lambda: apply_jitted.lower(desc, *placed), placed, start
    )

  def execute(
    self,
    desc: OperatorDesc,
    inputs: Sequence[Binding],
    outputs: Sequence[Binding],
    *,
    device: jax.Device | str | None = None,
    donate: bool = False,
  ) -> RunRecord:
    """Runs `desc` on buffer bindings on `device`, as `dml.execute` does, and records it.

    The bindings are checked and the buffers read, written and returned exactly as
    `dml.execute(desc, inputs, outputs)` does (strides, offsets, zero strides, gaps
    kept); the buffers are placed on `device` first, and the program is compiled once
    per descriptor, bindings' layout, device and buffer shapes.

    Args:
      desc: an operator descriptor.
      inputs: one Binding per input tensor, in field order (JOIN: one per input).
      outputs: one Binding per output tensor, in field order.
      device: a jax.Device, a platform name, or None for the default device.
      donate: let XLA reuse the output buffers in place (the arrays passed, once on
        `device`, become invalid).

    Returns:
      A RunRecord whose `outputs` are the output buffers, one per output binding,
      as `dml.execute` returns them (`output`: the buffer, for one binding).

    Raises:
      DmlValidationError: if `desc` is invalid at the runner's feature level.
      DmlBindingError: for a binding DirectML would refuse (see `dml.execute`).
      TypeError: if a buffer is traced (the Runner runs eagerly; inside jax.jit use
        dml.execute).

    Examples:
      >>> import numpy as np
      >>> import dml_jax as dml
      >>> row = dml.TensorDesc("FLOAT32", (2, 3), strides=(0, 1))   # one row, read twice
      >>> desc = dml.ElementWiseIdentityDesc(row, dml.TensorDesc("FLOAT32", (2, 3)))
      >>> record = Runner().execute(desc, [dml.Binding(np.arange(4, dtype=np.float32))],
      ...                           [dml.Binding(np.zeros(8, np.float32))], device="cpu")
      >>> record.output
      Array([0., 1., 2., 0., 1., 2., 0., 0.], dtype=float32)
      >>> record.operator, record.device.platform
      ('ELEMENT_WISE_IDENTITY', 'cpu')
    """
    program = execute_lib.bound_program(desc, inputs, outputs, self.feature_level)
    target = resolve(device)
    if any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(program.operands)):
      raise TypeError(
        f"Runner.execute compiles and runs {desc.OPERATOR} eagerly on one device and cannot"
        f" be traced (it was called inside jax.jit, vmap or grad). Inside a transformation"
        f" call dml.execute(desc, inputs, outputs), which takes the same bindings."
      )
    start = time.perf_counter()
    placed = jax.device_put(program.operands, target)

    def buffers(result: Any) -> Any:
      found = program.outputs(result)
      return found[0] if len(found) == 1 else tuple(found)

    return self._compile_and_run(
      desc,
      (program.static, target, donate),
      lambda: execute_lib.jitted_program(donate).lower(program.static, *placed),
      placed,
      start,
      buffers,
    )

  def _compile_and_run(
    self,
    desc: OperatorDesc,
    key: tuple[Any, ...],
    lower: Callable[[], Any],
    placed: Any,
    start: float,
    output: Callable[[Any], Any] = lambda result: result,
  ) -> RunRecord:
    """Runs the executable cached under `key` and the operands' shapes (compiling
    `lower()` on a miss) on `placed`, and records the call."""
    key += (tuple((x.shape, x.dtype) for x in jax.tree_util.tree_leaves(placed)),)
    with self._lock:
      executable = self._executables.get(key)
    compiled = executable is None
    if executable is None:
      executable = lower().compile()
      with self._lock:
        executable = self._executables.setdefault(key, executable)
    result = output(jax.block_until_ready(executable(*placed)))
    first = result[0] if isinstance(result, tuple) else result
    record = RunRecord(
      desc.OPERATOR,
      desc,
      self.feature_level,
      next(iter(first.devices())),
      result,
      compiled,
      time.perf_counter() - start,
    )
    with self._lock:
      self._records.append(record)
    return record

  def report(self) -> str:
    """A table of every run so far: operator, device, time."""
    lines = [f"{'operator':<22} {'FL':<4} {'device':<34} {'ms':>9}"]
    for r in self.records:
      lines.append(
        f"{r.operator:<22} {str(r.feature_level):<4} {describe(r.device):<34}"
        f" {r.seconds * 1e3:>9.2f}{'  (compiled)' if r.compiled else ''}"
      )
    return "\n".join(lines)


def _flatten_tensor_arrays(desc: OperatorDesc, arrays: Sequence[Any]) -> Sequence[Any]:
  """One argument per input field, a list for a tensor-array field -> one per input tensor."""
  fields = [f for f in dml_fields(desc) if f.kind.is_tensor and not f.output]
  arrays_fields = [f for f in fields if f.kind is FieldKind.TENSOR_ARRAY]
  if not arrays_fields or len(arrays) != len(fields):
    return arrays
  flat: list[Any] = []
  for field, argument in zip(fields, arrays, strict=True):
    if field.kind is FieldKind.TENSOR_ARRAY and isinstance(argument, list | tuple):
      flat.extend(argument)
    else:
      flat.append(argument)
  return flat


def _operands(desc: OperatorDesc, arrays: Sequence[Any]) -> list[Any]:
  inputs = desc.dml_inputs()
  if len(arrays) != len(inputs):
    raise TypeError(
      f"{desc.OPERATOR} takes {len(inputs)} input arrays"
      f" ({', '.join(name for name, _, _ in inputs)}); got {len(arrays)}"
    )
  operands = []
  for (name, row, tensor), array in zip(inputs, arrays, strict=True):
    is_index = field_by_dml_name(desc, row).index
    operand, data_type = dtypes.as_operand(array, role=name, is_index=is_index)
    if tuple(operand.shape) != tensor.sizes or data_type != tensor.data_type:
      raise ValueError(
        f"{name} is described as {tensor}; got an array of"
        f" {data_type}[{','.join(map(str, operand.shape))}]"
      )
    operands.append(operand)
  return operands
