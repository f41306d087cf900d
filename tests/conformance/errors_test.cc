// Conformance of run-time errors (out-of-bounds offsets, integer overflow, step 0, narrowing casts,
// empty max, failing ops whose results are unused) and of documented special values (bf16 / f16
// rounding, NaN payloads) on every CPU target: the same status as the interpreter, inputs
// untouched, exact expected bits.
#include <cstdio>
#include <cstring>
#include <functional>

#include "programs.h"

namespace ptox::conformance {
namespace {

const std::vector<DimSpec> kNxM = {std::string("N"), std::string("M")};

class ErrorsTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Runs `spec` with N x M tensors (aligned and strided) expecting a kRuntime failure.
  void ExpectRuntimeError(const Spec& spec, int64_t n, int64_t m) {
    for (const Layout& layout : {Layout{"aligned", 0, false}, Layout{"strided", 3, true}}) {
      RunConfig config{{{"N", n}, {"M", m}}, layout, 7, /*expect_runtime_error=*/true};
      CheckConforms(spec, config, GetParam());
    }
  }
};

// tile.load at a dynamic row offset %off (a scalar parameter).
Spec LoadAt(int64_t off) {
  FunctionBuilder f("load_at");
  Val x = f.Param("x", ParamDirection::kIn, DType::kF32, kNxM);
  Val o = f.ScalarParam("off", DType::kIndex);
  Val y = f.Param("y", ParamDirection::kOut, DType::kF32, kNxM);
  f.Incore([&] { f.Store(f.Load(x, {o, int64_t{0}}, 8, 16), y, {int64_t{0}, int64_t{0}}); });
  return {"load_at", BuildOrDie(f), {}, {}, {{"off", off}}};
}

TEST_P(ErrorsTest, OutOfBoundsDynamicOffsetFails) {
  ExpectRuntimeError(LoadAt(5), 5, 16);   // offset == dim
  ExpectRuntimeError(LoadAt(-1), 5, 16);  // negative
  ExpectRuntimeError(LoadAt(0), 0, 16);   // empty dim
}

// An elementwise op over one i32 / i8 tile whose valid region holds MAX (or MIN).
Spec Overflow(const std::string& op, DType d, Values x_values) {
  return TiledSpec("overflow_" + op, {{"x", d, x_values}}, {},
                   {{"y", d, [op](FunctionBuilder& f, Vals& v) {
                       return op == "neg" ? f.Op("tile.neg", {v.at("x")})
                                          : f.Op("tile." + op, {v.at("x"), v.at("x")});
                     }}},
                   8, 16);
}

TEST_P(ErrorsTest, IntegerOverflowInTheValidRegionFails) {
  // kGeneral integers include MIN and MAX: x + x, x * x and -x overflow somewhere in 8 x 16.
  ExpectRuntimeError(Overflow("add", DType::kI32, Values::kGeneral), 8, 16);
  ExpectRuntimeError(Overflow("mul", DType::kI8, Values::kGeneral), 8, 16);
  ExpectRuntimeError(Overflow("neg", DType::kI64, Values::kGeneral), 8, 16);
}

TEST_P(ErrorsTest, IntegerOverflowInPaddingIsSilent) {
  // Padding of -inf loads as i32 MIN; neg(MIN) overflows only outside the valid region.
  Spec spec = TiledSpec("pad_neg", {{"x", DType::kI32, Values::kSmall, -INFINITY}}, {},
                        {{"y", DType::kI32, [](FunctionBuilder& f, Vals& v) {
                            return f.Op("tile.neg", {v.at("x")});
                          }}},
                        8, 16);
  for (auto [n, m] : EdgeSizes(8, 16))
    CheckConforms(spec, {{{"N", n}, {"M", m}}, {"aligned", 0, false}, 3}, GetParam());
}

TEST_P(ErrorsTest, NarrowingCastOutOfRangeFails) {
  Spec spec = TiledSpec("narrow", {{"x", DType::kI32, Values::kGeneral}}, {},
                        {{"y", DType::kI8, [](FunctionBuilder& f, Vals& v) {
                            return f.Op("tile.cast", {v.at("x")},
                                        FunctionBuilder::TileType{8, 16, DType::kI8});
                          }}},
                        8, 16);
  ExpectRuntimeError(spec, 9, 17);
}

TEST_P(ErrorsTest, StepZeroOrNegativeAtRunTimeFails) {
  FunctionBuilder f("step");
  Val x = f.Param("x", ParamDirection::kIn, DType::kF32, kNxM);
  Val s = f.ScalarParam("s", DType::kIndex);
  Val y = f.Param("y", ParamDirection::kOut, DType::kF32, kNxM);
  f.For(int64_t{0}, f.Dim(x, 0), s, [&](Val i) {
    f.Incore([&] { f.Store(f.Load(x, {i, int64_t{0}}, 8, 16), y, {i, int64_t{0}}); });
  });
  Spec spec{"step", BuildOrDie(f), {}, {}, {{"s", int64_t{0}}}};
  ExpectRuntimeError(spec, 9, 16);
  spec.scalars["s"] = int64_t{-8};
  ExpectRuntimeError(spec, 9, 16);
  ExpectRuntimeError(spec, 0, 16);  // fails before the (empty) iteration space is looked at
}

// A program from text, with scalar arguments.
Spec FromText(const std::string& name, const std::string& text,
              std::map<std::string, Arg> scalars) {
  Result<Program> p = Program::Parse(text, name + ".pto");
  EXPECT_TRUE(p.ok()) << p.status().message();
  return {name, p.ok() ? *p : Program(), {}, {}, std::move(scalars)};
}

// An op that fails fails the program whether or not its result is used: dead-code elimination
// keeps it. Compiled targets used to drop an unused division by zero (or one multiplied by 0,
// which folding turns into 0) and succeed where the interpreter fails.
TEST_P(ErrorsTest, UnusedFailingOpsStillFail) {
  const std::string copy = R"(
  incore {
    %t = tile.load %x[0, 0] : tile<8x16xf32>
    tile.store %t, %y[0, 0]
  }
})";
  const std::string head =
      "(%x: in tensor<{N}x{M}xf32>, %k: in index, %y: out tensor<{N}x{M}xf32>) {\n";
  auto spec = [&](const std::string& name, const std::string& body, int64_t k) {
    return FromText(name, "func @" + name + head + body + copy, {{"k", k}});
  };
  ExpectRuntimeError(spec("div", "  %q = arith.div 1, %k\n", 0), 8, 16);
  ExpectRuntimeError(spec("mul0", "  %q = arith.div 1, %k\n  %z = arith.mul %q, 0\n", 0), 8, 16);
  ExpectRuntimeError(spec("cast", "  %n = arith.cast %k : i8\n", 1000), 8, 16);
  ExpectRuntimeError(
      spec("load", "  incore {\n    %d = tile.load %x[%k, 0] : tile<8x16xf32>\n  }", 100), 8, 16);
  // Integer overflow of an unused tile product (the inputs hold MIN and MAX).
  ExpectRuntimeError(FromText("tile_mul", R"(
func @tile_mul(%x: in tensor<{N}x{M}xi32>, %y: out tensor<{N}x{M}xi32>) {
  incore {
    %t = tile.load %x[0, 0] : tile<8x16xi32>
    %unused = tile.mul %t, %t
    tile.store %t, %y[0, 0]
  }
})",
                              {}),
                     8, 16);
  // Where nothing fails, the kept ops change no result.
  RunConfig ok{{{"N", 8}, {"M", 16}}, {"aligned", 0, false}, 7};
  CheckConforms(spec("div_ok", "  %q = arith.div 1, %k\n", 3), ok, GetParam());
}

