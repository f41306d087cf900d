// The bandwidth ceilings: rates are positive and ordered, on one thread and several, and small
// sizes (fewer elements than threads) still measure.
#include "ptox/bandwidth.h"

#include <gtest/gtest.h>

namespace ptox {
namespace {

void ExpectOrdered(const Bandwidth& b) {
  EXPECT_GT(b.min, 0);
  EXPECT_LE(b.min, b.median);
  EXPECT_LE(b.median, b.max);
}

TEST(Bandwidth, TriadRatesArePositiveAndOrdered) {
  ExpectOrdered(TriadGBs(1, 4 << 20, 3));
  ExpectOrdered(TriadGBs(2, 4 << 20, 3));
}

TEST(Bandwidth, ReadRatesArePositiveAndOrdered) {
  ExpectOrdered(ReadGBs(1, 4 << 20, 3));
  ExpectOrdered(ReadGBs(3, 4 << 20, 1));
}

TEST(Bandwidth, TinyArraysStillMeasure) {
  ExpectOrdered(TriadGBs(4, 8, 2));
  ExpectOrdered(ReadGBs(4, 0, 2));
}

}  // namespace
}  // namespace ptox
