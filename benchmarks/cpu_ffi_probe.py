"""Probe (CPU): C++ kernels through the XLA FFI for row gathers, JOIN, TILE and a transpose,
SPLIT, against dml_jax's lax forms and ONNX Runtime.

Not part of the library. XLA:CPU copies each row of a GATHER_ND row gather element by element;
a hand-written kernel copies rows with memcpy. This probe measures what such kernels would buy,
on this machine's CPU, at the CPU sizes of benchmarks/run.py (`--size small`; `--size tiny` for
a check in seconds):

- gather_nd: GATHER_ND of 65,536 int32 (H, W) tuples into f32 (256, 256, 256): 1 KiB rows;
- gather_rows: GATHER of 65,536 rows of an f32 (65536, 256) table (an embedding lookup);
- join_axis0, join_axis1: JOIN of 4 x f32 (2048, 2048) along axis 0 and along axis 1;
- gather_nd_cached (the probe's own case): GATHER_ND of 4,096 int32 tuples into f32 (64, 64, 64),
  256-byte rows and a 1 MiB output, which the caches hold: the cost of the copy loop itself,
  where run.py's 64 MiB outputs are bound by memory and page faults;
- tile_both: TILE of f32 (512, 512) by (4, 4), a 16 MiB output;
- element_wise_identity_nhwc_to_nchw: an NHWC buffer of f32 (8, 64, 64, 32) read as NCHW;
- split_axis0, split_axis1: SPLIT of f32 (4096, 4096) into 4 along axis 0 and along axis 1.

The other cases, their data and their ONNX Runtime models are run.py's (loaded through
benchmarks/cpu_protocol.py, whose timing helpers this probe reuses); ONNX Runtime runs as a user
gets it (default SessionOptions).

The kernel. The script writes a C++ source, builds it with `g++ -O3 -shared -fPIC -std=c++17
-I<jax.ffi.include_dir()>` into a temporary directory, loads it with ctypes and registers two
handlers for the CPU with `jax.ffi.register_ffi_target`:

- row gather: data of any dtype (rows copied as bytes), indices (..., K) of int32, uint32, int64
  or uint64; each K-tuple picks a row of data's trailing dimensions, one memcpy per row, with
  DirectML's index rule (a negative signed index counts from the end, clamped to 0 below -size;
  an index past the end is clamped to the last position), as dml_jax's clamp_indices does;
- join: any number of inputs along an axis, one memcpy per contiguous run of each input;
- tile2: TILE of a 2-D input, rows copied with memcpy, then whole blocks of rows; or, with
  `streaming`, every output row written from its input row in non-temporal stores;
- transpose3: (N, R, C) -> (N, C, R) of 32-bit elements, in 8 x 8 blocks transposed in AVX2
  registers (built with -march=native; a scalar loop for the edges and without AVX2); with
  `streaming`, two blocks at a time fill whole 64-byte lines, stored non-temporally; with
  `tiles`, 128 rows at a time through a buffer on the stack, then copied out row by row;
- split: SPLIT along any axis, one copy per contiguous run of each output, with memcpy or, with
  `streaming`, non-temporal 32-byte stores (no read for ownership of the output's lines).

Non-temporal stores bypass the caches: a copy's destination is not read first, so a copy moves
two bytes per byte copied instead of three, where the output is larger than the caches.

Each takes a `threads` attribute: 1 runs on the calling thread; more splits the copies into that
many parts, all but one scheduled on XLA's intra-op thread pool (`ffi::ThreadPool`). The sides
timed per case: dml_jax's jitted operator as a user calls it, the FFI kernel jitted on one
thread and on two (and, for SPLIT, TILE and the transpose, each with non-temporal stores: "NT";
for the transpose also in tiles: "tiles"), and ONNX Runtime's session. Before timing, every side's output is checked bit
for bit against dml_jax's, and the row gather is checked against dml.gather_nd on edge indices
(negative, past either end, INT32_MIN, INT32_MAX), for several dtypes, int32 and uint32
indices, int64 and uint64 indices (under jax.enable_x64, with values past 32 bits), and under
jax.vmap (the FFI call's vmap_method "sequential"); TILE, the transpose and SPLIT are checked
against NumPy on odd shapes (the transpose's scalar edges, runs that are not a multiple of 128
bytes), NaN payloads and -0.0, with and without non-temporal stores, and, for TILE, float16 and
int8.

Timing (cpu_protocol's helpers): every side is warmed and gets the calls per block that last
about 100 ms (run.py's preset), then rounds of one block per side, a rest (100 ms) before every
block, the side that goes first rotating from round to round. Reported per side: the median ms
per call over the rounds; ORT/side, ONNX Runtime's median over the side's (above 1: the side is
faster), with the quartiles of the per-round ratios (min and max under 4 rounds); dml/side, the
same for dml_jax's time over the side's (above 1: the side is faster than dml_jax); minor page
faults per call (getrusage ru_minflt over a block / calls, median over rounds).

Usage (from the repository root; each configuration in its own fresh process):

  PYTHONPATH=. python3 benchmarks/cpu_ffi_probe.py                # a plain process
  PYTHONPATH=. python3 benchmarks/cpu_ffi_probe.py --setup        # configure_allocator() first
  PYTHONPATH=. python3 benchmarks/cpu_ffi_probe.py --size tiny --rounds 2 --rest-ms 0

Exit status: 0 when every check passes, 1 when one fails, 2 when g++, onnxruntime or onnx is
missing or the kernel does not build (it says which).
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import itertools
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

PROTOCOL = pathlib.Path(__file__).resolve().parent / "cpu_protocol.py"
CASES = (
  "gather_nd",
  "gather_rows",
  "join_axis0",
  "join_axis1",
  "gather_nd_cached",
  "tile_both",
  "element_wise_identity_nhwc_to_nchw",
  "split_axis0",
  "split_axis1",
)
# The probe's own case, not run.py's: 256-byte rows and a 1 MiB output, which the caches hold.
CACHED = {"small": ((64, 64, 64), 4096), "tiny": ((8, 6, 4), 16)}

SOURCE = r"""
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <type_traits>

