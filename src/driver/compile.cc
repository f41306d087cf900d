// Compile = lower (passes) -> source -> cache key -> cached or freshly built shared object -> load.
#include "driver/compile.h"

#include <map>
#include <mutex>

#include "driver/cache.h"
#include "ir/printer.h"
#include "passes/pipeline.h"

namespace ptox::driver {

ir::Func Lower(const ir::Func& func) {
  ir::Module m;
  m.funcs.push_back(std::make_shared<const ir::Func>(func));
  ir::Module lowered = passes::RunPipeline(m, passes::DefaultPipeline());
  return *lowered.funcs[0];
}

std::shared_ptr<const targets::Executable> Compile(const targets::Target& target,
                                                   const ir::Func& func) {
  ir::Func lowered = Lower(func);
  std::string source = target.Source(lowered);
  std::string key = HashHex(source + "\n" + target.BuildIdentity());

  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const targets::Executable>> loaded;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;

  CompileCache cache;
  std::optional<std::string> path = cache.Lookup(key);
  if (!path) {
    path = cache.Insert(key, [&](const std::string& tmp) { target.Build(source, tmp); });
  }
  auto exe = target.Load(*path);
  loaded[key] = exe;
  return exe;
}

}  // namespace ptox::driver
