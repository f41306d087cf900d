#include "runtime/pack_store.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace ptox::runtime {

void* PackStore::Get(const Key& key, int64_t bytes,
                     const std::function<void(void*)>& fill) noexcept {
  std::shared_ptr<Block> block;
  std::unique_lock<std::mutex> lock(mu_);
  auto it = blocks_.find(key);
  if (it != blocks_.end()) {
    block = it->second;
    filled_.wait(lock, [&] { return block->ready; });
    // The format fixes the size; another one means a kernel disagrees with itself: pack anew.
    return block->bytes == bytes ? block->data.get() : nullptr;
  }
  try {
    block = std::make_shared<Block>();
    block->bytes = bytes;
    blocks_.emplace(key, block);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  lock.unlock();
  // Filled outside the lock: other blocks are made and read meanwhile.
  const size_t size = static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
  void* data = std::aligned_alloc(64, size);
  if (data) fill(data);
  lock.lock();
  block->data = {data, &std::free};
  block->ready = true;
  if (data)
    bytes_ += static_cast<int64_t>(size);
  else
    blocks_.erase(key);  // asked for again next time
  filled_.notify_all();
  return data;
}

void PackStore::Clear() {
  std::unique_lock<std::shared_mutex> exclusive(in_use_);
  std::lock_guard<std::mutex> lock(mu_);
  blocks_.clear();
  bytes_ = 0;
}

int64_t PackStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace ptox::runtime
