// The public FunctionBuilder over ir::Builder: converts public operands and keeps the first
// error instead of throwing (no exception crosses the public API).
#include <algorithm>

#include "driver/program_ir.h"
#include "ir/builder.h"
#include "ptox/builder.h"

namespace ptox {

struct FunctionBuilder::Impl {
  explicit Impl(std::string name) : b(std::move(name)) {}
  ir::Builder b;
  std::optional<Status> error;
  ir::FuncRef finished;                // once Finished()
  std::vector<ir::FuncRef> callees;    // the functions this one calls, callees first

  void AddCallee(const ir::FuncRef& f) {
    if (std::find(callees.begin(), callees.end(), f) == callees.end()) callees.push_back(f);
  }
  // The function, finished on first use (a callee, or Build()).
  const ir::FuncRef& Finished() {
    if (!finished) finished = std::make_shared<const ir::Func>(b.Finish());
    return finished;
  }

  // Runs `fn` unless an error is already recorded; records the first error.
  template <typename F>
  auto Guard(F&& fn) -> decltype(fn()) {
    if (!error) {
      try {
        return fn();
      } catch (const Error& e) {
        error = e.ToStatus();
      }
    }
    using R = decltype(fn());
    if constexpr (!std::is_void_v<R>) return R{};
  }
};

namespace {

ir::Operand Convert(const Operand& o) {
  if (auto* v = std::get_if<Val>(&o)) {
    PTOX_CHECK(v->node() != nullptr, Span{}) << "operand is an empty Val (from an earlier error?)";
    return ir::Operand(v->node());
  }
  if (auto* i = std::get_if<int64_t>(&o)) return ir::Operand::Int(*i);
  return ir::Operand::Float(std::get<double>(o));
}

std::vector<ir::Operand> Convert(const std::vector<Operand>& ops) {
  std::vector<ir::Operand> out;
  for (const Operand& o : ops) out.push_back(Convert(o));
  return out;
}

}  // namespace

FunctionBuilder::FunctionBuilder(std::string name) : impl_(std::make_unique<Impl>(std::move(name))) {}
FunctionBuilder::~FunctionBuilder() = default;

Val FunctionBuilder::Param(std::string name, ParamDirection dir, DType dtype,
                           std::vector<DimSpec> dims) {
  return impl_->Guard([&] {
    std::vector<ir::Dim> shape;
    for (const DimSpec& d : dims) {
      if (auto* n = std::get_if<int64_t>(&d)) {
        shape.push_back(ir::Dim::Static(*n));
      } else {
        shape.push_back(ir::Dim::Symbol(std::get<std::string>(d)));
      }
    }
    return Val(impl_->b.Param(std::move(name), static_cast<ir::Direction>(dir),
                              ir::Type::Tensor(std::move(shape), dtype)));
  });
}

Val FunctionBuilder::ScalarParam(std::string name, DType dtype) {
  return impl_->Guard([&] {
    return Val(impl_->b.Param(std::move(name), ir::Direction::kIn, ir::Type::Scalar(dtype)));
  });
}

void FunctionBuilder::IncoreFunction() { impl_->b.SetIncore(); }

Val FunctionBuilder::TileParam(std::string name, TileType type) {
  impl_->b.SetIncore();
  return impl_->Guard([&] {
    return Val(impl_->b.Param(std::move(name), ir::Direction::kIn,
                              ir::Type::Tile(type.rows, type.cols, type.dtype)));
  });
}

Val FunctionBuilder::Op(std::string_view name, std::vector<Operand> args,
                        std::optional<TileType> result) {
  return impl_->Guard([&] {
    std::optional<ir::OpCode> op = ir::LookupOp(name);
    PTOX_CHECK(op.has_value(), Span{}) << "unknown op '" << name << "'";
    std::optional<ir::Type> declared;
    if (result) declared = ir::Type::Tile(result->rows, result->cols, result->dtype);
    return Val(impl_->b.Op(*op, Convert(args), {}, declared));
  });
}

Val FunctionBuilder::Load(Val tensor, std::vector<Operand> offsets, int64_t rows, int64_t cols,
                          std::optional<double> pad) {
  return impl_->Guard([&] {
    PTOX_CHECK(tensor.node() != nullptr, Span{}) << "tile.load of an empty Val";
    ir::Type tile = ir::Type::Tile(rows, cols, tensor.node()->type.dtype());
    return Val(impl_->b.Load(tensor.node(), Convert(offsets), tile, pad));
  });
}

void FunctionBuilder::Store(Val tile, Val tensor, std::vector<Operand> offsets) {
  impl_->Guard([&] {
    std::vector<Operand> args{tile, tensor};
    args.insert(args.end(), offsets.begin(), offsets.end());
    impl_->b.Op(ir::OpCode::kTileStore, Convert(args));
  });
}

Val FunctionBuilder::Full(double value, int64_t rows, int64_t cols, DType dtype) {
  return Op("tile.full", {value}, TileType{rows, cols, dtype});
}

Val FunctionBuilder::Matmul(Val a, Val b, bool transpose_b) {
  return impl_->Guard([&] {
    ir::Attrs attrs;
    if (transpose_b) attrs["transpose_b"] = true;
    return Val(impl_->b.Op(ir::OpCode::kTileMatmul, Convert({a, b}), attrs));
  });
}

Val FunctionBuilder::MatmulAcc(Val acc, Val a, Val b, bool transpose_b) {
  return impl_->Guard([&] {
    ir::Attrs attrs;
    if (transpose_b) attrs["transpose_b"] = true;
    return Val(impl_->b.Op(ir::OpCode::kTileMatmulAcc, Convert({acc, a, b}), attrs));
  });
}

Val FunctionBuilder::Dim(Val tensor, int axis) {
  return Op("tensor.dim", {tensor, int64_t{axis}});
}

void FunctionBuilder::Incore(const std::function<void()>& body) {
  impl_->Guard([&] { impl_->b.Incore(body); });
}

void FunctionBuilder::For(Operand lb, Operand ub, Operand step,
                          const std::function<void(Val iv)>& body, LoopKind kind) {
  impl_->Guard([&] {
    impl_->b.For(Convert(lb), Convert(ub), Convert(step),
                 [&](ir::Value iv) { body(Val(iv)); }, static_cast<ir::LoopKind>(kind));
  });
}

std::vector<Val> FunctionBuilder::For(
    Operand lb, Operand ub, Operand step, std::vector<Operand> inits,
    const std::function<std::vector<Operand>(Val, const std::vector<Val>&)>& body,
    LoopKind kind) {
  return impl_->Guard([&] {
    auto results = impl_->b.For(
        Convert(lb), Convert(ub), Convert(step), Convert(inits),
        [&](ir::Value iv, const std::vector<ir::Value>& iters) {
          std::vector<Val> carried(iters.begin(), iters.end());
          return Convert(body(Val(iv), carried));
        },
        static_cast<ir::LoopKind>(kind));
    return std::vector<Val>(results.begin(), results.end());
  });
}

std::vector<Val> FunctionBuilder::While(
    std::vector<Operand> inits, const std::function<Operand(const std::vector<Val>&)>& cond,
    const std::function<std::vector<Operand>(const std::vector<Val>&)>& body) {
  return impl_->Guard([&] {
    auto results = impl_->b.While(
        Convert(inits),
        [&](const std::vector<ir::Value>& iters) {
          std::vector<Val> carried(iters.begin(), iters.end());
          return Convert(cond(carried));
        },
        [&](const std::vector<ir::Value>& iters) {
          std::vector<Val> carried(iters.begin(), iters.end());
          return Convert(body(carried));
        });
    return std::vector<Val>(results.begin(), results.end());
  });
}

std::vector<Val> FunctionBuilder::Call(FunctionBuilder& callee, std::vector<Operand> args) {
  return impl_->Guard([&] {
    Impl& c = *callee.impl_;
    PTOX_CHECK(&c != impl_.get(), Span{}) << "@" << impl_->b.name() << " calls itself";
    PTOX_CHECK(!c.error, Span{}) << "call of a function that failed to build: "
                                 << c.error->message();
    PTOX_CHECK(!c.finished || c.finished->name != impl_->b.name(), Span{})
        << "@" << impl_->b.name() << " calls a function of the same name";
    const ir::FuncRef& f = c.Finished();
    for (const ir::FuncRef& g : c.callees) impl_->AddCallee(g);
    impl_->AddCallee(f);
    auto results = impl_->b.Call(*f, Convert(args));
    return std::vector<Val>(results.begin(), results.end());
  });
}

void FunctionBuilder::Return(std::vector<Operand> values) {
  impl_->Guard([&] { impl_->b.Return(Convert(values)); });
}

Result<Program> FunctionBuilder::Build() {
  if (impl_->error) return *impl_->error;
  ir::Module m;
  m.funcs = impl_->callees;
  m.funcs.push_back(impl_->Finished());
  return ProgramInternals::FromModule(std::move(m));
}

}  // namespace ptox
