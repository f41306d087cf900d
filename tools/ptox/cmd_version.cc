// `ptox version [--verbose] [--json]`: the build manifest (ptox/manifest.h). Short: the version
// and commit. Verbose: also the source tree, build time, compiler and flags, and per target the
// identity the compile cache keys its kernels on, with its parts.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "commands.h"
#include "ptox/manifest.h"

namespace ptox::cli {

std::string ShortCommit(const std::string& commit, bool dirty) {
  if (commit == "unknown") return "unknown commit";
  return commit.substr(0, 12) + (dirty ? "-dirty" : "");
}

namespace {

void PrintVerbose(const BuildManifest& m) {
  fmt::print("ptox {}\n", m.version);
  fmt::print("commit       {}{}\n", m.commit,
             m.dirty ? " (dirty: the tree as built differed from it)" : "");
  fmt::print("source tree  {}\n", m.source_tree);
  fmt::print("built        {} ({} build)\n", m.build_time, m.build_type);
  fmt::print("compiler     {}\n", m.compiler);
  fmt::print("flags        {}\n", m.flags.empty() ? "(none beyond the project's)" : m.flags);
  for (const TargetManifest& t : m.targets) {
    fmt::print("target {}: {}\n", t.name,
               t.available ? "available" : "unavailable (" + t.why_unavailable + ")");
    if (!t.identity.empty()) fmt::print("  {:<15} {}\n", "cache identity", t.identity);
    for (const auto& [name, value] : t.parts) fmt::print("  {:<15} {}\n", name, value);
  }
}

}  // namespace

Handler RegisterVersion(CLI::App& app) {
  auto verbose = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand(
      "version", "Print the version; --verbose: the whole build manifest (commit, compiler, "
                 "flags, kernel library, the compile cache's identity per target)");
  sub->add_flag("-v,--verbose", *verbose, "the whole build manifest");
  sub->add_flag("--json", *json, "the whole build manifest as JSON");
  return [verbose, json] {
    const BuildManifest m = GetBuildManifest();
    if (*json) {
      fmt::print("{}\n", m.ToJson(2));
    } else if (*verbose) {
      PrintVerbose(m);
    } else {
      fmt::print("ptox {} ({})\n", m.version, ShortCommit(m.commit, m.dirty));
    }
    std::fflush(stdout);
    return 0;
  };
}

}  // namespace ptox::cli
