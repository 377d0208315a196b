"""Small named checks that several operators share (axes, ranks, counts, sizes).

Each takes the `Checker` collecting one descriptor's violations, records a
violation naming the DML field, the rule and the value found, and returns
whether the rule held, so that later rules can skip what they cannot judge.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dml_jax._src.errors import Checker
from dml_jax._src.tensor_desc import TensorDesc


def braced(sizes: Sequence[int] | None) -> str:
  """Sizes as DirectML's docs write them: {2,3}."""
  return "null" if sizes is None else "{" + ",".join(map(str, sizes)) + "}"


def check_axis(check: Checker, field: str, axis: int, dimension_count: int) -> bool:
  """An Axis (a UINT) in [0, DimensionCount)."""
  return check.expect(
    0 <= axis < dimension_count,
    field,
    f"must be in [0, DimensionCount) = [0, {dimension_count})",
    axis,
    hint=(
      f"DirectML axes are UINT: negative axes do not exist (axis {axis} of a"
      f" {dimension_count}-D tensor is {axis + dimension_count})"
      if -dimension_count <= axis < 0
      else "DirectML axes are UINT: negative axes do not exist"
      if axis < 0
      else None
    ),
  )


def check_same_rank(
  check: Checker, reference: tuple[str, TensorDesc], *others: tuple[str, TensorDesc]
) -> bool:
  """Every tensor has the reference's DimensionCount (DirectML pads with leading 1s)."""
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


def check_count(check: Checker, field: str, count: int, counted: str, length: int) -> bool:
  """A count field (InputCount, RepeatsCount, ...) equals the length of the array it counts."""
  return check.expect(
    count == length, field, f"must equal the number of {counted} ({length})", count
  )


def check_sizes_off_axis(
  check: Checker,
  field: str,
  sizes: tuple[int, ...],
  reference: tuple[str, tuple[int, ...]],
  axis: int,
) -> bool:
  """`sizes` equal the reference's in every dimension but `axis`."""
  name, expected = reference
  mismatched = [d for d in range(len(expected)) if d != axis and sizes[d] != expected[d]]
  if not mismatched:
    return True
  check.fail(
    field,
    f"must equal {name} {braced(expected)} in every dimension but Axis ({axis});"
    f" dimension {mismatched[0]} differs",
    sizes,
  )
  return False


def rank_of(tensor_field: str) -> Callable[[Any], int]:
  """The `derive` of a dimension count (GATHER_ND's, SCATTER_ND's): None means the DimensionCount
  of the descriptor's tensor `tensor_field`."""
  return lambda desc: getattr(desc, tensor_field).dimension_count
