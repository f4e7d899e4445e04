// Graph IR's pointwise ops (unary, binary with broadcasting, cast, constant)
// and row ops (softmax, log_softmax, layer_norm, rms_norm): their attributes
// and the types their results must have.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "ir/graph_dialect.hpp"

namespace tessera::ir {

namespace {

const std::set<std::string> kUnary = {"neg",     "abs",  "exp",   "log",  "sqrt",  "rsqrt", "tanh",
                                      "sigmoid", "relu", "gelu",  "silu", "sin",   "cos",   "exp2",
                                      "log2",    "erf",  "floor", "ceil", "round", "clamp"};
const std::set<std::string> kBinary = {"add", "sub", "mul", "div", "max", "min", "pow"};

std::string short_name(const std::string& name) {
  return name.rfind("tessera.", 0) == 0 ? name.substr(8) : std::string();
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

[[noreturn]] void bad(const Op& op, const char* code, const std::string& msg) {
  fail(code, op.name + ": " + msg, op.loc);
}

void expect_arity(const Op& op, size_t operands) {
  if (op.operands.size() != operands || op.results.size() != 1)
    bad(op, "E205",
        "takes " + std::to_string(operands) + " operand" + (operands == 1 ? "" : "s") + " and has one result");
  for (Value* v : op.operands)
    if (!v->type.is_tensor()) bad(op, "E207", "operands must be tensors, got " + v->type.str());
  if (!op.results[0]->type.is_tensor()) bad(op, "E207", "the result must be a tensor");
}

void allow_attrs(const Op& op, std::initializer_list<const char*> keys) {
  for (auto& [k, _] : op.attrs)
    if (std::none_of(keys.begin(), keys.end(), [&](const char* a) { return k == a; }))
      bad(op, "E205", "unknown attribute '" + k + "'");
}

void expect_result(const Op& op, const Type& want) {
  if (!(op.results[0]->type == want))
    bad(op, "E205",
        "result type is " + op.results[0]->type.str() + " but " + want.str() +
            " follows from the operands and attributes");
}

double float_attr(const Op& op, const char* key, double fallback) {
  const Attr* a = op.attr(key);
  if (!a) return fallback;
  if (a->as_float()) return *a->as_float();
  if (a->as_int()) return static_cast<double>(*a->as_int());
  bad(op, "E211", std::string("'") + key + "' must be a number");
}

}  // namespace

bool is_unary_op(const std::string& name) { return kUnary.count(short_name(name)) > 0; }
bool is_binary_op(const std::string& name) { return kBinary.count(short_name(name)) > 0; }
bool is_pointwise_op(const std::string& name) {
  return is_unary_op(name) || is_binary_op(name) || name == "tessera.cast" || name == "tessera.constant";
}
bool is_row_op(const std::string& name) {
  return name == "tessera.softmax" || name == "tessera.log_softmax" || name == "tessera.layer_norm" ||
         name == "tessera.rms_norm";
}

std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                      const SourceLoc& loc) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // aligned from the right; a missing dim acts as 1
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1)
      fail("E210",
           "shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast: dimension " + std::to_string(i) +
               " is " + std::to_string(x) + " vs " + std::to_string(y) + " (numpy rules: equal, or one of them 1)",
           loc);
    out[i] = x == 1 ? y : x;
  }
  return out;
}

ClampBounds clamp_bounds(const Op& op) {
  if (!op.attr("min") && !op.attr("max")) bad(op, "E211", "needs 'min', 'max' or both");
  ClampBounds b{float_attr(op, "min", -std::numeric_limits<double>::infinity()),
                float_attr(op, "max", std::numeric_limits<double>::infinity())};
  if (std::isnan(b.lo) || std::isnan(b.hi)) bad(op, "E211", "'min' and 'max' must be numbers, not NaN");
  return b;
}

std::string pointwise_fn(const Op& op) {
  std::string s = short_name(op.name);
  if (s == "gelu") {
    const Attr* a = op.attr("approximate");
    if (a && a->as_string() && *a->as_string() == "tanh") return "gelu_tanh";
  }
  return s;
}

