// `ptox run` (placeholder until the subcommand lands).
#include "commands.h"

namespace ptox::cli {
Handler RegisterRun(CLI::App& app) {
  app.add_subcommand("run", "not implemented yet");
  return [] { return Fail(Status(StatusCode::kUnsupported, "unsupported: ptox run is not implemented yet")); };
}
}  // namespace ptox::cli
