"""Benchmarks dml_jax's operators against a device copy (the ceiling) and peer implementations.

Run from the repository root (one process does everything):

  PYTHONPATH=. python3 benchmarks/run.py                          # sizes for the default device
  PYTHONPATH=. python3 benchmarks/run.py --size small --only 'gather_elements*' --json out.json
  PYTHONPATH=. python3 benchmarks/run.py --devices 2 --only join_axis1,one_hot_last  # 2 GPUs

Options:
  --size auto|tiny|small|large  auto (default): large on a GPU or TPU, small on the CPU. large is
                                 sized for an 80 GB GPU (inputs several times its L2: 50 MB on an
                                 H100); small for 2 CPU cores (a few minutes); tiny for the smoke
                                 test (seconds).
  --only PATTERN                 the cases to run: a name, an fnmatch pattern, a substring or
                                 a DirectML operator (GATHER_ND1); repeat it or separate
                                 patterns with commas. The copy ceiling always runs.
  --repeats N                    timed repeats per implementation (>= 5, default 7); the median
                                 is reported.
  --json PATH                    also write every number and every check as JSON.
  --no-peers                     time the copy and dml_jax only.
  --devices N                    N >= 2: the sharded runs below instead of the one-device table
                                 (default 1: none).

The process exits with status 1 if any correctness check fails (or an implementation raised),
2 for bad arguments, else 0.

Cases: each is registered next to the function that makes it, with `@case(OPERATOR, sizes=...,
variants=...)`: the DirectML operator it times, the sizes each preset (--size) gives it, and
the case names it makes with their parameters. A preset runs every case that has sizes for it,
in the order they are registered; a preset itself fixes only the copy ceiling's buffer and the
timing's targets (PRESETS). Adding a case is registering it; nothing else lists the cases.

The cases (large sizes; the small and tiny ones have the same structure, see each `@case`):
  join_axis{0,1}              JOIN of 4 float32 (4096, 8192) inputs along axis 0, axis 1.
  gather_elements_axis{1,0}   GATHER_ELEMENTS of a float32 (8192, 8192) input with random int32
                              indices of the same shape, along axis 1, axis 0.
  gather_elements_axis1_{f16,i8}  the axis-1 case on float16 and int8 data.
  gather_nd                   GATHER_ND: input (1024, 1024, 256) float32 (1 GiB), indices
                              (1, 65536, 2) int32: 65536 row gathers of 256 floats (1 KiB each).
                              dml_jax wants equal ranks, so the indices carry a leading 1; the
                              output is (1, 65536, 256).
  gather_nd1                  GATHER_ND1 with one batch dimension: input (64, 128, 128, 256)
                              float32 (1 GiB), indices (1, 64, 1024, 2) int32 with
                              InputDimensionCount 4, IndicesDimensionCount 3,
                              BatchDimensionCount 1 (the leading 1 pads the indices to rank 4):
                              per batch entry, 1024 row gathers of 256 floats; output
                              (1, 64, 1024, 256), the same bytes as gather_nd.
  gather_rows                 GATHER as an embedding lookup: 65536 random rows of a float32
                              (1 << 20, 256) table (1 GiB), ids (1, 65536) int32 with
                              IndexDimensions 1 (the leading 1 pads them to the table's rank);
                              output (65536, 256). Peers jnp.take, torch.index_select and ONNX
                              Runtime Gather.
  gather_axis1                GATHER along axis 1 of a float32 (4096, 8192) input with 4096 random
                              int32 column indices (1, 4096); output (4096, 4096). The same peers.
  reverse_subsequences        REVERSE_SUBSEQUENCES of a float32 (64, 4096, 1024) input along
                              axis 1, lengths (64, 1, 1024) uint32 random in [0, 4096] per lane.
  reverse_subsequences_equal  the same with the lengths equal across the last axis (by value:
                              DirectML's lengths tensor is still (64, 1, 1024)); the one form
                              ONNX ReverseSequence (one length per batch entry) can express.
  reverse_subsequences_per_batch
                              the same lengths as a (64, 1, 1) array: one length per batch
                              entry, which the functional API describes with zero strides
                              after the batch axis, so the lowering knows statically that
                              whole rows move.
  reverse_subsequences_i8     the per-lane case on int8 data.
  element_wise_identity_scale_bias
                              ELEMENT_WISE_IDENTITY of a float32 (8192, 8192) input with the
                              ScaleBias {0.5, -1.25}; peers x * s, then + b, in jnp and
                              torch (two calls each: the product rounded, as dml_jax does).
  join_padded_pitch           JOIN on buffers (dml.execute): 4 float32 (4096, 4096) inputs back
                              to back in one buffer, bound at their byte offsets, joined along
                              axis 1 into an output whose rows are padded by 64 elements (row
                              pitch 16448; the pad keeps the output buffer's zeros): a (4096,
                              16448) buffer, 269 MB. Peers: jnp.concatenate + jnp.pad, torch.cat
                              + F.pad, ONNX Runtime Concat + Pad, each on the same buffer.
  zero_stride_broadcast       ELEMENT_WISE_IDENTITY on buffers: a float32 buffer of one row of
                              8192 read through strides {0, 1} as (8192, 8192) and written
                              packed (256 MiB). Peers: jnp.broadcast_to (jitted: written out),
                              torch expand().contiguous(), ONNX Runtime Expand.
  padding1_{constant,edge,reflection,symmetric,wrap}
                              PADDING1 of a float32 (64, 64, 512, 512) input (4 GiB), 3
                              elements on each side of the last two dimensions, in each mode;
                              peers jnp.pad, torch.nn.functional.pad (no symmetric mode) and
                              ONNX Runtime Pad (opset 13: constant, edge, reflect).
  padding_reflection          the reflection case through PADDING.
  one_hot                     ONE_HOT of int32 indices (1, 1<<20), random in [0, 1024), along
                              axis 0 into depth 1024 with float32 values [0, 1]: output
                              (1024, 1<<20), 4 GiB. Peers: jax.nn.one_hot(..., axis=0) (the
                              same layout), torch.nn.functional.one_hot (int64, class axis
                              last: converted to float32 and transposed), torch zeros +
                              scatter_, ONNX Runtime OneHot (opset 13, axis 0). In-range
                              indices: torch's one_hot refuses others, jax.nn.one_hot would
                              give zeros for negative ones.
  one_hot_last                the same indices as (1<<20, 1) along axis 1: output
                              (1<<20, 1024), the layout of jax.nn.one_hot and torch.
  scatter_elements_axis1      SCATTER_ELEMENTS along axis 1 of a float32 (8192, 8192) input with
                              int32 indices of the same shape, each row a random permutation
                              (distinct targets), and updates of that shape; peers `.at[].set`
                              (plain and unique_indices), torch.scatter and ONNX Runtime
                              ScatterElements.
  argmax_axis1, argmin_axis0   ARGMAX along axis 1, ARGMIN along axis 0, of a float32 (8192, 8192)
                              input (256 MiB) into UINT32 positions; peers jnp.argmax/argmin
                              (int32), torch.argmax/argmin (int64) and ONNX Runtime ArgMax/ArgMin.
  top_k, top_k1_increasing    TOP_K (largest 64) and TOP_K1 INCREASING (smallest 64) of each row
                              of a float32 (256, 131072) input (128 MiB), each row a permutation
                              of 0 .. 131071 (distinct values); values and UINT32 indices. Peers
                              jax.lax.top_k (of -x for the smallest), torch.topk and ONNX
                              Runtime TopK.
  scatter_nd                  SCATTER_ND of 65536 distinct random rows of 256 floats (indices
                              (65536, 1) int32, updates (65536, 256)) into a float32 (1<<20, 256)
                              input (1 GiB); peers `.at[i].set` (plain and unique_indices),
                              torch index_copy and index_put, ONNX Runtime ScatterND.

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
block (benchmarks/cpu_forms.py counts the faults); the header shows these when set. PyTorch's CPU
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

# Before jax is imported: see "Memory" above.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import argparse
import dataclasses
import datetime
import fnmatch
import gc
import importlib
import json
import math
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
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import dml_jax as dml
from dml_jax._src import reference

# -- presets -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Preset:
  """What a --size preset fixes besides its cases' sizes (which each case registers)."""

  copy_elements: int  # float32 elements of the copy ceiling's buffer
  target_s: float  # how long one timed repeat should last
  max_calls: int  # at most this many calls per repeat


PRESETS = {
  "large": Preset(copy_elements=2**28, target_s=0.05, max_calls=1000),
  "small": Preset(copy_elements=2**25, target_s=0.1, max_calls=100),
  "tiny": Preset(copy_elements=4096, target_s=0.002, max_calls=20),
}

_SHORT = {"float32": "f32", "float16": "f16", "int8": "i8"}

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
  env = Env(platform=backend, pipelined=backend != "cpu")
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


def ort_slice_impl(env: Env, x: np.ndarray, starts, ends, steps, sizes) -> Impl:
  """ONNX Runtime's Slice of `x` over every axis (opset 13: starts, ends and steps as inputs)."""
  as64 = lambda v: np.array(v, np.int64)
  feeds = {
    "x": x,
    "starts": as64(starts),
    "ends": as64(ends),
    "axes": as64(range(x.ndim)),
    "steps": as64(steps),
  }
  model = onnx_model(env, "Slice", list(feeds.items()), np.empty(sizes, x.dtype))
  return ort_impl(env, "Slice", model, feeds, sizes)


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


@case(
  "JOIN",
  sizes={"large": (4096, 8192), "small": (2048, 2048), "tiny": (8, 16)},
  variants={"join_axis0": dict(axis=0), "join_axis1": dict(axis=1)},
  shard=lambda axis: {"batch": (1 - axis,) * 4, "axis": (axis,) * 4},
)
def join_case(shape: tuple[int, int], rng, *, axis: int, dtype=np.float32) -> Case:
  """JOIN of 4 inputs of `shape` along `axis`."""
  rows, cols = shape
  host = [random_data(rng, (rows, cols), dtype) for _ in range(4)]
  xs = device_put(host)
  out_shape = (4 * rows, cols) if axis == 0 else (rows, 4 * cols)
  itemsize = np.dtype(dtype).itemsize

  def subset(host):
    # The whole join axis, a few positions of the other.
    other = edge(cols, 2) if axis == 0 else edge(rows, 2)
    pick = (
      (lambda a: take(a, every(a.shape[0]), other))
      if axis == 0
      else (lambda a: take(a, other, every(a.shape[1])))
    )
    return reference.join([pick(x) for x in host], axis=axis), pick

  concatenate = lambda *xs: jnp.concatenate(xs, axis=axis)

  def peers(env, host):
    impls = [jax_impl(env, "jnp.concatenate", "jax", jax.jit(concatenate), *xs)]
    if env.torch:
      ts = [env.torch_from_jax(x) for x in xs]
      impls.append(torch_impl(env, "torch.cat", lambda: env.torch.cat(ts, dim=axis), out_shape))
    if env.ort:
      feeds = {f"x{i}": x for i, x in enumerate(host)}
      model = onnx_model(env, "Concat", list(feeds.items()), np.empty(out_shape, dtype), axis=axis)
      impls.append(ort_impl(env, "Concat", model, feeds, out_shape))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"4x({rows},{cols}) ax{axis}",
    description=f"JOIN of 4 x ({rows}, {cols}) along axis {axis} -> {out_shape}",
    bytes_moved=2 * math.prod(out_shape) * itemsize,
    host=host,
    inputs=xs,
    dml=jax.jit(lambda *xs: dml.join(xs, axis=axis)),
    expected=lambda host: np.concatenate(host, axis=axis),
    subset=subset,
    peers=peers,
    jnp_peer=("jnp.concatenate", concatenate),
  )


