// RunOptions::check_nan on the interpreter target. Compiled targets scan the boxes each task writes
// (src/targets/host/launch.cc); the interpreter has no tasks, so it compares the outputs after the
// run with a copy taken before: an element of an out / inout float tensor that the run changed
// to a NaN fails it, as a task writing that NaN fails on a compiled target (docs/runtime.md has
// where the two can differ).
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "ptox/tensor.h"

namespace ptox::targets {

class NanWatch {
 public:
  // Copies every element of the float output tensors of `func` in `args` (already bound).
  NanWatch(const ir::Func& func, const std::vector<Arg>& args);
  // Throws kRuntime naming the first such element (row-major) of the first such output.
  void Check() const;

 private:
  struct Watched {
    const Tensor* tensor;
    std::string label;   // "%y (argument 1)"
    std::string before;  // the element bytes in row-major order
  };
  std::vector<Watched> watched_;
};

}  // namespace ptox::targets
