// dist_patterns: the message patterns a bit-exact allreduce can use, made with plain MPI calls
// (no ptox), against MPI_Allreduce itself. ptox folds every rank's values in rank order
// (((x0 + x1) + x2) + ...; docs/distributed.md), so every element's values must meet in one place
// before it is folded; MPI_Allreduce reduces as its messages go (recursive doubling, Rabenseifner)
// in an order of its choosing. This separates what that contract costs from what ptox's own code
// costs (dist_bench measures ptox against the same MPI_Allreduce).
//
//   mpirun -np 2 build/release/bench/dist_patterns
//   mpirun --oversubscribe -np 4 build/release/bench/dist_patterns --reps=15
//
// f32 sum, in place, K back-to-back calls per timed repetition; per call the slowest rank's time,
// median over repetitions, patterns interleaved within each repetition. Patterns:
//   mpi      MPI_Allreduce(MPI_IN_PLACE, MPI_SUM)
//   gather   one round, every rank sends its whole buffer to every rank, which folds all of them
//            in rank order (ptox's pattern up to 64 KB to every peer)
//   doubling recursive-doubling allgather of the buffers (log2 p pairwise rounds), then the same
//            fold (a power-of-two p)
//   scatter  rank c gets chunk c from every rank, folds it in rank order, and sends it to every
//            rank (ptox's pattern above 64 KB)
//   halving  recursive halving reduce-scatter and doubling allgather (Rabenseifner's pattern),
//            folding pairwise in a rank-ordered tree ((x0 + x1) + (x2 + x3)): another order than
//            ptox's, measured to see whether its pattern would be faster here (a power-of-two p)
// Waits test, and yield the core between tests when the ranks outnumber the cores, as ptox's do
// (one machine assumed).
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"

namespace {

int rank_ = 0, size_ = 1;
bool oversubscribed = false;
std::vector<float> all;  // gathered values, or received chunks

void Wait(MPI_Request* reqs, int n) {
  for (;;) {
    int done = 0;
    MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
    if (done) return;
    if (oversubscribed) sched_yield();
  }
}

// out[i] = ((v[0][i] + v[1][i]) + ...) for v[k] = values + k * stride, or `own` for this rank's
// (where it lies, as ptox folds it), by blocks so that each add is a vector loop; out may be own.
void FoldAll(float* out, const float* values, size_t stride, const float* own, size_t n) {
  constexpr size_t kBlock = 1024;
  float acc[kBlock];
  auto v = [&](int k) { return k == rank_ ? own : values + k * stride; };
  for (size_t i0 = 0; i0 < n; i0 += kBlock) {
    const size_t m = std::min(kBlock, n - i0);
    std::memcpy(acc, v(0) + i0, m * sizeof(float));
    for (int k = 1; k < size_; ++k)
      for (size_t i = 0; i < m; ++i) acc[i] += v(k)[i0 + i];
    std::memcpy(out + i0, acc, m * sizeof(float));
  }
}

void Gather(float* x, size_t n) {
  all.resize(n * size_);
  std::vector<MPI_Request> q;
  q.reserve(2 * size_);
  for (int send = 0; send < 2; ++send)
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      q.emplace_back();
      if (send)
        MPI_Isend(x, n * 4, MPI_BYTE, r, 1, MPI_COMM_WORLD, &q.back());
      else
        MPI_Irecv(all.data() + r * n, n * 4, MPI_BYTE, r, 1, MPI_COMM_WORLD, &q.back());
    }
  Wait(q.data(), static_cast<int>(q.size()));
  FoldAll(x, all.data(), n, x, n);
}

void Doubling(float* x, size_t n) {
  all.resize(n * size_);
  std::memcpy(all.data() + rank_ * n, x, n * sizeof(float));
  for (int d = 1; d < size_; d <<= 1) {
    const int partner = rank_ ^ d, mine = rank_ & ~(d - 1), theirs = partner & ~(d - 1);
    MPI_Request q[2];
    MPI_Irecv(all.data() + theirs * n, d * n * 4, MPI_BYTE, partner, 2, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(all.data() + mine * n, d * n * 4, MPI_BYTE, partner, 2, MPI_COMM_WORLD, &q[1]);
    Wait(q, 2);
  }
  FoldAll(x, all.data(), n, all.data() + rank_ * n, n);
}

void Scatter(float* x, size_t n) {
  const size_t c = n / size_;  // n is a multiple of the ranks (main)
  all.resize(n);
  std::vector<MPI_Request> q;
  for (int round = 0; round < 2; ++round) {
    q.clear();
    for (int send = 0; send < 2; ++send)
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        q.emplace_back();
        float* recv = round == 0 ? all.data() + r * c : x + r * c;
        const float* sent = round == 0 ? x + r * c : x + rank_ * c;
        if (send)
          MPI_Isend(sent, c * 4, MPI_BYTE, r, 3, MPI_COMM_WORLD, &q.back());
        else
          MPI_Irecv(recv, c * 4, MPI_BYTE, r, 3, MPI_COMM_WORLD, &q.back());
      }
    Wait(q.data(), static_cast<int>(q.size()));
    if (round == 0) FoldAll(x + rank_ * c, all.data(), c, x + rank_ * c, c);
  }
}

