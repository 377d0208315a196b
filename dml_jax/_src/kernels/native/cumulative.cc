// CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT on the CPU: each lane's running tally, one
// element at a time in walking order. The input is viewed as (outer, length, inner), the lanes
// running along `length`; an item of work is one outer index and a block of inner positions
// (up to 4,096: long contiguous rows read fastest; blocks of 1,024 ran 5x slower along the
// first axis of a (1024, 2048) float32 input), whose tallies a loop over the length carries
// (the inner loop vectorizes across lanes, each lane's own order untouched: no fast-math, and
// adds or multiplies alone cannot contract into FMAs). The tally starts as the first element in walking order; an exclusive scan writes the
// tally before each element, the empty one (0 or 1) first. Integers wrap: they are computed as
// unsigned integers of their width. Attributes: length, inner (the view), reverse, exclusive,
// product (0 or 1).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "streaming_copies.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int64_t kBlock = 4096;            // inner positions an item carries at most
constexpr int64_t kRows = 4;                // row lanes walked in lockstep (inner 1)
constexpr int64_t kItemElements = 1 << 16;  // the elements of an item of work, about

// The type a tally is computed in: unsigned for integers (wrapping, never undefined).
template <typename T, bool = std::is_integral_v<T>>
struct Arithmetic {
  using type = T;
};
template <typename T>
struct Arithmetic<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <typename T, bool kProduct>
void Walk(const T* __restrict__ in, T* __restrict__ out, int64_t length, int64_t inner, int64_t begin, int64_t end,
          bool reverse, bool exclusive) {
  using A = typename Arithmetic<T>::type;
  A tally[kBlock];
  const int64_t width = end - begin;
  const int64_t step = reverse ? -inner : inner;
  int64_t at = (reverse ? length - 1 : 0) * inner + begin;
  for (int64_t j = 0; j < width; ++j) {
    tally[j] = A(in[at + j]);
    out[at + j] = exclusive ? T(kProduct ? 1 : 0) : in[at + j];
  }
  for (int64_t k = 1; k < length; ++k) {
    at += step;
    if (exclusive) {
      for (int64_t j = 0; j < width; ++j) {
        A before = tally[j];
        tally[j] = kProduct ? A(before * A(in[at + j])) : A(before + A(in[at + j]));
        out[at + j] = T(before);
      }
    } else {
      for (int64_t j = 0; j < width; ++j) {
        tally[j] = kProduct ? A(tally[j] * A(in[at + j])) : A(tally[j] + A(in[at + j]));
        out[at + j] = T(tally[j]);
      }
    }
  }
}

// Lanes that are rows (inner 1: the axis is the last): `rows` of them walked in lockstep, so
// that their independent chains of additions overlap (one lane alone waits on each addition).
template <typename T, bool kProduct>
void WalkRows(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int64_t length,
              bool reverse, bool exclusive) {
  using A = typename Arithmetic<T>::type;
  A tally[kRows];
  const int64_t first = reverse ? length - 1 : 0, step = reverse ? -1 : 1;
  for (int64_t r = 0; r < rows; ++r) {
    tally[r] = A(in[r * length + first]);
    out[r * length + first] = exclusive ? T(kProduct ? 1 : 0) : in[r * length + first];
  }
  for (int64_t k = 1, at = first + step; k < length; ++k, at += step) {
    for (int64_t r = 0; r < rows; ++r) {
      const A before = tally[r];
      const A x = A(in[r * length + at]);
      tally[r] = kProduct ? A(before * x) : A(before + x);
      out[r * length + at] = T(exclusive ? before : tally[r]);
    }
  }
}