@case(
  "GATHER_ELEMENTS",
  sizes={"large": (8192, 8192), "small": (4096, 4096), "tiny": (16, 24)},
  variants={
    "gather_elements_axis1": dict(axis=1),
    "gather_elements_axis0": dict(axis=0),
    "gather_elements_axis1_f16": dict(axis=1, dtype=np.float16),
    "gather_elements_axis1_i8": dict(axis=1, dtype=np.int8),
  },
  shard=lambda axis, **_: {"batch": (1 - axis,) * 2, "axis": (axis,) * 2},
)
def gather_elements_case(shape: tuple[int, int], rng, *, axis: int, dtype=np.float32) -> Case:
  """GATHER_ELEMENTS of an input of `shape` along `axis`, random int32 indices of the same shape."""
  host = [random_data(rng, shape, dtype), random_indices(rng, shape, shape[axis])]
  x, indices = device_put(host)
  itemsize = np.dtype(dtype).itemsize
  out_bytes = math.prod(shape) * itemsize

  def subset(host):
    x, indices = host
    # A few whole lanes along the axis.
    selection = (
      (every(shape[0]), edge(shape[1], 1)) if axis == 0 else (edge(shape[0], 1), every(shape[1]))
    )
    pick = lambda a: take(a, *selection)
    return reference.gather_elements(pick(x), pick(indices), axis=axis), pick

  take_along_axis = lambda x, i: jnp.take_along_axis(x, i, axis=axis)

  def peers(env, host):
    impls = [
      jax_impl(env, "jnp.take_along_axis", "jax", jax.jit(take_along_axis), x, indices),
      jax_impl(
        env,
        "lax.gather (in bounds)",
        "jax",
        jax.jit(lambda x, i: jnp.take_along_axis(x, i, axis=axis, mode="promise_in_bounds")),
        x,
        indices,
      ),
    ]
    if env.torch:
      tx, ti = env.torch_from_jax(x), env.torch_from_jax(indices)
      impls.append(
        torch_impl(
          env, "torch.gather", lambda: env.torch.gather(tx, axis, ti), shape, note="int32 indices"
        )
      )
    if env.ort:
      feeds = {"data": host[0], "indices": host[1]}
      model = onnx_model(env, "GatherElements", list(feeds.items()), host[0], axis=axis)
      impls.append(ort_impl(env, "GatherElements", model, feeds, shape, note="int32 indices"))
    return impls

  short = _SHORT[np.dtype(dtype).name]
  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{_tuple(shape)} idx i32 ax{axis}",
    description=f"GATHER_ELEMENTS of {short} {shape} with random int32 indices {shape} along"
    f" axis {axis}",
    bytes_moved=2 * out_bytes + math.prod(shape) * 4,
    host=host,
    inputs=(x, indices),
    dml=jax.jit(lambda x, i: dml.gather_elements(x, i, axis=axis)),
    expected=lambda host: np.take_along_axis(host[0], normalized(host[1], shape[axis]), axis),
    subset=subset,
    peers=peers,
    jnp_peer=("jnp.take_along_axis", take_along_axis),
  )


@case(
  "GATHER_ND",
  sizes={
    "large": ((1024, 1024, 256), 65536),
    "small": ((256, 256, 256), 65536),
    "tiny": ((8, 6, 4), 16),
  },
  variants={"gather_nd": {}},
  shard=lambda: {"batch": (None, 1), "axis": (0, None)},
)
def gather_nd_case(sizes: tuple[tuple[int, int, int], int], rng) -> Case:
  """GATHER_ND: `sizes` is the input's (H, W, row) and the count of (H, W) tuples."""
  shape, tuples = sizes
  height, width, row = shape
  host = [
    random_data(rng, shape, np.float32),
    np.stack(
      [random_indices(rng, (1, tuples), height), random_indices(rng, (1, tuples), width)], axis=-1
    ),
  ]  # (1, tuples, 2)
  x, indices = device_put(host)
  out_shape = (1, tuples, row)

  def expected(host):
    x, i = host
    return x[normalized(i[..., 0], height), normalized(i[..., 1], width)]

  def subset(host):
    x, i = host
    chosen = edge(tuples, 32)
    pick = lambda a: a[:, chosen]
    return reference.gather_nd(x, pick(i)), pick

  rows_jnp = lambda x, i: x[i[..., 0], i[..., 1]]

  def peers(env, host):
    impls = [
      jax_impl(env, "jnp x[i0,i1]", "jax", jax.jit(rows_jnp), x, indices),
      jax_impl(
        env,
        "lax.gather (in bounds)",
        "jax",
        jax.jit(lambda x, i: x.at[i[..., 0], i[..., 1]].get(mode="promise_in_bounds")),
        x,
        indices,
      ),
    ]
    if env.torch:
      tx, ti = env.torch_from_jax(x), env.torch_from_jax(indices)
      impls.append(
        torch_impl(
          env, "torch x[i0,i1]", lambda: tx[ti[..., 0], ti[..., 1]], out_shape, note="int32 indices"
        )
      )
    if env.ort:
      feeds = {"data": host[0], "indices": host[1].astype(np.int64)}
      model = onnx_model(env, "GatherND", list(feeds.items()), np.empty(out_shape, np.float32))
      impls.append(
        ort_impl(
          env,
          "GatherND",
          model,
          feeds,
          out_shape,
          note="int64 indices (ONNX GatherND takes no int32)",
        )
      )
    return impls

  return Case(
    dtype="float32",
    shape=f"{_tuple(shape)} idx{_tuple((1, tuples, 2))}",
    description=f"GATHER_ND of {tuples} int32 2-tuples (indices (1, {tuples}, 2)) into f32"
    f" {shape}: row gathers of {row} -> {out_shape}",
    bytes_moved=2 * math.prod(out_shape) * 4 + tuples * 2 * 4,
    host=host,
    inputs=(x, indices),
    dml=jax.jit(lambda x, i: dml.gather_nd(x, i)),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("jnp x[i0,i1]", rows_jnp),
  )


@case(
  "GATHER_ND1",
  sizes={
    "large": ((64, 128, 128, 256), 1024),
    "small": ((16, 64, 64, 256), 4096),
    "tiny": ((8, 8, 4, 3), 6),
  },
  variants={"gather_nd1": {}},
  shard=lambda: {"batch": (0, 1), "axis": (1, None)},
)
def gather_nd1_case(sizes: tuple[tuple[int, int, int, int], int], rng) -> Case:
  """GATHER_ND1 with one batch dimension: `sizes` is the input's (batch, H, W, row) and the count
  of (H, W) tuples per batch entry."""
  shape, tuples = sizes
  batch, height, width, row = shape
  host = [
    random_data(rng, shape, np.float32),
    np.stack(
      [
        random_indices(rng, (1, batch, tuples), height),
        random_indices(rng, (1, batch, tuples), width),
      ],
      axis=-1,
    ),
  ]
  x, indices = device_put(host)
  out_shape = (1, batch, tuples, row)
  counts = dict(input_dimension_count=4, indices_dimension_count=3, batch_dimension_count=1)

  def expected(host):
    x, i = host
    b = np.arange(batch)[:, None]
    return x[b, normalized(i[0, ..., 0], height), normalized(i[0, ..., 1], width)].reshape(
      out_shape
    )

  def subset(host):
    x, i = host
    chosen_b, chosen_t = edge(batch, 1), edge(tuples, 16)
    pick = lambda a: take(a, [0], chosen_b, chosen_t, every(a.shape[3]))
    return reference.gather_nd(x[chosen_b], i[:, chosen_b][:, :, chosen_t], **counts), pick

  def jnp_rows(x, i, **get):
    b = lax.broadcasted_iota(jnp.int32, (batch, tuples), 0)
    out = x.at[b, i[0, ..., 0], i[0, ..., 1]].get(**get)
    return out.reshape(out_shape)

  def peers(env, host):
    impls = [
      jax_impl(env, "jnp x[b,i0,i1]", "jax", jax.jit(jnp_rows), x, indices),
      jax_impl(
        env,
        "lax.gather (in bounds)",
        "jax",
        jax.jit(lambda x, i: jnp_rows(x, i, mode="promise_in_bounds")),
        x,
        indices,
      ),
    ]
    if env.torch:
      tx, ti = env.torch_from_jax(x), env.torch_from_jax(indices)
      tb = env.torch.arange(batch, device=env.torch_device).view(batch, 1)
      impls.append(
        torch_impl(
          env,
          "torch x[b,i0,i1]",
          lambda: tx[tb, ti[0, ..., 0], ti[0, ..., 1]],
          out_shape,
          note="int32 indices",
        )
      )
    if env.ort:
      feeds = {"data": host[0], "indices": host[1][0].astype(np.int64)}
      model = onnx_model(
        env, "GatherND", list(feeds.items()), np.empty(out_shape[1:], np.float32), batch_dims=1
      )
      impls.append(
        ort_impl(
          env,
          "GatherND batch_dims=1",
          model,
          feeds,
          out_shape,
          note="int64 indices (batch, tuples, 2)",
        )
      )
    return impls

  return Case(
    dtype="float32",
    shape=f"{_tuple(shape)} idx{_tuple((1, batch, tuples, 2))} b1",
    description=f"GATHER_ND1, 1 batch dimension: f32 {shape}, int32 indices"
    f" (1, {batch}, {tuples}, 2), counts 4/3/1 -> {out_shape}",
    bytes_moved=2 * math.prod(out_shape) * 4 + batch * tuples * 2 * 4,
    host=host,
    inputs=(x, indices),
    dml=jax.jit(lambda x, i: dml.gather_nd(x, i, **counts)),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("jnp x[b,i0,i1]", jnp_rows),
  )


