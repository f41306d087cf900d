// The build manifest: which source this ptox was built from, how, and the identity the compile
// cache keys each target's kernels on. `ptox version --verbose` prints it, `ptox doctor` compares
// the Python package's with the CLI's, and every benchmark's JSON records it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ptox {

struct TargetManifest {
  std::string name;
  bool available = false;
  std::string why_unavailable;
  // XXH3-128 of the build identity the compile cache keys this target's kernels on (with each
  // kernel's source); empty for a target that compiles nothing (the interpreter).
  std::string identity;
  // That identity's parts a person reads, in order: the kernel compiler, its flags, the kernel
  // library's folder and hash, the ABI version.
  std::vector<std::pair<std::string, std::string>> parts;
};

struct BuildManifest {
  std::string version;
  std::string commit;       // "unknown" outside a git checkout of ptox
  bool dirty = false;       // the tree as built differed from the commit
  std::string source_tree;  // git tree id of the tree as built: equal ids, equal sources
  std::string build_time;   // UTC, when a build of this source state first ran
  std::string compiler;     // what compiled ptox itself
  std::string build_type;   // the CMake build type
  std::string flags;        // the compile flags that build type adds
  std::vector<TargetManifest> targets;  // every compiled-in target, best of each family first

  // {"version": ..., "targets": [{"name": ..., "parts": {...}}, ...]}; indent < 0: one line.
  std::string ToJson(int indent = -1) const;
};

BuildManifest GetBuildManifest();

}  // namespace ptox
