// TOP_K and TOP_K1 on the CPU: each lane's K first elements in the selection order, by a
// partial selection. The input is viewed as (outer, length, inner), the lanes running along
// `length`. Elements rank by integer keys (`Key`): floats by their bits with -0.0 made +0.0 and
// every NaN one positive NaN (above +inf), the bits of negative numbers flipped; unsigned
// integers with the top bit flipped; signed integers as they are; complemented for the ascending
// order. Of equal keys the earlier position ranks first, so (key, position) is a total order.
//
// Each lane keeps a heap of its K best elements so far (`Selection`), its root the last of
// them; a later element enters in place of the root where its key beats the root's (an element
// of equal key comes later than every held one of that key, so cannot rank among the K first).
// Most elements of a long lane meet only that comparison, made for a block of elements at a
// time (`Passing`, vectorized; floats compared as floats against the root's value) and
// repeated with the exact key for each element that passes. At the end the heap is sorted and
// written: the input's own elements (their bits) and their positions (UINT32).
//
// Lanes along the last axis (inner 1) are read in place, one lane at a time; lanes along an
// earlier axis a block of up to kLanes neighbours at a time, a row of the block (adjacent
// elements) at each step. Items of work go to XLA's intra-op pool. Attributes: length, inner (the
// view), k, descending (0 or 1).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "streaming_copies.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int64_t kBlock = 16;              // elements of a row lane tested at a time
constexpr int64_t kLanes = 16;              // neighbouring lanes walked together (inner > 1)
constexpr int64_t kItemElements = 1 << 16;  // the elements of an item of work, about

// The integer key of an element: larger ranks first in the descending order.
template <typename T>
struct Keys;

template <>
struct Keys<float> {
  using Key = int32_t;
  static Key Of(float x) {
    int32_t b;
    std::memcpy(&b, &x, sizeof b);
    const int32_t magnitude = b & 0x7fffffff;
    b = magnitude == 0 ? 0 : b;
    b = magnitude > 0x7f800000 ? 0x7fc00000 : b;
    return b ^ ((b >> 31) & 0x7fffffff);
  }
};

template <>
struct Keys<double> {
  using Key = int64_t;
  static Key Of(double x) {
    int64_t b;
    std::memcpy(&b, &x, sizeof b);
    const int64_t magnitude = b & 0x7fffffffffffffffLL;
    b = magnitude == 0 ? 0 : b;
    b = magnitude > 0x7ff0000000000000LL ? 0x7ff8000000000000LL : b;
    return b ^ ((b >> 63) & 0x7fffffffffffffffLL);
  }
};

template <>
struct Keys<int32_t> {
  using Key = int32_t;
  static Key Of(int32_t x) { return x; }
};

template <>
struct Keys<uint32_t> {
  using Key = int32_t;
  static Key Of(uint32_t x) { return int32_t(x ^ 0x80000000u); }
};

template <>
struct Keys<int64_t> {
  using Key = int64_t;
  static Key Of(int64_t x) { return x; }
};

template <>
struct Keys<uint64_t> {
  using Key = int64_t;
  static Key Of(uint64_t x) { return int64_t(x ^ 0x8000000000000000ull); }
};

// The key in the selection order: the complement (which cannot overflow) for the ascending one.
template <typename T, bool kDescending>
inline typename Keys<T>::Key KeyOf(T x) {
  const auto key = Keys<T>::Of(x);
  return kDescending ? key : ~key;
}

// A first, vectorized test of elements against a lane's threshold key: Passes(x) is true for
// every x whose key beats it, and may be for others (the key decides). Floats compare as
// floats with the threshold's value, which is cheaper than their keys: a NaN, or a NaN
// threshold, passes, and -0.0 meets 0.0 as equal.
template <typename T, bool kDescending, bool = std::is_floating_point_v<T>>
struct Filter {
  typename Keys<T>::Key threshold = 0;
  Filter() = default;
  explicit Filter(typename Keys<T>::Key key) : threshold(key) {}
  bool Passes(T x) const { return KeyOf<T, kDescending>(x) > threshold; }
};

