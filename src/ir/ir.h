// The IR: SSA values, operands, immutable statements (nodes.def), functions and modules.
// Nodes are built with Make() and never mutated; With*() returns a copy (or the same node when
// nothing changed), so passes can share unchanged subtrees.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ir/type.h"
#include "ops/ops.h"
#include "support/error.h"

namespace ptox::ir {

// An SSA value. Identity is the node's address; `name` is only a printing hint.
struct ValueNode {
  std::string name;
  Type type;
};
using Value = std::shared_ptr<const ValueNode>;
inline Value MakeValue(Type type, std::string name = {}) {
  return std::make_shared<const ValueNode>(ValueNode{std::move(name), std::move(type)});
}

// An op operand: an SSA value or an immediate. Integer immediates are `index`, float ones `f32`.
class Operand {
 public:
  Operand() = default;
  Operand(Value v) : data_(std::move(v)) {}  // NOLINT(google-explicit-constructor)
  static Operand Int(int64_t v) { return Operand(Data(v)); }
  static Operand Float(double v) { return Operand(Data(v)); }

  bool is_value() const { return std::holds_alternative<Value>(data_); }
  bool is_int() const { return std::holds_alternative<int64_t>(data_); }
  bool is_float() const { return std::holds_alternative<double>(data_); }
  const Value& value() const { return std::get<Value>(data_); }
  int64_t int_value() const { return std::get<int64_t>(data_); }
  double float_value() const { return std::get<double>(data_); }
  // A reference that stays valid as long as the operand (immediates share static types).
  const Type& type() const;
  bool operator==(const Operand& o) const { return data_ == o.data_; }

 private:
  using Data = std::variant<Value, int64_t, double>;
  explicit Operand(Data d) : data_(std::move(d)) {}
  Data data_;
};

// Op attributes, printed `{name = value, ...}` in name order.
using AttrValue = std::variant<bool, int64_t, double, std::string>;
using Attrs = std::map<std::string, AttrValue>;

enum class StmtKind : uint8_t {
#define PTOX_STMT(e) k##e,
#include "ir/nodes.def"
#undef PTOX_STMT
};

class Stmt;
using StmtRef = std::shared_ptr<const Stmt>;
using Block = std::vector<StmtRef>;

class Stmt {
 public:
  virtual ~Stmt() = default;
  StmtKind kind() const { return kind_; }
  const Span& span() const { return span_; }

 protected:
  Stmt(StmtKind kind, Span span) : kind_(kind), span_(std::move(span)) {}

 private:
  StmtKind kind_;
  Span span_;
};

class OpStmt final : public Stmt {
 public:
  static std::shared_ptr<const OpStmt> Make(OpCode op, std::vector<Operand> args, Attrs attrs,
                                            std::vector<Value> results, Span span = {});
  OpCode op() const { return op_; }
  const std::vector<Operand>& args() const { return args_; }
  const Attrs& attrs() const { return attrs_; }
  const std::vector<Value>& results() const { return results_; }
  // The single result (every op has at most one).
  const Value& result() const;
  std::shared_ptr<const OpStmt> WithArgs(std::vector<Operand> args) const;

  OpStmt(OpCode op, std::vector<Operand> args, Attrs attrs, std::vector<Value> results, Span span)
      : Stmt(StmtKind::kOp, std::move(span)), op_(op), args_(std::move(args)),
        attrs_(std::move(attrs)), results_(std::move(results)) {}

 private:
  OpCode op_;
  std::vector<Operand> args_;
  Attrs attrs_;
  std::vector<Value> results_;
};

enum class LoopKind : uint8_t { kSequential, kParallel, kUnroll };
std::string_view LoopKindName(LoopKind k);

// for %iv = lb to ub step s [parallel|unroll] iter(%x = init, ...) { ...; yield ... }
// The loop runs for iv = lb, lb+s, ... while iv < ub; step must be positive.
class ForStmt final : public Stmt {
 public:
  static std::shared_ptr<const ForStmt> Make(Value iv, Operand lb, Operand ub, Operand step,
                                             LoopKind loop_kind, std::vector<Value> iter_args,
                                             std::vector<Operand> inits, Block body,
                                             std::vector<Value> results, Span span = {});
  const Value& iv() const { return iv_; }
  const Operand& lb() const { return lb_; }
  const Operand& ub() const { return ub_; }
  const Operand& step() const { return step_; }
  LoopKind loop_kind() const { return loop_kind_; }
  const std::vector<Value>& iter_args() const { return iter_args_; }
  const std::vector<Operand>& inits() const { return inits_; }
  const Block& body() const { return body_; }
  const std::vector<Value>& results() const { return results_; }
  std::shared_ptr<const ForStmt> WithBody(Block body) const;

  ForStmt(Value iv, Operand lb, Operand ub, Operand step, LoopKind k, std::vector<Value> iter_args,
          std::vector<Operand> inits, Block body, std::vector<Value> results, Span span)
      : Stmt(StmtKind::kFor, std::move(span)), iv_(std::move(iv)), lb_(std::move(lb)),
        ub_(std::move(ub)), step_(std::move(step)), loop_kind_(k),
        iter_args_(std::move(iter_args)), inits_(std::move(inits)), body_(std::move(body)),
        results_(std::move(results)) {}

