// The oracle's pointwise ops: binary ops with numpy broadcasting, unary
// functions, cast and constant. Values in double with the plainest formula
// that is accurate in double; tolerances from tolerance.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "oracle/ops.hpp"
#include "oracle/tolerance.hpp"

namespace tessera::oracle::detail {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const std::map<std::string, Pointwise>& binary_ops() {
  static const std::map<std::string, Pointwise> m = {
      {"tessera.add", Pointwise::Add}, {"tessera.sub", Pointwise::Sub}, {"tessera.mul", Pointwise::Mul},
      {"tessera.div", Pointwise::Div}, {"tessera.max", Pointwise::Max}, {"tessera.min", Pointwise::Min},
      {"tessera.pow", Pointwise::Pow},
  };
  return m;
}

const std::map<std::string, Pointwise>& unary_ops() {
  static const std::map<std::string, Pointwise> m = {
      {"tessera.neg", Pointwise::Neg},     {"tessera.abs", Pointwise::Abs},         {"tessera.exp", Pointwise::Exp},
      {"tessera.log", Pointwise::Log},     {"tessera.sqrt", Pointwise::Sqrt},       {"tessera.rsqrt", Pointwise::Rsqrt},
      {"tessera.tanh", Pointwise::Tanh},   {"tessera.sigmoid", Pointwise::Sigmoid}, {"tessera.relu", Pointwise::Relu},
      {"tessera.gelu", Pointwise::Gelu},   {"tessera.silu", Pointwise::Silu},       {"tessera.sin", Pointwise::Sin},
      {"tessera.cos", Pointwise::Cos},     {"tessera.exp2", Pointwise::Exp2},       {"tessera.log2", Pointwise::Log2},
      {"tessera.erf", Pointwise::Erf},     {"tessera.floor", Pointwise::Floor},     {"tessera.ceil", Pointwise::Ceil},
      {"tessera.round", Pointwise::Round}, {"tessera.clamp", Pointwise::Clamp},
  };
  return m;
}

double binary_value(Pointwise op, double a, double b) {
  switch (op) {
    case Pointwise::Add: return a + b;
    case Pointwise::Sub: return a - b;
    case Pointwise::Mul: return a * b;
    case Pointwise::Div: return a / b;
    // NaN-propagating, unlike std::fmax/fmin.
    case Pointwise::Max: return std::isnan(a) || std::isnan(b) ? kNaN : (a > b ? a : b);
    case Pointwise::Min: return std::isnan(a) || std::isnan(b) ? kNaN : (a < b ? a : b);
    case Pointwise::Pow: return std::pow(a, b);
    default: return kNaN;
  }
}

// The mathematical definitions, written so double evaluation does not cancel:
// 0.5x(1 + erf(x/sqrt2)) = 0.5x erfc(-x/sqrt2), and 0.5(1 + tanh w) = 1/(1 + e^-2w).
// silu and both gelus at -inf are their limit, -0 (the formulas would give
// -inf * 0 = NaN); at +inf they are +inf.
double unary_value(Pointwise op, double x) {
  if (std::isinf(x) && (op == Pointwise::Silu || op == Pointwise::Gelu || op == Pointwise::GeluTanh))
    return x > 0 ? x : -0.0;
  switch (op) {
    case Pointwise::Neg: return -x;
    case Pointwise::Abs: return std::fabs(x);
    case Pointwise::Relu: return std::isnan(x) ? x : (x > 0 ? x : 0.0);
    case Pointwise::Exp: return std::exp(x);
    case Pointwise::Log: return std::log(x);
    case Pointwise::Sqrt: return std::sqrt(x);
    case Pointwise::Rsqrt: return 1 / std::sqrt(x);
    case Pointwise::Tanh: return std::tanh(x);
    case Pointwise::Sigmoid: return 1 / (1 + std::exp(-x));
    case Pointwise::Silu: return x / (1 + std::exp(-x));
    case Pointwise::Gelu: return 0.5 * x * std::erfc(-x * M_SQRT1_2);
    case Pointwise::GeluTanh: {
      const double w = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
      return x / (1 + std::exp(-2 * w));
    }
    case Pointwise::Sin: return std::sin(x);
    case Pointwise::Cos: return std::cos(x);
    case Pointwise::Exp2: return std::exp2(x);
    case Pointwise::Log2: return std::log2(x);
    case Pointwise::Erf: return std::erf(x);
    case Pointwise::Floor: return std::floor(x);
    case Pointwise::Ceil: return std::ceil(x);
    case Pointwise::Round: return std::nearbyint(x);  // half to even (the default rounding mode), as numpy
    default: return kNaN;
  }
}

// The declared result type must be a tensor of the operands' dtype (no
// implicit promotion) and of the expected shape.
void check_result(const ir::Op& op, const std::vector<int64_t>& shape, DType dt) {
  const ir::Type& r = op.results[0]->type;
  if (r.shape != shape || r.dtype != dt)
    bad_op(op, "result is declared " + r.str() + " but the operands give " + type_string(shape, dt));
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + "]";
}

// numpy broadcasting: align trailing dims; equal, or one of them is 1.
std::vector<int64_t> broadcast(const ir::Op& op, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    const int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      bad_op(op, "operand shapes " + shape_string(a) + " and " + shape_string(b) + " do not broadcast");
    out[k] = da == 1 ? db : da;
  }
  return out;
}

