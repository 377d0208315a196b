// The row gathers on the CPU (GATHER_ND, GATHER_ND1 and GATHER whose index tuples leave whole
// rows): each raw index tuple names a row of the input, copied whole. Where the call's bytes
// fit the cache (the `stores` attribute says so) by memcpy, whose vector moves copied rows of
// 1 KiB from a cached input twice as fast as `rep movsb`; otherwise with non-temporal stores,
// which do not read the destination's lines first (streaming_copies.h). Any element type (rows
// are copied as bytes); int32, uint32, int64 or uint64 indices.
//
// Operands: the input and the raw index tuples (..., t), whose leading `batch_dims` sizes are
// the input's. Result: indices.shape[:-1] + the input's sizes after the tuple's dimensions.
// Attributes: `sizes`, the input's sizes through the tuple's dimensions (batch_dims + t of
// them; the rest are the row); `batch_dims`; `stores` (streaming_copies.h's StoresFor).
//
// DirectML's index rule is applied here, as the library's lax path applies it (indexing.py's
// clamp_indices, which the tests hold this code to for every value class): a negative index of
// a signed type counts from the end, then every index is clamped into its dimension, in 64-bit
// unsigned arithmetic that nothing wraps. Doing it here rather than in lax keeps the operator one
// call: a second step in XLA's program cost 70 us a call on a 2-core machine, more than the
// copy of a 1 MiB output.
//
// The source rows are scattered over the input, so each thread asks for the rows it will copy
// next while it copies this one (8 KiB ahead took a 64 MiB gather of 1 KiB rows from 5.9 to 3.8
// ms on a 2-core machine).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "streaming_copies.h"
#include "xla/ffi/api/ffi.h"

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

namespace ffi = xla::ffi;

