// include/ptox/dist.h over dist::World.
#include "dist/world.h"
#include "ptox/dist.h"

namespace ptox {

RankInfo ThisRank() {
  const dist::World& w = dist::World::Get();
  return {w.rank(), w.size()};
}

void AbortRun(const std::string& message, int code) { dist::World::Get().Abort(message, code); }

}  // namespace ptox
