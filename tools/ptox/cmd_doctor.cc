// `ptox doctor` (placeholder until the subcommand lands).
#include "commands.h"

namespace ptox::cli {
Handler RegisterDoctor(CLI::App& app) {
  app.add_subcommand("doctor", "not implemented yet");
  return [] { return Fail(Status(StatusCode::kUnsupported, "unsupported: ptox doctor is not implemented yet")); };
}
}  // namespace ptox::cli