TEST_P(ErrorsTest, MaxOfAnEmptyRowFails) {
  // A slice starting past the valid columns leaves rows with no valid column.
  Spec spec = TiledSpec("empty_max", {{"x", DType::kF32}}, {},
                        {{"y", DType::kF32, [](FunctionBuilder& f, Vals& v) {
                            Val s = f.Op("tile.slice", {v.at("x"), int64_t{0}, int64_t{8}},
                                         FunctionBuilder::TileType{8, 8, DType::kF32});
                            Val mx = f.Op("tile.row_max", {s});
                            return f.Op("tile.row_expand_add", {v.at("x"), mx});
                          }}},
                        8, 16);
  ExpectRuntimeError(spec, 8, 5);
}

// Runs a one-row program over f32 inputs (given as bits) on the target and the interpreter;
// returns the target's output bytes (the interpreter's must be identical).
std::vector<uint8_t> RunOneRow(const Program& prog, std::vector<std::vector<uint32_t>> in,
                               DType out, const std::string& target) {
  const int64_t n = static_cast<int64_t>(in[0].size());
  std::vector<uint8_t> results[2];
  const char* targets[2] = {"interp", target.c_str()};
  for (int k = 0; k < 2; ++k) {
    std::vector<std::vector<uint32_t>> copy = in;
    std::vector<Arg> args;
    for (auto& x : copy) args.push_back(Tensor::Contiguous(x.data(), DType::kF32, {1, n}));
    results[k].assign(n * DTypeBytes(out), 0);
    args.push_back(Tensor::Contiguous(results[k].data(), out, {1, n}));
    Status s = Run(prog, args, {.target = targets[k]});
    EXPECT_TRUE(s.ok()) << targets[k] << ": " << s.message();
    EXPECT_EQ(copy, in) << targets[k] << " modified an input";
  }
  auto hex = [](const std::vector<uint8_t>& b, int width) {
    std::string s;
    char buf[16];
    for (size_t k = 0; k + width <= b.size(); k += width) {
      uint32_t u = 0;
      std::memcpy(&u, b.data() + k, width);
      std::snprintf(buf, sizeof buf, " 0x%0*x", 2 * width, u);
      s += buf;
    }
    return s;
  };
  EXPECT_EQ(results[0], results[1]) << target << " differs from the interpreter:\n  target:"
                                    << hex(results[1], DTypeBytes(out)) << "\n  interp:"
                                    << hex(results[0], DTypeBytes(out));
  return results[1];
}

