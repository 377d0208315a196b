// ARGMIN and ARGMAX on the CPU: the position of the extreme of each lane, in one pass over the
// input. The input is viewed as (outer, length, inner), the lanes running along `length`.
//
// Each element becomes an int32 key that ranks as the selection order does (dml_jax's
// axis_direction): for floats, the magnitude's bits, negated for a negative sign (so -0.0 and
// 0.0 are both 0), and every NaN one key above +inf; integers are their own keys (unsigned ones
// with the top bit flipped). ARGMIN takes the keys' complement, so that both pick the largest
// key. INCREASING keeps the first of equal keys (a later element replaces the best only where
// it is greater), DECREASING the last (where it is greater or equal).
//
// Along the last axis (inner 1) a row is read in chunks of 16 elements (8 without AVX2), each lane keeping
// its own best key and position (the loop vectorizes across the lanes); the lanes are merged at
// the end with the tie rule, then the tail. Along an earlier axis a work item carries the best
// keys and positions of a block of up to kBlock inner positions down the length, the rows in
// order (vectorizes across the block). Items run on the calling thread and XLA's intra-op pool.
// The loops are compiled twice, plainly and for AVX2, which runs where the processor has it.
//
// Attributes: length, inner (the view), largest, last_wins (0 or 1). The output holds
// outer * inner positions, of a 32- or 64-bit integer type.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "streaming_copies.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int64_t kBlock = 1024;            // inner positions an item carries at most
constexpr int64_t kItemElements = 1 << 16;  // the elements of an item of work, about

// The element's key, as an int32 that ranks in the selection order.
template <typename T>
__attribute__((always_inline)) inline int32_t Key(T x) {
  if constexpr (std::is_same_v<T, float>) {
    int32_t bits;
    std::memcpy(&bits, &x, 4);
    const int32_t magnitude = bits & 0x7FFFFFFF;
    const int32_t sign = bits >> 31;  // 0 or -1
    const int32_t signed_magnitude = (magnitude ^ sign) - sign;
    return magnitude > 0x7F800000 ? 0x7F800001 : signed_magnitude;
  } else if constexpr (std::is_same_v<T, uint16_t>) {  // FLOAT16's bits
    const int32_t bits = int16_t(x);
    const int32_t magnitude = bits & 0x7FFF;
    const int32_t sign = bits >> 31;
    const int32_t signed_magnitude = (magnitude ^ sign) - sign;
    return magnitude > 0x7C00 ? 0x7C01 : signed_magnitude;
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    return int32_t(x ^ 0x80000000u);
  } else {  // int32: the value
    return int32_t(x);
  }
}

// The key as compared: ARGMIN's complemented, so that both pick the largest.
template <typename T>
__attribute__((always_inline)) inline int32_t Ranked(T x, int32_t flip) {
  return Key(x) ^ flip;
}

template <bool kLastWins>
__attribute__((always_inline)) inline bool Better(int32_t key, int32_t best) {
  return kLastWins ? key >= best : key > best;
}

// A register of kWidth keys (GCC's and clang's vector extensions): 8 in AVX2's, 4 in SSE2's.
template <int kWidth>
struct Vectors {
  typedef int32_t Keys __attribute__((vector_size(kWidth * 4)));
  typedef int16_t HalfBits __attribute__((vector_size(kWidth * 2)));
};

// The ranked keys of at[0:kWidth], into `keys` (a reference: no vector crosses a call).
template <typename T, int kWidth>
__attribute__((always_inline)) inline void RankedKeys(const T* at, int32_t flip,
                                                      typename Vectors<kWidth>::Keys& keys) {
  using Keys = typename Vectors<kWidth>::Keys;
  using HalfBits = typename Vectors<kWidth>::HalfBits;
  if constexpr (sizeof(T) == 4) {
    std::memcpy(&keys, at, sizeof keys);
  } else {  // FLOAT16's bits, widened with their sign
    HalfBits half;
    std::memcpy(&half, at, sizeof half);
    keys = __builtin_convertvector(half, Keys);
  }
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, uint16_t>) {
    constexpr int32_t kMask = sizeof(T) == 4 ? 0x7FFFFFFF : 0x7FFF;
    constexpr int32_t kInfinity = sizeof(T) == 4 ? 0x7F800000 : 0x7C00;
    const Keys magnitude = keys & kMask;
    const Keys sign = keys >> 31;
    const Keys signed_magnitude = (magnitude ^ sign) - sign;
    keys = magnitude > kInfinity ? Keys{} + (kInfinity + 1) : signed_magnitude;
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    keys = keys ^ int32_t(0x80000000u);
  }
  keys ^= flip;
}

