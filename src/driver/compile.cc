// Compile = lower (passes) -> source -> cache key -> cached or freshly built shared object -> load.
#include "driver/compile.h"

#include <map>
#include <mutex>

#include "driver/cache.h"
#include "ir/printer.h"
#include "passes/pipeline.h"

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
std::string KeyOf(const targets::Target& target, const std::string& source) {
  return HashHex(source + "\n" + target.BuildIdentity());
}

std::string BuildCached(const targets::Target& target, const std::string& source,
                        const std::string& key) {
  CompileCache cache;
  if (std::optional<std::string> path = cache.Lookup(key)) return *path;
  return cache.Insert(key, [&](const std::string& tmp) { target.Build(source, tmp); });
}

}  // namespace

std::string CompileToCache(const targets::Target& target, const ir::Func& func, bool fuse) {
  std::string source = target.Source(Lower(target.caps(), func, fuse));
  return BuildCached(target, source, KeyOf(target, source));
}

std::shared_ptr<const targets::Executable> Compile(const targets::Target& target,
                                                   const ir::Func& func, bool fuse) {
  std::string source = target.Source(Lower(target.caps(), func, fuse));
  std::string key = KeyOf(target, source);

  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const targets::Executable>> loaded;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;
  auto exe = target.Load(BuildCached(target, source, key));
  loaded[key] = exe;
  return exe;
}

}  // namespace ptox::driver
