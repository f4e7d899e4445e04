// Graph IR's pointwise ops (unary, binary with broadcasting, comparisons,
// logic, where, iota, cast, constant) and row ops (softmax, log_softmax, layer_norm, rms_norm): their attributes
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
                                      "log2",    "erf",  "floor", "ceil", "round", "clamp", "not"};
const std::set<std::string> kBinary = {"add", "sub", "mul", "div", "max", "min", "pow", "eq",
                                       "ne",  "lt",  "le",  "gt",  "ge",  "and", "or"};
const std::set<std::string> kComparison = {"eq", "ne", "lt", "le", "gt", "ge"};
// What integer (i32, i64) operands may do; i1 only takes the logic ops,
// comparisons, where and cast.
const std::set<std::string> kIntegerOk = {"neg", "abs", "add", "sub", "mul", "max", "min"};

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

// E215 unless function `s` takes operands of dtype `t`.
void check_operand_dtype(const Op& op, const std::string& s, DType t) {
  const std::string name(dtype_name(t));
  if (s == "and" || s == "or" || s == "not") {
    if (t != DType::I1)
      bad(op, "E215", "takes i1 (boolean) operands, got " + name + " (compare first, e.g. tessera.ne)");
  } else if (t == DType::I1 && !kComparison.count(s)) {
    bad(op, "E215", "does not take i1 operands (cast them first, e.g. to i32 or f32)");
  } else if (is_integer(t) && !kComparison.count(s) && !kIntegerOk.count(s)) {
    bad(op, "E215", "takes float operands, got " + name + " (cast first, e.g. tessera.cast to f32)");
  }
}

}  // namespace

bool is_unary_op(const std::string& name) { return kUnary.count(short_name(name)) > 0; }
bool is_binary_op(const std::string& name) { return kBinary.count(short_name(name)) > 0; }
bool is_comparison_op(const std::string& name) { return kComparison.count(short_name(name)) > 0; }
bool is_pointwise_op(const std::string& name) {
  return is_unary_op(name) || is_binary_op(name) || name == "tessera.where" || name == "tessera.iota" ||
         name == "tessera.concat" || name == "tessera.cast" || name == "tessera.constant" || is_index_op(name);
}
bool is_row_op(const std::string& name) {
  return name == "tessera.softmax" || name == "tessera.log_softmax" || name == "tessera.layer_norm" ||
         name == "tessera.rms_norm" || is_row_grad_op(name);
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

int64_t iota_axis(const Op& op) {
  const Type& t = op.results.at(0)->type;
  const Attr* a = op.attr("axis");
  if (!a || !a->as_int()) bad(op, "E211", "needs an integer 'axis'");
  const int64_t axis = *a->as_int();
  if (axis < -t.rank() || axis >= t.rank())
    bad(op, "E203", "axis " + std::to_string(axis) + " is out of range for " + t.str());
  return axis < 0 ? axis + t.rank() : axis;
}

int64_t row_op_axis(const Op& op) {
  const Type& x = op.operands.at(0)->type;
  if (op.name == "tessera.layer_norm" || op.name == "tessera.rms_norm" || is_norm_grad_op(op.name)) return x.rank() - 1;
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
  const bool rms = op.name == "tessera.rms_norm" || op.name == "tessera.rms_norm_grad";
  double eps = float_attr(op, "eps", rms ? 1e-6 : 1e-5);
  if (!(eps >= 0) || eps > 1e30) bad(op, "E211", "'eps' must be a finite number >= 0");
  return eps;
}

void verify_pointwise_or_row_op(const Op& op) {
  const std::string s = short_name(op.name);
  if (op.name == "tessera.concat") return verify_concat(op);
  if (is_index_op(op.name)) {
    index_spec(op);
    return;
  }
  if (op.name == "tessera.constant") {
    if (!op.operands.empty() || op.results.size() != 1 || !op.results[0]->type.is_tensor())
      bad(op, "E205", "takes no operands and has one tensor result");
    allow_attrs(op, {"value"});
    const double v = float_attr(op, "value", 0);
    if (!op.attr("value")) bad(op, "E211", "needs a numeric 'value'");
    const DType t = op.results[0]->type.dtype;
    if (!is_float(t) &&
        (v != std::trunc(v) || (t == DType::I1 && v != 0 && v != 1) ||
         (t == DType::I32 && (v < -0x1p31 || v >= 0x1p31)) || (t == DType::I64 && std::fabs(v) > 0x1p53)))
      bad(op, "E211",
          "'value' must be an integer in the range of " + std::string(dtype_name(t)) +
              " (exactly, for i64: |value| <= 2^53)");
    return;
  }
  if (op.name == "tessera.iota") {
    if (!op.operands.empty() || op.results.size() != 1 || !op.results[0]->type.is_tensor())
      bad(op, "E205", "takes no operands and has one tensor result");
    allow_attrs(op, {"axis"});
    const Type& t = op.results[0]->type;
    if (t.rank() == 0) bad(op, "E212", "needs a result of rank 1 or more, got " + t.str());
    for (int64_t d : t.shape)
      if (d < 0) bad(op, "E205", "result extents must be >= 0, got " + t.str());
    if (t.dtype == DType::I1) bad(op, "E215", "counts in a number type, not i1");
    iota_axis(op);
    return;
  }
  if (op.name == "tessera.where") {
    if (op.operands.size() != 3 || op.results.size() != 1)
      bad(op, "E205", "takes a condition and two values and has one result");
    for (Value* v : op.operands)
      if (!v->type.is_tensor()) bad(op, "E207", "operands must be tensors, got " + v->type.str());
    allow_attrs(op, {});
    const Type &c = op.operands[0]->type, &a = op.operands[1]->type, &b = op.operands[2]->type;
    if (c.dtype != DType::I1)
      bad(op, "E215", "the condition must be i1 (a comparison's result), got " + std::string(dtype_name(c.dtype)));
    if (a.dtype != b.dtype)
      bad(op, "E209",
          "values have dtypes " + std::string(dtype_name(a.dtype)) + " and " + std::string(dtype_name(b.dtype)) +
              "; insert a tessera.cast (no implicit promotion)");
    const std::vector<int64_t> shape = broadcast_shapes(broadcast_shapes(c.shape, a.shape, op.loc), b.shape, op.loc);
    expect_result(op, Type::tensor(a.dtype, shape));
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
    check_operand_dtype(op, s, op.operands[0]->type.dtype);
    if (s == "clamp" && !is_float(op.operands[0]->type.dtype)) bad(op, "E215", "takes float operands");
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
    check_operand_dtype(op, s, a.dtype);
    const DType result = kComparison.count(s) ? DType::I1 : a.dtype;
    expect_result(op, Type::tensor(result, broadcast_shapes(a.shape, b.shape, op.loc)));
    return;
  }
  if (is_row_grad_op(op.name)) return verify_row_grad_op(op);
  // row ops
  const bool norm = s == "layer_norm" || s == "rms_norm";
  expect_arity(op, s == "layer_norm" ? 3 : s == "rms_norm" ? 2 : 1);
  allow_attrs(op, norm ? std::initializer_list<const char*>{"eps"} : std::initializer_list<const char*>{"axis"});
  const Type& x = op.operands[0]->type;
  if (x.rank() == 0) bad(op, "E212", "needs an input of rank 1 or more, got " + x.str());
  if (!is_float(x.dtype)) bad(op, "E215", "takes float tensors, got " + x.str());
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
