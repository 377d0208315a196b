"""The benchmark harness: presets, peers, timing, checks, the sharded runs, the tables, `main`.

The cases live in `benchmarks/cases/<family>.py`, each registered with `@case`;
`benchmarks/run.py` is the command line (its docstring: the options).

The copy ceiling: `jax.jit(jnp.copy)` on a large float32 buffer (1 GiB at large size). jnp.copy
traces to the jaxpr's input as its output; jax does not forward it (the copy is a primitive in
the jaxpr), and since a jitted computation may not return a non-donated parameter's buffer, XLA
inserts an HLO `copy` into a new buffer. The script checks both facts at run time (the compiled
HLO holds a `copy` and the result's buffer pointer differs from the input's) and says so if not.
Also timed where available on the same device: PyTorch `dst.copy_(src)` into a preallocated
`dst` and, on the CPU, NumPy `np.copyto` into a preallocated array. The ceiling is the fastest of
them, in GB/s over bytes read + bytes written.

Bytes: every GB/s is over the fewest bytes the operator must move, the same for dml_jax and its
peers: for the gathers output + indices + gathered input (= output) bytes; for JOIN twice the
output; for REVERSE_SUBSEQUENCES twice the input plus the lengths; for
PADDING input plus output; for JOIN into a padded pitch the inputs plus the whole padded
output buffer; for the zero-stride broadcast the row plus the output; for the scatters the input read and the output written (nothing is
donated) plus the updates and indices; for ONE_HOT the output plus the indices; for SLICE and
SLICE1 the output plus what the walk reads, in 32-byte sectors: DRAM moves whole sectors, so a
step of 2 along the last axis reads every byte of the rows it visits (the case's note gives the
figure counted in elements). GB = 1e9 bytes.

Timing: every implementation is called once (compilation, first touch; that output is the one
checked) and once more, then run in untimed batches of 1, 2, 4, ... calls until a batch lasts
half the size's target time; that fixes k, the calls per repeat, for a repeat of about the
target time (one more untimed batch of k calls confirms it, or chooses k again if it ran much
faster). Then `--repeats` timed batches of k calls, each giving total / k; the median over the
repeats is shown (the JSON has them all, and the calibration batches). On a GPU the calls are
pipelined (dispatched back to back, one wait at the end: one stream runs them in order). On the
CPU each call is waited for: XLA:CPU can run independent dispatched executions concurrently,
which would time throughput across overlapping calls rather than one call, and PyTorch and ONNX
Runtime calls on the CPU are synchronous.

Kernel time (GPU, where torch with CUDA imports): after the timed repeats, three more batches of
k calls run under PyTorch's profiler, whose CUPTI tracing records every kernel and device copy in
the process (jax's as well as torch's); the summed kernel durations over k, median of the three,
is the "kernel ms" column, and the copy's own kernel time gives its ceiling. It is what device
events around each kernel would measure. Pipelined timing counts the gaps between kernels too,
and a case whose kernel is shorter than the host's dispatch of a call (tens of microseconds for
a jitted call; the 134 MB GATHER_ND runs about 50 us on an H100) times the host there.

Every case gets fresh random data, made with NumPy
(uniform floats in [-1, 1), random int8 bytes, random in-range int32 indices, uint32 lengths in
[0, size]) and put on the device before any timing.

On the CPU, XLA's output buffers come from malloc, and glibc serves blocks above its mmap
threshold (at most 32 MiB unless set) with a fresh mmap each time: such a call page-faults its
whole output (16k faults for the 64 MiB jnp.copy, most of its time), and that is part of what a
jax user gets. Set before the process starts, MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_
(4294967296) remove it for buffers malloc'd on the main thread, and MALLOC_ARENA_MAX=1 for those
XLA allocates on its worker threads too, whose own arenas (64 MiB heaps) cannot hold a 64 MiB
block (the form study at commit 688224b counted the faults); the header shows these when set. PyTorch's CPU
outputs come from malloc too; ONNX Runtime reuses an arena.

Checks (any failure: exit status 1):
  - dml_jax's output on a subset of the case (a few lanes, rows or index tuples, at most ~16k
    elements) against the slow loop oracle `dml_jax._src.reference`, bit for bit;
  - dml_jax's whole output against an independent vectorised NumPy formulation of the semantics
    (np.take_along_axis with normalised, clamped indices, NumPy advanced indexing,
    np.concatenate, computed source positions), bit for bit;
  - every peer's whole output against dml_jax's, bit for bit.

Peers, on the same data: jnp (take, take_along_axis, advanced indexing, lax.gather through
`.at[...].get(mode="promise_in_bounds")`, concatenate, a take_along_axis formulation of reverse
subsequences); PyTorch (index_select, gather, advanced indexing, cat, a gather formulation of
reverse subsequences) on CUDA when jax runs on a GPU and torch has CUDA, on the CPU when jax runs
on the CPU, else skipped; ONNX Runtime (Gather, GatherElements, GatherND with batch_dims,
ReverseSequence, Concat; CPUExecutionProvider, intra_op_num_threads=2) only when jax runs on the
CPU and both onnxruntime and onnx import. Inputs a peer cannot take as they are (int64 indices
for ONNX GatherND and ReverseSequence, int64 lengths for torch) are converted before timing.
"peer/dml" is peer time / dml_jax time: above 1 means dml_jax is faster; dml_jax's row shows its
best peer.
torch, onnxruntime and onnx are optional: the script never needs them.

Sharded runs (--devices N): a 1-D mesh of the first N devices of jax's default backend. A case
runs sharded when its registration declares how (`@case(..., shard=...)`: for each family, the
axis of each input split over the devices, None for replicated); --devices skips the others
with a note. Two families: "batch", a dimension the operator treats independently (the rows of
GATHER_ELEMENTS along axis 1, the batch of REVERSE_SUBSEQUENCES, the ids of an embedding lookup:
no data needs to move), and "axis", the operator's own axis (gathered, joined, padded, tiled,
reversed), where data must move. slice1_reversed_columns, SLICE1 over the whole input with its
columns reversed, is the SLICE1 case whose rows are independent. For each family, dml_jax's
function and the case's jnp formulation (its first jnp peer, `Case.jnp_peer`) are jitted with
the same in_shardings and timed as above, and dml_jax on one device (the unsharded inputs on
device 0) is timed in the same run. Each row gives the time on N devices, jnp's on N devices,
the one-device time, (N-device time) / (one-device time / N), jnp / dml_jax, the collectives in
each compiled program (all-gather, all-reduce, all-to-all, collective-permute, reduce-scatter
and collective-broadcast in `lowered.compile().as_text()`; an asynchronous start/done pair
counts once), dml_jax's output sharding and whether it equals jnp's. Both sharded outputs are
checked bit for bit against the one-device output, itself checked against the oracle's subset
(jnp's output, the same bits, checks the whole of it; the NumPy formulation, which takes tens of
seconds on some large cases, is left to the run without --devices). A family whose split axis
is not a multiple of N does not run (a note says so). torch and ONNX Runtime do not run
(they take no jax shardings), nor does the copy ceiling; --no-peers leaves out jnp. The JSON
holds the rows under "sharded" and every timing under "rows"; it is written after every case,
with "complete": false until the run ends, so that a run cut short keeps what it measured. On
the CPU, start the process with XLA_FLAGS=--xla_force_host_platform_device_count=N (and
JAX_PLATFORMS=cpu); `--size tiny --devices 8` runs there in a minute or two. Memory: device 0
holds the unsharded inputs (for the one-device time) beside its shards, and a program that
replicates holds the whole output on every device; the largest case, PADDING1 (4 GiB in, 4 GiB
out), needs about 20 GiB on device 0.

Memory: jax preallocates 75% of GPU memory at its first use, leaving PyTorch too little. The
script therefore sets XLA_PYTHON_CLIENT_PREALLOCATE=false (unless already set) before importing
jax, so that jax's pool grows on demand; cases run one after another and free their buffers
(`del`, gc.collect(), torch.cuda.empty_cache()) in between. The large cases fit an 80 GB GPU.
"""