# Decorators register bottom up: the rows' case first.
@case(
  "GATHER",
  sizes={
    "large": ((4096, 8192), 4096),
    "small": ((2048, 4096), 2048),
    "tiny": ((8, 16), 7),
  },
  variants={"gather_axis1": dict(axis=1)},
  shard=lambda axis: {"batch": (0, None), "axis": (1, None)},
)
@case(
  "GATHER",
  sizes={
    "large": ((1 << 20, 256), 65536),
    "small": ((1 << 16, 256), 65536),
    "tiny": ((16, 8), 16),
  },
  variants={"gather_rows": dict(axis=0)},
  shard=lambda axis: {"batch": (None, 1), "axis": (0, None)},
)
def gather_case(sizes: tuple[tuple[int, int], int], rng, *, axis: int) -> Case:
  """GATHER of a 2-D float32 input along `axis`: `sizes` is the input's shape and the count of
  random indices, given as (1, count) with IndexDimensions 1 (dml_jax wants equal ranks).

  Along axis 0 it is an embedding lookup: whole rows of a table, output (count, width); along
  axis 1 it picks columns, output (height, count).
  """
  shape, count = sizes
  host = [random_data(rng, shape, np.float32), random_indices(rng, (1, count), shape[axis])]
  x, ids = device_put(host)
  out_shape = (count, shape[1]) if axis == 0 else (shape[0], count)
  what = "rows" if axis == 0 else "columns"

  def subset(host):
    data, ids = host
    if axis == 0:
      chosen = edge(count, 32)
      return reference.gather(data, ids[:, chosen], axis=0, index_dimensions=1), lambda a: a[chosen]
    chosen = edge(shape[0], 4)
    return reference.gather(data[chosen], ids, axis=1, index_dimensions=1), lambda a: a[chosen]

  take = lambda x, i: jnp.take(x, i[0], axis=axis)

  def peers(env, host):
    pick = (
      (lambda x, i: x.at[i[0]].get(mode="promise_in_bounds"))
      if axis == 0
      else (lambda x, i: x.at[:, i[0]].get(mode="promise_in_bounds"))
    )
    impls = [
      jax_impl(env, "jnp.take", "jax", jax.jit(take), x, ids),
      jax_impl(env, "lax.gather (in bounds)", "jax", jax.jit(pick), x, ids),
    ]
    if env.torch:
      tx, ti = env.torch_from_jax(x), env.torch_from_jax(ids)
      impls.append(
        torch_impl(
          env,
          "torch.index_select",
          lambda: env.torch.index_select(tx, axis, ti[0]),
          out_shape,
          note="int32 indices",
        )
      )
    if env.ort:
      feeds = {"data": host[0], "indices": host[1][0]}
      out = np.empty(out_shape, np.float32)
      model = onnx_model(env, "Gather", list(feeds.items()), out, axis=axis)
      name = "Gather" if axis == 0 else f"Gather axis={axis}"
      impls.append(ort_impl(env, name, model, feeds, out_shape, note="int32 indices"))
    return impls

  def expected(host):
    positions = normalized(host[1][0], shape[axis])
    return host[0][positions] if axis == 0 else host[0][:, positions]

  return Case(
    dtype="float32",
    shape=f"{_tuple(shape)} idx{_tuple((1, count))}" + (" ax1" if axis else ""),
    description=f"GATHER of {count} random {what} (int32 indices (1, {count})) of an f32"
    f" {shape} input along axis {axis} -> {out_shape}",
    bytes_moved=2 * math.prod(out_shape) * 4 + count * 4,
    host=host,
    inputs=(x, ids),
    dml=jax.jit(lambda x, i: dml.gather(x, i, axis=axis, index_dimensions=1)),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("jnp.take", take),
  )


# REVERSE_SUBSEQUENCES's lengths: form -> how they are drawn
_REVERSE_LENGTHS = {
  "per lane": "random per lane",
  "equal": "equal across the last axis",
  "per batch": "per batch",
}


@case(
  "REVERSE_SUBSEQUENCES",
  sizes={"large": (64, 4096, 1024), "small": (16, 1024, 1024), "tiny": (8, 16, 6)},
  variants={
    "reverse_subsequences": {},
    "reverse_subsequences_equal": dict(form="equal"),
    "reverse_subsequences_per_batch": dict(form="per batch"),
    "reverse_subsequences_i8": dict(dtype=np.int8),
  },
  shard=lambda **_: {"batch": (0, 0), "axis": (1, None)},
)
def reverse_case(
  shape: tuple[int, int, int], rng, *, form: str = "per lane", dtype=np.float32
) -> Case:
  """REVERSE_SUBSEQUENCES of a (batch, time, feature) input of `shape` along time. `form`:
  "per lane" (random), "equal" (one per batch entry, repeated across the last axis: DirectML's
  full lengths tensor) or "per batch" (the same as a (batch, 1, 1) array, which the functional
  API describes with zero strides)."""
  batch, steps, features = shape
  said = _REVERSE_LENGTHS[form]
  equal = form != "per lane"
  if equal:  # one length per batch entry
    per_batch = rng.integers(0, steps + 1, (batch, 1, 1), dtype=np.uint32)
    full = (batch, 1, features) if form == "equal" else (batch, 1, 1)
    lengths = np.ascontiguousarray(np.broadcast_to(per_batch, full))
  else:
    lengths = rng.integers(0, steps + 1, (batch, 1, features), dtype=np.uint32)
  host = [random_data(rng, shape, dtype), lengths]
  x, lengths = device_put(host)
  itemsize = np.dtype(dtype).itemsize

  def expected(host):
    x, lengths = host
    clipped = np.minimum(lengths, steps).astype(np.int32)
    position = np.arange(steps, dtype=np.int32).reshape(1, steps, 1)
    source = np.where(position < clipped, clipped - 1 - position, position)
    return np.take_along_axis(x, source, axis=1)

  def subset(host):
    x, lengths = host
    lengths = np.broadcast_to(lengths, (batch, 1, features))  # DirectML's sizes
    chosen_b, chosen_f = edge(batch, 1), edge(features, 1)
    pick = lambda a: take(a, chosen_b, every(a.shape[1]), chosen_f)
    return reference.reverse_subsequences(pick(x), pick(lengths), axis=1), pick

  def jnp_reverse(x, lengths):
    clipped = jnp.minimum(lengths, steps).astype(jnp.int32)
    position = lax.broadcasted_iota(jnp.int32, shape, 1)
    source = jnp.where(position < clipped, clipped - 1 - position, position)
    return jnp.take_along_axis(x, jnp.broadcast_to(source, shape), axis=1)

  def peers(env, host):
    impls = [jax_impl(env, "jnp take_along_axis(src)", "jax", jax.jit(jnp_reverse), x, lengths)]
    if env.torch:
      torch = env.torch
      tx = env.torch_from_jax(x)
      tl = env.torch_from_numpy(host[1].astype(np.int64))
      position = torch.arange(steps, device=env.torch_device).view(1, steps, 1)

      def torch_reverse():
        clipped = torch.clamp(tl, max=steps)
        source = torch.where(position < clipped, clipped - 1 - position, position)
        return torch.gather(tx, 1, source.expand(shape))

      impls.append(torch_impl(env, "torch.gather(src)", torch_reverse, shape, note="int64 lengths"))
    if env.ort and equal:
      feeds = {"x": host[0], "lengths": host[1][:, 0, 0].astype(np.int64)}
      model = onnx_model(
        env, "ReverseSequence", list(feeds.items()), host[0], batch_axis=0, time_axis=1
      )
      impls.append(
        ort_impl(
          env, "ReverseSequence", model, feeds, shape, note="int64 lengths, one per batch entry"
        )
      )
    return impls

  notes = []
  if not equal:
    notes.append(
      "no ONNX Runtime peer: ONNX ReverseSequence takes one length per batch entry"
      " (1-D sequence_lens), not one per lane"
    )
  short = _SHORT[np.dtype(dtype).name]
  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{_tuple(shape)} L{_tuple(host[1].shape)}{' eq' if form == 'equal' else ''} ax1",
    description=f"REVERSE_SUBSEQUENCES of {short} {shape} along axis 1, uint32 lengths"
    f" {host[1].shape} in [0, {steps}], {said}",
    bytes_moved=2 * math.prod(shape) * itemsize + host[1].nbytes,
    host=host,
    inputs=(x, lengths),
    dml=jax.jit(lambda x, n: dml.reverse_subsequences(x, n, axis=1)),
    expected=expected,
    subset=subset,
    peers=peers,
    notes=notes,
    jnp_peer=("jnp take_along_axis(src)", jnp_reverse),
  )


@case(
  "TILE",
  sizes={"large": (4096, 4096), "small": (1024, 2048), "tiny": (8, 16)},
  variants={"tile_rows": dict(repeats=(4, 1)), "tile_columns": dict(repeats=(1, 4))},
  shard=lambda repeats, **_: _tile_shardings(repeats),
)
@case(
  "TILE",  # the layout target's case: a 4 MiB input repeated along both dimensions
  sizes={"large": (1024, 1024), "small": (512, 512), "tiny": (5, 7)},
  variants={"tile_both": dict(repeats=(4, 4))},
  shard=lambda repeats, **_: _tile_shardings(repeats),
)
def tile_case(shape: tuple[int, int], rng, *, repeats: tuple[int, int], dtype=np.float32) -> Case:
  """TILE of an input of `shape`, `repeats` copies along each dimension."""
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  out_shape = tuple(s * r for s, r in zip(shape, repeats, strict=True))
  itemsize = np.dtype(dtype).itemsize

  def subset(host):
    # A few positions of each dimension of the input, and the same positions in every copy:
    # out[r + t * rows, c + u * cols] = x[r, c], copies outermost as the oracle orders them.
    chosen = [edge(n, 2) for n in shape]
    pick = lambda a: take(
      a,
      *(
        np.concatenate([c + t * n for t in range(k)])
        for c, n, k in zip(chosen, shape, repeats, strict=True)
      ),
    )
    return reference.tile(take(host[0], *chosen), repeats=repeats), pick

  tile = lambda x: jnp.tile(x, repeats)

  def peers(env, host):
    impls = [jax_impl(env, "jnp.tile", "jax", jax.jit(tile), x)]
    if env.torch:
      tx = env.torch_from_jax(x)
      impls.append(torch_impl(env, "torch.Tensor.repeat", lambda: tx.repeat(*repeats), out_shape))
    if env.ort:
      feeds = {"x": host[0], "repeats": np.array(repeats, np.int64)}
      model = onnx_model(env, "Tile", list(feeds.items()), np.empty(out_shape, dtype))
      impls.append(ort_impl(env, "Tile", model, feeds, out_shape))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{_tuple(shape)} x{_tuple(repeats)}",
    description=f"TILE of {shape} by {repeats} -> {out_shape}",
    bytes_moved=(math.prod(shape) + math.prod(out_shape)) * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: dml.tile(x, repeats=repeats)),
    expected=lambda host: np.tile(host[0], repeats),
    subset=subset,
    peers=peers,
    jnp_peer=("jnp.tile", tile),
  )


