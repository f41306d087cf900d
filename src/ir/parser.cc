// Recursive-descent parser for the text form printed by ir/printer.cc. Names resolve through a
// scope stack (SSA: one definition per name per function); op result types come from the op type
// rules. Every malformed input ends in a positioned user error, never a crash.
#include "ir/parser.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "ir/call.h"
#include "ir/lexer.h"
#include "ops/type_rules.h"

namespace ptox::ir {
namespace {

// Blocks nested deeper than this are rejected (the printer and verifier recurse per level).
constexpr int kMaxNesting = 256;
// Tile extents are bounded so that element counts (rows * cols * bytes) cannot overflow int64.

bool IsDigitChar(char c) { return c >= '0' && c <= '9'; }

class Parser {
 public:
  Parser(std::string_view text, const std::string& filename) : lexer_(text, filename) {
    tok_ = lexer_.Next();
  }

  Module ParseModule() {
    Module m;
    while (tok_.kind != TokenKind::kEof) m.funcs.push_back(ParseFunc());
    return m;
  }

 private:
  // A name seen in the current function: where it was written, and its value once defined.
  struct NameInfo {
    int line = 0;
    int col = 0;
    Value value;           // null until the defining statement ends
    bool visible = false;  // in scope at the current position
  };

  // ---- Tokens ------------------------------------------------------------------------------

  Span SpanOf(const Token& t) const { return lexer_.SpanAt(t.line, t.col); }
  Token Take() {
    Token t = tok_;
    tok_ = lexer_.Next();
    return t;
  }
  bool Is(TokenKind k) const { return tok_.kind == k; }
  bool IsWord(std::string_view w) const { return Is(TokenKind::kIdent) && tok_.text == w; }
  // At '{': whether an attribute dict follows (`{name = ...` or `{}` then another '{'), not a
  // block. Looks ahead on a copy of the lexer.
  bool StartsAttrs() const {
    Lexer probe = lexer_;
    Token first = probe.Next();
    if (first.kind == TokenKind::kRBrace) return probe.Next().kind == TokenKind::kLBrace;
    return first.kind == TokenKind::kIdent && probe.Next().kind == TokenKind::kEqual;
  }
  bool TryTake(TokenKind k) {
    if (!Is(k)) return false;
    Take();
    return true;
  }
  // Takes a token of kind `k`; otherwise "expected <what>, got <token>".
  Token Expect(TokenKind k, std::string_view what) {
    PTOX_CHECK(Is(k), SpanOf(tok_)) << "expected " << what << ", got " << DescribeToken(tok_);
    return Take();
  }
  void ExpectWord(std::string_view w, std::string_view context) {
    PTOX_CHECK(IsWord(w), SpanOf(tok_))
        << "expected '" << w << "' " << context << ", got " << DescribeToken(tok_);
    Take();
  }

  // ---- Names and scopes -------------------------------------------------------------------

  static std::string_view Bare(const Token& name) { return name.text.substr(1); }

  // Claims a name at its definition site: each name is defined once per function.
  void Reserve(const Token& name) {
    auto [it, fresh] = names_.emplace(name.text, NameInfo{name.line, name.col, nullptr});
    PTOX_CHECK(fresh, SpanOf(name))
        << name.text << " is already defined at " << it->second.line << ":" << it->second.col;
  }
  // Creates the value for a reserved name and makes it visible in the innermost scope.
  Value Bind(const Token& name, Type type) {
    Value v = MakeValue(std::move(type), std::string(Bare(name)));
    NameInfo& info = names_[name.text];
    info.value = v;
    info.visible = true;
    visible_.push_back(name.text);
    return v;
  }
  Value Lookup(const Token& name) {
    auto it = names_.find(name.text);
    PTOX_CHECK(it != names_.end(), SpanOf(name)) << "use of undefined value " << name.text;
    const NameInfo& info = it->second;
    PTOX_CHECK(info.value != nullptr, SpanOf(name))
        << "use of " << name.text << " inside its own definition (at " << info.line << ":"
        << info.col << ")";
    PTOX_CHECK(info.visible, SpanOf(name))
        << "use of " << name.text << " outside the block that defines it (at " << info.line << ":"
        << info.col << ")";
    return info.value;
  }

