// The CLI uses the process runner from src/support (shared with the CPU toolchain).
#pragma once

#include "support/subprocess.h"

namespace ptox::cli {
using ptox::FindExecutable;
using ptox::ProcessResult;
using ptox::RunProcess;
}  // namespace ptox::cli
