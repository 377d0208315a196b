"""The device layer: which devices there are, and a Runner that records what ran where.

Examples:
  >>> from dml_jax import device
  >>> device.available_devices("cpu")
  [CpuDevice(id=0)]
"""

from dml_jax._src.device import Runner as Runner
from dml_jax._src.device import RunRecord as RunRecord
from dml_jax._src.device import available_devices as available_devices
from dml_jax._src.device import default_device as default_device
from dml_jax._src.device import describe as describe
from dml_jax._src.device import resolve as resolve

__all__ = [
  "Runner",
  "RunRecord",
  "available_devices",
  "default_device",
  "describe",
  "resolve",
]
