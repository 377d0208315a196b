"""The operator descriptor protocol: what every `DML_*_OPERATOR_DESC` mirror shares.

An operator module defines a frozen dataclass subclassing `OperatorDesc`, with
DirectML's fields declared by `dml_field` (name and kind), and provides:

- `OPERATOR` (DirectML's name without DML_OPERATOR_), `SUPPORT` (its
  tensor-support tables per feature level) and `FUNCTION` (its functional API);
- `infer_output()` (or `infer_outputs()` for several outputs): the OutputTensor
  DirectML expects, or None where the fields define none;
- `check_rules(check)`: its own and its cross-tensor rules;
- `lower(*arrays)`: the operator as lax on arrays that passed validation;
- `explain_output()`: how its output follows from its fields, in words;
- optionally `OUTPUT_DATA_TYPE_FROM`: the DML field whose data type the outputs
  have (default: the first input tensor), `OUT_OF_RANGE_INDICES`: what an
  out-of-range index does (default: dml_jax's clamping policy), for `dml.explain`,
  and `IN_PLACE`: whether an output may be bound to an input's buffer.

Everything else derives from the field declarations: coercion of constructor
arguments, `dml_inputs` / `dml_outputs` / `dml_attributes`, the repr (which
round-trips), `from_dml` and `to_dml`, validation, the HTML tables. The class registers itself
with `registry.register`.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar, Self

import jax

from dml_jax._src import fields as fields_lib
from dml_jax._src import html as html_lib
from dml_jax._src import validation
from dml_jax._src.dtypes import DataType
from dml_jax._src.errors import Checker, DmlValidationError, Violation
from dml_jax._src.feature_level import FeatureLevel, FeatureLevelLike, SupportTable
from dml_jax._src.fields import DmlField, FieldKind
from dml_jax._src.tensor_desc import TensorDesc


class OperatorDesc:
  """Base of the `DML_*_OPERATOR_DESC` mirrors (frozen dataclasses)."""

  OPERATOR: ClassVar[str]
  """DirectML's operator name without the DML_OPERATOR_ prefix."""
  SUPPORT: ClassVar[SupportTable]
  """The operator's tensor-support tables, by the level each applies from."""
  FUNCTION: ClassVar[str]
  """The functional API's name in `dml_jax` (gather_nd for GATHER_ND and GATHER_ND1); it
  takes the input arrays by their fixture roles and the attributes by their field names."""
  OUTPUT_DATA_TYPE_FROM: ClassVar[str | None] = None
  """The DML field whose DataType every output has: a tensor, or a DataType field (the fills'
  ValueDataType); None: the first input tensor."""
  OUTPUT_RANKS_FOLLOW_INPUT: ClassVar[bool] = True
  """Every given output has the first input's DimensionCount (False: the operator's rules
  say which ranks its outputs take, as NONZERO_COORDINATES's do)."""
  OUT_OF_RANGE_INDICES: ClassVar[str] = (
    "DirectML leaves the result undefined; dml_jax applies the negative-index rule, then"
    " clamps into [0, size - 1]."
  )
  """What an out-of-range index does, in a sentence (for an operator with IndicesTensor)."""
  IN_PLACE: ClassVar[bool] = False
  """Whether DirectML lets an output be bound to an input's buffer (the operator's in-place
  form): `dml.execute` and model files then accept an output aliasing an input; otherwise
  they refuse it. ELEMENT_WISE_IDENTITY, the fills (which read no input) and the scans
  (CUMULATIVE_SUMMATION, CUMULATIVE_PRODUCT) have one."""

  # -- what each operator provides -------------------------------------------

  def infer_output(self) -> TensorDesc | None:
    """The OutputTensor DirectML expects, or None if the fields do not define one."""
    raise NotImplementedError(f"{type(self).__name__} must define infer_output or infer_outputs")

  def infer_outputs(self) -> tuple[TensorDesc | None, ...] | None:
    """Every output DirectML expects, in field order (None: the fields define none)."""
    inferred = self.infer_output()
    return None if inferred is None else (inferred,)

  def check_rules(self, check: Checker) -> None:
    """The operator's own rules and its cross-tensor rules."""
    raise NotImplementedError

  def lower(self, *arrays: Any) -> jax.Array | tuple[jax.Array, ...]:
    """The operator as lax primitives; `arrays` are the inputs the descriptor describes."""
    # `*arrays: Any`: each operator names its arrays (input, indices, ...), and mypy takes
    # such an override of a gradual `*arrays` as compatible; they are jax.Arrays.
    raise NotImplementedError

  def lower_bound(
    self, arrays: Sequence[jax.Array], parts: Sequence[bool]
  ) -> jax.Array | tuple[jax.Array, ...]:
    """The lowering of a dispatch on bound buffers (`dml.execute`, models): `parts[i]` says
    that input i is cut out of a larger buffer in the program rather than being a whole
    buffer. An operator whose usual form would copy such inputs out first (JOIN on XLA:CPU)
    reads them in place instead; the others lower as `lower` does."""
    del parts
    return self.lower(*arrays)

  def explain_output(self) -> list[str]:
    """How the output follows from the fields, in sentences (for `dml.explain`)."""
    raise NotImplementedError

  def output_sizes_rule(self, expected: tuple[int, ...]) -> str:
    """The rule a given OutputTensor.Sizes breaks when it is not `expected`."""
    return validation.exact_sizes_rule(expected)

  # -- construction ----------------------------------------------------------------
  # An operator's dataclass fields declare the canonical types its attributes hold after
  # __post_init__; under `if TYPE_CHECKING:` the class also declares an `__init__` taking what
  # the constructor accepts (sequences of tensors, SupportsIndex, None for a derived count).
  # At run time TYPE_CHECKING is False, the class body defines no __init__ and dataclass
  # generates it (dataclasses.replace works on the fields); type checkers see the declared one
  # (mypy's dataclass plugin keeps an __init__ the class defines). tests/typing checks that each
  # lists the fields in order.

  def __post_init__(self) -> None:
    values = {}
    for field in fields_lib.dml_fields(self):
      values[field.name] = fields_lib.coerce(field, getattr(self, field.name))
    for name, value in values.items():
      object.__setattr__(self, name, value)
    for field in fields_lib.dml_fields(self):  # None for a count or a derived field: compute it
      if values[field.name] is None and (field.count_of or field.derive):
        object.__setattr__(self, field.name, fields_lib.derived_value(self, field))

  @classmethod
  def from_dml(cls, desc: Mapping[str, Any]) -> Self:
    """The descriptor from DirectML's own field names and JSON values.

    This is the form DirectML's tools write (a DxDispatch model's ``"Desc"``):
    tensors as ``{"DataType": ..., "Sizes": [...], ...}``, enums as names, counts
    such as InputCount explicit or absent. Fields it does not know are refused.

    Raises:
      TypeError, ValueError: naming the field, for a missing tensor, an unknown
        field or a value of the wrong kind.

    Examples:
      >>> from dml_jax import GatherElementsDesc
      >>> GatherElementsDesc.from_dml({
      ...     "InputTensor": {"DataType": "FLOAT32", "Sizes": [3, 3]},
      ...     "IndicesTensor": {"DataType": "UINT32", "Sizes": [2, 3]},
      ...     "OutputTensor": {"DataType": "FLOAT32", "Sizes": [2, 3]},
      ...     "Axis": 0,
      ... })
      GatherElementsDesc(input_tensor=TensorDesc("FLOAT32", (3, 3)), indices_tensor=TensorDesc("UINT32", (2, 3)), axis=0, output_tensor=TensorDesc("FLOAT32", (2, 3)))
    """
    if not isinstance(desc, Mapping):
      raise TypeError(f"{cls.__name__}.from_dml takes a mapping; got {type(desc).__name__}")
    known = {field.dml_name: field for field in fields_lib.dml_fields(cls)}
    unknown = [name for name in desc if name not in known]
    if unknown:
      raise ValueError(
        f"DML_{cls.OPERATOR}_OPERATOR_DESC has no field {', '.join(map(repr, unknown))};"
        f" its fields are {', '.join(known)}"
      )
    missing = [
      name
      for name, field in known.items()
      if name not in desc and field.kind.is_tensor and not field.optional
    ]
    if missing:
      raise ValueError(f"DML_{cls.OPERATOR}_OPERATOR_DESC needs {', '.join(missing)}")
    values: dict[str, Any] = {}
    for name, value in desc.items():
      field = known[name]
      if value is None and field.optional:  # null: an optional tensor left out
        values[field.name] = None
        continue
      values[field.name] = field.kind.codec.from_dml(field, value, desc)
    for name, field in known.items():
      if name not in desc and field.kind.is_tensor and field.optional:
        values[field.name] = None  # absent: the same (DIAGONAL_MATRIX1's InputTensor)
    return cls(**values)

  def to_dml(self, *, infer_outputs: bool = False) -> dict[str, Any]:
    """The descriptor in DirectML's JSON form (a DxDispatch model's ``"Desc"``), which
    `from_dml` reads back: ``type(d).from_dml(d.to_dml()) == d``.

    Every field is written, counts and derived fields included, with the value the
    descriptor holds; an output left to inference (None) is left out, unless
    `infer_outputs`, which writes the inferred one, as a model file needs it. A NaN is
    written as ``"nan"`` (JSON keeps neither its sign nor its payload), except a FLOAT16
    scalar union's, written as its half bits.

    Examples:
      >>> from dml_jax import GatherElementsDesc, TensorDesc
      >>> desc = GatherElementsDesc(TensorDesc("FLOAT32", (3, 3)), TensorDesc("UINT32", (2, 3)), axis=0)
      >>> desc.to_dml()
      {'InputTensor': {'DataType': 'FLOAT32', 'Sizes': [3, 3]}, 'IndicesTensor': {'DataType': 'UINT32', 'Sizes': [2, 3]}, 'Axis': 0}
      >>> desc.to_dml(infer_outputs=True)["OutputTensor"]
      {'DataType': 'FLOAT32', 'Sizes': [2, 3]}
      >>> GatherElementsDesc.from_dml(desc.to_dml()) == desc
      True
    """
    values = {field.dml_name: getattr(self, field.name) for field in fields_lib.dml_fields(self)}
    if infer_outputs:
      outputs = list(self.outputs)  # the given ones, else the inferred ones
      for field in fields_lib.dml_fields(self):
        if field.output:
          count = 1 if field.kind is FieldKind.TENSOR else len(outputs)
          if values[field.dml_name] is not None and field.kind is FieldKind.TENSOR_ARRAY:
            count = len(values[field.dml_name])
          taken, outputs = outputs[:count], outputs[count:]
          values[field.dml_name] = taken[0] if field.kind is FieldKind.TENSOR else tuple(taken)
    document = {}
    for field in fields_lib.dml_fields(self):
      value = values[field.dml_name]
      if value is not None:
        document[field.dml_name] = field.kind.codec.to_dml(field, value, values)
    return document

  # -- the tensors and attributes, as DirectML names them ---------------------------

  def dml_inputs(self) -> tuple[tuple[str, str, TensorDesc], ...]:
    """(DML field, support-table row, tensor) for every input tensor, in struct order.

    An array of tensors gives one entry per element (InputTensors[0], ...).
    """
    return tuple(self._tensors(output=False, inferred=False))

  def dml_outputs(self, inferred: bool = False) -> tuple[tuple[str, str, TensorDesc | None], ...]:
    """(DML field, support-table row, tensor) for every output; a tensor not given is None,
    or with `inferred` the inferred one (None where none can be inferred)."""
    return tuple(self._tensors(output=True, inferred=inferred))

  def _tensors(self, *, output: bool, inferred: bool) -> Iterator[tuple[str, str, Any]]:
    inferred_outputs = self.infer_outputs() if output and inferred else None
    position = 0
    for field in fields_lib.dml_fields(self):
      if not field.kind.is_tensor or field.output != output:
        continue
      value = getattr(self, field.name)
      if value is None and not output:  # an optional input left out (DIAGONAL_MATRIX1's)
        continue
      if field.kind is FieldKind.TENSOR:
        if value is None and inferred_outputs is not None:
          value = inferred_outputs[position]
        position += 1
        yield field.dml_name, field.dml_name, value
        continue
      if value is None and output:
        value = inferred_outputs if inferred_outputs is not None else (None,)
      for i, tensor in enumerate(value):
        yield f"{field.dml_name}[{i}]", field.dml_name, tensor
      position += len(value)

  def output_data_type_source(self) -> tuple[str, DataType | None]:
    """(what names it, the DataType) every output must have: a tensor's DataType
    ("InputTensor.DataType"), or a DataType field ("ValueDataType"), which validation
    reports where an output differs; ("", None) if none."""
    if self.OUTPUT_DATA_TYPE_FROM is None:
      first = next(iter(self.dml_inputs()), None)
      return ("", None) if first is None else (f"{first[0]}.DataType", first[2].data_type)
    field = fields_lib.field_by_dml_name(self, self.OUTPUT_DATA_TYPE_FROM)
    value = getattr(self, field.name)
    if field.kind is FieldKind.TENSOR_ARRAY:
      return (f"{field.dml_name}[0].DataType", value[0].data_type if value else None)
    if field.kind is FieldKind.TENSOR:
      return f"{field.dml_name}.DataType", value.data_type
    return field.dml_name, value

  def dml_tensors(self) -> tuple[tuple[str, TensorDesc | None, bool], ...]:
    """(DML field, tensor, inferred) for every tensor, inputs first, then the outputs.

    An output not given is the inferred one (None if the fields define none).
    """
    tensors: list[tuple[str, TensorDesc | None, bool]]
    tensors = [(field, tensor, False) for field, _, tensor in self.dml_inputs()]
    given = self.dml_outputs()
    if all(tensor is not None for _, _, tensor in given):
      tensors += [(field, tensor, False) for field, _, tensor in given]
    else:
      tensors += [(field, tensor, True) for field, _, tensor in self.dml_outputs(inferred=True)]
    return tuple(tensors)

  def dml_attributes(self) -> tuple[tuple[str, Any], ...]:
    """(DML field, value) for every attribute (the fields that are not tensors), in order.

    Examples:
      >>> from dml_jax import GatherNdDesc, TensorDesc
      >>> GatherNdDesc(TensorDesc("FLOAT32", (2, 2)), TensorDesc("UINT32", (2, 1))).dml_attributes()
      (('InputDimensionCount', 2), ('IndicesDimensionCount', 2))
    """
    return tuple(
      (field.dml_name, getattr(self, field.name))
      for field in fields_lib.dml_fields(self)
      if field.is_attribute
    )

  @property
  def outputs(self) -> tuple[TensorDesc, ...]:
    """Every output tensor: the ones given, else the inferred ones.

    Raises:
      DmlValidationError: if none were given and the fields define none.
    """
    found = tuple(tensor for _, _, tensor in self.dml_outputs(inferred=True))
    if any(tensor is None for tensor in found):
      self.validate()  # raises, naming what prevents the inference
      raise AssertionError(f"{self!r}: no output inferred but no violation found")
    return found  # type: ignore[return-value]

  @property
  def output(self) -> TensorDesc:
    """The OutputTensor: the one given, else the inferred one.

    Raises:
      DmlValidationError: if none was given and the fields define none.
      TypeError: for an operator with several outputs (use `outputs`).
    """
    output_fields = [f for f in fields_lib.dml_fields(self) if f.output]
    if any(f.kind is FieldKind.TENSOR_ARRAY for f in output_fields):
      raise TypeError(f"DML_OPERATOR_{self.OPERATOR} has OutputTensors: use .outputs")
    if len(output_fields) > 1:
      names = ", ".join(f.dml_name for f in output_fields)
      raise TypeError(f"DML_OPERATOR_{self.OPERATOR} has several outputs ({names}): use .outputs")
    return self.outputs[0]

  # -- validation ------------------------------------------------------------------

  def violations(self, feature_level: FeatureLevelLike = None) -> tuple[Violation, ...]:
    """Every rule this descriptor breaks at `feature_level` (default: newest)."""
    return validation.violations(self, FeatureLevel.from_any(feature_level))

  def validate(self, feature_level: FeatureLevelLike = None) -> Self:
    """Checks the descriptor as DirectML's CreateOperator would; returns self.

    Raises:
      DmlValidationError: listing every violated rule.
    """
    level = FeatureLevel.from_any(feature_level)
    found = validation.violations(self, level)
    if found:  # raised here, so a notebook's traceback ends in this frame
      raise DmlValidationError(self.OPERATOR, str(level), found)
    return self

  def is_valid(self, feature_level: FeatureLevelLike = None) -> bool:
    """Whether DirectML would accept this descriptor at `feature_level` (default: newest).

    `validate` raises with every broken rule instead; `violations` lists them.

    Examples:
      >>> from dml_jax import GatherElementsDesc, TensorDesc
      >>> desc = GatherElementsDesc(TensorDesc("FLOAT32", (3, 3)), TensorDesc("INT32", (2, 3)), axis=0)
      >>> desc.is_valid("3_0"), desc.is_valid("2_1")  # 2-D tensors, INT32 indices: from 3_0
      (True, False)
    """
    return not self.violations(feature_level)

  # -- display -----------------------------------------------------------------------

  def __repr__(self) -> str:
    """A constructor call that builds the same descriptor (fields at their default left out)."""
    parts = []
    for field in fields_lib.dml_fields(self):
      value = getattr(self, field.name)
      if _is_default(self, field, value):
        continue
      parts.append(f"{field.name}={_repr_value(value)}")
    return f"{type(self).__name__}({', '.join(parts)})"

  def __str__(self) -> str:
    """The compact form: DML names, tensors as FLOAT32[2,3], and the output after ->."""
    parts = [f"{field}={tensor}" for field, _, tensor in self.dml_inputs()]
    parts += [f"{field}={html_lib.show(value)}" for field, value in self.dml_attributes()]
    outputs = [str(tensor) for _, _, tensor in self.dml_outputs(inferred=True)]
    shown = outputs[0] if len(outputs) == 1 else f"({', '.join(outputs)})"
    return f"DML_OPERATOR_{self.OPERATOR}({', '.join(parts)}) -> {shown}"

  def html(self, feature_level: FeatureLevelLike = None) -> html_lib.Html:
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
    output_fields = {field for field, _, _ in self.dml_outputs(inferred=True)}
    tensors = [
      (field, "output" if field in output_fields else "input", tensor, inferred)
      for field, tensor, inferred in self.dml_tensors()
    ]
    return html_lib.operator_desc(
      self.OPERATOR,
      f"DML_{self.OPERATOR}_OPERATOR_DESC",
      tensors,
      self.dml_attributes(),
      str(level),
      self.violations(level),
    )

  def _repr_html_(self) -> str:
    return self.html().markup


def _is_default(desc: OperatorDesc, field: DmlField, value: Any) -> bool:
  """Whether the repr may leave `field` out: its value is what leaving it out gives."""
  if field.count_of or field.derive:
    return value == fields_lib.derived_value(desc, field)
  default = _dataclass_default(type(desc), field.name)
  return (
    default is not dataclasses.MISSING
    and value == default
    and type(value) is type(default)
    and repr(value) == repr(default)  # -0.0 is not the default 0.0
  )


def _dataclass_default(cls: type, name: str) -> Any:
  for f in dataclasses.fields(cls):
    if f.name == name:
      return f.default
  return dataclasses.MISSING


def _repr_value(value: Any) -> str:
  if isinstance(value, tuple) and value and isinstance(value[0], TensorDesc):
    inner = ", ".join(map(repr, value))
    return f"({inner},)" if len(value) == 1 else f"({inner})"
  if isinstance(value, enum.Enum):  # as the public name spells it: PaddingMode.REFLECTION
    return f"{type(value).__name__}.{value.name}"
  if isinstance(value, float) and not math.isfinite(value):  # nan and inf are no Python names
    return f"float({str(value)!r})"
  return repr(value)
