"""DML_OPERATOR_TILE: the input repeated along every dimension, out[o] = input[o mod Sizes].

`OutputTensor.Sizes[i] = InputTensor.Sizes[i] * Repeats[i]`, with one repeat
count per dimension (RepeatsCount = DimensionCount; no broadcasting of a shorter
Repeats as ONNX does) and every count at least 1 (DirectML has no empty tensors).

The lowering is one broadcast and reshape, which XLA fuses into a single copy loop. On CUDA
GPUs two Pallas kernels take the shapes that loop copies slowly: one repeated dimension of
an input larger than L2 (`kernels.tile_copies_triton`, the input read once), and repeats on
the last two dimensions with the rows repeated, for outputs of 16 MiB or more
(`kernels.tile_rows_triton`, each block of an input row loaded once and stored at all its
copies). They give the same bits; the gradient is the lax form's.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex

import jax
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, kernels, natural, registry, rules
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import UP_TO_32_BIT, DataType
from dml_jax._src.errors import Checker
from dml_jax._src.feature_level import (
  FeatureLevel,
  FeatureLevelLike,
  SupportTable,
  as_level,
  support,
)
from dml_jax._src.fields import FieldKind, dml_field
from dml_jax._src.integers import as_int_tuple
from dml_jax._src.kernels import tile_copies_triton, tile_rows_cpu, tile_rows_triton
from dml_jax._src.kernels.partitioning import Roles, Shaped, dims
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

_FLOATS = (DataType.FLOAT32, DataType.FLOAT16)
# FL 4_1 adds INT64 and UINT64 but, as DirectML's table prints it, not FLOAT64.
_WITH_64_BIT_INTEGERS = UP_TO_32_BIT + (DataType.INT64, DataType.UINT64)


def _table(dimension_counts, data_types):
  row = support(dimension_counts, data_types)
  return {"InputTensor": row, "OutputTensor": row}


_SUPPORT = SupportTable(
  "TILE",
  {
    FeatureLevel.FL_1_0: _table(4, _FLOATS),
    FeatureLevel.FL_2_1: _table(4, UP_TO_32_BIT),
    FeatureLevel.FL_3_1: _table((1, 8), UP_TO_32_BIT),
    FeatureLevel.FL_4_1: _table((1, 8), _WITH_64_BIT_INTEGERS),
  },
)


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class TileDesc(OperatorDesc):
  """`DML_TILE_OPERATOR_DESC`.

  Attributes:
    input_tensor: InputTensor.
    repeats: Repeats, one count >= 1 per dimension of the input.
    output_tensor: OutputTensor; None infers it (the input's sizes times the
      repeats, the input's data type).
    repeats_count: RepeatsCount; None means len(repeats).

  Examples:
    >>> desc = TileDesc(TensorDesc("FLOAT32", (1, 1, 2, 3)), repeats=(1, 1, 3, 3))
    >>> desc
    TileDesc(input_tensor=TensorDesc("FLOAT32", (1, 1, 2, 3)), repeats=(1, 1, 3, 3))
    >>> print(desc)
    DML_OPERATOR_TILE(InputTensor=FLOAT32[1,1,2,3], Repeats={1,1,3,3}, RepeatsCount=4) -> FLOAT32[1,1,6,9]
  """

  OPERATOR = "TILE"
  SUPPORT = _SUPPORT
  FUNCTION = "tile"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  repeats: tuple[int, ...] = dml_field("Repeats", FieldKind.UINT_ARRAY)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )
  repeats_count: int = dml_field("RepeatsCount", FieldKind.UINT, count_of="repeats")

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      repeats: Iterable[SupportsIndex],
      output_tensor: TensorDesc | None = None,
      repeats_count: SupportsIndex | None = None,
    ) -> None: ...

  def infer_output(self) -> TensorDesc | None:
    sizes = self.input_tensor.sizes
    if len(self.repeats) != len(sizes):
      return None
    tiled = tuple(s * r for s, r in zip(sizes, self.repeats, strict=True))
    return TensorDesc(self.input_tensor.data_type, tiled)

  def check_rules(self, check: Checker) -> None:
    n = self.input_tensor.dimension_count
    rules.check_count(check, "RepeatsCount", self.repeats_count, "Repeats", len(self.repeats))
    check.expect(
      len(self.repeats) == n,
      "Repeats",
      f"must hold one count per dimension of InputTensor (DimensionCount {n});"
      f" DirectML does not broadcast a shorter Repeats",
      self.repeats,
      hint="pad Repeats with leading 1s" if len(self.repeats) < n else None,
    )
    check.expect(
      all(r >= 1 for r in self.repeats),
      "Repeats",
      "every count must be >= 1 (DirectML has no empty tensors)",
      self.repeats,
    )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return f"must be InputTensor.Sizes times Repeats: {braced(expected)}"

  def lower(self, input: jax.Array) -> jax.Array:
    return kernels.lower(KERNELS, self.repeats, self._copies, input)

  def _copies(self, input: jax.Array) -> jax.Array:
    # Each dimension i becomes (Repeats[i], Sizes[i]), the copies outermost: one broadcast
    # and one reshape, which XLA fuses into a single copy loop.
    sizes, repeats = input.shape, self.repeats
    interleaved = tuple(n for pair in zip(repeats, sizes, strict=True) for n in pair)
    copies = lax.broadcast_in_dim(input, interleaved, tuple(range(1, 2 * len(sizes), 2)))
    return copies.reshape(tuple(s * r for s, r in zip(sizes, repeats, strict=True)))

  def explain_output(self) -> list[str]:
    sizes, repeats = self.input_tensor.sizes, self.repeats
    if len(repeats) != len(sizes):
      return [
        f"Repeats has {len(repeats)} count(s) for {len(sizes)} dimension(s): no output can be"
        f" inferred (DirectML needs one count per dimension)."
      ]
    products = ", ".join(f"{s} x {r}" for s, r in zip(sizes, repeats, strict=True))
    tiled = tuple(s * r for s, r in zip(sizes, repeats, strict=True))
    return [
      f"OutputTensor.Sizes[i] = InputTensor.Sizes[i] x Repeats[i] = {products}: {braced(tiled)}.",
      f"out[o] = InputTensor[o mod {braced(sizes)}], element-wise: the input is copied"
      f" {'x'.join(map(str, repeats))} times, copies in row-major order.",
      f"OutputTensor.DataType = InputTensor.DataType = {self.input_tensor.data_type}.",
    ]


def tile(
  input: ArrayLike, *, repeats: Sequence[int], feature_level: FeatureLevelLike = None
) -> jax.Array:
  """DML_OPERATOR_TILE: repeats `input` `repeats[i]` times along each dimension i.

  ``out[o] = input[o mod input.shape]``; the output's shape is
  ``input.shape[i] * repeats[i]``.

  `repeats` and `input` of different ranks read as ``jnp.tile`` reads them: fewer
  repeats than dimensions apply to the last dimensions, more promote `input` with
  leading 1s. DirectML's descriptor underneath has one count per dimension, padded
  with 1s (and the input with leading 1s up to the rank the feature level needs).
  Unlike ``jnp.tile``, each count must be at least 1.

  See also: `join` (different tensors end to end along one axis), ``jnp.tile``.

  Args:
    input: InputTensor.
    repeats: Repeats, counts >= 1 for the last dimensions (or more: see above).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer repeats or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> tile(np.array([[1, 2], [3, 4]], np.int8), repeats=(1, 2))
    Array([[1, 2, 1, 2],
           [3, 4, 3, 4]], dtype=int8)
    >>> tile(np.array([1, 2], np.int8), repeats=(2, 2))  # promoted to (1, 2), as jnp.tile
    Array([[1, 2, 1, 2],
           [1, 2, 1, 2]], dtype=int8)
  """
  (input,), types = arguments.tensor_operands(TileDesc, input)
  level = as_level(feature_level)
  return _tile((level, types, as_int_tuple(repeats, "Repeats")), input)


def _describe_tile(
  types: tuple[DataType, ...], shapes: tuple[tuple[int, ...], ...], repeats: tuple[int, ...]
) -> TileDesc:
  return TileDesc(TensorDesc(types[0], shapes[0]), repeats=repeats)


_tile = dispatch.operator_function(
  _describe_tile,
  TileDesc,
  natural.PerDimension(names=("repeats",), neutral=((0, 1),), trailing=True),
  moves_bits=True,
)


# -- kernels ---------------------------------------------------------------------------------
# `fields`: the repeats. The operand: the input.


def _repeats_roles(repeats: tuple[int, ...], config: Any, x: Shaped) -> Roles:
  """Dimensions repeated once pass through; the repeated ones are needed whole."""
  ins = [f"p{d}" if r == 1 else f"i{d}" for d, r in enumerate(repeats)]
  outs = [f"p{d}" if r == 1 else f"o{d}" for d, r in enumerate(repeats)]
  whole = tuple(f for f in ins + outs if not f.startswith("p"))
  return Roles(f"{dims(ins)} -> {dims(outs)}", whole=whole)


def _rows_roles(repeats: tuple[int, ...], config: Any, x: Shaped) -> Roles:
  """As `_repeats_roles`, where the shards still have the kernel's view."""
  fits = lambda x: tile_rows_triton.view(x.shape, repeats) is not None  # noqa: E731
  return dataclasses.replace(_repeats_roles(repeats, config, x), fits=fits)


KERNELS = (
  kernels.Kernel(
    "tile_copies_triton",
    "cuda",
    applies=lambda repeats, config, x: tile_copies_triton.applies(
      x.shape, repeats, x.dtype, config
    ),
    roles=_repeats_roles,
    call=lambda repeats, config, interpret, x: functools.partial(
      tile_copies_triton.tile_copies, repeats=repeats, config=config, interpret=interpret
    ),
  ),
  kernels.Kernel(
    "tile_rows_triton",
    "cuda",
    applies=lambda repeats, config, x: tile_rows_triton.applies(x.shape, repeats, x.dtype, config),
    roles=_rows_roles,
    call=lambda repeats, config, interpret, x: functools.partial(
      tile_rows_triton.tile_rows, repeats=repeats, config=config, interpret=interpret
    ),
  ),
  kernels.Kernel(
    "tile_rows_cpu",
    "cpu",
    applies=lambda repeats, config, x: tile_rows_cpu.applies(x.shape, repeats, x.dtype, config),
    roles=_repeats_roles,
    call=lambda repeats, config, interpret, x: functools.partial(
      tile_rows_cpu.tile_rows, repeats=repeats
    ),
    native="tile_rows.cc",
  ),
)
"""TILE's kernels (`kernels.forms` chooses the first that applies on each platform). On CUDA
GPUs: the read-once copies (one repeated dimension, an input larger than L2), else the row
copies (repeats on the last two dimensions, the rows repeated, an output of 16 MiB or more).
On the CPU: the native row kernel (an output of 16 MiB or more, rows of 1 KiB or more)."""