int64_t row_op_axis(const Op& op) {
  const Type& x = op.operands.at(0)->type;
  if (op.name == "tessera.layer_norm" || op.name == "tessera.rms_norm") return x.rank() - 1;
  int64_t axis = -1;
  if (const Attr* a = op.attr("axis")) {
    if (!a->as_int()) bad(op, "E211", "'axis' must be an integer");
    axis = *a->as_int();
  }
  if (axis < -x.rank() || axis >= x.rank())
    bad(op, "E203", "axis " + std::to_string(axis) + " is out of range for " + x.str());
  return axis < 0 ? axis + x.rank() : axis;
}

double row_op_eps(const Op& op) {
  double eps = float_attr(op, "eps", op.name == "tessera.rms_norm" ? 1e-6 : 1e-5);
  if (!(eps >= 0) || eps > 1e30) bad(op, "E211", "'eps' must be a finite number >= 0");
  return eps;
}

void verify_pointwise_or_row_op(const Op& op) {
  const std::string s = short_name(op.name);
  if (op.name == "tessera.constant") {
    if (!op.operands.empty() || op.results.size() != 1 || !op.results[0]->type.is_tensor())
      bad(op, "E205", "takes no operands and has one tensor result");
    allow_attrs(op, {"value"});
    float_attr(op, "value", 0);
    if (!op.attr("value")) bad(op, "E211", "needs a numeric 'value'");
    return;
  }
  if (op.name == "tessera.cast") {
    expect_arity(op, 1);
    allow_attrs(op, {});
    if (op.results[0]->type.shape != op.operands[0]->type.shape)
      bad(op, "E205", "changes only the dtype: " + op.operands[0]->type.str() + " -> " + op.results[0]->type.str());
    return;
  }
  if (is_unary_op(op.name)) {
    expect_arity(op, 1);
    if (s == "gelu") {
      allow_attrs(op, {"approximate"});
      const Attr* a = op.attr("approximate");
      if (a && (!a->as_string() || (*a->as_string() != "none" && *a->as_string() != "tanh")))
        bad(op, "E211", "'approximate' must be \"none\" or \"tanh\"");
    } else if (s == "clamp") {
      allow_attrs(op, {"min", "max"});
      clamp_bounds(op);
    } else {
      allow_attrs(op, {});
    }
    expect_result(op, op.operands[0]->type);
    return;
  }
  if (is_binary_op(op.name)) {
    expect_arity(op, 2);
    allow_attrs(op, {});
    const Type &a = op.operands[0]->type, &b = op.operands[1]->type;
    if (a.dtype != b.dtype)
      bad(op, "E209",
          "operands have dtypes " + std::string(dtype_name(a.dtype)) + " and " + std::string(dtype_name(b.dtype)) +
              "; insert a tessera.cast (no implicit promotion)");
    expect_result(op, Type::tensor(a.dtype, broadcast_shapes(a.shape, b.shape, op.loc)));
    return;
  }
  // row ops
  const bool norm = s == "layer_norm" || s == "rms_norm";
  expect_arity(op, s == "layer_norm" ? 3 : s == "rms_norm" ? 2 : 1);
  allow_attrs(op, norm ? std::initializer_list<const char*>{"eps"} : std::initializer_list<const char*>{"axis"});
  const Type& x = op.operands[0]->type;
  if (x.rank() == 0) bad(op, "E212", "needs an input of rank 1 or more, got " + x.str());
  row_op_axis(op);
  if (norm) {
    row_op_eps(op);
    const Type want = Type::tensor(x.dtype, {x.shape.back()});
    for (size_t i = 1; i < op.operands.size(); ++i)
      if (!(op.operands[i]->type == want))
        bad(op, "E212",
            std::string(i == 1 ? "the weight" : "the bias") + " must be " + want.str() +
                " (the normalized last axis, in the input's dtype), got " + op.operands[i]->type.str());
  }
  expect_result(op, x);
}

}  // namespace tessera::ir
