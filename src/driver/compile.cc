// Compile = lower (passes) -> source -> cache key -> cached or freshly built artifact -> load; the
// interpreter target runs the IR as it is.
#include "driver/compile.h"

#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

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

// Results computed once per key in this process, by the first thread that asks; threads asking
// for the same key meanwhile wait for it, threads asking for other keys run at once (a model's
// step programs compile side by side). A failure is not kept: the next call tries again.
template <typename T>
class OncePerKey {
 public:
  T Get(const std::string& key, const std::function<T()>& make) {
    std::promise<T> promise;
    std::shared_future<T> pending;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto [it, fresh] = results_.try_emplace(key);
      if (fresh) {
        it->second = promise.get_future().share();
      } else {
        pending = it->second;
      }
    }
    if (pending.valid()) return pending.get();  // the first thread's result, or its exception
    try {
      T value = make();
      promise.set_value(value);
      return value;
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        results_.erase(key);
      }
      promise.set_exception(std::current_exception());
      throw;
    }
  }

  // Drops the result for `key`: the next Get makes it again.
  void Forget(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    results_.erase(key);
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_future<T>> results_;
};

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

// PTOX_PCH=0: programs build without a prelude (no precompiled headers on the CPU targets), as
// they would where the compiler has none; the binaries are the same. For comparisons, or where
// the preludes' disk space (50 to 100 MB each) matters more than compile time.
bool PreludesEnabled() {
  const char* env = std::getenv("PTOX_PCH");
  return env == nullptr || std::string_view(env) != "0";
}

// The built prelude of `source` (a precompiled header of the tile library on the CPU targets):
// cached in the cache's prelude folder under a key of its text and the build identity, built now
// on a miss. "" when the target has none for this source, the cache cannot keep it, or it fails
// to build: a prelude only saves time, so its failure is never the program's (Build then reports
// the program's own errors).
std::string PreludeFor(const targets::CompiledTarget& target, const CompileCache& cache,
                       const std::string& source, const std::string& identity) {
  const std::string prelude = PreludesEnabled() ? target.Prelude(source) : "";
  if (prelude.empty()) return "";
  const std::string key = HashHex("prelude\n" + prelude + "\n" + target.BuildIdentity());
  const std::string ext(target.prelude_extension());
  // Looked up (and built) once per process, and again only when the file went (a cleared
  // cache); programs compiling side by side wait for one build.
  static OncePerKey<std::string> preludes;
  const std::string id = cache.dir() + "\n" + key;
  auto find_or_build = [&]() -> std::string {
    try {  // a prelude folder that cannot be made or trusted means programs build without
      CompileCache folder(cache.dir() + "/" + kPreludeFolder);
      if (std::optional<std::string> path = folder.Lookup(key, identity, ext)) return *path;
      if (!folder.writable()) return "";
      CompileCache::Built built =
          folder.Insert(key, identity, ext, [&](const std::string& tmp, const std::string&) {
            target.BuildPrelude(prelude, key, tmp);
          });
      if (!built.temporary) return built.path;
      CompileCache::Discard(built);
    } catch (const Error&) {
    }
    return "";
  };
  std::string path = preludes.Get(id, find_or_build);
  if (!path.empty() && access(path.c_str(), R_OK) != 0) {
    preludes.Forget(id);
    path = preludes.Get(id, find_or_build);
  }
  return path;
}

// The entry for `key`: cached, or built now (PTOX_FAULT=compile:N fails the N-th build after
// the compiler ran, as a compiler crash would). A build the compiler rejected, in this process
// or (recorded in the cache) in another one, throws its error again without a compile.
CompileCache::Built BuildCached(const targets::CompiledTarget& target, const std::string& source,
                                const std::string& key, bool* built = nullptr) {
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
  if (built) *built = true;
  const std::string prelude = cache.writable() ? PreludeFor(target, cache, source, identity) : "";
  try {
    return cache.Insert(key, identity, ext, [&](const std::string& tmp, const std::string& stem) {
      target.Build(source, key, tmp, prelude, stem);
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
                                                 const ir::Func& func, bool fuse, bool* built) {
  std::string source = target.Source(Lower(target.caps(), func, fuse));
  std::string key = KeyOf(target, source);
  using ExecutablePtr = std::shared_ptr<const targets::Executable>;
  static OncePerKey<ExecutablePtr> loaded;
  return loaded.Get(key, [&]() -> ExecutablePtr {
    CompileCache::Built artifact = BuildCached(target, source, key, built);
    ExecutablePtr exe;
    try {
      exe = target.Load(artifact.path, key);
    } catch (...) {
      CompileCache::Discard(artifact);
      throw;
    }
    CompileCache::Discard(artifact);  // a loaded object needs no file
    return exe;
  });
}

}  // namespace

void ForgetRejectedBuilds() { Rejected().Clear(); }

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
