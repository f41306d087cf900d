// The differential check (differential.h): guarded argument buffers, input generation, output
// comparison exactly as `ptox run --check` does it, and the forked child that runs it all.
#include "differential.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>

#include "tests/common/half.h"
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include "../conformance/harness.h"

namespace ptox::fuzz {
namespace {

constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xA7;

// An argument tensor inside a buffer with guard bytes on both sides, 64-byte aligned.
struct Buffer {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  size_t data = 0, size = 0;

  Buffer(DType t, std::vector<int64_t> s) : dtype(t), shape(std::move(s)) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    size = static_cast<size_t>(n) * DTypeBytes(dtype);
    bytes.assign(64 + 2 * kGuard + size, kGuardByte);
    const uintptr_t base = reinterpret_cast<uintptr_t>(bytes.data()) + kGuard;
    data = kGuard + (64 - base % 64) % 64;
  }
  char* at(int64_t i) {
    return reinterpret_cast<char*>(bytes.data() + data) + i * DTypeBytes(dtype);
  }
  const char* at(int64_t i) const { return const_cast<Buffer*>(this)->at(i); }
  int64_t numel() const { return static_cast<int64_t>(size) / DTypeBytes(dtype); }
  Tensor view() { return Tensor::Contiguous(at(0), dtype, shape); }
  bool GuardsIntact() const {
    for (size_t i = 0; i < bytes.size(); ++i)
      if ((i < data || i >= data + size) && bytes[i] != kGuardByte) return false;
    return true;
  }
  bool SameData(const Buffer& o) const { return std::memcmp(at(0), o.at(0), size) == 0; }
};

struct Args {
  std::vector<std::unique_ptr<Buffer>> buffers;  // nullptr for scalars
  std::vector<Arg> args;
};

bool IsInput(const ParamInfo& p) { return p.is_tensor && p.dir != ParamDirection::kOut; }

uint16_t ToBf16(float f) {  // round to nearest even (inputs here are never NaN)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// Element i of `b` from one draw of `rng`, as ptox run's FillRandom (tools/ptox/run_data.cc).
void PutCli(Buffer& b, int64_t i, uint64_t r) {
  const float f = static_cast<float>(2.0 * (static_cast<double>(r >> 11) * 0x1.0p-53) - 1.0);
  const int64_t k = static_cast<int64_t>(r % 17) - 8;
  char* p = b.at(i);
  switch (b.dtype) {
    case DType::kF32: std::memcpy(p, &f, 4); return;
    case DType::kF16: {
      const ptox::test::Half h = static_cast<ptox::test::Half>(f);
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::kBF16: {
      const uint16_t h = ToBf16(f);
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::kI8: *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(k); return;
    case DType::kI32: {
      const int32_t v = static_cast<int32_t>(k);
      std::memcpy(p, &v, 4);
      return;
    }
    case DType::kI64:
    case DType::kIndex: std::memcpy(p, &k, 8); return;
    case DType::kBool: *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(r >> 63); return;
  }
}

void Fill(Buffer& b, Inputs kind, uint64_t seed, size_t param, std::mt19937_64& cli) {
  if (kind == Inputs::kCli) {
    for (int64_t i = 0; i < b.numel(); ++i) PutCli(b, i, cli());
    return;
  }
  using conformance::Values;
  std::mt19937 rng(static_cast<uint32_t>(seed * 7919u + param));
  const bool is_int = !IsFloat(b.dtype) && b.dtype != DType::kBool;
  const Values v = kind == Inputs::kReduce ? Values::kReduce
                   : is_int                ? (param % 2 ? Values::kSmall : Values::kTiny)
                                           : Values::kGeneral;
  const int64_t cols = b.shape.empty() || b.shape.back() == 0 ? 1 : b.shape.back();
  for (int64_t i = 0; i < b.numel(); ++i)
    conformance::GenerateValue(b.dtype, v, i / cols, i % cols, rng, b.at(i));
}

Result<Arg> ScalarArg(const ParamInfo& p, const std::string& text) {
  if (IsFloat(p.dtype)) return Arg(std::strtod(text.c_str(), nullptr));
  if (text == "true" || text == "false") return Arg(int64_t{text == "true"});
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str()) return Status(StatusCode::kInvalid, "bad scalar " + text);
  return Arg(static_cast<int64_t>(v));
}

// Arguments for `params`: inputs filled, outputs 0xFF (NaN in every float dtype), like ptox run.
Result<Args> MakeArgs(const Case& c, const std::vector<ParamInfo>& params) {
  Args a;
  std::mt19937_64 cli(c.seed);
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamInfo& p = params[i];
    if (!p.is_tensor) {
      auto it = c.scalars.find(p.name);
      if (it == c.scalars.end()) return Status(StatusCode::kInvalid, "no value for %" + p.name);
      Result<Arg> v = ScalarArg(p, it->second);
      if (!v.ok()) return v.status();
      a.args.push_back(*v);
      a.buffers.push_back(nullptr);
      continue;
    }
    std::vector<int64_t> shape;
    for (const ParamInfo::Dim& d : p.dims) {
      if (d.sym.empty()) {
        shape.push_back(d.size);
        continue;
      }
      auto it = c.dims.find(d.sym);
      if (it == c.dims.end()) return Status(StatusCode::kInvalid, "no size for " + d.sym);
      shape.push_back(it->second);
    }
    auto b = std::make_unique<Buffer>(p.dtype, shape);
    if (IsInput(p)) {
      Fill(*b, c.inputs, c.seed, i, cli);
    } else {
      std::memset(b->at(0), 0xFF, b->size);
    }
    a.args.push_back(b->view());
    a.buffers.push_back(std::move(b));
  }
  return a;
}

double Element(const Buffer& b, int64_t i) {
  const char* p = b.at(i);
  switch (b.dtype) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::kF16: {
      ptox::test::Half h;
      std::memcpy(&h, p, 2);
      return static_cast<double>(h);
    }
    case DType::kBF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      const uint32_t u = uint32_t{h} << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case DType::kI8: return *reinterpret_cast<const int8_t*>(p);
    case DType::kI32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::kI64:
    case DType::kIndex: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case DType::kBool: return *reinterpret_cast<const uint8_t*>(p) != 0 ? 1.0 : 0.0;
  }
  return 0;
}

std::string Hex(const Buffer& b, int64_t i) {
  static const char* kDigits = "0123456789abcdef";
  std::string s = "0x";
  const int n = DTypeBytes(b.dtype);
  for (int k = n - 1; k >= 0; --k) {
    const uint8_t byte = static_cast<uint8_t>(b.at(i)[k]);
    s += kDigits[byte >> 4];
    s += kDigits[byte & 15];
  }
  return s;
}

std::string IndexText(const std::vector<int64_t>& shape, int64_t linear) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = linear % shape[d];
    linear /= shape[d];
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

// How element (x, y) fails ptox run --check's rule (kOk: it passes). A difference beyond the
// bound by at most kNearFactor is kNearBound: a reordered sum that feeds an ill-conditioned op
// (cancellation, rsqrt, log) legitimately exceeds ReorderBound's output bound by a little.
constexpr double kNearFactor = 16;
Category JudgeElement(double x, double y, double bound, double max_want) {
  if (std::isnan(x) != std::isnan(y)) return Category::kNanMismatch;
  if (bound == 0) return Category::kWrongBits;
  const double tol = bound * (std::fabs(y) + max_want);
  if (std::isnan(x) || std::fabs(x - y) <= tol) return Category::kOk;
  return std::fabs(x - y) <= kNearFactor * tol ? Category::kNearBound : Category::kWrongBound;
}

// Failures by severity: the worst one found names the output's outcome.
int Severity(Category c) { return c == Category::kNearBound ? 1 : c == Category::kOk ? 0 : 2; }

// ptox run --check's comparison (tools/ptox/run_data.cc Compare): bound 0 means every bit
// (signed zeros and NaN payloads included); otherwise |got - want| <= bound * (|want| +
// max |want|) over finite values, NaN where the reference has NaN.
Outcome CompareOutput(const std::string& name, const Buffer& got, const Buffer& want,
                      double bound) {
  double max_want = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double y = Element(want, i);
    if (std::isfinite(y)) max_want = std::max(max_want, std::fabs(y));
  }
  const int eb = DTypeBytes(got.dtype);
  int64_t bad = 0, worst = -1;
  Category cat = Category::kOk;
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (std::memcmp(got.at(i), want.at(i), eb) == 0) continue;
    const Category c = JudgeElement(Element(got, i), Element(want, i), bound, max_want);
    if (c == Category::kOk) continue;
    if (Severity(c) > Severity(cat)) {
      worst = i;
      cat = c;
    }
    ++bad;
  }
  if (worst < 0) return {};
  std::ostringstream os;
  os.precision(9);
  os << "%" << name << IndexText(want.shape, worst) << " = " << Element(got, worst) << " ("
     << Hex(got, worst) << ") vs interp " << Element(want, worst) << " (" << Hex(want, worst)
     << "); " << bad << " of " << got.numel() << " elements differ; bound " << bound
     << ", max |interp| " << max_want;
  return {cat, os.str()};
}

