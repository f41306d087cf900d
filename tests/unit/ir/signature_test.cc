// BindArgs: empty tensors (a dim of size 0) are valid arguments, whatever their strides — numpy
// gives an empty array's dims zero strides — and alias nothing; non-empty outputs keep the
// positive-stride and no-overlap checks.
#include <gtest/gtest.h>

#include <vector>

#include "ir/builder.h"
#include "ir/signature.h"
#include "support/error.h"

namespace ptox::ir {
namespace {

// func @f(%x: in tensor<{N}x16xf32>, %y: out tensor<{N}x16xf32>)
Func InOut() {
  Builder b("f");
  Type t = Type::Tensor({Dim::Symbol("N"), Dim::Static(16)}, DType::kF32);
  b.Param("x", Direction::kIn, t);
  b.Param("y", Direction::kOut, t);
  return b.Finish();
}

Tensor View(float* data, std::vector<int64_t> shape, std::vector<int64_t> strides) {
  return Tensor{data, DType::kF32, std::move(shape), std::move(strides)};
}

TEST(BindArgs, AcceptsEmptyOutputsWithZeroStrides) {
  Func f = InOut();
  float x[16], y[16];
  SymbolBindings syms = BindArgs(f, {View(x, {0, 16}, {0, 0}), View(y, {0, 16}, {0, 0})});
  EXPECT_EQ(syms.at("N"), 0);
  // Contiguous strides, and no strides at all, are fine too.
  EXPECT_NO_THROW(BindArgs(f, {View(x, {0, 16}, {16, 1}), View(y, {0, 16}, {16, 1})}));
  EXPECT_NO_THROW(BindArgs(f, {View(x, {0, 16}, {}), View(y, {0, 16}, {})}));
  // An empty output may even have a null data pointer (nothing is written).
  EXPECT_NO_THROW(BindArgs(f, {View(nullptr, {0, 16}, {0, 0}), View(nullptr, {0, 16}, {0, 0})}));
}

TEST(BindArgs, AnEmptyTensorAliasesNothing) {
  Func f = InOut();
  float buf[64];
  // Both at the same address, or the empty output inside the input's range: no byte is shared.
  EXPECT_NO_THROW(BindArgs(f, {View(buf, {0, 16}, {16, 1}), View(buf, {0, 16}, {16, 1})}));
  EXPECT_NO_THROW(BindArgs(f, {View(buf, {0, 16}, {16, 1}), View(buf + 3, {0, 16}, {0, 0})}));
}

TEST(BindArgs, NonEmptyOutputsStillNeedPositiveStridesAndNoAliasing) {
  Func f = InOut();
  float x[64], y[64];
  try {
    BindArgs(f, {View(x, {2, 16}, {16, 1}), View(y, {2, 16}, {0, 1})});
    FAIL() << "a zero stride on a non-empty output was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalid);
    EXPECT_NE(std::string(e.what()).find("output %y must have positive strides"),
              std::string::npos)
        << e.what();
  }
  try {
    BindArgs(f, {View(x, {2, 16}, {16, 1}), View(x + 8, {2, 16}, {16, 1})});
    FAIL() << "an output overlapping an input was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("output %y aliases argument %x"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ptox::ir
