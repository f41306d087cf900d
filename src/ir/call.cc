// Matching calls to callees (ir/call.h).
#include "ir/call.h"


namespace ptox::ir {
namespace {

std::string DimText(const Dim& d) {
  return d.is_static() ? std::to_string(d.size) : "{" + d.sym + "}";
}

void BindTensor(const Param& p, const Type& arg, size_t index, DimBinding& dims,
                const Span& span) {
  const Type& want = p.value->type;
  PTOX_CHECK(arg.is_tensor() && arg.rank() == want.rank() && arg.dtype() == want.dtype(), span)
      << "argument " << index << " (%" << p.value->name << ") must be a " << want.ToString()
      << ", got " << arg.ToString();
  for (int d = 0; d < want.rank(); ++d) {
    const Dim& w = want.shape()[d];
    const Dim& a = arg.shape()[d];
    if (w.is_static()) {
      PTOX_CHECK(a == w, span) << "argument " << index << " (%" << p.value->name << "): dim " << d
                               << " must be " << w.size << ", got " << DimText(a) << " ("
                               << arg.ToString() << ")";
      continue;
    }
    auto [it, fresh] = dims.emplace(w.sym, a);
    PTOX_CHECK(fresh || it->second == a, span)
        << "argument " << index << " (%" << p.value->name << "): dim " << d << " is {" << w.sym
        << "}, which an earlier argument made " << DimText(it->second) << ", but here it is "
        << DimText(a);
  }
}

}  // namespace

DimBinding BindCall(const Func& callee, const std::vector<Operand>& args, const Span& span) {
  PTOX_CHECK(args.size() == callee.params.size(), span)
      << "@" << callee.name << " takes " << callee.params.size() << " arguments, got "
      << args.size();
  DimBinding dims;
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& p = callee.params[i];
    const Type& arg = args[i].type();
    if (p.value->type.is_tensor()) {
      BindTensor(p, arg, i, dims, span);
      continue;
    }
    PTOX_CHECK(arg == p.value->type, span)
        << "argument " << i << " (%" << p.value->name << ") of @" << callee.name << " must be "
        << (p.value->type.is_tile() ? "a " : "") << p.value->type.ToString() << ", got "
        << (args[i].is_value() ? arg.ToString() : "the immediate " + arg.ToString());
  }
  return dims;
}

Type BindType(const Type& type, const DimBinding& dims, const std::string& callee) {
  if (!type.is_tensor()) return type;
  std::vector<Dim> shape = type.shape();
  for (Dim& d : shape) {
    if (d.is_static()) continue;
    auto it = dims.find(d.sym);
    if (it != dims.end()) {
      d = it->second;
      continue;
    }
    std::string suffix = callee;
    for (char& c : suffix)
      if (c == '.') c = '_';
    d = Dim::Symbol(d.sym + "_" + suffix);
  }
  return Type::Tensor(std::move(shape), type.dtype());
}

std::vector<Type> CallResultTypes(const Func& callee, const std::vector<Operand>& args,
                                  const Span& span) {
  DimBinding dims = BindCall(callee, args, span);
  std::vector<Type> out;
  for (const Type& t : callee.results) out.push_back(BindType(t, dims, callee.name));
  return out;
}

}  // namespace ptox::ir