def _tile_shardings(repeats: tuple[int, ...]) -> Shardings:
  """TILE's input sharded along an axis it does not repeat (batch), or the first it repeats."""
  once = [k for k, r in enumerate(repeats) if r == 1]
  shardings: Shardings = {"batch": (once[0],)} if once else {}
  shardings["axis"] = (next(k for k, r in enumerate(repeats) if r > 1),)
  return shardings


@case(
  "ELEMENT_WISE_IDENTITY",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (6, 10)},
  variants={"element_wise_identity_scale_bias": dict(scale=0.5, bias=-1.25)},
)
def element_wise_identity_case(
  shape: tuple[int, int], rng, *, scale: float, bias: float, dtype=np.float32
) -> Case:
  """ELEMENT_WISE_IDENTITY of an input of `shape` with a ScaleBias: x * scale + bias, the
  product rounded before the sum."""
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  itemsize = np.dtype(dtype).itemsize
  s, b = np.float32(scale), np.float32(bias)

  def subset(host):
    chosen = [edge(n, 2) for n in shape]
    pick = lambda a: take(a, *chosen)
    oracle = reference.element_wise_identity(pick(host[0]), scale_bias=(scale, bias))
    return oracle, pick

  def peers(env, host):
    # Two calls each, so that the product is rounded before the sum (one fused call would
    # contract them into an FMA: another result).
    multiply, add = jax.jit(lambda x: x * s), jax.jit(lambda p: p + b)
    impls = [jax_impl(env, "jnp x * s, then + b", "jax", lambda x: add(multiply(x)), x)]
    if env.torch:
      tx = env.torch_from_jax(x)
      impls.append(torch_impl(env, "torch x * s, then + b", lambda: (tx * scale).add_(bias), shape))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{_tuple(shape)} *{scale}+{bias}",
    description=f"ELEMENT_WISE_IDENTITY of {shape} with ScaleBias {{{scale}, {bias}}}",
    bytes_moved=2 * math.prod(shape) * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: dml.element_wise_identity(x, scale_bias=(scale, bias))),
    expected=lambda host: (host[0] * s) + b,
    subset=subset,
    peers=peers,
    notes=["the peers run the product and the sum as two calls: two roundings, as dml_jax"],
  )


@case(
  "ELEMENT_WISE_IDENTITY",
  sizes={"large": (32, 256, 256, 64), "small": (8, 64, 64, 32), "tiny": (8, 3, 4, 5)},
  variants={"element_wise_identity_nhwc_to_nchw": {}},
  shard=lambda: {"batch": (0,)},
)
def nhwc_to_nchw_case(shape: tuple[int, int, int, int], rng, *, dtype=np.float32) -> Case:
  """ELEMENT_WISE_IDENTITY run on buffers (`dml.execute`): an NHWC buffer read through
  permuted strides as NCHW, written packed into an output buffer, the layout change DirectML
  makes with this operator."""
  n, h, w, c = shape
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  itemsize = np.dtype(dtype).itemsize
  data_type = dml.DataType.from_dtype(np.dtype(dtype))
  nchw = dml.TensorDesc(data_type, (n, c, h, w), strides=(h * w * c, 1, w * c, c))
  desc = dml.ElementWiseIdentityDesc(nchw, dml.TensorDesc(data_type, (n, c, h, w)))
  size = n * h * w * c

  def on_buffers(x):
    output = jnp.zeros(size, x.dtype)
    (out,) = dml.execute(desc, inputs=[dml.Binding(x.reshape(-1))], outputs=[dml.Binding(output)])
    return out.reshape(n, c, h, w)

  def subset(host):
    chosen = [edge(n, 1), every(h) if h <= 8 else edge(h, 2), edge(w, 2), every(c)]
    oracle = reference.element_wise_identity(take(host[0], *chosen)).transpose(0, 3, 1, 2)
    return oracle, lambda a: take(a, chosen[0], chosen[3], chosen[1], chosen[2])

  transpose = lambda x: jnp.transpose(x, (0, 3, 1, 2))

  def peers(env, host):
    impls = [jax_impl(env, "jnp.transpose", "jax", jax.jit(transpose), x)]
    if env.torch:
      tx = env.torch_from_jax(x)
      impls.append(
        torch_impl(
          env,
          "torch permute().contiguous()",
          lambda: tx.permute(0, 3, 1, 2).contiguous(),
          (n, c, h, w),
        )
      )
    if env.ort:
      feeds = {"x": host[0]}
      out = np.empty((n, c, h, w), dtype)
      model = onnx_model(env, "Transpose", list(feeds.items()), out, perm=[0, 3, 1, 2])
      impls.append(ort_impl(env, "Transpose", model, feeds, (n, c, h, w)))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"NHWC {_tuple(shape)} -> NCHW",
    description=f"ELEMENT_WISE_IDENTITY on buffers: NHWC {shape} read as NCHW through strides,"
    " written packed",
    bytes_moved=2 * size * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(on_buffers),
    expected=lambda host: host[0].transpose(0, 3, 1, 2),
    subset=subset,
    peers=peers,
    jnp_peer=("jnp.transpose", transpose),
  )


@case(
  "JOIN",
  sizes={"large": (4096, 4096), "small": (1024, 1024), "tiny": (8, 16)},
  variants={"join_padded_pitch": dict(pad=64)},
)
def join_padded_pitch_case(shape: tuple[int, int], rng, *, pad: int, dtype=np.float32) -> Case:
  """JOIN run on buffers (`dml.execute`): 4 inputs of `shape`, back to back in one buffer and
  bound at their byte offsets, joined along axis 1 into an output buffer whose rows are `pad`
  elements longer than the joined rows (a padded pitch); the pad keeps the zeros the buffer was
  made with."""
  rows, cols = shape
  itemsize = np.dtype(dtype).itemsize
  piece = rows * cols
  assert piece * itemsize % 16 == 0, "each input's offset must be a multiple of 16 bytes"
  host = [random_data(rng, (4 * piece,), dtype)]
  (x,) = device_put(host)
  width = 4 * cols  # the joined row
  pitch = width + pad
  data_type = dml.DataType.from_dtype(np.dtype(dtype))
  desc = dml.JoinDesc(
    [dml.TensorDesc(data_type, (rows, cols))] * 4,
    axis=1,
    output_tensor=dml.TensorDesc(data_type, (rows, width), strides=(pitch, 1)),
  )
  out_shape = (rows, pitch)

  def pieces(buffer):
    return [buffer[k * piece : (k + 1) * piece].reshape(rows, cols) for k in range(4)]

  def on_buffers(buffer):
    output = jnp.zeros(rows * pitch, buffer.dtype)
    inputs = [dml.Binding(buffer, offset=k * piece * itemsize) for k in range(4)]
    (out,) = dml.execute(desc, inputs=inputs, outputs=[dml.Binding(output)])
    return out.reshape(out_shape)

  def padded(joined):
    return np.pad(joined, ((0, 0), (0, pad)))

  def subset(host):
    chosen = edge(rows, 2)
    oracle = padded(reference.join([p[chosen] for p in pieces(host[0])], axis=1))
    return oracle, lambda a: a[chosen]

  def peers(env, host):
    concat_pad = jax.jit(lambda b: jnp.pad(jnp.concatenate(pieces(b), axis=1), ((0, 0), (0, pad))))
    impls = [jax_impl(env, "jnp.concatenate + jnp.pad", "jax", concat_pad, x)]
    if env.torch:
      views = pieces(env.torch_from_jax(x))  # views of the one buffer
      pad_rows = env.torch.nn.functional.pad
      impls.append(
        torch_impl(
          env,
          "torch.cat + F.pad",
          lambda: pad_rows(env.torch.cat(views, dim=1), (0, pad)),
          out_shape,
        )
      )
    if env.ort:
      feeds = {f"x{k}": p for k, p in enumerate(pieces(host[0]))}
      feeds["pads"] = np.array([0, 0, 0, pad], np.int64)
      nodes = [
        ("Concat", [f"x{k}" for k in range(4)], {"axis": 1}),
        ("Pad", ["t0", "pads"], {}),
      ]
      model = onnx_chain(env, nodes, list(feeds.items()), np.empty(out_shape, dtype))
      impls.append(ort_impl(env, "Concat + Pad", model, feeds, out_shape))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"4x({rows},{cols}) ax1 +{pad}",
    description=f"JOIN on buffers: 4 x ({rows}, {cols}) at offsets of one buffer along axis 1,"
    f" written with row pitch {pitch} -> buffer {out_shape}",
    bytes_moved=(4 * piece + rows * pitch) * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(on_buffers),
    expected=lambda host: padded(np.concatenate(pieces(host[0]), axis=1)),
    subset=subset,
    peers=peers,
    notes=["the output is the whole padded buffer: the pad's zeros are written and checked too"],
  )


@case(
  "ELEMENT_WISE_IDENTITY",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (6, 10)},
  variants={"zero_stride_broadcast": {}},
)
def zero_stride_broadcast_case(shape: tuple[int, int], rng, *, dtype=np.float32) -> Case:
  """ELEMENT_WISE_IDENTITY run on buffers (`dml.execute`): a buffer of one row of `shape[1]`
  elements read through a zero leading stride as `shape`, written packed: a broadcast."""
  rows, cols = shape
  itemsize = np.dtype(dtype).itemsize
  host = [random_data(rng, (cols,), dtype)]
  (x,) = device_put(host)
  data_type = dml.DataType.from_dtype(np.dtype(dtype))
  desc = dml.ElementWiseIdentityDesc(
    dml.TensorDesc(data_type, shape, strides=(0, 1)), dml.TensorDesc(data_type, shape)
  )

  def on_buffers(row):
    output = jnp.zeros(rows * cols, row.dtype)
    (out,) = dml.execute(desc, inputs=[dml.Binding(row)], outputs=[dml.Binding(output)])
    return out.reshape(shape)

  def subset(host):
    chosen = [edge(rows, 2), edge(cols, 2)]
    logical = np.broadcast_to(host[0], shape)
    return reference.element_wise_identity(take(logical, *chosen)), lambda a: take(a, *chosen)

  def peers(env, host):
    # A jitted function's result is a buffer of its own: the broadcast is written out.
    broadcast = jax.jit(lambda r: jnp.broadcast_to(r, shape))
    impls = [jax_impl(env, "jnp.broadcast_to", "jax", broadcast, x)]
    if env.torch:
      row = env.torch_from_jax(x).reshape(1, cols)
      impls.append(
        torch_impl(
          env, "torch expand().contiguous()", lambda: row.expand(rows, cols).contiguous(), shape
        )
      )
    if env.ort:
      feeds = {"x": host[0].reshape(1, cols), "shape": np.array(shape, np.int64)}
      model = onnx_model(env, "Expand", list(feeds.items()), np.empty(shape, dtype))
      impls.append(ort_impl(env, "Expand", model, feeds, shape))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"(1,{cols}) -> {_tuple(shape)}",
    description=f"ELEMENT_WISE_IDENTITY on buffers: a row of {cols} read with strides {{0, 1}}"
    f" as {shape}, written packed",
    bytes_moved=(cols + rows * cols) * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(on_buffers),
    expected=lambda host: np.tile(host[0], (rows, 1)),
    subset=subset,
    peers=peers,
  )


