"""DML_OPERATOR_GATHER_ND and DML_OPERATOR_GATHER_ND1: whole sub-blocks by index tuples.

With logical shapes I (the trailing InputDimensionCount input sizes), X (the
trailing IndicesDimensionCount indices sizes), B batch dimensions and tuples
of t = X[-1] coordinates:

    out[b, p, r] = input[b, indices[b, p, 0], ..., indices[b, p, t-1], r]

The logical output X[:-1] ++ I[B+t:] is right-aligned into the common rank,
with leading 1s. GATHER_ND is GATHER_ND1 with BatchDimensionCount 0; each has its descriptor class.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from typing import TYPE_CHECKING, Any, SupportsIndex

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
from dml_jax._src.kernels import _triton, gather_nd_rows_triton, gather_rows_cpu
from dml_jax._src.kernels.partitioning import Roles, Shaped, dims, factors
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

_FROM_3_0 = {
  "InputTensor": support((1, 8), UP_TO_32_BIT),
  "IndicesTensor": support((1, 8), INDEX_TYPES),
  "OutputTensor": support((1, 8), UP_TO_32_BIT),
}
_FROM_4_1 = {
  "InputTensor": support((1, 8), ALL_DATA),
  "IndicesTensor": support((1, 8), INDEX_TYPES),
  "OutputTensor": support((1, 8), ALL_DATA),
}
_GATHER_ND_SUPPORT = SupportTable(
  "GATHER_ND",
  {
    FeatureLevel.FL_2_1: {
      "InputTensor": support(4, UP_TO_32_BIT),
      "IndicesTensor": support(4, (DataType.UINT32,)),
      "OutputTensor": support(4, UP_TO_32_BIT),
    },
    FeatureLevel.FL_3_0: _FROM_3_0,
    FeatureLevel.FL_4_1: _FROM_4_1,
  },
)
_GATHER_ND1_SUPPORT = SupportTable(
  "GATHER_ND1",
  {
    FeatureLevel.FL_3_0: _FROM_3_0,
    FeatureLevel.FL_4_1: _FROM_4_1,
  },
)


class _GatherNdRules(OperatorDesc):
  """GATHER_ND1's contract; GATHER_ND is GATHER_ND1 with BatchDimensionCount 0."""

  input_tensor: TensorDesc
  indices_tensor: TensorDesc
  input_dimension_count: int
  indices_dimension_count: int

  @property
  def batch_count(self) -> int:
    """B: BatchDimensionCount (0 for GATHER_ND, whose struct has no such field)."""
    return 0

  @property
  def index_tuple_size(self) -> int:
    """t: the size of the indices' last dimension."""
    return self.indices_tensor.sizes[-1] if self.indices_tensor.sizes else 0

  def _logical(self) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    n = self.input_tensor.dimension_count
    m, q = self.input_dimension_count, self.indices_dimension_count
    if self.indices_tensor.dimension_count != n or not (1 <= m <= n and 1 <= q <= n):
      return None
    return self.input_tensor.sizes[n - m :], self.indices_tensor.sizes[n - q :]

  def _logical_output_sizes(self) -> tuple[int, ...] | None:
    logical = self._logical()
    if logical is None:
      return None
    input_sizes, indices_sizes = logical
    b, t = self.batch_count, self.index_tuple_size
    if not (0 <= b and 1 <= t <= len(input_sizes) - b):
      return None
    return indices_sizes[:-1] + input_sizes[b + t :]

  def infer_output(self) -> TensorDesc | None:
    logical = self._logical_output_sizes()
    n = self.input_tensor.dimension_count
    if logical is None or len(logical) > n:
      return None
    return TensorDesc(self.input_tensor.data_type, (1,) * (n - len(logical)) + logical)

  def check_rules(self, check: Checker) -> None:
    data, indices = self.input_tensor, self.indices_tensor
    n = data.dimension_count
    ranks_ok = rules.check_same_rank(check, ("InputTensor", data), ("IndicesTensor", indices))
    m, q, b = self.input_dimension_count, self.indices_dimension_count, self.batch_count
    counts_ok = check.expect(
      1 <= m <= n, "InputDimensionCount", f"must be in [1, DimensionCount] = [1, {n}]", m
    )
    counts_ok &= check.expect(
      1 <= q <= n, "IndicesDimensionCount", f"must be in [1, DimensionCount] = [1, {n}]", q
    )
    if b:
      counts_ok &= check.expect(
        0 <= b < min(m, q),
        "BatchDimensionCount",
        f"must be in [0, min(InputDimensionCount, IndicesDimensionCount)) = [0, {min(m, q)})",
        b,
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
    logical_sizes = self._logical()
    assert logical_sizes is not None  # the ranks and counts fit: checked above
    input_sizes, indices_sizes = logical_sizes
    t = self.index_tuple_size
    if not check.expect(
      1 <= t <= m - b,
      "IndicesTensor.Sizes",
      f"the last size is the index tuple length and must be in"
      f" [1, InputDimensionCount - BatchDimensionCount] = [1, {m - b}]",
      t,
    ):
      return
    check.expect(
      input_sizes[:b] == indices_sizes[:b],
      "IndicesTensor.Sizes",
      f"the {b} batch dimensions must equal the input's {braced(input_sizes[:b])}",
      indices_sizes[:b],
    )
    logical = self._logical_output_sizes()
    assert logical is not None  # B and t fit: checked above
    check.expect(
      len(logical) <= n,
      "OutputTensor.DimensionCount",
      f"the output's meaningful dimensions (IndicesDimensionCount - 1 +"
      f" InputDimensionCount - BatchDimensionCount - t = {len(logical)}) must fit in"
      f" DimensionCount {n}",
      len(logical),
    )

  def lower(self, input: jax.Array, indices: jax.Array) -> jax.Array:
    logical = self._logical()
    assert logical is not None  # a valid descriptor's counts fit its ranks
    (input_sizes, indices_sizes), output_sizes = logical, self.output.sizes
    b, t = self.batch_count, self.index_tuple_size
    first = input.ndim - len(input_sizes) + b  # the InputTensor dimension of coordinate 0
    checked.check_indices(self.OPERATOR, indices, input_sizes[b : b + t], range(first, first + t))
    kept = input_sizes[b + t :]
    dnums = lax.GatherDimensionNumbers(
      offset_dims=tuple(range(len(indices_sizes) - 1, len(indices_sizes) - 1 + len(kept))),
      collapsed_slice_dims=tuple(range(b, b + t)),
      start_index_map=tuple(range(b, b + t)),
      operand_batching_dims=tuple(range(b)),
      start_indices_batching_dims=tuple(range(b)),
    )

    def gather(operand, indices):
      return lax.gather(
        operand,
        indexing.clamp_indices(indices, input_sizes[b : b + t]),
        dnums,
        slice_sizes=(1,) * (b + t) + kept,
        mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS,
      )

    operand, indices = input.reshape(input_sizes), indices.reshape(indices_sizes)
    out = kernels.lower(KERNELS, b, gather, operand, indices)
    return out.reshape(output_sizes)

  def explain_output(self) -> list[str]:
    data, indices = self.input_tensor, self.indices_tensor
    n, m, q = data.dimension_count, self.input_dimension_count, self.indices_dimension_count
    b, t = self.batch_count, self.index_tuple_size
    lines = [
      f"n = DimensionCount = {n}; m = InputDimensionCount = {m}; q = IndicesDimensionCount = {q};"
      f" B = BatchDimensionCount = {b}."
    ]
    if indices.dimension_count != n or not (1 <= m <= n and 1 <= q <= n):
      return lines + ["The counts do not fit the tensors' ranks: no output can be inferred."]
    logical_input, logical_indices = data.sizes[n - m :], indices.sizes[n - q :]
    padding = lambda k: f" (the {k} leading size(s) before it must be 1)" if k else ""
    lines += [
      f"Logical input I = InputTensor.Sizes[n - m:] = {braced(logical_input)}{padding(n - m)}.",
      f"Logical indices X = IndicesTensor.Sizes[n - q:] = {braced(logical_indices)}"
      f"{padding(n - q)}.",
      f"Tuple length t = X[-1] = {t}: each index tuple holds {t} coordinate(s) into"
      f" I[B:B + t] = {braced(logical_input[b : b + t])}.",
    ]
    if b:
      lines.append(
        f"The first B = {b} dimension(s) of I and X are batches ({braced(logical_input[:b])} and"
        f" {braced(logical_indices[:b])}, which must be equal): the tuples of batch j index"
        f" into I[j] only."
      )
    if not 1 <= t <= m - b:
      return lines + [f"t must be in [1, m - B] = [1, {m - b}]: no output can be inferred."]
    kept = logical_input[b + t :]
    block = f"a sub-block of {math.prod(kept)} element(s)" if kept else "a single element"
    logical = logical_indices[:-1] + kept
    lines += [
      f"Each tuple selects I[B + t:] = {braced(kept)}: {block} is copied per tuple.",
      f"Logical output = X[:-1] ++ I[B + t:] = {braced(logical_indices[:-1])} ++ {braced(kept)}"
      f" = {braced(logical)} (k = {len(logical)} dimension(s)).",
    ]
    if len(logical) > n:
      return lines + [f"k = {len(logical)} > n = {n}: the output does not fit; no output."]
    output = (1,) * (n - len(logical)) + logical
    pad = f"with {n - len(logical)} leading 1(s)" if n > len(logical) else "without padding"
    return lines + [
      f"Right-aligned into n = {n} dimensions {pad}: OutputTensor.Sizes = {braced(output)}.",
      "out[b, p, r] = I[b, X[b, p, 0], ..., X[b, p, t - 1], r] (b: batch, p: tuple position,"
      " r: within the sub-block).",
      f"OutputTensor.DataType = InputTensor.DataType = {data.data_type}.",
      self._operator_note(),
    ]

  def _operator_note(self) -> str:
    return (
      "BatchDimensionCount 0: DML_OPERATOR_GATHER_ND (from FL 2_1); GATHER_ND1 with"
      " BatchDimensionCount 0 computes the same."
    )


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class GatherNdDesc(_GatherNdRules):
  """`DML_GATHER_ND_OPERATOR_DESC` (from FL 2_1).

  Attributes:
    input_tensor: InputTensor.
    indices_tensor: IndicesTensor; its last size is the tuple length t.
    input_dimension_count: InputDimensionCount, in [1, DimensionCount]; None
      means the input's DimensionCount.
    indices_dimension_count: IndicesDimensionCount (counting the tuple
      dimension), in [1, DimensionCount]; None means DimensionCount.
    output_tensor: OutputTensor; None infers it.

  `GatherNdDesc(..., batch_dimension_count=b)` is deprecated: use `GatherNd1Desc`
  (it builds one, with a DeprecationWarning).

  Examples:
    >>> desc = GatherNdDesc(TensorDesc("FLOAT32", (3, 4, 5, 6, 7)), TensorDesc("UINT32", (1, 1, 1, 2, 3)),
    ...                     input_dimension_count=5, indices_dimension_count=3)
    >>> print(desc)
    DML_OPERATOR_GATHER_ND(InputTensor=FLOAT32[3,4,5,6,7], IndicesTensor=UINT32[1,1,1,2,3], InputDimensionCount=5, IndicesDimensionCount=3) -> FLOAT32[1,1,2,6,7]
  """

  OPERATOR = "GATHER_ND"
  SUPPORT = _GATHER_ND_SUPPORT
  FUNCTION = "gather_nd"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  indices_tensor: TensorDesc = dml_field("IndicesTensor", FieldKind.TENSOR, index=True)
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
    # (The deprecated batch_dimension_count keyword that __new__ takes is left out.)
    def __init__(
      self,
      input_tensor: TensorDesc,
      indices_tensor: TensorDesc,
      input_dimension_count: SupportsIndex | None = None,
      indices_dimension_count: SupportsIndex | None = None,
      output_tensor: TensorDesc | None = None,
    ) -> None: ...

  def __new__(cls, *args: Any, **kwargs: Any) -> Any:
    args, kwargs, b = _legacy_batch_count(args, kwargs)
    if b is None:
      return super().__new__(cls)
    warnings.warn(
      "GatherNdDesc(..., batch_dimension_count=b) is deprecated: DML_GATHER_ND_OPERATOR_DESC"
      " has no BatchDimensionCount; use GatherNd1Desc(..., batch_dimension_count=b)",
      DeprecationWarning,
      stacklevel=2,
    )
    if b:  # not a GatherNdDesc, so Python does not call __init__ on it again
      if len(args) >= 4:  # GatherNd1Desc's fields are (input, indices, m, q, b, output)
        args = (*args[:4], b, *args[4:])
      else:
        kwargs["batch_dimension_count"] = b
      return GatherNd1Desc(*args, **kwargs)
    return super().__new__(cls)  # __init__ drops the count


def _legacy_batch_count(args: tuple, kwargs: dict) -> tuple[tuple, dict, Any]:
  """The arguments of the older GatherNdDesc, (input, indices, m, q, b, output), as
  GatherNdDesc's (input, indices, m, q, output) and the batch count (None if not given)."""
  kwargs = dict(kwargs)
  if "batch_dimension_count" in kwargs:
    return args, kwargs, kwargs.pop("batch_dimension_count")
  if len(args) >= 5 and not isinstance(args[4], TensorDesc | None):
    return args[:4] + args[5:], kwargs, args[4]
  return args, kwargs, None


def _drop_batch_dimension_count(init: Any) -> Any:
  """GatherNdDesc's __init__, without the deprecated count that __new__ has handled."""

  @functools.wraps(init)
  def __init__(self: GatherNdDesc, *args: Any, **kwargs: Any) -> None:  # noqa: N807
    args, kwargs, _ = _legacy_batch_count(args, kwargs)
    init(self, *args, **kwargs)

  return __init__


GatherNdDesc.__init__ = _drop_batch_dimension_count(GatherNdDesc.__init__)  # type: ignore[method-assign]


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class GatherNd1Desc(_GatherNdRules):
  """`DML_GATHER_ND1_OPERATOR_DESC` (from FL 3_0): GATHER_ND with batch dimensions.

  Attributes:
    input_tensor, indices_tensor, input_dimension_count, indices_dimension_count,
    output_tensor: as for `GatherNdDesc`.
    batch_dimension_count: BatchDimensionCount, in
      [0, min(InputDimensionCount, IndicesDimensionCount)).

  Examples:
    >>> desc = GatherNd1Desc(TensorDesc("FLOAT32", (2, 2, 2)), TensorDesc("UINT32", (2, 1, 1)),
    ...                      batch_dimension_count=1)
    >>> print(desc)
    DML_OPERATOR_GATHER_ND1(InputTensor=FLOAT32[2,2,2], IndicesTensor=UINT32[2,1,1], InputDimensionCount=3, IndicesDimensionCount=3, BatchDimensionCount=1) -> FLOAT32[2,1,2]
  """

  OPERATOR = "GATHER_ND1"
  SUPPORT = _GATHER_ND1_SUPPORT
  FUNCTION = "gather_nd"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  indices_tensor: TensorDesc = dml_field("IndicesTensor", FieldKind.TENSOR, index=True)
  input_dimension_count: int = dml_field(
    "InputDimensionCount", FieldKind.UINT, derive=rules.rank_of("input_tensor")
  )
  indices_dimension_count: int = dml_field(
    "IndicesDimensionCount", FieldKind.UINT, derive=rules.rank_of("indices_tensor")
  )
  batch_dimension_count: int = dml_field("BatchDimensionCount", FieldKind.UINT, default=0)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      indices_tensor: TensorDesc,
      input_dimension_count: SupportsIndex | None = None,
      indices_dimension_count: SupportsIndex | None = None,
      batch_dimension_count: SupportsIndex = 0,
      output_tensor: TensorDesc | None = None,
    ) -> None: ...

  @property
  def batch_count(self) -> int:
    return self.batch_dimension_count

  def _operator_note(self) -> str:
    if self.batch_dimension_count:
      return (
        f"BatchDimensionCount {self.batch_dimension_count} > 0 makes this"
        f" DML_OPERATOR_GATHER_ND1 (from FL 3_0)."
      )
    return (
      "DML_OPERATOR_GATHER_ND1 (from FL 3_0) with BatchDimensionCount 0 computes what"
      " GATHER_ND (from FL 2_1) does."
    )


