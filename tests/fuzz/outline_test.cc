// Calls over the program fuzzer's programs: random runs of statements of each generated program
// (tensor and tile level, inside incore scopes and out, calls of earlier helpers included) are
// moved into functions that the program then calls. The outlined module must verify, print and
// parse back to itself, and inline-calls must give back exactly the original function: the same
// statements, types and names (so the same results on every target).
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <set>

#include "generator.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "ir/walk.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace ptox::fuzz {
namespace {

// Every value `block` and its nested blocks read.
void Reads(const ir::Block& block, std::set<const ir::ValueNode*>& out) {
  ir::ForEachStmt(block, [&](const ir::Stmt& s) {
    ir::ForEachOperand(s, [&](const ir::Operand& o) {
      if (o.is_value()) out.insert(o.value().get());
    });
  });
}

// Outlines statements [begin, end) of blocks found by a walk, into function @name.
class Outliner {
 public:
  Outliner(std::mt19937_64& rng, std::string name) : rng_(rng), name_(std::move(name)) {}

  // `entry` with one run of its statements replaced by a call (false: none found).
  bool Run(ir::Module& module) {
    const ir::Func& entry = *module.funcs.back();
    std::vector<Candidate> candidates;
    Collect(entry.body, false, candidates);
    if (candidates.empty()) return false;
    const Candidate c = candidates[rng_() % candidates.size()];
    target_ = c.block;
    begin_ = c.begin + rng_() % (c.end - c.begin);
    end_ = begin_ + 1 + rng_() % (c.end - begin_);
    incore_ = c.incore;
    ir::Func out = entry;
    std::set<const ir::ValueNode*> after;  // what the rest of the function reads
    Reads(WithoutRun(entry.body), after);
    out.body = Rewrite(entry.body, after);
    if (!helper_) return false;
    module.funcs.back() = std::make_shared<const ir::Func>(std::move(out));
    module.funcs.insert(module.funcs.end() - 1, helper_);
    return true;
  }

 private:
  struct Candidate {
    const ir::Block* block;
    size_t begin, end;  // a maximal run of ops and calls
    bool incore;
  };

  static bool Movable(const ir::Stmt& s) {
    return s.kind() == ir::StmtKind::kOp || s.kind() == ir::StmtKind::kCall;
  }

  void Collect(const ir::Block& block, bool incore, std::vector<Candidate>& out) {
    for (size_t i = 0; i < block.size();) {
      if (!Movable(*block[i])) {
        const bool inner = incore || block[i]->kind() == ir::StmtKind::kIncore;
        ir::ForEachBody(*block[i], [&](const ir::Block& b) { Collect(b, inner, out); });
        ++i;
        continue;
      }
      size_t j = i;
      while (j < block.size() && Movable(*block[j])) ++j;
      out.push_back({&block, i, j, incore});
      i = j;
    }
  }

  // `block` without the run (for the reads of everything else).
  ir::Block WithoutRun(const ir::Block& block) {
    ir::Block out;
    for (size_t i = 0; i < block.size(); ++i) {
      if (&block == target_ && i >= begin_ && i < end_) continue;
      out.push_back(ir::MapBodies(block[i], [&](const ir::Block& b) { return WithoutRun(b); }));
    }
    return out;
  }

