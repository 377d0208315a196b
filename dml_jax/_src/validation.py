"""The rule engine: every rule DirectML's CreateOperator applies to a descriptor, at a level.

In order: the operator exists at the level; each tensor obeys the tensor layer
(`TensorDesc.check`) and the operator's tensor-support table (data types and
dimension counts per role); an inferred output addresses at most 2**32 - 1
elements; the operator's own rules (`desc.check_rules`); and a given output has
the operator's rank, the declared output data type and the inferred sizes. The
result is cached per (descriptor, level), so validating inside a trace is free
after the first time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from dml_jax._src.dtypes import DataType
from dml_jax._src.errors import Checker, Violation
from dml_jax._src.feature_level import FeatureLevel, SupportTable, TensorSupport
from dml_jax._src.fields import dml_fields
from dml_jax._src.rules import braced, check_same_rank
from dml_jax._src.tensor_desc import MAX_ELEMENT_COUNT, TensorDesc, check_tensor_layer


@functools.lru_cache(maxsize=4096)
def violations(desc: Any, level: FeatureLevel) -> tuple[Violation, ...]:
  """Every rule `desc` (an OperatorDesc) breaks at `level`, in DirectML's order."""
  check = Checker(level)
  support: SupportTable = desc.SUPPORT
  table = support.at(level)
  if table is None:
    check.fail(
      "DML_OPERATOR_TYPE",
      f"DML_OPERATOR_{desc.OPERATOR} exists from FL {support.introduced} on",
      f"FL {level}",
    )
    return tuple(check.violations)
  given_outputs = [(f, row, t) for f, row, t in desc.dml_outputs() if t is not None]
  roles = [(f, row, t, False) for f, row, t in desc.dml_inputs()]
  roles += [(f, row, t, True) for f, row, t in given_outputs]
  for field, row, tensor, is_output in roles:
    check_tensor_layer(
      tensor, check, field, is_output=is_output, max_dimension_count=level.max_dimension_count
    )
    _check_support(check, support, level, field, table[row], row, tensor)
  if not given_outputs:
    _check_inferred_element_counts(check, desc)
  desc.check_rules(check)
  _check_given_outputs(check, desc)
  return tuple(check.violations)


def _check_inferred_element_counts(check: Checker, desc: Any) -> None:
  """An inferred output has the rank and data type the tables allow (they give outputs the
  inputs' rows), so only its sizes can break a rule the inputs keep: the element count."""
  input_sizes = {t.sizes for _, _, t in desc.dml_inputs()}
  for field, inferred in zip(_output_fields(desc), desc.infer_outputs() or (), strict=False):
    if inferred is not None and inferred.sizes not in input_sizes:
      check.expect(
        inferred.element_count <= MAX_ELEMENT_COUNT,
        f"{field}.Sizes",
        f"a buffer tensor may address at most 2**32 - 1 elements, these address"
        f" {inferred.element_count}",
        inferred.sizes,
      )


def _output_fields(desc: Any) -> list[str]:
  return [field for field, _, _ in desc.dml_outputs(inferred=True)]


def _check_given_outputs(check: Checker, desc: Any) -> None:
  """Given outputs: the operator's rank, the declared data type (but for index outputs), exactly
  the inferred sizes."""
  given = [(field, row, t) for field, row, t in desc.dml_outputs() if t is not None]
  if not given:
    return
  source_field, source_type = desc.output_data_type_source()
  reference = next(iter(desc.dml_inputs()), None) if desc.OUTPUT_RANKS_FOLLOW_INPUT else None
  inferred = desc.infer_outputs()
  index_rows = {f.dml_name for f in dml_fields(desc) if f.output and f.index}
  for i, (field, row, tensor) in enumerate(given):
    rank_ok = reference is None or check_same_rank(
      check, (reference[0], reference[2]), (field, tensor)
    )
    # An index output (ARGMAX's OutputTensor, TOP_K's OutputIndexTensor) has a data type of its
    # own, which its support-table row limits.
    if source_type is None or row in index_rows:
      pass
    elif source_field.endswith(".DataType"):  # a tensor's
      check.expect(
        tensor.data_type == source_type,
        f"{field}.DataType",
        f"must equal {source_field} ({source_type})",
        tensor.data_type,
      )
    else:  # a DataType field, which must match the outputs (the fills)
      check.expect(
        source_type == tensor.data_type,
        source_field,
        f"must equal {field}.DataType ({tensor.data_type})",
        source_type,
      )
    expected = inferred[i] if inferred is not None and i < len(inferred) else None
    if rank_ok and expected is not None:
      check.expect(
        tensor.sizes == expected.sizes,
        f"{field}.Sizes",
        desc.output_sizes_rule(expected.sizes),
        tensor.sizes,
      )


def exact_sizes_rule(expected: tuple[int, ...]) -> str:
  return f"must be exactly {braced(expected)}"


def _cast_hint(got: DataType, allowed: Sequence[DataType]) -> str | None:
  """How to convert an array of a type that no level allows, e.g. INT64 lengths to UINT64."""
  same_width = [t for t in allowed if t.size_in_bits == got.size_in_bits]
  candidates = same_width or list(allowed)
  dtype = candidates[0].numpy_dtype if candidates else None
  if dtype is None:
    return None
  from_list = (
    " (a Python list of integers becomes INT32, or INT64 with jax_enable_x64)"
    if got in (DataType.INT32, DataType.INT64)
    else ""
  )
  return (
    f"convert the array, e.g. np.asarray(x, np.{dtype.name}){from_list}; DirectML has no"
    f" {got} form of this tensor"
  )


def _check_support(
  check: Checker,
  support: SupportTable,
  level: FeatureLevel,
  field: str,
  row: TensorSupport,
  row_name: str,
  tensor: TensorDesc,
) -> None:
  """The operator's tensor-support table: data types and dimension counts per role."""
  if tensor.data_type not in row.data_types:
    since = first_level(support, row_name, lambda r: tensor.data_type in r.data_types)
    hint = f"{tensor.data_type} is supported here from FL {since}" if since else None
    if tensor.data_type.is_signed_integer and since and row_name == "IndicesTensor":
      hint = (
        "negative (signed) indices need FL >= 3_0; use an unsigned index type (UINT32) below it"
      )
    elif since is None:
      hint = _cast_hint(tensor.data_type, row.data_types)
    check.fail(
      f"{field}.DataType",
      f"must be one of {', '.join(map(str, row.data_types))} for DML_OPERATOR_{support.operator}",
      tensor.data_type,
      hint,
    )
  low, high = row.dimension_counts
  n = tensor.dimension_count
  already = any(v.field == f"{field}.DimensionCount" for v in check.violations)
  if not low <= n <= high and not already:  # one rank problem per tensor
    since = first_level(
      support, row_name, lambda r: r.dimension_counts[0] <= n <= r.dimension_counts[1]
    )
    check.fail(
      f"{field}.DimensionCount",
      f"DML_OPERATOR_{support.operator} supports {row.describe_dimension_counts()} dimensions",
      n,
      f"{n} dimension{'s are' if n != 1 else ' is'} supported from FL {since}"
      if since and since > level
      else "pad lower-rank tensors with leading 1s"
      if n < low
      else None,
    )


def first_level(
  support: SupportTable, row_name: str, ok: Callable[[TensorSupport], bool]
) -> FeatureLevel | None:
  """The first level whose table's row `row_name` satisfies `ok`, or None."""
  for level in FeatureLevel:
    table = support.at(level)
    if table is not None and ok(table[row_name]):
      return level
  return None
