// `ptox cache info|clear`: the persistent compile cache.
#include <cstdio>
#include <string>

#include "commands.h"
#include "ptox/ptox.h"

namespace ptox::cli {

Handler RegisterCache(CLI::App& app) {
  auto action = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("cache", "Show or clear the compile cache ($PTOX_CACHE_DIR)");
  sub->add_option("action", *action, "info or clear")
      ->required()
      ->check(CLI::IsMember({"info", "clear"}));
  return [action] {
    if (*action == "clear") {
      Result<int64_t> n = ClearCache();
      if (!n.ok()) return Fail(n.status());
      std::printf("removed %lld files\n", static_cast<long long>(*n));
      return 0;
    }
    Result<CacheInfo> info = GetCacheInfo();
    if (!info.ok()) return Fail(info.status());
    std::printf("dir: %s\nentries: %lld\nbytes: %lld\ncorrupt: %lld\n", info->dir.c_str(),
                static_cast<long long>(info->entries), static_cast<long long>(info->bytes),
                static_cast<long long>(info->corrupt));
    return 0;
  };
}

}  // namespace ptox::cli
