// The orchestration ABI between the host runtime and generated code: the entry point a
// generated module exports, the tasks its orchestration submits (kernels, packed arguments, the
// regions they access) and the tensors it asks the host to allocate. Plain structs only: this
// header is compiled both into ptox and into every generated module, possibly by different
// compilers. Any target whose orchestration runs on the host uses it (targets/host/launch.h runs
// it on the task runtime); the CPU targets' kernels also take their tensors as TensorArg.
#pragma once

#include <cstdint>

namespace ptox::abi {

inline constexpr int kMaxRank = 4;
// Bumped whenever the ABI (or the CPU tile library's semantics) change; part of every cache key.
inline constexpr int kAbiVersion = 8;

// Element types, as generated code names them (pc::DT) and as tensor.empty passes them to alloc().
enum class DT : int32_t { kF32, kF16, kBF16, kI8, kI32, kI64, kBool, kIndex };

// A block of a constant tensor as a kernel packs it: where it starts, its element strides and
// extent, and the kernel's packed layout (the host only compares keys).
struct PackKey {
  const void* origin;
  int64_t row_stride, col_stride, rows, cols;
  int64_t format;
};

// Packed copies of blocks of constant tensors (RunOptions::constants), kept by the host across
// runs. get() returns the 64-byte aligned, `bytes`-long copy for `key`, which fill(dst,
// fill_ctx) writes the first time anyone asks for it (concurrent askers wait for that), or
// nullptr when the host cannot keep it (the kernel then packs the block itself).
struct PackCache {
  void* ctx;
  void* (*get)(void* ctx, const PackKey* key, int64_t bytes, void (*fill)(void* dst, void* fill_ctx),
               void* fill_ctx);
};

struct TensorArg {
  void* data;
  int64_t rank;
  int64_t shape[kMaxRank];
  int64_t strides[kMaxRank];  // in elements
  const PackCache* packed;    // non-null for a constant tensor: where its packed blocks live
};

// One per function parameter: `t` for tensors, `i` for integer / bool scalars, `f` for floats.
struct Arg {
  TensorArg t;
  int64_t i;
  double f;
};

// Filled by a kernel that fails (code != 0): a runtime error message naming the op.
struct ErrorBuf {
  int code;
  char message[512];
};

// One region a task reads or writes: the half-open box [lo, hi) of tensor `tensor` — a parameter
// index, or an id returned by Runtime::alloc.
struct AccessDesc {
  int64_t tensor;
  int64_t write;  // 0: read, 1: write
  int64_t rank;
  int64_t lo[kMaxRank];
  int64_t hi[kMaxRank];
  int64_t element_bytes;
};

// A task kernel: one outlined incore scope; `args` points at its packed live-in values.
using KernelFn = int (*)(const void* args, ErrorBuf* err);

struct TaskDesc {
  KernelFn kernel;
  const void* args;  // copied by submit: the caller's buffer may go away
  int64_t args_size;
  const AccessDesc* accesses;
  int64_t num_accesses;
  const char* name;  // "func.incoreN (line:col)"
  int64_t flops;     // estimate, for profiles
};

// What the orchestration asks the host for at a tensor.empty.
struct AllocDesc {
  int64_t dtype;  // a DT
  int64_t element_bytes;
  int64_t rank;
  int64_t shape[kMaxRank];  // every size >= 0
  const char* label;        // "%tmp (tensor.empty at 3:10)", for the host's messages
};

// What the orchestration asks the host for at a tensor.slice or tensor.reshape read in place:
// the box of `shape` at `offsets` of tensor `tensor` (an id), which the caller has checked lies
// inside it; or, with `reshape`, the same elements of a contiguous tensor as `shape` (offsets
// unused).
struct ViewDesc {
  int64_t tensor;
  int64_t reshape;
  int64_t rank;
  int64_t offsets[kMaxRank];
  int64_t shape[kMaxRank];
};

// What the orchestration asks the host for at a collective on buffers or a one-sided op
// (src/ops/ops.def, docs/ops.md): `tensor` (an id) is the buffer it writes (a put's window, a
// get's destination), `source` the one it reads (allgather's and reduce_scatter's x, a put's x, a
// get's window; else -1), `op` the reduction (0: sum, 1: max), `root` broadcast's root or the
// rank a put or get reaches, `offsets` a put's or get's box in the window. A fence has no
// tensors; kWindow registers parameter `tensor` as a window (first, for every window).
enum class CollectiveKind : int64_t {
  kAllreduce, kAllgather, kReduceScatter, kBroadcast, kPut, kGet, kFence, kWindow
};
struct CollectiveDesc {
  CollectiveKind kind;
  int64_t tensor;
  int64_t source;
  int64_t op;
  int64_t root;
  int64_t offsets[kMaxRank];
  const char* name;  // "dist.allreduce (file:line)", for messages and traces
};

// The host runtime as seen by generated orchestration code: submit() queues a task whose
// dependencies the runtime infers from its accesses. alloc() makes a new zero-filled, 64-byte
// aligned, contiguous tensor; *out points at its descriptor (owned by the host). It returns the
// tensor's id for AccessDesc::tensor (the parameters come first, then the tensors alloc() and
// view() made, in order), or -1 when it cannot allocate (the byte size overflows, out of memory).
// view() makes a descriptor of a box of another tensor (same memory and strides), or of a
// contiguous tensor in another shape, with an id of its own: the host maps a task's accesses to a
// view onto the tensor whose memory it is (a reshape's onto all the memory it covers), so
// dependencies follow the memory touched; -1 for an unknown id, a box outside the tensor, or a
// reshape of a tensor that is not contiguous or has another element count. Tensor
// arguments and the tensors made stay valid until the host has waited for every task.
struct Runtime {
  void* ctx;
  void (*submit)(void* ctx, const TaskDesc* task);
  int64_t (*alloc)(void* ctx, const AllocDesc* desc, const TensorArg** out);
  int64_t (*view)(void* ctx, const ViewDesc* desc, const TensorArg** out);
  // collective() queues a collective or one-sided op over the other ranks of a distributed run
  // as a task that writes the whole of `tensor` (a put only reads its window), reads the whole
  // of `source`, and runs after every one queued before it (every rank must reach them in one
  // order); a fence's task writes every window and the epoch's get destinations. rank /
  // world_size say where this process is.
  void (*collective)(void* ctx, const CollectiveDesc* desc);
  int64_t rank;
  int64_t world_size;
};

// The entry point every generated module exports: runs the orchestration (submitting tasks) and
// returns 0, or non-zero with `err` filled when the orchestration itself fails.
using EntryFn = int (*)(const Arg* args, const Runtime* rt, ErrorBuf* err);
inline constexpr const char* kEntrySymbol = "ptox_entry";

}  // namespace ptox::abi