from __future__ import annotations

import os
import pathlib

# Before jax is imported: see "Memory" above.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import argparse
import dataclasses
import datetime
import fnmatch
import gc
import importlib
import json
import platform
import re
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import dml_jax as dml

# -- presets -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Preset:
  """What a --size preset fixes besides its cases' sizes (which each case registers)."""

  copy_elements: int  # float32 elements of the copy ceiling's buffer
  target_s: float  # how long one timed repeat should last
  max_calls: int  # at most this many calls per repeat
  collect_garbage: bool = True  # gc.collect() after each case (tiny: 0.3 s each, nothing to free)


PRESETS = {
  "large": Preset(copy_elements=2**28, target_s=0.05, max_calls=1000),
  "small": Preset(copy_elements=2**25, target_s=0.1, max_calls=100),
  "tiny": Preset(copy_elements=4096, target_s=0.002, max_calls=20, collect_garbage=False),
}

SHORT_DTYPES = {"float32": "f32", "float16": "f16", "int8": "i8"}

# -- optional peers ------------------------------------------------------------------------


def _import(name: str):
  try:
    return importlib.import_module(name), None
  except Exception as e:  # ImportError, or an installation that fails to load
    return None, f"{type(e).__name__}: {e}".splitlines()[0]


@dataclasses.dataclass
class Env:
  platform: str  # jax's default backend: cpu, gpu, tpu
  pipelined: bool  # pipeline jax calls (accelerators) or wait for each (CPU)
  peers: bool = True  # False (--no-peers): the copy and dml_jax only, no case's peers
  torch: Any = None
  torch_device: str | None = None
  torch_note: str = ""
  ort: Any = None
  onnx: Any = None
  ort_note: str = ""
  # On a GPU with torch's CUDA profiler: device seconds per call of a batch (see kernel_seconds).
  kernel_timer: Callable[[Callable[[], Any], int], float | None] | None = None

  def torch_from_jax(self, x: jax.Array):
    """The same data as a torch tensor on torch_device (zero-copy through DLPack if it can)."""
    torch = self.torch
    try:
      t = torch.from_dlpack(x)
      if str(t.device).split(":")[0] == self.torch_device:
        return t
    except Exception:  # fall back to a host round trip
      pass
    return torch.from_numpy(np.array(x)).to(self.torch_device)

  def torch_from_numpy(self, x: np.ndarray):
    return self.torch.from_numpy(np.ascontiguousarray(x)).to(self.torch_device)

  def torch_sync(self, _=None):
    if self.torch_device == "cuda":
      self.torch.cuda.synchronize()


def make_env(peers: bool) -> Env:
  backend = jax.default_backend()
  env = Env(platform=backend, pipelined=backend != "cpu", peers=peers)
  if not peers:
    env.torch_note = env.ort_note = "peers off (--no-peers)"
    return env
  torch, error = _import("torch")
  if torch is None:
    env.torch_note = f"not importable ({error}): no torch peers"
  elif backend == "cpu":
    env.torch, env.torch_device = torch, "cpu"
    env.torch_note = f"torch {torch.__version__} on the CPU ({torch.get_num_threads()} threads)"
  elif backend == "gpu" and torch.cuda.is_available():
    env.torch, env.torch_device = torch, "cuda"
    env.torch_note = (
      f"torch {torch.__version__} on CUDA {torch.version.cuda} ({torch.cuda.get_device_name(0)})"
    )
    env.kernel_timer = lambda batch, calls: kernel_seconds(torch, batch, calls)
  else:
    env.torch_note = (
      f"torch {torch.__version__} present but cannot run on jax's device"
      f" ({backend}): no torch peers"
    )
  ort, ort_error = _import("onnxruntime")
  onnx, onnx_error = _import("onnx")
  versions = (
    f"onnxruntime {ort.__version__ if ort else 'not importable'},"
    f" onnx {onnx.__version__ if onnx else 'not importable'}"
  )
  if ort is None or onnx is None:
    env.ort_note = f"{versions}: no ONNX Runtime peers ({ort_error or onnx_error})"
  elif backend != "cpu":
    env.ort_note = f"{versions}: ONNX Runtime peers run only when jax runs on the CPU"
  else:
    env.ort, env.onnx = ort, onnx
    env.ort_note = f"{versions}: CPUExecutionProvider, intra_op_num_threads=2"
  return env


# -- implementations and timing ------------------------------------------------------------


@dataclasses.dataclass
class Impl:
  name: str
  kind: str  # dml, jax, torch, ort, numpy
  call: Callable[[], Any]  # one call; may return before the work is done
  sync: Callable[[Any], None]  # waits for a call's work
  to_numpy: Callable[[Any], np.ndarray]  # an output as a NumPy array of dml_jax's shape
  pipelined: bool = False
  note: str = ""
  kernel_timer: Callable[[Callable[[], Any], int], float | None] | None = None


def stacked_outputs(*outputs) -> np.ndarray:
  """Several outputs of one shape (TOP_K's values and indices) as one array to check: each
  one's bits (a float's as an unsigned integer of its width, an integer's value) as uint64."""
  planes = []
  for output in map(np.asarray, outputs):
    if output.dtype.kind == "f":
      output = np.ascontiguousarray(output).view(f"u{output.dtype.itemsize}")
    planes.append(output.astype(np.uint64))
  return np.stack(planes)


def host_output(out) -> np.ndarray:
  """A jax call's output on the host: one array, or the stack of several (`stacked_outputs`)."""
  return stacked_outputs(*out) if isinstance(out, tuple) else np.asarray(out)


def jax_impl(env: Env, name: str, kind: str, fn, *args) -> Impl:
  return Impl(
    name,
    kind,
    lambda: fn(*args),
    jax.block_until_ready,
    host_output,
    pipelined=env.pipelined,
    kernel_timer=env.kernel_timer,
  )


def torch_impl(env: Env, name: str, fn, shape: tuple[int, ...], note: str = "") -> Impl:
  return Impl(
    name,
    "torch",
    fn,
    env.torch_sync,
    lambda out: out.cpu().numpy().reshape(shape),
    pipelined=env.torch_device == "cuda",
    note=note,
    kernel_timer=env.kernel_timer,
  )


@dataclasses.dataclass
class Timing:
  median_s: float
  min_s: float
  times_s: list[float]
  calls_per_repeat: int
  calibration: list[tuple[int, float]]  # (calls, seconds) of the untimed batches that chose it
  kernel_s: float | None = None  # device seconds per call, kernels only (GPU with torch)


def run_batch(impl: Impl, calls: int) -> float:
  """Seconds for `calls` calls: pipelined with one wait at the end, or each waited for."""
  start = time.perf_counter()
  if impl.pipelined:
    for _ in range(calls):
      out = impl.call()
    impl.sync(out)
  else:
    for _ in range(calls):
      impl.sync(impl.call())
  return time.perf_counter() - start