#include "xla/ffi/api/ffi.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ffi = xla::ffi;

// Runs fn(begin, end) over [0, n) in `parts` pieces: all but the first on XLA's intra-op pool,
// the first on this thread, then waits for the others.
template <typename F>
static void ParallelFor(ffi::ThreadPool& pool, int64_t n, int64_t parts, const F& fn) {
  if (parts > n) parts = n;
  if (parts <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  std::atomic<int64_t> left(parts - 1);
  for (int64_t p = 1; p < parts; ++p) {
    int64_t begin = n * p / parts, end = n * (p + 1) / parts;
    pool.Schedule([&fn, &left, begin, end] {
      fn(begin, end);
      left.fetch_sub(1, std::memory_order_acq_rel);
    });
  }
  fn(0, n / parts);
  while (left.load(std::memory_order_acquire) > 0) std::this_thread::yield();
}

// DirectML's rule: a negative signed index counts from the end (below -size: 0); past the end:
// the last position. Exact for every value of every index type.
template <typename I>
static inline uint64_t Clamp(I index, uint64_t size) {
  if constexpr (std::is_signed_v<I>) {
    if (index < 0) {
      uint64_t magnitude = uint64_t(~index) + 1;  // |index|, exact for the most negative
      return magnitude <= size ? size - magnitude : 0;
    }
  }
  uint64_t u = uint64_t(index);
  return u < size ? u : size - 1;
}

template <typename I>
static ffi::Error GatherRowsTyped(ffi::ThreadPool& pool, ffi::AnyBuffer data,
                                  ffi::AnyBuffer indices, ffi::AnyBuffer out, int64_t threads) {
  auto dims = data.dimensions();
  auto idims = indices.dimensions();
  if (idims.size() == 0) return ffi::Error::InvalidArgument("indices need a last axis");
  int64_t k = idims[idims.size() - 1];
  if (k < 1 || k > int64_t(dims.size()))
    return ffi::Error::InvalidArgument("the last axis of indices exceeds the input's rank");
  size_t width = ffi::ByteWidth(data.element_type());
  size_t row = width;
  for (size_t d = k; d < dims.size(); ++d) row *= size_t(dims[d]);
  uint64_t sizes[8];
  size_t strides[8];
  if (k > 8) return ffi::Error::InvalidArgument("at most 8 indexed dimensions");
  size_t stride = row;
  for (int64_t d = k - 1; d >= 0; --d) {
    sizes[d] = uint64_t(dims[d]);
    strides[d] = stride;
    stride *= size_t(dims[d]);
  }
  int64_t tuples = int64_t(indices.element_count()) / k;
  if (int64_t(out.size_bytes()) != tuples * int64_t(row))
    return ffi::Error::InvalidArgument("the output's size is not tuples x row");
  const char* src = static_cast<const char*>(data.untyped_data());
  const I* idx = static_cast<const I*>(indices.untyped_data());
  char* dst = static_cast<char*>(out.untyped_data());
  if (row == 0 || tuples == 0) return ffi::Error::Success();
  ParallelFor(pool, tuples, threads, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const I* tuple = idx + t * k;
      size_t offset = 0;
      for (int64_t d = 0; d < k; ++d) offset += Clamp<I>(tuple[d], sizes[d]) * strides[d];
      std::memcpy(dst + size_t(t) * row, src + offset, row);
    }
  });
  return ffi::Error::Success();
}

