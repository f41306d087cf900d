// Every run-time error the interpreter raises, as a small program per error: the interpreter and
// each CPU target fail with a runtime error (status kRuntime) naming the op the user wrote at its
// source line, and leave the inputs untouched. (Errors that only the sizes of tensor-level ops
// raise are also checked fused and unfused in tests/e2e/lowering_checks_test.cc.)
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "harness.h"

namespace ptox::conformance {
namespace {

struct ErrorCase {
  std::string name;
  std::string text;                    // the program
  std::map<std::string, double> fill;  // tensor parameter -> the value of all its elements
  std::map<std::string, int64_t> dims;
  std::map<std::string, Arg> scalars;
  std::string op;  // the op the message names, at `line`
  int line;
  std::string phrase;  // in both the interpreter's and the target's message
};

std::vector<ErrorCase> Cases() {
  return {
      {"store_out_of_bounds", R"(func @f(%x: in tensor<8x16xf32>, %o: in index, %y: out tensor<{N}x16xf32>) {
  incore {
    %t = tile.load %x[0, 0] : tile<8x16xf32>
    tile.store %t, %y[%o, 0]
  }
})", {}, {{"N", 4}}, {{"o", int64_t{4}}}, "tile.store", 4, "out of bounds"},
      {"int_division_by_zero", R"(func @f(%x: in tensor<8x16xi32>, %z: in tensor<8x16xi32>, %y: out tensor<8x16xi32>) {
  incore {
    %a = tile.load %x[0, 0] : tile<8x16xi32>
    %b = tile.load %z[0, 0] : tile<8x16xi32>
    %q = tile.div %a, %b
    tile.store %q, %y[0, 0]
  }
})", {{"x", 7}, {"z", 0}}, {}, {}, "tile.div", 5, "division by zero"},
      {"int_min_over_minus_one", R"(func @f(%x: in tensor<8x16xi32>, %y: out tensor<8x16xi32>) {
  incore {
    %a = tile.load %x[0, 0] : tile<8x16xi32>
    %q = tile.div %a, -1
    tile.store %q, %y[0, 0]
  }
})", {{"x", -2147483648.0}}, {}, {}, "tile.div", 4, "overflow"},
      {"int_abs_min", R"(func @f(%x: in tensor<8x16xi8>, %y: out tensor<8x16xi8>) {
  incore {
    %a = tile.load %x[0, 0] : tile<8x16xi8>
    %q = tile.abs %a
    tile.store %q, %y[0, 0]
  }
})", {{"x", -128}}, {}, {}, "tile.abs", 4, "overflow"},
      {"int_row_sum_overflow", R"(func @f(%x: in tensor<8x16xi32>, %y: out tensor<8x1xi32>) {
  incore {
    %a = tile.load %x[0, 0] : tile<8x16xi32>
    %s = tile.row_sum %a
    tile.store %s, %y[0, 0]
  }
})", {{"x", 2147483647.0}}, {}, {}, "tile.row_sum", 4, "overflow"},
      {"col_max_of_an_empty_column", R"(func @f(%x: in tensor<{N}x16xf32>, %y: out tensor<1x16xf32>) {
  incore {
    %a = tile.load %x[0, 0] : tile<8x16xf32>
    %s = tile.slice %a[4, 0] : tile<4x16xf32>
    %m = tile.col_max %s
    tile.store %m, %y[0, 0]
  }
})", {{"x", 1}}, {{"N", 3}}, {}, "tile.col_max", 5, "empty"},
      {"argmax_of_an_empty_row", R"(func @f(%x: in tensor<8x{M}xf32>, %y: out tensor<8x1xi32>) {
  incore {
    %a = tile.load %x[0, 0] : tile<8x16xf32>
    %s = tile.slice %a[0, 8] : tile<8x8xf32>
    %m = tile.row_argmax %s
    tile.store %m, %y[0, 0]
  }
})", {{"x", 1}}, {{"M", 5}}, {}, "tile.row_argmax", 5, "empty"},
      {"reshape_of_a_partial_tile", R"(func @f(%x: in tensor<{N}x16xf32>, %y: out tensor<16x8xf32>) {
  incore {
    %a = tile.load %x[0, 0] : tile<8x16xf32>
    %r = tile.reshape %a : tile<16x8xf32>
    tile.store %r, %y[0, 0]
  }
})", {{"x", 1}}, {{"N", 5}}, {}, "tile.reshape", 4, "partial"},
      {"slice_at_a_dynamic_offset_out_of_bounds", R"(func @f(%x: in tensor<8x16xf32>, %o: in index, %y: out tensor<4x16xf32>) {
  incore {
    %a = tile.load %x[0, 0] : tile<8x16xf32>
    %s = tile.slice %a[%o, 0] : tile<4x16xf32>
    tile.store %s, %y[0, 0]
  }
})", {{"x", 1}}, {}, {{"o", int64_t{5}}}, "tile.slice", 4, "out of bounds"},
      {"assemble_at_a_dynamic_offset_out_of_bounds", R"(func @f(%x: in tensor<8x16xf32>, %o: in index, %y: out tensor<8x16xf32>) {
  incore {
    %a = tile.load %x[0, 0] : tile<8x16xf32>
    %s = tile.slice %a[0, 0] : tile<4x16xf32>
    %b = tile.assemble %a, %s[0, %o]
    tile.store %b, %y[0, 0]
  }
})", {{"x", 1}}, {}, {{"o", int64_t{-1}}}, "tile.assemble", 5, "out of bounds"},
      {"full_of_a_value_the_dtype_lacks", R"(func @f(%y: out tensor<8x16xi8>) {
  incore {
    %t = tile.full 1000 : tile<8x16xi8>
    tile.store %t, %y[0, 0]
  }
})", {}, {}, {}, "tile.full", 3, "1000"},
      {"scalar_operand_the_dtype_lacks", R"(func @f(%x: in tensor<8x16xi8>, %y: out tensor<8x16xi8>) {
  incore {
    %a = tile.load %x[0, 0] : tile<8x16xi8>
    %b = tile.add %a, 1000
    tile.store %b, %y[0, 0]
  }
})", {{"x", 1}}, {}, {}, "tile.add", 4, "1000"},
      {"compare_operand_the_dtype_lacks", R"(func @f(%x: in tensor<8x16xi8>, %y: out tensor<8x16xf32>) {
  incore {
    %a = tile.load %x[0, 0] : tile<8x16xi8>
    %c = tile.lt %a, 300
    %f = tile.full 1.0 : tile<8x16xf32>
    %s = tile.select %c, %f, 0.0
    tile.store %s, %y[0, 0]
  }
})", {{"x", 1}}, {}, {}, "tile.lt", 4, "300"},
      {"scalar_overflow", R"(func @f(%n: in index, %y: out tensor<1x16xf32>) {
  %m = arith.mul %n, %n
  incore {
    %t = tile.full 0.0 : tile<1x16xf32>
    tile.store %t, %y[0, %m]
  }
})", {}, {}, {{"n", int64_t{1} << 40}}, "arith.mul", 2, "overflow"},
      {"scalar_division_by_zero", R"(func @f(%n: in index, %y: out tensor<1x16xf32>) {
  %m = arith.rem 7, %n
  incore {
    %t = tile.full 0.0 : tile<1x16xf32>
    tile.store %t, %y[0, %m]
  }
})", {}, {}, {{"n", int64_t{0}}}, "arith.rem", 2, "division by zero"},
      {"scalar_cast_out_of_range", R"(func @f(%n: in index, %y: out tensor<1x16xi8>) {
  %m = arith.cast %n : i8
  incore {
    %t = tile.full %m : tile<1x16xi8>
    tile.store %t, %y[0, 0]
  }
})", {}, {}, {{"n", int64_t{300}}}, "arith.cast", 2, "300"},
      {"select_of_a_value_the_dtype_lacks", R"(func @f(%s: in i8, %c: in bool, %y: out tensor<1x16xi8>) {
  %r = arith.select %c, %s, 1000
  incore {
    %t = tile.full %r : tile<1x16xi8>
    tile.store %t, %y[0, 0]
  }
})", {}, {}, {{"s", int64_t{3}}, {"c", int64_t{0}}}, "arith.select", 2, "1000"},
      {"user_assert", R"(func @f(%n: in index, %y: out tensor<1x16xf32>) {
  %ok = arith.lt %n, 10
  arith.assert %ok, %n {op = "my.check", msg = "n = {} is not below 10"}
  incore {
    %t = tile.full 0.0 : tile<1x16xf32>
    tile.store %t, %y[0, 0]
  }
})", {}, {}, {{"n", int64_t{12}}}, "my.check", 3, "n = 12 is not below 10"},
      {"empty_of_a_negative_size", R"(func @f(%n: in index, %y: out tensor<1x16xf32>) {
  %e = tensor.empty %n : tensor<{M}x16xf32>
  incore {
    %t = tile.load %e[0, 0] : tile<1x16xf32>
    tile.store %t, %y[0, 0]
  }
})", {}, {}, {{"n", int64_t{-3}}}, "tensor.empty", 2, "negative"},
      {"empty_too_large", R"(func @f(%n: in index, %y: out tensor<1x16xf32>) {
  %e = tensor.empty %n, %n : tensor<{M}x{K}xf32>
  incore {
    %t = tile.load %e[0, 0] : tile<1x16xf32>
    tile.store %t, %y[0, 0]
  }
})", {}, {}, {{"n", int64_t{1} << 40}}, "tensor.empty", 2, ""},
      {"extract_outside_the_valid_region", R"(func @f(%x: in tensor<{N}x16xf32>, %r: in index, %y: out tensor<8x16xf32>) {
  incore {
    %a = tile.load %x[0, 0] : tile<8x16xf32>
    %e = tile.extract %a[%r, 0]
    %t = tile.full %e : tile<8x16xf32>
    tile.store %t, %y[0, 0]
  }
})", {{"x", 1}}, {{"N", 3}}, {{"r", int64_t{3}}}, "tile.extract", 4, "outside the valid region 3x16"},
      {"gather_of_an_id_past_the_table", R"(func @f(%t: in tensor<{V}x8xf32>, %ids: in tensor<5xi32>, %y: out tensor<5x8xf32>) {
  %g = tensor.gather %t, %ids
  tensor.store %g, %y
})", {{"t", 1}, {"ids", 4}}, {{"V", 4}}, {}, "tensor.gather", 2, "id 4 at ids[0] is out of range [0, 4)"},
      {"gather_of_a_negative_id", R"(func @f(%t: in tensor<4x8xbf16>, %ids: in tensor<2x3xi32>, %y: out tensor<2x3x8xbf16>) {
  %g = tensor.gather %t, %ids
  tensor.store %g, %y
})", {{"ids", -2}}, {}, {}, "tensor.gather", 2, "id -2 at ids[0, 0] is out of range [0, 4)"},
      {"store_at_an_offset_past_the_end", R"(func @f(%v: in tensor<{T}x8xf32>, %p: in index, %c: inout tensor<16x8xf32>) {
  tensor.store %v, %c[%p, 0]
})", {{"v", 1}}, {{"T", 3}}, {{"p", int64_t{14}}}, "tensor.store", 2, "out of bounds in dim 0"},
      {"argmax_over_an_empty_axis", R"(func @f(%x: in tensor<3x{N}xf32>, %y: out tensor<3xi32>) {
  %a = tensor.argmax %x
  tensor.store %a, %y
})", {}, {{"N", 0}}, {}, "tensor.argmax", 2, "argmax over the empty axis 1 of a tensor of shape 3x0"},
  };
}