def measure(
  impl: Impl, repeats: int, preset: Preset, first_output: Callable[[Any], None]
) -> Timing:
  """Warms up (handing the first output to `first_output`), then times `repeats` repeats.

  The calls per repeat come from untimed batches of 1, 2, 4, ... calls (as timeit's autorange)
  until one lasts half the target time; a batch of the chosen size then runs untimed once more,
  so that the timed repeats start from the state they keep (caches, allocator, clocks). The first
  call after a long host-side check can stall (seen on a GPU: tens of ms once), so one more
  untimed call precedes the batches, and a final batch much faster than its estimate chooses
  again from its own time.
  """
  out = impl.call()
  impl.sync(out)
  first_output(out)
  del out
  impl.sync(impl.call())
  calibration, calls = [], 1
  while True:
    seconds = run_batch(impl, calls)
    calibration.append((calls, seconds))
    if seconds >= preset.target_s / 2 or calls >= preset.max_calls:
      break
    calls = min(preset.max_calls, calls * 2)
  for _ in range(2):
    per_call = seconds / calls
    calls = max(1, min(preset.max_calls, round(preset.target_s / max(per_call, 1e-9))))
    seconds = run_batch(impl, calls)
    calibration.append((calls, seconds))
    if seconds / calls > per_call / 2:
      break
  times = [run_batch(impl, calls) / calls for _ in range(repeats)]
  kernel_s = None
  if impl.kernel_timer and impl.pipelined:
    batch = lambda: run_batch(impl, calls)
    found = [k for k in (impl.kernel_timer(batch, calls) for _ in range(3)) if k]
    kernel_s = statistics.median(found) if found else None
  return Timing(statistics.median(times), min(times), times, calls, calibration, kernel_s)


def kernel_seconds(torch, batch: Callable[[], Any], calls: int) -> float | None:
  """Device seconds per call: the summed durations of the kernels that `batch` ran, / calls.

  PyTorch's profiler traces CUDA activity through CUPTI, which records the kernels (and device
  copies) of every library in the process, jax's too. The sum leaves out the gaps between
  kernels: the launches, and the host's dispatch where it cannot keep ahead of the GPU (a jitted
  call costs tens of microseconds of host time, as long as a 134 MB gather runs on an H100).
  It is what device events around each kernel would give.
  """
  activities = [torch.profiler.ProfilerActivity.CUDA]
  with torch.profiler.profile(activities=activities) as prof:
    batch()
    torch.cuda.synchronize()
  cuda = torch.autograd.DeviceType.CUDA
  busy_us = sum(
    e.time_range.end - e.time_range.start for e in prof.events() if e.device_type == cuda
  )
  return busy_us * 1e-6 / calls if busy_us else None


def bit_equal(a: np.ndarray, b: np.ndarray) -> bool:
  if a.shape != b.shape or a.dtype != b.dtype:
    return False
  as_bits = lambda x: np.ascontiguousarray(x).view(f"u{x.dtype.itemsize}")
  return bool(np.array_equal(as_bits(a), as_bits(b)))


def mismatch(expected: np.ndarray, got: np.ndarray) -> str:
  if got.shape != expected.shape or got.dtype != expected.dtype:
    return f"got {got.dtype}{list(got.shape)}, expected {expected.dtype}{list(expected.shape)}"
  differ = np.ascontiguousarray(got).view(np.uint8) != np.ascontiguousarray(expected).view(np.uint8)
  return f"{int(np.count_nonzero(differ))} bytes differ"


# -- data ----------------------------------------------------------------------------------


def random_data(rng: np.random.Generator, shape, dtype) -> np.ndarray:
  """Fresh random host data: uniform floats in [-1, 1), random bytes."""
  dtype = np.dtype(dtype)
  if dtype.kind == "f":
    x = rng.random(shape, dtype=np.float32)
    x *= 2
    x -= 1
    return x.astype(dtype, copy=False)
  if dtype == np.int8:
    return rng.integers(-128, 128, shape, dtype=np.int8)
  raise NotImplementedError(dtype)


def random_indices(rng: np.random.Generator, shape, size: int) -> np.ndarray:
  return rng.integers(0, size, shape, dtype=np.int32)


def edge(n: int, k: int) -> np.ndarray:
  """The first and last k positions of a dimension of size n (all of them when n <= 2k)."""
  return np.arange(n) if n <= 2 * k else np.concatenate([np.arange(k), np.arange(n - k, n)])


def take(a: np.ndarray, *selections: np.ndarray) -> np.ndarray:
  """a[np.ix_(*selections)]: the sub-tensor at the given positions of each dimension."""
  return a[np.ix_(*selections)]


def every(n: int) -> np.ndarray:
  return np.arange(n)


def normalized(indices: np.ndarray, size: int) -> np.ndarray:
  """DirectML's index rule, vectorised: signed negatives count from the end, then clamp."""
  if np.issubdtype(indices.dtype, np.signedinteger):
    indices = np.where(indices < 0, indices + size, indices)
  return np.clip(indices, 0, size - 1)


def onnx_model(
  env: Env, op: str, inputs: list[tuple[str, np.ndarray]], output: np.ndarray, **attributes
) -> bytes:
  return onnx_chain(env, [(op, [name for name, _ in inputs], attributes)], inputs, output)


def onnx_chain(
  env: Env,
  nodes: list[tuple[str, list[str], dict[str, Any]]],
  inputs: list[tuple[str, np.ndarray]],
  output: np.ndarray,
) -> bytes:
  """A model of `nodes` (op, input names, attributes) run one after another: each node's
  output is named "out" for the last one, else "t{k}"; a node's inputs may name them."""
  helper = env.onnx.helper
  info = lambda name, a: helper.make_tensor_value_info(
    name, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)
  )
  made = [
    helper.make_node(op, names, ["out" if k == len(nodes) - 1 else f"t{k}"], **attributes)
    for k, (op, names, attributes) in enumerate(nodes)
  ]
  graph = helper.make_graph(
    made,
    f"bench_{'_'.join(op for op, _, _ in nodes)}",
    [info(name, a) for name, a in inputs],
    [info("out", output)],
  )
  model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
  model.ir_version = 7  # opset 13's IR version: loads in any onnxruntime since 1.6
  return model.SerializeToString()


def ort_impl(
  env: Env,
  name: str,
  model: bytes,
  feeds: dict[str, np.ndarray],
  shape: tuple[int, ...],
  note: str = "",
) -> Impl:
  options = env.ort.SessionOptions()
  options.intra_op_num_threads = 2
  options.inter_op_num_threads = 1
  options.log_severity_level = 3
  session = env.ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
  feeds = {k: np.ascontiguousarray(v) for k, v in feeds.items()}
  return Impl(
    f"ort {name}",
    "ort",
    lambda: session.run(["out"], feeds)[0],
    lambda _: None,
    lambda out: out.reshape(shape),
    note=note,
  )


# -- cases ---------------------------------------------------------------------------------


@dataclasses.dataclass
class Case:
  """One case's data and what to time and check on it (its name and operator: `Registered`)."""

  dtype: str
  shape: str  # compact, for the table
  description: str
  bytes_moved: int
  host: list[np.ndarray]  # the data, made on the host
  inputs: tuple[jax.Array, ...]  # the same data on jax's default device
  dml: Callable  # jitted, takes *inputs
  expected: Callable[[list[np.ndarray]], np.ndarray]
  # (oracle output on a subset, the same subset of an output) from the host inputs
  subset: Callable[[list[np.ndarray]], tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]]
  peers: Callable[[Env, list[np.ndarray]], list[Impl]]
  notes: list[str] = dataclasses.field(default_factory=list)
  # --devices: the jnp formulation timed sharded beside dml_jax, (name, function of *inputs);
  # its peers' jnp row times the same function.
  jnp_peer: tuple[str, Callable] | None = None


