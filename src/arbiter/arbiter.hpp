// The measured, accuracy-budgeted arbiter (the seed's three tiers, with the
// vendor libraries as the library tier). For each matmul region of a program:
//   1. list the candidates (matmul_schedule.hpp: tessera, openblas, cublaslt)
//      and which apply;
//   2. look the decision up in the tuning ledger by its key (ledger.hpp);
//   3. on a miss, run every applicable candidate on the device: each must pass
//      the oracle within its tolerance (a candidate beyond budget is rejected,
//      and the table says so), then survivors are timed (median of `reps`
//      runs after one warm-up, in the runner's timing domain; a library
//      candidate's time includes its separate epilogue kernel);
//   4. pick the fastest survivor and record it; a fused candidate within the
//      noise margin of a faster library is kept (the choice must not flip on
//      noise).
// A forced candidate (--candidate) skips measuring and says so.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ir/ir.hpp"
#include "machine/descriptor.hpp"
#include "passes/graph_to_schedule.hpp"
#include "runtime/tensor.hpp"

namespace tessera::arbiter {

// Where candidates are measured.
struct Runner {
  std::string target;           // the lane: cpu | cuda
  std::string device;           // exact device identity
  machine::Descriptor machine;  // what candidates are compiled for (per-arch candidates ask it)
  std::string toolchain;        // compilers and library versions that candidates depend on
  std::string timing_domain;    // kernel_wall (CPU) | device_event (CUDA)
  struct Measured {
    std::vector<Tensor> outputs;  // of the last run
    double median_ns = 0;         // per run, all of its launches
  };
  // Loads Target IR and runs it 1 + reps times on inputs.
  std::function<Measured(const ir::Module& target_ir, const std::vector<Tensor>& inputs, int reps)> run;
};

// The runner of a lane that executes natively (targets/lane.hpp; E721 otherwise).
Runner runner(const std::string& lane);
Runner cpu_runner();
Runner cuda_runner();

struct Row {
  std::string candidate, tier;
  std::string status;  // winner | survivor | rejected | failed | not applicable
  std::string detail;  // why (the oracle's worst err/tol, an error, the reason it does not apply)
  double median_ns = -1, worst_ratio = -1;
};

struct Decision {
  std::string region;     // "<func>#<i>"
  std::string signature;  // the region's ops and types, one line
  std::string candidate;  // what will run
  std::string why;        // forced | ledger hit (when) | measured now
  std::string key;
  std::vector<Row> rows;
};

struct Options {
  std::string forced;       // a candidate name for every region, or empty
  std::string ledger_path;  // empty: Ledger::default_path()
  int reps = 5;
  double gate_limit_macs = 1 << 27;  // above: the oracle checks a sample of the outputs (region_sample.hpp)
};

std::vector<Decision> arbitrate(const ir::Module& graph, const Runner& runner, const Options& o);
passes::Candidates choices(const std::vector<Decision>& decisions);
// One decision in one line (what `tessera run` prints), or as the table of
// every candidate (`--explain`).
std::string describe(const Decision& d, bool table = false);

// Survivors this close to the fastest (relative) count as equally fast.
constexpr double kNoiseMargin = 0.03;

}  // namespace tessera::arbiter
