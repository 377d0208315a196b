"""The tensor layer executed: tensors bound to buffers at byte offsets, read and written by strides.

In DirectML every tensor is a view of a buffer: a binding (the buffer, a byte
offset, a size in bytes) and a `TensorDesc` (data type, sizes, element strides).
Element ``c`` of the tensor lives at element position ``sum(c[i] * Strides[i])``
counted from the binding's offset, in units of the tensor's data type. Buffers
are untyped: a buffer filled with float32 may be read as UINT8 or FLOAT16, and one
buffer may be bound to several tensors.

Here a buffer is a 1-D array of any DirectML element type (bytes, usually).
`read_tensor` gives a bound tensor as a JAX array of its sizes; `write_tensor`
returns the buffer with an array written at the tensor's strided positions and
every other byte unchanged (the stride gaps too: DirectML may overwrite gaps inside
TotalTensorSizeInBytes, dml_jax keeps them, so results are deterministic).

Reads and writes lower to the cheapest lax form the static strides allow, found
at trace time:

- the bytes become elements by a bitcast (none when the buffer has the tensor's
  dtype) of the slice the binding addresses (a packed tensor at an offset is a
  slice);
- dimensions of stride 0 (or size 1) are dropped and restored by a broadcast;
- the remaining strides, largest first, must each be a multiple of the next and
  leave room for it (a padded pitch): the elements are then a reshape and a slice
  of the buffer (written: a reshape and an update slice), followed by a transpose
  when the strides are not in dimension order (NHWC read as NCHW);
- anything else (strides that are not multiples of each other, overlapping input
  strides) takes a gather, or for an output a scatter.

Examples:
  >>> import numpy as np
  >>> from dml_jax import TensorDesc
  >>> buffer = np.frombuffer(b"ABCxxDEFxx" + bytes(6), np.uint8)   # rows of 3, pitch 5
  >>> rows = TensorDesc("UINT8", (2, 3), strides=(5, 1))
  >>> bytes(np.asarray(read_tensor(rows, Binding(buffer))).ravel())
  b'ABCDEF'
  >>> bytes(np.asarray(write_tensor(rows, Binding(buffer), np.full((2, 3), ord("-"), np.uint8))))
  b'---xx---xx\\x00\\x00\\x00\\x00\\x00\\x00'
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax import lax

from dml_jax._src import dtypes
from dml_jax._src.dtypes import DataType
from dml_jax._src.errors import DmlBindingError
from dml_jax._src.kernels import forms, transpose_cpu
from dml_jax._src.kernels.partitioning import Roles, Shaped, dims, factors
from dml_jax._src.tensor_desc import TensorDesc, packed_strides

MINIMUM_BUFFER_TENSOR_ALIGNMENT = 16
"""A buffer tensor's binding offset is always a multiple of 16 bytes (DirectML's minimum)."""

_EXACT_OVERLAP_CHECK_LIMIT = 2**22
"""Above this many elements, output strides that no simple argument shows disjoint are
refused rather than enumerated (see `output_overlap`)."""


@dataclasses.dataclass(frozen=True, eq=False)
class Binding:
  """`DML_BUFFER_BINDING`: the range of a buffer one tensor is bound to.

  Attributes:
    buffer: a 1-D array (JAX, NumPy or a tracer) of any DirectML element type;
      its bytes are what DirectML's untyped buffer holds.
    offset: Offset, in bytes from the buffer's start: a multiple of 16 and of the
      tensor's GuaranteedBaseOffsetAlignment.
    size_in_bytes: SizeInBytes, the bytes of the range, at least the tensor's
      TotalTensorSizeInBytes; None: to the end of the buffer.

  Examples:
    >>> import numpy as np
    >>> Binding(np.zeros(64, np.uint8), offset=32)
    Binding(uint8[64], offset=32)
  """

  buffer: Any
  offset: int = 0
  size_in_bytes: int | None = None

  def __post_init__(self) -> None:
    for name in ("offset", "size_in_bytes"):
      value = getattr(self, name)
      if value is None and name == "size_in_bytes":
        continue
      if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(
          f"Binding.{name} must be a Python int (bindings are static, as in DirectML);"
          f" got {type(value).__name__} {value!r}"
        )
      if value < 0:
        raise ValueError(f"Binding.{name} is a UINT64 and cannot be negative; got {value}")
      object.__setattr__(self, name, int(value))

  def __repr__(self) -> str:
    shape = getattr(self.buffer, "shape", None)
    dtype = getattr(self.buffer, "dtype", None)
    what = f"{np.dtype(dtype).name}[{','.join(map(str, shape))}]" if shape is not None else "?"
    extra = f", size_in_bytes={self.size_in_bytes}" if self.size_in_bytes is not None else ""
    return f"Binding({what}, offset={self.offset}{extra})"


# -- the binding rules ------------------------------------------------------------------------


def buffer_operand(buffer: Any, what: str) -> Any:
  """A buffer as an array JAX can hold: 1-D, of a DirectML element type (TypeError else)."""
  array, _ = dtypes.as_operand(buffer, role=what)
  if len(array.shape) != 1:
    raise TypeError(
      f"{what} must be a 1-D array (a DirectML buffer is a flat range of bytes); got shape"
      f" {tuple(array.shape)}: pass buffer.reshape(-1)"
    )
  return array


def buffer_size_in_bytes(buffer: Any) -> int:
  return int(buffer.shape[0]) * np.dtype(buffer.dtype).itemsize


def tensor_dtype(tensor: TensorDesc, what: str) -> np.dtype:
  """The NumPy dtype a tensor's elements are read as (TypeError for types JAX cannot hold)."""
  dtype = tensor.data_type.numpy_dtype
  if dtype is None:
    raise TypeError(f"{what}.DataType {tensor.data_type} has no JAX element type to read it as")
  if tensor.data_type.is_64_bit and not dtypes.x64_enabled():
    raise TypeError(
      f"{what} is {tensor.data_type}, which JAX cannot hold with jax_enable_x64 off;"
      f" {dtypes.X64_TIP}"
    )
  return np.dtype(dtype)