// The position of the extreme of each of `rows` rows of `length` elements (inner 1): two
// registers of kWidth lanes (two chains of comparisons), each lane its best key and position.
template <typename T, typename P, bool kLastWins, int kWidth>
__attribute__((always_inline)) inline void PickRows(const T* __restrict__ in, P* __restrict__ out,
                                                    int64_t rows, int64_t length, int32_t flip) {
  using Keys = typename Vectors<kWidth>::Keys;
  constexpr int64_t kLanes = 2 * kWidth;
  const int64_t whole = length / kLanes * kLanes;
  Keys first_positions;
  for (int64_t l = 0; l < kWidth; ++l) first_positions[l] = int32_t(l);
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = in + r * length;
    int32_t best_key = 0, best_at = -1;
    if (whole > 0) {
      Keys best[2], at[2] = {first_positions, first_positions + kWidth};
      RankedKeys<T, kWidth>(row, flip, best[0]);
      RankedKeys<T, kWidth>(row + kWidth, flip, best[1]);
      Keys positions = first_positions;
      for (int64_t j = kLanes; j < whole; j += kLanes) {
        positions += kLanes;
        for (int h = 0; h < 2; ++h) {
          Keys keys;
          RankedKeys<T, kWidth>(row + j + h * kWidth, flip, keys);
          const Keys better = kLastWins ? keys >= best[h] : keys > best[h];
          best[h] = better ? keys : best[h];
          at[h] = better ? positions + int32_t(h * kWidth) : at[h];
        }
      }
      best_key = best[0][0];
      best_at = at[0][0];
      for (int64_t l = 1; l < kLanes; ++l) {  // equal keys: the first (or last) position
        const int32_t key = best[l / kWidth][l % kWidth], position = at[l / kWidth][l % kWidth];
        if (key > best_key ||
            (key == best_key && (kLastWins ? position > best_at : position < best_at))) {
          best_key = key;
          best_at = position;
        }
      }
    }
    for (int64_t j = whole; j < length; ++j) {  // the tail: later than every lane's position
      const int32_t key = Ranked(row[j], flip);
      if (best_at < 0 || Better<kLastWins>(key, best_key)) {
        best_key = key;
        best_at = int32_t(j);
      }
    }
    out[r] = P(best_at);
  }
}

// The positions of the extremes of inner positions [begin, end) of one outer index, the rows
// of the length walked in order.
template <typename T, typename P, bool kLastWins>
__attribute__((always_inline)) inline void PickColumns(const T* __restrict__ in,
                                                       P* __restrict__ out, int64_t length,
                                                       int64_t inner, int64_t begin,
                                                       int64_t end, int32_t flip) {
  int32_t best[kBlock], at[kBlock];
  const int64_t width = end - begin;
  const T* row = in + begin;
  for (int64_t j = 0; j < width; ++j) {
    best[j] = Ranked(row[j], flip);
    at[j] = 0;
  }
  for (int64_t k = 1; k < length; ++k) {
    row += inner;
    const int32_t position = int32_t(k);
    for (int64_t j = 0; j < width; ++j) {
      const int32_t key = Ranked(row[j], flip);
      const bool better = Better<kLastWins>(key, best[j]);
      best[j] = better ? key : best[j];
      at[j] = better ? position : at[j];
    }
  }
  for (int64_t j = 0; j < width; ++j) out[begin + j] = P(at[j]);
}

struct View {
  int64_t outer, length, inner;
};

// One item of work: `item` of the call's items, as `Items` cut them.
template <typename T, typename P, bool kLastWins, int kWidth>
__attribute__((always_inline)) inline void RunItem(const T* in, P* out, View v, int32_t flip,
                                                   int64_t per_item, int64_t item) {
  if (v.inner == 1) {
    const int64_t first = item * per_item, rows = std::min(v.outer, first + per_item) - first;
    PickRows<T, P, kLastWins, kWidth>(in + first * v.length, out + first, rows, v.length, flip);
    return;
  }
  const int64_t blocks = (v.inner + kBlock - 1) / kBlock;
  const int64_t units = v.outer * blocks;
  const int64_t u_end = std::min(units, (item + 1) * per_item);
  for (int64_t u = item * per_item; u < u_end; ++u) {
    const int64_t o = u / blocks, b = u % blocks;
    const int64_t begin = b * kBlock, end = std::min(v.inner, begin + kBlock);
    PickColumns<T, P, kLastWins>(in + o * v.length * v.inner, out + o * v.inner,
                                           v.length, v.inner, begin, end, flip);
  }
}

