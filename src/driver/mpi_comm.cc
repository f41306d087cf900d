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
// ISA): at 1 MB on 2 ranks a fold is a tenth of the collective. `out` may be `a` or `b`, element
// for element, so no iteration depends on another.
#if defined(__x86_64__) && defined(__GNUC__)
#define PTOX_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PTOX_VECTOR_CLONES
#endif
PTOX_VECTOR_CLONES void AddF32(float* o, const float* a, const float* b, int64_t n) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) o[i] = scalar::Add(a[i], b[i]);
}
PTOX_VECTOR_CLONES void MaxF32(float* o, const float* a, const float* b, int64_t n) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) o[i] = scalar::Max(a[i], b[i]);
}

// out = a op b elementwise with the interpreter's element functions: f32 through
// kernels/scalar.h's Add / Max (the functions interp::FloatBinary calls), bf16 / f16 widened,
// combined and rounded as interp::Binary does.
dist::World::Fold FoldFor(int op, DType dt) {
  return [op, dt](void* out, const void* x, const void* y, int64_t count) {
    if (dt == DType::kF32) {
      (op == 1 ? MaxF32 : AddF32)(static_cast<float*>(out), static_cast<const float*>(x),
                                  static_cast<const float*>(y), count);
      return;
    }
    const int bytes = DTypeBytes(dt);
    const interp::Fn fn = op == 1 ? interp::Fn::kMax : interp::Fn::kAdd;
    char* o = static_cast<char*>(out);
    const char* a = static_cast<const char*>(x);
    const char* b = static_cast<const char*>(y);
    for (int64_t i = 0; i < count; ++i, o += bytes, a += bytes, b += bytes)
      interp::WriteFloat(dt, o,
                         interp::RoundTo(dt, interp::FloatBinary(fn, interp::ReadFloat(dt, a),
                                                                 interp::ReadFloat(dt, b))));
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
