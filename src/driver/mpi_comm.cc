#include "driver/mpi_comm.h"

#include <cstring>

#include "interp/numeric.h"
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

// The elements travel as f32 (bf16 / f16 widen exactly) and fold as interp::Binary does:
// RoundTo(dtype, FloatBinary(fn, acc, x)), rank by rank.
std::string MpiCollectives::AllReduce(int op, DType dt, const abi::TensorArg& t,
                                      const std::string& where) {
  try {
    const int bytes = DTypeBytes(dt);
    std::vector<float> mine;
    ForEachElement(t, bytes, [&](char* p) { mine.push_back(interp::ReadFloat(dt, p)); });
    std::string shape;
    for (int64_t d = 0; d < t.rank; ++d) shape += (d ? "x" : "") + std::to_string(t.shape[d]);
    const std::string sig = std::string(op == 1 ? "allreduce max " : "allreduce sum ") +
                            std::string(DTypeName(dt)) + " " + shape;
    const std::vector<std::vector<char>> all = world_.AllGather(
        sig, where, mine.data(), mine.size() * sizeof(float), dist::World::DefaultTimeoutMs());
    const interp::Fn fn = op == 1 ? interp::Fn::kMax : interp::Fn::kAdd;
    std::vector<float> acc(mine.size());
    std::memcpy(acc.data(), all[0].data(), all[0].size());
    for (size_t r = 1; r < all.size(); ++r) {
      const float* x = reinterpret_cast<const float*>(all[r].data());
      for (size_t i = 0; i < acc.size(); ++i)
        acc[i] = interp::RoundTo(dt, interp::FloatBinary(fn, acc[i], x[i]));
    }
    size_t i = 0;
    ForEachElement(t, bytes, [&](char* p) { interp::WriteFloat(dt, p, acc[i++]); });
    return {};
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace ptox::driver
