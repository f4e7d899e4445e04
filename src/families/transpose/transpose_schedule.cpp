#include "families/transpose/transpose_schedule.hpp"

#include "families/device_attr.hpp"
#include "ir/schedule_dialect.hpp"

namespace tessera::families::transpose {

using namespace tessera::ir;

namespace {

bool pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// The view of x as [batch, rows, cols].
Plan view(const Type& x) {
  Plan p;
  for (int64_t d = 0; d + 2 < x.rank(); ++d) p.batch *= x.shape[d];
  p.rows = x.shape[x.rank() - 2];
  p.cols = x.shape[x.rank() - 1];
  return p;
}

}  // namespace

Type transposed_type(const Type& x) {
  if (x.kind != TypeKind::Tensor || x.rank() < 2)
    fail("E303", "a transpose needs a tensor of rank >= 2, not " + x.str());
  Type t = x;
  std::swap(t.shape[x.rank() - 2], t.shape[x.rank() - 1]);
  return t;
}

const std::vector<Field<Plan>>& fact_fields() {
  static const std::vector<Field<Plan>> fields = {field("batch", &Plan::batch), field("rows", &Plan::rows),
                                                  field("cols", &Plan::cols)};
  return fields;
}

const std::vector<Field<Plan>>& decision_fields() {
  static const std::vector<Field<Plan>> fields = {
      int_list_field<Plan, int64_t>("block", {&Plan::block_rows, &Plan::block_cols}),
      field("threads", &Plan::threads),
      field("programs", &Plan::programs),
  };
  return fields;
}

Value* emit_schedule(Builder& b, Value* x, const machine::Descriptor& device, const std::string& result_name,
                     const SourceLoc& loc) {
  // 64 x 64 blocks of 256 threads: 16 elements a thread in flight each way.
  if (!device.has(machine::Cap::TransposeBlock))
    fail("E506", std::string("device ") + device.name + " (target " + device.target() + ") has no transpose block",
         loc);
  const Type out = transposed_type(x->type);
  Plan p = view(x->type);
  p.programs = p.batch * p.row_blocks() * p.col_blocks();
  Op& op = b.create("schedule.transpose", {x});
  AttrDict& a = op.attrs;
  a["family"] = "transpose";
  record_device(a, device);
  write_fields(fact_fields(), p, a);
  write_fields(decision_fields(), p, a);
  op.loc = loc;
  Value* result = op.add_result(result_name, out);
  stamp_artifact_hash(op);
  return result;
}

Plan read_plan(const Op& op) {
  if (op.operands.size() != 1 || op.results.size() != 1 || !op.regions.empty())
    fail("E302", "schedule.transpose takes one tensor and has one result, no region", op.loc);
  const Type& x = op.operands[0]->type;
  if (x.kind != TypeKind::Tensor || x.rank() < 2 || !(op.result()->type == transposed_type(x)))
    fail("E302", "schedule.transpose: the result must be the operand with its last two dims swapped", op.loc);
  const machine::Descriptor device = read_device(op);
  if (!device.has(machine::Cap::TransposeBlock))
    fail("E302", "schedule.transpose: device " + device.name + " has no transpose block", op.loc);
  Plan p = view(x), recorded;
  read_fields(fact_fields(), op, recorded);
  for (const Field<Plan>& f : fact_fields())
    if (!f.equal(recorded, p))
      fail("E302", "schedule.transpose: the recorded " + f.name + " disagrees with the operand " + x.str(), op.loc);
  read_fields(decision_fields(), op, p);
  if (!pow2(p.block_rows) || !pow2(p.block_cols) || p.block_rows > 128 || p.block_cols > 128 || !pow2(p.threads) ||
      p.threads > 1024 || p.threads % p.block_rows != 0 || p.threads % p.block_cols != 0)
    fail("E302",
         "schedule.transpose: 'block' must be powers of two up to 128 that divide 'threads' (a power of "
         "two up to 1024)",
         op.loc);
  if (p.programs != p.batch * p.row_blocks() * p.col_blocks())
    fail("E302",
         "schedule.transpose records " + std::to_string(p.programs) + " programs but its blocks give " +
             std::to_string(p.batch * p.row_blocks() * p.col_blocks()),
         op.loc);
  return p;
}

}  // namespace tessera::families::transpose
