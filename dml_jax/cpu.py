"""The CPU: an opt-in setup of glibc's malloc for XLA:CPU's large outputs, and native kernels.

XLA:CPU takes every output from malloc, and glibc gives large blocks fresh pages on every call
(a page fault per 4 KiB). `configure_allocator`, called first thing in a program, makes such
blocks come from the heap and be reused; `release_memory` gives the memory that keeps back to
the system. Importing dml_jax changes nothing: the setup is a call the user makes. The figures
and the reasons: the documentation's performance page.

Examples:
  The first lines of a program (before anything computes with JAX)::

    import dml_jax
    setup = dml_jax.cpu.configure_allocator()
    print(setup)  # M_MMAP_THRESHOLD=2147483647 M_TRIM_THRESHOLD=2147483647 M_ARENA_MAX=1: ...

  >>> from dml_jax import cpu
  >>> released = cpu.release_memory()  # after a burst of large outputs

The CPU's native kernels: five C++ kernels take large outputs, each built by the first call that
needs it with the machine's C++ compiler (x86-64) into a per-user cache folder that dml_jax checks before it loads
anything from it (the documentation's security page). `native_kernels()` says whether they run
in this process, and why not, without building; `build_native_kernels()` (or `python -m dml_jax
build-native`) builds them ahead; DML_JAX_NATIVE_KERNELS=0 turns them off. Where they do not
run, the lax forms give the same bits. The kernels, by source file:

- ``runs.cc``: SPLIT's and JOIN's copies of contiguous runs (two kernels);
- ``tile_rows.cc``: TILE, each input row stored at all its copies;
- ``gather_rows.cc``: gathers of whole rows (GATHER_ND, GATHER_ND1, and GATHER's lookups);
- ``transpose.cc``: the last two dimensions swapped, for the tensor layer's strided reads
  (an NHWC buffer read as NCHW), with an AVX2 form.

  >>> cpu.native_kernels().available in (True, False)
  True
"""

from dml_jax._src.cpu_allocator import AllocatorSetup as AllocatorSetup
from dml_jax._src.cpu_allocator import configure_allocator as configure_allocator
from dml_jax._src.cpu_allocator import release_memory as release_memory
from dml_jax._src.kernels.native_cpu import NativeStatus as NativeStatus
from dml_jax._src.kernels.native_cpu import build as build_native_kernels
from dml_jax._src.kernels.native_cpu import status as native_kernels

__all__ = [
  "AllocatorSetup",
  "NativeStatus",
  "build_native_kernels",
  "configure_allocator",
  "native_kernels",
  "release_memory",
]
