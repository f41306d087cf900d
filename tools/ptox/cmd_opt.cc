// `ptox opt FILE [--passes=a,b | --pipeline] [--print-ir-after-all] [--list-passes]`: parse,
// verify, transform, and print the IR to stdout (per-pass dumps go to stderr).
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
  bool pipeline = false;
  bool print_after_all = false;
  bool list = false;
};

int RunOpt(const OptArgs& args) {
  if (args.list) {
    for (const auto& [name, summary] : ListPasses())
      std::printf("%-16s %s\n", name.c_str(), summary.c_str());
    return 0;
  }
  if (args.file.empty()) return Fail(Status(StatusCode::kInvalid, "error: no input file"));
  Result<Program> prog = Program::FromFile(args.file);
  if (!prog.ok()) return Fail(prog.status());
  TransformOptions opts;
  opts.passes = args.pipeline ? DefaultPipeline() : args.passes;
  if (args.print_after_all) {
    opts.after_pass = [](std::string_view pass, const std::string& ir) {
      std::fprintf(stderr, "// ----- IR after %.*s -----\n%s", static_cast<int>(pass.size()),
                   pass.data(), ir.c_str());
    };
  }
  Result<Program> out = Transform(*prog, opts);
  if (!out.ok()) return Fail(out.status());
  std::fputs(out->ToText().c_str(), stdout);
  return 0;
}

}  // namespace

Handler RegisterOpt(CLI::App& app) {
  auto args = std::make_shared<OptArgs>();
  CLI::App* sub = app.add_subcommand("opt", "Parse, verify and transform a program; print the IR");
  sub->add_option("file", args->file, "a .pto file");
  sub->add_option("--passes", args->passes, "comma-separated passes to run, in order")
      ->delimiter(',');
  sub->add_flag("--pipeline", args->pipeline, "run the default pipeline");
  sub->add_flag("--print-ir-after-all", args->print_after_all,
                "print the IR to stderr after every pass");
  sub->add_flag("--list-passes", args->list, "list the passes and exit");
  return [args] { return RunOpt(*args); };
}

}  // namespace ptox::cli
