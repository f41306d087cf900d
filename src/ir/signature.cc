// Argument binding: every target checks run-time arguments the same way before touching memory.
#include "ir/signature.h"

#include <cstdint>

namespace ptox::ir {
namespace {

std::string ParamName(const Param& p) { return "%" + p.value->name; }

void CheckTensor(const Param& p, const Tensor& t, SymbolBindings& syms) {
  const Type& type = p.value->type;
  PTOX_CHECK(t.dtype == type.dtype(), Span{})
      << "argument for " << ParamName(p) << " has dtype " << DTypeName(t.dtype) << ", expected "
      << DTypeName(type.dtype());
  PTOX_CHECK(t.rank() == type.rank(), Span{})
      << "argument for " << ParamName(p) << " has rank " << t.rank() << ", expected "
      << type.rank() << " (" << type.ToString() << ")";
  PTOX_CHECK(t.strides.empty() || t.strides.size() == t.shape.size(), Span{})
      << "argument for " << ParamName(p) << " has " << t.strides.size() << " strides for rank "
      << t.rank();
  for (int d = 0; d < t.rank(); ++d) {
    int64_t n = t.shape[d];
    PTOX_CHECK(n >= 0, Span{}) << "argument for " << ParamName(p) << " has negative dim " << d;
    const Dim& dim = type.shape()[d];
    if (dim.is_static()) {
      PTOX_CHECK(n == dim.size, Span{})
          << "argument for " << ParamName(p) << " has shape " << t.ShapeString() << ", expected "
          << type.ToString();
    } else {
      auto [it, fresh] = syms.emplace(dim.sym, n);
      PTOX_CHECK(fresh || it->second == n, Span{})
          << "argument for " << ParamName(p) << " binds symbol " << dim.sym << " = " << n
          << ", but an earlier argument bound it to " << it->second;
    }
  }
  PTOX_CHECK(t.data != nullptr || t.numel() == 0, Span{})
      << "argument for " << ParamName(p) << " has a null data pointer";
  // An empty tensor has no elements to overlap (numpy gives its dims zero strides): nothing to
  // check, and every target runs it as a program over zero elements.
  if (p.dir != Direction::kIn && !t.strides.empty() && t.numel() > 0) {
    // An output whose elements overlap would make stores race; require distinct positive strides.
    for (int64_t s : t.strides) {
      PTOX_CHECK(s > 0, Span{}) << "output " << ParamName(p)
                                << " must have positive strides";
    }
  }
}

bool Overlaps(const Tensor& a, const Tensor& b) {
  // An empty view touches no byte, even when its address lies inside the other's range.
  if (a.numel() == 0 || b.numel() == 0) return false;
  auto [alo, ahi] = a.ByteRange();
  auto [blo, bhi] = b.ByteRange();
  return alo < bhi && blo < ahi;
}

}  // namespace

SymbolBindings BindArgs(const Func& func, const std::vector<Arg>& args) {
  PTOX_CHECK(args.size() == func.params.size(), Span{})
      << "@" << func.name << " takes " << func.params.size() << " arguments, got " << args.size();
  SymbolBindings syms;
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& p = func.params[i];
    const Type& type = p.value->type;
    if (type.is_tensor()) {
      PTOX_CHECK(std::holds_alternative<Tensor>(args[i]), Span{})
          << "argument for " << ParamName(p) << " must be a tensor";
      CheckTensor(p, std::get<Tensor>(args[i]), syms);
    } else if (IsFloat(type.dtype())) {
      PTOX_CHECK(std::holds_alternative<double>(args[i]), Span{})
          << "argument for " << ParamName(p) << " must be a float scalar";
    } else {
      PTOX_CHECK(std::holds_alternative<int64_t>(args[i]), Span{})
          << "argument for " << ParamName(p) << " must be an integer scalar";
    }
  }
  // Outputs may not overlap any other tensor argument: results would depend on the order of
  // stores and loads. (An `inout` parameter reads and writes its own memory, which is fine.)
  for (size_t i = 0; i < args.size(); ++i) {
    if (!func.params[i].value->type.is_tensor() || func.params[i].dir == Direction::kIn) continue;
    const Tensor& out = std::get<Tensor>(args[i]);
    for (size_t j = 0; j < args.size(); ++j) {
      if (j == i || !func.params[j].value->type.is_tensor()) continue;
      PTOX_CHECK(!Overlaps(out, std::get<Tensor>(args[j])), Span{})
          << "output " << ParamName(func.params[i]) << " aliases argument "
          << ParamName(func.params[j]) << "; pass one inout parameter to update in place";
    }
  }
  return syms;
}

}  // namespace ptox::ir
