"""What the jitted programs contain: data movement only, and 64-bit indices kept wide.

Validation runs in Python at trace time on static shapes, so the jaxpr of
every operator holds only the lowering's primitives: no callbacks, no checks,
and no control flow but two: REVERSE_SUBSEQUENCES picks its row gather when every lane
of a row has the same length (a cond on the lengths; none where the lengths array
has 1 after the axis, which says so from the shapes), and
JOIN picks its CPU form by platform (resolved when lowering). 64-bit indices are
normalized and clamped in their own dtype; the only narrowing conversion applies
to the clamped values.
"""

import dataclasses

import jax
import numpy as np
import pytest
from jax.extend import core as jex_core

import dml_jax as dml
from dml_jax._src.kernels import availability

DATA_MOVEMENT = {
  "gather",
  "concatenate",
  "reshape",
  "broadcast_in_dim",
  "iota",
  "convert_element_type",
  "select_n",
  "lt",
  "le",
  "not",
  "add",
  "sub",
  "min",
  "max",
  "jit",
  "pjit",
  "squeeze",
}
# REVERSE_SUBSEQUENCES's choice between lanes and rows: the platform, then whether the
# lengths of each row's lanes are equal; its rows move as words (bitcasts), their tangent not.
ROWS = {"custom_jvp_call", "bitcast_convert_type"}
ROWS_OR_LANES = {"platform_index", "cond", "eq", "reduce_and", "slice"} | ROWS
# JOIN's choice of its CPU form (views joined where XLA:CPU would copy on one thread).
BY_PLATFORM = {"platform_index", "cond"}
# The scatters: the range rule (dropped updates), the winners (a max of positions, read back
# with a gather and compared), and the one scatter of the winners; the platform's choice of
# the CPU's one scatter in order (of single elements: at flat offsets, coordinates times
# strides), whose gradient is the settled form's.
SCATTERS = {"scatter", "scatter-max", "gt", "ge", "eq", "and", "reduce_and", "custom_vjp_call"}
SCATTERS |= {"mul"}
SCATTERS |= BY_PLATFORM


def _eqns(jaxpr, *, opaque=frozenset()):
  """Every equation, into nested jaxprs except those of the primitives named in `opaque`."""
  for eqn in jaxpr.eqns:
    yield eqn
    if eqn.primitive.name in opaque:
      continue
    for param in eqn.params.values():
      for sub in param if isinstance(param, tuple | list) else [param]:
        if isinstance(sub, jex_core.ClosedJaxpr):
          yield from _eqns(sub.jaxpr, opaque=opaque)
        elif isinstance(sub, jex_core.Jaxpr):
          yield from _eqns(sub, opaque=opaque)


def _cases(index_dtype):
  x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  return {
    "gather": (
      lambda x, i: dml.gather(x, i, axis=1, index_dimensions=1),
      (x, np.zeros((1, 1, 5), index_dtype)),
    ),
    "gather_rows": (
      lambda x, i: dml.gather(x.reshape(1, 6, 4), i, axis=1, index_dimensions=1),
      (x, np.zeros((1, 1, 5), index_dtype)),
    ),
    "gather_elements": (
      lambda x, i: dml.gather_elements(x, i, axis=2),
      (x, np.zeros((2, 3, 5), index_dtype)),
    ),
    "gather_nd": (lambda x, i: dml.gather_nd(x, i), (x, np.zeros((1, 5, 2), index_dtype))),
    "gather_nd1": (
      lambda x, i: dml.gather_nd(x, i, batch_dimension_count=1),
      (x, np.zeros((2, 5, 1), index_dtype)),
    ),
    "reverse_subsequences": (
      lambda x, n: dml.reverse_subsequences(x, n, axis=1),
      (x, np.ones((2, 1, 4), np.uint32)),
    ),
    "join": (lambda x, y: dml.join([x, y], axis=0), (x, x)),
    "scatter_elements": (
      lambda x, i, u: dml.scatter_elements(x, i, u, axis=2),
      (x, np.zeros((2, 3, 5), index_dtype), np.zeros((2, 3, 5), np.float32)),
    ),
    "scatter_nd": (
      lambda x, i, u: dml.scatter_nd(x, i, u),
      (x, np.zeros((1, 5, 2), index_dtype), np.zeros((1, 5, 4), np.float32)),
    ),
  }


@pytest.mark.parametrize("name", list(_cases(np.int32)))
def test_jaxpr_holds_only_data_movement(name):
  fn, args = _cases(np.int32)[name]
  jaxpr = jax.make_jaxpr(fn)(*args)
  primitives = {eqn.primitive.name for eqn in _eqns(jaxpr.jaxpr)}
  extra = {
    "reverse_subsequences": ROWS_OR_LANES,
    "join": BY_PLATFORM,
    "scatter_elements": SCATTERS,
    "scatter_nd": SCATTERS,
  }.get(name, set())
  allowed = DATA_MOVEMENT | extra
  assert primitives <= allowed, primitives - allowed


@pytest.mark.parametrize("lengths_shape", [(2, 1, 1), (1, 1, 1)])
def test_one_length_a_row_is_known_from_the_shapes(lengths_shape):
  """Lengths with 1 after the axis (DirectML's zero strides) take the row gather on every
  platform, with no run-time check and no choice in the program."""
  fn = lambda x, n: dml.reverse_subsequences(x, n, axis=1)
  x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  jaxpr = jax.make_jaxpr(fn)(x, np.ones(lengths_shape, np.uint32))
  primitives = {eqn.primitive.name for eqn in _eqns(jaxpr.jaxpr)}
  allowed = DATA_MOVEMENT | ROWS
  assert primitives <= allowed, primitives - allowed


