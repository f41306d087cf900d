// Run-time values of the reference interpreter: scalars, tiles (static storage plus a valid
// region) and the environment that maps SSA values to them.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "ir/ir.h"
#include "ptox/tensor.h"

namespace ptox::interp {

// A scalar: integer dtypes (index, i8, i32, i64, bool) hold `i` (in the type's range, bool 0/1);
// float dtypes hold `f` (for bf16 / f16 a value exactly representable in that type).
struct Scalar {
  DType dtype = DType::kIndex;
  int64_t i = 0;
  float f = 0.0f;

  static Scalar Int(DType d, int64_t v) { return {d, v, 0.0f}; }
  static Scalar Float(DType d, float v) { return {d, 0, v}; }
};

// A tile: rows x cols elements, row-major, of which the top-left valid_rows x valid_cols are
// valid. Float dtypes store `f` (bf16 / f16 values exactly representable in their type); integer
// and bool dtypes store `i`. Every op computes all rows x cols elements, so padding is
// deterministic.
struct Tile {
  int64_t rows = 0, cols = 0;
  DType dtype = DType::kF32;
  int64_t valid_rows = 0, valid_cols = 0;
  std::vector<float> f;
  std::vector<int64_t> i;

  // A zero-filled tile with the full shape valid.
  static Tile Make(int64_t rows, int64_t cols, DType dtype);
  bool is_float() const { return IsFloat(dtype); }
  int64_t size() const { return rows * cols; }
  bool IsValid(int64_t r, int64_t c) const { return r < valid_rows && c < valid_cols; }
  float& F(int64_t r, int64_t c) { return f[r * cols + c]; }
  float F(int64_t r, int64_t c) const { return f[r * cols + c]; }
  int64_t& I(int64_t r, int64_t c) { return i[r * cols + c]; }
  int64_t I(int64_t r, int64_t c) const { return i[r * cols + c]; }
  // Copies element (r, c) of `src` (same dtype) to (dr, dc) of this tile.
  void CopyFrom(const Tile& src, int64_t r, int64_t c, int64_t dr, int64_t dc) {
    if (is_float())
      F(dr, dc) = src.F(r, c);
    else
      I(dr, dc) = src.I(r, c);
  }
};
using TileRef = std::shared_ptr<const Tile>;

using RtValue = std::variant<Scalar, TileRef, const Tensor*>;

// SSA value -> run-time value. Values are unique objects, so one flat map serves every scope;
// loop iterations overwrite their body's values.
class Comm;  // interp/comm.h

class Env {
 public:
  explicit Env(Comm* comm = nullptr) : comm_(comm) {}
  // The ranks of a distributed run (a SoloComm when the run has none).
  Comm& comm() const;

  void Set(const ir::Value& v, RtValue x) { values_[v.get()] = std::move(x); }
  const RtValue& Get(const ir::Value& v) const;

  const Tile& GetTile(const ir::Operand& o) const { return *GetTileRef(o); }
  const TileRef& GetTileRef(const ir::Operand& o) const;
  const Tensor& GetTensor(const ir::Operand& o) const;
  // A scalar operand as `dtype`: SSA scalars of another integer type are range-checked,
  // integer immediates are range-checked (or rounded to nearest for float types), float
  // immediates round to f32 and then to bf16 / f16. `op` names the op in error messages.
  Scalar GetScalar(const ir::Operand& o, DType dtype, std::string_view op) const;
  // An integer operand (offsets, loop bounds) as int64.
  int64_t GetIndex(const ir::Operand& o) const;

  // A zero-filled contiguous tensor of `shape` (8-byte aligned) that lives as long as the
  // environment: the storage of tensor values computed by tensor-level ops and tensor.empty. The
  // pointer stays valid (nothing is freed before the Env, so a loop allocates per iteration).
  // The caller checks that the element count fits (see eval_tensor.cc).
  const Tensor* Own(DType dtype, std::vector<int64_t> shape);

  // Dimension symbols (docs/ir.md): parameters bind theirs on entry; a tensor.empty or a
  // symbolic-axis tensor.concat binds a new one for the rest of its block. BindSymbol checks a
  // bound symbol's size (a runtime error naming `op` otherwise) or binds it; EndScope(mark)
  // drops what was bound since ScopeMark() returned `mark`.
  void BindSymbol(const std::string& sym, int64_t size, std::string_view op);
  size_t ScopeMark() const { return symbols_.size(); }
  void EndScope(size_t mark) { symbols_.resize(mark); }

  // One-sided access (dist.put / dist.get) of the current epoch, applied at the next dist.fence
  // (eval_rma.cc): a put's values (a copy made at the put) or a get's destination.
  struct Rma {
    bool put = false;
    const Tensor* window = nullptr;
    int peer = 0;
    std::vector<int64_t> offsets;
    const Tensor* values = nullptr;  // put: its own copy of x; get: the destination
    std::string where;
  };
  std::vector<Rma> epoch;
  // The function's window parameters (the windows of its puts and gets), in parameter order:
  // every rank's fence goes through the same list.
  std::vector<const Tensor*> windows;

 private:
  struct Owned {
    Tensor view;
    std::vector<uint64_t> words;
  };
  std::unordered_map<const ir::ValueNode*, RtValue> values_;
  std::deque<Owned> owned_;  // a deque: growing it never moves an element
  std::vector<std::pair<std::string, int64_t>> symbols_;  // bindings in scope, oldest first
  Comm* comm_;
};

}  // namespace ptox::interp