_DEPTH_SPACE_MODES = {"DEPTH_COLUMN_ROW": "DCR", "COLUMN_ROW_DEPTH": "CRD"}  # ONNX's modes
_DEPTH_SPACE_SIZES = {
  "large": (16, 256, 256, 256),
  "small": (8, 64, 128, 128),
  "tiny": (8, 32, 3, 5),
}
_DEPTH_SPACE_SHARDS: Shardings = {"batch": (0,), "axis": (1,)}


@case(
  "DEPTH_TO_SPACE1",
  sizes=_DEPTH_SPACE_SIZES,
  variants={
    "depth_to_space1_dcr": dict(op="DEPTH_TO_SPACE1", order="DEPTH_COLUMN_ROW"),
    "depth_to_space1_crd": dict(op="DEPTH_TO_SPACE1", order="COLUMN_ROW_DEPTH"),
  },
  shard=lambda **_: _DEPTH_SPACE_SHARDS,
)
@case(
  "DEPTH_TO_SPACE",
  sizes=_DEPTH_SPACE_SIZES,
  variants={"depth_to_space": {}},
  shard=lambda **_: _DEPTH_SPACE_SHARDS,
)
@case(
  "SPACE_TO_DEPTH1",
  sizes=_DEPTH_SPACE_SIZES,
  variants={"space_to_depth1_crd": dict(op="SPACE_TO_DEPTH1", order="COLUMN_ROW_DEPTH")},
  shard=lambda **_: _DEPTH_SPACE_SHARDS,
)
@case(
  "SPACE_TO_DEPTH",
  sizes=_DEPTH_SPACE_SIZES,
  variants={"space_to_depth": dict(op="SPACE_TO_DEPTH")},
  shard=lambda **_: _DEPTH_SPACE_SHARDS,
)
def depth_space_case(
  depth_shape: tuple[int, int, int, int],
  rng,
  *,
  op: str = "DEPTH_TO_SPACE",
  order: str = "DEPTH_COLUMN_ROW",
  block_size: int = 2,
  dtype=np.float32,
) -> Case:
  """`op` (DEPTH_TO_SPACE(1) or SPACE_TO_DEPTH(1)) between the NCHW depth side `depth_shape`
  and its space side, blocks of `block_size` packed in `order` (the operators without the 1:
  DEPTH_COLUMN_ROW)."""
  b = block_size
  n, depth, h, w = depth_shape
  c = depth // (b * b)
  space_shape = (n, c, h * b, w * b)
  to_space = op.startswith("DEPTH")
  in_shape, out_shape = (depth_shape, space_shape) if to_space else (space_shape, depth_shape)
  host = [random_data(rng, in_shape, dtype)]
  (x,) = device_put(host)
  itemsize = np.dtype(dtype).itemsize
  mode, crd = _DEPTH_SPACE_MODES[order], order == "COLUMN_ROW_DEPTH"
  # The depth side's channel axis split as the order packs it, and the space side's blocks.
  packed = (n, c, b, b, h, w) if crd else (n, b, b, c, h, w)
  blocks = (n, c, h, b, w, b)
  to_blocks = (0, 1, 4, 2, 5, 3) if crd else (0, 3, 4, 1, 5, 2)  # packed -> blocks
  to_packed = (0, 1, 3, 5, 2, 4) if crd else (0, 3, 5, 1, 2, 4)  # blocks -> packed

  def numpy_form(a):
    if to_space:
      return a.reshape(packed).transpose(to_blocks).reshape(out_shape)
    return a.reshape(blocks).transpose(to_packed).reshape(out_shape)

  def subset(host):
    # A few batch entries and block positions, every channel, on both sides.
    chosen_n, chosen_h, chosen_w = edge(n, 1), edge(h, 2), edge(w, 2)
    pixels = lambda chosen: np.concatenate([p * b + np.arange(b) for p in chosen])
    depth_pick = lambda a: take(a, chosen_n, every(depth), chosen_h, chosen_w)
    space_pick = lambda a: take(a, chosen_n, every(c), pixels(chosen_h), pixels(chosen_w))
    attributes = dict(block_size=b) | (dict(order=order) if op.endswith("1") else {})
    oracle = getattr(reference, op.lower())
    if to_space:
      return oracle(depth_pick(host[0]), **attributes), space_pick
    return oracle(space_pick(host[0]), **attributes), depth_pick

  def peers(env, host):
    impls = [jax_impl(env, "jnp reshape/transpose", "jax", jax.jit(numpy_form), x)]
    if env.torch and crd:
      tx = env.torch_from_jax(x)
      functional = env.torch.nn.functional
      torch_op = functional.pixel_shuffle if to_space else functional.pixel_unshuffle
      name = "torch pixel_shuffle" if to_space else "torch pixel_unshuffle"
      impls.append(torch_impl(env, name, lambda: torch_op(tx, b), out_shape))
    if env.ort and (to_space or not crd):
      feeds = {"x": host[0]}
      onnx_op, extra = ("DepthToSpace", dict(mode=mode)) if to_space else ("SpaceToDepth", {})
      model = onnx_model(
        env, onnx_op, list(feeds.items()), np.empty(out_shape, dtype), blocksize=b, **extra
      )
      impls.append(ort_impl(env, f"{onnx_op} {mode}", model, feeds, out_shape))
    return impls

  notes = []
  if not crd:
    notes.append(
      "no torch peer: torch's pixel_shuffle and pixel_unshuffle pack channels as"
      " COLUMN_ROW_DEPTH (ONNX CRD), not DEPTH_COLUMN_ROW"
    )
  if crd and not to_space:
    notes.append("no ONNX Runtime peer: ONNX SpaceToDepth packs as DEPTH_COLUMN_ROW (DCR) only")
  attributes = dict(block_size=b) | (dict(order=order) if op.endswith("1") else {})
  function = getattr(dml, op.lower())
  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{_tuple(in_shape)} b{b} {mode}",
    description=f"{op} of {in_shape}, block {b}, {order} (ONNX {mode}) -> {out_shape}",
    bytes_moved=2 * math.prod(in_shape) * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: function(x, **attributes)),
    expected=lambda host: numpy_form(host[0]),
    subset=subset,
    peers=peers,
    notes=notes,
    jnp_peer=("jnp reshape/transpose", numpy_form),
  )


@case(
  "SPLIT",
  sizes={"large": (16384, 8192), "small": (4096, 4096), "tiny": (8, 16)},
  variants={"split_axis0": dict(axis=0), "split_axis1": dict(axis=1)},
)
def split_case(shape: tuple[int, int], rng, *, axis: int, dtype=np.float32) -> Case:
  """SPLIT of an input of `shape` into 4 equal pieces along `axis`.

  The outputs are compared stacked: output k is row k of a (4, ...) array.
  """
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  piece = shape[axis] // 4
  sizes = (piece,) * 4
  piece_shape = (piece, shape[1]) if axis == 0 else (shape[0], piece)
  stacked = lambda outs: np.stack([np.asarray(o) for o in outs])

  def subset(host):
    # A few positions of each piece along the axis (the same in every piece), a few of the other.
    inside, other = edge(piece, 2), edge(shape[1 - axis], 2)
    along = np.concatenate([k * piece + inside for k in range(4)])
    chosen = (along, other) if axis == 0 else (other, along)
    pieces = reference.split(take(host[0], *chosen), axis=axis, split_sizes=(len(inside),) * 4)
    out_chosen = (every(4), inside, other) if axis == 0 else (every(4), other, inside)
    return np.stack(pieces), lambda a: take(a, *out_chosen)

  def peers(env, host):
    impls = [
      dataclasses.replace(
        jax_impl(env, "jnp.split", "jax", jax.jit(lambda x: jnp.split(x, 4, axis=axis)), x),
        to_numpy=stacked,
      )
    ]
    if env.torch:
      tx = env.torch_from_jax(x)
      # torch.split returns views; each piece is cloned so that it is copied, as SPLIT's are.
      impls.append(
        dataclasses.replace(
          torch_impl(
            env,
            "torch.split + clone",
            lambda: [p.clone() for p in env.torch.split(tx, piece, dim=axis)],
            piece_shape,
          ),
          to_numpy=lambda outs: np.stack([o.cpu().numpy() for o in outs]),
        )
      )
    if env.ort:
      impls.append(_ort_split(env, host[0], axis, sizes, piece_shape))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"({shape[0]},{shape[1]}) ax{axis} /4",
    description=f"SPLIT of {shape} along axis {axis} into 4 x {piece_shape}",
    bytes_moved=2 * math.prod(shape) * np.dtype(dtype).itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: dml.split(x, axis=axis, split_sizes=sizes)),
    expected=lambda host: np.stack(np.split(host[0], 4, axis=axis)),
    subset=subset,
    peers=peers,
    notes=["the outputs are compared stacked, output k as row k"],
  )


def _ort_split(env: Env, x: np.ndarray, axis: int, sizes, piece_shape) -> Impl:
  """ONNX Runtime's Split (opset 13: the sizes as an int64 input), one output per piece."""
  helper = env.onnx.helper
  names = [f"out{k}" for k in range(len(sizes))]
  info = lambda name, dtype, shape: helper.make_tensor_value_info(
    name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), list(shape)
  )
  node = helper.make_node("Split", ["x", "split"], names, axis=axis)
  graph = helper.make_graph(
    [node],
    "bench_Split",
    [info("x", x.dtype, x.shape), info("split", np.int64, (len(sizes),))],
    [info(name, x.dtype, piece_shape) for name in names],
  )
  model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
  model.ir_version = 7
  options = env.ort.SessionOptions()
  options.intra_op_num_threads = 2
  options.inter_op_num_threads = 1
  options.log_severity_level = 3
  session = env.ort.InferenceSession(
    model.SerializeToString(), options, providers=["CPUExecutionProvider"]
  )
  feeds = {"x": np.ascontiguousarray(x), "split": np.array(sizes, np.int64)}
  return Impl("ort Split", "ort", lambda: session.run(names, feeds), lambda _: None, np.stack)


_PAD_MODES = ("CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC", "WRAP")
_NP_PAD_MODES = {
  "CONSTANT": "constant",
  "EDGE": "edge",
  "REFLECTION": "reflect",
  "SYMMETRIC": "symmetric",
  "WRAP": "wrap",
}
# torch.nn.functional.pad has no symmetric mode; ONNX Pad (opset 13) has constant, reflect, edge.
_TORCH_PAD_MODES = {
  "CONSTANT": "constant",
  "EDGE": "replicate",
  "REFLECTION": "reflect",
  "WRAP": "circular",
}
_ORT_PAD_MODES = {"CONSTANT": "constant", "EDGE": "edge", "REFLECTION": "reflect"}