Program CastProgram(DType to, int64_t n) {
  FunctionBuilder f("cast_values");
  Val x = f.Param("x", ParamDirection::kIn, DType::kF32, {int64_t{1}, n});
  Val y = f.Param("y", ParamDirection::kOut, to, {int64_t{1}, n});
  f.Incore([&] {
    Val t = f.Load(x, {int64_t{0}, int64_t{0}}, 1, n);
    f.Store(f.Op("tile.cast", {t}, FunctionBuilder::TileType{1, n, to}), y,
            {int64_t{0}, int64_t{0}});
  });
  return BuildOrDie(f);
}

std::vector<uint16_t> Halves(const std::vector<uint8_t>& bytes) {
  std::vector<uint16_t> h(bytes.size() / 2);
  std::memcpy(h.data(), bytes.data(), bytes.size());
  return h;
}

TEST_P(ErrorsTest, Bf16RoundingTiesAndSpecials) {
  // Ties go to even: 0x3F818000 (odd 0x3F81 below) and 0x3F828000 (even 0x3F82 below) both give
  // 0x3F82; just above a tie rounds up; NaN stays a quiet NaN with its sign; overflow gives Inf.
  const std::vector<uint32_t> in = {0x3F818000, 0x3F828000, 0x3F818001, 0xFF800001,
                                    0x7F7FFFFF, 0x80000000, 0x00010000};
  const std::vector<uint16_t> want = {0x3F82, 0x3F82, 0x3F82, 0xFFC0, 0x7F80, 0x8000, 0x0001};
  EXPECT_EQ(Halves(RunOneRow(CastProgram(DType::kBF16, 7), {in}, DType::kBF16, GetParam())), want);
}

TEST_P(ErrorsTest, F16OverflowAndSubnormals) {
  // 65504 is the largest f16; 65520 is the tie above it and rounds to Inf; 2^-24 is the smallest
  // subnormal, 2^-25 ties to +0 and just above it rounds up; 1e-6 is a subnormal.
  const std::vector<uint32_t> in = {0x477FE000, 0x477FF000, 0xC788B800, 0x33800000,
                                    0x33000000, 0x33000001, 0x358637BD, 0x7FC00000};
  const std::vector<uint16_t> want = {0x7BFF, 0x7C00, 0xFC00, 0x0001,
                                      0x0000, 0x0001, 0x0011, 0x7E00};
  EXPECT_EQ(Halves(RunOneRow(CastProgram(DType::kF16, 8), {in}, DType::kF16, GetParam())), want);
}