std::string First(const std::string& s) { return s.substr(0, s.find('\n')); }

// A target's status where the interpreter succeeded.
Outcome TargetFailed(const Status& s, const Config& config) {
  const std::string what = config.target + ": " + First(s.message());
  switch (s.code()) {
    case StatusCode::kInternal: return {Category::kInternal, what};
    case StatusCode::kToolchain: return {Category::kToolchain, what};
    case StatusCode::kUnsupported: return {Category::kUnsupported, what};
    case StatusCode::kInvalid: return {Category::kRejected, what};
    default: return {Category::kSpuriousError, what};
  }
}

}  // namespace

std::string_view CategoryName(Category c) {
  switch (c) {
    case Category::kOk: return "ok";
    case Category::kInvalidProgram: return "invalid-program";
    case Category::kCrash: return "crash";
    case Category::kHang: return "hang";
    case Category::kInternal: return "internal";
    case Category::kToolchain: return "toolchain";
    case Category::kUnsupported: return "unsupported";
    case Category::kRejected: return "rejected";
    case Category::kSpuriousError: return "spurious-error";
    case Category::kMissedError: return "missed-error";
    case Category::kWrongBits: return "wrong-bits";
    case Category::kWrongBound: return "wrong-bound";
    case Category::kNearBound: return "near-bound";
    case Category::kNanMismatch: return "nan-mismatch";
    case Category::kOutOfBounds: return "out-of-bounds";
    case Category::kInputModified: return "input-modified";
  }
  return "?";
}

