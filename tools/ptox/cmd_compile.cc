// `ptox compile FILE --target=T --emit=ir|src|bin [-o PATH] [--function NAME] [--no-fuse]
// [--caps=l2=N,...]`: what a compiled target makes of a program: the lowered IR, the generated
// source, or the shared object (--caps: ir and src only).
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "commands.h"
#include "ptox/ptox.h"
#include "tools/ptox/npy.h"

namespace ptox::cli {
namespace {

struct CompileArgs {
  std::string file;
  std::string target = "cpu";
  std::string function;
  Emit emit = Emit::kSource;
  std::string output;
  bool no_fuse = false;
  std::string caps;
};

int RunCompile(const CompileArgs& args) {
  Result<Program> prog = Program::FromFile(args.file);
  if (!prog.ok()) return Fail(prog.status());
  CompileOptions opts{args.target, args.function, args.emit, !args.no_fuse};
  if (!args.caps.empty()) {
    Result<TargetCaps> caps = ParseCaps(args.caps);
    if (!caps.ok()) return Fail(caps.status());
    opts.caps = *caps;
  }
  Result<std::string> out = Compile(*prog, opts);
  if (!out.ok()) return Fail(out.status());
  if (args.emit == Emit::kBinary) {
    std::string dest = args.output.empty() ? "a.so" : args.output;
    std::ifstream in(*out, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    if (!in) return Fail(Status(StatusCode::kRuntime, "runtime error: cannot read " + *out));
    // As every file the CLI writes: a full disk is a runtime error and leaves no partial file.
    if (Status s = WriteWholeFile(dest, {bytes.str()}); !s.ok()) return Fail(s);
    std::fprintf(stderr, "wrote %s\n", dest.c_str());
    return 0;
  }
  if (args.output.empty()) {
    std::fputs(out->c_str(), stdout);
    return 0;
  }
  if (Status s = WriteWholeFile(args.output, {*out}); !s.ok()) return Fail(s);
  return 0;
}

}  // namespace

Handler RegisterCompile(CLI::App& app) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* sub = app.add_subcommand("compile", "Compile a program for a target and emit a stage");
  sub->add_option("file", args->file, "a .pto file")->required();
  sub->add_option("--target", args->target,
                  "cpu, cpu-avx512, cpu-avx2, cpu-sve[128|256|512], cpu-neon or cpu-scalar");
  sub->add_option("--function", args->function, "the function to compile (default: the last)");
  const std::map<std::string, Emit> emits = {
      {"ir", Emit::kIr}, {"src", Emit::kSource}, {"bin", Emit::kBinary}};
  sub->add_option("--emit", args->emit, "ir, src or bin")
      ->transform(CLI::CheckedTransformer(emits, CLI::ignore_case));
  sub->add_option("-o,--output", args->output, "output file (default: stdout; bin: a.so)");
  sub->add_flag("--no-fuse", args->no_fuse, "one kernel per tensor op (skip fuse-elementwise)");
  sub->add_option("--caps", args->caps,
                  "override capabilities for --emit=ir|src: l2=1M,onchip=4M");
  return [args] { return RunCompile(*args); };
}

}  // namespace ptox::cli
