"""Natural call forms: the functional API's arrays padded to the ranks DirectML needs.

DirectML gives every tensor of an operator one rank and pads the shorter ones
with leading 1s; NumPy, ONNX and WebNN code passes arrays of their own ranks.
Each operator's functional API declares (a `Ranks` instance, passed to
`dispatch.operator_function`) how a call of its arrays reads as DirectML's: the
shapes DirectML gets, its attributes (axes counted on the arrays as given,
negative ones allowed), and the rank the result is cut back to. The jitted body
reads every call through its declaration, at trace time, so the descriptor it
validates and lowers is DirectML's own (what `dml.explain` shows), and a call that
is DirectML's already reads as itself.

Where the feature level validated against takes no tensors of the rank read, every
declaration pads the arrays further, with leading 1s up to the least DimensionCount
of the level's support table (`Ranks.read_at`, `Ranks.lifted`): the axes move by the
count added, `Ranks.moved` says how the other attributes follow, and the outputs are
cut back to the rank they have at the newest level, so an older level returns the
same shapes.

Where the padded call is still invalid, the validation error gets a note with the
DirectML call that the arrays were read as, so the porter sees the shapes; where a call
with counts set is invalid and the same call with them unset is valid, a note says so;
where per-dimension attributes (`PerDimension`: TILE, PADDING, SLICE) are too short to
read one way, a note gives the valid call of each reading.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dml_jax._src.feature_level import TensorSupport

Shape = tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Reading:
  """A functional call as DirectML sees it.

  Attributes:
    shapes: the arrays' shapes, padded with leading 1s.
    attributes: the attributes, axes moved onto the padded ranks.
    output_rank: the rank every output is cut back to (its leading sizes, all 1,
      dropped); None keeps DirectML's outputs as they are.
  """

  shapes: tuple[Shape, ...]
  attributes: tuple[Any, ...]
  output_rank: int | None = None

  def changes(self, shapes: Sequence[Shape], attributes: Sequence[Any]) -> bool:
    """Whether this reading differs from the call as written."""
    return tuple(shapes) != self.shapes or tuple(attributes) != self.attributes


def padded(shape: Shape, rank: int) -> Shape:
  """`shape` with leading 1s up to `rank` (never shortened)."""
  return (1,) * (rank - len(shape)) + tuple(shape)


def axis_on(axis: Any, rank: int, added: int) -> Any:
  """An axis of a rank-`rank` array, negative ones counted from its end, moved past `added`
  leading 1s; anything out of range is left as written, for validation to name."""
  if type(axis) is not int or not -rank <= axis < rank:
    return axis
  return axis % rank + added


def least_rank(table: Mapping[str, TensorSupport]) -> int:
  """The least DimensionCount that every tensor of an operator's support `table` may have."""
  return max(row.dimension_counts[0] for row in table.values())


