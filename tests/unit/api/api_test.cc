// The public C++ API: builder programs, their text, running them, and argument checking.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ptox/builder.h"
#include "ptox/ptox.h"

namespace ptox {
namespace {

// c = combine(a, b) over one 128x128 f32 tile: the shape of these tests' programs.
Result<Program> BuildTileProgram(const std::string& name,
                                 const std::function<Val(FunctionBuilder&, Val, Val)>& combine) {
  FunctionBuilder f(name);
  Val a = f.Param("a", ParamDirection::kIn, DType::kF32, {int64_t{128}, int64_t{128}});
  Val b = f.Param("b", ParamDirection::kIn, DType::kF32, {int64_t{128}, int64_t{128}});
  Val c = f.Param("c", ParamDirection::kOut, DType::kF32, {int64_t{128}, int64_t{128}});
  f.Incore([&] {
    Val ta = f.Load(a, {int64_t{0}, int64_t{0}}, 128, 128);
    Val tb = f.Load(b, {int64_t{0}, int64_t{0}}, 128, 128);
    f.Store(combine(f, ta, tb), c, {int64_t{0}, int64_t{0}});
  });
  return f.Build();
}

Result<Program> BuildTileAdd() {
  return BuildTileProgram("tile_add",
                          [](FunctionBuilder& f, Val a, Val b) { return f.Op("tile.add", {a, b}); });
}

TEST(FunctionBuilder, BuildsTheSameProgramAsTheText) {
  auto built = BuildTileAdd();
  ASSERT_TRUE(built.ok()) << built.status().message();
  auto parsed = Program::FromFile(std::string(PTOX_EXAMPLES_DIR) + "/hello.pto");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  // Same structure; only the SSA names differ (the builder names tiles by number).
  auto strip = [](std::string s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%') {
        out += '%';
        while (i + 1 < s.size() && (std::isalnum(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '_')) ++i;
      } else {
        out += s[i];
      }
    }
    return out;
  };
  EXPECT_EQ(strip(built->ToText()), strip(parsed->ToText()));
}

TEST(FunctionBuilder, FirstErrorIsStickyAndReported) {
  FunctionBuilder f("bad");
  Val a = f.Param("a", ParamDirection::kIn, DType::kF32, {int64_t{8}, int64_t{8}});
  f.Incore([&] {
    Val t = f.Op("tile.exp", {a});  // a tensor, not a tile
    f.Op("tile.nope", {t});         // skipped: the first error wins
  });
  auto prog = f.Build();
  ASSERT_FALSE(prog.ok());
  EXPECT_EQ(prog.status().code(), StatusCode::kInvalid);
  EXPECT_NE(prog.status().message().find("tile.exp operand 0 must be a tile"), std::string::npos)
      << prog.status().message();
}

// tile_add with the add in a helper: exp(a) + b, the helper called inside the incore scope.
Result<Program> BuildWithHelper(FunctionBuilder& helper) {
  Val x = helper.TileParam("x", {128, 128, DType::kF32});
  Val y = helper.TileParam("y", {128, 128, DType::kF32});
  helper.Return({helper.Op("tile.add", {helper.Op("tile.exp", {x}), y})});
  return BuildTileProgram(
      "main", [&](FunctionBuilder& f, Val a, Val b) { return f.Call(helper, {a, b}).at(0); });
}

TEST(FunctionBuilder, CallsAnotherBuildersFunction) {
  FunctionBuilder helper("exp_add");
  auto prog = BuildWithHelper(helper);
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  const std::string text = prog->ToText();
  EXPECT_NE(text.find("func @exp_add(%x: in tile<128x128xf32>, %y: in tile<128x128xf32>) -> "
                      "tile<128x128xf32> incore {"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("= call @exp_add("), std::string::npos) << text;
  // The text form reads back to the same program.
  auto again = Program::Parse(text);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->ToText(), text);
  std::vector<float> a(128 * 128), b(128 * 128), c(128 * 128, NAN), d(128 * 128, NAN);
  for (int i = 0; i < 128 * 128; ++i) a[i] = float(i % 9) * 0.25f, b[i] = float(i % 5);
  auto T = [](float* p) { return Tensor::Contiguous(p, DType::kF32, {128, 128}); };
  for (const char* target : {"interp", "cpu"}) {
    std::vector<float>& out = std::string(target) == "interp" ? c : d;
    Status s = ptox::Run(*prog, {T(a.data()), T(b.data()), T(out.data())}, {.target = target});
    ASSERT_TRUE(s.ok()) << target << ": " << s.message();
  }
  for (int i = 0; i < 128 * 128; ++i) ASSERT_EQ(c[i], d[i]) << i;
  EXPECT_NEAR(c[10], std::exp(a[10]) + b[10], 1e-5f);
}

TEST(FunctionBuilder, CallErrorsAreReported) {
  FunctionBuilder helper("h");
  Val x = helper.TileParam("x", {8, 8, DType::kF32});
  helper.Return({x});
  FunctionBuilder f("main");
  Val a = f.Param("a", ParamDirection::kIn, DType::kF32, {int64_t{8}, int64_t{16}});
  f.Incore([&] { f.Call(helper, {f.Load(a, {int64_t{0}, int64_t{0}}, 8, 16)}); });
  auto prog = f.Build();
  ASSERT_FALSE(prog.ok());
  EXPECT_NE(prog.status().message().find("argument 0 (%x) of @h must be a tile<8x8xf32>, got "
                                         "tile<8x16xf32>"),
            std::string::npos)
      << prog.status().message();
  FunctionBuilder self("self");
  self.Call(self, {});
  EXPECT_NE(self.Build().status().message().find("@self calls itself"), std::string::npos);
}

TEST(Run, BuiltProgramComputesOnCallerMemory) {
  auto prog = BuildTileAdd();
  ASSERT_TRUE(prog.ok());
  std::vector<float> a(128 * 128), b(128 * 128), c(128 * 128, NAN);
  for (int i = 0; i < 128 * 128; ++i) a[i] = float(i), b[i] = 0.5f * float(i % 7);
  Status s = ptox::Run(*prog, {Tensor::Contiguous(a.data(), DType::kF32, {128, 128}),
                         Tensor::Contiguous(b.data(), DType::kF32, {128, 128}),
                         Tensor::Contiguous(c.data(), DType::kF32, {128, 128})});
  ASSERT_TRUE(s.ok()) << s.message();
  for (int i = 0; i < 128 * 128; ++i) ASSERT_EQ(c[i], float(i) + 0.5f * float(i % 7)) << i;
}

TEST(Run, RejectsWrongShapeDtypeCountAndAliasing) {
  auto prog = BuildTileAdd();
  ASSERT_TRUE(prog.ok());
  std::vector<float> a(128 * 128), b(128 * 128), c(128 * 128);
  std::vector<int32_t> ints(128 * 128);
  auto T = [](void* p, DType t, std::vector<int64_t> s) { return Tensor::Contiguous(p, t, s); };
  struct Bad {
    std::vector<Arg> args;
    const char* message;
  } cases[] = {
      {{T(a.data(), DType::kF32, {128, 128}), T(b.data(), DType::kF32, {128, 128})},
       "takes 3 arguments, got 2"},
      {{T(a.data(), DType::kF32, {128, 64}), T(b.data(), DType::kF32, {128, 128}),
        T(c.data(), DType::kF32, {128, 128})},
       "has shape 128x64xf32"},
      {{T(ints.data(), DType::kI32, {128, 128}), T(b.data(), DType::kF32, {128, 128}),
        T(c.data(), DType::kF32, {128, 128})},
       "has dtype i32"},
      {{T(a.data(), DType::kF32, {128, 128}), T(b.data(), DType::kF32, {128, 128}),
        T(a.data(), DType::kF32, {128, 128})},
       "output %c aliases argument %a"},
      {{T(a.data(), DType::kF32, {128, 128}), int64_t{3}, T(c.data(), DType::kF32, {128, 128})},
       "must be a tensor"},
  };
  for (const Bad& bad : cases) {
    Status s = ptox::Run(*prog, bad.args);
    EXPECT_EQ(s.code(), StatusCode::kInvalid);
    EXPECT_NE(s.message().find(bad.message), std::string::npos) << s.message();
  }
  EXPECT_EQ(ptox::Run(*prog, {T(a.data(), DType::kF32, {128, 128}), T(b.data(), DType::kF32, {128, 128}),
                        T(c.data(), DType::kF32, {128, 128})},
                {.target = "warp-drive"})
                .code(),
            StatusCode::kUnsupported);
}

}  // namespace
}  // namespace ptox

