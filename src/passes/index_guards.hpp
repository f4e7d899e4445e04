// Graph IR -> Graph IR: the check behind every gather and take_along. For
// each distinct (indices, axis extent n) a func indexes with, a guard result
// is appended to the func: a tensor<f32> that is 1 when some index lies
// outside [-n, n) and 0 (or -inf, for no index at all) otherwise, computed by
// ordinary kernels (a fused comparison, then a max reduction). The func's
// `index_guards` attribute holds, per guard, the message that names the op.
// Runtimes never return guards: they read them after each run and fail with
// E615 (runtime/host_schedule.hpp). The kernels themselves clamp indices into
// range, so even an unchecked run reads nothing outside its operands.
#pragma once
#include "ir/ir.hpp"

namespace tessera::passes {

void add_index_guards(ir::Module& graph);

}  // namespace tessera::passes
