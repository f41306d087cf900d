// Task graph and executor. One lock per graph (a SpinLock) guards the dependency bookkeeping;
// workers take ready tasks from the executor's queue and sleep when it stays empty.
//
// Dependency inference: for each access of a new task, the unfinished earlier accesses of the
// same tensor that may overlap it are checked; an overlap where either side writes is an edge
// (RAW, WAR, WAW). A tensor's history is a list scanned whole while it holds at most kFlat
// accesses (a decode step's tensors hold a few at a time); past that it becomes a uniform grid of
// cells sized by the box then filed (usually the tile shape): an access is filed under every cell
// it touches (at most kMaxCells, else in an always-scanned list), so a query looks only at nearby
// accesses — O(1) per access for tiled programs instead of O(tasks in flight). A task's entries
// leave the history when it finishes. Submit() sleeps while kMaxInFlight tasks are pending,
// until half have finished.
#include "runtime/task_graph.h"

#include <sched.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <string_view>
#include <system_error>

#include "ptox/fault.h"
#include "support/warn.h"

namespace ptox::runtime {
namespace {

constexpr int64_t kMaxInFlight = 4096;
constexpr int64_t kLowWater = kMaxInFlight / 2;
constexpr int64_t kHelpAhead = 32;  // tasks in flight before the submitting thread runs any
// A task ready when it is submitted that touches at most this many bytes and estimates at most
// this many flops runs on the submitting thread at once (Submit).
constexpr int64_t kInlineBytes = 16 << 10;
constexpr int64_t kInlineFlops = 32 << 10;
constexpr int64_t kMaxCells = 16;  // a box over more cells goes to the always-scanned list
constexpr size_t kFlat = 32;       // accesses of a tensor before its history becomes a grid

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

struct CellKey {
  int64_t c[kMaxRank] = {0, 0, 0, 0};
  bool operator==(const CellKey& o) const { return std::equal(c, c + kMaxRank, o.c); }
};
struct CellHash {
  size_t operator()(const CellKey& k) const {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int64_t v : k.c) h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ull + (h >> 29);
    return static_cast<size_t>(h);
  }
};

}  // namespace

// In the graph's arena, like everything it holds.
struct Graph::TensorHistory {
  explicit TensorHistory(std::pmr::memory_resource* arena) : cells(arena), large(arena) {}

  struct Entry {
    TaskId id;
    Box box;
    bool dead;  // its task finished
  };
  // The reads or the writes filed under one cell, in id order (tasks file their accesses as they
  // are submitted). A finished task's entries are marked dead, and dropped once they are half of
  // the list: erasing each at once shifted the rest, and a list can hold thousands (a tensor that
  // every task of a long graph reads, up to kMaxInFlight), so that finishing a task cost
  // O(tasks in flight) — 40 % of a loop of small collectives on one thread.
  class EntryList {
   public:
    using allocator_type = std::pmr::polymorphic_allocator<>;
    explicit EntryList(const allocator_type& a) : v_(a) {}
    EntryList(EntryList&& o, const allocator_type& a) : v_(std::move(o.v_), a), dead_(o.dead_) {}
    void Add(TaskId id, const Box& box) { v_.push_back({id, box, false}); }
    void Kill(TaskId id) {
      auto it = std::lower_bound(v_.begin(), v_.end(), id,
                                 [](const Entry& e, TaskId i) { return e.id < i; });
      for (; it != v_.end() && it->id == id; ++it)
        if (!it->dead) it->dead = true, ++dead_;
      if (2 * dead_ > v_.size()) EraseIf([](const Entry&) { return false; });
    }
    // Drops the entries `drop` says, and the dead ones.
    template <typename Pred>
    void EraseIf(Pred drop) {
      v_.erase(std::remove_if(v_.begin(), v_.end(),
                              [&](const Entry& e) { return e.dead || drop(e); }),
               v_.end());
      dead_ = 0;
    }
    template <typename Fn>
    void ForEach(Fn fn) const {
      for (const Entry& e : v_)
        if (!e.dead) fn(e);
    }
    size_t size() const { return v_.size() - dead_; }
    void clear() { v_.clear(), dead_ = 0; }
    allocator_type get_allocator() const { return v_.get_allocator(); }

