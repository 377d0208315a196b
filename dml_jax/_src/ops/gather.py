"""DML_OPERATOR_GATHER: whole slices of the input picked along one axis by an index tensor.

With q = IndexDimensions, the logical indices J = IndicesTensor.Sizes[n - q:] (the leading
n - q sizes are padding and must be 1), and the input's sizes split around Axis as
A ++ {S} ++ B:

    out[a, j, b] = input[a, indices[j], b]

The logical output A ++ J ++ B has n - 1 + q dimensions. It is right-aligned into the common
rank n: one leading 1 is added for q = 0, and for q >= 2 its first q - 1 entries are cropped,
which is only allowed where they are 1.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, SupportsIndex

import jax
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, checked, dispatch, indexing, kernels, natural, registry, rules
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import ALL_DATA, INDEX_TYPES, UP_TO_32_BIT, DataType
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
from dml_jax._src.ops import gather_nd
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

_FLOAT_16_32 = (DataType.FLOAT32, DataType.FLOAT16)
_SUPPORT = SupportTable(
  "GATHER",
  {
    FeatureLevel.FL_1_0: {
      "InputTensor": support(4, _FLOAT_16_32),
      "IndicesTensor": support(4, (DataType.UINT32,)),
      "OutputTensor": support(4, _FLOAT_16_32),
    },
    FeatureLevel.FL_2_1: {
      "InputTensor": support(4, UP_TO_32_BIT),
      "IndicesTensor": support(4, (DataType.UINT32,)),
      "OutputTensor": support(4, UP_TO_32_BIT),
    },
    FeatureLevel.FL_3_0: {
      "InputTensor": support((1, 8), UP_TO_32_BIT),
      "IndicesTensor": support((1, 8), INDEX_TYPES),
      "OutputTensor": support((1, 8), UP_TO_32_BIT),
    },
    FeatureLevel.FL_4_1: {
      "InputTensor": support((1, 8), ALL_DATA),
      "IndicesTensor": support((1, 8), INDEX_TYPES),
      "OutputTensor": support((1, 8), ALL_DATA),
    },
  },
)


def _indices_rank(desc: GatherDesc) -> int:
  """IndexDimensions left as None: every dimension of the indices is meaningful."""
  return desc.indices_tensor.dimension_count


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class GatherDesc(OperatorDesc):
  """`DML_GATHER_OPERATOR_DESC` (from FL 1_0).

  Attributes:
    input_tensor: InputTensor, the data to read.
    indices_tensor: IndicesTensor; its trailing IndexDimensions sizes are the logical
      indices, the sizes before them must be 1.
    axis: Axis, the input dimension the indices select along, in [0, DimensionCount).
    index_dimensions: IndexDimensions, in [0, DimensionCount]; None means the indices'
      DimensionCount.
    output_tensor: OutputTensor; None infers it (the logical output
      InputTensor.Sizes[:Axis] ++ J ++ InputTensor.Sizes[Axis + 1:], right-aligned, with the
      input's data type).

  Examples:
    >>> desc = GatherDesc(TensorDesc("FLOAT32", (1, 3, 2)), TensorDesc("UINT32", (1, 2, 2)),
    ...                   axis=1, index_dimensions=2)
    >>> desc
    GatherDesc(input_tensor=TensorDesc("FLOAT32", (1, 3, 2)), indices_tensor=TensorDesc("UINT32", (1, 2, 2)), axis=1, index_dimensions=2)
    >>> print(desc)
    DML_OPERATOR_GATHER(InputTensor=FLOAT32[1,3,2], IndicesTensor=UINT32[1,2,2], Axis=1, IndexDimensions=2) -> FLOAT32[2,2,2]
  """

  OPERATOR = "GATHER"
  SUPPORT = _SUPPORT
  FUNCTION = "gather"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  indices_tensor: TensorDesc = dml_field("IndicesTensor", FieldKind.TENSOR, index=True)
  axis: int = dml_field("Axis", FieldKind.UINT)
  index_dimensions: int = dml_field("IndexDimensions", FieldKind.UINT, derive=_indices_rank)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      indices_tensor: TensorDesc,
      axis: SupportsIndex,
      index_dimensions: SupportsIndex | None = None,
      output_tensor: TensorDesc | None = None,
    ) -> None: ...

  # -- the logical shapes -------------------------------------------------------------------

  def _fits(self) -> bool:
    """Whether the ranks, Axis and IndexDimensions fit, so that the logical shapes exist."""
    n = self.input_tensor.dimension_count
    return (
      self.indices_tensor.dimension_count == n
      and 0 <= self.axis < n
      and 0 <= self.index_dimensions <= n
    )

  def _logical_indices(self) -> tuple[int, ...]:
    """J: the trailing IndexDimensions sizes of the indices."""
    sizes = self.indices_tensor.sizes
    return sizes[len(sizes) - self.index_dimensions :]

  def _logical_output(self) -> tuple[int, ...]:
    """InputTensor.Sizes[:Axis] ++ J ++ InputTensor.Sizes[Axis + 1:] (n - 1 + q sizes)."""
    sizes, axis = self.input_tensor.sizes, self.axis
    return sizes[:axis] + self._logical_indices() + sizes[axis + 1 :]

  def _cropped(self) -> tuple[int, ...]:
    """The leading logical output sizes that right alignment drops (q - 1 of them for q >= 2)."""
    logical = self._logical_output()
    return logical[: max(len(logical) - self.input_tensor.dimension_count, 0)]

  def infer_output(self) -> TensorDesc | None:
    if not self._fits() or any(s != 1 for s in self._cropped()):
      return None
    n, logical = self.input_tensor.dimension_count, self._logical_output()
    aligned = ((1,) * n + logical)[len(logical) :]  # right-aligned: padded, or cropped 1s
    return TensorDesc(self.input_tensor.data_type, aligned)

  # -- validation ------------------------------------------------------------------------

  def check_rules(self, check: Checker) -> None:
    data, indices = self.input_tensor, self.indices_tensor
    n, q = indices.dimension_count, self.index_dimensions
    rank_ok = rules.check_same_rank(check, ("InputTensor", data), ("IndicesTensor", indices))
    axis_ok = rules.check_axis(check, "Axis", self.axis, data.dimension_count)
    count_ok = check.expect(
      0 <= q <= n,
      "IndexDimensions",
      f"must be in [0, IndicesTensor.DimensionCount] = [0, {n}]",
      q,
    )
    if not count_ok:
      return
    check.expect(
      all(s == 1 for s in indices.sizes[: n - q]),
      "IndicesTensor.Sizes",
      f"dimensions before the trailing {q} meaningful ones must be 1",
      indices.sizes,
      hint=(
        "DirectML has been seen to accept such indices with results that differ between"
        f" devices; dml_jax refuses them. Raise IndexDimensions to {n} to index with every"
        " dimension"
      ),
    )
    if not (rank_ok and axis_ok):
      return
    cropped = self._cropped()
    logical = self._logical_output()
    check.expect(
      all(s == 1 for s in cropped),
      "OutputTensor.DimensionCount",
      f"the logical output InputTensor.Sizes[:Axis] ++ IndicesTensor.Sizes[n - IndexDimensions:]"
      f" ++ InputTensor.Sizes[Axis + 1:] = {braced(logical)} has {len(logical)} dimensions;"
      f" right-aligned into DimensionCount {n}, only leading 1s may be cropped, and its first"
      f" {len(cropped)} size(s) must be 1",
      cropped,
      hint=(
        "DirectML has been seen to accept such descriptors, with results that differ between"
        f" devices; dml_jax refuses them. {self._fitting_count_hint()}"
      ),
    )

  def _fitting_count_hint(self) -> str:
    """Which lower IndexDimensions would fit these tensors, if any."""
    for q in range(self.index_dimensions - 1, -1, -1):
      fits = dataclasses.replace(self, index_dimensions=q, output_tensor=None)
      padding = self.indices_tensor.sizes[: self.indices_tensor.dimension_count - q]
      if fits.infer_output() is not None and all(s == 1 for s in padding):
        return f"IndexDimensions {q} fits these tensors"
    return (
      "No lower IndexDimensions fits these tensors: reshape them so that the cropped sizes are 1"
    )

  # -- lowering ---------------------------------------------------------------------------

  def lower(self, input: jax.Array, indices: jax.Array) -> jax.Array:
    sizes, axis = self.input_tensor.sizes, self.axis
    size = sizes[axis]
    checked.check_indices(self.OPERATOR, indices, size, axis)
    before, after = math.prod(sizes[:axis]), math.prod(sizes[axis + 1 :])
    # The leading index dimensions are 1, so the flat indices keep J's row-major order.
    flat = indices.reshape(indices.size)
    if before == 1:
      # Whole rows of `after` elements (an embedding lookup): XLA's gather copies them as
      # rows, and on CUDA GPUs GATHER_ND's row-copy kernel takes them where it applies.
      def rows(table: jax.Array, tuples: jax.Array) -> jax.Array:
        picked = indexing.clamp_indices(tuples.reshape(tuples.shape[:-1]), size)
        return indexing.gather_slices_along_axis(table, picked, 0)

      table = input.reshape(size, after)
      out = kernels.lower(gather_nd.KERNELS, 0, rows, table, flat.reshape(flat.size, 1))
    else:
      out = _gather_middle(input.reshape(before, size, after), indexing.clamp_indices(flat, size))
    return out.reshape(self.output.sizes)

  # -- explanation ------------------------------------------------------------------------

  def explain_output(self) -> list[str]:
    data, indices = self.input_tensor, self.indices_tensor
    n, q, axis = data.dimension_count, self.index_dimensions, self.axis
    lines = [f"n = DimensionCount = {n}; Axis = {axis}; q = IndexDimensions = {q}."]
    if not self._fits():
      return lines + [
        "The ranks, Axis or IndexDimensions do not fit the tensors: no output can be inferred."
      ]
    logical_indices = self._logical_indices()
    padding = f" (the {n - q} leading size(s) before it must be 1)" if n > q else ""
    before, after = data.sizes[:axis], data.sizes[axis + 1 :]
    logical = self._logical_output()
    lines += [
      f"Logical indices J = IndicesTensor.Sizes[n - q:] = {braced(logical_indices)}{padding}:"
      f" {math.prod(logical_indices)} index(es) into InputTensor.Sizes[{axis}] ="
      f" {data.sizes[axis]}.",
      f"Logical output = InputTensor.Sizes[:Axis] ++ J ++ InputTensor.Sizes[Axis + 1:] ="
      f" {braced(before)} ++ {braced(logical_indices)} ++ {braced(after)} = {braced(logical)}"
      f" (n - 1 + q = {len(logical)} dimension(s)).",
    ]
    cropped = self._cropped()
    if any(s != 1 for s in cropped):
      return lines + [
        f"Right-aligning it into n = {n} dimensions would crop {braced(cropped)}, which are"
        " not all 1: no output."
      ]
    output = self.infer_output()
    assert output is not None  # the fields fit and the cropped sizes are 1
    if len(logical) < n:
      how = f"with {n - len(logical)} leading 1(s) added"
    elif cropped:
      how = f"with the leading {len(cropped)} size(s) {braced(cropped)} cropped (all 1)"
    else:
      how = "as it is"
    return lines + [
      f"Right-aligned into n = {n} dimensions {how}: OutputTensor.Sizes = {braced(output.sizes)}.",
      "out[a, j, b] = InputTensor[a, IndicesTensor[j], b] (a: the dimensions before Axis,"
      " j: a logical index position, b: the dimensions after Axis): each index copies a whole"
      f" slice of {math.prod(before) * math.prod(after)} element(s).",
      f"OutputTensor.DataType = InputTensor.DataType = {data.data_type} (not the index type"
      f" {indices.data_type}).",
    ]


def _gather_middle(operand: jax.Array, positions: jax.Array) -> jax.Array:
  """out[p, k, r] = operand[p, positions[k], r] for in-range positions: one lax.gather whose
  slices keep the dimensions before and after the gathered one whole."""
  before, _, after = operand.shape
  dnums = lax.GatherDimensionNumbers(
    offset_dims=(0, 2), collapsed_slice_dims=(1,), start_index_map=(1,)
  )
  return lax.gather(
    operand,
    positions[:, None],
    dnums,
    slice_sizes=(before, 1, after),
    mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS,
  )


def gather(
  input: ArrayLike,
  indices: ArrayLike,
  *,
  axis: int,
  index_dimensions: int | None = None,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_GATHER: whole slices of `input` chosen along `axis` by `indices`.

  ``out[a, j, b] = input[a, indices[j], b]``, where a runs over the dimensions
  before `axis`, b over those after it, and j over the index positions.

  With `index_dimensions` unset the call reads as ``np.take(input, indices,
  axis)`` (ONNX Gather): any ranks, a negative `axis` counted from the end, and the
  shape ``input.shape[:axis] + indices.shape + input.shape[axis + 1:]``. DirectML
  computes it with both arrays padded with leading 1s to rank
  ``input.ndim + indices.ndim - 1`` and IndexDimensions ``indices.ndim``, the
  descriptor `dml.explain` shows; the leading 1s are dropped from the result.

  With `index_dimensions` (q) set the call is DirectML's: the arrays are padded to
  their common rank n, the output has rank n, holding the logical shape
  ``input.shape[:axis] + indices.shape[n - q:] + input.shape[axis + 1:]`` with a
  leading 1 added for q = 0 or its first q - 1 sizes cropped for q >= 2 (they
  must be 1); the leading n - q sizes of `indices` must be 1.

  Unlike ``jnp.take``: negative indices count from the end only for signed index
  types; out-of-range indices are clamped into the input (``jnp.take`` fills them
  by default), and 64-bit indices are clamped before any narrowing.

  Args:
    input: InputTensor.
    indices: IndicesTensor (int32, int64, uint32 or uint64).
    axis: Axis, in [-input.ndim, input.ndim).
    index_dimensions: IndexDimensions, in [0, n] (None: NumPy's reading, above).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer indices, axis or count, or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> x = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    >>> gather(x, np.array([[2, 0]], np.int32), axis=0).shape  # an embedding lookup
    (1, 2, 2)
    >>> gather(x, np.array([[0, 1, 1, 2]], np.uint32), axis=0, index_dimensions=1)
    Array([[1., 2.],
           [3., 4.],
           [3., 4.],
           [5., 6.]], dtype=float32)
    >>> gather(x, np.array([[-1]], np.int32), axis=1, index_dimensions=0)  # a scalar index
    Array([[2., 4., 6.]], dtype=float32)
  """
  (input, indices), types = arguments.tensor_operands(GatherDesc, input, indices)
  q = None if index_dimensions is None else as_int(index_dimensions, "IndexDimensions")
  return _gather((as_level(feature_level), types, as_int(axis, "Axis"), q), input, indices)


def _describe_gather(
  types: tuple[DataType, ...], shapes: tuple[tuple[int, ...], ...], axis: int, q: int | None
) -> GatherDesc:
  return GatherDesc(
    TensorDesc(types[0], shapes[0]), TensorDesc(types[1], shapes[1]), axis=axis, index_dimensions=q
  )


_gather = dispatch.operator_function(
  _describe_gather,
  GatherDesc,
  natural.Take(names=("axis", "index_dimensions"), axes=((0, 0),), count=1),
  moves_bits=True,
)
