// The target registry: every compiled-in target, best first, and name lookup ("cpu" = best).
#include "targets/cpu/cpu_target.h"
#include "targets/target.h"

namespace ptox::targets {

const std::vector<const Target*>& AllTargets() {
  static const cpu::CpuTarget avx512(cpu::Isa::kAvx512), avx2(cpu::Isa::kAvx2),
      scalar(cpu::Isa::kScalar);
  static const std::vector<const Target*> all = {&avx512, &avx2, &scalar};
  return all;
}

const Target& GetTarget(std::string_view name) {
  std::string names;
  for (const Target* t : AllTargets()) {
    if (name == "cpu" && t->name().substr(0, 4) == "cpu-" && t->Available(nullptr)) return *t;
    if (t->name() != name) {
      names += ", " + std::string(t->name());
      continue;
    }
    std::string why;
    if (!t->Available(&why)) PTOX_UNSUPPORTED() << "target '" << name << "' cannot run here: " << why;
    return *t;
  }
  if (name == "cpu") PTOX_UNSUPPORTED() << "no CPU target can run here";
  PTOX_UNSUPPORTED() << "unknown target '" << name << "' (available: interp, cpu" << names << ")";
}

}  // namespace ptox::targets
