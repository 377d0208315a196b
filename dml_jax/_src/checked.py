"""Checked mode: raise on an out-of-range index instead of clamping it.

DirectML leaves out-of-range indices undefined and dml_jax clamps them (gathers)
or drops their updates (scatters). Under `checked(fn)`, every gather and scatter
traced inside `fn` also emits a `jax.experimental.checkify` check that its
indices are in range after the negative-index rule, and every scatter a check
that no two of its updates write one output element (which DirectML leaves
undefined too, and dml_jax resolves by keeping the last); the first failure
raises `DmlIndexError` naming the operator, the tensor, the position and the
value (for a duplicate: the update, its target and the later update). It works
with jitted and vmapped functions inside `fn`; under `jax.vmap` the message also
names the batch element that failed (one coordinate per vmap, outermost first,
up to four). Outside `checked`, nothing is emitted.

The mode is a JAX configuration state that is part of the jit cache key, so a
function traced without checks is traced again, with them, under `checked`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap
from jax.experimental import checkify

from dml_jax._src.errors import DmlError, public
from dml_jax._src.indexing import out_of_range
from dml_jax._src.jax_compat import bool_state  # a flag in the jit key

_Fn = TypeVar("_Fn", bound=Callable[..., Any])

CHECKED_INDICES = bool_state(
  name="dml_jax_checked_indices",
  default=False,
  help="Internal to dml_jax.checked: emit index range checks (needs checkify around).",
  include_in_jit_key=True,
  include_in_trace_context=True,
)


@public
class DmlIndexError(DmlError, IndexError):
  """An index out of range for the tensor it indexes, or two scatter updates with one
  target, found in checked mode."""


def checked(fn: _Fn) -> _Fn:
  """Returns `fn` that raises DmlIndexError where an operator indexes out of range.

  Every dml_jax gather and scatter inside `fn` checks its indices after the
  negative-index rule (signed indices in [-size, size), unsigned in [0, size)),
  and every scatter checks that no two updates write one element. Wrap the
  outermost transformation: ``checked(jax.jit(f))``, ``checked(jax.vmap(f))``.
  Under `jax.vmap` the message ends with the failing batch element (one
  coordinate per vmap, outermost first).

  Examples:
    >>> import numpy as np, jax
    >>> import dml_jax as dml
    >>> f = jax.jit(lambda x, i: dml.gather_elements(x, i, axis=0))
    >>> x = np.arange(3, dtype=np.float32)
    >>> dml.checked(f)(x, np.array([2, -3], np.int32))
    Array([2., 0.], dtype=float32)
    >>> dml.checked(f)(x, np.array([0, 3], np.int32))
    Traceback (most recent call last):
    ...
    dml_jax.DmlIndexError: dml.GATHER_ELEMENTS: IndicesTensor[1] = 3 is out of range for InputTensor.Sizes[0] = 3 (signed indices must be in [-3, 3))
  """

  @functools.wraps(fn)
  def wrapper(*args, **kwargs):
    with CHECKED_INDICES(True):
      error, out = checkify.checkify(fn, errors=checkify.user_checks)(*args, **kwargs)
    try:
      message = error.get()
    except jax.errors.ConcretizationTypeError:  # traced: checked sits inside jit, vmap, ...
      raise TypeError(
        "dml.checked must be the outermost transformation, since it raises in Python once the"
        " values are known: write dml.checked(jax.jit(f)), not jax.jit(dml.checked(f))"
      ) from None
    if message is not None:
      first_line = message.split("\n")[0]  # checkify reports the first failure
      raise DmlIndexError(_name_batch_element(first_line.removesuffix(" (`check` failed)")))
    return out

  return wrapper  # type: ignore[return-value]


_BATCH_LEVELS = 4
"""How many nested vmaps a checked-mode message can name."""

_BATCH_SUFFIX = re.compile(r" <batch (-?\d+(?:, -?\d+)*)>$")


@custom_vmap
def _batch_element(operand: jax.Array) -> jax.Array:
  """The coordinates of the vmapped batch element `operand` belongs to, outermost first.

  Outside vmap every entry is -1. Each vmap whose batched operand reaches here fills
  the first free entry with its own index, so nested vmaps read outermost first.
  """
  del operand
  return jnp.full((_BATCH_LEVELS,), -1, jnp.int32)


@_batch_element.def_vmap
def _batch_element_rule(
  axis_size: int, in_batched: Sequence[bool], operand: jax.Array
) -> tuple[jax.Array, bool]:
  (batched,) = in_batched
  outer = _batch_element(operand[0] if batched else operand)  # the enclosing vmaps' entries
  free = jnp.where(jnp.any(outer < 0), jnp.argmax(outer < 0), _BATCH_LEVELS)  # none: too deep
  own = jnp.arange(axis_size, dtype=jnp.int32)[:, None]
  return jnp.where(jnp.arange(_BATCH_LEVELS) == free, own, outer), True


def _batch_format(operand: jax.Array) -> tuple[str, dict[str, Any]]:
  """A message suffix and its values naming the batch element of `operand`."""
  element = _batch_element(operand)
  names = [f"b{level}" for level in range(_BATCH_LEVELS)]
  suffix = " <batch " + ", ".join(f"{{{name}}}" for name in names) + ">"
  return suffix, {name: element[level] for level, name in enumerate(names)}


def _name_batch_element(message: str) -> str:
  """Rewrites `_batch_format`'s suffix in words (or drops it outside vmap)."""
  match = _BATCH_SUFFIX.search(message)
  if match is None:
    return message
  coordinates = [c for c in match.group(1).split(", ") if c != "-1"]
  message = message[: match.start()]
  if not coordinates:
    return message
  if len(coordinates) == 1:
    return f"{message}, in batch element {coordinates[0]} of jax.vmap"
  return (
    f"{message}, in batch element ({', '.join(coordinates)}) of the nested jax.vmap"
    " calls, outermost first"
  )


