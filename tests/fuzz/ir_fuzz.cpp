// A deterministic mutation fuzzer for every text parser and verifier (issue 19):
// the example programs lowered to each layer (Graph, Schedule, Tile and
// Target IR, for the CPU and CUDA lanes) are mutated byte- and token-wise and
// fed to the parser, the verifiers, the lowering passes and the renderers, in
// process. A tessera::Error (a stable diagnostic) is the expected outcome of
// bad input; anything else fails: another exception (InternalError included:
// a broken invariant is a bug), or a crash or hang, which the signal and alarm
// handlers report with the input that caused it (run under ASan+UBSan by
// `make test-asan` for memory errors that do not crash).
//
// Edited Schedule, Tile and Target IR are refused by their digests (E301,
// E406, E503/E507) before anything reads them, so each mutant is also
// "forged": its digests are recomputed and it goes on through the verifiers
// and renderers, which must refuse it cleanly too.
//
//   TESSERA_FUZZ_SECONDS     time budget (default 10)
//   TESSERA_FUZZ_ITERATIONS  iteration cap (default unbounded within the time)
//   TESSERA_FUZZ_SEED        PRNG seed (default 1): a run is reproducible by seed and iteration
//   TESSERA_FUZZ_CRASH       where the input of a failure is written (default fuzz-failure.txt)
//
// Every failure found becomes a lit test (tests/ir/robust-input.test, tile-bad-ops.test).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ir/ir_hash.hpp"
#include "ir/parser.hpp"
#include "ir/printer.hpp"
#include "ir/schedule_dialect.hpp"
#include "ir/target_dialect.hpp"
#include "ir/verify.hpp"
#include "passes/pipeline.hpp"
#include "passes/tile_to_target.hpp"
#include "support/diagnostic.hpp"
#include "support/sha256.hpp"

namespace fs = std::filesystem;
using namespace tessera;

namespace {

struct Seed {
  std::string name;  // program:layer:target
  std::string text;
  std::string target;
};

// splitmix64: small, fast and the same everywhere.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n ? static_cast<size_t>(next() % n) : 0; }
};

const std::vector<std::string>& extreme_numbers() {
  static const std::vector<std::string> v = {"0",
                                             "-1",
                                             "1",
                                             "2",
                                             "9223372036854775807",
                                             "-9223372036854775808",
                                             "99999999999999",
                                             "4294967296",
                                             "2147483648",
                                             "1e309",
                                             "-1e309",
                                             "nan",
                                             "inf",
                                             "-inf",
                                             "1.5",
                                             "-0.0",
                                             "1e-320",
                                             "65536",
                                             std::string(400, '9'),
                                             "3037000500"};
  return v;
}

const std::vector<std::string>& tokens() {
  static const std::vector<std::string> v = {"{",
                                             "}",
                                             "(",
                                             ")",
                                             "[",
                                             "]",
                                             "<",
                                             ">",
                                             "%",
                                             "@",
                                             ":",
                                             ",",
                                             "=",
                                             "->",
                                             "x",
                                             "\"",
                                             "\\",
                                             "\n",
                                             " ",
                                             "//",
                                             std::string(1, '\0'),
                                             "\x93",
                                             "region",
                                             "return",
                                             "tile.for",
                                             "index",
                                             "f64",
                                             "tensor<",
                                             "ptr<f32>",
                                             "tile<64xf32>",
                                             std::string(3000, 'a')};
  return v;
}