namespace {

constexpr size_t kItemBytes = 256 << 10;     // the output bytes of an item of work, about
constexpr size_t kPrefetchBytes = 8 << 10;   // how far ahead the prefetches run, in rows' bytes
constexpr size_t kPrefetchRowBytes = 2048;  // what is asked for of each row, at most
constexpr int64_t kMaxDims = 64;

// DirectML's rule for one raw index into a dimension of `size` (> 0): signed negatives count
// from the end (to 0 below -size), then the index is clamped to [0, size - 1].
template <typename I>
inline uint64_t Clamp(I index, uint64_t size) {
  if constexpr (std::is_signed_v<I>) {
    if (index < 0) {
      uint64_t magnitude = uint64_t(~int64_t(index)) + 1;  // exact, also for the type's minimum
      return magnitude <= size ? size - magnitude : 0;
    }
  }
  uint64_t value = uint64_t(index);
  return value < size ? value : size - 1;
}

// Where each tuple's row is: the tuple's t indices and, for the batch dimensions, its place.
struct Rows {
  int64_t batch_dims = 0;
  int64_t t = 0;
  uint64_t sizes[kMaxDims];    // the input's sizes through the tuple's dimensions
  uint64_t strides[kMaxDims];  // rows per step along each of them
  uint64_t inner[kMaxDims];    // tuples per step along each batch dimension
  uint64_t count = 0;          // tuples
};

template <typename I>
inline uint64_t RowOf(const Rows& rows, const I* tuples, uint64_t k) {
  uint64_t row = 0;
  for (int64_t d = 0; d < rows.batch_dims; ++d)
    row += (k / rows.inner[d]) % rows.sizes[d] * rows.strides[d];
  const I* tuple = tuples + k * uint64_t(rows.t);
  for (int64_t j = 0; j < rows.t; ++j) {
    int64_t d = rows.batch_dims + j;
    row += Clamp(tuple[j], rows.sizes[d]) * rows.strides[d];
  }
  return row;
}

// Asks for the `bytes` at `p` to be brought into the caches.
inline void Prefetch(const char* p, size_t bytes) {
#if defined(__SSE2__)
  for (size_t at = 0; at < bytes; at += 64) _mm_prefetch(p + at, _MM_HINT_T0);
#else
  (void)p;
  (void)bytes;
#endif
}

template <typename I>
void CopyRows(ffi::ThreadPool& pool, const Rows& rows, const I* tuples, const char* source,
              char* target, size_t row, dml_jax::Stores stores) {
  const int64_t count = int64_t(rows.count);
  const int64_t per_item = int64_t(std::max<size_t>(1, kItemBytes / row));
  const int64_t items = (count + per_item - 1) / per_item;
  const int64_t ahead = int64_t(std::min<size_t>(32, std::max<size_t>(1, kPrefetchBytes / row)));
  const size_t asked = std::min(row, kPrefetchRowBytes);
  const int64_t helpers = pool.num_threads() - 1;  // the calling thread works too
  dml_jax::ForEachItem(pool, items, helpers, [&](int64_t item) {
    const int64_t begin = item * per_item;
    const int64_t end = std::min(count, begin + per_item);
    for (int64_t k = begin; k < end; ++k) {
      if (k + ahead < end) Prefetch(source + RowOf(rows, tuples, uint64_t(k + ahead)) * row, asked);
      char* to = target + size_t(k) * row;
      const char* from = source + RowOf(rows, tuples, uint64_t(k)) * row;
      if (stores == dml_jax::Stores::kInCache)
        std::memcpy(to, from, row);  // glibc's choice by size: vector moves for short rows
      else
        dml_jax::CopyBytes(to, from, row, stores);
    }
  });
}

ffi::Error GatherRowsImpl(ffi::ThreadPool pool, ffi::AnyBuffer input, ffi::AnyBuffer indices,
                          ffi::Result<ffi::AnyBuffer> output, ffi::Span<const int64_t> sizes,
                          int64_t batch_dims, int64_t stores_attribute) {
  Rows rows;
  auto index_dims = indices.dimensions();
  const int64_t leading = int64_t(sizes.size());
  const int64_t index_rank = int64_t(index_dims.size());
  rows.batch_dims = batch_dims;
  rows.t = leading - batch_dims;
  if (batch_dims < 0 || rows.t < 1 || leading > kMaxDims || index_rank < batch_dims + 1 ||
      index_dims[index_rank - 1] != rows.t)
    return ffi::Error::InvalidArgument("gather_rows: the sizes do not fit the index tuples");
  uint64_t table_rows = 1;
  for (int64_t d = leading - 1; d >= 0; --d) {
    if (sizes[d] < 0) return ffi::Error::InvalidArgument("gather_rows: a negative size");
    rows.sizes[d] = uint64_t(sizes[d]);
    rows.strides[d] = table_rows;
    table_rows *= rows.sizes[d];
  }
  uint64_t inner = 1;
  for (int64_t d = index_rank - 2; d >= 0; --d) {
    if (d < batch_dims) {
      if (index_dims[d] != sizes[d])
        return ffi::Error::InvalidArgument("gather_rows: a batch size differs from the input's");
      rows.inner[d] = inner;
    }
    inner *= uint64_t(index_dims[d]);
  }
  rows.count = inner;
  if (rows.count == 0 || output->size_bytes() == 0) return ffi::Error::Success();
  if (table_rows == 0)
    return ffi::Error::InvalidArgument("gather_rows: an empty dimension has no row to gather");
  const size_t row = output->size_bytes() / rows.count;
  if (row * rows.count != output->size_bytes() || row * table_rows != input.size_bytes())
    return ffi::Error::InvalidArgument("gather_rows: the output is not whole rows of the input");
  const char* source = static_cast<const char*>(input.untyped_data());
  char* target = static_cast<char*>(output->untyped_data());
  const dml_jax::Stores stores = dml_jax::StoresFor(stores_attribute);
  const void* tuples = indices.untyped_data();
  switch (indices.element_type()) {
    case ffi::DataType::S32:
      CopyRows(pool, rows, static_cast<const int32_t*>(tuples), source, target, row, stores);
      break;
    case ffi::DataType::U32:
      CopyRows(pool, rows, static_cast<const uint32_t*>(tuples), source, target, row, stores);
      break;
    case ffi::DataType::S64:
      CopyRows(pool, rows, static_cast<const int64_t*>(tuples), source, target, row, stores);
      break;
    case ffi::DataType::U64:
      CopyRows(pool, rows, static_cast<const uint64_t*>(tuples), source, target, row, stores);
      break;
    default:
      return ffi::Error::InvalidArgument("gather_rows: indices of int32, uint32, int64 or uint64");
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(DmlJaxGatherRows, GatherRowsImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<ffi::Span<const int64_t>>("sizes")
                                  .Attr<int64_t>("batch_dims")
                                  .Attr<int64_t>("stores"));
