// tile.load / tile.store / tile.full and tile copies: moving tiles between caller tensors (any
// strides, any alignment) and registers-or-stack tiles, with bounds checks and edge tiles; and
// tensor.empty, which asks the host for a new tensor.
#pragma once

#include <algorithm>
#include <initializer_list>

#include "kernels/cpu/core.h"

#if defined(__x86_64__)
#include <immintrin.h>  // RowStream's non-temporal stores
#endif

namespace ptox::cpu {

// The 2-D window of a tensor that a tile at `offs` covers (strides in elements).
struct Window {
  const char* base = nullptr;
  int64_t row_stride = 0, col_stride = 0;
  int64_t rows = 0, cols = 0;  // extent from the offsets to the end of each tiled dim
  int64_t elem_bytes = 0;
};

// Locates the window at `offs`; false when an offset is not in [0, dim) (*bad: its dim).
inline bool FindWindow(const TensorArg& t, std::initializer_list<int64_t> offs, int bytes,
                       Window* w, int64_t* bad = nullptr) {
  const int64_t r = t.rank;
  int64_t elem = 0, d = 0;
  for (int64_t o : offs) {
    if (o < 0 || o >= t.shape[d]) {
      if (bad) *bad = d;
      return false;
    }
    elem += o * t.strides[d];
    ++d;
  }
  const int64_t* o = offs.begin();
  w->base = static_cast<const char*>(t.data) + elem * bytes;
  w->elem_bytes = bytes;
  w->col_stride = t.strides[r - 1];
  w->cols = t.shape[r - 1] - o[r - 1];
  w->row_stride = r >= 2 ? t.strides[r - 2] : 0;
  w->rows = r >= 2 ? t.shape[r - 2] - o[r - 2] : 1;
  return true;
}

// Checks every offset is in [0, dim) and locates the window; false (with an error) otherwise.
inline bool Locate(Ctx& ctx, const TensorArg& t, std::initializer_list<int64_t> offs, int bytes,
                   const char* where, Window* w) {
  int64_t d = 0;
  if (FindWindow(t, offs, bytes, w, &d)) return true;
  ctx.Error("%s: offset %lld in dim %lld is out of bounds for size %lld (each offset must be "
            "in [0, dim))", where, static_cast<long long>(offs.begin()[d]),
            static_cast<long long>(d), static_cast<long long>(t.shape[d]));
  return false;
}

// Asks for columns [c0, c1) of row r of a contiguous window to be brought into the cache. A
// fused loop before a store runs it for the store's rows, so the read of each line the store
// needs first overlaps that loop's arithmetic instead of stalling the store (4096-column softmax
// on one thread: 1.2x), and for the rows the next trip of its loop loads (the same, with cold
// caches: 1.15x). `further` > 0: also row r + further (the trip after next, for small trips)
// into the L2 only. One trip ahead, a row of 16 KiB was still in flight when the next trip read
// it (its row max waited on memory for 30 % of a 4096-column f32 softmax on one thread); two
// ahead into the L1 evicted the rows in use. Cold 4096 x 4096, alternating runs: f32 softmax on
// 1 thread 1.09x, bf16 softmax and layernorm on 1 and 2 threads 1.1x, the others unchanged.
// An asm statement: g++ 12 deletes an inlined loop of __builtin_prefetch.
inline void Prefetch(const Window& w, int64_t r, int64_t c0, int64_t c1, int64_t further = 0) {
  if (r >= w.rows || w.col_stride != 1) return;
  c1 = std::min(c1, w.cols);
  const char* row = w.base + r * w.row_stride * w.elem_bytes;
  const char* far = r + further < w.rows && further > 0
                        ? row + further * w.row_stride * w.elem_bytes
                        : nullptr;
  for (int64_t b = c0 * w.elem_bytes; b < c1 * w.elem_bytes; b += 64) {
#if defined(__x86_64__)
    asm volatile("prefetcht0 %0" : : "m"(row[b]));
    if (far) asm volatile("prefetcht2 %0" : : "m"(far[b]));
#else
    __builtin_prefetch(row + b, 1, 3);
    if (far) __builtin_prefetch(far + b, 0, 1);
#endif
  }
}

#ifndef PTOX_CPU_L3_BYTES  // the last-level cache (set by the CPU target from the host)
#define PTOX_CPU_L3_BYTES (int64_t{32} << 20)
#endif

// The most of an L3 that one program's tensors are assumed to keep. The L3 the host reports is
// shared by every core of the socket, and in a VM with the other tenants' cores: on a 2-core VM
// of a Xeon that reports 480 MiB, a copy of 64 MiB ran at memory speed (12-18 GB/s, against 27
// at 4-32 MiB), and a warm f32 softmax of 4096 columns ran faster streaming at 4096 rows (64 MiB
// a tensor: 4.7-5.4 against 5.4-6.0 ms on 2 threads) and slower at 512-2048 rows (3-15 %).
constexpr int64_t kMaxKeptBytes = int64_t{64} << 20;

// The size from which a tensor's fused stores stream: the L3's, at most kMaxKeptBytes, or
// PTOX_STREAM_BYTES (a positive byte count; tests set 1 to stream every eligible store).
inline int64_t StreamBytes() {
  static const int64_t bytes = [] {
    const char* env = std::getenv("PTOX_STREAM_BYTES");
    char* end = nullptr;
    const long long v = env ? std::strtoll(env, &end, 10) : 0;
    return env && *env && *end == '\0' && v > 0
               ? int64_t{v}
               : std::min<int64_t>(PTOX_CPU_L3_BYTES, kMaxKeptBytes);
  }();
  return bytes;
}

// Whether a fused store to `t` bypasses the caches (RowStream): when the tensor is at least the
// size of the L3, its first lines are evicted before its last are written, so keeping them buys
// nothing, and a plain store reads every line before writing it (write-allocate): a third of a
// one-in, one-out kernel's memory traffic.
inline bool StreamsStores(const TensorArg& t, int64_t elem_bytes) {
#if defined(__x86_64__)
  int64_t bytes = elem_bytes;
  for (int64_t d = 0; d < t.rank; ++d) bytes *= t.shape[d];
  return bytes >= StreamBytes();
#else
  (void)t, (void)elem_bytes;
  return false;
#endif
}

// Writes one contiguous row that a fused loop computes chunk by chunk (each chunk into a buffer):
// the 64-byte lines the row covers whole with non-temporal stores (no line is read first), the
// partial lines at its two ends with plain ones (other tasks may write their other bytes). A line
// that two chunks share waits in line_ for the second chunk, so it streams too: with per-chunk
// plain head and tail stores, a row not aligned to 64 bytes read one line in 16 of its 1 KiB
// chunks from memory first (a 16-byte aligned 4096 x 4096 f32 softmax, cold, 1.2-1.3x slower
// than an aligned one). A fused loop that streams ends with StreamFence.
class RowStream {
 public:
  explicit RowStream(char* row) : next_(row) {}
  // Appends the n bytes at src to the row.
  void Put(const char* src, int64_t n) {
#if defined(__x86_64__)
    if (fill_ > 0) {  // complete the pending line
      const int64_t k = std::min<int64_t>(n, 64 - fill_);
      std::memcpy(line_ + fill_, src, k);
      fill_ += static_cast<int>(k), src += k, n -= k;
      if (fill_ < 64) return;
      Line(next_, line_);
      next_ += 64, fill_ = 0;
    } else if (const int64_t head = -reinterpret_cast<uintptr_t>(next_) & 63; head > 0) {
      // The row's first line, which begins before it: only its own bytes, plainly.
      const int64_t k = std::min(n, head);
      std::memcpy(next_, src, k);
      next_ += k, src += k, n -= k;
    }
    for (; n >= 64; n -= 64, src += 64, next_ += 64) Line(next_, src);
    std::memcpy(line_, src, n);  // the start of a line the next chunk completes
    fill_ = static_cast<int>(n);
#else
    std::memcpy(next_, src, n);
    next_ += n;
#endif
  }
  // Writes the row's last, partial line: only its own bytes, plainly.
  void Finish() {
    std::memcpy(next_, line_, fill_);
    fill_ = 0;
  }