// x OP y where both operands are NaN (quiet, signaling, negative, with payloads): IEEE 754 lets
// either payload survive, but ptox promises identical bits on every target.
TEST_P(ErrorsTest, NanPayloadOfTwoNanOperands) {
  const std::vector<uint32_t> x = {0x7F800001, 0xFFC00000, 0x7FC12345, 0x7FC00000,
                                   0xFFC00000, 0x7FC00001, 0x7F800002, 0xFFC00003};
  const std::vector<uint32_t> y = {0xFFC00000, 0x7FC12345, 0xFFC00000, 0x7F800001,
                                   0x7FC00000, 0xFFC00000, 0x7FC00004, 0x7FC00005};
  for (const char* op : {"tile.add", "tile.sub", "tile.mul", "tile.div", "tile.max"}) {
    SCOPED_TRACE(op);
    FunctionBuilder f("nan_pair");
    Val a = f.Param("x", ParamDirection::kIn, DType::kF32, {int64_t{1}, int64_t{8}});
    Val b = f.Param("y", ParamDirection::kIn, DType::kF32, {int64_t{1}, int64_t{8}});
    Val o = f.Param("o", ParamDirection::kOut, DType::kF32, {int64_t{1}, int64_t{8}});
    f.Incore([&] {
      Val ta = f.Load(a, {int64_t{0}, int64_t{0}}, 1, 8);
      Val tb = f.Load(b, {int64_t{0}, int64_t{0}}, 1, 8);
      f.Store(f.Op(op, {ta, tb}), o, {int64_t{0}, int64_t{0}});
    });
    std::vector<uint8_t> got = RunOneRow(BuildOrDie(f), {x, y}, DType::kF32, GetParam());
    for (size_t k = 0; k + 4 <= got.size(); k += 4) {
      uint32_t u;
      std::memcpy(&u, got.data() + k, 4);
      EXPECT_TRUE((u & 0x7FFFFFFF) > 0x7F800000) << "element " << k / 4 << " is not a NaN";
    }
  }
}

// Fused loops run each chunk of 256 columns in a fast mode that does not pin NaN payloads, and
// run a chunk again exactly when one of its results is NaN (targets/cpu/fusion.cc). NaN pairs in
// the second chunk only, through float adds and multiplies, stored as f32 and as bf16: every
// chunk has the interpreter's bits.
TEST_P(ErrorsTest, NanPayloadsInOneChunkOfAFusedLoop) {
  const int64_t n = 700;
  std::vector<uint32_t> x(n), y(n);
  for (int64_t i = 0; i < n; ++i) {
    const float a = 0.5f + 0.25f * static_cast<float>(i), b = 1.0f - 0.125f * static_cast<float>(i);
    std::memcpy(&x[i], &a, 4);
    std::memcpy(&y[i], &b, 4);
  }
  const uint32_t nx[] = {0x7F800001, 0xFFC00000, 0x7FC12345, 0xFFC00003};
  const uint32_t ny[] = {0xFFC00000, 0x7FC12345, 0xFFC00000, 0x7FC00005};
  for (int k = 0; k < 4; ++k) {
    x[300 + 7 * k] = nx[k];
    y[300 + 7 * k] = ny[k];
  }
  // Each expression has a loaded first operand and a computed second one somewhere, which a
  // compiler likes to swap (the memory operand of an x86 add or multiply is the second).
  using Expr = std::function<Val(FunctionBuilder&, Val, Val)>;
  const Expr exprs[] = {
      [](FunctionBuilder& f, Val a, Val b) {
        return f.Op("tile.add", {f.Op("tile.mul", {f.Op("tile.add", {a, b}), b}), a});
      },
      [](FunctionBuilder& f, Val a, Val b) {
        return f.Op("tile.add", {a, f.Op("tile.mul", {b, b})});
      },
      [](FunctionBuilder& f, Val a, Val b) {
        return f.Op("tile.mul", {a, f.Op("tile.add", {b, b})});
      },
  };
  for (const Expr& expr : exprs) {
    for (DType out : {DType::kF32, DType::kBF16}) {
      SCOPED_TRACE(DTypeName(out));
      FunctionBuilder f("nan_chunk");
      Val a = f.Param("x", ParamDirection::kIn, DType::kF32, {int64_t{1}, n});
      Val b = f.Param("y", ParamDirection::kIn, DType::kF32, {int64_t{1}, n});
      Val o = f.Param("o", ParamDirection::kOut, out, {int64_t{1}, n});
      f.Incore([&] {
        Val r = expr(f, f.Load(a, {int64_t{0}, int64_t{0}}, 1, n),
                     f.Load(b, {int64_t{0}, int64_t{0}}, 1, n));
        if (out != DType::kF32) r = f.Op("tile.cast", {r}, FunctionBuilder::TileType{1, n, out});
        f.Store(r, o, {int64_t{0}, int64_t{0}});
      });
      RunOneRow(BuildOrDie(f), {x, y}, out, GetParam());
    }
  }
}

