"""The descriptor protocol beyond today's operators, on toy descriptors defined here.

The registered operators (tests/test_contract.py) have one output whose data type is the
first input's, and UINT attributes. DirectML's other data-movement operators need more:
ONE_HOT's output follows ValuesTensor, SPLIT has OutputTensors, PADDING has enums, UINT and
INT arrays, a FLOAT and a DML_SCALAR_UNION typed by another field. These toys, which are
never registered, check that the protocol (field declarations, validation, outputs as a
tuple, repr, from_dml, explain, HTML, the functional dispatch and the device layer) carries
each of those.
"""

from __future__ import annotations

import dataclasses
import enum
import math

import jax.numpy as jnp
import numpy as np
import pytest

import dml_jax as dml
from dml_jax import DataType, FeatureLevel, FieldKind, TensorDesc
from dml_jax._src import arguments, dispatch
from dml_jax._src.descriptor import OperatorDesc
from dml_jax._src.dtypes import ALL_DATA, INDEX_TYPES
from dml_jax._src.feature_level import SupportTable, support
from dml_jax._src.fields import dml_field, dml_fields
from tests.helpers import assert_bits_equal


class ToyMode(enum.IntEnum):
  """An enum of DirectML's shape: C names with a prefix, accepted with or without it."""

  FIRST = 0
  SECOND = 1

  @classmethod
  def from_any(cls, value):
    if isinstance(value, str):
      return cls[value.removeprefix("TOY_MODE_")]
    return cls(value)


def _support(operator, *roles):
  return SupportTable(
    operator, {FeatureLevel.FL_1_0: {r: support((1, 8), ALL_DATA) for r in roles}}
  )


@dataclasses.dataclass(frozen=True, repr=False)
class ToyOneHotDesc(OperatorDesc):
  """An output whose data type is ValuesTensor's, not the first input's."""

  OPERATOR = "TOY_ONE_HOT"
  SUPPORT = SupportTable(
    "TOY_ONE_HOT",
    {
      FeatureLevel.FL_1_0: {
        "IndicesTensor": support((1, 8), INDEX_TYPES),
        "ValuesTensor": support((1, 8), ALL_DATA),
        "OutputTensor": support((1, 8), ALL_DATA),
      }
    },
  )
  FUNCTION = "toy_one_hot"
  OUTPUT_DATA_TYPE_FROM = "ValuesTensor"

  indices_tensor: TensorDesc = dml_field("IndicesTensor", FieldKind.TENSOR, index=True)
  values_tensor: TensorDesc = dml_field("ValuesTensor", FieldKind.TENSOR)
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )

  def infer_output(self):
    return TensorDesc(self.values_tensor.data_type, self.indices_tensor.sizes)

  def check_rules(self, check):
    pass

  def lower(self, indices, values):
    return jnp.broadcast_to(values.reshape(-1)[0], indices.shape)

  def explain_output(self):
    return ["OutputTensor.DataType = ValuesTensor.DataType."]


