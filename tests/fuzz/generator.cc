// What both program generators share: weighted choices, awkward sizes, symbol names, float
// immediates; and the entry point that picks one from the level.
#include "generator.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <string_view>

namespace ptox::fuzz {

size_t Rng::Weighted(std::initializer_list<int> weights) {
  const int total = std::accumulate(weights.begin(), weights.end(), 0);
  int64_t x = Int(0, total - 1);
  size_t i = 0;
  for (int w : weights) {
    if (x < w) return i;
    x -= w;
    ++i;
  }
  return weights.size() - 1;
}

int64_t AwkwardSize(Rng& rng, int64_t max, bool allow_zero) {
  static const std::vector<int64_t> kSizes = {1,   2,   3,   5,   7,   8,   13,   16,
                                              17,  31,  32,  33,  37,  63,  64,   65,
                                              127, 128, 129, 255, 257, 511, 1023, 1025};
  if (allow_zero && rng.Chance(0.3)) return 0;
  std::vector<int64_t> fit;
  for (int64_t s : kSizes)
    if (s <= max) fit.push_back(s);
  if (fit.empty()) return std::max<int64_t>(max, 0);
  // Small sizes are likelier: most of the bugs worth finding need only a few elements.
  const size_t n = fit.size();
  const size_t i = static_cast<size_t>(rng.Int(0, static_cast<int64_t>(n) - 1));
  return fit[rng.Chance(0.5) ? i / 2 : i];
}

std::string SymbolName(int64_t n) {
  static const char* kNames[] = {"N", "M", "K", "P", "Q", "R", "S", "T", "U", "V", "W"};
  if (n < 11) return kNames[n];
  return "D" + std::to_string(n);
}

std::string FloatLiteral(Rng& rng) {
  static const std::vector<std::string> kNice = {"0.5", "2.0", "-1.5", "3.0", "0.125", "-0.25"};
  static const std::vector<std::string> kEdge = {"0.0",  "-0.0",       "inf",   "-inf",
                                                 "nan",  "1e-30",      "1e-40", "65504.0",
                                                 "3e38", "1.00390625", "-2",    "7"};
  return rng.Chance(0.7) ? rng.Pick(kNice) : rng.Pick(kEdge);
}

namespace {

std::vector<std::string> Unary(const std::string& prefix, bool vector_form_only) {
  static const std::set<std::string_view> kVectorForms = {
#define PTOX_VMATH_FN(F) #F,
#include "kernels/cpu/vmath_fns.def"
  };
  std::vector<std::string> out;
  auto add = [&](std::string_view name, std::string_view family, std::string_view fn) {
    if (family != "Unary" && family != "TensorUnary") return;
    if (name.substr(0, prefix.size()) != prefix) return;
    if (!vector_form_only || kVectorForms.count(fn)) out.emplace_back(name.substr(prefix.size()));
  };
#define PTOX_OP(e, name, family, fn, ...) add(name, #family, #fn);
#include "ops/ops.def"
#undef PTOX_OP
  return out;
}

}  // namespace

std::vector<std::string> UnaryOps(const std::string& prefix) { return Unary(prefix, false); }
std::vector<std::string> VectorFormUnaryOps(const std::string& prefix) {
  return Unary(prefix, true);
}

Program Generate(Level level, uint64_t seed) {
  Rng rng(seed);
  return level == Level::kTensor ? GenerateTensor(rng) : GenerateTile(rng);
}

}  // namespace ptox::fuzz
