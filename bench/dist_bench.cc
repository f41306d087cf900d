// dist_bench: ptox's allreduce and allgather against the same MPI calls made directly
// (osu-style), per message size, on the ranks of an MPI launch. Built where MPI is found
// (libopenmpi-dev).
//
//   mpirun -np 2 build/release/bench/dist_bench --json=dist2.json --md=dist2.md
//   mpirun --oversubscribe -np 4 build/release/bench/dist_bench ...
//
// Each size runs K back-to-back collectives per timed repetition (K from 1000 at 4 KB down to 4
// at 64 MB) on f32 buffers: raw MPI_Allreduce(MPI_IN_PLACE, MPI_SUM) / MPI_Allgather in a loop,
// then a ptox program whose loop holds `dist.allreduce %y {op = "sum"}` / `dist.allgather %g, %x`
// on the CPU target (one Run, so launching the program is spread over the K collectives). Time
// per collective is the slowest rank's, median of the repetitions; "ptox / raw" is the median of
// the repetitions' ratios, and "ptox extra" the median of their differences (raw and ptox run
// back to back in each, so both see the same machine: this VM's speed drifts by 2x over minutes,
// and the difference of two medians taken apart swung by 10 us at 4 KB on 4 ranks). The message
// size is the allreduce's buffer and each rank's allgather contribution. Bus bandwidth counts
// 2 (p - 1) / p of the allreduce's message per rank and (p - 1) / p of the allgather's result,
// as osu and nccl-tests do. The memory ceiling beside them: STREAM triad on rank 0, one thread,
// in the same run.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "ptox/bandwidth.h"
#include "ptox/dist.h"
#include "ptox/ptox.h"

namespace {

using ptox::bench::Clock;
using ptox::bench::Seconds;

const char* kAllreduce = R"(
func @allreduce_loop(%y: inout tensor<{N}xf32>, %k: in index) {
  for %i = 0 to %k step 1 {
    dist.allreduce %y {op = "sum"}
  }
}
)";

const char* kAllgather = R"(
func @allgather_loop(%x: in tensor<{N}xf32>, %g: out tensor<{G}xf32>, %k: in index) {
  for %i = 0 to %k step 1 {
    dist.allgather %g, %x
  }
}
)";

// The slowest rank's value.
double MaxOverRanks(double v) {
  double out = v;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

struct Row {
  std::string op;
  int64_t bytes = 0;
  int iters = 0;
  double raw_us = 0, ptox_us = 0;
  ptox::bench::Stats ratio;     // raw time / ptox time per repetition
  ptox::bench::Stats extra_us;  // ptox time - raw time per repetition
};

}  // namespace

