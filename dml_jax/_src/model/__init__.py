"""Running DxDispatch model files (Microsoft's JSON format for DirectML repros).

One concern a module: `jsonc` (the JSON dialect), `scalars` (JSON values to element
bytes), `npy` (.npy files), `resources` (buffers), `dispatchables` (operator descs, of
the operators the registry holds), `commands`, `printing` (what a
print writes), `program` (`load_model`, `Model`: loading, validation, execution as one
XLA program) and `cli` (``python -m dml_jax run``).
"""

from dml_jax._src.model.program import Model as Model
from dml_jax._src.model.program import load_model as load_model
