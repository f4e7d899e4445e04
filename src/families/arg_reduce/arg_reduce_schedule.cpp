#include "families/arg_reduce/arg_reduce_schedule.hpp"

#include <algorithm>

#include "families/device_attr.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/schedule_dialect.hpp"

namespace tessera::families::arg_reduce {

using namespace tessera::ir;

namespace {

DType compute_type(DType operand) {
  switch (operand) {
    case DType::F64: return DType::F64;
    case DType::I64: return DType::I64;
    case DType::I32:
    case DType::I1: return DType::I32;
    default: return DType::F32;
  }
}

// The facts of a tessera.argmax/argmin on an operand of type x.
Plan facts(const ArgReduceSpec& s, const Type& x) {
  Plan p;
  p.max = s.max;
  p.outer = s.outer, p.extent = s.extent, p.inner = s.inner;
  p.compute = compute_type(x.dtype);
  return p;
}

void choose(Plan& p, const machine::Descriptor& device) {
  const int64_t results = std::max<int64_t>(p.results(), 1);
  if (!device.gpu()) {
    // One 64-byte vector of lanes; a program walks about 64K elements.
    p.threads = 1;
    p.vector_width = 64 / static_cast<int64_t>(dtype_size(p.compute));
    const int64_t lanes = p.tile_lanes(), want = std::max<int64_t>(65536 / std::max<int64_t>(p.extent, 1), 1);
    p.chunk = std::min((want + lanes - 1) / lanes, (results + lanes - 1) / lanes) * lanes;
  } else {
    // A lane a result, 128 of them (whole SIMD groups of 32 or 64); one tile a program.
    p.vector_width = 1;
    p.threads = std::max<int64_t>(128, device.simd_width);
    p.chunk = p.tile_lanes();
  }
  p.programs = (p.results() + p.chunk - 1) / p.chunk;
}

}  // namespace

const std::vector<Field<Plan>>& fact_fields() {
  static const std::vector<Field<Plan>> fields = {
      field("max", &Plan::max),     field("outer", &Plan::outer),     field("extent", &Plan::extent),
      field("inner", &Plan::inner), field("compute", &Plan::compute),
  };
  return fields;
}

const std::vector<Field<Plan>>& decision_fields() {
  static const std::vector<Field<Plan>> fields = {
      field("threads", &Plan::threads),
      field("vector_width", &Plan::vector_width),
      field("chunk", &Plan::chunk),
      field("programs", &Plan::programs),
  };
  return fields;
}

Value* emit_schedule(Builder& b, const fused::FusedRegion& region, const std::unordered_map<const Value*, Value*>& map,
                     const machine::Descriptor& device, const std::string&) {
  const Op& core = *region.core;
  const Value* x = core.operands[0];
  Plan p = facts(arg_reduce_spec(core), x->type);
  choose(p, device);
  Op& op = b.create("schedule.arg_reduce", {map.at(x)});
  AttrDict& a = op.attrs;
  a["family"] = "arg_reduce";
  record_device(a, device);
  write_fields(fact_fields(), p, a);
  write_fields(decision_fields(), p, a);
  op.loc = core.loc;
  Value* result = op.add_result(region.result->name, region.result->type);
  stamp_artifact_hash(op);
  return result;
}

Plan read_plan(const Op& op) {
  if (op.operands.size() != 1 || op.results.size() != 1 || !op.regions.empty())
    fail("E302", "schedule.arg_reduce takes one tensor and has one result, no region", op.loc);
  const Type& x = op.operands[0]->type;
  const Type& y = op.result()->type;
  const machine::Descriptor device = read_device(op);
  Plan recorded;
  read_fields(fact_fields(), op, recorded);
  if (x.kind != TypeKind::Tensor || y.dtype != DType::I64 || recorded.extent < 1 || recorded.outer < 0 ||
      recorded.inner < 0 || recorded.outer * recorded.extent * recorded.inner != x.numel() ||
      recorded.outer * recorded.inner != y.numel() || recorded.compute != compute_type(x.dtype))
    fail("E302",
         "schedule.arg_reduce: [outer, extent, inner] and compute must describe the operand " + x.str() +
             " and the i64 result " + y.str(),
         op.loc);
  Plan p = recorded;
  read_fields(decision_fields(), op, p);
  const int64_t lanes = p.tile_lanes();
  if (p.threads < 1 || p.vector_width < 1 || lanes > 4096 || (p.threads & (p.threads - 1)) ||
      (p.vector_width & (p.vector_width - 1)) || p.chunk < lanes || p.chunk % lanes != 0 ||
      (device.gpu() && p.threads % device.simd_width != 0))
    fail("E302",
         "schedule.arg_reduce: threads (whole SIMD groups) and vector_width are powers of two, chunk a multiple of "
         "their tile",
         op.loc);
  check_threads(op, device, p.threads);
  if (p.programs != (p.results() + p.chunk - 1) / p.chunk)
    fail("E302",
         "schedule.arg_reduce records " + std::to_string(p.programs) + " programs but its chunks give " +
             std::to_string((p.results() + p.chunk - 1) / p.chunk),
         op.loc);
  return p;
}

}  // namespace tessera::families::arg_reduce