namespace ptox {
namespace {

// Names built in C++ must be names the text form can read back.
TEST(FunctionBuilder, InvalidFunctionAndSymbolNamesAreErrors) {
  {
    FunctionBuilder f("my kernel");
    f.Param("a", ParamDirection::kIn, DType::kF32, {int64_t{8}});
    auto prog = f.Build();
    ASSERT_FALSE(prog.ok());
    EXPECT_NE(prog.status().message().find("invalid function name 'my kernel'"),
              std::string::npos)
        << prog.status().message();
  }
  {
    FunctionBuilder f("k");
    f.Param("a", ParamDirection::kIn, DType::kF32, {std::string("N x"), int64_t{8}});
    auto prog = f.Build();
    ASSERT_FALSE(prog.ok());
    EXPECT_NE(prog.status().message().find("invalid dimension symbol 'N x'"), std::string::npos)
        << prog.status().message();
  }
  {
    // Huge extents are refused before any rows * cols arithmetic could overflow.
    FunctionBuilder f("k");
    f.Param("a", ParamDirection::kIn, DType::kF32, {int64_t{8}});
    f.Incore([&] { f.Full(0.0, int64_t{1} << 40, int64_t{1} << 40, DType::kF32); });
    auto prog = f.Build();
    ASSERT_FALSE(prog.ok());
    EXPECT_NE(prog.status().message().find("tile extents are limited to"), std::string::npos)
        << prog.status().message();
  }
  FunctionBuilder ok("k.v2");
  ok.Param("a", ParamDirection::kIn, DType::kF32, {std::string("N_1"), int64_t{8}});
  auto prog = ok.Build();
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  EXPECT_TRUE(Program::Parse(prog->ToText()).ok());  // prints text that parses back
}

// The interpreter is a target like the compiled ones: listed, lowered for (nominal
// capabilities), run through the same path; it has IR to show but no source or binary.
TEST(Targets, InterpIsATargetWithIrButNoSource) {
  std::vector<std::string> targets = AvailableTargets();
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(targets.back(), "interp");
  EXPECT_EQ(targets.front().rfind("cpu-", 0), 0u) << "the best CPU target comes first";
  auto prog = BuildTileAdd();
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  Result<std::string> ir = Compile(*prog, {.target = "interp", .emit = Emit::kIr});
  ASSERT_TRUE(ir.ok()) << ir.status().message();
  EXPECT_NE(ir->find("tile.add"), std::string::npos) << *ir;
  for (Emit emit : {Emit::kSource, Emit::kBinary}) {
    Result<std::string> out = Compile(*prog, {.target = "interp", .emit = emit});
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), StatusCode::kInvalid);
    EXPECT_NE(out.status().message().find("runs the IR as it is"), std::string::npos)
        << out.status().message();
  }
  Result<std::string> unknown = Compile(*prog, {.target = "gpu"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find(
                "unknown target 'gpu' (available: interp, cpu, cpu-avx512, cpu-avx2, "
                "cpu-sve512, cpu-sve256, cpu-sve128, cpu-sve, cpu-neon, cpu-scalar)"),
            std::string::npos)
      << unknown.status().message();
}

// A loop that carries a tensor feeds each trip's reordered sums into the next: the bound grows
// with the trip count (from the arguments); without them it is an error naming the loop, and a
// loop that runs no trip reorders nothing. Sums in a nested block add to the ones after it.
TEST(ReorderBound, CompoundsOverTheTripsOfALoopCarryingATensor) {
  auto prog = Program::Parse(R"(
func @f(%x: in tensor<4x8xf32>, %w: in tensor<8x8xf32>, %n: in index, %y: out tensor<4x8xf32>) {
  %r = for %i = 0 to %n step 2 iter(%h = %x) {
    %m = tensor.matmul %h, %w
    yield %m
  }
  %s = tensor.softmax %r
  tensor.store %s, %y
}
)");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  std::vector<float> x(32), w(64), y(32);
  auto args = [&](int64_t n) {
    return std::vector<Arg>{Tensor::Contiguous(x.data(), DType::kF32, {4, 8}),
                            Tensor::Contiguous(w.data(), DType::kF32, {8, 8}), n,
                            Tensor::Contiguous(y.data(), DType::kF32, {4, 8})};
  };
  // Each trip sums 8 terms, the softmax after the loop 8 more.
  for (auto [n, terms] : {std::pair<int64_t, int>{0, 8}, {1, 16}, {2, 16}, {7, 40}}) {
    Result<double> bound = ReorderBound(*prog, {}, args(n));
    ASSERT_TRUE(bound.ok()) << bound.status().message();
    EXPECT_EQ(*bound, 2.0 * terms * 0x1p-23) << n << " trips";
  }
  Result<double> unknown = ReorderBound(*prog);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("depends on its trip count: pass the arguments"),
            std::string::npos)
      << unknown.status().message();
}

}  // namespace
}  // namespace ptox

