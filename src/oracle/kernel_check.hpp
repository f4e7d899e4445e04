// The per-kernel check: every kernel of a run against the oracle of the Graph
// IR region it computes, evaluated on the very values that kernel received.
// An end-to-end comparison alone lets bounds compound through a deep graph (a
// kernel that drops a residual add can hide inside the tolerance that twenty
// upstream ops have accumulated); here every kernel's inputs are exact (they
// are what it read), so each bound covers one kernel's own work.
//
// Target IR keeps the Graph IR's value names: a launch's operands and results
// that the graph also has (same name and type) are graph values. A launch
// result the graph does not have (a split reduction's partials, a library
// matmul's product before its epilogue kernel) joins its producer and its
// consumers into one unit, checked as one region.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/ir.hpp"
#include "oracle/reference.hpp"
#include "runtime/tensor.hpp"

namespace tessera::oracle {

// One launch of a run, by value name (no '%').
struct LaunchValues {
  std::string kernel;  // the kernel's symbol
  std::vector<std::string> inputs, outputs;
};

struct KernelCheck {
  std::vector<std::string> kernels;  // the unit's kernels, in launch order
  std::string value;                 // the graph value compared
  int64_t elements = 0;              // of the value
  Comparison comparison;
};

// Checks every graph value the launches produce. `values` holds every value
// of the run by name: the func's inputs and each launch's results. Big values
// are compared on a sample of `rows` x `cols` (sample.hpp), and only what the
// sample depends on is evaluated. E803 when a unit reads a value its inputs do
// not reach (the names do not describe the graph).
std::vector<KernelCheck> check_kernels(const ir::Module& graph, const std::string& func,
                                       const std::vector<LaunchValues>& launches,
                                       const std::map<std::string, Tensor>& values, int64_t rows, int64_t cols);

}  // namespace tessera::oracle
