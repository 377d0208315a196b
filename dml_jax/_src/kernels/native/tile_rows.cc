// TILE on the CPU: every output row (the last dimension) written from its input row, repeated,
// without reading the destination first (streaming_copies.h: past the caches, or in them where
// the call's bytes fit). Any rank, any element type (rows are copied as bytes). The repeats are
// the output's dimensions over the input's, so a batch dimension put in front (vmap) is a
// repeat of 1. Attribute `stores`: streaming_copies.h's StoresFor.
#include <algorithm>
#include <cstdint>

#include "streaming_copies.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr size_t kItemBytes = 1 << 20;  // the output bytes of an item of work, about

ffi::Error TileRowsImpl(ffi::ThreadPool pool, ffi::AnyBuffer input,
                        ffi::Result<ffi::AnyBuffer> output, int64_t stores_attribute) {
  auto in = input.dimensions();
  auto out = output->dimensions();
  int64_t rank = int64_t(in.size());
  if (int64_t(out.size()) != rank)
    return ffi::Error::InvalidArgument("tile_rows: the input and output ranks differ");
  for (int64_t d = 0; d < rank; ++d)
    if (in[d] == 0 ? out[d] != 0 : out[d] % in[d] != 0)
      return ffi::Error::InvalidArgument("tile_rows: an output dimension is not a multiple");
  if (output->size_bytes() == 0) return ffi::Error::Success();
  size_t width = ffi::ByteWidth(input.element_type());
  size_t row = width * size_t(rank ? in[rank - 1] : 1);  // input row bytes
  int64_t copies = rank ? out[rank - 1] / in[rank - 1] : 1;
  size_t out_row = row * size_t(copies);
  int64_t rows = int64_t(output->size_bytes() / out_row);
  const char* source = static_cast<const char*>(input.untyped_data());
  char* target = static_cast<char*>(output->untyped_data());
  int64_t per_item = int64_t(std::max<size_t>(1, kItemBytes / out_row));
  int64_t items = (rows + per_item - 1) / per_item;
  int64_t helpers = pool.num_threads() - 1;  // the calling thread works too
  const dml_jax::Stores stores = dml_jax::StoresFor(stores_attribute);
  dml_jax::ForEachItem(pool, items, helpers, [&](int64_t item) {
    int64_t r_end = std::min(rows, (item + 1) * per_item);
    for (int64_t r = item * per_item; r < r_end; ++r) {
      // The input row of output row r: each leading index modulo the input's dimension.
      int64_t rest = r, source_row = 0, scale = 1;
      for (int64_t d = rank - 2; d >= 0; --d) {
        source_row += (rest % out[d]) % in[d] * scale;
        rest /= out[d];
        scale *= in[d];
      }
      const char* from = source + size_t(source_row) * row;
      char* to = target + size_t(r) * out_row;
      for (int64_t k = 0; k < copies; ++k) dml_jax::CopyBytes(to + size_t(k) * row, from, row, stores);
    }
  });
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(DmlJaxTileRows, TileRowsImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("stores"));
