// Parser errors: malformed input gets one precise "file:line:col: error: message", never a crash.
#include <gtest/gtest.h>

#include <string>

#include "ir/parser.h"

namespace ptox::ir {
namespace {

// The error message Parse() throws for `text`, or "" when it parses.
std::string ParseError(std::string_view text) {
  try {
    Parse(text, "e.pto");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalid) << e.what();
    return e.what();
  }
  return "";
}

struct ErrorCase {
  const char* name;
  const char* text;
  const char* message;
};

const ErrorCase kCases[] = {
    {"UnknownOp", "func @f(%n: in index) {\n  %a = arith.foo %n, 1\n}\n",
     "e.pto:2:8: error: unknown op 'arith.foo'"},
    {"UndefinedValue", "func @f(%n: in index) {\n  %a = arith.add %m, 1\n}\n",
     "e.pto:2:18: error: use of undefined value %m"},
    {"Redefinition", "func @f(%n: in index) {\n  %a = arith.add %n, 1\n  %a = arith.add %n, 2\n}\n",
     "e.pto:3:3: error: %a is already defined at 2:3"},
    {"ParamRedefinedInBody", "func @f(%n: in index) {\n  %n = arith.add %n, 1\n}\n",
     "e.pto:2:3: error: %n is already defined at 1:9"},
    {"SelfReference", "func @f(%n: in index) {\n  %a = arith.add %a, 1\n}\n",
     "e.pto:2:18: error: use of %a inside its own definition (at 2:3)"},
    {"UseOutOfScope",
     "func @f(%n: in index) {\n  for %i = 0 to 4 step 1 {\n  }\n  %a = arith.add %i, 1\n}\n",
     "e.pto:4:18: error: use of %i outside the block that defines it (at 2:7)"},
    {"UnknownScalarDtype", "func @f(%x: in f33) {\n}\n", "e.pto:1:16: error: unknown dtype 'f33'"},
    {"UnknownTensorDtype", "func @f(%x: in tensor<4x4xf33>) {\n}\n",
     "e.pto:1:27: error: unknown dtype 'f33'"},
    {"MissingOffsetComma",
     "func @f(%a: in tensor<4x4xf32>) {\n  incore {\n    %t = tile.load %a[0 0] : "
     "tile<4x4xf32>\n  }\n}\n",
     "e.pto:3:25: error: expected ',' or ']' after offset, got '0'"},
    {"IntegerOverflow", "func @f(%n: in index) {\n  %a = arith.add %n, 9223372036854775808\n}\n",
     "e.pto:2:22: error: integer literal 9223372036854775808 does not fit in 64 bits"},
    {"DimOverflow", "func @f(%x: in tensor<99999999999999999999xf32>) {\n}\n",
     "e.pto:1:23: error: dimension 99999999999999999999 does not fit in 64 bits"},
    {"FloatOutOfRange", "func @f(%n: in f32) {\n  %a = arith.add %n, 1e999\n}\n",
     "e.pto:2:22: error: float literal 1e999 is out of range"},
    {"UnclosedBlock", "func @f(%n: in index) {\n  incore {\n}\n",
     "e.pto:4:1: error: expected '}' to close the block opened at 1:23"},
    {"TypeRuleAtStatement",
     "func @f(%a: in tensor<4x4xf32>) {\n  incore {\n    %t = tile.load %a[0, 0] : "
     "tile<4x4xf32>\n    %u = tile.exp %t, %t\n  }\n}\n",
     "e.pto:4:5: error: tile.exp expects 1 operands, got 2"},
    {"MissingResultType",
     "func @f(%a: in tensor<4x4xf32>) {\n  incore {\n    %t = tile.load %a[0, 0]\n  }\n}\n",
     "e.pto:3:5: error: tile.load needs a result type (': type')"},
    {"StoreHasNoResult",
     "func @f(%a: in tensor<4x4xf32>, %b: out tensor<4x4xf32>) {\n  incore {\n"
     "    %t = tile.load %a[0, 0] : tile<4x4xf32>\n    %x = tile.store %t, %b[0, 0]\n  }\n}\n",
     "e.pto:4:5: error: tile.store has no result"},
    {"UnnamedResult", "func @f(%n: in index) {\n  arith.add %n, 1\n}\n",
     "e.pto:2:3: error: arith.add has one result; write '%name = arith.add ...'"},
    {"IfResultsWithoutTypes", "func @f(%c: in bool) {\n  %a = if %c {\n    yield 1\n  }\n}\n",
     "e.pto:2:3: error: if declares 0 result types but defines 1 results"},
    {"ForResultsWithoutIter", "func @f() {\n  %r = for %i = 0 to 4 step 1 {\n  }\n}\n",
     "e.pto:2:3: error: for carries 0 values but defines 1 results"},
    {"SymbolicTileDim",
     "func @f(%x: in index) {\n  incore {\n    %t = tile.full 0 : tile<{N}x4xf32>\n"
     "  }\n}\n",
     "e.pto:3:24: error: a tile type has two static dimensions: tile<RxCxDTYPE>"},
    {"HugeTile", "func @f() {\n  %a = if 1 -> tile<4x4000000xf32> {\n  }\n}\n",
     "e.pto:2:16: error: tile extent 4000000 exceeds the limit of 1048576"},
    {"UnterminatedType", "func @f(%x: in tensor<4xf32) {\n}\n",
     "e.pto:1:16: error: unterminated type: expected '>' to close 'tensor<'"},
    {"MissingDirection", "func @f(%x: tensor<4xf32>) {\n}\n",
     "e.pto:1:13: error: tensor parameter %x needs a direction (in, out or inout)"},
    {"LoneMinus", "func @f(%n: in index) {\n  %a = arith.add %n, -x\n}\n",
     "e.pto:2:22: error: expected a number after '-'"},
    {"BadCharacter", "func @f() {\n  $\n}\n", "e.pto:2:3: error: unexpected character '$'"},
    {"BinaryGarbage", "\x01\xff", "e.pto:1:1: error: unexpected character '\\x01'"},
    {"NotAFunction", "%a = arith.add 1, 2\n", "e.pto:1:1: error: expected 'func', got '%a'"},
    {"UnterminatedString",
     "func @f(%a: in tensor<4x4xf32>) {\n  incore {\n    %t = tile.load %a[0, 0] {s = \"x\n",
     "e.pto:3:34: error: unterminated string"},
    {"DuplicateAttribute",
     "func @f(%a: in tensor<4x4xf32>) {\n  incore {\n"
     "    %t = tile.load %a[0, 0] {pad = 0.0, pad = 1.0} : tile<4x4xf32>\n  }\n}\n",
     "e.pto:3:41: error: duplicate attribute 'pad'"},
    {"MissingToInFor", "func @f() {\n  for %i = 0 until 4 step 1 {\n  }\n}\n",
     "e.pto:2:14: error: expected 'to' after the lower bound, got 'until'"},
    {"ForResultUsedInItsBody",
     "func @f() {\n  %r = for %i = 0 to 4 step 1 iter(%a = 0) {\n    yield %r\n  }\n}\n",
     "e.pto:3:11: error: use of %r inside its own definition (at 2:3)"},
    {"ThenValueUsedInElse",
     "func @f(%c: in bool) {\n  if %c {\n    %x = arith.add 1, 2\n  } else {\n"
     "    %y = arith.add %x, 1\n  }\n}\n",
     "e.pto:5:20: error: use of %x outside the block that defines it (at 3:5)"},
    {"MissingIndexBrackets",
     "func @f(%a: in tensor<4x4xf32>) {\n  incore {\n    %t = tile.load %a : tile<4x4xf32>\n"
     "  }\n}\n",
     "e.pto:3:23: error: expected '[' and offsets after the indexed operand of tile.load "
     "(%t[i, j]), got ':'"},
    {"FuncInsideFunc", "func @f() {\n  func @g() {\n  }\n}\n",
     "e.pto:2:3: error: expected a statement (an op, call, for, if, while, incore, yield or return), got 'func'"},
};

class ParserErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ParserErrors, ReportsThePosition) {
  EXPECT_EQ(ParseError(GetParam().text), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(Malformed, ParserErrors, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// Whole-program rules are the verifier's: the parser accepts a tile op outside incore.
TEST(ParserContract, DoesNotRunTheVerifier) {
  EXPECT_EQ(ParseError("func @f(%a: in tensor<4x4xf32>) {\n"
                       "  %t = tile.load %a[0, 0] : tile<4x4xf32>\n"
                       "}\n"),
            "");
}

TEST(ParserLimits, DeepNestingIsAnErrorNotACrash) {
  std::string text = "func @f() {\n";
  for (int i = 0; i < 300; ++i) text += "incore {\n";
  // The 256th nested block opens on line 257 (line 1 holds the function's own block).
  EXPECT_EQ(ParseError(text), "e.pto:257:8: error: blocks nest deeper than 256 levels");
}

TEST(ParserLimits, NestingUpToTheLimitParses) {
  std::string text = "func @f() {\n";
  for (int i = 0; i < 255; ++i) text += "if 1 {\n";
  for (int i = 0; i < 256; ++i) text += "}\n";
  EXPECT_EQ(ParseError(text), "");
}

TEST(ParserLimits, MostNegativeIntegerParses) {
  EXPECT_EQ(ParseError("func @f(%n: in i64) {\n  %a = arith.add %n, -9223372036854775808\n}\n"),
            "");
  EXPECT_EQ(ParseError("func @f(%n: in i64) {\n  %a = arith.add %n, -9223372036854775809\n}\n"),
            "e.pto:2:22: error: integer literal -9223372036854775809 does not fit in 64 bits");
}

TEST(ParserLimits, TruncatedInputsNeverCrash) {
  const std::string text =
      "func @f(%a: in tensor<{N}x8xf32>, %o: out tensor<{N}x8xf32>) {\n"
      "  %n = tensor.dim %a, 0\n"
      "  %s = for %i = 0 to %n step 1 unroll iter(%acc = 0.0) {\n"
      "    incore {\n"
      "      %t = tile.load %a[%i, 0] {pad = -inf} : tile<1x8xf32>\n"
      "      tile.store %t, %o[%i, 0]\n"
      "    }\n"
      "    %c = arith.lt %acc, 1e-30\n"
      "    %x = if %c -> f32 {\n"
      "      yield %acc\n"
      "    } else {\n"
      "      yield 2.0\n"
      "    }\n"
      "    yield %x\n"
      "  }\n"
      "}\n";
  EXPECT_EQ(ParseError(text), "");
  for (size_t n = 0; n < text.size(); ++n) {
    std::string msg = ParseError(text.substr(0, n));
    // Every proper prefix lacks the final '}', except the empty module and the one without the
    // final newline.
    if (n == 0 || n + 1 == text.size()) {
      EXPECT_EQ(msg, "");
    } else {
      EXPECT_EQ(msg.rfind("e.pto:", 0), 0u) << "prefix " << n << ": " << msg;
    }
  }
}

}  // namespace
}  // namespace ptox::ir