static ffi::Error GatherRowsImpl(ffi::ThreadPool pool, ffi::AnyBuffer data,
                                 ffi::AnyBuffer indices, ffi::Result<ffi::AnyBuffer> out,
                                 int64_t threads) {
  switch (indices.element_type()) {
    case ffi::DataType::S32: return GatherRowsTyped<int32_t>(pool, data, indices, *out, threads);
    case ffi::DataType::U32: return GatherRowsTyped<uint32_t>(pool, data, indices, *out, threads);
    case ffi::DataType::S64: return GatherRowsTyped<int64_t>(pool, data, indices, *out, threads);
    case ffi::DataType::U64: return GatherRowsTyped<uint64_t>(pool, data, indices, *out, threads);
    default: return ffi::Error::InvalidArgument("indices must be 32- or 64-bit integers");
  }
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(GatherRows, GatherRowsImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("threads"));

static ffi::Error JoinImpl(ffi::ThreadPool pool, ffi::RemainingArgs inputs,
                           ffi::Result<ffi::AnyBuffer> out, int64_t axis, int64_t threads) {
  size_t count = inputs.size();
  if (count == 0 || count > 64) return ffi::Error::InvalidArgument("1 to 64 inputs");
  const char* srcs[64];
  size_t runs[64];  // bytes of each input per outer position
  auto odims = out->dimensions();
  size_t width = ffi::ByteWidth(out->element_type());
  size_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= size_t(odims[d]);
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    auto input = inputs.get<ffi::AnyBuffer>(i);
    if (!input.has_value()) return input.error();
    srcs[i] = static_cast<const char*>(input->untyped_data());
    runs[i] = input->size_bytes() / (outer ? outer : 1);
    total += runs[i];
  }
  if (total * outer != out->size_bytes())
    return ffi::Error::InvalidArgument("the inputs do not fill the output");
  char* dst = static_cast<char*>(out->untyped_data());
  (void)width;
  if (outer == 1) {
    // One run per input: split each run into the parts.
    size_t offset = 0;
    for (size_t i = 0; i < count; ++i) {
      char* to = dst + offset;
      const char* from = srcs[i];
      size_t bytes = runs[i];
      int64_t chunks = (bytes + 65535) / 65536;
      ParallelFor(pool, chunks, threads, [&](int64_t begin, int64_t end) {
        size_t lo = size_t(begin) * 65536, hi = std::min(bytes, size_t(end) * 65536);
        std::memcpy(to + lo, from + lo, hi - lo);
      });
      offset += bytes;
    }
    return ffi::Error::Success();
  }
  ParallelFor(pool, int64_t(outer), threads, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      char* to = dst + size_t(o) * total;
      for (size_t i = 0; i < count; ++i) {
        std::memcpy(to, srcs[i] + size_t(o) * runs[i], runs[i]);
        to += runs[i];
      }
    }
  });
  return ffi::Error::Success();
}

// Copies n bytes; with `streaming`, the 32-byte-aligned body goes out in non-temporal stores
// (no read for ownership of the destination's lines, which bypass the caches); the caller
// fences (_mm_sfence) before its output is read.
static inline void CopyBytes(char* dst, const char* src, size_t n, bool streaming) {
#if defined(__AVX2__)
  if (streaming && n >= 256) {
    size_t head = (32 - (reinterpret_cast<uintptr_t>(dst) & 31)) & 31;
    std::memcpy(dst, src, head);
    dst += head, src += head, n -= head;
    size_t body = n & ~size_t(127);
    for (size_t i = 0; i < body; i += 128) {
      __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
      __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32));
      __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 64));
      __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 96));
      _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), a);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 32), b);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 64), c);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 96), d);
    }
    std::memcpy(dst + body, src + body, n - body);
    return;
  }
#endif
  (void)streaming;
  std::memcpy(dst, src, n);
}

static inline void Fence() {
#if defined(__AVX2__)
  _mm_sfence();
#endif
}

// SPLIT of any input along `axis` into the outputs (their sizes along the axis are read from
// them), any element width: per outer position, one copy per output of its contiguous run;
// with one outer position, each output's run is cut into 64 KiB chunks for the threads.
static ffi::Error SplitImpl(ffi::ThreadPool pool, ffi::AnyBuffer x, ffi::RemainingRets outs,
                           int64_t axis, int64_t threads, int64_t streaming) {
  size_t count = outs.size();
  if (count == 0 || count > 64) return ffi::Error::InvalidArgument("1 to 64 outputs");
  auto dims = x.dimensions();
  size_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= size_t(dims[d]);
  char* dsts[64];
  size_t runs[64];
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    auto out = outs.get<ffi::AnyBuffer>(i);
    if (!out.has_value()) return out.error();
    dsts[i] = static_cast<char*>((*out)->untyped_data());
    runs[i] = (*out)->size_bytes() / (outer ? outer : 1);
    total += runs[i];
  }
  if (total * outer != x.size_bytes())
    return ffi::Error::InvalidArgument("the outputs do not cover the input");
  const char* src = static_cast<const char*>(x.untyped_data());
  bool stream = streaming != 0;
  if (outer == 1) {
    size_t offset = 0;
    for (size_t i = 0; i < count; ++i) {
      char* to = dsts[i];
      const char* from = src + offset;
      size_t bytes = runs[i];
      int64_t chunks = (bytes + 65535) / 65536;
      ParallelFor(pool, chunks, threads, [&](int64_t begin, int64_t end) {
        size_t lo = size_t(begin) * 65536, hi = std::min(bytes, size_t(end) * 65536);
        CopyBytes(to + lo, from + lo, hi - lo, stream);
        Fence();
      });
      offset += bytes;
    }
    return ffi::Error::Success();
  }
  ParallelFor(pool, int64_t(outer), threads, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const char* from = src + size_t(o) * total;
      for (size_t i = 0; i < count; ++i) {
        CopyBytes(dsts[i] + size_t(o) * runs[i], from, runs[i], stream);
        from += runs[i];
      }
    }
    Fence();
  });
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Split, SplitImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .RemainingRets()
                                  .Attr<int64_t>("axis")
                                  .Attr<int64_t>("threads")
                                  .Attr<int64_t>("streaming"));

