// Data helpers for `ptox run`: seeded random inputs, per-output summaries (min/max/mean/checksum)
// and comparisons between two runs.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "tools/ptox/npy.h"

namespace ptox::cli {

// Fills `a` from `rng` with a fixed, platform-independent distribution (the generator is
// std::mt19937_64; its raw 64-bit outputs are mapped by hand, not by std:: distributions):
//   floats: u = (r >> 11) * 2^-53 in [0, 1), x = 2u - 1 in [-1, 1), rounded to f32, then to
//           bf16 / f16 with round-to-nearest-even;
//   i8 / i32 / i64 / index: r % 17 - 8, i.e. uniform in [-8, 8];
//   bool: the top bit of r.
// One draw per element, in row-major order.
void FillRandom(NpyArray& a, std::mt19937_64& rng);

// Element i as a double (bf16 / f16 widened exactly; bool as 0 / 1).
double ElementAsDouble(const NpyArray& a, int64_t i);

// 64-bit FNV-1a over `n` bytes.
uint64_t Fnv1a(const char* data, size_t n);

// `%name: 4x128xf32 min=-1 max=1 mean=0.0123 checksum=0x...`, with `nan=K` when K elements are
// NaN (they are left out of min, max and mean).
std::string SummaryLine(const std::string& name, const NpyArray& a);

// How far `got` is from `want` (same dtype and shape).
struct DiffStats {
  double max_abs = 0;          // over elements where neither or both values are NaN
  int64_t out_of_bound = 0;    // elements differing by more than the allowed bound
  int64_t differing_bits = 0;  // elements whose bytes differ
  int64_t nan_mismatch = 0;    // elements NaN in exactly one of the two
};
// Compares element by element. `rel_bound` 0 asks for identical bytes; otherwise an element may
// differ by rel_bound * (|want| + max |want|) (see ptox::ReorderBound).
DiffStats Compare(const NpyArray& got, const NpyArray& want, double rel_bound);

}  // namespace ptox::cli