// Per output dim, the operand's stride (0 where the operand is broadcast).
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, size_t out_rank) {
  std::vector<int64_t> st(out_rank, 0);
  int64_t s = 1;
  for (size_t k = in.size(); k-- > 0;) {
    if (in[k] != 1) st[k + out_rank - in.size()] = s;
    s *= in[k];
  }
  return st;
}

void eval_binary(const ir::Op& op, Pointwise fn, const Source& a, const Source& b, Need need, Expected& e) {
  only_attrs(op, {});
  if (a.dtype() != b.dtype())
    bad_op(op, "operands have dtypes " + std::string(dtype_name(a.dtype())) + " and " +
                   std::string(dtype_name(b.dtype())) + " (no implicit promotion)");
  const std::vector<int64_t> shape = broadcast(op, a.shape(), b.shape());
  check_result(op, shape, a.dtype());
  e = result_like(op);
  const size_t rank = shape.size();
  const std::vector<int64_t> sa = broadcast_strides(a.shape(), rank), sb = broadcast_strides(b.shape(), rank);
  std::vector<int64_t> idx(rank, 0);
  int64_t ia = 0, ib = 0;
  const int64_t n = product(shape);
  for (int64_t i = 0; i < n; ++i) {
    if (needed(need, i)) {
      const double x = a.at(ia), y = b.at(ib), v = binary_value(fn, x, y);
      e.value[i] = v;
      e.tolerance[i] = binary_tolerance(fn, x, a.tol(ia), y, b.tol(ib), v, a.dtype(), e.dtype);
    }
    for (size_t d = rank; d-- > 0;) {  // odometer over the output, operand offsets follow
      ia += sa[d];
      ib += sb[d];
      if (++idx[d] < shape[d]) break;
      ia -= sa[d] * shape[d];
      ib -= sb[d] * shape[d];
      idx[d] = 0;
    }
  }
}

void eval_unary(const ir::Op& op, Pointwise fn, const Source& x, Need need, Expected& e) {
  double lo = -kInf, hi = kInf;  // tessera.clamp's bounds
  if (fn == Pointwise::Gelu) {
    only_attrs(op, {"approximate"});
    if (const ir::Attr* a = op.attr("approximate")) {
      const std::string* s = a->as_string();
      if (!s || (*s != "none" && *s != "tanh")) bad_op(op, "'approximate' must be \"none\" or \"tanh\"");
      if (*s == "tanh") fn = Pointwise::GeluTanh;
    }
  } else if (fn == Pointwise::Clamp) {
    only_attrs(op, {"min", "max"});
    if (!op.attr("min") && !op.attr("max")) bad_op(op, "needs 'min', 'max' or both");
    lo = float_attr(op, "min", -kInf);
    hi = float_attr(op, "max", kInf);
    if (std::isnan(lo) || std::isnan(hi)) bad_op(op, "'min' and 'max' must be numbers, not NaN");
  } else {
    only_attrs(op, {});
  }
  const DType out_dt = fn == Pointwise::Cast ? op.results[0]->type.dtype : x.dtype();
  check_result(op, x.shape(), out_dt);
  e = result_like(op);
  const int64_t n = product(x.shape());
  for (int64_t i = 0; i < n; ++i) {
    if (!needed(need, i)) continue;
    const double v = x.at(i);
    // clamp: min(max(x, lo), hi) with NaN kept (numpy's clip; lo > hi gives hi).
    const double val = fn == Pointwise::Cast    ? v
                       : fn == Pointwise::Clamp ? (std::isnan(v) ? v : std::min(std::max(v, lo), hi))
                                                : unary_value(fn, v);
    e.value[i] = val;
    e.tolerance[i] = unary_tolerance(fn, v, x.tol(i), val, x.dtype(), e.dtype);
  }
}

