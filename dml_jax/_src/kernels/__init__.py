"""Kernels for the cases XLA leaves slow, and the choice of them.

One module a kernel, named for the operator, the kernel's shape of work and its backend (a
Pallas backend on GPUs, `cpu` for native code), each with its applicability test (`applies`,
on static shapes) and its tuning as a frozen config argument (None: the module's DEFAULT):

  gather_elements_rows_triton         GATHER_ELEMENTS along the last axis, a program a row
  gather_elements_strips_triton       GATHER_ELEMENTS along an earlier axis, in column strips
  gather_nd_rows_triton               GATHER_ND whose index tuples leave whole rows to copy
  reverse_subsequences_strips_mosaic  REVERSE_SUBSEQUENCES with per-lane lengths, strips of
                                      lanes staged in shared memory by TMA
  tile_copies_triton                  TILE with one repeated dimension, the input read once
  tile_rows_triton                    TILE repeating the last two dimensions, each block of an
                                      input row loaded once and stored at all its copies
  scatter_elements_rows_mosaic        SCATTER_ELEMENTS along the last axis, each row's winners
                                      settled by shared-memory atomics (GPUs with TMA)
  scatter_elements_rows_triton        the same where a row does not fit shared memory or no
                                      TMA: winners settled by atomics in a scratch row in L2
  scatter_nd_rows_triton              SCATTER_ND of whole rows, each output row pulled once from
                                      its winning update or the input
  one_hot_tiles_triton                ONE_HOT, the output written in wide tiles
  space_to_depth_rows_triton          SPACE_TO_DEPTH(1), each input row split once into its b
                                      output rows
  slice_rows_triton                   SLICE and SLICE1 walks with a strided or backward last
                                      axis or a backward axis, a run of an output row a program
  runs_cpu                            SPLIT and JOIN on the CPU, each piece's runs copied with
                                      stores that never read the destination (C++ through
                                      XLA's FFI; past the caches, or in them where a call fits)
  tile_rows_cpu                       TILE on the CPU, each output row written from its input
                                      row the same way (C++)
  transpose_cpu                       the last two dimensions swapped on the CPU, 8 x 8 blocks
                                      in AVX2 registers (C++): the tensor layer's transposes
  gather_rows_cpu                     GATHER_ND(1) and GATHER of whole rows on the CPU, the
                                      index tuples read raw (DirectML's rule applied in C++)
  arg_min_max_tiles_triton            ARGMIN and ARGMAX of floats along an axis before the
                                      last, tiles of lanes walked along it, each element's key
                                      ranked in registers
  cumulative_cpu                      CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT on the CPU,
                                      each lane's tally carried down its axis in order (C++)
  arg_min_max_cpu                     ARGMIN and ARGMAX on the CPU along any axis, each
                                      element's key ranked in one pass, lanes of partial bests
                                      merged with the tie rule (C++, AVX2 where the CPU has it)
  top_k_cpu                           TOP_K and TOP_K1 on the CPU, a heap of each lane's K best
                                      behind a vectorized threshold test (C++)

Each operator declares its kernels in a table at the bottom of its module (`KERNELS`, a tuple
of `forms.Kernel`: platform, `applies`, call, config and the sharding roles of its dimensions,
`partitioning.Roles`). `forms` is the one place that chooses among them, per platform, and
wraps each kernel it chooses to run per shard (`partitioning`); its names are re-exported here.
`availability` is the one probe of what this process can run (Pallas Triton, Mosaic GPU, GPUs
with TMA); `native_cpu` builds the CPU kernels' C++ (`native/`) on first use and says whether
they run.
"""

from dml_jax._src.kernels.forms import (
  Kernel,
  chosen,
  lower,
  on_cuda,
  on_platforms,
  per_shard,
)
from dml_jax._src.kernels.partitioning import Roles, around_axis, dims, factors

__all__ = [
  "Kernel",
  "Roles",
  "around_axis",
  "chosen",
  "dims",
  "factors",
  "lower",
  "on_cuda",
  "on_platforms",
  "per_shard",
]
