#include "driver/mpi_comm.h"

#include <algorithm>
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
  std::vector<char> all(bytes * world_.size());
  world_.AllGather(sig, where, data, bytes, all.data(), dist::World::DefaultTimeoutMs());
  std::vector<interp::Dense> out(world_.size(), x);
  for (int r = 0; bytes && r < world_.size(); ++r)
    std::memcpy(fl ? static_cast<void*>(out[r].f.data()) : out[r].i.data(), all.data() + r * bytes,
                bytes);
  return out;
}

namespace {

// The f32 folds, built for each x86 vector width (the rest of this library targets the baseline
// ISA): at 1 MB on 2 ranks a fold is a tenth of the collective. By blocks of the result: the
// partial folds of more than two values stay in `acc` (in the L1), and only the last op writes
// `out`, once the block of every value has been read, so `out` may be one of the values.
#if defined(__x86_64__) && defined(__GNUC__)
#define PTOX_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PTOX_VECTOR_CLONES
#endif
template <bool kMax>
PTOX_VECTOR_CLONES void FoldF32(float* out, const void* const* values, int count, int64_t n) {
  constexpr int64_t kBlock = 2048;
  float acc[kBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t m = std::min(kBlock, n - i0);
    const float* a = static_cast<const float*>(values[0]) + i0;
    for (int k = 1; k < count; ++k) {
      const float* b = static_cast<const float*>(values[k]) + i0;
      float* o = k == count - 1 ? out + i0 : acc;
#pragma GCC ivdep
      for (int64_t i = 0; i < m; ++i)
        o[i] = kMax ? scalar::Max(a[i], b[i]) : scalar::Add(a[i], b[i]);
      a = acc;
    }
  }
}

// out = values[0] op values[1] op ... with the interpreter's element functions: f32 through
// kernels/scalar.h's Add / Max (the functions interp::FloatBinary calls), bf16 / f16 widened,
// combined and rounded after each op as interp::Binary does.
dist::World::Fold FoldFor(int op, DType dt) {
  return [op, dt](void* out, const void* const* values, int count, int64_t n) {
    if (dt == DType::kF32)
      return (op == 1 ? FoldF32<true> : FoldF32<false>)(static_cast<float*>(out), values, count, n);
    const int bytes = DTypeBytes(dt);
    const interp::Fn fn = op == 1 ? interp::Fn::kMax : interp::Fn::kAdd;
    for (int64_t i = 0; i < n; ++i) {
      float acc = interp::ReadFloat(dt, static_cast<const char*>(values[0]) + i * bytes);
      for (int k = 1; k < count; ++k)
        acc = interp::RoundTo(
            dt,
            interp::FloatBinary(
                fn, acc, interp::ReadFloat(dt, static_cast<const char*>(values[k]) + i * bytes)));
      interp::WriteFloat(dt, static_cast<char*>(out) + i * bytes, acc);
    }
  };
}

}  // namespace

// The elements move in their own encoding; a strided tensor goes through a contiguous copy.
std::string MpiCollectives::Run(const targets::CollectiveCall& c) {
  using targets::Flat;
  try {
    if (std::string bad = targets::CheckCall(c, size()); !bad.empty()) return bad;
    const int bytes = DTypeBytes(c.dtype);
    const std::string sig = targets::Signature(c);
    const int64_t timeout = dist::World::DefaultTimeoutMs();
    const bool reads_out =
        c.kind == abi::CollectiveKind::kAllreduce || c.kind == abi::CollectiveKind::kBroadcast;
    Flat out(c.out, bytes, reads_out);
    switch (c.kind) {
      case abi::CollectiveKind::kAllreduce:
        world_.AllReduce(sig, c.where, out.data(), targets::Numel(c.out), bytes,
                         FoldFor(c.op, c.dtype), timeout);
        break;
      case abi::CollectiveKind::kBroadcast:
        world_.Broadcast(sig, c.where, out.data(), out.bytes(), c.root, timeout);
        break;
      case abi::CollectiveKind::kAllgather: {
        Flat x(c.source, bytes, true);
        world_.AllGather(sig, c.where, x.data(), x.bytes(), out.data(), timeout);
        break;
      }
      case abi::CollectiveKind::kReduceScatter: {
        Flat x(c.source, bytes, true);
        world_.ReduceScatter(sig, c.where, x.data(), targets::Numel(c.out), bytes, out.data(),
                             FoldFor(c.op, c.dtype), timeout);
        break;
      }
    }
    out.Store();
    return {};
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace ptox::driver
