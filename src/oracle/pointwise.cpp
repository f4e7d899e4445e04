// The oracle's pointwise ops: binary ops with numpy broadcasting, unary
// functions, comparisons, logic, where, iota, cast and constant. Values in
// double with the plainest formula that is accurate in double; tolerances
// from tolerance.cpp. Integer ops compute in int64 and wrap to their width
// (exact while values stay within 2^53, where a double holds every integer);
// a comparison whose operands' tolerance intervals meet could go either way,
// and its result carries tolerance 1.
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

const std::map<std::string, char>& comparisons() {
  static const std::map<std::string, char> m = {{"tessera.eq", '='}, {"tessera.ne", '!'}, {"tessera.lt", '<'},
                                                {"tessera.le", 'l'}, {"tessera.gt", '>'}, {"tessera.ge", 'g'}};
  return m;
}

bool compare_values(char how, double a, double b) {
  switch (how) {
    case '=': return a == b;
    case '!': return a != b;  // true when either is NaN, as IEEE and numpy
    case '<': return a < b;
    case 'l': return a <= b;
    case '>': return a > b;
    default: return a >= b;
  }
}

// x wrapped to the width of integer type t (two's complement), as a double.
double wrap(int64_t x, DType t) {
  if (t == DType::I32) return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(x)));
  return static_cast<double>(x);
}

// An integer op on exact operands, wrapping as numpy's int32/int64 do.
double integer_value(Pointwise op, double a, double b, DType t) {
  // (int64 values beyond 2^53 are doubles here; 2^63 stands for the top, as Tensor::get reads it)
  auto bits = [](double v) { return static_cast<uint64_t>(v >= 0x1p63 ? INT64_MAX : static_cast<int64_t>(v)); };
  const uint64_t x = bits(a), y = bits(b);
  switch (op) {
    case Pointwise::Add: return wrap(static_cast<int64_t>(x + y), t);
    case Pointwise::Sub: return wrap(static_cast<int64_t>(x - y), t);
    case Pointwise::Mul: return wrap(static_cast<int64_t>(x * y), t);
    case Pointwise::Neg: return wrap(static_cast<int64_t>(0 - x), t);
    case Pointwise::Abs: return wrap(static_cast<int64_t>(a < 0 ? 0 - x : x), t);
    case Pointwise::Max: return std::max(a, b);
    case Pointwise::Min: return std::min(a, b);
    default: return kNaN;
  }
}

// The tolerance of an integer result: 0 from exact operands; otherwise the
// reach of the operands' intervals, unbounded once the op could wrap.
double integer_tolerance(Pointwise op, double a, double ta, double b, double tb, double value, DType t) {
  if (ta == 0 && tb == 0) return 0;
  const double limit = t == DType::I32 ? 0x1p31 : 0x1p63;
  double tol = op == Pointwise::Mul                           ? std::fabs(a) * tb + std::fabs(b) * ta + ta * tb
               : op == Pointwise::Max || op == Pointwise::Min ? std::max(ta, tb)
                                                              : ta + tb;
  return std::fabs(value) + tol >= limit ? kInf : tol;
}

// Offsets of each operand (broadcast to `shape`) at each output element, in order.
template <class F>
void for_each_broadcast(const std::vector<int64_t>& shape, const std::vector<std::vector<int64_t>>& operand_shapes,
                        F&& f) {
  const size_t rank = shape.size(), k = operand_shapes.size();
  std::vector<std::vector<int64_t>> st;
  for (const auto& s : operand_shapes) st.push_back(broadcast_strides(s, rank));
  std::vector<int64_t> idx(rank, 0), at(k, 0);
  const int64_t n = product(shape);
  for (int64_t i = 0; i < n; ++i) {
    f(i, at);
    for (size_t d = rank; d-- > 0;) {  // odometer over the output, operand offsets follow
      for (size_t j = 0; j < k; ++j) at[j] += st[j][d];
      if (++idx[d] < shape[d]) break;
      for (size_t j = 0; j < k; ++j) at[j] -= st[j][d] * shape[d];
      idx[d] = 0;
    }
  }
}

