"""DML_OPERATOR_GATHER_ND and DML_OPERATOR_GATHER_ND1: whole sub-blocks by index tuples.

With logical shapes I (the trailing InputDimensionCount input sizes), X (the
trailing IndicesDimensionCount indices sizes), B batch dimensions and tuples
of t = X[-1] coordinates:

    out[b, p, r] = input[b, indices[b, p, 0], ..., indices[b, p, t-1], r]

The logical output X[:-1] ++ I[B+t:] is right-aligned into the common rank,
with leading 1s. GATHER_ND is GATHER_ND1 with BatchDimensionCount 0.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
from jax import lax

from dml_jax._src import checked, indexing, kernels
from dml_jax._src.dtypes import ALL_DATA, INDEX_TYPES, UP_TO_32_BIT, DataType
from dml_jax._src.errors import Checker
from dml_jax._src.feature_level import FeatureLevel, SupportTable, support
from dml_jax._src.ops import _base
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


@dataclasses.dataclass(frozen=True, repr=False)
class GatherNdDesc(_base.OperatorDesc):
  """`DML_GATHER_ND_OPERATOR_DESC`, or `DML_GATHER_ND1_OPERATOR_DESC` when batched.

  A descriptor with `batch_dimension_count` 0 is validated as GATHER_ND (from
  FL 2_1), any other as GATHER_ND1 (from FL 3_0); their semantics agree.

  Attributes:
    input_tensor: InputTensor.
    indices_tensor: IndicesTensor; its last size is the tuple length t.
    input_dimension_count: InputDimensionCount, in [1, DimensionCount]; None
      means the input's DimensionCount.
    indices_dimension_count: IndicesDimensionCount (counting the tuple and
      batch dimensions), in [1, DimensionCount]; None means DimensionCount.
    batch_dimension_count: BatchDimensionCount (GATHER_ND1).
    output_tensor: OutputTensor; None infers it.

  Examples:
    >>> GatherNdDesc(TensorDesc("FLOAT32", (3, 4, 5, 6, 7)), TensorDesc("UINT32", (1, 1, 1, 2, 3)),
    ...              input_dimension_count=5, indices_dimension_count=3)
    GatherNdDesc(input=FLOAT32[3,4,5,6,7], indices=UINT32[1,1,1,2,3], input_dimension_count=5, indices_dimension_count=3) -> FLOAT32[1,1,2,6,7]
  """

  input_tensor: TensorDesc
  indices_tensor: TensorDesc
  input_dimension_count: int | None = None
  indices_dimension_count: int | None = None
  batch_dimension_count: int = 0
  output_tensor: TensorDesc | None = None

  def __post_init__(self):
    _base.as_tensor(self.input_tensor, "InputTensor")
    _base.as_tensor(self.indices_tensor, "IndicesTensor")
    if self.output_tensor is not None:
      _base.as_tensor(self.output_tensor, "OutputTensor")
    set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
    if self.input_dimension_count is None:
      set_("input_dimension_count", self.input_tensor.dimension_count)
    if self.indices_dimension_count is None:
      set_("indices_dimension_count", self.indices_tensor.dimension_count)
    for name, dml_name in (
      ("input_dimension_count", "InputDimensionCount"),
      ("indices_dimension_count", "IndicesDimensionCount"),
      ("batch_dimension_count", "BatchDimensionCount"),
    ):
      set_(name, _base.as_attribute(getattr(self, name), dml_name))

  @property
  def OPERATOR(self) -> str:  # noqa: N802  (a ClassVar elsewhere)
    return "GATHER_ND1" if self.batch_dimension_count else "GATHER_ND"

  @property
  def SUPPORT(self) -> SupportTable:  # noqa: N802
    return _GATHER_ND1_SUPPORT if self.batch_dimension_count else _GATHER_ND_SUPPORT

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
    b, t = self.batch_dimension_count, self.index_tuple_size
    if not (0 <= b and 1 <= t <= len(input_sizes) - b):
      return None
    return indices_sizes[:-1] + input_sizes[b + t :]

  def _inputs(self):
    yield "InputTensor", "InputTensor", self.input_tensor
    yield "IndicesTensor", "IndicesTensor", self.indices_tensor

  def _infer_output(self) -> TensorDesc | None:
    logical = self._logical_output_sizes()
    n = self.input_tensor.dimension_count
    if logical is None or len(logical) > n:
      return None
    return TensorDesc(self.input_tensor.data_type, (1,) * (n - len(logical)) + logical)

  def _check_fields(self, check: Checker) -> None:
    data, indices = self.input_tensor, self.indices_tensor
    n = data.dimension_count
    tensors = [("IndicesTensor", indices)]
    ranks_ok = _base.check_same_rank(check, ("InputTensor", data), *tensors)
    m, q, b = self.input_dimension_count, self.indices_dimension_count, self.batch_dimension_count
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
    input_sizes, indices_sizes = self._logical()
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
      f"the {b} batch dimensions must equal the input's {_base._sizes(input_sizes[:b])}",
      indices_sizes[:b],
    )
    logical = self._logical_output_sizes()
    check.expect(
      len(logical) <= n,
      "OutputTensor.DimensionCount",
      f"the output's meaningful dimensions (IndicesDimensionCount - 1 +"
      f" InputDimensionCount - BatchDimensionCount - t = {len(logical)}) must fit in"
      f" DimensionCount {n}",
      len(logical),
    )

  def lower(self, input: jax.Array, indices: jax.Array) -> jax.Array:
    (input_sizes, indices_sizes), output_sizes = self._logical(), self.output.sizes
    b, t = self.batch_dimension_count, self.index_tuple_size
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
    out = kernels.gather_nd(operand, indices, batch_dims=b, fallback=gather)
    return out.reshape(output_sizes)

  def _fields_repr(self) -> str:
    text = (
      f"input={self.input_tensor!r}, indices={self.indices_tensor!r},"
      f" input_dimension_count={self.input_dimension_count},"
      f" indices_dimension_count={self.indices_dimension_count}"
    )
    if self.batch_dimension_count:
      text += f", batch_dimension_count={self.batch_dimension_count}"
    return text


def gather_nd(
  input: Any,
  indices: Any,
  *,
  input_dimension_count: int | None = None,
  indices_dimension_count: int | None = None,
  batch_dimension_count: int = 0,
  feature_level: Any = None,
) -> jax.Array:
  """DML_OPERATOR_GATHER_ND / GATHER_ND1: copies the sub-blocks that index tuples name.

  `input` and `indices` have the same rank n (pad with leading 1s); the last
  size of `indices` is the tuple length t. The output has rank n: the logical
  shape ``indices.shape[-q:-1] + input.shape[-m:][b + t:]`` padded with leading
  1s, where m, q and b are the three counts.

  Unlike ``jnp`` advanced indexing: ranks are padded, not broadcast; negative
  indices count from the end only for signed index types; out-of-range
  coordinates are clamped into the input, each against its own dimension.

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
  input, indices, types = _base.input_and_indices(input, indices, "IndicesTensor")
  m, q = input_dimension_count, indices_dimension_count
  static = (
    _base.as_level(feature_level),
    types,
    None if m is None else _base.as_attribute(m, "InputDimensionCount"),
    None if q is None else _base.as_attribute(q, "IndicesDimensionCount"),
    _base.as_attribute(batch_dimension_count, "BatchDimensionCount"),
  )
  return _gather_nd(static, input, indices)


def _describe_gather_nd(types, shapes, m, q, b) -> GatherNdDesc:
  return GatherNdDesc(
    TensorDesc(types[0], shapes[0]),
    TensorDesc(types[1], shapes[1]),
    input_dimension_count=m,
    indices_dimension_count=q,
    batch_dimension_count=b,
  )


_gather_nd = _base.operator_function(_describe_gather_nd, _base.index_roles("IndicesTensor"))
