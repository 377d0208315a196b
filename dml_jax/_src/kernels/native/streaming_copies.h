// Shared by dml_jax's CPU kernels (runs.cc, tile_rows.cc, transpose.cc): copies that do not
// read the destination's lines before writing them, and work shared with XLA's intra-op pool.
//
// A store to a line that is not in the cache first reads the line (a read for ownership). A copy
// into an output that is not in the caches therefore moves three bytes per byte copied; XLA:CPU's
// loops and glibc's memcpy (below its non-temporal threshold) store that way. Two ways avoid the
// read:
// - non-temporal stores: the lines go to memory and leave the caches alone. Right where a call
//   moves more than the last-level cache holds: what it writes would not stay there anyway.
// - `rep movsb` on a processor with fast strings (ERMS): whole lines written in the cache. Right
//   where a call's bytes fit in the cache: the next call, or the next reader, finds them there.
#ifndef DML_JAX_STREAMING_COPIES_H_
#define DML_JAX_STREAMING_COPIES_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "xla/ffi/api/ffi.h"

namespace dml_jax {

// Copies n bytes from src to dst; the 16-byte-aligned body of dst is written with
// non-temporal stores. Callers end their work with StoreFence().
inline void StreamingCopy(char* dst, const char* src, size_t n) {
#if defined(__SSE2__)
  if (n >= 256) {
    size_t head = (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15;
    std::memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    size_t body = n & ~size_t(63);
    for (size_t i = 0; i < body; i += 64) {
      __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
      __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
      __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
    }
    std::memcpy(dst + body, src + body, n - body);
    return;
  }
#endif
  std::memcpy(dst, src, n);
}

// How a call's copies store: past the caches, or in them by `rep movsb`.
enum class Stores { kStreaming, kInCache };

// The kernels' `stores` attribute: 2 copies in the cache, anything else streams. The library
// chooses from the call's size and the processor (kernels/native_cpu.py's in_cache_bytes).
// gather_rows.cc copies its rows in the cache by memcpy rather than CopyBytes: short rows from
// a cached table went twice as fast that way; the copy kernels' long runs were measured with
// `rep movsb` only.
inline Stores StoresFor(int64_t attribute) {
  return attribute == 2 ? Stores::kInCache : Stores::kStreaming;
}

// Copies n bytes from src to dst without reading dst's lines first, as `stores` says: the
// 16-byte-aligned body of dst with non-temporal stores, or the whole by `rep movsb`. Callers
// that stream end their work with StoreFence() (ForEachItem does).
inline void CopyBytes(char* dst, const char* src, size_t n, Stores stores) {
#if defined(__SSE2__)
  if (stores == Stores::kInCache && n >= 256) {
    asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
    return;
  }
#endif
  StreamingCopy(dst, src, n);
}

// Orders this thread's non-temporal stores before what follows (the handler's return).
inline void StoreFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// Runs fn(i) for every i in [0, n): the calling thread and up to `helpers` tasks on XLA's
// intra-op pool take items from one counter. The caller never waits for a task that has not
// started: once every item is taken it waits only for items in progress, so a pool whose
// threads are all busy (or a caller that is a pool thread) cannot deadlock it. Tasks that
// start late find no item left and return; they hold the counter through a shared_ptr.
template <typename F>
void ForEachItem(xla::ffi::ThreadPool& pool, int64_t n, int64_t helpers, const F& fn) {
  struct Items {
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> busy{0};
    int64_t n = 0;
    const F* fn = nullptr;
  };
  auto items = std::make_shared<Items>();
  items->n = n;
  items->fn = &fn;
  // A thread counts itself busy before it takes its first item, and fences its non-temporal
  // stores once, when no item is left: a fence waits for every store in flight to reach memory,
  // so one per item would stall each thread as often as it has items.
  auto drain = [](Items& w) {
    w.busy.fetch_add(1);
    for (int64_t i = w.next.fetch_add(1); i < w.n; i = w.next.fetch_add(1)) (*w.fn)(i);
    StoreFence();
    w.busy.fetch_sub(1);
  };
  if (helpers > n - 1) helpers = n - 1;
  if (helpers < 0) helpers = 0;
  for (int64_t h = 0; h < helpers; ++h) pool.Schedule([items, drain] { drain(*items); });
  drain(*items);
  while (items->busy.load() > 0) std::this_thread::yield();
}

}  // namespace dml_jax

#endif  // DML_JAX_STREAMING_COPIES_H_
