// Building programs in C++ instead of text. A function may call another builder's function
// (Call), which is then part of the program too; calls are inlined when the program is built. Errors are sticky: a bad call records the first
// error (with the op it came from) and returns a placeholder; Build() then returns that error.
//
//   ptox::FunctionBuilder f("tile_add");
//   auto a = f.Param("a", ptox::ParamDirection::kIn, ptox::DType::kF32, {128, 128});
//   auto b = f.Param("b", ptox::ParamDirection::kIn, ptox::DType::kF32, {128, 128});
//   auto c = f.Param("c", ptox::ParamDirection::kOut, ptox::DType::kF32, {128, 128});
//   f.Incore([&] {
//     auto ta = f.Load(a, {0, 0}, 128, 128), tb = f.Load(b, {0, 0}, 128, 128);
//     f.Store(f.Op("tile.add", {ta, tb}), c, {0, 0});
//   });
//   ptox::Result<ptox::Program> prog = f.Build();
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ptox/ptox.h"

namespace ptox {

namespace ir {
struct ValueNode;
}

// An SSA value being built (a parameter, an op result, a loop variable).
class Val {
 public:
  Val() = default;
  explicit Val(std::shared_ptr<const ir::ValueNode> node) : node_(std::move(node)) {}
  const std::shared_ptr<const ir::ValueNode>& node() const { return node_; }

 private:
  std::shared_ptr<const ir::ValueNode> node_;
};

// An op operand: a value, an integer immediate (index) or a float immediate (f32).
using Operand = std::variant<Val, int64_t, double>;
// A tensor dimension in a signature: a static size or a symbol name.
using DimSpec = std::variant<int64_t, std::string>;

enum class LoopKind { kSequential, kParallel, kUnroll };

class FunctionBuilder {
 public:
  explicit FunctionBuilder(std::string name);
  ~FunctionBuilder();
  FunctionBuilder(const FunctionBuilder&) = delete;
  FunctionBuilder& operator=(const FunctionBuilder&) = delete;

  // A tensor parameter (dims: sizes or symbol names).
  Val Param(std::string name, ParamDirection dir, DType dtype, std::vector<DimSpec> dims);
  // A scalar `in` parameter.
  Val ScalarParam(std::string name, DType dtype);
  // A tile parameter: makes the function incore (see IncoreFunction).
  struct TileType {
    int64_t rows, cols;
    DType dtype;
  };
  Val TileParam(std::string name, TileType type);

  // Any op from ops.def by name, e.g. Op("tile.exp", {t}); `result` is the declared result type
  // for ops that need one (tile.full / cast / reshape / slice: tile rows, cols, dtype).
  Val Op(std::string_view name, std::vector<Operand> args, std::optional<TileType> result = {});

  Val Load(Val tensor, std::vector<Operand> offsets, int64_t rows, int64_t cols,
           std::optional<double> pad = {});
  void Store(Val tile, Val tensor, std::vector<Operand> offsets);
  Val Full(double value, int64_t rows, int64_t cols, DType dtype);
  Val Matmul(Val a, Val b, bool transpose_b = false);
  Val MatmulAcc(Val acc, Val a, Val b, bool transpose_b = false);
  Val Dim(Val tensor, int axis);

  void Incore(const std::function<void()>& body);
  void For(Operand lb, Operand ub, Operand step, const std::function<void(Val iv)>& body,
           LoopKind kind = LoopKind::kSequential);
  // A loop with carried values: `body` gets (iv, carried) and returns the next carried values.
  std::vector<Val> For(Operand lb, Operand ub, Operand step, std::vector<Operand> inits,
                       const std::function<std::vector<Operand>(Val, const std::vector<Val>&)>& body,
                       LoopKind kind = LoopKind::kSequential);

  // while iter(carried = inits) { cond(carried) } do { body(carried) }: a sequential loop that
  // runs `body` (returning the next carried values) while `cond` (returning a bool scalar, e.g.
  // Op("arith.lt", {i, n})) holds; returns the carried values the condition failed on.
  std::vector<Val> While(std::vector<Operand> inits,
                         const std::function<Operand(const std::vector<Val>&)>& cond,
                         const std::function<std::vector<Operand>(const std::vector<Val>&)>& body);

  // Makes this an incore function: its body is the inside of its callers' incore scopes (tile
  // ops without an incore scope of their own); it is called only inside incore scopes.
  void IncoreFunction();
  // Calls the function `callee` builds (finished by this call: build it completely first) and
  // returns its results. The callee and the functions it calls become part of this program.
  std::vector<Val> Call(FunctionBuilder& callee, std::vector<Operand> args);
  // Ends the function with `return values` (the function's results, in order).
  void Return(std::vector<Operand> values);

  // Verifies and returns the program (this function and those it calls, inlined), or the first
  // error.
  Result<Program> Build();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ptox