  // Ends the scopes opened since `mark` (a size of visible_).
  void CloseScope(size_t mark) {
    for (size_t i = mark; i < visible_.size(); ++i) names_[visible_[i]].visible = false;
    visible_.resize(mark);
  }

  // ---- Literals -----------------------------------------------------------------------------

  int64_t IntValue(const Token& t) {
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    PTOX_CHECK(ec == std::errc() && ptr == t.text.data() + t.text.size(), SpanOf(t))
        << "integer literal " << Printable(t.text) << " does not fit in 64 bits";
    return v;
  }
  double FloatValue(const Token& t) {
    if (t.text == "inf") return std::numeric_limits<double>::infinity();
    if (t.text == "-inf") return -std::numeric_limits<double>::infinity();
    if (t.text == "nan") return std::numeric_limits<double>::quiet_NaN();
    double v = 0;
    auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    PTOX_CHECK(ec == std::errc() && ptr == t.text.data() + t.text.size(), SpanOf(t))
        << "float literal " << Printable(t.text) << " is out of range";
    return v;
  }
  bool AtFloatWord() const { return IsWord("inf") || IsWord("nan"); }

  // ---- Types --------------------------------------------------------------------------------

  Type ParseType(std::string_view context) {
    if (Is(TokenKind::kType)) return TypeFromText(Take());
    PTOX_CHECK(Is(TokenKind::kIdent), SpanOf(tok_))
        << "expected a type " << context << ", got " << DescribeToken(tok_);
    Token t = Take();
    PTOX_CHECK(t.text != "tensor" && t.text != "tile", SpanOf(t))
        << "expected '<' right after '" << t.text << "'";
    std::optional<DType> d = ParseDType(t.text);
    PTOX_CHECK(d.has_value(), SpanOf(t)) << "unknown dtype '" << Printable(t.text) << "'";
    return Type::Scalar(*d);
  }

  // `tensor<DIMx...xDTYPE>` / `tile<RxCxDTYPE>`; DIM is digits or {SYMBOL}.
  Type TypeFromText(const Token& t) {
    bool is_tile = t.text.substr(0, 4) == "tile";
    size_t open = t.text.find('<');
    TypeBody body{t.text.substr(open + 1, t.text.size() - open - 2), t.line,
                  t.col + static_cast<int>(open + 1)};
    std::vector<Dim> dims;
    size_t i = 0;
    while (i < body.text.size() && (body.text[i] == '{' || IsDigitChar(body.text[i]))) {
      size_t start = i;
      dims.push_back(DimFromText(body, i));
      PTOX_CHECK(i < body.text.size() && body.text[i] == 'x', body.At(lexer_, i))
          << "expected 'x' after dimension '" << Printable(body.text.substr(start, i - start))
          << "'";
      ++i;
    }
    std::string_view dt = body.text.substr(i);
    PTOX_CHECK(!dt.empty(), body.At(lexer_, i)) << "expected a dtype";
    std::optional<DType> d = ParseDType(dt);
    PTOX_CHECK(d.has_value(), body.At(lexer_, i)) << "unknown dtype '" << Printable(dt) << "'";
    if (!is_tile) {
      PTOX_CHECK(!dims.empty(), SpanOf(t)) << "a tensor type needs at least one dimension";
      return Type::Tensor(std::move(dims), *d);
    }
    PTOX_CHECK(dims.size() == 2 && dims[0].is_static() && dims[1].is_static(), SpanOf(t))
        << "a tile type has two static dimensions: tile<RxCxDTYPE>";
    for (const Dim& dim : dims) {
      PTOX_CHECK(dim.size <= kMaxTileExtent, SpanOf(t))
          << "tile extent " << dim.size << " exceeds the limit of " << kMaxTileExtent;
    }
    return Type::Tile(dims[0].size, dims[1].size, *d);
  }

