// Control flow (for / if / iter args / zero-trip loops / step errors) and scalar arith ops.
#include "tests/unit/interp/helpers.h"

namespace ptox::interp::testing {
namespace {

// Runs a function whose last param is an out 1x1 i64 tensor `r` written from the scalar that
// `body` returns (cast to i64 and stored through a tile).
int64_t RunScalar(const std::function<Value(Builder&, const std::vector<Value>& params)>& body,
                  std::vector<Type> param_types = {}, std::vector<Arg> args = {}) {
  Builder b("t");
  std::vector<Value> params;
  for (size_t k = 0; k < param_types.size(); ++k)
    params.push_back(b.Param("p" + std::to_string(k), Direction::kIn, param_types[k]));
  Value out =
      b.Param("r", Direction::kOut, Type::Tensor({Dim::Static(1), Dim::Static(1)}, DType::kI64));
  Value v = body(b, params);
  Value w = b.Op(OpCode::kArithCast, {v}, {}, Type::Scalar(DType::kI64));
  b.Incore([&] {
    b.Store(b.Op(OpCode::kTileFull, {w}, {}, Type::Tile(1, 1, DType::kI64)), out, Zeros(2));
  });
  ir::Func f = b.Finish();
  ir::Verify(f);
  Buf r = Buf::Of<int64_t>(DType::kI64, {1, 1}, {-12345});
  args.push_back(r.View());
  interp::Run(f, args);
  return r.At<int64_t>(0);
}

TEST(For, IterArgsCarryAndZeroTripReturnsInits) {
  // sum of i for i = 3, 5, 7, 9 (3 to 10 step 2) = 24.
  EXPECT_EQ(RunScalar([](Builder& b, const std::vector<Value>&) {
              return b.For(Operand::Int(3), Operand::Int(10), Operand::Int(2), {Operand::Int(0)},
                           [&](Value i, const std::vector<Value>& acc) {
                             return std::vector<Operand>{b.Op(OpCode::kArithAdd, {acc[0], i})};
                           })[0];
            }),
            24);
  EXPECT_EQ(RunScalar([](Builder& b, const std::vector<Value>&) {
              return b.For(
                  Operand::Int(5), Operand::Int(5), Operand::Int(1), {Operand::Int(42)},
                  [&](Value i, const std::vector<Value>&) { return std::vector<Operand>{i}; })[0];
            }),
            42);
}

TEST(For, ParallelAndUnrollRunSequentially) {
  for (ir::LoopKind k : {ir::LoopKind::kParallel, ir::LoopKind::kUnroll}) {
    EXPECT_EQ(RunScalar([&](Builder& b, const std::vector<Value>&) {
                return b.For(
                    Operand::Int(0), Operand::Int(4), Operand::Int(1), {Operand::Int(1)},
                    [&](Value i, const std::vector<Value>& acc) {
                      Value t = b.Op(OpCode::kArithMul, {acc[0], Operand::Int(10)});
                      return std::vector<Operand>{b.Op(OpCode::kArithAdd, {t, i})};
                    },
                    k)[0];
              }),
              10123);
  }
}

TEST(For, NonPositiveRuntimeStepIsAnError) {
  auto body = [](Builder& b, const std::vector<Value>& p) {
    return b.For(Operand::Int(0), Operand::Int(4), p[0], {Operand::Int(0)},
                 [&](Value i, const std::vector<Value>&) { return std::vector<Operand>{i}; })[0];
  };
  std::vector<Type> types{Type::Scalar(DType::kIndex)};
  ExpectRuntimeError([&] { RunScalar(body, types, {int64_t{0}}); },
                     "for: step must be positive, got 0");
  ExpectRuntimeError([&] { RunScalar(body, types, {int64_t{-1}}); }, "got -1");
  EXPECT_EQ(RunScalar(body, types, {int64_t{3}}), 3);
}

TEST(If, RunsOneArm) {
  auto body = [](Builder& b, const std::vector<Value>& p) {
    Value c = b.Op(OpCode::kArithLt, {p[0], Operand::Int(5)});
    return b.If(
        c,
        [&] {
          return std::vector<Operand>{b.Op(OpCode::kArithMul, {p[0], Operand::Int(2)})};
        },
        [&] {
          return std::vector<Operand>{b.Op(OpCode::kArithDiv, {p[0], Operand::Int(0)})};
        })[0];
  };
  std::vector<Type> types{Type::Scalar(DType::kIndex)};
  EXPECT_EQ(RunScalar(body, types, {int64_t{3}}), 6);
  ExpectRuntimeError([&] { RunScalar(body, types, {int64_t{7}}); },
                     "arith.div: integer division by zero in index: 7 div 0");
}

TEST(Arith, FloorDivisionRemainderAndMinMax) {
  std::vector<Type> t2{Type::Scalar(DType::kI32), Type::Scalar(DType::kI32)};
  auto op = [&](OpCode c, int64_t a, int64_t b) {
    return RunScalar(
        [&](Builder& bl, const std::vector<Value>& p) {
          return bl.Op(c, {p[0], p[1]});
        },
        t2, {a, b});
  };
  EXPECT_EQ(op(OpCode::kArithDiv, -7, 2), -4);
  EXPECT_EQ(op(OpCode::kArithRem, -7, 2), 1);
  EXPECT_EQ(op(OpCode::kArithRem, 7, -2), -1);
  EXPECT_EQ(op(OpCode::kArithMax, -7, 2), 2);
  EXPECT_EQ(op(OpCode::kArithMin, -7, 2), -7);
  EXPECT_EQ(op(OpCode::kArithSub, -7, 2), -9);
  ExpectRuntimeError([&] { op(OpCode::kArithAdd, INT32_MAX, 1); },
                     "arith.add: integer overflow in i32: 2147483647 add 1");
  ExpectRuntimeError([&] { op(OpCode::kArithMul, INT32_MIN, -1); }, "integer overflow in i32");
  ExpectRuntimeError([&] { op(OpCode::kArithRem, 5, 0); }, "integer division by zero");
}

TEST(Arith, IndexOverflowIsDetected) {
  std::vector<Type> t{Type::Scalar(DType::kIndex)};
  ExpectRuntimeError(
      [&] {
        RunScalar(
            [](Builder& b, const std::vector<Value>& p) {
              return b.Op(OpCode::kArithMul, {p[0], Operand::Int(4)});
            },
            t, {int64_t{INT64_MAX / 2}});
      },
      "integer overflow in index");
}

TEST(Arith, FloatOpsCastsAndSelect) {
  std::vector<Type> tf{Type::Scalar(DType::kF32)};
  // f32 param 2.5: 2.5 * 3 -> 7.5 -> cast to i64 truncates to 7.
  EXPECT_EQ(RunScalar(
                [](Builder& b, const std::vector<Value>& p) {
                  return b.Op(OpCode::kArithMul, {p[0], Operand::Int(3)});
                },
                tf, {2.5}),
            7);
  // -inf saturates; NaN (0/0) casts to 0.
  EXPECT_EQ(RunScalar(
                [](Builder& b, const std::vector<Value>& p) {
                  return b.Op(OpCode::kArithDiv, {p[0], Operand::Float(0.0)});
                },
                tf, {-1.0}),
            INT64_MIN);
  EXPECT_EQ(RunScalar(
                [](Builder& b, const std::vector<Value>& p) {
                  return b.Op(OpCode::kArithDiv, {p[0], Operand::Float(0.0)});
                },
                tf, {0.0}),
            0);
  // select(2.5 > 1.0, 11, 22) with index immediates.
  EXPECT_EQ(RunScalar(
                [](Builder& b, const std::vector<Value>& p) {
                  Value c = b.Op(OpCode::kArithGt, {p[0], Operand::Float(1.0)});
                  return b.Op(OpCode::kArithSelect, {c, Operand::Int(11), Operand::Int(22)});
                },
                tf, {2.5}),
            11);
  // NaN compares false except ne.
  EXPECT_EQ(
      RunScalar(
          [](Builder& b, const std::vector<Value>& p) {
            Value nan = b.Op(OpCode::kArithDiv, {p[0], p[0]});
            Value ne = b.Op(OpCode::kArithNe, {nan, nan});
            Value eq = b.Op(OpCode::kArithEq, {nan, nan});
            Value a = b.Op(OpCode::kArithCast, {ne}, {}, Type::Scalar(DType::kIndex));
            Value c = b.Op(OpCode::kArithCast, {eq}, {}, Type::Scalar(DType::kIndex));
            return b.Op(OpCode::kArithAdd, {b.Op(OpCode::kArithMul, {a, Operand::Int(10)}), c});
          },
          tf, {0.0}),
      10);
}

TEST(Arith, NarrowingCastIsRangeChecked) {
  std::vector<Type> t{Type::Scalar(DType::kIndex)};
  auto body = [](Builder& b, const std::vector<Value>& p) {
    return b.Op(OpCode::kArithCast, {p[0]}, {}, Type::Scalar(DType::kI8));
  };
  EXPECT_EQ(RunScalar(body, t, {int64_t{-128}}), -128);
  ExpectRuntimeError([&] { RunScalar(body, t, {int64_t{128}}); },
                     "arith.cast: value index 128 does not fit in i8");
}

TEST(TensorDim, ReturnsTheBoundSize) {
  std::vector<Type> t{Type::Tensor({Dim::Symbol("M"), Dim::Static(2)}, DType::kF32)};
  std::vector<float> data(14);
  EXPECT_EQ(RunScalar(
                [](Builder& b, const std::vector<Value>& p) {
                  return b.Op(OpCode::kTensorDim, {p[0], Operand::Int(0)});
                },
                t, {Tensor::Contiguous(data.data(), DType::kF32, {7, 2})}),
            7);
}

TEST(Run, BadArgumentsAreInvalidNotRuntime) {
  Builder b("t");
  b.Param("x", Direction::kIn, Type::Tensor({Dim::Static(2)}, DType::kF32));
  ir::Func f = b.Finish();
  std::vector<float> d(3);
  try {
    interp::Run(f, {Tensor::Contiguous(d.data(), DType::kF32, {3})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalid) << e.what();
  }
}

}  // namespace
}  // namespace ptox::interp::testing