   private:
    std::pmr::vector<Entry> v_;
    size_t dead_ = 0;
  };
  // Reads and writes apart: a read only conflicts with writes, so the many readers of one
  // region (a weight every task reads) are never scanned by other readers.
  struct Lists {
    using allocator_type = std::pmr::polymorphic_allocator<>;  // the map's, for its cells
    explicit Lists(const allocator_type& a = {}) : reads(a), writes(a) {}
    Lists(Lists&& o, const allocator_type& a)
        : reads(std::move(o.reads), a), writes(std::move(o.writes), a) {}
    EntryList reads, writes;
  };
  int rank = -1;  // the grid's rank; -1: no grid yet (everything is in `large`)
  int64_t cell[kMaxRank] = {1, 1, 1, 1};
  std::pmr::unordered_map<CellKey, Lists, CellHash> cells;
  Lists large;  // before the grid: every access; then boxes over more than kMaxCells cells or
                // of another rank

  // Calls fn(key) for every cell `box` touches and returns true, or returns false without calls
  // when the box is not on the grid (another rank, too many cells).
  template <typename Fn>
  bool ForEachCell(const Box& box, Fn fn) const {
    if (box.rank != rank) return false;
    CellKey lo, hi;
    int64_t count = 1;
    for (int d = 0; d < rank; ++d) {
      lo.c[d] = FloorDiv(box.lo[d], cell[d]);
      hi.c[d] = FloorDiv(box.hi[d] - 1, cell[d]);
      count *= hi.c[d] - lo.c[d] + 1;
      if (count > kMaxCells) return false;
    }
    CellKey k = lo;
    for (;;) {
      fn(k);
      int d = rank - 1;
      while (d >= 0 && ++k.c[d] > hi.c[d]) k.c[d] = lo.c[d], --d;
      if (d < 0) return true;
    }
  }

  // Files an access. A write first drops the earlier accesses inside its box: the new task
  // depends on each of them (they overlap it), so a later access that conflicts with one of them
  // conflicts with the write too and is ordered after them through it. The history then holds
  // the last write of a region and the reads since, not every access of a graph that reuses its
  // buffers (a model's layers), which made each access scan and each removal erase from lists
  // growing with the graph.
  void Add(TaskId id, const Box& box, bool write) {
    if (rank < 0 && large.reads.size() + large.writes.size() >= kFlat) MakeGrid(box);
    if (write) {
      auto prune = [&](Lists& l) {
        for (EntryList* v : {&l.reads, &l.writes})
          v->EraseIf([&](const Entry& e) { return e.box.Inside(box); });
      };
      prune(large);
      if (!ForEachCell(box, [&](const CellKey& k) {
            auto it = cells.find(k);
            if (it != cells.end()) prune(it->second);
          }))
        for (auto& [key, lists] : cells) prune(lists);
    }
    auto add = [&](Lists& l) { (write ? l.writes : l.reads).Add(id, box); };
    if (!ForEachCell(box, [&](const CellKey& k) { add(cells[k]); })) add(large);
  }

  // The grid, with cells the size of `box`; the accesses filed so far move onto it.
  void MakeGrid(const Box& box) {
    rank = box.rank;
    for (int d = 0; d < rank; ++d) cell[d] = std::max<int64_t>(1, box.hi[d] - box.lo[d]);
    Lists flat(std::move(large), large.reads.get_allocator());
    large.reads.clear(), large.writes.clear();
    for (bool write : {false, true})
      (write ? flat.writes : flat.reads).ForEach([&](const Entry& e) {
        auto add = [&](Lists& l) { (write ? l.writes : l.reads).Add(e.id, e.box); };
        if (!ForEachCell(e.box, [&](const CellKey& k) { add(cells[k]); })) add(large);
      });
  }

  void Remove(TaskId id, const Box& box) {
    auto drop = [id](Lists& l) {
      l.reads.Kill(id);
      l.writes.Kill(id);
    };
    // Emptied cells stay: a graph touches the same cells over and over (a model's layers reuse
    // their buffers), and erasing them made every task allocate and free map nodes.
    bool on_grid = ForEachCell(box, [&](const CellKey& k) {
      auto it = cells.find(k);
      if (it != cells.end()) drop(it->second);
    });
    if (!on_grid) drop(large);
  }

