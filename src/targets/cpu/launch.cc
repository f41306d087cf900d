// Launch: packs arguments into the ABI, runs the orchestration with a submit() that turns each
// TaskDesc into a runtime task (copying its packed arguments), then waits for the graph.
#include "targets/cpu/launch.h"

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "kernels/scalar.h"

namespace ptox::targets::cpu {
namespace {

namespace abi = ptox::cpu;

runtime::Executor& ExecutorFor(int threads) {
  if (threads <= 0) return runtime::Executor::Default();
  static std::mutex mu;
  static std::map<int, std::unique_ptr<runtime::Executor>> pool;
  std::lock_guard<std::mutex> lock(mu);
  auto& e = pool[threads];
  if (!e) e = std::make_unique<runtime::Executor>(threads);
  return *e;
}

// The first NaN in a written box of a float tensor, as "%param[i, j]"; empty when none.
std::string FindNaN(const abi::TensorArg& t, DType dtype, const runtime::Box& box) {
  if (!IsFloat(dtype)) return {};
  int64_t idx[abi::kMaxRank];
  int64_t lo[abi::kMaxRank], hi[abi::kMaxRank];
  for (int d = 0; d < t.rank; ++d) {
    lo[d] = std::max<int64_t>(0, box.lo[d]);
    hi[d] = std::min(t.shape[d], box.hi[d]);
    if (hi[d] <= lo[d]) return {};
    idx[d] = lo[d];
  }
  const int bytes = DTypeBytes(dtype);
  for (;;) {
    int64_t off = 0;
    for (int d = 0; d < t.rank; ++d) off += idx[d] * t.strides[d];
    const char* p = static_cast<const char*>(t.data) + off * bytes;
    uint16_t h = 0;
    float f = 0;
    if (bytes == 4) std::memcpy(&f, p, 4);
    else std::memcpy(&h, p, 2), f = dtype == DType::kBF16 ? scalar::Bf16ToF32(h) : scalar::F16ToF32(h);
    if (std::isnan(f)) {
      std::string s = "[";
      for (int d = 0; d < t.rank; ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
      return s + "]";
    }
    int d = static_cast<int>(t.rank) - 1;
    while (d >= 0 && ++idx[d] == hi[d]) idx[d] = lo[d], --d;
    if (d < 0) return {};
  }
}

struct Bridge {
  runtime::Graph* graph;
  const std::vector<abi::Arg>* args;
  const std::vector<Arg>* host_args;
  bool check_nan;
  const std::vector<std::string>* arg_names;
};

// "%name (argument i)", or "argument i" when the name is unknown.
std::string ArgLabel(const Bridge& b, int64_t i) {
  std::string index = "argument " + std::to_string(i);
  if (static_cast<size_t>(i) >= b.arg_names->size() || (*b.arg_names)[i].empty()) return index;
  return "%" + (*b.arg_names)[i] + " (" + index + ")";
}

void Submit(void* ctx, const abi::TaskDesc* desc) {
  Bridge& b = *static_cast<Bridge*>(ctx);
  runtime::Task task;
  task.name = desc->name;
  task.flops = desc->flops;
  for (int64_t i = 0; i < desc->num_accesses; ++i) {
    const abi::AccessDesc& a = desc->accesses[i];
    runtime::Access acc;
    acc.tensor = static_cast<int>(a.tensor);
    acc.write = a.write != 0;
    acc.element_bytes = a.element_bytes;
    acc.box.rank = static_cast<int>(a.rank);
    // Clipped to the tensor: a partial tile touches only what exists (traffic accounting).
    const abi::TensorArg& t = (*b.args)[a.tensor].t;
    for (int d = 0; d < acc.box.rank; ++d)
      acc.box.lo[d] = a.lo[d], acc.box.hi[d] = std::min(a.hi[d], t.shape[d]);
    task.accesses.push_back(acc);
  }
  // One allocation for the packed arguments (operator new: aligned for any scalar field).
  std::vector<char> packed(static_cast<const char*>(desc->args),
                           static_cast<const char*>(desc->args) + desc->args_size);
  abi::KernelFn kernel = desc->kernel;
  std::vector<runtime::Access> writes;  // only what the NaN check scans
  if (b.check_nan)
    for (const runtime::Access& a : task.accesses)
      if (a.write) writes.push_back(a);
  task.run = [kernel, packed = std::move(packed), writes = std::move(writes), b]() -> std::string {
    abi::ErrorBuf err{};
    if (kernel(packed.data(), &err) != 0) {
      err.message[sizeof(err.message) - 1] = '\0';
      return err.message;
    }
    if (!b.check_nan) return {};
    for (const runtime::Access& w : writes) {
      const Tensor& host = std::get<Tensor>((*b.host_args)[w.tensor]);
      std::string at = FindNaN((*b.args)[w.tensor].t, host.dtype, w.box);
      if (!at.empty()) return "NaN written to " + ArgLabel(b, w.tensor) + " at " + at;
    }
    return {};
  };
  b.graph->Submit(std::move(task));
}

}  // namespace

void Launch(abi::EntryFn entry, const std::vector<Arg>& args, const RunContext& ctx) {
  std::vector<abi::Arg> packed(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    abi::Arg& a = packed[i];
    a = {};
    if (const Tensor* t = std::get_if<Tensor>(&args[i])) {
      a.t.data = t->data;
      a.t.rank = t->rank();
      std::vector<int64_t> strides = t->EffectiveStrides();
      for (int d = 0; d < t->rank(); ++d) a.t.shape[d] = t->shape[d], a.t.strides[d] = strides[d];
    } else if (const int64_t* v = std::get_if<int64_t>(&args[i])) {
      a.i = *v;
    } else {
      a.f = std::get<double>(args[i]);
    }
  }
  runtime::Graph graph(ExecutorFor(ctx.threads), ctx.records != nullptr);
  Bridge bridge{&graph, &packed, &args, ctx.check_nan, &ctx.arg_names};
  abi::Runtime rt{&bridge, &Submit};
  abi::ErrorBuf err{};
  int rc = entry(packed.data(), &rt, &err);
  Status tasks = graph.Wait();  // always: tasks may still use the arguments
  if (ctx.records) *ctx.records = graph.records();
  err.message[sizeof(err.message) - 1] = '\0';
  PTOX_RUNTIME_CHECK(rc == 0) << err.message;
  if (!tasks.ok()) throw Error(tasks.code(), tasks.message());
}

}  // namespace ptox::targets::cpu
