"""`DML_BUFFER_TENSOR_DESC`: sizes, strides, data type, flags and buffer size."""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Self, SupportsIndex, cast

from dml_jax._src import html as _html
from dml_jax._src.dtypes import DataType, DataTypeLike
from dml_jax._src.errors import Checker, DmlValidationError, Violation
from dml_jax._src.feature_level import FeatureLevel, FeatureLevelLike
from dml_jax._src.integers import as_int, as_int_tuple

MAX_ELEMENT_COUNT = 2**32 - 1
"""A buffer tensor holds at most 2**32 - 1 elements (index of one past the last)."""


class TensorFlags(enum.IntFlag):
  """`DML_TENSOR_FLAGS`."""

  NONE = 0
  OWNED_BY_DML = 1


def calc_buffer_tensor_size(
  data_type: DataTypeLike, sizes: Sequence[int], strides: Sequence[int] | None = None
) -> int:
  """DMLCalcBufferTensorSize: the minimum bytes a buffer tensor needs.

  Bits of the last addressed element plus one, rounded up to bytes and then
  to a multiple of 4 (bound buffers are DWORD multiples).

  Examples:
    >>> calc_buffer_tensor_size("FLOAT16", [3])
    8
    >>> calc_buffer_tensor_size("FLOAT32", [2, 3], strides=[5, 1])
    32
  """
  bits = DataType.from_any(data_type).size_in_bits
  if not bits:
    return 0
  if strides is None:
    elements = math.prod(sizes)
  else:
    elements = sum((s - 1) * d for s, d in zip(sizes, strides, strict=True)) + 1
  size_in_bytes = (elements * bits + 7) // 8
  return (size_in_bytes + 3) & ~3


def packed_strides(sizes: Sequence[int]) -> tuple[int, ...]:
  """Row-major strides, last dimension fastest (what null Strides means)."""
  strides, step = [], 1
  for size in reversed(sizes):
    strides.append(step)
    step *= size
  return tuple(reversed(strides))


def _flags_from_dml(value: Any, what: str) -> TensorFlags:
  """DML_TENSOR_FLAGS from a name ("OWNED_BY_DML", with or without the prefix) or a list."""
  names = [value] if isinstance(value, str) else value
  if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
    raise TypeError(f"{what} must be a flag name or a list of flag names; got {value!r}")
  flags = TensorFlags.NONE
  for name in names:
    bare = name.removeprefix("DML_TENSOR_FLAG_")
    if bare not in TensorFlags.__members__:
      known = ", ".join(TensorFlags.__members__)
      raise ValueError(f"{what}: unknown flag {name!r}; known: {known}")
    flags |= TensorFlags[bare]
  return flags


