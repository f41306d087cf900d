// Parser round trips: Print(Parse(x)) == x for printed programs covering every syntax form and
// every op in ops.def, and Parse(Print(m)) == m (up to printing) for programs built in C++.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/walk.h"
#include "ir/verifier.h"

namespace ptox::ir {
namespace {

// Parses, verifies and prints `text`, which must be in printed form already.
void ExpectRoundTrip(const std::string& text) {
  Module m = Parse(text, "round_trip.pto");
  EXPECT_NO_THROW(Verify(m));
  EXPECT_EQ(Print(m), text);
}

// Every op in ops.def, so a new op without a round-trip case fails CoversEveryOpInOpsDef.
constexpr OpCode kAllOps[] = {
#define PTOX_OP(e, name, family, fn, ...) OpCode::k##e,
#include "ops/ops.def"
#undef PTOX_OP
};

// Collects the ops used in `block` and its nested blocks.
void CollectOps(const Block& block, std::set<OpCode>& ops) {
  ForEachOp(block, [&](const OpStmt& op) { ops.insert(op.op()); });
}

const char kEveryTileOp[] =
    "func @every_tile_op(%a: in tensor<64x64xf32>, %h: in tensor<64x64xbf16>, %o: out "
    "tensor<64x64xf32>, %io: inout tensor<{M}x64xf32>) {\n"
    "  incore {\n"
    "    %t = tile.load %a[0, 0] {pad = 0.0} : tile<16x16xf32>\n"
    "    %u = tile.load %h[0, 16] : tile<16x16xbf16>\n"
    "    %f = tile.full 1.5 : tile<16x16xf32>\n"
    "    %add = tile.add %t, %f\n"
    "    %sub = tile.sub %add, 2.0\n"
    "    %mul = tile.mul %sub, %t\n"
    "    %div = tile.div %mul, -3\n"
    "    %max = tile.max %div, %t\n"
    "    %min = tile.min %max, inf\n"
    "    %neg = tile.neg %min\n"
    "    %abs = tile.abs %neg\n"
    "    %exp = tile.exp %abs\n"
    "    %log = tile.log %exp\n"
    "    %sqrt = tile.sqrt %log\n"
    "    %rsqrt = tile.rsqrt %sqrt\n"
    "    %recip = tile.recip %rsqrt\n"
    "    %tanh = tile.tanh %recip\n"
    "    %sig = tile.sigmoid %tanh\n"
    "    %relu = tile.relu %sig\n"
    "    %silu = tile.silu %relu\n"
    "    %gelu = tile.gelu %silu\n"
    "    %erf = tile.erf %gelu\n"
    "    %eq = tile.eq %gelu, %t\n"
    "    %ne = tile.ne %gelu, 0.0\n"
    "    %lt = tile.lt %gelu, -inf\n"
    "    %le = tile.le %gelu, nan\n"
    "    %gt = tile.gt %gelu, 1e-30\n"
    "    %ge = tile.ge %gelu, -0.0\n"
    "    %sel = tile.select %eq, %t, %gelu\n"
    "    %sel2 = tile.select %ne, %t, 0.5\n"
    "    %cast = tile.cast %u : tile<16x16xf32>\n"
    "    %rsum = tile.row_sum %cast\n"
    "    %rmax = tile.row_max %cast\n"
    "    %rmin = tile.row_min %cast\n"
    "    %csum = tile.col_sum %cast\n"
    "    %cmax = tile.col_max %cast\n"
    "    %cmin = tile.col_min %cast\n"
    "    %arg = tile.row_argmax %cast\n"
    "    %agt = tile.argmax_gt %rmax, %rmin\n"
    "    %at = tile.extract %arg[2, 0]\n"
    "    %cm = tile.causal_mask %t, %at\n"
    "    %cm2 = tile.causal_mask %cm, -3\n"
    "    %bc = tile.broadcast %rmax : tile<16x16xf32>\n"
    "    %bc2 = tile.broadcast %agt : tile<16x8xbool>\n"
    "    %rea = tile.row_expand_add %t, %rsum\n"
    "    %res = tile.row_expand_sub %rea, %rmax\n"
    "    %rem = tile.row_expand_mul %res, %rmin\n"
    "    %red = tile.row_expand_div %rem, %rsum\n"
    "    %cea = tile.col_expand_add %red, %csum\n"
    "    %ces = tile.col_expand_sub %cea, %cmax\n"
    "    %cem = tile.col_expand_mul %ces, %cmin\n"
    "    %ced = tile.col_expand_div %cem, %csum\n"
    "    %tr = tile.transpose %ced\n"
    "    %rh = tile.reshape %tr : tile<8x32xf32>\n"
    "    %sl = tile.slice %t[0, 8] : tile<16x8xf32>\n"
    "    %as = tile.assemble %t, %sl[0, 8]\n"
    "    %mm = tile.matmul %as, %tr {transpose_b = true}\n"
    "    %acc = tile.matmul_acc %mm, %sel, %sel2\n"
    "    tile.store %acc, %o[0, 0]\n"
    "    tile.store %acc, %io[16, 0]\n"
    "  }\n"
    "}\n";

const char kScalarsAndControlFlow[] =
    "func @control(%x: in tensor<{N}x{K}xf32>, %s: in f32, %k: in i64, %y: out "
    "tensor<{N}x{K}xf32>) {\n"
    "  %n = tensor.dim %x, 0\n"
    "  %kk = tensor.dim %x, 1\n"
    "  %a = arith.add %n, 1\n"
    "  %b = arith.sub %a, %kk\n"
    "  %c = arith.mul %b, 2\n"
    "  %d = arith.div %c, 3\n"
    "  %e = arith.rem %d, 4\n"
    "  %f = arith.max %e, 0\n"
    "  %g = arith.min %f, %n\n"
    "  %eq = arith.eq %g, 0\n"
    "  %ne = arith.ne %g, %a\n"
    "  %lt = arith.lt %g, -9223372036854775808\n"
    "  %le = arith.le %g, 9223372036854775807\n"
    "  %gt = arith.gt %s, 1e+16\n"
    "  %ge = arith.ge %s, 5e-324\n"
    "  %sel = arith.select %eq, %a, %b\n"
    "  arith.assert %le, %g, 7 {msg = \"{} and {} 100%\", op = \"my.check\"}\n"
    "  arith.assert %ne\n"
    "  %i32 = arith.cast %sel : i32\n"
    "  %fs = arith.add %s, 1.0\n"
    "  %sum = for %i = 0 to %n step 16 parallel iter(%acc = 0.0) {\n"
    "    incore {\n"
    "      %t = tile.load %x[%i, 0] : tile<16x16xf32>\n"
    "      %t2 = tile.mul %t, %fs\n"
    "      tile.store %t2, %y[%i, 0]\n"
    "    }\n"
    "    %acc2 = arith.add %acc, %s\n"
    "    yield %acc2\n"
    "  }\n"
    "  %z, %w = for %j = %a to 8 step %c unroll iter(%q = %k, %p = %i32) {\n"
    "    %q2 = arith.add %q, 1\n"
    "    yield %q2, %p\n"
    "  }\n"
    "  for %j2 = 0 to 4 step 1 {\n"
    "  }\n"
    "  %v, %u = if %eq -> f32, index {\n"
    "    yield %fs, %n\n"
    "  } else {\n"
    "    yield -0.0, 0\n"
    "  }\n"
    "  if %ne {\n"
    "    yield\n"
    "  }\n"
    "  if %lt {\n"
    "    incore {\n"
    "      %full = tile.full %v : tile<1x16xf32>\n"
    "      tile.store %full, %y[0, 0]\n"
    "    }\n"
    "  } else {\n"
    "    %unused = arith.add %z, %k\n"
    "  }\n"
    "}\n";

const char kTwoFunctions[] =
    "func @first(%a: in tensor<8xi32>, %b: out tensor<8xi32>) {\n"
    "  incore {\n"
    "    %0 = tile.load %a[0] : tile<1x8xi32>\n"
    "    %1 = tile.relu %0\n"
    "    tile.store %1, %b[0]\n"
    "  }\n"
    "}\n"
    "\n"
    "func @second.v2() {\n"
    "}\n";

const char kEveryTensorOp[] =
    "func @every_tensor_op(%x: in tensor<{N}x64xf32>, %w: in tensor<64xf32>, %c: in "
    "tensor<{N}x64xf32>, %b: in tensor<2x64x32xbf16>, %y: out tensor<{N}x64xf32>) {\n"
    "  %add = tensor.add %x, %w\n"
    "  %sub = tensor.sub %add, 1.5\n"
    "  %mul = tensor.mul %sub, %x\n"
    "  %div = tensor.div %mul, %x\n"
    "  %max = tensor.max %div, %w\n"
    "  %min = tensor.min %max, 0.0\n"
    "  %neg = tensor.neg %min\n"
    "  %abs = tensor.abs %neg\n"
    "  %exp = tensor.exp %abs\n"
    "  %log = tensor.log %exp\n"
    "  %sqrt = tensor.sqrt %log\n"
    "  %rsqrt = tensor.rsqrt %sqrt\n"
    "  %recip = tensor.recip %rsqrt\n"
    "  %tanh = tensor.tanh %recip\n"
    "  %sig = tensor.sigmoid %tanh\n"
    "  %relu = tensor.relu %sig\n"
    "  %silu = tensor.silu %relu\n"
    "  %gelu = tensor.gelu %silu\n"
    "  %erf = tensor.erf %gelu\n"
    "  %half = tensor.cast %gelu : tensor<{N}x64xbf16>\n"
    "  %sum = tensor.sum %x {axis = 1, keepdims = true}\n"
    "  %rmax = tensor.reduce_max %x {axis = 0}\n"
    "  %rmin = tensor.reduce_min %x {axis = -1, keepdims = true}\n"
    "  %bt = tensor.transpose %b {dim0 = 1, dim1 = 2}\n"
    "  %mm = tensor.matmul %bt, %b\n"
    "  %mt = tensor.matmul %x, %x {transpose_b = true}\n"
    "  %r = tensor.reshape %b : tensor<128x32xbf16>\n"
    "  %sl = tensor.slice %x[0, 32] : tensor<{N}x16xf32>\n"
    "  %cat = tensor.concat %sl, %sl {axis = 1}\n"
    "  %cat2 = tensor.concat %x, %x {axis = 0} : tensor<{S}x64xf32>\n"
    "  %n = tensor.dim %x, 0\n"
    "  %e = tensor.empty %n : tensor<{N}x64xf32>\n"
    "  %sm = tensor.softmax %x {axis = -1}\n"
    "  %lsm = tensor.log_softmax %x\n"
    "  %rms = tensor.rmsnorm %x, %w {eps = 1e-06}\n"
    "  %ln = tensor.layernorm %x, %w, %w {eps = 1e-05}\n"
    "  %sw = tensor.swiglu %x, %c\n"
    "  %rope = tensor.rope %x, %c, %c {interleaved = true}\n"
    "  tensor.store %rope, %e\n"
    "  tensor.store %sw, %y\n"
    "  tensor.store %sl, %y[%n, 48]\n"
    "}\n";

const char kMasksAndIndices[] =
    "func @masks_and_indices(%x: in tensor<{T}x{S}xf32>, %w: in tensor<{S}xf32>, %ids: in "
    "tensor<2x{T}xi64>, %table: in tensor<{V}x64xbf16>, %pos: in index, %m: out "
    "tensor<{T}x{S}xbool>, %cache: inout tensor<4x{S}xf32>) {\n"
    "  %eq = tensor.eq %x, %w\n"
    "  %ne = tensor.ne %x, 0.0\n"
    "  %lt = tensor.lt %x, %x\n"
    "  %le = tensor.le %x, -inf\n"
    "  %gt = tensor.gt %x, %w\n"
    "  %ge = tensor.ge %x, nan\n"
    "  %sel = tensor.select %gt, %x, %w\n"
    "  %sel2 = tensor.select %eq, %x, -1.5\n"
    "  %cm = tensor.causal_mask %sel, %pos\n"
    "  %cm2 = tensor.causal_mask %sel2, 0\n"
    "  %am = tensor.argmax %cm\n"
    "  %am2 = tensor.argmax %cm2 {axis = 0, keepdims = true}\n"
    "  %g = tensor.gather %table, %ids\n"
    "  tensor.store %ge, %m\n"
    "  tensor.store %cm, %cache[%pos, 0]\n"
    "}\n";

TEST(ParserRoundTrip, EveryTileOp) { ExpectRoundTrip(kEveryTileOp); }
TEST(ParserRoundTrip, ScalarsAndControlFlow) { ExpectRoundTrip(kScalarsAndControlFlow); }
TEST(ParserRoundTrip, EveryTensorOp) { ExpectRoundTrip(kEveryTensorOp); }
TEST(ParserRoundTrip, MasksAndIndices) { ExpectRoundTrip(kMasksAndIndices); }
TEST(ParserRoundTrip, IncoreAttributes) {
  ExpectRoundTrip(
      "func @f(%a: inout tensor<8x8xf32>) {\n"
      "  incore {onchip_bytes = 4160} {\n"
      "    %t = tile.load %a[0, 0] : tile<8x8xf32>\n"
      "    tile.store %t, %a[0, 0]\n"
      "  }\n"
      "  incore {\n"
      "  }\n"
      "}\n");
}
TEST(ParserRoundTrip, TwoFunctionsAndEmptyParams) { ExpectRoundTrip(kTwoFunctions); }
TEST(ParserRoundTrip, EmptyModule) { EXPECT_TRUE(Parse("", "empty.pto").funcs.empty()); }

// GGUF weight blocks (kernels/quant.h): 64 values of q4_1 are 2 blocks of 20 bytes.
const char kQuantized[] =
    "func @quantized(%x: in tensor<{T}x64xf32>, %w: in tensor<8x40xi8>, %ids: in tensor<{T}xi32>, "
    "%y: out tensor<{T}x8xf32>, %e: out tensor<{T}x64xf32>) {\n"
    "  %q = tensor.qmatmul %x, %w {format = \"q4_1\"}\n"
    "  %g = tensor.gather %w, %ids {format = \"q4_1\"}\n"
    "  incore {\n"
    "    %a = tile.load %x[0, 0] : tile<4x64xf32>\n"
    "    %b = tile.load %w[0, 0] : tile<8x40xi8>\n"
    "    %z = tile.full 0.0 : tile<4x8xf32>\n"
    "    %c = tile.qmatmul_acc %z, %a, %b {format = \"q4_1\"}\n"
    "    %d = tile.dequantize %b {format = \"q4_1\"}\n"
    "    tile.store %c, %y[0, 0]\n"
    "    tile.store %d, %e[0, 0]\n"
    "  }\n"
    "  tensor.store %q, %y\n"
    "  tensor.store %g, %e\n"
    "}\n";

TEST(ParserRoundTrip, Quantized) { ExpectRoundTrip(kQuantized); }

// The distributed ops (docs/distributed.md): rank and world size, and allreduce as a value and
// in place.
const char kDistributed[] =
    "func @dist(%x: in tensor<{N}x8xbf16>, %y: out tensor<{N}x8xbf16>) {\n"
    "  %r = dist.rank\n"
    "  %w = dist.world_size\n"
    "  %s = tensor.allreduce %x {op = \"sum\"}\n"
    "  tensor.store %s, %y\n"
    "  dist.allreduce %y {op = \"max\"}\n"
    "}\n"
    "\n"
    "func @more(%x: in tensor<{N}x8xf32>, %g: out tensor<{G}x8xf32>, %h: out tensor<{N}x8xf32>, "
    "%b: inout tensor<3x8xi32>) {\n"
    "  dist.allgather %g, %x\n"
    "  dist.reduce_scatter %h, %g {op = \"sum\"}\n"
    "  dist.broadcast %b {root = 1}\n"
    "}\n"
    "\n"
    "func @rma(%x: in tensor<2x8xf32>, %win: inout tensor<8x8xf32>, %g: out tensor<2x8xf32>) {\n"
    "  dist.put %win, %x, 1, 0, 0\n"
    "  dist.get %g, %win, 0, 2, 0\n"
    "  dist.fence\n"
    "}\n";

TEST(ParserRoundTrip, Distributed) { ExpectRoundTrip(kDistributed); }

TEST(ParserRoundTrip, CoversEveryOpInOpsDef) {
  std::set<OpCode> seen;
  for (const char* text :
       {kEveryTileOp, kScalarsAndControlFlow, kEveryTensorOp, kMasksAndIndices, kQuantized,
        kDistributed}) {
    Module m = Parse(text);
    for (const FuncRef& f : m.funcs) CollectOps(f->body, seen);
  }
  std::vector<std::string> missing;
  for (OpCode op : kAllOps) {
    if (!seen.count(op)) missing.emplace_back(OpName(op));
  }
  EXPECT_TRUE(missing.empty()) << "ops without a round-trip test: "
                               << ::testing::PrintToString(missing);
}

TEST(ParserRoundTrip, CommentsAndLayoutAreNormalized) {
  Module m = Parse(
      "// leading comment\n"
      "func @f(%a: in tensor<4x4xf32>,   // wrapped parameter list\n"
      "        %b: out tensor<4x4xf32>) {\n"
      "  incore {   // comment after a brace\n"
      "    %t = tile.load %a[0,0]:tile<4x4xf32>\n"
      "    tile.store %t,%b[0,0]\n"
      "  }\n"
      "}  // trailing\n");
  EXPECT_EQ(Print(m),
            "func @f(%a: in tensor<4x4xf32>, %b: out tensor<4x4xf32>) {\n"
            "  incore {\n"
            "    %t = tile.load %a[0, 0] : tile<4x4xf32>\n"
            "    tile.store %t, %b[0, 0]\n"
            "  }\n"
            "}\n");
}

TEST(ParserRoundTrip, BuilderProgramParsesToTheSameText) {
  Builder b("built");
  Type t = Type::Tensor({Dim::Symbol("N"), Dim::Static(32)}, DType::kF16);
  Value a = b.Param("a", Direction::kIn, t);
  Value c = b.Param("c", Direction::kOut, t);
  std::function<void(Value)> body = [&](Value i) {
    b.Incore([&] {
      Value x = b.Load(a, {i, Operand::Int(0)}, Type::Tile(16, 32, DType::kF16), -0.0);
      Value y = b.Op(OpCode::kTileExp, {x});  // unnamed: printed as %N
      b.Store(y, c, {i, Operand::Int(0)});
    });
  };
  b.For(Operand::Int(0), Operand::Int(64), Operand::Int(16), body, LoopKind::kParallel);
  Func f = b.Finish();
  std::string printed = Print(f);
  Module m = Parse(printed);
  ASSERT_EQ(m.funcs.size(), 1u);
  EXPECT_EQ(Print(m), printed);
  // Structure: one parallel loop holding one incore scope with three ops.
  const Func& g = *m.funcs[0];
  EXPECT_EQ(g.name, "built");
  ASSERT_EQ(g.params.size(), 2u);
  EXPECT_EQ(g.params[0].value->type, t);
  EXPECT_EQ(g.params[1].dir, Direction::kOut);
  ASSERT_EQ(g.body.size(), 1u);
  const auto& loop = As<ForStmt>(*g.body[0]);
  EXPECT_EQ(loop.loop_kind(), LoopKind::kParallel);
  EXPECT_EQ(loop.ub().int_value(), 64);
  ASSERT_EQ(loop.body().size(), 1u);
  const auto& incore = As<IncoreStmt>(*loop.body()[0]);
  ASSERT_EQ(incore.body().size(), 3u);
  const auto& load = As<OpStmt>(*incore.body()[0]);
  EXPECT_EQ(load.op(), OpCode::kTileLoad);
  EXPECT_EQ(load.args()[1].value(), loop.iv());  // the use resolves to the loop's own value
  EXPECT_TRUE(std::signbit(std::get<double>(load.attrs().at("pad"))));
  EXPECT_EQ(load.result()->type, Type::Tile(16, 32, DType::kF16));
}

TEST(ParserRoundTrip, BuilderNamesOutsideTheNameSyntaxStillParse) {
  Builder b("names");
  Value n = b.Param("my count", Direction::kIn, Type::Scalar(DType::kIndex));
  b.Op(OpCode::kArithAdd, {n, Operand::Int(1)}, {}, {}, "x-1");
  b.Op(OpCode::kArithAdd, {n, Operand::Int(2)}, {}, {}, "x+1");
  std::string printed = Print(b.Finish());
  EXPECT_EQ(printed,
            "func @names(%my_count: in index) {\n"
            "  %x_1 = arith.add %my_count, 1\n"
            "  %x_1_0 = arith.add %my_count, 2\n"
            "}\n");
  EXPECT_EQ(Print(Parse(printed)), printed);
}

TEST(ParserTypes, SymbolicDims) {
  Module m = Parse("func @f(%x: in tensor<{N}x128x{K_2}xbf16>, %n: in index) {\n}\n");
  const Type& t = m.funcs[0]->params[0].value->type;
  ASSERT_EQ(t.rank(), 3);
  EXPECT_EQ(t.shape()[0], Dim::Symbol("N"));
  EXPECT_EQ(t.shape()[1], Dim::Static(128));
  EXPECT_EQ(t.shape()[2], Dim::Symbol("K_2"));
  EXPECT_EQ(t.dtype(), DType::kBF16);
  EXPECT_EQ(m.funcs[0]->params[1].value->type, Type::Scalar(DType::kIndex));
}

TEST(ParserTypes, EveryScalarDtype) {
  for (const char* d : {"f32", "f16", "bf16", "i8", "i32", "i64", "bool", "index"}) {
    std::string text = std::string("func @f(%x: in ") + d + ", %t: in tensor<2x" + d + ">) {\n}\n";
    Module m = Parse(text);
    EXPECT_EQ(m.funcs[0]->params[0].value->type.ToString(), d);
    EXPECT_EQ(Print(m), text);
  }
}

// Float immediates: each spelling parses to the exact double and prints back identically.
TEST(ParserFloats, SpecialValuesRoundTrip) {
  struct Case {
    const char* text;
    double want;
  };
  const Case cases[] = {{"1.0", 1.0},
                        {"-0.0", -0.0},
                        {"0.0", 0.0},
                        {"1e-30", 1e-30},
                        {"5e-324", 5e-324},
                        {"1e+16", 1e16},
                        {"0.1", 0.1},
                        {"-2.5", -2.5},
                        {"inf", INFINITY},
                        {"-inf", -INFINITY},
                        {"1.7976931348623157e+308", 1.7976931348623157e308}};
  for (const Case& c : cases) {
    std::string text = std::string(
                           "func @f(%o: out tensor<1x1xf32>) {\n"
                           "  incore {\n"
                           "    %t = tile.full ") +
                       c.text +
                       " : tile<1x1xf32>\n"
                       "    tile.store %t, %o[0, 0]\n"
                       "  }\n"
                       "}\n";
    Module m = Parse(text);
    const auto& incore = As<IncoreStmt>(*m.funcs[0]->body[0]);
    double v = As<OpStmt>(*incore.body()[0]).args()[0].float_value();
    EXPECT_EQ(v, c.want) << c.text;
    EXPECT_EQ(std::signbit(v), std::signbit(c.want)) << c.text;
    EXPECT_EQ(Print(m), text);
  }
}

TEST(ParserFloats, NanParsesAsQuietNan) {
  Module m = Parse(
      "func @f(%a: in tensor<2x2xf32>) {\n"
      "  incore {\n"
      "    %t = tile.load %a[0, 0] {pad = nan} : tile<2x2xf32>\n"
      "  }\n"
      "}\n");
  const auto& incore = As<IncoreStmt>(*m.funcs[0]->body[0]);
  EXPECT_TRUE(std::isnan(std::get<double>(As<OpStmt>(*incore.body()[0]).attrs().at("pad"))));
}

TEST(ParserFloats, IntegerAndFloatImmediatesStayDistinct) {
  Module m = Parse(
      "func @f(%n: in index) {\n"
      "  %a = arith.add %n, 3\n"
      "  %b = arith.add 1.0, 2.0\n"
      "}\n");
  const auto& a = As<OpStmt>(*m.funcs[0]->body[0]);
  const auto& b = As<OpStmt>(*m.funcs[0]->body[1]);
  EXPECT_TRUE(a.args()[1].is_int());
  EXPECT_EQ(a.args()[1].int_value(), 3);
  EXPECT_TRUE(b.args()[0].is_float());
  EXPECT_EQ(b.result()->type, Type::Scalar(DType::kF32));
}

TEST(ParserSpans, StatementsCarryTheirFirstTokenPosition) {
  Module m = Parse(
      "func @f(%n: in index) {\n"
      "  %a = arith.add %n, 3\n"
      "    for %i = 0 to 4 step 1 {\n"
      "    }\n"
      "}\n",
      "spans.pto");
  const Func& f = *m.funcs[0];
  EXPECT_EQ(f.span.line, 1);
  EXPECT_EQ(f.span.col, 1);
  EXPECT_EQ(f.body[0]->span().file, "spans.pto");
  EXPECT_EQ(f.body[0]->span().line, 2);
  EXPECT_EQ(f.body[0]->span().col, 3);
  EXPECT_EQ(f.body[1]->span().line, 3);
  EXPECT_EQ(f.body[1]->span().col, 5);
}

// Every examples/*.pto parses, verifies and prints to a fixed point; the DESIGN.md sketch is
// always checked, so the test is meaningful with zero example files.
TEST(ParserRoundTrip, ExamplesReachAPrintFixedPoint) {
  std::vector<std::pair<std::string, std::string>> inputs = {
      {"design_sketch",
       "func @tile_add(%a: in tensor<128x128xf32>, %b: in tensor<128x128xf32>,\n"
       "               %c: out tensor<128x128xf32>) {\n"
       "  incore {\n"
       "    %ta = tile.load %a[0, 0] : tile<128x128xf32>\n"
       "    %tb = tile.load %b[0, 0] : tile<128x128xf32>\n"
       "    %tc = tile.add %ta, %tb\n"
       "    tile.store %tc, %c[0, 0]\n"
       "  }\n"
       "}\n"}};
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(PTOX_EXAMPLES_DIR, ec)) {
    if (entry.path().extension() != ".pto") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    inputs.emplace_back(entry.path().string(), ss.str());
  }
  for (const auto& [name, text] : inputs) {
    SCOPED_TRACE(name);
    try {
      Module m = Parse(text, name);
      Verify(m);
      std::string once = Print(m);
      EXPECT_FALSE(once.empty());
      EXPECT_EQ(Print(Parse(once, name)), once);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

}  // namespace
}  // namespace ptox::ir
