#include "targets/collectives.h"

#include <cstring>

namespace ptox::targets {
namespace {

const char* KindName(abi::CollectiveKind k) {
  switch (k) {
    case abi::CollectiveKind::kAllreduce: return "allreduce";
    case abi::CollectiveKind::kAllgather: return "allgather";
    case abi::CollectiveKind::kReduceScatter: return "reduce_scatter";
    case abi::CollectiveKind::kBroadcast: return "broadcast";
  }
  return "?";
}

bool HasSource(abi::CollectiveKind k) {
  return k == abi::CollectiveKind::kAllgather || k == abi::CollectiveKind::kReduceScatter;
}

std::string ShapeOf(const abi::TensorArg& t) {
  std::string s;
  for (int64_t d = 0; d < t.rank; ++d) s += (d ? "x" : "") + std::to_string(t.shape[d]);
  return s.empty() ? "scalar" : s;
}

// Calls f(element pointer) for every element of `t` in row-major order.
template <typename F>
void ForEachElement(const abi::TensorArg& t, int bytes, F&& f) {
  const int64_t n = Numel(t);
  int64_t idx[abi::kMaxRank] = {};
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (int64_t d = 0; d < t.rank; ++d) off += idx[d] * t.strides[d];
    f(static_cast<char*>(t.data) + off * bytes);
    for (int64_t d = t.rank - 1; d >= 0 && ++idx[d] == t.shape[d]; --d) idx[d] = 0;
  }
}

}  // namespace

int64_t Numel(const abi::TensorArg& t) {
  int64_t n = 1;
  for (int64_t d = 0; d < t.rank; ++d) n *= t.shape[d];
  return n;
}

std::string CheckCall(const CollectiveCall& c, int world) {
  const std::string where = c.where;
  switch (c.kind) {
    case abi::CollectiveKind::kAllgather:
      if (c.out.shape[0] != world * c.source.shape[0])
        return where + ": out has " + std::to_string(c.out.shape[0]) + " rows, not " +
               std::to_string(world) + " ranks x " + std::to_string(c.source.shape[0]);
      return {};
    case abi::CollectiveKind::kReduceScatter:
      if (c.source.shape[0] != world * c.out.shape[0])
        return where + ": x has " + std::to_string(c.source.shape[0]) + " rows, not " +
               std::to_string(world) + " ranks x " + std::to_string(c.out.shape[0]);
      return {};
    case abi::CollectiveKind::kBroadcast:
      if (c.root >= world)
        return where + ": root " + std::to_string(c.root) + " is not a rank of a world of " +
               std::to_string(world);
      return {};
    case abi::CollectiveKind::kAllreduce: return {};
  }
  return {};
}

std::string Signature(const CollectiveCall& c) {
  std::string s = KindName(c.kind);
  if (c.kind == abi::CollectiveKind::kAllreduce || c.kind == abi::CollectiveKind::kReduceScatter)
    s += c.op == 1 ? " max" : " sum";
  if (c.kind == abi::CollectiveKind::kBroadcast) s += " from " + std::to_string(c.root);
  s += " " + std::string(DTypeName(c.dtype)) + " " + ShapeOf(c.out);
  if (HasSource(c.kind)) s += " <- " + ShapeOf(c.source);
  return s;
}

Flat::Flat(const abi::TensorArg& t, int elem_bytes, bool read)
    : t_(t), elem_bytes_(elem_bytes), bytes_(static_cast<size_t>(Numel(t)) * elem_bytes) {
  copy_ = false;
  for (int64_t d = t.rank - 1, stride = 1; d >= 0; --d) {
    copy_ |= t.shape[d] != 1 && t.strides[d] != stride;
    stride *= t.shape[d];
  }
  if (!copy_) return;
  buf_.resize(bytes_);
  char* q = buf_.data();
  if (read)
    ForEachElement(t_, elem_bytes_,
                   [&](char* p) { std::memcpy(q, p, elem_bytes_), q += elem_bytes_; });
}

void Flat::Store() {
  if (!copy_) return;
  const char* q = buf_.data();
  ForEachElement(t_, elem_bytes_,
                 [&](char* p) { std::memcpy(p, q, elem_bytes_), q += elem_bytes_; });
}

std::string SoloCollectives::Run(const CollectiveCall& c) {
  if (std::string bad = CheckCall(c, 1); !bad.empty()) return bad;
  if (!HasSource(c.kind)) return {};
  const int bytes = DTypeBytes(c.dtype);
  Flat x(c.source, bytes, true);
  Flat out(c.out, bytes, false);
  if (x.bytes()) std::memmove(out.data(), x.data(), x.bytes());  // x may be a view of out
  out.Store();
  return {};
}

}  // namespace ptox::targets