@dataclasses.dataclass(frozen=True)
class Ranks:
  """The declaration of an operator whose input tensors share one rank (JOIN, SCATTER, ...).

  A call reads with every array padded to the highest rank among them, and each
  axis attribute counted on the array it names (None: that common rank). The
  outputs keep DirectML's shapes. Below the least rank of the level's table, the
  arrays read padded up to it (`read_at`) unless `to_level` is off.

  Attributes:
    axes: {position of an axis attribute among the operator's attributes: the
      array it counts on (None: the common rank)}.
    axis_sets: the positions of the attributes that are several axes of the common rank
      (ARGMIN's and ARGMAX's Axes), each counted as `axes`' are.
    names: the functional API's keyword names of the attributes, in order, for
      the error note's call.
    show: the attributes as those keywords take them, for the note's call (None: as they
      are, each enum member by its name).
    sized: the positions of the attributes that are a tensor's sizes (an output's, given
      rather than inferred), of the common rank too; None (unset) stays unset.
    to_level: pad a call of lower rank than the level's table takes up to its least
      rank (off where leading 1s would change what an attribute or an output means;
      the declaration says why).
  """

  names: tuple[str, ...] = ()
  axes: tuple[tuple[int, int | None], ...] = ()
  show: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None = None
  axis_sets: tuple[int, ...] = ()
  sized: tuple[int, ...] = ()
  to_level: bool = True

  def shown(self, attributes: Sequence[Any]) -> tuple[Any, ...]:
    """The attributes as the functional API's keywords take them, for the notes' calls:
    `show`'s, else each enum member by its name."""
    if self.show is not None:
      return self.show(tuple(attributes))
    return tuple(a.name if isinstance(a, enum.Enum) else a for a in attributes)

  def read_at(
    self,
    shapes: Sequence[Shape],
    attributes: Sequence[Any],
    table: Mapping[str, TensorSupport] | None,
  ) -> Reading:
    """`read`, padded up to the least rank the operator's support `table` at the level
    validated against takes (None: the level precedes the operator, nothing is padded).

    Examples:
      >>> from dml_jax._src.ops.gather_elements import GatherElementsDesc
      >>> from dml_jax._src.feature_level import FeatureLevel
      >>> ranks = Ranks(names=("axis",), axes=((0, None),))
      >>> table = GatherElementsDesc.SUPPORT.at(FeatureLevel.FL_2_1)  # 4-D tensors only
      >>> ranks.read_at([(3, 2), (3, 2)], (-1,), table)
      Reading(shapes=((1, 1, 3, 2), (1, 1, 3, 2)), attributes=(3,), output_rank=2)
    """
    reading = self.read(shapes, attributes)
    if table is None or not self.to_level:
      return reading
    return self.lifted(reading, least_rank(table))

  def lifted(self, reading: Reading, rank: int) -> Reading:
    """`reading` with its arrays padded with leading 1s to `rank` and its attributes
    `moved` onto it, every output cut back to the rank it had; `reading` itself where
    its arrays differ in rank (or there are none), have `rank` dimensions or more, or
    `moved` cannot move its attributes."""
    ranks = {len(s) for s in (*reading.shapes, *self._sizes(reading.attributes))}
    if len(ranks) != 1 or (own := ranks.pop()) >= rank:
      return reading
    shapes = tuple(padded(s, rank) for s in reading.shapes)
    attributes = self.moved(reading.attributes, shapes, own, rank - own)
    if attributes is None:
      return reading
    output_rank = own if reading.output_rank is None else reading.output_rank
    return Reading(shapes, attributes, output_rank)

  def moved(
    self, attributes: Sequence[Any], shapes: Sequence[Shape], rank: int, added: int
  ) -> tuple[Any, ...] | None:
    """A reading's `attributes` (of arrays of `rank` dimensions) for its arrays with `added`
    more leading 1s (`shapes`, the padded ones): each axis moved by `added`, each of the
    `sized` padded. None where an axis is out of range (padding could make it valid), for
    validation to name at the reading's own rank."""
    moved = list(attributes)
    for position in self.sized:
      if attributes[position] is not None:
        moved[position] = padded(tuple(attributes[position]), rank + added)
    for position, _ in self.axes:
      axis = attributes[position]
      if type(axis) is not int or not 0 <= axis < rank:
        return None
      moved[position] = axis + added
    for position in self.axis_sets:
      axes = attributes[position]
      if not isinstance(axes, tuple) or any(type(a) is not int or not 0 <= a < rank for a in axes):
        return None
      moved[position] = tuple(a + added for a in axes)
    return tuple(moved)

  def alternatives(
    self, shapes: Sequence[Shape], attributes: Sequence[Any]
  ) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """Where the call reads more than one way: (what each reading does, its attributes)."""
    return ()

  def unset(self, attributes: Sequence[Any]) -> tuple[Any, ...] | None:
    """The attributes with the counts that select NumPy's reading unset (None), or None
    where there are none, or none was set."""
    return None

  def read(self, shapes: Sequence[Shape], attributes: Sequence[Any]) -> Reading:
    """The call of arrays of `shapes` with `attributes`, as DirectML sees it."""
    rank = max((len(s) for s in (*shapes, *self._sizes(attributes))), default=0)
    moved = list(self._axes(shapes, attributes, rank))
    for position in self.sized:
      if attributes[position] is not None:
        moved[position] = padded(tuple(attributes[position]), rank)
    return Reading(tuple(padded(s, rank) for s in shapes), tuple(moved))

  def _sizes(self, attributes: Sequence[Any]) -> list[Shape]:
    """The `sized` attributes that are set."""
    return [tuple(attributes[p]) for p in self.sized if attributes[p] is not None]

  def _axes(self, shapes: Sequence[Shape], attributes: Sequence[Any], rank: int) -> tuple:
    """The attributes with each axis counted on its array (None: the common `rank`) and
    moved onto `rank`."""
    moved = list(attributes)
    for position, array in self.axes:
      own = rank if array is None else len(shapes[array])
      moved[position] = axis_on(attributes[position], own, rank - own)
    for position in self.axis_sets:
      if isinstance(attributes[position], tuple):
        moved[position] = tuple(axis_on(axis, rank, 0) for axis in attributes[position])
    return tuple(moved)


