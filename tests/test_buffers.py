"""Buffers, bindings and strides: dml.read_tensor, dml.write_tensor, dml.execute.

Every result is compared byte for byte with a NumPy model of DirectML's tensor layer
written here from its definition, independently of dml_jax's lowering: a buffer is a
run of bytes; element c of a tensor bound at byte `offset` lives at byte
``offset + sum(c[i] * Strides[i]) * element size`` and is those bytes read as the
tensor's data type; writing an output changes exactly the bytes of its elements.
"""

from __future__ import annotations

import dataclasses
import itertools
import re

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dml_jax as dml
from dml_jax import TensorDesc
from dml_jax._src import buffers
from dml_jax._src.fields import FieldKind, dml_fields
from dml_jax._src.fixtures import load_fixtures
from tests import per_operator, strategies
from tests.helpers import assert_bits_equal, examples

# -- the NumPy model ---------------------------------------------------------------------------


def model_strides(sizes, strides):
  if strides is not None:
    return tuple(strides)
  out, step = [], 1
  for size in reversed(sizes):
    out.append(step)
    step *= size
  return tuple(reversed(out))


def model_read(raw: bytes, offset: int, dtype, sizes, strides=None) -> np.ndarray:
  """The tensor's elements, each read from its own bytes of `raw`."""
  dtype = np.dtype(dtype)
  strides = model_strides(sizes, strides)
  out = np.empty(sizes, dtype)
  for c in np.ndindex(*sizes):
    at = offset + sum(i * s for i, s in zip(c, strides, strict=True)) * dtype.itemsize
    out[c] = np.frombuffer(raw[at : at + dtype.itemsize], dtype)[0]
  return out


def model_write(raw: bytes, offset: int, value: np.ndarray, sizes, strides=None) -> bytes:
  """`raw` with each element of `value` stored at its own bytes; nothing else changes."""
  data = bytearray(raw)
  value = np.asarray(value)
  strides = model_strides(sizes, strides)
  size = value.dtype.itemsize
  for c in np.ndindex(*sizes):
    at = offset + sum(i * s for i, s in zip(c, strides, strict=True)) * size
    data[at : at + size] = value[c].tobytes()
  return bytes(data)


def as_bytes(buffer) -> bytes:
  return np.ascontiguousarray(np.asarray(buffer)).tobytes()