// A fused bf16 store rounds a chunk at a time with the native instruction where the target has
// one (pc::PutBf16Chunk), which flushes subnormals; a chunk with a subnormal result runs again
// exactly. Products that are f32 subnormals rounding to nonzero bf16 subnormals (and ties, and
// ones that round up to the smallest normal) in the second chunk and in the last one's masked
// tail: every element has the interpreter's bits, which the test also spells out.
TEST_P(ErrorsTest, SubnormalsInOneChunkOfAFusedBf16Store) {
  const int64_t n = 700;  // chunks of 256, 256 and 188 columns: 5 x 32 + 16 + a 12-lane tail
  std::vector<uint32_t> x(n), y(n);
  for (int64_t i = 0; i < n; ++i) {
    const float a = 0.5f + 0.25f * static_cast<float>(i), b = 1.0f - 0.125f * static_cast<float>(i);
    std::memcpy(&x[i], &a, 4);
    std::memcpy(&y[i], &b, 4);
  }
  // x * 1.0 = x: subnormal f32 bits and the bf16 bits F32ToBf16 gives them.
  const uint32_t sub[] = {0x00208000, 0x80218000, 0x007FFFFF, 0x00008001, 0x00400001, 0x00000001};
  const uint16_t want[] = {0x0020, 0x8022, 0x0080, 0x0001, 0x0040, 0x0000};
  const int64_t at[] = {300, 307, 511, 693, 698, 699};
  const float one = 1.0f;
  for (int k = 0; k < 6; ++k) {
    x[at[k]] = sub[k];
    std::memcpy(&y[at[k]], &one, 4);
  }
  FunctionBuilder f("subnormal_chunk");
  Val a = f.Param("x", ParamDirection::kIn, DType::kF32, {int64_t{1}, n});
  Val b = f.Param("y", ParamDirection::kIn, DType::kF32, {int64_t{1}, n});
  Val o = f.Param("o", ParamDirection::kOut, DType::kBF16, {int64_t{1}, n});
  f.Incore([&] {
    Val r = f.Op("tile.mul", {f.Load(a, {int64_t{0}, int64_t{0}}, 1, n),
                              f.Load(b, {int64_t{0}, int64_t{0}}, 1, n)});
    f.Store(f.Op("tile.cast", {r}, FunctionBuilder::TileType{1, n, DType::kBF16}), o,
            {int64_t{0}, int64_t{0}});
  });
  const std::vector<uint16_t> got =
      Halves(RunOneRow(BuildOrDie(f), {x, y}, DType::kBF16, GetParam()));
  for (int k = 0; k < 6; ++k) EXPECT_EQ(got[at[k]], want[k]) << "element " << at[k];
}

