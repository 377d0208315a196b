"""DML_OPERATOR_SCATTER_ELEMENTS (also named DML_OPERATOR_SCATTER): GATHER_ELEMENTS' inverse.

    out = input;  out[u with u[Axis] := indices[u]] = updates[u]  for every position u

InputTensor, IndicesTensor, UpdatesTensor and OutputTensor share one rank; the
indices (and the updates, which have their sizes) match the input's sizes off
Axis; the output has the input's sizes and data type.

DirectML leaves two cases undefined; dml_jax decides them, the same way on every
backend (see `dml_jax._src.scattering`):

* duplicate targets: where several updates write one element, the last of them in
  row-major order of UpdatesTensor wins (what DirectML's own example shows);
* out-of-range targets: after the negative-index rule (signed index types count
  from the end, unsigned ones never wrap; 64-bit indices judged in their own
  width), an index outside [0, size) drops its update: nothing is written for it,
  and it wins no duplicate.

`dml.checked` reports both instead.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any, SupportsIndex

import jax
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import arguments, checked, dispatch, kernels, natural, registry, rules, scattering
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import ALL_DATA, INDEX_TYPES, UP_TO_32_BIT, DataType
from dml_jax._src.errors import Checker
from dml_jax._src.feature_level import (
  FeatureLevel,
  FeatureLevelLike,
  SupportTable,
  as_level,
)
from dml_jax._src.fields import FieldKind, dml_field
from dml_jax._src.integers import as_int
from dml_jax._src.kernels import scatter_elements_rows_mosaic, scatter_elements_rows_triton
from dml_jax._src.kernels.partitioning import Roles, Shaped, dims, factors
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

# The operator exists from FL 2_0 (its enum and the level's release notes say so), although
# its page says 1_0 and heads its first table "1_0 and above": that table applies from 2_0.
_SUPPORT = SupportTable(
  "SCATTER_ELEMENTS",
  {
    FeatureLevel.FL_2_0: scattering.support_rows(
      4, (DataType.FLOAT32, DataType.FLOAT16), (DataType.UINT32,)
    ),
    FeatureLevel.FL_2_1: scattering.support_rows(4, UP_TO_32_BIT, (DataType.UINT32,)),
    FeatureLevel.FL_3_0: scattering.support_rows((1, 8), UP_TO_32_BIT, INDEX_TYPES),
    FeatureLevel.FL_4_1: scattering.support_rows((1, 8), ALL_DATA, INDEX_TYPES),
  },
)


@dataclasses.dataclass(frozen=True, repr=False)
class ScatterElementsDesc(OperatorDesc):
  """`DML_SCATTER_ELEMENTS_OPERATOR_DESC` (= `DML_SCATTER_OPERATOR_DESC`; `ScatterDesc`).

  Attributes:
    input_tensor: InputTensor, the output's initial contents.
    indices_tensor: IndicesTensor, one target index along `axis` per update; the
      input's sizes off `axis`.
    updates_tensor: UpdatesTensor, the values written; the indices' sizes, the
      input's data type.
    axis: Axis, in [0, DimensionCount).
    output_tensor: OutputTensor; None infers it (the input's sizes and data type).

  Examples:
    >>> desc = ScatterElementsDesc(TensorDesc("FLOAT32", (3, 3)), TensorDesc("UINT32", (2, 3)),
    ...                            TensorDesc("FLOAT32", (2, 3)), axis=0)
    >>> print(desc)
    DML_OPERATOR_SCATTER_ELEMENTS(InputTensor=FLOAT32[3,3], IndicesTensor=UINT32[2,3], UpdatesTensor=FLOAT32[2,3], Axis=0) -> FLOAT32[3,3]
    >>> ScatterDesc is ScatterElementsDesc
    True
  """

  OPERATOR = "SCATTER_ELEMENTS"
  SUPPORT = _SUPPORT
  FUNCTION = "scatter_elements"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  indices_tensor: TensorDesc = dml_field("IndicesTensor", FieldKind.TENSOR, index=True)
  updates_tensor: TensorDesc = dml_field("UpdatesTensor", FieldKind.TENSOR)
  axis: int = dml_field("Axis", FieldKind.UINT)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      indices_tensor: TensorDesc,
      updates_tensor: TensorDesc,
      axis: SupportsIndex,
      output_tensor: TensorDesc | None = None,
    ) -> None: ...

  def infer_output(self) -> TensorDesc | None:
    return TensorDesc(self.input_tensor.data_type, self.input_tensor.sizes)

  def check_rules(self, check: Checker) -> None:
    data, indices, updates = self.input_tensor, self.indices_tensor, self.updates_tensor
    check.expect(
      updates.data_type == data.data_type,
      "UpdatesTensor.DataType",
      f"must equal InputTensor.DataType ({data.data_type}); SCATTER never converts types",
      updates.data_type,
    )
    axis_ok = rules.check_axis(check, "Axis", self.axis, data.dimension_count)
    rank_ok = rules.check_same_rank(
      check, ("InputTensor", data), ("IndicesTensor", indices), ("UpdatesTensor", updates)
    )
    if not rank_ok:
      return
    check.expect(
      updates.sizes == indices.sizes,
      "UpdatesTensor.Sizes",
      f"must equal IndicesTensor.Sizes {braced(indices.sizes)}: one update per index",
      updates.sizes,
    )
    if axis_ok:
      rules.check_sizes_off_axis(
        check, "IndicesTensor.Sizes", indices.sizes, ("InputTensor.Sizes", data.sizes), self.axis
      )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return f"must equal InputTensor.Sizes {braced(expected)}"

  def lower(self, input: jax.Array, indices: jax.Array, updates: jax.Array) -> jax.Array:
    axis, size = self.axis, self.input_tensor.sizes[self.axis]
    checked.check_indices(self.OPERATOR, indices, size, axis)
    if checked.CHECKED_INDICES.value:  # the lax form, which also reports duplicate targets
      return self._scatter(input, indices, updates, report=True)
    return kernels.lower(KERNELS, axis, self._scatter, input, indices, updates)

  def _scatter(
    self, input: jax.Array, indices: jax.Array, updates: jax.Array, *, report: bool = False
  ) -> jax.Array:
    """The lax form: winners settled by a scatter-max of positions (`scattering`)."""
    axis, size = self.axis, self.input_tensor.sizes[self.axis]
    index, keep = scattering.targets(indices, size)
    batch = tuple(d for d in range(input.ndim) if d != axis)
    numbers = lax.ScatterDimensionNumbers(
      update_window_dims=(),
      inserted_window_dims=(axis,),
      scatter_dims_to_operand_dims=(axis,),
      operand_batching_dims=batch,
      scatter_indices_batching_dims=batch,
    )
    # Two updates can share a target only within a lane along Axis, where row-major order is
    # the order along Axis: an update's coordinate there is its position (none for one a lane).
    count = indices.shape[axis]
    position = (
      None
      if count == 1
      else lax.broadcasted_iota(scattering.position_dtype(count), indices.shape, axis)
    )
    out, loses, winner = scattering.scatter(
      input,
      updates,
      index[..., None],
      keep,
      (size,),
      numbers,
      position=position,
      winner_shape=input.shape,
      winner_dimension_numbers=numbers,
      report=report,
    )
    if report and loses is not None:

      def describe() -> checked.Positions:
        coordinates = [lax.broadcasted_iota(np.int32, indices.shape, d) for d in range(input.ndim)]
        at = lambda d, value: [value if k == d else c for k, c in enumerate(coordinates)]
        return coordinates, at(axis, index), at(axis, winner)

      checked.check_unique_targets(self.OPERATOR, loses, describe)
    return out

  def explain_output(self) -> list[str]:
    data, indices, updates, axis = (
      self.input_tensor,
      self.indices_tensor,
      self.updates_tensor,
      self.axis,
    )
    lines = [
      f"out = InputTensor; then for every position u of UpdatesTensor: out[u with u[{axis}] :="
      f" IndicesTensor[u]] = UpdatesTensor[u]: each update is written into its own lane along"
      f" Axis {axis}.",
      f"OutputTensor.Sizes = InputTensor.Sizes = {braced(data.sizes)}; OutputTensor.DataType ="
      f" InputTensor.DataType = {data.data_type} (UpdatesTensor must have it too, not the"
      f" index type {indices.data_type}).",
      f"UpdatesTensor.Sizes must equal IndicesTensor.Sizes {braced(indices.sizes)}: one update"
      f" per index (found {braced(updates.sizes)}).",
    ]
    if 0 <= axis < data.dimension_count == indices.dimension_count:
      lines.append(
        f"IndicesTensor.Sizes must equal InputTensor.Sizes {braced(data.sizes)} off Axis {axis};"
        f" on Axis {axis} it is free: {indices.sizes[axis]} update(s) per lane of"
        f" {data.sizes[axis]} element(s)."
      )
    lines.append(
      "DirectML leaves duplicate and out-of-range targets undefined; dml_jax keeps the last"
      " update in row-major order of UpdatesTensor, and drops an update whose index is out"
      " of range after the negative-index rule."
    )
    return lines


registry.register(ScatterElementsDesc, aliases=("SCATTER",), model_file_name="SCATTER")

ScatterDesc = ScatterElementsDesc
"""`DML_SCATTER_OPERATOR_DESC`: DirectML's older name of the same struct and operator."""


def scatter_elements(
  input: ArrayLike,
  indices: ArrayLike,
  updates: ArrayLike,
  *,
  axis: int,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_SCATTER_ELEMENTS (= DML_OPERATOR_SCATTER): writes updates along `axis`.

  ``out = input; out[u with u[axis] := indices[u]] = updates[u]`` for every
  position ``u`` of `updates`. `input`, `indices` and `updates` have one rank;
  `indices` matches the input's sizes off `axis`, `updates` has the indices'
  sizes and the input's dtype; the output has the input's shape and dtype.

  Where DirectML leaves the result undefined, dml_jax decides, on every backend
  alike: of several updates that write one element, the last in row-major order
  of `updates` wins; an index out of range after the negative-index rule drops
  its update (nothing is written for it). `dml.checked` reports both instead.

  Unlike ``x.at[...].set`` (or ``torch.scatter``): duplicate targets have a
  defined winner; out-of-range indices are dropped rather than clamped or
  wrapped, and negative ones count from the end only for signed index types;
  no broadcasting, and no dtype conversion of `updates`.

  Args:
    input: InputTensor.
    indices: IndicesTensor (int32, int64, uint32 or uint64).
    updates: UpdatesTensor.
    axis: Axis, in [-n, n) for the common rank n (negative: from the end).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer indices or axis, or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> x = np.arange(5, dtype=np.float32)
    >>> scatter_elements(x, np.array([3, 1, 3, 0], np.uint32),
    ...                  np.array([5, 6, 7, 8], np.float32), axis=0)
    Array([8., 6., 2., 7., 4.], dtype=float32)
  """
  (input, indices, updates), types = arguments.tensor_operands(
    ScatterElementsDesc, input, indices, updates
  )
  level = as_level(feature_level)
  return _scatter_elements((level, types, as_int(axis, "Axis")), input, indices, updates)


def _describe_scatter_elements(
  types: tuple[DataType, ...], shapes: tuple[tuple[int, ...], ...], axis: int
) -> ScatterElementsDesc:
  input, indices, updates = map(TensorDesc, types, shapes)
  return ScatterElementsDesc(input, indices, updates, axis=axis)


_scatter_elements = dispatch.operator_function(
  _describe_scatter_elements,
  ScatterElementsDesc,
  natural.Ranks(names=("axis",), axes=((0, None),)),
  moves_bits=True,
)


# -- kernels ---------------------------------------------------------------------------------
# `fields`: the axis. The operands: the input, the raw indices and the updates; the gradient,
# with respect to the input and the updates, is the lax form's.


def _rows_roles(axis: int, config: Any, x: Shaped, i: Shaped, u: Shaped) -> Roles:
  """Along the last axis: the leading dimensions pass through; the rows and the updates of a
  row are needed whole."""
  lead = factors("l", x.ndim - 1)
  return Roles(
    f"{dims(lead, 'w')}, {dims(lead, 'c')}, {dims(lead, 'c')} -> {dims(lead, 'w')}",
    whole=("w", "c"),
  )


KERNELS = (
  kernels.Kernel(
    "scatter_elements_rows_mosaic",
    "cuda",
    applies=lambda axis, config, x, i, u: scatter_elements_rows_mosaic.applies(
      x.shape, i.shape, x.dtype, i.dtype, axis, config
    ),
    roles=_rows_roles,
    call=lambda axis, config, interpret, x, i, u: functools.partial(
      scatter_elements_rows_mosaic.scatter_rows, config=config
    ),
  ),
  kernels.Kernel(
    "scatter_elements_rows_triton",
    "cuda",
    applies=lambda axis, config, x, i, u: scatter_elements_rows_triton.applies(
      x.shape, i.shape, x.dtype, i.dtype, axis, config
    ),
    roles=_rows_roles,
    call=lambda axis, config, interpret, x, i, u: functools.partial(
      scatter_elements_rows_triton.scatter_rows, config=config, interpret=interpret
    ),
  ),
)
"""SCATTER_ELEMENTS's kernels along the last axis (`kernels.forms` chooses the first that
applies): each row's winners settled by shared-memory atomics (GPUs with TMA, rows that fit
shared memory, any data type), else by atomics in a scratch row in L2 (32-bit data and
indices)."""