@case(
  "PADDING",
  sizes={"large": (64, 64, 512, 512), "small": (8, 16, 256, 256), "tiny": (8, 2, 8, 7)},
  variants={"padding_reflection": dict(mode="REFLECTION", op="PADDING")},
  shard=lambda **_: {"batch": (0,), "axis": (2,)},
)
@case(
  "PADDING1",
  sizes={"large": (64, 64, 512, 512), "small": (8, 16, 256, 256), "tiny": (8, 2, 8, 7)},
  variants={f"padding1_{mode.lower()}": dict(mode=mode) for mode in _PAD_MODES},
  shard=lambda **_: {"batch": (0,), "axis": (2,)},
)
def padding_case(
  shape: tuple[int, int, int, int], rng, *, mode: str, op: str = "PADDING1", pad: int = 3
) -> Case:
  """PADDING1 (or PADDING) of a float32 NCHW input, `pad` elements on each spatial side."""
  dtype = np.float32
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  start = end = (0, 0, pad, pad)
  widths = tuple(zip(start, end, strict=True))
  out_shape = tuple(s + 2 * p for s, p in zip(shape, start, strict=True))
  itemsize = np.dtype(dtype).itemsize
  function = dml.padding1 if op == "PADDING1" else dml.padding
  oracle = reference.padding1 if op == "PADDING1" else reference.padding
  kwargs = dict(padding_mode=mode, start_padding=start, end_padding=end)

  def subset(host):
    # Two planes, and the first and last 8 rows and columns of each: with pads below 8, the
    # padded crop is the same rows and columns of the padded whole, in every mode.
    k = 8
    planes = [edge(shape[0], 1), edge(shape[1], 1)]
    chosen = planes + [edge(n, k) for n in shape[2:]]

    def rows(n: int) -> np.ndarray:
      m = n + 2 * pad
      return (
        np.arange(m)
        if n <= 2 * k
        else np.concatenate([np.arange(k + pad), np.arange(m - k - pad, m)])
      )

    pick = lambda a: take(a, *planes, rows(shape[2]), rows(shape[3]))
    return oracle(take(host[0], *chosen), **kwargs), pick

  pad_jnp = lambda x: jnp.pad(x, widths, mode=_NP_PAD_MODES[mode])

  def peers(env, host):
    impls = [jax_impl(env, "jnp.pad", "jax", jax.jit(pad_jnp), x)]
    if env.torch and mode in _TORCH_PAD_MODES:
      tx = env.torch_from_jax(x)
      pads = (pad, pad, pad, pad)  # last dimension first
      fn = lambda: env.torch.nn.functional.pad(tx, pads, mode=_TORCH_PAD_MODES[mode])
      impls.append(torch_impl(env, "torch.nn.functional.pad", fn, out_shape))
    if env.ort and mode in _ORT_PAD_MODES:
      feeds = {"x": host[0], "pads": np.array(start + end, np.int64)}
      model = onnx_model(
        env, "Pad", list(feeds.items()), np.empty(out_shape, dtype), mode=_ORT_PAD_MODES[mode]
      )
      impls.append(ort_impl(env, "Pad", model, feeds, out_shape))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{_tuple(shape)} +{pad} {mode.lower()}",
    description=f"{op} {mode} of {shape}, {pad} on each spatial side -> {out_shape}",
    bytes_moved=(math.prod(shape) + math.prod(out_shape)) * itemsize,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: function(x, **kwargs)),
    expected=lambda host: np.pad(host[0], widths, mode=_NP_PAD_MODES[mode]),
    subset=subset,
    peers=peers,
    jnp_peer=("jnp.pad", pad_jnp),
  )


@case(
  "SLICE",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (9, 12)},
  variants={"slice_rows": dict(strides=(2, 1)), "slice_columns": dict(strides=(1, 2))},
)
def slice_case(shape: tuple[int, int], rng, *, strides: tuple[int, int], dtype=np.float32) -> Case:
  """SLICE of an input of `shape` from (1, 2), every `strides` element, to the last one read."""
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  offsets = (1, 2)
  sizes = tuple((n - 1 - o) // t + 1 for n, o, t in zip(shape, offsets, strides, strict=True))
  ends = tuple(o + (s - 1) * t + 1 for o, s, t in zip(offsets, sizes, strides, strict=True))
  attributes = dict(offsets=offsets, sizes=sizes, strides=strides)
  index = tuple(np.s_[o:e:t] for o, e, t in zip(offsets, ends, strides, strict=True))
  itemsize = np.dtype(dtype).itemsize
  walk_bytes, walk_notes = _walk_bytes(math.prod(sizes), strides[-1], itemsize)

  def subset(host):
    # A few output positions of each dimension, and the input positions they read.
    chosen = [edge(n, 2) for n in sizes]
    read = [o + t * c for o, t, c in zip(offsets, strides, chosen, strict=True)]
    ones = (1,) * len(shape)
    window = take(host[0], *read)
    picked = reference.slice(window, offsets=(0, 0), sizes=window.shape, strides=ones)
    return picked, lambda a: take(a, *chosen)

  def peers(env, host):
    impls = [jax_impl(env, "jnp x[a:b:s]", "jax", jax.jit(lambda x: x[index]), x)]
    if env.torch:
      tx = env.torch_from_jax(x)
      impls.append(torch_impl(env, "torch x[a:b:s] (copied)", lambda: tx[index].clone(), sizes))
    if env.ort:
      impls.append(ort_slice_impl(env, host[0], offsets, ends, strides, sizes))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{_tuple(shape)} s{_tuple(strides)}",
    description=f"SLICE of {shape} from {offsets} by {strides} -> {sizes}",
    bytes_moved=walk_bytes,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: dml.slice(x, **attributes)),
    expected=lambda host: host[0][index],
    subset=subset,
    peers=peers,
    notes=walk_notes,
  )


@case(
  "SLICE1",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (9, 12)},
  variants={"slice1_reversed": dict(strides=(-1, 1)), "slice1_strided": dict(strides=(1, -2))},
)
@case(
  "SLICE1",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (16, 24)},
  variants={"slice1_reversed_columns": dict(strides=(1, -1), offsets=(0, 0))},
  shard=lambda **_: {"batch": (0,), "axis": (1,)},
)
def slice1_case(
  shape: tuple[int, int],
  rng,
  *,
  strides: tuple[int, int],
  offsets: tuple[int, int] = (1, 1),
  dtype=np.float32,
) -> Case:
  """SLICE1 of the window of `shape` from `offsets` to its end (by default less its first row and
  column), walked by `strides`."""
  host = [random_data(rng, shape, dtype)]
  (x,) = device_put(host)
  windows = tuple(n - o for n, o in zip(shape, offsets, strict=True))
  sizes = tuple((w - 1) // abs(t) + 1 for w, t in zip(windows, strides, strict=True))
  attributes = dict(
    input_window_offsets=offsets, input_window_sizes=windows, input_window_strides=strides
  )
  starts = tuple(
    o if t > 0 else o + w - 1 for o, w, t in zip(offsets, windows, strides, strict=True)
  )
  # As Python slices: a negative walk stops before offset - 1 (from offset 0: runs to the start).
  index = tuple(
    np.s_[b::t] if t > 0 else np.s_[b : o - 1 if o else None : t]
    for b, o, t in zip(starts, offsets, strides, strict=True)
  )
  itemsize = np.dtype(dtype).itemsize
  walk_bytes, walk_notes = _walk_bytes(math.prod(sizes), strides[-1], itemsize)

  def subset(host):
    chosen = [edge(n, 2) for n in sizes]
    read = [b + t * c for b, t, c in zip(starts, strides, chosen, strict=True)]
    window = take(host[0], *read)
    picked = reference.slice1(
      window,
      input_window_offsets=(0, 0),
      input_window_sizes=window.shape,
      input_window_strides=(1, 1),
    )
    return picked, lambda a: take(a, *chosen)

  walk = lambda x: x[index]

  def peers(env, host):
    impls = [jax_impl(env, "jnp x[a:b:s]", "jax", jax.jit(walk), x)]
    if env.torch:
      tx = env.torch_from_jax(x)
      flips = [d for d, t in enumerate(strides) if t < 0]
      forward = tuple(
        np.s_[b - (n - 1) * -t : b + 1 : -t] if t < 0 else np.s_[b::t]
        for b, n, t in zip(starts, sizes, strides, strict=True)
      )
      impls.append(torch_impl(env, "torch.flip(x[a:b:s])", lambda: tx[forward].flip(flips), sizes))
    if env.ort:
      stops = tuple(
        2**62 if t > 0 else o - 1 if o else -(2**62) for o, t in zip(offsets, strides, strict=True)
      )
      impls.append(ort_slice_impl(env, host[0], starts, stops, strides, sizes))
    return impls

  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{_tuple(shape)} s{_tuple(strides)}",
    description=f"SLICE1 of {shape}, windows from {offsets} of {windows} by {strides} -> {sizes}",
    bytes_moved=walk_bytes,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: dml.slice1(x, **attributes)),
    expected=lambda host: host[0][index],
    subset=subset,
    peers=peers,
    notes=walk_notes,
    jnp_peer=("jnp x[a:b:s]", walk),
  )


