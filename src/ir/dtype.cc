// Names and sizes of element types.
#include "ptox/dtype.h"

namespace ptox {

std::string_view DTypeName(DType t) {
  switch (t) {
#define PTOX_X(e, s, b) \
  case DType::e: return s;
    PTOX_DTYPES(PTOX_X)
#undef PTOX_X
  }
  return "?";
}

std::optional<DType> ParseDType(std::string_view text) {
#define PTOX_X(e, s, b) \
  if (text == s) return DType::e;
  PTOX_DTYPES(PTOX_X)
#undef PTOX_X
  return std::nullopt;
}

int DTypeBytes(DType t) {
  switch (t) {
#define PTOX_X(e, s, b) \
  case DType::e: return b;
    PTOX_DTYPES(PTOX_X)
#undef PTOX_X
  }
  return 0;
}

}  // namespace ptox