# --devices: a family of shardings ("batch" or "axis", see SHARD_FAMILIES) -> the axis each
# input is sharded along over the devices, in the order of Case.inputs (None: replicated).
Shardings = dict[str, tuple[int | None, ...]]

SHARD_FAMILIES = {
  "batch": "along a dimension the operator treats independently: no data needs to move",
  "axis": "along the operator's own axis (gathered, joined, padded, reversed, ...)",
}


@dataclasses.dataclass(frozen=True)
class Registered:
  """A case in the registry: its name, the DirectML operator it times, the sizes each preset
  gives it, `make(sizes, rng, **params) -> Case`, and `shard(**params) -> Shardings` (how
  --devices shards its inputs; None: not run under --devices)."""

  name: str
  op: str
  sizes: dict[str, Any]  # preset -> the sizes `make` takes; a preset without them skips it
  make: Callable[..., Case]
  params: dict[str, Any]
  shard: Callable[..., Shardings] | None = None

  def build(self, preset: str, rng: np.random.Generator) -> Case:
    return self.make(self.sizes[preset], rng, **self.params)

  def shardings(self) -> Shardings:
    return self.shard(**self.params) if self.shard else {}


CASES: dict[str, Registered] = {}  # by case name, in the order registered


def case(
  op: str,
  *,
  sizes: dict[str, Any],
  variants: dict[str, dict[str, Any]],
  shard: Callable[..., Shardings] | None = None,
):
  """Registers the decorated `make(sizes, rng, **params) -> Case` as the cases of DirectML
  operator `op` named in `variants`, each with its `params`; `sizes` maps a preset to the sizes
  it gives them (a preset not in it does not run them). `shard(**params)` says how --devices
  shards a variant's inputs (its Case then names a `jnp_peer`); without it --devices skips them."""

  def register(make):
    for name, params in variants.items():
      if name in CASES:
        raise ValueError(f"benchmark case {name} is registered twice")
      CASES[name] = Registered(name, op, sizes, make, params, shard)
    return make

  return register


def cases_of(preset: str) -> list[str]:
  """The cases that `preset` runs, in the order registered."""
  return [name for name, registered in CASES.items() if preset in registered.sizes]


def device_put(host: list[np.ndarray]) -> tuple[jax.Array, ...]:
  return tuple(jax.block_until_ready(jax.device_put(h)) for h in host)


def byte_text(n: float, base: int = 1000) -> str:
  units = ("B", "kB", "MB", "GB") if base == 1000 else ("B", "KiB", "MiB", "GiB")
  for unit in units:
    if n < base or unit == units[-1]:
      return f"{n:.4g} {unit}"
    n /= base
  raise AssertionError


def shape_text(t) -> str:
  return "(" + ",".join(map(str, t)) + ")"


# -- running -------------------------------------------------------------------------------


@dataclasses.dataclass
class Row:
  case: str
  op: str
  dtype: str
  shape: str
  impl: str
  kind: str
  bytes_moved: int
  timing: Timing | None = None
  check: str = ""  # "ok", "FAIL: ...", "ERROR: ..."
  note: str = ""
  ratio: float | None = None  # peer time / dml_jax time (dml_jax's row: its best peer's)
  best_peer: str = ""

  @property
  def failed(self) -> bool:
    return not self.check.startswith("ok") and self.check != ""

  def gbps(self) -> float | None:
    return self.bytes_moved / self.timing.median_s / 1e9 if self.timing else None

  def kernel_gbps(self) -> float | None:
    kernel_s = self.timing and self.timing.kernel_s
    return self.bytes_moved / kernel_s / 1e9 if kernel_s else None


def run_impl(
  row: Row, impl: Impl, repeats: int, preset: Preset, check: Callable[[np.ndarray], str]
) -> Row:
  """Times impl into row; `check` judges its first output (a NumPy array)."""

  def first_output(out):
    row.check = check(impl.to_numpy(out))

  try:
    row.timing = measure(impl, repeats, preset, first_output)
  except Exception as e:
    row.check = f"ERROR: {type(e).__name__}: {e}".splitlines()[0][:200]
    traceback.print_exc(file=sys.stderr)
  return row


def copy_ceiling(env: Env, preset: Preset, repeats: int) -> list[Row]:
  n = preset.copy_elements
  host = random_data(np.random.default_rng(1), (n,), np.float32)
  (x,) = device_put([host])
  nbytes = 2 * n * 4
  shape = f"{byte_text(n * 4, 1024)} f32"
  rows = []

  def same(out):
    return "ok" if bit_equal(host, out) else "FAIL: copy differs"

  copy = jax.jit(jnp.copy)
  hlo = copy.lower(x).compile().as_text()
  y = copy(x)
  materialized = " copy(" in hlo and y.unsafe_buffer_pointer() != x.unsafe_buffer_pointer()
  del y
  note = (
    "HLO copy into a new buffer"
    if materialized
    else "WARNING: the copy may be elided (no HLO copy, or the same buffer)"
  )
  rows.append(
    run_impl(
      Row("copy", "copy", "float32", shape, "jax.jit(jnp.copy)", "jax", nbytes, note=note),
      jax_impl(env, "jax.jit(jnp.copy)", "jax", copy, x),
      repeats,
      preset,
      same,
    )
  )
  if env.torch:
    src = env.torch_from_jax(x)
    dst = env.torch.empty_like(src)
    impl = Impl(
      "torch dst.copy_(src)",
      "torch",
      lambda: dst.copy_(src),
      env.torch_sync,
      lambda out: out.cpu().numpy(),
      pipelined=env.torch_device == "cuda",
      kernel_timer=env.kernel_timer,
    )
    rows.append(
      run_impl(
        Row("copy", "copy", "float32", shape, impl.name, "torch", nbytes, note="preallocated dst"),
        impl,
        repeats,
        preset,
        same,
      )
    )
    del src, dst
  if env.platform == "cpu":
    src, dst = np.array(host), np.empty_like(host)
    impl = Impl(
      "np.copyto(dst, src)",
      "numpy",
      lambda: np.copyto(dst, src) or dst,
      lambda _: None,
      lambda out: out,
    )
    rows.append(
      run_impl(
        Row(
          "copy",
          "copy",
          "float32",
          shape,
          impl.name,
          "numpy",
          nbytes,
          note="preallocated dst, one thread",
        ),
        impl,
        repeats,
        preset,
        same,
      )
    )
    del src, dst
  del x
  return rows


def dml_check(
  case: Case, dml_out: dict[str, np.ndarray], whole: bool = True
) -> Callable[[np.ndarray], str]:
  """Judges dml_jax's output against the oracle's subset and (if `whole`) the NumPy formulation,
  keeping it in dml_out["out"] for the peers' checks."""
  host = case.host

  def check_dml(out: np.ndarray) -> str:
    dml_out["out"] = out
    problems = []
    oracle, pick = case.subset(host)
    if not bit_equal(oracle, pick(out)):
      problems.append(f"reference subset {list(oracle.shape)}: {mismatch(oracle, pick(out))}")
    if whole:
      expected = case.expected(host)
      if not bit_equal(expected, out):
        problems.append(f"NumPy formulation: {mismatch(expected, out)}")
    return "FAIL: " + "; ".join(problems) if problems else "ok"

  return check_dml