  // The text between a type's '<' and '>', positioned for error messages.
  struct TypeBody {
    std::string_view text;
    int line;
    int col;  // column of text[0]
    Span At(const Lexer& lexer, size_t i) const {
      return lexer.SpanAt(line, col + static_cast<int>(i));
    }
  };

  // One dimension at body.text[i] (digits or {SYMBOL}); advances `i` past it.
  Dim DimFromText(const TypeBody& body, size_t& i) {
    std::string_view text = body.text;
    size_t start = i;
    if (text[i] == '{') {
      size_t close = text.find('}', i);
      PTOX_CHECK(close != std::string_view::npos, body.At(lexer_, i))
          << "expected '}' to close the symbol";
      std::string_view sym = text.substr(i + 1, close - i - 1);
      bool ok = !sym.empty() && IsIdentStart(sym[0]);
      for (char c : sym) ok = ok && IsIdentChar(c) && c != '.';
      PTOX_CHECK(ok, body.At(lexer_, i + 1))
          << "invalid dimension symbol '" << Printable(sym) << "'";
      i = close + 1;
      return Dim::Symbol(std::string(sym));
    }
    while (i < text.size() && IsDigitChar(text[i])) ++i;
    int64_t n = 0;
    auto [p, ec] = std::from_chars(text.data() + start, text.data() + i, n);
    PTOX_CHECK(ec == std::errc(), body.At(lexer_, start))
        << "dimension " << text.substr(start, i - start) << " does not fit in 64 bits";
    return Dim::Static(n);
  }

  // ---- Functions and blocks -----------------------------------------------------------------

  FuncRef ParseFunc() {
    PTOX_CHECK(IsWord("func"), SpanOf(tok_)) << "expected 'func', got " << DescribeToken(tok_);
    Token func_tok = Take();
    auto f = std::make_shared<Func>();
    f->span = SpanOf(func_tok);
    f->name = std::string(Bare(Expect(TokenKind::kFuncName, "a function name (@name)")));
    names_.clear();
    visible_.clear();
    Expect(TokenKind::kLParen, "'(' to open the parameter list");
    if (!Is(TokenKind::kRParen)) {
      do {
        f->params.push_back(ParseParam());
      } while (TryTake(TokenKind::kComma));
    }
    Expect(TokenKind::kRParen, "',' or ')' after a parameter");
    if (TryTake(TokenKind::kArrow)) f->results = ParseResultTypes();
    if (IsWord("incore")) f->incore = (Take(), true);
    // Known to calls from here on: its own body's (recursion, which the verifier reports) and
    // those of the functions after it.
    funcs_[f->name] = f;
    f->body = ParseBlock(func_tok);
    return f;
  }

  // `-> T` or `-> (T, ...)` after a function's parameters.
  std::vector<Type> ParseResultTypes() {
    std::vector<Type> types;
    if (!TryTake(TokenKind::kLParen)) {
      types.push_back(ParseType("after '->'"));
      return types;
    }
    do {
      types.push_back(ParseType("in the result list"));
    } while (TryTake(TokenKind::kComma));
    Expect(TokenKind::kRParen, "',' or ')' after a result type");
    return types;
  }

  // %name: [in|out|inout] TYPE (the direction may be left out for a tile or scalar: `in`).
  Param ParseParam() {
    Token name = Expect(TokenKind::kValueName, "a parameter name (%name)");
    Reserve(name);
    Expect(TokenKind::kColon, "':' after the parameter name");
    Param p;
    std::optional<Token> dir;
    if (IsWord("in") || IsWord("out") || IsWord("inout")) dir = Take();
    if (dir) {
      p.dir = dir->text == "in"    ? Direction::kIn
              : dir->text == "out" ? Direction::kOut
                                   : Direction::kInOut;
    }
    const Token type_tok = tok_;
    Type type = ParseType(dir ? "after the direction" : "or a direction (in, out, inout)");
    PTOX_CHECK(dir || !type.is_tensor(), SpanOf(type_tok))
        << "tensor parameter " << name.text << " needs a direction (in, out or inout)";
    p.value = Bind(name, std::move(type));
    return p;
  }

