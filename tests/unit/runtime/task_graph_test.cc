// The task runtime: dependency inference from regions, scheduling, failure, determinism, stress.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <set>
#include <thread>

#include "ptox/fault.h"
#include "runtime/task_graph.h"

namespace ptox::runtime {
namespace {

Box Rows(int64_t lo, int64_t hi) {  // rows [lo, hi) of a 2-D tensor with 8 columns
  Box b;
  b.rank = 2;
  b.lo[0] = lo, b.hi[0] = hi, b.lo[1] = 0, b.hi[1] = 8;
  return b;
}

Task T(std::vector<Access> acc, std::function<std::string()> run = [] { return std::string(); }) {
  Task t;
  t.run = std::move(run);
  t.accesses = std::move(acc);
  t.name = "t";
  return t;
}
Access R(int tensor, Box b) { return {tensor, b, false, 4}; }
Access W(int tensor, Box b) { return {tensor, b, true, 4}; }

using Edges = std::set<std::pair<TaskId, TaskId>>;
Edges EdgesOf(const Graph& g) {
  auto e = g.Edges();
  return Edges(e.begin(), e.end());
}

// A gate that holds every task until released, so edges are inferred against unfinished tasks.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::function<std::string()> Hold() {
    return [this] {
      std::unique_lock<std::mutex> l(mu);
      cv.wait(l, [&] { return open; });
      return std::string();
    };
  }
  void Open() {
    {
      std::lock_guard<std::mutex> l(mu);
      open = true;
    }
    cv.notify_all();
  }
};

TEST(BoxTest, OverlapIsHalfOpenAndEmptyBoxesNeverOverlap) {
  EXPECT_TRUE(Rows(0, 4).Overlaps(Rows(3, 5)));
  EXPECT_FALSE(Rows(0, 4).Overlaps(Rows(4, 8)));
  EXPECT_FALSE(Rows(2, 2).Overlaps(Rows(0, 8)));
  EXPECT_EQ(Rows(1, 3).Volume(), 16);
}

TEST(Dependencies, DisjointWritesAreIndependentOverlapsAreOrdered) {
  Executor ex(2, /*help_while_submitting=*/false);
  Gate gate;
  Graph g(ex);
  g.Submit(T({W(0, Rows(0, 4))}, gate.Hold()));     // 0
  g.Submit(T({W(0, Rows(4, 8))}, gate.Hold()));     // 1: disjoint
  g.Submit(T({R(0, Rows(2, 6))}, gate.Hold()));     // 2: RAW on 0 and 1
  g.Submit(T({W(0, Rows(3, 4))}, gate.Hold()));     // 3: WAW on 0, WAR on 2
  g.Submit(T({R(1, Rows(0, 8))}, gate.Hold()));     // 4: another tensor: independent
  g.Submit(T({R(0, Rows(6, 8))}, gate.Hold()));     // 5: RAW on 1 only; read-read with 2 is fine
  EXPECT_EQ(EdgesOf(g), (Edges{{0, 2}, {1, 2}, {0, 3}, {2, 3}, {1, 5}}));
  gate.Open();
  EXPECT_TRUE(g.Wait().ok());
}

TEST(Dependencies, InPlaceUpdatesChainAndDiamondsJoin) {
  Executor ex(2, /*help_while_submitting=*/false);
  Gate gate;
  Graph g(ex);
  // In-place: each task reads and writes the same rows -> a chain.
  for (int i = 0; i < 3; ++i) g.Submit(T({R(0, Rows(0, 8)), W(0, Rows(0, 8))}, gate.Hold()));
  // Diamond on tensor 1: a writes all; b, c read halves and write tensors 2, 3; d reads both.
  TaskId a = g.Submit(T({W(1, Rows(0, 8))}, gate.Hold()));
  TaskId b = g.Submit(T({R(1, Rows(0, 4)), W(2, Rows(0, 8))}, gate.Hold()));
  TaskId c = g.Submit(T({R(1, Rows(4, 8)), W(3, Rows(0, 8))}, gate.Hold()));
  TaskId d = g.Submit(T({R(2, Rows(0, 8)), R(3, Rows(0, 8))}, gate.Hold()));
  // (0, 2) is implied by 0 -> 1 -> 2: task 1's write of all the rows took task 0's accesses out
  // of the history (it depends on each of them), so task 2 meets only task 1's.
  EXPECT_EQ(EdgesOf(g), (Edges{{0, 1}, {1, 2}, {a, b}, {a, c}, {b, d}, {c, d}}));
  gate.Open();
  EXPECT_TRUE(g.Wait().ok());
}