def run_case(
  registered: Registered, case: Case, env: Env, preset: Preset, repeats: int
) -> list[Row]:
  host = case.host
  make_row = lambda impl: Row(
    registered.name,
    registered.op,
    case.dtype,
    case.shape,
    impl.name,
    impl.kind,
    case.bytes_moved,
    note=impl.note,
  )
  dml_out: dict[str, np.ndarray] = {}
  check_dml = dml_check(case, dml_out)

  def check_peer(out: np.ndarray) -> str:
    if "out" not in dml_out:
      return "ok (dml_jax output missing: not compared)"
    return (
      "ok"
      if bit_equal(dml_out["out"], out)
      else (f"FAIL: differs from dml_jax: {mismatch(dml_out['out'], out)}")
    )

  dml_impl = jax_impl(env, "dml_jax", "dml", case.dml, *case.inputs)
  rows = [run_impl(make_row(dml_impl), dml_impl, repeats, preset, check_dml)]
  try:
    impls = case.peers(env, host) if env.peers else []
  except Exception as e:
    traceback.print_exc(file=sys.stderr)
    rows.append(
      Row(
        registered.name,
        registered.op,
        case.dtype,
        case.shape,
        "(peer setup)",
        "peer",
        case.bytes_moved,
        check=f"ERROR: {type(e).__name__}: {e}"[:200],
      )
    )
    impls = []
  for impl in impls:
    rows.append(run_impl(make_row(impl), impl, repeats, preset, check_peer))
  del impls
  dml_out.clear()
  dml_row = rows[0]
  peers = [r for r in rows[1:] if r.timing and not r.failed]
  if dml_row.timing:
    for r in peers:
      r.ratio = r.timing.median_s / dml_row.timing.median_s
    if peers:
      best = min(peers, key=lambda r: r.timing.median_s)
      dml_row.ratio, dml_row.best_peer = best.ratio, best.impl
  return rows


def free_memory(env: Env, preset: Preset) -> None:
  """Frees a finished case's buffers (cycles too, where the preset's cases are large)."""
  if preset.collect_garbage:
    gc.collect()
  if env.torch_device == "cuda":
    env.torch.cuda.empty_cache()


def peak_memory(env: Env) -> str:
  """Peak device memory of jax's pool and torch's allocator, where they report it."""
  parts = []
  try:
    stats = jax.devices()[0].memory_stats() or {}
  except Exception:
    stats = {}
  if "peak_bytes_in_use" in stats:
    parts.append(
      f"jax {byte_text(stats['peak_bytes_in_use'], 1024)} in use at most"
      + (f" of {byte_text(stats['bytes_limit'], 1024)}" if "bytes_limit" in stats else "")
    )
  if env.torch_device == "cuda":
    parts.append(
      f"torch {byte_text(env.torch.cuda.max_memory_allocated(), 1024)} allocated at most"
    )
  return ", ".join(parts)


# -- sharded runs (--devices N) ------------------------------------------------------------

MESH_AXIS = "devices"  # the 1-D mesh's axis name
# The collectives counted in a compiled program's HLO; an asynchronous one (kind-start, then
# kind-done) counts once.
COLLECTIVES = (
  "all-gather",
  "all-reduce",
  "all-to-all",
  "collective-permute",
  "reduce-scatter",
  "collective-broadcast",
)
_COLLECTIVE_OP = re.compile(r"\b(" + "|".join(COLLECTIVES) + r")(?:-start)?\(")


def collectives(hlo: str) -> dict[str, int]:
  """The collectives of a compiled program's HLO text: kind -> how many, in order of appearance."""
  counts: dict[str, int] = {}
  for kind in _COLLECTIVE_OP.findall(hlo):
    counts[kind] = counts.get(kind, 0) + 1
  return counts


def collectives_text(counts: dict[str, int] | None) -> str:
  if counts is None:
    return "-"
  return ", ".join(f"{kind} x{n}" for kind, n in counts.items()) or "none"


def sharding_text(sharding: jax.sharding.Sharding, ndim: int) -> str:
  """Says "replicated", or the axes that are split over the devices ("axis 0")."""
  if sharding.is_fully_replicated:
    return "replicated"
  spec = getattr(sharding, "spec", None)
  if spec is None:
    return str(sharding)
  split = [str(k) for k, part in enumerate(tuple(spec) + (None,) * ndim) if part is not None]
  return f"axis {','.join(split)}"


def sharded_spec(axis: int | None, ndim: int) -> PartitionSpec:
  return PartitionSpec(*(MESH_AXIS if k == axis else None for k in range(ndim)))


@dataclasses.dataclass
class Sharded:
  """One case run with its inputs sharded over the devices as one family declares (the rows
  that timed it are in the run's rows too)."""

  case: str
  op: str
  family: str  # a key of SHARD_FAMILIES
  axes: tuple[int | None, ...]  # per input: the axis split over the devices (None: replicated)
  devices: int
  one: Row  # dml_jax on one device (the unsharded inputs on device 0)
  dml: Row | None = None
  jnp: Row | None = None
  collectives: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)  # dml, jnp
  out_sharding: dict[str, str] = dataclasses.field(default_factory=dict)  # dml, jnp
  same_sharding: bool | None = None  # dml_jax's output sharding equals jnp's
  note: str = ""  # why it did not run

  def scaling(self) -> float | None:
    """Time on N devices over the one-device time / N: 1 is perfect scaling."""
    if self.dml and self.dml.timing and self.one.timing:
      return self.dml.timing.median_s / (self.one.timing.median_s / self.devices)
    return None

  def jnp_over_dml(self) -> float | None:
    if self.dml and self.dml.timing and self.jnp and self.jnp.timing and not self.jnp.failed:
      return self.jnp.timing.median_s / self.dml.timing.median_s
    return None


def run_sharded_case(
  registered: Registered,
  case: Case,
  env: Env,
  preset: Preset,
  repeats: int,
  mesh: Mesh,
  peers: bool,
) -> tuple[list[Row], list[Sharded]]:
  """Times dml_jax on one device, then each family of shardings the case declares
  (run_sharded_family).

  The one-device output is checked against the oracle's subset; the whole of it against the
  sharded outputs, jnp's among them (the NumPy formulation, slow on the large sizes, is left to
  the run without --devices)."""
  one_out: dict[str, np.ndarray] = {}
  one_impl = jax_impl(env, "dml_jax", "dml", case.dml, *case.inputs)
  one = run_impl(
    sharded_row(registered, case, "dml_jax", "dml"),
    one_impl,
    repeats,
    preset,
    dml_check(case, one_out, whole=False),
  )
  rows, summaries = [one], []
  for family, axes in registered.shardings().items():
    summary = Sharded(registered.name, registered.op, family, axes, mesh.size, one)
    rows.extend(
      run_sharded_family(summary, registered, case, env, preset, repeats, mesh, peers, one_out)
    )
    summaries.append(summary)
  one_out.clear()
  return rows, summaries


def sharded_row(registered: Registered, case: Case, name: str, kind: str) -> Row:
  return Row(registered.name, registered.op, case.dtype, case.shape, name, kind, case.bytes_moved)