template <typename T, bool kDescending>
struct Filter<T, kDescending, true> {
  T threshold = 0;
  Filter() = default;
  explicit Filter(typename Keys<T>::Key key) {
    using Key = typename Keys<T>::Key;
    if (!kDescending) key = ~key;
    const Key bits = key ^ Key(std::make_unsigned_t<Key>(key >> (8 * sizeof(Key) - 1)) >> 1);
    std::memcpy(&threshold, &bits, sizeof threshold);
  }
  bool Passes(T x) const { return kDescending ? !(x <= threshold) : !(x >= threshold); }
};

// A bit for each of the kBlock elements at `in` that passes `filter`.
template <typename T, bool kDescending>
inline uint32_t Passing(const T* in, const Filter<T, kDescending>& filter) {
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    const __m128 threshold = _mm_set1_ps(filter.threshold);
    uint32_t bits = 0;
    for (int64_t j = 0; j < kBlock; j += 4) {
      const __m128 x = _mm_loadu_ps(in + j);
      const __m128 passes =
          kDescending ? _mm_cmpnle_ps(x, threshold) : _mm_cmpnge_ps(x, threshold);
      bits |= uint32_t(_mm_movemask_ps(passes)) << j;
    }
    return bits;
  }
#endif
  uint32_t bits = 0;
  for (int64_t j = 0; j < kBlock; ++j) bits |= uint32_t(filter.Passes(in[j])) << j;
  return bits;
}

// A bit for each lane w < width whose element row[w] passes filters[w] (kLanes of them, the
// filters contiguous: each holds its threshold alone).
template <typename T, bool kDescending>
inline uint32_t PassingRow(const T* row, const Filter<T, kDescending>* filters, int64_t width) {
  static_assert(sizeof(Filter<T, kDescending>) == sizeof(filters->threshold));
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    if (width == kLanes) {
      const float* limits = &filters->threshold;
      uint32_t bits = 0;
      for (int64_t w = 0; w < kLanes; w += 4) {
        const __m128 x = _mm_loadu_ps(row + w), limit = _mm_loadu_ps(limits + w);
        const __m128 passes = kDescending ? _mm_cmpnle_ps(x, limit) : _mm_cmpnge_ps(x, limit);
        bits |= uint32_t(_mm_movemask_ps(passes)) << w;
      }
      return bits;
    }
  }
#endif
  uint32_t bits = 0;
  for (int64_t w = 0; w < width; ++w) bits |= uint32_t(filters[w].Passes(row[w])) << w;
  return bits;
}

template <typename Key>
struct Entry {
  Key key;
  uint32_t position;
};

template <typename Key>
inline bool Before(const Entry<Key>& a, const Entry<Key>& b) {
  return a.key > b.key || (a.key == b.key && a.position < b.position);
}

// One lane's k best elements so far, a heap in `buffer` (room for k) whose root is the last of
// them in the selection order; its key is the threshold a later element must beat.
template <typename Key>
struct Selection {
  Entry<Key>* buffer;
  int64_t k, size = 0;
  Key threshold = 0;

  // Takes the lane's first k elements, whatever their keys.
  void Seed(Key key, uint32_t position) {
    buffer[size++] = {key, position};
    if (size == k) {
      std::make_heap(buffer, buffer + k, Before<Key>);
      threshold = buffer[0].key;
    }
  }

  // Takes a later element whose key beats the threshold, in place of the root.
  void Push(Key key, uint32_t position) {
    const Entry<Key> entry{key, position};
    int64_t at = 0;
    for (;;) {
      int64_t child = 2 * at + 1;
      if (child >= k) break;
      if (child + 1 < k && Before(buffer[child], buffer[child + 1])) ++child;
      if (!Before(entry, buffer[child])) break;
      buffer[at] = buffer[child];
      at = child;
    }
    buffer[at] = entry;
    threshold = buffer[0].key;
  }

  // The k best, sorted, in the buffer.
  void Finish() { std::sort_heap(buffer, buffer + k, Before<Key>); }
};

