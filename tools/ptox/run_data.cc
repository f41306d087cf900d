// Random fill, summaries and comparisons over NpyArray buffers, one switch per dtype.
#include "tools/ptox/run_data.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>


namespace ptox::cli {
namespace {

template <typename T>
T Load(const char* base, int64_t i) {
  T v;
  std::memcpy(&v, base + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

template <typename T>
void Store(char* base, int64_t i, T v) {
  std::memcpy(base + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

float UniformFloat(std::mt19937_64& rng) {
  double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return static_cast<float>(2.0 * u - 1.0);
}

int64_t UniformInt(std::mt19937_64& rng) { return static_cast<int64_t>(rng() % 17) - 8; }

// Shortest text that keeps a summary readable: integers exactly, floats with 7 digits.
std::string Num(double v, bool integral) {
  if (integral && std::isfinite(v)) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{:.7g}", v);
}

}  // namespace

void FillRandom(NpyArray& a, std::mt19937_64& rng) {
  char* p = a.data();
  int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) {
    switch (a.dtype()) {
      case DType::kF32: Store<float>(p, i, UniformFloat(rng)); break;
      case DType::kF16: Store<uint16_t>(p, i, F32ToF16Bits(UniformFloat(rng))); break;
      case DType::kBF16: Store<uint16_t>(p, i, F32ToBf16Bits(UniformFloat(rng))); break;
      case DType::kI8: Store<int8_t>(p, i, static_cast<int8_t>(UniformInt(rng))); break;
      case DType::kI32: Store<int32_t>(p, i, static_cast<int32_t>(UniformInt(rng))); break;
      case DType::kI64:
      case DType::kIndex: Store<int64_t>(p, i, UniformInt(rng)); break;
      case DType::kBool: Store<uint8_t>(p, i, static_cast<uint8_t>(rng() >> 63)); break;
    }
  }
}

double ElementAsDouble(const NpyArray& a, int64_t i) {
  const char* p = a.data();
  switch (a.dtype()) {
    case DType::kF32: return Load<float>(p, i);
    case DType::kF16: return F16BitsToF32(Load<uint16_t>(p, i));
    case DType::kBF16: return Bf16BitsToF32(Load<uint16_t>(p, i));
    case DType::kI8: return Load<int8_t>(p, i);
    case DType::kI32: return Load<int32_t>(p, i);
    case DType::kI64:
    case DType::kIndex: return static_cast<double>(Load<int64_t>(p, i));
    case DType::kBool: return Load<uint8_t>(p, i) != 0 ? 1.0 : 0.0;
  }
  return 0;
}

uint64_t Fnv1a(const char* data, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string SummaryLine(const std::string& name, const NpyArray& a) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  int64_t count = 0, nans = 0;
  for (int64_t i = 0, n = a.numel(); i < n; ++i) {
    double v = ElementAsDouble(a, i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    ++count;
  }
  Tensor shape_only = Tensor::Contiguous(nullptr, a.dtype(), a.shape());
  std::string line = fmt::format("%{}: {}", name, shape_only.ShapeString());
  bool integral = !IsFloat(a.dtype());
  if (count > 0) {
    line += fmt::format(" min={} max={} mean={}", Num(lo, integral), Num(hi, integral),
                        Num(sum / static_cast<double>(count), false));
  } else if (nans == 0) {
    line += " empty";
  }
  if (nans > 0) line += fmt::format(" nan={}", nans);
  return line + fmt::format(" checksum=0x{:016x}", Fnv1a(a.data(), a.nbytes()));
}

DiffStats Compare(const NpyArray& got, const NpyArray& want, double rel_bound) {
  DiffStats d;
  int64_t size = DTypeBytes(got.dtype());
  double max_want = 0;
  for (int64_t i = 0, n = want.numel(); i < n; ++i) {
    double y = ElementAsDouble(want, i);
    if (std::isfinite(y)) max_want = std::max(max_want, std::fabs(y));
  }
  for (int64_t i = 0, n = got.numel(); i < n; ++i) {
    if (std::memcmp(got.data() + i * size, want.data() + i * size, size) == 0) continue;
    ++d.differing_bits;
    double x = ElementAsDouble(got, i), y = ElementAsDouble(want, i);
    if (std::isnan(x) != std::isnan(y)) {
      ++d.nan_mismatch;
    } else if (!std::isnan(x)) {
      double diff = std::fabs(x - y);
      d.max_abs = std::max(d.max_abs, diff);
      if (!(diff <= rel_bound * (std::fabs(y) + max_want))) ++d.out_of_bound;
    }
    // Exact comparison: -0 vs +0 and NaN payloads count too.
    if (rel_bound == 0 && std::isnan(x) == std::isnan(y) && !(std::fabs(x - y) > 0)) ++d.out_of_bound;
  }
  return d;
}

}  // namespace ptox::cli