def run_sharded_family(
  summary: Sharded,
  registered: Registered,
  case: Case,
  env: Env,
  preset: Preset,
  repeats: int,
  mesh: Mesh,
  peers: bool,
  one_out: dict[str, np.ndarray],
) -> list[Row]:
  """dml_jax and its jnp peer jitted with the same in_shardings, the inputs split as `summary`
  says over the mesh's devices: their compiled programs' collectives and output shardings into
  `summary`, their outputs bit for bit against the one-device output (one_out["out"])."""
  devices = mesh.size
  uneven = [
    f"input {k}'s axis {axis} ({x.shape[axis]})"
    for k, (x, axis) in enumerate(zip(case.inputs, summary.axes, strict=True))
    if axis is not None and x.shape[axis] % devices
  ]
  if uneven:
    summary.note = f"not run: {', '.join(uneven)} not divisible by {devices} devices"
    return []
  shardings = tuple(
    NamedSharding(mesh, sharded_spec(axis, x.ndim))
    for x, axis in zip(case.inputs, summary.axes, strict=True)
  )
  inputs = tuple(
    jax.block_until_ready(jax.device_put(x, s)) for x, s in zip(case.inputs, shardings, strict=True)
  )
  forms = [("dml", "dml_jax", case.dml)]
  if peers and case.jnp_peer:
    forms.append(("jnp", *case.jnp_peer))
  elif peers:
    summary.note = "no jnp peer: the case names no jnp_peer"
  outputs: dict[str, tuple[jax.sharding.Sharding, int]] = {}  # kind -> sharding, rank

  def same_as_one_device(out: np.ndarray) -> str:
    if "out" not in one_out:
      return "ok (one-device output missing: not compared)"
    if bit_equal(one_out["out"], out):
      return "ok"
    return f"FAIL: differs from one device: {mismatch(one_out['out'], out)}"

  rows = []
  for kind, name, fn in forms:
    row = sharded_row(
      registered, case, f"{name} x{devices} {summary.family}", "dml" if kind == "dml" else "jax"
    )
    rows.append(row)
    setattr(summary, kind, row)
    jitted = jax.jit(fn, in_shardings=shardings)
    try:
      summary.collectives[kind] = collectives(jitted.lower(*inputs).compile().as_text() or "")
    except Exception as e:
      row.check = f"ERROR: {type(e).__name__}: {e}".splitlines()[0][:200]
      traceback.print_exc(file=sys.stderr)
      continue

    def to_numpy(out: jax.Array | tuple[jax.Array, ...], kind: str = kind) -> np.ndarray:
      first = out[0] if isinstance(out, tuple) else out  # TOP_K's values: as its indices
      outputs.setdefault(kind, (first.sharding, first.ndim))
      return host_output(out)

    impl = dataclasses.replace(
      jax_impl(env, row.impl, row.kind, jitted, *inputs), to_numpy=to_numpy
    )
    run_impl(row, impl, repeats, preset, same_as_one_device)
  for kind, (sharding, ndim) in outputs.items():
    summary.out_sharding[kind] = sharding_text(sharding, ndim)
  if len(outputs) == 2:
    (dml_sharding, ndim), (jnp_sharding, _) = outputs["dml"], outputs["jnp"]
    summary.same_sharding = dml_sharding.is_equivalent_to(jnp_sharding, ndim)
  return rows


SHARDED_COLUMNS = (
  "case",
  "shard",
  "inputs",
  "xN ms",
  "jnp xN ms",
  "x1 ms",
  "xN/(x1/N)",
  "jnp/dml",
  "dml collectives",
  "jnp collectives",
  "output",
  "check",
)


def sharded_table_row(s: Sharded) -> tuple[str, ...]:
  ms = lambda row: f"{row.timing.median_s * 1e3:.3f}" if row and row.timing else "-"
  ratio = lambda x: "-" if x is None else f"{x:.2f}"
  output = s.out_sharding.get("dml", "-")
  if s.same_sharding is not None:
    output += " = jnp" if s.same_sharding else f" (jnp: {s.out_sharding['jnp']})"
  ran = [r for r in (s.one, s.dml, s.jnp) if r and r.check]
  failed = [f"{r.impl}: {r.check}" for r in ran if r.failed]
  check = "; ".join(failed) or ("ok" if s.dml else "-")
  return (
    s.case,
    s.family,
    ",".join("-" if a is None else str(a) for a in s.axes),
    ms(s.dml),
    ms(s.jnp),
    ms(s.one),
    ratio(s.scaling()),
    ratio(s.jnp_over_dml()),
    collectives_text(s.collectives.get("dml")) if s.dml else "-",
    collectives_text(s.collectives.get("jnp")) if s.jnp else "-",
    output,
    f"{check} [{s.note}]" if s.note else check,
  )


def format_sharded_table(summaries: list[Sharded]) -> str:
  cells = [SHARDED_COLUMNS, *map(sharded_table_row, summaries)]
  widths = [max(len(r[i]) for r in cells) for i in range(len(SHARDED_COLUMNS) - 1)]
  right = {3, 4, 5, 6, 7}
  lines = []
  for r in cells:
    parts = [r[i].rjust(w) if i in right else r[i].ljust(w) for i, w in enumerate(widths)]
    lines.append("  ".join(parts + [r[-1]]).rstrip())
  lines.insert(1, "-" * max(len(line) for line in lines))
  return "\n".join(lines)


def sharded_json(s: Sharded) -> dict[str, Any]:
  ms = lambda row: row.timing.median_s * 1e3 if row and row.timing else None
  return {
    "case": s.case,
    "op": s.op,
    "family": s.family,
    "axes": list(s.axes),
    "devices": s.devices,
    "dml_ms": ms(s.dml),
    "jnp_ms": ms(s.jnp),
    "one_device_ms": ms(s.one),
    "scaling": s.scaling(),
    "jnp_over_dml": s.jnp_over_dml(),
    "collectives": s.collectives,
    "out_sharding": s.out_sharding,
    "same_sharding_as_jnp": s.same_sharding,
    "checks": {
      kind: row.check for kind, row in (("one", s.one), ("dml", s.dml), ("jnp", s.jnp)) if row
    },
    "passed": not any(row.failed for row in (s.one, s.dml, s.jnp) if row),
    "note": s.note,
  }


# -- output --------------------------------------------------------------------------------


def header_lines(env: Env, size: str, args) -> list[str]:
  device = jax.devices()[0]
  cpu = platform.processor() or platform.machine()
  try:
    with open("/proc/cpuinfo") as f:
      cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
  except (OSError, StopIteration):
    pass
  return [
    f"# dml_jax benchmark  {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
    f"# device: {device.device_kind} (jax platform {device.platform}, {jax.device_count()}"
    f" device(s)); host: {cpu}, {os.cpu_count()} cpus",
    f"# python {platform.python_version()}  jax {jax.__version__}  jaxlib"
    f" {version_of('jaxlib')}  numpy {np.__version__}  dml_jax {dml.__version__}",
    f"# torch: {env.torch_note}",
    f"# onnxruntime: {env.ort_note}",
    f"# load average {load_average()}",
    f"# size {size}  repeats {args.repeats} (median)  target {PRESETS[size].target_s * 1e3:g} ms"
    f" per repeat  {'pipelined calls' if env.pipelined else 'each call waited for'}"
    f"  XLA_PYTHON_CLIENT_PREALLOCATE={os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE')}"
    + "".join(
      f"  {k}={v}"
      for k, v in sorted(os.environ.items())
      if k.startswith(("MALLOC_", "XLA_FLAGS", "OMP_NUM_THREADS"))
    ),
  ]


def load_average() -> str:
  try:
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" (on {os.cpu_count()} cpus)"
  except OSError:
    return "unknown"


def version_of(module: str) -> str:
  try:
    return importlib.import_module(module).__version__
  except Exception:
    return "?"


COLUMNS = (
  "case",
  "dtype",
  "shape",
  "implementation",
  "median ms",
  "spread",
  "GB/s",
  "ceiling",
  "kernel ms",
  "k.ceiling",
  "peer/dml",
  "check",
)


