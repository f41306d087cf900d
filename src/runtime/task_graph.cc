// Task graph and executor. One mutex per graph guards the dependency bookkeeping; workers take
// ready tasks from the executor's queue and sleep when it is empty.
//
// Dependency inference: for each access of a new task, the unfinished earlier accesses of the
// same tensor are scanned; an overlap where either side writes is an edge (RAW, WAR, WAW).
// Finished tasks leave the history, so its size is bounded by the tasks in flight; Submit()
// blocks while more than kMaxInFlight tasks are pending, which bounds both.
#include "runtime/task_graph.h"

#include <algorithm>
#include <cstdlib>

namespace ptox::runtime {
namespace {

constexpr int64_t kMaxInFlight = 4096;

}  // namespace

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

int64_t Box::Volume() const {
  if (Empty()) return 0;
  int64_t v = 1;
  for (int d = 0; d < rank; ++d) v *= hi[d] - lo[d];
  return v;
}

struct Graph::Node {
  TaskId id;
  Task task;
  int pending = 0;  // unfinished predecessors (+1 while being submitted)
  bool done = false;
  std::vector<Node*> successors;
};

Graph::Graph(Executor& executor, bool record)
    : executor_(executor), record_(record), start_(std::chrono::steady_clock::now()) {}

Graph::~Graph() {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return in_flight_ == 0; });
}

double Graph::NowUs() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start_)
      .count();
}

TaskId Graph::Submit(Task task) {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return in_flight_ < kMaxInFlight; });
  auto node = std::make_unique<Node>();
  Node* n = node.get();
  n->id = submitted_++;
  n->task = std::move(task);
  nodes_.push_back(std::move(node));
  if (!failure_.empty()) {  // the graph already failed: cancel instead of running
    n->done = true;
    ++cancelled_;
    ++finished_;
    done_cv_.notify_all();
    return n->id;
  }
  ++in_flight_;
  n->pending = 1;  // held until every edge is in place
  auto add_edge = [&](Node* before) {
    if (before->done || before == n) return;
    if (!before->successors.empty() && before->successors.back() == n) return;  // duplicate
    before->successors.push_back(n);
    ++n->pending;
    edges_.emplace_back(before->id, n->id);
  };
  for (TaskId before : n->task.after) {
    if (before >= 0 && before < n->id) add_edge(nodes_[before].get());
  }
  for (const Access& a : n->task.accesses) {
    std::vector<HistoryEntry>& hist = history_[a.tensor];
    // Drop entries of finished tasks, then link to every conflicting overlap.
    hist.erase(std::remove_if(hist.begin(), hist.end(),
                              [&](const HistoryEntry& e) { return nodes_[e.id]->done; }),
               hist.end());
    for (const HistoryEntry& e : hist)
      if ((e.write || a.write) && e.box.Overlaps(a.box)) add_edge(nodes_[e.id].get());
  }
  for (const Access& a : n->task.accesses) history_[a.tensor].push_back({n->id, a.box, a.write});
  if (--n->pending == 0) executor_.Push(this, n);
  return n->id;
}

void Graph::Release(Node* node) {
  if (--node->pending == 0) executor_.Push(this, node);
}

void Graph::Finish(Node* node, const std::string& error, int worker, double start_us,
                   double end_us) {
  std::lock_guard<std::mutex> lock(mu_);
  node->done = true;
  --in_flight_;
  ++finished_;
  if (!error.empty() && failure_.empty())
    failure_ = "task " + std::to_string(node->id) + " (" + node->task.name + ") failed: " + error;
  if (record_ && start_us >= 0) {
    int64_t rd = 0, wr = 0;
    for (const Access& a : node->task.accesses)
      (a.write ? wr : rd) += a.box.Volume() * a.element_bytes;
    records_.push_back({node->id, node->task.name, worker, start_us, end_us, rd, wr,
                        node->task.flops});
  }
  for (Node* s : node->successors) Release(s);
  node->successors.clear();
  node->task.run = nullptr;  // free captured arguments early
  done_cv_.notify_all();
}

Status Graph::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return in_flight_ == 0; });
  if (failure_.empty()) return Status::Ok();
  return Status(StatusCode::kRuntime, "runtime error: " + failure_ + " (" +
                                          std::to_string(cancelled_) + " tasks cancelled)");
}

std::vector<std::pair<TaskId, TaskId>> Graph::Edges() const {
  std::lock_guard<std::mutex> lock(mu_);
  return edges_;
}

Executor::Executor(int threads) {
  if (threads <= 0) threads = DefaultThreads();
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

Executor::~Executor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

int Executor::DefaultThreads() {
  if (const char* env = std::getenv("PTOX_NUM_THREADS"); env && *env) {
    int n = std::atoi(env);
    if (n >= 1) return n;
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

Executor& Executor::Default() {
  static Executor executor;
  return executor;
}

void Executor::Push(Graph* graph, Graph::Node* node) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.emplace_back(graph, node);
  }
  cv_.notify_one();
}

void Executor::WorkerLoop(int worker) {
  for (;;) {
    std::pair<Graph*, Graph::Node*> item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !ready_.empty(); });
      if (stop_ && ready_.empty()) return;
      item = ready_.front();
      ready_.pop_front();
    }
    auto [graph, node] = item;
    bool skip;
    {
      std::lock_guard<std::mutex> lock(graph->mu_);
      skip = !graph->failure_.empty();
      if (skip) ++graph->cancelled_;
    }
    if (skip) {
      graph->Finish(node, "", worker, -1, -1);
      continue;
    }
    double start = graph->NowUs();
    std::string error;
    try {
      error = node->task.run();
    } catch (const std::exception& e) {
      error = std::string("exception: ") + e.what();
    }
    graph->Finish(node, error, worker, start, graph->NowUs());
  }
}

}  // namespace ptox::runtime
