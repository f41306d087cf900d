// Differential conformance harness (see harness.h): guarded buffers, layouts, and the comparison
// of a target's outputs with the interpreter's, byte for byte or within an error bound.
#include "harness.h"

#include <gtest/gtest.h>

#include <cmath>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include <unistd.h>

#include "support/hash.h"
#include "tests/common/half.h"

namespace ptox::conformance {
namespace {

std::string Hex(const char* p, int bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string s = "0x";
  for (int i = bytes - 1; i >= 0; --i) {  // little endian: most significant byte last
    uint8_t b = static_cast<uint8_t>(p[i]);
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

// The value of a float element (f32 / bf16 / f16 bytes), exactly, as a double.
double DecodeFloat(DType dtype, const char* p) {
  if (dtype == DType::kF32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (dtype == DType::kBF16) {
    uint32_t u = uint32_t{h} << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  ptox::test::Half x;
  std::memcpy(&x, &h, 2);
  return static_cast<double>(x);
}

// One unit in the last place of a bf16 / f16 value of magnitude |v| (0 for f32 outputs).
double OutputUlp(DType dtype, double v) {
  if (dtype == DType::kF32) return 0.0;
  const int mant = dtype == DType::kBF16 ? 7 : 10;
  const int min_exp = dtype == DType::kBF16 ? -126 : -14;
  int e = 0;
  std::frexp(std::fabs(v), &e);  // |v| = m * 2^e, m in [0.5, 1)
  return std::ldexp(1.0, std::max(e - 1, min_exp) - mant);
}

// "x[2, 3]" style element names.
std::string Index(const std::vector<int64_t>& shape, int64_t linear) {
  std::vector<int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = shape[d] ? linear % shape[d] : 0;
    linear = shape[d] ? linear / shape[d] : 0;
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

struct Side {
  std::vector<std::unique_ptr<GuardedTensor>> tensors;  // nullptr for scalars
  std::vector<Arg> args;
};

}  // namespace

GuardedTensor::GuardedTensor(DType dtype, std::vector<int64_t> shape, const Layout& layout,
                             int salt)
    : dtype_(dtype), shape_(std::move(shape)), strided_(layout.strided) {
  const int r = static_cast<int>(shape_.size());
  const int64_t eb = DTypeBytes(dtype);
  strides_.assign(r, 1);
  if (layout.strided && r > 0) strides_[r - 1] = 2;
  for (int d = r - 2; d >= 0; --d)
    strides_[d] = shape_[d + 1] * strides_[d + 1] + (layout.strided ? 3 + salt % 3 : 0);
  int64_t last = 0;
  for (int d = 0; d < r; ++d) last += std::max<int64_t>(shape_[d] - 1, 0) * strides_[d];
  span_ = numel() == 0 ? 0 : static_cast<size_t>((last + 1) * eb);
  // [alignment slack][guard][byte_offset][span][guard]; data starts 64-byte aligned + offset.
  bytes_.assign(64 + kGuardBytes + layout.byte_offset + span_ + kGuardBytes, kGuardByte);
  const uintptr_t base = reinterpret_cast<uintptr_t>(bytes_.data());
  const size_t slack = (64 - (base + kGuardBytes) % 64) % 64;
  data_ = slack + kGuardBytes + layout.byte_offset;
  std::memset(bytes_.data() + data_, kUnwrittenByte, span_);
  is_elem_.assign(span_, false);
  for (int64_t k = 0; k < numel(); ++k) {
    const size_t off = static_cast<size_t>(Elem(k) - reinterpret_cast<char*>(bytes_.data()));
    for (int64_t b = 0; b < eb; ++b) is_elem_[off - data_ + b] = true;
  }
}

int64_t GuardedTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

Tensor GuardedTensor::view() const {
  // Contiguous views pass no strides (a zero-size dim would otherwise make a stride 0).
  return Tensor{const_cast<uint8_t*>(bytes_.data()) + data_, dtype_, shape_,
                strided_ ? strides_ : std::vector<int64_t>{}};
}

const char* GuardedTensor::Elem(int64_t linear) const {
  int64_t off = 0;
  for (int d = static_cast<int>(shape_.size()) - 1; d >= 0; --d) {
    off += (linear % shape_[d]) * strides_[d];
    linear /= shape_[d];
  }
  return reinterpret_cast<const char*>(bytes_.data()) + data_ + off * DTypeBytes(dtype_);
}
char* GuardedTensor::Elem(int64_t linear) {
  return const_cast<char*>(static_cast<const GuardedTensor*>(this)->Elem(linear));
}

bool GuardedTensor::GuardsIntact() const {
  for (size_t i = 0; i < bytes_.size(); ++i) {
    if (i >= data_ && i < data_ + span_) continue;
    // Only the guard bands and the offset bytes were filled: the alignment slack is theirs too.
    if (bytes_[i] != kGuardByte) return false;
  }
  return true;
}

uint64_t GuardedTensor::Hash() const {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : bytes_) h = (h ^ b) * 1099511628211ull;
  return h;
}

bool GuardedTensor::GapsEqual(const GuardedTensor& other) const {
  for (size_t i = 0; i < span_; ++i)
    if (!is_elem_[i] && bytes_[data_ + i] != other.bytes_[other.data_ + i]) return false;
  return true;
}

std::vector<Layout> LayoutsFor(DType dtype) {
  const int eb = DTypeBytes(dtype);
  std::vector<Layout> out = {{"aligned", 0, false}, {"plus1elem", eb, false}};
  if (eb > 1) out.push_back({"plus1byte", 1, false});
  if (eb > 2) out.push_back({"plus2bytes", 2, false});
  out.push_back({"strided", eb > 1 ? 3 : 1, true});
  return out;
}

std::string Describe(const RunConfig& config) {
  std::string s = "dims";
  for (const auto& [k, v] : config.dims) s += " " + k + "=" + std::to_string(v);
  return s + ", layout " + config.layout.name + ", seed " + std::to_string(config.seed);
}

namespace {

// Allocates and fills the arguments of one run (inputs from `seed`, outputs unwritten).
Side MakeSide(const Spec& spec, const std::vector<ParamInfo>& params, const RunConfig& config) {
  Side side;
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamInfo& p = params[i];
    if (!p.is_tensor) {
      auto it = spec.scalars.find(p.name);
      EXPECT_NE(it, spec.scalars.end()) << spec.name << ": no value for scalar %" << p.name;
      side.args.push_back(it != spec.scalars.end() ? it->second : Arg(int64_t{0}));
      side.tensors.push_back(nullptr);
      continue;
    }
    std::vector<int64_t> shape;
    for (const auto& d : p.dims) shape.push_back(d.sym.empty() ? d.size : config.dims.at(d.sym));
    auto t = std::make_unique<GuardedTensor>(p.dtype, shape, config.layout, static_cast<int>(i));
    if (p.dir != ParamDirection::kOut) {
      std::mt19937 rng(config.seed * 7919u + static_cast<uint32_t>(i));
      auto it = spec.values.find(p.name);
      const Values kind = it == spec.values.end() ? Values::kGeneral : it->second;
      const int64_t cols = shape.empty() ? 1 : shape.back();
      for (int64_t k = 0; k < t->numel(); ++k)
        GenerateValue(p.dtype, kind, cols ? k / cols : 0, cols ? k % cols : 0, rng, t->Elem(k));
    }
    side.args.push_back(t->view());
    side.tensors.push_back(std::move(t));
  }
  return side;
}

// The inputs' bytes at `linear`, for mismatch reports.
std::string InputsAt(const std::vector<ParamInfo>& params, const Side& side,
                     const std::vector<int64_t>& shape, int64_t linear) {
  std::string s;
  for (size_t i = 0; i < params.size(); ++i) {
    const GuardedTensor* t = side.tensors[i].get();
    if (params[i].dir != ParamDirection::kIn || !t || t->shape() != shape) continue;
    s += " %" + params[i].name + "=" + Hex(t->Elem(linear), DTypeBytes(t->dtype()));
  }
  return s.empty() ? s : "; inputs there:" + s;
}

// Compares output `i`; returns a report of the first mismatches (empty when it conforms).
std::string CompareOutput(const Spec& spec, const std::vector<ParamInfo>& params, size_t i,
                          const Side& ref, const Side& got, const RunConfig& config) {
  const GuardedTensor& r = *ref.tensors[i];
  const GuardedTensor& g = *got.tensors[i];
  const ParamInfo& p = params[i];
  const int eb = DTypeBytes(p.dtype);
  auto rule_it = spec.rules.find(p.name);
  const Rule* rule = rule_it == spec.rules.end() ? nullptr : &rule_it->second;
  const GuardedTensor* abs = nullptr;
  int64_t n = 0;
  if (rule && rule->kind == Rule::kSumBound) {
    for (size_t j = 0; j < params.size(); ++j)
      if (params[j].name == rule->abs_output) abs = ref.tensors[j].get();
    if (!abs) return "rule names a missing output %" + rule->abs_output;
    n = rule->n(config.dims);
  }
  std::ostringstream out;
  int bad = 0;
  for (int64_t k = 0; k < r.numel() && bad < 4; ++k) {
    const char *pr = r.Elem(k), *pg = g.Elem(k);
    if (std::memcmp(pr, pg, eb) == 0) continue;
    if (abs) {
      const double vr = DecodeFloat(p.dtype, pr), vg = DecodeFloat(p.dtype, pg);
      const double tol = 2.0 * n * std::ldexp(1.0, -24) * DecodeFloat(abs->dtype(), abs->Elem(k)) *
                             (1 + std::ldexp(1.0, -7)) +
                         OutputUlp(p.dtype, std::max(std::fabs(vr), std::fabs(vg)));
      const bool ok = std::isnan(vr) ? std::isnan(vg)
                                     : std::isfinite(vr) && std::fabs(vg - vr) <= tol;
      if (ok) continue;
      out << "\n  %" << p.name << Index(r.shape(), k) << ": target " << vg << " vs interp " << vr
          << " (bound " << tol << ")";
    } else {
      out << "\n  %" << p.name << Index(r.shape(), k) << ": target " << Hex(pg, eb)
          << " vs interp " << Hex(pr, eb) << InputsAt(params, ref, r.shape(), k);
    }
    ++bad;
  }
  if (!r.GapsEqual(g)) out << "\n  %" << p.name << ": bytes between strided elements differ";
  return out.str();
}

// The interpreter's run of a program on given inputs is kept in the compile cache's folder
// ($PTOX_CACHE_DIR/conformance-interp): each program of the catalogue is checked on every CPU
// target (three under QEMU on Arm, where the interpreter takes most of a test's time) against
// the same reference. The key holds the program, the run's configuration, the inputs and this
// test binary's identity, so a rebuilt interpreter never meets an old reference. Only clean
// runs are kept (guards intact); anything unreadable is a miss.
std::string InterpRefPath(const Spec& spec, const RunConfig& config, const Side& side) {
  const char* dir = std::getenv("PTOX_CACHE_DIR");
  if (dir == nullptr || *dir == 0) return "";
  static const std::string binary = [] {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    const auto size = fs::file_size(exe, ec);
    const auto time = fs::last_write_time(exe, ec).time_since_epoch().count();
    return exe.string() + ":" + std::to_string(size) + ":" + std::to_string(time);
  }();
  std::string key = binary + "\n" + spec.name + "\n" + Describe(config) + "\n" +
                    spec.program.ToText();
  for (size_t i = 0; i < side.args.size(); ++i) {
    if (side.tensors[i]) {
      key += side.tensors[i]->span();
      continue;
    }
    std::visit([&key](const auto& v) {
      if constexpr (!std::is_same_v<std::decay_t<decltype(v)>, Tensor>)
        key.append(reinterpret_cast<const char*>(&v), sizeof v);
    }, side.args[i]);
  }
  return std::string(dir) + "/conformance-interp/" + HashHex(key);
}

// Fills `side` and `status` from a kept reference; false when there is none (or it does not fit).
bool LoadInterpRef(const std::string& path, Side& side, Status& status) {
  std::ifstream in(path, std::ios::binary);
  if (path.empty() || !in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  size_t at = 0;
  auto take = [&](size_t n) -> std::string_view {
    if (data.size() - at < n) throw std::out_of_range("short");
    at += n;
    return std::string_view(data).substr(at - n, n);
  };
  auto take_size = [&] {
    uint64_t n;
    std::memcpy(&n, take(sizeof n).data(), sizeof n);
    return static_cast<size_t>(n);
  };
  try {
    const auto code = static_cast<StatusCode>(take_size());
    const std::string message(take(take_size()));
    std::vector<std::string_view> spans;
    for (const auto& t : side.tensors) {
      if (!t) continue;
      spans.push_back(take(take_size()));
      if (spans.back().size() != t->span().size()) return false;
    }
    if (at != data.size()) return false;
    size_t k = 0;
    for (auto& t : side.tensors)
      if (t) t->set_span(spans[k++]);
    status = code == StatusCode::kOk ? Status() : Status(code, message);
  } catch (const std::out_of_range&) {
    return false;
  }
  return true;
}

void SaveInterpRef(const std::string& path, const Side& side, const Status& status) {
  if (path.empty()) return;
  for (const auto& t : side.tensors)
    if (t && !t->GuardsIntact()) return;
  std::string data;
  auto put = [&data](std::string_view s) {
    const uint64_t n = s.size();
    data.append(reinterpret_cast<const char*>(&n), sizeof n);
    data += s;
  };
  const uint64_t code = static_cast<uint64_t>(status.code());
  data.append(reinterpret_cast<const char*>(&code), sizeof code);
  put(status.message());
  for (const auto& t : side.tensors)
    if (t) put(t->span());
  // Written aside and renamed: a concurrent test reads the whole reference or none.
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::ofstream(tmp, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

Status RunInterp(const Spec& spec, const RunConfig& config, Side& ref) {
  const std::string path = InterpRefPath(spec, config, ref);
  Status status;
  if (LoadInterpRef(path, ref, status)) return status;
  status = Run(spec.program, ref.args, {.target = "interp"});
  SaveInterpRef(path, ref, status);
  return status;
}

}  // namespace

void CheckConforms(const Spec& spec, const RunConfig& config, const std::string& target) {
  SCOPED_TRACE(spec.name + " on " + target + ", " + Describe(config));
  auto params = spec.program.Params();
  ASSERT_TRUE(params.ok()) << params.status().message();
  Side ref = MakeSide(spec, *params, config), got = MakeSide(spec, *params, config);
  // Buffers of the two sides differ in their alignment slack, so each side has its own hashes.
  std::vector<uint64_t> ref_hash, got_hash;
  for (size_t i = 0; i < ref.tensors.size(); ++i) {
    ref_hash.push_back(ref.tensors[i] ? ref.tensors[i]->Hash() : 0);
    got_hash.push_back(got.tensors[i] ? got.tensors[i]->Hash() : 0);
  }

  const Status sr = RunInterp(spec, config, ref);
  const Status sg = Run(spec.program, got.args, {.target = target});
  if (config.expect_runtime_error) {
    EXPECT_EQ(sr.code(), StatusCode::kRuntime) << "interp: " << sr.message();
  } else {
    EXPECT_TRUE(sr.ok()) << "interp: " << sr.message();
  }
  EXPECT_EQ(sg.code(), sr.code()) << target << ": " << sg.message() << "\ninterp: "
                                  << sr.message();
  for (size_t i = 0; i < params->size(); ++i) {
    if (!ref.tensors[i]) continue;
    const std::string& name = (*params)[i].name;
    EXPECT_TRUE(got.tensors[i]->GuardsIntact()) << target << " wrote outside %" << name;
    EXPECT_TRUE(ref.tensors[i]->GuardsIntact()) << "interp wrote outside %" << name;
    if ((*params)[i].dir != ParamDirection::kIn) continue;
    EXPECT_EQ(got.tensors[i]->Hash(), got_hash[i]) << target << " modified input %" << name;
    EXPECT_EQ(ref.tensors[i]->Hash(), ref_hash[i]) << "interp modified input %" << name;
  }
  if (!sr.ok() || !sg.ok()) return;
  for (size_t i = 0; i < params->size(); ++i) {
    if (!ref.tensors[i] || (*params)[i].dir == ParamDirection::kIn) continue;
    std::string diff = CompareOutput(spec, *params, i, ref, got, config);
    EXPECT_TRUE(diff.empty()) << target << " differs from the interpreter:" << diff;
  }
}

std::vector<std::string> CpuTargets() {
  std::vector<std::string> out;
  for (const std::string& t : AvailableTargets())
    if (t != "interp") out.push_back(t);
  return out;
}

std::vector<std::pair<int64_t, int64_t>> EdgeSizes(int64_t tr, int64_t tc) {
  return {{1, 1},       {tr - 1, tc - 1}, {tr, tc}, {tr + 1, tc + 1}, {19, 35},
          {35, 19},     {0, 7},           {7, 0},   {tr, 1},          {1, tc + 1}};
}

Program BuildOrDie(FunctionBuilder& f) {
  Result<Program> p = f.Build();
  // gtest reports an exception as a failure of the running test and goes on with the next.
  if (!p.ok())
    throw std::runtime_error("building a conformance program failed: " + p.status().message());
  return *p;
}

std::string Sanitize(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

}  // namespace ptox::conformance
