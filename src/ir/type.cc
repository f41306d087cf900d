// Text form of types; the parser reads exactly this syntax back.
#include "ir/type.h"

namespace ptox::ir {

std::string Type::ToString() const {
  std::string dt(DTypeName(dtype_));
  if (kind_ == TypeKind::kScalar) return dt;
  std::string s = kind_ == TypeKind::kTensor ? "tensor<" : "tile<";
  for (const Dim& d : shape_) {
    s += d.is_static() ? std::to_string(d.size) : "{" + d.sym + "}";
    s += "x";
  }
  return s + dt + ">";
}

}  // namespace ptox::ir