 private:
  Value iv_;
  Operand lb_, ub_, step_;
  LoopKind loop_kind_;
  std::vector<Value> iter_args_;
  std::vector<Operand> inits_;
  Block body_;
  std::vector<Value> results_;
};

// [%r, ... =] while [iter(%x = init, ...)] { ...; condition %c } do { ...; yield ... }
// Sequential: each trip runs the condition block (over the carried values and outer values); while
// its closing `condition` (a bool scalar) holds, runs the body, whose closing yield gives the next
// carried values. The results are the carried values when the condition fails (the inits when it
// fails at once). In the IR the condition block ends with a YieldStmt of that one value, so every
// walk sees the condition as a use; the text form writes it `condition %c`.
class WhileStmt final : public Stmt {
 public:
  static std::shared_ptr<const WhileStmt> Make(std::vector<Value> iter_args,
                                               std::vector<Operand> inits, Block cond_body,
                                               Block body, std::vector<Value> results,
                                               Span span = {});
  const std::vector<Value>& iter_args() const { return iter_args_; }
  const std::vector<Operand>& inits() const { return inits_; }
  // The condition block; it ends with a yield of the condition (a bool scalar).
  const Block& cond_body() const { return cond_body_; }
  const Block& body() const { return body_; }
  const std::vector<Value>& results() const { return results_; }
  // The condition: the value the condition block's closing yield names (null when it has none).
  const Operand* cond() const;
  std::shared_ptr<const WhileStmt> WithBodies(Block cond_body, Block body) const;

  WhileStmt(std::vector<Value> iter_args, std::vector<Operand> inits, Block cond_body, Block body,
            std::vector<Value> results, Span span)
      : Stmt(StmtKind::kWhile, std::move(span)), iter_args_(std::move(iter_args)),
        inits_(std::move(inits)), cond_body_(std::move(cond_body)), body_(std::move(body)),
        results_(std::move(results)) {}

 private:
  std::vector<Value> iter_args_;
  std::vector<Operand> inits_;
  Block cond_body_, body_;
  std::vector<Value> results_;
};

// if %cond { ... yield a } else { ... yield b } -> results
class IfStmt final : public Stmt {
 public:
  static std::shared_ptr<const IfStmt> Make(Operand cond, Block then_body, Block else_body,
                                            std::vector<Value> results, Span span = {});
  const Operand& cond() const { return cond_; }
  const Block& then_body() const { return then_body_; }
  const Block& else_body() const { return else_body_; }
  const std::vector<Value>& results() const { return results_; }

  IfStmt(Operand cond, Block then_body, Block else_body, std::vector<Value> results, Span span)
      : Stmt(StmtKind::kIf, std::move(span)), cond_(std::move(cond)),
        then_body_(std::move(then_body)), else_body_(std::move(else_body)),
        results_(std::move(results)) {}

 private:
  Operand cond_;
  Block then_body_, else_body_;
  std::vector<Value> results_;
};

// incore [{attrs}] { ... }: one task that runs on one core; tiles never cross its boundary.
// Attributes record what passes planned for the scope (plan-memory: onchip_bytes).
class IncoreStmt final : public Stmt {
 public:
  static std::shared_ptr<const IncoreStmt> Make(Block body, Span span = {}, Attrs attrs = {});
  const Block& body() const { return body_; }
  const Attrs& attrs() const { return attrs_; }
  std::shared_ptr<const IncoreStmt> WithBody(Block body) const;
  std::shared_ptr<const IncoreStmt> WithAttrs(Attrs attrs) const;

  IncoreStmt(Block body, Span span, Attrs attrs)
      : Stmt(StmtKind::kIncore, std::move(span)), body_(std::move(body)),
        attrs_(std::move(attrs)) {}

 private:
  Block body_;
  Attrs attrs_;
};

class YieldStmt final : public Stmt {
 public:
  static std::shared_ptr<const YieldStmt> Make(std::vector<Operand> values, Span span = {});
  const std::vector<Operand>& values() const { return values_; }

  YieldStmt(std::vector<Operand> values, Span span)
      : Stmt(StmtKind::kYield, std::move(span)), values_(std::move(values)) {}

 private:
  std::vector<Operand> values_;
};

// %r, ... = call @f(%a, 3, ...): runs function @f of the same module with these arguments (its
// parameters in order) and defines its returned values. Calls are a front-end construct: the
// inline-calls pass replaces each by a copy of @f's body before anything else lowers the module.
class CallStmt final : public Stmt {
 public:
  static std::shared_ptr<const CallStmt> Make(std::string callee, std::vector<Operand> args,
                                              std::vector<Value> results, Span span = {});
  const std::string& callee() const { return callee_; }
  const std::vector<Operand>& args() const { return args_; }
  const std::vector<Value>& results() const { return results_; }

  CallStmt(std::string callee, std::vector<Operand> args, std::vector<Value> results, Span span)
      : Stmt(StmtKind::kCall, std::move(span)), callee_(std::move(callee)),
        args_(std::move(args)), results_(std::move(results)) {}

 private:
  std::string callee_;
  std::vector<Operand> args_;
  std::vector<Value> results_;
};

// Parameter directions: `in` is never written; `out` is written (its prior contents unread);
// `inout` is read and written.
enum class Direction : uint8_t { kIn, kOut, kInOut };
std::string_view DirectionName(Direction d);

struct Param {
  Value value;
  Direction dir = Direction::kIn;
};

// A function. Parameters are tensors (with a direction), tiles or scalars (always `in`). A function
// with `results` ends its body with a yield of them (printed `return`). An `incore` function's
// body is the inside of its caller's incore scope: it may take and return tiles, and is called
// only inside incore scopes (or by another incore function), never run on its own.
struct Func {
  std::string name;
  std::vector<Param> params;
  std::vector<Type> results;
  bool incore = false;
  Block body;
  Span span;
};
using FuncRef = std::shared_ptr<const Func>;

struct Module {
  std::vector<FuncRef> funcs;
  const Func* Find(std::string_view name) const;
};

// Downcast helper: `As<ForStmt>(stmt)` (checked by kind).
template <typename T>
const T& As(const Stmt& s) {
  return static_cast<const T&>(s);
}

}  // namespace ptox::ir
