// Shared pieces of convert-tensor-to-tile: loop nests over a tensor domain in tiles, and the
// lowering of ops that run as kernels of their own (convert_layout.cc).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "passes/extents.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace ptox::passes::convert {

// One tiled dim of a loop nest: its extent, the step (1, or a tile extent) and whether one tile
// covers it statically (then there is no loop and its offset is 0).
struct NestDim {
  ir::Operand extent;
  int64_t step = 1;
  bool whole = false;
};

// Emits parallel loops over `dims` (outermost first); `body` gets one offset per dim and writes
// the innermost block (usually one incore scope).
using NestBody = std::function<void(const std::vector<ir::Operand>& offsets, BlockWriter& w)>;
void Nest(BlockWriter& w, const std::vector<NestDim>& dims, const NestBody& body);

// The tile extents of a domain: rows cover dim rank-2, cols dim rank-1 (rank-1 domains: 1 x cols).
struct Tiling {
  int64_t rows = 1, cols = 1;
};

// The nest of a domain tiled by `t` (leading dims step 1); `whole_cols` skips the column loop.
std::vector<NestDim> DomainNest(BlockWriter& w, Extents& ext, const std::vector<ir::Dim>& domain,
                                Tiling t, bool whole_cols);

// The tile a tensor of `shape` contributes at one point of the domain: broadcast dims (static 1
// where the domain is not) keep extent 1 and offset 0; the rest follow the domain's offsets.
struct Window {
  std::vector<ir::Operand> offsets;
  int64_t rows = 1, cols = 1;
};
Window WindowOf(const std::vector<ir::Dim>& shape, const std::vector<ir::Dim>& domain,
                const std::vector<ir::Operand>& offsets, Tiling t);

// Ops that run alone (convert_layout.cc): reductions not along a static last axis, reshape,
// transpose, slice, concat. `store` is the group's one tensor.store of the op's result, or null
// when the result is unused (then only the op's run-time checks are emitted).
void LowerAlone(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::OpStmt& op,
                const ir::OpStmt* store);
// A tensor.slice or tensor.reshape that group formation left outside every group (a view,
// passes/views.h): a slice's run-time checks, then the op itself, which targets read in place.
void LowerView(BlockWriter& w, Extents& ext, const ir::StmtRef& view);

// tensor.argmax and tensor.gather (convert_index.cc), called by LowerAlone: `dst` null keeps only
// their run-time checks (an empty axis; every id in range).
void LowerArgmax(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::OpStmt& op,
                 const ir::Value& dst);
void LowerGather(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::OpStmt& op,
                 const ir::Value& dst);
// tensor.store %v, %dst[offsets]: the bounds checks (before anything is written), then a copy of
// v into the box at the offsets.
void LowerStoreAt(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::OpStmt& op);

// A transpose of dims (d0, d1) of x into dst (convert_layout.cc).
void TransposeInto(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::Value& x,
                   int d0, int d1, const ir::Value& dst);
// Copy tiles for a domain: up to 2048 columns, rows so that two tiles fill half of L2.
Tiling CopyTiling(const std::vector<ir::Dim>& shape, const Capabilities& caps);

// A copy of a whole tensor into another of the same shape (a bare tensor.store).
void LowerCopy(BlockWriter& w, Extents& ext, const Capabilities& caps, const ir::Value& src,
               const ir::Value& dst);

// The output tile and K slice (*tk) of an m x k x n matmul on a target with `caps` (0 for a
// symbolic size). Also what bench/matmul_bench gives its tile-level matmuls.
Tiling MatmulTiling(const Capabilities& caps, int64_t m, int64_t n, int64_t k, int64_t* tk);

// Largest power of two <= x (x >= 1).
int64_t FloorPow2(int64_t x);

}  // namespace ptox::passes::convert
