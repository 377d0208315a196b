// The tensor layer's layout change on the CPU (an NHWC buffer read as NCHW, and every strided
// read that merges to it): (..., R, C) -> (..., C, R), the last two dimensions swapped, for
// 32-bit elements moved as bits.
//
// Each matrix is walked in blocks of 128 input rows; within a block, each group of 8 columns
// walks down the rows 16 at a time: two 8 x 8 blocks transposed in AVX2 registers into an
// 8 x 16 buffer, whose rows are 64 bytes of 8 output rows. Those are whole cache lines where
// the output rows are 32-byte aligned, stored with non-temporal stores: no read of the line
// first, and no eviction of the input from the caches. Rows and columns past the last whole
// block take a plain loop, as does a processor without AVX2, where the library does not choose
// this kernel (DmlJaxTransposeAvx2 says which).
//
// Work items are runs of up to 256 input rows of one matrix, shared with XLA's intra-op pool
// (streaming_copies.h).
#include <algorithm>
#include <cstdint>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define DML_JAX_X86 1
#endif

#include "streaming_copies.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int64_t kItemRows = 256;   // input rows per item of work
constexpr int64_t kBlockRows = 128;  // input rows per column group's walk

// Rows [i0, i1) and columns [j0, j1) of the (r, c) matrix `source` into the (c, r) `target`.
void TransposePlain(const uint32_t* source, uint32_t* target, int64_t r, int64_t c, int64_t i0,
                    int64_t i1, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; ++j)
    for (int64_t i = i0; i < i1; ++i) target[j * r + i] = source[i * c + j];
}

#if defined(DML_JAX_X86)
// 8 rows of 8 (stride ls) become 8 rows of 8 (stride ld), in registers.
__attribute__((target("avx2"), always_inline)) inline void Transpose8x8(const float* s,
                                                                         int64_t ls, float* d,
                                                                         int64_t ld) {
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

// Rows [i0, i1) of the (r, c) matrix `source` into the (c, r) `target`: the whole 16 x 8
// blocks in registers, `streaming` with non-temporal stores (which needs target and r * 4 to be
// multiples of 32 bytes), the edges in the plain loop.
__attribute__((target("avx2"))) void TransposeAvx2(const uint32_t* source, uint32_t* target,
                                                   int64_t r, int64_t c, int64_t i0, int64_t i1,
                                                   bool streaming) {
  alignas(64) float lines[8 * 16];
  const float* s = reinterpret_cast<const float*>(source);
  float* d = reinterpret_cast<float*>(target);
  int64_t whole_rows = i0 + (i1 - i0) / 16 * 16, whole_columns = c / 8 * 8;
  for (int64_t block = i0; block < whole_rows; block += kBlockRows)
    for (int64_t j = 0; j < whole_columns; j += 8)
      for (int64_t i = block; i < std::min(whole_rows, block + kBlockRows); i += 16) {
        Transpose8x8(s + i * c + j, c, lines, 16);
        Transpose8x8(s + (i + 8) * c + j, c, lines + 8, 16);
        for (int k = 0; k < 8; ++k) {
          float* to = d + (j + k) * r + i;
          __m256 a = _mm256_load_ps(lines + k * 16), b = _mm256_load_ps(lines + k * 16 + 8);
          if (streaming) {
            _mm256_stream_ps(to, a);
            _mm256_stream_ps(to + 8, b);
          } else {
            _mm256_storeu_ps(to, a);
            _mm256_storeu_ps(to + 8, b);
          }
        }
      }
  TransposePlain(source, target, r, c, i0, whole_rows, whole_columns, c);
  TransposePlain(source, target, r, c, whole_rows, i1, 0, c);
}
#endif

bool HasAvx2() {
#if defined(DML_JAX_X86) && (defined(__GNUC__) || defined(__clang__))
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
#else
  return false;
#endif
}

ffi::Error TransposeImpl(ffi::ThreadPool pool, ffi::AnyBuffer input,
                         ffi::Result<ffi::AnyBuffer> output) {
  auto dims = input.dimensions();
  int64_t rank = int64_t(dims.size());
  if (rank < 2 || ffi::ByteWidth(input.element_type()) != 4)
    return ffi::Error::InvalidArgument("transpose: (..., R, C) of 32-bit elements only");
  int64_t r = dims[rank - 2], c = dims[rank - 1];
  if (r == 0 || c == 0) return ffi::Error::Success();
  int64_t matrices = int64_t(input.element_count()) / (r * c);
  int64_t per_matrix = (r + kItemRows - 1) / kItemRows;
  const uint32_t* source = static_cast<const uint32_t*>(input.untyped_data());
  uint32_t* target = static_cast<uint32_t*>(output->untyped_data());
  const bool fast = HasAvx2();
  const bool streaming = r % 8 == 0 && reinterpret_cast<uintptr_t>(target) % 32 == 0;
  int64_t helpers = pool.num_threads() - 1;  // the calling thread works too
  dml_jax::ForEachItem(pool, matrices * per_matrix, helpers, [&](int64_t item) {
    int64_t m = item / per_matrix, i0 = item % per_matrix * kItemRows;
    int64_t i1 = std::min(r, i0 + kItemRows);
    const uint32_t* from = source + m * r * c;
    uint32_t* to = target + m * r * c;
#if defined(DML_JAX_X86)
    if (fast) {
      TransposeAvx2(from, to, r, c, i0, i1, streaming);
      return;
    }
#endif
    TransposePlain(from, to, r, c, i0, i1, 0, c);
  });
  return ffi::Error::Success();
}

}  // namespace

// Whether the blocks run in AVX2 registers on this processor (1) or in the plain loop (0); the
// library asks before it picks this kernel over XLA's transpose.
extern "C" int DmlJaxTransposeAvx2() { return HasAvx2() ? 1 : 0; }

XLA_FFI_DEFINE_HANDLER_SYMBOL(DmlJaxTranspose, TransposeImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>());