// A tensor of `type` from the parameter list, filled with `value` (0 when unset).
struct Buffer {
  std::vector<uint8_t> bytes;
  Tensor view;
};

Buffer MakeBuffer(const ParamInfo& p, const std::map<std::string, int64_t>& dims, double value) {
  std::vector<int64_t> shape;
  int64_t n = 1;
  for (const auto& d : p.dims) {
    shape.push_back(d.sym.empty() ? d.size : dims.at(d.sym));
    n *= shape.back();
  }
  Buffer b;
  const int64_t width = DTypeBytes(p.dtype);
  b.bytes.assign(std::max<int64_t>(1, n * width), 0);
  for (int64_t k = 0; k < n; ++k) {
    char* at = reinterpret_cast<char*>(b.bytes.data()) + k * width;
    const float f = static_cast<float>(value);
    const int64_t i = static_cast<int64_t>(value);
    switch (p.dtype) {
      case DType::kF32: std::memcpy(at, &f, 4); break;
      case DType::kI8: *reinterpret_cast<int8_t*>(at) = static_cast<int8_t>(i); break;
      case DType::kI32: *reinterpret_cast<int32_t*>(at) = static_cast<int32_t>(i); break;
      case DType::kBF16: {  // the upper half of the f32: exact for the values used here
        uint32_t u;
        std::memcpy(&u, &f, 4);
        const uint16_t h = static_cast<uint16_t>(u >> 16);
        std::memcpy(at, &h, 2);
        break;
      }
      default: ADD_FAILURE() << "no fill for " << DTypeName(p.dtype);
    }
  }
  b.view = Tensor::Contiguous(b.bytes.data(), p.dtype, shape);
  return b;
}

