// ptox::Tensor helpers.
#include <string>

#include "ptox/tensor.h"

namespace ptox {

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> Tensor::EffectiveStrides() const {
  if (!strides.empty()) return strides;
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = rank() - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

std::pair<const char*, const char*> Tensor::ByteRange() const {
  const char* base = static_cast<const char*>(data);
  if (numel() == 0) return {base, base};
  std::vector<int64_t> st = EffectiveStrides();
  int64_t lo = 0, hi = 0;
  for (int i = 0; i < rank(); ++i) {
    int64_t span = (shape[i] - 1) * st[i];
    (span < 0 ? lo : hi) += span;
  }
  int64_t b = DTypeBytes(dtype);
  return {base + lo * b, base + (hi + 1) * b};
}

std::string Tensor::ShapeString() const {
  std::string s;
  for (int64_t d : shape) s += std::to_string(d) + "x";
  return s + std::string(DTypeName(dtype));
}

}  // namespace ptox
