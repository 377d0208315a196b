"""DML_OPERATOR_MAX_UNPOOLING: values written into zeros at the flat positions their indices name.

The inverse of max pooling (MAX_POOLING1 and later write the indices it reads). Every
element of InputTensor has an index in IndicesTensor, of the same sizes; the index is a
position in OutputTensor read as one contiguous array in row-major order (the whole
tensor, batch and channel included: what MAX_POOLING1's OutputIndicesTensor and ONNX's
MaxPool give, and what ONNX Runtime's DirectML provider passes through from ONNX
MaxUnpool). Every output element that no index names is zero:

    out = zeros(OutputTensor.Sizes);  flat(out)[indices[u]] = input[u]  for every position u

The output's sizes exist only in OutputTensor, so `MaxUnpoolingDesc` requires it (it is
never inferred) and the functional API takes them as `output_sizes`. DirectML's page asks
only that the output have the input's rank (4) and data type; its sizes are free, and an
index past its element count falls outside.

The two cases the page sets apart:

* an index at or past the output's element count writes nothing (the page says so:
  "out-of-bounds indices yield no write"); IndicesTensor is UINT32 or UINT64, so there is no
  negative index;
* several indices naming one element (overlapping pooling windows give them): DirectML
  leaves the value written undefined; dml_jax keeps the last of them in row-major order of
  IndicesTensor, the scatter policy of SCATTER_ELEMENTS and SCATTER_ND
  (`dml_jax._src.scattering`), the same on every backend. `dml.checked` reports them.

The lowering is one scatter of the flattened input into a flat zero output
(`scattering.scatter`): the winners settled by a scatter-max of positions where XLA's own
order of duplicate writes is open, one scatter in order on the CPU. The gradient with
respect to the input is the output's cotangent read at each winning index (zero for a
losing or dropped one).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, checked, dispatch, natural, registry, scattering
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import DataType
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
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

_FLOATS = (DataType.FLOAT32, DataType.FLOAT16)
_FROM_5_0 = (
  DataType.FLOAT32,
  DataType.FLOAT16,
  DataType.INT64,
  DataType.INT32,
  DataType.INT16,
  DataType.INT8,
  DataType.UINT64,
  DataType.UINT32,
  DataType.UINT16,
  DataType.UINT8,
)


def _table(data_types: tuple[DataType, ...], index_types: tuple[DataType, ...]) -> dict[str, Any]:
  data = support(4, data_types)
  return {"InputTensor": data, "IndicesTensor": support(4, index_types), "OutputTensor": data}


_SUPPORT = SupportTable(
  "MAX_UNPOOLING",
  {
    FeatureLevel.FL_3_0: _table(_FLOATS, (DataType.UINT32,)),
    FeatureLevel.FL_5_0: _table(_FROM_5_0, (DataType.UINT64, DataType.UINT32)),
  },
)


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class MaxUnpoolingDesc(OperatorDesc):
  """`DML_MAX_UNPOOLING_OPERATOR_DESC`: input values written at flat output positions.

  Attributes:
    input_tensor: InputTensor, {Batch, Channel, Height, Width}: the values (a max
      pooling's output).
    indices_tensor: IndicesTensor, the input's sizes: for each value, its position in
      OutputTensor read as one contiguous array (a max pooling's output indices).
    output_tensor: OutputTensor, required: its sizes are held nowhere else. It has the
      input's rank and data type; elements no index names are zero.

  Examples:
    >>> desc = MaxUnpoolingDesc(TensorDesc("FLOAT32", (1, 1, 2, 2)), TensorDesc("UINT32", (1, 1, 2, 2)),
    ...                         TensorDesc("FLOAT32", (1, 1, 4, 4)))
    >>> print(desc)
    DML_OPERATOR_MAX_UNPOOLING(InputTensor=FLOAT32[1,1,2,2], IndicesTensor=UINT32[1,1,2,2]) -> FLOAT32[1,1,4,4]
  """

  OPERATOR = "MAX_UNPOOLING"
  SUPPORT = _SUPPORT
  FUNCTION = "max_unpooling"
  OUT_OF_RANGE_INDICES = (
    "DirectML defines them: an index at or past OutputTensor's element count writes nothing"
    " (nothing is clamped)."
  )

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  indices_tensor: TensorDesc = dml_field("IndicesTensor", FieldKind.TENSOR, index=True)
  output_tensor: TensorDesc = dml_field("OutputTensor", FieldKind.TENSOR, output=True)

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      indices_tensor: TensorDesc,
      output_tensor: TensorDesc,
    ) -> None: ...

  def infer_output(self) -> TensorDesc | None:
    # Only the data type follows from the other fields; the sizes are the given output's.
    return TensorDesc(self.input_tensor.data_type, self.output_tensor.sizes)

  def check_rules(self, check: Checker) -> None:
    data, indices = self.input_tensor, self.indices_tensor
    check.expect(
      indices.sizes == data.sizes,
      "IndicesTensor.Sizes",
      f"must equal InputTensor.Sizes {braced(data.sizes)}: one index per value",
      indices.sizes,
    )

  def lower(self, input: jax.Array, indices: jax.Array) -> jax.Array:
    total = math.prod(self.output_tensor.sizes)
    count = math.prod(input.shape)
    index, keep = scattering.targets(indices.reshape(count), total)
    numbers = lax.ScatterDimensionNumbers(
      update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    report = checked.CHECKED_INDICES.value
    out, loses, winner = scattering.scatter(
      lax.full((total,), 0, input.dtype),
      input.reshape(count),
      index[:, None],
      keep,
      (total,),
      numbers,
      position=None if count == 1 else scattering.flat_positions((count,)),
      winner_shape=(total,),
      winner_dimension_numbers=numbers,
      report=report,
    )
    if report and loses is not None and winner is not None:
      shape = input.shape

      def describe() -> checked.Positions:
        at = lambda flat: [c.reshape(count) for c in _unravel(flat, shape)]  # noqa: E731
        return at(lax.iota(np.int32, count)), [index], at(winner)

      checked.check_unique_targets(self.OPERATOR, loses, describe, field="InputTensor")
    return out.reshape(self.output_tensor.sizes)

  def explain_output(self) -> list[str]:
    data, indices, output = self.input_tensor, self.indices_tensor, self.output_tensor
    total = output.element_count
    return [
      f"out = zeros {braced(output.sizes)} ({total} element(s)); then for every position u of"
      f" InputTensor: flat(out)[IndicesTensor[u]] = InputTensor[u], flat(out) being OutputTensor"
      f" read as one array in row-major order (batch and channel included).",
      f"IndicesTensor.Sizes must equal InputTensor.Sizes {braced(data.sizes)}: one index per"
      f" value ({indices.data_type}, unsigned: no index counts from the end).",
      f"An index at or past {total} writes nothing (DirectML defines this). Where several"
      f" indices name one element DirectML leaves the value undefined; dml_jax keeps the last"
      f" in row-major order of IndicesTensor.",
      f"OutputTensor is required (its sizes are held nowhere else): the input's rank, any"
      f" sizes; OutputTensor.DataType = InputTensor.DataType = {data.data_type}.",
    ]


def _unravel(flat: jax.Array, shape: Sequence[int]) -> list[jax.Array]:
  """The row-major coordinates in `shape` of flat positions (int32)."""
  flat = lax.convert_element_type(flat, np.int32)
  coordinates = []
  for size in reversed(shape):
    coordinates.append(lax.rem(flat, np.int32(size)))
    flat = lax.div(flat, np.int32(size))
  return coordinates[::-1]


def max_unpooling(
  input: ArrayLike,
  indices: ArrayLike,
  *,
  output_sizes: Iterable[int],
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_MAX_UNPOOLING: `input` written into zeros of `output_sizes` at `indices`.

  ``flat(out)[indices[u]] = input[u]`` for every position ``u``, ``flat(out)`` being the
  output read as one array in row-major order, batch and channel included (ONNX
  MaxUnpool's indices, MAX_POOLING1's output indices); every other element is zero.
  `input` and `indices` are 4-D {Batch, Channel, Height, Width} of one shape; the
  output has `output_sizes` (4 sizes) and the input's dtype. Arrays and sizes of fewer
  dimensions read as DirectML's with leading 1s (which change no flat position), and the
  result has the rank of `output_sizes`.

  An index at or past the output's element count writes nothing (DirectML defines
  this). Where several indices name one element DirectML leaves the value undefined;
  dml_jax keeps the last of them in row-major order of `indices`, on every backend
  (`dml.checked` reports them instead).

  Unlike ``torch.nn.functional.max_unpool2d``: the indices count over the whole output,
  not within each {Height, Width} plane; the output's sizes are given, not computed
  from a kernel, a stride and padding; an index out of range writes nothing rather
  than failing; and the indices are unsigned (UINT32, or UINT64 from FL 5_0).

  Args:
    input: InputTensor, 4-D (or fewer dimensions: leading 1s).
    indices: IndicesTensor, the input's shape (uint32, or uint64 from FL 5_0).
    output_sizes: OutputTensor.Sizes, 4 sizes (or fewer: leading 1s).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer indices or sizes, or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> values = np.array([[[[7, 7], [9, 8]]]], np.float32)
    >>> indices = np.array([[[[2, 2], [4, 7]]]], np.uint32)
    >>> max_unpooling(values, indices, output_sizes=(1, 1, 2, 4))
    Array([[[[0., 0., 7., 0.],
             [9., 0., 0., 8.]]]], dtype=float32)
    >>> max_unpooling(np.array([5, 6], np.int8), np.array([3, 0], np.uint32), output_sizes=(5,))
    Array([6, 0, 0, 5, 0], dtype=int8)
  """
  (input, indices), types = arguments.tensor_operands(MaxUnpoolingDesc, input, indices)
  level = as_level(feature_level)
  sizes = as_int_tuple(output_sizes, "output_sizes")
  return _max_unpooling((level, types, sizes), input, indices)


def _describe_max_unpooling(
  types: tuple[DataType, ...], shapes: tuple[tuple[int, ...], ...], output_sizes: tuple[int, ...]
) -> MaxUnpoolingDesc:
  input, indices = map(TensorDesc, types, shapes)
  return MaxUnpoolingDesc(input, indices, TensorDesc(types[0], output_sizes))


# `input`, `indices` and `output_sizes` of fewer dimensions than the level takes read padded
# with leading 1s (which move no flat position), the result cut back.
_max_unpooling = dispatch.operator_function(
  _describe_max_unpooling,
  MaxUnpoolingDesc,
  natural.Ranks(names=("output_sizes",), sized=(0,)),
  moves_bits=True,
)
