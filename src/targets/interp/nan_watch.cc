// NanWatch: element-wise walks over strided tensors, NaN tests on the raw bits of each float type.
#include "targets/interp/nan_watch.h"

#include <cstdint>
#include <cstring>

#include "support/error.h"

namespace ptox::targets {
namespace {

// Calls fn(index, element pointer) for every element of `t` in row-major order; stops early
// when fn returns false.
template <typename Fn>
void ForEachElement(const Tensor& t, Fn fn) {
  const int rank = t.rank();
  for (int d = 0; d < rank; ++d)
    if (t.shape[d] == 0) return;
  const std::vector<int64_t> strides = t.EffectiveStrides();
  const int64_t bytes = DTypeBytes(t.dtype);
  std::vector<int64_t> idx(rank, 0);
  for (;;) {
    int64_t off = 0;
    for (int d = 0; d < rank; ++d) off += idx[d] * strides[d];
    if (!fn(idx, static_cast<const char*>(t.data) + off * bytes)) return;
    int d = rank - 1;
    while (d >= 0 && ++idx[d] == t.shape[d]) idx[d] = 0, --d;
    if (d < 0) return;
  }
}

bool IsNaN(DType dtype, const char* p) {
  if (dtype == DType::kF32) {
    uint32_t u;
    std::memcpy(&u, p, 4);
    return (u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu) != 0;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (dtype == DType::kBF16) return (h & 0x7F80u) == 0x7F80u && (h & 0x007Fu) != 0;
  return (h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0;  // f16
}

std::string IndexText(const std::vector<int64_t>& idx) {
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

}  // namespace

NanWatch::NanWatch(const ir::Func& func, const std::vector<Arg>& args) {
  for (size_t i = 0; i < func.params.size() && i < args.size(); ++i) {
    const Tensor* t = std::get_if<Tensor>(&args[i]);
    if (t == nullptr || func.params[i].dir == ir::Direction::kIn || !IsFloat(t->dtype)) continue;
    Watched w{t, "%" + func.params[i].value->name + " (argument " + std::to_string(i) + ")", ""};
    const int64_t bytes = DTypeBytes(t->dtype);
    ForEachElement(*t, [&](const std::vector<int64_t>&, const char* p) {
      w.before.append(p, static_cast<size_t>(bytes));
      return true;
    });
    watched_.push_back(std::move(w));
  }
}

void NanWatch::Check() const {
  for (const Watched& w : watched_) {
    const int64_t bytes = DTypeBytes(w.tensor->dtype);
    size_t k = 0;
    std::string at;
    ForEachElement(*w.tensor, [&](const std::vector<int64_t>& idx, const char* p) {
      const bool changed = std::memcmp(p, w.before.data() + k, static_cast<size_t>(bytes)) != 0;
      k += static_cast<size_t>(bytes);
      if (changed && IsNaN(w.tensor->dtype, p)) at = IndexText(idx);
      return at.empty();
    });
    PTOX_RUNTIME_CHECK(at.empty())
        << "NaN written to " << w.label << " at " << at << " (--check-nan)";
  }
}

}  // namespace ptox::targets
