// One-sided access to windows in the reference interpreter (docs/distributed.md): dist.put and
// dist.get are queued in the environment's epoch and take effect at dist.fence. The fence is
// defined from the one primitive the interpreter's collectives share, every rank's value in rank
// order (Comm::Gather), so simulated ranks and MPI ranks have the same semantics: a barrier, then
//   1. every rank's window as it was before the epoch (gets read these);
//   2. for each target rank t, every rank's puts into t (their values and a mask of the elements
//      they write) and its gets from t (a mask);
//   3. rank t checks that no element is put by two ranks, or put and got, in the epoch, then
//      writes the puts in origin rank order (one rank's in program order);
// for each window parameter in parameter order. The reference is simple, not fast: every rank
// sees every rank's masks.
#include <algorithm>
#include <string>
#include <vector>

#include "interp/comm.h"
#include "interp/eval.h"
#include "interp/eval_tensor.h"
#include "support/error.h"

namespace ptox::interp {
namespace {

std::vector<int64_t> Offsets(const ir::OpStmt& op, const Env& env, size_t first, int rank) {
  std::vector<int64_t> o;
  for (int d = 0; d < rank; ++d) o.push_back(env.GetIndex(op.args()[first + d]));
  return o;
}

// Calls f(window element, box element) for the box of `shape` at `offsets` of a row-major
// window of `window` shape (row-major indices of both).
template <typename F>
void ForBox(const std::vector<int64_t>& window, const std::vector<int64_t>& offsets,
            const std::vector<int64_t>& shape, F&& f) {
  const std::vector<int64_t> ws = RowMajorStrides(window);
  int64_t base = 0;
  for (size_t d = 0; d < window.size(); ++d) base += offsets[d] * ws[d];
  int64_t k = 0;
  Walk<1>(shape, {ws}, {base}, [&](const std::array<int64_t, 1>& w) { f(w[0], k++); });
}

std::string Index(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

void Queue(const ir::OpStmt& op, Env& env) {
  const bool put = op.op() == ir::OpCode::kDistPut;
  const Tensor& win = env.GetTensor(op.args()[put ? 0 : 1]);
  const Tensor& x = env.GetTensor(op.args()[put ? 1 : 0]);
  const int64_t peer = env.GetIndex(op.args()[2]);
  const int world = env.comm().size();
  PTOX_RUNTIME_CHECK(peer >= 0 && peer < world)
      << OpWhere(op) << ": rank " << peer << " is not a rank of a world of " << world;
  const std::vector<int64_t> at = Offsets(op, env, 3, win.rank());
  for (int d = 0; d < win.rank(); ++d)
    PTOX_RUNTIME_CHECK(at[d] >= 0 && at[d] <= win.shape[d] - x.shape[d])
        << OpWhere(op) << ": a box of shape " << ShapeStr(x.shape) << " at offset " << at[d]
        << " in dim " << d << " does not fit the window's shape " << ShapeStr(win.shape);
  Env::Rma r{put, &win, static_cast<int>(peer), at, &x, OpWhere(op)};
  if (put) {  // the values as they are now: x may change before the fence
    const Tensor* copy = OwnedTensor(op, env, x.dtype, x.shape);
    WriteTensor(ReadTensor(op, x), *copy);
    r.values = copy;
  }
  env.epoch.push_back(std::move(r));
}

void Fence(const ir::OpStmt& op, Env& env) {
  Comm& comm = env.comm();
  const int world = comm.size(), me = comm.rank();
  const std::string where = OpWhere(op);
  comm.Gather(MakeDense(op, DType::kF32, {0}), where);  // a barrier, windows or not
  std::vector<std::pair<const Tensor*, Dense>> got;  // gets' destinations and values
  for (const Tensor* win : env.windows) {
    const std::vector<int64_t>& shape = win->shape;
    const std::vector<Dense> before = comm.Gather(ReadTensor(op, *win), where);
    for (const Env::Rma& r : env.epoch) {
      if (r.put || r.window != win) continue;
      Dense v = MakeDense(op, win->dtype, r.values->shape);
      ForBox(shape, r.offsets, r.values->shape,
             [&](int64_t w, int64_t k) { v.f[k] = before[r.peer].f[w]; });
      got.emplace_back(r.values, std::move(v));
    }
    Dense mine = before[me];  // this rank's window after the epoch
    std::vector<int> writer(mine.f.size(), -1);
    for (int t = 0; t < world; ++t) {
      Dense vals = MakeDense(op, win->dtype, shape);
      Dense puts = MakeDense(op, DType::kI64, shape), gets = puts;
      for (const Env::Rma& r : env.epoch) {
        if (r.window != win || r.peer != t) continue;
        if (r.put) {
          const Dense x = ReadTensor(op, *r.values);
          ForBox(shape, r.offsets, r.values->shape, [&](int64_t w, int64_t k) {
            vals.f[w] = x.f[k];
            puts.i[w] = 1;
          });
        } else {
          ForBox(shape, r.offsets, r.values->shape, [&](int64_t w, int64_t) { gets.i[w] = 1; });
        }
      }
      const std::vector<Dense> all_vals = comm.Gather(vals, where);
      const std::vector<Dense> all_puts = comm.Gather(puts, where);
      const std::vector<Dense> all_gets = comm.Gather(gets, where);
      if (t != me) continue;
      for (int o = 0; o < world; ++o) {
        for (size_t e = 0; e < mine.f.size(); ++e) {
          if (!all_puts[o].i[e]) continue;
          PTOX_RUNTIME_CHECK(writer[e] < 0)
              << where << ": ranks " << writer[e] << " and " << o << " put into element "
              << Index(shape, static_cast<int64_t>(e)) << " of rank " << me
              << "'s window in one epoch (which one lands is not defined)";
          for (int g = 0; g < world; ++g)
            PTOX_RUNTIME_CHECK(!all_gets[g].i[e])
                << where << ": rank " << o << " puts into element "
                << Index(shape, static_cast<int64_t>(e)) << " of rank " << me
                << "'s window and rank " << g << " gets it in one epoch";
          writer[e] = o;
          mine.f[e] = all_vals[o].f[e];
        }
      }
    }
    WriteTensor(mine, *win);
  }
  for (const auto& [dst, v] : got) WriteTensor(v, *dst);
  env.epoch.clear();
}

}  // namespace

void EvalRma(const ir::OpStmt& op, Env& env) {
  if (op.op() == ir::OpCode::kDistFence) return Fence(op, env);
  Queue(op, env);
}

void CheckNoPendingRma(const Env& env) {
  PTOX_RUNTIME_CHECK(env.epoch.empty())
      << env.epoch.front().where << " has no dist.fence after it: one-sided ops take effect at "
      << "the next fence, and the run ended first";
}

}  // namespace ptox::interp