// A write takes the accesses inside its box out of the history: later tasks are ordered after
// them through it. A partial write takes nothing it does not cover, and reads stay until a write
// covers them.
TEST(Dependencies, CoveringWritesSupersedeEarlierAccesses) {
  Executor ex(2, /*help_while_submitting=*/false);
  Gate gate;
  Graph g(ex);
  g.Submit(T({W(0, Rows(0, 8))}, gate.Hold()));  // 0
  g.Submit(T({R(0, Rows(0, 8))}, gate.Hold()));  // 1: RAW 0
  g.Submit(T({W(0, Rows(0, 4))}, gate.Hold()));  // 2: WAW 0, WAR 1; covers neither
  g.Submit(T({R(0, Rows(0, 8))}, gate.Hold()));  // 3: RAW 0, 2
  g.Submit(T({W(0, Rows(0, 8))}, gate.Hold()));  // 4: WAW 0, 2; WAR 1, 3; covers them all
  g.Submit(T({R(0, Rows(2, 6))}, gate.Hold()));  // 5: RAW 4 only
  g.Submit(T({W(0, Rows(0, 8))}, gate.Hold()));  // 6: WAW 4, WAR 5 only
  EXPECT_EQ(EdgesOf(g), (Edges{{0, 1}, {0, 2}, {1, 2}, {0, 3}, {2, 3}, {0, 4}, {1, 4}, {2, 4},
                               {3, 4}, {4, 5}, {4, 6}, {5, 6}}));
  gate.Open();
  EXPECT_TRUE(g.Wait().ok());
}

// The history is a grid sized by the first box: boxes over many cells, of another rank, or at
// negative offsets must still meet every overlap.
TEST(Dependencies, MixedBoxSizesRanksAndNegativeOffsetsStillConflict) {
  Executor ex(2, /*help_while_submitting=*/false);
  Gate gate;
  Graph g(ex);
  Box one_d;
  one_d.rank = 1, one_d.lo[0] = 0, one_d.hi[0] = 3;
  g.Submit(T({W(0, Rows(0, 1))}, gate.Hold()));    // 0: sets 1x8 cells
  g.Submit(T({R(0, Rows(5, 6))}, gate.Hold()));    // 1: independent
  g.Submit(T({W(0, Rows(0, 40))}, gate.Hold()));   // 2: 40 cells -> the large list; WAW 0, WAR 1
  g.Submit(T({R(0, one_d)}, gate.Hold()));         // 3: another rank: full scan; RAW 2 (0 is
                                                   //    behind 2, which covers it)
  g.Submit(T({W(0, Rows(-2, 1))}, gate.Hold()));   // 4: negative rows; WAW 2; WAR 3
  g.Submit(T({W(0, Rows(39, 40))}, gate.Hold()));  // 5: WAW 2 (found in the large list)
  EXPECT_EQ(EdgesOf(g), (Edges{{0, 2}, {1, 2}, {2, 3}, {2, 4}, {3, 4}, {2, 5}}));
  gate.Open();
  EXPECT_TRUE(g.Wait().ok());
  // Finished tasks left the history: a new overlapping task has no edges.
  g.Submit(T({W(0, Rows(0, 40))}));
  EXPECT_EQ(EdgesOf(g).size(), 6u);
  EXPECT_TRUE(g.Wait().ok());
}

// A tensor's history is a list up to 32 accesses and a grid of cells beyond: the accesses filed
// before the switch move onto the grid, and queries find the same conflicts either way.
TEST(Dependencies, HistoriesPastTheFlatListStillFindEveryConflict) {
  Executor ex(2, /*help_while_submitting=*/false);
  Gate gate;
  Graph g(ex);
  for (int i = 0; i < 40; ++i) g.Submit(T({W(0, Rows(i, i + 1))}, gate.Hold()));  // 0..39
  g.Submit(T({R(0, Rows(10, 30))}, gate.Hold()));  // 40: RAW on 10..29
  g.Submit(T({W(0, Rows(35, 37))}, gate.Hold()));  // 41: WAW on 35 and 36
  Edges want;
  for (int i = 10; i < 30; ++i) want.insert({i, 40});
  want.insert({35, 41}), want.insert({36, 41});
  EXPECT_EQ(EdgesOf(g), want);
  gate.Open();
  EXPECT_TRUE(g.Wait().ok());
}

