"""Whether this process can build and run the kernels: the one probe they all consult.

The Pallas-Triton kernels need `jax.experimental.pallas.triton` (JAX 0.11 deprecates it and a
later release removes it); the REVERSE_SUBSEQUENCES kernel needs Pallas's Mosaic GPU backend
and TMA copies, so every local CUDA GPU must be a Hopper or newer (compute capability 9.0).
Where a kernel cannot run, its operator takes the lax path, with the same results.

The probe runs once per process, at the first trace that asks (`probe` is cached). Tests that
want another machine's answer replace `probe` here, the one place the kernels read it from.
"""

from __future__ import annotations

import dataclasses
import functools

import jax

from dml_jax._src import jax_compat


@dataclasses.dataclass(frozen=True)
class Availability:
  """What the kernels may use in this process.

  Attributes:
    pallas_triton: `jax.experimental.pallas.triton` imports (the GATHER_ELEMENTS and
      GATHER_ND kernels).
    mosaic_gpu: `jax.experimental.pallas.mosaic_gpu` imports (the REVERSE_SUBSEQUENCES kernel).
    tma: every local CUDA GPU has TMA (compute capability 9.0 or newer); False without any.

  Examples:
    >>> Availability(pallas_triton=True, mosaic_gpu=True, tma=False).tma
    False
  """

  pallas_triton: bool
  mosaic_gpu: bool
  tma: bool


@functools.cache
def probe() -> Availability:
  """This process's `Availability`, found once.

  Examples:
    >>> isinstance(probe().pallas_triton, bool)
    True
  """
  return Availability(
    pallas_triton=jax_compat.has_pallas_triton(),
    mosaic_gpu=jax_compat.has_pallas_mosaic_gpu(),
    tma=_gpus_have_tma(),
  )


def _gpus_have_tma() -> bool:
  """Whether every local CUDA GPU is a Hopper or newer (the kernel's TMA copies)."""
  try:
    gpus = jax.devices("cuda")
  except (RuntimeError, ValueError):  # no CUDA backend: the kernel is never lowered
    return False
  return all(float(getattr(d, "compute_capability", 0)) >= 9.0 for d in gpus)
