"""What a print command writes: DxDispatch's text for a buffer's values, byte for byte.

``Resource '<name>': v0, v1, ...`` on one line, showing as many elements as the
*initializer* had (padding and a larger ``sizeInBytes`` are never shown), from byte 0,
as the buffer's element type:

- floats as C's ``%g`` (6 significant digits: ``1``, ``0.1``, ``1e-05``, ``1.23457e+06``,
  ``-0``, ``inf``); FLOAT16 through float32. NaN is written ``nan``, and a NaN with the
  sign bit set ``-nan(ind)``, as the Windows C runtime DxDispatch is built with writes
  them (glibc would write ``-nan``);
- 16-, 32- and 64-bit integers in decimal;
- INT8 and UINT8 as characters: each element is its raw byte (65 is ``A``), because C++
  streams print those types as chars.

Verbose prints put each element on its own line, ``[index] value (0xBITS)``: the index
right-aligned to the width of the element count's digits, the element's bytes in upper-case
hex right-aligned with spaces to two digits per byte; an empty line follows the last.

Examples:
  >>> import numpy as np
  >>> print_text("Out", DataType.FLOAT32, np.float32([1, 0.1, 1e-5, 1234567]).tobytes(), 16).decode()
  "Resource 'Out': 1, 0.1, 1e-05, 1.23457e+06\\n"
  >>> print(print_text("x", DataType.INT32, np.int32([-1, 0]).tobytes(), 8, verbose=True).decode(), end="|")
  Resource 'x':
  [0] -1 (0xFFFFFFFF)
  [1] 0 (0x       0)
  <BLANKLINE>
  |
  >>> print_text("s", DataType.UINT8, b"Hi!", 3)
  b"Resource 's': H, i, !\\n"
"""

from __future__ import annotations

import math

import numpy as np

from dml_jax._src.dtypes import DataType
from dml_jax._src.model.scalars import element_size


class PrintError(ValueError):
  """A buffer print cannot show (no element type)."""


def format_float(value: float) -> str:
  """``%g`` as DxDispatch's C runtime writes it (``nan``, ``-nan(ind)`` for NaNs)."""
  if math.isnan(value):
    return "-nan(ind)" if math.copysign(1.0, value) < 0 else "nan"
  return "%g" % value  # noqa: UP031 (C's %g, which format() does not match for every value)


def element_texts(data_type: DataType, data: bytes) -> list[bytes]:
  """Each element of `data` (whole elements only) as DxDispatch writes it."""
  if data_type in (DataType.INT8, DataType.UINT8):
    return [bytes([b]) for b in data]
  dtype = data_type.numpy_dtype
  if dtype is None:
    raise PrintError(
      f"Unexpected DML_TENSOR_DATA_TYPE: a buffer of type {data_type.name} cannot be printed"
      " (a mixed-list initializer has no element type)"
    )
  values = np.frombuffer(data, dtype, count=len(data) // dtype.itemsize)
  if data_type.is_float:
    return [format_float(float(v)).encode() for v in values.astype(np.float64)]
  return [str(int(v)).encode() for v in values]


def print_text(
  name: str, data_type: DataType, buffer: bytes, initial_size: int, *, verbose: bool = False
) -> bytes:
  """The bytes a print command writes to stdout for a buffer (`buffer`: its current
  bytes; `initial_size`: its initializer's byte length), final newline included."""
  size = element_size(data_type)
  count = initial_size // size if size else 0
  texts = element_texts(data_type, buffer[: count * size])
  head = f"Resource '{name}':".encode()
  if not verbose:
    return head + b" " + b", ".join(texts) + b"\n"
  width = int(math.floor(math.log10(count))) + 1 if count else 1
  lines = [head + b"\n"]
  for i, text in enumerate(texts):
    bits = int.from_bytes(buffer[i * size : (i + 1) * size], "little")
    lines.append(f"[{i:>{width}}] ".encode() + text + f" (0x{bits:>{2 * size}X})\n".encode())
  return b"".join(lines) + b"\n"