def _walk_bytes(kept: int, step: int, itemsize: int) -> tuple[int, list[str]]:
  """The fewest bytes DRAM must move to walk `kept` elements by `step` along the last axis.

  DRAM moves 32-byte sectors. A step of more than one element still fetches every sector of
  the rows it visits, up to one sector an element, so the reads are counted in sectors and the
  writes (contiguous) in elements. Returns the bytes and a note that gives the element count's
  figure beside it.
  """
  written = kept * itemsize
  per_sector = max(1, 32 // itemsize)  # elements a sector holds
  reads = min(abs(step), per_sector)  # sectors' bytes over the bytes kept
  if reads == 1:
    return 2 * written, []
  bound = 2 / (1 + reads)
  return (1 + reads) * written, [
    f"bytes: a step of {step} along the last axis fetches every 32-byte sector of the rows it"
    f" visits, {reads}x the bytes it keeps, so the reads are counted in sectors; counted in"
    f" elements, the ceiling is {bound:.2f} times the one shown"
  ]


def _rows_of_permutations(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
  """(rows, cols) int32: each row a random permutation of range(cols) (distinct targets)."""
  return rng.permuted(np.broadcast_to(np.arange(cols, dtype=np.int32), (rows, cols)), axis=1)


@case(
  "SCATTER_ELEMENTS",
  sizes={"large": (8192, 8192), "small": (2048, 2048), "tiny": (16, 24)},
  variants={"scatter_elements_axis1": {}},
  shard=lambda: {"batch": (0, 0, 0), "axis": (1, 1, 1)},
)
def scatter_elements_case(shape: tuple[int, int], rng, *, dtype=np.float32) -> Case:
  """SCATTER_ELEMENTS along axis 1 of `shape`: indices of `shape`, each row a random
  permutation (every target distinct), updates of `shape`."""
  rows, cols = shape
  host = [
    random_data(rng, shape, dtype),
    _rows_of_permutations(rng, rows, cols),
    random_data(rng, shape, dtype),
  ]
  x, indices, updates = device_put(host)
  itemsize = np.dtype(dtype).itemsize

  def expected(host):
    out = host[0].copy()
    np.put_along_axis(out, host[1], host[2], axis=1)
    return out

  def subset(host):
    pick = lambda a: take(a, edge(rows, 1), every(a.shape[1]))  # a few whole rows
    return reference.scatter_elements(*map(pick, host), axis=1), pick

  def set_rows(x, i, u, **set_options):
    return x.at[jnp.arange(rows)[:, None], i].set(u, **set_options)

  def peers(env, host):
    impls = [
      jax_impl(env, "x.at[r, i].set", "jax", jax.jit(set_rows), *host_inputs),
      jax_impl(
        env,
        "x.at[r, i].set (unique)",
        "jax",
        jax.jit(lambda x, i, u: set_rows(x, i, u, unique_indices=True)),
        *host_inputs,
      ),
    ]
    if env.torch:
      tx, tu = env.torch_from_jax(x), env.torch_from_jax(updates)
      ti = env.torch_from_numpy(host[1].astype(np.int64))
      impls.append(
        torch_impl(
          env,
          "torch.scatter",
          lambda: env.torch.scatter(tx, 1, ti, tu),
          shape,
          note="int64 indices (torch takes no int32)",
        )
      )
    if env.ort:
      feeds = {"data": host[0], "indices": host[1], "updates": host[2]}
      model = onnx_model(env, "ScatterElements", list(feeds.items()), host[0], axis=1)
      impls.append(ort_impl(env, "ScatterElements", model, feeds, shape, note="int32 indices"))
    return impls

  host_inputs = (x, indices, updates)
  return Case(
    dtype=np.dtype(dtype).name,
    shape=f"{_tuple(shape)} idx i32 ax1",
    description=f"SCATTER_ELEMENTS along axis 1 of {_SHORT[np.dtype(dtype).name]} {shape}, int32"
    f" indices {shape} (each row a permutation: distinct targets), updates {shape}",
    bytes_moved=3 * math.prod(shape) * itemsize + math.prod(shape) * 4,
    host=host,
    inputs=host_inputs,
    dml=jax.jit(lambda x, i, u: dml.scatter_elements(x, i, u, axis=1)),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("x.at[r, i].set", set_rows),
    notes=[
      "bytes: input read, output written, updates and indices read (the input is not donated,"
      " so every implementation copies it)"
    ],
  )


@case(
  "SCATTER_ND",
  sizes={
    "large": ((1 << 20, 256), 65536),
    "small": ((1 << 16, 256), 16384),
    "tiny": ((16, 8), 6),
  },
  variants={"scatter_nd": {}},
  shard=lambda: {"batch": (1, None, 1), "axis": (0, None, None)},
)
def scatter_nd_case(sizes: tuple[tuple[int, int], int], rng) -> Case:
  """SCATTER_ND of `count` rows into an input of `shape`: indices (count, 1) int32, distinct
  random rows; updates (count, row)."""
  shape, count = sizes
  table, row = shape
  host = [
    random_data(rng, shape, np.float32),
    rng.choice(table, count, replace=False).astype(np.int32)[:, None],
    random_data(rng, (count, row), np.float32),
  ]
  x, indices, updates = device_put(host)

  def expected(host):
    out = host[0].copy()
    out[host[1][:, 0]] = host[2]
    return out

  def subset(host):
    chosen = edge(count, 16)
    targets = host[1][chosen, 0]
    local = np.arange(len(chosen), dtype=np.int32)[:, None]  # the same rows, renumbered
    picked = reference.scatter_nd(host[0][targets], local, host[2][chosen])
    return picked, lambda a: a[targets]

  set_rows = lambda x, i, u: x.at[i[:, 0]].set(u)

  def peers(env, host):
    impls = [
      jax_impl(env, "x.at[i].set", "jax", jax.jit(set_rows), *host_inputs),
      jax_impl(
        env,
        "x.at[i].set (unique)",
        "jax",
        jax.jit(lambda x, i, u: x.at[i[:, 0]].set(u, unique_indices=True)),
        *host_inputs,
      ),
    ]
    if env.torch:
      tx, tu = env.torch_from_jax(x), env.torch_from_jax(updates)
      ti = env.torch_from_numpy(host[1][:, 0].astype(np.int64))
      note = "int64 indices (torch takes no int32)"
      impls.append(
        torch_impl(env, "torch index_copy", lambda: tx.index_copy(0, ti, tu), shape, note=note)
      )
      impls.append(
        torch_impl(env, "torch index_put", lambda: tx.index_put((ti,), tu), shape, note=note)
      )
    if env.ort:
      feeds = {"data": host[0], "indices": host[1].astype(np.int64), "updates": host[2]}
      model = onnx_model(env, "ScatterND", list(feeds.items()), host[0])
      impls.append(
        ort_impl(
          env,
          "ScatterND",
          model,
          feeds,
          shape,
          note="int64 indices (ONNX ScatterND takes no int32)",
        )
      )
    return impls

  host_inputs = (x, indices, updates)
  return Case(
    dtype="float32",
    shape=f"{_tuple(shape)} idx{_tuple((count, 1))}",
    description=f"SCATTER_ND of {count} distinct rows of {row} (int32 indices ({count}, 1)) into"
    f" f32 {shape}",
    bytes_moved=2 * math.prod(shape) * 4 + count * row * 4 + count * 4,
    host=host,
    inputs=host_inputs,
    dml=jax.jit(lambda x, i, u: dml.scatter_nd(x, i, u)),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("x.at[i].set", set_rows),
    notes=[
      "bytes: the input copied (read and written: it is not donated), updates and indices read"
    ],
  )


@case(
  "ONE_HOT",
  sizes={"large": (1 << 20, 1024), "small": (1 << 14, 1024), "tiny": (40, 16)},
  variants={"one_hot": dict(axis=0), "one_hot_last": dict(axis=1)},
  shard=lambda axis: {"batch": (1 - axis, None)},
)
def one_hot_case(sizes: tuple[int, int], rng, *, axis: int) -> Case:
  """ONE_HOT of `count` random in-range int32 indices into `depth`, float32 values [0, 1]:
  indices (1, count) along axis 0, output (depth, count); or indices (count, 1) along axis 1,
  output (count, depth), the layout jax.nn.one_hot and torch give by default."""
  count, depth = sizes
  index_shape = (1, count) if axis == 0 else (count, 1)
  out_shape = (depth, count) if axis == 0 else (count, depth)
  values_host = np.array([[0, 1]], np.float32)
  host = [rng.integers(0, depth, index_shape, dtype=np.int32), values_host]
  indices, values = device_put(host)

  def expected(host):
    positions = np.arange(depth, dtype=np.int32).reshape((depth, 1) if axis == 0 else (1, depth))
    return (positions == host[0]).astype(np.float32)

  def subset(host):
    chosen = edge(count, 16)  # a few whole sequences
    if axis == 0:
      pick = lambda a: take(a, every(a.shape[0]), chosen)
      return reference.one_hot(host[0][:, chosen], host[1], axis=0, depth=depth), pick
    pick = lambda a: take(a, chosen, every(a.shape[1]))
    return reference.one_hot(host[0][chosen], host[1], axis=1, depth=depth), pick

  def jnp_one_hot(indices, values):  # values [0, 1]: jax.nn.one_hot's own
    return jax.nn.one_hot(indices.reshape(-1), depth, dtype=jnp.float32, axis=axis)

  def peers(env, host):
    impls = [jax_impl(env, "jax.nn.one_hot", "jax", jax.jit(jnp_one_hot), indices, values)]
    if env.torch:
      torch = env.torch
      ti = env.torch_from_numpy(host[0].reshape(-1).astype(np.int64))
      functional = torch.nn.functional
      if axis == 0:  # torch's class axis is the last: transposed into DirectML's layout
        fn = lambda: functional.one_hot(ti, depth).to(torch.float32).t().contiguous()
        note = "int64 indices; int64 one-hot, then float32 and transposed"
      else:
        fn = lambda: functional.one_hot(ti, depth).to(torch.float32)
        note = "int64 indices; int64 one-hot, then float32"
      impls.append(torch_impl(env, "torch F.one_hot", fn, out_shape, note=note))
      target = ti.view(index_shape)
      impls.append(
        torch_impl(
          env,
          "torch zeros.scatter_",
          lambda: torch.zeros(out_shape, device=env.torch_device).scatter_(axis, target, 1.0),
          out_shape,
          note="int64 indices",
        )
      )
    if env.ort:
      feeds = {
        "indices": host[0].reshape(-1),
        "depth": np.array([depth], np.int32),
        "values": host[1].reshape(-1),
      }
      model = onnx_model(
        env, "OneHot", list(feeds.items()), np.empty(out_shape, np.float32), axis=axis
      )
      impls.append(ort_impl(env, "OneHot", model, feeds, out_shape, note="1-D indices"))
    return impls

  return Case(
    dtype="float32",
    shape=f"idx{_tuple(index_shape)} D{depth} ax{axis}",
    description=f"ONE_HOT of int32 indices {index_shape} into depth {depth} along axis {axis},"
    f" float32 values [0, 1] -> {out_shape}",
    bytes_moved=math.prod(out_shape) * 4 + count * 4,
    host=host,
    inputs=(indices, values),
    dml=jax.jit(lambda i, v: dml.one_hot(i, v, axis=axis, depth=depth)),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("jax.nn.one_hot", jnp_one_hot),
  )


# -- ARGMIN, ARGMAX, TOP_K, TOP_K1 ----------------------------------------------------------


def _index_impl(env: Env, name: str, kind: str, fn, *args, note: str = "") -> Impl:
  """A jax peer whose index output has another integer type than dml_jax's UINT32: converted
  to it outside the timing, for the check."""
  return Impl(
    name,
    kind,
    lambda: fn(*args),
    jax.block_until_ready,
    lambda out: np.asarray(out).astype(np.uint32),
    pipelined=env.pipelined,
    note=note,
    kernel_timer=env.kernel_timer,
  )


_ARG_SIZES = {"large": (8192, 8192), "small": (2048, 2048), "tiny": (8, 16)}


@case(
  "ARGMIN",
  sizes=_ARG_SIZES,
  variants={"argmin_axis0": dict(axis=0, op="argmin")},
  shard=lambda axis, op: {"batch": (1 - axis,)},
)
@case(
  "ARGMAX",
  sizes=_ARG_SIZES,
  variants={"argmax_axis1": dict(axis=1, op="argmax")},
  shard=lambda axis, op: {"batch": (1 - axis,)},
)
def arg_min_max_case(shape: tuple[int, int], rng, *, axis: int, op: str) -> Case:
  """ARGMAX (or ARGMIN) of a float32 input of `shape` along `axis`: one position per lane,
  UINT32, the reduced axis kept with size 1."""
  host = [random_data(rng, shape, np.float32)]
  (x,) = device_put(host)
  out_shape = (1, shape[1]) if axis == 0 else (shape[0], 1)
  function, numpy_pick = (dml.argmax, np.argmax) if op == "argmax" else (dml.argmin, np.argmin)
  oracle = getattr(reference, op)

  def expected(host):  # no NaN in the data: NumPy's rule is DirectML's INCREASING
    return numpy_pick(host[0], axis=axis, keepdims=True).astype(np.uint32)

  def subset(host):
    lanes = edge(shape[1 - axis], 4)
    pick = (lambda a: take(a, every(a.shape[0]), lanes)) if axis == 0 else (lambda a: a[lanes])
    return oracle(pick(host[0]), axes=(axis,)), pick

  jnp_pick = jnp.argmax if op == "argmax" else jnp.argmin
  jnp_form = lambda x: jnp_pick(x, axis=axis, keepdims=True)

  def peers(env, host):
    impls = [_index_impl(env, f"jnp.{op}", "jax", jax.jit(jnp_form), x, note="int32 output")]
    if env.torch:
      torch_pick = env.torch.argmax if op == "argmax" else env.torch.argmin
      t = env.torch_from_numpy(host[0])
      impls.append(
        Impl(
          f"torch.{op}",
          "torch",
          lambda: torch_pick(t, dim=axis, keepdim=True),
          env.torch_sync,
          lambda out: out.cpu().numpy().astype(np.uint32).reshape(out_shape),
          pipelined=env.torch_device == "cuda",
          note="int64 output",
          kernel_timer=env.kernel_timer,
        )
      )
    if env.ort:
      feeds = {"x": host[0]}
      onnx_op = "ArgMax" if op == "argmax" else "ArgMin"
      model = onnx_model(
        env, onnx_op, list(feeds.items()), np.empty(out_shape, np.int64), axis=axis, keepdims=1
      )
      session_impl = ort_impl(env, onnx_op, model, feeds, out_shape, note="int64 output")
      session_impl.to_numpy = lambda out: out.astype(np.uint32).reshape(out_shape)
      impls.append(session_impl)
    return impls

  return Case(
    dtype="float32",
    shape=f"{_tuple(shape)} ax{axis}",
    description=f"{op.upper()} of a float32 {shape} input along axis {axis} -> UINT32 {out_shape}",
    bytes_moved=math.prod(shape) * 4 + math.prod(out_shape) * 4,
    host=host,
    inputs=(x,),
    dml=jax.jit(lambda x: function(x, axes=(axis,))),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=(f"jnp.{op}", jnp_form),
  )


_TOP_K_SIZES = {"large": (256, 131072, 64), "small": (64, 16384, 16), "tiny": (8, 64, 4)}


@case(
  "TOP_K1",
  sizes=_TOP_K_SIZES,
  variants={"top_k1_increasing": dict(op="top_k1")},
  shard=lambda op: {"batch": (0,)},
)
@case(
  "TOP_K",
  sizes=_TOP_K_SIZES,
  variants={"top_k": dict(op="top_k")},
  shard=lambda op: {"batch": (0,)},
)
def top_k_case(sizes: tuple[int, int, int], rng, *, op: str) -> Case:
  """TOP_K (largest first) or TOP_K1 INCREASING (smallest first) of `k` values per row of a
  float32 (rows, cols) input along axis 1, like a sampler over a vocabulary. Each row is a
  permutation of 0 .. cols - 1 (distinct values: peers that do not order ties agree)."""
  rows, cols, k = sizes
  host = [rng.permuted(np.tile(np.arange(cols, dtype=np.float32), (rows, 1)), axis=1)]
  (x,) = device_put(host)
  out_shape = (rows, k)
  descending = op == "top_k"
  if descending:
    dml_form = lambda x: dml.top_k(x, axis=1, k=k)
  else:
    dml_form = lambda x: dml.top_k1(x, axis=1, k=k, axis_direction="INCREASING")

  def expected(host):
    order = np.argsort(-host[0] if descending else host[0], axis=1, kind="stable")[:, :k]
    return stacked_outputs(np.take_along_axis(host[0], order, axis=1), order)

  def subset(host):
    lanes = edge(rows, 2)
    want = reference.top_k1(
      host[0][lanes], axis=1, k=k, axis_direction="DECREASING" if descending else "INCREASING"
    )
    return stacked_outputs(*want), lambda a: a[:, lanes]

  def lax_form(x):
    values, indices = jax.lax.top_k(x if descending else -x, k)
    return (values if descending else -values), indices

  def peers(env, host):
    jitted = jax.jit(lax_form)
    impls = [
      Impl(
        "jax.lax.top_k" if descending else "jax.lax.top_k(-x)",
        "jax",
        lambda: jitted(x),
        jax.block_until_ready,
        lambda out: stacked_outputs(*out),
        pipelined=env.pipelined,
        note="int32 indices",
        kernel_timer=env.kernel_timer,
      )
    ]
    if env.torch:
      t = env.torch_from_numpy(host[0])
      impls.append(
        Impl(
          "torch.topk",
          "torch",
          lambda: env.torch.topk(t, k, dim=1, largest=descending, sorted=True),
          env.torch_sync,
          lambda out: stacked_outputs(out[0].cpu().numpy(), out[1].cpu().numpy()),
          pipelined=env.torch_device == "cuda",
          note="int64 indices",
          kernel_timer=env.kernel_timer,
        )
      )
    if env.ort:
      feeds = {"x": host[0], "k": np.array([k], np.int64)}
      helper = env.onnx.helper
      info = lambda name, dtype, shape: helper.make_tensor_value_info(
        name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), list(shape)
      )
      node = helper.make_node(
        "TopK", ["x", "k"], ["values", "indices"], axis=1, largest=int(descending), sorted=1
      )
      graph = helper.make_graph(
        [node],
        "bench_TopK",
        [info("x", np.float32, host[0].shape), info("k", np.int64, (1,))],
        [info("values", np.float32, out_shape), info("indices", np.int64, out_shape)],
      )
      model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
      model.ir_version = 7
      options = env.ort.SessionOptions()
      options.intra_op_num_threads = 2
      options.inter_op_num_threads = 1
      options.log_severity_level = 3
      session = env.ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
      )
      impls.append(
        Impl(
          "ort TopK",
          "ort",
          lambda: session.run(["values", "indices"], feeds),
          lambda _: None,
          lambda out: stacked_outputs(*out),
          note="int64 indices",
        )
      )
    return impls

  return Case(
    dtype="float32",
    shape=f"{_tuple((rows, cols))} k{k}",
    description=f"{op.upper()} {'largest' if descending else 'smallest'} {k} of each row of a"
    f" float32 ({rows}, {cols}) input -> values and UINT32 indices {out_shape}",
    bytes_moved=rows * cols * 4 + 2 * rows * k * 4,
    host=host,
    inputs=(x,),
    dml=jax.jit(dml_form),
    expected=expected,
    subset=subset,
    peers=peers,
    jnp_peer=("jax.lax.top_k", lax_form),
  )


