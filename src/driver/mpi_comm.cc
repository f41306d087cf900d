#include "driver/mpi_comm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "interp/numeric.h"
#include "kernels/scalar.h"
#include "support/error.h"
#include "support/rank_tree.h"
#include "support/vector_clones.h"

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
// ISA): at 1 MB on 2 ranks a fold is a tenth of the collective. By blocks of the result, the
// pairwise tree (support/rank_tree.h) in place: at stride s = 1, 2, 4, ... node i (a multiple of
// 2s) becomes node i op node i + s. The inner nodes stay in `acc` (node i in block i / 2, in the
// L1 for up to 8 ranks), and only the root's op writes `out`, once the block of every value has
// been read, so `out` may be one of the values.
template <bool kMax>
PTOX_VECTOR_CLONES void FoldF32(float* out, const void* const* values, int count, int64_t n) {
  constexpr int64_t kBlock = 2048;
  thread_local std::vector<float> acc;
  acc.resize(static_cast<size_t>(count / 2) * kBlock);
  thread_local std::vector<const float*> node;
  node.resize(count);
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t m = std::min(kBlock, n - i0);
    for (int k = 0; k < count; ++k) node[k] = static_cast<const float*>(values[k]) + i0;
    if (count == 1 && node[0] != out + i0) std::memmove(out + i0, node[0], m * sizeof(float));
    for (int s = 1; s < count; s *= 2)
      for (int k = 0; k + s < count; k += 2 * s) {
        const float *a = node[k], *b = node[k + s];
        float* o = 2 * s >= count ? out + i0 : acc.data() + (k / 2) * kBlock;  // the root: k = 0
#pragma GCC ivdep
        for (int64_t i = 0; i < m; ++i)
          o[i] = kMax ? scalar::Max(a[i], b[i]) : scalar::Add(a[i], b[i]);
        node[k] = o;
      }
  }
}

// out = the pairwise tree (support/rank_tree.h) of values[0..count) with the interpreter's element
// functions: f32 through kernels/scalar.h's Add / Max (the functions interp::FloatBinary calls),
// bf16 / f16 widened, combined and rounded after each op as interp::Binary does.
dist::World::Fold FoldFor(int op, DType dt) {
  return [op, dt](void* out, const void* const* values, int count, int64_t n) {
    if (dt == DType::kF32)
      return (op == 1 ? FoldF32<true> : FoldF32<false>)(static_cast<float*>(out), values, count, n);
    const int bytes = DTypeBytes(dt);
    const interp::Fn fn = op == 1 ? interp::Fn::kMax : interp::Fn::kAdd;
    for (int64_t i = 0; i < n; ++i) {
      const float v = RankTreeFold<float>(
          0, count,
          [&](int k) {
            return interp::ReadFloat(dt, static_cast<const char*>(values[k]) + i * bytes);
          },
          [&](float a, float b) { return interp::RoundTo(dt, interp::FloatBinary(fn, a, b)); });
      interp::WriteFloat(dt, static_cast<char*>(out) + i * bytes, v);
    }
  };
}

}  // namespace

// One-sided ops over MPI-3 RMA (dist::World): a put sends a contiguous copy of x made now, a
// get lands in a contiguous buffer; both complete at the fence, which then copies the gets into
// their destinations. Each row of the box is one MPI_Put / MPI_Get.
std::string MpiCollectives::Rma(const targets::CollectiveCall& c) {
  const int bytes = DTypeBytes(c.dtype);
  const int64_t timeout = dist::World::DefaultTimeoutMs();
  switch (c.kind) {
    case abi::CollectiveKind::kWindow: {
      std::string sig;
      targets::Signature(c, &sig);
      windows_[c.window] = world_.CreateWindow(sig, c.where, c.out.data,
                                               targets::Numel(c.out) * bytes, bytes, timeout);
      return {};
    }
    case abi::CollectiveKind::kPut:
    case abi::CollectiveKind::kGet: {
      const bool put = c.put();
      const abi::TensorArg &win = c.window_tensor(), &box = c.box();
      std::vector<char> copy(static_cast<size_t>(targets::Numel(box)) * bytes);
      if (put && !copy.empty()) {
        targets::Flat x(box, bytes, true);
        std::memcpy(copy.data(), x.data(), copy.size());
      }
      epoch_.push_back({std::move(copy), c});
      char* data = epoch_.back().data.data();
      const int w = windows_.at(c.window);
      targets::ForBoxRows(win, box, c.offsets, [&](int64_t at_box, int64_t at_win, int64_t n) {
        if (put) world_.Put(w, c.root, data + at_box * bytes, n * bytes, at_win, c.where);
        else world_.Get(w, c.root, data + at_box * bytes, n * bytes, at_win, c.where);
      });
      return {};
    }
    case abi::CollectiveKind::kFence: {
      world_.Fence(c.where, timeout);
      for (Transfer& t : epoch_) {
        if (t.call.kind != abi::CollectiveKind::kGet) continue;
        targets::Flat dst(t.call.out, DTypeBytes(t.call.dtype), false);
        std::memcpy(dst.data(), t.data.data(), t.data.size());
        dst.Store();
      }
      epoch_.clear();
      return {};
    }
    default: return c.where + std::string(": not a one-sided op");
  }
}

std::string MpiCollectives::EndRun(bool ok) {
  std::string late;
  if (ok && !epoch_.empty())
    late = std::string(epoch_.front().call.where) +
           " has no dist.fence after it: one-sided ops take effect at the next fence, and the "
           "run ended first";
  if (ok && late.empty()) world_.FreeWindows();  // collective: every rank is here
  windows_.clear();
  epoch_.clear();
  return late;
}

// The elements move in their own encoding; a strided tensor goes through a contiguous copy.
std::string MpiCollectives::Run(const targets::CollectiveCall& c) {
  using targets::Flat;
  try {
    if (std::string bad = targets::CheckCall(c, size()); !bad.empty()) return bad;
    using K = abi::CollectiveKind;
    if (c.kind == K::kWindow || c.kind == K::kPut || c.kind == K::kGet || c.kind == K::kFence)
      return Rma(c);
    const int bytes = DTypeBytes(c.dtype);
    thread_local std::string sig;  // kept: its buffer is reused by the next collective
    targets::Signature(c, &sig);
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
      default: break;
    }
    out.Store();
    return {};
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace ptox::driver
