// Tile and Target IR are compiler output, verified for shape but not for
// memory safety: a stride, offset, loop step, grid or buffer size edited by
// hand could make a kernel read or write outside its buffers, or never end.
// So, as Schedule IR's artifact_hash protects decisions (E301), each kernel
// records `ir_hash`: the sha256 of the kernel as lowered (every attribute but
// this one, its buffers and body) and of the tensor types every launch passes
// it. The verifiers re-derive it and refuse an edited kernel (E406 in Tile
// IR, E507 in Target IR); re-lower from Graph or Schedule IR instead of
// editing. Like every unkeyed digest it detects edits, not forgery
// (docs/semantics.md, "Hand-edited IR").
#pragma once
#include <string>

#include "ir/ir.hpp"

namespace tessera::ir {

// ir_hash of a tile.kernel, tile.extern_kernel or target.kernel of `m`.
std::string compute_ir_hash(const Op& kernel, const Module& m);

// Records ir_hash on every kernel of `m` (the last step of each lowering).
void stamp_ir_hashes(Module& m);

// Refuses a kernel whose ir_hash is missing or no longer matches: `code` is
// E406 for Tile IR, E507 for Target IR.
void check_ir_hash(const Op& kernel, const Module& m, const char* code);

}  // namespace tessera::ir
