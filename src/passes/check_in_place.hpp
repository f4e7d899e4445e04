// Schedule IR: a func's `in_place` attribute (Graph IR: per result, the
// argument whose buffer receives it, or -1). A result can be written into an
// argument when a pointwise kernel computes it, reading that argument (if at
// all) at exactly the element it writes, and no later kernel reads the
// argument: every element is then read before the same lane overwrites it,
// on every target. graph_to_schedule makes it so: where the kernel that
// computes a result is not such a kernel, a copy kernel at the end of the
// func writes the result into the argument (its `materialize` says so).
// check_in_place verifies any Schedule IR (E221 with the reason). Runtimes
// then bind the result to the argument's buffer (runtime/host_schedule.hpp):
// an optimizer's update lands in the parameters.
#pragma once
#include "ir/ir.hpp"

namespace tessera::passes {

// Whether schedule op `producer` of func body `body` may write its result
// into argument `arg`'s buffer (the rule above).
bool writes_in_place(const ir::Region& body, const ir::Op& producer, const ir::Value* arg);

void check_in_place(const ir::Module& schedule);

}  // namespace tessera::passes