def device_put(host: list[np.ndarray]) -> tuple[jax.Array, ...]:
  return tuple(jax.block_until_ready(jax.device_put(h)) for h in host)


def _bytes(n: float, base: int = 1000) -> str:
  units = ("B", "kB", "MB", "GB") if base == 1000 else ("B", "KiB", "MiB", "GiB")
  for unit in units:
    if n < base or unit == units[-1]:
      return f"{n:.4g} {unit}"
    n /= base
  raise AssertionError


def _tuple(t) -> str:
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
  shape = f"{_bytes(n * 4, 1024)} f32"
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
    impls = case.peers(env, host)
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


def free_memory(env: Env) -> None:
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
      f"jax {_bytes(stats['peak_bytes_in_use'], 1024)} in use at most"
      + (f" of {_bytes(stats['bytes_limit'], 1024)}" if "bytes_limit" in stats else "")
    )
  if env.torch_device == "cuda":
    parts.append(f"torch {_bytes(env.torch.cuda.max_memory_allocated(), 1024)} allocated at most")
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

    def to_numpy(out: jax.Array, kind: str = kind) -> np.ndarray:
      outputs.setdefault(kind, (out.sharding, out.ndim))
      return np.asarray(out)

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
    f" {_version('jaxlib')}  numpy {np.__version__}  dml_jax {dml.__version__}",
    f"# torch: {env.torch_note}",
    f"# onnxruntime: {env.ort_note}",
    f"# load average {_load()}",
    f"# size {size}  repeats {args.repeats} (median)  target {PRESETS[size].target_s * 1e3:g} ms"
    f" per repeat  {'pipelined calls' if env.pipelined else 'each call waited for'}"
    f"  XLA_PYTHON_CLIENT_PREALLOCATE={os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE')}"
    + "".join(
      f"  {k}={v}"
      for k, v in sorted(os.environ.items())
      if k.startswith(("MALLOC_", "XLA_FLAGS", "OMP_NUM_THREADS"))
    ),
  ]


def _load() -> str:
  try:
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" (on {os.cpu_count()} cpus)"
  except OSError:
    return "unknown"


def _version(module: str) -> str:
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
    _SHORT.get(row.dtype, row.dtype),
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
  print(f"\nload average at the end: {_load()}")
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
  free_memory(env)
  ceiling_row = max((r for r in rows if r.timing and not r.failed), key=Row.gbps, default=None)
  ceiling = ceiling_row.gbps() if ceiling_row else None
  kernel_ceiling = max((r.kernel_gbps() or 0 for r in rows if not r.failed), default=0) or None
  print(
    f"# copy ceiling: {ceiling or float('nan'):.1f} GB/s"
    f" ({ceiling_row.impl if ceiling_row else 'no copy timed'}; bytes read + written)"
    + (f"; kernels only: {kernel_ceiling:.1f} GB/s" if kernel_ceiling else ""),
    flush=True,
  )

  cases_json = []
  for i, name in enumerate(names):
    registered = CASES[name]
    case = registered.build(size, np.random.default_rng(1000 + i))
    print(
      f"# {name}: {case.description}; {_bytes(case.bytes_moved)} to move at least"
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
    free_memory(env)

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
          "load_average_end": _load(),
          "cases": cases_json,
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
          "load_average_end": _load(),
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
      f"# {name}: {case.description}; {_bytes(case.bytes_moved)} to move at least; sharded "
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
    free_memory(env)
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
