"""The one place that chooses between an operator's kernels and its lax lowering.

Each operator declares its kernels as data, at the bottom of its module (`KERNELS`, a tuple of
`Kernel`): for each kernel, the platform it runs on, when it applies (a predicate on static
shapes, dtypes and the operator's fields; the kernel module's `applies`, which also asks
`availability` what this process can run), its call, its frozen config, and the sharding
roles of its operands' dimensions (`partitioning.Roles`). This module only chooses: for each
platform, the first kernel of the table that applies, passes the `placement.one_device` gate
where it has one, and whose native code is built (`native_cpu`, asked last, so that a kernel
is built only when a call will use it); and it wraps every kernel it chooses with its
partitioning, so that it runs per shard (`partitioning.partitioned`). `lax.platform_dependent`
then picks the kernel on its platform and the operator's lax lowering (`fallback`) on every
other; every gradient is the fallback's, which gives the same bits.

Which lax form a platform runs where no kernel applies (JOIN's 1-D views on the CPU,
REVERSE_SUBSEQUENCES's run-time choice of whole rows, SCATTER_ND's pull) is the operator's
business, in its module, as are the fallbacks themselves.

A kernel that needs whole an axis that jnp's formulation keeps sharded (the row gathers,
SCATTER_ND's pull, SLICE's walk, SPACE_TO_DEPTH's rows, SPLIT and JOIN on the CPU) says so
with `one_device`: it runs only where the platform has one device, since the sharding is not
known when an operator is traced, and over several devices the partitioner would gather that
axis where XLA moves less with the lax form (a row gather from a table sharded along its
rows: 2.07 ms against jnp's 0.32 on two H200s).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import jax
import jax.numpy as jnp  # noqa: F401 (the examples use it)
import numpy as np  # noqa: F401 (the examples use it)
from jax import lax

from dml_jax._src import placement
from dml_jax._src.kernels import native_cpu
from dml_jax._src.kernels.partitioning import Roles, partitioned

Out = TypeVar("Out")  # a kernel's result: an array, or a tuple of them (SPLIT)


@dataclasses.dataclass(frozen=True)
class Kernel:
  """One entry of an operator's kernel table.

  `fields` below are what the operator passes for a call (its axis, repeats, ...: static), and
  `operands` the call's operands (arrays, or anything with a shape and a dtype).

  Attributes:
    name: the kernel's module (`dml_jax._src.kernels.<name>`).
    platform: where it runs: "cuda" or "cpu".
    applies: `applies(fields, config, *operands)`: whether the kernel takes this call.
    roles: `roles(fields, config, *operands)`: its dimensions' sharding roles for this call.
    call: `call(fields, config, interpret, *shards)`: the callable to run on operands of the
      shards' shapes (`jax.ShapeDtypeStruct`s; the whole operands on one device). `interpret`
      runs a Pallas kernel in Pallas's interpreter (the tests' way, on the CPU).
    config: the kernel's frozen config; None: its module's DEFAULT, read at each call (tests
      and benchmarks replace it).
    one_device: it needs whole an axis that jnp's formulation keeps sharded, so it runs only
      where the platform has one device (`placement.one_device`).
    native: the source file of `native_cpu.KERNELS` it needs built and loaded, or None.
    probe: a last check of this machine, after the build (the transpose's AVX2), or None.

  Examples:
    >>> flip = Kernel(
    ...   "flip", "cpu",
    ...   applies=lambda fields, config, x: x.ndim == 2,
    ...   roles=lambda fields, config, x: Roles("b n -> b n", whole=("n",)),
    ...   call=lambda fields, config, interpret, x: lambda x: x[:, ::-1],
    ... )
    >>> lower((flip,), None, lambda x: x[:, ::-1], np.arange(4.0).reshape(2, 2)).tolist()
    [[1.0, 0.0], [3.0, 2.0]]
  """

  name: str
  platform: str
  applies: Callable[..., bool]
  roles: Callable[..., Roles]
  call: Callable[..., Callable[..., Any]]
  config: Any = None
  one_device: bool = False
  native: str | None = None
  probe: Callable[[], bool] | None = None


def chosen(
  table: Sequence[Kernel], fields: Any, *operands: Any, interpret: bool = False
) -> dict[str, Callable[..., Any]]:
  """The kernel each platform runs for this call, by platform, each run per shard: the first
  entry of `table` for the platform that applies and may run here. Empty where none does.

  Examples:
    >>> sorted(chosen((), None, np.zeros(3)))
    []
  """
  kernels: dict[str, Callable[..., Any]] = {}
  for kernel in table:
    if kernel.platform not in kernels and _may_run(kernel, fields, operands):
      kernels[kernel.platform] = per_shard(kernel, fields, *operands, interpret=interpret)
  return kernels


def lower(
  table: Sequence[Kernel], fields: Any, fallback: Callable[..., Out], *operands: Any
) -> Out:
  """`fallback(*operands)`, or on each platform where `table` has a kernel for this call that
  kernel, run per shard (`chosen`); the gradient is fallback's."""
  kernels = chosen(table, fields, *operands)
  if not kernels:
    return fallback(*operands)
  return on_platforms(kernels, fallback, *operands)


def per_shard(
  kernel: Kernel, fields: Any, *operands: Any, interpret: bool = False
) -> Callable[..., Any]:
  """`kernel` for this call, wrapped with its partitioning (`partitioning.partitioned`, from
  its roles): the partitioner runs it on each device's shard, made for the shard's shapes."""
  roles = kernel.roles(fields, kernel.config, *operands)
  return partitioned(
    lambda *shards: kernel.call(fields, kernel.config, interpret, *shards),
    roles.rule,
    whole=roles.whole,
    fits=roles.fits,
  )


def _may_run(kernel: Kernel, fields: Any, operands: Sequence[Any]) -> bool:
  """Whether `kernel` takes this call here, asked in this order: the kernel's own test, the
  one-device gate, the native build (only for a kernel that would run), the last probe."""
  return bool(
    kernel.platform not in _kernels_off  # nothing built for a kernel switched off
    and kernel.applies(fields, kernel.config, *operands)
    and (not kernel.one_device or placement.one_device(kernel.platform))
    and (kernel.native is None or _native_cpu(kernel.native))
    and (kernel.probe is None or kernel.probe())
  )


def _native_cpu(kernel: str) -> bool:
  """Whether the CPU's native `kernel` (a source file of `native_cpu.KERNELS`) may run: the
  process has a CPU backend, and the kernel is built (here, on first use) and loaded. Every
  native kernel is run per shard (`per_shard`), so over several CPU devices it runs per shard."""
  try:
    jax.devices("cpu")
  except (RuntimeError, ValueError):  # no CPU backend here (JAX_PLATFORMS without cpu)
    return False
  return native_cpu.kernel_ready(kernel)


def on_cuda(
  kernel: Callable[..., jax.Array], fallback: Callable[..., jax.Array], *operands: jax.Array
) -> jax.Array:
  """`kernel(*operands)` on CUDA GPUs, `fallback(*operands)` elsewhere; the gradient is
  fallback's (integer operands, the indices or lengths, get none).
  """
  return on_platforms({"cuda": kernel}, fallback, *operands)


# Platforms whose kernels traces leave out, for `benchmarks/run.py --forms` (private; read at
# trace time: a program traced before a change keeps its forms until jax's caches are cleared).
_kernels_off: frozenset[str] = frozenset()


@contextlib.contextmanager
def _without_kernels(*platforms: str) -> Iterator[None]:
  """Within the block, programs traced take `fallback` where they would take a kernel on one
  of `platforms` ("cpu", "cuda")."""
  global _kernels_off
  before, _kernels_off = _kernels_off, _kernels_off | frozenset(platforms)
  try:
    yield
  finally:
    _kernels_off = before


def on_platforms(
  kernels: Mapping[str, Callable[..., Out]],
  fallback: Callable[..., Out],
  *operands: jax.Array,
) -> Out:
  """`kernels[platform](*operands)` on each platform named ("cuda", "cpu", ...),
  `fallback(*operands)` elsewhere; the gradient is fallback's (integer operands get none).

  Examples:
    >>> on_platforms({"cpu": jnp.negative}, jnp.negative, np.float32(2.0))
    Array(-2., dtype=float32)
  """
  kernels = {platform: k for platform, k in kernels.items() if platform not in _kernels_off}
  return lax.platform_dependent(
    *operands,
    **{
      platform: _with_gradient_of(_typed_as(kernel, fallback), fallback)
      for platform, kernel in kernels.items()
    },
    default=fallback,
  )


def _typed_as(kernel: Callable[..., Out], fallback: Callable[..., Out]) -> Callable[..., Out]:
  """`kernel`, its results resharded as `fallback`'s where shardings are part of the types
  (explicit mesh axes): the branches of `platform_dependent` must have one type."""

  def call(*operands):
    out = kernel(*operands)
    if not any(_explicitly_sharded(x) for x in operands):
      return out
    typed = jax.eval_shape(fallback, *operands)
    return jax.tree.map(lambda x, t: jax.sharding.reshard(x, t.sharding.spec), out, typed)

  return call


def _explicitly_sharded(x: jax.Array) -> bool:
  mesh = getattr(jax.typeof(x).sharding, "mesh", None)
  return mesh is not None and not mesh.empty and bool(mesh.explicit_axes)


def _with_gradient_of(
  kernel: Callable[..., Out], fallback: Callable[..., Out]
) -> Callable[..., Out]:
  """`kernel`, differentiated as `fallback` (which gives the same values)."""
  kernel_or_lax = jax.custom_vjp(kernel)
  kernel_or_lax.defvjp(
    lambda *args: (kernel(*args), args),
    lambda args, cotangent: jax.vjp(fallback, *args)[1](cotangent),
  )
  return kernel_or_lax