 private:
#if defined(__x86_64__)
  static void Line(char* dst, const char* src) {  // dst: 64-byte aligned
#if defined(__AVX512F__)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), _mm512_loadu_si512(src));
#elif defined(__AVX__)
    for (int k = 0; k < 64; k += 32)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + k),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + k)));
#else
    for (int k = 0; k < 64; k += 16)
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + k),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k)));
#endif
  }
#endif

  char* next_;  // where the row's next byte goes (after the pending line's bytes)
  alignas(64) char line_[64];
  int fill_ = 0;  // bytes of the pending line in line_, which begins at next_
};

// Orders the non-temporal stores before whatever follows (the task's completion, which other
// threads acquire): they are weakly ordered, unlike plain stores.
inline void StreamFence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

// An element of a tensor at any alignment: the caller's tensor may be unaligned for M, and this
// type lets the compiler vectorize the row loops below with unaligned loads / stores.
template <typename M>
using Unaligned __attribute__((aligned(1), may_alias)) = M;

// dst[c] = FromMemory(src[c]) for one contiguous row: a plain copy where memory and storage agree
// (not bool, which loads as 0 / 1), else a widening loop that GCC vectorizes (bf16 / f16).
template <DT D>
inline void LoadRow(Storage<D>* dst, const char* src, int64_t n) {
  using M = Memory<D>;
  if constexpr (std::is_same_v<M, Storage<D>> && D != DT::kBool) {
    std::memcpy(dst, src, n * sizeof(M));
  } else {
    const Unaligned<M>* s = reinterpret_cast<const Unaligned<M>*>(src);
    for (int64_t c = 0; c < n; ++c) dst[c] = FromMemory<D>(s[c]);
  }
}