def random_buffer(rng, nbytes: int, dtype) -> np.ndarray:
  """`nbytes` random bytes (rounded up to whole elements) as a 1-D array of `dtype`."""
  dtype = np.dtype(dtype)
  count = -(-nbytes // dtype.itemsize)
  return np.frombuffer(rng.bytes(count * dtype.itemsize), dtype).copy()


# -- layouts -----------------------------------------------------------------------------------

LAYOUTS = ("packed", "broadcast", "padded", "permuted", "permuted_padded", "any")


@st.composite
def layout(draw, sizes, *, output=False):
  """Strides for `sizes` of one of the kinds DirectML users write (None: packed)."""
  kinds = [k for k in LAYOUTS if not (output and k in ("broadcast", "any"))]
  kind = draw(st.sampled_from(kinds))
  n = len(sizes)
  if kind == "packed":
    return None
  if kind == "any":
    return tuple(draw(st.integers(0, 7)) for _ in range(n))
  order = list(range(n))
  if kind.startswith("permuted"):
    order = draw(st.permutations(order))
  strides = [0] * n
  step = 1
  for d in reversed(order):  # order[-1] is the fastest dimension
    strides[d] = step
    pitch = sizes[d] + (draw(st.integers(0, 3)) if kind in ("padded", "permuted_padded") else 0)
    step *= pitch
  if kind == "broadcast":
    for d in range(n):
      if draw(st.booleans()):
        strides[d] = 0
  return tuple(strides)


def _disjoint(sizes, strides) -> bool:
  strides = model_strides(sizes, strides)
  positions = [sum(i * s for i, s in zip(c, strides, strict=True)) for c in np.ndindex(*sizes)]
  return len(set(positions)) == len(positions)


DATA_TYPES_32 = ("FLOAT32", "FLOAT16", "INT32", "UINT16", "INT8", "UINT8")
BUFFER_DTYPES = (np.uint8, np.float32, np.int16, np.uint32)


@st.composite
def bound_tensor(draw, *, output=False, max_rank=4):
  n = draw(st.integers(1, max_rank))
  sizes = tuple(draw(st.integers(1, 4)) for _ in range(n))
  strides = draw(layout(sizes, output=output))
  data_type = draw(st.sampled_from(DATA_TYPES_32))
  tensor = TensorDesc(data_type, sizes, strides=strides)
  offset = draw(st.sampled_from([0, 16, 48]))
  slack = draw(st.sampled_from([0, 4, 16]))
  return tensor, offset, offset + tensor.total_tensor_size_in_bytes + slack


# -- reading and writing one tensor -------------------------------------------------------------


@examples(0.5)
@given(bound_tensor(), st.sampled_from(BUFFER_DTYPES), st.integers(0, 2**32 - 1))
def test_read_tensor_matches_the_model(bound, buffer_dtype, seed):
  tensor, offset, nbytes = bound
  buffer = random_buffer(np.random.default_rng(seed), nbytes, buffer_dtype)
  got = dml.read_tensor(tensor, dml.Binding(buffer, offset))
  want = model_read(
    as_bytes(buffer), offset, tensor.data_type.numpy_dtype, tensor.sizes, tensor.strides
  )
  assert_bits_equal(got, want)


@examples(0.5)
@given(bound_tensor(output=True), st.sampled_from(BUFFER_DTYPES), st.integers(0, 2**32 - 1))
def test_write_tensor_changes_exactly_the_elements_bytes(bound, buffer_dtype, seed):
  tensor, offset, nbytes = bound
  rng = np.random.default_rng(seed)
  buffer = random_buffer(rng, nbytes, buffer_dtype)
  dtype = tensor.data_type.numpy_dtype
  value = np.frombuffer(rng.bytes(tensor.element_count * dtype.itemsize), dtype).reshape(
    tensor.sizes
  )
  got = dml.write_tensor(tensor, dml.Binding(buffer, offset), value)
  assert got.dtype == buffer.dtype and got.shape == buffer.shape
  assert as_bytes(got) == model_write(as_bytes(buffer), offset, value, tensor.sizes, tensor.strides)


# -- every operator, on bound buffers ----------------------------------------------------------


def _with_layouts(desc, input_strides, output_strides):
  """`desc` with the given strides on its inputs (in dml_inputs order) and outputs."""
  for i, strides in enumerate(input_strides):
    desc = strategies.replace_input(desc, i, strides=strides, total_tensor_size_in_bytes=None)
  outputs = [
    dataclasses.replace(t, strides=s, total_tensor_size_in_bytes=None)
    for t, s in zip(desc.outputs, output_strides, strict=True)
  ]
  fields = [f for f in dml_fields(desc) if f.output]
  if fields[0].kind is FieldKind.TENSOR_ARRAY:
    return dataclasses.replace(desc, **{fields[0].name: tuple(outputs)})
  # One TENSOR field per output (TOP_K's values and indices).
  return dataclasses.replace(desc, **{f.name: t for f, t in zip(fields, outputs, strict=True)})


@pytest.mark.parametrize("op", sorted(per_operator.VALID))
@settings(max_examples=3)
@given(data=st.data())
def test_execute_on_bound_buffers_matches_the_model(op, data):
  case = data.draw(per_operator.VALID[op](), label="case")
  desc = case.desc
  tensors = [t for _, _, t in desc.dml_inputs()] + list(desc.outputs)  # CAST's output too
  wide = any(t.data_type.is_64_bit for t in tensors)
  rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
  inputs = [t for _, _, t in desc.dml_inputs()]
  input_strides = [data.draw(layout(t.sizes)) for t in inputs]
  output_strides = []
  for t in desc.outputs:
    strides = data.draw(layout(t.sizes, output=True))
    output_strides.append(strides if _disjoint(t.sizes, strides) else None)
  desc = _with_layouts(desc, input_strides, output_strides)
  # All inputs in one buffer, each at its own 16-byte-aligned offset, filled by the model.
  offsets, end = [], 16
  for _, _, t in desc.dml_inputs():
    offsets.append(end)
    end += -(-t.total_tensor_size_in_bytes // 16) * 16 + 16
  raw = rng.bytes(end)
  for (_, _, t), array, offset in zip(desc.dml_inputs(), case.arrays, offsets, strict=True):
    values = np.broadcast_to(np.asarray(array, t.data_type.numpy_dtype), t.sizes)
    raw = model_write(raw, offset, values, t.sizes, t.strides)
    # A zero stride keeps one value per broadcast line: the case's array (which its oracle
    # reads) becomes what the bound tensor holds.
    np.copyto(array, model_read(raw, offset, array.dtype, t.sizes, t.strides).reshape(array.shape))
  source = np.frombuffer(raw, np.uint8).copy()
  outputs, before = [], []
  for t in desc.outputs:
    out = random_buffer(rng, 32 + t.total_tensor_size_in_bytes, np.uint8)
    outputs.append(dml.Binding(out, 32))
    before.append(as_bytes(out))
  expected = case.expected()
  expected = expected if isinstance(expected, list | tuple) else [expected]
  with jax.enable_x64(True) if wide else _NoMode():
    got = dml.execute(
      desc, [dml.Binding(source, o) for o in offsets], outputs, feature_level=case.level
    )
  for buffer, old, t, want in zip(got, before, desc.outputs, expected, strict=True):
    assert as_bytes(buffer) == model_write(old, 32, want, t.sizes, t.strides), str(desc)


class _NoMode:
  """The x64 mode as it is."""

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    return False


# -- the strides page's examples ---------------------------------------------------------------

STRIDES_FIXTURES = [
  f for f in load_fixtures("ELEMENT_WISE_IDENTITY") if f.inputs["input"].buffer is not None
]


def test_the_five_strides_examples_are_fixtures():
  assert len(STRIDES_FIXTURES) == 5
  for fixture in STRIDES_FIXTURES:
    assert fixture.provenance["path"] == "docs/directml/dml-strides.md"
    assert any("ASCII" in note for note in fixture.notes)


@pytest.mark.parametrize("fixture", STRIDES_FIXTURES, ids=lambda f: f.id)
def test_strides_example_through_a_bound_buffer(fixture):
  view = fixture.inputs["input"]
  tensor = TensorDesc(view.data_type, view.sizes, strides=view.strides)
  # Bound buffers are whole DWORDs: the page's memory, padded to TotalTensorSizeInBytes.
  memory = np.zeros(max(tensor.total_tensor_size_in_bytes, len(view.buffer)), np.uint8)
  memory[: len(view.buffer)] = view.buffer
  assert_bits_equal(
    model_read(memory.tobytes(), 0, np.uint8, view.sizes, view.strides), fixture.output.data
  )
  out = np.full(32, ord("."), np.uint8)
  desc = dml.ElementWiseIdentityDesc(tensor)
  (got,) = dml.execute(desc, [dml.Binding(memory)], [dml.Binding(out, 16)])
  expected = out.copy()
  expected[16 : 16 + view.data.size] = fixture.output.data.ravel()
  assert_bits_equal(got, expected)
  assert_bits_equal(dml.read_tensor(tensor, dml.Binding(memory)), fixture.output.data)


# -- the layouts DirectML users write ----------------------------------------------------------


def test_nhwc_input_read_as_nchw_through_strides():
  n, h, w, c = 2, 3, 4, 5
  nhwc = np.arange(n * h * w * c, dtype=np.float32).reshape(n, h, w, c)
  as_nchw = TensorDesc("FLOAT32", (n, c, h, w), strides=(h * w * c, 1, w * c, c))
  desc = dml.ElementWiseIdentityDesc(as_nchw)
  (out,) = dml.execute(
    desc, [dml.Binding(nhwc.ravel())], [dml.Binding(np.zeros(nhwc.size, np.float32))]
  )
  assert_bits_equal(np.asarray(out).reshape(n, c, h, w), nhwc.transpose(0, 3, 1, 2))


def test_one_buffer_read_as_another_type_and_bound_twice():
  buffer = np.arange(16, dtype=np.uint8)
  low = TensorDesc("UINT16", (4,))
  desc = dml.JoinDesc((low, TensorDesc("UINT16", (4,))), axis=0)
  (out,) = dml.execute(
    desc, [dml.Binding(buffer), dml.Binding(buffer)], [dml.Binding(np.zeros(4, np.float32))]
  )
  halves = buffer[:8].view(np.uint16)
  assert as_bytes(out) == np.concatenate([halves, halves]).tobytes()


def test_identity_in_place_reads_before_it_writes():
  buffer = np.arange(8, dtype=np.float32)
  desc = dml.ElementWiseIdentityDesc(
    TensorDesc("FLOAT32", (1, 1, 2, 2), strides=(0, 0, 1, 2)),  # a transposed 2x2 view
    TensorDesc("FLOAT32", (1, 1, 2, 2)),
  )
  binding = dml.Binding(buffer)
  (out,) = dml.execute(desc, [binding], [binding])
  assert_bits_equal(out, np.array([0, 2, 1, 3, 4, 5, 6, 7], np.float32))


def test_scale_bias_on_bound_buffers():
  x = np.array([1, 2, 3, 4], np.float32)
  desc = dml.ElementWiseIdentityDesc(TensorDesc("FLOAT32", (4,)), scale_bias=(0.5, 1.0))
  (out,) = dml.execute(desc, [dml.Binding(x)], [dml.Binding(np.zeros(4, np.float32))])
  assert_bits_equal(out, np.array([1.5, 2, 2.5, 3], np.float32))


def test_execute_inside_jit_and_with_donation():
  desc = dml.ElementWiseIdentityDesc(
    TensorDesc("INT32", (2, 2), strides=(1, 2)), TensorDesc("INT32", (2, 2), strides=(4, 1))
  )

  def run(source, target, donate=False):
    return dml.execute(desc, [dml.Binding(source)], [dml.Binding(target)], donate=donate)[0]

  source = jax.numpy.arange(4, dtype=np.int32)
  target = jax.numpy.full(8, -1, np.int32)
  want = np.array([0, 2, -1, -1, 1, 3, -1, -1], np.int32)
  assert_bits_equal(jax.jit(run)(source, target), want)
  assert_bits_equal(run(source, jax.numpy.full(8, -1, np.int32), donate=True), want)
  donating = jax.jit(lambda s, t: run(s, t), donate_argnums=1)
  assert "input_output_alias" in donating.lower(source, target).compile().as_text()


def test_owned_by_dml_input_is_bound_at_initialization_only():
  owned = TensorDesc("FLOAT32", (4,), flags=dml.TensorFlags.OWNED_BY_DML)
  op = dml.compile_operator(dml.ElementWiseIdentityDesc(owned, TensorDesc("FLOAT32", (4,))))
  out = [dml.Binding(np.zeros(4, np.float32))]
  with pytest.raises(dml.DmlBindingError, match=r"InputTensor is OWNED_BY_DML: call initialize"):
    op.execute([None], out)
  weights = np.arange(4, dtype=np.float32)
  op.initialize([dml.Binding(weights)])
  with pytest.raises(dml.DmlBindingError, match=r"refuses it at execution; pass None for it"):
    op.execute([dml.Binding(weights)], out)
  weights[:] = -1  # the initializer copied the bytes
  assert_bits_equal(op.execute([None], out)[0], np.arange(4, dtype=np.float32))


# -- the binding rules, one test each -----------------------------------------------------------

FLOATS = TensorDesc("FLOAT32", (2, 2))


def _identity(out=None, input=FLOATS):
  return dml.ElementWiseIdentityDesc(input, out)


def test_offset_must_be_a_multiple_of_16():
  buffer = np.zeros(64, np.uint8)
  with pytest.raises(
    dml.DmlBindingError,
    match=re.escape(
      "InputTensor bound at offset 8 of a buffer of 64 bytes: the offset must be a multiple of 16"
      " (DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT); got 8"
    ),
  ):
    dml.execute(_identity(), [dml.Binding(buffer, 8)], [dml.Binding(np.zeros(4, np.float32))])


def test_offset_must_honour_guaranteed_base_offset_alignment():
  aligned = TensorDesc("FLOAT32", (2, 2), guaranteed_base_offset_alignment=32)
  with pytest.raises(
    dml.DmlBindingError,
    match=re.escape(
      "InputTensor bound at offset 16 of a buffer of 64 bytes: InputTensor."
      "GuaranteedBaseOffsetAlignment promises offsets that are multiples of 32; 16 is not"
    ),
  ):
    dml.execute(
      _identity(input=aligned),
      [dml.Binding(np.zeros(64, np.uint8), 16)],
      [dml.Binding(np.zeros(4, np.float32))],
    )


def test_bound_range_must_hold_total_tensor_size_in_bytes():
  with pytest.raises(
    dml.DmlBindingError,
    match=re.escape(
      "OutputTensor bound at offset 16 of a buffer of 24 bytes: the bound range holds 8 bytes"
      " (buffer size minus offset), fewer than OutputTensor.TotalTensorSizeInBytes = 16"
    ),
  ):
    dml.execute(
      _identity(), [dml.Binding(np.zeros(4, np.float32))], [dml.Binding(np.zeros(24, np.uint8), 16)]
    )
  with pytest.raises(dml.DmlBindingError, match=r"holds 12 bytes \(SizeInBytes\), fewer than"):
    dml.read_tensor(FLOATS, dml.Binding(np.zeros(64, np.uint8), 0, size_in_bytes=12))


@pytest.mark.parametrize(
  ("strides", "reason"),
  [((0, 1), r"Strides\[0\] is 0 while Sizes\[0\] is 2"), ((1, 1), r"element \(1, 0\) lands on")],
)
def test_output_strides_must_not_overlap(strides, reason):
  out = TensorDesc("FLOAT32", (2, 2), strides=strides)
  with pytest.raises(
    dml.DmlBindingError,
    match=r"OutputTensor has overlapping strides \{"
    + ",".join(map(str, strides))
    + r"\} for sizes \{2,2\}: "
    + reason,
  ):
    dml.execute(
      _identity(out), [dml.Binding(np.zeros(4, np.float32))], [dml.Binding(np.zeros(4, np.float32))]
    )


def test_an_output_buffer_may_not_be_an_input_buffer():
  desc = dml.JoinDesc((FLOATS, FLOATS), axis=0)
  buffer = np.zeros(32, np.float32)
  with pytest.raises(
    dml.DmlBindingError,
    match=re.escape(
      "InputTensors[1] and OutputTensor are bound to the same buffer (Binding(float32[32],"
      " offset=64)): DML_OPERATOR_JOIN has no in-place form"
    ),
  ):
    dml.execute(
      desc, [dml.Binding(np.zeros(4, np.float32)), dml.Binding(buffer, 64)], [dml.Binding(buffer)]
    )


def test_outputs_may_not_share_bytes():
  desc = dml.SplitDesc(
    TensorDesc("FLOAT32", (4,)),
    axis=0,
    output_tensors=(TensorDesc("FLOAT32", (2,)), TensorDesc("FLOAT32", (2,))),
  )
  buffer = np.zeros(16, np.float32)
  with pytest.raises(
    dml.DmlBindingError,
    match=re.escape(
      "OutputTensors[1] (bytes [0, 8)) and OutputTensors[0] (bytes [0, 8)) are bound to"
      " overlapping ranges of one buffer"
    ),
  ):
    dml.execute(
      desc, [dml.Binding(np.zeros(4, np.float32))], [dml.Binding(buffer), dml.Binding(buffer)]
    )
  first, second = dml.execute(
    desc,
    [dml.Binding(np.arange(4, dtype=np.float32))],
    [dml.Binding(buffer), dml.Binding(buffer, 16)],
  )
  assert first is second
  assert_bits_equal(first[:8], np.array([0, 1, 0, 0, 2, 3, 0, 0], np.float32))


def test_a_binding_is_static():
  with pytest.raises(TypeError, match="Binding.offset must be a Python int"):
    dml.Binding(np.zeros(4, np.uint8), offset=jax.numpy.int32(0))
  with pytest.raises(TypeError, match="must be a 1-D array"):
    dml.read_tensor(FLOATS, dml.Binding(np.zeros((4, 4), np.float32)))


# -- what a binding costs -----------------------------------------------------------------------


def _moves(compiled_text: str) -> int:
  """Instructions of an optimized HLO module's entry computation that move data."""
  entry = compiled_text[compiled_text.index("ENTRY") :]
  kinds = ("fusion(", "copy(", "concatenate(", "slice(", "dynamic-update-slice(", "transpose(")
  return sum(entry.count(f" {kind}") for kind in kinds)


def test_a_packed_binding_adds_no_copy():
  a = jax.numpy.ones(1024, np.float32)
  b = jax.numpy.zeros(1024, np.float32)
  tensor = TensorDesc("FLOAT32", (4, 256))
  desc = dml.JoinDesc((tensor, tensor), axis=0)

  def bound(a, b, out):
    return dml.execute(desc, [dml.Binding(a), dml.Binding(b)], [dml.Binding(out)])[0]

  def plain(a, b):
    return dml.join([a.reshape(4, 256), b.reshape(4, 256)], axis=0).reshape(-1)

  out = jax.numpy.empty(2048, np.float32)
  with_bindings = jax.jit(bound).lower(a, b, out).compile().as_text()
  functional = jax.jit(plain).lower(a, b).compile().as_text()
  assert _moves(with_bindings) <= _moves(functional), (with_bindings, functional)
  identity = dml.ElementWiseIdentityDesc(tensor)
  copy = jax.jit(lambda x, out: dml.execute(identity, [dml.Binding(x)], [dml.Binding(out)])[0])
  assert _moves(copy.lower(a, b).compile().as_text()) <= 1  # at most the copy itself


def _copies(compiled_text: str) -> dict[str, int]:
  """How many instructions of each kind that copies or indexes data the whole optimized HLO
  module holds (fused computations included)."""
  kinds = ("copy", "gather", "scatter", "dynamic-slice", "dynamic-update-slice")
  return {kind: compiled_text.count(f" {kind}(") for kind in kinds}


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("gap", [0, 16], ids=["back_to_back", "gaps"])
def test_join_from_offsets_of_one_buffer_adds_no_copy(axis, gap):
  rows, cols = 4, 256
  size = rows * cols
  starts = [k * (size + gap) for k in range(4)]  # in elements; gap=16: 64 bytes between inputs
  tensor = TensorDesc("FLOAT32", (rows, cols))
  desc = dml.JoinDesc((tensor,) * 4, axis=axis)

  def bound(buffer, out):
    inputs = [dml.Binding(buffer, offset=4 * start) for start in starts]
    return dml.execute(desc, inputs, [dml.Binding(out)])[0]

  def plain(buffer):  # the same arrays, sliced out of the buffer
    pieces = [buffer[start : start + size].reshape(rows, cols) for start in starts]
    return dml.join(pieces, axis=axis).reshape(-1)

  buffer = jax.numpy.arange(4 * (size + gap), dtype=np.float32)
  out = jax.numpy.empty(4 * size, np.float32)
  assert_bits_equal(bound(buffer, out), plain(buffer))
  with_bindings = jax.jit(bound).lower(buffer, out).compile().as_text()
  functional = jax.jit(plain).lower(buffer).compile().as_text()
  copies, functional_copies = _copies(with_bindings), _copies(functional)
  for kind, count in copies.items():
    assert count <= functional_copies[kind], (kind, with_bindings, functional)
  assert copies["gather"] == copies["dynamic-update-slice"] == 0, with_bindings
  assert _moves(with_bindings) <= _moves(functional), (with_bindings, functional)


def _entry(compiled_text: str) -> str:
  return compiled_text[compiled_text.index("\nENTRY ") :]


def test_join_of_bound_parts_reads_them_in_place_on_the_cpu():
  """JOIN along axis 1 of four parts of one buffer, into a padded pitch: XLA:CPU's
  concatenate would copy each part out of the buffer first; the program is one fusion that
  reads them where they lie. Inputs that are whole buffers keep the concatenate."""
  rows, cols, pad = 8, 64, 16
  size = rows * cols
  tensor = TensorDesc("FLOAT32", (rows, cols))
  output = TensorDesc("FLOAT32", (rows, 4 * cols), strides=(4 * cols + pad, 1))
  desc = dml.JoinDesc((tensor,) * 4, axis=1, output_tensor=output)

  def parts(buffer, out):
    inputs = [dml.Binding(buffer, offset=4 * k * size) for k in range(4)]
    return dml.execute(desc, inputs, [dml.Binding(out)])[0]

  def wholes(a, b, c, d, out):
    inputs = [dml.Binding(x) for x in (a, b, c, d)]
    return dml.execute(desc, inputs, [dml.Binding(out)])[0]

  buffer = jax.numpy.arange(4 * size, dtype=np.float32) - 7.5
  out = jax.numpy.full(rows * (4 * cols + pad), -1.0, np.float32)
  pieces = [np.asarray(buffer[k * size : (k + 1) * size]).reshape(rows, cols) for k in range(4)]
  want = np.full((rows, 4 * cols + pad), -1.0, np.float32)
  want[:, : 4 * cols] = np.concatenate(pieces, axis=1)
  assert_bits_equal(parts(buffer, out).reshape(want.shape), want)
  assert_bits_equal(wholes(*(p.reshape(-1) for p in pieces), out).reshape(want.shape), want)
  on_cpu = jax.devices("cpu")[0]
  parts_text = jax.jit(parts).lower(*jax.device_put((buffer, out), on_cpu)).compile().as_text()
  assert " concatenate(" not in _entry(parts_text)
  assert _entry(parts_text).count(" fusion(") == 1, _entry(parts_text)
  flat = jax.device_put([p.reshape(-1) for p in pieces] + [out], on_cpu)
  wholes_text = jax.jit(wholes).lower(*flat).compile().as_text()
  assert " concatenate(" in _entry(wholes_text)


def test_the_usage_page_buffers_example_runs():
  import pathlib

  usage = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "usage.md").read_text()
  section = usage[usage.index("## Buffers and strides") :]
  code = section[section.index("```python\n") + 10 : section.index("```\n", 10)]
  namespace: dict = {}
  exec(code, namespace)
  assert_bits_equal(
    namespace["out"].reshape(3, 4),
    np.array([[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8, 11]], np.float32),
  )


# --------------------------------------------------------------------------- #
# Transposes of bound tensors: adjacent axes merged first
# --------------------------------------------------------------------------- #


@pytest.mark.mode_independent  # float32 data and static permutations: no dtype the mode sets
@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_transpose_merged_is_the_transpose_for_every_permutation(rank, monkeypatch):
  rng = np.random.default_rng(rank)
  x = rng.standard_normal(tuple(int(s) for s in rng.integers(1, 4, rank))).astype(np.float32)
  perms = list(itertools.permutations(range(rank)))
  # A few through JAX; every one of them with NumPy's transpose under the merging (XLA:CPU
  # compiles each transpose program in about 0.1 s, and rank 5 has 120 permutations).
  for perm in perms[:: max(1, len(perms) // 4)]:
    assert_bits_equal(buffers.transpose_merged(x, perm), x.transpose(perm), context=str(perm))
  monkeypatch.setattr(buffers, "transpose", np.transpose)
  for perm in perms:
    assert_bits_equal(buffers.transpose_merged(x, perm), x.transpose(perm), context=str(perm))


def test_nhwc_read_as_nchw_is_one_transpose_of_three_dimensions():
  """The binding's strides (H*W*C, 1, W*C, C) keep H and W adjacent: they move as one axis."""
  n, h, w, c = 2, 3, 4, 5
  nchw = TensorDesc("FLOAT32", (n, c, h, w), strides=(h * w * c, 1, w * c, c))
  desc = dml.ElementWiseIdentityDesc(nchw, TensorDesc("FLOAT32", (n, c, h, w)))
  x = np.arange(n * h * w * c, dtype=np.float32)

  def run(b):
    (out,) = dml.execute(desc, inputs=[dml.Binding(b)], outputs=[dml.Binding(np.zeros_like(x))])
    return out

  jaxpr = jax.make_jaxpr(run)(x).jaxpr
  transposes = [e for e in _all_eqns(jaxpr) if e.primitive.name == "transpose"]
  assert [t.params["permutation"] for t in transposes] == [(0, 2, 1)]
  assert_bits_equal(run(x), x.reshape(n, h, w, c).transpose(0, 3, 1, 2).reshape(-1))


def _all_eqns(jaxpr):
  """Every equation of `jaxpr` and of the jaxprs nested in its equations."""
  for eqn in jaxpr.eqns:
    for param in eqn.params.values():
      if hasattr(param, "jaxpr"):
        inner = param.jaxpr
        yield from _all_eqns(inner.jaxpr if hasattr(inner, "jaxpr") else inner)
    yield eqn
