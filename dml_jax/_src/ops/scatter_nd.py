"""DML_OPERATOR_SCATTER_ND: writes whole sub-blocks where index tuples say; GATHER_ND's inverse.

With logical shapes I (the trailing InputDimensionCount input sizes), X (the
trailing IndicesDimensionCount indices sizes) and tuples of t = X[-1] coordinates:

    out = input;  out[indices[p, 0], ..., indices[p, t-1], r] = updates[p, r]

for every tuple position p of X[:-1] and every r of I[t:]. UpdatesTensor has the
sizes GATHER_ND would output for the same input and indices: X[:-1] ++ I[t:],
right-aligned into the common rank with leading 1s. The output has the input's
sizes and data type.

DirectML leaves two cases undefined; dml_jax decides them, the same way on every
backend (see `dml_jax._src.scattering`):

* duplicate targets: where several tuples name one sub-block, the last of them in
  row-major order of IndicesTensor (so of UpdatesTensor) wins, element for element;
* out-of-range targets: after the negative-index rule (signed index types count
  from the end, unsigned ones never wrap; 64-bit indices judged in their own
  width), a tuple with a coordinate outside its dimension drops its whole update:
  nothing is written for it, and it wins no duplicate.

`dml.checked` reports both instead.

On CUDA GPUs, tuples that leave whole rows of 256 bytes to 64 KiB (a power-of-two width,
data of 32 bits or narrower) take a Pallas kernel (`kernels.scatter_nd_rows_triton`): a
winner map names each row's last update, then every output row is read once, from that
update or from the input. On the CPU, rows of 1 KiB or more are pulled the same way in lax
(a row gather and a select), narrower ones written by one scatter in order; other
platforms, checked mode and the gradient take the settled lax form. All give the same bits.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from dml_jax._src import (
  arguments,
  checked,
  dispatch,
  indexing,
  kernels,
  natural,
  placement,
  registry,
  rules,
  scattering,
)
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
from dml_jax._src.kernels import _triton, scatter_nd_rows_triton
from dml_jax._src.kernels.partitioning import Roles, Shaped
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

_SUPPORT = SupportTable(
  "SCATTER_ND",
  {
    FeatureLevel.FL_2_1: scattering.support_rows(4, UP_TO_32_BIT, (DataType.UINT32,)),
    FeatureLevel.FL_3_0: scattering.support_rows((1, 8), UP_TO_32_BIT, INDEX_TYPES),
    FeatureLevel.FL_4_1: scattering.support_rows((1, 8), ALL_DATA, INDEX_TYPES),
  },
)


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class ScatterNdDesc(OperatorDesc):
  """`DML_SCATTER_ND_OPERATOR_DESC` (from FL 2_1).

  Attributes:
    input_tensor: InputTensor, the output's initial contents.
    indices_tensor: IndicesTensor; its last size is the tuple length t.
    updates_tensor: UpdatesTensor: X[:-1] ++ I[t:] right-aligned, the input's data type.
    input_dimension_count: InputDimensionCount, in [1, DimensionCount]; None
      means the input's DimensionCount.
    indices_dimension_count: IndicesDimensionCount (counting the tuple
      dimension), in [1, DimensionCount]; None means DimensionCount.
    output_tensor: OutputTensor; None infers it (the input's sizes and data type).

  Examples:
    >>> desc = ScatterNdDesc(TensorDesc("FLOAT32", (1, 8)), TensorDesc("UINT32", (4, 1)),
    ...                      TensorDesc("FLOAT32", (1, 4)), input_dimension_count=1)
    >>> print(desc)
    DML_OPERATOR_SCATTER_ND(InputTensor=FLOAT32[1,8], IndicesTensor=UINT32[4,1], UpdatesTensor=FLOAT32[1,4], InputDimensionCount=1, IndicesDimensionCount=2) -> FLOAT32[1,8]
  """

  OPERATOR = "SCATTER_ND"
  SUPPORT = _SUPPORT
  FUNCTION = "scatter_nd"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  indices_tensor: TensorDesc = dml_field("IndicesTensor", FieldKind.TENSOR, index=True)
  updates_tensor: TensorDesc = dml_field("UpdatesTensor", FieldKind.TENSOR)
  input_dimension_count: int = dml_field(
    "InputDimensionCount", FieldKind.UINT, derive=rules.rank_of("input_tensor")
  )
  indices_dimension_count: int = dml_field(
    "IndicesDimensionCount", FieldKind.UINT, derive=rules.rank_of("indices_tensor")
  )
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
      input_dimension_count: SupportsIndex | None = None,
      indices_dimension_count: SupportsIndex | None = None,
      output_tensor: TensorDesc | None = None,
    ) -> None: ...

  @property
  def index_tuple_size(self) -> int:
    """t: the size of the indices' last dimension."""
    return self.indices_tensor.sizes[-1] if self.indices_tensor.sizes else 0

  def _logical(self) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(I, X), or None where the counts do not fit the ranks."""
    n = self.input_tensor.dimension_count
    m, q = self.input_dimension_count, self.indices_dimension_count
    if self.indices_tensor.dimension_count != n or not (1 <= m <= n and 1 <= q <= n):
      return None
    return self.input_tensor.sizes[n - m :], self.indices_tensor.sizes[n - q :]

  def expected_updates_sizes(self) -> tuple[int, ...] | None:
    """UpdatesTensor.Sizes the other fields call for, or None where they call for none."""
    logical = self._logical()
    if logical is None:
      return None
    (input_sizes, indices_sizes), t = logical, self.index_tuple_size
    n = self.input_tensor.dimension_count
    updates = indices_sizes[:-1] + input_sizes[t:]
    if not 1 <= t <= len(input_sizes) or len(updates) > n:
      return None
    return (1,) * (n - len(updates)) + updates

  def infer_output(self) -> TensorDesc | None:
    return TensorDesc(self.input_tensor.data_type, self.input_tensor.sizes)

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return f"must equal InputTensor.Sizes {braced(expected)}"

  def check_rules(self, check: Checker) -> None:
    data, indices, updates = self.input_tensor, self.indices_tensor, self.updates_tensor
    n = data.dimension_count
    check.expect(
      updates.data_type == data.data_type,
      "UpdatesTensor.DataType",
      f"must equal InputTensor.DataType ({data.data_type}); SCATTER_ND never converts types",
      updates.data_type,
    )
    ranks_ok = rules.check_same_rank(
      check, ("InputTensor", data), ("IndicesTensor", indices), ("UpdatesTensor", updates)
    )
    m, q = self.input_dimension_count, self.indices_dimension_count
    counts_ok = check.expect(
      1 <= m <= n, "InputDimensionCount", f"must be in [1, DimensionCount] = [1, {n}]", m
    )
    counts_ok &= check.expect(
      1 <= q <= n, "IndicesDimensionCount", f"must be in [1, DimensionCount] = [1, {n}]", q
    )
    if not (ranks_ok and counts_ok):
      return
    for name, tensor, count in (("InputTensor", data, m), ("IndicesTensor", indices, q)):
      check.expect(
        all(s == 1 for s in tensor.sizes[: n - count]),
        f"{name}.Sizes",
        f"dimensions before the trailing {count} meaningful ones must be 1",
        tensor.sizes,
      )
    t = self.index_tuple_size
    if not check.expect(
      1 <= t <= m,
      "IndicesTensor.Sizes",
      f"the last size is the index tuple length and must be in [1, InputDimensionCount] = [1, {m}]",
      t,
    ):
      return
    k = q - 1 + m - t
    if not check.expect(
      k <= n,
      "UpdatesTensor.DimensionCount",
      f"the updates' meaningful dimensions (IndicesDimensionCount - 1 + InputDimensionCount -"
      f" t = {k}) must fit in DimensionCount {n}",
      k,
    ):
      return
    expected = self.expected_updates_sizes()
    assert expected is not None  # the counts, t and k fit: checked above
    check.expect(
      updates.sizes == expected,
      "UpdatesTensor.Sizes",
      f"must be exactly {braced(expected)} (IndicesTensor.Sizes[n - q:-1] ++"
      f" InputTensor.Sizes[n - m + t:], right-aligned)",
      updates.sizes,
    )

  def lower(self, input: jax.Array, indices: jax.Array, updates: jax.Array) -> jax.Array:
    logical = self._logical()
    assert logical is not None  # a valid descriptor's counts fit its ranks
    input_sizes, indices_sizes = logical
    t = self.index_tuple_size
    indexed, kept, positions = input_sizes[:t], input_sizes[t:], indices_sizes[:-1]
    first = input.ndim - len(input_sizes)  # the InputTensor dimension of coordinate 0
    checked.check_indices(self.OPERATOR, indices, indexed, range(first, first + t))
    index, keep_each = scattering.targets(indices.reshape(indices_sizes), indexed)
    keep = jnp.all(keep_each, axis=-1)
    p = len(positions)
    numbers = lax.ScatterDimensionNumbers(
      update_window_dims=tuple(range(p, p + len(kept))),
      inserted_window_dims=tuple(range(t)),
      scatter_dims_to_operand_dims=tuple(range(t)),
    )
    tuples = lax.ScatterDimensionNumbers(
      update_window_dims=(),
      inserted_window_dims=tuple(range(t)),
      scatter_dims_to_operand_dims=tuple(range(t)),
    )
    # Two tuples share a target only if both name it: any two tuples can, so each is numbered
    # by its row-major position among all of them (none to number when there is one).
    position = None if math.prod(positions) == 1 else scattering.flat_positions(positions)
    out, loses, winner = scattering.scatter(
      input.reshape(input_sizes),
      updates.reshape(positions + kept),
      index,
      keep,
      indexed,
      numbers,
      position=position,
      winner_shape=indexed,
      winner_dimension_numbers=tuples,
      report=checked.CHECKED_INDICES.value,
      forms_by_platform=pull_forms(
        indexed,
        kept,
        math.prod(positions),
        input.dtype,
        cpu_rows=cpu_pull(indexed, kept, input.dtype),
      ),
    )
    if loses is not None:
      q = self.indices_dimension_count

      def describe() -> checked.Positions:
        assert winner is not None  # computed with `loses`
        lead: list[checked.Coordinate] = [0] * (input.ndim - q)  # IndicesTensor's leading 1s
        where = [lax.broadcasted_iota(np.int32, positions, d) for d in range(p)]
        later = jnp.unravel_index(winner, positions)
        target = [index[..., j] for j in range(t)]
        return (
          [*lead, *where, ":"],
          [*([0] * first), *target, *([":"] * len(kept))],
          [*lead, *later, ":"],
        )

      checked.check_unique_targets(self.OPERATOR, loses, describe, field="IndicesTensor")
    return out.reshape(input.shape)

  def explain_output(self) -> list[str]:
    data, indices, updates = self.input_tensor, self.indices_tensor, self.updates_tensor
    n, m, q = data.dimension_count, self.input_dimension_count, self.indices_dimension_count
    t = self.index_tuple_size
    lines = [
      f"n = DimensionCount = {n}; m = InputDimensionCount = {m}; q = IndicesDimensionCount = {q}.",
      f"OutputTensor.Sizes = InputTensor.Sizes = {braced(data.sizes)}; OutputTensor.DataType ="
      f" InputTensor.DataType = {data.data_type} (UpdatesTensor must have it too).",
    ]
    if indices.dimension_count != n or not (1 <= m <= n and 1 <= q <= n):
      return lines + ["The counts do not fit the tensors' ranks: no UpdatesTensor.Sizes follow."]
    logical_input, logical_indices = data.sizes[n - m :], indices.sizes[n - q :]
    padding = lambda k: f" (the {k} leading size(s) before it must be 1)" if k else ""
    lines += [
      f"Logical input I = InputTensor.Sizes[n - m:] = {braced(logical_input)}{padding(n - m)}.",
      f"Logical indices X = IndicesTensor.Sizes[n - q:] = {braced(logical_indices)}"
      f"{padding(n - q)}.",
      f"Tuple length t = X[-1] = {t}: each index tuple holds {t} coordinate(s) into"
      f" I[:t] = {braced(logical_input[:t])}.",
    ]
    if not 1 <= t <= m:
      return lines + [f"t must be in [1, m] = [1, {m}]: no UpdatesTensor.Sizes follow."]
    kept = logical_input[t:]
    block = f"a sub-block of {math.prod(kept)} element(s)" if kept else "a single element"
    logical = logical_indices[:-1] + kept
    lines += [
      f"Each tuple names I[t:] = {braced(kept)}: {block} is written per tuple.",
      f"Logical updates = X[:-1] ++ I[t:] = {braced(logical_indices[:-1])} ++ {braced(kept)}"
      f" = {braced(logical)} (k = {len(logical)} dimension(s)).",
    ]
    if len(logical) > n:
      return lines + [f"k = {len(logical)} > n = {n}: the updates do not fit."]
    expected = (1,) * (n - len(logical)) + logical
    return lines + [
      f"Right-aligned into n = {n} dimensions: UpdatesTensor.Sizes must be {braced(expected)}"
      f" (found {braced(updates.sizes)}).",
      "out[X[p, 0], ..., X[p, t - 1], r] = UpdatesTensor[p, r] (p: tuple position, r: within"
      " the sub-block).",
      "DirectML leaves duplicate and out-of-range targets undefined; dml_jax keeps the last"
      " tuple in row-major order, and drops a tuple with a coordinate out of range after the"
      " negative-index rule.",
    ]


def cpu_pull(
  indexed: Sequence[int], window: Sequence[int], dtype: np.dtype
) -> Callable[..., jax.Array] | None:
  """The CPU's pull (`pull_rows_lax`) where XLA:CPU runs it faster than the scatter in order,
  else None: rows (the `window` sizes) of `cpu_pull_min_row_bytes` or more, numbered in int32,
  in a process with one CPU device (over several, the input viewed as (rows, width) would merge
  a sharded dimension with the others, and XLA would gather it and replicate the output).

  Examples:
    >>> cpu_pull((64,), (256,), np.dtype(np.float32)) is pull_rows_lax  # 1 KiB rows
    True
    >>> cpu_pull((64,), (64,), np.dtype(np.float32)) is None
    True
  """
  wide = math.prod(window) * np.dtype(dtype).itemsize >= cpu_pull_min_row_bytes
  if wide and math.prod(indexed) < 2**31 and placement.one_device("cpu"):
    return pull_rows_lax
  return None


cpu_pull_min_row_bytes = 1024
"""The narrowest row XLA:CPU pulls: rows of 1 KiB pull faster than the scatter in order, rows
of 256 bytes slower (benchmark case `scatter_nd`)."""


def pull_rows_lax(input: jax.Array, target: jax.Array, updates: jax.Array) -> jax.Array:
  """The pull in lax: each row of `input` (rows, width), or the update its winner map names
  (`target`: each update's row, `rows` where it is dropped)."""
  source = scatter_nd_rows_triton.winner_map(target, input.shape[0]).astype(np.int32) - 1
  pulled = jnp.take(updates, lax.max(source, np.int32(0)), axis=0, mode="clip")
  return lax.select(jnp.broadcast_to((source >= 0)[:, None], input.shape), pulled, input)


def scatter_nd(
  input: ArrayLike,
  indices: ArrayLike,
  updates: ArrayLike,
  *,
  input_dimension_count: int | None = None,
  indices_dimension_count: int | None = None,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_SCATTER_ND: writes the sub-blocks that index tuples name.

  `input`, `indices` and `updates` have the same rank n (pad with leading 1s);
  the last size of `indices` is the tuple length t. `updates` has the shape
  ``dml.gather_nd(input, indices, ...)`` would return (``indices.shape[-q:-1] +
  input.shape[-m:][t:]`` padded with leading 1s, m and q the two counts) and the
  input's dtype. The output has the input's shape and dtype.

  Arrays of different ranks with both counts unset read as ONNX ScatterND: the
  counts are the arrays' own ranks and all three are padded with leading 1s.

  Where DirectML leaves the result undefined, dml_jax decides, on every backend
  alike: of several tuples that name one sub-block, the last in row-major order
  wins; a tuple with a coordinate out of range after the negative-index rule is
  dropped whole. `dml.checked` reports both instead.

  Unlike ``x.at[i0, i1].set(u)`` (or ONNX ScatterND, ``torch.index_put_``):
  duplicate tuples have a defined winner; out-of-range tuples are dropped rather
  than clamped, and negative coordinates count from the end only for signed
  index types; ranks are padded, not broadcast.

  Args:
    input: InputTensor.
    indices: IndicesTensor (int32, int64, uint32 or uint64).
    updates: UpdatesTensor.
    input_dimension_count: InputDimensionCount (None: n).
    indices_dimension_count: IndicesDimensionCount (None: n).
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer indices or counts, or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> x = np.arange(1, 9, dtype=np.float32).reshape(1, 8)
    >>> scatter_nd(x, np.array([[4], [3], [1], [7]], np.uint32),
    ...            np.array([[9, 10, 11, 12]], np.float32), input_dimension_count=1)
    Array([[ 1., 11.,  3., 10.,  9.,  6.,  7., 12.]], dtype=float32)
  """
  (input, indices, updates), types = arguments.tensor_operands(
    ScatterNdDesc, input, indices, updates
  )
  m, q = input_dimension_count, indices_dimension_count
  static = (
    as_level(feature_level),
    types,
    None if m is None else as_int(m, "InputDimensionCount"),
    None if q is None else as_int(q, "IndicesDimensionCount"),
  )
  return _scatter_nd(static, input, indices, updates)


def _describe_scatter_nd(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  m: int | None,
  q: int | None,
) -> ScatterNdDesc:
  input, indices, updates = map(TensorDesc, types, shapes)
  return ScatterNdDesc(input, indices, updates, m, q)


_scatter_nd = dispatch.operator_function(
  _describe_scatter_nd,
  ScatterNdDesc,
  natural.TakeTuples(names=("input_dimension_count", "indices_dimension_count"), scatter=True),
  moves_bits=True,
)


# -- kernels ---------------------------------------------------------------------------------


def pull_forms(
  indexed: Sequence[int],
  window: Sequence[int],
  count: int,
  dtype: np.dtype,
  *,
  cpu_rows: Callable[..., jax.Array] | None = None,
) -> dict[str, Callable[..., jax.Array]]:
  """SCATTER_ND's pulls, by platform, where they apply: forms of `scattering.scatter`'s
  operands (operand, updates, index, keep, dropped, position) that give its output.

  A pull reads each output row once, from the last update aimed at it or from the input, after
  a winner map (`scatter_nd_rows_triton.winner_map`) has named that update: on CUDA GPUs the
  Triton kernel where it applies (`KERNELS`); on the CPU `cpu_rows` where the operator gives
  one (`cpu_pull`: a row gather and a select in lax). Each is a function of (table, target
  rows, updates) on the input viewed as (rows, width).

  `indexed` are the sizes the index tuples address, `window` the sizes after them that each
  update writes whole (a row of the table), `count` the number of updates.

  Examples:
    >>> sorted(pull_forms((8,), (4,), 3, np.dtype(np.float32)))  # 16-byte rows
    []
    >>> f32 = np.dtype(np.float32)
    >>> "cpu" in pull_forms((8,), (256,), 3, f32, cpu_rows=lambda table, rows, u: table)
    True
  """
  rows, width = math.prod(indexed), math.prod(window)

  def pull(rows_of: Callable[..., jax.Array]) -> Callable[..., jax.Array]:
    def form(operand, updates, index, keep, dropped, position):
      del dropped, position  # the winner map numbers the updates in row-major order itself
      target = indexing.flat_offsets(indexed, index, keep, range(len(indexed)))  # rows: dropped
      out = rows_of(
        operand.reshape(rows, width), target.reshape(count), updates.reshape(count, width)
      )
      return out.reshape(operand.shape)

    return form

  chosen = {}
  if cpu_rows is not None:
    chosen["cpu"] = pull(cpu_rows)
  shapes = (
    jax.ShapeDtypeStruct((rows, width), dtype),
    jax.ShapeDtypeStruct((count,), np.int32),
    jax.ShapeDtypeStruct((count, width), dtype),
  )
  for platform, kernel in kernels.chosen(KERNELS, None, *shapes).items():
    chosen[platform] = pull(kernel)
  return chosen


def _pull_call(
  fields: None, config: Any, interpret: bool, *shards: Shaped
) -> Callable[..., jax.Array]:
  kernel = scatter_nd_rows_triton.pull_rows  # looked up at each call: tests replace it
  if config is not None:
    kernel = functools.partial(kernel, config=config)
  return functools.partial(kernel, interpret=True) if interpret else kernel


KERNELS = (
  kernels.Kernel(
    "scatter_nd_rows_triton",
    "cuda",
    applies=lambda fields, config, x, t, u: scatter_nd_rows_triton.applies(
      x.shape[0], x.shape[1], t.shape[0], x.dtype, config
    ),
    # The width passes through (a power of two); the rows and the updates are needed whole.
    roles=lambda fields, config, x, t, u: Roles(
      "r w, c, c w -> r w",
      whole=("r", "c"),
      fits=lambda x, t, u: _triton.power_of_two(x.shape[-1]),
    ),
    call=_pull_call,
    one_device=True,  # over several devices it would gather the table's rows
  ),
)
"""SCATTER_ND's kernel (`kernels.forms` chooses; `pull_forms` runs it): the pull of (rows,
width) tables, given each update's target row (`rows` where dropped) and the updates."""
