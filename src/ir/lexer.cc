// Lexer implementation: a single forward scan; every loop consumes at least one byte, so any
// input (binary garbage included) ends in a token stream or a positioned error.
#include "ir/lexer.h"

#include <fmt/format.h>

namespace ptox::ir {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

bool IsIdentStart(char c) { return IsAlpha(c) || c == '_'; }
bool IsIdentChar(char c) { return IsAlpha(c) || IsDigit(c) || c == '_' || c == '.'; }

std::string Printable(std::string_view text, size_t max_len) {
  std::string s;
  for (size_t i = 0; i < text.size() && i < max_len; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      s += static_cast<char>(c);
    } else {
      s += fmt::format("\\x{:02x}", c);
    }
  }
  if (text.size() > max_len) s += "...";
  return s;
}

std::string DescribeToken(const Token& tok) {
  if (tok.kind == TokenKind::kEof) return "end of file";
  return "'" + Printable(tok.text) + "'";
}

void Lexer::Advance() {
  if (text_[pos_] == '\n') {
    ++line_;
    col_ = 1;
  } else {
    ++col_;
  }
  ++pos_;
}

void Lexer::SkipSpaceAndComments() {
  while (!AtEnd()) {
    char c = Peek();
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      Advance();
    } else if (c == '/' && Peek(1) == '/') {
      while (!AtEnd() && Peek() != '\n') Advance();
    } else {
      break;
    }
  }
}

Token Lexer::Make(TokenKind kind, size_t begin, int line, int col) const {
  return Token{kind, text_.substr(begin, pos_ - begin), line, col};
}

Token Lexer::Next() {
  SkipSpaceAndComments();
  int line = line_, col = col_;
  if (AtEnd()) return Token{TokenKind::kEof, {}, line, col};
  char c = Peek();
  if (c == '%') return LexName(TokenKind::kValueName, line, col);
  if (c == '@') return LexName(TokenKind::kFuncName, line, col);
  if (IsIdentStart(c)) return LexIdentOrType(line, col);
  if (IsDigit(c) || (c == '-' && Peek(1) != '>')) return LexNumber(line, col);
  if (c == '"') return LexString(line, col);
  size_t begin = pos_;
  TokenKind kind;
  switch (c) {
    case '(': kind = TokenKind::kLParen; break;
    case ')': kind = TokenKind::kRParen; break;
    case '{': kind = TokenKind::kLBrace; break;
    case '}': kind = TokenKind::kRBrace; break;
    case '[': kind = TokenKind::kLBracket; break;
    case ']': kind = TokenKind::kRBracket; break;
    case ',': kind = TokenKind::kComma; break;
    case ':': kind = TokenKind::kColon; break;
    case '=': kind = TokenKind::kEqual; break;
    case '-':
      Advance();  // '->' (a lone '-' is lexed as a number above)
      kind = TokenKind::kArrow;
      break;
    default:
      PTOX_FAIL(SpanAt(line, col))
          << "unexpected character '" << Printable(text_.substr(pos_, 1)) << "'";
  }
  Advance();
  return Make(kind, begin, line, col);
}

Token Lexer::LexName(TokenKind kind, int line, int col) {
  size_t begin = pos_;
  Advance();  // '%' or '@'
  while (!AtEnd() && (IsIdentChar(Peek()))) Advance();
  PTOX_CHECK(pos_ - begin > 1, SpanAt(line, col))
      << "expected a name after '" << text_[begin] << "'";
  return Make(kind, begin, line, col);
}

Token Lexer::LexIdentOrType(int line, int col) {
  size_t begin = pos_;
  while (!AtEnd() && IsIdentChar(Peek())) Advance();
  std::string_view word = text_.substr(begin, pos_ - begin);
  if ((word == "tensor" || word == "tile") && Peek() == '<') {
    while (!AtEnd() && Peek() != '>' && Peek() != '\n') Advance();
    PTOX_CHECK(Peek() == '>', SpanAt(line, col))
        << "unterminated type: expected '>' to close '" << word << "<'";
    Advance();
    return Make(TokenKind::kType, begin, line, col);
  }
  return Make(TokenKind::kIdent, begin, line, col);
}

// -?digits[.digits][e[+-]digits], or -inf. The value is converted by the parser.
Token Lexer::LexNumber(int line, int col) {
  size_t begin = pos_;
  if (Peek() == '-') {
    Advance();
    if (Peek() == 'i' && Peek(1) == 'n' && Peek(2) == 'f' && !IsIdentChar(Peek(3))) {
      for (int i = 0; i < 3; ++i) Advance();
      return Make(TokenKind::kFloat, begin, line, col);
    }
    PTOX_CHECK(IsDigit(Peek()), SpanAt(line, col)) << "expected a number after '-'";
  }
  bool is_float = false;
  auto digits = [&](const char* what) {
    PTOX_CHECK(IsDigit(Peek()), SpanAt(line_, col_)) << "expected digits " << what;
    while (IsDigit(Peek())) Advance();
  };
  digits("");
  if (Peek() == '.') {
    is_float = true;
    Advance();
    digits("after '.'");
  }
  if (Peek() == 'e' || Peek() == 'E') {
    is_float = true;
    Advance();
    if (Peek() == '+' || Peek() == '-') Advance();
    digits("in the exponent");
  }
  PTOX_CHECK(!IsIdentChar(Peek()), SpanAt(line, col))
      << "invalid number '" << Printable(text_.substr(begin, pos_ - begin + 1)) << "'";
  return Make(is_float ? TokenKind::kFloat : TokenKind::kInt, begin, line, col);
}

Token Lexer::LexString(int line, int col) {
  size_t begin = pos_;
  Advance();  // opening quote
  while (!AtEnd() && Peek() != '"' && Peek() != '\n') Advance();
  PTOX_CHECK(Peek() == '"', SpanAt(line, col)) << "unterminated string";
  Advance();
  return Make(TokenKind::kString, begin, line, col);
}

}  // namespace ptox::ir
