// Launch: packs arguments into the ABI, runs the orchestration with a submit() that turns each
// TaskDesc into a runtime task (copying its packed arguments), an alloc() that makes the tensors
// of tensor.empty and a view() that describes the views of them and of the arguments (owned here
// until the graph is done), then waits for the graph.
#include "targets/host/launch.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <memory_resource>
#include <mutex>

#include "kernels/scalar.h"

namespace ptox::targets::host {
namespace {

runtime::Executor& ExecutorFor(int threads) {
  if (threads <= 0) return runtime::Executor::Default();
  static std::mutex mu;
  static std::map<int, std::unique_ptr<runtime::Executor>> pool;
  std::lock_guard<std::mutex> lock(mu);
  auto& e = pool[threads];
  if (!e) e = std::make_unique<runtime::Executor>(threads);
  return *e;
}

// The first NaN in a written box of a float tensor, as "[i, j]"; empty when none.
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

// A tensor the orchestration made: a tensor.empty (host-owned, zero-filled) or a view of another
// tensor's memory (a tensor.slice, reshape or size-1 transpose read in place), alive until the
// graph is waited for.
struct MadeTensor {
  std::unique_ptr<void, decltype(&std::free)> data{nullptr, &std::free};  // null for a view
  abi::TensorArg t{};
  DType dtype = DType::kF32;
  // A tensor.empty's label, "%tmp (tensor.empty at 3:10)": a literal of the generated code. A
  // view's is made from the viewed tensor's when a message needs it (Label): a decode step makes
  // hundreds of views, and their labels were allocated and copied for nothing.
  const char* label = "tensor.empty";
  int64_t viewed = -1;  // a view: the id of the tensor it views
  bool reshape = false;
  // A view: the tensor whose memory it is (never itself a view); a box of the view is the box
  // shifted by `offsets` there, or (`covers`: a reshape, or a view of one) always `cover`.
  int64_t root = -1;
  int64_t offsets[abi::kMaxRank] = {};
  bool covers = false;
  runtime::Box cover;
};

struct Bridge {
  runtime::Graph* graph;
  const std::vector<abi::Arg>* args;
  const std::vector<Arg>* host_args;
  bool check_nan;
  const std::vector<std::string>* arg_names;
  std::pmr::deque<MadeTensor>* made;  // id args->size() + k is made[k] (a deque: stable)
  // The tasks' packed arguments and NaN watches, freed after the graph is waited for.
  std::pmr::memory_resource* arena;
  runtime::Task task;  // reused: Graph::Submit copies what it keeps
  Collectives* collectives;      // the ranks (a SoloCollectives when the run is alone)
  bool alone;                    // rank 0 of 1: an allreduce changes nothing
  int64_t order = -1;            // the tensor every collective task writes: they run in order
  std::vector<int64_t> windows;     // registered windows (parameter ids)
  std::vector<int64_t> epoch_gets;  // destinations of the gets since the last fence
  std::vector<abi::AccessDesc> collective_accesses;  // reused: Submit copies what it keeps
};

// The tensor.empty or view with id `id`, or null.
const MadeTensor* Made(const Bridge& b, int64_t id) {
  const int64_t k = id - static_cast<int64_t>(b.args->size());
  return k >= 0 && k < static_cast<int64_t>(b.made->size()) ? &(*b.made)[k] : nullptr;
}

// "%name (argument i)", or "argument i" when the name is unknown.
std::string ArgLabel(const Bridge& b, int64_t i) {
  std::string index = "argument " + std::to_string(i);
  if (static_cast<size_t>(i) >= b.arg_names->size() || (*b.arg_names)[i].empty()) return index;
  return "%" + (*b.arg_names)[i] + " (" + index + ")";
}

// The label of tensor `id` for messages: "%x (argument 2)", "a slice of %tmp (tensor.empty at
// 3:10)", ...
std::string Label(const Bridge& b, int64_t id) {
  const MadeTensor* e = Made(b, id);
  if (e == nullptr) return ArgLabel(b, id);
  if (e->viewed < 0) return e->label;
  return (e->reshape ? "a reshape of " : "a slice of ") + Label(b, e->viewed);
}

// The tensor behind an access's id (a tensor parameter or one the orchestration made) and its
// dtype; false when no tensor has that id.
bool Resolve(const Bridge& b, int64_t id, abi::TensorArg* t, DType* dtype) {
  const int64_t params = static_cast<int64_t>(b.args->size());
  if (id >= 0 && id < params) {
    const Tensor* host = std::get_if<Tensor>(&(*b.host_args)[id]);
    if (host == nullptr) return false;
    *t = (*b.args)[id].t, *dtype = host->dtype;
    return true;
  }
  const MadeTensor* e = Made(b, id);
  if (e == nullptr) return false;
  *t = e->t, *dtype = e->dtype;
  return true;
}

// The dtype of a DT code from generated code; false for an unknown code.
bool DTypeOfCode(int64_t code, DType* out) {
  switch (static_cast<abi::DT>(code)) {
    case abi::DT::kF32: *out = DType::kF32; return true;
    case abi::DT::kF16: *out = DType::kF16; return true;
    case abi::DT::kBF16: *out = DType::kBF16; return true;
    case abi::DT::kI8: *out = DType::kI8; return true;
    case abi::DT::kI32: *out = DType::kI32; return true;
    case abi::DT::kI64: *out = DType::kI64; return true;
    case abi::DT::kBool: *out = DType::kBool; return true;
    case abi::DT::kIndex: *out = DType::kIndex; return true;
  }
  return false;
}

// Runtime::alloc: a zero-filled, 64-byte-aligned contiguous tensor owned by the bridge.
int64_t Alloc(void* ctx, const abi::AllocDesc* desc, const abi::TensorArg** out) {
  Bridge& b = *static_cast<Bridge*>(ctx);
  MadeTensor e;
  if (!DTypeOfCode(desc->dtype, &e.dtype) || desc->element_bytes != DTypeBytes(e.dtype) ||
      desc->rank < 1 || desc->rank > abi::kMaxRank)
    return -1;
  int64_t numel = 1;
  for (int64_t d = 0; d < desc->rank; ++d) {
    if (desc->shape[d] < 0 || __builtin_mul_overflow(numel, desc->shape[d], &numel)) return -1;
  }
  int64_t bytes = 0;
  constexpr int64_t kAlign = 64;
  if (__builtin_mul_overflow(numel, desc->element_bytes, &bytes) ||
      bytes > std::numeric_limits<int64_t>::max() - kAlign)
    return -1;
  const int64_t rounded = std::max(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  e.data.reset(std::aligned_alloc(kAlign, static_cast<size_t>(rounded)));
  if (!e.data) return -1;
  std::memset(e.data.get(), 0, static_cast<size_t>(rounded));
  e.t.data = e.data.get();
  e.t.rank = desc->rank;
  int64_t stride = 1;
  for (int64_t d = desc->rank - 1; d >= 0; --d) {
    e.t.shape[d] = desc->shape[d];
    e.t.strides[d] = stride;
    stride *= desc->shape[d];  // cannot overflow: the product of all sizes fits
  }
  if (desc->label) e.label = desc->label;
  b.made->push_back(std::move(e));
  *out = &b.made->back().t;
  return static_cast<int64_t>(b.args->size() + b.made->size() - 1);
}

// Whether `t` is row-major contiguous (size-1 dims may have any stride).
bool Contiguous(const abi::TensorArg& t) {
  int64_t stride = 1;
  for (int64_t d = t.rank - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != stride) return false;
    stride *= t.shape[d];
  }
  return true;
}

// The strides of `to` (its shape set, the same element count as `from`) reading `from`'s
// elements in row-major order without a copy: row-major ones when `from` is contiguous, else
// `from`'s own when the two shapes differ only in dims of size 1; false otherwise.
bool ReshapeStrides(const abi::TensorArg& from, abi::TensorArg& to) {
  if (Contiguous(from)) {
    int64_t stride = 1;
    for (int64_t d = to.rank - 1; d >= 0; --d) to.strides[d] = stride, stride *= to.shape[d];
    return true;
  }
  int64_t f = 0;
  for (int64_t d = 0; d < to.rank; ++d) {
    if (to.shape[d] == 1) continue;
    while (f < from.rank && from.shape[f] == 1) ++f;
    if (f == from.rank || from.shape[f] != to.shape[d]) return false;
    to.strides[d] = from.strides[f++];
  }
  while (f < from.rank && from.shape[f] == 1) ++f;
  if (f != from.rank) return false;
  // A dim of size 1 is never stepped along: the stride a contiguous layout would give it.
  for (int64_t d = to.rank - 1; d >= 0; --d)
    if (to.shape[d] == 1) to.strides[d] = d + 1 < to.rank ? to.strides[d + 1] * to.shape[d + 1] : 1;
  return true;
}

// Runtime::view: a descriptor of a box of a tensor (same memory, same strides) or of a
// contiguous tensor in another shape, with an id of its own. What it touches is recorded against
// the tensor that owns the memory, so accesses map onto it (Submit).
int64_t View(void* ctx, const abi::ViewDesc* desc, const abi::TensorArg** out) {
  Bridge& b = *static_cast<Bridge*>(ctx);
  MadeTensor v;
  abi::TensorArg src{};
  if (!Resolve(b, desc->tensor, &src, &v.dtype) || desc->rank < 1 ||
      desc->rank > abi::kMaxRank)
    return -1;
  // Where the viewed tensor lies in its root: all of it, or its own box there.
  const MadeTensor* parent = Made(b, desc->tensor);
  const bool nested = parent && parent->root >= 0;
  v.root = nested ? parent->root : desc->tensor;
  runtime::Box whole;  // the viewed tensor's memory, in the root's index space
  if (nested && parent->covers) {
    whole = parent->cover;
  } else {
    whole.rank = static_cast<int>(src.rank);
    for (int d = 0; d < whole.rank; ++d) {
      whole.lo[d] = nested ? parent->offsets[d] : 0;
      whole.hi[d] = whole.lo[d] + src.shape[d];
    }
  }
  v.t = src;
  v.t.rank = desc->rank;
  v.viewed = desc->tensor;
  v.reshape = desc->reshape;
  if (desc->reshape) {
    int64_t n = 1, m = 1;
    for (int64_t d = 0; d < src.rank; ++d) n *= src.shape[d];
    for (int64_t d = 0; d < desc->rank; ++d) {
      if (desc->shape[d] < 0 || __builtin_mul_overflow(m, desc->shape[d], &m)) return -1;
    }
    if (n != m) return -1;
    for (int64_t d = 0; d < desc->rank; ++d) v.t.shape[d] = desc->shape[d];
    if (!ReshapeStrides(src, v.t)) return -1;
    v.covers = true;
    v.cover = whole;
  } else {
    if (desc->rank != src.rank) return -1;
    char* data = static_cast<char*>(src.data);
    for (int64_t d = 0; d < desc->rank; ++d) {
      const int64_t o = desc->offsets[d], n = desc->shape[d];
      if (o < 0 || n < 0 || o > src.shape[d] - n) return -1;
      // An empty box points nowhere new: its offset may be the dim's end.
      if (n > 0) data += o * src.strides[d] * DTypeBytes(v.dtype);
      v.t.shape[d] = n;
    }
    v.t.data = data;
    if (nested && parent->covers) {
      v.covers = true;
      v.cover = whole;
    } else {
      for (int64_t d = 0; d < desc->rank; ++d) v.offsets[d] = whole.lo[d] + desc->offsets[d];
    }
  }
  b.made->push_back(std::move(v));
  *out = &b.made->back().t;
  return static_cast<int64_t>(b.args->size() + b.made->size() - 1);
}

// One written box the NaN check scans after the task ran.
struct NanWatch {
  abi::TensorArg t;
  DType dtype;
  runtime::Box box;
  const char* label;  // in the arena: made at submission (the tensors made later move nothing,
                      // but Label reads the list of them, which only the submitter may touch)
};

// What a task's run needs, in the bridge's arena (trivially destructible): the task's closure
// holds one pointer, which std::function keeps without allocating.
struct TaskRecord {
  abi::KernelFn kernel;
  const void* packed;
  const NanWatch* watches;
  int64_t num_watches;
  bool bad;  // an access to an unknown tensor id, bad_tensor, of rank bad_rank: fails the task
  int64_t bad_tensor, bad_rank;