template <typename T, typename P, bool kLastWins>
void RunItemPlain(const T* in, P* out, View v, int32_t flip, int64_t per_item, int64_t item) {
  RunItem<T, P, kLastWins, 4>(in, out, v, flip, per_item, item);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DML_JAX_X86 1
template <typename T, typename P, bool kLastWins>
__attribute__((target("avx2"), flatten)) void RunItemAvx2(const T* in, P* out, View v,
                                                          int32_t flip, int64_t per_item,
                                                          int64_t item) {
  RunItem<T, P, kLastWins, 8>(in, out, v, flip, per_item, item);
}
#endif

bool HasAvx2() {
#if defined(DML_JAX_X86)
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
#else
  return false;
#endif
}

template <typename T, typename P, bool kLastWins>
void Pick(ffi::ThreadPool& pool, const T* in, P* out, View v, int32_t flip) {
  int64_t per_item, items;
  if (v.inner == 1) {  // rows: several an item where they are short
    per_item = std::max<int64_t>(1, kItemElements / v.length);
    items = (v.outer + per_item - 1) / per_item;
  } else {  // (outer index, block) units: several an item where they are small
    const int64_t blocks = (v.inner + kBlock - 1) / kBlock;
    per_item = std::max<int64_t>(1, kItemElements / (v.length * std::min(v.inner, kBlock)));
    items = (v.outer * blocks + per_item - 1) / per_item;
  }
  auto run = &RunItemPlain<T, P, kLastWins>;
#if defined(DML_JAX_X86)
  if (HasAvx2()) run = &RunItemAvx2<T, P, kLastWins>;
#endif
  dml_jax::ForEachItem(pool, items, pool.num_threads() - 1,
                       [&](int64_t item) { run(in, out, v, flip, per_item, item); });
}

template <typename T, typename P>
void PickAny(ffi::ThreadPool& pool, const void* in, void* out, View v, bool largest,
             bool last_wins) {
  const T* x = static_cast<const T*>(in);
  P* positions = static_cast<P*>(out);
  const int32_t flip = largest ? 0 : -1;  // ARGMIN: the keys' complement
  if (last_wins)
    Pick<T, P, true>(pool, x, positions, v, flip);
  else
    Pick<T, P, false>(pool, x, positions, v, flip);
}

template <typename P>
ffi::Error PickTyped(ffi::ThreadPool& pool, ffi::DataType type, const void* in, void* out,
                     View v, bool largest, bool last_wins) {
  switch (type) {
    case ffi::DataType::F32: PickAny<float, P>(pool, in, out, v, largest, last_wins); break;
    case ffi::DataType::F16: PickAny<uint16_t, P>(pool, in, out, v, largest, last_wins); break;
    case ffi::DataType::S32: PickAny<int32_t, P>(pool, in, out, v, largest, last_wins); break;
    case ffi::DataType::U32: PickAny<uint32_t, P>(pool, in, out, v, largest, last_wins); break;
    default: return ffi::Error::InvalidArgument("arg_min_max: an element type it does not take");
  }
  return ffi::Error::Success();
}

ffi::Error ArgMinMaxImpl(ffi::ThreadPool pool, ffi::AnyBuffer input,
                         ffi::Result<ffi::AnyBuffer> output, int64_t length, int64_t inner,
                         int64_t largest, int64_t last_wins) {
  const int64_t count = int64_t(input.element_count());
  if (count == 0) return ffi::Error::Success();
  if (length < 1 || inner < 1 || count % (length * inner) != 0 || length > INT32_MAX)
    return ffi::Error::InvalidArgument("arg_min_max: (length, inner) is not a view of the input");
  const View v{count / (length * inner), length, inner};
  if (int64_t(output->element_count()) != v.outer * v.inner)
    return ffi::Error::InvalidArgument("arg_min_max: the output is not one position per lane");
  const void* in = input.untyped_data();
  void* out = output->untyped_data();
  switch (output->element_type()) {
    case ffi::DataType::S32:
    case ffi::DataType::U32:
      return PickTyped<uint32_t>(pool, input.element_type(), in, out, v, largest, last_wins);
    default: return ffi::Error::InvalidArgument("arg_min_max: positions of 32 bits only");
  }
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(DmlJaxArgMinMax, ArgMinMaxImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("length")
                                  .Attr<int64_t>("inner")
                                  .Attr<int64_t>("largest")
                                  .Attr<int64_t>("last_wins"));
