#include "support/stream_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace ptox {
namespace {

// Every alignment of both ends and every length around the 16- and 64-byte steps: the bytes come
// out as memcpy's, and nothing outside [dst, dst + n) is written.
TEST(StreamCopy, CopiesEveryAlignmentAndLengthExactly) {
  std::vector<uint8_t> src(512), dst(600);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 3);
  for (size_t s_off = 0; s_off < 17; ++s_off)
    for (size_t d_off = 0; d_off < 17; ++d_off)
      for (size_t n : {0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 200, 400}) {
        std::fill(dst.begin(), dst.end(), 0xAB);
        StreamCopy(dst.data() + d_off, src.data() + s_off, n);
        for (size_t i = 0; i < dst.size(); ++i) {
          const bool inside = i >= d_off && i < d_off + n;
          ASSERT_EQ(dst[i], inside ? src[s_off + i - d_off] : 0xAB)
              << "src+" << s_off << " dst+" << d_off << " n=" << n << " at " << i;
        }
      }
}

}  // namespace
}  // namespace ptox