void eval_constant(const ir::Op& op, Expected& e) {
  only_attrs(op, {"value"});
  if (!op.attr("value")) bad_op(op, "needs a numeric attribute 'value'");
  e = result_like(op);
  // The literal as written (a kernel may keep it in f32 when the result is
  // f16/bf16; the tolerance is one rounding to the result type), unless it
  // overflows that type: then the constant is that infinity.
  double v = float_attr(op, "value", 0.0);
  if (std::isinf(round_to_dtype(v, e.dtype))) v = round_to_dtype(v, e.dtype);
  for (size_t i = 0; i < e.value.size(); ++i) {
    e.value[i] = v;
    e.tolerance[i] = constant_tolerance(v, e.dtype);
  }
}

}  // namespace

bool evaluate_pointwise(const ir::Op& op, const std::vector<Source>& in, Need need, Expected& out) {
  if (auto it = binary_ops().find(op.name); it != binary_ops().end()) {
    expect_arity(op, 2);
    eval_binary(op, it->second, in[0], in[1], need, out);
    return true;
  }
  if (auto it = unary_ops().find(op.name); it != unary_ops().end()) {
    expect_arity(op, 1);
    eval_unary(op, it->second, in[0], need, out);
    return true;
  }
  if (op.name == "tessera.cast") {
    expect_arity(op, 1);
    eval_unary(op, Pointwise::Cast, in[0], need, out);
    return true;
  }
  if (op.name == "tessera.constant") {
    expect_arity(op, 0);
    eval_constant(op, out);
    return true;
  }
  return false;
}

bool demand_pointwise(const ir::Op& op, const std::vector<std::vector<int64_t>>& in_shapes, const uint8_t* need,
                      std::vector<std::vector<uint8_t>>& in_need) {
  if (op.name == "tessera.constant") return true;
  const bool binary = binary_ops().count(op.name) > 0;
  if (!binary && !unary_ops().count(op.name) && op.name != "tessera.cast") return false;
  expect_arity(op, binary ? 2 : 1);
  const std::vector<int64_t>& shape = op.results[0]->type.shape;
  const size_t rank = shape.size();
  for (size_t k = 0; k < in_shapes.size(); ++k) {
    const size_t lead = rank - std::min(rank, in_shapes[k].size());
    for (size_t d = 0; d < in_shapes[k].size(); ++d)
      if (in_shapes[k].size() > rank || (in_shapes[k][d] != 1 && in_shapes[k][d] != shape[lead + d]))
        bad_op(op, "operand shape " + shape_string(in_shapes[k]) + " does not broadcast to the result " +
                       shape_string(shape));
    const std::vector<int64_t> st = broadcast_strides(in_shapes[k], rank);
    std::vector<int64_t> idx(rank, 0);
    int64_t at = 0;
    const int64_t n = product(shape);
    for (int64_t i = 0; i < n; ++i) {
      if (need[i]) in_need[k][at] = 1;
      for (size_t d = rank; d-- > 0;) {
        at += st[d];
        if (++idx[d] < shape[d]) break;
        at -= st[d] * shape[d];
        idx[d] = 0;
      }
    }
  }
  return true;
}

}  // namespace tessera::oracle::detail