  // Calls fn(id) for every earlier access that conflicts with `box` (possibly more than once):
  // overlapping writes, and overlapping reads too when `write`.
  template <typename Fn>
  void ForEachConflict(const Box& box, bool write, Fn fn) const {
    auto scan = [&](const Lists& l) {
      auto conflict = [&](const Entry& e) {
        if (e.box.Overlaps(box)) fn(e.id);
      };
      l.writes.ForEach(conflict);
      if (write) l.reads.ForEach(conflict);
    };
    scan(large);
    bool on_grid = ForEachCell(box, [&](const CellKey& k) {
      auto it = cells.find(k);
      if (it != cells.end()) scan(it->second);
    });
    if (!on_grid)
      for (const auto& [key, lists] : cells) scan(lists);
  }
};

bool Box::Empty() const {
  for (int d = 0; d < rank; ++d)
    if (hi[d] <= lo[d]) return true;
  return false;
}

bool Box::Overlaps(const Box& o) const {
  if (Empty() || o.Empty()) return false;
  int r = std::min(rank, o.rank);
  for (int d = 0; d < r; ++d)
    if (hi[d] <= o.lo[d] || o.hi[d] <= lo[d]) return false;
  return true;
}

bool Box::Inside(const Box& o) const {
  if (rank != o.rank) return false;
  for (int d = 0; d < rank; ++d)
    if (lo[d] < o.lo[d] || hi[d] > o.hi[d]) return false;
  return true;
}

int64_t Box::Volume() const {
  if (Empty()) return 0;
  int64_t v = 1;
  for (int d = 0; d < rank; ++d) v *= hi[d] - lo[d];
  return v;
}

// What the graph keeps of a task: its accesses and successors in the graph's arena.
struct Graph::Node {
  explicit Node(std::pmr::memory_resource* arena) : successors(arena) {}
  TaskId id = 0;
  std::function<std::string()> run;
  std::span<const Access> accesses;
  const char* name = "";
  int64_t flops = 0;
  bool waits_outside = false;
  int pending = 0;  // unfinished predecessors (+1 while being submitted)
  bool done = false;
  std::pmr::vector<Node*> successors;
};

Graph::Graph(Executor& executor, bool record)
    : executor_(executor),
      record_(record),
      nodes_(&arena_),
      history_(&arena_),
      start_(std::chrono::steady_clock::now()) {}

Graph::~Graph() {
  executor_.RunUntil(this, 0);
  for (auto& [tensor, h] : history_) std::destroy_at(h);  // their memory goes with the arena
}

double Graph::NowUs() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start_)
      .count();
}

