"""Executing a descriptor on buffer bindings: buffers in, buffers out, one jitted program.

This is DirectML's flow: `compile_operator` (IDMLDevice::CompileOperator) validates
a descriptor at a feature level; `CompiledOperator.initialize` (the operator
initializer) binds the inputs flagged OWNED_BY_DML, whose bytes it copies once, as
DirectML copies them into its persistent resource; `CompiledOperator.execute`
(a dispatch with its binding table) binds every other input and every output with
a `Binding` (DML_BUFFER_BINDING: buffer, offset, size) and returns the output
buffers as the dispatch leaves them. `execute` does all three in one call.

Examples:
  >>> import numpy as np
  >>> import dml_jax as dml
  >>> x = dml.TensorDesc("UINT8", (1, 1, 2, 3))
  >>> desc = dml.JoinDesc((x, x), axis=2, output_tensor=dml.TensorDesc("UINT8", (1, 1, 4, 3), strides=(16, 16, 4, 1)))
  >>> source = np.frombuffer(b"abcdef" + bytes(10) + b"ABCDEF" + bytes(10), np.uint8)
  >>> (out,) = dml.execute(desc, inputs=[dml.Binding(source), dml.Binding(source, offset=16)],
  ...                      outputs=[dml.Binding(np.full(16, ord("."), np.uint8))])
  >>> bytes(np.asarray(out))
  b'abc.def.ABC.DEF.'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax

from dml_jax._src import buffers as buffers_lib
from dml_jax._src import dispatch
from dml_jax._src.buffers import Binding
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.errors import DmlBindingError
from dml_jax._src.feature_level import FeatureLevel, FeatureLevelLike
from dml_jax._src.tensor_desc import TensorDesc, TensorFlags


class InputLayout(NamedTuple):
  """Where one input is read: the `buffer_index`-th distinct input buffer (or, with `from_outputs`,
  output buffer: an in-place operator's input bound to an output's buffer), from byte
  `offset`, through a view of `view` bytes."""

  from_outputs: bool
  buffer_index: int
  offset: int
  view: int


class OutputLayout(NamedTuple):
  """Where one output is written: the `buffer_index`-th distinct output buffer, from byte `offset`,
  through a view of `view` bytes."""

  buffer_index: int
  offset: int
  view: int


class ProgramLayout(NamedTuple):
  """The static argument of `jitted_program`: the descriptor and where each of its tensors
  is bound (an input's layout is None for an OWNED_BY_DML input, read at initialization)."""

  desc: OperatorDesc
  inputs: tuple[InputLayout | None, ...]
  outputs: tuple[OutputLayout, ...]


def _program(
  static: ProgramLayout,
  input_buffers: tuple[jax.Array, ...],
  output_buffers: tuple[jax.Array, ...],
  persistent: tuple[jax.Array, ...],
) -> tuple[jax.Array, ...]:
  """Reads every input from its binding, lowers the operator, writes every output."""
  desc = static.desc
  arrays, parts = [], []
  kept = iter(persistent)
  for (field, _, tensor), entry in zip(desc.dml_inputs(), static.inputs, strict=True):
    if entry is None:  # OWNED_BY_DML: read at initialization
      arrays.append(next(kept))
      parts.append(False)
      continue
    buffer = (output_buffers if entry.from_outputs else input_buffers)[entry.buffer_index]
    binding = Binding(buffer, entry.offset)
    arrays.append(buffers_lib.read_bound(tensor, binding, buffer, entry.view, field))
    parts.append(buffers_lib.reads_part(tensor, binding, buffer, entry.view))
  results = dispatch.apply_bound(desc, arrays, parts)
  if not isinstance(results, tuple | list):
    results = (results,)
  updated = list(output_buffers)
  for (written, _, output), value, place in zip(
    desc.dml_outputs(inferred=True), results, static.outputs, strict=True
  ):
    assert output is not None, f"{written}: a validated descriptor has every output"
    buffer = updated[place.buffer_index]
    updated[place.buffer_index] = buffers_lib.write_bound(
      output, Binding(buffer, place.offset), buffer, place.view, value, written
    )
  return tuple(updated)


_run = jax.jit(_program, static_argnums=0)
_run_donating = jax.jit(_program, static_argnums=0, donate_argnums=2)


def jitted_program(donate: bool = False) -> Any:
  """The jitted dispatch: called as ``fn(program.static, *program.operands)`` for a
  `BoundProgram`, it returns the updated output buffers; `donate` lets XLA reuse them."""
  return _run_donating if donate else _run


@dataclasses.dataclass(frozen=True)
class BoundProgram:
  """One dispatch with its bindings checked: the arguments of `jitted_program`.

  Attributes:
    static: the hashable static argument: the descriptor and its bindings' layouts.
    operands: the distinct input buffers, the distinct output buffers, and the values
      of the OWNED_BY_DML inputs, as three tuples.
    output_where: for each output binding, the index of its buffer in the updated ones.
  """

  static: ProgramLayout
  operands: tuple[tuple[Any, ...], tuple[Any, ...], tuple[jax.Array, ...]]
  output_where: tuple[int, ...]

  def outputs(self, updated: Sequence[jax.Array]) -> list[jax.Array]:
    """The buffer of each output binding, from the program's updated output buffers."""
    return [updated[index] for index in self.output_where]


def _show(binding: Binding) -> str:
  return f"{binding!r}"


class CompiledOperator:
  """A validated operator, ready to run on buffer bindings (IDMLCompiledOperator).

  Args:
    desc: any registered operator's descriptor.
    feature_level: the DML_FEATURE_LEVEL to validate at (default: the newest).

  Raises:
    DmlValidationError: if DirectML would reject the descriptor at that level.

  Examples:
    >>> import numpy as np
    >>> import dml_jax as dml
    >>> weights = dml.TensorDesc("FLOAT32", (1, 4), flags=dml.TensorFlags.OWNED_BY_DML)
    >>> op = dml.compile_operator(dml.ElementWiseIdentityDesc(weights, dml.TensorDesc("FLOAT32", (1, 4))))
    >>> w = np.arange(4, dtype=np.float32)
    >>> op.initialize([dml.Binding(w)])
    >>> w[:] = 9                       # the operator copied the bytes when it was initialized
    >>> op.execute([None], [dml.Binding(np.zeros(4, np.float32))])
    [Array([0., 1., 2., 3.], dtype=float32)]
  """

  def __init__(self, desc: OperatorDesc, feature_level: FeatureLevelLike = None) -> None:
    self.feature_level = FeatureLevel.from_any(feature_level)
    self.desc = desc.validate(self.feature_level)
    self.inputs = desc.dml_inputs()
    """(DML field, support-table row, tensor) of every input, in binding order."""
    self._outputs: tuple[tuple[str, str, TensorDesc], ...] = tuple(
      (f, r, t) for f, r, t in desc.dml_outputs(inferred=True) if t is not None
    )
    self.owned_inputs = tuple(
      i for i, (_, _, t) in enumerate(self.inputs) if t.flags & TensorFlags.OWNED_BY_DML
    )
    """Positions of the inputs flagged OWNED_BY_DML: bound by `initialize` only."""
    self._persistent: tuple[jax.Array, ...] | None = None if self.owned_inputs else ()

  def __repr__(self) -> str:
    return f"CompiledOperator({self.desc!r}, feature_level={str(self.feature_level)!r})"

  def initialize(self, inputs: Sequence[Binding | None] | None = None) -> None:
    """Binds the OWNED_BY_DML inputs, as DirectML's operator initializer does.

    Their tensors are read now and kept (DirectML copies them into the operator's
    persistent resource): later changes to those buffers do not reach `execute`.

    Args:
      inputs: one entry per input tensor: a Binding for each OWNED_BY_DML input, None
        for the others. None: the operator has no such input.

    Raises:
      DmlBindingError: an OWNED_BY_DML input without a binding, another input with one,
        or a binding DirectML would refuse.
    """
    entries = list(inputs) if inputs is not None else [None] * len(self.inputs)
    _check_count(entries, self.inputs, "initialize's inputs")
    kept = []
    for i, ((field, _, tensor), binding) in enumerate(zip(self.inputs, entries, strict=True)):
      if i in self.owned_inputs:
        if not isinstance(binding, Binding):
          raise DmlBindingError(
            f"{field} is OWNED_BY_DML: initialize needs its Binding (got {binding!r})"
          )
        buffer = buffers_lib.buffer_operand(binding.buffer, f"{field}'s buffer")
        view = buffers_lib.check_binding(tensor, binding, buffer, field)
        kept.append(_read(tensor, binding.offset, view, buffer, field))
      elif binding is not None:
        raise DmlBindingError(
          f"{field} is not OWNED_BY_DML: it is bound when the operator executes, not at"
          f" initialization; pass None for it here"
        )
    self._persistent = tuple(kept)

  def execute(
    self,
    inputs: Sequence[Binding | None],
    outputs: Sequence[Binding],
    *,
    donate: bool = False,
  ) -> list[jax.Array]:
    """Runs the operator on bound buffers; returns the output buffers as it leaves them.

    Args:
      inputs: one Binding per input tensor in field order (JOIN: one per InputTensors
        entry), None for each OWNED_BY_DML input (bound by `initialize`).
      outputs: one Binding per output tensor in field order.
      donate: allow the output buffers to be donated (reused in place by XLA): the
        arrays passed are invalid afterwards. Ignored inside another jit.

    Returns:
      One buffer per output binding, each with its input's dtype and length: the
      output elements written at their strided positions, every other byte as it was
      (two bindings of one buffer give the same, final, buffer).

    Raises:
      DmlBindingError: for a binding DirectML would refuse (see `Binding`), overlapping
        output strides or ranges, or an output buffer that is also an input's.
    """
    program = self.bind(inputs, outputs)
    return program.outputs(jitted_program(donate)(program.static, *program.operands))

  def check(self, inputs: Sequence[Binding | None], outputs: Sequence[Binding]) -> None:
    """Raises what `execute` would raise for these bindings, and runs nothing.

    Only the buffers' shapes, dtypes and identities matter (one buffer bound twice is one
    object), so placeholders of the right size do; the OWNED_BY_DML inputs need not be
    initialized yet.

    Raises:
      DmlBindingError, TypeError: as `execute`.
    """
    persistent = self._persistent
    self._persistent = () if persistent is None else persistent
    try:
      self.bind(inputs, outputs)
    finally:
      self._persistent = persistent

  def bind(self, inputs: Sequence[Binding | None], outputs: Sequence[Binding]) -> BoundProgram:
    """Checks the bindings (`execute`'s arguments and errors) and returns the program that
    `execute` runs, not run (the device layer compiles it for a chosen device).

    Raises:
      DmlBindingError, TypeError: as `execute`.
    """
    if self._persistent is None:
      names = ", ".join(self.inputs[i][0] for i in self.owned_inputs)
      raise DmlBindingError(
        f"{names} {'is' if len(self.owned_inputs) == 1 else 'are'} OWNED_BY_DML: call"
        f" initialize with {'its binding' if len(self.owned_inputs) == 1 else 'their bindings'}"
        f" before execute (or use dml.execute, which does both)"
      )
    inputs, outputs = list(inputs), list(outputs)
    _check_count(inputs, self.inputs, "inputs")
    _check_count(outputs, self._outputs, "outputs")
    for i, ((field, _, _), binding) in enumerate(zip(self.inputs, inputs, strict=True)):
      if i in self.owned_inputs and binding is not None:
        raise DmlBindingError(
          f"{field} is OWNED_BY_DML: DirectML binds it once, at initialization, and refuses it"
          f" at execution; pass None for it (got {binding!r})"
        )
      if i not in self.owned_inputs and not isinstance(binding, Binding):
        raise TypeError(f"{field} needs a dml.Binding; got {type(binding).__name__}")
    for (field, _, _), binding in zip(self._outputs, outputs, strict=True):
      if not isinstance(binding, Binding):
        raise TypeError(f"{field} needs a dml.Binding; got {type(binding).__name__}")

    output_buffers, output_where = buffers_lib.unique_buffers(outputs)
    in_place = self.desc.IN_PLACE
    input_layout: list[InputLayout | None] = []
    input_buffers: list[Any] = []
    for (field, _, tensor), binding in zip(self.inputs, inputs, strict=True):
      if binding is None:
        input_layout.append(None)
        continue
      shared = next((k for k, b in enumerate(output_buffers) if b is binding.buffer), None)
      if shared is not None and not in_place:
        out_field = self._outputs[output_where.index(shared)][0]
        raise DmlBindingError(
          f"{field} and {out_field} are bound to the same buffer ({_show(binding)}):"
          f" DML_OPERATOR_{self.desc.OPERATOR} has no in-place form, so an output may not"
          f" alias an input; write the output to another buffer"
        )
      if shared is not None:
        from_outputs, index = True, shared
      else:
        found = next((k for k, b in enumerate(input_buffers) if b is binding.buffer), None)
        if found is None:
          input_buffers.append(binding.buffer)
          found = len(input_buffers) - 1
        from_outputs, index = False, found
      buffer = buffers_lib.buffer_operand(binding.buffer, f"{field}'s buffer")
      view = buffers_lib.check_binding(tensor, binding, buffer, field)
      buffers_lib.tensor_dtype(tensor, field)
      input_layout.append(InputLayout(from_outputs, index, binding.offset, view))

    output_layout: list[OutputLayout] = []
    ranges: dict[int, list[tuple[int, int, str]]] = {}
    for (field, _, tensor), binding, where in zip(
      self._outputs, outputs, output_where, strict=True
    ):
      assert where is not None
      index = where
      buffer = buffers_lib.buffer_operand(binding.buffer, f"{field}'s buffer")
      view = buffers_lib.check_binding(tensor, binding, buffer, field)
      buffers_lib.tensor_dtype(tensor, field)
      buffers_lib.check_output_strides(tensor, field)
      low, high = binding.offset, binding.offset + tensor.total_tensor_size_in_bytes
      for other_low, other_high, other in ranges.get(index, []):
        if low < other_high and other_low < high:
          raise DmlBindingError(
            f"{field} (bytes [{low}, {high})) and {other} (bytes [{other_low}, {other_high}))"
            f" are bound to overlapping ranges of one buffer: DirectML may write anywhere inside"
            f" an output's TotalTensorSizeInBytes, so outputs must not share bytes"
          )
      ranges.setdefault(index, []).append((low, high, field))
      output_layout.append(OutputLayout(index, binding.offset, view))

    static = ProgramLayout(self.desc, tuple(input_layout), tuple(output_layout))
    operands = (
      tuple(buffers_lib.buffer_operand(b, "an input buffer") for b in input_buffers),
      tuple(buffers_lib.buffer_operand(b, "an output buffer") for b in output_buffers),
      self._persistent,
    )
    return BoundProgram(static, operands, tuple(i for i in output_where if i is not None))


def _check_count(entries: Sequence[Any], fields: Sequence[Any], what: str) -> None:
  if len(entries) != len(fields):
    names = ", ".join(field for field, _, _ in fields)
    raise TypeError(f"{what}: one entry per tensor ({names}) is needed; got {len(entries)}")


def _read_bound(
  tensor: TensorDesc, offset: int, view: int, buffer: jax.Array, field: str
) -> jax.Array:
  return buffers_lib.read_bound(tensor, Binding(buffer, offset), buffer, view, field)


_read = jax.jit(_read_bound, static_argnums=(0, 1, 2, 4))


def compile_operator(
  desc: OperatorDesc, feature_level: FeatureLevelLike = None
) -> CompiledOperator:
  """Validates `desc` at `feature_level` and returns it ready to execute on bindings.

  See `CompiledOperator` (and `execute` for the one-call form).
  """
  return CompiledOperator(desc, feature_level)


def execute(
  desc: OperatorDesc,
  inputs: Sequence[Binding],
  outputs: Sequence[Binding],
  *,
  feature_level: FeatureLevelLike = None,
  donate: bool = False,
) -> list[jax.Array]:
  """Runs any operator's descriptor on buffer bindings, as a DirectML dispatch does.

  Each tensor of `desc` is read from (written to) its binding: element c at byte
  ``offset + sum(c[i] * Strides[i]) * element size``, the buffer's bytes read as the
  tensor's data type whatever the buffer's dtype. Every byte of an output buffer that
  no output element addresses keeps its value (stride gaps included). The whole call
  is one jitted program, also inside `jax.jit` (bindings and descriptors are static).

  This is `compile_operator(desc, feature_level)`, then `initialize` with the bindings
  of the OWNED_BY_DML inputs (if any), then `execute` with the others.

  Args:
    desc: any registered operator's descriptor (outputs given or inferred).
    inputs: one Binding per input tensor, in field order (JOIN: one per input).
    outputs: one Binding per output tensor, in field order.
    feature_level: the DML_FEATURE_LEVEL to validate at (default: the newest).
    donate: let XLA reuse the output buffers in place (the arrays passed become invalid).

  Returns:
    The output buffers, one per output binding.

  Raises:
    DmlValidationError: if DirectML would reject the descriptor.
    DmlBindingError: for a binding DirectML would refuse: an offset that is not a
      multiple of 16 or of GuaranteedBaseOffsetAlignment, a bound range smaller than
      TotalTensorSizeInBytes, an output whose strides write an element twice, outputs
      sharing bytes, an output buffer also bound as an input (unless the operator has
      an in-place form: ELEMENT_WISE_IDENTITY).

  Examples:
    >>> import numpy as np
    >>> import dml_jax as dml
    >>> nhwc = np.arange(12, dtype=np.float32)                # N=1, H=2, W=2, C=3
    >>> as_nchw = dml.TensorDesc("FLOAT32", (1, 3, 2, 2), strides=(12, 1, 6, 3))
    >>> desc = dml.ElementWiseIdentityDesc(as_nchw, dml.TensorDesc("FLOAT32", (1, 3, 2, 2)))
    >>> (out,) = dml.execute(desc, [dml.Binding(nhwc)], [dml.Binding(np.zeros(12, np.float32))])
    >>> out.reshape(3, 4)                                      # C=3 rows of H*W
    Array([[ 0.,  3.,  6.,  9.],
           [ 1.,  4.,  7., 10.],
           [ 2.,  5.,  8., 11.]], dtype=float32)
  """
  op, rest = _initialized(CompiledOperator(desc, feature_level), inputs)
  return op.execute(rest, outputs, donate=donate)


def _initialized(
  op: CompiledOperator, inputs: Sequence[Binding]
) -> tuple[CompiledOperator, list[Binding | None]]:
  """`op` initialized with the bindings of its OWNED_BY_DML inputs (if any), and the
  inputs left for its `execute` (None in place of each of those)."""
  entries: list[Binding | None] = list(inputs)
  if op.owned_inputs:
    _check_count(entries, op.inputs, "inputs")
    op.initialize([b if i in op.owned_inputs else None for i, b in enumerate(entries)])
    entries = [None if i in op.owned_inputs else b for i, b in enumerate(entries)]
  return op, entries


def bound_program(
  desc: OperatorDesc,
  inputs: Sequence[Binding],
  outputs: Sequence[Binding],
  feature_level: FeatureLevelLike = None,
) -> BoundProgram:
  """What `execute(desc, inputs, outputs, feature_level=...)` runs, not run: the descriptor
  validated, the OWNED_BY_DML inputs initialized, every binding checked, with its errors.

  The device layer compiles it for a chosen device (`Runner.execute`).
  """
  op, rest = _initialized(CompiledOperator(desc, feature_level), inputs)
  return op.bind(rest, outputs)