def test_jaxpr_with_the_strip_kernel_holds_only_data_movement(monkeypatch):
  """Where REVERSE_SUBSEQUENCES picks the Mosaic GPU strip kernel, the program around the
  kernel is the same data movement plus the run-time choice and the kernel's wrappers."""
  with_tma = dataclasses.replace(availability.probe(), tma=True)
  monkeypatch.setattr(availability, "probe", lambda: with_tma)
  fn = lambda x, n: dml.reverse_subsequences(x, n, axis=1)
  jaxpr = jax.make_jaxpr(fn)(np.zeros((2, 256, 64), np.float32), np.ones((2, 1, 64), np.uint32))
  kernel = {"mpmd_map", "pallas_call"}  # the kernel launch (its name differs across versions)
  primitives = {eqn.primitive.name for eqn in _eqns(jaxpr.jaxpr, opaque=kernel)}
  assert primitives & kernel
  # lax's gradient, the kernel's batching and partitioning, its data as unsigned words
  wrappers = {"custom_vjp_call", "custom_vmap_call", "custom_partitioning", "bitcast_convert_type"}
  allowed = DATA_MOVEMENT | ROWS_OR_LANES | kernel | wrappers
  assert primitives <= allowed, primitives - allowed


@pytest.mark.parametrize("name", list(_cases(np.int32)))
def test_jaxpr_does_not_depend_on_feature_level(name):
  fn, args = _cases(np.int32)[name]
  a = jax.make_jaxpr(lambda *xs: fn(*xs))(*args)
  # A feature level changes what is accepted, never the program.
  with_level = {
    "gather": lambda x, i: dml.gather(x, i, axis=1, index_dimensions=1, feature_level="3_0"),
    "gather_rows": lambda x, i: dml.gather(
      x.reshape(1, 6, 4), i, axis=1, index_dimensions=1, feature_level="3_0"
    ),
    "gather_elements": lambda x, i: dml.gather_elements(x, i, axis=2, feature_level="3_0"),
    "gather_nd": lambda x, i: dml.gather_nd(x, i, feature_level="3_0"),
    "gather_nd1": lambda x, i: dml.gather_nd(x, i, batch_dimension_count=1, feature_level="3_0"),
    "reverse_subsequences": lambda x, n: dml.reverse_subsequences(
      x, n, axis=1, feature_level="4_0"
    ),
    "join": lambda x, y: dml.join([x, y], axis=0, feature_level="3_1"),
    "scatter_elements": lambda x, i, u: dml.scatter_elements(x, i, u, axis=2, feature_level="3_0"),
    "scatter_nd": lambda x, i, u: dml.scatter_nd(x, i, u, feature_level="3_0"),
  }[name]
  b = jax.make_jaxpr(with_level)(*args)
  assert str(a) == str(b)


@pytest.mark.parametrize("index_dtype", [np.int64, np.uint64])
@pytest.mark.parametrize(
  "name",
  [
    "gather",
    "gather_rows",
    "gather_elements",
    "gather_nd",
    "gather_nd1",
    "scatter_elements",
    "scatter_nd",
  ],
)
def test_64_bit_indices_are_clamped_before_narrowing(name, index_dtype, x64):
  fn, args = _cases(index_dtype)[name]
  jaxpr = jax.make_jaxpr(fn)(*args)
  eqns = list(_eqns(jaxpr.jaxpr))
  producers = {id(v): e for e in eqns for v in e.outvars}
  narrowing = [
    e
    for e in eqns
    if e.primitive.name == "convert_element_type"
    and e.params["new_dtype"] == np.int32
    and np.dtype(e.invars[0].aval.dtype).itemsize == 8
  ]
  assert narrowing, "the clamped 64-bit indices should be narrowed once, for the gather"
  for eqn in narrowing:
    producer = producers.get(id(eqn.invars[0]))
    assert producer is not None and producer.primitive.name in ("min", "select_n"), producer
  gathers = [e for e in eqns if e.primitive.name in ("gather", "scatter")]
  assert gathers and all(np.dtype(g.invars[1].aval.dtype) == np.int32 for g in gathers)
  if name.startswith("scatter"):  # whether an update is dropped is judged in 64 bits
    judged = [e for e in eqns if e.primitive.name in ("gt", "ge")]
    assert judged and all(np.dtype(e.invars[0].aval.dtype).itemsize == 8 for e in judged)


@pytest.mark.parametrize("index_dtype", [np.int64, np.uint64])
def test_uint64_index_not_truncated(index_dtype, x64):
  x = np.arange(6, dtype=np.int8)
  big = np.array([2**32 + 1, 2**63 - 1 + (index_dtype == np.uint64) * 2**63], index_dtype)
  out = dml.gather_elements(x, big, axis=0)
  np.testing.assert_array_equal(out, [5, 5])  # clamped to the last element, never element 1
  assert dml.gather_elements(x, big[:1], axis=0).dtype == np.int8


@pytest.mark.parametrize(
  "dtype, moved", [(np.int8, np.uint32), (np.float16, np.uint32), (np.float32, np.float32)]
)
def test_rows_of_narrow_lanes_move_as_words(dtype, moved):
  """The row gather moves int8 and float16 rows as 32-bit words, and wider lanes as they are."""
  fn = lambda x, n: dml.reverse_subsequences(x, n, axis=1)
  x = np.zeros((2, 3, 8), dtype)
  jaxpr = jax.make_jaxpr(fn)(x, np.ones((2, 1, 1), np.uint32))
  gathers = [e for e in _eqns(jaxpr.jaxpr) if e.primitive.name == "gather"]
  operands = {np.dtype(e.invars[0].aval.dtype) for e in gathers}
  assert np.dtype(moved) in operands
