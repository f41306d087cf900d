// The CPU target family: one Target per ISA (scalar; AVX2, AVX-512 on x86-64; NEON, SVE and SVE
// at a fixed length on AArch64).
#pragma once

#include <string>
#include <vector>

#include "kernels/abi.h"
#include "targets/target.h"

namespace ptox::targets::cpu {

using EntryFn = abi::EntryFn;

enum class Isa { kScalar, kAvx2, kAvx512, kNeon, kSve };

class CpuTarget final : public CompiledTarget {
 public:
  // sve_bits: 0, or for Isa::kSve a fixed vector length (cpu-sve256: code for 256-bit SVE only,
  // whose vectors have a size, so the matmul's register block can hold them).
  explicit CpuTarget(Isa isa, int sve_bits = 0);
  std::string_view name() const override;
  std::string_view family() const override { return "cpu"; }
  bool Available(std::string* why) const override;
  const Capabilities& caps() const override { return caps_; }
  std::string Source(const ir::Func& func) const override;
  std::string BuildIdentity() const override;
  std::vector<std::pair<std::string, std::string>> IdentityParts() const override;
  std::string_view artifact_extension() const override { return "so"; }
  std::unique_ptr<ProgramState> NewProgramState() const override;
  void Build(const std::string& source, const std::string& key, const std::string& out_path,
             const std::string& prelude_path, const std::string& failure_stem) const override;
  // The prelude is the source's tile-library includes, precompiled as a GCC / Clang header.
  std::string Prelude(const std::string& source) const override;
  void BuildPrelude(const std::string& prelude, const std::string& key,
                    const std::string& out_path) const override;
  std::string_view prelude_extension() const override { return "h.gch"; }
  std::shared_ptr<const Executable> Load(const std::string& path,
                                         const std::string& key) const override;
  // The compiler flags for this ISA (the ISA part decides which instructions may appear).
  std::vector<std::string> Flags() const;

 private:
  Isa isa_;
  int sve_bits_;
  std::string name_;
  Capabilities caps_;
};

}  // namespace ptox::targets::cpu
