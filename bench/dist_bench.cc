// dist_bench: ptox's allreduce against the same MPI call made directly (osu-style), per message
// size, on the ranks of an MPI launch. Built where MPI is found (libopenmpi-dev).
//
//   mpirun -np 2 build/release/bench/dist_bench --json=dist2.json --md=dist2.md
//   mpirun --oversubscribe -np 4 build/release/bench/dist_bench ...
//
// Each size runs K back-to-back collectives per timed repetition (K from 1000 at 4 KB down to 4
// at 64 MB), in place on an f32 buffer: raw MPI_Allreduce(MPI_IN_PLACE, MPI_SUM) in a loop, and
// a ptox program whose loop holds `dist.allreduce %y {op = "sum"}` on the CPU target (one Run, so
// launching the program is spread over the K collectives). Time per collective is the slowest
// rank's, median of the repetitions. Bus bandwidth counts 2 (p - 1) / p of the message per rank,
// as osu and nccl-tests do.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "ptox/dist.h"
#include "ptox/ptox.h"

namespace {

using ptox::bench::Clock;
using ptox::bench::Seconds;

const char* kProgram = R"(
func @allreduce_loop(%y: inout tensor<{N}xf32>, %k: in index) {
  for %i = 0 to %k step 1 {
    dist.allreduce %y {op = "sum"}
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
  int64_t bytes = 0;
  int iters = 0;
  double raw_us = 0, ptox_us = 0;
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
  auto prog = ptox::Program::Parse(kProgram, "dist_bench.pto");
  if (!prog.ok()) {
    std::fprintf(stderr, "%s\n", prog.status().message().c_str());
    return 1;
  }
  std::vector<Row> rows;
  for (int64_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
    const int64_t n = bytes / 4;
    const int iters = static_cast<int>(std::max<int64_t>(4, std::min<int64_t>(1000, (int64_t{256} << 20) / bytes / 16)));
    std::vector<float> buf(n, 0.0f);
    Row r;
    r.bytes = bytes;
    r.iters = iters;
    std::vector<double> raw, px;
    for (int rep = -1; rep < reps; ++rep) {  // rep -1 warms up (and compiles the program)
      MPI_Barrier(MPI_COMM_WORLD);
      auto a = Clock::now();
      for (int k = 0; k < iters; ++k)
        MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
      const double t_raw = MaxOverRanks(Seconds(a, Clock::now()) / iters);
      MPI_Barrier(MPI_COMM_WORLD);
      a = Clock::now();
      ptox::Status s = ptox::Run(*prog, {ptox::Tensor::Contiguous(buf.data(), ptox::DType::kF32, {n}),
                                         int64_t{iters}},
                                 {.target = "cpu"});
      if (!s.ok()) ptox::AbortRun(s.message(), 1);
      const double t_ptox = MaxOverRanks(Seconds(a, Clock::now()) / iters);
      if (rep >= 0) raw.push_back(t_raw), px.push_back(t_ptox);
    }
    r.raw_us = ptox::bench::Summarize(raw).median * 1e6;
    r.ptox_us = ptox::bench::Summarize(px).median * 1e6;
    rows.push_back(r);
    if (me.rank == 0)
      std::fprintf(stderr, "%10lld B: raw %9.2f us  ptox %9.2f us\n", static_cast<long long>(bytes),
                   r.raw_us, r.ptox_us);
  }
  if (me.rank != 0) return 0;
  const int p = me.world_size;
  auto busbw = [&](const Row& r, double us) { return r.bytes * 2.0 * (p - 1) / p / (us * 1e-6) / 1e9; };
  std::string table = "| bytes | collectives per run | raw MPI_Allreduce us | ptox us | ptox extra us | "
                      "raw bus GB/s | ptox bus GB/s | ptox / raw bandwidth |\n"
                      "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  std::string rows_json;
  for (const Row& r : rows) {
    char line[512];
    std::snprintf(line, sizeof line, "| %lld | %d | %.2f | %.2f | %+.2f | %.2f | %.2f | %.2fx |\n",
                  static_cast<long long>(r.bytes), r.iters, r.raw_us, r.ptox_us,
                  r.ptox_us - r.raw_us, busbw(r, r.raw_us), busbw(r, r.ptox_us),
                  r.raw_us / r.ptox_us);
    table += line;
    std::snprintf(line, sizeof line,
                  "    {\"bytes\": %lld, \"iters\": %d, \"raw_us\": %.3f, \"ptox_us\": %.3f, "
                  "\"raw_bus_gbs\": %.3f, \"ptox_bus_gbs\": %.3f}",
                  static_cast<long long>(r.bytes), r.iters, r.raw_us, r.ptox_us, busbw(r, r.raw_us),
                  busbw(r, r.ptox_us));
    rows_json += (rows_json.empty() ? "" : ",\n") + std::string(line);
  }
  const std::string head = "allreduce (f32 sum, in place), " + std::to_string(p) +
                           " ranks; slowest rank's time per collective, median of " +
                           std::to_string(reps) + " repetitions";
  std::printf("%s\n\n%s", head.c_str(), table.c_str());
  if (!md.empty()) std::ofstream(md) << head << "\n\n" << table;
  if (!json.empty())
    std::ofstream(json) << "{\n" << ptox::bench::ManifestMember() << "  \"ranks\": " << p
                        << ",\n  \"op\": \"allreduce f32 sum\",\n  \"rows\": [\n" << rows_json
                        << "\n  ]\n}\n";
  return 0;
}