  // '{' stmt* '}': a new scope; `owner` is the token that opened the construct (for messages).
  Block ParseBlock(const Token& owner) {
    PTOX_CHECK(Is(TokenKind::kLBrace), SpanOf(tok_))
        << "expected '{' to open the body of '" << Printable(owner.text) << "', got "
        << DescribeToken(tok_);
    Token open = Take();
    PTOX_CHECK(++depth_ <= kMaxNesting, SpanOf(open))
        << "blocks nest deeper than " << kMaxNesting << " levels";
    size_t mark = visible_.size();
    Block block;
    while (!Is(TokenKind::kRBrace)) {
      PTOX_CHECK(!Is(TokenKind::kEof), SpanOf(tok_))
          << "expected '}' to close the block opened at " << open.line << ":" << open.col;
      block.push_back(ParseStmt());
    }
    Take();
    CloseScope(mark);
    --depth_;
    return block;
  }

  // ---- Statements ---------------------------------------------------------------------------

  StmtRef ParseStmt() {
    Span span = SpanOf(tok_);
    std::vector<Token> results;
    if (Is(TokenKind::kValueName)) {
      do {
        results.push_back(Expect(TokenKind::kValueName, "a result name (%name)"));
        Reserve(results.back());
      } while (TryTake(TokenKind::kComma));
      Expect(TokenKind::kEqual, "',' or '=' after a result name");
    }
    PTOX_CHECK(Is(TokenKind::kIdent), SpanOf(tok_))
        << "expected a statement (an op, call, for, if, while, incore, yield or return), got " << DescribeToken(tok_);
    Token head = Take();
    if (head.text == "for") return ParseFor(span, results, head);
    if (head.text == "if") return ParseIf(span, results, head);
    if (head.text == "while") return ParseWhile(span, results, head);
    if (head.text == "condition") {
      PTOX_CHECK(results.empty(), span) << "'condition' defines no results";
      PTOX_CHECK(depth_ == cond_depth_, SpanOf(head))
          << "'condition' ends the condition block of a while (while { ...; condition %c } do "
             "{ ... }), not this block";
      Operand c = ParseOperand("as the condition");
      PTOX_CHECK(Is(TokenKind::kRBrace), SpanOf(tok_))
          << "'condition' must be the last statement of the condition block, got "
          << DescribeToken(tok_) << " after it";
      return YieldStmt::Make({std::move(c)}, span);
    }
    if (head.text == "call") return ParseCall(span, results);
    if (head.text == "return") {
      PTOX_CHECK(results.empty(), span) << "'return' defines no results";
      // depth_ 1: the function's own body (a for / if body ends with yield instead).
      PTOX_CHECK(depth_ == 1, SpanOf(head))
          << "'return' ends a function's body; a for / if body ends with 'yield'";
      std::vector<Operand> values = ParseOperandList(head.line);
      PTOX_CHECK(Is(TokenKind::kRBrace), SpanOf(tok_))
          << "'return' must be the last statement of the function, got " << DescribeToken(tok_)
          << " after it";
      return YieldStmt::Make(std::move(values), span);
    }
    if (head.text == "incore" || head.text == "yield") {
      PTOX_CHECK(results.empty(), span) << "'" << head.text << "' defines no results";
      PTOX_CHECK(head.text != "yield" || depth_ != cond_depth_, SpanOf(head))
          << "a while's condition block ends with 'condition %c', not 'yield'";
      if (head.text == "yield") return YieldStmt::Make(ParseOperandList(head.line), span);
      Attrs attrs;
      if (Is(TokenKind::kLBrace) && StartsAttrs()) attrs = ParseAttrs();
      return IncoreStmt::Make(ParseBlock(head), span, std::move(attrs));
    }
    PTOX_CHECK(head.text.find('.') != std::string_view::npos, SpanOf(head))
        << "expected a statement (an op, call, for, if, while, incore, yield or return), got " << DescribeToken(head);
    return ParseOp(span, results, head);
  }

