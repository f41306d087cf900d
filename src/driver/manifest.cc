// The build manifest (ptox/manifest.h). The source half comes from ptox_build_info.inc, which
// cmake/build_info.cmake writes at every build; the toolchain half from ptox_build_config.inc,
// written when the build is configured; each target reports its own cache identity.
#include "ptox/manifest.h"

#include <nlohmann/json.hpp>

#include "ptox_build_config.inc"
#include "ptox_build_info.inc"
#include "support/hash.h"
#include "targets/target.h"

namespace ptox {

BuildManifest GetBuildManifest() {
  BuildManifest m;
  m.version = PTOX_VERSION;
  m.commit = PTOX_BUILD_COMMIT;
  m.dirty = PTOX_BUILD_DIRTY != 0;
  m.source_tree = PTOX_BUILD_SOURCE_TREE;
  m.build_time = PTOX_BUILD_TIME;
#if defined(__clang__)
  m.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  m.compiler = "g++ " __VERSION__;
#endif
  m.build_type = PTOX_BUILD_TYPE;
  m.flags = PTOX_BUILD_FLAGS;
  for (const targets::Target* t : targets::AllTargets()) {
    TargetManifest tm;
    tm.name = t->name();
    tm.available = t->Available(&tm.why_unavailable);
    if (const targets::CompiledTarget* c = t->compiled()) {
      tm.identity = HashHex(c->BuildIdentity());
      tm.parts = c->IdentityParts();
    }
    m.targets.push_back(std::move(tm));
  }
  return m;
}

std::string BuildManifest::ToJson(int indent) const {
  nlohmann::ordered_json j = {{"version", version},         {"commit", commit},
                              {"dirty", dirty},             {"source_tree", source_tree},
                              {"build_time", build_time},   {"compiler", compiler},
                              {"build_type", build_type},   {"flags", flags}};
  j["targets"] = nlohmann::ordered_json::array();
  for (const TargetManifest& t : targets) {
    nlohmann::ordered_json tj = {{"name", t.name}, {"available", t.available}};
    if (!t.available) tj["why_unavailable"] = t.why_unavailable;
    if (!t.identity.empty()) tj["identity"] = t.identity;
    for (const auto& [name, value] : t.parts) tj["parts"][name] = value;
    j["targets"].push_back(std::move(tj));
  }
  return j.dump(indent);
}

}  // namespace ptox