template <typename T>
void Scan(ffi::ThreadPool& pool, const T* in, T* out, int64_t outer, int64_t length,
          int64_t inner, bool reverse, bool exclusive, bool product) {
  if (inner == 1) {  // row lanes: groups of kRows, several groups an item where rows are short
    const int64_t groups = (outer + kRows - 1) / kRows;
    const int64_t per_item = std::max<int64_t>(1, kItemElements / (length * kRows));
    const int64_t items = (groups + per_item - 1) / per_item;
    dml_jax::ForEachItem(pool, items, pool.num_threads() - 1, [&](int64_t item) {
      const int64_t g_end = std::min(groups, (item + 1) * per_item);
      for (int64_t g = item * per_item; g < g_end; ++g) {
        const int64_t first = g * kRows, rows = std::min(kRows, outer - first);
        const T* rows_in = in + first * length;
        T* rows_out = out + first * length;
        if (product)
          WalkRows<T, true>(rows_in, rows_out, rows, length, reverse, exclusive);
        else
          WalkRows<T, false>(rows_in, rows_out, rows, length, reverse, exclusive);
      }
    });
    return;
  }
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  const int64_t lanes_per_block = std::min(inner, kBlock);
  // Items: (outer index, block) pairs, several outer indices an item where lanes are few.
  const int64_t per_item =
      std::max<int64_t>(1, kItemElements / std::max<int64_t>(1, length * lanes_per_block));
  const int64_t units = outer * blocks;
  const int64_t items = (units + per_item - 1) / per_item;
  dml_jax::ForEachItem(pool, items, pool.num_threads() - 1, [&](int64_t item) {
    const int64_t u_end = std::min(units, (item + 1) * per_item);
    for (int64_t u = item * per_item; u < u_end; ++u) {
      const int64_t o = u / blocks, b = u % blocks;
      const int64_t begin = b * kBlock, end = std::min(inner, begin + kBlock);
      const T* lane_in = in + o * length * inner;
      T* lane_out = out + o * length * inner;
      if (product)
        Walk<T, true>(lane_in, lane_out, length, inner, begin, end, reverse, exclusive);
      else
        Walk<T, false>(lane_in, lane_out, length, inner, begin, end, reverse, exclusive);
    }
  });
}

ffi::Error CumulativeImpl(ffi::ThreadPool pool, ffi::AnyBuffer input,
                          ffi::Result<ffi::AnyBuffer> output, int64_t length, int64_t inner,
                          int64_t reverse, int64_t exclusive, int64_t product) {
  const int64_t count = int64_t(input.element_count());
  if (int64_t(output->element_count()) != count || input.element_type() != output->element_type())
    return ffi::Error::InvalidArgument("cumulative: the output is not the input's shape and type");
  if (count == 0) return ffi::Error::Success();
  if (length < 1 || inner < 1 || count % (length * inner) != 0)
    return ffi::Error::InvalidArgument("cumulative: (length, inner) is not a view of the input");
  const int64_t outer = count / (length * inner);
  const void* in = input.untyped_data();
  void* out = output->untyped_data();
#define DML_JAX_SCAN(TYPE)                                                                 \
  Scan<TYPE>(pool, static_cast<const TYPE*>(in), static_cast<TYPE*>(out), outer, length, \
             inner, reverse != 0, exclusive != 0, product != 0)
  switch (input.element_type()) {
    case ffi::DataType::F32: DML_JAX_SCAN(float); break;
    case ffi::DataType::F64: DML_JAX_SCAN(double); break;
    case ffi::DataType::S32: DML_JAX_SCAN(int32_t); break;
    case ffi::DataType::U32: DML_JAX_SCAN(uint32_t); break;
    case ffi::DataType::S64: DML_JAX_SCAN(int64_t); break;
    case ffi::DataType::U64: DML_JAX_SCAN(uint64_t); break;
    default: return ffi::Error::InvalidArgument("cumulative: an element type it does not take");
  }
#undef DML_JAX_SCAN
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(DmlJaxCumulative, CumulativeImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("length")
                                  .Attr<int64_t>("inner")
                                  .Attr<int64_t>("reverse")
                                  .Attr<int64_t>("exclusive")
                                  .Attr<int64_t>("product"));
