"""What every operator descriptor shares: validation, output inference, dispatch.

An operator module defines a frozen dataclass subclassing `OperatorDesc` with
DirectML's fields (snake_case), its tensor-support table, its own rules
(`_check_fields`), its output inference (`_infer_output`) and its lowering
(`lower`, plain lax on arrays that already passed validation).
"""

from __future__ import annotations

import abc
import dataclasses
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import jax
import numpy as np

from dml_jax._src import dtypes
from dml_jax._src import html as _html
from dml_jax._src.dtypes import DataType
from dml_jax._src.errors import Checker, DmlValidationError, Violation
from dml_jax._src.feature_level import FeatureLevel, SupportTable
from dml_jax._src.tensor_desc import MAX_ELEMENT_COUNT, TensorDesc, _as_int


class OperatorDesc(abc.ABC):
  """Base of the `DML_*_OPERATOR_DESC` mirrors (frozen dataclasses)."""

  OPERATOR: ClassVar[str]
  """DirectML's operator name without the DML_OPERATOR_ prefix."""
  SUPPORT: ClassVar[SupportTable]
  output_tensor: TensorDesc | None  # a field of every operator descriptor

  # -- what each operator provides -------------------------------------------

  @abc.abstractmethod
  def _inputs(self) -> Iterator[tuple[str, str, TensorDesc]]:
    """(field name, support-table row, tensor) for every input tensor."""

  @abc.abstractmethod
  def _infer_output(self) -> TensorDesc | None:
    """The OutputTensor DirectML expects, or None if the fields do not define one."""

  @abc.abstractmethod
  def _check_fields(self, check: Checker) -> None:
    """Operator-level and cross-tensor rules (§4 steps 2 and 3)."""

  @abc.abstractmethod
  def lower(self, *arrays: jax.Array) -> jax.Array:
    """The operator as lax primitives; arrays are those the descriptor describes."""

  # -- shared behaviour --------------------------------------------------------

  @property
  def output(self) -> TensorDesc:
    """The OutputTensor: the one given, else the inferred one.

    Raises:
      DmlValidationError: if none was given and the fields define none.
    """
    given = self.output_tensor
    if given is not None:
      return given
    inferred = self._infer_output()
    if inferred is None:
      self.validate()  # raises, naming what prevents the inference
      raise AssertionError(f"{self!r}: no output inferred but no violation found")
    return inferred

  def violations(self, feature_level: Any = None) -> tuple[Violation, ...]:
    """Every rule this descriptor breaks at `feature_level` (default: newest)."""
    return _violations(self, FeatureLevel.from_any(feature_level))

  def validate(self, feature_level: Any = None) -> OperatorDesc:
    """Checks the descriptor as DirectML's CreateOperator would; returns self.

    Raises:
      DmlValidationError: listing every violated rule.
    """
    level = FeatureLevel.from_any(feature_level)
    found = _violations(self, level)
    if found:  # raised here, so a notebook's traceback ends in this frame
      raise DmlValidationError(self.OPERATOR, str(level), found)
    return self

  def is_valid(self, feature_level: Any = None) -> bool:
    return not self.violations(feature_level)

  def _check_output(self, check: Checker) -> None:
    """An explicit OutputTensor: the operator's rank, the input's data type, exact sizes."""
    given = self.output_tensor
    if given is None:
      return
    name, _, first = next(iter(self._inputs()))
    rank_ok = check_same_rank(check, (name, first), ("OutputTensor", given))
    check.expect(
      given.data_type == first.data_type,
      "OutputTensor.DataType",
      f"must equal {name}.DataType ({first.data_type})",
      given.data_type,
    )
    expected = self._infer_output()
    if rank_ok and expected is not None:
      check.expect(
        given.sizes == expected.sizes,
        "OutputTensor.Sizes",
        self._output_sizes_rule(expected.sizes),
        given.sizes,
      )

  def _output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    return f"must be exactly {_sizes(expected)}"

  def _fields_repr(self) -> str:
    raise NotImplementedError

  # -- notebooks -----------------------------------------------------------------

  def dml_tensors(self) -> tuple[tuple[str, TensorDesc | None, bool], ...]:
    """(DML field, tensor, inferred) for every tensor, inputs first, then OutputTensor.

    The OutputTensor is the given one, else the inferred one (None if the
    fields define none).
    """
    tensors = [(field, tensor, False) for field, _, tensor in self._inputs()]
    if self.output_tensor is not None:
      tensors.append(("OutputTensor", self.output_tensor, False))
    else:
      tensors.append(("OutputTensor", self._infer_output(), True))
    return tuple(tensors)

  def dml_attributes(self) -> tuple[tuple[str, Any], ...]:
    """(DML field, value) for every attribute (the fields that are not tensors).

    Examples:
      >>> from dml_jax import GatherNdDesc, TensorDesc
      >>> GatherNdDesc(TensorDesc("FLOAT32", (2, 2)), TensorDesc("UINT32", (2, 1))).dml_attributes()
      (('InputDimensionCount', 2), ('IndicesDimensionCount', 2))
    """
    attributes = []
    for field in dataclasses.fields(self):  # type: ignore[arg-type]
      value = getattr(self, field.name)
      if field.name == "output_tensor" or isinstance(value, TensorDesc | tuple):
        continue
      if field.name == "batch_dimension_count" and self.OPERATOR == "GATHER_ND":
        continue  # GATHER_ND's struct has no BatchDimensionCount (GATHER_ND1's has)
      attributes.append(("".join(w.capitalize() for w in field.name.split("_")), value))
    return tuple(attributes)

  def html(self, feature_level: Any = None) -> _html.Html:
    """The descriptor as tables: its tensors, its attributes, and its validity at a level.

    Jupyter renders the result (its repr is the same as text); a descriptor
    shown on its own renders with the newest level.

    Args:
      feature_level: the DML_FEATURE_LEVEL to validate at (default: newest).

    Examples:
      >>> from dml_jax import JoinDesc, TensorDesc
      >>> desc = JoinDesc((TensorDesc("INT8", (2,)), TensorDesc("INT8", (3,))), axis=0)
      >>> desc.html()
      DML_OPERATOR_JOIN (DML_JOIN_OPERATOR_DESC)
        field            kind               DataType  Sizes  Strides  TotalTensorSizeInBytes  Flags
        InputTensors[0]  input              INT8      {2}    null     4                       NONE   ✓
        InputTensors[1]  input              INT8      {3}    null     4                       NONE   ✓
        OutputTensor     output (inferred)  INT8      {5}    null     8                       NONE   ✓
        field       kind       value
        Axis        attribute  0      ✓
        InputCount  attribute  2      ✓
      valid at DML_FEATURE_LEVEL_6_4
      >>> desc.html("3_0")  # doctest: +ELLIPSIS
      DML_OPERATOR_JOIN (DML_JOIN_OPERATOR_DESC)
      ...
      DML_OPERATOR_JOIN is invalid at DML_FEATURE_LEVEL_3_0 (2 problems):
      ...
    """
    level = FeatureLevel.from_any(feature_level)
    tensors = [
      (field, "output" if field == "OutputTensor" else "input", tensor, inferred)
      for field, tensor, inferred in self.dml_tensors()
    ]
    return _html.operator_desc(
      self.OPERATOR,
      f"DML_{self.OPERATOR}_OPERATOR_DESC",
      tensors,
      self.dml_attributes(),
      str(level),
      self.violations(level),
    )

  def _repr_html_(self) -> str:
    return self.html().markup

  def __repr__(self) -> str:
    output = self._infer_output() if self.output_tensor is None else self.output_tensor
    return f"{type(self).__name__}({self._fields_repr()}) -> {output!r}"


