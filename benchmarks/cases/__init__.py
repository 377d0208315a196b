"""The benchmark cases, by family: importing this package registers every case (`@case`).

The order of the imports is the order of the cases in a run.
"""

from benchmarks.cases import (  # noqa: F401, I001 (each registers its cases, in this order)
  joins,
  gathers,
  reverse,
  windows,
  buffers,
  depth_space,
  resample,
  scatters,
  one_hot,
  selection,
  arg_top_k,
  fills,
  scans,
  unpool_unfold,
  models,
)
