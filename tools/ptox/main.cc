// ptox CLI entry point: `ptox <run|bench|compile|opt|cache|doctor|generate|quantize|version> ...`, `ptox --version`.
// Artifacts go to stdout, diagnostics to stderr.
#include <cstdio>
#include <exception>
#include <map>

#include "commands.h"
#include "ptox/dist.h"

namespace ptox::cli {

int Fail(const Status& status) {
  // One rank of a distributed run ends them all, naming itself: the others may be waiting for it.
  if (ThisRank().world_size > 1) AbortRun(status.message(), ExitCode(status));
  std::fprintf(stderr, "%s\n", status.message().c_str());
  return ExitCode(status);
}

}  // namespace ptox::cli

int main(int argc, char** argv) {
  using namespace ptox::cli;
  CLI::App app{"ptox: write a tile program once, run it on every target", "ptox"};
  app.set_version_flag("--version", std::string("ptox ") + PTOX_VERSION);
  app.require_subcommand(1);
  std::map<CLI::App*, Handler> handlers;
  for (auto reg :
       {RegisterRun, RegisterBench, RegisterCompile, RegisterOpt, RegisterCache, RegisterDoctor,
        RegisterGenerate, RegisterQuantize, RegisterVersion}) {
    size_t before = app.get_subcommands({}).size();
    Handler h = reg(app);
    handlers[app.get_subcommands({})[before]] = std::move(h);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 1;  // usage errors are invalid input
  }
  try {
    for (auto& [sub, handler] : handlers)
      if (sub->parsed()) return handler();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return 70;
  }
  return 1;
}