void eval_binary(const ir::Op& op, Pointwise fn, const Source& a, const Source& b, Need need, Expected& e) {
  only_attrs(op, {});
  const DType t = a.dtype();
  if (t != b.dtype())
    bad_op(op, "operands have dtypes " + std::string(dtype_name(t)) + " and " + std::string(dtype_name(b.dtype())) +
                   " (no implicit promotion)");
  if (t == DType::I1 || (is_integer(t) && (fn == Pointwise::Div || fn == Pointwise::Pow)))
    bad_op(op, "takes no " + std::string(dtype_name(t)) + " operands");
  const std::vector<int64_t> shape = broadcast(op, a.shape(), b.shape());
  check_result(op, shape, t);
  e = result_like(op);
  for_each_broadcast(shape, {a.shape(), b.shape()}, [&](int64_t i, const std::vector<int64_t>& at) {
    if (!needed(need, i)) return;
    const double x = a.at(at[0]), y = b.at(at[1]);
    if (is_integer(t)) {
      e.value[i] = integer_value(fn, x, y, t);
      e.tolerance[i] = integer_tolerance(fn, x, a.tol(at[0]), y, b.tol(at[1]), e.value[i], t);
    } else {
      e.value[i] = binary_value(fn, x, y);
      e.tolerance[i] = binary_tolerance(fn, x, a.tol(at[0]), y, b.tol(at[1]), e.value[i], t, e.dtype);
    }
  });
}

// eq ne lt le gt ge: i1 results, tolerance 1 where the operands' intervals
// meet (the kernel's values could compare either way).
void eval_compare(const ir::Op& op, char how, const Source& a, const Source& b, Need need, Expected& e) {
  only_attrs(op, {});
  if (a.dtype() != b.dtype()) bad_op(op, "operands have different dtypes (no implicit promotion)");
  const std::vector<int64_t> shape = broadcast(op, a.shape(), b.shape());
  check_result(op, shape, DType::I1);
  e = result_like(op);
  for_each_broadcast(shape, {a.shape(), b.shape()}, [&](int64_t i, const std::vector<int64_t>& at) {
    if (!needed(need, i)) return;
    const double x = a.at(at[0]), y = b.at(at[1]), reach = a.tol(at[0]) + b.tol(at[1]);
    e.value[i] = compare_values(how, x, y) ? 1 : 0;
    e.tolerance[i] = reach > 0 && !(std::fabs(x - y) > reach) ? 1 : 0;
  });
}

// and, or (binary) and not on i1.
void eval_logic(const ir::Op& op, const std::vector<Source>& in, Need need, Expected& e) {
  only_attrs(op, {});
  for (const Source& s : in)
    if (s.dtype() != DType::I1) bad_op(op, "takes i1 operands");
  const bool unary = in.size() == 1, is_and = op.name == "tessera.and";
  const std::vector<int64_t> shape = unary ? in[0].shape() : broadcast(op, in[0].shape(), in[1].shape());
  check_result(op, shape, DType::I1);
  e = result_like(op);
  std::vector<std::vector<int64_t>> shapes;
  for (const Source& s : in) shapes.push_back(s.shape());
  for_each_broadcast(shape, shapes, [&](int64_t i, const std::vector<int64_t>& at) {
    if (!needed(need, i)) return;
    const bool x = in[0].at(at[0]) != 0;
    const bool ux = in[0].tol(at[0]) > 0;  // an uncertain operand
    if (unary) {
      e.value[i] = !x;
      e.tolerance[i] = ux ? 1 : 0;
      return;
    }
    const bool y = in[1].at(at[1]) != 0, uy = in[1].tol(at[1]) > 0;
    e.value[i] = is_and ? (x && y) : (x || y);
    // A certain operand that decides alone (false for and, true for or) makes the result certain.
    const bool decides = (!ux && x != is_and) || (!uy && y != is_and);
    e.tolerance[i] = (ux || uy) && !decides ? 1 : 0;
  });
}

void eval_where(const ir::Op& op, const std::vector<Source>& in, Need need, Expected& e) {
  only_attrs(op, {});
  if (in[0].dtype() != DType::I1) bad_op(op, "the condition must be i1");
  if (in[1].dtype() != in[2].dtype()) bad_op(op, "the values have different dtypes (no implicit promotion)");
  const std::vector<int64_t> shape = broadcast(op, broadcast(op, in[0].shape(), in[1].shape()), in[2].shape());
  check_result(op, shape, in[1].dtype());
  e = result_like(op);
  for_each_broadcast(shape, {in[0].shape(), in[1].shape(), in[2].shape()},
                     [&](int64_t i, const std::vector<int64_t>& at) {
                       if (!needed(need, i)) return;
                       const bool c = in[0].at(at[0]) != 0;
                       const Source &pick = c ? in[1] : in[2], &other = c ? in[2] : in[1];
                       const int64_t p = c ? at[1] : at[2], o = c ? at[2] : at[1];
                       e.value[i] = pick.at(p);
                       e.tolerance[i] = pick.tol(p);
                       if (in[0].tol(at[0]) > 0)  // either value may be taken
                         e.tolerance[i] = std::max(pick.tol(p), std::fabs(pick.at(p) - other.at(o)) + other.tol(o));
                     });
}