def table_row(row: Row, ceiling: float | None, kernel_ceiling: float | None) -> tuple[str, ...]:
  gbps, kernel_gbps = row.gbps(), row.kernel_gbps()
  ratio = "" if row.ratio is None else f"{row.ratio:.2f}"
  if row.best_peer:
    ratio += f" ({row.best_peer})"
  check = row.check if not row.note else f"{row.check} [{row.note}]"
  return (
    row.case,
    SHORT_DTYPES.get(row.dtype, row.dtype),
    row.shape,
    row.impl,
    f"{row.timing.median_s * 1e3:.3f}" if row.timing else "-",
    f"{max(row.timing.times_s) / min(row.timing.times_s):.2f}" if row.timing else "-",
    f"{gbps:.1f}" if gbps else "-",
    f"{gbps / ceiling:.2f}" if gbps and ceiling else "-",
    f"{row.timing.kernel_s * 1e3:.3f}" if kernel_gbps else "-",
    f"{kernel_gbps / kernel_ceiling:.2f}" if kernel_gbps and kernel_ceiling else "-",
    ratio,
    check,
  )


def format_table(rows: list[tuple[str, ...]]) -> str:
  cells = [COLUMNS, *rows]
  widths = [max(len(r[i]) for r in cells) for i in range(len(COLUMNS) - 1)]
  right = {4, 5, 6, 7, 8, 9}
  lines = []
  for r in cells:
    parts = [r[i].rjust(w) if i in right else r[i].ljust(w) for i, w in enumerate(widths)]
    lines.append("  ".join(parts + [r[-1]]).rstrip())
  lines.insert(1, "-" * max(len(line) for line in lines))
  return "\n".join(lines)


def row_json(row: Row, ceiling: float | None, kernel_ceiling: float | None) -> dict[str, Any]:
  gbps, kernel_gbps = row.gbps(), row.kernel_gbps()
  return {
    "case": row.case,
    "op": row.op,
    "dtype": row.dtype,
    "shape": row.shape,
    "implementation": row.impl,
    "kind": row.kind,
    "bytes_moved": row.bytes_moved,
    "median_ms": row.timing.median_s * 1e3 if row.timing else None,
    "min_ms": row.timing.min_s * 1e3 if row.timing else None,
    "times_ms": [t * 1e3 for t in row.timing.times_s] if row.timing else None,
    "calls_per_repeat": row.timing.calls_per_repeat if row.timing else None,
    "calibration": row.timing.calibration if row.timing else None,
    "gb_per_s": gbps,
    "fraction_of_ceiling": gbps / ceiling if gbps and ceiling else None,
    "kernel_ms": row.timing.kernel_s * 1e3 if kernel_gbps else None,
    "kernel_gb_per_s": kernel_gbps,
    "kernel_fraction_of_ceiling": kernel_gbps / kernel_ceiling
    if kernel_gbps and kernel_ceiling
    else None,
    "peer_over_dml": row.ratio,
    "best_peer": row.best_peer or None,
    "check": row.check,
    "passed": not row.failed,
    "note": row.note,
  }


# -- main ----------------------------------------------------------------------------------


def print_closing(env: Env, rows: list[Row], memory_label: str, checks: str) -> list[Row]:
  """The run's last lines: peak memory, load, and every check (`checks` says what they
  compared); returns the rows whose check failed."""
  failed = [r for r in rows if r.failed]
  checked = [r for r in rows if r.check]
  memory = peak_memory(env)
  if memory:
    print(f"\npeak device memory{memory_label}: {memory}")
  print(f"\nload average at the end: {load_average()}")
  print()
  if failed:
    for r in failed:
      print(f"CHECK FAILED: {r.case} / {r.impl}: {r.check}")
    print(f"{len(checked) - len(failed)} checks passed, {len(failed)} failed")
  else:
    print(f"all {len(checked)} checks passed ({checks})")
  return failed


def parse_args(argv):
  parser = argparse.ArgumentParser(
    description="Benchmark dml_jax's operators against a device copy and peer implementations.",
    epilog="What is measured, and how: the docstring of benchmarks/run.py.",
  )
  parser.add_argument(
    "--size",
    choices=("auto", *PRESETS),
    default="auto",
    help="auto (default): large on a GPU/TPU, small on the CPU",
  )
  parser.add_argument(
    "--only",
    action="append",
    default=[],
    metavar="PATTERN",
    help="cases to run: name, fnmatch pattern, substring or DirectML operator; repeatable,"
    " comma-separated",
  )
  parser.add_argument("--repeats", type=int, default=7, help="timed repeats, >= 5 (default 7)")
  parser.add_argument("--json", metavar="PATH", help="also write all numbers as JSON to PATH")
  parser.add_argument("--no-peers", action="store_true", help="time the copy and dml_jax only")
  parser.add_argument(
    "--forms",
    action="store_true",
    help="time dml_jax as the library chooses its form and with this platform's kernels off",
  )
  parser.add_argument(
    "--table",
    action="store_true",
    help="write docs/performance.md's tables from benchmarks/results/ and exit (no timing)",
  )
  parser.add_argument(
    "--check", action="store_true", help="with --table: exit 1 if the page is stale, write nothing"
  )
  parser.add_argument(
    "--record",
    nargs=2,
    metavar=("STEM", "REPORT"),
    help="merge a --json REPORT into benchmarks/results/STEM.json and exit (no timing)",
  )
  parser.add_argument(
    "--sweep",
    action="append",
    default=[],
    metavar="KERNEL[:FIELD=V1,V2]",
    help="time dml_jax with a kernel module's DEFAULT config changed, a field at a time",
  )
  parser.add_argument(
    "--devices",
    type=int,
    default=1,
    metavar="N",
    help="N >= 2: run the cases that declare shardings with their inputs sharded over the first"
    " N devices, beside dml_jax on one (default 1: no sharding)",
  )
  args = parser.parse_args(argv)
  if args.repeats < 5:
    parser.error("--repeats must be at least 5")
  if args.devices < 1:
    parser.error("--devices must be at least 1")
  if args.check and not args.table:
    parser.error("--check goes with --table")
  if args.forms and args.sweep:
    parser.error("--forms and --sweep are separate runs: give one")
  if (args.forms or args.sweep) and args.devices > 1:
    parser.error("--forms and --sweep run on one device: leave out --devices")
  if args.sweep:
    from benchmarks import forms_study  # it imports this module

    try:
      forms_study.variants(args.sweep)
    except ValueError as e:
      parser.error(str(e))
  patterns = [p.strip() for value in args.only for p in value.split(",") if p.strip()]
  names = [
    name
    for name, registered in CASES.items()
    if not patterns
    or any(fnmatch.fnmatchcase(name, p) or p in name or p == registered.op for p in patterns)
  ]
  if not names:
    parser.error(f"--only {','.join(patterns)} matches no case; cases: {', '.join(CASES)}")
  return args, names


