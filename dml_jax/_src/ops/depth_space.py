"""DEPTH_TO_SPACE(1) and SPACE_TO_DEPTH(1): blocks of b x b pixels to and from channels.

All four operators take and give 4-D NCHW tensors and share one block edge b
(BlockSize, the same for height and width). The depth side of the pair is
{N, C * b * b, H, W}, the space side {N, C, H * b, W * b}: DEPTH_TO_SPACE reads the
depth side and writes the space side, SPACE_TO_DEPTH the reverse, each the exact
inverse of the other. Order (`DepthSpaceOrder`, the "1" versions only) says how
the depth side's channel axis packs (block row i, block column j, channel c):

    DEPTH_COLUMN_ROW:  depth channel (i * b + j) * C + c   (c fastest; ONNX mode DCR)
    COLUMN_ROW_DEPTH:  depth channel c * b * b + i * b + j (j fastest; ONNX mode CRD)

and space[n, c, h * b + i, w * b + j] = depth[n, that channel, h, w]. The operators
without a number have no Order field and pack as DEPTH_COLUMN_ROW.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from typing import TYPE_CHECKING, Any, ClassVar, SupportsIndex

import jax
from jax.typing import ArrayLike

from dml_jax._src import arguments, dispatch, enums, kernels, natural, registry
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import ALL_DATA, UP_TO_32_BIT, DataType
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
from dml_jax._src.kernels import space_to_depth_rows_triton
from dml_jax._src.kernels.partitioning import Roles
from dml_jax._src.rules import braced
from dml_jax._src.tensor_desc import TensorDesc

_PREFIX = "DML_DEPTH_SPACE_ORDER_"


class DepthSpaceOrder(enum.IntEnum):
  """`DML_DEPTH_SPACE_ORDER`, with DirectML's values: how a channel axis packs blocks.

  The names list the parts of the depth side's channel index from fastest to
  slowest. DEPTH_COLUMN_ROW: the channel fastest, then the block column, the
  block row slowest (ONNX DepthToSpace mode DCR, TensorFlow's depth_to_space).
  COLUMN_ROW_DEPTH: the block column fastest, then the block row, the channel
  slowest (ONNX mode CRD, ``torch.nn.functional.pixel_shuffle``).

  Examples:
    >>> DepthSpaceOrder.from_any("DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH")
    <DepthSpaceOrder.COLUMN_ROW_DEPTH: 1>
    >>> DepthSpaceOrder.from_any("depth_column_row") is DepthSpaceOrder.from_any(0)
    True
  """

  DEPTH_COLUMN_ROW = 0
  COLUMN_ROW_DEPTH = 1

  @classmethod
  def from_any(cls, value: Any) -> DepthSpaceOrder:
    """The order from the enum, its value, or its name with or without the DML prefix.

    Raises:
      ValueError: for a name or value that is no order (the message lists them).
      TypeError: for anything but a string or an integer.
    """
    return enums.member(cls, value, what="Order", prefix=_PREFIX)


# FL 1_0: floats; 2_1: the integers up to 32 bits; 5_0: the 64-bit types. Both tensors 4-D.
def _table(data_types: tuple[DataType, ...]) -> dict[str, Any]:
  row = support(4, data_types)
  return {"InputTensor": row, "OutputTensor": row}


_FLOATS = (DataType.FLOAT32, DataType.FLOAT16)
_FROM_2_1 = {
  FeatureLevel.FL_2_1: _table(UP_TO_32_BIT),
  FeatureLevel.FL_5_0: _table(ALL_DATA),
}


def _support(operator: str, *, numbered: bool) -> SupportTable:
  tables = dict(_FROM_2_1) if numbered else {FeatureLevel.FL_1_0: _table(_FLOATS), **_FROM_2_1}
  return SupportTable(operator, tables)


_ORDER_FORMULAS = {
  DepthSpaceOrder.DEPTH_COLUMN_ROW: "(i * b + j) * C + c",
  DepthSpaceOrder.COLUMN_ROW_DEPTH: "c * b * b + i * b + j",
}
_ORDER_WORDS = {
  DepthSpaceOrder.DEPTH_COLUMN_ROW: "the channel fastest, the block row slowest; ONNX mode DCR",
  DepthSpaceOrder.COLUMN_ROW_DEPTH: "the block column fastest, the channel slowest; ONNX mode"
  " CRD, PyTorch's pixel_shuffle",
}


class _DepthSpaceRules(OperatorDesc):
  """What the four share: the block arithmetic, the rules, the lowering, the explanation.

  `_TO_SPACE` says the direction (True: DEPTH_TO_SPACE(1)), `_NUMBERED` whether the
  struct has Order; `depth_space_order` is Order, or DEPTH_COLUMN_ROW without it.
  """

  _TO_SPACE: ClassVar[bool]
  _NUMBERED: ClassVar[bool]

  input_tensor: TensorDesc
  block_size: int

  @property
  def depth_space_order(self) -> DepthSpaceOrder:
    """Order for the "1" versions; DEPTH_COLUMN_ROW for the operators without the field."""
    return DepthSpaceOrder.DEPTH_COLUMN_ROW

  def _output_sizes(self) -> tuple[int, ...] | None:
    sizes, b = self.input_tensor.sizes, self.block_size
    if len(sizes) != 4 or b < 1:
      return None
    n, c, h, w = sizes
    if self._TO_SPACE:
      return None if c % (b * b) else (n, c // (b * b), h * b, w * b)
    return None if h % b or w % b else (n, c * b * b, h // b, w // b)

  def infer_output(self) -> TensorDesc | None:
    sizes = self._output_sizes()
    return None if sizes is None else TensorDesc(self.input_tensor.data_type, sizes)

  def check_rules(self, check: Checker) -> None:
    b = self.block_size
    if not check.expect(
      b >= 1,
      "BlockSize",
      "must be >= 1 (1 copies the input unchanged)",
      b,
      hint="a block holds b x b pixels: there are no empty blocks",
    ):
      return
    sizes = self.input_tensor.sizes
    if len(sizes) != 4:  # the support table reports the rank
      return
    if self._TO_SPACE:
      check.expect(
        sizes[1] % (b * b) == 0,
        "InputTensor.Sizes",
        f"the channel count Sizes[1] must be a multiple of BlockSize * BlockSize = {b * b}",
        sizes,
        hint=f"each output channel takes {b * b} input channels, one per pixel of a block",
      )
      return
    for dimension, name in ((2, "height"), (3, "width")):
      check.expect(
        sizes[dimension] % b == 0,
        "InputTensor.Sizes",
        f"the {name} Sizes[{dimension}] must be a multiple of BlockSize ({b})",
        sizes,
        hint="crop or pad the input to whole blocks first",
      )

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    formula = "{N, C/(b*b), H*b, W*b}" if self._TO_SPACE else "{N, C*b*b, H/b, W/b}"
    return f"must be {formula} = {braced(expected)} (b = BlockSize = {self.block_size})"

  def lower(self, input: jax.Array) -> jax.Array:
    if self._TO_SPACE:
      return self._transposed(input)
    column_row_depth = self.depth_space_order is DepthSpaceOrder.COLUMN_ROW_DEPTH
    fields = (self.block_size, column_row_depth)
    return kernels.lower(KERNELS, fields, self._transposed, input)

  def _transposed(self, input: jax.Array) -> jax.Array:
    """The lax form."""
    # Split the channel axis into (channel, block row, block column) in the order's packing
    # and the spatial axes into (size, block offset); one transpose moves the parts across.
    b, order = self.block_size, self.depth_space_order
    column_row_depth = order is DepthSpaceOrder.COLUMN_ROW_DEPTH
    if self._TO_SPACE:
      n, depth, h, w = input.shape
      c = depth // (b * b)
      if column_row_depth:  # (n, c, i, j, h, w) -> (n, c, h, i, w, j)
        parts, permutation = (n, c, b, b, h, w), (0, 1, 4, 2, 5, 3)
      else:  # (n, i, j, c, h, w) -> (n, c, h, i, w, j)
        parts, permutation = (n, b, b, c, h, w), (0, 3, 4, 1, 5, 2)
      return input.reshape(parts).transpose(permutation).reshape(n, c, h * b, w * b)
    n, c, height, width = input.shape
    h, w = height // b, width // b
    blocks = input.reshape(n, c, h, b, w, b)  # (n, c, h, i, w, j)
    permutation = (0, 1, 3, 5, 2, 4) if column_row_depth else (0, 3, 5, 1, 2, 4)
    return blocks.transpose(permutation).reshape(n, c * b * b, h, w)

  def explain_output(self) -> list[str]:
    sizes, b, order = self.input_tensor.sizes, self.block_size, self.depth_space_order
    if b < 1:
      return [f"BlockSize = {b}, but it must be at least 1: no output can be inferred."]
    lines = [f"b = BlockSize = {b}: blocks of {b} x {b} pixels."]
    if len(sizes) != 4:
      return lines + [f"InputTensor has {len(sizes)} dimensions, not 4 (NCHW): no output."]
    n, c, h, w = sizes
    if self._TO_SPACE:
      if c % (b * b):
        return lines + [f"C*b*b = InputTensor.Sizes[1] = {c} is no multiple of {b * b}: no output."]
      channels = c // (b * b)
      lines.append(
        f"InputTensor.Sizes = {{N, C*b*b, H, W}} = {braced(sizes)}: C = {c} / {b * b} ="
        f" {channels} channel(s)."
      )
      lines.append(
        f"OutputTensor.Sizes = {{N, C, H*b, W*b}} = {braced((n, channels, h * b, w * b))}."
      )
      lines.append(
        f"out[n, c, h*b + i, w*b + j] = in[n, {_ORDER_FORMULAS[order]}, h, w]: Order"
        f" {order.name} ({_ORDER_WORDS[order]})."
      )
    else:
      if h % b or w % b:
        return lines + [f"Height {h} and width {w} must be multiples of {b}: no output."]
      lines.append(
        f"InputTensor.Sizes = {{N, C, H*b, W*b}} = {braced(sizes)}: {h // b} x {w // b}"
        f" blocks per channel."
      )
      lines.append(
        f"OutputTensor.Sizes = {{N, C*b*b, H, W}} = {braced((n, c * b * b, h // b, w // b))}."
      )
      lines.append(
        f"out[n, {_ORDER_FORMULAS[order]}, h, w] = in[n, c, h*b + i, w*b + j]: Order"
        f" {order.name} ({_ORDER_WORDS[order]})."
      )
    lines.append(f"OutputTensor.DataType = InputTensor.DataType = {self.input_tensor.data_type}.")
    if not self._NUMBERED:
      lines.append(
        f"DML_OPERATOR_{self.OPERATOR} has no Order field: it packs as DEPTH_COLUMN_ROW, as"
        f" {self.OPERATOR}1 with that order does."
      )
    return lines


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class DepthToSpaceDesc(_DepthSpaceRules):
  """`DML_DEPTH_TO_SPACE_OPERATOR_DESC` (from FL 1_0): channels to b x b blocks.

  Input {N, C*b*b, H, W}, output {N, C, H*b, W*b}, channels packed as
  DEPTH_COLUMN_ROW (see `DepthToSpace1Desc` for the other order).

  Attributes:
    input_tensor: InputTensor, 4-D.
    block_size: BlockSize b >= 1.
    output_tensor: OutputTensor; None infers it.

  Examples:
    >>> desc = DepthToSpaceDesc(TensorDesc("UINT32", (1, 8, 2, 3)), block_size=2)
    >>> desc
    DepthToSpaceDesc(input_tensor=TensorDesc("UINT32", (1, 8, 2, 3)), block_size=2)
    >>> print(desc)
    DML_OPERATOR_DEPTH_TO_SPACE(InputTensor=UINT32[1,8,2,3], BlockSize=2) -> UINT32[1,2,4,6]
  """

  OPERATOR = "DEPTH_TO_SPACE"
  SUPPORT = _support("DEPTH_TO_SPACE", numbered=False)
  FUNCTION = "depth_to_space"
  _TO_SPACE = True
  _NUMBERED = False

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  block_size: int = dml_field("BlockSize", FieldKind.UINT)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      block_size: SupportsIndex,
      output_tensor: TensorDesc | None = None,
    ) -> None: ...


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class DepthToSpace1Desc(_DepthSpaceRules):
  """`DML_DEPTH_TO_SPACE1_OPERATOR_DESC` (from FL 2_1): DEPTH_TO_SPACE with an Order.

  Attributes:
    input_tensor: InputTensor, 4-D {N, C*b*b, H, W}.
    block_size: BlockSize b >= 1.
    order: Order, a `DepthSpaceOrder` (or its name or value).
    output_tensor: OutputTensor {N, C, H*b, W*b}; None infers it.

  Examples:
    >>> desc = DepthToSpace1Desc(TensorDesc("FLOAT16", (1, 8, 2, 3)), block_size=2,
    ...                          order="COLUMN_ROW_DEPTH")
    >>> desc
    DepthToSpace1Desc(input_tensor=TensorDesc("FLOAT16", (1, 8, 2, 3)), block_size=2, order=DepthSpaceOrder.COLUMN_ROW_DEPTH)
    >>> print(desc)
    DML_OPERATOR_DEPTH_TO_SPACE1(InputTensor=FLOAT16[1,8,2,3], BlockSize=2, Order=COLUMN_ROW_DEPTH) -> FLOAT16[1,2,4,6]
  """

  OPERATOR = "DEPTH_TO_SPACE1"
  SUPPORT = _support("DEPTH_TO_SPACE1", numbered=True)
  FUNCTION = "depth_to_space1"
  _TO_SPACE = True
  _NUMBERED = True

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  block_size: int = dml_field("BlockSize", FieldKind.UINT)
  order: DepthSpaceOrder = dml_field("Order", FieldKind.ENUM, enum_type=DepthSpaceOrder)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      block_size: SupportsIndex,
      order: DepthSpaceOrder | str | SupportsIndex,
      output_tensor: TensorDesc | None = None,
    ) -> None: ...

  @property
  def depth_space_order(self) -> DepthSpaceOrder:
    return self.order


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class SpaceToDepthDesc(_DepthSpaceRules):
  """`DML_SPACE_TO_DEPTH_OPERATOR_DESC` (from FL 1_0): b x b blocks to channels.

  Input {N, C, H, W} with H and W multiples of b, output {N, C*b*b, H/b, W/b},
  channels packed as DEPTH_COLUMN_ROW (see `SpaceToDepth1Desc` for the other order).

  Attributes:
    input_tensor: InputTensor, 4-D.
    block_size: BlockSize b >= 1.
    output_tensor: OutputTensor; None infers it.

  Examples:
    >>> desc = SpaceToDepthDesc(TensorDesc("FLOAT32", (1, 2, 4, 6)), block_size=2)
    >>> desc
    SpaceToDepthDesc(input_tensor=TensorDesc("FLOAT32", (1, 2, 4, 6)), block_size=2)
    >>> print(desc)
    DML_OPERATOR_SPACE_TO_DEPTH(InputTensor=FLOAT32[1,2,4,6], BlockSize=2) -> FLOAT32[1,8,2,3]
  """

  OPERATOR = "SPACE_TO_DEPTH"
  SUPPORT = _support("SPACE_TO_DEPTH", numbered=False)
  FUNCTION = "space_to_depth"
  _TO_SPACE = False
  _NUMBERED = False

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  block_size: int = dml_field("BlockSize", FieldKind.UINT)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      block_size: SupportsIndex,
      output_tensor: TensorDesc | None = None,
    ) -> None: ...


@registry.register
@dataclasses.dataclass(frozen=True, repr=False)
class SpaceToDepth1Desc(_DepthSpaceRules):
  """`DML_SPACE_TO_DEPTH1_OPERATOR_DESC` (from FL 2_1): SPACE_TO_DEPTH with an Order.

  Attributes:
    input_tensor: InputTensor, 4-D {N, C, H, W}, H and W multiples of b.
    block_size: BlockSize b >= 1.
    order: Order, a `DepthSpaceOrder` (or its name or value).
    output_tensor: OutputTensor {N, C*b*b, H/b, W/b}; None infers it.

  Examples:
    >>> desc = SpaceToDepth1Desc(TensorDesc("INT8", (1, 2, 4, 6)), block_size=2,
    ...                          order=DepthSpaceOrder.DEPTH_COLUMN_ROW)
    >>> print(desc)
    DML_OPERATOR_SPACE_TO_DEPTH1(InputTensor=INT8[1,2,4,6], BlockSize=2, Order=DEPTH_COLUMN_ROW) -> INT8[1,8,2,3]
  """

  OPERATOR = "SPACE_TO_DEPTH1"
  SUPPORT = _support("SPACE_TO_DEPTH1", numbered=True)
  FUNCTION = "space_to_depth1"
  _TO_SPACE = False
  _NUMBERED = True

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  block_size: int = dml_field("BlockSize", FieldKind.UINT)
  order: DepthSpaceOrder = dml_field("Order", FieldKind.ENUM, enum_type=DepthSpaceOrder)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )

  if TYPE_CHECKING:
    # The constructor as type checkers see it (see OperatorDesc).
    def __init__(
      self,
      input_tensor: TensorDesc,
      block_size: SupportsIndex,
      order: DepthSpaceOrder | str | SupportsIndex,
      output_tensor: TensorDesc | None = None,
    ) -> None: ...

  @property
  def depth_space_order(self) -> DepthSpaceOrder:
    return self.order


# -- the functional API ------------------------------------------------------------------


def depth_to_space(
  input: ArrayLike, *, block_size: int, feature_level: FeatureLevelLike = None
) -> jax.Array:
  """DML_OPERATOR_DEPTH_TO_SPACE: moves channels into b x b blocks of pixels.

  An NCHW input {N, C*b*b, H, W} becomes {N, C, H*b, W*b}, with
  ``out[n, c, h*b + i, w*b + j] = input[n, (i*b + j)*C + c, h, w]`` (the
  DEPTH_COLUMN_ROW packing, ONNX DepthToSpace's default mode DCR).

  Unlike a ``jnp.reshape``/``jnp.transpose`` formulation, the input must be 4-D (3-D: N = 1),
  its channel count a multiple of b*b, and the block size at least 1; anything
  else is a validation error, not a reshape error or a silent broadcast.

  See also: `depth_to_space1` (either packing), `space_to_depth` (the inverse).

  Args:
    input: InputTensor, 4-D (NCHW), or 3-D (CHW: N = 1).
    block_size: BlockSize b >= 1.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for a non-integer block size or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> depth_to_space(np.arange(8, dtype=np.float32).reshape(1, 8, 1, 1), block_size=2)
    Array([[[[0., 2.],
             [4., 6.]],
    <BLANKLINE>
            [[1., 3.],
             [5., 7.]]]], dtype=float32)
  """
  (input,), types = arguments.tensor_operands(DepthToSpaceDesc, input)
  level = as_level(feature_level)
  return _depth_to_space((level, types, as_int(block_size, "BlockSize")), input)


def depth_to_space1(
  input: ArrayLike,
  *,
  block_size: int,
  order: DepthSpaceOrder | str | int,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_DEPTH_TO_SPACE1: moves channels into b x b blocks, in either packing.

  An NCHW input {N, C*b*b, H, W} becomes {N, C, H*b, W*b}, with
  ``out[n, c, h*b + i, w*b + j] = input[n, k, h, w]`` where k is
  ``(i*b + j)*C + c`` for DEPTH_COLUMN_ROW (ONNX mode DCR) and
  ``c*b*b + i*b + j`` for COLUMN_ROW_DEPTH (ONNX mode CRD, which is what
  ``torch.nn.functional.pixel_shuffle`` computes).

  Unlike a ``jnp.reshape``/``jnp.transpose`` formulation, the input must be 4-D (3-D: N = 1),
  its channel count a multiple of b*b, and the block size at least 1; anything
  else is a validation error.

  See also: `depth_to_space` (DEPTH_COLUMN_ROW only, from FL 1_0),
  `space_to_depth1` (the inverse).

  Args:
    input: InputTensor, 4-D (NCHW), or 3-D (CHW: N = 1).
    block_size: BlockSize b >= 1.
    order: Order: a `DepthSpaceOrder`, its value, or its name with or without the
      ``DML_DEPTH_SPACE_ORDER_`` prefix.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    ValueError: for an order that DML_DEPTH_SPACE_ORDER lacks.
    TypeError: for a non-integer block size or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> x = np.arange(8, dtype=np.int8).reshape(1, 8, 1, 1)
    >>> depth_to_space1(x, block_size=2, order="COLUMN_ROW_DEPTH")[0, 0]
    Array([[0, 1],
           [2, 3]], dtype=int8)
    >>> depth_to_space1(x, block_size=2, order="DEPTH_COLUMN_ROW")[0, 0]
    Array([[0, 2],
           [4, 6]], dtype=int8)
  """
  (input,), types = arguments.tensor_operands(DepthToSpace1Desc, input)
  level = as_level(feature_level)
  static = (level, types, as_int(block_size, "BlockSize"), DepthSpaceOrder.from_any(order))
  return _depth_to_space1(static, input)


def space_to_depth(
  input: ArrayLike, *, block_size: int, feature_level: FeatureLevelLike = None
) -> jax.Array:
  """DML_OPERATOR_SPACE_TO_DEPTH: moves b x b blocks of pixels into channels.

  An NCHW input {N, C, H*b, W*b} becomes {N, C*b*b, H, W}, with
  ``out[n, (i*b + j)*C + c, h, w] = input[n, c, h*b + i, w*b + j]`` (the
  DEPTH_COLUMN_ROW packing, ONNX SpaceToDepth's).

  Unlike a ``jnp.reshape``/``jnp.transpose`` formulation, the input must be 4-D (3-D: N = 1),
  its height and width multiples of b, and the block size at least 1; anything
  else is a validation error.

  See also: `space_to_depth1` (either packing), `depth_to_space` (the inverse).

  Args:
    input: InputTensor, 4-D (NCHW), or 3-D (CHW: N = 1).
    block_size: BlockSize b >= 1.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    TypeError: for a non-integer block size or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> x = np.array([[[[0, 1], [2, 3]]]], np.uint8)
    >>> space_to_depth(x, block_size=2).reshape(-1)
    Array([0, 1, 2, 3], dtype=uint8)
  """
  (input,), types = arguments.tensor_operands(SpaceToDepthDesc, input)
  level = as_level(feature_level)
  return _space_to_depth((level, types, as_int(block_size, "BlockSize")), input)


def space_to_depth1(
  input: ArrayLike,
  *,
  block_size: int,
  order: DepthSpaceOrder | str | int,
  feature_level: FeatureLevelLike = None,
) -> jax.Array:
  """DML_OPERATOR_SPACE_TO_DEPTH1: moves b x b blocks into channels, in either packing.

  An NCHW input {N, C, H*b, W*b} becomes {N, C*b*b, H, W}, with
  ``out[n, k, h, w] = input[n, c, h*b + i, w*b + j]`` where k is
  ``(i*b + j)*C + c`` for DEPTH_COLUMN_ROW and ``c*b*b + i*b + j`` for
  COLUMN_ROW_DEPTH (what ``torch.nn.functional.pixel_unshuffle`` computes).

  Unlike a ``jnp.reshape``/``jnp.transpose`` formulation, the input must be 4-D (3-D: N = 1),
  its height and width multiples of b, and the block size at least 1; anything
  else is a validation error.

  See also: `space_to_depth` (DEPTH_COLUMN_ROW only, from FL 1_0),
  `depth_to_space1` (the inverse).

  Args:
    input: InputTensor, 4-D (NCHW), or 3-D (CHW: N = 1).
    block_size: BlockSize b >= 1.
    order: Order: a `DepthSpaceOrder`, its value, or its name with or without the
      ``DML_DEPTH_SPACE_ORDER_`` prefix.
    feature_level: the DML_FEATURE_LEVEL to validate against (default newest).

  Returns:
    OutputTensor.

  Raises:
    DmlValidationError: if DirectML would reject the operator.
    ValueError: for an order that DML_DEPTH_SPACE_ORDER lacks.
    TypeError: for a non-integer block size or a dtype DirectML lacks.

  Examples:
    >>> import numpy as np
    >>> x = np.arange(8, dtype=np.int16).reshape(1, 2, 2, 2)
    >>> space_to_depth1(x, block_size=2, order="COLUMN_ROW_DEPTH").reshape(-1)
    Array([0, 1, 2, 3, 4, 5, 6, 7], dtype=int16)
    >>> space_to_depth1(x, block_size=2, order="DEPTH_COLUMN_ROW").reshape(-1)
    Array([0, 4, 1, 5, 2, 6, 3, 7], dtype=int16)
  """
  (input,), types = arguments.tensor_operands(SpaceToDepth1Desc, input)
  level = as_level(feature_level)
  static = (level, types, as_int(block_size, "BlockSize"), DepthSpaceOrder.from_any(order))
  return _space_to_depth1(static, input)


def _describe_depth_to_space(
  types: tuple[DataType, ...], shapes: tuple[tuple[int, ...], ...], block_size: int
) -> DepthToSpaceDesc:
  return DepthToSpaceDesc(TensorDesc(types[0], shapes[0]), block_size=block_size)


def _describe_depth_to_space1(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  block_size: int,
  order: DepthSpaceOrder,
) -> DepthToSpace1Desc:
  return DepthToSpace1Desc(TensorDesc(types[0], shapes[0]), block_size=block_size, order=order)


def _describe_space_to_depth(
  types: tuple[DataType, ...], shapes: tuple[tuple[int, ...], ...], block_size: int
) -> SpaceToDepthDesc:
  return SpaceToDepthDesc(TensorDesc(types[0], shapes[0]), block_size=block_size)


def _describe_space_to_depth1(
  types: tuple[DataType, ...],
  shapes: tuple[tuple[int, ...], ...],
  block_size: int,
  order: DepthSpaceOrder,
) -> SpaceToDepth1Desc:
  return SpaceToDepth1Desc(TensorDesc(types[0], shapes[0]), block_size=block_size, order=order)


_depth_to_space = dispatch.operator_function(
  _describe_depth_to_space, DepthToSpaceDesc, natural.Ranks(names=("block_size",)), moves_bits=True
)
_depth_to_space1 = dispatch.operator_function(
  _describe_depth_to_space1,
  DepthToSpace1Desc,
  natural.Ranks(names=("block_size", "order")),
  moves_bits=True,
)
_space_to_depth = dispatch.operator_function(
  _describe_space_to_depth, SpaceToDepthDesc, natural.Ranks(names=("block_size",)), moves_bits=True
)
_space_to_depth1 = dispatch.operator_function(
  _describe_space_to_depth1,
  SpaceToDepth1Desc,
  natural.Ranks(names=("block_size", "order")),
  moves_bits=True,
)


# -- kernels ---------------------------------------------------------------------------------
# SPACE_TO_DEPTH's and SPACE_TO_DEPTH1's. `fields`: (block size, whether the order is
# COLUMN_ROW_DEPTH). The operand: the NCHW input.

KERNELS = (
  kernels.Kernel(
    "space_to_depth_rows_triton",
    "cuda",
    applies=lambda fields, config, x: space_to_depth_rows_triton.applies(
      x.shape, fields[0], x.dtype, config
    ),
    # The batch passes through; the channels and the spatial dimensions, which change size,
    # are needed whole.
    roles=lambda fields, config, x: Roles(
      "n c h w -> n c2 h2 w2", whole=("c", "h", "w", "c2", "h2", "w2")
    ),
    call=lambda fields, config, interpret, x: functools.partial(
      space_to_depth_rows_triton.space_to_depth_rows,
      block_size=fields[0],
      column_row_depth=fields[1],
      config=config,
      interpret=interpret,
    ),
    one_device=True,  # over several devices it would gather sharded columns
  ),
)
"""SPACE_TO_DEPTH's kernel (`kernels.forms` chooses): each input row split once into its b
output rows (32-bit data, outputs of 16 MiB or more)."""