def _sizes(sizes: tuple[int, ...]) -> str:
  return "{" + ",".join(map(str, sizes)) + "}"


def check_axis(check: Checker, field: str, axis: int, dimension_count: int) -> bool:
  return check.expect(
    0 <= axis < dimension_count,
    field,
    f"must be in [0, DimensionCount) = [0, {dimension_count})",
    axis,
    hint="DirectML axes are UINT: negative axes do not exist" if axis < 0 else None,
  )


def check_same_rank(
  check: Checker, reference: tuple[str, TensorDesc], *others: tuple[str, TensorDesc]
) -> bool:
  ok = True
  name, tensor = reference
  for other_name, other in others:
    ok &= check.expect(
      other.dimension_count == tensor.dimension_count,
      f"{other_name}.DimensionCount",
      f"must equal {name}.DimensionCount ({tensor.dimension_count}); pad"
      f" lower-rank tensors with leading 1s",
      other.dimension_count,
    )
  return ok


as_level = FeatureLevel.from_any
"""A `feature_level` argument as a FeatureLevel (None: the newest). Bound once: looking a
method up on an Enum class costs more than the call (about 0.1 us per dispatch)."""


def as_attribute(value: Any, name: str) -> int:
  """A UINT attribute of a descriptor (TypeError unless an integer)."""
  return value if type(value) is int else _as_int(value, name)


