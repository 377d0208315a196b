// SPLIT and JOIN on the CPU: the contiguous runs that each piece (an output of SPLIT, an input
// of JOIN) has in the whole tensor, copied without reading the destination first
// (streaming_copies.h: past the caches, or in them where a call's bytes fit). Any rank, any
// element type (runs are copied as bytes).
//
// SPLIT: operand the input, results the outputs in order along the axis. JOIN: operands the
// inputs in order, result the output. Attribute `axis_from_end`: the axis counted from the last
// (1 for the last), so that a batch dimension put in front (vmap) leaves it the same; `stores`:
// streaming_copies.h's StoresFor.
#include <algorithm>
#include <cstdint>

#include "streaming_copies.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int64_t kMaxPieces = 1024;
constexpr size_t kItemBytes = 1 << 20;  // the bytes of an item of work, about

// The pieces of a whole of `dims`: their buffers and their bytes per position before the axis.
struct Runs {
  char* pieces[kMaxPieces];
  size_t bytes[kMaxPieces];
  int64_t count = 0;
  size_t outer = 1;  // positions before the axis
  size_t row = 0;    // the whole's bytes per such position
};

// Copies between the whole and the pieces: into the pieces (SPLIT) or into the whole (JOIN).
void CopyRuns(ffi::ThreadPool& pool, char* whole, const Runs& runs, bool into_pieces,
              int64_t stores_attribute) {
  const dml_jax::Stores stores = dml_jax::StoresFor(stores_attribute);
  auto copy = [&](int64_t k, size_t whole_at, size_t piece_at, size_t n) {
    if (into_pieces)
      dml_jax::CopyBytes(runs.pieces[k] + piece_at, whole + whole_at, n, stores);
    else
      dml_jax::CopyBytes(whole + whole_at, runs.pieces[k] + piece_at, n, stores);
  };
  int64_t helpers = pool.num_threads() - 1;  // the calling thread works too
  if (runs.outer == 1) {
    // Each piece is one run: items are parts of the runs, in order.
    int64_t first[kMaxPieces + 1];  // the first item of each piece
    size_t offset[kMaxPieces + 1];  // where each piece starts in the whole
    first[0] = 0;
    offset[0] = 0;
    for (int64_t k = 0; k < runs.count; ++k) {
      first[k + 1] = first[k] + int64_t((runs.bytes[k] + kItemBytes - 1) / kItemBytes);
      offset[k + 1] = offset[k] + runs.bytes[k];
    }
    dml_jax::ForEachItem(pool, first[runs.count], helpers, [&](int64_t item) {
      int64_t k = std::upper_bound(first, first + runs.count + 1, item) - first - 1;
      size_t lo = size_t(item - first[k]) * kItemBytes;
      size_t hi = std::min(runs.bytes[k], lo + kItemBytes);
      copy(k, offset[k] + lo, lo, hi - lo);
    });
    return;
  }
  // Items are blocks of positions before the axis, each copied piece by piece.
  int64_t per_item = int64_t(std::max<size_t>(1, kItemBytes / runs.row));
  int64_t items = (int64_t(runs.outer) + per_item - 1) / per_item;
  dml_jax::ForEachItem(pool, items, helpers, [&](int64_t item) {
    size_t end = std::min(runs.outer, size_t(item + 1) * size_t(per_item));
    for (size_t o = size_t(item) * size_t(per_item); o < end; ++o) {
      size_t at = o * runs.row;
      for (int64_t k = 0; k < runs.count; ++k) {
        copy(k, at, o * runs.bytes[k], runs.bytes[k]);
        at += runs.bytes[k];
      }
    }
  });
}

// The outer positions of a whole of `dims` split along axis `axis_from_end` (from the last).
ffi::Error Outer(ffi::Span<const int64_t> dims, int64_t axis_from_end, size_t* outer) {
  int64_t rank = int64_t(dims.size());
  if (axis_from_end < 1 || axis_from_end > rank)
    return ffi::Error::InvalidArgument("runs: axis_from_end outside the rank");
  *outer = 1;
  for (int64_t d = 0; d < rank - axis_from_end; ++d) *outer *= size_t(dims[d]);
  return ffi::Error::Success();
}

ffi::Error Check(Runs& runs, size_t whole_bytes) {
  for (int64_t k = 0; k < runs.count; ++k) runs.row += runs.bytes[k];
  if (runs.row * runs.outer != whole_bytes)
    return ffi::Error::InvalidArgument("runs: the pieces do not cover the whole");
  return ffi::Error::Success();
}

ffi::Error SplitRunsImpl(ffi::ThreadPool pool, ffi::AnyBuffer input, ffi::RemainingRets outputs,
                         int64_t axis_from_end, int64_t stores) {
  Runs runs;
  runs.count = int64_t(outputs.size());
  if (runs.count < 1 || runs.count > kMaxPieces)
    return ffi::Error::InvalidArgument("split_runs: 1 to 1024 outputs");
  if (auto error = Outer(input.dimensions(), axis_from_end, &runs.outer); error.failure())
    return error;
  for (int64_t k = 0; k < runs.count; ++k) {
    auto output = outputs.get<ffi::AnyBuffer>(k);
    if (!output.has_value()) return output.error();
    runs.pieces[k] = static_cast<char*>((*output)->untyped_data());
    runs.bytes[k] = runs.outer ? (*output)->size_bytes() / runs.outer : 0;
  }
  if (auto error = Check(runs, input.size_bytes()); error.failure()) return error;
  if (input.size_bytes() > 0)
    CopyRuns(pool, static_cast<char*>(input.untyped_data()), runs, /*into_pieces=*/true, stores);
  return ffi::Error::Success();
}

ffi::Error JoinRunsImpl(ffi::ThreadPool pool, ffi::RemainingArgs inputs,
                        ffi::Result<ffi::AnyBuffer> output, int64_t axis_from_end,
                        int64_t stores) {
  Runs runs;
  runs.count = int64_t(inputs.size());
  if (runs.count < 1 || runs.count > kMaxPieces)
    return ffi::Error::InvalidArgument("join_runs: 1 to 1024 inputs");
  if (auto error = Outer(output->dimensions(), axis_from_end, &runs.outer); error.failure())
    return error;
  for (int64_t k = 0; k < runs.count; ++k) {
    auto input = inputs.get<ffi::AnyBuffer>(k);
    if (!input.has_value()) return input.error();
    runs.pieces[k] = static_cast<char*>(input->untyped_data());
    runs.bytes[k] = runs.outer ? input->size_bytes() / runs.outer : 0;
  }
  if (auto error = Check(runs, output->size_bytes()); error.failure()) return error;
  if (output->size_bytes() > 0)
    CopyRuns(pool, static_cast<char*>(output->untyped_data()), runs, /*into_pieces=*/false, stores);
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(DmlJaxSplitRuns, SplitRunsImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .RemainingRets()
                                  .Attr<int64_t>("axis_from_end")
                                  .Attr<int64_t>("stores"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(DmlJaxJoinRuns, JoinRunsImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .RemainingArgs()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("axis_from_end")
                                  .Attr<int64_t>("stores"));
