#include "ir/schedule_dialect.hpp"

#include "ir/graph_dialect.hpp"
#include "ir/printer.hpp"
#include "support/sha256.hpp"

namespace tessera::ir {

std::string semantic_contract(const Op& op) {
  std::string c = "op=" + op.name + ";";
  for (auto& [k, v] : op.attrs)
    if (k != "artifact_hash") c += k + "=" + v.str() + ";";
  for (Value* v : op.operands) c += "input=" + v->type.str() + ";";
  for (auto& r : op.results) c += "output=" + r->type.str() + ";";
  // a fused region's ops are part of what the kernel computes
  for (auto& region : op.regions)
    for (auto& inner : region->ops) c += "region=" + print_op(*inner, 0);
  return c;
}

std::string compute_artifact_hash(const Op& op) { return sha256_hex(semantic_contract(op)); }

void stamp_artifact_hash(Op& op) { op.attrs["artifact_hash"] = Attr(compute_artifact_hash(op)); }

void check_artifact_hash(const Op& op) {
  const Attr* h = op.attr("artifact_hash");
  if (!h || !h->as_string()) fail("E302", "'" + echo(op.name) + "' has no artifact_hash", op.loc);
  if (*h->as_string() != compute_artifact_hash(op))
    fail("E301",
         "schedule altered after hashing: the attributes of '" + op.name +
             "' no longer match its artifact_hash (re-run graph_to_schedule instead of editing)",
         op.loc);
}

int64_t int_attr(const Op& op, const std::string& key) {
  const Attr* a = op.attr(key);
  if (!a || !a->as_int()) fail("E302", "'" + echo(op.name) + "' needs an integer attribute '" + key + "'", op.loc);
  return *a->as_int();
}

bool bool_attr(const Op& op, const std::string& key) {
  const Attr* a = op.attr(key);
  if (!a || !a->as_bool()) fail("E302", "'" + echo(op.name) + "' needs a boolean attribute '" + key + "'", op.loc);
  return *a->as_bool();
}

std::vector<int64_t> ints_attr(const Op& op, const std::string& key, size_t count) {
  const Attr* a = op.attr(key);
  if (!a || !a->as_ints() || a->as_ints()->size() != count)
    fail("E302", "'" + echo(op.name) + "' needs '" + key + "' = [" + std::to_string(count) + " integers]", op.loc);
  return *a->as_ints();
}

std::string string_attr(const Op& op, const std::string& key) {
  const Attr* a = op.attr(key);
  if (!a || !a->as_string()) fail("E302", "'" + echo(op.name) + "' needs a string attribute '" + key + "'", op.loc);
  return *a->as_string();
}

void verify_schedule(const Module& m) {
  if (m.funcs().empty()) fail("E200", "the module has no func");
  for (auto& top : m.ops) {
    if (top->name != "func")
      fail("E303", "'" + echo(top->name) + "' is not allowed at the top level of Schedule IR", top->loc);
    for (auto& op : top->regions[0]->ops) {
      if (op->name == "return") continue;
      if (op->dialect() != "schedule") fail("E303", "'" + echo(op->name) + "' is not a Schedule IR op", op->loc);
      // each op becomes one kernel launch with one result (schedule_to_tile);
      // an attention kernel may also write each row's log-sum-exp (its
      // gradient's: dq, dk and dv), a norm gradient's row kernel its dw and
      // db partial sums
      const size_t most = op->name == "schedule.attention" || op->name == "schedule.rowwise" ? 3 : 1;
      if (op->results.empty() || op->results.size() > most)
        fail("E303",
             "'" + echo(op->name) + "' must define exactly one result" +
                 (op->name == "schedule.attention" ? " (or o and lse, or dq, dk and dv)"
                  : most > 1                       ? " (or, for a norm gradient, its partial sums beside it)"
                                                   : ""),
             op->loc);
      const Attr* h = op->attr("artifact_hash");
      if (!h || !h->as_string() || h->as_string()->size() != 64)
        fail("E302", "'" + echo(op->name) + "' needs a 64-hex-digit artifact_hash", op->loc);
    }
    verify_func_return(*top);
  }
}

}  // namespace tessera::ir