// TILE of a 2-D input (H, W) into (H * a, W * b), any element width: the first H output rows
// are the input rows, each copied b times with memcpy; the other a - 1 blocks of H rows are
// memcpy'd from the first block.
static ffi::Error Tile2Impl(ffi::ThreadPool pool, ffi::AnyBuffer x,
                            ffi::Result<ffi::AnyBuffer> out, int64_t threads, int64_t streaming) {
  auto in = x.dimensions();
  auto od = out->dimensions();
  if (in.size() != 2 || od.size() != 2) return ffi::Error::InvalidArgument("2-D TILE only");
  size_t width = ffi::ByteWidth(x.element_type());
  int64_t h = in[0], w = in[1], oh = od[0], ow = od[1];
  if (h == 0 || w == 0 || oh % h || ow % w) return ffi::Error::InvalidArgument("bad repeats");
  const char* src = static_cast<const char*>(x.untyped_data());
  char* dst = static_cast<char*>(out->untyped_data());
  size_t row = size_t(w) * width, out_row = size_t(ow) * width;
  int64_t b = ow / w, a = oh / h;
  bool stream = streaming != 0;
  if (stream) {
    // Every output row written straight from the input (the output is not read back).
    ParallelFor(pool, oh, threads, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        for (int64_t k = 0; k < b; ++k)
          CopyBytes(dst + i * out_row + k * row, src + (i % h) * row, row, true);
      Fence();
    });
    return ffi::Error::Success();
  }
  ParallelFor(pool, h, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      for (int64_t k = 0; k < b; ++k) std::memcpy(dst + i * out_row + k * row, src + i * row, row);
  });
  size_t block = size_t(h) * out_row;
  ParallelFor(pool, a - 1, threads, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) std::memcpy(dst + (k + 1) * block, dst, block);
  });
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Tile2, Tile2Impl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("threads")
                                  .Attr<int64_t>("streaming"));

