// Shared e2e comparison helpers (see compare.h).
#include "compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <regex>

namespace ptox::testing {

Buffers MakeArgs(const Program& prog, const Dims& dims, uint32_t seed, const Scalars& scalars) {
  auto params = prog.Params();
  EXPECT_TRUE(params.ok()) << params.status().message();
  std::mt19937 rng(seed);
  Buffers b;
  if (!params.ok()) return b;
  for (const ParamInfo& p : *params) {
    b.is_out.push_back(p.dir != ParamDirection::kIn);
    if (!p.is_tensor) {
      auto it = scalars.find(p.name);
      EXPECT_TRUE(it != scalars.end()) << "no value for scalar %" << p.name;
      b.tensors.push_back(nullptr);
      b.args.push_back(it != scalars.end() ? it->second : Arg{int64_t{0}});
      continue;
    }
    std::vector<int64_t> shape;
    for (const auto& d : p.dims) shape.push_back(d.sym.empty() ? d.size : dims.at(d.sym));
    b.tensors.push_back(std::make_unique<HostTensor>(p.dtype, shape));
    if (p.dir != ParamDirection::kOut) b.tensors.back()->FillUniform(rng, -2.0f, 2.0f);
    b.args.push_back(b.tensors.back()->view());
  }
  return b;
}

Program Parse(const std::string& text) {
  auto prog = Program::Parse(text, "case.pto");
  EXPECT_TRUE(prog.ok()) << prog.status().message();
  return *prog;
}

Buffers RunOn(const Program& prog, const Dims& dims, const RunOptions& opts,
              const Scalars& scalars) {
  Buffers b = MakeArgs(prog, dims, 42, scalars);
  Status s = Run(prog, b.args, opts);
  EXPECT_TRUE(s.ok()) << opts.target << (opts.fuse ? "" : " (unfused)") << ": " << s.message();
  return b;
}

void ExpectClose(const Buffers& got, const Buffers& want, double bound, const std::string& what) {
  for (size_t i = 0; i < want.tensors.size(); ++i) {
    if (!want.is_out[i] || !want.tensors[i]) continue;
    const HostTensor &g = *got.tensors[i], &w = *want.tensors[i];
    double max_abs = 0;
    for (int64_t k = 0; k < w.numel(); ++k)  // finite values: an Inf must match exactly
      if (std::isfinite(w.Get(k))) max_abs = std::max(max_abs, std::fabs(double(w.Get(k))));
    int bad = 0;
    for (int64_t k = 0; k < w.numel() && bad < 5; ++k) {
      const double a = g.Get(k), b = w.Get(k);
      if (bound == 0) {  // exact ops: the same bits (signed zeros, NaN payloads)
        const float fa = g.Get(k), fb = w.Get(k);
        const bool same = std::memcmp(&fa, &fb, sizeof fa) == 0;
        if (!same) ++bad;
        EXPECT_TRUE(same) << what << " output " << i << "[" << k << "] = " << a << ", interp " << b;
        continue;
      }
      const bool ok = std::isnan(b) ? std::isnan(a)
                                    : a == b || std::fabs(a - b) <= bound * (std::fabs(b) + max_abs);
      if (!ok) ++bad;
      EXPECT_TRUE(ok) << what << " output " << i << "[" << k << "] = " << a << ", interp " << b
                      << " (bound " << bound << ")";
    }
  }
}

void CheckAllTargets(const Program& prog, const Dims& dims, const std::string& what,
                     const Scalars& scalars) {
  Buffers ref = RunOn(prog, dims, {.target = "interp"}, scalars);
  Buffers in = MakeArgs(prog, dims, 42, scalars);
  Result<double> bound = ReorderBound(prog, {}, in.args);
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  for (const std::string& t : AvailableTargets()) {
    if (t == "interp") continue;
    for (bool fuse : {true, false}) {
      Buffers got = RunOn(prog, dims, {.target = t, .fuse = fuse}, scalars);
      ExpectClose(got, ref, *bound, what + " on " + t + (fuse ? "" : " unfused"));
      for (size_t i = 0; i < in.tensors.size(); ++i) {
        if (!in.is_out[i] && in.tensors[i]) {
          EXPECT_EQ(got.tensors[i]->Hash(), in.tensors[i]->Hash()) << "input " << i << " modified";
        }
      }
    }
  }
}

void ExpectRuntimeErrorEverywhere(const Program& prog, const Dims& dims,
                                  const std::vector<std::string>& needles,
                                  const Scalars& scalars) {
  std::string position;  // the interpreter's "<op> (file:line): ...": lowering keeps it
  std::vector<std::pair<std::string, std::string>> compiled;  // (target, message)
  for (const std::string& t : AvailableTargets()) {
    for (bool fuse : {true, false}) {
      if (t == "interp" && !fuse) continue;
      Buffers b = MakeArgs(prog, dims, 42, scalars);
      Status s = Run(prog, b.args, {.target = t, .fuse = fuse});
      const std::string what = t + (fuse ? "" : " unfused");
      EXPECT_EQ(s.code(), StatusCode::kRuntime) << what << ": " << s.message();
      for (const std::string& n : needles)
        EXPECT_NE(s.message().find(n), std::string::npos)
            << what << ": '" << n << "' not in: " << s.message();
      if (t != "interp") {
        compiled.emplace_back(what, s.message());
        continue;
      }
      static const std::regex kPosition(R"(\(([^()\s]+:[0-9]+)\): )");
      std::smatch m;
      EXPECT_TRUE(std::regex_search(s.message(), m, kPosition)) << s.message();
      if (!m.empty()) position = m[1].str();
    }
  }
  ASSERT_FALSE(position.empty());
  for (const auto& [what, message] : compiled)
    EXPECT_NE(message.find(" at " + position + ":"), std::string::npos)
        << what << ": not at " << position << " as the interpreter: " << message;
}

}  // namespace ptox::testing