  std::string Run() const {
    if (bad)
      return "internal error: the task accesses tensor id " + std::to_string(bad_tensor) +
             ", which this run does not have (rank " + std::to_string(bad_rank) + ")";
    abi::ErrorBuf err{};
    if (kernel(packed, &err) != 0) {
      err.message[sizeof(err.message) - 1] = '\0';
      return err.message;
    }
    for (int64_t i = 0; i < num_watches; ++i) {
      const NanWatch& w = watches[i];
      std::string at = FindNaN(w.t, w.dtype, w.box);
      if (!at.empty()) return std::string("NaN written to ") + w.label + " at " + at;
    }
    return {};
  }
};

int RunCollective(const void* packed, abi::ErrorBuf* err);

void Submit(void* ctx, const abi::TaskDesc* desc) {
  Bridge& b = *static_cast<Bridge*>(ctx);
  std::pmr::polymorphic_allocator<> arena(b.arena);
  runtime::Task& task = b.task;
  task.name = desc->name;
  task.waits_outside = desc->kernel == &RunCollective;
  task.flops = desc->flops;
  task.accesses.clear();
  auto* record = arena.new_object<TaskRecord>(
      TaskRecord{desc->kernel, nullptr, nullptr, 0, false, 0, 0});
  // Only what the NaN check scans (at most one per access).
  NanWatch* watches =
      b.check_nan ? arena.allocate_object<NanWatch>(static_cast<size_t>(desc->num_accesses))
                  : nullptr;
  for (int64_t i = 0; i < desc->num_accesses; ++i) {
    const abi::AccessDesc& a = desc->accesses[i];
    abi::TensorArg t;
    DType dtype;
    if (!Resolve(b, a.tensor, &t, &dtype) || a.rank != t.rank) {
      record->bad = true, record->bad_tensor = a.tensor, record->bad_rank = a.rank;
      continue;
    }
    runtime::Access acc;
    acc.tensor = static_cast<int>(a.tensor);
    acc.write = a.write != 0;
    acc.element_bytes = a.element_bytes;
    acc.box.rank = static_cast<int>(a.rank);
    // Clipped to the tensor: a partial tile touches only what exists (traffic accounting).
    for (int d = 0; d < acc.box.rank; ++d)
      acc.box.lo[d] = a.lo[d], acc.box.hi[d] = std::min(a.hi[d], t.shape[d]);
    if (watches && acc.write) {
      const std::string label = Label(b, a.tensor);
      char* copy = arena.allocate_object<char>(label.size() + 1);
      std::memcpy(copy, label.c_str(), label.size() + 1);
      watches[record->num_watches++] = {t, dtype, acc.box, copy};
    }
    // A view's box is a box of the tensor whose memory it is: dependencies follow the memory.
    if (const MadeTensor* v = Made(b, a.tensor); v && v->root >= 0) {
      acc.tensor = static_cast<int>(v->root);
      if (v->covers && !acc.box.Empty()) {
        acc.box = v->cover;
      } else {
        for (int d = 0; d < acc.box.rank; ++d) {
          acc.box.hi[d] = std::max(acc.box.lo[d], acc.box.hi[d]) + v->offsets[d];
          acc.box.lo[d] += v->offsets[d];
        }
      }
    }
    task.accesses.push_back(acc);
  }
  record->watches = watches;
  // The packed arguments, aligned for any scalar field.
  void* packed = b.arena->allocate(static_cast<size_t>(std::max<int64_t>(desc->args_size, 1)),
                                   alignof(std::max_align_t));
  std::memcpy(packed, desc->args, static_cast<size_t>(desc->args_size));
  record->packed = packed;
  task.run = [record] { return record->Run(); };
  b.graph->Submit(task);
}

// A collective task's packed arguments (trivially copyable: Submit copies them as bytes).
struct CollectiveArgs {
  Collectives* collectives;
  CollectiveCall call;
};

int RunCollective(const void* packed, abi::ErrorBuf* err) {
  CollectiveArgs a;
  std::memcpy(&a, packed, sizeof a);
  const std::string e = a.collectives->Run(a.call);
  if (e.empty()) return 0;
  err->code = 1;
  std::snprintf(err->message, sizeof err->message, "%s", e.c_str());
  return 1;
}

// An access to the whole of tensor `id` (an unknown id stays unknown: Submit reports it).
abi::AccessDesc WholeAccess(const Bridge& b, int64_t id, bool write, abi::TensorArg* t,
                            DType* dtype) {
  abi::AccessDesc acc{};
  acc.tensor = id, acc.write = write;
  if (!Resolve(b, id, t, dtype)) return acc;
  acc.rank = t->rank, acc.element_bytes = DTypeBytes(*dtype);
  for (int64_t d = 0; d < t->rank; ++d) acc.hi[d] = t->shape[d];
  return acc;
}

// Runtime::collective: a task that writes the whole of its buffer and reads the whole of its
// source, and a 1-element tensor of its own that every collective writes, so collectives run in
// the order the orchestration queued them on every rank (two independent ones could otherwise
// swap on one rank and pair with the wrong partners). One-sided ops: a put reads its x and the
// window, a get its window and (for order) writes its destination; both take effect at the
// fence, whose task writes every window and the epoch's get destinations.
void Collective(void* ctx, const abi::CollectiveDesc* desc) {
  Bridge& b = *static_cast<Bridge*>(ctx);
  using Kind = abi::CollectiveKind;
  const Kind kind = desc->kind;
  if (b.alone && kind == Kind::kAllreduce) return;  // alone, an allreduce is its operand
  CollectiveArgs args{b.collectives, {}};
  CollectiveCall& call = args.call;
  call.kind = kind, call.op = static_cast<int>(desc->op);
  call.root = static_cast<int>(desc->root), call.where = desc->name;
  std::copy(desc->offsets, desc->offsets + abi::kMaxRank, call.offsets);
  if (b.order < 0) {
    const abi::AllocDesc order{static_cast<int64_t>(abi::DT::kI32), 4, 1, {1}, "collective order"};
    const abi::TensorArg* unused = nullptr;
    b.order = Alloc(ctx, &order, &unused);
  }
  std::vector<abi::AccessDesc>& acc = b.collective_accesses;
  acc.clear();
  acc.reserve(kind == Kind::kFence ? 1 + b.windows.size() + b.epoch_gets.size() : 3);
  acc.emplace_back();
  acc[0].tensor = b.order, acc[0].write = 1, acc[0].rank = 1, acc[0].hi[0] = 1;
  acc[0].element_bytes = 4;
  abi::TensorArg unused_t{};
  DType unused_dt = DType::kF32;
  if (kind == Kind::kFence) {
    for (int64_t id : b.windows) acc.push_back(WholeAccess(b, id, true, &unused_t, &unused_dt));
    for (int64_t id : b.epoch_gets) acc.push_back(WholeAccess(b, id, true, &unused_t, &unused_dt));
    b.epoch_gets.clear();
  } else {
    const bool put = kind == Kind::kPut;
    acc.push_back(WholeAccess(b, desc->tensor, !put, &call.out, &call.dtype));
    if (desc->source >= 0) {
      DType source_dtype = call.dtype;
      acc.push_back(WholeAccess(b, desc->source, false, &call.source, &source_dtype));
    }
    if (kind == Kind::kWindow) call.window = desc->tensor, b.windows.push_back(desc->tensor);
    if (put) call.window = desc->tensor;
    if (kind == Kind::kGet) call.window = desc->source, b.epoch_gets.push_back(desc->tensor);
  }
  const abi::TaskDesc task{&RunCollective, &args, sizeof args, acc.data(),
                           static_cast<int64_t>(acc.size()), desc->name, 0};
  Submit(ctx, &task);
}

// PackCache::get over the program's PackStore.
void* GetPacked(void* ctx, const abi::PackKey* k, int64_t bytes, void (*fill)(void*, void*),
                void* fill_ctx) {
  const runtime::PackStore::Key key{k->origin, k->row_stride, k->col_stride, k->rows, k->cols,
                                    k->format};
  return static_cast<runtime::PackStore*>(ctx)->Get(key, bytes,
                                                    [&](void* dst) { fill(dst, fill_ctx); });
}

}  // namespace

void Launch(abi::EntryFn entry, const std::vector<Arg>& args, const RunContext& ctx) {
  std::vector<abi::Arg> packed(args.size());
  runtime::PackStore* store = ctx.state ? &static_cast<HostState*>(ctx.state)->packs : nullptr;
  const abi::PackCache packs{store, &GetPacked};
  for (size_t i = 0; i < args.size(); ++i) {
    abi::Arg& a = packed[i];
    a = {};
    if (const Tensor* t = std::get_if<Tensor>(&args[i])) {
      a.t.data = t->data;
      a.t.rank = t->rank();
      std::vector<int64_t> strides = t->EffectiveStrides();
      for (int d = 0; d < t->rank(); ++d) a.t.shape[d] = t->shape[d], a.t.strides[d] = strides[d];
      if (store && i < ctx.constant.size() && ctx.constant[i]) a.t.packed = &packs;
    } else if (const int64_t* v = std::get_if<int64_t>(&args[i])) {
      a.i = *v;
    } else {
      a.f = std::get<double>(args[i]);
    }
  }
  // Declared before the graph: they outlive every task.
  std::pmr::monotonic_buffer_resource arena;
  std::pmr::deque<MadeTensor> made(&arena);
  runtime::Graph graph(ExecutorFor(ctx.threads), ctx.records != nullptr);
  SoloCollectives solo;
  Bridge bridge{&graph, &packed, &args, ctx.check_nan, &ctx.arg_names, &made, &arena, {},
                ctx.collectives ? ctx.collectives : &solo, ctx.collectives == nullptr};
  abi::Runtime rt{&bridge, &Submit, &Alloc, &View, &Collective,
                  ctx.collectives ? ctx.collectives->rank() : 0,
                  ctx.collectives ? ctx.collectives->size() : 1};
  abi::ErrorBuf err{};
  int rc = entry(packed.data(), &rt, &err);
  Status tasks = graph.Wait();  // always: tasks may still use the arguments
  if (ctx.records) *ctx.records = graph.records();
  err.message[sizeof(err.message) - 1] = '\0';
  const bool ok = rc == 0 && tasks.ok();
  const std::string end = bridge.windows.empty() ? "" : bridge.collectives->EndRun(ok);
  PTOX_RUNTIME_CHECK(rc == 0) << err.message;
  if (!tasks.ok()) throw Error(tasks.code(), tasks.message());
  PTOX_RUNTIME_CHECK(end.empty()) << end;
}

}  // namespace ptox::targets::host
