// The CPU targets' policy: matmul tiles for a kernel that packs its own blocks, the tile
// library's byte layout, and matmul operands read in place (codegen emits pc::View for them).
#include "targets/cpu/policy.h"

#include <algorithm>

namespace ptox::targets::cpu {

// The CPU matmul kernel reads its operands in place and packs and blocks them for the caches
// itself, so tiles only set the task grain and how often each operand block is packed (B once
// per row tile, A once per column tile: 2048^3 ran 5-10 % faster in 512 x 1024 x 2048 tiles than
// in 256 x 512 x 1024): 512 x 1024 outputs over 2048-deep K slices; rows that fit one tile take
// equal column stripes, skinny M (<= 16) whole-K stripes (Skinny, or below when N or K is only
// known at run time); then the longer side halves while a static problem has too few tiles (work
// for every core).
passes::MatmulTiles CpuPolicy::Matmul(const passes::Capabilities&, int64_t m, int64_t n,
                                      int64_t k) const {
  passes::MatmulTiles t{512, 1024, 2048};
  if (m > 0 && m <= 16 && n > 0 && k > 0) return Skinny(m, n, k);
  // M known only at run time (a prefill's T tokens): 256-row tiles, so that long prompts
  // split for the workers (SmolLM2, T = 512 on 2 threads: 398 -> 502 tok/s in 512-row tiles)
  // and a B that is not constant is packed once per 256 rows.
  if (m <= 0) t.rows = 256;
  // ... and wide products in two column stripes (four from 1024 columns), so that a short
  // prompt (one row tile) still gives 2 workers a tile each (SmolLM2 prefill on 2 threads,
  // T = 128: 483 -> 591 tok/s; T = 512, two row tiles already: 558 -> 524, within this VM's
  // noise; 1 thread unchanged), and a worker that finishes first finds another (the MLP's
  // 1536-column products in four stripes, on the Zen 5 VM: T = 128 1523-1540 -> 1581-1605 tok/s,
  // T = 512 1368-1468 -> 1479-1561; 1 thread unchanged).
  if (m <= 0 && n >= 512) {
    const int64_t stripes = n >= 1024 ? 4 : 2;
    t.cols = std::min(t.cols, ((n + stripes - 1) / stripes + 15) / 16 * 16);
  }
  if (m > 0 && m <= 16)
    t = {m, n > 0 ? std::max<int64_t>(512, (n / 8 + 15) / 16 * 16) : 512, k > 0 ? k : 4096};
  // Halve the longer side (columns down to 128, rows to 64) while there are too few tiles:
  // narrow tiles repack A for every 64 columns (a 512^3 product ran at 122 GFLOP/s in 256 x
  // 64 tiles, 180 in 128 x 128).
  auto tiles = [&] { return ((m + t.rows - 1) / t.rows) * ((n + t.cols - 1) / t.cols); };
  const bool stripes = m > 16 && m <= t.rows && n >= 8 * 128;
  if (stripes) {
    // All rows in one tile: column stripes in a multiple of 4, of equal widths, so that 2
    // or 4 workers finish together (the bf16 SwiGLU gate / up matmuls at M = 128, N = 5632
    // on 2 threads: 11 stripes of 512 ran at 585 GFLOP/s, 8 of 704 at 634), and no more of
    // them than that: each stripe packs all of A again (128 x 5632 x 2048 bf16: 8 stripes
    // of 256 in 8.8-9.1 ms, 4 of 512 in 7.1-7.2 on one thread; 128 x 1024 x 3072 f32: 3
    // -6 % faster in 4 of 768 than in 8 of 384).
    const int64_t n_stripes = 4 * ((n + 4 * t.cols - 1) / (4 * t.cols));
    t.cols = ((n + n_stripes - 1) / n_stripes + 15) / 16 * 16;
  }
  // Skinny products and stripes stop at 4 tiles: shorter runs of each weight row stream
  // worse (16 x 5632 x 2048 bf16, weights kept packed: 8 stripes in 0.53 ms, 4 in 0.45).
  const int64_t want = (m > 0 && m <= 16) || stripes ? 4 : 8;
  while (m > 0 && n > 0 && tiles() < want) {
    const bool cols = t.cols > 128 && (t.cols >= t.rows || m <= 16 || t.rows <= 64);
    if (cols) t.cols /= 2;
    else if (m > 16 && t.rows > 64) t.rows /= 2;
    else break;
  }
  return t;
}

// A product of few rows (a decode step's GEMVs) streams B once: its time is B's bytes over the
// memory bandwidth, so the tasks split B in stripes of equal columns, one per MiB of f32 B
// (an even count, for 2 or 4 workers), at most 4 (1 x 4096 x 2048 on 2 threads: 8 stripes in
// 0.51 ms, 4 in 0.39). Finer stripes only add tasks: a SmolLM2 decode step ran 31 matmul
// tasks per layer of 0.4-3.4 MiB matrices, each costing about a microsecond of runtime besides
// its 10-40 us of streaming.
passes::MatmulTiles CpuPolicy::Skinny(int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kStripeBytes = 1 << 20;
  int64_t stripes = std::clamp<int64_t>((n * k * 4 + kStripeBytes - 1) / kStripeBytes, 1, 4);
  if (stripes > 1) stripes += stripes % 2;
  const int64_t cols = ((n + stripes - 1) / stripes + 15) / 16 * 16;
  return {m, std::min(cols, n), k};
}

// Elements in their compute type (f32 for the 16-bit floats) plus the valid rows / cols, 64-byte
// aligned: pc::Tile's layout (kernels/cpu/tile.h).
int64_t CpuPolicy::TileBytes(const ir::Type& t) const {
  int64_t elem = 4;  // f32 / bf16 / f16 / i32 compute storage
  if (t.dtype() == DType::kI8 || t.dtype() == DType::kBool) elem = 1;
  if (t.dtype() == DType::kI64 || t.dtype() == DType::kIndex) elem = 8;
  const int64_t bytes = t.rows() * t.cols() * elem + 16;  // + the valid rows / cols
  return (bytes + 63) / 64 * 64;
}

const CpuPolicy& CpuPolicy::Get() {
  static const CpuPolicy policy;
  return policy;
}

}  // namespace ptox::targets::cpu
