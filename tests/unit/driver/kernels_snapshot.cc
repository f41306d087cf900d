// Runs the driver tests against a private copy of kernels/ (PTOX_KERNELS_DIR): cache keys hash the
// kernel headers, so a header edited while the tests run would otherwise make this process and
// the CLI processes it spawns compute different keys for the same program.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/unit/driver/driver_test_util.h"

namespace ptox::driver::testing {
namespace {

class KernelsSnapshot : public ::testing::Environment {
 public:
  void SetUp() override {
    dir_ = std::make_unique<TempDir>();
    fs::copy(fs::path(PTOX_EXAMPLES_DIR) / ".." / "kernels", *dir_ / "kernels",
             fs::copy_options::recursive);
    env_ = std::make_unique<ScopedEnv>("PTOX_KERNELS_DIR", dir_->path());
  }
  void TearDown() override {
    env_.reset();
    dir_.reset();
  }

 private:
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<ScopedEnv> env_;
};

const auto* const kSnapshot = ::testing::AddGlobalTestEnvironment(new KernelsSnapshot);

}  // namespace
}  // namespace ptox::driver::testing