@dataclasses.dataclass(frozen=True)
class TensorDesc:
  """`DML_BUFFER_TENSOR_DESC` (wrapped by `DML_TENSOR_DESC` with Type BUFFER).

  Attributes:
    data_type: DataType (a name such as "FLOAT32" or a dtype is accepted).
    sizes: logical extent of each dimension, outermost first.
    strides: element (not byte) strides, or None for packed row-major.
    flags: TensorFlags; OWNED_BY_DML is allowed on inputs only.
    total_tensor_size_in_bytes: None means calc_buffer_tensor_size.
    guaranteed_base_offset_alignment: 0 or a power of two >= the element size.

  Examples:
    >>> TensorDesc("FLOAT16", (2, 3))
    TensorDesc("FLOAT16", (2, 3))
    >>> print(TensorDesc("FLOAT16", (2, 3)))
    FLOAT16[2,3]
    >>> TensorDesc("FLOAT16", (2, 3)).total_tensor_size_in_bytes
    12
  """

  data_type: DataType
  sizes: tuple[int, ...]
  strides: tuple[int, ...] | None = None
  flags: TensorFlags = TensorFlags.NONE
  # None given means calc_buffer_tensor_size, which __post_init__ stores: the attribute is
  # always an int, and only the constructor below takes None.
  total_tensor_size_in_bytes: int = cast(int, None)
  guaranteed_base_offset_alignment: int = 0

  if TYPE_CHECKING:
    # The constructor as type checkers see it: what __post_init__ accepts and coerces, while
    # the fields above declare the canonical types the attributes have. At run time
    # TYPE_CHECKING is False, the class body defines no __init__, and dataclass generates it
    # (so dataclasses.replace works); mypy's dataclass plugin keeps an __init__ a class defines.
    def __init__(
      self,
      data_type: DataTypeLike,
      sizes: Iterable[SupportsIndex],
      strides: Iterable[SupportsIndex] | None = None,
      flags: TensorFlags | SupportsIndex = TensorFlags.NONE,
      total_tensor_size_in_bytes: SupportsIndex | None = None,
      guaranteed_base_offset_alignment: SupportsIndex = 0,
    ) -> None: ...

  def __post_init__(self) -> None:
    set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
    set_("data_type", DataType.from_any(self.data_type))
    set_("sizes", as_int_tuple(self.sizes, "Sizes"))
    if self.strides is not None:
      set_("strides", as_int_tuple(self.strides, "Strides"))
    set_("flags", TensorFlags(as_int(self.flags, "Flags")))
    if self.total_tensor_size_in_bytes is None:
      set_("total_tensor_size_in_bytes", self.minimum_size_in_bytes)
    else:
      set_(
        "total_tensor_size_in_bytes",
        as_int(self.total_tensor_size_in_bytes, "TotalTensorSizeInBytes"),
      )
    set_(
      "guaranteed_base_offset_alignment",
      as_int(self.guaranteed_base_offset_alignment, "GuaranteedBaseOffsetAlignment"),
    )

  @classmethod
  def like(cls, array: Any, data_type: DataType | None = None) -> TensorDesc:
    """The packed description of an array (or anything with shape and dtype)."""
    if data_type is None:
      data_type = DataType.from_dtype(array.dtype)
    return cls(data_type, tuple(array.shape))

  @property
  def dimension_count(self) -> int:
    return len(self.sizes)

  @property
  def element_count(self) -> int:
    """Logical number of elements, prod(Sizes)."""
    return math.prod(self.sizes)

  @property
  def buffer_element_count(self) -> int:
    """Index of the last addressed element plus one (prod(Sizes) when packed)."""
    if self.strides is None or len(self.strides) != len(self.sizes):
      return self.element_count
    return sum((s - 1) * d for s, d in zip(self.sizes, self.strides, strict=True)) + 1

  @property
  def minimum_size_in_bytes(self) -> int:
    strides = (
      self.strides if self.strides is not None and len(self.strides) == len(self.sizes) else None
    )
    if any(s < 1 for s in self.sizes) or (strides and any(d < 0 for d in strides)):
      return 0
    return calc_buffer_tensor_size(self.data_type, self.sizes, strides)

  def __str__(self) -> str:
    """The compact form the tables and messages use: FLOAT32[2,3](strides={4,1})."""
    text = f"{self.data_type.name}[{','.join(map(str, self.sizes))}]"
    extras = []
    if self.strides is not None:
      extras.append(f"strides={{{','.join(map(str, self.strides))}}}")
    if self.flags:
      extras.append(f"flags={self.flags.name or hex(self.flags)}")
    if self.total_tensor_size_in_bytes != self.minimum_size_in_bytes:
      extras.append(f"bytes={self.total_tensor_size_in_bytes}")
    if self.guaranteed_base_offset_alignment:
      extras.append(f"align={self.guaranteed_base_offset_alignment}")
    return text + (f"({', '.join(extras)})" if extras else "")

  def __repr__(self) -> str:
    """A constructor call that builds the same TensorDesc: TensorDesc("FLOAT32", (2, 3))."""
    text = f"TensorDesc({self.data_type.name!r}, {self.sizes!r}"
    if self.strides is not None:
      text += f", strides={self.strides!r}"
    if self.flags:
      text += (
        f", flags=TensorFlags.{self.flags.name}"
        if self.flags.name
        else f", flags={int(self.flags)}"
      )
    if self.total_tensor_size_in_bytes != self.minimum_size_in_bytes:
      text += f", total_tensor_size_in_bytes={self.total_tensor_size_in_bytes}"
    if self.guaranteed_base_offset_alignment:
      text += f", guaranteed_base_offset_alignment={self.guaranteed_base_offset_alignment}"
    return text.replace("'", '"') + ")"

  @classmethod
  def from_dml(cls, value: Any, what: str = "tensor") -> TensorDesc:
    """A DML_TENSOR_DESC in DirectML's JSON form, as DirectML's tools write it.

    Both forms are accepted: the collapsed one (``{"DataType": "FLOAT32", "Sizes":
    [2, 3]}``) and the long one (``{"Type": "DML_TENSOR_TYPE_BUFFER", "Desc": {...}}``).
    Strides absent or empty mean packed; a TotalTensorSizeInBytes of 0 or absent
    means DMLCalcBufferTensorSize; Flags is a name or a list of names OR-ed together.

    Raises:
      TypeError, ValueError: naming `what` and the field, for a value of the wrong kind,
        a missing DataType or Sizes, or a DimensionCount that is not len(Sizes).

    Examples:
      >>> TensorDesc.from_dml({"DataType": "FLOAT16", "Sizes": [2, 3], "Strides": [4, 1]})
      TensorDesc("FLOAT16", (2, 3), strides=(4, 1))
    """
    if not isinstance(value, dict):
      raise TypeError(f"{what} must be a tensor desc object; got {type(value).__name__}")
    body = value.get("Desc", value) if "Desc" in value else value
    missing = [name for name in ("DataType", "Sizes") if name not in body]
    if missing:
      raise ValueError(f"{what}: the tensor desc has no {' or '.join(missing)}")
    sizes = as_int_tuple(body["Sizes"], f"{what}.Sizes")
    count = body.get("DimensionCount", len(sizes))
    if as_int(count, f"{what}.DimensionCount") != len(sizes):
      raise ValueError(
        f"{what}.DimensionCount is {count} but Sizes has {len(sizes)} entries; make them agree"
      )
    strides = body.get("Strides") or None
    total = body.get("TotalTensorSizeInBytes") or None
    return cls(
      body["DataType"],
      sizes,
      strides=None if strides is None else as_int_tuple(strides, f"{what}.Strides"),
      flags=_flags_from_dml(body.get("Flags", "NONE"), f"{what}.Flags"),
      total_tensor_size_in_bytes=total,
      guaranteed_base_offset_alignment=body.get("GuaranteedBaseOffsetAlignment", 0),
    )

  def html(self) -> _html.Html:
    """Every DML field in a table: what a notebook shows for a TensorDesc.

    Returns:
      An `Html` object: Jupyter renders its table; its repr is the text form.

    Examples:
      >>> TensorDesc("FLOAT16", (2, 3), strides=(4, 1)).html()
      DML_BUFFER_TENSOR_DESC FLOAT16[2,3](strides={4,1})
        field                          value
        DataType                       DML_TENSOR_DATA_TYPE_FLOAT16 (2), 16-bit
        Flags                          DML_TENSOR_FLAG_NONE (0x0)
        DimensionCount                 2
        Sizes                          {2,3} (6 elements)
        Strides                        {4,1}
        TotalTensorSizeInBytes         16 (= DMLCalcBufferTensorSize)
        GuaranteedBaseOffsetAlignment  0 (no promise beyond the 16-byte minimum)
    """
    return _html.tensor_desc(self, packed_strides(self.sizes))

  def _repr_html_(self) -> str:
    return self.html().markup

  def violations(
    self, feature_level: FeatureLevelLike = None, *, is_output: bool = False
  ) -> tuple[Violation, ...]:
    """Every tensor-layer rule this description breaks at `feature_level` (default: newest).

    These are the rules that need no operator (data type, rank, sizes, strides, element
    count, TotalTensorSizeInBytes, alignment, flags); an operator adds its own
    (`OperatorDesc.violations`). `is_output`: the tensor is bound as an output.
    """
    level = FeatureLevel.from_any(feature_level)
    check = Checker(level)
    check_tensor_layer(
      self, check, "Tensor", is_output=is_output, max_dimension_count=level.max_dimension_count
    )
    return tuple(check.violations)

  def validate(self, feature_level: FeatureLevelLike = None, *, is_output: bool = False) -> Self:
    """Checks the tensor-layer rules as DirectML would; returns self.

    Raises:
      DmlValidationError: listing every violated rule.

    Examples:
      >>> TensorDesc("FLOAT32", (2, 3), strides=(3, 1)).validate()
      TensorDesc("FLOAT32", (2, 3), strides=(3, 1))
      >>> TensorDesc("FLOAT32", (2, 3), total_tensor_size_in_bytes=16).validate()
      Traceback (most recent call last):
      ...
      dml_jax.DmlValidationError: DML_BUFFER_TENSOR_DESC is invalid at DML_FEATURE_LEVEL_6_4 (1 problem):
        - Tensor.TotalTensorSizeInBytes: must be >= DMLCalcBufferTensorSize = 24; got 16 (at FL 6_4)
    """
    level = FeatureLevel.from_any(feature_level)
    found = self.violations(level, is_output=is_output)
    if found:
      raise DmlValidationError(None, str(level), found)
    return self

  def _check_layer(
    self, check: Checker, name: str, *, is_output: bool, max_dimension_count: int
  ) -> None:
    check.expect(
      self.data_type != DataType.UNKNOWN, f"{name}.DataType", "must not be UNKNOWN", self.data_type
    )
    n = self.dimension_count
    check.expect(
      1 <= n <= max_dimension_count,
      f"{name}.DimensionCount",
      f"must be in [1, {max_dimension_count}] (DML_TENSOR_DIMENSION_COUNT_MAX"
      f"{'1' if max_dimension_count == 8 else ''})",
      n,
      hint="ranks 6 to 8 need FL >= 3_0" if max_dimension_count == 5 and 5 < n <= 8 else None,
    )
    sizes_ok = check.expect(
      all(s >= 1 for s in self.sizes),
      f"{name}.Sizes",
      "every size must be >= 1 (DirectML has no empty tensors)",
      self.sizes,
    )
    strides_ok = True
    if self.strides is not None:
      strides_ok = check.expect(
        len(self.strides) == n,
        f"{name}.Strides",
        f"must be null or have DimensionCount ({n}) entries",
        self.strides,
      )
      strides_ok = strides_ok and check.expect(
        all(d >= 0 for d in self.strides),
        f"{name}.Strides",
        "strides are UINT and cannot be negative",
        self.strides,
      )
    if not (sizes_ok and strides_ok):
      return
    check.expect(
      self.buffer_element_count <= MAX_ELEMENT_COUNT,
      f"{name}.Sizes",
      f"a buffer tensor may address at most 2**32 - 1 elements, these address"
      f" {self.buffer_element_count}",
      self.sizes,
    )
    minimum = self.minimum_size_in_bytes
    check.expect(
      self.total_tensor_size_in_bytes >= minimum,
      f"{name}.TotalTensorSizeInBytes",
      f"must be >= DMLCalcBufferTensorSize = {minimum}",
      self.total_tensor_size_in_bytes,
    )
    alignment = self.guaranteed_base_offset_alignment
    element_bytes = max(1, self.data_type.size_in_bits // 8)
    check.expect(
      alignment == 0 or (alignment & (alignment - 1) == 0 and alignment >= element_bytes),
      f"{name}.GuaranteedBaseOffsetAlignment",
      f"must be 0 or a power of two >= the element size ({element_bytes} bytes)",
      alignment,
    )
    check.expect(
      not int(self.flags) & ~int(TensorFlags.OWNED_BY_DML),
      f"{name}.Flags",
      "the only DML_TENSOR_FLAGS bit is OWNED_BY_DML (0x1)",
      hex(self.flags),
    )
    if is_output:
      check.expect(
        not self.flags & TensorFlags.OWNED_BY_DML,
        f"{name}.Flags",
        "OWNED_BY_DML is allowed on input tensors only",
        self.flags.name,
      )


def check_tensor_layer(
  tensor: TensorDesc, check: Checker, name: str, *, is_output: bool, max_dimension_count: int
) -> None:
  """Adds to `check` the tensor-layer rules `tensor`, the field `name`, breaks.

  The rules that need no operator: data type, rank, sizes, strides, element count,
  TotalTensorSizeInBytes, alignment, flags (OWNED_BY_DML on inputs only).
  """
  tensor._check_layer(check, name, is_output=is_output, max_dimension_count=max_dimension_count)
