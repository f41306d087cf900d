// The task runtime: tasks (a kernel plus the tensor regions it reads and writes) are submitted
// in program order; dependencies are inferred from region overlap (read-after-write,
// write-after-read, write-after-write) and a fixed pool of worker threads runs each task as soon
// as its predecessors finished. Links without the compiler.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ptox/status.h"
#include "ptox/trace.h"
#include "runtime/spin_lock.h"

namespace ptox::runtime {

inline constexpr int kMaxRank = 4;

// A half-open box [lo, hi) in the index space of one tensor.
struct Box {
  int rank = 0;
  int64_t lo[kMaxRank] = {0, 0, 0, 0};
  int64_t hi[kMaxRank] = {0, 0, 0, 0};
  bool Empty() const;
  bool Overlaps(const Box& other) const;
  bool Inside(const Box& other) const;  // every point of this box is in `other` (same rank)
  int64_t Volume() const;
};

// One region a task touches: tensor `tensor` (any stable key: a parameter index) in `box`.
struct Access {
  int tensor = 0;
  Box box;
  bool write = false;         // reads-and-writes appear as two accesses
  int64_t element_bytes = 0;  // for traffic accounting in traces
  int64_t Bytes() const { return box.Volume() * element_bytes; }
};

using TaskId = int64_t;

struct Task {
  // Runs the task; returns an empty string on success, else the error message.
  std::function<std::string()> run;
  std::vector<Access> accesses;
  std::vector<TaskId> after;  // explicit dependencies, besides the inferred ones
  // Kernel name (traces, profiles, error messages): a string that outlives the graph (a literal
  // of the kernel library); not copied per task.
  const char* name = "";
  int64_t flops = 0;  // estimated floating-point operations (profiles)
  // The task waits for something outside the graph (a collective waits for other processes):
  // the thread submitting the graph leaves it to the workers or to its wait at the end, so that
  // the submission, and the tasks it feeds the workers, go on beside it.
  bool waits_outside = false;
};

class Executor;

// A dynamic task graph: Submit() in program order, then Wait(). One graph at a time per
// executor; the executor is reusable for the next graph.
class Graph {
 public:
  explicit Graph(Executor& executor, bool record = false);
  ~Graph();  // waits for running tasks (never leaves workers touching a dead graph)
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Adds a task (copying what it keeps: the caller may reuse `task`); returns its id. A task
  // that is ready and tiny (Tiny) runs here, on the calling thread, unless the executor was
  // made with help_while_submitting off. After a failure, new tasks are cancelled at once.
  TaskId Submit(const Task& task);
  // Waits until every submitted task finished or was cancelled. Returns the first failure
  // (kRuntime, naming the task) or Ok.
  Status Wait();

  // Dependency edges inferred so far (for tests): (before, after) pairs.
  std::vector<std::pair<TaskId, TaskId>> Edges() const;
  const std::vector<TaskTrace>& records() const { return records_; }
  int64_t cancelled() const { return cancelled_; }

 private:
  friend class Executor;
  struct Node;
  struct TensorHistory;  // the unfinished accesses of one tensor, indexed by grid cell

  // A task ran (start_us >= 0) or was skipped (start_us < 0: counted as cancelled).
  void Finish(Node* node, const std::string& error, int worker, double start_us, double end_us);
  void Forget(const Node& node);  // under mu_: drops a finished node's accesses from history_
  static bool Tiny(const Node& node);  // cheaper to run than to hand to another thread
  double NowUs() const;

