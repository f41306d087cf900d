#include "driver/mpi_comm.h"

#include <cstring>

#include "interp/numeric.h"
#include "kernels/scalar.h"
#include "support/error.h"

namespace ptox::driver {

// Float values travel as their f32 elements, integer ones as int64: the Dense's own storage.
std::vector<interp::Dense> MpiComm::Gather(const interp::Dense& x, const std::string& where) {
  const bool fl = IsFloat(x.dtype);
  const void* data = fl ? static_cast<const void*>(x.f.data()) : x.i.data();
  const size_t bytes = fl ? x.f.size() * sizeof(float) : x.i.size() * sizeof(int64_t);
  const std::string sig = std::string(DTypeName(x.dtype)) + " " + interp::ShapeStr(x.shape);
  std::vector<std::vector<char>> all =
      world_.AllGather(sig, where, data, bytes, dist::World::DefaultTimeoutMs());
  std::vector<interp::Dense> out;
  for (const std::vector<char>& b : all) {
    interp::Dense d;
    d.dtype = x.dtype;
    d.shape = x.shape;
    if (fl) {
      d.f.resize(b.size() / sizeof(float));
      std::memcpy(d.f.data(), b.data(), b.size());
    } else {
      d.i.resize(b.size() / sizeof(int64_t));
      std::memcpy(d.i.data(), b.data(), b.size());
    }
    out.push_back(std::move(d));
  }
  return out;
}

namespace {

// Calls f(element pointer) for every element of `t` in row-major order.
template <typename F>
void ForEachElement(const abi::TensorArg& t, int bytes, F&& f) {
  int64_t n = 1;
  for (int64_t d = 0; d < t.rank; ++d) n *= t.shape[d];
  if (n == 0) return;
  int64_t idx[abi::kMaxRank] = {};
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (int64_t d = 0; d < t.rank; ++d) off += idx[d] * t.strides[d];
    f(static_cast<char*>(t.data) + off * bytes);
    for (int64_t d = t.rank - 1; d >= 0 && ++idx[d] == t.shape[d]; --d) idx[d] = 0;
  }
}

}  // namespace

// World::AllReduce moves the elements in their own encoding and folds each chunk in rank order
// with the interpreter's element functions: f32 through kernels/scalar.h's Add / Max (the
// functions interp::FloatBinary calls), bf16 / f16 widened, combined and rounded as interp::Binary
// does. A strided tensor goes through a contiguous copy.
std::string MpiCollectives::AllReduce(int op, DType dt, const abi::TensorArg& t,
                                      const std::string& where) {
  try {
    const int bytes = DTypeBytes(dt);
    int64_t n = 1;
    bool contiguous = true;
    std::string shape;
    for (int64_t d = t.rank - 1, stride = 1; d >= 0; --d) {
      contiguous &= t.shape[d] == 1 || t.strides[d] == stride;
      stride *= t.shape[d];
    }
    for (int64_t d = 0; d < t.rank; ++d) {
      n *= t.shape[d];
      shape += (d ? "x" : "") + std::to_string(t.shape[d]);
    }
    const std::string sig = std::string(op == 1 ? "allreduce max " : "allreduce sum ") +
                            std::string(DTypeName(dt)) + " " + shape;
    const interp::Fn fn = op == 1 ? interp::Fn::kMax : interp::Fn::kAdd;
    const dist::World::Fold fold = [&](void* out, const void* x, const void* y, int64_t count) {
      if (dt == DType::kF32) {
        float* o = static_cast<float*>(out);
        const float* a = static_cast<const float*>(x);
        const float* b = static_cast<const float*>(y);
        if (op == 1) {
          for (int64_t i = 0; i < count; ++i) o[i] = scalar::Max(a[i], b[i]);
        } else {
          for (int64_t i = 0; i < count; ++i) o[i] = scalar::Add(a[i], b[i]);
        }
        return;
      }
      char* o = static_cast<char*>(out);
      const char* a = static_cast<const char*>(x);
      const char* b = static_cast<const char*>(y);
      for (int64_t i = 0; i < count; ++i, o += bytes, a += bytes, b += bytes)
        interp::WriteFloat(dt, o, interp::RoundTo(dt, interp::FloatBinary(
                                                          fn, interp::ReadFloat(dt, a),
                                                          interp::ReadFloat(dt, b))));
    };
    const int64_t timeout = dist::World::DefaultTimeoutMs();
    if (contiguous) {
      world_.AllReduce(sig, where, t.data, n, bytes, fold, timeout);
      return {};
    }
    std::vector<char> packed(static_cast<size_t>(n) * bytes);
    char* q = packed.data();
    ForEachElement(t, bytes, [&](char* p) { std::memcpy(q, p, bytes), q += bytes; });
    world_.AllReduce(sig, where, packed.data(), n, bytes, fold, timeout);
    q = packed.data();
    ForEachElement(t, bytes, [&](char* p) { std::memcpy(p, q, bytes), q += bytes; });
    return {};
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace ptox::driver
