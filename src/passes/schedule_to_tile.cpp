#include "passes/schedule_to_tile.hpp"

#include <cctype>
#include <unordered_map>

#include "families/arg_reduce/arg_reduce_tile.hpp"
#include "families/attention/attention_tile.hpp"
#include "families/matmul/matmul_tile.hpp"
#include "families/pointwise/pointwise_tile.hpp"
#include "families/reduce/reduce_schedule.hpp"
#include "families/reduce/reduce_tile.hpp"
#include "families/rowwise/rowwise_tile.hpp"
#include "families/scatter/scatter_tile.hpp"
#include "families/transpose/transpose_tile.hpp"
#include "ir/ir_hash.hpp"
#include "ir/schedule_dialect.hpp"

namespace tessera::passes {

using namespace tessera::ir;

namespace {
// Kernel names become symbols in every target language: keep [A-Za-z0-9_].
std::string kernel_symbol(const std::string& func, int index) {
  std::string s;
  for (char c : func) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "k" + s;
  return s + "_k" + std::to_string(index);
}
}  // namespace

std::unique_ptr<Module> schedule_to_tile(const Module& schedule) {
  verify_schedule(schedule);
  auto out = std::make_unique<Module>();
  std::vector<std::unique_ptr<Op>> host_funcs;
  for (Op* f : schedule.funcs()) {
    std::vector<std::pair<std::string, Type>> args;
    for (auto& a : f->regions[0]->args) args.emplace_back(a->name, a->type);
    Module host;
    Op& nf = add_func(host, f->sym, args, func_result_types(*f));
    copy_func_attrs(*f, nf);
    Region& body = *nf.regions[0];
    std::unordered_map<const Value*, Value*> map;
    for (size_t i = 0; i < args.size(); ++i) map[f->regions[0]->args[i].get()] = body.args[i].get();
    Builder b(body);
    int index = 0;
    for (auto& op : f->regions[0]->ops) {
      std::vector<Value*> operands;
      for (Value* v : op->operands) operands.push_back(map.at(v));
      if (op->name == "return") {
        b.create("return", operands).loc = op->loc;
        continue;
      }
      check_artifact_hash(*op);
      std::string sym = kernel_symbol(f->sym, index++);
      if (op->name == "schedule.reduce") {
        families::reduce::Pass pass = families::reduce::read_pass(*op);
        families::reduce::build_kernel(*out, sym, pass, string_attr(*op, "artifact_hash"),
                                       op->regions.empty() ? nullptr : op->regions[0].get());
      } else if (op->name == "schedule.pointwise") {
        families::pointwise::build_kernel(*out, sym, families::pointwise::read_plan(*op), *op);
      } else if (op->name == "schedule.matmul") {
        families::matmul::build_kernel(*out, sym, families::matmul::read_plan(*op), *op);
      } else if (op->name == "schedule.rowwise") {
        families::rowwise::build_kernel(*out, sym, families::rowwise::read_plan(*op), *op);
      } else if (op->name == "schedule.arg_reduce") {
        families::arg_reduce::build_kernel(*out, sym, families::arg_reduce::read_plan(*op), *op);
      } else if (op->name == "schedule.scatter") {
        families::scatter::build_kernel(*out, sym, families::scatter::read_plan(*op), *op);
      } else if (op->name == "schedule.attention") {
        families::attention::build_kernel(*out, sym, families::attention::read_plan(*op), *op);
      } else if (op->name == "schedule.transpose") {
        families::transpose::build_kernel(*out, sym, families::transpose::read_plan(*op), *op);
      } else {
        fail("E303", "no tile builder for '" + op->name + "'", op->loc);
      }
      // The kernel says which device it was scheduled for: its renderer asks
      // that descriptor (wavefront width, arch) and the Target IR records it.
      if (Op* kernel = out->lookup(sym); kernel && kernel->name == "tile.kernel" && op->attr("device"))
        kernel->attrs["device"] = *op->attr("device");
      Op& launch = b.create("tile.launch", operands);
      launch.sym = sym;
      launch.loc = op->loc;
      for (auto& r : op->results) map[r.get()] = launch.add_result(r->name, r->type);
    }
    // kernels first, then the host schedule that launches them
    for (auto& fop : host.ops) host_funcs.push_back(std::move(fop));
  }
  std::vector<std::unique_ptr<Op>> funcs = std::move(host_funcs);
  for (auto& f : funcs) out->ops.push_back(std::move(f));
  stamp_ir_hashes(*out);
  return out;
}

}  // namespace tessera::passes