class RuntimeErrors : public ::testing::TestWithParam<std::string> {};

// Runs `c` on `target`; returns the error message (after checking the status and the inputs).
std::string Fails(const ErrorCase& c, const std::string& target) {
  auto prog = Program::Parse(c.text, c.name + ".pto");
  EXPECT_TRUE(prog.ok()) << prog.status().message();
  if (!prog.ok()) return "";
  auto params = prog->Params();
  std::vector<Buffer> buffers;
  std::vector<Arg> args;
  buffers.reserve(params->size());
  for (const ParamInfo& p : *params) {
    if (!p.is_tensor) {
      args.push_back(c.scalars.at(p.name));
      continue;
    }
    auto fill = c.fill.find(p.name);
    buffers.push_back(MakeBuffer(p, c.dims, fill == c.fill.end() ? 0.0 : fill->second));
    args.push_back(buffers.back().view);
  }
  std::vector<std::vector<uint8_t>> before;
  for (const Buffer& b : buffers) before.push_back(b.bytes);
  Status s = Run(*prog, args, {.target = target});
  EXPECT_EQ(s.code(), StatusCode::kRuntime) << target << ": " << s.message();
  size_t k = 0;
  for (const ParamInfo& p : *params) {
    if (!p.is_tensor) continue;
    if (p.dir == ParamDirection::kIn) {
      EXPECT_EQ(buffers[k].bytes, before[k]) << "input %" << p.name;
    }
    ++k;
  }
  return s.message();
}