  StmtRef ParseOp(const Span& span, const std::vector<Token>& results, const Token& head) {
    std::optional<OpCode> op = LookupOp(head.text);
    PTOX_CHECK(op.has_value(), SpanOf(head)) << "unknown op '" << Printable(head.text) << "'";
    std::string_view name = OpName(*op);
    std::vector<Operand> args;
    int idx = IndexedOperandPos(FamilyOf(*op));
    if (idx < 0) {
      args = ParseOperandList(head.line);
    } else {
      for (int i = 0; i < idx; ++i) {
        args.push_back(ParseOperand("as operand of ", name));
        Expect(TokenKind::kComma, "',' after the operand");
      }
      args.push_back(ParseOperand("as operand of ", name));
      // tensor.store without offsets stores the whole tensor.
      if (*op != OpCode::kTensorStore || Is(TokenKind::kLBracket)) ParseOffsets(name, args);
    }
    return FinishOp(span, results, *op, std::move(args));
  }

  // `[o0, o1, ...]` after an indexed operand, appended to `args`.
  void ParseOffsets(std::string_view name, std::vector<Operand>& args) {
    PTOX_CHECK(Is(TokenKind::kLBracket), SpanOf(tok_))
        << "expected '[' and offsets after the indexed operand of " << name << " (%t[i, j]), got "
        << DescribeToken(tok_);
    Take();
    if (TryTake(TokenKind::kRBracket)) return;
    do {
      args.push_back(ParseOperand("as offset"));
    } while (TryTake(TokenKind::kComma));
    Expect(TokenKind::kRBracket, "',' or ']' after offset");
  }

  // The rest of an op after its operands: attributes, the declared type, the result.
  StmtRef FinishOp(const Span& span, const std::vector<Token>& results, OpCode op,
                   std::vector<Operand> args) {
    std::string_view name = OpName(op);
    Attrs attrs;
    if (Is(TokenKind::kLBrace)) attrs = ParseAttrs();
    std::optional<Type> declared;
    if (TryTake(TokenKind::kColon)) declared = ParseType("after ':'");
    std::optional<Type> type = InferOpType(op, args, attrs, declared, span);
    PTOX_CHECK(type.has_value() || results.empty(), span) << name << " has no result";
    PTOX_CHECK(!type.has_value() || results.size() == 1, span)
        << name << " has one result; write '%name = " << name << " ...'";
    std::vector<Value> values;
    if (type) values.push_back(Bind(results[0], *type));
    return OpStmt::Make(op, std::move(args), std::move(attrs), std::move(values), span);
  }

  // [%r, ... =] call @f(OPERAND, ...): the callee is a function defined earlier in the module.
  StmtRef ParseCall(const Span& span, const std::vector<Token>& results) {
    Token callee = Expect(TokenKind::kFuncName, "a function name (@name) after 'call'");
    auto it = funcs_.find(std::string(Bare(callee)));
    PTOX_CHECK(it != funcs_.end(), SpanOf(callee))
        << "call of unknown function " << callee.text
        << " (a function is defined before the functions that call it)";
    const Func& f = *it->second;
    Expect(TokenKind::kLParen, "'(' after the function name");
    std::vector<Operand> args;
    if (!Is(TokenKind::kRParen)) {
      do {
        args.push_back(ParseOperand("as an argument"));
      } while (TryTake(TokenKind::kComma));
    }
    Expect(TokenKind::kRParen, "',' or ')' after an argument");
    std::vector<Type> types = CallResultTypes(f, args, span);
    PTOX_CHECK(results.size() == types.size(), span)
        << callee.text << " returns " << types.size() << " values, but the call defines "
        << results.size();
    std::vector<Value> values;
    for (size_t i = 0; i < types.size(); ++i) values.push_back(Bind(results[i], types[i]));
    return CallStmt::Make(f.name, std::move(args), std::move(values), span);
  }

