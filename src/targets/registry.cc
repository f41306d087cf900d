// The target registry: every compiled-in target, each family best first, and name lookup (a
// family's name = its best available target).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "support/error.h"
#include "targets/cpu/cpu_target.h"
#include "targets/interp/interp_target.h"
#include "targets/target.h"

namespace ptox::targets {

std::shared_ptr<const Executable> Target::Interpret(const ir::Func&) const {
  PTOX_ICHECK(false) << "target '" << name() << "' compiles: the driver builds its executables";
  return nullptr;
}

const std::vector<const Target*>& AllTargets() {
  static const cpu::CpuTarget avx512(cpu::Isa::kAvx512), avx2(cpu::Isa::kAvx2),
      sve512(cpu::Isa::kSve, 512), sve256(cpu::Isa::kSve, 256), sve128(cpu::Isa::kSve, 128),
      sve(cpu::Isa::kSve), neon(cpu::Isa::kNeon), scalar(cpu::Isa::kScalar);
  static const InterpTarget interp;
  // Fixed SVE lengths first: at most one of them runs on a host, and its matmul is SVE code.
  static const std::vector<const Target*> all = {&avx512, &avx2, &sve512, &sve256, &sve128,
                                                 &sve,    &neon, &scalar, &interp};
  return all;
}

namespace {

// "interp, cpu, cpu-avx512, ..., cpu-scalar": what --target accepts (targets that are a
// family of their own, then the families of several, then their members).
std::string Names() {
  std::vector<std::string> single, families, members;
  for (const Target* t : AllTargets()) {
    if (t->name() == t->family()) {
      single.emplace_back(t->name());
      continue;
    }
    if (std::find(families.begin(), families.end(), t->family()) == families.end())
      families.emplace_back(t->family());
    members.emplace_back(t->name());
  }
  single.insert(single.end(), families.begin(), families.end());
  single.insert(single.end(), members.begin(), members.end());
  return fmt::format("{}", fmt::join(single, ", "));
}

}  // namespace

const Target& GetTarget(std::string_view name) {
  bool family = false;
  for (const Target* t : AllTargets()) {
    if (t->family() == name && t->name() != name) {
      family = true;
      if (t->Available(nullptr)) return *t;
    }
    if (t->name() != name) continue;
    std::string why;
    if (!t->Available(&why)) PTOX_UNSUPPORTED() << "target '" << name << "' cannot run here: " << why;
    return *t;
  }
  if (family) PTOX_UNSUPPORTED() << "no " << name << " target can run here";
  PTOX_UNSUPPORTED() << "unknown target '" << name << "' (available: " << Names() << ")";
}

}  // namespace ptox::targets