// One contiguous row back to memory (ToMemory narrows bf16 / f16, rounding to nearest even).
template <DT D>
inline void StoreRow(char* dst, const Storage<D>* src, int64_t n) {
  using M = Memory<D>;
  if constexpr (std::is_same_v<M, Storage<D>>) {
    std::memcpy(dst, src, n * sizeof(M));
  } else {
    Unaligned<M>* d = reinterpret_cast<Unaligned<M>*>(dst);
    for (int64_t c = 0; c < n; ++c) d[c] = ToMemory<D>(src[c]);
  }
}

template <DT D, int R, int C>
void Load(Ctx& ctx, Tile<D, R, C>& out, const TensorArg& t, std::initializer_list<int64_t> offs,
          double pad, const char* where) {
  using M = Memory<D>;
  Window w;
  if (!Locate(ctx, t, offs, sizeof(M), where, &w)) return;
  out.vr = std::min<int64_t>(R, w.rows);
  out.vc = std::min<int64_t>(C, w.cols);
  Storage<D> pad_value{};
  CastValue<DT::kF32, D>(static_cast<float>(pad), &pad_value);
  for (int64_t r = 0; r < R; ++r) {
    Storage<D>* dst = out.v + r * C;
    if (r >= out.vr) {
      std::fill(dst, dst + C, pad_value);
      continue;
    }
    const char* row = w.base + r * w.row_stride * static_cast<int64_t>(sizeof(M));
    if (w.col_stride == 1) {
      LoadRow<D>(dst, row, out.vc);
    } else {
      for (int64_t c = 0; c < out.vc; ++c) {
        M m;
        std::memcpy(&m, row + c * w.col_stride * static_cast<int64_t>(sizeof(M)), sizeof(M));
        dst[c] = FromMemory<D>(m);
      }
    }
    std::fill(dst + out.vc, dst + C, pad_value);
  }
}