TEST(Dependencies, ExplicitEdgesAreKeptAndFinishedTasksAreNotWaitedFor) {
  // A worker holds x at the gate (one thread, or a submitter that helps, would run it in Submit).
  Executor ex(2, /*help_while_submitting=*/false);
  Graph g(ex);
  TaskId first = g.Submit(T({W(0, Rows(0, 8))}));
  ASSERT_TRUE(g.Wait().ok());  // finished: a later overlap needs no edge
  Gate gate;
  TaskId x = g.Submit(T({R(0, Rows(0, 8))}, gate.Hold()));
  Task y = T({}, gate.Hold());
  y.after = {x};
  TaskId yid = g.Submit(std::move(y));
  EXPECT_EQ(EdgesOf(g), (Edges{{x, yid}}));
  EXPECT_NE(first, x);
  gate.Open();
  EXPECT_TRUE(g.Wait().ok());
}

// Finished tasks leave the history in bulk (entries marked dead, dropped when half a list is):
// with finished and unfinished readers of one tensor interleaved, and most of them finished, a
// write still waits for exactly the unfinished ones.
TEST(Dependencies, AWriteWaitsForEveryUnfinishedReaderAmongManyFinishedOnes) {
  Executor ex(3, /*help_while_submitting=*/false);
  Gate gate;
  Graph g(ex);
  const TaskId blocker = g.Submit(T({}, gate.Hold()));  // holds one worker; the held readers wait
  std::vector<TaskId> held, free;
  for (int i = 0; i < 100; ++i) {
    Task t = T({R(0, Rows(0, 8))});
    if (i % 10 < 3) t.after = {blocker};
    (i % 10 < 3 ? held : free).push_back(g.Submit(t));
  }
  // Runs once every free reader has finished (its node is done and out of the history).
  std::atomic<bool> freed{false};
  Task sentinel = T({}, [&freed] {
    freed = true;
    return std::string();
  });
  sentinel.after = free;
  g.Submit(sentinel);
  while (!freed) std::this_thread::yield();
  const TaskId writer = g.Submit(T({W(0, Rows(0, 8))}));
  Edges into_writer;
  for (const auto& e : EdgesOf(g))
    if (e.second == writer) into_writer.insert(e);
  Edges want;
  for (TaskId r : held) want.insert({r, writer});
  EXPECT_EQ(into_writer, want);
  gate.Open();
  EXPECT_TRUE(g.Wait().ok());
}

// Each task adds its id to the cells it writes after reading them: with correct dependencies the
// result equals sequential execution, for any thread count.
// (Unsigned cells: the arithmetic wraps, which is defined.)
std::vector<uint64_t> RunRandomProgram(int threads, int tasks, uint32_t seed) {
  std::vector<uint64_t> cells(64, 0);
  Executor ex(threads);
  Graph g(ex);
  std::mt19937 rng(seed);
  for (int i = 0; i < tasks; ++i) {
    int lo = rng() % 64, len = 1 + rng() % 8;
    int hi = std::min(64, lo + len);
    int rlo = rng() % 64, rhi = std::min(64, rlo + 1 + static_cast<int>(rng() % 8));
    Box wb, rb;
    wb.rank = rb.rank = 1;
    wb.lo[0] = lo, wb.hi[0] = hi, rb.lo[0] = rlo, rb.hi[0] = rhi;
    g.Submit(T({R(0, rb), W(0, wb)}, [&cells, lo, hi, rlo, rhi, i] {
      uint64_t s = 0;
      for (int k = rlo; k < rhi; ++k) s += cells[k];
      for (int k = lo; k < hi; ++k) cells[k] = cells[k] * 3 + s % 7 + static_cast<uint64_t>(i);
      return std::string();
    }));
  }
  EXPECT_TRUE(g.Wait().ok());
  return cells;
}

TEST(Executor, ResultsAreIdenticalForAnyThreadCount) {
  auto one = RunRandomProgram(1, 2000, 7);
  EXPECT_EQ(RunRandomProgram(2, 2000, 7), one);
  EXPECT_EQ(RunRandomProgram(4, 2000, 7), one);
}