#if defined(__AVX2__)
// An 8 x 8 block of 32-bit elements transposed in registers: rows of `s` (stride ls) become
// rows of `d` (stride ld).
static inline void Transpose8x8(const float* s, int64_t ls, float* d, int64_t ld) {
  __m256 r[8], t[8], u[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(s + i * ls);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(d + i * ld, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
    _mm256_storeu_ps(d + (i + 4) * ld, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
  }
}
#endif

// (N, R, C) -> (N, C, R) of 32-bit elements (moved as bits). Work: (n, 8-column group) pairs;
// each walks down all R rows, 8 at a time, so its 8 output rows are written in order. With
// `streaming`, two 8 x 8 blocks at a time fill whole 64-byte lines of the 8 output rows, stored
// non-temporally. With `tiles`: work is (n, block of 128 rows) pairs instead; each block's
// 128 x C elements are transposed in 8 x 8 blocks into a buffer on the stack (C <= 64), whose C
// rows of 512 bytes are then copied out (non-temporally with `streaming`).
static ffi::Error Transpose3Impl(ffi::ThreadPool pool, ffi::AnyBuffer x,
                                 ffi::Result<ffi::AnyBuffer> out, int64_t threads,
                                 int64_t streaming, int64_t tiles) {
  auto dims = x.dimensions();
  if (dims.size() != 3 || ffi::ByteWidth(x.element_type()) != 4)
    return ffi::Error::InvalidArgument("(N, R, C) of 32-bit elements only");
  int64_t n = dims[0], r = dims[1], c = dims[2];
  const uint32_t* src = static_cast<const uint32_t*>(x.untyped_data());
  uint32_t* dst = static_cast<uint32_t*>(out->untyped_data());
#if defined(__AVX2__)
  constexpr int64_t kBlock = 128;
  if (tiles && c % 8 == 0 && c <= 64 && r % kBlock == 0) {
    int64_t blocks = r / kBlock;
    ParallelFor(pool, n * blocks, threads, [&](int64_t begin, int64_t end) {
      alignas(64) float tile[64 * kBlock];
      for (int64_t w = begin; w < end; ++w) {
        int64_t b = w / blocks, i0 = w % blocks * kBlock;
        const float* s = reinterpret_cast<const float*>(src + b * r * c + i0 * c);
        for (int64_t i = 0; i < kBlock; i += 8)
          for (int64_t j = 0; j < c; j += 8) Transpose8x8(s + i * c + j, c, tile + j * kBlock + i, kBlock);
        char* d = reinterpret_cast<char*>(dst + b * r * c + i0);
        for (int64_t j = 0; j < c; ++j)
          CopyBytes(d + j * r * 4, reinterpret_cast<const char*>(tile + j * kBlock), kBlock * 4,
                    streaming != 0);
      }
      Fence();
    });
    return ffi::Error::Success();
  }
#endif
  (void)tiles;
  int64_t groups = (c + 7) / 8;
  ParallelFor(pool, n * groups, threads, [&](int64_t begin, int64_t end) {
    alignas(64) float lines[8 * 16];
    for (int64_t w = begin; w < end; ++w) {
      int64_t b = w / groups, j0 = w % groups * 8, j1 = std::min(j0 + 8, c);
      const uint32_t* s = src + b * r * c;
      uint32_t* d = dst + b * r * c;
      int64_t i0 = 0;
#if defined(__AVX2__)
      if (j1 - j0 == 8) {
        if (streaming && r % 16 == 0 && (reinterpret_cast<uintptr_t>(d) & 63) == 0 &&
            (r * 4) % 64 == 0) {
          for (; i0 + 16 <= r; i0 += 16) {
            Transpose8x8(reinterpret_cast<const float*>(s + i0 * c + j0), c, lines, 16);
            Transpose8x8(reinterpret_cast<const float*>(s + (i0 + 8) * c + j0), c, lines + 8, 16);
            for (int k = 0; k < 8; ++k) {
              float* to = reinterpret_cast<float*>(d + (j0 + k) * r + i0);
              _mm256_stream_ps(to, _mm256_load_ps(lines + k * 16));
              _mm256_stream_ps(to + 8, _mm256_load_ps(lines + k * 16 + 8));
            }
          }
        }
        for (; i0 + 8 <= r; i0 += 8)
          Transpose8x8(reinterpret_cast<const float*>(s + i0 * c + j0), c,
                       reinterpret_cast<float*>(d + j0 * r + i0), r);
      }
#endif
      for (int64_t j = j0; j < j1; ++j)
        for (int64_t i = i0; i < r; ++i) d[j * r + i] = s[i * c + j];
    }
    Fence();
  });
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Transpose3, Transpose3Impl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("threads")
                                  .Attr<int64_t>("streaming")
                                  .Attr<int64_t>("tiles"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(Join, JoinImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .RemainingArgs()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("axis")
                                  .Attr<int64_t>("threads"));
"""


class UnavailableError(Exception):
  """What the probe needs and this machine lacks (exit status 2)."""


def build_kernel(directory: str) -> ctypes.CDLL:
  """Compiles SOURCE into a shared library in `directory` and loads it."""
  import jax

  compiler = shutil.which("g++")
  if compiler is None:
    raise UnavailableError("g++ not found: the probe builds its C++ kernel with g++")
  source = pathlib.Path(directory) / "dml_ffi_probe.cc"
  library = pathlib.Path(directory) / "dml_ffi_probe.so"
  source.write_text(SOURCE)
  command = [compiler, "-O3", "-march=native", "-shared", "-fPIC", "-std=c++17"]
  command.append(f"-I{jax.ffi.include_dir()}")
  built = subprocess.run(
    [*command, str(source), "-o", str(library)], capture_output=True, text=True
  )
  if built.returncode != 0:
    raise UnavailableError(f"the kernel did not build:\n{built.stderr[-3000:]}")
  return ctypes.cdll.LoadLibrary(str(library))


def register(lib: ctypes.CDLL) -> None:
  import jax

  for name, symbol in (
    ("dml_probe_gather_rows", lib.GatherRows),
    ("dml_probe_join", lib.Join),
    ("dml_probe_tile2", lib.Tile2),
    ("dml_probe_transpose3", lib.Transpose3),
    ("dml_probe_split", lib.Split),
  ):
    jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(symbol), platform="cpu")


def _call(target: str, shape, dtype, *operands, threads: int, **attributes):
  """The registered kernel `target` on `operands`, output (shape, dtype), `threads` threads
  (vmap: one call per batch element)."""
  import jax
  import numpy as np

  out = jax.ShapeDtypeStruct(tuple(shape), dtype)
  call = jax.ffi.ffi_call(target, out, vmap_method="sequential")
  attributes = {name: np.int64(value) for name, value in attributes.items()}
  return call(*operands, threads=np.int64(threads), **attributes)


def gather_rows(data, indices, *, threads: int = 1):
  """data's rows picked by the K-tuples of `indices` (..., K): shape indices[:-1] + data[K:]."""
  shape = indices.shape[:-1] + data.shape[indices.shape[-1] :]
  return _call("dml_probe_gather_rows", shape, data.dtype, data, indices, threads=threads)


def join(inputs, *, axis: int, threads: int = 1):
  shape = list(inputs[0].shape)
  shape[axis] = sum(x.shape[axis] for x in inputs)
  return _call("dml_probe_join", shape, inputs[0].dtype, *inputs, threads=threads, axis=axis)


def split(x, sizes, *, axis: int, threads: int = 1, streaming: bool = True):
  """`x` cut along `axis` into pieces of `sizes`; `streaming`: non-temporal stores."""
  import jax
  import numpy as np

  shapes = []
  for size in sizes:
    shape = list(x.shape)
    shape[axis] = size
    shapes.append(jax.ShapeDtypeStruct(tuple(shape), x.dtype))
  call = jax.ffi.ffi_call("dml_probe_split", shapes, vmap_method="sequential")
  return call(
    x, axis=np.int64(axis), threads=np.int64(threads), streaming=np.int64(bool(streaming))
  )


def tile2(x, repeats, *, threads: int = 1, streaming: bool = False):
  """TILE of a 2-D `x` by `repeats` (two counts); `streaming`: non-temporal stores."""
  shape = (x.shape[0] * repeats[0], x.shape[1] * repeats[1])
  return _call("dml_probe_tile2", shape, x.dtype, x, threads=threads, streaming=streaming)


def transpose3(x, *, threads: int = 1, streaming: bool = False, tiles: bool = False):
  """(N, R, C) -> (N, C, R), 32-bit elements; `streaming`: non-temporal stores; `tiles`:
  blocks of 128 rows through a buffer on the stack."""
  n, r, c = x.shape
  return _call(
    "dml_probe_transpose3",
    (n, c, r),
    x.dtype,
    x,
    threads=threads,
    streaming=streaming,
    tiles=tiles,
  )


def check_layout_kernels(jax, np) -> list[str]:
  """TILE and the transpose against NumPy, bit for bit: odd shapes (the transpose's scalar
  edges), NaN payloads and -0.0, several widths, 1 and 2 threads."""
  failures = []
  rng = np.random.default_rng(8)
  specials = np.array([0x7FC01234, 0x80000000, 0xFF800001, 1], np.uint32).view(np.float32)
  variants = ((1, False), (2, False), (1, True), (2, True))
  for shape in ((2, 13, 10), (3, 64, 32), (1, 8, 8), (2, 7, 9), (2, 48, 16), (2, 256, 24)):
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[: specials.size] = specials
    for (threads, streaming), tiles in itertools.product(variants, (False, True)):
      got = np.asarray(transpose3(x, threads=threads, streaming=streaming, tiles=tiles))
      if got.tobytes() != x.transpose(0, 2, 1).tobytes():
        failures.append(f"transpose {shape}, {threads} thread(s), {streaming=}, {tiles=}")
  for dtype in (np.float32, np.float16, np.int8):
    for shape, repeats in (
      ((5, 7), (3, 2)),
      ((4, 4), (1, 3)),
      ((3, 6), (2, 1)),
      ((9, 100), (2, 3)),
    ):
      x = (rng.standard_normal(shape) * 50).astype(dtype)
      for threads, streaming in variants:
        got = np.asarray(tile2(x, repeats, threads=threads, streaming=streaming))
        if got.tobytes() != np.tile(x, repeats).tobytes():
          failures.append(f"tile {np.dtype(dtype).name} {shape} by {repeats}")
  for shape, axis, sizes in (
    ((6, 300), 0, (1, 3, 2)),
    ((5, 7, 300), 1, (4, 0, 3)),
    ((3, 70), 1, (64, 6)),
  ):
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[: specials.size] = specials
    want = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    for threads, streaming in ((1, False), (2, False), (2, True)):
      options = dict(axis=axis, threads=threads, streaming=streaming)
      got = [np.asarray(g) for g in split(x, sizes, **options)]
      if [g.tobytes() for g in got] != [w.tobytes() for w in want]:
        failures.append(f"split {shape} axis {axis}, {threads} thread(s), streaming {streaming}")
  return failures


def check_index_rules(dml, jax, np) -> list[str]:
  """The row gather against dml.gather_nd on edge indices, dtypes, index dtypes, and vmap."""
  failures = []
  rng = np.random.default_rng(7)
  shape = (5, 3, 4)
  edges = [0, 1, 2, 4, 5, 6, -1, -3, -5, -6, -7, 2**31 - 1, -(2**31)]
  pairs = np.array([(a, b) for a in edges for b in edges], np.int64)
  for dtype in (np.float32, np.float16, np.int8, np.uint8, np.int16, np.uint32):
    data = (rng.standard_normal(shape) * 50).astype(dtype)
    for index_dtype in (np.int32, np.uint32):
      indices = pairs.astype(index_dtype).reshape(1, -1, 2)
      for threads in (1, 2):
        want = np.asarray(dml.gather_nd(data, indices))
        got = np.asarray(
          jax.jit(lambda x, i, t=threads: gather_rows(x, i, threads=t))(data, indices)
        )
        if want.shape != got.shape or want.tobytes() != got.tobytes():
          failures.append(f"row gather {np.dtype(dtype).name}, {index_dtype.__name__} indices")
  # 64-bit indices (jax keeps them only with x64 on), values past 32 bits among them.
  wide = [*edges, 2**32, 2**32 + 1, -(2**32), 2**63 - 1, -(2**63)]
  pairs = np.array([(a, b) for a in wide for b in wide], np.int64)
  data = rng.standard_normal(shape).astype(np.float32)
  with jax.enable_x64(True):
    for index_dtype in (np.int64, np.uint64):
      indices = pairs.astype(index_dtype).reshape(1, -1, 2)
      want = np.asarray(dml.gather_nd(data, indices))
      got = np.asarray(jax.jit(gather_rows)(data, indices))
      if want.shape != got.shape or want.tobytes() != got.tobytes():
        failures.append(f"row gather, {index_dtype.__name__} indices")
  # vmap over a batch of inputs and indices.
  data = rng.standard_normal((3, *shape)).astype(np.float32)
  indices = rng.integers(-7, 7, (3, 1, 10, 2)).astype(np.int32)
  want = np.asarray(jax.vmap(dml.gather_nd)(data, indices))
  got = np.asarray(jax.jit(jax.vmap(gather_rows))(data, indices))
  if want.tobytes() != got.tobytes():
    failures.append("row gather under vmap")
  for axis in (0, 1, 2):
    pieces = [rng.standard_normal((3, 4, 5)).astype(np.float16) for _ in range(3)]
    for threads in (1, 2):
      want = np.asarray(dml.join(pieces, axis=axis))
      got = np.asarray(jax.jit(lambda *p, a=axis, t=threads: join(p, axis=a, threads=t))(*pieces))
      if want.tobytes() != got.tobytes():
        failures.append(f"join f16 axis {axis}")
  return failures


def load_protocol():
  name = "dml_jax_benchmark_cpu_protocol"
  if name not in sys.modules:
    spec = importlib.util.spec_from_file_location(name, PROTOCOL)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
  return sys.modules[name]


def cached_gather_nd(run, size: str, ort_env, np, jax, dml):
  """gather_nd_cached: (description, inputs, dml_jax's jitted function, ONNX Runtime's Impl)."""
  shape, tuples = CACHED[size]
  rng = np.random.default_rng(2000)
  data = run.random_data(rng, shape, np.float32)
  indices = np.stack(
    [rng.integers(0, shape[0], (1, tuples)), rng.integers(0, shape[1], (1, tuples))], axis=-1
  ).astype(np.int32)
  out_shape = (1, tuples, shape[2])
  feeds = {"data": data, "indices": indices.astype(np.int64)}
  model = run.onnx_model(ort_env, "GatherND", list(feeds.items()), np.empty(out_shape, np.float32))
  description = (
    f"GATHER_ND of {tuples} int32 2-tuples into f32 {shape}: rows of {shape[2] * 4} bytes ->"
    f" {out_shape} (the probe's own case)"
  )
  inputs = (jax.device_put(data), jax.device_put(indices))
  fn = jax.jit(lambda x, i: dml.gather_nd(x, i))
  return description, inputs, fn, run.ort_impl(ort_env, "GatherND", model, feeds, out_shape)


def ffi_forms(name: str) -> list[tuple[str, object]]:
  """The FFI sides of a case: (name, jitted function of the case's inputs)."""
  import jax

  if name in ("gather_nd", "gather_nd_cached"):
    form = lambda t, nt: lambda x, i: gather_rows(x, i, threads=t)  # noqa: E731
  elif name == "gather_rows":
    # GATHER of rows, indices (1, count): a row gather of 1-tuples, output (count, width).
    def form(t, nt):
      return lambda x, i: gather_rows(x, i[..., None], threads=t).reshape(i.shape[1], x.shape[1])
  elif name == "tile_both":
    form = lambda t, nt: lambda x: tile2(x, (4, 4), threads=t, streaming=nt)  # noqa: E731
  elif name == "element_wise_identity_nhwc_to_nchw":

    def form(t, nt, tiles=False):
      def nchw(x):
        n, h, w, c = x.shape
        flat = x.reshape(n, h * w, c)
        return transpose3(flat, threads=t, streaming=nt, tiles=tiles).reshape(n, c, h, w)

      return nchw
  elif name.startswith("split_axis"):
    axis = int(name[-1])

    def form(t, nt):
      return lambda x: split(x, (x.shape[axis] // 4,) * 4, axis=axis, threads=t, streaming=nt)
  else:
    axis = 0 if name == "join_axis0" else 1
    form = lambda t, nt: lambda *xs: join(xs, axis=axis, threads=t)  # noqa: E731
  # Non-temporal stores where the kernel has them (SPLIT, TILE, the transpose).
  streams = name.startswith("split_axis") or name in (
    "tile_both",
    "element_wise_identity_nhwc_to_nchw",
  )
  variants = [(1, False), (2, False)] + ([(1, True), (2, True)] if streams else [])
  sides = [(f"ffi {t} thr{' NT' if nt else ''}", jax.jit(form(t, nt))) for t, nt in variants]
  if name == "element_wise_identity_nhwc_to_nchw":
    sides += [
      (f"tiles {t} thr{' NT' if nt else ''}", jax.jit(form(t, nt, True)))
      for t, nt in ((1, False), (2, False), (1, True), (2, True))
    ]
  return sides


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description="The FFI row gather and JOIN against dml_jax, ORT.")
  parser.add_argument("--setup", action="store_true", help="dml_jax.cpu.configure_allocator()")
  parser.add_argument("--size", choices=("small", "tiny"), default="small")
  parser.add_argument("--rounds", type=int, default=9)
  parser.add_argument("--rest-ms", type=float, default=100.0)
  parser.add_argument("--only", help="comma-separated cases: " + ",".join(CASES))
  args = parser.parse_args(argv)
  import dml_jax as dml

  setup = dml.cpu.configure_allocator().summary if args.setup else None
  missing = [m for m in ("onnxruntime", "onnx") if importlib.util.find_spec(m) is None]
  if missing:
    print(f"cpu_ffi_probe: {' and '.join(missing)} not installed", file=sys.stderr)
    return 2
  import jax
  import numpy as np
  import onnx
  import onnxruntime as ort

  protocol = load_protocol()
  run = protocol.load_run()
  names = [n for n in (args.only.split(",") if args.only else CASES) if n]
  unknown = [n for n in names if n not in CASES]
  if unknown:
    parser.error(f"unknown case {unknown}; cases: {', '.join(CASES)}")
  with tempfile.TemporaryDirectory() as directory:
    try:
      lib = build_kernel(directory)
    except UnavailableError as e:
      print(f"cpu_ffi_probe: {e}", file=sys.stderr)
      return 2
    register(lib)
  cpu = next(
    (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if "model name" in line),
    platform.machine(),
  )
  print(
    f"# {cpu}, jax {jax.__version__}, jaxlib {run._version('jaxlib')}, onnxruntime"
    f" {ort.__version__}; {'configure_allocator(): ' + setup if setup else 'plain process'};"
    f" size {args.size}, {args.rounds} rounds, rest {args.rest_ms:g} ms; load {run._load()}"
  )
  failures = check_index_rules(dml, jax, np)
  print(
    "index rules, dtypes, 64-bit indices, vmap: "
    + ("ok" if not failures else "FAIL: " + "; ".join(failures))
  )
  layout = check_layout_kernels(jax, np)
  print(
    "TILE, transpose and SPLIT kernels: " + ("ok" if not layout else "FAIL: " + "; ".join(layout))
  )
  failures += layout
  preset = run.PRESETS[args.size]
  env_cpu = run.Env("cpu", False)
  for name in names:
    ort_env = run.Env("cpu", False, ort=protocol.UserSessions(ort, "default"), onnx=onnx)
    if name == "gather_nd_cached":
      description, inputs, dml_fn, ort_impl = cached_gather_nd(
        run, args.size, ort_env, np, jax, dml
      )
    else:
      seed = 1000 + list(run.CASES).index(name)  # as cpu_protocol seeds it
      case = run.CASES[name].build(args.size, np.random.default_rng(seed))
      description, inputs, dml_fn = case.description, case.inputs, case.dml
      ort_impl = next(i for i in case.peers(ort_env, case.host) if i.kind == "ort")
      del case
    sides = [
      protocol.Side("dml_jax", run.jax_impl(env_cpu, "dml_jax", "dml", dml_fn, *inputs)),
      *(
        protocol.Side(label, run.jax_impl(env_cpu, label, "ffi", fn, *inputs))
        for label, fn in ffi_forms(name)
      ),
      protocol.Side("ORT", ort_impl),
    ]
    want = np.asarray(sides[0].impl.call())
    for side in sides[1:]:
      got = np.asarray(side.impl.to_numpy(side.impl.call()))
      if not run.bit_equal(want, got):
        failures.append(f"{name}: {side.name} vs dml_jax: {run.mismatch(want, got)}")
    del want
    for side in sides:
      protocol.calibrate(run, side, preset)
    protocol.run_rounds(run, sides, args.rounds, args.rest_ms / 1e3)
    ort_side = sides[-1]
    ort_ms = statistics.median(ort_side.seconds) * 1e3
    print(f"\n{name}: {description}")
    print(f"  {'side':14s} {'ms':>8s} {'ORT/side':>9s} {'[quartiles]':>14s}", end="")
    print(f" {'dml/side':>9s} {'[quartiles]':>14s} {'faults/call':>12s}")
    for side in sides:
      ms = statistics.median(side.seconds) * 1e3
      per_round = [o / s for o, s in zip(ort_side.seconds, side.seconds, strict=True)]
      lo, hi = protocol._quartiles(per_round)
      vs_dml = [d / s for d, s in zip(sides[0].seconds, side.seconds, strict=True)]
      dlo, dhi = protocol._quartiles(vs_dml)
      dml_ms = statistics.median(sides[0].seconds) * 1e3
      print(
        f"  {side.name:14s} {ms:8.3f} {ort_ms / ms:9.2f} {f'[{lo:.2f}..{hi:.2f}]':>14s}"
        f" {dml_ms / ms:9.2f} {f'[{dlo:.2f}..{dhi:.2f}]':>14s}"
        f" {statistics.median(side.faults):12.1f}"
      )
    del sides, inputs, dml_fn, ort_impl
  print(f"\nload at the end: {run._load()}")
  for failure in failures:
    print(f"FAILED: {failure}")
  if not failures:
    print("all checks passed (FFI kernels and ONNX Runtime vs dml_jax, bit for bit)")
  return 1 if failures else 0


if __name__ == "__main__":
  sys.exit(main())