def as_tensor(value: Any, name: str) -> TensorDesc:
  if not isinstance(value, TensorDesc):
    raise TypeError(f"{name} must be a TensorDesc; got {type(value).__name__}")
  return value


@functools.lru_cache(maxsize=4096)
def _violations(desc: OperatorDesc, level: FeatureLevel) -> tuple[Violation, ...]:
  check = Checker(level)
  table = desc.SUPPORT.at(level)
  if table is None:
    check.fail(
      "DML_OPERATOR_TYPE",
      f"DML_OPERATOR_{desc.OPERATOR} exists from FL {desc.SUPPORT.introduced} on",
      f"FL {level}",
    )
    return tuple(check.violations)
  roles = [(field, row, tensor, False) for field, row, tensor in desc._inputs()]
  if desc.output_tensor is not None:
    roles.append(("OutputTensor", "OutputTensor", desc.output_tensor, True))
  for field, row, tensor, is_output in roles:
    tensor.check(check, field, is_output=is_output, max_dimension_count=level.max_dimension_count)
    _check_support(check, desc.SUPPORT, level, field, table[row], row, tensor)
  inferred = desc._infer_output() if desc.output_tensor is None else None
  if inferred is not None and all(inferred.sizes != t.sizes for _, _, t in desc._inputs()):
    # An inferred output has the input's rank and data type (the tables give outputs the
    # inputs' rows), so only its sizes can break a rule the inputs keep: the element count.
    check.expect(
      inferred.element_count <= MAX_ELEMENT_COUNT,
      "OutputTensor.Sizes",
      f"a buffer tensor may address at most 2**32 - 1 elements, these address"
      f" {inferred.element_count}",
      inferred.sizes,
    )
  desc._check_fields(check)
  desc._check_output(check)
  return tuple(check.violations)


def _check_support(
  check: Checker,
  support: SupportTable,
  level: FeatureLevel,
  field: str,
  row: Any,
  row_name: str,
  tensor: TensorDesc,
) -> None:
  """The operator's tensor-support table: data types and dimension counts per role."""
  if tensor.data_type not in row.data_types:
    since = _first_level(support, row_name, lambda r: tensor.data_type in r.data_types)
    hint = f"{tensor.data_type} is supported here from FL {since}" if since else None
    if tensor.data_type.is_signed_integer and since and row_name == "IndicesTensor":
      hint = (
        "negative (signed) indices need FL >= 3_0; use an unsigned index type (UINT32) below it"
      )
    check.fail(
      f"{field}.DataType",
      f"must be one of {', '.join(map(str, row.data_types))} for DML_OPERATOR_{support.operator}",
      tensor.data_type,
      hint,
    )
  low, high = row.dimension_counts
  n = tensor.dimension_count
  if not low <= n <= high:
    since = _first_level(
      support, row_name, lambda r: r.dimension_counts[0] <= n <= r.dimension_counts[1]
    )
    check.fail(
      f"{field}.DimensionCount",
      f"DML_OPERATOR_{support.operator} supports {row.describe_dimension_counts()} dimensions",
      n,
      f"{n} dimensions are supported from FL {since}"
      if since and since > level
      else "pad lower-rank tensors with leading 1s"
      if n < low
      else None,
    )


def _first_level(support: SupportTable, row_name: str, ok) -> FeatureLevel | None:
  for level in FeatureLevel:
    table = support.at(level)
    if table is not None and ok(table[row_name]):
      return level
  return None


# -- dispatch ----------------------------------------------------------------------


def _apply(desc: OperatorDesc, *arrays: jax.Array) -> jax.Array:
  with jax.named_scope(f"dml.{desc.OPERATOR}"):
    return desc.lower(*arrays)


