"""ARGMIN and ARGMAX's GPU kernel (`arg_min_max_tiles_triton`): its body in Pallas's interpret
mode against the reference, on values that tie and on every special value; when it applies; and
the kernel table's choice, which runs it on CUDA GPUs only."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dml_jax as dml
from dml_jax._src import reference
from dml_jax._src.kernels import arg_min_max_tiles_triton as tiles
from dml_jax._src.kernels import availability, forms
from dml_jax._src.ops import arg_min_max
from tests.helpers import in_turn

# Tiles of 4 elements of 8 lanes, and pieces wherever the programs are fewer than 8: short lanes
# take whole blocks and an overlapping last one, and runs of lanes overlap their neighbours.
SMALL = tiles.TilesConfig(lanes=8, ahead=4, programs=8)

# Few distinct values, so that every lane ties: both zeros, both infinities, NaNs of both signs.
VALUES = np.array([-np.inf, -1.0, -0.0, 0.0, 1.0, 2.0, 2.0, np.inf, np.nan, -np.nan])

# (op, direction) x (dtype, shape, axis): an axis before the last, with and without pieces.
PICKS = [("argmax", "INCREASING"), ("argmin", "DECREASING"), ("argmin", "INCREASING"),
         ("argmax", "DECREASING")]  # fmt: skip
CASES = [
  (np.float32, (19, 13), 0),  # 2 runs of 8 of 13 lanes (the last overlapping), 4 blocks + rest
  (np.float16, (2, 45, 20), 1),  # 3 runs of 8 of 20 lanes in each slab, 11 blocks + rest
  (np.float16, (40, 3), 0),  # 2 runs of 2 of 3 lanes, 4 pieces of 10: 2 blocks + rest each
  (np.float32, (48, 3), 0),  # 4 pieces of 12 elements: whole blocks
  (np.float32, (1, 2, 3, 32), 2),  # an axis shorter than `ahead`: blocks of 2, overlapping
]

pytestmark = pytest.mark.usefixtures("no_x64")


def _data(dtype, shape, seed):
  return np.random.default_rng(seed).choice(VALUES, shape).astype(dtype)


def _want(x, axis, op, direction):
  oracle = reference.argmax if op == "argmax" else reference.argmin
  want = oracle(x, axes=(axis,), axis_direction=direction, output_data_type="INT32")
  return np.squeeze(want, axis)


@pytest.mark.parametrize("pick, case", in_turn(PICKS, CASES))
def test_tiles_body_matches_reference(pick, case):
  (op, direction), (dtype, shape, axis) = pick, case
  x = _data(dtype, shape, seed=len(shape) + axis)
  index_dtype = np.dtype(np.uint32 if dtype == np.float16 else np.int32)
  got = tiles.arg_min_max_tiles(
    jnp.asarray(x),
    axis=axis,
    largest=op == "argmax",
    last_wins=direction == "DECREASING",
    index_dtype=index_dtype,
    config=SMALL,
    interpret=True,
  )
  assert got.dtype == index_dtype  # stored so, with pieces or without
  np.testing.assert_array_equal(got, _want(x, axis, op, direction))


def test_ranking_keys_rank_as_the_ordered_keys():
  # Every float16 bit pattern: the keys order as dml_jax's one order, ties and NaNs included.
  from dml_jax._src.axis_direction import ordered_keys

  x = np.arange(2**16, dtype=np.uint16).view(np.float16)
  for largest in (True, False):
    keys = np.asarray(tiles.ranking_keys(jnp.asarray(x), largest)).astype(np.int64)
    ordered = np.asarray(ordered_keys(jnp.asarray(x))).astype(np.int64)
    ordered = ordered if largest else -ordered
    # The same order: sorted by one, the other never decreases, and ties are the same.
    order = np.lexsort((keys, ordered))
    assert (np.diff(keys[order]) >= 0).all()
    assert ((np.diff(keys[order]) == 0) == (np.diff(ordered[order]) == 0)).all()


def test_tiles_apply_to_large_float_reductions_before_the_last_axis(monkeypatch):
  # As where Pallas Triton runs, so that each answer here is the shapes' own.
  with_triton = dataclasses.replace(availability.probe(), pallas_triton=True)
  monkeypatch.setattr(availability, "probe", lambda: with_triton)
  applies = tiles.applies
  f32, f16 = np.dtype(np.float32), np.dtype(np.float16)
  assert applies((8192, 8192), 0, f32)
  assert applies((8192, 8192), 0, f16)
  assert applies((4, 256, 32, 8), 1, f32)  # 256 lanes
  assert not applies((8192, 8192), 1, f32)  # the last axis keeps the lax form
  assert not applies((64, 2**16, 1), 1, f32)  # one lane after the axis: the same
  assert not applies((8192, 8192), 0, np.dtype(np.int32))  # integers keep the lax form
  assert not applies((4096, 64, 4), 1, f32)  # 4 lanes after the axis
  assert not applies((256, 256), 0, f32)  # 256 KiB
  assert not applies((2**16, 2**15), 0, f16)  # 2**31 elements


def test_tiles_never_apply_without_pallas_triton(monkeypatch):
  without = dataclasses.replace(availability.probe(), pallas_triton=False)
  monkeypatch.setattr(availability, "probe", lambda: without)
  assert not tiles.applies((8192, 8192), 0, np.dtype(np.float32))


def _pick(axis, adjacent=True):
  return arg_min_max.Pick(axis, True, True, adjacent, np.dtype(np.uint32))


def test_the_table_runs_the_tiles_kernel_on_cuda_only():
  big = jax.ShapeDtypeStruct((1024, 1024), np.float32)
  cuda = [k for k in arg_min_max.KERNELS if k.platform == "cuda"]  # the CPU has its own
  chosen = forms.chosen(cuda, _pick(0), big)
  assert sorted(chosen) == (["cuda"] if availability.probe().pallas_triton else [])
  assert forms.chosen(cuda, _pick(0, adjacent=False), big) == {}
  # On this process's CPU the program is the lax form: no Triton call in it.
  if jax.default_backend() == "cpu":
    compiled = jax.jit(lambda x: dml.argmax(x, axes=(0,))).lower(big).compile().as_text()
    assert "xla.gpu.triton" not in compiled  # no Triton call (names may say "triton")
  # Lowered for a CUDA GPU, the kernel is in the program where it applies: 2 MiB reduced along
  # an axis before the last (or axes merged into one), not along the last, nor 16 KiB.
  for shape, axes, kernel in (((64, 128, 64), (0,), True), ((64, 128, 64), (0, 1), True),
                              ((64, 128, 64), (2,), False), ((64, 128, 64), (1, 2), False),
                              ((4, 16, 64), (0,), False)):  # fmt: skip
    lowered = (
      jax.jit(lambda x, axes=axes: dml.argmin(x, axes=axes))
      .trace(jax.ShapeDtypeStruct(shape, np.float32))
      .lower(lowering_platforms=("cuda",))
      .as_text()
    )
    assert ("triton" in lowered) == (kernel and availability.probe().pallas_triton), axes


def test_the_kernel_runs_per_shard_under_jit_and_vmap(x64):
  # The table's entry as `forms` wraps it (partitioned), interpreted: positions as the
  # operator gives them, under jit and vmap, with x64 on.
  x = _data(np.float32, (2, 5, 24), seed=9)
  pick = arg_min_max.Pick(0, False, False, True, np.dtype(np.int64))
  (entry,) = [k for k in arg_min_max.KERNELS if k.name == "arg_min_max_tiles_triton"]
  entry = dataclasses.replace(entry, config=SMALL)
  run = forms.per_shard(entry, pick, jax.ShapeDtypeStruct(x.shape[1:], x.dtype), interpret=True)
  got = jax.jit(jax.vmap(run))(jnp.asarray(x))
  assert got.dtype == np.int64  # stored so by the kernel
  np.testing.assert_array_equal(got, _want(x, 1, "argmin", "DECREASING"))