def gather_nd(
  input: ArrayLike,
  indices: ArrayLike,
  *,
  input_dimension_count: int | None = None,
  indices_dimension_count: int | None = None,
  batch_dimension_count: int = 0,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_GATHER_ND / GATHER_ND1: copies the sub-blocks that index tuples name.

  `input` and `indices` have the same rank n (pad with leading 1s); the last
  size of `indices` is the tuple length t. The output has rank n: the logical
  shape ``indices.shape[-q:-1] + input.shape[-m:][b + t:]`` padded with leading
  1s, where m, q and b are the three counts.

  Arrays of different ranks with both counts unset read as ONNX GatherND: the
  counts are the arrays' own ranks, both are padded with leading 1s, and the result
  has ONNX's shape ``indices.shape[:-1] + input.shape[b + t:]``.

  Unlike ``jnp`` advanced indexing: ranks are padded, not broadcast; negative
  indices count from the end only for signed index types; out-of-range
  coordinates are clamped into the input, each against its own dimension.

  See also: `gather_elements` (one index per output element, along one axis).

  Args:
    input: InputTensor.
    indices: IndicesTensor (int32, int64, uint32 or uint64).
    input_dimension_count: InputDimensionCount (None: n).
    indices_dimension_count: IndicesDimensionCount (None: n).
    batch_dimension_count: BatchDimensionCount; non-zero makes it GATHER_ND1.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for non-integer indices or counts, or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> x = np.array([[0, 1], [2, 3]], np.float32)
    >>> gather_nd(x, np.array([[1], [0]], np.uint32))
    Array([[2., 3.],
           [0., 1.]], dtype=float32)
  """
  (input, indices), types = arguments.tensor_operands(GatherNdDesc, input, indices)
  m, q = input_dimension_count, indices_dimension_count
  static = (
    as_level(feature_level),
    types,
    None if m is None else as_int(m, "InputDimensionCount"),
    None if q is None else as_int(q, "IndicesDimensionCount"),
    as_int(batch_dimension_count, "BatchDimensionCount"),
  )
  return _gather_nd(static, input, indices)


def _describe_gather_nd(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  m: int | None,
  q: int | None,
  b: int,
) -> GatherNdDesc | GatherNd1Desc:
  input, indices = TensorDesc(types[0], shapes[0]), TensorDesc(types[1], shapes[1])
  if b:
    return GatherNd1Desc(input, indices, m, q, batch_dimension_count=b)
  return GatherNdDesc(input, indices, m, q)


_gather_nd = dispatch.operator_function(
  _describe_gather_nd,
  GatherNdDesc,
  natural.TakeTuples(
    names=("input_dimension_count", "indices_dimension_count", "batch_dimension_count"),
    batch=2,
  ),
  moves_bits=True,
)


# -- kernels ---------------------------------------------------------------------------------
# Whole-row copies, for GATHER_ND and for GATHER of whole rows (`gather.py`). `fields`: the
# batch dimension count. The operands: the input with its logical sizes, and the raw index
# tuples (..., t) into its dimensions batch_dims .. batch_dims + t - 1, their leading
# batch_dims sizes the input's.


def _rows_roles(batch_dims: int, config: Any, x: Shaped, i: Shaped) -> Roles:
  """The batch dimensions, the tuples' dimensions and the rows pass through; the indexed
  dimensions and the index tuples are needed whole."""
  tuple_size = i.shape[-1]
  batch, indexed = factors("b", batch_dims), factors("t", tuple_size)
  kept = factors("w", x.ndim - batch_dims - tuple_size)
  tuples = factors("q", i.ndim - batch_dims - 1)
  rule = f"{dims(batch, indexed, kept)}, {dims(batch, tuples, 'k')} -> {dims(batch, tuples, kept)}"
  return Roles(rule, whole=(*indexed, "k"))


def _triton_rows_roles(batch_dims: int, config: Any, x: Shaped, i: Shaped) -> Roles:
  """As `_rows_roles`, the rows kept whole unless their shards have a power-of-two width."""
  leading = batch_dims + i.shape[-1]
  roles = _rows_roles(batch_dims, config, x, i)
  fits = lambda x, i: _triton.power_of_two(math.prod(x.shape[leading:]))  # noqa: E731
  return dataclasses.replace(roles, fits=fits)


KERNELS = (
  kernels.Kernel(
    "gather_nd_rows_triton",
    "cuda",
    applies=lambda batch_dims, config, x, i: gather_nd_rows_triton.applies(
      x.shape, batch_dims, i.shape[-1], x.dtype, config
    ),
    roles=_triton_rows_roles,
    call=lambda batch_dims, config, interpret, x, i: functools.partial(
      gather_nd_rows_triton.copy_rows, batch_dims=batch_dims, config=config, interpret=interpret
    ),
    one_device=True,  # over several devices it would gather a table sharded along its rows
  ),
  kernels.Kernel(
    "gather_rows_cpu",
    "cpu",
    applies=lambda batch_dims, config, x, i: gather_rows_cpu.applies(
      x.shape, i.shape, batch_dims, x.dtype, config
    ),
    roles=_rows_roles,
    call=lambda batch_dims, config, interpret, x, i: functools.partial(
      gather_rows_cpu.gather_rows, batch_dims=batch_dims
    ),
    one_device=True,
    native="gather_rows.cc",
  ),
)
"""GATHER_ND's kernels (`kernels.forms` chooses), which GATHER of whole rows takes too: the
row-copy kernel on CUDA GPUs (rows of a power-of-two width), the native row kernel on the CPU
(rows of 128 bytes or more, an output of 1 MiB or more)."""