  // [%r, ... =] for %iv = LB to UB step S [parallel|unroll] [iter(%x = INIT, ...)] { ... }
  StmtRef ParseFor(const Span& span, const std::vector<Token>& results, const Token& head) {
    Token iv = Expect(TokenKind::kValueName, "the loop variable (%name) after 'for'");
    Reserve(iv);
    Expect(TokenKind::kEqual, "'=' after the loop variable");
    Operand lb = ParseOperand("as the lower bound");
    ExpectWord("to", "after the lower bound");
    Operand ub = ParseOperand("as the upper bound");
    ExpectWord("step", "after the upper bound");
    Operand step = ParseOperand("as the step");
    LoopKind kind = LoopKind::kSequential;
    if (IsWord("parallel") || IsWord("unroll")) {
      kind = Take().text == "parallel" ? LoopKind::kParallel : LoopKind::kUnroll;
    }
    std::vector<Token> iter_names;
    std::vector<Operand> inits;
    ParseIter(iter_names, inits);
    PTOX_CHECK(results.size() == inits.size(), span)
        << "for carries " << inits.size() << " values but defines " << results.size() << " results";
    size_t mark = visible_.size();
    Value iv_value = Bind(iv, Type::Scalar(DType::kIndex));
    std::vector<Value> iter_args, result_values;
    for (size_t i = 0; i < inits.size(); ++i) {
      iter_args.push_back(Bind(iter_names[i], inits[i].type()));
    }
    Block body = ParseBlock(head);
    CloseScope(mark);
    for (size_t i = 0; i < inits.size(); ++i) {
      result_values.push_back(Bind(results[i], inits[i].type()));
    }
    return ForStmt::Make(iv_value, std::move(lb), std::move(ub), std::move(step), kind,
                         std::move(iter_args), std::move(inits), std::move(body),
                         std::move(result_values), span);
  }

  // A loop's optional `iter(%x = INIT, ...)`: the carried values' names and their inits.
  void ParseIter(std::vector<Token>& names, std::vector<Operand>& inits) {
    if (!IsWord("iter")) return;
    Take();
    Expect(TokenKind::kLParen, "'(' after 'iter'");
    do {
      names.push_back(Expect(TokenKind::kValueName, "a loop-carried value (%name)"));
      Reserve(names.back());
      Expect(TokenKind::kEqual, "'=' after the loop-carried value");
      inits.push_back(ParseOperand("as the initial value"));
    } while (TryTake(TokenKind::kComma));
    Expect(TokenKind::kRParen, "',' or ')' after an initial value");
  }

  // [%r, ... =] while [iter(%x = INIT, ...)] { ...; condition %c } do { ...; yield ... }
  StmtRef ParseWhile(const Span& span, const std::vector<Token>& results, const Token& head) {
    std::vector<Token> iter_names;
    std::vector<Operand> inits;
    ParseIter(iter_names, inits);
    PTOX_CHECK(results.size() == inits.size(), span)
        << "while carries " << inits.size() << " values but defines " << results.size()
        << " results";
    size_t mark = visible_.size();
    std::vector<Value> iter_args, result_values;
    for (size_t i = 0; i < inits.size(); ++i)
      iter_args.push_back(Bind(iter_names[i], inits[i].type()));
    const int outer_cond = cond_depth_;
    cond_depth_ = depth_ + 1;  // the block ParseBlock opens next
    Block cond_body = ParseBlock(head);
    cond_depth_ = outer_cond;
    PTOX_CHECK(!cond_body.empty() && cond_body.back()->kind() == StmtKind::kYield, span)
        << "the condition block of a while must end with 'condition %c'";
    PTOX_CHECK(IsWord("do"), SpanOf(tok_))
        << "expected 'do' and the loop body after the condition block of a while, got "
        << DescribeToken(tok_);
    Token do_tok = Take();
    const int saved = cond_depth_;
    cond_depth_ = -1;
    Block body = ParseBlock(do_tok);
    cond_depth_ = saved;
    CloseScope(mark);
    for (size_t i = 0; i < inits.size(); ++i)
      result_values.push_back(Bind(results[i], inits[i].type()));
    return WhileStmt::Make(std::move(iter_args), std::move(inits), std::move(cond_body),
                           std::move(body), std::move(result_values), span);
  }

