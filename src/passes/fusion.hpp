// Fusion: which Graph IR ops become one kernel. graph_to_schedule asks this
// pass for regions and gives each region to its family's scheduler.
//
//   - A pointwise op whose result has exactly one use is absorbed by its user
//     when that user is pointwise, a tessera.reduce (its input), or a row op
//     (its input x) — a "prologue" — provided every value it reads can be
//     addressed from the user's iteration space (see leaf_map.hpp).
//   - Pointwise ops that consume a row op's result (its only use) and keep its
//     shape join the row op's region as an "epilogue": rms_norm(x, w) * g then
//     silu is one kernel.
//   - View ops (reshape, transpose, slice, broadcast_to, split) make no
//     kernel: a pointwise kernel reads a view through its layout; a view that
//     a reduce, row or matmul kernel reads, or that is returned, is copied
//     into a buffer by a pointwise kernel of its own.
//   - A take_along of one element a row of a log_softmax (cross-entropy's
//     label logit) ends the log_softmax's region: the row kernel writes only
//     the picked elements (rowwise `pick`).
//   - concat, gather and take_along read an operand (gather: the table) from
//     memory where each element points, so that operand is always a leaf;
//     they join their users like any pointwise op. A gather's indices are
//     read at its own coordinates: no other op of its region reads them.
//   - Everything else starts a region of its own, materialized in memory.
// A value used twice, or returned, is always materialized: fusion never
// computes a value twice.
#pragma once
#include <vector>

#include "families/fused/region.hpp"
#include "machine/descriptor.hpp"

namespace tessera::passes {

using families::fused::FusedRegion;

// Regions of a Graph IR func in an order where every leaf is a func argument,
// the result of an earlier region, or (in a pointwise region) a view of one:
// a view op's result that no kernel materializes, read through its layout.
// With a device, a view its kernel there can address is read in place where
// that differs by device (an attention operand: a tensor map on Hopper);
// without one such views are copied.
std::vector<FusedRegion> partition(const ir::Op& func, const machine::Descriptor* device = nullptr);

}  // namespace tessera::passes
