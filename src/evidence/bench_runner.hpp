// `tessera bench`: runs a bench spec's cases on a target and returns the
// evidence packet (unsealed; the caller seals it when the tree is clean).
//
// Spec (JSON, e.g. bench/reduce_cpu.json):
//   {"name": "...", "sampling": {"warmup": 3, "samples": 15, ...},
//    "cases": [{"name": "sum_8192x8192_axis1", "kind": "sum", "shape": [8192, 8192],
//               "axes": [1], "dtype": "f32", "input": "random:seed=7"},
//              {"name": "...", "program": "examples/row_sum.tsr", "inputs": {"x": "random:seed=7"}}]}
// Matmul programs (tessera.matmul) may name "candidate": "tessera" (default) |
// "openblas" | "cublaslt", forced for every matmul region, and their rows carry
// flops (2*batch*m*n*k summed over the matmuls) and achieved_tflops. The oracle
// checks the measured run in full ("oracle_scope": "full") unless the program's
// batch*m*n*k exceeds "oracle_full_limit_macs" (per case or per spec; default
// 2^27, the arbiter's gate): then a spread sample of the measured run's
// outputs (rows of M, columns of N, every batch) is checked against the
// oracle of the region cut to them (arbiter/region_sample.hpp), and the row
// says "oracle_scope": "sampled RxC outputs of the measured run (...)".
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace tessera::evidence {

struct BenchOptions {
  std::string spec_path, target = "cpu", anchors_path, only;
  bool allow_dirty = false;  // record an explicitly unsealed packet
  // Where the tree has no git (a copy sent to a GPU machine): the commit the
  // caller vouches for and that commit's source fingerprint; the packet is
  // sealed only if this tree's fingerprint matches it.
  std::string expect_commit, expect_fingerprint;
};

// Errors: E850 malformed spec, E851 bad sampling, E852 missing program,
// E854 a case failed its oracle check (no performance number for wrong code).
nlohmann::json run_bench(const BenchOptions& o);

}  // namespace tessera::evidence
