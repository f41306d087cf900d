// A standalone driver for LLVMFuzzerTestOneInput where libFuzzer is unavailable (GCC): runs every
// seed file, then deterministic random mutations of them (bit flips, dictionary tokens, deletions,
// duplications, truncations, splices), bounded by time and count. Takes libFuzzer-style flags:
// -max_total_time=S (default 20), -runs=N (default 50000), -seed=N, -dict=FILE; others are ignored.
// On a crash the current input is written to ./crash-input.pto.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

constexpr size_t kMaxInputSize = 1 << 16;

// The input being run, for the crash handler.
const std::string* g_current = nullptr;

void OnCrash(int sig) {
  if (g_current != nullptr) {
    int fd = open("crash-input.pto", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ssize_t n = write(fd, g_current->data(), g_current->size());
      (void)n;
      close(fd);
    }
    const char msg[] = "fuzz_driver: crashed; input written to crash-input.pto\n";
    ssize_t n = write(2, msg, sizeof(msg) - 1);
    (void)n;
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

struct Options {
  double max_seconds = 20;
  uint64_t runs = 50000;
  uint64_t seed = 1;
  std::string dict;
  std::vector<std::string> paths;
};

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      size_t n = std::strlen(flag);
      return a.compare(0, n, flag) == 0 ? argv[i] + n : nullptr;
    };
    if (const char* v = value("-max_total_time="))
      o.max_seconds = std::atof(v);
    else if (const char* v = value("-runs="))
      o.runs = std::strtoull(v, nullptr, 10);
    else if (const char* v = value("-seed="))
      o.seed = std::strtoull(v, nullptr, 10);
    else if (const char* v = value("-dict="))
      o.dict = v;
    else if (a.empty() || a[0] != '-')
      o.paths.push_back(a);
  }
  return o;
}

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str().substr(0, kMaxInputSize);
}

// Seeds: every regular file under the given files / directories, in sorted order.
std::vector<std::string> LoadSeeds(const std::vector<std::string>& paths) {
  std::vector<std::filesystem::path> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) files.emplace_back(p);
    if (!std::filesystem::is_directory(p, ec)) continue;
    for (const auto& e : std::filesystem::recursive_directory_iterator(p, ec))
      if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> seeds;
  for (const auto& f : files) seeds.push_back(ReadFile(f));
  return seeds;
}

// Dictionary lines look like "token" (libFuzzer format: \\, \" and \xNN escapes; # comments).
std::vector<std::string> LoadDict(const std::string& path) {
  std::vector<std::string> tokens;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    size_t b = line.find('"'), e = line.rfind('"');
    if (line.empty() || line[0] == '#' || b == std::string::npos || e <= b) continue;
    std::string t;
    for (size_t i = b + 1; i < e; ++i) {
      if (line[i] == '\\' && i + 1 < e && line[i + 1] == 'x' && i + 3 < e) {
        t += static_cast<char>(std::stoi(line.substr(i + 2, 2), nullptr, 16));
        i += 3;
      } else if (line[i] == '\\' && i + 1 < e) {
        t += line[++i];
      } else {
        t += line[i];
      }
    }
    tokens.push_back(t);
  }
  return tokens;
}

class Mutator {
 public:
  Mutator(uint64_t seed, std::vector<std::string> dict) : rng_(seed), dict_(std::move(dict)) {
    if (dict_.empty()) dict_ = {"%a", "{", "}", "func", "tile<", "tensor<", ",", "0", "\n"};
  }

  std::string Mutate(const std::vector<std::string>& seeds) {
    std::string s = seeds.empty() ? std::string() : seeds[Below(seeds.size())];
    for (size_t n = 1 + Below(5); n > 0; --n) MutateOnce(s, seeds);
    if (s.size() > kMaxInputSize) s.resize(kMaxInputSize);
    return s;
  }

 private:
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }

  void MutateOnce(std::string& s, const std::vector<std::string>& seeds) {
    size_t pos = Below(s.size() + 1);
    switch (Below(7)) {
      case 0:  // flip one bit
        if (!s.empty()) s[Below(s.size())] ^= static_cast<char>(1u << Below(8));
        break;
      case 1:  // replace a byte with a syntax character
        if (!s.empty()) s[Below(s.size())] = "%@{}[]()<>,:=-.x0123456789\"\n /"[Below(31)];
        break;
      case 2:  // insert a dictionary token
        s.insert(pos, dict_[Below(dict_.size())]);
        break;
      case 3:  // delete a range
        s.erase(pos, 1 + Below(16));
        break;
      case 4: {  // duplicate a range somewhere else (nesting, repeated statements)
        std::string piece = s.substr(pos, 1 + Below(64));
        s.insert(Below(s.size() + 1), piece);
        break;
      }
      case 5:  // truncate
        s.resize(pos);
        break;
      case 6: {  // splice in the tail of another seed
        if (seeds.empty()) break;
        const std::string& other = seeds[Below(seeds.size())];
        s = s.substr(0, pos) + other.substr(Below(other.size() + 1));
        break;
      }
    }
  }

  std::mt19937_64 rng_;
  std::vector<std::string> dict_;
};

void Run(const std::string& input) {
  g_current = &input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  g_current = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = ParseArgs(argc, argv);
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, OnCrash);
  std::vector<std::string> seeds = LoadSeeds(opt.paths);
  for (const std::string& s : seeds) Run(s);
  Mutator mutator(opt.seed, opt.dict.empty() ? std::vector<std::string>{} : LoadDict(opt.dict));
  auto start = std::chrono::steady_clock::now();
  uint64_t runs = 0;
  for (; runs < opt.runs; ++runs) {
    if ((runs & 255) == 0) {
      std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      if (elapsed.count() > opt.max_seconds) break;
    }
    Run(mutator.Mutate(seeds));
  }
  std::printf("fuzz_driver: %zu seeds, %llu mutated inputs, no crash\n", seeds.size(),
              static_cast<unsigned long long>(runs));
  return 0;
}
