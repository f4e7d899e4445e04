// The oracle: an independent reference evaluator for Graph IR, used to check
// what the compiled kernels compute. It deliberately shares no code with the
// synthesizer (families, passes, renderers, graph_dialect's reduce_spec): it
// reads the op attributes itself and evaluates with plain loops in double, so a
// misreading of the IR in the compiler is not repeated here.
//
// Each output comes with a per-element tolerance; the policy is in
// tolerance.hpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/ir.hpp"
#include "runtime/block_cache.hpp"
#include "runtime/tensor.hpp"
#include "support/dtype.hpp"

namespace tessera::oracle {

// The oracle's large buffers: a sampled check makes and frees one per value
// of a deep graph, and recycled blocks skip the OS's page faults.
using Doubles = std::vector<double, runtime::RecyclingAllocator<double>>;

struct Expected {
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  Doubles value;                 // exact-ish reference in double, before rounding to dtype
  Doubles tolerance;             // per-element absolute bound on |got - value|
  std::vector<uint8_t> sampled;  // the elements evaluated (one flag each); empty: all
};

// Evaluates func `func` (empty = the first func) of a Graph IR module on
// `inputs` (in func-argument order); one Expected per returned value.
// Throws tessera::Error E801 when the inputs do not match the func's arguments
// (count, shape or dtype), E802 for IR it cannot evaluate (an unknown op or
// reduction kind, bad attributes, a missing func or return).
// `sample` (one entry per result: flags per element, empty = all; see
// sample.hpp) makes the evaluation sampled: only the sampled elements and
// what they depend on are computed, and compare() reads only those.
std::vector<Expected> evaluate(const ir::Module& graph, const std::string& func, const std::vector<Tensor>& inputs,
                               const std::vector<std::vector<uint8_t>>* sample = nullptr);

struct Comparison {
  bool pass = true;
  int64_t failures = 0;
  int64_t compared = 0;       // elements compared (all, or the sample)
  int64_t worst_index = -1;   // the element with the largest err/tol; -1 if none
  double max_abs_err = 0;     // largest |got - value| over all elements
  double tol_at_worst = 0;    // tolerance of the worst element
  double worst_ratio = 0;     // err/tol of the worst element (inf if tol is 0 and err is not)
  int64_t unbounded = 0;      // compared elements whose tolerance is infinite: their check proves nothing
  std::string first_failure;  // "index 5 [1,0,1]: got ..., expected ..., tol ..."; empty on pass
};

// An element passes if
//   - expected and got are both NaN, or
//   - got is an infinity and the tolerance interval around the expected value
//     reaches a value that rounds to that same infinity in e.dtype (in
//     particular: the expected value itself rounds to it), or
//   - both are finite and |got - value| <= tolerance.
// Matching NaNs and infinities have err 0; mismatched ones err inf. A got
// tensor of another shape or dtype fails as a whole (worst_index -1).
Comparison compare(const Expected& e, const Tensor& got);

// The reference output rounded (once) to e.dtype, e.g. for a --reference run.
Tensor to_tensor(const Expected& e);

}  // namespace tessera::oracle
