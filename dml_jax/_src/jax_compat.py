"""What dml_jax takes from JAX's private modules, or from APIs that differ across its versions.

dml_jax supports jax 0.10 to 0.12 (pyproject.toml). This module is the only one that imports
`jax._src` (tests/test_jax_compat.py checks it), so a JAX release that moves one of these has
one place to change. Each shim says which JAX versions need it. CI runs the whole suite on
the oldest supported jax and the tests marked `jax_range` (which reach every shim here) on the
newest.

The MLIR modules of the Mosaic GPU kernels load at their first use (they take a few tenths of
a second to import), as module attributes: ``from dml_jax._src.jax_compat import mlir_ir as ir``.

Examples:
  >>> from dml_jax._src.jax_compat import mlir_ir
  >>> mlir_ir.__name__.endswith("mlir.ir")
  True
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

# jax 0.10 to 0.12: no public API declares a configuration state that is part of the jit cache
# key and of the trace context (`include_in_jit_key`), which checked mode needs so that a
# function traced without checks is traced again under `dml.checked`.
from jax._src.config import bool_state as bool_state

if TYPE_CHECKING:
  # jax 0.10 to 0.12: MLIR's Python bindings as jaxlib builds them, which Mosaic GPU code (the
  # body of `plgpu.inline_mgpu` and `mosaic_gpu` kernels) writes; jax has no public path to
  # them (`jax.experimental.mosaic.gpu` uses these very modules).
  from jax._src.lib.mlir import ir as mlir_ir
  from jax._src.lib.mlir.dialects import arith as mlir_arith
  from jax._src.lib.mlir.dialects import gpu as mlir_gpu
  from jax._src.lib.mlir.dialects import llvm as mlir_llvm
  from jax._src.lib.mlir.dialects import memref as mlir_memref
  from jax._src.lib.mlir.dialects import vector as mlir_vector

__all__ = [
  "backends_initialized",
  "bool_state",
  "has_pallas_mosaic_gpu",
  "has_pallas_triton",
  "mlir_arith",
  "mlir_gpu",
  "mlir_ir",
  "mlir_llvm",
  "mlir_memref",
  "mlir_vector",
]

# name -> (the module that holds it, its attribute there); jax loads the dialects lazily too.
_MLIR_MODULES = {
  "mlir_ir": ("jax._src.lib.mlir", "ir"),
  "mlir_arith": ("jax._src.lib.mlir.dialects", "arith"),
  "mlir_gpu": ("jax._src.lib.mlir.dialects", "gpu"),
  "mlir_llvm": ("jax._src.lib.mlir.dialects", "llvm"),
  "mlir_memref": ("jax._src.lib.mlir.dialects", "memref"),
  "mlir_vector": ("jax._src.lib.mlir.dialects", "vector"),
}

if not TYPE_CHECKING:

  def __getattr__(name: str) -> Any:
    """The MLIR modules (see the module docstring), imported at their first use."""
    if name in _MLIR_MODULES:
      package, attribute = _MLIR_MODULES[name]
      module = getattr(importlib.import_module(package), attribute)
      globals()[name] = module
      return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def backends_initialized() -> bool:
  """Whether JAX has created its clients (the CPU one among them) in this process.

  JAX creates them at the first computation, transfer or device query, not at import; this
  imports nothing. jax 0.10 to 0.12 have `xla_bridge.backends_are_initialized` (no public
  equivalent); the `_backends` dict it reads is the fallback should a release rename it.

  Examples:
    >>> import jax.numpy as jnp
    >>> _ = jnp.zeros(1)
    >>> backends_initialized()
    True
  """
  bridge = sys.modules.get("jax._src.xla_bridge")
  if bridge is None:  # jax not imported: no client
    return False
  initialized = getattr(bridge, "backends_are_initialized", None)
  if callable(initialized):
    return bool(initialized())
  return bool(getattr(bridge, "_backends", None))


def has_pallas_triton() -> bool:
  """Whether Pallas's Triton backend imports (the kernels in `kernels/*_triton.py`).

  jax 0.10 has it; 0.11 and 0.12 deprecate it (a DeprecationWarning where a kernel is lowered,
  which pyproject.toml's filterwarnings lets through); a later release removes it, and the
  kernels then take the lax path.

  Examples:
    >>> isinstance(has_pallas_triton(), bool)
    True
  """
  return _imports("jax.experimental.pallas.triton")


def has_pallas_mosaic_gpu() -> bool:
  """Whether Pallas's Mosaic GPU backend imports (the kernels in `kernels/*_mosaic.py`);
  jax 0.10 to 0.12 have it.

  Examples:
    >>> isinstance(has_pallas_mosaic_gpu(), bool)
    True
  """
  return _imports("jax.experimental.pallas.mosaic_gpu")


def _imports(module: str) -> bool:
  try:
    importlib.import_module(module)
  except ImportError:
    return False
  return True
