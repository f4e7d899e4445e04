// Graph IR: what the user means. Ops of the "tessera" dialect on tensors.
//   %y = tessera.reduce %x {kind = "sum", axes = [1], keepdims = false}
//        : tensor<4096x1024xf32> -> tensor<4096xf32>
#pragma once
#include <string>
#include <vector>

#include "ir/ir.hpp"

namespace tessera::ir {

enum class ReduceKind { Sum, Mean, Max, Min, Prod };
const char* reduce_kind_name(ReduceKind k);

struct ReduceSpec {
  ReduceKind kind = ReduceKind::Sum;
  std::vector<int64_t> axes;  // normalized: non-negative, sorted, unique
  bool keepdims = false;
};

// Reads and validates the attributes of a tessera.reduce against its input
// type: negative axes normalized, duplicates/out-of-range rejected (E2xx).
ReduceSpec reduce_spec(const Op& op);
ReduceSpec make_reduce_spec(const std::string& kind, std::vector<int64_t> axes, bool keepdims,
                            const Type& input, const SourceLoc& loc = {});
Type reduce_result_type(const Type& input, const ReduceSpec& spec);

// Checks a Graph IR module: known ops, consistent types, returns that match.
void verify_graph(const Module& m);

// Shared by every layer: the func's return matches its declared results.
void verify_func_return(const Op& func);

}  // namespace tessera::ir
