#include "support/stream_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ptox {

void StreamCopy(void* dst, const void* src, size_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
#if defined(__SSE2__)
  // Streaming stores need 16-byte-aligned destinations: the head up to one is copied normally,
  // and so is the tail.
  const size_t head = std::min<size_t>(bytes, (16 - reinterpret_cast<uintptr_t>(d) % 16) % 16);
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64)
    for (int k = 0; k < 4; ++k)
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i) + k,
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i) + k));
  for (; i + 16 <= bytes; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  std::memcpy(d + i, s + i, bytes - i);
  // Streaming stores are weakly ordered: the fence makes them visible before any later store.
  _mm_sfence();
#else
  std::memcpy(d, s, bytes);
#endif
}

}  // namespace ptox