@dataclasses.dataclass(frozen=True)
class Take(Ranks):
  """GATHER's declaration: with IndexDimensions unset, NumPy's ``take`` (ONNX Gather).

  ``take(input, indices, axis)`` of ranks r and k has the shape
  ``input.shape[:axis] + indices.shape + input.shape[axis + 1:]`` (rank r + k - 1):
  DirectML computes it at rank n = r + max(k - 1, 0) with IndexDimensions k, the
  cropped leading sizes being the input's padding, and the result is cut back to
  rank r + k - 1. With IndexDimensions set, the call is DirectML's (`Ranks`).

  Attributes:
    count: the position of the index-dimension count among the attributes.
  """

  count: int = 1

  def unset(self, attributes: Sequence[Any]) -> tuple[Any, ...] | None:
    if attributes[self.count] is None:
      return None
    return tuple(None if i == self.count else a for i, a in enumerate(attributes))

  def read(self, shapes: Sequence[Shape], attributes: Sequence[Any]) -> Reading:
    ((axis_position, _),) = self.axes
    if attributes[self.count] is not None or len(shapes[0]) == 0:
      return super().read(shapes, attributes)
    (r, k), axis = map(len, shapes), attributes[axis_position]
    if type(axis) is not int or not -r <= axis < r:
      return super().read(shapes, attributes)  # validation names the axis
    n = r + max(k - 1, 0)
    moved = list(attributes)
    moved[axis_position], moved[self.count] = axis_on(axis, r, n - r), k
    return Reading(tuple(padded(s, n) for s in shapes), tuple(moved), r + k - 1)

  def moved(
    self, attributes: Sequence[Any], shapes: Sequence[Shape], rank: int, added: int
  ) -> tuple[Any, ...] | None:
    """IndexDimensions counts trailing dimensions, which leading 1s leave; unset, it would
    follow the rank, so such a reading is not padded."""
    if attributes[self.count] is None:
      return None
    return super().moved(attributes, shapes, rank, added)


@dataclasses.dataclass(frozen=True)
class TakeTuples(Ranks):
  """GATHER_ND's and SCATTER_ND's declaration: arrays of different ranks read as ONNX's.

  Where the arrays' ranks differ and the counts are unset, InputDimensionCount and
  IndicesDimensionCount are the arrays' own ranks r and k, every array is padded to
  the highest rank DirectML needs, and GATHER_ND's result is cut back to ONNX's
  shape ``indices.shape[:-1] + input.shape[b + t:]`` (t the tuple length, b the
  batch dimensions); SCATTER_ND's output keeps the input's rank. Arrays of one
  rank, or counts set, read as DirectML's call (`Ranks`).

  Attributes:
    counts: the positions of InputDimensionCount and IndicesDimensionCount.
    batch: the position of BatchDimensionCount, or None.
    scatter: the output has the input's shape (SCATTER_ND).
  """

  counts: tuple[int, int] = (0, 1)
  batch: int | None = None
  scatter: bool = False

  def unset(self, attributes: Sequence[Any]) -> tuple[Any, ...] | None:
    if all(attributes[i] is None for i in self.counts):
      return None
    return tuple(None if i in self.counts else a for i, a in enumerate(attributes))

  def read(self, shapes: Sequence[Shape], attributes: Sequence[Any]) -> Reading:
    ranks = [len(s) for s in shapes]
    unset = all(attributes[i] is None for i in self.counts)
    if not unset or len(set(ranks)) == 1 or ranks[1] == 0:
      return super().read(shapes, attributes)
    r, k = ranks[:2]
    b = 0 if self.batch is None else attributes[self.batch]
    gathered = k - 1 + r - (b if type(b) is int else 0) - shapes[1][-1]
    output_rank = r if self.scatter else gathered
    n = max(*ranks, gathered)
    moved = list(attributes)
    moved[self.counts[0]], moved[self.counts[1]] = r, k
    return Reading(
      tuple(padded(s, n) for s in shapes), tuple(moved), output_rank if gathered >= 0 else None
    )

  def moved(
    self, attributes: Sequence[Any], shapes: Sequence[Shape], rank: int, added: int
  ) -> tuple[Any, ...] | None:
    """The counts of logical (trailing) dimensions, and BatchDimensionCount among them, stay;
    an unset count, which stands for the whole rank, is set to the rank before padding."""
    return tuple(rank if i in self.counts and a is None else a for i, a in enumerate(attributes))