TaskId Graph::Submit(const Task& task) {
  std::unique_lock<SpinLock> lock(mu_);
  if (in_flight_ >= kMaxInFlight) {
    lock.unlock();
    executor_.RunUntil(this, kLowWater);
    lock.lock();
  }
  Node* n = &nodes_.emplace_back(&arena_);
  n->id = submitted_++;
  n->name = task.name;
  n->flops = task.flops;
  n->waits_outside = task.waits_outside;
  if (!failure_.empty()) {  // the graph already failed: cancel instead of running
    n->done = true;
    ++cancelled_;
    ++finished_;
    return n->id;
  }
  n->run = task.run;
  if (!task.accesses.empty()) {
    auto* copy = static_cast<Access*>(
        arena_.allocate(task.accesses.size() * sizeof(Access), alignof(Access)));
    std::copy(task.accesses.begin(), task.accesses.end(), copy);
    n->accesses = {copy, task.accesses.size()};
  }
  ++in_flight_;
  in_flight_count_.fetch_add(1, std::memory_order_relaxed);
  n->pending = 1;  // held until every edge is in place
  auto add_edge = [&](Node* before) {
    if (before->done || before == n) return;
    if (!before->successors.empty() && before->successors.back() == n) return;  // duplicate
    before->successors.push_back(n);
    ++n->pending;
    edges_.emplace_back(before->id, n->id);
  };
  for (TaskId before : task.after) {
    if (before >= 0 && before < n->id) add_edge(&nodes_[before]);
  }
  auto history = [&](int tensor) -> TensorHistory& {
    TensorHistory*& h = history_[tensor];
    if (!h) h = std::pmr::polymorphic_allocator<>(&arena_).new_object<TensorHistory>(&arena_);
    return *h;
  };
  for (const Access& a : n->accesses) {
    if (a.box.Empty()) continue;  // touches nothing
    history(a.tensor).ForEachConflict(a.box, a.write,
                                      [&](TaskId before) { add_edge(&nodes_[before]); });
  }
  for (const Access& a : n->accesses)
    if (!a.box.Empty()) history(a.tensor).Add(n->id, a.box, a.write);
  const TaskId id = n->id;
  const bool ready = --n->pending == 0;
  lock.unlock();  // the node stays alive: only this call can queue it, nothing can finish it yet
  // A tiny task that is ready runs here: handing it to a worker moves about ten cache lines
  // between cores (the locks, the queue, the node, the counters), more than its work. A step
  // shrunk to tiny shapes is a chain of ~330 such tasks: 155 us on 1 thread; on 2, when each
  // went through the queue, 165-180 us or 650-760 us, as the 2-vCPU VM's cache-line round trip
  // between its vCPUs measured 65-120 ns or 360-410 ns (two states lasting minutes).
  if (ready && executor_.help_while_submitting_ && !task.waits_outside && Tiny(*n)) {
    Executor::Run({this, n}, static_cast<int>(executor_.workers_.size()));
  } else if (ready) {
    executor_.Push(this, &n, 1);
  }
  // With no worker threads the caller runs each task as soon as it is ready, while its inputs
  // are still in cache and before the history fills with the accesses of a whole step (which
  // every later access scans).
  // With workers, the caller runs ready tasks when more are queued than the workers can take:
  // it would otherwise submit a whole decode step (1500 tasks, ~1 us each) while one core
  // computes alone (SmolLM2 blocks decode on 2 threads: 8.3-9.0 -> 7.9-8.2 ms a step). Never
  // when a worker could take it, or the caller takes every task and the workers sleep. And only
  // once kHelpAhead tasks are in flight: the caller submits nothing while it runs a task, so a
  // worker that finished its own would find nothing queued (SmolLM2 f32 prefill, T = 512 on 2
  // threads, whose matmul tasks take ~1 ms: the caller took one as soon as two were ready and
  // the other core waited for the next ones to be submitted; 1300-1410 -> 1490-1510 tokens/s).
  if (executor_.workers_.empty() ||
      (executor_.help_while_submitting_ &&
       executor_.ready_count_.load(std::memory_order_acquire) > executor_.workers_.size() &&
       in_flight_count_.load(std::memory_order_relaxed) > kHelpAhead))
    executor_.RunReady();
  return id;
}

bool Graph::Tiny(const Node& node) {
  // A task that names no regions (a test's, a benchmark's) has no cost to judge.
  if (node.accesses.empty() || node.flops > kInlineFlops) return false;
  int64_t bytes = 0;
  for (const Access& a : node.accesses) bytes += a.Bytes();
  return bytes <= kInlineBytes;
}

void Graph::Forget(const Node& node) {
  for (const Access& a : node.accesses) {
    if (a.box.Empty()) continue;
    auto it = history_.find(a.tensor);
    if (it != history_.end()) it->second->Remove(node.id, a.box);
  }
}

