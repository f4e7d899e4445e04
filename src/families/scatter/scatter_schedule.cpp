#include "families/scatter/scatter_schedule.hpp"

#include <algorithm>

#include "families/device_attr.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/schedule_dialect.hpp"

namespace tessera::families::scatter {

using namespace tessera::ir;

namespace {

DType compute_type(DType values) { return values == DType::F64 ? DType::F64 : DType::F32; }

void choose(Plan& p, const machine::Descriptor& device) {
  const auto esize = static_cast<int64_t>(dtype_size(p.compute));
  int64_t want = 64;  // programs: the CPU's thread pool splits them
  if (!device.gpu()) {
    p.threads = 1;
    p.vector_width = 64 / esize;
  } else {
    // 16-byte vectors; a block as wide as the slice, up to 256 threads; a
    // few programs a unit (each scans every index).
    p.vector_width = 16 / esize;
    p.threads = device.simd_width;
    while (p.threads < 256 && p.tile_lanes() < p.post) p.threads *= 2;
    want = 4 * std::max<int64_t>(device.compute_units, 1);
  }
  p.rows_per_program = std::max<int64_t>(1, (p.extent + want - 1) / want);
  p.programs = (p.extent + p.rows_per_program - 1) / p.rows_per_program;
}

}  // namespace

const std::vector<Field<Plan>>& fact_fields() {
  static const std::vector<Field<Plan>> fields = {
      field("pre", &Plan::pre),     field("extent", &Plan::extent),   field("post", &Plan::post),
      field("count", &Plan::count), field("compute", &Plan::compute),
  };
  return fields;
}

const std::vector<Field<Plan>>& decision_fields() {
  static const std::vector<Field<Plan>> fields = {
      field("threads", &Plan::threads),
      field("vector_width", &Plan::vector_width),
      field("rows_per_program", &Plan::rows_per_program),
      field("programs", &Plan::programs),
  };
  return fields;
}

Value* emit_schedule(Builder& b, const fused::FusedRegion& region, const std::unordered_map<const Value*, Value*>& map,
                     const machine::Descriptor& device, const std::string&) {
  const Op& core = *region.core;
  const IndexSpec s = scatter_spec(core);
  const Type& r = core.result()->type;
  Plan p;
  for (int64_t d = 0; d < r.rank(); ++d) {
    if (d < s.axis) p.pre *= r.shape[d];
    if (d > s.axis) p.post *= r.shape[d];
  }
  p.extent = s.extent;
  p.count = core.operands[1]->type.numel();
  p.compute = compute_type(r.dtype);
  choose(p, device);
  Op& op = b.create("schedule.scatter", {map.at(core.operands[0]), map.at(core.operands[1])});
  AttrDict& a = op.attrs;
  a["family"] = "scatter";
  record_device(a, device);
  write_fields(fact_fields(), p, a);
  write_fields(decision_fields(), p, a);
  op.loc = core.loc;
  const bool narrower = p.compute != r.dtype;
  Value* result = op.add_result(narrower ? region.result->name + ".sum" : region.result->name,
                                Type::tensor(p.compute, r.shape));
  stamp_artifact_hash(op);
  return result;
}

Plan read_plan(const Op& op) {
  if (op.operands.size() != 2 || op.results.size() != 1 || !op.regions.empty())
    fail("E302", "schedule.scatter takes the values and the indices and has one result, no region", op.loc);
  const Type &g = op.operands[0]->type, &idx = op.operands[1]->type, &r = op.result()->type;
  const machine::Descriptor device = read_device(op);
  Plan p;
  read_fields(fact_fields(), op, p);
  if (!g.is_tensor() || !idx.is_tensor() || (idx.dtype != DType::I32 && idx.dtype != DType::I64) ||
      p.compute != compute_type(g.dtype) || r.dtype != p.compute || p.pre < 0 || p.extent < 0 || p.post < 0 ||
      p.count != idx.numel() || p.pre * p.extent * p.post != r.numel() || p.pre * p.count * p.post != g.numel() ||
      (p.extent == 0 && p.count > 0))
    fail("E302",
         "schedule.scatter: [pre, extent, post], count and compute must describe the values " + g.str() +
             ", the i32/i64 indices " + idx.str() + " and the result " + r.str() + " (in the compute type)",
         op.loc);
  read_fields(decision_fields(), op, p);
  const int64_t lanes = p.tile_lanes();
  if (p.threads < 1 || p.vector_width < 1 || lanes > 4096 || (p.threads & (p.threads - 1)) ||
      (p.vector_width & (p.vector_width - 1)) || p.rows_per_program < 1 ||
      (device.gpu() && p.threads % device.simd_width != 0))
    fail("E302",
         "schedule.scatter: threads (whole SIMD groups) and vector_width are powers of two, rows_per_program >= 1",
         op.loc);
  check_threads(op, device, p.threads);
  if (p.programs != (p.extent + p.rows_per_program - 1) / p.rows_per_program)
    fail("E302",
         "schedule.scatter records " + std::to_string(p.programs) + " programs but its rows give " +
             std::to_string((p.extent + p.rows_per_program - 1) / p.rows_per_program),
         op.loc);
  return p;
}

}  // namespace tessera::families::scatter