bool KeyedByMessage(Category c) {
  return c == Category::kInternal || c == Category::kToolchain || c == Category::kUnsupported ||
         c == Category::kRejected || c == Category::kSpuriousError || c == Category::kCrash ||
         c == Category::kMissedError;
}

std::string_view InputsName(Inputs k) {
  return k == Inputs::kCli ? "cli" : k == Inputs::kEdge ? "edge" : "reduce";
}

bool ParseInputs(std::string_view text, Inputs& out) {
  for (Inputs k : {Inputs::kCli, Inputs::kEdge, Inputs::kReduce}) {
    if (InputsName(k) == text) {
      out = k;
      return true;
    }
  }
  return false;
}

namespace {

// Writes outside an argument, changed inputs: checked on both sides, whatever the statuses.
Outcome CheckMemory(const std::vector<ParamInfo>& params, const Args& pristine, const Args& side,
                    const std::string& who) {
  for (size_t i = 0; i < params.size(); ++i) {
    const Buffer* b = side.buffers[i].get();
    if (!b) continue;
    if (!b->GuardsIntact())
      return {Category::kOutOfBounds, who + " wrote outside %" + params[i].name};
    if (params[i].dir == ParamDirection::kIn && !b->SameData(*pristine.buffers[i]))
      return {Category::kInputModified, who + " modified input %" + params[i].name};
  }
  return {};
}

// Both runs are done: statuses first, then the outputs.
Outcome Judge(const Program& prog, const std::vector<ParamInfo>& params, const Args& ref,
              const Args& got, const Status& sr, const Status& sg, const Config& config) {
  if (!sr.ok()) {
    if (sg.ok())
      return {Category::kMissedError, config.target + " succeeded; interp: " + First(sr.message())};
    if (sg.code() == StatusCode::kRuntime) return {};
    return TargetFailed(sg, config);
  }
  if (!sg.ok()) return TargetFailed(sg, config);
  Result<double> bound = ReorderBound(prog, "", ref.args);
  if (!bound.ok())
    return {
        bound.status().code() == StatusCode::kInternal ? Category::kInternal : Category::kRejected,
        "ReorderBound: " + First(bound.status().message())};
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].is_tensor || params[i].dir == ParamDirection::kIn) continue;
    Outcome o = CompareOutput(params[i].name, *got.buffers[i], *ref.buffers[i], *bound);
    if (o.category != Category::kOk) {
      o.detail = config.target + (config.fuse ? "" : " (unfused)") + ": " + o.detail;
      return o;
    }
  }
  return {};
}

}  // namespace

