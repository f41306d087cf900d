// `ptox opt FILE [--passes=a,b] [--print-ir-after-all]`: parse, verify, run passes, print the IR.
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "ptox/ptox.h"

namespace ptox::cli {
namespace {

struct OptArgs {
  std::string file;
  std::vector<std::string> passes;
  bool print_after_all = false;
};

int RunOpt(const OptArgs& args) {
  Result<Program> prog = Program::FromFile(args.file);
  if (!prog.ok()) return Fail(prog.status());
  // Passes arrive with the tensor-level pipeline; until then every name is unknown.
  for (const std::string& p : args.passes)
    return Fail(Status(StatusCode::kInvalid, "error: unknown pass '" + p + "'"));
  std::fputs(prog->ToText().c_str(), stdout);
  return 0;
}

}  // namespace

Handler RegisterOpt(CLI::App& app) {
  auto args = std::make_shared<OptArgs>();
  CLI::App* sub = app.add_subcommand("opt", "Parse, verify and transform a program; print the IR");
  sub->add_option("file", args->file, "a .pto file")->required();
  sub->add_option("--passes", args->passes, "comma-separated passes to run")->delimiter(',');
  sub->add_flag("--print-ir-after-all", args->print_after_all,
                "print the IR to stderr after every pass");
  return [args] { return RunOpt(*args); };
}

}  // namespace ptox::cli