template <DT D, int R, int C>
void Store(Ctx& ctx, const Tile<D, R, C>& in, const TensorArg& t,
           std::initializer_list<int64_t> offs, const char* where) {
  using M = Memory<D>;
  Window w;
  if (!Locate(ctx, t, offs, sizeof(M), where, &w)) return;
  const int64_t rows = std::min<int64_t>(in.vr, w.rows), cols = std::min<int64_t>(in.vc, w.cols);
  char* base = const_cast<char*>(w.base);
  for (int64_t r = 0; r < rows; ++r) {
    char* row = base + r * w.row_stride * static_cast<int64_t>(sizeof(M));
    const Storage<D>* src = in.v + r * C;
    if (w.col_stride == 1) {
      StoreRow<D>(row, src, cols);
    } else {
      for (int64_t c = 0; c < cols; ++c) {
        M m = ToMemory<D>(src[c]);
        std::memcpy(row + c * w.col_stride * static_cast<int64_t>(sizeof(M)), &m, sizeof(M));
      }
    }
  }
}

template <DT D, int R, int C, typename X>
void Full(Ctx& ctx, Tile<D, R, C>& out, X value, const char* where) {
  Storage<D> s = ScalarAs<D>(ctx, value, where);
  std::fill(out.v, out.v + R * C, s);
  out.vr = R;
  out.vc = C;
}

// Loop-carried tiles start as a copy of their init.
template <DT D, int R, int C>
void Assign(Ctx&, Tile<D, R, C>& out, const Tile<D, R, C>& in) {
  out = in;
}

// Element i of a tensor row at any alignment (fused loops): memcpy compiles to one unaligned
// load / store, which the compiler vectorizes across a row.
template <DT D>
inline Storage<D> Get(const char* row, int64_t i) {
  Memory<D> m;
  std::memcpy(&m, row + i * static_cast<int64_t>(sizeof(Memory<D>)), sizeof(Memory<D>));
  return FromMemory<D>(m);
}
template <DT D, bool kExact = true>
inline void Put(char* row, int64_t i, Storage<D> v) {
  Memory<D> m = ToMemory<D, kExact>(v);
  std::memcpy(row + i * static_cast<int64_t>(sizeof(Memory<D>)), &m, sizeof(Memory<D>));
}

// Whether fused bf16 stores round a chunk at a time with the native instruction (PutBf16Chunk):
// VCVTNE2PS2BF16 rounds to nearest even and quiets NaN exactly as scalar::F32ToBf16 does (all
// 2^32 inputs compared), except that it flushes subnormal inputs to zero. In the fused loop's
// code it costs one instruction per 32 values where the integer rounding costs 11, and one
// VFPCLASSPS per 16 replaces the per-element NaN check (4096-column bf16 layernorm in the L3 on
// one thread: 1.02-1.04x, then 1.04-1.07x, paired A/B).
#if defined(__AVX512BF16__)
inline constexpr bool kNativeBf16Chunk = true;
#else
inline constexpr bool kNativeBf16Chunk = false;
#endif

// Rounds src[0, n) (a fused loop's chunk buffer, 64-byte aligned) to bf16 at dst (any alignment)
// with the bits of Put<kBF16>. The fast mode (kExact false) rounds natively and returns true when
// a value is NaN (the fast mode's check of what leaves the loop) or subnormal (it may have rounded
// differently): its chunk then runs again exactly.
template <bool kExact>
inline bool PutBf16Chunk(char* dst, const float* src, int64_t n) {
#if defined(__AVX512BF16__)
  if constexpr (!kExact) {
    constexpr int kNanOrSubnormal = 0x01 | 0x80 | 0x20;  // VFPCLASSPS: QNaN, SNaN, denormal
    __mmask16 rerun = 0;
    int64_t c = 0;
    for (; c + 32 <= n; c += 32) {
      const __m512 a = _mm512_load_ps(src + c), b = _mm512_load_ps(src + c + 16);
      rerun |= _mm512_fpclass_ps_mask(a, kNanOrSubnormal);
      rerun |= _mm512_fpclass_ps_mask(b, kNanOrSubnormal);
      _mm512_storeu_si512(dst + 2 * c, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a)));
    }
    for (; c < n; c += 16) {
      const __mmask16 live = static_cast<__mmask16>((1u << std::min<int64_t>(16, n - c)) - 1);
      const __m512 a = _mm512_maskz_load_ps(live, src + c);
      rerun |= _mm512_fpclass_ps_mask(a, kNanOrSubnormal);
      _mm256_mask_storeu_epi16(dst + 2 * c, live,
                               reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(a)));
    }
    return rerun != 0;
  }