def check_indices(
  operator: str, indices: jax.Array, sizes: int | Sequence[int], dimensions: int | Sequence[int]
) -> None:
  """Emits the range check of `indices` (nothing unless in checked mode).

  Args:
    operator: the DML operator name, for the message.
    indices: the IndicesTensor as the caller passed it.
    sizes: the indexed size, or one per entry of the last axis of `indices`.
    dimensions: the InputTensor dimension of each size, for the message.
  """
  if not CHECKED_INDICES.value:
    return
  bad = out_of_range(indices, sizes)
  first = jnp.argmax(bad.reshape(-1))
  position = jnp.unravel_index(first, bad.shape)
  size_array, dimension_array = np.atleast_1d(sizes).astype(np.uint32), np.atleast_1d(dimensions)
  entry = position[-1] if len(size_array) > 1 else 0
  signed = np.issubdtype(indices.dtype, np.signedinteger)
  where = ", ".join(f"{{p{d}}}" for d in range(bad.ndim))
  # Any: checkify.check takes `debug: bool` among its keywords, which a dict of arrays may not fill
  coordinates: dict[str, Any] = {f"p{d}": p for d, p in enumerate(position)}
  batch, batch_values = _batch_format(bad)
  checkify.check(
    ~jnp.any(bad),
    f"dml.{operator}: IndicesTensor[{where}] = {{value}} is out of range for"
    f" InputTensor.Sizes[{{dimension}}] = {{size}} ({'signed' if signed else 'unsigned'}"
    f" indices must be in [{'-{size}' if signed else '0'}, {{size}})){batch}",
    value=indices.reshape(-1)[first],
    dimension=jnp.asarray(dimension_array)[entry],
    size=jnp.asarray(size_array)[entry],
    **coordinates,
    **batch_values,
  )


Coordinate = jax.Array | int | str
"""One coordinate of a position in a message: an array (one value per update), or a literal."""

Positions = tuple[Sequence[Coordinate], Sequence[Coordinate], Sequence[Coordinate]]
"""The updates' positions, their targets, and the positions of the updates that win them."""


def check_unique_targets(
  operator: str,
  loses: jax.Array,
  describe: Callable[[], Positions],
  *,
  field: str = "UpdatesTensor",
) -> None:
  """Emits the check that no kept update of a scatter is overwritten by a later one.

  Args:
    operator: the DML operator name, for the message.
    loses: one flag per update: a later update writes its target.
    describe: called only in checked mode; gives, each as one entry per coordinate (an
      array of the shape of `loses`, or a literal such as ":"), the updates' positions
      in `field`, their targets in OutputTensor, and the positions of the updates that
      win those targets.
    field: the tensor whose positions name the updates.
  """
  if not CHECKED_INDICES.value:
    return
  position, target, later = describe()
  first = jnp.argmax(loses.reshape(-1))
  values: dict[str, Any] = {}

  def shown(coordinates: Sequence[Coordinate], name: str) -> str:
    parts = []
    for d, c in enumerate(coordinates):
      if isinstance(c, str | int):
        parts.append(str(c))
      else:
        values[f"{name}{d}"] = jnp.broadcast_to(c, loses.shape).reshape(-1)[first]
        parts.append(f"{{{name}{d}}}")
    return ", ".join(parts)

  where, goes, winner = shown(position, "p"), shown(target, "t"), shown(later, "q")
  batch, batch_values = _batch_format(loses)
  checkify.check(
    ~jnp.any(loses),
    f"dml.{operator}: {field}[{where}] targets OutputTensor[{goes}], which a later update,"
    f" {field}[{winner}], also writes (DirectML leaves duplicate targets undefined; dml_jax"
    f" keeps the last){batch}",
    **values,
    **batch_values,
  )