// The position is the user's file:line (and column) on every target, and a failed task is named
// by where its incore scope is in that file (the compiled code once named "line:col" of nothing,
// which a front end could not map to its own source).
TEST_P(RuntimeErrors, NameTheOpAtItsLineLikeTheInterpreter) {
  int in_tasks = 0;
  for (const ErrorCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    const std::string interp = Fails(c, "interp"), target = Fails(c, GetParam());
    const std::string file = c.name + ".pto", line = std::to_string(c.line);
    EXPECT_NE(interp.find(c.op + " (" + file + ":" + line + ")"), std::string::npos) << interp;
    EXPECT_NE(target.find(c.op + " at " + file + ":" + line + ":"), std::string::npos) << target;
    EXPECT_NE(interp.find(c.phrase), std::string::npos) << interp;
    EXPECT_NE(target.find(c.phrase), std::string::npos) << target;
    if (target.find(") failed: ") == std::string::npos) continue;  // failed in the orchestration
    ++in_tasks;
    EXPECT_TRUE(
        std::regex_search(target, std::regex("task [0-9]+ \\(f\\.incore[0-9]+ \\(" + c.name +
                                             "\\.pto:[0-9]+:[0-9]+\\)\\) failed: ")))
        << target;
  }
  EXPECT_GE(in_tasks, 10) << "most cases fail inside a task";
}

// Both immediates of an arith compare are compared as f32 when either is a float (the compiled
// code compared 2.5 > 2 as index 2 > 2).
TEST_P(RuntimeErrors, ImmediateComparesAgreeWithTheInterpreter) {
  auto prog = Program::Parse(R"(func @f(%y: out tensor<1x16xf32>) {
  %c = arith.gt 2.5, 2
  %v = arith.select %c, 1.0, 0.0
  incore {
    %t = tile.full %v : tile<1x16xf32>
    tile.store %t, %y[0, 0]
  }
})");
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  for (const std::string& target : {std::string("interp"), GetParam()}) {
    std::vector<float> y(16, -1.0f);
    Status s = ptox::Run(*prog, {Tensor::Contiguous(y.data(), DType::kF32, {1, 16})},
                         {.target = target});
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(y, std::vector<float>(16, 1.0f)) << target;
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, RuntimeErrors, ::testing::ValuesIn(CpuTargets()),
                         [](const auto& info) { return Sanitize(info.param); });

}  // namespace
}  // namespace ptox::conformance
