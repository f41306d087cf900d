// The ptox binary as a user runs it: --version, run (summaries, .npy inputs and
// outputs, symbolic dims, --check, exit codes for bad input; inputs must never be modified) and
// bench (timing lines, --json records, flag errors).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "ptox/ptox.h"
#include "tests/unit/cli/test_util.h"
#include "tools/ptox/npy.h"

namespace ptox::cli {
namespace {

using testing::Lines;
using testing::Ptox;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

constexpr char kTileAdd[] = R"(
func @tile_add(%a: in tensor<128x128xf32>, %b: in tensor<128x128xf32>,
               %c: out tensor<128x128xf32>) {
  incore {
    %ta = tile.load %a[0, 0] : tile<128x128xf32>
    %tb = tile.load %b[0, 0] : tile<128x128xf32>
    %tc = tile.add %ta, %tb
    tile.store %tc, %c[0, 0]
  }
}
)";

// Writes only the top 64 rows of %c: the bottom half keeps the 0xFF (NaN) fill.
constexpr char kHalfStore[] =
    R"(func @half(%a: in tensor<128x128xf32>, %c: out tensor<128x128xf32>) {
  incore {
    %ta = tile.load %a[0, 0] : tile<64x128xf32>
    tile.store %ta, %c[0, 0]
  }
}
)";

constexpr char kScale[] =
    R"(func @scale(%x: in tensor<4x8xf32>, %alpha: in f32, %y: out tensor<4x8xf32>) {
  incore {
    %t = tile.load %x[0, 0] : tile<4x8xf32>
    %u = tile.mul %t, %alpha
    tile.store %u, %y[0, 0]
  }
}
)";

// %y += %x in place.
constexpr char kAccumulate[] = R"(
func @acc(%x: in tensor<4x8xf32>, %y: inout tensor<4x8xf32>) {
  incore {
    %tx = tile.load %x[0, 0] : tile<4x8xf32>
    %ty = tile.load %y[0, 0] : tile<4x8xf32>
    %s = tile.add %tx, %ty
    tile.store %s, %y[0, 0]
  }
}
)";

const std::string kDynExample = std::string(PTOX_EXAMPLES_DIR) + "/hello_dyn.pto";

// A random f32 .npy of `shape`; returns the values.
std::vector<float> WriteRandomF32(const std::string& path, std::vector<int64_t> shape,
                                  unsigned seed) {
  Result<NpyArray> a = NpyArray::Allocate(DType::kF32, shape);
  EXPECT_TRUE(a.ok());
  std::vector<float> v(a->numel());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-100, 100);
  for (float& x : v) x = dist(rng);
  std::memcpy(a->data(), v.data(), a->nbytes());
  EXPECT_TRUE(WriteNpy(path, *a).ok());
  return v;
}

