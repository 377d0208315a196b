"""Kernels that run per shard: a Pallas or FFI call with a sharding rule for the partitioner.

A `pallas_call` or an XLA FFI call carries no sharding rule, so the partitioner (Shardy, jax's
default, or GSPMD) replicates it: every operand gathered to every device, the whole output
computed on each. `partitioned` wraps a kernel with `jax.experimental.custom_partitioning`,
given the roles of its operands' and results' dimensions as an einsum-like rule (Shardy's
notation: one factor name a dimension, "b n, b m -> b m"): a factor passes through, so the
kernel runs on each shard's local shapes with no collective and the result keeps the
operands' sharding there, unless it is named in `whole`, when the partitioner gathers that
dimension (and only that one) before the call.

The rule reaches both partitioners: Shardy reads it as the custom call's `sharding_rule`
(with `whole` as its need-replication factors), GSPMD through the callbacks derived here from
the same rule. Either way the `partition` callback builds the per-shard program by calling
`make_kernel` with the local operands' shapes: kernels close over static shapes and
configuration, so each is made again for the shapes it will see.

`custom_partitioning` has no batching rule; the wrapper is a `jax.custom_batching.custom_vmap`
whose rule partitions `jax.vmap` of the kernel, the batch one more passed-through factor.
Gradients are not its business: `forms._with_gradient_of` gives the kernel its fallback's.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np  # noqa: F401 (the examples use it)
from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import NamedSharding, PartitionSpec

MakeKernel = Callable[..., Callable[..., Any]]
"""`make_kernel(*operands)`, each a `jax.ShapeDtypeStruct` of a shard's (or the whole) shape:
the callable to run on operands of those shapes."""


@dataclasses.dataclass(frozen=True)
class Rule:
  """Each operand's and result's dimensions as factor names, and the factors that need the
  whole axis on every device (the rest pass through per shard).

  Examples:
    >>> rule = Rule.parse("b n, b m -> b m", whole=("n",))
    >>> rule.operands, rule.results, rule.whole
    ((('b', 'n'), ('b', 'm')), (('b', 'm'),), frozenset({'n'}))
    >>> rule.batched((True, False)).text
    'v0 b n, b m -> v0 b m'
  """

  operands: tuple[tuple[str, ...], ...]
  results: tuple[tuple[str, ...], ...]
  whole: frozenset[str]

  @classmethod
  def parse(cls, text: str, whole: Sequence[str] = ()) -> Rule:
    if text.count("->") != 1:
      raise ValueError(f"a sharding rule has one '->' between operands and results: {text!r}")
    left, right = text.split("->")
    side = lambda s: tuple(tuple(t.split()) for t in s.split(","))  # noqa: E731
    rule = cls(side(left), side(right), frozenset(whole))
    named = {f for dims in rule.operands + rule.results for f in dims}
    if not rule.whole <= named:
      raise ValueError(f"factors {sorted(rule.whole - named)} are not in the rule {text!r}")
    return rule

  @property
  def whole_in_order(self) -> tuple[str, ...]:
    """`whole` in the order the factors first appear (Shardy's rule lists them so)."""
    seen = dict.fromkeys(f for dims in self.operands + self.results for f in dims)
    return tuple(f for f in seen if f in self.whole)

  @property
  def text(self) -> str:
    side = lambda tensors: ", ".join(" ".join(dims) for dims in tensors)  # noqa: E731
    return f"{side(self.operands)} -> {side(self.results)}"

  def batched(self, in_batched: Sequence[bool]) -> Rule:
    """The rule of the kernel vmapped over a leading dimension of the batched operands (and of
    every result): a fresh factor, passed through."""
    taken = {f for dims in self.operands + self.results for f in dims}
    batch = next(f"v{n}" for n in range(len(taken) + 1) if f"v{n}" not in taken)
    operands = tuple(
      (batch, *dims) if b else dims for dims, b in zip(self.operands, in_batched, strict=True)
    )
    return Rule(operands, tuple((batch, *dims) for dims in self.results), self.whole)

  def factor_sizes(self, operands: Sequence[Any], results: Sequence[Any]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for dims, x in zip(self.operands + self.results, [*operands, *results], strict=True):
      if len(dims) != len(x.shape):
        raise ValueError(f"the rule {self.text!r} names {len(dims)} dimensions of {x.shape}")
      for f, n in zip(dims, x.shape, strict=True):
        if sizes.setdefault(f, n) != n:
          raise ValueError(f"factor {f!r} of the rule {self.text!r} has sizes {sizes[f]}, {n}")
    return sizes


Shaped = jax.Array | jax.ShapeDtypeStruct
"""An operand as kernel tables see it: an array, or only its shape and dtype."""

Fits = Callable[..., bool]
"""`fits(*operands)`, each a `jax.ShapeDtypeStruct` of a shard's shape: whether the kernel can
run on shards of those shapes (its structural limits, such as a power-of-two width)."""


@dataclasses.dataclass(frozen=True)
class Roles:
  """The roles of a kernel's dimensions, as `partitioned` takes them: `rule` names each
  operand's and result's dimensions, `whole` the factors every device needs whole (the rest
  pass through per shard), `fits` the shard shapes the kernel can take (None: any).

  An operator's kernel table (`forms.Kernel.roles`) builds one for each call's static shapes,
  with `factors`, `dims` and `around_axis`.

  Examples:
    >>> lead = factors("l", 1)
    >>> Roles(f"{dims(lead, 'n')}, {dims(lead, 'm')} -> {dims(lead, 'm')}", whole=("n",)).rule
    'l0 n, l0 m -> l0 m'
  """

  rule: str
  whole: tuple[str, ...] = ()
  fits: Fits | None = None


def factors(prefix: str, count: int, start: int = 0) -> list[str]:
  """`count` factor names: `prefix` numbered from `start`.

  Examples:
    >>> factors("o", 2)
    ['o0', 'o1']
  """
  return [f"{prefix}{d}" for d in range(start, start + count)]


def dims(*groups: str | Sequence[str]) -> str:
  """One tensor's dimensions in a rule: the groups' factor names, in order, empty ones left out.

  Examples:
    >>> dims(["o0"], "n", [])
    'o0 n'
  """
  return " ".join(g if isinstance(g, str) else " ".join(g) for g in groups if g)


def around_axis(rank: int, axis: int, factor: str) -> str:
  """The dimensions of a tensor of `rank` whose `axis` is `factor` and whose others are the
  shared factors `o0 ..` before it and `i0 ..` after it (an operator working along `axis`).

  Examples:
    >>> around_axis(3, 1, "n")
    'o0 n i0'
  """
  return dims(factors("o", axis), factor, factors("i", rank - axis - 1))


def partitioned(
  make_kernel: MakeKernel, rule: str, *, whole: Sequence[str] = (), fits: Fits | None = None
) -> Callable:
  """The kernel `make_kernel` makes, run per shard by the partitioner as `rule` says.

  `rule`: each operand's dimensions, then (after "->") each result's, as factor names; a
  factor passes through (each device runs the kernel on its shard, the result keeps the
  sharding), except those in `whole`, which every device needs whole (the partitioner
  gathers those dimensions first and replicates them in the result). A factor's size is the
  same wherever it appears. On one device, or outside a partitioned program, the kernel runs
  on the whole operands.

  A passed-through factor stays sharded only where its shards are even, and where `fits`
  accepts the shards' shapes (factors are given up, the last taken first, until it does):
  elsewhere the partitioner gathers it too, so the kernel never sees a shape it cannot take.

  Examples:
    >>> flip = partitioned(lambda x: lambda x: x[:, ::-1], "b n -> b n", whole=("n",))
    >>> flip(np.arange(4.0).reshape(2, 2)).tolist()
    [[1.0, 0.0], [3.0, 2.0]]
    >>> jax.vmap(flip)(np.arange(8.0).reshape(2, 2, 2))[1].tolist()
    [[5.0, 4.0], [7.0, 6.0]]
  """
  return _batchable(make_kernel, Rule.parse(rule, whole), fits or (lambda *shapes: True))


def _batchable(make_kernel: MakeKernel, rule: Rule, fits: Fits) -> Callable:
  kernel = _partitioned(make_kernel, rule, fits)

  @jax.custom_batching.custom_vmap
  def call(*operands):
    mesh = _explicit_mesh(operands)
    if mesh is not None:
      return _shard_mapped(make_kernel, rule, fits, mesh, operands)
    return kernel(*operands)

  @call.def_vmap
  def _batched(axis_size, in_batched, *operands):
    del axis_size
    in_axes = tuple(0 if b else None for b in in_batched)

    def unbatched(shapes):
      return [_drop_leading(s) if b else s for s, b in zip(shapes, in_batched, strict=True)]

    def make_batched(*shapes):
      return jax.vmap(make_kernel(*unbatched(shapes)), in_axes=in_axes)

    fits_batched = lambda *shapes: fits(*unbatched(shapes))  # noqa: E731
    out = _batchable(make_batched, rule.batched(in_batched), fits_batched)(*operands)
    return out, jax.tree.map(lambda _: True, out)

  return call


def _partitioned(make_kernel: MakeKernel, rule: Rule, fits: Fits) -> Callable:
  def run(*operands):
    return make_kernel(*map(_shape_of, operands))(*operands)

  kernel = custom_partitioning(run)

  def partition(mesh, operands, results):
    flat_results = jax.tree.leaves(results)
    specs = _specs(rule, fits, mesh, operands, flat_results, from_results=True)
    in_specs, out_specs = specs[: len(operands)], specs[len(operands) :]

    def per_shard(*local):
      return make_kernel(*map(_shape_of, local))(*local)

    out = jax.tree.unflatten(jax.tree.structure(results), _shardings(mesh, out_specs))
    return mesh, per_shard, out, tuple(_shardings(mesh, in_specs))

  def infer_sharding_from_operands(mesh, operands, results):
    flat_results = jax.tree.leaves(results)
    specs = _specs(rule, fits, mesh, operands, flat_results, from_results=False)
    out = _shardings(mesh, specs[len(operands) :])
    return jax.tree.unflatten(jax.tree.structure(results), out)

  def propagate_user_sharding(mesh, user):
    flat = jax.tree.leaves(user)
    specs = [
      _spec(
        tuple(None if f in rule.whole else axes for f, axes in zip(dims, _axes(x), strict=False))
      )
      for dims, x in zip(rule.results, flat, strict=True)
    ]
    return jax.tree.unflatten(jax.tree.structure(user), _shardings(mesh, specs))

  kernel.def_partition(
    partition=partition,
    infer_sharding_from_operands=infer_sharding_from_operands,
    propagate_user_sharding=propagate_user_sharding,
    sharding_rule=rule.text,
    need_replication_factors=rule.whole_in_order,
  )
  return kernel


def _explicit_mesh(operands: Sequence[Any]) -> Any:
  """The mesh of operands typed with explicit shardings (`jax.sharding.AxisType.Explicit`), or
  None."""
  for x in operands:
    mesh = getattr(jax.typeof(x).sharding, "mesh", None)
    if mesh is not None and not mesh.empty and mesh.explicit_axes:
      return mesh
  return None


def _shard_mapped(
  make_kernel: MakeKernel, rule: Rule, fits: Fits, mesh: Any, operands: Sequence[Any]
) -> Any:
  """The kernel per shard where the shardings are in the operands' types: `jax.shard_map`
  over the shards the rule allows, the operands resharded to those first (which gathers the
  factors needed whole), so the result's type says how it is sharded."""
  typed = [
    jax.ShapeDtypeStruct(
      x.shape, x.dtype, sharding=NamedSharding(mesh, jax.typeof(x).sharding.spec)
    )
    for x in operands
  ]
  results = jax.eval_shape(make_kernel(*map(_shape_of, operands)), *map(_shape_of, operands))
  specs = _specs(rule, fits, mesh, typed, jax.tree.leaves(results), from_results=False)
  in_specs, out_specs = specs[: len(operands)], specs[len(operands) :]
  operands = [jax.sharding.reshard(x, s) for x, s in zip(operands, in_specs, strict=True)]

  def per_shard(*local):
    return make_kernel(*map(_shape_of, local))(*local)

  return jax.shard_map(
    per_shard,
    mesh=mesh,
    in_specs=tuple(in_specs),
    out_specs=jax.tree.unflatten(jax.tree.structure(results), out_specs),
    check_vma=False,
  )(*operands)


def _specs(
  rule: Rule,
  fits: Fits,
  mesh: Any,
  operands: Sequence[Any],
  results: Sequence[Any],
  *,
  from_results: bool,
) -> list[PartitionSpec]:
  """One PartitionSpec per operand and result: each factor's mesh axes, taken from the first
  tensor (the results first where `from_results`: the partitioner has chosen their sharding,
  then the operands) that shards it by axes no other factor took and that divide its size,
  while `fits` takes the operands' shards; `rule.whole`'s factors and the rest replicated."""
  sizes = rule.factor_sizes(operands, results)
  sources = list(zip(rule.operands, operands, strict=True))
  if from_results:
    sources = list(zip(rule.results, results, strict=True)) + sources
  chosen: dict[str, tuple[str, ...]] = {}
  taken: set[str] = set()
  for dims, x in sources:
    for f, axes in zip(dims, _axes(x), strict=False):
      if not axes or f in rule.whole or f in chosen or taken & set(axes):
        continue
      if sizes[f] % math.prod(mesh.shape[a] for a in axes):
        continue  # uneven shards: the kernel would see padding
      chosen[f] = axes
      taken |= set(axes)
  while chosen and not fits(*_shards(rule, mesh, chosen, operands)):
    chosen.popitem()
  return [_spec(tuple(chosen.get(f) for f in dims)) for dims in rule.operands + rule.results]


def _shards(
  rule: Rule, mesh: Any, chosen: dict[str, tuple[str, ...]], operands: Sequence[Any]
) -> list[jax.ShapeDtypeStruct]:
  """The operands' shards' shapes under `chosen`."""
  parts = {f: math.prod(mesh.shape[a] for a in axes) for f, axes in chosen.items()}
  return [
    jax.ShapeDtypeStruct(
      tuple(n // parts.get(f, 1) for f, n in zip(dims, x.shape, strict=True)), x.dtype
    )
    for dims, x in zip(rule.operands, operands, strict=True)
  ]


def _axes(x: Any) -> list[tuple[str, ...]]:
  """The mesh axes of each dimension of `x` (a ShapeDtypeStruct with a sharding), () for none."""
  sharding = getattr(x, "sharding", None)
  if not isinstance(sharding, NamedSharding):
    return [()] * len(x.shape)  # no mesh to name axes by: replicated
  entries = list(sharding.spec) + [None] * (len(x.shape) - len(sharding.spec))
  return [() if e is None else (e,) if isinstance(e, str) else tuple(e) for e in entries]


def _spec(axes: Sequence[tuple[str, ...] | None]) -> PartitionSpec:
  entry = lambda a: None if not a else a[0] if len(a) == 1 else tuple(a)  # noqa: E731
  return PartitionSpec(*(entry(a) for a in axes))


def _shardings(mesh: Any, specs: Sequence[PartitionSpec]) -> list[NamedSharding]:
  return [NamedSharding(mesh, spec) for spec in specs]


def _shape_of(x: Any) -> jax.ShapeDtypeStruct:
  return jax.ShapeDtypeStruct(x.shape, x.dtype)


def _drop_leading(x: jax.ShapeDtypeStruct) -> jax.ShapeDtypeStruct:
  return jax.ShapeDtypeStruct(x.shape[1:], x.dtype)
