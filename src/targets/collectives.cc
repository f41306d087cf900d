#include "targets/collectives.h"

#include <charconv>
#include <cstring>

namespace ptox::targets {
namespace {

const char* KindName(abi::CollectiveKind k) {
  switch (k) {
    case abi::CollectiveKind::kAllreduce: return "allreduce";
    case abi::CollectiveKind::kAllgather: return "allgather";
    case abi::CollectiveKind::kReduceScatter: return "reduce_scatter";
    case abi::CollectiveKind::kBroadcast: return "broadcast";
    case abi::CollectiveKind::kPut: return "put";
    case abi::CollectiveKind::kGet: return "get";
    case abi::CollectiveKind::kFence: return "fence";
    case abi::CollectiveKind::kWindow: return "window";
  }
  return "?";
}

bool HasSource(abi::CollectiveKind k) {
  return k == abi::CollectiveKind::kAllgather || k == abi::CollectiveKind::kReduceScatter;
}

// Appends "8x4" ("scalar" for rank 0) to `s`.
void AppendShape(const abi::TensorArg& t, std::string* s) {
  if (t.rank == 0) s->append("scalar");
  for (int64_t d = 0; d < t.rank; ++d) {
    if (d) s->push_back('x');
    char digits[24];
    s->append(digits, std::to_chars(digits, digits + sizeof digits, t.shape[d]).ptr);
  }
}

std::string ShapeOf(const abi::TensorArg& t) {
  std::string s;
  AppendShape(t, &s);
  return s;
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

bool IsContiguous(const abi::TensorArg& t) {
  for (int64_t d = t.rank - 1, stride = 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != stride) return false;
    stride *= t.shape[d];
  }
  return true;
}

bool ForBoxRows(const abi::TensorArg& window, const abi::TensorArg& box, const int64_t* offsets,
                const std::function<void(int64_t, int64_t, int64_t)>& f) {
  for (int64_t d = 0; d < window.rank; ++d)
    if (offsets[d] < 0 || offsets[d] > window.shape[d] - box.shape[d]) return false;
  const int64_t n = Numel(box);
  if (n == 0) return true;
  const int64_t row = box.shape[box.rank - 1];
  int64_t idx[abi::kMaxRank] = {};
  for (int64_t k = 0; k < n; k += row) {
    int64_t at = 0;  // the row's first element in the (row-major) window
    for (int64_t d = 0, stride = Numel(window); d < window.rank; ++d) {
      stride /= window.shape[d];
      at += (offsets[d] + idx[d]) * stride;
    }
    f(k, at, row);
    for (int64_t d = box.rank - 2; d >= 0 && ++idx[d] == box.shape[d]; --d) idx[d] = 0;
  }
  return true;
}

int64_t Numel(const abi::TensorArg& t) {
  int64_t n = 1;
  for (int64_t d = 0; d < t.rank; ++d) n *= t.shape[d];
  return n;
}

std::string CheckCall(const CollectiveCall& c, int world) {
  const char* const where = c.where;  // a string only in a message: this runs per collective
  switch (c.kind) {
    case abi::CollectiveKind::kAllgather:
      if (c.out.shape[0] != world * c.source.shape[0])
        return std::string(where) + ": out has " + std::to_string(c.out.shape[0]) + " rows, not " +
               std::to_string(world) + " ranks x " + std::to_string(c.source.shape[0]);
      return {};
    case abi::CollectiveKind::kReduceScatter:
      if (c.source.shape[0] != world * c.out.shape[0])
        return std::string(where) + ": x has " + std::to_string(c.source.shape[0]) + " rows, not " +
               std::to_string(world) + " ranks x " + std::to_string(c.out.shape[0]);
      return {};
    case abi::CollectiveKind::kBroadcast:
      if (c.root >= world)
        return std::string(where) + ": root " + std::to_string(c.root) +
               " is not a rank of a world of " + std::to_string(world);
      return {};
    case abi::CollectiveKind::kPut:
    case abi::CollectiveKind::kGet: {
      const abi::TensorArg &win = c.window_tensor(), &box = c.box();
      if (c.root < 0 || c.root >= world)
        return std::string(where) + ": rank " + std::to_string(c.root) +
               " is not a rank of a world of " + std::to_string(world);
      if (!IsContiguous(win))
        return std::string(where) +
               ": a window must be a contiguous tensor (this rank's is strided)";
      if (!ForBoxRows(win, box, c.offsets, [](int64_t, int64_t, int64_t) {}))
        return std::string(where) + ": a box of shape " + ShapeOf(box) + " at offsets " +
               [&] {
                 std::string o;
                 for (int64_t d = 0; d < win.rank; ++d)
                   o += (d ? ", " : "") + std::to_string(c.offsets[d]);
                 return "(" + o + ")";
               }() +
               " does not fit the window's shape " + ShapeOf(win);
      return {};
    }
    case abi::CollectiveKind::kWindow:
      if (!IsContiguous(c.out))
        return std::string(where) +
               ": a window must be a contiguous tensor (this rank's is strided)";
      return {};
    case abi::CollectiveKind::kAllreduce:
    case abi::CollectiveKind::kFence: return {};
  }
  return {};
}

// Into the caller's string, which a caller that runs per collective keeps and reuses.
void Signature(const CollectiveCall& c, std::string* out) {
  std::string& s = *out;
  s.clear();
  s.append(KindName(c.kind));
  if (c.kind == abi::CollectiveKind::kAllreduce || c.kind == abi::CollectiveKind::kReduceScatter)
    s.append(c.op == 1 ? " max" : " sum");
  if (c.kind == abi::CollectiveKind::kBroadcast) s.append(" from ").append(std::to_string(c.root));
  s.append(" ").append(DTypeName(c.dtype)).append(" ");
  AppendShape(c.out, &s);
  if (HasSource(c.kind)) {
    s.append(" <- ");
    AppendShape(c.source, &s);
  }
}

Flat::Flat(const abi::TensorArg& t, int elem_bytes, bool read)
    : t_(t), elem_bytes_(elem_bytes), bytes_(static_cast<size_t>(Numel(t)) * elem_bytes) {
  copy_ = !IsContiguous(t);
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
  const int bytes = DTypeBytes(c.dtype);
  if (c.kind == abi::CollectiveKind::kWindow) return {};
  if (c.kind == abi::CollectiveKind::kPut || c.kind == abi::CollectiveKind::kGet) {
    Pending p{c, {}};
    if (c.kind == abi::CollectiveKind::kPut) {  // x as it is now: it may change before the fence
      Flat x(c.source, bytes, true);
      p.values.assign(x.data(), x.data() + x.bytes());
    }
    epoch_.push_back(std::move(p));
    return {};
  }
  if (c.kind == abi::CollectiveKind::kFence) {  // gets read the windows before the puts land
    for (int pass = 0; pass < 2; ++pass) {
      for (const Pending& p : epoch_) {
        const bool put = p.call.put();
        if (put != (pass == 1)) continue;
        const int bytes = DTypeBytes(p.call.dtype);  // the op's (the fence has no dtype)
        const abi::TensorArg& win = p.call.window_tensor();
        Flat box(p.call.box(), bytes, false);
        char* w = static_cast<char*>(win.data);
        char* b = put ? const_cast<char*>(p.values.data()) : box.data();
        ForBoxRows(win, p.call.box(), p.call.offsets,
                   [&](int64_t at_box, int64_t at_win, int64_t n) {
                     if (put)
                       std::memcpy(w + at_win * bytes, b + at_box * bytes, n * bytes);
                     else
                       std::memcpy(b + at_box * bytes, w + at_win * bytes, n * bytes);
                   });
        if (!put) box.Store();
      }
    }
    epoch_.clear();
    return {};
  }
  if (!HasSource(c.kind)) return {};
  Flat x(c.source, bytes, true);
  Flat out(c.out, bytes, false);
  if (x.bytes()) std::memmove(out.data(), x.data(), x.bytes());  // x may be a view of out
  out.Store();
  return {};
}

}  // namespace ptox::targets

namespace ptox::targets {

std::string SoloCollectives::EndRun(bool ok) {
  if (epoch_.empty() || !ok) return epoch_.clear(), std::string();
  const std::string where = epoch_.front().call.where;
  epoch_.clear();
  return where +
         " has no dist.fence after it: one-sided ops take effect at the next fence, and "
         "the run ended first";
}

}  // namespace ptox::targets
