// tile.load / tile.store / tile.full and tile copies: moving tiles between caller tensors (any
// strides, any alignment) and registers-or-stack tiles, with bounds checks and edge tiles.
#pragma once

#include <algorithm>
#include <initializer_list>

#include "kernels/cpu/core.h"

namespace ptox::cpu {

// The 2-D window of a tensor that a tile at `offs` covers (strides in elements).
struct Window {
  const char* base = nullptr;
  int64_t row_stride = 0, col_stride = 0;
  int64_t rows = 0, cols = 0;  // extent from the offsets to the end of each tiled dim
};

// Checks every offset is in [0, dim) and locates the window; false (with an error) otherwise.
inline bool Locate(Ctx& ctx, const TensorArg& t, std::initializer_list<int64_t> offs, int bytes,
                   const char* where, Window* w) {
  const int64_t r = t.rank;
  int64_t elem = 0, d = 0;
  for (int64_t o : offs) {
    if (o < 0 || o >= t.shape[d]) {
      ctx.Error("%s: offset %lld in dim %lld is out of bounds for size %lld (each offset must be "
                "in [0, dim))", where, static_cast<long long>(o), static_cast<long long>(d),
                static_cast<long long>(t.shape[d]));
      return false;
    }
    elem += o * t.strides[d];
    ++d;
  }
  const int64_t* o = offs.begin();
  w->base = static_cast<const char*>(t.data) + elem * bytes;
  w->col_stride = t.strides[r - 1];
  w->cols = t.shape[r - 1] - o[r - 1];
  w->row_stride = r >= 2 ? t.strides[r - 2] : 0;
  w->rows = r >= 2 ? t.shape[r - 2] - o[r - 2] : 1;
  return true;
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
  const M* base = reinterpret_cast<const M*>(w.base);
  for (int64_t r = 0; r < R; ++r) {
    Storage<D>* dst = out.v + r * C;
    if (r >= out.vr) {
      std::fill(dst, dst + C, pad_value);
      continue;
    }
    const M* row = base + r * w.row_stride;
    if (w.col_stride == 1) {
      M tmp[C];  // memcpy first: the tensor may be unaligned for M
      std::memcpy(tmp, row, out.vc * sizeof(M));
      for (int64_t c = 0; c < out.vc; ++c) dst[c] = FromMemory<D>(tmp[c]);
    } else {
      for (int64_t c = 0; c < out.vc; ++c) {
        M m;
        std::memcpy(&m, row + c * w.col_stride, sizeof(M));
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
  M* base = reinterpret_cast<M*>(const_cast<char*>(w.base));
  for (int64_t r = 0; r < rows; ++r) {
    M* row = base + r * w.row_stride;
    const Storage<D>* src = in.v + r * C;
    if (w.col_stride == 1) {
      M tmp[C];
      for (int64_t c = 0; c < cols; ++c) tmp[c] = ToMemory<D>(src[c]);
      std::memcpy(row, tmp, cols * sizeof(M));
    } else {
      for (int64_t c = 0; c < cols; ++c) {
        M m = ToMemory<D>(src[c]);
        std::memcpy(row + c * w.col_stride, &m, sizeof(M));
      }
    }
  }
}

template <DT D, int R, int C, typename X>
void Full(Ctx& ctx, Tile<D, R, C>& out, X value) {
  Storage<D> s = ScalarAs<D>(ctx, value);
  std::fill(out.v, out.v + R * C, s);
  out.vr = R;
  out.vc = C;
}

// Loop-carried tiles start as a copy of their init.
template <DT D, int R, int C>
void Assign(Ctx&, Tile<D, R, C>& out, const Tile<D, R, C>& in) {
  out = in;
}

}  // namespace ptox::cpu
