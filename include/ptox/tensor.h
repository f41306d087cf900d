// ptox::Tensor: a non-owning view of caller memory (pointer, dtype, shape, strides in elements).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "ptox/dtype.h"

namespace ptox {

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  // Strides in elements, one per dim; empty means contiguous row-major. Negative or overlapping
  // strides are rejected for outputs (a write would race with itself).
  std::vector<int64_t> strides;

  static Tensor Contiguous(void* data, DType dtype, std::vector<int64_t> shape) {
    return Tensor{data, dtype, std::move(shape), {}};
  }
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const;
  // Strides with the contiguous default filled in.
  std::vector<int64_t> EffectiveStrides() const;
  // The byte range [lo, hi) the view can touch (lo == hi for an empty view).
  std::pair<const char*, const char*> ByteRange() const;
  std::string ShapeString() const;  // e.g. "4x128xf32"
};

// A run-time argument: a tensor view for tensor parameters, or a scalar for scalar parameters
// (integers for index / i32 / i64 / bool, double for f32).
using Arg = std::variant<Tensor, int64_t, double>;

}  // namespace ptox
