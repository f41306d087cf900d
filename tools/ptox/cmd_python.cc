// The subcommands written in Python: `ptox generate` (text from a language model) and `ptox
// quantize` (a W8A8 model). The models are written in ptox's Python language (python/ptox/models),
// so each runs `python -m <module>` with the same arguments: the interpreter of $PTOX_PYTHON,
// else the project's virtual environment, else python3 on PATH. Its exit code is the command's.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"

namespace ptox::cli {
namespace {

Handler RegisterPython(CLI::App& app, const char* name, const char* module,
                       const std::string& description) {
  CLI::App* cmd = app.add_subcommand(name, description);
  cmd->prefix_command();  // every argument goes to the Python program, --help included
  cmd->set_help_flag();
  return [cmd, name, module] {
    const std::string python = PythonExecutable();
    std::vector<std::string> args = {python, "-m", module};
    for (const std::string& a : cmd->remaining()) args.push_back(a);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "ptox %s: cannot run %s: %s (set PTOX_PYTHON to the Python that "
                 "has the ptox package: bash scripts/setup.sh and pip install .)\n",
                 name, python.c_str(), std::strerror(errno));
    return 2;
  };
}

}  // namespace

std::string PythonExecutable() {
  if (const char* p = std::getenv("PTOX_PYTHON"); p != nullptr && *p != '\0') return p;
  const std::string venv = std::string(PTOX_SOURCE_DIR) + "/.venv/bin/python";
  if (access(venv.c_str(), X_OK) == 0) return venv;
  return "python3";
}

Handler RegisterGenerate(CLI::App& app) {
  return RegisterPython(app, "generate", "ptox.models.generate",
                        "generate text with a language model (python -m ptox.models.generate; "
                        "`ptox generate --help` lists its options)");
}

Handler RegisterQuantize(CLI::App& app) {
  return RegisterPython(app, "quantize", "ptox.models.quantize",
                        "write a W8A8 model from a bf16 / f32 one (python -m "
                        "ptox.models.quantize; `ptox quantize --help` lists its options)");
}

}  // namespace ptox::cli