// A lane of `length` contiguous elements (inner 1) into `values` and `positions` (k each).
template <typename T, bool kDescending>
void SelectRow(const T* __restrict__ in, T* __restrict__ values, uint32_t* __restrict__ positions,
               int64_t length, int64_t k, std::vector<Entry<typename Keys<T>::Key>>& scratch) {
  using Key = typename Keys<T>::Key;
  scratch.resize(size_t(k));
  Selection<Key> lane{scratch.data(), k};
  for (int64_t i = 0; i < k; ++i) lane.Seed(KeyOf<T, kDescending>(in[i]), uint32_t(i));
  int64_t i = k;
  Filter<T, kDescending> filter(lane.threshold);
  for (; i + kBlock <= length; i += kBlock) {
    uint32_t passing = Passing<T, kDescending>(in + i, filter);
    if (passing == 0) continue;
    for (; passing != 0; passing &= passing - 1) {
      const int64_t at = i + __builtin_ctz(passing);
      const Key key = KeyOf<T, kDescending>(in[at]);
      if (key > lane.threshold) lane.Push(key, uint32_t(at));
    }
    filter = Filter<T, kDescending>(lane.threshold);
  }
  for (; i < length; ++i) {
    const Key key = KeyOf<T, kDescending>(in[i]);
    if (key > lane.threshold) lane.Push(key, uint32_t(i));
  }
  lane.Finish();
  for (int64_t j = 0; j < k; ++j) {
    positions[j] = lane.buffer[j].position;
    values[j] = in[lane.buffer[j].position];
  }
}

// `width` (up to kLanes) neighbouring lanes along an earlier axis: element i of lane w at
// in[i * inner + w]; their outputs at values[j * inner + w], positions likewise.
template <typename T, bool kDescending>
void SelectColumns(const T* __restrict__ in, T* __restrict__ values,
                   uint32_t* __restrict__ positions, int64_t length, int64_t inner, int64_t width,
                   int64_t k, std::vector<Entry<typename Keys<T>::Key>>& scratch) {
  using Key = typename Keys<T>::Key;
  scratch.resize(size_t(k * width));
  Selection<Key> lanes[kLanes];
  for (int64_t w = 0; w < width; ++w) lanes[w] = {scratch.data() + w * k, k};
  for (int64_t i = 0; i < k; ++i)
    for (int64_t w = 0; w < width; ++w)
      lanes[w].Seed(KeyOf<T, kDescending>(in[i * inner + w]), uint32_t(i));
  Filter<T, kDescending> filters[kLanes];
  for (int64_t w = 0; w < width; ++w) filters[w] = Filter<T, kDescending>(lanes[w].threshold);
  for (int64_t i = k; i < length; ++i) {
    const T* row = in + i * inner;
    uint32_t passing = PassingRow<T, kDescending>(row, filters, width);
    for (; passing != 0; passing &= passing - 1) {
      const int64_t w = __builtin_ctz(passing);
      const Key key = KeyOf<T, kDescending>(row[w]);
      if (key > lanes[w].threshold) {
        lanes[w].Push(key, uint32_t(i));
        filters[w] = Filter<T, kDescending>(lanes[w].threshold);
      }
    }
  }
  for (int64_t w = 0; w < width; ++w) {
    lanes[w].Finish();
    for (int64_t j = 0; j < k; ++j) {
      const uint32_t position = lanes[w].buffer[j].position;
      positions[j * inner + w] = position;
      values[j * inner + w] = in[int64_t(position) * inner + w];
    }
  }
}

