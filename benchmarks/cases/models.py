"""Benchmark cases: DxDispatch model files, run as one XLA program (`Model.as_function`)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import dml_jax as dml
from benchmarks.harness import Case, case, device_put, jax_impl

F32 = "FLOAT32"
# The chain's cycle of ten dispatches: (dispatchable, bindings); "name@half" binds the second
# half of a buffer.
_CYCLE = (
  ("slice_odd", {"InputTensor": "x", "OutputTensor": "y"}),
  ("copy_half", {"InputTensor": "x", "OutputTensor": "y@half"}),
  ("gather_rows", {"InputTensor": "y", "IndicesTensor": "rows", "OutputTensor": "z"}),
  ("join_halves", {"InputTensors": ["z@half", "z"], "OutputTensor": "y"}),
  ("negate_in_place", {"InputTensor": "y", "OutputTensor": "y"}),
  ("slice_even", {"InputTensor": "y", "OutputTensor": "z"}),
  ("copy_half", {"InputTensor": "y@half", "OutputTensor": "z@half"}),
  ("gather_rows", {"InputTensor": "z", "IndicesTensor": "rows", "OutputTensor": "x"}),
  ("join_halves", {"InputTensors": ["x", "z@half"], "OutputTensor": "y"}),
  ("copy_all", {"InputTensor": "y", "OutputTensor": "x"}),
)


def _tensor(*sizes: int, data_type: str = F32) -> dict[str, Any]:
  return {"DataType": data_type, "Sizes": list(sizes)}


def _identity(sizes: tuple[int, int], scale: float | None = None, bias: float = 0.0) -> dict:
  desc: dict[str, Any] = {"InputTensor": _tensor(*sizes), "OutputTensor": _tensor(*sizes)}
  if scale is not None:
    desc["ScaleBias"] = {"Scale": scale, "Bias": bias}
  return {"type": "ELEMENT_WISE_IDENTITY", "desc": desc}


def chain_model(dispatches: int = 50, rows: int = 64, cols: int = 64) -> dict[str, Any]:
  """A DxDispatch model (a dict, as `dml.load_model` takes it) of `dispatches` dispatches
  over three FLOAT32 buffers x, y, z of rows x cols and a UINT32 permutation of the rows: the
  cycle of ten dispatches (SLICE of the odd or even rows, ELEMENT_WISE_IDENTITY with ScaleBias
  from one half of a buffer into the other, GATHER of rows, JOIN of two halves, an in-place
  ELEMENT_WISE_IDENTITY and a whole-buffer copy), repeated and cut at `dispatches`. Half the
  bindings start at an element offset, and every dispatch reads what an earlier one wrote.

  Args:
    dispatches: how many dispatch commands.
    rows: the buffers' rows, even (each half is rows / 2 of them).
    cols: the buffers' columns, a multiple of 4 (so that the second half of a FLOAT32
      buffer starts at a multiple of 16 bytes, as DirectML requires of a binding).

  Raises:
    ValueError: odd `rows`, `cols` not a multiple of 4, or fewer than one dispatch.

  Examples:
    >>> model = chain_model(12, rows=4, cols=4)
    >>> len(model["commands"]), sorted(model["resources"])
    (12, ['rows', 'x', 'y', 'z'])
  """
  if rows < 2 or rows % 2 or cols < 4 or cols % 4 or dispatches < 1:
    raise ValueError(
      f"rows must be even, cols a multiple of 4 and dispatches at least 1; got rows={rows},"
      f" cols={cols}, dispatches={dispatches}"
    )
  half_rows, count = rows // 2, rows * cols
  resources = {
    name: {"initialValuesDataType": F32, "initialValues": {"value": 0, "valueCount": count}}
    for name in ("x", "y", "z")
  }
  resources["x"]["initialValues"] = {"valueStart": 0, "valueDelta": 0.25, "valueCount": count}
  resources["rows"] = {"initialValuesDataType": "UINT32", "initialValues": _permutation(rows)}

  def slice_rows(first: int) -> dict[str, Any]:
    return {"type": "SLICE", "desc": {
      "InputTensor": _tensor(rows, cols), "OutputTensor": _tensor(half_rows, cols),
      "DimensionCount": 2, "Offsets": [first, 0], "Sizes": [half_rows, cols], "Strides": [2, 1]}}  # fmt: skip

  dispatchables = {
    "slice_odd": slice_rows(1),
    "slice_even": slice_rows(0),
    "copy_half": _identity((half_rows, cols), scale=0.5, bias=1.0),
    "gather_rows": {"type": "GATHER", "desc": {
      "InputTensor": _tensor(rows, cols), "IndicesTensor": _tensor(1, rows, data_type="UINT32"),
      "OutputTensor": _tensor(rows, cols), "Axis": 0, "IndexDimensions": 1}},
    "join_halves": {"type": "JOIN", "desc": {
      "InputCount": 2, "InputTensors": [_tensor(half_rows, cols), _tensor(half_rows, cols)],
      "OutputTensor": _tensor(rows, cols), "Axis": 0}},
    "negate_in_place": _identity((rows, cols), scale=-1.0, bias=0.5),
    "copy_all": _identity((rows, cols)),
  }  # fmt: skip

  def bound(value: Any) -> Any:
    if isinstance(value, list):
      return [bound(v) for v in value]
    name, _, where = value.partition("@")
    return {"name": name, "elementOffset": half_rows * cols} if where else name

  commands = [
    {"type": "dispatch", "dispatchable": name, "bindings": {k: bound(v) for k, v in binds.items()}}
    for name, binds in (_CYCLE[i % len(_CYCLE)] for i in range(dispatches))
  ]
  return {"resources": resources, "dispatchables": dispatchables, "commands": commands}


def _permutation(rows: int) -> list[int]:
  return np.random.default_rng(0).permutation(rows).tolist()


def chain_in_numpy(dispatches: int, rows: int, cols: int) -> dict[str, np.ndarray]:
  """The chain's final x, y, z (float32), computed with NumPy: the independent formulation."""
  count, half = rows * cols, rows * cols // 2
  perm = np.array(_permutation(rows))
  f32 = np.float32
  buffers = {"x": np.arange(count, dtype=f32) * f32(0.25)}
  buffers["y"], buffers["z"] = np.zeros(count, f32), np.zeros(count, f32)
  view = lambda a: a.reshape(rows, cols)

  def part(ref: str) -> np.ndarray:  # "y" or "y@half"
    name, _, where = ref.partition("@")
    return buffers[name][half:] if where else buffers[name]

  for i in range(dispatches):
    name, binds = _CYCLE[i % len(_CYCLE)]
    if name.startswith("slice"):
      got = view(part(binds["InputTensor"]))[1 if name == "slice_odd" else 0 :: 2].ravel()
    elif name == "copy_half":
      got = part(binds["InputTensor"])[:half] * f32(0.5) + f32(1.0)
    elif name == "gather_rows":
      got = view(part(binds["InputTensor"]))[perm].ravel()
    elif name == "join_halves":
      got = np.concatenate([part(ref)[:half] for ref in binds["InputTensors"]])
    elif name == "negate_in_place":
      got = part(binds["InputTensor"]) * f32(-1.0) + f32(0.5)
    else:
      got = part(binds["InputTensor"]).copy()
    name, _, where = binds["OutputTensor"].partition("@")
    start = half if where else 0
    target = buffers[name].copy()
    target[start : start + got.size] = got
    buffers[name] = target
  return buffers