void Graph::Finish(Node* node, const std::string& error, int worker, double start_us,
                   double end_us) {
  // Reused: a vector of its own cost every task with successors an allocation (a collective in
  // a loop of them: one of each collective's two). Finish never nests on a thread (Push only
  // queues).
  thread_local std::vector<Node*> ready;
  ready.clear();
  std::unique_lock<SpinLock> lock(mu_);
  node->done = true;
  --in_flight_;
  ++finished_;
  Forget(*node);
  if (start_us < 0) ++cancelled_;
  if (!error.empty() && failure_.empty()) {
    failure_ = "task " + std::to_string(node->id) + " (" + node->name + ") failed: " + error;
    failed_.store(true, std::memory_order_release);
  }
  if (record_ && start_us >= 0) {
    int64_t rd = 0, wr = 0;
    for (const Access& a : node->accesses) (a.write ? wr : rd) += a.Bytes();
    records_.push_back({node->id, node->name, worker, start_us, end_us, rd, wr, node->flops});
  }
  for (Node* s : node->successors)
    if (--s->pending == 0) ready.push_back(s);
  node->successors.clear();
  node->run = nullptr;  // free captured arguments early
  Executor& executor = executor_;
  lock.unlock();
  // Queued outside mu_ (shorter critical sections); the graph is alive until the count below
  // drops, since Wait() and ~Graph() return only when it reaches zero.
  if (!ready.empty()) executor.Push(this, ready.data(), ready.size());
  // Last touch of the graph: after this decrement a waiter may destroy it, so only the
  // executor (which outlives every graph) is used afterwards.
  // Wake Wait() / ~Graph() when the graph drains, Submit() when the window reaches its low mark
  // (the count moves by one, so each crossing hits these values exactly); not on every task:
  // each wake-up costs a futex call and a context switch.
  const int64_t left = in_flight_count_.fetch_sub(1, std::memory_order_acq_rel) - 1;
  if (left == 0 || left == kLowWater) executor.Wake();
}

Status Graph::Wait() {
  executor_.RunUntil(this, 0);
  std::lock_guard<SpinLock> lock(mu_);
  if (failure_.empty()) return Status::Ok();
  const std::string cancelled =
      cancelled_ == 1 ? "1 task cancelled" : std::to_string(cancelled_) + " tasks cancelled";
  return Status(StatusCode::kRuntime, "runtime error: " + failure_ + " (" + cancelled + ")");
}

std::vector<std::pair<TaskId, TaskId>> Graph::Edges() const {
  std::lock_guard<SpinLock> lock(mu_);
  return edges_;
}

Executor::Executor(int threads, bool help_while_submitting)
    : help_while_submitting_(help_while_submitting) {
  if (threads <= 0) threads = DefaultThreads();
  threads = std::min(threads, kMaxThreads);
  // Worker i is thread i; the waiting caller is thread `threads - 1`. A thread the host refuses
  // ends the loop: the workers that did start run, the caller makes up for the rest.
  workers_.reserve(static_cast<size_t>(threads - 1));
  for (int i = 0; i + 1 < threads; ++i) {
    try {
      if (fault::ShouldFail(fault::Site::kThread))
        throw std::system_error(EAGAIN, std::generic_category(), "injected by PTOX_FAULT");
      workers_.emplace_back([this, i] { WorkerLoop(i); });
    } catch (const std::system_error& e) {
      Warn(fmt::format("cannot start worker thread {} of {} ({}): running on {} thread(s)", i + 1,
                       threads - 1, e.what(), i + 1));
      break;
    }
  }
}

Executor::~Executor() {
  {
    std::lock_guard<SpinLock> lock(mu_);
    stop_ = true;
  }
  stopping_.store(true, std::memory_order_release);
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

int Executor::DefaultThreads() {
  if (const char* env = std::getenv("PTOX_NUM_THREADS"); env && *env) {
    std::string_view text(env);
    int n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec == std::errc() && end == text.data() + text.size() && n >= 1 && n <= kMaxThreads)
      return n;
    static std::once_flag warned;  // the executor is made once; a second ask stays quiet
    std::call_once(warned, [&] {
      Warn(fmt::format("ignoring PTOX_NUM_THREADS='{}': expected an integer in [1, {}]", text,
                       kMaxThreads));
    });
  }
  // The CPUs this process may run on (taskset, a container's cpuset), as nproc counts them.
  cpu_set_t set;
  CPU_ZERO(&set);
  unsigned n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  if (n == 0) n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(std::min<unsigned>(n, kMaxThreads));
}

Executor& Executor::Default() {
  static Executor executor;
  return executor;
}