void Halving(float* x, size_t n) {
  all.resize(n);
  size_t lo = 0, hi = n;
  std::vector<std::pair<size_t, size_t>> ranges;
  for (int d = 1; d < size_; d <<= 1) {  // reduce-scatter, nearest partner first
    const int partner = rank_ ^ d;
    const bool upper = rank_ & d;
    const size_t mid = lo + (hi - lo) / 2;
    const size_t keep_lo = upper ? mid : lo, keep_hi = upper ? hi : mid;
    const size_t send_lo = upper ? lo : mid, send_hi = upper ? mid : hi;
    ranges.push_back({lo, hi});
    MPI_Request q[2];
    MPI_Irecv(all.data() + keep_lo, (keep_hi - keep_lo) * 4, MPI_BYTE, partner, 4, MPI_COMM_WORLD,
              &q[0]);
    MPI_Isend(x + send_lo, (send_hi - send_lo) * 4, MPI_BYTE, partner, 4, MPI_COMM_WORLD, &q[1]);
    Wait(q, 2);
    for (size_t i = keep_lo; i < keep_hi; ++i)  // the lower ranks' partial sum on the left
      x[i] = upper ? all[i] + x[i] : x[i] + all[i];
    lo = keep_lo, hi = keep_hi;
  }
  for (int d = size_ >> 1; d >= 1; d >>= 1) {  // allgather, in the reverse order
    const int partner = rank_ ^ d;
    const auto [parent_lo, parent_hi] = ranges.back();
    ranges.pop_back();
    const size_t other_lo = lo == parent_lo ? hi : parent_lo;
    const size_t other_hi = lo == parent_lo ? parent_hi : lo;
    MPI_Request q[2];
    MPI_Irecv(x + other_lo, (other_hi - other_lo) * 4, MPI_BYTE, partner, 5, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(x + lo, (hi - lo) * 4, MPI_BYTE, partner, 5, MPI_COMM_WORLD, &q[1]);
    Wait(q, 2);
    lo = parent_lo, hi = parent_hi;
  }
}

double MaxOverRanks(double v) {
  double m = 0;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  oversubscribed = size_ > static_cast<int>(std::thread::hardware_concurrency());
  int reps = 9;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--reps=", 7) == 0) {
      reps = std::atoi(argv[i] + 7);
    } else {
      if (rank_ == 0) std::fprintf(stderr, "usage: dist_patterns [--reps=N]\n");
      MPI_Finalize();
      return 2;
    }
  }
  reps = std::max(reps, 1);
  const bool pof2 = (size_ & (size_ - 1)) == 0;
  struct Pattern {
    const char* name;
    void (*run)(float*, size_t);
    bool needs_pof2;
  };
  const Pattern patterns[] = {{"mpi", nullptr, false},
                              {"gather", &Gather, false},
                              {"doubling", &Doubling, true},
                              {"scatter", &Scatter, false},
                              {"halving", &Halving, true}};
  if (rank_ == 0)
    std::printf(
        "f32 sum allreduce patterns, %d ranks; us per call (slowest rank), median of %d "
        "repetitions, and its ratio to MPI_Allreduce (< 1: slower)\n",
        size_, reps);
  // 3840 bytes: the most OpenMPI's shared memory sends eagerly; 4096: rendezvous.
  for (size_t bytes :
       {size_t{3840}, size_t{4096}, size_t{65536}, size_t{1} << 20, size_t{4} << 20}) {
    const size_t n = bytes / 4 / size_ * size_;
    const int iters =
        static_cast<int>(std::max<size_t>(4, (size_t{4} << 20) / std::max(bytes, size_t{4096})));
    // Each pattern once on small integers first, whose sum is exact in any order.
    std::vector<float> x(n);
    for (size_t p = 0; p < std::size(patterns); ++p) {
      if (!patterns[p].run || (patterns[p].needs_pof2 && !pof2)) continue;
      for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>((rank_ + 1) * (i % 7));
      patterns[p].run(x.data(), n);
      const float ranks = static_cast<float>(size_ * (size_ + 1) / 2);
      for (size_t i = 0; i < n; ++i)
        if (x[i] != ranks * static_cast<float>(i % 7)) {
          std::fprintf(stderr, "dist_patterns: %s is wrong at %zu B, element %zu\n",
                       patterns[p].name, n * 4, i);
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    std::fill(x.begin(), x.end(), 1.0f);
    std::vector<std::vector<double>> times(std::size(patterns));
    for (int rep = -1; rep < reps; ++rep) {
      for (size_t p = 0; p < std::size(patterns); ++p) {
        if (patterns[p].needs_pof2 && !pof2) continue;
        MPI_Barrier(MPI_COMM_WORLD);
        const auto start = ptox::bench::Clock::now();
        for (int k = 0; k < iters; ++k) {
          if (patterns[p].run)
            patterns[p].run(x.data(), n);
          else
            MPI_Allreduce(MPI_IN_PLACE, x.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
        }
        const double t =
            MaxOverRanks(ptox::bench::Seconds(start, ptox::bench::Clock::now()) / iters);
        if (rep >= 0) times[p].push_back(t);
      }
    }
    if (rank_ != 0) continue;
    std::string line = std::to_string(n * 4) + " B:";
    const double mpi = ptox::bench::Summarize(times[0]).median;
    for (size_t p = 0; p < std::size(patterns); ++p) {
      if (times[p].empty()) continue;
      const double t = ptox::bench::Summarize(times[p]).median;
      char cell[96];
      std::snprintf(cell, sizeof cell, "  %s %.2f us (%.2fx)", patterns[p].name, t * 1e6, mpi / t);
      line += cell;
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  MPI_Finalize();
}