Outcome CheckInProcess(const Case& c, const Config& config,
                       const std::function<void(std::string_view)>& stage) {
  auto begin = [&](std::string_view step) {
    if (stage) stage(step);
  };
  Result<Program> prog = Program::Parse(c.text, "fuzz.pto");
  if (!prog.ok()) {
    const bool internal = prog.status().code() == StatusCode::kInternal;
    return {internal ? Category::kInternal : Category::kInvalidProgram,
            "parse: " + First(prog.status().message())};
  }
  Result<std::vector<ParamInfo>> params = prog->Params();
  if (!params.ok()) return {Category::kInvalidProgram, params.status().message()};
  Result<Args> pristine = MakeArgs(c, *params), ref = MakeArgs(c, *params),
               got = MakeArgs(c, *params);
  if (!ref.ok()) return {Category::kInvalidProgram, ref.status().message()};
  begin("interp");
  const Status sr = Run(*prog, ref->args, {.target = "interp"});
  if (sr.code() == StatusCode::kInternal)
    return {Category::kInternal, "interp: " + First(sr.message())};
  if (!sr.ok() && sr.code() != StatusCode::kRuntime)
    return {Category::kInvalidProgram, "interp: " + First(sr.message())};
  begin("target");
  const Status sg = Run(*prog, got->args, {.target = config.target, .fuse = config.fuse});
  begin("compare");
  Outcome m = CheckMemory(*params, *pristine, *ref, "interp");
  if (m.category == Category::kOk) m = CheckMemory(*params, *pristine, *got, config.target);
  if (m.category != Category::kOk) return m;
  return Judge(*prog, *params, *ref, *got, sr, sg, config);
}

namespace {

std::string Tail(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > n ? s.substr(s.size() - n) : s;
}

// Reads the child's report until it closes the pipe or `deadline` passes; false on timeout.
bool ReadReport(int fd, std::chrono::steady_clock::time_point deadline, std::string& out) {
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return true;
    out.append(buf, static_cast<size_t>(n));
  }
}