SIZE = None
"""`PerDimension`'s neutral value that is the dimension's own size (SLICE's sizes)."""


@dataclasses.dataclass(frozen=True)
class PerDimension(Ranks):
  """TILE's, PADDING's and SLICE's declaration: one input, and attributes of one value per
  dimension (repeats, pads, offsets, sizes, strides).

  A call whose per-dimension attributes all have m values, on an input of rank r, reads at
  rank max(r, m): the input padded with leading 1s and each attribute with its neutral
  value, the one that copies a dimension of size 1 as it is (a repeat of 1, a pad of 0;
  offset 0, size 1, stride 1). With m > r the input is promoted, as ``np.tile`` promotes
  it. Below the least rank of the level's table, the same neutral values fill the dimensions
  `read_at` adds, and the outputs are cut back to rank max(r, m).

  With m < r the call is ambiguous for SLICE and PADDING: NumPy's indexing applies a shorter
  list to the leading dimensions, DirectML's padding of ranks to the trailing ones. It is left
  as written, for validation to refuse, and `alternatives` gives both readings for the error's
  note. TILE (`trailing`) reads it as ``np.tile`` does: the repeats padded with leading 1s.

  Attributes:
    neutral: {position of a per-dimension attribute: its neutral value, `SIZE` for the
      dimension's size}. An attribute that is None (unset) stays unset.
    trailing: a shorter attribute applies to the trailing dimensions (``np.tile``'s reading).
  """

  neutral: tuple[tuple[int, int | None], ...] = ()
  trailing: bool = False

  def _lengths(self, attributes: Sequence[Any]) -> set[int]:
    return {len(attributes[p]) for p, _ in self.neutral if attributes[p] is not None}

  def _padded(
    self, attributes: Sequence[Any], sizes: Shape, *, front: bool = True
  ) -> tuple[Any, ...]:
    """The per-dimension attributes padded, at the front (else the back), to len(`sizes`),
    with each one's neutral value for the dimensions of `sizes` they gain."""
    moved = list(attributes)
    for position, neutral in self.neutral:
      values = attributes[position]
      if values is None:
        continue
      added = len(sizes) - len(values)
      gained = sizes[:added] if front else sizes[len(values) :]
      fill = tuple(s if neutral is SIZE else neutral for s in gained)
      moved[position] = fill + tuple(values) if front else tuple(values) + fill
    return tuple(moved)

  def read(self, shapes: Sequence[Shape], attributes: Sequence[Any]) -> Reading:
    ((shape,), lengths) = shapes, self._lengths(attributes)
    if len(lengths) > 1:  # attributes of different lengths: validation names them
      return Reading(tuple(shapes), tuple(attributes))
    r = len(shape)
    m = lengths.pop() if lengths else r
    if m < r and not self.trailing:
      return Reading(tuple(shapes), tuple(attributes))  # ambiguous: see `alternatives`
    sizes = padded(shape, max(r, m))
    return Reading((sizes,), self._padded(attributes, sizes))

  def moved(
    self, attributes: Sequence[Any], shapes: Sequence[Shape], rank: int, added: int
  ) -> tuple[Any, ...] | None:
    """Each per-dimension attribute with its neutral value for the dimensions added; None
    where the attributes do not hold one value per dimension (an ambiguous call, or
    attributes of different lengths), for validation to refuse as written."""
    if self._lengths(attributes) - {rank}:
      return None
    return self._padded(attributes, tuple(shapes[0]))

  def alternatives(
    self, shapes: Sequence[Shape], attributes: Sequence[Any]
  ) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    ((shape,), lengths) = shapes, self._lengths(attributes)
    if self.trailing or len(lengths) != 1 or (m := lengths.pop()) >= len(shape):
      return ()
    return (
      (
        f"for the last {m} dimension(s), as DirectML pads ranks",
        self._padded(attributes, tuple(shape)),
      ),
      (
        f"for the first {m} dimension(s), as NumPy's indexing reads a shorter list",
        self._padded(attributes, tuple(shape), front=False),
      ),
    )


