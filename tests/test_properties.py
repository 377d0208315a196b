"""Property tests: the JAX operators against the NumPy reference, bit for bit.

Every property draws a random, valid DirectML descriptor (rank 1-8, sizes 1-4,
at most 256 elements per tensor, random axes and counts) together with random
data and index values, and compares dml_jax with the independent NumPy oracle
:mod:`dml_jax._src.reference` on dtype, shape and raw bytes (so -0.0 and NaN
payloads count), for

* GATHER (IndexDimensions q in [0, n], the leading n - q index dims 1, the
  sizes right alignment crops set to 1), GATHER_ELEMENTS, GATHER_ND /
  GATHER_ND1 (random InputDimensionCount, IndicesDimensionCount and
  BatchDimensionCount, leading dims beyond the counts set to 1, tuple length t
  in [1, m - b], equal batch dims, output rank <= n),
  REVERSE_SUBSEQUENCES (uint32 / uint64 lengths in [0, size + 3] and huge ones)
  and JOIN (1-4 inputs of one dtype, random sizes on the axis);
* every data type (float16/32/64, int8/16/32/64, uint8/16/32/64) and every
  index type (int32, int64, uint32, uint64); the 64-bit ones only in examples
  that run under ``jax.enable_x64(True)`` (each example draws its mode);
* index values in range, negative in [-size - 2, -1] (for unsigned types: the
  two's-complement bit patterns of those, which must never wrap), just past the
  end (size, size + 5) and extreme (2**31 - 1, -2**31, 2**32 - 1, 2**32 + 1,
  2**63 - 1, -2**63, 2**64 - 1, ... wherever the dtype holds them).

Each property checks the eager call and ``jax.jit``; a subset of examples also
checks ``jax.vmap`` over a leading batch of 2-3 examples (some arguments may
be unbatched, ``in_axes=None``) against the reference applied per example; and
for float32 data ``jax.grad`` of ``sum(op(x) * w)`` must equal the scatter-add
of ``w`` that the reference implies (computed in NumPy by running the
reference on position-tagged inputs, never through JAX). The weights are small
integers, so every float32 sum is exact whatever order XLA adds in.

The 64-bit policy with ``jax_enable_x64`` off is covered too: 64-bit host index
arrays whose values fit in 32 bits give the reference's result (eagerly and
closed over under ``jax.jit``); values that do not fit raise ValueError (never
wrap); 64-bit data raises TypeError mentioning jax_enable_x64.

A fixed sweep runs every data type with every index (length) type, so no
combination depends on what hypothesis happens to draw, and a pinned example
spells out that both gathers never truncate a 64-bit index; each operator's own
pinned examples (64-bit lengths, unsigned indices never counted from the end, ...)
are in tests/ops/test_<operator>.py.

Budget: jit compiles dominate the run time, so there are a few large properties
(8 examples each in the "ci" profile, 0.4 of its max_examples) rather than many
small ones; the file runs in about a minute on two cores.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax._src import reference
from tests.helpers import assert_bits_equal, examples

# Every example runs in the mode it draws (check_case) or its test's fixture sets (x64, no_x64),
# whatever the process's: the x64 pass of the test command leaves the module out.
pytestmark = pytest.mark.mode_independent

# When a property fails, hypothesis' pytest plugin imports hypothesis.extra._patching
# (libcst), whose import raises a DeprecationWarning from mypy_extensions; with
# pyproject's filterwarnings = ["error"] that turns the report into an INTERNALERROR
# that hides the falsifying example. Importing it here, warnings silenced, avoids that.
with warnings.catch_warnings(), contextlib.suppress(ImportError):
  warnings.simplefilter("ignore", DeprecationWarning)
  import hypothesis.extra._patching  # noqa: F401

# --------------------------------------------------------------------------- #
# Types and values
# --------------------------------------------------------------------------- #

DATA_32 = (np.float32, np.float16, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32)
DATA_64 = (np.float64, np.int64, np.uint64)
ALL_DATA = DATA_32 + DATA_64
INDEX_32 = (np.int32, np.uint32)
INDEX_64 = (np.int64, np.uint64)
LENGTH_32 = (np.uint32,)
LENGTH_64 = (np.uint64,)

MAX_ELEMENTS = 256
"""Most elements in any one tensor of one example."""

EXTREME_INDICES = (
  2**31 - 1,
  -(2**31),
  2**31,
  -(2**31) - 1,
  2**32 - 2,
  2**32 - 1,
  2**32,
  2**32 + 1,
  -(2**32) + 1,
  2**63 - 1,
  -(2**63),
  2**64 - 2,
  2**64 - 1,
)
"""Index values far out of range; each is used where the index dtype holds it.

