"""Dispatch: a descriptor's lowering under `jax.jit`, and the functional API's jitted body.

Validation happens when a function traces, on static shapes, and the jitted
program holds only the lowering's data movement; a repeated call with the same
shapes and dtypes traces nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import jax

from dml_jax._src import arguments

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


apply_jitted = jax.jit(apply, static_argnums=0)
"""`desc.lower` under jit, for a descriptor validated already (the device layer's path)."""


def operator_function(
  describe: Callable[..., OperatorDesc], desc_type: type[OperatorDesc]
) -> Callable[..., Any]:
  """The functional API's jitted body: describe, validate and lower, at trace time.

  Returns `fn(static, *arrays)`, jitted with `static` = (feature level, declared
  DirectML data types, *attributes) as its one static argument; `describe(types,
  shapes, *attributes)` builds the descriptor. Declared types of None stand for the
  arrays' own (the eager fast path's key: see `arguments.tensor_operands`), derived
  here from the dtypes with the roles of `desc_type`'s input tensors, so with their
  errors. A repeated eager call with the same shapes is a plain jitted call, with no
  descriptor work; inside another transformation the lowering is inlined.
  """

  def body(static: tuple[Any, ...], *arrays: jax.Array) -> jax.Array | tuple[jax.Array, ...]:
    level, types, *attributes = static
    if types is None:
      named = zip(arrays, arguments.roles(desc_type, len(arrays)), strict=True)
      _, types = arguments.operands(*((array, *role) for array, role in named))
    desc = describe(types, tuple(a.shape for a in arrays), *attributes)
    return apply(desc.validate(level), *arrays)

  body.__name__ = f"dml_{describe.__name__.removeprefix('_describe_')}"
  return jax.jit(body, static_argnums=0)
