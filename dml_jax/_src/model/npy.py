"""NumPy .npy files as DxDispatch reads and writes them.

Writing (`npy_bytes`): format version 1.0, a little-endian ``descr`` of the buffer's
type, ``fortran_order`` False, and a shape whose every dimension is followed by a
comma (``(6,)``, ``(2,3,)``); the header is padded with spaces to a multiple of 64
bytes, ending in a newline, and the data follows as it is (it may hold more bytes than
the shape needs: NumPy ignores them).

Reading (`read_npy`): versions 1 to 3; the type comes from the letters and digits of
``descr`` (``b1``, NumPy's bool, reads as INT8; ``e`` and other codes give no type);
the byte order mark is not acted on (big-endian files are read as they are); every
byte after the header is data. Unlike DxDispatch, which zero-extends a file shorter than
its shape, a file whose shape claims more data than it holds is refused (a truncated or
hostile file; nothing is allocated for it), and a header longer than `MAX_HEADER_BYTES`
is refused before it is parsed, as ``numpy.load`` refuses it.

Examples:
  >>> import numpy as np
  >>> data = npy_bytes(np.arange(6, dtype=np.float32).tobytes(), DataType.FLOAT32, [2, 3])
  >>> len(data), data[:10], data[127:128]                 # a 128-byte header, then 24 bytes
  (152, b'\\x93NUMPY\\x01\\x00v\\x00', b'\\n')
  >>> data[10:127].rstrip()
  b"{'descr':'<f4', 'fortran_order':False, 'shape':(2,3,), }"
  >>> data_type, values = read_npy(data)
  >>> data_type, np.frombuffer(values, np.float32)
  (<DataType.FLOAT32: 1>, array([0., 1., 2., 3., 4., 5.], dtype=float32))
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Sequence

from dml_jax._src.dtypes import DataType

DESCR = {
  DataType.INT8: "<i1",
  DataType.UINT8: "<u1",
  DataType.INT16: "<i2",
  DataType.UINT16: "<u2",
  DataType.INT32: "<i4",
  DataType.UINT32: "<u4",
  DataType.INT64: "<i8",
  DataType.UINT64: "<u8",
  DataType.FLOAT16: "<f2",
  DataType.FLOAT32: "<f4",
  DataType.FLOAT64: "<f8",
}
"""The ``descr`` DxDispatch writes for each type (an UNKNOWN buffer gets ``<?``)."""

_SIGNED = {1: DataType.INT8, 2: DataType.INT16, 4: DataType.INT32, 8: DataType.INT64}
_UNSIGNED = {1: DataType.UINT8, 2: DataType.UINT16, 4: DataType.UINT32, 8: DataType.UINT64}
_FLOAT = {2: DataType.FLOAT16, 4: DataType.FLOAT32, 8: DataType.FLOAT64}
_LETTERS = {
  "?": (_UNSIGNED, 1),
  "B": (_UNSIGNED, 1),
  "b": (_SIGNED, 1),
  "h": (_SIGNED, 2),
  "H": (_UNSIGNED, 2),
  "i": (_SIGNED, 4),
  "u": (_UNSIGNED, 4),
  "f": (_FLOAT, 4),
  "d": (_FLOAT, 8),
}


MAX_HEADER_BYTES = 10_000
"""The longest header read, as ``numpy.load``'s ``max_header_size`` default."""


class NpyError(ValueError):
  """A .npy file DxDispatch cannot read."""


def npy_bytes(data: bytes, data_type: DataType, dimensions: Sequence[int]) -> bytes:
  """A .npy file of `data`, exactly as DxDispatch writes it."""
  descr = DESCR.get(data_type, "<?")
  shape = "".join(f"{d}," for d in dimensions)
  text = f"{{'descr':'{descr}', 'fortran_order':False, 'shape':({shape}), }}"
  total = (10 + len(text) + 1 + 63) // 64 * 64
  head = b"\x93NUMPY\x01\x00" + (total - 10).to_bytes(2, "little") + text.encode("latin-1")
  return head + b" " * (total - len(head) - 1) + b"\n" + data


def descr_type(descr: str) -> DataType:
  """The DataType a ``descr`` string reads as (UNKNOWN for codes DxDispatch lacks)."""
  family, size = None, 0
  for c in descr:
    if c in _LETTERS:
      family, size = _LETTERS[c]
    elif c.isdigit() and family is not None:
      size = int(c)
    elif c not in "<>|=":
      return DataType.UNKNOWN
  if family is None:
    return DataType.UNKNOWN
  return family.get(size, DataType.UNKNOWN)


def read_npy(content: bytes) -> tuple[DataType, bytes]:
  """(type, data) of a .npy file's bytes, as DxDispatch reads them.

  Raises:
    NpyError: a file shorter than 10 bytes, not .npy, of version 4 or later,
      Fortran-ordered, with a header over `MAX_HEADER_BYTES`, a shape that is not a
      tuple of sizes, or less data than its shape claims.
  """
  if len(content) < 10 or not content.startswith(b"\x93NUMPY"):
    raise NpyError("not a .npy file (it must start with \\x93NUMPY and be at least 10 bytes)")
  major = content[6]
  if major >= 4 or major == 0:
    raise NpyError(f".npy format version {major} is not supported (1 to 3 are)")
  if major == 1:
    length, start = int.from_bytes(content[8:10], "little"), 10
  else:
    length, start = int.from_bytes(content[8:12], "little"), 12
  if length > MAX_HEADER_BYTES:
    raise NpyError(
      f"the .npy header is {length} bytes long, over the {MAX_HEADER_BYTES} bytes numpy.load"
      " reads; save the array with numpy.save"
    )
  header = content[start : start + length].decode("latin-1")
  fields = _header_fields(header)
  if fields.get("fortran_order") is True:
    raise NpyError("Fortran-ordered .npy files are not supported; save a C-ordered array")
  data_type = descr_type(str(fields.get("descr", "")))
  shape = fields.get("shape", ())
  if not isinstance(shape, tuple) or not all(
    isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
  ):
    raise NpyError(f"the .npy shape {shape!r} is not a tuple of sizes")
  needed = math.prod(shape) * (data_type.size_in_bits // 8)
  held = len(content) - start - length
  if held < needed:
    raise NpyError(
      f"the .npy shape {shape} claims {needed} bytes of data but the file holds {max(held, 0)};"
      " the file is truncated"
    )
  return data_type, content[start + length :]


def _header_fields(header: str) -> dict[str, object]:
  try:
    value = ast.literal_eval(header.strip())
    if isinstance(value, dict):
      return value
  except (ValueError, SyntaxError):
    pass
  found: dict[str, object] = {}  # a loose reading of a header Python cannot parse
  descr = re.search(r"'descr'\s*:\s*'([^']*)'", header)
  if descr:
    found["descr"] = descr[1]
  found["fortran_order"] = bool(re.search(r"'fortran_order'\s*:\s*True", header))
  shape = re.search(r"'shape'\s*:\s*\(([^)]*)\)", header)
  if shape:
    found["shape"] = tuple(int(d) for d in re.findall(r"\d+", shape[1]))
  return found
