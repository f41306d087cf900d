// IR types: scalars, tensors (rank 1..4, static or symbolic dims) and static 2-D tiles.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptox/dtype.h"

namespace ptox::ir {

// A tensor dimension: a static size, or a named symbol bound when the program runs.
struct Dim {
  int64_t size = 0;
  std::string sym;  // non-empty for symbolic dims

  static Dim Static(int64_t n) { return {n, {}}; }
  static Dim Symbol(std::string name) { return {0, std::move(name)}; }
  bool is_static() const { return sym.empty(); }
  bool operator==(const Dim&) const = default;
};

enum class TypeKind : uint8_t { kScalar, kTensor, kTile };

inline constexpr int kMaxTensorRank = 4;
// Tile extents are at most 2^20, so element counts (rows * cols) cannot overflow.
inline constexpr int64_t kMaxTileExtent = int64_t{1} << 20;

class Type {
 public:
  Type() = default;
  static Type Scalar(DType dtype) { return Type(TypeKind::kScalar, dtype, {}); }
  static Type Tensor(std::vector<Dim> shape, DType dtype) {
    return Type(TypeKind::kTensor, dtype, std::move(shape));
  }
  static Type Tile(int64_t rows, int64_t cols, DType dtype) {
    return Type(TypeKind::kTile, dtype, {Dim::Static(rows), Dim::Static(cols)});
  }

  TypeKind kind() const { return kind_; }
  bool is_scalar() const { return kind_ == TypeKind::kScalar; }
  bool is_tensor() const { return kind_ == TypeKind::kTensor; }
  bool is_tile() const { return kind_ == TypeKind::kTile; }
  DType dtype() const { return dtype_; }
  const std::vector<Dim>& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  // Tile extents (tiles are always static 2-D).
  int64_t rows() const { return shape_[0].size; }
  int64_t cols() const { return shape_[1].size; }
  Type WithDType(DType d) const { return Type(kind_, d, shape_); }

  bool operator==(const Type&) const = default;
  // Text form: f32, tensor<{N}x128xf32>, tile<64x64xbf16>.
  std::string ToString() const;

 private:
  Type(TypeKind kind, DType dtype, std::vector<Dim> shape)
      : kind_(kind), dtype_(dtype), shape_(std::move(shape)) {}
  TypeKind kind_ = TypeKind::kScalar;
  DType dtype_ = DType::kF32;
  std::vector<Dim> shape_;
};

}  // namespace ptox::ir