namespace ptox {
namespace {

// A while built through the public builder: a tile carried until a counter reaches n.
TEST(FunctionBuilder, BuildsAWhileLoop) {
  FunctionBuilder f("halve");
  Val x = f.Param("x", ParamDirection::kIn, DType::kF32, {int64_t{8}, int64_t{16}});
  Val y = f.Param("y", ParamDirection::kOut, DType::kF32, {int64_t{8}, int64_t{16}});
  Val n = f.ScalarParam("n", DType::kIndex);
  f.Incore([&] {
    Val t = f.Load(x, {int64_t{0}, int64_t{0}}, 8, 16);
    std::vector<Val> r = f.While(
        {int64_t{0}, t}, [&](const std::vector<Val>& c) { return f.Op("arith.lt", {c[0], n}); },
        [&](const std::vector<Val>& c) {
          return std::vector<Operand>{f.Op("arith.add", {c[0], int64_t{1}}),
                                      f.Op("tile.mul", {c[1], 0.5})};
        });
    f.Store(r[1], y, {int64_t{0}, int64_t{0}});
  });
  auto prog = f.Build();
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  const std::string text = prog->ToText();
  EXPECT_NE(text.find(" = while iter("), std::string::npos) << text;
  EXPECT_NE(text.find("condition %"), std::string::npos) << text;
}

}  // namespace
}  // namespace ptox
