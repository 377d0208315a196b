"""DirectML's operators, one module each; importing this package registers them all.

Tools never import an operator module: they ask `dml_jax._src.registry`, which
imports this package once. Every module of the package is imported here, in sorted
order (the registry's order), so a new operator's module needs no line of its own.
"""

import importlib
import pkgutil

for _module in sorted(info.name for info in pkgutil.iter_modules(__path__)):
  importlib.import_module(f"{__name__}.{_module}")
del _module