  Executor& executor_;
  const bool record_;
  mutable SpinLock mu_;
  // The nodes, their accesses and successor lists, freed with the graph: a decode step submits
  // ~330-1500 small tasks, and a few allocations each were a quarter of its runtime overhead.
  // Used under mu_.
  std::pmr::monotonic_buffer_resource arena_;
  std::pmr::deque<Node> nodes_;  // by id, in arena_; a deque: nodes never move
  std::pmr::unordered_map<int, TensorHistory*> history_;  // per tensor key, in arena_
  std::vector<std::pair<TaskId, TaskId>> edges_;
  std::vector<TaskTrace> records_;
  int64_t submitted_ = 0, finished_ = 0, cancelled_ = 0, in_flight_ = 0;
  // in_flight_, readable under the executor's lock (a thread waiting for this graph sleeps on
  // the executor's condition variable, so it can also run ready tasks).
  std::atomic<int64_t> in_flight_count_{0};
  std::string failure_;
  std::atomic<bool> failed_{false};  // !failure_.empty(), readable without mu_ by workers
  std::chrono::steady_clock::time_point start_;
};

// A fixed pool of `threads` threads (by default one per CPU of the affinity mask; PTOX_NUM_THREADS
// overrides): the thread that waits for a graph (in Graph::Wait, or in Submit when the window is full) runs ready
// tasks itself, so there are threads - 1 worker threads — with one thread, tasks run on the
// caller with no hand-off between cores. A worker that runs out of tasks spins for kSpinUs before
// it sleeps on a condition variable: waking a sleeping thread on another vCPU took 100-250 us on
// the VMs measured, longer than a whole small matmul, so back-to-back graphs (a model's layers, a
// benchmark's repetitions) ran on one core — 512^3 f32 on 2 threads: 187 GFLOP/s without the
// spin, 346 with it. The spin polls with the CPU's spin-wait hint and yields only every 64th
// poll, so that threads outnumbering cores still get one. A task that is ready and tiny when it
// is submitted runs on the submitting thread instead (Graph::Submit): on the 2-vCPU VM a
// hand-off costs ~1 us when the vCPUs sit far apart (a cache-line round trip of ~400 ns).
//
// Threads are a resource the host may refuse (RLIMIT_NPROC, a container's pids limit): a worker
// that cannot be started is a warning on stderr, and the executor runs with the threads it got —
// at worst only the caller's. Asking for more than kMaxThreads is the caller's error to report.
class Executor {
 public:
  // The most threads an executor is asked for (RunOptions::num_threads, --threads and
  // PTOX_NUM_THREADS are checked against it).
  static constexpr int kMaxThreads = 1024;

  // With workers, the thread submitting a graph also runs ready tasks while more are queued
  // than the workers can take and it has submitted enough ahead (help_while_submitting); turn
  // it off where a task may wait for something the submitter does after submitting it (tests
  // that hold tasks at a gate).
  explicit Executor(int threads = 0, bool help_while_submitting = true);
  ~Executor();
  // The threads that run tasks: the workers that started, plus the waiting caller.
  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // The process-wide executor used by ptox::Run.
  static Executor& Default();
  // PTOX_NUM_THREADS when it is an integer in [1, kMaxThreads] (other values are a warning and
  // ignored), else the hardware threads (at most kMaxThreads).
  static int DefaultThreads();

 private:
  friend class Graph;
  // Queues ready nodes of `graph` and wakes workers for them. Called without the graph's lock.
  void Push(Graph* graph, Graph::Node* const* nodes, size_t count);
  void WorkerLoop(int worker);
  // Spins (CpuRelax) for up to kSpinUs while no task is ready and stop() is false: a thread
  // about to sleep on cv_ is often handed a task within microseconds, and a futex wake-up on
  // another vCPU costs far more.
  template <typename Stop>
  void SpinForWork(Stop stop);
  // Under mu_, ready_ not empty: takes its front.
  std::pair<Graph*, Graph::Node*> PopReady();
  // The calling thread runs ready tasks (of any graph) until `graph` has at most `limit` tasks
  // in flight.
  void RunUntil(Graph* graph, int64_t limit);
  // The calling thread (submitting) runs ready tasks (of any graph) until there are none but
  // tasks that wait outside the graph.
  void RunReady();
  // Wakes threads sleeping in RunUntil (a graph drained or its window opened).
  void Wake();
  static void Run(std::pair<Graph*, Graph::Node*> item, int worker);
  static constexpr int kSpinUs = 300;

  const bool help_while_submitting_;
  SpinLock mu_;
  std::condition_variable_any cv_;  // waits on mu_
  // Threads waiting on cv_ (under mu_): workers for tasks, and threads in RunUntil for a graph
  // (or tasks). No notify, and no lock inside it, when none sleeps.
  int sleeping_workers_ = 0, sleeping_waiters_ = 0;
  std::deque<std::pair<Graph*, Graph::Node*>> ready_;
  std::atomic<size_t> ready_count_{0};  // ready_.size(), readable while spinning
  std::atomic<bool> stopping_{false};   // stop_, readable while spinning
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace ptox::runtime