// Row max / min of a 1000-column row with NaNs at chosen places: the result is the row's first
// NaN with its payload (src/interp folds in order). Vector forms keep four accumulators, each
// with its own NaN mask (kernels/cpu/reduce.h), and a fused loop feeds them 256 columns at a time;
// the places cover each accumulator in the first and a later chunk, the first vector, the tail,
// and a second NaN that a later vector of an earlier accumulator brings.
TEST_P(ErrorsTest, FirstNanOfAWideRowMaxAndMin) {
  const int64_t n = 1000;
  const std::vector<std::vector<int64_t>> places = {
      {3},        {16 + 5},   {32 + 1},   {48 + 9},        {64 + 2},  {256 + 7},
      {256 + 20}, {256 + 40}, {256 + 60}, {256 + 60, 256 + 70}, {998}, {100, 700}};
  const uint32_t payloads[] = {0x7FC12345, 0xFFC00003};
  for (const char* op : {"tile.row_max", "tile.row_min"}) {
    // max(x) - x in a fused loop after the reduction's own loop; each element is NaN with the
    // reduction's payload where x is not NaN.
    FunctionBuilder f("first_nan");
    Val a = f.Param("x", ParamDirection::kIn, DType::kF32, {int64_t{1}, n});
    Val o = f.Param("o", ParamDirection::kOut, DType::kF32, {int64_t{1}, n});
    f.Incore([&] {
      Val t = f.Load(a, {int64_t{0}, int64_t{0}}, 1, n);
      f.Store(f.Op("tile.row_expand_sub", {t, f.Op(op, {t})}), o, {int64_t{0}, int64_t{0}});
    });
    const Program prog = BuildOrDie(f);
    for (const std::vector<int64_t>& at : places) {
      SCOPED_TRACE(std::string(op) + " NaN at " + std::to_string(at[0]));
      std::vector<uint32_t> x(n);
      for (int64_t i = 0; i < n; ++i) {
        const float v = static_cast<float>((i * 37) % 101) - 50.0f;
        std::memcpy(&x[i], &v, 4);
      }
      for (size_t k = 0; k < at.size(); ++k) x[at[k]] = payloads[k];
      const std::vector<uint8_t> got = RunOneRow(prog, {x}, DType::kF32, GetParam());
      uint32_t u;
      std::memcpy(&u, got.data() + (at[0] == 0 ? 4 : 0), 4);
      EXPECT_EQ(u & 0x7FFFFFFF, payloads[0] & 0x7FFFFFFF) << "not the first NaN's payload";
    }
  }
}

// The same kind of loop updating an inout tensor in place. A chunk's rerun must read what its
// first run read, which holds because fuse-tiles never fuses a load of a tensor the scope stores
// to; were that changed, the rerun of the NaN chunk would apply t * y + t twice to its other
// elements.
TEST_P(ErrorsTest, InPlaceFusedLoopWithNanRunsOnce) {
  const int64_t n = 700;
  std::vector<uint32_t> t(n), y(n);
  for (int64_t i = 0; i < n; ++i) {
    const float a = 0.5f + 0.25f * static_cast<float>(i), b = 1.5f;
    std::memcpy(&t[i], &a, 4);
    std::memcpy(&y[i], &b, 4);
  }
  t[300] = 0x7FC12345;
  y[300] = 0xFFC00000;
  FunctionBuilder f("in_place");
  Val pt = f.Param("t", ParamDirection::kInOut, DType::kF32, {int64_t{1}, n});
  Val py = f.Param("y", ParamDirection::kIn, DType::kF32, {int64_t{1}, n});
  f.Incore([&] {
    Val tt = f.Load(pt, {int64_t{0}, int64_t{0}}, 1, n);
    Val ty = f.Load(py, {int64_t{0}, int64_t{0}}, 1, n);
    f.Store(f.Op("tile.add", {f.Op("tile.mul", {tt, ty}), tt}), pt, {int64_t{0}, int64_t{0}});
  });
  const Program prog = BuildOrDie(f);
  std::vector<uint32_t> got[2] = {t, t};
  const char* targets[2] = {"interp", GetParam().c_str()};
  for (int k = 0; k < 2; ++k) {
    std::vector<uint32_t> yc = y;
    Status s = ptox::Run(prog,
                   {Tensor::Contiguous(got[k].data(), DType::kF32, {1, n}),
                    Tensor::Contiguous(yc.data(), DType::kF32, {1, n})},
                   {.target = targets[k]});
    ASSERT_TRUE(s.ok()) << targets[k] << ": " << s.message();
  }
  EXPECT_EQ(got[0], got[1]) << GetParam() << " differs from the interpreter";
}

INSTANTIATE_TEST_SUITE_P(Conformance, ErrorsTest, ::testing::ValuesIn(CpuTargets()),
                         [](const auto& info) { return Sanitize(info.param); });

}  // namespace
}  // namespace ptox::conformance
