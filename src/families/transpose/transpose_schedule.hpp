// The transpose family: out[..., c, r] = in[..., r, c], the last two dims of
// a tensor swapped (leading dims are a batch). No Graph IR op asks for it
// yet: the matmul family stages a k-contiguous f32 operand through it on
// CUDA (families/matmul), so that its FFMA block reads both operands
// outer-contiguous. A program moves one [block_rows, block_cols] block
// through shared memory (tile.transpose): reads and writes both coalesced.
#pragma once
#include <cstdint>
#include <string>

#include "families/plan_fields.hpp"
#include "ir/ir.hpp"
#include "machine/descriptor.hpp"

namespace tessera::families::transpose {

struct Plan {
  int64_t batch = 1, rows = 0, cols = 0;  // in: [batch, rows, cols]; out: [batch, cols, rows]
  int64_t block_rows = 64, block_cols = 64, threads = 256;
  int64_t programs = 0;

  int64_t row_blocks() const { return (rows + block_rows - 1) / block_rows; }
  int64_t col_blocks() const { return (cols + block_cols - 1) / block_cols; }
};

// The fields a schedule.transpose records: the operand's view (checked
// against it when read) and the decisions.
const std::vector<Field<Plan>>& fact_fields();
const std::vector<Field<Plan>>& decision_fields();

// The tensor type `x` transposes to (E303 below rank 2).
ir::Type transposed_type(const ir::Type& x);

// Appends `schedule.transpose %x` (a device with a transpose block; E506
// elsewhere) and returns its result.
ir::Value* emit_schedule(ir::Builder& b, ir::Value* x, const machine::Descriptor& device,
                         const std::string& result_name, const SourceLoc& loc);

Plan read_plan(const ir::Op& schedule_op);

}  // namespace tessera::families::transpose