void eval_iota(const ir::Op& op, Expected& e) {
  only_attrs(op, {"axis"});
  e = result_like(op);
  const int64_t rank = static_cast<int64_t>(e.shape.size());
  const double axis_attr = float_attr(op, "axis", kNaN);
  if (rank == 0 || !(axis_attr >= -rank && axis_attr < rank) || axis_attr != std::trunc(axis_attr))
    bad_op(op, "needs an integer 'axis' within the result's rank");
  const int64_t axis = static_cast<int64_t>(axis_attr) + (axis_attr < 0 ? rank : 0);
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= e.shape[d];
  for (size_t i = 0; i < e.value.size(); ++i) {
    const double v = static_cast<double>((static_cast<int64_t>(i) / inner) % e.shape[axis]);
    e.value[i] = v;
    e.tolerance[i] = is_float(e.dtype) ? constant_tolerance(v, e.dtype) : 0;
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
  const DType in_dt = x.dtype(), out_dt = fn == Pointwise::Cast ? op.results[0]->type.dtype : in_dt;
  const bool integer_op = fn != Pointwise::Cast && !is_float(in_dt);
  if (integer_op && (in_dt == DType::I1 || (fn != Pointwise::Neg && fn != Pointwise::Abs)))
    bad_op(op, "takes no " + std::string(dtype_name(in_dt)) + " operands");
  check_result(op, x.shape(), out_dt);
  e = result_like(op);
  const int64_t n = product(x.shape());
  for (int64_t i = 0; i < n; ++i) {
    if (!needed(need, i)) continue;
    const double v = x.at(i);
    if (integer_op) {
      e.value[i] = integer_value(fn, v, 0, in_dt);
      e.tolerance[i] = integer_tolerance(fn, v, x.tol(i), 0, 0, e.value[i], in_dt);
      continue;
    }
    if (fn == Pointwise::Cast && !is_float(out_dt)) {  // docs/semantics.md: truncate, saturate, NaN to 0
      auto convert = [&](double y) {
        return is_float(in_dt)       ? static_cast<double>(to_integer(y, out_dt))
               : out_dt == DType::I1 ? (y != 0 ? 1.0 : 0.0)
                                     : wrap(y >= 0x1p63 ? INT64_MAX : static_cast<int64_t>(y), out_dt);
      };
      e.value[i] = convert(v);
      const double t = x.tol(i);
      e.tolerance[i] = t > 0 ? std::max(std::fabs(convert(v + t) - e.value[i]), std::fabs(e.value[i] - convert(v - t)))
                             : 0;
      continue;
    }
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
  if (!is_float(e.dtype)) v = static_cast<double>(to_integer(v, e.dtype));
  else if (std::isinf(round_to_dtype(v, e.dtype))) v = round_to_dtype(v, e.dtype);
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
  if (auto it = comparisons().find(op.name); it != comparisons().end()) {
    expect_arity(op, 2);
    eval_compare(op, it->second, in[0], in[1], need, out);
    return true;
  }
  if (op.name == "tessera.and" || op.name == "tessera.or" || op.name == "tessera.not") {
    expect_arity(op, op.name == "tessera.not" ? 1 : 2);
    eval_logic(op, in, need, out);
    return true;
  }
  if (op.name == "tessera.where") {
    expect_arity(op, 3);
    eval_where(op, in, need, out);
    return true;
  }
  if (op.name == "tessera.iota") {
    expect_arity(op, 0);
    eval_iota(op, out);
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
  if (op.name == "tessera.constant" || op.name == "tessera.iota") return true;
  const bool binary = binary_ops().count(op.name) || comparisons().count(op.name) || op.name == "tessera.and" ||
                      op.name == "tessera.or";
  const bool unary = unary_ops().count(op.name) || op.name == "tessera.cast" || op.name == "tessera.not";
  if (!binary && !unary && op.name != "tessera.where") return false;
  expect_arity(op, binary ? 2 : unary ? 1 : 3);
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
