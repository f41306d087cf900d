// Test helpers for the interpreter: typed byte buffers viewed as tensors, a one-incore program
// runner over builder-made bodies, a runner of functions in text, and runtime-error expectations.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "interp/eval.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/verifier.h"
#include "kernels/scalar.h"

namespace ptox::interp::testing {

using ir::Builder;
using ir::Dim;
using ir::Direction;
using ir::OpCode;
using ir::Operand;
using ir::Type;
using ir::Value;

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

inline uint32_t Bits(float x) { return scalar::FloatBits(x); }
inline float FromBits(uint32_t u) { return scalar::BitsFloat(u); }

// Owned tensor memory of any dtype. `pad_front` bytes before the data let tests use unaligned
// views.
struct Buf {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // empty: contiguous
  std::vector<unsigned char> bytes;
  size_t pad_front = 0;

  template <typename T>
  static Buf Of(DType d, std::vector<int64_t> shape, const std::vector<T>& values,
                size_t pad_front = 0) {
    Buf b;
    b.dtype = d;
    b.shape = std::move(shape);
    b.pad_front = pad_front;
    b.bytes.assign(pad_front + values.size() * sizeof(T), 0xAB);
    if (!values.empty())
      std::memcpy(b.bytes.data() + pad_front, values.data(), values.size() * sizeof(T));
    return b;
  }
  static Buf F32(std::vector<int64_t> shape, const std::vector<float>& v) {
    return Of(DType::kF32, std::move(shape), v);
  }
  // A tensor of `n` elements all equal to `fill`.
  template <typename T>
  static Buf Filled(DType d, std::vector<int64_t> shape, T fill) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return Of(d, std::move(shape), std::vector<T>(n, fill));
  }
  template <typename T>
  T At(int64_t k) const {
    T v;
    std::memcpy(&v, bytes.data() + pad_front + k * sizeof(T), sizeof(T));
    return v;
  }
  float F(int64_t k) const { return At<float>(k); }
  Tensor View() {
    Tensor t = Tensor::Contiguous(bytes.data() + pad_front, dtype, shape);
    t.strides = strides;
    return t;
  }
  Type IrType() const {
    std::vector<Dim> dims;
    for (int64_t s : shape) dims.push_back(Dim::Static(s));
    return Type::Tensor(dims, dtype);
  }
};

inline std::vector<Operand> Zeros(int n) { return std::vector<Operand>(n, Operand::Int(0)); }

// Builds and runs @t(%in0.., %out): loads every input whole as a tile of its own shape (rank-1:
// 1xN), calls `body` on the tiles, stores the returned tile to %out at [0, ...]. `out` holds
// the output tensor (its initial contents show what the store left untouched).
using Body = std::function<Value(Builder&, const std::vector<Value>& tiles)>;
// With `env`, every computed value stays there for inspection.
inline void RunTiles(std::vector<Buf>& inputs, Buf& out, const Body& body, Env* env = nullptr) {
  Builder b("t");
  std::vector<Value> params;
  for (size_t k = 0; k < inputs.size(); ++k)
    params.push_back(b.Param("in" + std::to_string(k), Direction::kIn, inputs[k].IrType()));
  Value outp = b.Param("out", Direction::kOut, out.IrType());
  b.Incore([&] {
    std::vector<Value> tiles;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const auto& s = inputs[k].shape;
      int64_t rows = s.size() >= 2 ? s[s.size() - 2] : 1;
      tiles.push_back(b.Load(params[k], Zeros(static_cast<int>(s.size())),
                             Type::Tile(rows, s.back(), inputs[k].dtype)));
    }
    Value r = body(b, tiles);
    b.Store(r, outp, Zeros(out.IrType().rank()));
  });
  ir::Func f = b.Finish();
  ir::Verify(f);
  std::vector<Arg> args;
  for (Buf& in : inputs) args.push_back(in.View());
  args.push_back(out.View());
  Env local;
  RunInEnv(f, args, env ? *env : local);
}

// Parses and verifies "func @t(<params>) {<body>}" and runs it over `args`.
inline void RunFunc(const std::string& params, const std::string& body,
                    const std::vector<Arg>& args) {
  ir::Module m = ir::Parse("func @t(" + params + ") {\n" + body + "}\n", "t.pto");
  ir::Verify(m);
  interp::Run(*m.funcs[0], args);
}

// The f32 / int elements of a tile value, row-major.
inline const Tile& TileOf(const Env& env, const Value& v) { return env.GetTile(Operand(v)); }

// Runs `fn` and expects a runtime error whose message contains `needle`.
inline void ExpectRuntimeError(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected a runtime error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kRuntime) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace ptox::interp::testing
