// `ptox doctor [--json]`: checks every component ptox uses (doctor.h) and prints one
// `ok` / `warn` / `fail` line per check, each warn and fail with the command that fixes it, after
// the build manifest's identity. Exits 1 when a check fails.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "doctor.h"
#include "ptox/manifest.h"

namespace ptox::cli {
namespace {

using doctor::Check;
using doctor::Level;

constexpr const char* kLevel[] = {"ok", "warn", "fail"};

std::string Line(const Check& c) {
  std::string line = fmt::format("{:<4} {}: {}", kLevel[static_cast<int>(c.level)], c.what,
                                 c.detail);
  if (c.level != Level::kOk && !c.fix.empty()) line += fmt::format(" (fix: {})", c.fix);
  return line;
}

int RunDoctor(bool json) {
  const BuildManifest manifest = GetBuildManifest();
  doctor::Checks checks;
  checks.push_back({Level::kOk, "ptox",
                    fmt::format("{} ({}, {} build, {})", manifest.version,
                                ShortCommit(manifest.commit, manifest.dirty), manifest.build_type, manifest.build_time)});
  const bool cache_usable = doctor::Cache(checks);
  doctor::Toolchain(manifest, cache_usable, checks);
  doctor::Cpu(checks);
  doctor::Cores(checks);
  doctor::Python(manifest, checks);
  doctor::TestTools(checks);
  doctor::OptionalTools(checks);
  bool failed = false;
  for (const Check& c : checks) failed = failed || c.level == Level::kFail;
  if (json) {
    nlohmann::ordered_json j;
    j["ok"] = !failed;
    j["manifest"] = nlohmann::ordered_json::parse(manifest.ToJson());
    j["checks"] = nlohmann::ordered_json::array();
    for (const Check& c : checks) {
      nlohmann::ordered_json cj = {{"status", kLevel[static_cast<int>(c.level)]},
                                   {"what", c.what}, {"detail", c.detail}};
      if (c.level != Level::kOk) cj["fix"] = c.fix;
      j["checks"].push_back(std::move(cj));
    }
    fmt::print("{}\n", j.dump(2));
  } else {
    for (const Check& c : checks) fmt::print("{}\n", Line(c));
  }
  std::fflush(stdout);
  return failed ? 1 : 0;
}

}  // namespace

Handler RegisterDoctor(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand(
      "doctor", "Check what ptox uses (compilers, kernel library, cache, cores, Python package, "
                "default model, MPI, Arm tools, CUDA) and say how to fix what is wrong");
  sub->add_flag("--json", *json, "print the manifest and the checks as JSON");
  return [json] { return RunDoctor(*json); };
}

}  // namespace ptox::cli