TEST(Cli, Version) {
  ProcessResult r = Ptox({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("ptox ", 0), 0u) << r.out;
}

TEST(RunErrors, MissingFileIsInvalidInput) {
  ProcessResult r = Ptox({"run", "/nonexistent/x.pto"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot open"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(RunErrors, UnknownTargetIsUnsupported) {
  TempDir dir;
  WriteFile(dir / "p.pto", kTileAdd);
  ProcessResult r = Ptox({"run", dir / "p.pto", "--target=quantum"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown target 'quantum'"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(RunErrors, BadInputsCount) {
  TempDir dir;
  WriteFile(dir / "p.pto", kTileAdd);
  WriteRandomF32(dir / "a.npy", {128, 128}, 1);
  ProcessResult r = Ptox({"run", dir / "p.pto", "--inputs", dir / "a.npy"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--inputs: 1 file(s) given, but the function has 2"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(RunErrors, MalformedNpy) {
  TempDir dir;
  WriteFile(dir / "p.pto", kTileAdd);
  WriteRandomF32(dir / "a.npy", {128, 128}, 1);
  std::string good = ReadFile(dir / "a.npy");
  WriteFile(dir / "b.npy", good.substr(0, good.size() - 100));
  ProcessResult r = Ptox({"run", dir / "p.pto", "--inputs", dir / "a.npy," + dir / "b.npy"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("b.npy: expected 65536 bytes of data, found 65436"), std::string::npos)
      << r.err;
}

TEST(RunErrors, ShapeAndDtypeMismatchNameFileAndParam) {
  TempDir dir;
  WriteFile(dir / "p.pto", kTileAdd);
  WriteRandomF32(dir / "a.npy", {128, 128}, 1);
  WriteRandomF32(dir / "small.npy", {128, 64}, 2);
  ProcessResult r = Ptox({"run", dir / "p.pto", "--inputs", dir / "a.npy," + dir / "small.npy"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("small.npy: shape 128x64xf32 does not match %b: tensor<128x128xf32>"),
            std::string::npos)
      << r.err;
  Result<NpyArray> ints = NpyArray::Allocate(DType::kI32, {128, 128});
  ASSERT_TRUE(WriteNpy(dir / "i.npy", *ints).ok());
  r = Ptox({"run", dir / "p.pto", "--inputs", dir / "i.npy," + dir / "a.npy"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("i.npy: dtype i32 ('<i4') does not match %a"), std::string::npos) << r.err;
}

TEST(Run, RandomInputsPrintSummaryAndOk) {
  TempDir dir;
  WriteFile(dir / "p.pto", kTileAdd);
  ProcessResult r = Ptox({"run", dir / "p.pto", "--target=interp"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(r.err, "");  // stdout carries the results; nothing else is said on success
  EXPECT_EQ(lines[0].rfind("%c: 128x128xf32 min=-", 0), 0u) << lines[0];
  EXPECT_EQ(lines[0].find("nan="), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(" checksum=0x"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1], "OK");
  // The same seed gives the same bits; another seed does not.
  EXPECT_EQ(Ptox({"run", dir / "p.pto", "--seed", "0"}).out, r.out);
  ProcessResult other = Ptox({"run", dir / "p.pto", "--seed", "1"});
  EXPECT_EQ(other.exit_code, 0);
  EXPECT_NE(other.out, r.out);
}

TEST(Run, NpyInputsGiveExactSumsAndStayUnmodified) {
  TempDir dir;
  WriteFile(dir / "p.pto", kTileAdd);
  std::vector<float> a = WriteRandomF32(dir / "a.npy", {128, 128}, 1);
  std::vector<float> b = WriteRandomF32(dir / "b.npy", {128, 128}, 2);
  std::string a_bytes = ReadFile(dir / "a.npy"), b_bytes = ReadFile(dir / "b.npy");
  ProcessResult r = Ptox({"run", dir / "p.pto", "--inputs", dir / "a.npy," + dir / "b.npy",
                          "--outputs", dir / "out/nested", "--check"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[1], "%c: max |diff| = 0 vs interp");
  EXPECT_EQ(lines[2], "OK");
  EXPECT_EQ(ReadFile(dir / "a.npy"), a_bytes);
  EXPECT_EQ(ReadFile(dir / "b.npy"), b_bytes);
  Result<NpyArray> c = ReadNpy(dir / "out/nested/c.npy");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->shape(), (std::vector<int64_t>{128, 128}));
  const float* cv = reinterpret_cast<const float*>(c->data());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(cv[i], a[i] + b[i]) << i;
}

TEST(Run, UnwrittenOutputRegionsShowAsNan) {
  TempDir dir;
  WriteFile(dir / "p.pto", kHalfStore);
  ProcessResult r = Ptox({"run", dir / "p.pto"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" nan=8192 "), std::string::npos) << r.out;
}

TEST(Run, OutputsNeverOverwriteInputs) {
  TempDir dir;
  WriteFile(dir / "p.pto", kTileAdd);
  WriteRandomF32(dir / "c.npy", {128, 128}, 1);  // an input that happens to be named c.npy
  WriteRandomF32(dir / "b.npy", {128, 128}, 2);
  std::string before = ReadFile(dir / "c.npy");
  ProcessResult r = Ptox(
      {"run", dir / "p.pto", "--inputs", dir / "c.npy," + dir / "b.npy", "--outputs", dir.path()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("would overwrite input"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(dir / "c.npy"), before);
}

TEST(Run, SymbolicDimsFromFlagOrInputs) {
  TempDir dir;
  ProcessResult r = Ptox({"run", kDynExample});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("symbol N has no size: pass --dims N=<size> or --inputs"), std::string::npos)
      << r.err;
  r = Ptox({"run", kDynExample, "--dims", "N=100"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("%c: 100x128xf32 min=", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find("nan="), std::string::npos) << r.out;  // the partial tail tile is stored
  WriteRandomF32(dir / "a.npy", {70, 128}, 1);
  WriteRandomF32(dir / "b.npy", {70, 128}, 2);
  r = Ptox({"run", kDynExample, "--inputs", dir / "a.npy," + dir / "b.npy", "--check"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("%c: 70x128xf32 min=", 0), 0u) << r.out;
  r = Ptox({"run", kDynExample, "--inputs", dir / "a.npy," + dir / "b.npy", "--dims", "N=100"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("binds symbol N = 70, but --dims N=100 set it to 100"), std::string::npos)
      << r.err;
  r = Ptox({"run", kDynExample, "--dims", "Q=3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no parameter uses symbol Q"), std::string::npos) << r.err;
}

TEST(Run, ScalarParameters) {
  TempDir dir;
  WriteFile(dir / "p.pto", kScale);
  ProcessResult r = Ptox({"run", dir / "p.pto"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("scalar parameter %alpha: f32 has no value: pass --scalars alpha=<value>"),
            std::string::npos)
      << r.err;
  std::vector<float> x = WriteRandomF32(dir / "x.npy", {4, 8}, 3);
  r = Ptox({"run", dir / "p.pto", "--inputs", dir / "x.npy", "--scalars", "alpha=0.5", "--outputs",
            dir.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Result<NpyArray> y = ReadNpy(dir / "y.npy");
  ASSERT_TRUE(y.ok());
  const float* yv = reinterpret_cast<const float*>(y->data());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(yv[i], x[i] * 0.5f) << i;
  r = Ptox({"run", dir / "p.pto", "--scalars", "alpha=abc"});
  EXPECT_EQ(r.exit_code, 1);
  r = Ptox({"run", dir / "p.pto", "--scalars", "alpha=1,beta=2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no scalar parameter %beta"), std::string::npos) << r.err;
}

TEST(Run, Bf16RoundTripsThroughU2Files) {
  TempDir dir;
  const std::string chain = std::string(PTOX_EXAMPLES_DIR) + "/elementwise_chain_dyn.pto";
  ProcessResult r = Ptox({"run", chain, "--dims", "N=4,M=5", "--outputs", dir.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("%y: 4x5xbf16 min=", 0), 0u) << r.out;
  Result<NpyArray> y = ReadNpy(dir / "y.npy");
  ASSERT_FALSE(y.ok());  // '<u2' is bf16 only where a bf16 parameter asks for it
  y = ReadNpy(dir / "y.npy", DType::kBF16);
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(y->shape(), (std::vector<int64_t>{4, 5}));
  std::string in = dir / "y.npy";
  r = Ptox({"run", chain, "--inputs", in + "," + in + "," + in});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("%y: 4x5xbf16 min=", 0), 0u) << r.out;
}

// An inout parameter takes its input from --inputs, is summarized and written like an output,
// and --check re-runs from the value it had before the first run.
TEST(Run, InoutTakesInputAndIsReported) {
  TempDir dir;
  WriteFile(dir / "p.pto", kAccumulate);
  std::vector<float> x = WriteRandomF32(dir / "x.npy", {4, 8}, 5);
  std::vector<float> y = WriteRandomF32(dir / "y_in.npy", {4, 8}, 6);
  std::string y_bytes = ReadFile(dir / "y_in.npy");
  ProcessResult r = Ptox({"run", dir / "p.pto", "--inputs", dir / "x.npy," + dir / "y_in.npy",
                          "--outputs", dir / "out", "--check"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0].rfind("%y: 4x8xf32 min=", 0), 0u) << r.out;
  EXPECT_EQ(lines[1], "%y: max |diff| = 0 vs interp");
  EXPECT_EQ(ReadFile(dir / "y_in.npy"), y_bytes);
  Result<NpyArray> out = ReadNpy(dir / "out/y.npy");
  ASSERT_TRUE(out.ok()) << out.status().message();
  const float* got = reinterpret_cast<const float*>(out->data());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], x[i] + y[i]) << i;
}

TEST(RunErrors, BadFlagValues) {
  TempDir dir;
  WriteFile(dir / "p.pto", kTileAdd);
  for (std::vector<std::string> flags : std::vector<std::vector<std::string>>{
           {"--seed", "-1"}, {"--dims", "N"}, {"--scalars", "=3"}, {"--bogus"}}) {
    std::vector<std::string> args = {"run", dir / "p.pto"};
    args.insert(args.end(), flags.begin(), flags.end());
    ProcessResult r = Ptox(args);
    EXPECT_EQ(r.exit_code, 1) << flags[0] << ": " << r.err;
    EXPECT_EQ(r.out, "") << flags[0];
  }
}

TEST(Run, UnknownFunctionIsInvalid) {
  TempDir dir;
  WriteFile(dir / "p.pto", kTileAdd);
  ProcessResult r = Ptox({"run", dir / "p.pto", "--function", "nope"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no function @nope"), std::string::npos) << r.err;
  r = Ptox({"run", dir / "p.pto", "--function", "@tile_add"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// --check on every target this build has: elementwise results must match the interpreter bit
// for bit.
TEST(Run, CheckEveryTargetAgainstInterp) {
  TempDir dir;
  WriteFile(dir / "p.pto", kTileAdd);
  for (const std::string& target : AvailableTargets()) {
    ProcessResult r = Ptox({"run", dir / "p.pto", "--target", target, "--check"});
    ASSERT_EQ(r.exit_code, 0) << target << ": " << r.err;
    EXPECT_NE(r.out.find("%c: max |diff| = 0 vs interp\nOK\n"), std::string::npos)
        << target << ": " << r.out;
  }
}

// ---- ptox bench: the figures vary run to run, so only the form of the report is asserted. ----

TEST(Bench, MatmulPrintsTimesRatesAndOk) {
  ProcessResult r =
      Ptox({"bench", "--matmul", "64x32x48", "--reps", "2", "--threads", "1", "--target", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[0].rfind("@matmul 64x32x48 f32 on cpu, 1 thread: median ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("; 2 runs) "), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(" GFLOP/s = "), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("% of the f32 FMA peak ("), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(" GB/s moved by tasks"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1], "OK");
}

// The ceiling is the peak of what the target runs: the FMA loop of its ISA (AVX2 for cpu-avx2
// code on an AVX-512 host), and for bf16 matmuls on AVX512_BF16 the dot-product loop.
TEST(Bench, PeakIsThatOfTheTargetsIsa) {
  TempDir dir;
  for (const std::string& target : AvailableTargets()) {
    if (target.rfind("cpu", 0) != 0) continue;
    for (const std::string dtype : {"f32", "bf16"}) {
      ProcessResult r = Ptox({"bench", "--matmul", "32x32x32", "--dtype", dtype, "--reps", "1",
                              "--threads", "1", "--target", target, "--json", dir / "p.json"});
      ASSERT_EQ(r.exit_code, 0) << target << ": " << r.err;
      nlohmann::json j =
          nlohmann::json::parse(ReadFile(dir / "p.json"), nullptr, false)["records"];
      ASSERT_TRUE(j.is_array() && j.size() == 1u) << ReadFile(dir / "p.json");
      const std::string isa = j[0]["fma_isa"], peak = j[0]["peak"], where = target + " " + dtype;
      if (target == "cpu-avx2") {
        EXPECT_EQ(isa, "avx2") << where;
      } else if (target == "cpu-scalar") {
        EXPECT_EQ(isa, "scalar") << where;
      } else if (target == "cpu-avx512") {
        EXPECT_TRUE(isa == "avx512" || (dtype == "bf16" && isa == "avx512bf16")) << where;
      }
      EXPECT_EQ(peak, isa == "avx512bf16" ? "bf16 dot-product" : "f32 FMA") << where;
      if (dtype == "f32") {
        EXPECT_NE(isa, "avx512bf16") << where;
      }
      EXPECT_NE(r.out.find("% of the " + peak + " peak ("), std::string::npos) << r.out;
      EXPECT_NE(r.out.find(" GFLOP/s, " + isa + ")"), std::string::npos) << r.out;
    }
  }
}

TEST(Bench, FileWithDimsAndOneLinePerThreadCount) {
  const std::string matmul = std::string(PTOX_EXAMPLES_DIR) + "/matmul_dyn.pto";
  ProcessResult r = Ptox({"bench", matmul, "--dims", "M=70,K=100,N=90", "--reps", "2", "--threads",
                          "1,2", "--target", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0].rfind("@matmul_dyn M=70,K=100,N=90 on cpu, 1 thread: median ", 0), 0u)
      << lines[0];
  EXPECT_EQ(lines[1].rfind("@matmul_dyn M=70,K=100,N=90 on cpu, 2 threads: median ", 0), 0u)
      << lines[1];
  for (int i = 0; i < 2; ++i) EXPECT_NE(lines[i].find(" GFLOP/s"), std::string::npos) << lines[i];
  EXPECT_EQ(lines[2], "OK");
}

TEST(Bench, JsonHasOneRecordPerShapeAndThreadCount) {
  TempDir dir;
  ProcessResult r = Ptox({"bench", "--matmul", "64x32x48,16x8x4", "--dtype", "bf16", "--reps", "2",
                          "--threads", "1", "--target", "cpu", "--json", dir / "b.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json all = nlohmann::json::parse(ReadFile(dir / "b.json"), nullptr, false);
  ASSERT_FALSE(all.is_discarded()) << ReadFile(dir / "b.json");
  EXPECT_EQ(all["manifest"], nlohmann::json::parse(Ptox({"version", "--json"}).out));
  nlohmann::json j = all["records"];
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u) << j.dump(2);
  for (const char* key :
       {"program", "shape", "dtype", "target", "threads", "reps", "median_ms", "min_ms", "max_ms",
        "flops", "gflops", "bytes", "fma_peak_gflops", "peak_fraction", "constants"})
    for (const nlohmann::json& rec : j) EXPECT_TRUE(rec.contains(key)) << key << ": " << rec;
  const nlohmann::json& rec = j[0];
  EXPECT_EQ(rec["program"], "@matmul");
  EXPECT_EQ(rec["shape"], "64x32x48");
  EXPECT_EQ(j[1]["shape"], "16x8x4");
  EXPECT_EQ(rec["dtype"], "bf16");
  EXPECT_EQ(rec["target"], "cpu");
  EXPECT_EQ(rec["threads"], 1);
  EXPECT_EQ(rec["reps"], 2);
  EXPECT_EQ(rec["flops"].get<double>(), 2.0 * 64 * 32 * 48);  // 2 M N K, not padded tiles
  EXPECT_GT(rec["bytes"].get<int64_t>(), 0);
  double median = rec["median_ms"], lo = rec["min_ms"], hi = rec["max_ms"];
  EXPECT_LE(lo, median);
  EXPECT_LE(median, hi);
  EXPECT_GT(lo, 0);
  double gflops = rec["gflops"], peak = rec["fma_peak_gflops"];
  EXPECT_GT(peak, 0);
  EXPECT_NEAR(gflops, 2.0 * 64 * 32 * 48 / median / 1e6, 1e-9 * gflops);
  EXPECT_NEAR(rec["peak_fraction"].get<double>(), gflops / peak, 1e-12);
  EXPECT_EQ(rec["constants"], nlohmann::json::array());
}

TEST(Bench, ConstWeightsAreRecorded) {
  TempDir dir;
  ProcessResult r = Ptox({"bench", "--matmul", "64x32x48", "--reps", "2", "--threads", "1",
                          "--target", "cpu", "--const", "b", "--json", dir / "b.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j =
      nlohmann::json::parse(ReadFile(dir / "b.json"), nullptr, false)["records"];
  ASSERT_TRUE(j.is_array() && j.size() == 1u) << ReadFile(dir / "b.json");
  EXPECT_EQ(j[0]["constants"], nlohmann::json::array({"b"}));
}

TEST(Bench, InterpReportsTimeOnly) {
  ProcessResult r = Ptox({"bench", "--matmul", "8x8x8", "--reps", "2", "--target", "interp"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[0].rfind("@matmul 8x8x8 f32 on interp, 1 thread: median ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("no GFLOP/s"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[0].find("FMA peak"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1], "OK");
}

TEST(BenchErrors, BadFlagsAreInvalidInputWithAMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::string hello = std::string(PTOX_EXAMPLES_DIR) + "/hello.pto";
  for (const Case& c : std::vector<Case>{
           {{}, "nothing to benchmark: give a .pto FILE or --matmul"},
           {{hello, "--matmul", "4x4x4"}, "give a .pto FILE or --matmul, not both"},
           {{"--matmul", "12x3"}, "--matmul: expected MxKxN with whole sizes >= 0"},
           {{"--matmul", "8x8x8,4x-1x4"}, "got '4x-1x4'"},
           {{"--matmul", "4xax4"}, "got '4xax4'"},
           {{"--matmul", "4x4x4x4"}, "got '4x4x4x4'"},
           {{"--matmul", "4x4x4", "--reps", "0"}, "--reps must be at least 1, got 0"},
           {{"--matmul", "4x4x4", "--dtype", "i32"}, "--dtype: expected f32, bf16 or f16"},
           {{"--matmul", "4x4x4", "--threads", "-1"}, "--threads: a thread count must be >= 0"},
           {{"--matmul", "4x4x4", "--dims", "N=3"}, "no parameter uses symbol N"},
           {{"--matmul", "4x4x4", "--const", "c"}, "constant 'c' must be a tensor input"},
           {{"--matmul", "4x4x4", "--const", "w"}, "constant 'w' is not a parameter of @matmul"},
           {{"/nonexistent/x.pto"}, "cannot open"}}) {
    std::vector<std::string> args = {"bench"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    ProcessResult r = Ptox(args);
    EXPECT_EQ(r.exit_code, 1) << c.message << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << c.message;
  }
}

TEST(BenchErrors, UnknownTargetIsUnsupported) {
  ProcessResult r = Ptox({"bench", "--matmul", "4x4x4", "--target=quantum"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown target 'quantum'"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace ptox::cli