// One byte- or token-level edit of `s`.
void mutate_once(std::string& s, Rng& rng) {
  if (s.empty()) {
    s = tokens()[rng.below(tokens().size())];
    return;
  }
  const size_t at = rng.below(s.size());
  switch (rng.below(9)) {
    case 0:  // flip a bit
      s[at] = static_cast<char>(s[at] ^ (1 << rng.below(8)));
      break;
    case 1:  // insert a token
      s.insert(at, tokens()[rng.below(tokens().size())]);
      break;
    case 2:  // delete a short range
      s.erase(at, 1 + rng.below(16));
      break;
    case 3:
    case 4: {  // a number becomes an extreme one
      size_t start = s.find_first_of("0123456789", at);
      if (start == std::string::npos) start = s.find_first_of("0123456789");
      if (start == std::string::npos) break;
      size_t end = s.find_first_not_of("0123456789.e", start);
      if (end == std::string::npos) end = s.size();
      s.replace(start, end - start, extreme_numbers()[rng.below(extreme_numbers().size())]);
      break;
    }
    case 5: {  // duplicate, delete or swap lines
      std::vector<std::string> lines;
      std::istringstream in(s);
      for (std::string l; std::getline(in, l);) lines.push_back(l);
      if (lines.empty()) break;
      const size_t i = rng.below(lines.size()), j = rng.below(lines.size());
      switch (rng.below(3)) {
        case 0: lines.insert(lines.begin() + static_cast<long>(i), lines[j]); break;
        case 1: lines.erase(lines.begin() + static_cast<long>(i)); break;
        default: std::swap(lines[i], lines[j]);
      }
      s.clear();
      for (auto& l : lines) s += l + "\n";
      break;
    }
    case 6: {  // a word from elsewhere in the text replaces one here (a value, an op, a type)
      auto word_at = [&](size_t p) {
        size_t b = p, e = p;
        auto w = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; };
        while (b > 0 && w(s[b - 1])) --b;
        while (e < s.size() && w(s[e])) ++e;
        return std::pair<size_t, size_t>{b, e};
      };
      auto [b1, e1] = word_at(at);
      auto [b2, e2] = word_at(rng.below(s.size()));
      if (b1 == e1 || b2 == e2) break;
      const std::string other = s.substr(b2, e2 - b2);
      s.replace(b1, e1 - b1, other);
      break;
    }
    case 7:  // truncate
      s.resize(at);
      break;
    default:  // overwrite a byte with anything
      s[at] = static_cast<char>(rng.next());
  }
}

// The input under test, for the crash and hang handlers.
std::string g_current;
std::string g_where;
std::string g_failure_path = "fuzz-failure.txt";

void write_all(int fd, const char* p, size_t n) {
  while (n) {
    ssize_t w = ::write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void save_failure(const std::string& why) {
  std::ofstream o(g_failure_path, std::ios::binary);
  o << g_current;
  std::cerr << "FUZZ FAILURE (" << g_where << "): " << why << "\n  input written to " << g_failure_path << "\n";
}

// Not async-signal-safe in general, but the process is ending anyway.
void on_signal(int sig) {
  const std::string msg = "FUZZ FAILURE (" + g_where + "): " + (sig == SIGALRM ? "hang (alarm)" : "fatal signal ") +
                          std::to_string(sig) + "\n  input written to " + g_failure_path + "\n";
  write_all(2, msg.data(), msg.size());
  std::FILE* f = std::fopen(g_failure_path.c_str(), "wb");
  if (f) {
    std::fwrite(g_current.data(), 1, g_current.size(), f);
    std::fclose(f);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig == SIGALRM ? SIGABRT : sig);
}

// A mutant whose digests are recomputed, as a forger would: the deeper checks
// must refuse it on their own.
void forge(ir::Module& m) {
  for (auto& top : m.ops) {
    if (top->name == "func")
      for (auto& op : top->regions[0]->ops)
        if (op->dialect() == "schedule") ir::stamp_artifact_hash(*op);
    if (top->name == "target.kernel")
      if (const ir::Attr* src = top->attr("source"); src && src->as_string())
        top->attrs["sha256"] = ir::Attr(sha256_hex(*src->as_string()));
  }
  ir::stamp_ir_hashes(m);
}

// How each mutant ended, as forged or not: a code, or "accepted" (a summary
// that shows how deep the mutants get).
std::map<std::string, int64_t> g_outcomes;

// Parse, verify and lower `text` as far as it goes. Throws only what is not a
// tessera::Error.
void exercise(const std::string& text, const std::string& target) {
  for (bool forged : {false, true}) {
    const std::string how = forged ? "forged " : "";
    try {
      auto m = ir::parse(text, "fuzz.ir");
      const ir::Layer layer = ir::detect_layer(*m);
      if (forged && layer == ir::Layer::Graph) break;  // no digest to forge
      if (forged) forge(*m);
      ir::verify(*m, layer);
      if (layer != ir::Layer::Target) {  // Target IR: verified, and the runtime loads it through the same verifier
        // Graph and Schedule IR through schedule_to_tile; Tile IR through the renderer.
        auto lowered = passes::lower(*m, ir::Layer::Target, target);
        ir::verify(*lowered, ir::Layer::Target);
      }
      ++g_outcomes[how + ir::layer_name(layer) + " accepted"];
    } catch (const Error& e) {  // refused with a stable code
      ++g_outcomes[how + e.code()];
    }
  }
}

std::vector<Seed> seeds(const fs::path& root) {
  std::vector<fs::path> programs;
  for (const char* dir : {"examples", "tests/ir/Inputs", "tests/ir"})
    for (auto& e : fs::directory_iterator(root / dir))
      if (e.path().extension() == ".tsr") programs.push_back(e.path());
  std::sort(programs.begin(), programs.end());
  std::vector<Seed> out;
  for (const fs::path& p : programs) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    auto graph = ir::parse(ss.str(), p.string());
    const std::string name = p.filename().string();
    out.push_back({name + ":graph", ir::print(*graph), "cpu"});
    for (const char* target : {"cpu", "cuda"}) {
      try {
        out.push_back(
            {name + ":schedule:" + target, ir::print(*passes::lower(*graph, ir::Layer::Schedule, target)), target});
        out.push_back({name + ":tile:" + target, ir::print(*passes::lower(*graph, ir::Layer::Tile, target)), target});
        if (std::string(target) == "cpu")
          out.push_back(
              {name + ":target:" + target, ir::print(*passes::lower(*graph, ir::Layer::Target, target)), target});
      } catch (const Error& e) {  // a program a target refuses is no seed for it
        std::cerr << "seed " << name << " for " << target << ": " << e.what() << "\n";
      }
    }
  }
  return out;
}

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}

}  // namespace

