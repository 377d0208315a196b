"""DML_OPERATOR_NONZERO_COORDINATES: the count and the coordinates of the nonzero elements.

OutputCountTensor (UINT32, every size 1) holds K, the number of nonzero elements
(-0.0 counts as zero; a NaN is nonzero). OutputCoordinatesTensor (UINT32, sizes
{1, .., 1, M, N} with M the input's element count) holds in row k < K the
coordinates of the k-th nonzero element in row-major order, its last N dimensions'
coordinates: N runs from the input's effective rank (its DimensionCount without
leading 1s) to its DimensionCount, and coordinates of leading dimensions of size 1
are 0. DirectML leaves rows K to M - 1 undefined; dml_jax fills them with 0.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, natural, registry
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
from dml_jax._src.integers import as_int
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

_UINT32 = (DataType.UINT32,)

_SUPPORT = SupportTable(
  "NONZERO_COORDINATES",
  {
    FeatureLevel.FL_3_0: {
      "InputTensor": support((4, 5), UP_TO_32_BIT),
      "OutputCountTensor": support((4, 5), _UINT32),
      "OutputCoordinatesTensor": support((4, 5), _UINT32),
    },
    FeatureLevel.FL_4_0: {
      "InputTensor": support((1, 8), UP_TO_32_BIT),
      "OutputCountTensor": support((1, 8), _UINT32),
      "OutputCoordinatesTensor": support((2, 8), _UINT32),
    },
  },
)


def effective_rank(sizes: tuple[int, ...]) -> int:
  """DimensionCount without the leading dimensions of size 1 ({1,2,3,4}: 3; {1,1}: 0)."""
  leading = 0
  for size in sizes:
    if size != 1:
      break
    leading += 1
  return len(sizes) - leading


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class NonzeroCoordinatesDesc(OperatorDesc):
  """`DML_NONZERO_COORDINATES_OPERATOR_DESC`.

  Attributes:
    input_tensor: InputTensor.
    output_count_tensor: OutputCountTensor, required: UINT32, every size 1.
    output_coordinates_tensor: OutputCoordinatesTensor, required: UINT32 {1, .., M, N},
      M the input's element count, N from its effective rank to its DimensionCount.

  Examples:
    >>> desc = NonzeroCoordinatesDesc(TensorDesc("FLOAT32", (1, 1, 2, 4)),
    ...     TensorDesc("UINT32", (1, 1, 1, 1)), TensorDesc("UINT32", (1, 1, 8, 3)))
    >>> print(desc)
    DML_OPERATOR_NONZERO_COORDINATES(InputTensor=FLOAT32[1,1,2,4]) -> (UINT32[1,1,1,1], UINT32[1,1,8,3])
  """

  OPERATOR = "NONZERO_COORDINATES"
  SUPPORT = _SUPPORT
  FUNCTION = "nonzero_coordinates"
  OUTPUT_DATA_TYPE_FROM = "OutputCountTensor"  # both UINT32, whatever the input's type
  OUTPUT_RANKS_FOLLOW_INPUT = False  # from FL 4_0 the ranks differ (see check_rules)

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  output_count_tensor: TensorDesc = dml_field("OutputCountTensor", FieldKind.TENSOR, output=True)
  output_coordinates_tensor: TensorDesc = dml_field(
    "OutputCoordinatesTensor", FieldKind.TENSOR, output=True
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      output_count_tensor: TensorDesc,
      output_coordinates_tensor: TensorDesc,
    ) -> None: ...

  @property
  def coordinate_size(self) -> int:
    """N, the coordinates' length: OutputCoordinatesTensor.Sizes' last."""
    return self.output_coordinates_tensor.sizes[-1]

  def infer_outputs(self) -> tuple[TensorDesc | None, ...] | None:
    # The ranks and N are the given outputs' (the rules bound them); the rest follows.
    count_rank = self.output_count_tensor.dimension_count
    coordinates_rank = max(self.output_coordinates_tensor.dimension_count, 2)
    m = self.input_tensor.element_count
    coordinates = (1,) * (coordinates_rank - 2) + (m, self.coordinate_size)
    return (
      TensorDesc(DataType.UINT32, (1,) * count_rank),
      TensorDesc(DataType.UINT32, coordinates),
    )

  def check_rules(self, check: Checker) -> None:
    data, count, coordinates = (
      self.input_tensor,
      self.output_count_tensor,
      self.output_coordinates_tensor,
    )
    if FeatureLevel.from_any(check.feature_level) < FeatureLevel.FL_4_0:
      for name, tensor in (("OutputCountTensor", count), ("OutputCoordinatesTensor", coordinates)):
        check.expect(
          tensor.dimension_count == data.dimension_count,
          f"{name}.DimensionCount",
          f"must equal InputTensor.DimensionCount ({data.dimension_count}) below FL 4_0",
          tensor.dimension_count,
        )
    n, low, high = self.coordinate_size, effective_rank(data.sizes), data.dimension_count
    check.expect(
      low <= n <= high,
      "OutputCoordinatesTensor.Sizes",
      f"must end in N, from InputTensor's effective rank ({low}) to its DimensionCount"
      f" ({high}): one coordinate per input dimension, leading 1s optional",
      coordinates.sizes,
    )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    if len(expected) == self.output_count_tensor.dimension_count and set(expected) == {1}:
      return f"must be all 1s (a scalar): {braced(expected)}"
    return (
      f"must be {{1,..,1,M,N}} with M = InputTensor's element count"
      f" ({self.input_tensor.element_count}): {braced(expected)}"
    )

  def lower(self, input: jax.Array) -> tuple[jax.Array, jax.Array]:
    count_sizes = self.output_count_tensor.sizes
    coordinates_sizes = self.output_coordinates_tensor.sizes
    return nonzero(input, self.coordinate_size, count_sizes, coordinates_sizes)

  def explain_output(self) -> list[str]:
    data, n = self.input_tensor, self.coordinate_size
    m = data.element_count
    return [
      f"OutputCountTensor = K, the number of nonzero elements of InputTensor (-0.0 is zero;"
      f" NaN is nonzero), a UINT32 of sizes {braced(self.output_count_tensor.sizes)}.",
      f"OutputCoordinatesTensor {braced(self.output_coordinates_tensor.sizes)}: M = {m} rows"
      f" (every element could be nonzero) of N = {n} coordinates; row k < K holds the"
      f" coordinates of the k-th nonzero element in row-major order (its last {n}"
      " dimensions'; those of leading dimensions of size 1 are 0).",
      "Rows K to M - 1: DirectML leaves them undefined; dml_jax writes 0.",
    ]


def nonzero(
  x: jax.Array,
  n: int,
  count_sizes: tuple[int, ...],
  coordinates_sizes: tuple[int, ...],
) -> tuple[jax.Array, jax.Array]:
  """(count, coordinates): the lowering.

  A running count numbers the nonzero elements; one scatter writes, at row k, 1 + the flat
  position of the k-th (a maximum over distinct targets, which XLA partitions as a local
  scatter and one all-reduce, as jnp.nonzero's scatter-add: no more communication on sharded
  inputs); the rows left 0 are past the count, which is their number; each coordinate is then
  read from an iota over the input's shape at that position.
  """
  shape = x.shape
  m = math.prod(shape)
  flat = x.reshape(m)
  if np.dtype(x.dtype).kind == "f":  # -0.0 is zero: compare the bits without the sign
    width = np.dtype(x.dtype).itemsize * 8
    unsigned = np.dtype(f"uint{width}")
    magnitude = lax.bitcast_convert_type(flat, unsigned) & unsigned.type((1 << (width - 1)) - 1)
    nonzero_ = magnitude != unsigned.type(0)
  else:
    nonzero_ = flat != np.zeros((), x.dtype)
  one = np.uint32(1)
  running = lax.cumsum(nonzero_.astype(np.uint32))  # 1-based rank of each nonzero element
  target = lax.select(nonzero_, running - one, lax.full_like(running, m))  # m: dropped
  positions = lax.iota(np.uint32, m) + one  # M <= 2**32 - 1: fits
  found = jnp.zeros((m,), np.uint32).at[target].max(positions, mode="drop")
  filled = found != np.uint32(0)
  count = jnp.sum(filled.astype(np.uint32), dtype=np.uint32)
  where = lax.select(filled, found - one, jnp.zeros_like(found))  # past the count: element 0
  rank = len(shape)
  columns = []
  for j in range(n):
    d = rank - n + j
    if d < 0:  # a dimension before the input's: coordinate 0
      columns.append(lax.full((m, 1), 0, np.uint32))
    else:
      along = lax.broadcasted_iota(np.uint32, shape, d).reshape(m)
      columns.append(along[where].reshape(m, 1))
  rows = lax.concatenate(columns, 1) if n > 1 else columns[0]
  # Rows past the count read element 0, whose coordinates are all 0: the documented fill.
  return count.reshape(count_sizes), rows.reshape(coordinates_sizes)


def nonzero_coordinates(
  input: ArrayLike, *, coordinate_size: int | None = None, feature_level: FeatureLevelLike = None
) -> tuple[jax.Array, jax.Array]:
  """DML_OPERATOR_NONZERO_COORDINATES: (count, coordinates) of the nonzero elements.

  `count` is a uint32 of shape (1,) * input.ndim holding K, the number of nonzero
  elements (-0.0 is zero, NaN nonzero). `coordinates` is uint32 of shape
  (1, .., 1, M, N) (input.ndim dimensions, at least 2), M = input.size: row k < K holds
  the k-th nonzero element's coordinates in row-major order; rows K to M - 1 are 0
  (undefined in DirectML). N (`coordinate_size`, default input.ndim) may be anything
  from the input's effective rank (leading 1s dropped) to input.ndim: the coordinates
  are those of the last N dimensions.

  Unlike ``jnp.nonzero``: shapes are static (M rows, padded with zeros) and the count
  comes with them, so it works under jit; the coordinates are rows, not one array per
  dimension.

  Args:
    input: InputTensor.
    coordinate_size: N, OutputCoordinatesTensor.Sizes' last (default input.ndim).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    (OutputCountTensor, OutputCoordinatesTensor).

  Raises:
    DmlValidationError: if DirectML would reject the operator (an N outside the range,
      a type or rank the level lacks).
    TypeError: for a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> count, coordinates = nonzero_coordinates(np.array([[0, 3], [-0.0, 5]], np.float32))
    >>> count
    Array([[2]], dtype=uint32)
    >>> coordinates
    Array([[0, 1],
           [1, 1],
           [0, 0],
           [0, 0]], dtype=uint32)
  """
  (input,), types = arguments.tensor_operands(NonzeroCoordinatesDesc, input)
  n = None if coordinate_size is None else as_int(coordinate_size, "coordinate_size")
  return _nonzero_coordinates((as_level(feature_level), types, n), input)


def _describe_nonzero_coordinates(
  types: tuple[DataType, ...], shapes: tuple[tuple[int, ...], ...], n: int | None
) -> NonzeroCoordinatesDesc:
  shape = shapes[0]
  rank = len(shape)
  n = rank if n is None else n
  coordinates = (1,) * (rank - 2) + (math.prod(shape), n)
  return NonzeroCoordinatesDesc(
    TensorDesc(types[0], shape),
    TensorDesc(DataType.UINT32, (1,) * rank),
    TensorDesc(DataType.UINT32, coordinates),
  )


# Not padded up to the level's least rank: the outputs have ranks of their own (the count
# the input's, the coordinates at least 2), which one cut cannot restore, and the coordinate
# count follows the input's rank.
_nonzero_coordinates = dispatch.operator_function(
  _describe_nonzero_coordinates,
  NonzeroCoordinatesDesc,
  natural.Ranks(names=("coordinate_size",), to_level=False),
)
