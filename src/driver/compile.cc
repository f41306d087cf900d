// Compile = lower (passes) -> source -> cache key -> cached or freshly built artifact -> load; the
// interpreter target runs the IR as it is.
#include "driver/compile.h"

#include <map>
#include <mutex>

#include "driver/cache.h"
#include "ir/printer.h"
#include "passes/pipeline.h"
#include "ptox/fault.h"
#include "support/error.h"

namespace ptox::driver {

ir::Func Lower(const passes::Capabilities& caps, const ir::Func& func, bool fuse) {
  ir::Module m;
  m.funcs.push_back(std::make_shared<const ir::Func>(func));
  passes::PipelineOptions options;
  options.context.caps = caps;
  ir::Module lowered = passes::RunPipeline(m, passes::DefaultPipeline(fuse), options);
  return *lowered.funcs[0];
}

namespace {

// The cache key of a generated source for a target: everything that determines the binary.
std::string KeyOf(const targets::CompiledTarget& target, const std::string& source) {
  return HashHex(source + "\n" + target.BuildIdentity());
}

// The entry for `key`: cached, or built now (PTOX_FAULT=compile:N fails the N-th build after
// the compiler ran, as a compiler crash would).
CompileCache::Built BuildCached(const targets::CompiledTarget& target, const std::string& source,
                                const std::string& key, bool* built = nullptr) {
  CompileCache cache;
  const std::string identity = HashHex(target.BuildIdentity());
  const std::string ext(target.artifact_extension());
  if (std::optional<std::string> path = cache.Lookup(key, identity, ext))
    return {*path, false, ""};
  if (built) *built = true;
  return cache.Insert(key, identity, ext, [&](const std::string& tmp) {
    target.Build(source, key, tmp);
    if (fault::ShouldFail(fault::Site::kCompile))
      throw Error(StatusCode::kToolchain,
                  "toolchain error: the C++ compiler failed (injected by PTOX_FAULT)");
  });
}

std::shared_ptr<const targets::Executable> Build(const targets::CompiledTarget& target,
                                                 const ir::Func& func, bool fuse, bool* built) {
  std::string source = target.Source(Lower(target.caps(), func, fuse));
  std::string key = KeyOf(target, source);

  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const targets::Executable>> loaded;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;
  CompileCache::Built artifact = BuildCached(target, source, key, built);
  std::shared_ptr<const targets::Executable> exe;
  try {
    exe = target.Load(artifact.path, key);
  } catch (...) {
    CompileCache::Discard(artifact);
    throw;
  }
  CompileCache::Discard(artifact);  // a loaded object needs no file
  loaded[key] = exe;
  return exe;
}

}  // namespace

std::string CompileToCache(const targets::CompiledTarget& target, const ir::Func& func, bool fuse) {
  std::string source = target.Source(Lower(target.caps(), func, fuse));
  return BuildCached(target, source, KeyOf(target, source)).path;
}

std::shared_ptr<const targets::Executable> Compile(const targets::Target& target,
                                                   const ir::Func& func, bool fuse, bool* built) {
  if (built) *built = false;
  if (const targets::CompiledTarget* compiled = target.compiled())
    return Build(*compiled, func, fuse, built);
  return target.Interpret(func);
}

}  // namespace ptox::driver
