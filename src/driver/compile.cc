// Compile = lower (passes) -> source -> cache key -> cached or freshly built artifact -> load; the
// interpreter target runs the IR as it is.
#include "driver/compile.h"

#include <map>
#include <mutex>
#include <optional>
#include <string>

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

// The builds the compiler rejected in this process, by cache key: the same key fails the same
// way (targets::BuildRejected), so a program called again gets the first call's error at the
// cost of lowering it, not of running the compiler (about a second) once more.
class Rejections {
 public:
  std::optional<std::string> Find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = messages_.find(key);
    if (it == messages_.end()) return std::nullopt;
    return it->second;
  }
  void Add(const std::string& key, const std::string& message) {
    std::lock_guard<std::mutex> lock(mu_);
    messages_.emplace(key, message);
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    messages_.clear();
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> messages_;
};

Rejections& Rejected() {
  static Rejections* rejected = new Rejections;  // never destroyed: used until the process ends
  return *rejected;
}

// The entry for `key`: cached, or built now (PTOX_FAULT=compile:N fails the N-th build after
// the compiler ran, as a compiler crash would). A build the compiler rejected, in this process
// or (recorded in the cache) in another one, throws its error again without a compile.
CompileCache::Built BuildCached(const targets::CompiledTarget& target, const std::string& source,
                                const std::string& key) {
  Rejections& rejected = Rejected();
  CompileCache cache;
  const std::string identity = HashHex(target.BuildIdentity());
  const std::string ext(target.artifact_extension());
  if (std::optional<std::string> path = cache.Lookup(key, identity, ext))
    return {*path, false, ""};
  if (std::optional<std::string> message = rejected.Find(key))
    throw Error(StatusCode::kToolchain, *message);
  if (std::optional<Status> failed = cache.LookupFailure(key, identity)) {
    rejected.Add(key, failed->message());
    throw Error(failed->code(), failed->message());
  }
  try {
    return cache.Insert(key, identity, ext, [&](const std::string& tmp, const std::string& stem) {
      target.Build(source, key, tmp, stem);
      if (fault::ShouldFail(fault::Site::kCompile))
        throw Error(StatusCode::kToolchain,
                    "toolchain error: the C++ compiler failed (injected by PTOX_FAULT)");
    });
  } catch (const targets::BuildRejected& e) {
    rejected.Add(key, e.what());
    throw;
  }
}

std::shared_ptr<const targets::Executable> Build(const targets::CompiledTarget& target,
                                                 const ir::Func& func, bool fuse) {
  std::string source = target.Source(Lower(target.caps(), func, fuse));
  std::string key = KeyOf(target, source);

  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const targets::Executable>> loaded;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;
  CompileCache::Built built = BuildCached(target, source, key);
  std::shared_ptr<const targets::Executable> exe;
  try {
    exe = target.Load(built.path, key);
  } catch (...) {
    CompileCache::Discard(built);
    throw;
  }
  CompileCache::Discard(built);  // a loaded object needs no file
  loaded[key] = exe;
  return exe;
}

}  // namespace

void ForgetRejectedBuilds() { Rejected().Clear(); }

std::string CompileToCache(const targets::CompiledTarget& target, const ir::Func& func, bool fuse) {
  std::string source = target.Source(Lower(target.caps(), func, fuse));
  return BuildCached(target, source, KeyOf(target, source)).path;
}

std::shared_ptr<const targets::Executable> Compile(const targets::Target& target,
                                                   const ir::Func& func, bool fuse) {
  if (const targets::CompiledTarget* compiled = target.compiled())
    return Build(*compiled, func, fuse);
  return target.Interpret(func);
}

}  // namespace ptox::driver