def check_binding(tensor: TensorDesc, binding: Binding, buffer: Any, what: str) -> int:
  """DirectML's rules for binding `tensor` (named `what`) to `binding`; returns the bytes of
  the bound range (the view). Raises DmlBindingError naming the tensor, binding and numbers."""
  total = buffer_size_in_bytes(buffer)
  offset = binding.offset
  where = f"{what} bound at offset {offset} of a buffer of {total} bytes"
  if offset % MINIMUM_BUFFER_TENSOR_ALIGNMENT:
    raise DmlBindingError(
      f"{where}: the offset must be a multiple of {MINIMUM_BUFFER_TENSOR_ALIGNMENT}"
      f" (DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT); got {offset} = 16 * {offset // 16} +"
      f" {offset % 16}. Move the tensor to offset {offset - offset % 16} or {offset + 16 - offset % 16}"
    )
  alignment = tensor.guaranteed_base_offset_alignment
  if alignment and offset % alignment:
    raise DmlBindingError(
      f"{where}: {what}.GuaranteedBaseOffsetAlignment promises offsets that are multiples of"
      f" {alignment}; {offset} is not. Bind at a multiple of {alignment} or lower the promise"
    )
  if offset > total:
    raise DmlBindingError(f"{where}: the offset lies past the buffer's end ({total} bytes)")
  view = total - offset if binding.size_in_bytes is None else binding.size_in_bytes
  if offset + view > total:
    raise DmlBindingError(
      f"{where}: the binding's SizeInBytes {view} reaches byte {offset + view}, past the"
      f" buffer's end ({total} bytes)"
    )
  needed = tensor.total_tensor_size_in_bytes
  if view < needed:
    raise DmlBindingError(
      f"{where}: the bound range holds {view} bytes"
      f" ({'buffer size minus offset' if binding.size_in_bytes is None else 'SizeInBytes'}),"
      f" fewer than {what}.TotalTensorSizeInBytes = {needed}. Use a larger buffer, a smaller"
      f" offset, or a tensor that needs fewer bytes"
    )
  return view


def strides_of(tensor: TensorDesc) -> tuple[int, ...]:
  return tensor.strides if tensor.strides is not None else packed_strides(tensor.sizes)