template <typename T, bool kDescending>
void Select(ffi::ThreadPool& pool, const T* in, T* values, uint32_t* positions, int64_t outer,
            int64_t length, int64_t inner, int64_t k) {
  using Key = typename Keys<T>::Key;
  if (inner == 1) {  // row lanes, several an item where they are short
    const int64_t per_item = std::max<int64_t>(1, kItemElements / length);
    const int64_t items = (outer + per_item - 1) / per_item;
    dml_jax::ForEachItem(pool, items, pool.num_threads() - 1, [&](int64_t item) {
      std::vector<Entry<Key>> scratch;
      const int64_t end = std::min(outer, (item + 1) * per_item);
      for (int64_t o = item * per_item; o < end; ++o)
        SelectRow<T, kDescending>(in + o * length, values + o * k, positions + o * k, length, k,
                                  scratch);
    });
    return;
  }
  // Items: (outer index, block of kLanes inner positions) pairs, several where lanes are short.
  const int64_t blocks = (inner + kLanes - 1) / kLanes;
  const int64_t units = outer * blocks;
  const int64_t per_item =
      std::max<int64_t>(1, kItemElements / (length * std::min(inner, kLanes)));
  const int64_t items = (units + per_item - 1) / per_item;
  dml_jax::ForEachItem(pool, items, pool.num_threads() - 1, [&](int64_t item) {
    std::vector<Entry<Key>> scratch;
    const int64_t end = std::min(units, (item + 1) * per_item);
    for (int64_t u = item * per_item; u < end; ++u) {
      const int64_t o = u / blocks, begin = (u % blocks) * kLanes;
      const int64_t width = std::min(kLanes, inner - begin);
      SelectColumns<T, kDescending>(in + o * length * inner + begin,
                                    values + o * k * inner + begin,
                                    positions + o * k * inner + begin, length, inner, width, k,
                                    scratch);
    }
  });
}

template <typename T>
void Dispatch(ffi::ThreadPool& pool, const void* in, void* values, uint32_t* positions,
              int64_t outer, int64_t length, int64_t inner, int64_t k, bool descending) {
  if (descending)
    Select<T, true>(pool, static_cast<const T*>(in), static_cast<T*>(values), positions, outer,
                    length, inner, k);
  else
    Select<T, false>(pool, static_cast<const T*>(in), static_cast<T*>(values), positions, outer,
                     length, inner, k);
}

ffi::Error TopKImpl(ffi::ThreadPool pool, ffi::AnyBuffer input,
                    ffi::Result<ffi::AnyBuffer> values, ffi::Result<ffi::Buffer<ffi::U32>> positions,
                    int64_t length, int64_t inner, int64_t k, int64_t descending) {
  const int64_t count = int64_t(input.element_count());
  if (input.element_type() != values->element_type())
    return ffi::Error::InvalidArgument("top_k: the values are not of the input's type");
  if (length < 1 || inner < 1 || k < 1 || k > length || length > int64_t(UINT32_MAX))
    return ffi::Error::InvalidArgument("top_k: (length, inner, k) is not a selection");
  if (count % (length * inner) != 0)
    return ffi::Error::InvalidArgument("top_k: (length, inner) is not a view of the input");
  const int64_t outer = count / (length * inner);
  if (int64_t(values->element_count()) != outer * k * inner ||
      int64_t(positions->element_count()) != outer * k * inner)
    return ffi::Error::InvalidArgument("top_k: the outputs are not (outer, k, inner)");
  if (count == 0) return ffi::Error::Success();
  const void* in = input.untyped_data();
  void* out = values->untyped_data();
  uint32_t* at = positions->typed_data();
#define DML_JAX_SELECT(TYPE) \
  Dispatch<TYPE>(pool, in, out, at, outer, length, inner, k, descending != 0)
  switch (input.element_type()) {
    case ffi::DataType::F32: DML_JAX_SELECT(float); break;
    case ffi::DataType::F64: DML_JAX_SELECT(double); break;
    case ffi::DataType::S32: DML_JAX_SELECT(int32_t); break;
    case ffi::DataType::U32: DML_JAX_SELECT(uint32_t); break;
    case ffi::DataType::S64: DML_JAX_SELECT(int64_t); break;
    case ffi::DataType::U64: DML_JAX_SELECT(uint64_t); break;
    default: return ffi::Error::InvalidArgument("top_k: an element type it does not take");
  }
#undef DML_JAX_SELECT
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(DmlJaxTopK, TopKImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Attr<int64_t>("length")
                                  .Attr<int64_t>("inner")
                                  .Attr<int64_t>("k")
                                  .Attr<int64_t>("descending"));
