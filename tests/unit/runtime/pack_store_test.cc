// The store of packed constant blocks: one fill per key however many threads ask at once, keys
// told apart by every field, failures reported as nullptr, Clear waiting for runs in progress.
#include "runtime/pack_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

namespace ptox::runtime {
namespace {

const int kData[4] = {};

PackStore::Key KeyAt(const void* origin, int64_t cols = 16) { return {origin, 16, 1, 8, cols, 1}; }

TEST(PackStore, FillsEachKeyOnceForConcurrentAskers) {
  PackStore store;
  std::atomic<int> fills{0};
  std::vector<void*> got(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      got[t] = store.Get(KeyAt(kData), 256, [&](void* dst) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // others arrive meanwhile
        std::memset(dst, 7, 256);
        ++fills;
      });
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(fills.load(), 1);
  for (void* p : got) {
    ASSERT_EQ(p, got[0]);
    EXPECT_EQ(static_cast<unsigned char*>(p)[255], 7);  // waiters saw the finished fill
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(got[0]) % 64, 0u);
  EXPECT_EQ(store.bytes(), 256);
}

TEST(PackStore, EveryKeyFieldMatters) {
  PackStore store;
  int fills = 0;
  auto get = [&](const PackStore::Key& k) { return store.Get(k, 64, [&](void*) { ++fills; }); };
  void* base = get(KeyAt(kData));
  EXPECT_NE(get(KeyAt(kData + 1)), base);
  EXPECT_NE(get(KeyAt(kData, 17)), base);
  EXPECT_NE(get({kData, 16, 1, 8, 16, 2}), base);  // another format
  EXPECT_NE(get({kData, 1, 16, 8, 16, 1}), base);  // transposed strides
  EXPECT_EQ(get(KeyAt(kData)), base);
  EXPECT_EQ(fills, 5);
}

TEST(PackStore, FailuresAreNullAndLeaveNothing) {
  PackStore store;
  bool filled = false;
  EXPECT_EQ(store.Get(KeyAt(kData), std::numeric_limits<int64_t>::max() / 2,
                      [&](void*) { filled = true; }),
            nullptr);
  EXPECT_FALSE(filled);
  EXPECT_EQ(store.bytes(), 0);
  ASSERT_NE(store.Get(KeyAt(kData), 64, [](void*) {}), nullptr);   // asked again: made now
  EXPECT_EQ(store.Get(KeyAt(kData), 128, [](void*) {}), nullptr);  // the same key, another size
  EXPECT_EQ(store.bytes(), 64);
}

TEST(PackStore, ClearWaitsForRunsInProgress) {
  PackStore store;
  store.Get(KeyAt(kData), 64, [](void*) {});
  std::atomic<bool> cleared{false};
  std::thread clearer;
  {
    auto run = store.Use();
    clearer = std::thread([&] {
      store.Clear();
      cleared = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(cleared.load());
    EXPECT_EQ(store.bytes(), 64);
  }
  clearer.join();
  EXPECT_TRUE(cleared.load());
  EXPECT_EQ(store.bytes(), 0);
}

}  // namespace
}  // namespace ptox::runtime
