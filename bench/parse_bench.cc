// Front-end speed: parse + verify (Program::Parse) and print of a generated 10,000-op module.
// Target (issue: foundation): well under 100 ms for 10,000 ops.
#include <benchmark/benchmark.h>

#include <string>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ptox/ptox.h"

namespace {

// A module of `n` ops: one function with incore scopes of 100 elementwise ops each, every scope
// loading two tiles and storing its last result (so the program is valid and non-trivial).
std::string Generate(int n) {
  std::string s =
      "func @big(%a: in tensor<{N}x64xf32>, %b: in tensor<{N}x64xf32>, %c: out "
      "tensor<{N}x64xf32>) {\n  %n = tensor.dim %a, 0\n";
  const char* ops[] = {"tile.add", "tile.mul", "tile.sub", "tile.max"};
  int emitted = 1;
  for (int scope = 0; emitted < n; ++scope) {
    s += "  for %i" + std::to_string(scope) + " = 0 to %n step 16 {\n    incore {\n";
    std::string iv = "%i" + std::to_string(scope);
    std::string p = "%s" + std::to_string(scope) + "_";
    s += "      " + p + "x = tile.load %a[" + iv + ", 0] : tile<16x64xf32>\n";
    s += "      " + p + "y = tile.load %b[" + iv + ", 0] : tile<16x64xf32>\n";
    std::string last = p + "x";
    for (int k = 0; k < 96 && emitted < n; ++k, ++emitted) {
      std::string v = p + std::to_string(k);
      s += "      " + v + " = " + ops[k % 4] + " " + last + ", " + p + "y\n";
      last = v;
    }
    s += "      tile.store " + last + ", %c[" + iv + ", 0]\n    }\n  }\n";
    emitted += 4;  // load, load, store, for
  }
  return s + "}\n";
}

void BM_ParseVerify10kOps(benchmark::State& state) {
  std::string text = Generate(10000);
  for (auto _ : state) {
    auto prog = ptox::Program::Parse(text, "big.pto");
    if (!prog.ok()) state.SkipWithError(prog.status().message().c_str());
    benchmark::DoNotOptimize(prog);
  }
  state.SetItemsProcessed(state.iterations() * 10000);
  state.counters["bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_ParseVerify10kOps)->Unit(benchmark::kMillisecond)->Repetitions(10)->ReportAggregatesOnly();

void BM_Print10kOps(benchmark::State& state) {
  auto prog = ptox::Program::Parse(Generate(10000), "big.pto");
  if (!prog.ok()) {
    state.SkipWithError(prog.status().message().c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(prog->ToText());
}
BENCHMARK(BM_Print10kOps)->Unit(benchmark::kMillisecond)->Repetitions(10)->ReportAggregatesOnly();

}  // namespace

BENCHMARK_MAIN();
