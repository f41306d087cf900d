// Conformance of the tensor-level mask and index ops on every CPU target against the interpreter:
// compares and select (bool tensors, broadcast masks), causal_mask (alone, fused into a row group
// with a max and exp, before argmax), argmax (one tile, several column tiles, other axes), gather
// (ids of rank 1 and 2, empty rows) and tensor.store at offsets (overlapping boxes, bool values),
// over symbolic sizes 0, 1, 7 and around the lowering's tiles, on every memory layout; all
// bit-identical. Sizes that make the interpreter fail (an empty argmax axis, ids past the table,
// a box past the destination) must fail on the target too, without touching guard bytes.
#include <regex>

#include "programs.h"

namespace ptox::conformance {
namespace {

using Dims = std::map<std::string, int64_t>;

// `text` with DT replaced by the dtype's name, parsed.
Program ParseTyped(const std::string& text, DType d) {
  auto p = Program::Parse(std::regex_replace(text, std::regex("DT"), std::string(DTypeName(d))));
  if (!p.ok())
    throw std::runtime_error("a conformance program does not parse: " + p.status().message());
  return *p;
}

Spec Make(const std::string& name, DType d, const std::string& text,
          std::map<std::string, Values> values = {}, std::map<std::string, Arg> scalars = {}) {
  Spec s;
  s.name = name + "_" + std::string(DTypeName(d));
  s.program = ParseTyped(text, d);
  s.values = std::move(values);
  s.scalars = std::move(scalars);
  return s;
}

// Every size on every layout of `d`; `fails` marks the sizes the interpreter rejects.
std::vector<RunConfig> Configs(DType d, const std::vector<Dims>& sizes,
                               const std::vector<Dims>& failing = {}) {
  std::vector<RunConfig> out;
  uint32_t seed = 7;
  for (const Layout& layout : LayoutsFor(d)) {
    for (const Dims& dims : sizes) out.push_back({dims, layout, seed++});
    for (const Dims& dims : failing) out.push_back({dims, layout, seed++, true});
  }
  return out;
}

const char kCompareSelect[] = R"(
func @f(%x: in tensor<{N}x{M}xDT>, %y: in tensor<{M}xDT>, %c: in tensor<{N}x1xbool>, %s: in f32,
        %eq: out tensor<{N}x{M}xbool>, %ne: out tensor<{N}x{M}xbool>, %lt: out tensor<{N}x{M}xbool>,
        %le: out tensor<{N}x{M}xbool>, %gt: out tensor<{N}x{M}xbool>, %ge: out tensor<{N}x{M}xbool>,
        %sel: out tensor<{N}x{M}xDT>, %sel_s: out tensor<{N}x{M}xDT>, %sel_c: out tensor<{N}x{M}xDT>) {
  %0 = tensor.eq %x, %y
  %1 = tensor.ne %x, %y
  %2 = tensor.lt %x, %y
  %3 = tensor.le %x, %s
  %4 = tensor.gt %x, 0.0
  %5 = tensor.ge %x, -inf
  %6 = tensor.select %2, %x, %y
  %7 = tensor.select %4, %x, 0.5
  %8 = tensor.select %c, %x, %s
  tensor.store %0, %eq
  tensor.store %1, %ne
  tensor.store %2, %lt
  tensor.store %3, %le
  tensor.store %4, %gt
  tensor.store %5, %ge
  tensor.store %6, %sel
  tensor.store %7, %sel_s
  tensor.store %8, %sel_c
}
)";

std::vector<Dims> NxM(std::vector<std::pair<int64_t, int64_t>> sizes) {
  std::vector<Dims> out;
  for (auto [n, m] : sizes) out.push_back({{"N", n}, {"M", m}});
  return out;
}

// Masked attention scores: alone over [B, T, S], and in a row group over a static 37-key axis
// (masked max, exp of the shifted scores) followed by an argmax.
const char kMask[] = R"(
func @f(%x: in tensor<{B}x{T}x{S}xDT>, %o: in index, %m: out tensor<{B}x{T}x{S}xDT>) {
  %r = tensor.causal_mask %x, %o
  tensor.store %r, %m
}
)";
const char kMaskRows[] = R"(
func @f(%x: in tensor<{T}x37xDT>, %o: in index, %m: out tensor<{T}x1xDT>,
        %e: out tensor<{T}x37xDT>, %a: out tensor<{T}xi32>) {
  %r = tensor.causal_mask %x, %o
  %mx = tensor.reduce_max %r {axis = -1, keepdims = true}
  %s = tensor.sub %r, %mx
  %p = tensor.exp %s
  %i = tensor.argmax %r
  tensor.store %mx, %m
  tensor.store %p, %e
  tensor.store %i, %a
}
)";