int main() {
  const double seconds = static_cast<double>(env_int("TESSERA_FUZZ_SECONDS", 10));
  const int64_t max_iterations = env_int("TESSERA_FUZZ_ITERATIONS", -1);
  const uint64_t seed = static_cast<uint64_t>(env_int("TESSERA_FUZZ_SEED", 1));
  if (const char* p = std::getenv("TESSERA_FUZZ_CRASH"); p && *p) g_failure_path = p;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM}) std::signal(sig, on_signal);

  const auto start = std::chrono::steady_clock::now();
  const std::vector<Seed> corpus = seeds(TESSERA_SOURCE_DIR);
  // The unmutated seeds must pass: a fuzzer whose seeds are refused tests nothing.
  for (const Seed& s : corpus) {
    g_current = s.text;
    g_where = "seed " + s.name;
    try {
      auto m = ir::parse(s.text, s.name);
      ir::verify(*m, ir::detect_layer(*m));
    } catch (const std::exception& e) {
      save_failure(std::string("an unmutated seed is refused: ") + e.what());
      return 1;
    }
  }

  Rng rng{seed};
  int64_t iterations = 0;
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  while (elapsed() < seconds && (max_iterations < 0 || iterations < max_iterations)) {
    const Seed& s = corpus[rng.below(corpus.size())];
    std::string text = s.text;
    const size_t edits = 1 + rng.below(4);
    for (size_t i = 0; i < edits; ++i) mutate_once(text, rng);
    g_current = text;
    g_where = "seed " + std::to_string(seed) + ", iteration " + std::to_string(iterations) + ", from " + s.name;
    alarm(60);  // a single input that takes this long is a hang
    try {
      exercise(text, s.target);
    } catch (const std::exception& e) {
      save_failure(std::string("not a tessera::Error: ") + e.what());
      return 1;
    }
    alarm(0);
    ++iterations;
  }
  std::cout << "ir_fuzz: " << iterations << " mutants of " << corpus.size() << " seeds in " << elapsed() << " s (seed "
            << seed << "), no failure; outcomes:";
  for (auto& [what, n] : g_outcomes) std::cout << " " << what << "=" << n;
  std::cout << "\n";
  return 0;
}