2**32 + 1 and -2**32 + 1 read element 1 if truncated to 32 bits; 2**32 - 2 and
2**64 - 2 read element size - 2 if an unsigned index were taken as signed.
"""

EXTREME_LENGTHS = (2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**32 + 2, 2**63, 2**64 - 1)
"""Sequence lengths far above any axis size (2**32 + k is k if truncated)."""

NOT_32_BIT = {
  np.dtype(np.int64): (2**31, -(2**31) - 1, 2**32 + 1, -(2**32) + 1, 2**63 - 1, -(2**63)),
  np.dtype(np.uint64): (2**32, 2**32 + 1, 2**63, 2**64 - 1),
}
"""64-bit index values that do not fit in the 32-bit counterpart type."""

NARROW = {np.dtype(np.int64): np.dtype(np.int32), np.dtype(np.uint64): np.dtype(np.uint32)}


def _mode_and_dtype(draw, dtype, x64: bool | None) -> tuple[bool, np.dtype]:
  """Picks the data dtype and the x64 mode (on for 64-bit data, else drawn)."""
  if dtype is None:
    # float32 weighted up: its examples also check jax.grad.
    choices = (np.float32,) * 3 + (DATA_32 if x64 is False else ALL_DATA)
    dtype = draw(st.sampled_from(choices), label="dtype")
  dtype = np.dtype(dtype)
  if x64 is None:
    x64 = True if dtype.itemsize == 8 else draw(st.booleans(), label="x64")
  assert x64 or dtype.itemsize < 8
  return x64, dtype


def _index_types(x64: bool) -> st.SearchStrategy[np.dtype]:
  return st.sampled_from(INDEX_32 + (INDEX_64 if x64 else ())).map(np.dtype)


# --------------------------------------------------------------------------- #
# Cases
# --------------------------------------------------------------------------- #


@dataclasses.dataclass
class Case:
  """One drawn operator call, with its reference and the checks to run.

  Attributes:
    op: the operator's name.
    params: the descriptor's attributes (axis, counts).
    x64: the jax_enable_x64 mode the example runs in.
    fn: the dml_jax operator on positional arrays.
    ref: the reference on the same positional arrays.
    examples: one tuple of argument arrays per example; examples[0] is the
      one checked eagerly, under jit and under grad; all are used by vmap.
    in_axes: vmap's in_axes (0 or None per argument), or None to skip vmap.
    data_args: positions of the data arguments (differentiated when float32).
    index_arg: position of the index/length argument, or None (JOIN).
    seed: the seed the data (and the gradient weights) come from.
  """

  op: str
  params: dict[str, Any]
  x64: bool
  fn: Callable[..., jax.Array]
  ref: Callable[..., np.ndarray]
  examples: list[tuple[np.ndarray, ...]]
  in_axes: tuple[int | None, ...] | None
  data_args: tuple[int, ...]
  index_arg: int | None
  seed: int

  def __repr__(self) -> str:
    lines = [
      f"Case({self.op}, {self.params}, x64={self.x64}, in_axes={self.in_axes}, seed={self.seed})"
    ]
    for i, example in enumerate(self.examples):
      for j, array in enumerate(example):
        text = np.array2string(array, threshold=10_000, max_line_width=200)
        if j in self.data_args and array.dtype.kind == "f":
          text += f"\n  bits: {array.view(f'u{array.itemsize}').ravel().tolist()}"
        lines.append(f" example {i} arg {j}: {array.dtype}{list(array.shape)}\n{text}")
    return "\n".join(lines)

  def _repr_pretty_(self, printer, cycle) -> None:  # what hypothesis prints for a draw
    printer.text(repr(self))


def _reduce_to_budget(sizes: list[int], budget: int) -> list[int]:
  """Shrinks the largest size until the product fits `budget` (or all are 1)."""
  sizes = list(sizes)
  while sizes and math.prod(sizes) > budget and max(sizes) > 1:
    sizes[sizes.index(max(sizes))] -= 1
  return sizes


SIZE = st.integers(1, 4)
"""A dimension's size."""

INDEXED_SIZE = st.sampled_from((2, 3, 4, 1))
"""The size of an indexed (or reversed) axis: 1 makes every index read element 0,
so it is drawn a quarter of the time only, and the shrinker goes for 2."""


def _draw_sizes(draw, rank: int, budget: int, element=SIZE) -> list[int]:
  sizes = draw(st.lists(element, min_size=rank, max_size=rank))
  return _reduce_to_budget(sizes, budget)


