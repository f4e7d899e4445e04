#include "ir/printer.hpp"

namespace tessera::ir {
namespace {

std::string type_list(const std::vector<Type>& ts, bool parens) {
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i].str();
  return parens ? "(" + s + ")" : s;
}

void print_region_body(std::string& out, const Region& r, int indent) {
  for (auto& op : r.ops) out += print_op(*op, indent);
}

std::string args_decl(const Region& r) {
  std::string s = "(";
  for (size_t i = 0; i < r.args.size(); ++i) s += (i ? ", %" : "%") + r.args[i]->name + ": " + r.args[i]->type.str();
  return s + ")";
}

std::string print_func(const Op& f, int indent) {
  std::string pad(indent, ' ');
  const Region& body = *f.regions.at(0);
  std::string out = pad + "func @" + f.sym + args_decl(body);
  auto results = func_result_types(f);
  if (!results.empty()) out += " -> " + type_list(results, results.size() != 1);
  std::string attrs;
  for (auto& [k, v] : f.attrs)
    if (k != "result_types") attrs += (attrs.empty() ? "" : ", ") + k + " = " + v.str();
  if (!attrs.empty()) out += " attributes {" + attrs + "}";
  out += " {\n";
  print_region_body(out, body, indent + 2);
  return out + pad + "}\n";
}

}  // namespace

std::string print_op(const Op& op, int indent) {
  if (op.name == "func") return print_func(op, indent);
  std::string pad(indent, ' ');
  std::string out = pad;
  for (size_t i = 0; i < op.results.size(); ++i) out += (i ? ", %" : "%") + op.results[i]->name;
  if (!op.results.empty()) out += " = ";
  out += op.name;
  if (!op.sym.empty()) out += " @" + op.sym;
  for (size_t i = 0; i < op.operands.size(); ++i) out += (i ? ", %" : " %") + op.operands[i]->name;
  if (!op.attrs.empty()) {
    out += " {";
    bool first = true;
    for (auto& [k, v] : op.attrs) {
      out += (first ? "" : ", ") + k + " = " + v.str();
      first = false;
    }
    out += "}";
  }
  if (!op.operands.empty() || !op.results.empty()) {
    std::vector<Type> ins, outs;
    for (Value* v : op.operands) ins.push_back(v->type);
    for (auto& r : op.results) outs.push_back(r->type);
    // "(a, b) -> r" when there are results; MLIR's plain "a, b" when there are none
    out += " : " + type_list(ins, ins.empty() || (ins.size() != 1 && !outs.empty()));
    if (!outs.empty()) out += " -> " + type_list(outs, outs.size() != 1);
  }
  for (auto& r : op.regions) {
    out += " region" + args_decl(*r) + " {\n";
    print_region_body(out, *r, indent + 2);
    out += pad + "}";
  }
  return out + "\n";
}

std::string print(const Module& m) {
  std::string out;
  for (size_t i = 0; i < m.ops.size(); ++i) {
    if (i) out += "\n";
    out += print_op(*m.ops[i], 0);
  }
  return out;
}

}  // namespace tessera::ir