apply_jitted = jax.jit(_apply, static_argnums=0)
"""`desc.lower` under jit, for a descriptor validated already (the device layer's path)."""


def operator_function(
  describe: Callable[..., OperatorDesc], roles: Callable[[int], Sequence[tuple[str, bool]]]
) -> Callable[..., jax.Array]:
  """The functional API's jitted body: describe, validate and lower, at trace time.

  Returns `fn(static, *arrays)`, jitted with `static` = (feature level, declared
  DirectML data types, *attributes) as its one static argument; `describe(types,
  shapes, *attributes)` builds the descriptor. Declared types of None stand for the
  arrays' own (the eager fast path's key: see `input_and_indices`), derived here from
  the dtypes through `operands` with the (DML field, is_index) pairs `roles(len(arrays))`,
  so with its errors. A repeated eager call with the same shapes is a plain jitted call,
  with no descriptor work; inside another transformation the lowering is inlined.
  """

  def apply(static: tuple, *arrays: jax.Array) -> jax.Array:
    level, types, *attributes = static
    if types is None:
      named = zip(arrays, roles(len(arrays)), strict=True)
      _, types = operands(*((array, *role) for array, role in named))
    desc = describe(types, tuple(a.shape for a in arrays), *attributes)
    return _apply(desc.validate(level), *arrays)

  apply.__name__ = f"dml_{describe.__name__.removeprefix('_describe_')}"
  return jax.jit(apply, static_argnums=0)


def operands(*arguments: tuple[Any, str, bool]) -> tuple[list[Any], tuple[DataType, ...]]:
  """(argument, DML field, is_index) triples -> arrays JAX can hold and their DataTypes."""
  arrays, types = [], []
  for x, role, is_index in arguments:
    array, data_type = dtypes.as_operand(x, role=role, is_index=is_index)
    arrays.append(array)
    types.append(data_type)
  return arrays, tuple(types)


# The public functions' preludes run on every eager call, so for the common case, concrete
# JAX arrays, they only check the arrays' classes and declare no data types (None): the
# jitted body derives them from the dtypes at trace time, once per key, through `operands`,
# which owns every rule and error message and handles everything else eagerly. The slow
# path declares None too wherever the types are the arrays' own, so that a NumPy argument
# and a JAX argument of one dtype share a trace.
_ARRAY_TYPES = dtypes.ARRAY_TYPES


def index_roles(indices_role: str) -> Callable[[int], tuple[tuple[str, bool], ...]]:
  """The roles of an operator taking (InputTensor, an index tensor), for `operator_function`."""
  roles = (("InputTensor", False), (indices_role, True))
  return lambda count: roles


def list_roles(field: str) -> Callable[[int], tuple[tuple[str, bool], ...]]:
  """The roles of data tensors `field[0]`, `field[1]`, ... (JOIN's InputTensors)."""
  return lambda count: tuple((f"{field}[{i}]", False) for i in range(count))


def input_and_indices(
  input: Any, indices: Any, indices_role: str
) -> tuple[Any, Any, tuple[DataType, DataType] | None]:
  """`operands((input, "InputTensor", False), (indices, indices_role, True))`, flattened;
  None for types that are the arrays' own."""
  if type(input) in _ARRAY_TYPES and type(indices) in _ARRAY_TYPES:
    return input, indices, None
  (input, indices), types = operands((input, "InputTensor", False), (indices, indices_role, True))
  return input, indices, _unless_own(types, (input, indices))


def inputs(values: Sequence[Any], field: str) -> tuple[Sequence[Any], tuple[DataType, ...] | None]:
  """`operands` of the data tensors `field[0]`, `field[1]`, ...; None for the arrays' own."""
  for x in values:
    if type(x) not in _ARRAY_TYPES:
      arrays, types = operands(*((x, f"{field}[{i}]", False) for i, x in enumerate(values)))
      return arrays, _unless_own(types, arrays)
  return values, None


def _unless_own(types: tuple[DataType, ...], arrays: Sequence[Any]) -> tuple[DataType, ...] | None:
  """None if `types` are what the arrays' dtypes give (a narrowed 64-bit host index is not)."""
  own = tuple(dtypes._FROM_NUMPY.get(np.dtype(a.dtype)) for a in arrays)
  return None if own == types else types