def main(argv=None) -> int:
  args, names = parse_args(argv)
  if args.record:
    from benchmarks import tables

    print(tables.record(pathlib.Path(args.record[1]), args.record[0]))
    return 0
  if args.table:
    from benchmarks import tables

    return tables.main(["--check"] if args.check else [])
  size = args.size
  if size == "auto":
    size = "small" if jax.default_backend() == "cpu" else "large"
  preset = PRESETS[size]
  names = [name for name in names if name in cases_of(size)]
  if not names:
    print(f"no case selected has sizes for --size {size}", file=sys.stderr)
    return 2
  if args.devices > 1:
    if jax.device_count() < args.devices:
      print(
        f"--devices {args.devices}: jax sees {jax.device_count()} {jax.default_backend()}"
        " device(s); on a CPU, start the process with"
        f" XLA_FLAGS=--xla_force_host_platform_device_count={args.devices}",
        file=sys.stderr,
      )
      return 2
    mesh = Mesh(np.array(jax.devices()[: args.devices]), (MESH_AXIS,))
    return run_sharded(args, names, size, preset, mesh)
  env = make_env(not args.no_peers)
  header = header_lines(env, size, args)
  print("\n".join(header), flush=True)

  rows = copy_ceiling(env, preset, args.repeats)
  free_memory(env, preset)
  ceiling_row = max((r for r in rows if r.timing and not r.failed), key=Row.gbps, default=None)
  ceiling = ceiling_row.gbps() if ceiling_row else None
  kernel_ceiling = max((r.kernel_gbps() or 0 for r in rows if not r.failed), default=0) or None
  print(
    f"# copy ceiling: {ceiling or float('nan'):.1f} GB/s"
    f" ({ceiling_row.impl if ceiling_row else 'no copy timed'}; bytes read + written)"
    + (f"; kernels only: {kernel_ceiling:.1f} GB/s" if kernel_ceiling else ""),
    flush=True,
  )

  cases_json: list[dict[str, Any]] = []
  study: list[dict[str, Any]] = []
  if args.forms or args.sweep:
    from benchmarks import forms_study  # it imports this module

    if args.forms:
      study_rows, study = forms_study.run_forms(names, size, env, preset, args.repeats)
    else:
      study_rows, study = forms_study.run_sweep(args.sweep, names, size, env, preset, args.repeats)
    rows.extend(study_rows)
    names = []
  for i, name in enumerate(names):
    registered = CASES[name]
    case = registered.build(size, np.random.default_rng(1000 + i))
    print(
      f"# {name}: {case.description}; {byte_text(case.bytes_moved)} to move at least"
      + "".join(f"; {n}" for n in case.notes),
      flush=True,
    )
    case_rows = run_case(registered, case, env, preset, args.repeats)
    cases_json.append(
      {
        "case": name,
        "op": registered.op,
        "sizes": registered.sizes[size],
        "description": case.description,
        "bytes_moved": case.bytes_moved,
        "notes": case.notes,
      }
    )
    rows.extend(case_rows)
    del case, case_rows
    free_memory(env, preset)

  print()
  print(format_table([table_row(r, ceiling, kernel_ceiling) for r in rows]))
  print(f"""
spread: slowest / fastest repeat. GB/s: over the fewest bytes the operator must move (the case
lines above); ceiling: fraction of the copy ceiling; kernel ms: device time per call, the
kernels alone, without the gaps between them (GPU, through torch's profiler; else -); k.ceiling:
its fraction of the copy's kernel-only GB/s; peer/dml: peer time / dml_jax time (pipelined),
above 1 when dml_jax is faster (dml_jax's row: its fastest peer that passed its check).
lax.gather (in bounds): the jnp call with mode="promise_in_bounds", a bare lax.gather;
(src): source positions computed in the call; torch: on {env.torch_device or "-"};
ort: ONNX Runtime, CPU.""")
  failed = print_closing(
    env, rows, "", "dml_jax vs reference subset and NumPy, peers vs dml_jax, bit for bit"
  )
  if args.json:
    with open(args.json, "w") as f:
      json.dump(
        {
          "header": header,
          "size": size,
          "sizes": dataclasses.asdict(preset)
          | {"cases": {name: CASES[name].sizes[size] for name in cases_of(size)}},
          "argv": sys.argv[1:],
          "device_kind": jax.devices()[0].device_kind,
          "platform": env.platform,
          "jax": jax.__version__,
          "torch": env.torch_note,
          "onnxruntime": env.ort_note,
          "ceiling_gb_per_s": ceiling,
          "ceiling_implementation": ceiling_row.impl if ceiling_row else None,
          "kernel_ceiling_gb_per_s": kernel_ceiling,
          "peak_device_memory": peak_memory(env),
          "load_average_end": load_average(),
          "mode": "forms" if args.forms else "sweep" if args.sweep else "operators",
          "cases": cases_json,
          "study": study,
          "rows": [row_json(r, ceiling, kernel_ceiling) for r in rows],
          "passed": not failed,
        },
        f,
        indent=1,
      )
  return 1 if failed else 0


def run_sharded(args, names: list[str], size: str, preset: Preset, mesh: Mesh) -> int:
  """main under --devices N: the cases that declare shardings, as run_sharded_case times them."""
  env = make_env(False)
  env.torch_note = env.ort_note = "not run under --devices (they take no jax shardings)"
  header = header_lines(env, size, args)
  header.insert(
    2,
    f"# --devices {mesh.size}: a 1-D mesh ({MESH_AXIS!r}) of"
    f" {', '.join(str(d.id) for d in mesh.devices.flat)};"
    f" peers: {'none (--no-peers)' if args.no_peers else 'jnp'}; no copy ceiling",
  )
  print("\n".join(header), flush=True)
  rows: list[Row] = []
  summaries: list[Sharded] = []
  cases_json: list[dict[str, Any]] = []

  def write_json(complete: bool) -> None:
    """The report so far: written after every case, so that a run cut short keeps its figures."""
    if not args.json:
      return
    with open(args.json, "w") as f:
      json.dump(
        {
          "header": header,
          "size": size,
          "devices": mesh.size,
          "device_kinds": sorted({d.device_kind for d in mesh.devices.flat}),
          "argv": sys.argv[1:],
          "platform": env.platform,
          "jax": jax.__version__,
          "peak_device_memory": peak_memory(env),
          "load_average_end": load_average(),
          "cases": cases_json,
          "sharded": [sharded_json(s) for s in summaries],
          "rows": [row_json(r, None, None) for r in rows],
          "passed": not any(r.failed for r in rows),
          "complete": complete,
        },
        f,
        indent=1,
      )

  for i, name in enumerate(names):
    registered = CASES[name]
    if not registered.shard:
      print(f"# {name}: skipped under --devices (the case declares no sharding)", flush=True)
      continue
    case = registered.build(size, np.random.default_rng(1000 + i))
    print(
      f"# {name}: {case.description}; {byte_text(case.bytes_moved)} to move at least; sharded "
      + "; ".join(
        f"{family}: {','.join('-' if a is None else str(a) for a in axes)}"
        for family, axes in registered.shardings().items()
      ),
      flush=True,
    )
    case_rows, case_summaries = run_sharded_case(
      registered, case, env, preset, args.repeats, mesh, not args.no_peers
    )
    cases_json.append(
      {
        "case": name,
        "op": registered.op,
        "sizes": registered.sizes[size],
        "description": case.description,
        "bytes_moved": case.bytes_moved,
        "shardings": registered.shardings(),
      }
    )
    rows.extend(case_rows)
    summaries.extend(case_summaries)
    del case, case_rows
    free_memory(env, preset)
    write_json(complete=False)

  print()
  print(format_sharded_table(summaries))
  n = mesh.size
  print()
  print("\n".join(f"shard {k}: the inputs split {v}" for k, v in SHARD_FAMILIES.items()))
  print(f"""inputs: the axis of each input split over the {n} devices (-: replicated). xN ms: dml_jax
on {n} devices; jnp xN ms: the jnp formulation jitted with the same in_shardings; x1 ms: dml_jax
on one device (the unsharded inputs); xN/(x1/N): 1 is perfect scaling; jnp/dml: above 1 when
dml_jax is faster on {n} devices; collectives: in each compiled program (an asynchronous one
counts once); output: dml_jax's output sharding (= jnp: the same as jnp's); check: both outputs
bit for bit against the one-device output (itself checked against the reference subset).""")
  failed = print_closing(
    env, rows, " (device 0)", "one device vs reference subset, sharded vs one device, bit for bit"
  )
  write_json(complete=True)
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
