"""Dispatch: a descriptor's lowering under `jax.jit`, and the functional API's jitted body.

Validation happens when a function traces, on static shapes, and the jitted
program holds only the lowering's data movement; a repeated call with the same
shapes and dtypes traces nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import jax

from dml_jax._src import arguments, moved_bits, natural
from dml_jax._src.dtypes import DataType
from dml_jax._src.errors import DmlValidationError
from dml_jax._src.feature_level import NEWEST, FeatureLevel

if TYPE_CHECKING:
  from dml_jax._src.descriptor import OperatorDesc


def apply(desc: OperatorDesc, *arrays: jax.Array) -> jax.Array | tuple[jax.Array, ...]:
  """`desc.lower(*arrays)` inside a named scope (dml.GATHER_ND, ...) for profiles."""
  with jax.named_scope(f"dml.{desc.OPERATOR}"):
    return desc.lower(*arrays)


def apply_bound(
  desc: OperatorDesc, arrays: Sequence[jax.Array], parts: Sequence[bool]
) -> jax.Array | tuple[jax.Array, ...]:
  """`desc.lower_bound(arrays, parts)` (inputs read from bound buffers, `parts[i]`: input i
  cut out of a larger one) inside the same named scope."""
  with jax.named_scope(f"dml.{desc.OPERATOR}"):
    return desc.lower_bound(arrays, parts)


_CAPTURING: list[list[OperatorDesc]] = []
"""While `descriptors_of` runs: the list the functional API's bodies append their
descriptors to (the innermost call's)."""


def descriptors_of(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[OperatorDesc]:
  """The DirectML descriptors that ``fn(*args, **kwargs)`` builds, in the order it builds them.

  `fn` is any function of the functional API's calls (``dml.gather``, a lambda, a model
  of several); it is traced on the arguments' shapes and dtypes only, nothing is computed.
  Each descriptor is the one validated and lowered: with the ranks padded as DirectML needs
  them and bfloat16 carried as UINT16. Pass one to `dml.explain` to read it.

  Examples:
    >>> import numpy as np
    >>> import dml_jax as dml
    >>> table, ids = np.zeros((100, 16), np.float32), np.zeros((2, 5), np.int32)
    >>> (desc,) = dml.descriptors_of(dml.gather, table, ids, axis=0)
    >>> print(desc)
    DML_OPERATOR_GATHER(InputTensor=FLOAT32[1,100,16], IndicesTensor=INT32[1,2,5], Axis=1, IndexDimensions=2) -> FLOAT32[2,5,16]
  """
  found: list[OperatorDesc] = []
  _CAPTURING.append(found)
  try:
    with jax.disable_jit():  # each body runs, rather than a jitted call's cached trace
      jax.eval_shape(lambda *a: fn(*a, **kwargs), *args)
  finally:
    _CAPTURING.pop()
  return found


apply_jitted = jax.jit(apply, static_argnums=0)
"""`desc.lower` under jit, for a descriptor validated already (the device layer's path)."""

DECLARATIONS: dict[str, natural.Ranks] = {}
"""Each functional API's declaration (`operator_function`'s `ranks`), by the function's name
(the descriptor class's FUNCTION): what a call of each reads as, for tests to inspect."""


def operator_function(
  describe: Callable[..., OperatorDesc],
  desc_type: type[OperatorDesc],
  ranks: natural.Ranks | None = None,
  moves_bits: bool | Callable[[tuple[Any, ...]], bool] = False,
) -> Callable[..., Any]:
  """The functional API's jitted body: read, describe, validate and lower, at trace time.

  Returns `fn(static, *arrays)`, jitted with `static` = (feature level, declared
  DirectML data types, *attributes) as its one static argument; `describe(types,
  shapes, *attributes)` builds the descriptor. Declared types of None stand for the
  arrays' own (the eager fast path's key: see `arguments.tensor_operands`), derived
  here from the dtypes with the roles of `desc_type`'s input tensors, so with their
  errors. A repeated eager call with the same shapes is a plain jitted call, with no
  descriptor work; inside another transformation the lowering is inlined.

  `ranks` (None: the call as written) reads the call as DirectML's first: the arrays
  padded with leading 1s, the attributes (axes) moved onto the padded ranks, the
  outputs cut back to the declared rank (see `dml_jax._src.natural`).

  `moves_bits` (a bool, or a predicate of the attributes) declares an operator that
  only moves its data: it takes the dtypes DirectML lacks as the bits of an unsigned
  type (see `dml_jax._src.moved_bits`); any other refuses them with a TypeError.
  """
  ranks = natural.Ranks() if ranks is None else ranks
  DECLARATIONS[desc_type.FUNCTION] = ranks
  moves = moves_bits if callable(moves_bits) else lambda _: moves_bits

  def body(static: tuple[Any, ...], *arrays: jax.Array) -> jax.Array | tuple[jax.Array, ...]:
    level, types, *attributes = static
    roles = arguments.roles(desc_type, len(arrays))
    if types is None:
      named = zip(arrays, roles, strict=True)
      _, types = arguments.operands(*((array, *role) for array, role in named))
    data = tuple(not is_index for _, is_index in roles)
    carried = moved_bits.moved_dtype(desc_type.FUNCTION, arrays, data)
    if carried is not None and not moves(tuple(attributes)):
      raise moved_bits.refused(desc_type.FUNCTION, carried)
    shapes = tuple(a.shape for a in arrays)

    def read(attributes: Sequence[Any]) -> natural.Reading:
      return _read_at(ranks, describe, desc_type, types, shapes, attributes, level)

    reading = read(attributes)
    desc = describe(types, reading.shapes, *reading.attributes)
    try:
      desc.validate(level)
    except DmlValidationError as error:
      names = arguments.argument_names(desc_type, len(arrays))
      if reading.changes(shapes, attributes):
        error.add_note(
          natural.note(desc.FUNCTION, names, shapes, _shown(ranks, reading), ranks.names)
        )
      unset = ranks.unset(attributes)
      if unset is not None and _valid(describe, types, other := read(unset), level):
        error.add_note(
          natural.unset_note(desc.FUNCTION, names, unset, _shown(ranks, other), ranks.names)
        )
      lifted = _lifted(ranks, describe, desc_type, types, reading, level)
      if lifted is not None:
        rank, call = len(lifted.shapes[0]), _shown(ranks, lifted)
        error.add_note(natural.lifted_note(desc.FUNCTION, names, shapes, call, ranks.names, rank))
      readings = [
        (what, natural.Reading(shapes, other))
        for what, other in ranks.alternatives(shapes, attributes)
        if _valid(describe, types, read(other), level)
      ]
      if readings:
        shown = [(what, _shown(ranks, r)) for what, r in readings]
        error.add_note(natural.alternatives_note(desc.FUNCTION, names, shapes, shown, ranks.names))
      raise
    if _CAPTURING:
      _CAPTURING[-1].append(desc)
    if carried is None:
      return _run(desc, reading, arrays)
    widened = tuple(DataType.FLOAT32 if d else t for t, d in zip(types, data, strict=True))
    in_float32 = describe(widened, reading.shapes, *reading.attributes)
    return moved_bits.through_unsigned(
      lambda *xs: _run(desc, reading, xs),
      lambda *xs: _run(in_float32, reading, xs),
      arrays,
      data,
      carried,
    )

  body.__name__ = f"dml_{describe.__name__.removeprefix('_describe_')}"
  return jax.jit(body, static_argnums=0)


def _lifted(
  ranks: natural.Ranks,
  describe: Callable[..., OperatorDesc],
  desc_type: type[OperatorDesc],
  types: Any,
  reading: natural.Reading,
  level: FeatureLevel,
) -> natural.Reading | None:
  """`reading` padded up to the least rank `level`'s table takes, where `reading` itself is
  below it and the padded call is valid at `level`: the call to show in the error of an
  operator that keeps its ranks (NONZERO_COORDINATES at FL 3_0, SPACE_TO_DEPTH of an image).
  None where there is none."""
  table = desc_type.SUPPORT.at(level)
  if table is None:
    return None
  lifted = ranks.lifted(reading, natural.least_rank(table))
  if lifted == reading or not _valid(describe, types, lifted, level):
    return None
  return lifted


def _read_at(
  ranks: natural.Ranks,
  describe: Callable[..., OperatorDesc],
  desc_type: type[OperatorDesc],
  types: Any,
  shapes: tuple[natural.Shape, ...],
  attributes: Sequence[Any],
  level: FeatureLevel,
) -> natural.Reading:
  """The call as DirectML's at `level` (`ranks.read_at`): padded up to the least rank the
  level's table takes only where that changes no result, else as read at the newest level.

  A padded reading is kept only where its outputs can be cut back (the sizes cut are 1s:
  SPACE_TO_DEPTH of an H x W image would cut its new channels). At an older level it is kept
  where, moreover, the call as read at the newest level is valid there and the padded
  call's outputs, cut back, have its outputs' shapes; a call that the newest level refuses
  is padded only where the level refuses the padded call too, so that the error names the
  other reasons. One that padding would make valid (GATHER's cropped sizes, say) keeps its
  rank, and is refused, at every level.
  """
  table = desc_type.SUPPORT.at(level)
  unpadded = ranks.read(shapes, attributes)

  def read_at(table: Any) -> natural.Reading:
    reading = ranks.read_at(shapes, attributes, table)
    if reading != unpadded and not _cuts(describe, types, reading):
      return unpadded
    return reading

  newest = read_at(desc_type.SUPPORT.at(NEWEST))
  if level == NEWEST:
    return newest
  reading = read_at(table)
  if reading == newest:
    return newest
  if not _valid(describe, types, newest, NEWEST):  # padded only for its error's reasons
    return newest if _valid(describe, types, reading, level) else reading
  wanted = _outputs(describe, types, newest)
  if wanted is None or None in wanted or _outputs(describe, types, reading) != wanted:
    return newest
  return reading


def _cuts(describe: Callable[..., OperatorDesc], types: Any, reading: natural.Reading) -> bool:
  """Whether every output that `reading`'s descriptor infers cuts back to its output rank
  with only leading 1s dropped (True where it infers none: validation names why)."""
  if reading.output_rank is None:
    return True
  try:
    inferred = describe(types, reading.shapes, *reading.attributes).infer_outputs()
  except (TypeError, ValueError):
    return True
  lead = [o.sizes[: len(o.sizes) - reading.output_rank] for o in inferred or () if o is not None]
  return all(s == 1 for sizes in lead for s in sizes)


def _outputs(
  describe: Callable[..., OperatorDesc], types: Any, reading: natural.Reading
) -> tuple[natural.Shape | None, ...] | None:
  """The sizes of the outputs that `reading`'s descriptor infers, cut back to its output rank
  (None: an output not inferred, or one whose cut leading sizes are not 1); None where it
  infers none or cannot be built."""
  try:
    inferred = describe(types, reading.shapes, *reading.attributes).infer_outputs()
  except (TypeError, ValueError):
    return None
  if inferred is None:
    return None
  cut: list[natural.Shape | None] = []
  for output in inferred:
    sizes = None if output is None else output.sizes
    if sizes is not None and reading.output_rank is not None:
      lead = len(sizes) - reading.output_rank
      sizes = sizes[lead:] if all(s == 1 for s in sizes[:lead]) else None
    cut.append(sizes)
  return tuple(cut)


def _valid(
  describe: Callable[..., OperatorDesc], types: Any, reading: natural.Reading, level: Any
) -> bool:
  """Whether the descriptor of `reading` is valid at `level` (False where it cannot be built)."""
  try:
    return describe(types, reading.shapes, *reading.attributes).is_valid(level)
  except (TypeError, ValueError):
    return False


def _shown(ranks: natural.Ranks, reading: natural.Reading) -> natural.Reading:
  """`reading` with its attributes as the functional API's keywords take them."""
  return dataclasses.replace(reading, attributes=ranks.shown(reading.attributes))


def _run(desc: OperatorDesc, reading: natural.Reading, arrays: Sequence[jax.Array]) -> Any:
  """The lowering of a validated `desc` on `arrays` read as `reading` says: padded, then cut."""
  if tuple(a.shape for a in arrays) != reading.shapes:
    arrays = tuple(a.reshape(s) for a, s in zip(arrays, reading.shapes, strict=True))
  outputs = apply(desc, *arrays)
  return outputs if reading.output_rank is None else _cut(outputs, reading.output_rank)


def _cut(outputs: Any, rank: int) -> Any:
  """Each output without the leading sizes (1s) beyond `rank` that a `natural` reading added."""
  if isinstance(outputs, tuple):
    return tuple(_cut(x, rank) for x in outputs)
  return outputs.reshape(outputs.shape[outputs.ndim - rank :])
