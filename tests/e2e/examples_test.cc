// Every example on every available target, compared with an independent reference: a plain C++
// loop nest written here (double-precision math, or f32 in the same op order where the result
// must be bit-exact), never the interpreter checking itself.
#include <gtest/gtest.h>

#include <cfloat>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "host_tensor.h"
#include "ptox/ptox.h"

namespace ptox::testing {
namespace {

using Tensors = std::map<std::string, HostTensor*>;
// Expected value and allowed absolute error per element of each output.
struct Expected {
  std::vector<double> value, tol;
};
using Reference = std::function<std::map<std::string, Expected>(Tensors&)>;

struct Case {
  std::string file;
  std::map<std::string, int64_t> dims;  // symbolic dim sizes
  Reference reference;                  // computes each output from the inputs
};

Expected Exact(std::vector<double> v) {
  Expected e{std::move(v), {}};
  e.tol.assign(e.value.size(), 0.0);
  return e;
}
// Relative error bound with an absolute floor, for math computed in f32 vs a double reference.
Expected Close(std::vector<double> v, double rel, double abs_floor) {
  Expected e{std::move(v), {}};
  for (double x : e.value) e.tol.push_back(std::max(std::fabs(x) * rel, abs_floor));
  return e;
}

// y = max(a * b + c, 0) - 0.5 * a, op by op, rounding each result to the dtype.
Expected Chain(Tensors& t, DType dt) {
  std::vector<double> y;
  HostTensor &a = *t["a"], &b = *t["b"], &c = *t["c"];
  for (int64_t i = 0; i < a.numel(); ++i) {
    float ab = RoundTo(dt, a.Get(i) * b.Get(i));
    float abc = RoundTo(dt, ab + c.Get(i));
    float r = abc > 0.0f ? abc : 0.0f;
    float h = RoundTo(dt, a.Get(i) * 0.5f);
    y.push_back(RoundTo(dt, r - h));
  }
  return Exact(y);
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double Gelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

std::vector<double> Map(HostTensor& x, double (*f)(double)) {
  std::vector<double> v;
  for (int64_t i = 0; i < x.numel(); ++i) v.push_back(f(x.Get(i)));
  return v;
}

std::vector<double> Softmax(HostTensor& x, int64_t rows, int64_t cols) {
  std::vector<double> y(rows * cols);
  for (int64_t i = 0; i < rows; ++i) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < cols; ++j) m = std::max(m, double(x.Get(i * cols + j)));
    for (int64_t j = 0; j < cols; ++j) s += std::exp(x.Get(i * cols + j) - m);
    for (int64_t j = 0; j < cols; ++j) y[i * cols + j] = std::exp(x.Get(i * cols + j) - m) / s;
  }
  return y;
}

std::vector<double> RmsNorm(HostTensor& x, HostTensor& w, int64_t rows, int64_t cols) {
  std::vector<double> y(rows * cols);
  for (int64_t i = 0; i < rows; ++i) {
    double ss = 0;
    for (int64_t j = 0; j < cols; ++j) ss += double(x.Get(i * cols + j)) * x.Get(i * cols + j);
    double r = 1.0 / std::sqrt(ss / cols + 1e-6);
    for (int64_t j = 0; j < cols; ++j) y[i * cols + j] = x.Get(i * cols + j) * r * w.Get(j);
  }
  return y;
}

// C = A * B in double, with the f32 accumulation bound K * eps * sum |a||b| (plus slack).
Expected Matmul(HostTensor& a, HostTensor& b, int64_t m, int64_t k, int64_t n) {
  Expected e;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0, sabs = 0;
      for (int64_t p = 0; p < k; ++p) {
        double prod = double(a.Get(i * k + p)) * b.Get(p * n + j);
        s += prod;
        sabs += std::fabs(prod);
      }
      e.value.push_back(s);
      e.tol.push_back(2.0 * (k + 1) * FLT_EPSILON * sabs + 1e-30);
    }
  return e;
}