@functools.lru_cache(maxsize=1024)
def output_overlap(sizes: tuple[int, ...], strides: tuple[int, ...]) -> str | None:
  """Why an output with these sizes and strides would write one element twice, or None.

  Dimensions of size 1 never overlap. A zero stride on a larger dimension does. Strides
  sorted largest first, each larger than the span of all smaller ones, are disjoint;
  other layouts are checked element by element up to a limit.
  """
  dims = [d for d in range(len(sizes)) if sizes[d] > 1]
  zero = [d for d in dims if strides[d] == 0]
  if zero:
    d = zero[0]
    return f"Strides[{d}] is 0 while Sizes[{d}] is {sizes[d]}: every element of that dimension"
  order = sorted(dims, key=lambda d: -strides[d])
  span = 0
  disjoint = True
  for d in reversed(order):
    if strides[d] <= span:
      disjoint = False
      break
    span += (sizes[d] - 1) * strides[d]
  if disjoint:
    return None
  count = math.prod(sizes)
  if count > _EXACT_OVERLAP_CHECK_LIMIT:
    return (
      f"these strides are not nested (each larger than the span of the smaller ones), and"
      f" {count} elements are too many to check one by one"
    )
  positions = np.zeros((), np.int64)
  for size, stride in zip(sizes, strides, strict=True):
    positions = positions[..., None] + np.arange(size, dtype=np.int64) * stride
  flat = positions.ravel()
  unique, first = np.unique(flat, return_index=True)
  if len(unique) == len(flat):
    return None
  seen = np.ones(len(flat), bool)
  seen[first] = False
  twice = int(np.flatnonzero(seen)[0])
  coords = np.unravel_index(twice, sizes)
  return f"element {tuple(int(c) for c in coords)} lands on element position {int(flat[twice])}"


def check_output_strides(tensor: TensorDesc, what: str) -> None:
  reason = output_overlap(tensor.sizes, strides_of(tensor))
  if reason is not None:
    raise DmlBindingError(
      f"{what} has overlapping strides {{{','.join(map(str, strides_of(tensor)))}}} for sizes"
      f" {{{','.join(map(str, tensor.sizes))}}}: {reason} is written more than once, which"
      f" DirectML does not define. Give every output element its own position (packed strides"
      f" or a padded pitch)"
    )


# -- the layout plan ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Plan:
  """How a tensor's elements sit in a flat run of elements, as lax can move them.

  `dims` are the dimensions of size > 1 and stride > 0, `order` the same sorted by
  stride, largest first. When `nested`, the first `span` elements reshaped to `grid`
  hold dimension order[i] along grid axis i (sliced to its size) and the element at
  position 0 of the last axis; otherwise a gather (scatter) addresses them.
  """

  sizes: tuple[int, ...]
  strides: tuple[int, ...]
  dims: tuple[int, ...]
  order: tuple[int, ...]
  nested: bool
  grid: tuple[int, ...]
  span: int  # elements of the grid (nested) or to the last addressed element plus one

  @property
  def count(self) -> int:
    """Elements from the first to the last addressed one."""
    return sum((s - 1) * d for s, d in zip(self.sizes, self.strides, strict=True)) + 1

  @property
  def covers_grid(self) -> bool:
    """The tensor's elements fill the grid's span (packed in some dimension order)."""
    return self.nested and math.prod(self.sizes[d] for d in self.dims) == self.span