@dataclasses.dataclass(frozen=True, repr=False)
class ToySplitDesc(OperatorDesc):
  """OutputTensors: the input cut into `parts` equal pieces along axis 0."""

  OPERATOR = "TOY_SPLIT"
  SUPPORT = _support("TOY_SPLIT", "InputTensor", "OutputTensors")
  FUNCTION = "toy_split"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  parts: int = dml_field("Parts", FieldKind.UINT)
  output_tensors: tuple[TensorDesc, ...] | None = dml_field(
    "OutputTensors", FieldKind.TENSOR_ARRAY, output=True, default=None
  )

  def infer_outputs(self):
    sizes = self.input_tensor.sizes
    if self.parts < 1 or sizes[0] % self.parts:
      return None
    piece = TensorDesc(self.input_tensor.data_type, (sizes[0] // self.parts, *sizes[1:]))
    return (piece,) * self.parts

  def check_rules(self, check):
    check.expect(
      self.parts >= 1 and self.input_tensor.sizes[0] % self.parts == 0,
      "Parts",
      "must divide InputTensor.Sizes[0]",
      self.parts,
    )

  def lower(self, input):
    return tuple(jnp.split(input, self.parts, axis=0))

  def explain_output(self):
    return [f"{self.parts} equal pieces along axis 0."]


@dataclasses.dataclass(frozen=True, repr=False)
class ToyAttributesDesc(OperatorDesc):
  """Every attribute kind: UINT array, INT array, enum, FLOAT, DML_SCALAR_UNION."""

  OPERATOR = "TOY_ATTRIBUTES"
  SUPPORT = _support("TOY_ATTRIBUTES", "InputTensor", "OutputTensor")
  FUNCTION = "toy_attributes"

  input_tensor: TensorDesc = dml_field("InputTensor", FieldKind.TENSOR)
  mode: ToyMode = dml_field("Mode", FieldKind.ENUM, enum_type=ToyMode)
  offsets: tuple[int, ...] = dml_field("Offsets", FieldKind.UINT_ARRAY)
  strides: tuple[int, ...] = dml_field("Strides", FieldKind.INT_ARRAY)
  scale: float = dml_field("Scale", FieldKind.FLOAT, default=1.0)
  value_data_type: DataType = dml_field(
    "ValueDataType", FieldKind.ENUM, enum_type=DataType, default=DataType.FLOAT32
  )
  value: float = dml_field(
    "Value", FieldKind.SCALAR_UNION, data_type_field="ValueDataType", default=0
  )
  output_tensor: TensorDesc | None = dml_field(
    "OutputTensor", FieldKind.TENSOR, output=True, default=None
  )
  dimension_count: int | None = dml_field("DimensionCount", FieldKind.UINT, count_of="offsets")

  def infer_output(self):
    return self.input_tensor

  def check_rules(self, check):
    pass

  def lower(self, input):
    return input

  def explain_output(self):
    return ["A copy."]


X = TensorDesc("FLOAT32", (4, 3))


def test_the_output_data_type_follows_the_declared_field():
  desc = ToyOneHotDesc(TensorDesc("UINT32", (2, 3)), TensorDesc("FLOAT16", (2,)))
  assert desc.output == TensorDesc("FLOAT16", (2, 3))
  assert desc.is_valid()
  assert dataclasses.replace(desc, output_tensor=TensorDesc("FLOAT16", (2, 3))).is_valid()
  wrong = dataclasses.replace(desc, output_tensor=TensorDesc("UINT32", (2, 3)))
  (violation,) = wrong.violations()
  assert violation.field == "OutputTensor.DataType"
  assert violation.rule == "must equal ValuesTensor.DataType (FLOAT16)"


def test_several_outputs_are_a_tuple_everywhere():
  desc = ToySplitDesc(X, parts=2)
  half = TensorDesc("FLOAT32", (2, 3))
  assert desc.outputs == (half, half)
  with pytest.raises(TypeError, match="has OutputTensors: use .outputs"):
    desc.output  # noqa: B018
  assert [f for f, _, _ in desc.dml_outputs(inferred=True)] == [
    "OutputTensors[0]",
    "OutputTensors[1]",
  ]
  assert [(f, inferred) for f, _, inferred in desc.dml_tensors()] == [
    ("InputTensor", False),
    ("OutputTensors[0]", True),
    ("OutputTensors[1]", True),
  ]
  assert str(desc) == (
    "DML_OPERATOR_TOY_SPLIT(InputTensor=FLOAT32[4,3], Parts=2) -> (FLOAT32[2,3], FLOAT32[2,3])"
  )
  given = dataclasses.replace(desc, output_tensors=(half, TensorDesc("FLOAT32", (3, 3))))
  assert [v.field for v in given.violations()] == ["OutputTensors[1].Sizes"]
  assert "OutputTensors[1] = FLOAT32[3,3] (given)" in dml.explain(given)
  assert "OutputTensors[0]" in str(desc.html())


def test_several_outputs_run_through_dispatch_and_the_device_layer():
  x = np.arange(12, dtype=np.float32).reshape(4, 3)
  run = dispatch.operator_function(
    lambda types, shapes, parts: ToySplitDesc(TensorDesc(types[0], shapes[0]), parts=parts),
    ToySplitDesc,
  )
  (array,), types = arguments.tensor_operands(ToySplitDesc, x)
  first, second = run((FeatureLevel.FL_6_4, types, 2), array)
  assert_bits_equal(first, x[:2])
  assert_bits_equal(second, x[2:])
  record = dml.Runner().run(ToySplitDesc(X, parts=2), x, device="cpu")
  assert len(record.outputs) == 2
  assert_bits_equal(record.outputs[1], x[2:])


def test_every_attribute_kind_is_coerced_shown_and_read_from_directml_json():
  desc = ToyAttributesDesc(X, mode="TOY_MODE_SECOND", offsets=np.array([1, 2]), strides=[-1, 1])
  assert desc.mode is ToyMode.SECOND and desc.offsets == (1, 2) and desc.strides == (-1, 1)
  assert desc.dimension_count == 2  # counted, as DirectML keeps it beside the array
  assert type(desc.scale) is float and desc.value == 0
  assert desc.dml_attributes() == (
    ("Mode", ToyMode.SECOND),
    ("Offsets", (1, 2)),
    ("Strides", (-1, 1)),
    ("Scale", 1.0),
    ("ValueDataType", DataType.FLOAT32),
    ("Value", 0),
    ("DimensionCount", 2),
  )
  assert repr(desc) == (
    'ToyAttributesDesc(input_tensor=TensorDesc("FLOAT32", (4, 3)), mode=ToyMode.SECOND,'
    " offsets=(1, 2), strides=(-1, 1))"
  )
  namespace = {"ToyAttributesDesc": ToyAttributesDesc, "ToyMode": ToyMode, **vars(dml)}
  assert eval(repr(desc), namespace) == desc
  half = ToyAttributesDesc.from_dml(
    {
      "InputTensor": {"DataType": "FLOAT32", "Sizes": [4, 3]},
      "Mode": "TOY_MODE_FIRST",
      "Offsets": [0, 0],
      "Strides": [1, 1],
      "Scale": "-inf",
      "ValueDataType": "FLOAT16",
      "Value": {"UInt16": 15360},  # the raw bits of half 1.0
      "DimensionCount": 2,
    }
  )
  assert half.scale == -math.inf and half.value == 1.0 and half.value_data_type is DataType.FLOAT16
  nan = ToyAttributesDesc.from_dml(
    {**_json(half), "ValueDataType": "FLOAT32", "Value": {"Float32": "nan"}}
  )
  assert math.isnan(nan.value)
  with pytest.raises(ValueError, match="needs the member 'Int16' for INT16"):
    ToyAttributesDesc.from_dml({**_json(half), "ValueDataType": "INT16", "Value": {"Int8": -1}})
  assert "Mode" in dml.explain(desc) and "SECOND" in str(desc.html())


def _json(desc):
  return {
    "InputTensor": {"DataType": "FLOAT32", "Sizes": list(desc.input_tensor.sizes)},
    "Mode": desc.mode.name,
    "Offsets": list(desc.offsets),
    "Strides": list(desc.strides),
  }


@pytest.mark.parametrize(
  "kwargs, message",
  [
    (
      dict(mode=0, offsets=3, strides=()),
      r"Offsets must be a sequence of integers; got the scalar 3",
    ),
    (dict(mode=0, offsets=(), strides=("1",)), r"Strides\[0\] must be an integer; got str"),
    (dict(mode=0, offsets=(), strides=(), scale="2"), r"Scale must be a number; got str"),
    (dict(mode=0, offsets=(), strides=(), value=True), r"Value must be a number; got bool"),
  ],
)
def test_wrong_kinds_of_attribute_are_type_errors(kwargs, message):
  with pytest.raises(TypeError, match=message):
    ToyAttributesDesc(X, **kwargs)


def test_unknown_and_missing_directml_fields_are_named():
  with pytest.raises(ValueError, match="has no field 'Axis'; its fields are InputTensor, Parts"):
    ToySplitDesc.from_dml({"InputTensor": {"DataType": "FLOAT32", "Sizes": [2]}, "Axis": 0})
  with pytest.raises(ValueError, match="DML_TOY_SPLIT_OPERATOR_DESC needs InputTensor"):
    ToySplitDesc.from_dml({"Parts": 1})
  with pytest.raises(ValueError, match=r"InputTensor: the tensor desc has no DataType"):
    ToySplitDesc.from_dml({"InputTensor": {"Sizes": [2]}, "Parts": 1})


def test_field_declarations_are_introspectable():
  kinds = [(f.dml_name, f.kind, f.output) for f in dml_fields(ToySplitDesc)]
  assert kinds == [
    ("InputTensor", FieldKind.TENSOR, False),
    ("Parts", FieldKind.UINT, False),
    ("OutputTensors", FieldKind.TENSOR_ARRAY, True),
  ]
  assert [f.argument for f in dml_fields(ToyOneHotDesc) if f.kind.is_tensor] == [
    "indices",
    "values",
    "output",
  ]
