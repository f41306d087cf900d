#include "interp/comm.h"

#include "support/error.h"

namespace ptox::interp {

class SimWorld::Rank final : public Comm {
 public:
  Rank(SimWorld& world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_.size_; }
  std::vector<Dense> Gather(const Dense& x, const std::string& where) override {
    return world_.Gather(rank_, x, where);
  }

 private:
  SimWorld& world_;
  const int rank_;
};

SimWorld::SimWorld(int size, std::chrono::milliseconds timeout)
    : size_(size), timeout_(timeout), slots_(size), finished_(size, false) {
  for (int r = 0; r < size; ++r) ranks_.push_back(std::make_unique<Rank>(*this, r));
}

SimWorld::~SimWorld() = default;

Comm& SimWorld::rank(int r) { return *ranks_.at(r); }

void SimWorld::Fail(int rank, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_.empty()) {
    error_ = "rank " + std::to_string(rank) + " failed: " + message;
    first_failure_ = rank;
  }
  finished_[rank] = true;
  cv_.notify_all();
}

int SimWorld::first_failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_failure_;
}

void SimWorld::Finish(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  finished_[rank] = true;
  cv_.notify_all();
}

namespace {

std::string Describe(const Dense& x) {
  return std::string(DTypeName(x.dtype)) + " " + ShapeStr(x.shape);
}

}  // namespace

std::vector<Dense> SimWorld::Gather(int rank, const Dense& x, const std::string& where) {
  std::unique_lock<std::mutex> lock(mu_);
  const std::string me = where + " on rank " + std::to_string(rank);
  PTOX_RUNTIME_CHECK(error_.empty()) << me << ": " << error_;
  slots_[rank] = {&x, where};
  const int64_t generation = generation_;
  if (++arrived_ == size_) {  // the last rank to arrive checks the values and publishes them
    for (int r = 1; r < size_ && error_.empty(); ++r) {
      const Dense& a = *slots_[0].x;
      const Dense& b = *slots_[r].x;
      if (a.dtype != b.dtype || a.shape != b.shape)
        error_ = "collective mismatch: rank 0 passed " + Describe(a) + " to " + slots_[0].where +
                 ", rank " + std::to_string(r) + " " + Describe(b) + " to " + slots_[r].where;
    }
    if (error_.empty()) {
      result_.clear();
      for (const Slot& s : slots_) result_.push_back(*s.x);
    }
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
  } else {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    auto missing = [&] {  // ranks that finished without reaching this collective
      std::string m;
      for (int r = 0; r < size_; ++r)
        if (finished_[r] && slots_[r].x == nullptr) m += (m.empty() ? "" : ", ") + std::to_string(r);
      return m;
    };
    while (generation_ == generation && error_.empty()) {
      const std::string gone = missing();
      if (!gone.empty()) {
        error_ = "rank(s) " + gone + " finished without reaching " + where;
        break;
      }
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && generation_ == generation) {
        error_ = "not every rank reached " + where + " within " +
                 std::to_string(timeout_.count()) + " ms";
        break;
      }
    }
    cv_.notify_all();
  }
  PTOX_RUNTIME_CHECK(error_.empty()) << me << ": " << error_;
  slots_[rank].x = nullptr;
  return result_;
}

}  // namespace ptox::interp
