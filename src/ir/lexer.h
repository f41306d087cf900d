// Lexer for the IR text form: turns a .pto buffer into tokens with 1-based line:col positions.
// `tensor<...>` / `tile<...>` are single kType tokens (their inside is parsed by the parser).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "support/error.h"

namespace ptox::ir {

enum class TokenKind : uint8_t {
  kEof,
  kIdent,      // [A-Za-z_][A-Za-z0-9_.]*: keywords, op names, dtypes, attribute names
  kValueName,  // %name
  kFuncName,   // @name
  kInt,        // -?[0-9]+
  kFloat,      // -?[0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)? with a '.' or exponent, or -inf
  kString,     // "..." (no escapes, no newlines)
  kType,       // tensor<...> or tile<...>
  kLParen,
  kRParen,
  kLBrace,
  kRBrace,
  kLBracket,
  kRBracket,
  kComma,
  kColon,
  kEqual,
  kArrow,
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string_view text;  // the token's characters (a view into the lexed buffer)
  int line = 1;
  int col = 1;
};

// A human-readable description of a token for error messages: 'foo', end of file, ...
std::string DescribeToken(const Token& tok);
// `text` with non-printable bytes escaped as \xNN, cut at `max_len` characters.
std::string Printable(std::string_view text, size_t max_len = 40);

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& filename) : text_(text), filename_(filename) {}

  // The next token; throws a user error for malformed input (bad characters, overlong literals).
  Token Next();
  Span SpanAt(int line, int col) const { return Span{filename_, line, col}; }

 private:
  char Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool AtEnd(size_t ahead = 0) const { return pos_ + ahead >= text_.size(); }
  void Advance();
  void SkipSpaceAndComments();
  Token Make(TokenKind kind, size_t begin, int line, int col) const;
  Token LexName(TokenKind kind, int line, int col);
  Token LexIdentOrType(int line, int col);
  Token LexNumber(int line, int col);
  Token LexString(int line, int col);

  std::string_view text_;
  const std::string& filename_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

bool IsIdentStart(char c);
bool IsIdentChar(char c);  // letters, digits, '_' and '.'

}  // namespace ptox::ir