std::vector<Case> Cases() {
  return {
      {"hello.pto", {}, [](Tensors& t) {
         std::vector<double> c;
         for (int64_t i = 0; i < t["a"]->numel(); ++i) c.push_back(t["a"]->Get(i) + t["b"]->Get(i));
         return std::map<std::string, Expected>{{"c", Exact(c)}};
       }},
      {"hello_dyn.pto", {{"N", 300}}, [](Tensors& t) {
         std::vector<double> c;
         for (int64_t i = 0; i < t["a"]->numel(); ++i) c.push_back(t["a"]->Get(i) + t["b"]->Get(i));
         return std::map<std::string, Expected>{{"c", Exact(c)}};
       }},
      {"elementwise_chain.pto", {}, [](Tensors& t) {
         return std::map<std::string, Expected>{{"y", Chain(t, DType::kF32)}};
       }},
      {"elementwise_chain_dyn.pto", {{"N", 100}, {"M", 300}}, [](Tensors& t) {
         return std::map<std::string, Expected>{{"y", Chain(t, DType::kBF16)}};
       }},
      {"activations.pto", {}, [](Tensors& t) {
         HostTensor& x = *t["x"];
         auto exp = [](double v) { return std::exp(v); };
         auto tanh = [](double v) { return std::tanh(v); };
         auto silu = [](double v) { return v * Sigmoid(v); };
         auto relu = [](double v) { return v > 0 ? v : 0.0; };
         return std::map<std::string, Expected>{
             {"exp", Close(Map(x, +exp), 4e-7, 1e-30)},
             {"tanh", Close(Map(x, +tanh), 1e-6, 1e-7)},
             {"sigmoid", Close(Map(x, Sigmoid), 1e-6, 1e-7)},
             {"silu", Close(Map(x, +silu), 1e-6, 1e-7)},
             {"gelu", Close(Map(x, Gelu), 1e-6, 1e-7)},
             {"relu", Exact(Map(x, +relu))}};
       }},
      {"activations_dyn.pto", {{"N", 37}}, [](Tensors& t) {
         HostTensor& x = *t["x"];
         auto silu = [](double v) { return v * Sigmoid(v); };
         // f16 results: one rounding of an f32 value within a few f32 ulps -> 1 f16 ulp (2^-10).
         return std::map<std::string, Expected>{{"silu", Close(Map(x, +silu), 1.0 / 1024, 6e-8)},
                                                {"gelu", Close(Map(x, Gelu), 1.0 / 1024, 6e-8)}};
       }},
      {"matmul.pto", {}, [](Tensors& t) {
         return std::map<std::string, Expected>{{"c", Matmul(*t["a"], *t["b"], 64, 64, 64)}};
       }},
      {"matmul_dyn.pto", {{"M", 70}, {"K", 100}, {"N", 90}}, [](Tensors& t) {
         return std::map<std::string, Expected>{{"c", Matmul(*t["a"], *t["b"], 70, 100, 90)}};
       }},
      {"softmax.pto", {}, [](Tensors& t) {
         return std::map<std::string, Expected>{{"y", Close(Softmax(*t["x"], 64, 256), 1e-5, 1e-9)}};
       }},
      {"softmax_dyn.pto", {{"N", 50}}, [](Tensors& t) {
         return std::map<std::string, Expected>{{"y", Close(Softmax(*t["x"], 50, 200), 1e-5, 1e-9)}};
       }},
      {"rmsnorm.pto", {}, [](Tensors& t) {
         return std::map<std::string, Expected>{
             {"y", Close(RmsNorm(*t["x"], *t["w"], 32, 512), 2e-5, 1e-7)}};
       }},
      {"rmsnorm_dyn.pto", {{"N", 20}, {"H", 300}}, [](Tensors& t) {
         return std::map<std::string, Expected>{
             {"y", Close(RmsNorm(*t["x"], *t["w"], 20, 300), 2e-5, 1e-7)}};
       }},
  };
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.file; }

class ExampleTest : public ::testing::TestWithParam<std::tuple<Case, std::string>> {};

TEST_P(ExampleTest, MatchesIndependentReference) {
  const auto& [c, target] = GetParam();
  auto prog = Program::FromFile(std::string(PTOX_EXAMPLES_DIR) + "/" + c.file);
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  auto params = prog->Params();
  ASSERT_TRUE(params.ok()) << params.status().message();

  std::mt19937 rng(1234);
  std::vector<std::unique_ptr<HostTensor>> storage;
  Tensors tensors;
  std::vector<Arg> args;
  std::map<std::string, uint64_t> input_hashes;
  for (const ParamInfo& p : *params) {
    ASSERT_TRUE(p.is_tensor) << "examples take tensors only";
    std::vector<int64_t> shape;
    for (const auto& d : p.dims) shape.push_back(d.sym.empty() ? d.size : c.dims.at(d.sym));
    storage.push_back(std::make_unique<HostTensor>(p.dtype, shape));
    HostTensor* h = storage.back().get();
    if (p.dir != ParamDirection::kOut) {
      h->FillUniform(rng, -4.0f, 4.0f);
      input_hashes[p.name] = h->Hash();
    }
    tensors[p.name] = h;
    args.push_back(h->view());
  }
  Status s = ptox::Run(*prog, args, {.target = target});
  ASSERT_TRUE(s.ok()) << s.message();

  for (const auto& [name, hash] : input_hashes)
    EXPECT_EQ(tensors[name]->Hash(), hash) << "input %" << name << " was modified";
  auto expected = c.reference(tensors);
  for (const auto& [name, exp] : expected) {
    HostTensor& out = *tensors.at(name);
    ASSERT_EQ(out.numel(), static_cast<int64_t>(exp.value.size())) << name;
    int bad = 0;
    for (int64_t i = 0; i < out.numel() && bad < 5; ++i) {
      double got = out.Get(i);
      bool ok = std::fabs(got - exp.value[i]) <= exp.tol[i];
      if (!ok) ++bad;
      EXPECT_TRUE(ok) << c.file << " %" << name << "[" << i << "] = " << got << ", expected "
                      << exp.value[i] << " +- " << exp.tol[i];
    }
  }
}

std::vector<std::tuple<Case, std::string>> AllCases() {
  std::vector<std::tuple<Case, std::string>> all;
  for (const Case& c : Cases())
    for (const std::string& t : AvailableTargets()) all.emplace_back(c, t);
  return all;
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleTest, ::testing::ValuesIn(AllCases()),
                         [](const auto& info) {
                           std::string n = std::get<0>(info.param).file + "_" +
                                           std::get<1>(info.param);
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// Every example file has a reference above (a new example without one fails here).
TEST(Examples, EveryExampleHasAReference) {
  std::set<std::string> covered;
  for (const Case& c : Cases()) covered.insert(c.file);
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(PTOX_EXAMPLES_DIR)) {
    if (e.path().extension() != ".pto") continue;
    ++n;
    EXPECT_TRUE(covered.count(e.path().filename().string())) << e.path() << " has no reference";
  }
  EXPECT_GE(n, 12);
}

}  // namespace
}  // namespace ptox::testing