#endif
  StoreRow<DT::kBF16>(dst, src, n);
  return false;
}

// A fused loop wrote the top-left vr x vc of `t`: record it and zero the rest, so tiles never
// hold indeterminate values.
template <DT D, int R, int C>
void SetValid(Tile<D, R, C>& t, int64_t vr, int64_t vc) {
  t.vr = vr;
  t.vc = vc;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = (r < vr ? vc : 0); c < C; ++c) t.at(r, c) = Storage<D>{};
}

// tensor.empty in the orchestration: a new zero-filled contiguous tensor of `shape` from the host,
// valid until the host has waited for every task; *id is its tensor id for task accesses. A
// negative size, a byte size past int64 or a failed allocation raises an error (the result is
// then an empty descriptor the caller must not use).
template <DT D>
const TensorArg& Empty(Ctx& ctx, const Runtime* rt, std::initializer_list<int64_t> shape,
                       const char* where, const char* label, int64_t* id) {
  static const TensorArg kNone{};
  AllocDesc desc{};
  desc.dtype = static_cast<int64_t>(D);
  desc.element_bytes = sizeof(Memory<D>);
  desc.rank = static_cast<int64_t>(shape.size());
  desc.label = label;
  bool zero = false;
  for (int64_t d = 0; d < desc.rank; ++d) {
    const int64_t s = shape.begin()[d];
    if (s < 0) {
      ctx.Error("%s: size %lld of dim %lld is negative", where, static_cast<long long>(s),
                static_cast<long long>(d));
      return kNone;
    }
    desc.shape[d] = s;
    zero |= s == 0;
  }
  int64_t bytes = zero ? 0 : desc.element_bytes;
  double approx = static_cast<double>(desc.element_bytes);
  bool overflow = false;
  for (int64_t d = 0; d < desc.rank && !zero; ++d) {
    overflow |= __builtin_mul_overflow(bytes, desc.shape[d], &bytes);
    approx *= static_cast<double>(desc.shape[d]);
  }
  const TensorArg* t = nullptr;
  *id = overflow ? -1 : rt->alloc(rt->ctx, &desc, &t);
  if (*id >= 0 && t != nullptr) return *t;
  if (overflow) ctx.Error("%s: cannot allocate %.4g bytes (more than 2^63)", where, approx);
  else ctx.Error("%s: cannot allocate %lld bytes", where, static_cast<long long>(bytes));
  return kNone;
}

// tensor.slice / tensor.reshape read in place (views, see fuse-elementwise): the box of `shape`
// at `offsets` of tensor `t` (runtime id `t_id`), same memory and strides, or (`reshape`) the
// contiguous `t` as `shape`, with an id of its own, *id, for task accesses. The lowering checked
// the box lies inside `t` and that a reshaped tensor is a new contiguous buffer (the op's own
// errors); the host checks again, and a refusal is an internal error.
inline const TensorArg& TensorView(Ctx& ctx, const Runtime* rt, const TensorArg& t, int64_t t_id,
                             bool reshape, std::initializer_list<int64_t> offsets,
                             std::initializer_list<int64_t> shape, const char* where, int64_t* id) {
  static const TensorArg kNone{};
  ViewDesc desc{};
  desc.tensor = t_id;
  desc.reshape = reshape;
  desc.rank = static_cast<int64_t>(shape.size());
  for (int64_t d = 0; d < desc.rank; ++d) {
    desc.shape[d] = shape.begin()[d];
    if (!reshape) desc.offsets[d] = offsets.begin()[d];
  }
  const TensorArg* v = nullptr;
  *id = rt->view(rt->ctx, &desc, &v);
  if (*id >= 0 && v != nullptr) return *v;
  ctx.Error("%s: internal error: the host refused a view of tensor %lld", where,
            static_cast<long long>(t_id));
  return kNone;
}

}  // namespace ptox::cpu
