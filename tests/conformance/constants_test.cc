// Arithmetic on constants (tile.full, immediates) gives the bits the hardware gives at run time,
// as the interpreter does: the host compiler must not fold it. Its folding made +NaN of invalid
// operations (inf - inf, 0 * inf, 0 / 0) where x86 makes its default -NaN; NaN immediates keep
// their sign and payload through codegen.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "harness.h"

namespace ptox::conformance {
namespace {

class Constants : public ::testing::TestWithParam<std::string> {};

// Runs a 1 x 4 program (`outside` before its incore scope) on the interpreter and the target;
// the outputs must have the same bits.
void ExpectSameBits(const std::string& body, const std::string& target,
                    const std::string& outside = "") {
  const std::string text = "func @f(%y: out tensor<1x4xf32>) {\n" + outside + "  incore {\n" +
                           body + "    tile.store %r, %y[0, 0]\n  }\n}\n";
  auto prog = Program::Parse(text, "constants.pto");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  uint32_t bits[2][4];
  const std::string targets[2] = {"interp", target};
  for (int k = 0; k < 2; ++k) {
    std::vector<float> y(4, 1.0f);
    Status s = Run(*prog, {Tensor::Contiguous(y.data(), DType::kF32, {1, 4})}, {.target = targets[k]});
    ASSERT_TRUE(s.ok()) << targets[k] << ": " << s.message();
    std::memcpy(bits[k], y.data(), sizeof bits[k]);
  }
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(bits[0][i], bits[1][i]) << body << "element " << i << std::hex << ": interp 0x"
                                      << bits[0][i] << ", " << target << " 0x" << bits[1][i];
}

TEST_P(Constants, InvalidOperationsOnConstantsGiveTheRunTimeNaN) {
  const std::string inf = "    %i = tile.full inf : tile<1x4xf32>\n";
  const std::string zero = "    %z = tile.full 0.0 : tile<1x4xf32>\n";
  ExpectSameBits(inf + "    %r = tile.sub %i, %i\n", GetParam());
  ExpectSameBits(inf + zero + "    %r = tile.mul %z, %i\n", GetParam());
  ExpectSameBits(zero + "    %r = tile.div %z, %z\n", GetParam());
  ExpectSameBits(inf + "    %r = tile.add %i, -inf\n", GetParam());
  // The fuzzer's case: a select of constants, a cast, then x - x.
  ExpectSameBits(
      "    %a = tile.full 1.0 : tile<1x4xf16>\n    %c = tile.lt %a, %a\n"
      "    %s = tile.select %c, %a, inf\n    %t = tile.cast %s : tile<1x4xf32>\n"
      "    %r = tile.sub %t, %t\n",
      GetParam());
}

TEST_P(Constants, NanImmediatesKeepTheirBits) {
  ExpectSameBits("    %r = tile.full nan : tile<1x4xf32>\n", GetParam());
  // fold-constants turns inf - inf into an immediate: the host's NaN, sign included.
  ExpectSameBits("    %r = tile.full %n : tile<1x4xf32>\n", GetParam(),
                 "  %n = arith.sub inf, inf\n");
}

INSTANTIATE_TEST_SUITE_P(Conformance, Constants, ::testing::ValuesIn(CpuTargets()),
                         [](const auto& info) { return Sanitize(info.param); });

}  // namespace
}  // namespace ptox::conformance