int main(int argc, char** argv) {
  std::string json, md;
  int64_t max_bytes = int64_t{64} << 20;
  int reps = 7;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--json=", 0) == 0) json = a.substr(7);
    else if (a.rfind("--md=", 0) == 0) md = a.substr(5);
    else if (a.rfind("--max-bytes=", 0) == 0) max_bytes = std::atoll(a.c_str() + 12);
    else if (a.rfind("--reps=", 0) == 0) reps = std::atoi(a.c_str() + 7);
    else {
      std::fprintf(stderr, "usage: mpirun -np N dist_bench [--json=F] [--md=F] [--max-bytes=B] "
                           "[--reps=R]\n");
      return 2;
    }
  }
  const ptox::RankInfo me = ptox::ThisRank();  // initializes MPI (under a launcher)
  if (me.world_size < 2) {
    std::fprintf(stderr, "dist_bench: run it under mpirun -np N with N >= 2\n");
    return 2;
  }
  const int p = me.world_size;
  auto allreduce = ptox::Program::Parse(kAllreduce, "allreduce.pto");
  auto allgather = ptox::Program::Parse(kAllgather, "allgather.pto");
  if (!allreduce.ok() || !allgather.ok()) ptox::AbortRun("dist_bench: a program did not parse", 1);
  MPI_Barrier(MPI_COMM_WORLD);
  const ptox::Bandwidth triad =
      me.rank == 0 ? ptox::TriadGBs(1, int64_t{64} << 20) : ptox::Bandwidth{};
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<Row> rows;
  for (const std::string op : {"allreduce", "allgather"}) {
    for (int64_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
      const int64_t n = bytes / 4;
      const int iters = static_cast<int>(
          std::max<int64_t>(4, std::min<int64_t>(1000, (int64_t{256} << 20) / bytes / 16)));
      std::vector<float> buf(n, 0.0f), all(op == "allgather" ? n * p : 0);
      Row r{op, bytes, iters};
      std::vector<double> raw, px, ratio, extra;
      for (int rep = -1; rep < reps; ++rep) {  // rep -1 warms up (and compiles the program)
        MPI_Barrier(MPI_COMM_WORLD);
        auto a = Clock::now();
        for (int k = 0; k < iters; ++k) {
          if (op == "allreduce")
            MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
          else
            MPI_Allgather(buf.data(), static_cast<int>(n), MPI_FLOAT, all.data(),
                          static_cast<int>(n), MPI_FLOAT, MPI_COMM_WORLD);
        }
        const double t_raw = MaxOverRanks(Seconds(a, Clock::now()) / iters);
        MPI_Barrier(MPI_COMM_WORLD);
        a = Clock::now();
        const ptox::Tensor x = ptox::Tensor::Contiguous(buf.data(), ptox::DType::kF32, {n});
        const ptox::Status s =
            op == "allreduce"
                ? ptox::Run(*allreduce, {x, int64_t{iters}}, {.target = "cpu"})
                : ptox::Run(*allgather,
                            {x, ptox::Tensor::Contiguous(all.data(), ptox::DType::kF32, {n * p}),
                             int64_t{iters}},
                            {.target = "cpu"});
        if (!s.ok()) ptox::AbortRun(s.message(), 1);
        const double t_ptox = MaxOverRanks(Seconds(a, Clock::now()) / iters);
        if (rep >= 0) {
          raw.push_back(t_raw), px.push_back(t_ptox);
          ratio.push_back(t_raw / t_ptox), extra.push_back((t_ptox - t_raw) * 1e6);
        }
      }
      r.raw_us = ptox::bench::Summarize(raw).median * 1e6;
      r.ptox_us = ptox::bench::Summarize(px).median * 1e6;
      r.ratio = ptox::bench::Summarize(ratio);
      r.extra_us = ptox::bench::Summarize(extra);
      rows.push_back(r);
      if (me.rank == 0)
        std::fprintf(stderr, "%s %10lld B: raw %9.2f us  ptox %9.2f us  %+.2f us  %.2fx\n",
                     op.c_str(), static_cast<long long>(bytes), r.raw_us, r.ptox_us,
                     r.extra_us.median, r.ratio.median);
    }
  }
  if (me.rank != 0) return 0;
  auto busbw = [&](const Row& r, double us) {
    const double moved = r.op == "allreduce" ? r.bytes * 2.0 * (p - 1) / p : r.bytes * (p - 1.0);
    return moved / (us * 1e-6) / 1e9;
  };
  std::string table =
      "| op | bytes | collectives per run | raw MPI us | ptox us | ptox extra us | raw bus GB/s | "
      "ptox bus GB/s | ptox / raw (range) |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
  std::string rows_json;
  for (const Row& r : rows) {
    char line[640];
    std::snprintf(line, sizeof line,
                  "| %s | %lld | %d | %.2f | %.2f | %+.2f | %.2f | %.2f | %.2fx (%.2f-%.2f) |\n",
                  r.op.c_str(), static_cast<long long>(r.bytes), r.iters, r.raw_us, r.ptox_us,
                  r.extra_us.median, busbw(r, r.raw_us), busbw(r, r.ptox_us), r.ratio.median,
                  r.ratio.min, r.ratio.max);
    table += line;
    std::snprintf(line, sizeof line,
                  "    {\"op\": \"%s\", \"bytes\": %lld, \"iters\": %d, \"raw_us\": %.3f, "
                  "\"ptox_us\": %.3f, \"ptox_extra_us\": %.3f, \"raw_bus_gbs\": %.3f, "
                  "\"ptox_bus_gbs\": %.3f, "
                  "\"ptox_vs_raw\": %.4f, \"ptox_vs_raw_min\": %.4f, \"ptox_vs_raw_max\": %.4f}",
                  r.op.c_str(), static_cast<long long>(r.bytes), r.iters, r.raw_us, r.ptox_us,
                  r.extra_us.median, busbw(r, r.raw_us), busbw(r, r.ptox_us), r.ratio.median,
                  r.ratio.min, r.ratio.max);
    rows_json += (rows_json.empty() ? "" : ",\n") + std::string(line);
  }
  char head[512];
  std::snprintf(head, sizeof head,
                "allreduce (f32 sum, in place) and allgather (f32), %d ranks; slowest rank's time "
                "per collective, median of %d repetitions; memory ceiling: STREAM triad %.1f "
                "GB/s (rank 0, 1 thread, %.1f-%.1f)",
                p, reps, triad.median, triad.min, triad.max);
  std::printf("%s\n\n%s", head, table.c_str());
  if (!md.empty()) std::ofstream(md) << head << "\n\n" << table;
  if (!json.empty())
    std::ofstream(json) << "{\n"
                        << ptox::bench::ManifestMember() << "  \"ranks\": " << p
                        << ",\n  \"triad_gbs\": " << triad.median << ",\n  \"rows\": [\n"
                        << rows_json << "\n  ]\n}\n";
  return 0;
}