def _random_data(rng: np.random.Generator, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
  """Uniformly random bits: NaNs with payloads, infinities, -0.0, subnormals."""
  count = math.prod(shape)
  raw = rng.integers(0, 256, size=count * dtype.itemsize, dtype=np.uint8)
  return raw.view(dtype).reshape(shape).copy()


def _index_value(category: int, u: int, size: int, dtype: np.dtype) -> int:
  """Maps a drawn (category, u) to an index value for an axis of `size`.

  Categories 0-4: in range; 5-6: negative in [-size - 2, -1] (for unsigned
  types the same bits read as unsigned); 7: size or size + 5; 8-9: extreme.
  `dtype` bounds the values (the 32-bit type when 64-bit host indices must fit).
  """
  info = np.iinfo(dtype)
  if category <= 4:
    return u % size
  if category <= 6:
    negative = -1 - u % (size + 2)
    return negative if info.min < 0 else info.max + 1 + negative
  if category == 7:
    return (size, size + 5)[u % 2]
  extremes = [v for v in EXTREME_INDICES if info.min <= v <= info.max]
  return extremes[u % len(extremes)]


def _length_value(category: int, u: int, size: int, dtype: np.dtype) -> int:
  """Categories 0-6: a length in [0, size + 3]; 7-9: an extreme length."""
  if category <= 6:
    return u % (size + 4)
  extremes = [v for v in EXTREME_LENGTHS if v <= np.iinfo(dtype).max]
  return extremes[u % len(extremes)]


def _draw_indices(
  draw, dtype: np.dtype, sizes: np.ndarray, *, lengths: bool = False, fit_32: bool = False
) -> np.ndarray:
  """Draws an index (or length) array of `sizes.shape`; element e indexes an axis of sizes[e].

  Args:
    draw: hypothesis' draw.
    dtype: the array's dtype.
    sizes: the size of the axis each element indexes (same shape as the result).
    lengths: draw REVERSE_SUBSEQUENCES lengths instead of indices.
    fit_32: keep every value inside the 32-bit counterpart of a 64-bit dtype.
  """
  bound = NARROW.get(dtype, dtype) if fit_32 else dtype
  codes = draw(
    st.lists(
      st.tuples(st.integers(0, 9), st.integers(0, 255)), min_size=sizes.size, max_size=sizes.size
    )
  )
  value = _length_value if lengths else _index_value
  values = [value(c, u, int(s), bound) for (c, u), s in zip(codes, sizes.flat, strict=True)]
  return np.array(values, dtype=dtype).reshape(sizes.shape)


def _draw_vmap(draw, arg_count: int, allowed: bool = True) -> tuple[int, tuple | None]:
  """(examples to draw, vmap in_axes or None); about a third of cases skip vmap."""
  batch = draw(st.sampled_from((0, 2, 3))) if allowed else 0
  if not batch:
    return 1, None
  axes = draw(st.lists(st.sampled_from((0, None)), min_size=arg_count, max_size=arg_count))
  if 0 not in axes:
    axes[draw(st.integers(0, arg_count - 1))] = 0
  return batch, tuple(axes)


@st.composite
def gather_elements_cases(
  draw, dtype=None, x64: bool | None = None, index_types=None, fit_32=False, vmap=True
) -> Case:
  """GATHER_ELEMENTS: indices share the input's sizes except on `axis`."""
  x64, dtype = _mode_and_dtype(draw, dtype, x64)
  index_dtype = draw(
    st.sampled_from(index_types).map(np.dtype) if index_types else _index_types(x64)
  )
  rank = draw(st.integers(1, 8))
  axis = draw(st.integers(0, rank - 1))
  others = _draw_sizes(draw, rank, MAX_ELEMENTS // 4)
  input_shape = tuple(others[:axis] + [draw(INDEXED_SIZE)] + others[axis + 1 :])
  index_shape = tuple(others[:axis] + [draw(SIZE)] + others[axis + 1 :])
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  batch, in_axes = _draw_vmap(draw, 2, vmap)
  axis_sizes = np.full(index_shape, input_shape[axis])
  examples = [
    (
      _random_data(rng, dtype, input_shape),
      _draw_indices(draw, index_dtype, axis_sizes, fit_32=fit_32),
    )
    for _ in range(batch)
  ]
  return Case(
    "GATHER_ELEMENTS",
    {"axis": axis},
    x64,
    functools.partial(dml.gather_elements, axis=axis),
    functools.partial(reference.gather_elements, axis=axis),
    examples,
    in_axes,
    data_args=(0,),
    index_arg=1,
    seed=seed,
  )


@st.composite
def gather_nd_cases(
  draw, dtype=None, x64: bool | None = None, index_types=None, fit_32=False, vmap=True
) -> Case:
  """GATHER_ND (b = 0) and GATHER_ND1 with counts DirectML accepts.

  n: rank; m, q: InputDimensionCount, IndicesDimensionCount; b: batch dims;
  t: tuple length. Rules: 1 <= m, q <= n; b < min(m, q); 1 <= t <= m - b;
  X[:b] == I[:b]; k = (q - 1) + (m - b - t) <= n; leading dims beyond the
  counts are 1.
  """
  x64, dtype = _mode_and_dtype(draw, dtype, x64)
  index_dtype = draw(
    st.sampled_from(index_types).map(np.dtype) if index_types else _index_types(x64)
  )
  n = draw(st.integers(1, 8), label="n")
  m = draw(st.integers(1, n), label="m")
  b = draw(st.integers(0, m - 1), label="b")
  t = draw(st.integers(1, m - b), label="t")
  q = draw(st.integers(b + 1, min(n, n + 1 - (m - b - t))), label="q")
  assert (q - 1) + (m - b - t) <= n
  logical_input = _draw_sizes(draw, m, MAX_ELEMENTS // 2, INDEXED_SIZE)
  middle = draw(st.lists(SIZE, min_size=q - 1 - b, max_size=q - 1 - b))
  logical_indices = logical_input[:b] + middle + [t]
  kept = math.prod(logical_input[b + t :])
  # Indices and output both grow with the middle (index position) dims.
  middle_budget = MAX_ELEMENTS // max(math.prod(logical_input[:b]) * max(t, kept), 1)
  middle = _reduce_to_budget(middle, max(middle_budget, 1))
  logical_indices = logical_input[:b] + middle + [t]
  output_elements = math.prod(logical_indices[:-1]) * kept
  if math.prod(logical_indices) > MAX_ELEMENTS or output_elements > MAX_ELEMENTS:
    logical_input = [1] * m  # rare: fall back to the smallest shapes
    logical_indices = [1] * (q - 1) + [t]
  input_shape = (1,) * (n - m) + tuple(logical_input)
  index_shape = (1,) * (n - q) + tuple(logical_indices)
  # The tuple component j indexes logical input dim b + j.
  tuple_sizes = np.broadcast_to(np.array(logical_input[b : b + t]), index_shape)
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  batch, in_axes = _draw_vmap(draw, 2, vmap)
  examples = [
    (
      _random_data(rng, dtype, input_shape),
      _draw_indices(draw, index_dtype, tuple_sizes, fit_32=fit_32),
    )
    for _ in range(batch)
  ]
  # None is the default count (n); pass it that way now and then.
  input_count = None if m == n and draw(st.booleans()) else m
  indices_count = None if q == n and draw(st.booleans()) else q
  params = {
    "input_dimension_count": input_count,
    "indices_dimension_count": indices_count,
    "batch_dimension_count": b,
  }
  return Case(
    "GATHER_ND1" if b else "GATHER_ND",
    params,
    x64,
    functools.partial(dml.gather_nd, **params),
    functools.partial(reference.gather_nd, **params),
    examples,
    in_axes,
    data_args=(0,),
    index_arg=1,
    seed=seed,
  )


@st.composite
def gather_cases(
  draw, dtype=None, x64: bool | None = None, index_types=None, fit_32=False, vmap=True
) -> Case:
  """GATHER with q = IndexDimensions in [0, n]: leading index dims 1, and the sizes that right
  alignment crops (the logical output's first q - 1) set to 1."""
  x64, dtype = _mode_and_dtype(draw, dtype, x64)
  index_dtype = draw(
    st.sampled_from(index_types).map(np.dtype) if index_types else _index_types(x64)
  )
  n = draw(st.integers(1, 8), label="n")
  axis = draw(st.integers(0, n - 1), label="axis")
  q = draw(st.integers(0, n), label="q")
  others = _draw_sizes(draw, n, MAX_ELEMENTS // 8)
  logical_indices = _draw_sizes(draw, q, 8)
  for k in range(max(q - 1, 0)):  # cropped: input sizes before the axis, then J's
    if k < axis:
      others[k] = 1
    else:
      logical_indices[k - axis] = 1
  input_shape = tuple(others[:axis] + [draw(INDEXED_SIZE)] + others[axis + 1 :])
  index_shape = (1,) * (n - q) + tuple(logical_indices)
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  batch, in_axes = _draw_vmap(draw, 2, vmap)
  axis_sizes = np.full(index_shape, input_shape[axis])
  examples = [
    (
      _random_data(rng, dtype, input_shape),
      _draw_indices(draw, index_dtype, axis_sizes, fit_32=fit_32),
    )
    for _ in range(batch)
  ]
  # IndexDimensions set: left unset, the functional API reads the call as np.take (tested
  # against NumPy in test_natural_ranks.py).
  params = {"axis": axis, "index_dimensions": q}
  return Case(
    "GATHER",
    params,
    x64,
    functools.partial(dml.gather, **params),
    functools.partial(reference.gather, **params),
    examples,
    in_axes,
    data_args=(0,),
    index_arg=1,
    seed=seed,
  )


@st.composite
def reverse_subsequences_cases(
  draw, dtype=None, x64: bool | None = None, index_types=None, fit_32=False, vmap=True
) -> Case:
  """REVERSE_SUBSEQUENCES: one length per lane, the input's sizes with 1 on `axis`."""
  x64, dtype = _mode_and_dtype(draw, dtype, x64)
  length_dtype = draw(
    st.sampled_from(index_types or LENGTH_32 + (LENGTH_64 if x64 else ())).map(np.dtype)
  )
  rank = draw(st.integers(1, 8))
  axis = draw(st.integers(0, rank - 1))
  shape = _draw_sizes(draw, rank, MAX_ELEMENTS // 4)
  shape = tuple(shape[:axis] + [draw(INDEXED_SIZE)] + shape[axis + 1 :])
  lengths_shape = shape[:axis] + (1,) + shape[axis + 1 :]
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  batch, in_axes = _draw_vmap(draw, 2, vmap)
  axis_sizes = np.full(lengths_shape, shape[axis])
  # A third of the cases give every lane of a row (the dimensions after axis) the same length:
  # on the CPU that takes the row gather, the others its lane gather. Another third pass the
  # lengths with 1 on some dimensions (DirectML's zero strides): a row gather where all those
  # after axis are, known from the shapes.
  first_lane = (slice(None),) * (axis + 1) + (slice(0, 1),) * (rank - axis - 1)
  form = draw(st.sampled_from(["per lane", "shared", "compact"]))
  compact = tuple(
    1 if d == axis or (form == "compact" and draw(st.booleans())) else n
    for d, n in enumerate(lengths_shape)
  )

  def lengths():
    drawn = _draw_indices(draw, length_dtype, axis_sizes, lengths=True, fit_32=fit_32)
    if form == "shared":
      return np.broadcast_to(drawn[first_lane], lengths_shape).copy()
    return drawn[tuple(slice(0, n) for n in compact)].copy()

  def ref(x, n):
    return reference.reverse_subsequences(x, np.broadcast_to(n, lengths_shape), axis=axis)

  examples = [(_random_data(rng, dtype, shape), lengths()) for _ in range(batch)]
  return Case(
    "REVERSE_SUBSEQUENCES",
    {"axis": axis, "lengths": form, "lengths shape": compact},
    x64,
    functools.partial(dml.reverse_subsequences, axis=axis),
    ref,
    examples,
    in_axes,
    data_args=(0,),
    index_arg=1,
    seed=seed,
  )


@st.composite
def join_cases(draw, dtype=None, x64: bool | None = None) -> Case:
  """JOIN: 1-4 inputs of one dtype, equal sizes except on `axis`."""
  x64, dtype = _mode_and_dtype(draw, dtype, x64)
  count = draw(st.integers(1, 4))
  rank = draw(st.integers(1, 8))
  axis = draw(st.integers(0, rank - 1))
  others = _draw_sizes(draw, rank, MAX_ELEMENTS // 16)
  shapes = [tuple(others[:axis] + [draw(SIZE)] + others[axis + 1 :]) for _ in range(count)]
  seed = draw(st.integers(0, 2**32 - 1))
  rng = np.random.default_rng(seed)
  batch, in_axes = _draw_vmap(draw, count)
  examples = [tuple(_random_data(rng, dtype, shape) for shape in shapes) for _ in range(batch)]
  return Case(
    "JOIN",
    {"axis": axis, "input_count": count},
    x64,
    lambda *inputs: dml.join(list(inputs), axis=axis),
    lambda *inputs: reference.join(inputs, axis=axis),
    examples,
    in_axes,
    data_args=tuple(range(count)),
    index_arg=None,
    seed=seed,
  )


# --------------------------------------------------------------------------- #
# Checks
# --------------------------------------------------------------------------- #


def reference_scatter_add(case: Case, argnums: tuple[int, ...], w: np.ndarray) -> list[np.ndarray]:
  """d sum(op(x) * w) / dx for each differentiated argument, from the reference alone.

  Every output element of these operators is a copy of one input element, so
  running the reference on inputs tagged with their flat positions tells where
  each output element came from; the gradient is the scatter-add of `w` there.
  """
  args = list(case.examples[0])
  offsets = [0]
  for p in argnums:
    size = args[p].size
    args[p] = np.arange(offsets[-1], offsets[-1] + size, dtype=np.int64).reshape(args[p].shape)
    offsets.append(offsets[-1] + size)
  source = case.ref(*args)
  assert source.shape == w.shape
  total = np.zeros(offsets[-1], np.float32)
  np.add.at(total, source.ravel(), w.ravel())
  return [
    total[lo:hi].reshape(case.examples[0][p].shape)
    for p, lo, hi in zip(argnums, offsets[:-1], offsets[1:], strict=True)
  ]


def check_case(case: Case) -> None:
  """Eager, jit, vmap (if drawn) and grad (float32 data) against the reference."""
  with jax.enable_x64(case.x64):
    first = case.examples[0]
    expected = case.ref(*first)
    assert_bits_equal(case.fn(*first), expected, context="eager, NumPy arguments")
    assert_bits_equal(
      case.fn(*map(jnp.asarray, first)), expected, context="eager, jax.Array arguments"
    )
    assert_bits_equal(jax.jit(case.fn)(*first), expected, context="jit")

    if case.in_axes is not None:

      def pick(example, p):
        return example[p] if case.in_axes[p] == 0 else first[p]

      batched = [
        np.stack([ex[p] for ex in case.examples]) if axis == 0 else first[p]
        for p, axis in enumerate(case.in_axes)
      ]
      per_example = np.stack(
        [case.ref(*(pick(ex, p) for p in range(len(first)))) for ex in case.examples]
      )
      assert_bits_equal(
        jax.vmap(case.fn, in_axes=case.in_axes)(*batched), per_example, context="vmap"
      )

    argnums = tuple(p for p in case.data_args if first[p].dtype == np.float32)
    if argnums:
      # Small integer weights: every float32 sum is exact in any order.
      w = np.random.default_rng(case.seed + 1).integers(-4, 5, expected.shape).astype(np.float32)
      loss = lambda *args: jnp.sum(case.fn(*args) * w)
      grads = jax.jit(jax.grad(loss, argnums=argnums))(*first)
      for p, grad, want in zip(
        argnums, grads, reference_scatter_add(case, argnums, w), strict=True
      ):
        assert_bits_equal(grad, want, context=f"grad wrt argument {p}")


def _with_index(case: Case, example: tuple[np.ndarray, ...], index: np.ndarray):
  """The case's function of its data arguments, with `index` closed over (a host constant)."""

  def fn(*data):
    args = list(data)
    args.insert(case.index_arg, index)
    return case.fn(*args)

  data = tuple(a for p, a in enumerate(example) if p != case.index_arg)
  return fn, data


# --------------------------------------------------------------------------- #
# Properties: operators against the reference
# --------------------------------------------------------------------------- #


@pytest.mark.slow
# Each example compiles 3-5 functions (eager, jit, vmap, grad): 0.6 of the profile's
# max_examples (18 in "ci") for each of these properties keeps the suite's time in bounds.
@examples(0.4)
@given(data=st.data())
def test_gather_elements_matches_reference(data):
  check_case(data.draw(gather_elements_cases(), label="case"))


@pytest.mark.slow
@examples(0.4)
@given(data=st.data())
def test_gather_nd_matches_reference(data):
  check_case(data.draw(gather_nd_cases(), label="case"))


@pytest.mark.slow
@examples(0.4)
@given(data=st.data())
def test_gather_matches_reference(data):
  check_case(data.draw(gather_cases(), label="case"))


@pytest.mark.slow
@examples(0.4)
@given(data=st.data())
def test_reverse_subsequences_matches_reference(data):
  check_case(data.draw(reverse_subsequences_cases(), label="case"))


@pytest.mark.slow
@examples(0.4)
@given(data=st.data())
def test_join_matches_reference(data):
  check_case(data.draw(join_cases(), label="case"))


def _interesting_values(dtype, lengths: bool = False) -> list[int]:
  """Small, negative (or their unsigned bit patterns) and extreme values of `dtype`."""
  info = np.iinfo(dtype)
  if lengths:
    small = [0, 1, 2, 3, 4, 7]
    extremes = EXTREME_LENGTHS
  else:
    small = [0, 1, 3, 4, 9] + [info.max + 1 + v if info.min == 0 else v for v in (-1, -4, -5, -6)]
    extremes = EXTREME_INDICES
  return small + [v for v in extremes if info.min <= v <= info.max]


def _cycled(values: list[int], dtype, shape: tuple[int, ...]) -> np.ndarray:
  """`values` repeated to fill `shape`; every value must occur."""
  count = math.prod(shape)
  assert count >= len(values), (shape, len(values))
  return np.array((values * count)[:count], dtype=dtype).reshape(shape)


def _type_pairs() -> list[tuple[np.dtype, type]]:
  """(data type, index type) pairs: every index type with a data type of every width, and
  every data type at least once. The gathers move elements by their width, so each index
  type meets each width without the full product (23 programs of the 44)."""
  pairs, seen, covered = [], set(), set()
  for index_dtype in INDEX_32 + INDEX_64:
    for dtype in map(np.dtype, ALL_DATA):
      if (index_dtype, dtype.itemsize) not in covered:
        covered.add((index_dtype, dtype.itemsize))
        seen.add(dtype)
        pairs.append((dtype, index_dtype))
  for i, dtype in enumerate(d for d in map(np.dtype, ALL_DATA) if d not in seen):
    pairs.append((dtype, (INDEX_32 + INDEX_64)[i % 4]))
  return pairs


@pytest.mark.slow
def test_every_type_combination_matches_reference(x64):
  """Every data width with every index (length) type, and every data type, on fixed cases,
  jitted.

  The properties draw their types; this sweep makes sure that no combination of an index
  type and an element width is left out (`_type_pairs`). The indices cycle through small,
  negative and extreme values, each of which occurs.
  """
  rng = np.random.default_rng(0)

  def gathers(x, indices, tuples, picks):
    # GATHER_ELEMENTS; GATHER_ND1, b = 1: X = {2,11,2} -> {1,2,11}; GATHER_ND: X = {1,22,2} ->
    # {1,22,4}; GATHER of columns of every row (axis 1, q = 1: {2} ++ {K} ++ {4}). The
    # properties draw the other axes and counts. One program a combination of types.
    return (
      dml.gather_elements(x, indices, axis=2),
      dml.gather_nd(x, tuples, batch_dimension_count=1),
      dml.gather_nd(x, tuples.reshape(1, 22, 2), batch_dimension_count=0),
      dml.gather(x, picks, axis=1, index_dimensions=1),
    )

  jitted = jax.jit(gathers)
  pairs = _type_pairs()
  for dtype in map(np.dtype, ALL_DATA):
    x = _random_data(rng, dtype, (2, 8, 4))
    for index_dtype in [i for d, i in pairs if d == dtype]:
      name = f"{dtype.name} data, {np.dtype(index_dtype).name} indices"
      indices = _cycled(_interesting_values(index_dtype), index_dtype, (2, 8, 5))
      tuples = _cycled(_interesting_values(index_dtype)[::-1], index_dtype, (2, 11, 2))
      values = _interesting_values(index_dtype)
      picks = _cycled(values, index_dtype, (1, 1, len(values)))
      wants = (
        reference.gather_elements(x, indices, axis=2),
        reference.gather_nd(x, tuples, batch_dimension_count=1),
        reference.gather_nd(x, tuples.reshape(1, 22, 2), batch_dimension_count=0),
        reference.gather(x, picks, axis=1, index_dimensions=1),
      )
      labels = ("GATHER_ELEMENTS", "GATHER_ND b=1", "GATHER_ND b=0", "GATHER")
      for got, want, label in zip(jitted(x, indices, tuples, picks), wants, labels, strict=True):
        assert_bits_equal(got, want, context=f"{label}, {name}")
    for length_dtype in LENGTH_32 + LENGTH_64:
      lengths = _cycled(_interesting_values(length_dtype, lengths=True), length_dtype, (2, 8, 1))
      assert_bits_equal(
        dml.reverse_subsequences(x, lengths, axis=2),
        reference.reverse_subsequences(x, lengths, axis=2),
        context=f"REVERSE_SUBSEQUENCES, {dtype.name} data, {np.dtype(length_dtype).name} lengths",
      )
    inputs = [x[:, :1], x, x[:, 1:]]
    assert_bits_equal(
      dml.join(inputs, axis=1), reference.join(inputs, axis=1), context=f"JOIN, {dtype.name}"
    )


# --------------------------------------------------------------------------- #
# The 64-bit policy with jax_enable_x64 off
# --------------------------------------------------------------------------- #

INDEXED_CASES = {
  "gather": gather_cases,
  "gather_elements": gather_elements_cases,
  "gather_nd": gather_nd_cases,
  "reverse_subsequences": reverse_subsequences_cases,
}


@pytest.mark.parametrize("op", sorted(INDEXED_CASES))
@examples(0.35)
@given(data=st.data())
def test_64bit_host_indices_that_fit_match_reference_without_x64(no_x64, op, data):
  """int64/uint64 NumPy indices (lengths) with x64 off: narrowed, same result."""
  types = LENGTH_64 if op == "reverse_subsequences" else INDEX_64
  case = data.draw(
    INDEXED_CASES[op](x64=False, index_types=types, fit_32=True, vmap=False), label="case"
  )
  example = case.examples[0]
  expected = case.ref(*example)  # the reference sees the 64-bit values
  assert example[case.index_arg].dtype.itemsize == 8
  assert_bits_equal(case.fn(*example), expected, context="eager")
  fn, data_args = _with_index(case, example, example[case.index_arg])
  assert_bits_equal(jax.jit(fn)(*data_args), expected, context="jit, indices closed over")


@pytest.mark.parametrize("op", sorted(INDEXED_CASES))
@given(data=st.data())
def test_64bit_host_indices_that_do_not_fit_raise_without_x64(no_x64, op, data):
  """A 64-bit host index outside the 32-bit range raises ValueError; it never wraps."""
  types = LENGTH_64 if op == "reverse_subsequences" else INDEX_64
  case = data.draw(
    INDEXED_CASES[op](x64=False, index_types=types, fit_32=True, vmap=False), label="case"
  )
  example = case.examples[0]
  index = example[case.index_arg].copy()
  bad = data.draw(st.sampled_from(NOT_32_BIT[index.dtype]), label="bad value")
  position = data.draw(st.integers(0, index.size - 1), label="position")
  index.flat[position] = bad
  args = list(example)
  args[case.index_arg] = index
  with pytest.raises(ValueError, match="does not fit") as raised:
    case.fn(*args)
  assert not isinstance(raised.value, dml.DmlValidationError)
  assert str(bad) in str(raised.value)
  fn, data_args = _with_index(case, example, index)
  with pytest.raises(ValueError, match="does not fit"):
    jax.jit(fn)(*data_args)


def _small_call(op: str, dtype) -> tuple[Callable[..., Any], list[np.ndarray]]:
  """A valid call of `op` on data of `dtype` (and uint32 indices): (fn, data args)."""
  x = np.arange(6).astype(dtype).reshape(2, 3)
  if op == "gather":
    return lambda x: dml.gather(x, np.array([[0, 2, 1]], np.uint32), axis=1), [x]
  if op == "gather_elements":
    return lambda x: dml.gather_elements(x, np.array([[0, 2, 1]], np.uint32), axis=0), [x]
  if op == "gather_nd":
    return lambda x: dml.gather_nd(x, np.array([[1], [0]], np.uint32)), [x]
  if op == "reverse_subsequences":
    return lambda x: dml.reverse_subsequences(x, np.array([[3], [2]], np.uint32), axis=1), [x]
  assert op == "join"
  return lambda a, b: dml.join([a, b], axis=1), [x, x[:, :1]]


@pytest.mark.parametrize("dtype", DATA_64, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", sorted(INDEXED_CASES) + ["join"])
def test_64bit_data_without_x64_raises_type_error(no_x64, op, dtype):
  """64-bit data with x64 off is refused (eagerly and closed over under jit), never narrowed."""
  fn, args = _small_call(op, dtype)
  with pytest.raises(TypeError, match="jax_enable_x64"):
    fn(*args)
  if op == "join":  # one 64-bit input among 32-bit ones is enough
    with pytest.raises(TypeError, match="jax_enable_x64"):
      fn(args[0].astype(np.float32), args[1])
  with pytest.raises(TypeError, match="jax_enable_x64"):
    jax.jit(lambda: fn(*args))()  # host data closed over under jit


# --------------------------------------------------------------------------- #
# Pinned examples of the index rules (covered by the properties as well)
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
  "value, element", [(2**32 + 1, 3), (2**32, 3), (2**64 - 1, 3), (2**64 - 2, 3), (2**63, 3)]
)
def test_uint64_index_not_truncated(x64, value, element):
  """A huge uint64 index clamps to the last element; truncation would read another."""
  x = np.array([10, 11, 12, 13], np.float32)
  index = np.array([value], np.uint64)
  for fn in (lambda x, i: dml.gather_elements(x, i, axis=0), lambda x, i: dml.gather_nd(x, i)):
    assert_bits_equal(fn(x, index), np.array([x[element]]))
    assert_bits_equal(jax.jit(fn)(x, index), np.array([x[element]]))
