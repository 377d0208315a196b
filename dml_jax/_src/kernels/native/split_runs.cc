// SPLIT on the CPU: each output's contiguous runs of the input copied with non-temporal
// stores (streaming_copies.h). Any rank, any element type (the runs are copied as bytes).
//
// Operands: the input; results: the outputs, in order along the axis. Attribute
// `axis_from_end`: the split axis counted from the last (1 for the last), so that a batch
// dimension put in front (vmap) leaves it the same.
#include <algorithm>
#include <cstdint>

#include "streaming_copies.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int64_t kMaxOutputs = 1024;
constexpr size_t kItemBytes = 1 << 20;  // the bytes of an item of work, about

ffi::Error SplitRunsImpl(ffi::ThreadPool pool, ffi::AnyBuffer input, ffi::RemainingRets outputs,
                         int64_t axis_from_end) {
  auto dims = input.dimensions();
  int64_t rank = int64_t(dims.size());
  int64_t count = int64_t(outputs.size());
  if (axis_from_end < 1 || axis_from_end > rank)
    return ffi::Error::InvalidArgument("split_runs: axis_from_end outside the input's rank");
  if (count < 1 || count > kMaxOutputs)
    return ffi::Error::InvalidArgument("split_runs: 1 to 1024 outputs");
  size_t outer = 1;
  for (int64_t d = 0; d < rank - axis_from_end; ++d) outer *= size_t(dims[d]);
  char* starts[kMaxOutputs];
  size_t runs[kMaxOutputs];  // bytes of each output per outer position
  size_t row = 0;            // bytes of the input per outer position
  for (int64_t k = 0; k < count; ++k) {
    auto output = outputs.get<ffi::AnyBuffer>(k);
    if (!output.has_value()) return output.error();
    starts[k] = static_cast<char*>((*output)->untyped_data());
    runs[k] = outer ? (*output)->size_bytes() / outer : 0;
    row += runs[k];
  }
  if (row * outer != input.size_bytes())
    return ffi::Error::InvalidArgument("split_runs: the outputs do not cover the input");
  if (row * outer == 0) return ffi::Error::Success();
  const char* source = static_cast<const char*>(input.untyped_data());
  int64_t helpers = pool.num_threads() - 1;  // the calling thread works too
  if (outer == 1) {
    // Each output is one run: items are pieces of the runs, in order.
    int64_t first[kMaxOutputs + 1];  // the first item of each output
    first[0] = 0;
    for (int64_t k = 0; k < count; ++k)
      first[k + 1] = first[k] + int64_t((runs[k] + kItemBytes - 1) / kItemBytes);
    dml_jax::ForEachItem(pool, first[count], helpers, [&](int64_t item) {
      int64_t k = std::upper_bound(first, first + count + 1, item) - first - 1;
      size_t offset = 0;
      for (int64_t j = 0; j < k; ++j) offset += runs[j];
      size_t lo = size_t(item - first[k]) * kItemBytes;
      size_t hi = std::min(runs[k], lo + kItemBytes);
      dml_jax::StreamingCopy(starts[k] + lo, source + offset + lo, hi - lo);
    });
    return ffi::Error::Success();
  }
  // Items are blocks of outer positions, each copied output by output.
  int64_t per_item = int64_t(std::max<size_t>(1, kItemBytes / row));
  int64_t items = (int64_t(outer) + per_item - 1) / per_item;
  dml_jax::ForEachItem(pool, items, helpers, [&](int64_t item) {
    size_t o_end = std::min(outer, size_t(item + 1) * size_t(per_item));
    for (size_t o = size_t(item) * size_t(per_item); o < o_end; ++o) {
      const char* from = source + o * row;
      for (int64_t k = 0; k < count; ++k) {
        dml_jax::StreamingCopy(starts[k] + o * runs[k], from, runs[k]);
        from += runs[k];
      }
    }
  });
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(DmlJaxSplitRuns, SplitRunsImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .RemainingRets()
                                  .Attr<int64_t>("axis_from_end"));