void Executor::Push(Graph* graph, Graph::Node* const* nodes, size_t count) {
  bool sleepers;
  {
    std::lock_guard<SpinLock> lock(mu_);
    for (size_t i = 0; i < count; ++i) ready_.emplace_back(graph, nodes[i]);
    ready_count_.store(ready_.size(), std::memory_order_release);
    sleepers = sleeping_workers_ + sleeping_waiters_ > 0;
  }
  if (!sleepers) return;  // a spinning or running thread finds the tasks
  if (count == 1) {
    cv_.notify_one();
  } else {
    cv_.notify_all();
  }
}

std::pair<Graph*, Graph::Node*> Executor::PopReady() {
  const auto item = ready_.front();
  ready_.pop_front();
  ready_count_.store(ready_.size(), std::memory_order_release);
  return item;
}

void Executor::Run(std::pair<Graph*, Graph::Node*> item, int worker) {
  auto [graph, node] = item;
  if (graph->failed_.load(std::memory_order_acquire)) {  // the graph failed: cancel
    graph->Finish(node, "", worker, -1, -1);
    return;
  }
  // Timed only for traces: two clock reads per task were 2 % of a decode step's overhead.
  const double start = graph->record_ ? graph->NowUs() : 0;
  std::string error;
  try {
    error = node->run();
  } catch (const std::exception& e) {
    error = std::string("exception: ") + e.what();
  }
  graph->Finish(node, error, worker, start, graph->record_ ? graph->NowUs() : 0);
}

void Executor::WorkerLoop(int worker) {
  for (;;) {
    SpinForWork([&] { return stopping_.load(std::memory_order_acquire); });
    std::pair<Graph*, Graph::Node*> item;
    {
      std::unique_lock<SpinLock> lock(mu_);
      ++sleeping_workers_;
      cv_.wait(lock, [&] { return stop_ || !ready_.empty(); });
      --sleeping_workers_;
      if (stop_ && ready_.empty()) return;
      item = PopReady();
    }
    Run(item, worker);
  }
}

template <typename Stop>
void Executor::SpinForWork(Stop stop) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinUs);
  // Every 64th poll also yields: where threads outnumber cores (MPI ranks on a small machine),
  // a thread that cannot run until this one's core is free gets it within ~25 us.
  for (int polls = 1; ready_count_.load(std::memory_order_acquire) == 0 && !stop() &&
                      std::chrono::steady_clock::now() < until;
       ++polls) {
    if (polls % 64 == 0) {
      std::this_thread::yield();
    } else {
      for (int i = 0; i < 32; ++i) CpuRelax();
    }
  }
}

void Executor::RunUntil(Graph* graph, int64_t limit) {
  const int me = static_cast<int>(workers_.size());
  auto done = [&] { return graph->in_flight_count_.load(std::memory_order_acquire) <= limit; };
  for (;;) {
    SpinForWork(done);
    std::pair<Graph*, Graph::Node*> item;
    {
      std::unique_lock<SpinLock> lock(mu_);
      ++sleeping_waiters_;
      cv_.wait(lock, [&] { return done() || !ready_.empty(); });
      --sleeping_waiters_;
      if (done()) return;
      item = PopReady();
    }
    Run(item, me);
  }
}

void Executor::RunReady() {
  const int me = static_cast<int>(workers_.size());
  for (;;) {
    std::pair<Graph*, Graph::Node*> item;
    {
      std::lock_guard<SpinLock> lock(mu_);
      auto it = std::find_if(ready_.begin(), ready_.end(),
                             [](const auto& r) { return !r.second->waits_outside; });
      if (it == ready_.end()) return;
      item = *it;
      ready_.erase(it);
      ready_count_.store(ready_.size(), std::memory_order_release);
    }
    Run(item, me);
  }
}

void Executor::Wake() {
  bool sleepers;
  {
    // A thread about to sleep counted itself under mu_ before it checked its condition: it
    // either sees what changed or is counted here. Only threads waiting for a graph: idle
    // workers woken at the end of every graph cost the waking thread a futex call each time
    // (35 us of a 200 us step shrunk to tiny shapes, whose tasks all ran on the caller).
    std::lock_guard<SpinLock> lock(mu_);
    sleepers = sleeping_waiters_ > 0;
  }
  if (sleepers) cv_.notify_all();
}

}  // namespace ptox::runtime
