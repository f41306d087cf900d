// The program fuzzer's model of a generated .pto program: dims, values and statements that refer to
// each other by index, so that the shrinker can delete ops, rewire their uses and print it again.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ptox/dtype.h"
#include "ptox/ptox.h"

namespace ptox::fuzz {

// One dimension, shared by every type that must agree on it: static (`sym` empty) or a symbol
// bound at run time to `size`. Sharing is what keeps a program valid when the shrinker changes
// a size: every type that names the dim changes with it.
struct DimVar {
  int64_t size = 0;
  std::string sym;
};

enum class Kind { kTensor, kTile, kScalar, kLiteral };

struct Type {
  Kind kind = Kind::kScalar;
  DType dtype = DType::kF32;
  std::vector<int> dims;  // DimVar ids: a tensor's shape, or a tile's rows and cols
  int rank() const { return static_cast<int>(dims.size()); }
};

// An SSA value, or an immediate (kLiteral) printed as its text wherever it is used.
struct Value {
  std::string name;
  Type type;
  std::string literal;
};

struct Stmt {
  enum class Form { kOp, kFor, kIncore };
  Form form = Form::kOp;
  // kOp: `text` with @N (the name of args[N]), #N (types[N] printed) and &N (the size of DimVar
  // N); printed as "%result = text" when it has a result.
  std::string text;
  std::vector<int> args;
  std::vector<Type> types;
  int result = -1;
  bool effect = false;  // a store: dead-code elimination keeps it
  // kFor: [results =] for %iv = 0 to UB step &step_dim [loop_kind] [iter(carried = inits)]
  // { body; yield yields }, UB being value `ub` or (ub < 0) the size of DimVar `ub_dim`.
  int iv = -1, ub = -1, ub_dim = -1, step_dim = -1;
  std::string loop_kind;
  // A sequential kFor printed as the while loop it is: `%iv_wr, [results] = while iter(%iv = 0,
  // [carried = inits]) { %iv_wc = arith.lt %iv, UB; condition %iv_wc } do { body;
  // %iv_wn = arith.add %iv, STEP; yield %iv_wn, [yields] }`.
  bool as_while = false;
  std::vector<int> carried, inits, yields, results;
  std::vector<Stmt> body;  // kFor and kIncore
};

struct Param {
  int value = -1;
  ParamDirection dir = ParamDirection::kIn;
  std::string scalar;  // the run-time value of a scalar parameter, as --scalars takes it
};

class Program {
 public:
  int AddDim(int64_t size, std::string sym = "");
  int AddValue(Type type, const std::string& prefix);
  int AddLiteral(const std::string& text, DType dtype = DType::kIndex);
  int AddParam(Type type, ParamDirection dir, const std::string& prefix, std::string scalar = "");
  Type TensorType(std::vector<int> dims, DType dtype) const;
  Type TileType(int rows, int cols, DType dtype) const;
  std::string TypeText(const Type& t) const;
  // The .pto text: `header` comment lines, then the function.
  std::string Text(const std::string& header = "") const;
  // The run-time sizes of the symbols the parameters carry (what --dims must give).
  std::map<std::string, int64_t> Symbols() const;
  // --scalars values of the scalar parameters.
  std::map<std::string, std::string> Scalars() const;
  // The op names in the program ("tensor.add", ...), for reports and de-duplication.
  std::vector<std::string> OpNames() const;
  int CountOps() const;

  std::vector<DimVar> dims;
  std::vector<Value> values;
  std::vector<Param> params;
  std::vector<Stmt> body;
  int64_t symbol_count = 0;  // symbols made so far (their names: N, M, K, P, Q, ...)

 private:
  void PrintBlock(const std::vector<Stmt>& block, int indent, std::string& out) const;
  std::string PrintOp(const Stmt& s) const;
  std::string Name(int v) const;
};

// A new Stmt of form kOp.
Stmt MakeOp(std::string text, std::vector<int> args, std::vector<Type> types = {}, int result = -1);

// Drops ops whose results nothing live uses (except the ops that make `keep`), loops and scopes
// without effects, and parameters no statement uses. Returns whether anything was removed.
bool RemoveDeadCode(Program& p, const std::set<int>& keep = {});

// The results of ops that nothing uses.
std::set<int> DeadResults(Program& p);

// Drops the parameters no statement uses. Returns whether it removed any.
bool RemoveUnusedParams(Program& p);

// The values some statement uses.
std::set<int> UsedValues(Program& p);

// Rewrites every use of value `from` into a use of `to`.
void Substitute(Program& p, int from, int to);

}  // namespace ptox::fuzz