@functools.lru_cache(maxsize=1024)
def plan(sizes: tuple[int, ...], strides: tuple[int, ...]) -> Plan:
  dims = tuple(d for d in range(len(sizes)) if sizes[d] > 1 and strides[d] > 0)
  order = tuple(sorted(dims, key=lambda d: -strides[d]))
  s = [strides[d] for d in order]
  m = [sizes[d] for d in order]
  nested = all(s[i] % s[i + 1] == 0 and s[i] >= m[i + 1] * s[i + 1] for i in range(len(s) - 1))
  if not order:
    return Plan(sizes, strides, dims, order, True, (1,), 1)
  if not nested:
    count = sum((a - 1) * b for a, b in zip(sizes, strides, strict=True)) + 1
    return Plan(sizes, strides, dims, order, False, (), count)
  grid = (m[0], *(s[i] // s[i + 1] for i in range(len(s) - 1)), s[-1])
  return Plan(sizes, strides, dims, order, True, grid, m[0] * s[0])


def _grid_slice(p: Plan) -> tuple[tuple[int, ...], tuple[int, ...]]:
  """(start, limit) of the tensor's elements in the grid."""
  limits = tuple(p.sizes[d] for d in p.order) + (1,)
  return (0,) * len(p.grid), limits


def _sorted_to_dims(p: Plan) -> tuple[int, ...]:
  """The transpose taking the grid's (sorted) axes back to dimension order."""
  return tuple(p.order.index(d) for d in p.dims)


def _fit(v: jax.Array, length: int) -> jax.Array:
  """`v` cut or zero-padded to `length` elements (padding is never part of a result)."""
  have = v.shape[0]
  if have == length:
    return v
  if have > length:
    return lax.slice(v, (0,), (length,))
  return lax.pad(v, np.zeros((), v.dtype), ((0, length - have, 0),))


def transpose_merged(x: jax.Array, perm: tuple[int, ...]) -> jax.Array:
  """`lax.transpose(x, perm)`, with the axes that stay adjacent and in order merged first.

  XLA:CPU runs the transpose of fewer dimensions faster (benchmark case
  `element_wise_identity_nhwc_to_nchw`). The bits are the same. The merged transpose goes through
  `transpose`, which swaps the last two dimensions of 32-bit tensors of 1 MiB or more
  with a native kernel on the CPU.

  Examples:
    >>> x = np.arange(24).reshape(1, 2, 3, 4)
    >>> bool((transpose_merged(x, (0, 3, 1, 2)) == x.transpose(0, 3, 1, 2)).all())
    True
  """
  runs: list[list[int]] = []  # input axes that move together, in output order
  for axis in perm:
    if runs and runs[-1][-1] + 1 == axis:
      runs[-1].append(axis)
    else:
      runs.append([axis])
  if len(runs) == len(perm):
    return transpose(x, perm)
  order = sorted(range(len(runs)), key=lambda r: runs[r][0])  # the runs in input order
  merged = x.reshape(tuple(math.prod(x.shape[a] for a in runs[r]) for r in order))
  moved = transpose(merged, tuple(order.index(r) for r in range(len(runs))))
  return moved.reshape(tuple(x.shape[a] for a in perm))


def read_elements(v: jax.Array, p: Plan) -> jax.Array:
  """The tensor whose element c is v[sum(c * strides)], as an array of its sizes."""
  if not p.nested:
    index = _positions(p)
    return v.at[index].get(mode="promise_in_bounds", unique_indices=False)
  grid = _fit(v, p.span).reshape(p.grid)
  start, limit = _grid_slice(p)
  if limit != p.grid:
    grid = lax.slice(grid, start, limit)
  kept = grid.reshape(limit[:-1])
  perm = _sorted_to_dims(p)
  if perm != tuple(range(len(perm))):
    kept = transpose_merged(kept, perm)
  if len(p.dims) == len(p.sizes):
    return kept
  return lax.broadcast_in_dim(kept, p.sizes, p.dims)


def write_elements(w: jax.Array, y: jax.Array, p: Plan) -> jax.Array:
  """`w` with v[sum(c * strides)] = y[c] for every c; nothing else changes."""
  if not p.nested:
    index = _positions(p)
    return w.at[index.reshape(-1)].set(y.reshape(-1), unique_indices=True, mode="promise_in_bounds")
  kept = y.reshape(tuple(p.sizes[d] for d in p.dims))  # the dropped dimensions have size 1
  inverse = tuple(p.dims.index(d) for d in p.order)
  if inverse != tuple(range(len(inverse))):
    kept = transpose_merged(kept, inverse)
  _, limit = _grid_slice(p)
  block = kept.reshape(limit)
  if p.covers_grid and w.shape[0] == p.span:  # every element is written: no read of `w`
    return block.reshape(-1)
  grid = _fit(w, p.span).reshape(p.grid)
  grid = lax.dynamic_update_slice(grid, block, (0,) * len(p.grid))
  flat = grid.reshape(-1)
  if w.shape[0] == p.span:
    return flat
  if w.shape[0] < p.span:
    return lax.slice(flat, (0,), (w.shape[0],))
  return lax.dynamic_update_slice(w, flat, (0,))


def _positions(p: Plan) -> jax.Array:
  """Element positions sum(c * strides) for every c, as an int array of the tensor's sizes."""
  index_dtype = np.int32 if p.count <= 2**31 - 1 else np.int64
  if index_dtype == np.int64 and not dtypes.x64_enabled():
    raise TypeError(
      f"a tensor addressing {p.count} elements with strides that need a gather takes 64-bit"
      f" positions; {dtypes.X64_TIP}"
    )
  total = jax.numpy.zeros(p.sizes, index_dtype)
  for d in range(len(p.sizes)):
    if p.sizes[d] > 1 and p.strides[d]:
      total = total + lax.broadcasted_iota(index_dtype, p.sizes, d) * index_dtype(p.strides[d])
  return total


# -- bytes and elements ---------------------------------------------------------------------------


def as_elements(raw: jax.Array, dtype: np.dtype) -> jax.Array:
  """A 1-D array's bytes as a 1-D array of `dtype` (its byte length a multiple of the size)."""
  source = np.dtype(raw.dtype)
  if source == dtype:
    return raw
  b, t = source.itemsize, dtype.itemsize
  if b == t:
    return lax.bitcast_convert_type(raw, dtype)
  if b > t:
    return lax.bitcast_convert_type(raw, dtype).reshape(-1)
  return lax.bitcast_convert_type(raw.reshape(-1, t // b), dtype)


def _window(
  tensor: TensorDesc, binding: Binding, buffer: Any, view: int, dtype: np.dtype, p: Plan
) -> tuple[int, int, int]:
  """(start, stop) of the buffer elements holding the elements a plan touches, the elements
  wanted, and the elements the view has."""
  t = dtype.itemsize
  b = np.dtype(buffer.dtype).itemsize
  wanted = max(p.count, p.span)
  have = min(wanted, view // t)
  start = binding.offset // b
  stop = -(-(binding.offset + have * t) // b)
  return start, stop, have


def _bound_window(
  tensor: TensorDesc, binding: Binding, buffer: Any, view: int, what: str
) -> tuple[np.dtype, Plan, int, int, int]:
  """A bound tensor's data type and plan, and `_window` of its binding."""
  dtype = tensor_dtype(tensor, what)
  p = plan(tensor.sizes, strides_of(tensor))
  return (dtype, p, *_window(tensor, binding, buffer, view, dtype, p))


def read_bound(
  tensor: TensorDesc, binding: Binding, buffer: Any, view: int, what: str = "tensor"
) -> jax.Array:
  """The bound tensor as an array of its sizes and data type (a binding checked already)."""
  dtype, p, start, stop, have = _bound_window(tensor, binding, buffer, view, what)
  raw = buffer if (start, stop) == (0, buffer.shape[0]) else lax.slice(buffer, (start,), (stop,))
  v = as_elements(jax.numpy.asarray(raw), dtype)
  if v.shape[0] > have:
    v = lax.slice(v, (0,), (have,))
  return read_elements(v, p)


def reads_part(tensor: TensorDesc, binding: Binding, buffer: Any, view: int) -> bool:
  """Whether `read_bound` cuts the tensor out of a larger buffer (a slice in the program)
  rather than reading the whole buffer, which XLA passes to an operation as it is."""
  _, _, start, stop, _ = _bound_window(tensor, binding, buffer, view, "tensor")
  return (start, stop) != (0, buffer.shape[0])


def write_bound(
  tensor: TensorDesc, binding: Binding, buffer: Any, view: int, value: Any, what: str = "tensor"
) -> jax.Array:
  """The buffer with `value` written at the bound tensor's positions, other bytes kept."""
  buffer = jax.numpy.asarray(buffer)
  dtype, p, start, stop, _ = _bound_window(tensor, binding, buffer, view, what)
  whole = (start, stop) == (0, buffer.shape[0])
  raw = buffer if whole else lax.slice(buffer, (start,), (stop,))
  w = as_elements(raw, dtype)
  updated = write_elements(w, jax.numpy.asarray(value, dtype).reshape(tensor.sizes), p)
  new_raw = as_elements(updated, np.dtype(buffer.dtype))
  if whole:
    return new_raw
  return lax.dynamic_update_slice(buffer, new_raw, (start,))


# -- one tensor, for users --------------------------------------------------------------------


def read_tensor(tensor: TensorDesc, binding: Binding) -> jax.Array:
  """A tensor bound to a buffer, read as a JAX array of its sizes and data type.

  The binding is checked as DirectML checks it (offset alignment, bound bytes against
  TotalTensorSizeInBytes); the buffer may hold any element type: its bytes are
  reinterpreted as the tensor's data type. Works on tracers (inside `jax.jit`).

  Args:
    tensor: the TensorDesc (sizes, strides, data type).
    binding: the buffer, byte offset and size.

  Raises:
    DmlBindingError: for a binding DirectML would refuse.
    TypeError: for a buffer that is not 1-D, or a 64-bit type with x64 off.

  Examples:
    >>> import numpy as np
    >>> from dml_jax import TensorDesc
    >>> buffer = np.arange(8, dtype=np.float32)                    # 32 bytes
    >>> read_tensor(TensorDesc("FLOAT32", (2, 2), strides=(1, 0)), Binding(buffer, offset=16))
    Array([[4., 4.],
           [5., 5.]], dtype=float32)
  """
  buffer = buffer_operand(binding.buffer, "the buffer")
  view = check_binding(tensor, binding, buffer, "the tensor")
  return read_bound(tensor, binding, buffer, view)


def write_tensor(tensor: TensorDesc, binding: Binding, value: Any) -> jax.Array:
  """The binding's buffer with `value` written at the tensor's strided positions.

  Element c goes to byte ``offset + sum(c[i] * Strides[i]) * element size``; every other
  byte of the buffer, stride gaps included, is unchanged. The buffer keeps its dtype
  and length. Strides that write an element twice are refused.

  Raises:
    DmlBindingError: for a binding DirectML would refuse, or overlapping strides.
    TypeError: for a buffer that is not 1-D, or a 64-bit type with x64 off.

  Examples:
    >>> import numpy as np
    >>> from dml_jax import TensorDesc
    >>> column = TensorDesc("INT8", (3, 1), strides=(4, 1))
    >>> write_tensor(column, Binding(np.zeros(16, np.int8)), np.array([[1], [2], [3]], np.int8))
    Array([1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0], dtype=int8)
  """
  buffer = buffer_operand(binding.buffer, "the buffer")
  view = check_binding(tensor, binding, buffer, "the tensor")
  check_output_strides(tensor, "the tensor")
  shape = tuple(np.shape(value))
  if shape != tensor.sizes:
    raise ValueError(f"the value has shape {shape}; the tensor's sizes are {tensor.sizes}")
  return write_bound(tensor, binding, buffer, view, value)


def data_type_of_buffer(buffer: Any) -> DataType:
  return DataType.from_dtype(buffer.dtype)


def unique_buffers(bindings: Sequence[Binding | None]) -> tuple[list[Any], list[int | None]]:
  """The distinct buffers of `bindings` (by identity: one array bound twice is one buffer),
  and each binding's buffer index (None for an empty slot)."""
  found: list[Any] = []
  where: list[int | None] = []
  for binding in bindings:
    if binding is None:
      where.append(None)
      continue
    for i, seen in enumerate(found):
      if seen is binding.buffer:
        where.append(i)
        break
    else:
      found.append(binding.buffer)
      where.append(len(found) - 1)
  return found, where


# -- kernels ---------------------------------------------------------------------------------


def transpose(x: jax.Array, perm: tuple[int, ...]) -> jax.Array:
  """`lax.transpose(x, perm)`. On the CPU: the native kernel where it applies
  (`TRANSPOSE_KERNELS`: the last two dimensions swapped, 32-bit elements, 1 MiB or more), its
  code is available and the processor has AVX2.

  Examples:
    >>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> transpose(x, (1, 0)).tolist()
    [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
  """
  fallback = functools.partial(lax.transpose, permutation=tuple(perm))
  return forms.lower(TRANSPOSE_KERNELS, tuple(perm), fallback, x)


def _transpose_roles(perm: tuple[int, ...], config: Any, x: Shaped) -> Roles:
  """Every dimension passes through (a shard's transpose is the transpose's shard), where the
  shards keep whole 8 x 8 blocks."""
  config = transpose_cpu.DEFAULT if config is None else config

  def fits(x):
    rows, columns = x.shape[-2:]
    return rows % 8 == 0 and rows >= config.min_rows and columns >= config.min_columns

  lead = factors("l", x.ndim - 2)
  return Roles(f"{dims(lead, 'a b')} -> {dims(lead, 'b a')}", fits=fits)


TRANSPOSE_KERNELS = (
  forms.Kernel(
    "transpose_cpu",
    "cpu",
    applies=lambda perm, config, x: transpose_cpu.applies(x.shape, perm, x.dtype, config),
    roles=_transpose_roles,
    call=lambda perm, config, interpret, x: transpose_cpu.transpose,
    native="transpose.cc",
    probe=lambda: transpose_cpu.has_avx2(),  # looked up at each call: tests replace it
  ),
)
"""The tensor layer's transposes' kernel (`kernels.forms` chooses): the last two dimensions
swapped on the CPU, 8 x 8 blocks in AVX2 registers."""