  // [%r, ... =] if COND [-> TYPE, ...] { ... } [else { ... }]
  StmtRef ParseIf(const Span& span, const std::vector<Token>& results, const Token& head) {
    Operand cond = ParseOperand("as the condition");
    std::vector<Type> types;
    if (TryTake(TokenKind::kArrow)) {
      do {
        types.push_back(ParseType("after '->'"));
      } while (TryTake(TokenKind::kComma));
    }
    PTOX_CHECK(results.size() == types.size(), span)
        << "if declares " << types.size() << " result types but defines " << results.size()
        << " results";
    Block then_body = ParseBlock(head);
    Block else_body;
    if (IsWord("else")) else_body = ParseBlock(Take());
    std::vector<Value> values;
    for (size_t i = 0; i < results.size(); ++i) values.push_back(Bind(results[i], types[i]));
    return IfStmt::Make(std::move(cond), std::move(then_body), std::move(else_body),
                        std::move(values), span);
  }

  // ---- Operands and attributes --------------------------------------------------------------

  bool AtOperand() const {
    return Is(TokenKind::kValueName) || Is(TokenKind::kInt) || Is(TokenKind::kFloat) ||
           AtFloatWord();
  }
  // One operand; `context` (+ `op`) says where it stands, for the error message.
  Operand ParseOperand(std::string_view context, std::string_view op = {}) {
    PTOX_CHECK(AtOperand(), SpanOf(tok_)) << "expected a value (%name) or a number " << context
                                          << op << ", got " << DescribeToken(tok_);
    Token t = Take();
    if (t.kind == TokenKind::kValueName) return Lookup(t);
    if (t.kind == TokenKind::kInt) return Operand::Int(IntValue(t));
    return Operand::Float(FloatValue(t));
  }
  // A comma-separated operand list; empty unless the first operand is on line `line`.
  std::vector<Operand> ParseOperandList(int line) {
    std::vector<Operand> args;
    if (!AtOperand() || tok_.line != line) return args;
    do {
      args.push_back(ParseOperand("as operand"));
    } while (TryTake(TokenKind::kComma));
    return args;
  }

  Attrs ParseAttrs() {
    Token open = Expect(TokenKind::kLBrace, "'{'");
    Attrs attrs;
    if (TryTake(TokenKind::kRBrace)) return attrs;
    do {
      Token name = Expect(TokenKind::kIdent, "an attribute name");
      Expect(TokenKind::kEqual, "'=' after the attribute name");
      AttrValue v = ParseAttrValue();
      PTOX_CHECK(attrs.emplace(std::string(name.text), std::move(v)).second, SpanOf(name))
          << "duplicate attribute '" << Printable(name.text) << "'";
    } while (TryTake(TokenKind::kComma));
    PTOX_CHECK(Is(TokenKind::kRBrace), SpanOf(tok_))
        << "expected ',' or '}' after an attribute (the list opened at " << open.line << ":"
        << open.col << "), got " << DescribeToken(tok_);
    Take();
    return attrs;
  }
  AttrValue ParseAttrValue() {
    if (IsWord("true") || IsWord("false")) return Take().text == "true";
    if (Is(TokenKind::kInt)) return IntValue(Take());
    if (Is(TokenKind::kFloat) || AtFloatWord()) return FloatValue(Take());
    if (Is(TokenKind::kString)) {
      std::string_view s = Take().text;
      return std::string(s.substr(1, s.size() - 2));
    }
    PTOX_FAIL(SpanOf(tok_)) << "expected an attribute value (true, false, a number or a "
                               "string), got "
                            << DescribeToken(tok_);
    return false;
  }

  Lexer lexer_;
  Token tok_;
  std::unordered_map<std::string, std::shared_ptr<const Func>> funcs_;  // parsed so far
  std::unordered_map<std::string_view, NameInfo> names_;  // this function's names
  int cond_depth_ = -1;  // depth_ of the while condition block being parsed (-1: none)
  std::vector<std::string_view> visible_;                 // names in scope, innermost last
  int depth_ = 0;
};

}  // namespace

Module Parse(std::string_view text, const std::string& filename) {
  return Parser(text, filename).ParseModule();
}

}  // namespace ptox::ir