// Symbolic and static axes, one tile (300) and several (3000: 2048-wide tiles), other axes.
const char kArgmax[] = R"(
func @f(%x: in tensor<{N}x{M}xDT>, %a: out tensor<{N}xi32>, %k: out tensor<{N}x1xi32>,
        %c: out tensor<1x{M}xi32>) {
  %0 = tensor.argmax %x
  %1 = tensor.argmax %x {keepdims = true}
  %2 = tensor.argmax %x {axis = 0, keepdims = true}
  tensor.store %0, %a
  tensor.store %1, %k
  tensor.store %2, %c
}
)";
const char kArgmaxStatic[] = R"(
func @f(%x: in tensor<{N}x3000xDT>, %y: in tensor<{N}x300xDT>, %z: in tensor<2x{N}x5xDT>,
        %a: out tensor<{N}xi32>, %b: out tensor<{N}xi32>, %c: out tensor<2x5xi32>) {
  %0 = tensor.argmax %x
  %1 = tensor.argmax %y
  %2 = tensor.argmax %z {axis = 1}
  tensor.store %0, %a
  tensor.store %1, %b
  tensor.store %2, %c
}
)";

// Embedding rows by i32 ids of rank 1 (symbolic width, also 0) and i64 ids of rank 2.
const char kGather[] = R"(
func @f(%t: in tensor<{V}x{D}xDT>, %ids: in tensor<{T}xi32>, %u: in tensor<{V}x64xDT>,
        %ids2: in tensor<2x{T}xi64>, %y: out tensor<{T}x{D}xDT>, %z: out tensor<2x{T}x64xDT>) {
  %g = tensor.gather %t, %ids
  %h = tensor.gather %u, %ids2
  tensor.store %g, %y
  tensor.store %h, %z
}
)";

// Two overlapping boxes into a cache (the second wins where they overlap), one of a fused value,
// and a bool mask into a bool cache.
const char kStoreAt[] = R"(
func @f(%v: in tensor<{T}x{D}xDT>, %p: in index, %q: in i32, %c: inout tensor<{L}x{D}xDT>,
        %b: inout tensor<{L}x{D}xbool>) {
  %w = tensor.mul %v, 2.0
  tensor.store %w, %c[%p, 0]
  tensor.store %v, %c[%q, 0]
  %m = tensor.gt %v, 0.0
  tensor.store %m, %b[%p, 0]
}
)";

Dims Tsd(int64_t b, int64_t t, int64_t s) { return {{"B", b}, {"T", t}, {"S", s}}; }
Dims Gather(int64_t v, int64_t d, int64_t t) { return {{"V", v}, {"D", d}, {"T", t}}; }
Dims Cache(int64_t t, int64_t d, int64_t l) { return {{"T", t}, {"D", d}, {"L", l}}; }

const std::vector<DType> kFloats = {DType::kF32, DType::kBF16, DType::kF16};

// A family of one program over fixed sizes (`failing`: sizes the interpreter rejects).
Family Fixed(const std::string& name, const char* text, std::map<std::string, Values> values,
             std::map<std::string, Arg> scalars, std::vector<Dims> sizes,
             std::vector<Dims> failing = {}) {
  return {name, kFloats, [=](DType d) { return Make(name, d, text, values, scalars); },
          [=](DType d) { return Configs(d, sizes, failing); }};
}