def _bytes_moved(dispatches: int, rows: int, cols: int) -> int:
  """Each dispatch's input read and output written (GATHER: and its indices), float32."""
  count, half = rows * cols * 4, rows * cols * 2
  per = {"slice_odd": 2 * half, "slice_even": 2 * half, "copy_half": 2 * half}
  per |= {"gather_rows": 2 * count + rows * 4, "join_halves": 2 * count}
  per |= {"negate_in_place": 2 * count, "copy_all": 2 * count}
  return sum(per[_CYCLE[i % len(_CYCLE)][0]] for i in range(dispatches))


@case(
  "MODEL",  # a model file, not one DirectML operator
  sizes={"large": (50, 4096, 4096), "small": (50, 512, 512), "tiny": (10, 8, 8)},
  variants={"model_chain": {}},
)
def model_chain_case(sizes: tuple[int, int, int], rng) -> Case:
  """`chain_model`'s model as one program (`Model.as_function`); peer: each dispatch its own
  jitted call (the model's command loop outside jit). The output is the final x, y and z."""
  del rng  # the model's data is its own
  dispatches, rows, cols = sizes
  model = dml.load_model(chain_model(dispatches, rows, cols))
  initial = model.initial_buffers()
  names = sorted(initial)
  host = [np.asarray(initial[name]) for name in names]
  inputs = device_put(host)
  program = model.as_function()
  final = lambda buffers: jnp.concatenate([buffers[k] for k in ("x", "y", "z")])
  one_program = jax.jit(lambda *bufs: final(program(dict(zip(names, bufs, strict=True)))))
  operators: dict[str, Any] = {}  # made once, kept between calls (as DxDispatch does)

  def per_dispatch(*bufs):
    buffers = dict(zip(names, bufs, strict=True))
    return final(model._commands(buffers, len(model.commands), operators=operators)[0])

  def expected(host):
    want = chain_in_numpy(dispatches, rows, cols)
    return np.concatenate([want[k].view(np.uint8) for k in ("x", "y", "z")])

  def subset(host):
    # The library's other path: every dispatch its own jitted call.
    return np.asarray(per_dispatch(*inputs)), lambda out: out

  return Case(
    dtype="float32",
    shape=f"{dispatches} dispatches, 3 x ({rows},{cols})",
    description=f"a DxDispatch model of {dispatches} dispatches over three float32 ({rows},"
    f" {cols}) buffers, as one program",
    bytes_moved=_bytes_moved(dispatches, rows, cols),
    host=host,
    inputs=inputs,
    dml=one_program,
    expected=expected,
    subset=subset,
    peers=lambda env, host: [jax_impl(env, "per dispatch", "jax", per_dispatch, *inputs)],
  )
