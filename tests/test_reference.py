"""Tests of the NumPy reference oracle and of the DirectML example fixtures.

Three layers of evidence that ``dml_jax._src.reference`` is right:

1. It reproduces every documented DirectML example (the fixtures).
2. Hand-written cases pin the rules of the spec that the examples do not cover
   (negative and out-of-range indices, 64-bit index values, clamped sequence
   lengths, batch dims, right-aligned output sizes, dtype preservation).
3. On random small cases it agrees with plain vectorised NumPy formulations
   (``np.take_along_axis``, advanced indexing, ``np.flip``, ``np.concatenate``):
   independent oracles of the oracle.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from dml_jax._src import reference
from dml_jax._src.fixtures import DATA_TYPES, Fixture, get_fixture, load_fixtures
from tests.helpers import assert_bits_equal

REPO_ROOT = Path(__file__).resolve().parent.parent

ALL_DTYPES = tuple(DATA_TYPES.values())
INDEX_DTYPES = (np.int32, np.int64, np.uint32, np.uint64)

REFERENCE_FUNCTIONS: dict[str, Callable[..., np.ndarray]] = {
  "GATHER_ELEMENTS": reference.gather_elements,
  "GATHER_ND": reference.gather_nd,
  "GATHER_ND1": reference.gather_nd,
  "REVERSE_SUBSEQUENCES": reference.reverse_subsequences,
  "JOIN": reference.join,
}


# =========================================================================== #
# 1. Documented examples
# =========================================================================== #

FIXTURES = load_fixtures()
VALUE_FIXTURES = [f for f in FIXTURES if not f.shape_only]
GATHER_ND_FIXTURES = [f for f in FIXTURES if f.op in ("GATHER_ND", "GATHER_ND1")]


def _ids(fixtures: list[Fixture]) -> list[str]:
  return [f.id for f in fixtures]


@pytest.mark.parametrize("fixture", VALUE_FIXTURES, ids=_ids(VALUE_FIXTURES))
def test_reference_reproduces_documented_output(fixture: Fixture) -> None:
  function = REFERENCE_FUNCTIONS[fixture.op]
  actual = function(**fixture.arrays(), **fixture.params)
  assert_bits_equal(actual, fixture.output.data)


@pytest.mark.parametrize("fixture", GATHER_ND_FIXTURES, ids=_ids(GATHER_ND_FIXTURES))
def test_gather_nd_output_sizes_match_documented_sizes(fixture: Fixture) -> None:
  sizes = reference.gather_nd_output_sizes(
    fixture.inputs["input"].sizes, fixture.inputs["indices"].sizes, **fixture.params
  )
  assert sizes == fixture.output.sizes


class TestFixtures:
  """The fixture file and its loader."""

  def test_counts_per_operator(self) -> None:
    counts = {}
    for fixture in FIXTURES:
      counts[fixture.op] = counts.get(fixture.op, 0) + 1
    assert counts == {
      "GATHER_ELEMENTS": 1,
      "GATHER_ND": 3,
      "GATHER_ND1": 3,
      "REVERSE_SUBSEQUENCES": 2,
      "JOIN": 5,
    }

  def test_ids_are_unique_slugs(self) -> None:
    ids = [f.id for f in FIXTURES]
    assert len(set(ids)) == len(ids)
    for fixture in FIXTURES:
      assert re.fullmatch(r"[a-z0-9_]+/[a-z0-9-]+", fixture.id), fixture.id
      assert fixture.id.startswith(fixture.op.lower() + "/")

  @pytest.mark.parametrize("fixture", FIXTURES, ids=_ids(FIXTURES))
  def test_fixture_is_well_formed(self, fixture: Fixture) -> None:
    assert set(fixture.provenance) == {"page", "repository", "path", "commit", "url", "example"}
    assert fixture.provenance["repository"] and fixture.provenance["path"]
    assert fixture.provenance["example"]
    tensors = [fixture.output]
    for value in fixture.inputs.values():
      tensors.extend(value if isinstance(value, tuple) else [value])
    for tensor in tensors:
      assert tensor.dtype == DATA_TYPES[tensor.data_type]
      if fixture.shape_only:
        assert tensor.data is None
      else:
        assert tensor.data.dtype == tensor.dtype
        assert tensor.data.shape == tensor.sizes
        assert not tensor.data.flags.writeable
    # Output DataType always equals the (first) input's: the GATHER_ELEMENTS
    # page's UINT32 typo is corrected in the file.
    first = fixture.inputs.get("input") or fixture.inputs["inputs"][0]
    assert fixture.output.data_type == first.data_type
    for erratum in fixture.errata:
      assert erratum.issue and erratum.resolution

  def test_roles_and_params_match_reference_keywords(self) -> None:
    expected_roles = {
      "GATHER_ELEMENTS": {"input", "indices"},
      "GATHER_ND": {"input", "indices"},
      "GATHER_ND1": {"input", "indices"},
      "REVERSE_SUBSEQUENCES": {"input", "sequence_lengths"},
      "JOIN": {"inputs"},
    }
    for fixture in FIXTURES:
      assert set(fixture.inputs) == expected_roles[fixture.op]
    assert all(isinstance(f.inputs["inputs"], tuple) for f in load_fixtures("JOIN"))
    assert all("input_count" not in f.params for f in FIXTURES)
    assert set(get_fixture("gather_nd1/example-2-batch-count").params) == {
      "input_dimension_count",
      "indices_dimension_count",
      "batch_dimension_count",
    }

  def test_provenance_and_flags(self) -> None:
    undocumented = [f.id for f in FIXTURES if not f.documented_output]
    assert undocumented == ["join/dxdispatch-1d-three-ranges"]
    assert get_fixture("join/dxdispatch-1d-three-ranges").provenance["commit"] is None
    shape_only = [f.id for f in FIXTURES if f.shape_only]
    assert shape_only == ["gather_nd/output-sizes", "gather_nd1/output-sizes"]
    fixture = get_fixture("gather_elements/axis-0")
    assert fixture.provenance["page"] == "DML_GATHER_ELEMENTS_OPERATOR_DESC"
    assert fixture.provenance["commit"] == "879f4fcc"
    assert any("UINT32" in e.issue for e in fixture.errata)
    assert get_fixture("gather_nd/output-sizes").errata
    assert get_fixture("reverse_subsequences/example-1-axis-3").errata

  def test_load_fixtures_filters_and_caches(self) -> None:
    assert load_fixtures() is load_fixtures()
    assert {f.op for f in load_fixtures("join")} == {"JOIN"}
    assert len(load_fixtures("GATHER_ND")) == 3
    with pytest.raises(ValueError):
      load_fixtures("GATHER")
    with pytest.raises(KeyError):
      get_fixture("join/no-such-example")
    with pytest.raises(ValueError):
      get_fixture("gather_nd/output-sizes").arrays()

  def test_fixture_file_is_up_to_date(self) -> None:
    source = REPO_ROOT.parent / "shared" / "spec" / "doc-examples.json"
    script = REPO_ROOT / "scripts" / "import_doc_examples.py"
    if not source.exists() or not script.exists():
      pytest.skip("spec or import script not available")
    spec = importlib.util.spec_from_file_location("import_doc_examples", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main([str(source), "--check"]) == 0


# =========================================================================== #
# 2. Hand-written cases pinned from the spec
# =========================================================================== #


class TestNormalizeIndex:
  @pytest.mark.parametrize(
    ("index", "size", "signed", "expected"),
    [
      (0, 5, True, 0),
      (4, 5, True, 4),
      (-1, 5, True, 4),  # negative counts from the end
      (-5, 5, True, 0),
      (-6, 5, True, 0),  # -size-1 clamps to 0
      (5, 5, True, 4),  # one past the end clamps to last
      (5, 5, False, 4),
      (0xFFFFFFFF, 5, False, 4),  # UINT32 never wraps to -1
      (0xFFFFFFFE, 5, False, 4),  # ... nor to -2
      (2**64 - 1, 5, False, 4),  # UINT64 max
      (2**32 + 1, 3, True, 2),  # not truncated to 32 bits (would be 1)
      (2**63 - 1, 3, True, 2),
      (-(2**63), 3, True, 0),
      (0, 1, True, 0),
      (-1, 1, True, 0),
    ],
  )
  def test_table(self, index: int, size: int, signed: bool, expected: int) -> None:
    assert reference.normalize_index(index, size, signed=signed) == expected

  def test_accepts_numpy_scalars(self) -> None:
    assert reference.normalize_index(np.uint64(2**64 - 1), 7, signed=False) == 6
    assert reference.normalize_index(np.int64(-2), 7, signed=True) == 5


class TestGatherElements:
  DATA = np.array([10, 20, 30, 40], dtype=np.float32)

  def _gather(self, indices: list[int], dtype: type) -> np.ndarray:
    return reference.gather_elements(self.DATA, np.array(indices, dtype=dtype), axis=0)

  @pytest.mark.parametrize("dtype", [np.int32, np.int64])
  def test_negative_indices_count_from_end(self, dtype: type) -> None:
    actual = self._gather([-1, -4, 0, -2], dtype)
    assert_bits_equal(actual, np.array([40, 10, 10, 30], np.float32))

  def test_below_minus_size_clamps_to_first(self) -> None:
    actual = self._gather([-5, -(2**31)], np.int32)
    assert_bits_equal(actual, np.array([10, 10], np.float32))
    actual = self._gather([-(2**63)], np.int64)
    assert_bits_equal(actual, np.array([10], np.float32))

  def test_unsigned_max_clamps_to_last(self) -> None:
    # 0xFFFFFFFE would read 30 if it wrapped to -2.
    actual = self._gather([0xFFFFFFFF, 0xFFFFFFFE, 4], np.uint32)
    assert_bits_equal(actual, np.array([40, 40, 40], np.float32))

  def test_uint64_max_clamps_to_last(self) -> None:
    actual = self._gather([2**64 - 1, 2**64 - 2, 2**63], np.uint64)
    assert_bits_equal(actual, np.array([40, 40, 40], np.float32))

  def test_int64_above_32_bits_is_not_truncated(self) -> None:
    # Truncated to 32 bits, 2**32 + 1 would read element 1 (20).
    actual = self._gather([2**32 + 1, 2**32], np.int64)
    assert_bits_equal(actual, np.array([40, 40], np.float32))

  def test_axis_1_and_output_shape_from_indices(self) -> None:
    data = np.arange(6, dtype=np.int16).reshape(2, 3)
    indices = np.array([[2, 0, 1, -1], [1, 1, 0, -3]], dtype=np.int32)
    actual = reference.gather_elements(data, indices, axis=1)
    assert_bits_equal(actual, np.array([[2, 0, 1, 2], [4, 4, 3, 3]], np.int16))

  def test_rank_mismatch_is_rejected(self) -> None:
    with pytest.raises(AssertionError):
      reference.gather_elements(self.DATA, np.zeros((1, 4), np.int32), axis=0)


class TestGatherNd:
  def test_negative_and_out_of_range_components(self) -> None:
    data = np.arange(12, dtype=np.float64).reshape(3, 4)
    indices = np.array([[-1, -1], [-3, 0], [5, -9], [2**32 + 1, 1]], dtype=np.int64)
    actual = reference.gather_nd(data, indices)
    # Components clamp against their own dimension: rows of 3, columns of 4.
    assert_bits_equal(actual, np.array([[11, 0, 8, 9]], np.float64))  # padded to rank 2

  def test_unsigned_components_never_wrap(self) -> None:
    data = np.arange(12, dtype=np.int8).reshape(3, 4)
    indices = np.array([[0xFFFFFFFF, 0], [0, 0xFFFFFFFE]], dtype=np.uint32)
    actual = reference.gather_nd(data, indices)
    assert_bits_equal(actual, np.array([[8, 3]], np.int8))

  def test_output_is_right_aligned_with_leading_ones(self) -> None:
    data = np.arange(12, dtype=np.float32).reshape(1, 1, 4, 3)
    indices = np.array([3, 1], dtype=np.uint32).reshape(1, 1, 2, 1)
    actual = reference.gather_nd(data, indices, input_dimension_count=2, indices_dimension_count=2)
    expected = np.array([[9, 10, 11], [3, 4, 5]], np.float32).reshape(1, 1, 2, 3)
    assert_bits_equal(actual, expected)

  def test_whole_tuple_gives_one_element_padded_to_rank(self) -> None:
    data = np.arange(12, dtype=np.uint16).reshape(3, 4)
    indices = np.array([[2, 1]], dtype=np.int32)
    actual = reference.gather_nd(data, indices, indices_dimension_count=1)
    assert_bits_equal(actual, np.array([[9]], np.uint16))

  def test_batch_dims(self) -> None:
    # GATHER_ND1, B = 1: out[b, p, r] = in[b, idx[b, p, 0], r].
    data = np.arange(12, dtype=np.int32).reshape(2, 3, 2)
    indices = np.array([[[2], [0]], [[1], [-1]]], dtype=np.int64)
    actual = reference.gather_nd(data, indices, batch_dimension_count=1)
    expected = np.array([[[4, 5], [0, 1]], [[8, 9], [10, 11]]], np.int32)
    assert_bits_equal(actual, expected)

  def test_batch_dims_with_padding_and_full_tuples(self) -> None:
    # I = (2, 2, 3), X = (2, 1, 2), B = 1, t = 2 -> logical out (2, 1).
    data = np.arange(12, dtype=np.float16).reshape(1, 2, 2, 3)
    indices = np.array([[[1, 2]], [[0, -1]]], dtype=np.int32).reshape(1, 2, 1, 2)
    actual = reference.gather_nd(
      data,
      indices,
      input_dimension_count=3,
      indices_dimension_count=3,
      batch_dimension_count=1,
    )
    assert_bits_equal(actual, np.array([5, 8], np.float16).reshape(1, 1, 2, 1))

  @pytest.mark.parametrize(
    ("input_sizes", "indices_sizes", "counts", "expected"),
    [
      ((3, 4, 5, 6, 7), (1, 1, 1, 2, 3), (5, 3, 0), (1, 1, 2, 6, 7)),
      ((2, 2), (2, 1), (2, 2, 0), (2, 2)),
      ((1, 2, 2, 2), (1, 1, 2, 2), (3, 2, 0), (1, 1, 2, 2)),
      ((1, 3, 2, 2), (1, 3, 2, 2), (3, 3, 1), (1, 1, 3, 2)),
      ((1, 1, 4, 6), (1, 1, 5, 1), (2, 2, 0), (1, 1, 5, 6)),
      ((3, 4), (1, 2), (2, 1, 0), (1, 1)),
      ((2, 3, 4, 5), (2, 3, 7, 1), (4, 4, 2), (2, 3, 7, 5)),
    ],
  )
  def test_output_sizes(
    self,
    input_sizes: tuple[int, ...],
    indices_sizes: tuple[int, ...],
    counts: tuple[int, int, int],
    expected: tuple[int, ...],
  ) -> None:
    input_count, indices_count, batch = counts
    sizes = reference.gather_nd_output_sizes(
      input_sizes,
      indices_sizes,
      input_dimension_count=input_count,
      indices_dimension_count=indices_count,
      batch_dimension_count=batch,
    )
    assert sizes == expected

  def test_output_rank_above_tensor_rank_is_rejected(self) -> None:
    # X[:-1] ++ I[t:] = (3, 3) ++ (4, 5) has 4 dims, more than the rank 3.
    with pytest.raises(AssertionError):
      reference.gather_nd_output_sizes(
        (2, 4, 5), (3, 3, 1), input_dimension_count=3, indices_dimension_count=3
      )

  def test_non_one_leading_dims_are_rejected(self) -> None:
    with pytest.raises(AssertionError):
      reference.gather_nd_output_sizes(
        (2, 4, 5), (1, 3, 1), input_dimension_count=2, indices_dimension_count=2
      )


class TestReverseSubsequences:
  DATA = np.arange(1, 6, dtype=np.int64).reshape(1, 5)

  @pytest.mark.parametrize(
    ("length", "dtype"),
    [
      (5, np.uint32),
      (6, np.uint32),
      (100, np.uint32),
      (0xFFFFFFFF, np.uint32),
      (2**64 - 1, np.uint64),
      (2**32 + 2, np.uint64),
    ],
  )
  def test_lengths_at_or_above_axis_size_reverse_whole_lane(self, length: int, dtype: type) -> None:
    lengths = np.array([[length]], dtype=dtype)
    actual = reference.reverse_subsequences(self.DATA, lengths, axis=1)
    assert_bits_equal(actual, np.array([[5, 4, 3, 2, 1]], np.int64))

  @pytest.mark.parametrize("length", [0, 1])
  def test_lengths_zero_and_one_are_no_ops(self, length: int) -> None:
    lengths = np.array([[length]], dtype=np.uint32)
    actual = reference.reverse_subsequences(self.DATA, lengths, axis=1)
    assert_bits_equal(actual, self.DATA)

  def test_only_prefix_is_reversed_tail_is_kept(self) -> None:
    lengths = np.array([[3]], dtype=np.uint64)
    actual = reference.reverse_subsequences(self.DATA, lengths, axis=1)
    assert_bits_equal(actual, np.array([[3, 2, 1, 4, 5]], np.int64))

  def test_one_length_per_lane_along_axis_0(self) -> None:
    data = np.arange(6, dtype=np.uint8).reshape(3, 2)
    lengths = np.array([[3, 2]], dtype=np.uint32)
    actual = reference.reverse_subsequences(data, lengths, axis=0)
    assert_bits_equal(actual, np.array([[4, 3], [2, 1], [0, 5]], np.uint8))

  def test_signed_lengths_are_rejected(self) -> None:
    with pytest.raises(AssertionError):
      reference.reverse_subsequences(self.DATA, np.array([[2]], np.int32), axis=1)


class TestJoin:
  @pytest.mark.parametrize("dtype", [np.int8, np.float16, np.uint64])
  def test_single_input_is_a_copy_with_same_dtype(self, dtype: type) -> None:
    data = np.array([[1, 2, 3], [4, 5, 6]], dtype=dtype)
    actual = reference.join([data], axis=1)
    assert_bits_equal(actual, data)
    assert not np.shares_memory(actual, data)

  def test_unequal_axis_sizes(self) -> None:
    a = np.array([[1], [2]], np.int32)
    b = np.array([[3, 4, 5], [6, 7, 8]], np.int32)
    c = np.array([[9, 10], [11, 12]], np.int32)
    actual = reference.join([a, b, c], axis=1)
    expected = np.array([[1, 3, 4, 5, 9, 10], [2, 6, 7, 8, 11, 12]], np.int32)
    assert_bits_equal(actual, expected)

  def test_64_bit_values_survive(self) -> None:
    a = np.array([2**64 - 1], np.uint64)
    b = np.array([2**63 + 1, 7], np.uint64)
    actual = reference.join((a, b), axis=0)
    assert_bits_equal(actual, np.array([2**64 - 1, 2**63 + 1, 7], np.uint64))

  def test_mismatches_are_rejected(self) -> None:
    a = np.zeros((2, 2), np.float32)
    with pytest.raises(AssertionError):
      reference.join([a, a.astype(np.float16)], axis=0)  # dtype
    with pytest.raises(AssertionError):
      reference.join([a, np.zeros((2, 3), np.float32)], axis=0)  # non-axis size
    with pytest.raises(AssertionError):
      reference.join([a, np.zeros((1, 2, 2), np.float32)], axis=0)  # rank
    with pytest.raises(AssertionError):
      reference.join([], axis=0)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_output_dtype_is_input_dtype(dtype: np.dtype) -> None:
  data = np.arange(6).astype(dtype).reshape(2, 3)
  indices = np.array([[2, 0, 1]], dtype=np.uint32)
  assert reference.gather_elements(data, indices, axis=0).dtype == dtype
  nd_indices = np.array([[1], [0]], dtype=np.int64)
  assert reference.gather_nd(data, nd_indices).dtype == dtype
  lengths = np.array([[2], [3]], dtype=np.uint32)
  assert reference.reverse_subsequences(data, lengths, axis=1).dtype == dtype
  assert reference.join([data, data], axis=0).dtype == dtype


def test_reference_module_does_not_import_jax() -> None:
  path = Path(reference.__file__)
  code = (
    "import importlib.util, sys\n"
    f"spec = importlib.util.spec_from_file_location('ref', {str(path)!r})\n"
    "module = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(module)\n"
    "assert 'jax' not in sys.modules, 'reference imported jax'\n"
  )
  subprocess.run([sys.executable, "-c", code], check=True)


# =========================================================================== #
# 3. Cross-checks against plain NumPy on random small cases
# =========================================================================== #

SEEDS = range(25)


def _random_shape(rng: np.random.Generator, rank: int, high: int = 4) -> tuple[int, ...]:
  return tuple(int(s) for s in rng.integers(1, high + 1, size=rank))


def _random_data(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
  dtype = ALL_DTYPES[rng.integers(len(ALL_DTYPES))]
  return rng.integers(0, 100, size=shape).astype(dtype)


def _random_indices(
  rng: np.random.Generator, shape: tuple[int, ...], size: int | np.ndarray
) -> np.ndarray:
  """Indices around the valid range: negatives and overshoots included."""
  dtype = np.dtype(INDEX_DTYPES[rng.integers(len(INDEX_DTYPES))])
  low = -size - 2 if dtype.kind == "i" else 0
  return rng.integers(low, size + 3, size=shape).astype(dtype)


def _numpy_normalize(indices: np.ndarray, size: int | np.ndarray) -> np.ndarray:
  """Vectorised negative-index rule + clamp (for small index values)."""
  values = indices.astype(np.int64)
  values = np.where(values < 0, values + size, values)
  return np.clip(values, 0, np.asarray(size) - 1)


@pytest.mark.parametrize("seed", SEEDS)
def test_gather_elements_matches_take_along_axis(seed: int) -> None:
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 5))
  shape = _random_shape(rng, rank)
  axis = int(rng.integers(rank))
  data = _random_data(rng, shape)
  indices_shape = list(shape)
  indices_shape[axis] = int(rng.integers(1, 6))
  indices = _random_indices(rng, tuple(indices_shape), shape[axis])

  expected = np.take_along_axis(data, _numpy_normalize(indices, shape[axis]), axis=axis)
  assert_bits_equal(reference.gather_elements(data, indices, axis=axis), expected)


def _random_gather_nd_case(rng: np.random.Generator) -> dict:
  """A random valid GATHER_ND1 configuration (sizes and counts)."""
  while True:
    rank = int(rng.integers(1, 6))
    input_count = int(rng.integers(1, rank + 1))
    batch = int(rng.integers(0, input_count))
    tuple_size = int(rng.integers(1, input_count - batch + 1))
    positions = int(rng.integers(0, 3))
    indices_count = batch + positions + 1
    output_rank = batch + positions + (input_count - batch - tuple_size)
    if indices_count <= rank and output_rank <= rank:
      break
  logical_input = _random_shape(rng, input_count)
  logical_indices = logical_input[:batch] + _random_shape(rng, positions, high=3) + (tuple_size,)
  return {
    "rank": rank,
    "input_count": input_count,
    "indices_count": indices_count,
    "batch": batch,
    "logical_input": logical_input,
    "logical_indices": logical_indices,
  }


def _numpy_gather_nd(data: np.ndarray, indices: np.ndarray, batch: int, rank: int) -> np.ndarray:
  """GATHER_ND1 on logical shapes by NumPy advanced indexing."""
  tuple_size = indices.shape[-1]
  position_shape = indices.shape[:-1]
  sizes = np.array(data.shape[batch : batch + tuple_size])
  components = _numpy_normalize(indices, sizes)
  batch_grids = tuple(
    np.arange(position_shape[d]).reshape((1,) * d + (-1,) + (1,) * (len(position_shape) - d - 1))
    for d in range(batch)
  )
  gathered = data[batch_grids + tuple(components[..., j] for j in range(tuple_size))]
  return gathered.reshape((1,) * (rank - gathered.ndim) + gathered.shape)


@pytest.mark.parametrize("seed", SEEDS)
def test_gather_nd_matches_advanced_indexing(seed: int) -> None:
  rng = np.random.default_rng(seed)
  case = _random_gather_nd_case(rng)
  rank = case["rank"]
  logical_input, logical_indices = case["logical_input"], case["logical_indices"]
  data = _random_data(rng, logical_input)
  tuple_size = logical_indices[-1]
  bound = np.array(logical_input[case["batch"] : case["batch"] + tuple_size])
  indices = _random_indices(rng, logical_indices, bound)

  pad = lambda shape: (1,) * (rank - len(shape)) + shape
  actual = reference.gather_nd(
    data.reshape(pad(logical_input)),
    indices.reshape(pad(logical_indices)),
    input_dimension_count=case["input_count"],
    indices_dimension_count=case["indices_count"],
    batch_dimension_count=case["batch"],
  )
  expected = _numpy_gather_nd(data, indices, case["batch"], rank)
  assert_bits_equal(actual, expected)
  assert actual.shape == reference.gather_nd_output_sizes(
    pad(logical_input),
    pad(logical_indices),
    input_dimension_count=case["input_count"],
    indices_dimension_count=case["indices_count"],
    batch_dimension_count=case["batch"],
  )


def _numpy_reverse_subsequences(data: np.ndarray, lengths: np.ndarray, axis: int) -> np.ndarray:
  """Lane by lane with ``np.flip`` on the first ``min(length, size)`` elements."""
  lanes = np.moveaxis(data, axis, -1).reshape(-1, data.shape[axis])
  lane_lengths = np.moveaxis(lengths, axis, -1).reshape(-1)
  rows = [
    np.concatenate([np.flip(lane[: int(n)]), lane[int(n) :]])
    for lane, n in zip(lanes, lane_lengths, strict=True)
  ]
  moved_shape = np.moveaxis(data, axis, -1).shape
  return np.moveaxis(np.stack(rows).reshape(moved_shape), -1, axis)


@pytest.mark.parametrize("seed", SEEDS)
def test_reverse_subsequences_matches_flip(seed: int) -> None:
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 5))
  shape = _random_shape(rng, rank, high=5)
  axis = int(rng.integers(rank))
  data = _random_data(rng, shape)
  lengths_shape = shape[:axis] + (1,) + shape[axis + 1 :]
  dtype = (np.uint32, np.uint64)[rng.integers(2)]
  lengths = rng.integers(0, shape[axis] + 3, size=lengths_shape).astype(dtype)

  expected = _numpy_reverse_subsequences(data, lengths, axis)
  assert_bits_equal(reference.reverse_subsequences(data, lengths, axis=axis), expected)


@pytest.mark.parametrize("seed", SEEDS)
def test_join_matches_concatenate(seed: int) -> None:
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 5))
  shape = _random_shape(rng, rank)
  axis = int(rng.integers(rank))
  dtype = ALL_DTYPES[rng.integers(len(ALL_DTYPES))]
  inputs = []
  for _ in range(int(rng.integers(1, 5))):
    piece_shape = shape[:axis] + (int(rng.integers(1, 4)),) + shape[axis + 1 :]
    inputs.append(rng.integers(0, 100, size=piece_shape).astype(dtype))

  expected = np.concatenate(inputs, axis=axis)
  assert_bits_equal(reference.join(inputs, axis=axis), expected)
