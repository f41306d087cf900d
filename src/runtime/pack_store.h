// Packed copies of constant inputs (RunOptions::constants), kept across runs of a Program: a
// kernel that packs a block of a constant tensor (a matmul's B) asks the store for it by key,
// and the first asker fills it while later ones wait. The store only compares keys; what a block
// holds and how it is laid out is the kernel's business.
#pragma once

#include <compare>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

namespace ptox::runtime {

class PackStore {
 public:
  struct Key {
    const void* origin;
    int64_t row_stride, col_stride, rows, cols;
    int64_t format;
    auto operator<=>(const Key&) const = default;
  };

  // The 64-byte aligned block for `key` (`bytes` long), written by fill(dst) the first time it is
  // asked for; nullptr when it cannot be allocated (or the key was made with another size).
  // Never throws.
  void* Get(const Key& key, int64_t bytes, const std::function<void(void*)>& fill) noexcept;

  // Held by a run for its whole duration: Clear waits until no run uses the blocks.
  std::shared_lock<std::shared_mutex> Use() { return std::shared_lock(in_use_); }
  void Clear();
  int64_t bytes() const;

 private:
  struct Block {
    std::unique_ptr<void, void (*)(void*)> data{nullptr, [](void*) {}};
    int64_t bytes = 0;
    bool ready = false;  // filled (or failed: data null) — waiters may return
  };
  std::shared_mutex in_use_;
  mutable std::mutex mu_;
  std::condition_variable filled_;
  std::map<Key, std::shared_ptr<Block>> blocks_;
  int64_t bytes_ = 0;
};

}  // namespace ptox::runtime