void WriteAll(int fd, const std::string& msg) {
  size_t done = 0;
  while (done < msg.size()) {
    const ssize_t n = write(fd, msg.data() + done, msg.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// The child's report: "@step" lines as steps begin, then the category and the detail.
[[noreturn]] void RunChild(const Case& c, const Config& config, int fd,
                           const std::string& stderr_path) {
  setpgid(0, 0);  // the parent kills the whole group (compilers included) on a hang
  const int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (err >= 0) dup2(err, 2);
  const Outcome o = CheckInProcess(
      c, config, [&](std::string_view step) { WriteAll(fd, "@" + std::string(step) + "\n"); });
  WriteAll(fd, std::to_string(static_cast<int>(o.category)) + "\n" + o.detail);
  _exit(0);  // no destructors: worker pools belong to this child alone
}

// Splits the "@step" lines off a child's report; returns the last step begun.
std::string TakeSteps(std::string& report) {
  std::string step = "parse";
  while (report.starts_with("@")) {
    const size_t nl = report.find('\n');
    if (nl == std::string::npos) break;
    step = report.substr(1, nl - 1);
    report.erase(0, nl + 1);
  }
  return step;
}

// The child running now, so that a fuzzer interrupted by a signal takes it (and its compilers)
// along instead of leaving it running.
volatile pid_t g_child = 0;

void KillChildAndExit(int sig) {
  if (g_child > 0) kill(-g_child, SIGKILL);
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

Outcome Check(const Case& c, const Config& config, double timeout_s,
              const std::string& stderr_path) {
  static const bool handlers = [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, KillChildAndExit);
    return true;
  }();
  (void)handlers;
  int fds[2];
  if (pipe(fds) != 0) return {Category::kCrash, "fuzzer: pipe() failed"};
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    RunChild(c, config, fds[1], stderr_path);
  }
  g_child = pid;
  close(fds[1]);
  std::string report;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  const bool finished = pid > 0 && ReadReport(fds[0], deadline, report);
  close(fds[0]);
  if (pid > 0 && !finished) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
  }
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  g_child = 0;
  if (pid <= 0) return {Category::kCrash, "fuzzer: fork() failed"};
  const std::string step = TakeSteps(report);
  const std::string where = step == "interp"    ? " while the interpreter ran"
                            : step == "target"  ? " while the target ran"
                            : step == "compare" ? " in ReorderBound or the comparison"
                                                : " while parsing";
  if (!finished)
    return {Category::kHang, config.target + ": no result after " +
                                 std::to_string(static_cast<int>(timeout_s)) + " s" + where +
                                 "\nstderr: " + Tail(stderr_path, 400)};
  const size_t nl = report.find('\n');
  if (WIFSIGNALED(status) || nl == std::string::npos) {
    std::string why = WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status)) + " (" +
                                                strsignal(WTERMSIG(status)) + ")"
                                          : "exit " + std::to_string(WEXITSTATUS(status));
    return {Category::kCrash,
            config.target + ": " + why + where + "\nstderr: " + Tail(stderr_path, 600)};
  }
  return {static_cast<Category>(std::stoi(report.substr(0, nl))), report.substr(nl + 1)};
}

namespace {

std::string Descr(DType t) {
  switch (t) {
    case DType::kF32: return "<f4";
    case DType::kF16: return "<f2";
    case DType::kBF16: return "<u2";  // ptox reads bf16 as raw 16-bit patterns
    case DType::kI8: return "|i1";
    case DType::kI32: return "<i4";
    case DType::kI64:
    case DType::kIndex: return "<i8";
    case DType::kBool: return "|b1";
  }
  return "";
}

void WriteNpy(const std::string& path, const Buffer& b) {
  std::string shape = "(";
  for (size_t d = 0; d < b.shape.size(); ++d) shape += (d ? ", " : "") + std::to_string(b.shape[d]);
  shape += b.shape.size() == 1 ? ",)" : ")";
  std::string header =
      "{'descr': '" + Descr(b.dtype) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  out.put(static_cast<char>(len & 0xFF));
  out.put(static_cast<char>(len >> 8));
  out << header;
  out.write(b.at(0), static_cast<std::streamsize>(b.size));
}

}  // namespace

std::vector<std::string> WriteInputs(const Case& c, const std::vector<ParamInfo>& params,
                                     const std::string& dir) {
  std::vector<std::string> paths;
  Result<Args> a = MakeArgs(c, params);
  if (!a.ok()) return paths;
  std::filesystem::create_directories(dir);
  for (size_t i = 0; i < params.size(); ++i) {
    if (!IsInput(params[i])) continue;
    paths.push_back(dir + "/" + params[i].name + ".npy");
    WriteNpy(paths.back(), *a->buffers[i]);
  }
  return paths;
}

}  // namespace ptox::fuzz