TEST(Executor, StressManyThousandsOfSmallTasks) {
  Executor ex(2);
  Graph g(ex, /*record=*/true);
  std::atomic<int64_t> ran{0};
  constexpr int kTasks = 50000;
  for (int i = 0; i < kTasks; ++i) {
    Box b;
    b.rank = 1;
    b.lo[0] = i % 97, b.hi[0] = i % 97 + 1;
    g.Submit(T({W(i % 5, b)}, [&] { ++ran; return std::string(); }));
  }
  ASSERT_TRUE(g.Wait().ok());
  EXPECT_EQ(ran.load(), kTasks);
  EXPECT_EQ(static_cast<int>(g.records().size()), kTasks);
}

// With workers busy, the submitting thread runs queued tasks inside Submit (else it would only
// submit while one core computes) once it has submitted some ahead (40 here: more than it keeps
// in flight before helping); with help_while_submitting off it never does.
TEST(Executor, SubmitterRunsQueuedTasksWhileTheWorkersAreBusy) {
  for (bool help : {true, false}) {
    Executor ex(2, help);
    Gate gate;
    std::atomic<bool> held{false};
    Graph g(ex);
    g.Submit(T({}, [&] {
      held = true;
      return gate.Hold()();
    }));
    while (!held) std::this_thread::yield();  // the worker is inside the gated task
    std::atomic<int> on_submitter{0};
    const auto me = std::this_thread::get_id();
    for (int i = 0; i < 40; ++i)
      g.Submit(T({}, [&] {
        on_submitter += std::this_thread::get_id() == me;
        return std::string();
      }));
    EXPECT_EQ(on_submitter.load() > 0, help);
    gate.Open();
    EXPECT_TRUE(g.Wait().ok());
  }
}

// A task that is ready when it is submitted and tiny runs inside Submit, on the submitting
// thread; one that waits for a predecessor does not, and neither does any with
// help_while_submitting off.
TEST(Executor, TinyReadyTasksRunOnTheSubmittingThread) {
  for (bool help : {true, false}) {
    SCOPED_TRACE(help ? "help" : "no help");
    Executor ex(2, help);
    Gate gate;
    Graph g(ex);
    const auto me = std::this_thread::get_id();
    std::atomic<int> ran_here{0};
    auto here = [&] {
      ran_here += std::this_thread::get_id() == me;
      return std::string();
    };
    g.Submit(T({W(0, Rows(0, 1))}, here));
    EXPECT_EQ(ran_here.load(), help ? 1 : 0);
    g.Submit(T({W(1, Rows(0, 1024))}, gate.Hold()));  // 32 KiB: not tiny, held on a worker
    std::atomic<bool> after_gate{false};
    g.Submit(T({R(1, Rows(0, 1))}, [&] {
      after_gate = true;
      return std::string();
    }));
    EXPECT_FALSE(after_gate.load());  // not ready: never run inside Submit
    gate.Open();
    EXPECT_TRUE(g.Wait().ok());
    EXPECT_TRUE(after_gate.load());
  }
}

// A task that waits outside the graph (a collective) is left to the workers or the final wait:
// the submitter never runs it while submitting, so the tasks submitted after it run meanwhile.
// With one thread, a submitter that ran it at once would wait for a task not yet submitted.
TEST(Executor, TasksThatWaitOutsideTheGraphAreNotRunWhileSubmitting) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    Executor ex(threads);
    std::atomic<bool> later_ran{false};
    Graph g(ex);
    Task wait = T({W(0, Rows(0, 1))}, [&] {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (!later_ran && std::chrono::steady_clock::now() < until) std::this_thread::yield();
      return later_ran ? std::string() : std::string("the later task never ran");
    });
    wait.waits_outside = true;
    g.Submit(std::move(wait));
    g.Submit(T({W(1, Rows(0, 1))}, [&] {
      later_ran = true;
      return std::string();
    }));
    const Status st = g.Wait();
    EXPECT_TRUE(st.ok()) << st.message();
  }
}

TEST(Failure, StopsTheGraphCancelsTheRestAndNamesTheTask) {
  Executor ex(2);
  {
    Graph g(ex);
    std::atomic<int> ran{0};
    g.Submit(T({W(0, Rows(0, 8))}, [&] { ++ran; return std::string(); }));
    Task bad = T({R(0, Rows(0, 8)), W(1, Rows(0, 8))}, [] { return std::string("boom"); });
    bad.name = "softmax.incore0";
    g.Submit(std::move(bad));
    for (int i = 0; i < 100; ++i)  // all depend on the failing task through tensor 1
      g.Submit(T({R(1, Rows(0, 8)), W(1, Rows(0, 8))}, [&] { ++ran; return std::string(); }));
    Status s = g.Wait();
    EXPECT_EQ(s.code(), StatusCode::kRuntime);
    EXPECT_NE(s.message().find("task 1 (softmax.incore0) failed: boom"), std::string::npos)
        << s.message();
    EXPECT_EQ(ran.load(), 1);
    EXPECT_EQ(g.cancelled(), 100);
  }
  // The executor runs the next graph normally.
  Graph next(ex);
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i) next.Submit(T({}, [&] { ++ran; return std::string(); }));
  EXPECT_TRUE(next.Wait().ok());
  EXPECT_EQ(ran.load(), 10);
}