def call_text(
  function: str,
  arguments: Sequence[str],
  reading: Reading,
  names: Sequence[str],
  given: Sequence[Shape] = (),
) -> str:
  """The functional call that `reading` stands for: each argument reshaped to its padded
  shape (named as it is where that is its `given` shape), the attributes as DirectML gets
  them (those unset, None, left out)."""
  args: list[str] = []
  listed: list[str] = []  # the elements of a tensor array (JOIN's inputs[0], ...), one list
  for i, (name, shape) in enumerate(zip(arguments, reading.shapes, strict=True)):
    as_given = i < len(given) and tuple(given[i]) == tuple(shape)
    text = name if as_given else f"{name}.reshape({', '.join(map(str, shape))})"
    if "[" in name:
      listed.append(text)
      continue
    if listed:
      args.append(f"[{', '.join(listed)}]")
      listed = []
    args.append(text)
  if listed:
    args.append(f"[{', '.join(listed)}]")
  args += [f"{n}={v!r}" for n, v in zip(names, reading.attributes, strict=False) if v is not None]
  return f"dml.{function}({', '.join(args)})"


def note(
  function: str,
  arguments: Sequence[str],
  shapes: Sequence[Shape],
  reading: Reading,
  names: Sequence[str],
) -> str:
  """What the error of a padded call adds: the shapes as given and the DirectML call."""
  given = ", ".join(f"{a} {tuple(s)}" for a, s in zip(arguments, shapes, strict=True))
  return (
    f"dml.{function} read its arguments ({given}) with DirectML's ranks and axes; the call it"
    f" checked is {call_text(function, arguments, reading, names)}. Reshape the arguments"
    " to shapes that call accepts, or pass DirectML's shapes and attributes yourself."
  )


def unset_note(
  function: str,
  arguments: Sequence[str],
  attributes: Sequence[Any],
  reading: Reading,
  names: Sequence[str],
) -> str:
  """What the error of a call with counts set adds where NumPy's reading (`attributes`, the
  counts unset) is valid: that call, and the DirectML call it becomes."""
  given = [f"{n}={v!r}" for n, v in zip(names, attributes, strict=False) if v is not None]
  call = f"dml.{function}({', '.join([*arguments, *given])})"
  return (
    f"With the counts unset, {call} reads as NumPy and ONNX do and is valid; DirectML"
    f" computes it as {call_text(function, arguments, reading, names)}."
  )


def lifted_note(
  function: str,
  arguments: Sequence[str],
  shapes: Sequence[Shape],
  reading: Reading,
  names: Sequence[str],
  rank: int,
) -> str:
  """What the error of a call that the level refuses for its rank, and that is not padded for
  it (the outputs could not be cut back), adds: the padded call the level takes, whose outputs
  keep the padded rank."""
  given = ", ".join(f"{a} {tuple(s)}" for a, s in zip(arguments, shapes, strict=True))
  return (
    f"dml.{function} keeps the arrays' own ranks ({given}) where padding them would change"
    f" its outputs' ranks. This feature level takes {rank} dimensions or more:"
    f" {call_text(function, arguments, reading, names, shapes)} is valid, and its outputs"
    f" keep {rank} dimensions."
  )


def alternatives_note(
  function: str,
  arguments: Sequence[str],
  shapes: Sequence[Shape],
  readings: Sequence[tuple[str, Reading]],
  names: Sequence[str],
) -> str:
  """What the error of an ambiguous call (`PerDimension.alternatives`) adds: the call of each
  reading that is valid."""
  given = ", ".join(f"{a} {tuple(s)}" for a, s in zip(arguments, shapes, strict=True))
  calls = "; ".join(
    f"{what}: {call_text(function, arguments, reading, names, shapes)}"
    for what, reading in readings
  )
  return (
    f"dml.{function}'s per-dimension arguments hold fewer values than its input has"
    f" dimensions ({given}), which reads two ways, so it is refused rather than guessed."
    f" Pass one value per dimension: {calls}."
  )