  ir::Block Rewrite(const ir::Block& block, const std::set<const ir::ValueNode*>& after) {
    if (&block != target_) {
      ir::Block out;
      for (const ir::StmtRef& s : block)
        out.push_back(ir::MapBodies(s, [&](const ir::Block& b) { return Rewrite(b, after); }));
      return out;
    }
    ir::Block run(block.begin() + begin_, block.begin() + end_);
    // Parameters: the values the run reads and does not define, in order of first use.
    std::set<const ir::ValueNode*> defined;
    ir::ForEachDefinition(run, [&](const ir::Value& v) { defined.insert(v.get()); });
    std::vector<ir::Operand> args;
    std::set<const ir::ValueNode*> seen, written;
    ir::ForEachStmt(run, [&](const ir::Stmt& s) {
      ir::ForEachOperand(s, [&](const ir::Operand& o) {
        if (o.is_value() && !defined.count(o.value().get()) && seen.insert(o.value().get()).second)
          args.push_back(o);
      });
      if (s.kind() == ir::StmtKind::kOp) {
        const auto& op = ir::As<ir::OpStmt>(s);
        const int w = ir::WrittenOperandPos(ir::FamilyOf(op.op()));
        if (w >= 0 && static_cast<size_t>(w) < op.args().size())
          written.insert(op.args()[w].value().get());
      }
    });
    // Results: what the run defines that anything else reads.
    std::vector<ir::Value> outputs;
    ir::ForEachDefinition(run, [&](const ir::Value& v) {
      if (after.count(v.get())) outputs.push_back(v);
    });
    // A symbol a tensor.empty of the run introduces is the helper's own (inline-calls renames it
    // apart): a run whose results carry one is not outlined.
    std::set<std::string> bound;
    for (const ir::Operand& a : args)
      for (const ir::Dim& d : a.type().shape()) bound.insert(d.sym);
    for (const ir::Value& v : outputs)
      for (const ir::Dim& d : v->type.shape())
        if (!d.is_static() && v->type.is_tensor() && !bound.count(d.sym)) return block;
    auto helper = std::make_shared<ir::Func>();
    helper->name = name_;
    helper->incore = incore_;
    passes::Substitution subst;
    for (const ir::Operand& a : args) {
      const ir::Value& v = a.value();
      ir::Value p = ir::MakeValue(v->type, v->name);
      const bool tensor = v->type.is_tensor();
      helper->params.push_back(
          {p, tensor && written.count(v.get()) ? ir::Direction::kInOut : ir::Direction::kIn});
      subst[v.get()] = p;
    }
    ir::Block body = passes::Clone(run, subst);
    std::vector<ir::Operand> returned;
    std::vector<ir::Value> results;
    for (const ir::Value& v : outputs) {
      returned.push_back(subst.at(v.get()));
      helper->results.push_back(v->type);
      results.push_back(v);  // the call defines the original values: later uses stay valid
    }
    if (!returned.empty()) body.push_back(ir::YieldStmt::Make(returned));
    helper->body = std::move(body);
    helper_ = helper;
    ir::Block out(block.begin(), block.begin() + begin_);
    out.push_back(ir::CallStmt::Make(name_, std::move(args), results, run.front()->span()));
    out.insert(out.end(), block.begin() + end_, block.end());
    return out;
  }

  std::mt19937_64& rng_;
  std::string name_;
  const ir::Block* target_ = nullptr;
  size_t begin_ = 0, end_ = 0;
  bool incore_ = false;
  ir::FuncRef helper_;
};

// Outlines up to three runs of program `seed`, checking each step; returns how many it made.
int CheckOutlining(Level level, uint64_t seed) {
  const std::string text = Generate(level, seed).Text();
  ir::Module original = ir::Parse(text, "fuzz.pto");
  ir::Verify(original);
  const std::string want = ir::Print(original);
  std::mt19937_64 rng(seed);
  ir::Module m = original;
  int made = 0;
  for (int k = 0; k < 3; ++k) {
    if (!Outliner(rng, "helper" + std::to_string(k)).Run(m)) break;
    ++made;
    SCOPED_TRACE(ir::Print(m));
    ir::Verify(m);
    const std::string printed = ir::Print(m);
    EXPECT_EQ(ir::Print(ir::Parse(printed, "outlined.pto")), printed);
    const ir::Module inlined = passes::InlineCalls(m, {});
    EXPECT_EQ(inlined.funcs.size(), 1u);
    // A symbol a helper's tensor.empty introduces was renamed apart: {M_helper1} is {M}.
    static const std::regex renamed("(_helper[0-9]+)+\\}");
    EXPECT_EQ(std::regex_replace(ir::Print(inlined), renamed, "}"), want) << "seed " << seed;
  }
  return made;
}

// Most programs get three helpers (a check that cannot fail by outlining nothing).
TEST(Outline, TensorProgramsInlineBackToThemselves) {
  int made = 0;
  for (uint64_t seed = 0; seed < 150; ++seed) made += CheckOutlining(Level::kTensor, seed);
  EXPECT_GT(made, 300);
}

TEST(Outline, TileProgramsInlineBackToThemselves) {
  int made = 0;
  for (uint64_t seed = 0; seed < 150; ++seed) made += CheckOutlining(Level::kTile, seed);
  EXPECT_GT(made, 300);
}

}  // namespace
}  // namespace ptox::fuzz
