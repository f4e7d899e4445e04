// Graph IR -> Graph IR: exact simplifications, the kind `tessera grad` leaves
// behind (the loss's seed 1 broadcast and multiplied in):
//   - a view (reshape, broadcast_to, transpose, slice) of a tessera.constant
//     is a constant of the view's type (so it fuses where it is read instead
//     of needing a buffer);
//   - x * 1, 1 * x, x / 1 and x - (+0) are x where the result has x's type
//     (exact in IEEE arithmetic, NaN, infinities and -0 included; x + 0 is
//     not: -0 + 0 is +0), except in the return: results keep their names;
//   - a reduction over axes of extent 1 only is a reshape of its input (or
//     the input itself, with keepdims), and so is a transpose that moves
//     only dims of extent 1 (the same row-major bytes);
//   - ops whose results nothing reads are dropped.
#pragma once
#include "ir/ir.hpp"

namespace tessera::passes {

void simplify(ir::Module& graph);

}  // namespace tessera::passes
