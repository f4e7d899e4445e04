#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tessera::cli {
struct RunOptions {
  std::string file, target = "cpu", device, func;
  std::vector<std::string> inputs, outputs;
  bool check = false, reference = false, emulate = false;
  bool keep_failed_outputs = false;  // --check failed: write the outputs anyway
  bool explain = false;              // the arbiter's whole table per matmul
  std::string candidate;             // forces every matmul's candidate
  bool no_tune = false;              // matmuls: the synthesized candidate, unmeasured
  int repeat = 1;
};
void add_run_options(CLI::App& run, RunOptions& o);
int run_cmd(const RunOptions& o);
}  // namespace tessera::cli