// Masks at offsets that hide nothing of the first row's past (0), some (2), the diagonal too
// (-1), nothing at all (40) or everything (INT64_MIN).
void MaskFamilies(std::vector<Family>& out) {
  for (int64_t o : {int64_t{0}, int64_t{2}, int64_t{-1}, int64_t{40}, INT64_MIN}) {
    const std::string tag =
        o == INT64_MIN ? "min" : (o < 0 ? "m" : "") + std::to_string(o < 0 ? -o : o);
    out.push_back(Fixed("causal_mask_" + tag, kMask, {}, {{"o", o}},
                        {Tsd(1, 1, 1), Tsd(2, 7, 13), Tsd(1, 0, 5), Tsd(1, 5, 0), Tsd(2, 33, 1025),
                         Tsd(1, 129, 7)}));
    out.push_back(Fixed("causal_mask_rows_" + tag, kMaskRows, {}, {{"o", o}},
                        {{{"T", 1}}, {{"T", 7}}, {{"T", 130}}}));
  }
}

// Stores at offsets that fit or not (negative, past the end) for each size.
void StoreFamilies(std::vector<Family>& out) {
  for (auto [p, q] : {std::pair<int64_t, int64_t>{0, 1}, {5, 3}, {-1, 0}, {2, 9}}) {
    std::vector<Dims> ok, bad;
    for (const Dims& dims :
         {Cache(1, 1, 11), Cache(6, 7, 11), Cache(0, 5, 3), Cache(2, 1030, 12), Cache(7, 0, 13)}) {
      const int64_t t = dims.at("T"), l = dims.at("L");
      const bool fits = p >= 0 && q >= 0 && p + t <= l && q + t <= l;
      (fits ? ok : bad).push_back(dims);
    }
    const std::string tag = (p < 0 ? "pneg" : "p" + std::to_string(p)) + "_q" + std::to_string(q);
    out.push_back(Fixed("store_at_" + tag, kStoreAt, {}, {{"p", p}, {"q", q}}, ok, bad));
  }
}

std::vector<Family> Families() {
  std::vector<Family> out;
  out.push_back(
      Fixed("compare_select", kCompareSelect, {}, {{"s", -0.75}},
            NxM({{1, 1}, {7, 13}, {0, 7}, {7, 0}, {3, 1023}, {3, 1025}, {257, 5}, {2, 2049}})));
  MaskFamilies(out);
  out.push_back(Fixed("argmax", kArgmax, {{"x", Values::kReduce}}, {},
                      NxM({{1, 1}, {7, 13}, {3, 2047}, {3, 2048}, {3, 2049}, {2, 4097}, {65, 3}}),
                      NxM({{3, 0}, {0, 5}})));
  out.push_back(Fixed("argmax_static", kArgmaxStatic,
                      {{"x", Values::kReduce}, {"y", Values::kReduce}, {"z", Values::kReduce}}, {},
                      {{{"N", 1}}, {{"N", 7}}}, {{{"N", 0}}}));
  out.push_back(Fixed("gather", kGather, {{"ids", Values::kIds}, {"ids2", Values::kIds}}, {},
                      {Gather(7, 1, 1), Gather(10, 64, 7), Gather(7, 2049, 3), Gather(7, 0, 5),
                       Gather(7, 13, 0), Gather(8, 5, 300)},
                      {Gather(0, 4, 3), Gather(0, 0, 2)}));
  StoreFamilies(out);
  return out;
}

const std::vector<Family>& AllFamilies() {
  static const std::vector<Family> kFamilies = Families();
  return kFamilies;
}

class TensorIndexTest : public FamilyTest {};

TEST_P(TensorIndexTest, MatchesInterpreterBitForBit) { RunAll(); }

INSTANTIATE_TEST_SUITE_P(Conformance, TensorIndexTest, ::testing::ValuesIn(Expand(AllFamilies())),
                         CaseName);

}  // namespace
}  // namespace ptox::conformance