// With one thread the caller runs each task inside its own Submit as soon as it is ready (its
// inputs still in cache): a task never waits for a later one, so none is left for Wait().
TEST(Executor, OneThreadRunsReadyTasksAsTheyAreSubmitted) {
  Executor ex(1);
  Graph g(ex);
  std::vector<int> ran;
  auto log = [&](int i) {
    return [&ran, i] {
      ran.push_back(i);
      return std::string();
    };
  };
  g.Submit(T({W(0, Rows(0, 8))}, log(0)));
  EXPECT_EQ(ran, (std::vector<int>{0}));
  g.Submit(T({R(0, Rows(0, 8)), W(1, Rows(0, 8))}, log(1)));
  g.Submit(T({R(1, Rows(0, 4))}, log(2)));
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(g.Wait().ok());
  EXPECT_EQ(g.Edges().size(), 0u);  // each task had finished before the next came
}

TEST(Failure, ExceptionsInTasksBecomeErrors) {
  Executor ex(1);
  Graph g(ex);
  g.Submit(T({}, []() -> std::string { throw std::runtime_error("bad alloc-ish"); }));
  Status s = g.Wait();
  EXPECT_EQ(s.code(), StatusCode::kRuntime);
  EXPECT_NE(s.message().find("bad alloc-ish"), std::string::npos);
}

TEST(Executor, NumThreadsFromEnvironment) {
  unsetenv("PTOX_NUM_THREADS");
  const int hardware = Executor::DefaultThreads();
  EXPECT_GE(hardware, 1);
  EXPECT_LE(hardware, Executor::kMaxThreads);
  setenv("PTOX_NUM_THREADS", "3", 1);
  EXPECT_EQ(Executor::DefaultThreads(), 3);
  setenv("PTOX_NUM_THREADS", "1024", 1);
  EXPECT_EQ(Executor::DefaultThreads(), 1024);
  // Not an integer in [1, kMaxThreads]: ignored (with a warning), the hardware count instead. An
  // atoi of "99999999999" was 1215752191 (overflow), of "3x" 3.
  for (const char* bad : {"0", "-2", "1025", "99999999999", "3x", " 3", "many"}) {
    setenv("PTOX_NUM_THREADS", bad, 1);
    EXPECT_EQ(Executor::DefaultThreads(), hardware) << bad;
  }
  unsetenv("PTOX_NUM_THREADS");
}

// Counts the tasks of a 200-task graph run on `ex`; every one must run.
int64_t RunTasks(Executor& ex) {
  Graph g(ex);
  std::atomic<int64_t> ran{0};
  for (int i = 0; i < 200; ++i) {
    g.Submit(T({W(i % 3, Rows(i % 8, i % 8 + 1))}, [&] {
      ++ran;
      return std::string();
    }));
  }
  EXPECT_TRUE(g.Wait().ok());
  return ran.load();
}

// A thread the host refuses (PTOX_FAULT=thread:N makes the N-th creation fail as RLIMIT_NPROC
// would) leaves the executor with the workers that started; it used to terminate the process
// (std::thread destroyed while joinable during the constructor's unwinding).
TEST(Executor, RefusedThreadsLeaveFewerWorkersNotAnAbort) {
  struct Case {
    const char* fault;
    int asked, got;
  } cases[] = {{"thread:3", 6, 3}, {"thread:1", 4, 1}, {"thread:1+", 8, 1}, {"thread:9", 4, 4}};
  for (const Case& c : cases) {
    setenv("PTOX_FAULT", c.fault, 1);
    fault::Reset();
    {
      Executor ex(c.asked);
      EXPECT_EQ(ex.threads(), c.got) << c.fault;
      EXPECT_EQ(RunTasks(ex), 200) << c.fault;
    }
    unsetenv("PTOX_FAULT");
    fault::Reset();
  }
}

}  // namespace
}  // namespace ptox::runtime
