#include "driver/mpi_comm.h"

#include <cstring>

namespace ptox::driver {

// Float values travel as their f32 elements, integer ones as int64: the Dense's own storage.
std::vector<interp::Dense> MpiComm::Gather(const interp::Dense& x, const std::string& where) {
  const bool fl = IsFloat(x.dtype);
  const void* data = fl ? static_cast<const void*>(x.f.data()) : x.i.data();
  const size_t bytes = fl ? x.f.size() * sizeof(float) : x.i.size() * sizeof(int64_t);
  const std::string sig = std::string(DTypeName(x.dtype)) + " " + interp::ShapeStr(x.shape);
  std::vector<std::vector<char>> all =
      world_.AllGather(sig, where, data, bytes, dist::World::DefaultTimeoutMs());
  std::vector<interp::Dense> out;
  for (const std::vector<char>& b : all) {
    interp::Dense d;
    d.dtype = x.dtype;
    d.shape = x.shape;
    if (fl) {
      d.f.resize(b.size() / sizeof(float));
      std::memcpy(d.f.data(), b.data(), b.size());
    } else {
      d.i.resize(b.size() / sizeof(int64_t));
      std::memcpy(d.i.data(), b.data(), b.size());
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace ptox::driver
