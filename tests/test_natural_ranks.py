"""Natural call forms: the functional API pads ranks with leading 1s, as DirectML programs do.

Random shapes against NumPy (np.take, np.concatenate, np.take_along_axis and ONNX GatherND's
definition written with NumPy), the descriptor underneath staying DirectML's, the note a
padded call's validation error carries, and every operator's documented examples at their
natural rank below what an older feature level takes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dml_jax as dml
from dml_jax import DmlValidationError
from dml_jax._src import dispatch, natural, registry
from dml_jax._src.feature_level import FeatureLevel
from dml_jax.fixtures import load_fixtures
from tests.helpers import assert_bits_equal

SEEDS = range(4)


def _shape(rng: np.random.Generator, rank: int) -> tuple[int, ...]:
  return tuple(int(s) for s in rng.integers(1, 4, rank))


@pytest.mark.parametrize("seed", SEEDS)
def test_gather_without_index_dimensions_is_np_take(seed):
  rng = np.random.default_rng(seed)
  r, k = int(rng.integers(1, 4)), int(rng.integers(0, 4))
  x = rng.standard_normal(_shape(rng, r)).astype(np.float32)
  axis = int(rng.integers(-r, r))
  ids = rng.integers(-x.shape[axis], x.shape[axis], _shape(rng, k)).astype(np.int32)
  assert_bits_equal(dml.gather(x, ids, axis=axis), np.take(x, ids, axis=axis))


def test_the_embedding_lookup_and_its_descriptor():
  table = np.arange(1600, dtype=np.float32).reshape(100, 16)
  ids = np.array([[1, 2, 3, 4, 5], [6, 7, 8, 9, 99]], np.uint32)
  out = dml.gather(table, ids, axis=0)
  assert out.shape == (2, 5, 16)
  assert_bits_equal(out, table[ids])
  # The same lookup written with DirectML's shapes; jit, vmap and grad see the same reading.
  literal = dml.gather(table[None], ids[None], axis=1, index_dimensions=2)
  assert_bits_equal(out, np.asarray(literal).reshape(2, 5, 16))
  assert_bits_equal(jax.jit(lambda t: dml.gather(t, ids, axis=0))(table), out)
  assert jax.vmap(lambda i: dml.gather(table, i, axis=0))(ids).shape == (2, 5, 16)
  grad = jax.grad(lambda t: dml.gather(t, ids, axis=0).sum())(table)
  assert grad[1, 0] == 1 and grad[0, 0] == 0


@pytest.mark.parametrize("seed", SEEDS)
def test_join_pads_lower_ranks_and_counts_negative_axes(seed):
  rng = np.random.default_rng(seed)
  shape = _shape(rng, int(rng.integers(1, 4)))
  axis = -int(rng.integers(1, len(shape) + 1))  # on x's dimensions, counted from the end
  x = rng.standard_normal(shape).astype(np.float32)
  longer = list(shape)
  longer[axis] += 1
  other = rng.standard_normal((1, *longer)).astype(np.float32)  # one rank more
  assert_bits_equal(dml.join([x, other], axis=axis), np.concatenate([x[None], other], axis))


@pytest.mark.parametrize("seed", SEEDS)
def test_gather_elements_and_split_count_negative_axes(seed):
  rng = np.random.default_rng(seed)
  rank = int(rng.integers(1, 4))
  x = rng.standard_normal(_shape(rng, rank)).astype(np.float32)
  axis = -int(rng.integers(1, rank + 1))
  ids = rng.integers(0, x.shape[axis], x.shape).astype(np.uint32)
  assert_bits_equal(
    dml.gather_elements(x, ids, axis=axis), np.take_along_axis(x, ids.astype(np.intp), axis)
  )
  first = dml.split(x, axis=axis, split_sizes=(1, x.shape[axis] - 1) if x.shape[axis] > 1 else (1,))
  assert_bits_equal(first[0], np.take(x, [0], axis=axis))


def _onnx_gather_nd(x: np.ndarray, ids: np.ndarray) -> np.ndarray:
  """ONNX GatherND with batch_dims 0: out[p] = x[tuple(ids[p])] (negative coordinates wrap)."""
  tuples = ids.reshape(-1, ids.shape[-1])
  rows = [x[tuple(int(c) for c in t)] for t in tuples]
  return np.stack(rows).reshape(ids.shape[:-1] + x.shape[ids.shape[-1] :])


@pytest.mark.parametrize("seed", SEEDS)
def test_gather_nd_of_different_ranks_is_onnx_gather_nd(seed):
  rng = np.random.default_rng(seed)
  r = int(rng.integers(1, 4))
  x = rng.standard_normal(_shape(rng, r)).astype(np.float32)
  t = int(rng.integers(1, r + 1))
  k = int(rng.integers(1, 4))
  while k == r:
    k = int(rng.integers(1, 4))
  batch = _shape(rng, k - 1)
  ids = np.stack([rng.integers(-s, s, batch) for s in x.shape[:t]], axis=-1).astype(np.int32)
  assert_bits_equal(dml.gather_nd(x, ids), _onnx_gather_nd(x, ids))


def test_scatter_nd_of_different_ranks_keeps_the_input_shape():
  x = np.zeros((4, 3), np.float32)
  ids = np.array([[2], [0]], np.int32)  # rank 2: equal to the input's, so pad the updates
  updates = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
  want = x.copy()
  want[[2, 0]] = updates
  assert_bits_equal(dml.scatter_nd(x, ids, updates), want)
  one = dml.scatter_nd(x, np.array([1], np.int32), np.array([7, 8, 9], np.float32))
  assert one.shape == (4, 3)
  assert_bits_equal(np.asarray(one)[1], np.array([7, 8, 9], np.float32))


def test_one_hot_pads_the_values():
  out = dml.one_hot(np.array([[2], [0]], np.int32), np.array([0, 1], np.float32), axis=-1, depth=3)
  assert_bits_equal(out, np.eye(3, dtype=np.float32)[[2, 0]])


def test_a_padded_call_that_fails_says_the_call_it_checked():
  table, ids = np.zeros((100, 16), np.float32), np.zeros((2, 5), np.int32)
  with pytest.raises(DmlValidationError) as info:
    dml.gather(table, ids, axis=0, feature_level="2_1")  # UINT32 indices only before FL 3_0
  assert [v.field for v in info.value.violations] == ["IndicesTensor.DataType"]
  (note, *_) = info.value.__notes__
  assert "input (100, 16), indices (2, 5)" in note
  assert (  # read at rank 3, then padded to the 4 dimensions FL 2_1 takes
    "dml.gather(input.reshape(1, 1, 100, 16), indices.reshape(1, 1, 2, 5), axis=2,"
    " index_dimensions=2)" in note
  )
  with pytest.raises(DmlValidationError) as info:  # the call, with the count set
    dml.gather(table, ids, axis=0, index_dimensions=2)
  assert info.value.__notes__[0].startswith(
    "With the counts unset, dml.gather(input, indices, axis=0) reads as NumPy and ONNX do"
  )
  with pytest.raises(DmlValidationError) as info:
    dml.join([np.zeros((2, 3), np.float32), np.zeros(4, np.float32)], axis=-1)
  assert (
    "dml.join([inputs[0].reshape(2, 3), inputs[1].reshape(1, 4)], axis=1)"
    in (info.value.__notes__[0])
  )


def test_descriptors_of_shows_what_directml_gets():
  table, ids = np.zeros((100, 16), np.float32), np.zeros((2, 5), np.int32)
  dml.gather(table, ids, axis=0)  # a cached trace must not hide the descriptor
  (desc,) = dml.descriptors_of(dml.gather, table, ids, axis=0)
  assert desc == dml.GatherDesc(
    dml.TensorDesc("FLOAT32", (1, 100, 16)),
    dml.TensorDesc("INT32", (1, 2, 5)),
    axis=1,
    index_dimensions=2,
  )
  bits = jnp.zeros((2, 3), jnp.bfloat16)
  two = dml.descriptors_of(lambda x: dml.tile(dml.join([x, x], axis=-1), repeats=(2, 1)), bits)
  assert [d.OPERATOR for d in two] == ["JOIN", "TILE"]
  assert two[0].dml_inputs()[0][2] == dml.TensorDesc("UINT16", (2, 3))  # bfloat16's bits


def test_a_call_with_directml_shapes_reads_as_itself():
  x = np.arange(6, dtype=np.float32).reshape(3, 2)
  ids = np.array([[0, 1, 1, 2]], np.uint32)
  # IndexDimensions set: DirectML's output, right-aligned into the common rank.
  assert dml.gather(x, ids, axis=0, index_dimensions=1).shape == (4, 2)
  # Unset: np.take's, (1, 4, 2).
  assert_bits_equal(dml.gather(x, ids, axis=0), np.take(x, ids, axis=0))


# -- natural ranks below what an older feature level takes -----------------------------------
#
# Every registered operator's functional API reads through a declaration
# (`dispatch.DECLARATIONS`). Its documented examples (the fixtures) are squeezed to their
# natural rank, leading 1s dropped and the attributes the declaration names moved with them,
# and the call at the oldest level that takes no tensors of that rank must equal the call at
# the newest level and the documented output.


def _lead(shape) -> int:
  """How many leading sizes of `shape` are 1."""
  return next((i for i, s in enumerate(shape) if s != 1), len(shape))


def _squeezed(declaration, arrays, params, k):
  """The call of `arrays` and `params` (DirectML's) with `k` leading 1s dropped from every
  array and tensor-rank attribute, the axes moved down; None where they cannot be dropped."""
  params, names = dict(params), declaration.names
  for position, _ in declaration.axes:
    if params.get(names[position]) is not None:
      if params[names[position]] < k:
        return None
      params[names[position]] -= k
  for position in declaration.axis_sets:
    if params.get(names[position]) is not None:
      if min(params[names[position]]) < k:
        return None
      params[names[position]] = tuple(a - k for a in params[names[position]])
  dropped = [(p, 1) for p in declaration.sized] + list(getattr(declaration, "neutral", ()))
  for position, neutral in dropped:
    values = params.get(names[position])
    if values is not None:
      if any(v != (1 if neutral is None else neutral) for v in values[:k]):
        return None
      params[names[position]] = tuple(values[k:])

  def squeeze(a):
    if isinstance(a, list | tuple):
      each = [squeeze(x) for x in a]
      return None if any(x is None for x in each) else each
    return None if _lead(a.shape) < k else a.reshape(a.shape[k:])

  squeezed = {name: squeeze(a) for name, a in arrays.items()}
  if any(a is None for a in squeezed.values()):
    return None
  return squeezed, params


def _ranks(arrays, params, declaration):
  shapes = [x.shape for a in arrays.values() for x in (a if isinstance(a, list | tuple) else [a])]
  sizes = [params[declaration.names[p]] for p in declaration.sized]
  return [len(s) for s in shapes + [s for s in sizes if s is not None]]


def _natural_calls(op):
  """(levels, function, arrays, params, documented outputs) for each way `op`'s fixtures read
  at a rank below what older levels take: those levels, oldest first."""
  cls = registry.lookup(op)
  function = getattr(dml, cls.FUNCTION)
  declaration = dispatch.DECLARATIONS[cls.FUNCTION]
  for fixture in load_fixtures(op):
    if fixture.shape_only:
      continue
    arrays, params = fixture.arrays(), dict(fixture.params)
    for k in range(min(_ranks(arrays, params, declaration), default=0) - 1, -1, -1):
      call = _squeezed(declaration, arrays, params, k)
      if call is None:
        continue
      rank = max(_ranks(*call, declaration))
      tables = [(level, cls.SUPPORT.at(level)) for level in FeatureLevel]
      levels = [v for v, t in tables if t is not None and natural.least_rank(t) > rank]
      if levels:
        yield levels, function, *call, [o.data for o in fixture.outputs]


def _outputs(result):
  return list(result) if isinstance(result, list | tuple) else [result]


LIFTED = [
  op
  for op, cls in registry.operators().items()
  if dispatch.DECLARATIONS[cls.FUNCTION].to_level
  and natural.least_rank(cls.SUPPORT.tables[cls.SUPPORT.introduced]) > 1
]


@pytest.mark.parametrize("op", LIFTED)
def test_a_call_below_an_older_levels_rank_equals_the_newest_levels(op):
  """Up to two of the operator's documented examples at their natural rank, each at the
  oldest level that takes no tensors of that rank and accepts the call (an older one may
  refuse its data types: with that error, not the rank's)."""
  checked = 0
  for levels, function, arrays, params, documented in _natural_calls(op):
    new = _outputs(function(**arrays, **params))
    for level in levels:
      try:
        old = _outputs(function(**arrays, **params, feature_level=level))
      except DmlValidationError as error:
        assert not any(v.field.endswith("DimensionCount") for v in error.violations), error
        continue
      for got, want, expected in zip(old, new, documented, strict=True):
        assert got.shape == want.shape, (level, arrays, params)
        assert_bits_equal(got, want)
        assert_bits_equal(np.asarray(got).ravel(), expected.ravel())
      checked += 1
      break
    if checked == 2:
      break
  assert checked, f"no example of {op} reads at a rank below an older level's, validly there"


def test_a_call_refused_for_another_reason_keeps_that_error_at_an_older_level():
  x = np.zeros((2, 3), np.float32)
  # Shapes that do not match: the padded call's error names them, not the rank.
  ids = np.zeros((3, 3), np.uint32)
  with pytest.raises(DmlValidationError) as info:
    dml.gather_elements(x, ids, axis=1, feature_level="2_1")
  assert [v.field for v in info.value.violations] == ["IndicesTensor.Sizes"]
  assert "input.reshape(1, 1, 2, 3), indices.reshape(1, 1, 3, 3), axis=3" in info.value.__notes__[0]
  # An axis out of range stays out of range: leading 1s would make axis 2 valid on 4-D arrays.
  with pytest.raises(DmlValidationError, match="Axis"):
    dml.join([x, x], axis=2, feature_level="1_0")
  # Padding would crop only 1s where the newest level crops the 2 of (2, 5, 16): refused at
  # every level, for that reason.
  table, ids = np.zeros((100, 16), np.float32), np.zeros((2, 5), np.uint32)
  for level in ("1_0", None):
    with pytest.raises(DmlValidationError) as info:
      dml.gather(table, ids, axis=0, index_dimensions=2, feature_level=level)
    assert "OutputTensor.DimensionCount" in {v.field for v in info.value.violations}


def test_an_older_levels_padding_under_jit_vmap_and_grad():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((3, 4)).astype(np.float32)
  ids = rng.integers(0, 4, (3, 4)).astype(np.uint32)
  want = np.take_along_axis(x, ids.astype(np.intp), 1)

  def gather(a, i):
    return dml.gather_elements(a, i, axis=-1, feature_level="2_1")  # 4-D tensors only

  assert_bits_equal(jax.jit(gather)(x, ids), want)
  assert_bits_equal(jax.vmap(gather)(x, ids), want)  # rows of rank 1, padded to 4
  grad = jax.grad(lambda a: gather(a, ids).sum())(x)
  assert_bits_equal(grad, np.stack([np.bincount(r, minlength=4) for r in ids]).astype(np.float32))
  (desc,) = dml.descriptors_of(gather, x, ids)
  assert desc.dml_inputs()[0][2].sizes == (1, 1, 3, 4) and desc.axis == 3


def test_a_call_kept_at_its_rank_names_the_padded_call_the_level_takes():
  # NONZERO_COORDINATES's outputs and SPACE_TO_DEPTH1's channels cannot be cut back to the
  # input's rank, so these calls are not padded; the error prints the call that is valid.
  values = np.array([[0, 1, 2], [3, 0, 5]], np.float32)
  image = np.ones((2, 4), np.float32)
  cases = [
    (
      lambda x: dml.nonzero_coordinates(x, feature_level="3_0"),
      values,
      "dml.nonzero_coordinates(input.reshape(1, 1, 2, 3))",
      lambda: dml.nonzero_coordinates(values.reshape(1, 1, 2, 3), feature_level="3_0"),
    ),
    (
      lambda x: dml.space_to_depth1(x, block_size=2, order="COLUMN_ROW_DEPTH"),
      image,
      "dml.space_to_depth1(input.reshape(1, 1, 2, 4), block_size=2, order='COLUMN_ROW_DEPTH')",
      lambda: dml.space_to_depth1(
        image.reshape(1, 1, 2, 4), block_size=2, order="COLUMN_ROW_DEPTH"
      ),
    ),
  ]
  for call, input, valid, padded in cases:
    with pytest.raises(DmlValidationError) as info:
      call(input)
    (note,) = [n for n in info.value.__notes__ if n.startswith("dml.")]
    assert f"{valid} is valid" in note, note
    outputs = padded()
    assert all(np.ndim(out) == 4 for out in (outputs if isinstance(outputs, tuple) else (outputs,)))
