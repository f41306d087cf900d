// Random, valid, type-correct .pto programs for the differential program fuzzer: tensor-level DAGs
// (generator_tensor.cc) and tile-level loop nests over incore scopes (generator_tile.cc).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "program_model.h"

namespace ptox::fuzz {

// A deterministic random source: program i of a run is generated from seed + i alone.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  int64_t Int(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(engine_);
  }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(engine_) < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Int(0, static_cast<int64_t>(v.size()) - 1))];
  }
  // An index drawn with the given relative weights.
  size_t Weighted(std::initializer_list<int> weights);

 private:
  std::mt19937_64 engine_;
};

enum class Level { kTensor, kTile };

// Program `seed` of `level`. Symbols get run-time sizes in DimVar::size; scalar parameters their
// values in Param::scalar.
Program Generate(Level level, uint64_t seed);

// Shared by both generators.
// A size with the awkward cases weighted in: 0, 1, 2, primes, powers of two and their +-1,
// at most `max`.
int64_t AwkwardSize(Rng& rng, int64_t max, bool allow_zero);
// A symbol name for the n-th symbol of a program: N, M, K, P, Q, ...
std::string SymbolName(int64_t n);
// A float immediate, edge cases included (printed as the parser reads it).
std::string FloatLiteral(Rng& rng);
// The unary ops of ops.def whose names start with `prefix` ("tile." or "tensor."), without it; and
// those of them with a vector form (kernels/cpu/vmath_fns.def), which split a CPU fused loop into
// segments. A new op is generated without a line here.
std::vector<std::string> UnaryOps(const std::string& prefix);
std::vector<std::string> VectorFormUnaryOps(const std::string& prefix);

Program GenerateTensor(Rng& rng);
Program GenerateTile(Rng& rng);

}  // namespace ptox::fuzz
