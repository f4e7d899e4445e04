#include "oracle/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_map>

#include "oracle/ops.hpp"
#include "oracle/tolerance.hpp"
#include "support/diagnostic.hpp"

namespace tessera::oracle {

namespace detail {

std::string type_string(const std::vector<int64_t>& shape, DType dt) {
  std::string s = "tensor<";
  for (int64_t d : shape) s += std::to_string(d) + "x";
  return s + std::string(dtype_name(dt)) + ">";
}

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void bad_op(const ir::Op& op, const std::string& msg) { fail("E802", "oracle: " + op.name + ": " + msg, op.loc); }

// Anything unexpected is E802: guessing what an unknown attribute means would
// make the oracle agree with a wrong compiler.
void only_attrs(const ir::Op& op, std::initializer_list<const char*> allowed) {
  for (const auto& [key, _] : op.attrs) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (!ok) bad_op(op, "unknown attribute '" + key + "'");
  }
}

void expect_arity(const ir::Op& op, size_t n) {
  if (op.operands.size() != n)
    bad_op(op, "takes " + std::to_string(n) + " operand" + (n == 1 ? "" : "s") + ", got " +
                   std::to_string(op.operands.size()));
  if (op.results.size() != 1 || !op.results[0]->type.is_tensor()) bad_op(op, "has one tensor result");
}

double float_attr(const ir::Op& op, const char* key, double fallback) {
  const ir::Attr* a = op.attr(key);
  if (!a) return fallback;
  if (const double* d = a->as_float()) return *d;
  if (const int64_t* i = a->as_int()) return static_cast<double>(*i);
  bad_op(op, std::string("'") + key + "' must be a number");
}

Expected result_like(const ir::Op& op, size_t r) {
  const ir::Type& t = op.results.at(r)->type;
  Expected e;
  e.shape = t.shape;
  e.dtype = t.dtype;
  const int64_t n = product(t.shape);
  e.value.assign(n, 0.0);
  e.tolerance.assign(n, 0.0);
  return e;
}

const ir::Op& pick_func(const ir::Module& graph, const std::string& name) {
  for (const ir::Op* f : graph.funcs())
    if (name.empty() || f->sym == name) {
      if (f->regions.empty()) fail("E802", "oracle: func @" + f->sym + " has no body", f->loc);
      return *f;
    }
  if (name.empty()) fail("E802", "oracle: the module has no func");
  fail("E802", "oracle: no func named @" + name);
}

}  // namespace detail

namespace {

using detail::product;
using detail::Source;
using detail::type_string;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

enum class Kind { Sum, Mean, Max, Min, Prod };

struct ReduceAttrs {
  Kind kind = Kind::Sum;
  std::vector<bool> reduced;  // per input dim
  bool keepdims = false;
};

// Reads tessera.reduce's attributes independently of the compiler's reading.
// Anything unexpected is E802: guessing what an unknown attribute means would
// make the oracle agree with a wrong compiler.
ReduceAttrs read_reduce(const ir::Op& op, int64_t rank) {
  auto bad = [&](const std::string& msg) { fail("E802", "oracle: tessera.reduce: " + msg, op.loc); };
  ReduceAttrs a;
  for (const auto& [key, _] : op.attrs)
    if (key != "kind" && key != "axes" && key != "keepdims") bad("unknown attribute '" + key + "'");

  const ir::Attr* kind = op.attr("kind");
  const std::string* k = kind ? kind->as_string() : nullptr;
  if (!k) bad("needs a string attribute 'kind'");
  if (*k == "sum") a.kind = Kind::Sum;
  else if (*k == "mean") a.kind = Kind::Mean;
  else if (*k == "max") a.kind = Kind::Max;
  else if (*k == "min") a.kind = Kind::Min;
  else if (*k == "prod") a.kind = Kind::Prod;
  else bad("unknown kind '" + *k + "'");

  a.reduced.assign(static_cast<size_t>(rank), false);
  if (const ir::Attr* axes = op.attr("axes")) {
    auto list = axes->as_ints();
    if (!list) bad("'axes' must be a list of integers");
    for (int64_t ax : *list) {
      if (ax < -rank || ax >= rank)
        bad("axis " + std::to_string(ax) + " out of range for rank " + std::to_string(rank));
      if (ax < 0) ax += rank;
      if (a.reduced[ax]) bad("axis " + std::to_string(ax) + " appears twice");
      a.reduced[ax] = true;
    }
  } else {
    a.reduced.assign(static_cast<size_t>(rank), true);  // no axes: all of them
  }

  if (const ir::Attr* kd = op.attr("keepdims")) {
    if (!kd->as_bool()) bad("'keepdims' must be true or false");
    a.keepdims = *kd->as_bool();
  }
  return a;
}

// Where a reduce sends each input element: the output shape, and per input
// dim the stride of that dim in the output (0 for reduced dims, so moving
// along them stays on the same output). E802 unless the op declares that
// output shape.
struct ReduceMap {
  std::vector<int64_t> out_shape, out_stride;
  int64_t n_out = 1, n = 1;  // n: reduced elements per output

  ReduceMap(const ir::Op& op, const ReduceAttrs& a, const std::vector<int64_t>& in_shape) {
    const int64_t rank = static_cast<int64_t>(in_shape.size());
    out_stride.assign(static_cast<size_t>(rank), 0);
    for (int64_t d = 0; d < rank; ++d) {
      if (!a.reduced[d]) out_shape.push_back(in_shape[d]);
      else if (a.keepdims) out_shape.push_back(1);
    }
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (a.reduced[d]) {
        n *= in_shape[d];
      } else {
        out_stride[d] = n_out;
        n_out *= in_shape[d];
      }
    }
    const ir::Type& declared = op.results[0]->type;
    if (!declared.is_tensor() || declared.shape != out_shape)
      fail("E802",
           "oracle: tessera.reduce result is declared " + declared.str() + " but the attributes give " +
               type_string(out_shape, declared.dtype),
           op.loc);
  }
};

// One pass over the input in storage order with a multi-index odometer that
// keeps `o`, the output offset of the current element, up to date: amortized
// O(1) per element, no allocation inside the loop.
struct OutputOdometer {
  const std::vector<int64_t>& in_shape;
  const std::vector<int64_t>& out_stride;
  std::vector<int64_t> idx = std::vector<int64_t>(in_shape.size(), 0);
  int64_t o = 0;

  void next() {
    for (size_t d = in_shape.size(); d-- > 0;) {
      if (++idx[d] < in_shape[d]) {
        o += out_stride[d];
        return;
      }
      o -= out_stride[d] * (in_shape[d] - 1);
      idx[d] = 0;
    }
  }
};

Expected reduce(const ir::Op& op, const Source& x, detail::Need need) {
  const std::vector<int64_t>& in_shape = x.shape();
  const ReduceAttrs a = read_reduce(op, static_cast<int64_t>(in_shape.size()));
  const ReduceMap map(op, a, in_shape);
  const int64_t n_out = map.n_out, n = map.n;
  const DType in_dt = x.dtype(), out_dt = op.results[0]->type.dtype;

  // Per output: acc is the running result; abs_in is sum (or product, for
  // prod) of |x|+t, the tolerance's magnitude; err_in is the carried input
  // error (sum of t, or max of t for max/min).
  double init = 0;
  if (a.kind == Kind::Max) init = -kInf;
  if (a.kind == Kind::Min) init = kInf;
  if (a.kind == Kind::Prod) init = 1;
  Doubles acc(n_out, init), abs_in(n_out, a.kind == Kind::Prod ? 1.0 : 0.0), err_in(n_out, 0.0);

  const int64_t numel = product(in_shape);
  OutputOdometer walk{in_shape, map.out_stride};
  for (int64_t i = 0; i < numel; ++i, walk.next()) {
    const int64_t o = walk.o;
    const double v = detail::needed(need, o) ? x.at(i) : 0.0, t = detail::needed(need, o) ? x.tol(i) : 0.0;
    const double m = std::fabs(v) + t;
    switch (a.kind) {
      case Kind::Sum:
      case Kind::Mean:
        acc[o] += v;
        abs_in[o] += m;
        err_in[o] += t;
        break;
      case Kind::Prod:
        acc[o] *= v;
        abs_in[o] *= m;
        break;
      // Once NaN, stays NaN: `v > NaN` is false.
      case Kind::Max:
        if (std::isnan(v) || v > acc[o]) acc[o] = v;
        err_in[o] = std::max(err_in[o], t);
        break;
      case Kind::Min:
        if (std::isnan(v) || v < acc[o]) acc[o] = v;
        err_in[o] = std::max(err_in[o], t);
        break;
    }
  }

  Expected e;
  e.shape = map.out_shape;
  e.dtype = out_dt;
  e.value.resize(n_out);
  e.tolerance.resize(n_out);
  for (int64_t j = 0; j < n_out; ++j) {
    if (!detail::needed(need, j)) {
      e.value[j] = e.tolerance[j] = 0;
      continue;
    }
    double v = acc[j], tol = 0;
    switch (a.kind) {
      case Kind::Sum: tol = sum_tolerance(n, abs_in[j], err_in[j], v, in_dt, out_dt); break;
      case Kind::Mean:
        v = n > 0 ? v / static_cast<double>(n) : kNaN;
        tol = mean_tolerance(n, abs_in[j], err_in[j], v, in_dt, out_dt);
        break;
      case Kind::Prod:
        // |acc| is exactly the product of |x| (rounding is sign-symmetric), so
        // abs_in - |acc| = prod(|x|+t) - prod|x|, the carried error.
        tol = prod_tolerance(n, abs_in[j], abs_in[j] - std::fabs(v), v, in_dt, out_dt);
        break;
      case Kind::Max:
      case Kind::Min:
        if (n == 0) v = kNaN;  // no identity; the compiler rejects this case anyway
        tol = extremum_tolerance(err_in[j], v, in_dt, out_dt);
        break;
    }
    e.value[j] = v;
    e.tolerance[j] = tol;
  }
  return e;
}

// Demand of a reduce: an output needs every input element reduced into it.
void demand_reduce(const ir::Op& op, const std::vector<int64_t>& in_shape, const uint8_t* need,
                   std::vector<uint8_t>& in_need) {
  detail::expect_arity(op, 1);
  const ReduceMap map(op, read_reduce(op, static_cast<int64_t>(in_shape.size())), in_shape);
  const int64_t numel = product(in_shape);
  OutputOdometer walk{in_shape, map.out_stride};
  for (int64_t i = 0; i < numel; ++i, walk.next())
    if (need[walk.o]) in_need[i] = 1;
}

// The backward pass of a sampled evaluation: which elements of every value the
// sampled results need, op by op from the last up. A value no needed element
// depends on is absent: it is not evaluated at all.
std::unordered_map<const ir::Value*, std::vector<uint8_t>> demand(const std::vector<const ir::Op*>& ops,
                                                                  const std::vector<const ir::Value*>& results,
                                                                  const std::vector<std::vector<uint8_t>>& sample) {
  std::unordered_map<const ir::Value*, std::vector<uint8_t>> need;
  auto flags_of = [&](const ir::Value* v) -> std::vector<uint8_t>& {
    auto [it, fresh] = need.try_emplace(v);
    if (fresh) it->second.assign(static_cast<size_t>(product(v->type.shape)), 0);
    return it->second;
  };
  if (sample.size() != results.size()) fail("E802", "oracle: the sample has the wrong number of results");
  for (size_t r = 0; r < results.size(); ++r) {
    std::vector<uint8_t>& f = flags_of(results[r]);
    if (!sample[r].empty() && sample[r].size() != f.size())
      fail("E802", "oracle: the sample of result " + std::to_string(r) + " has the wrong size");
    for (size_t i = 0; i < f.size(); ++i) f[i] |= sample[r].empty() ? 1 : sample[r][i];
  }
  for (size_t k = ops.size(); k-- > 0;) {
    const ir::Op& op = *ops[k];
    // Ops with several results (views, attention and its gradient, row gradients): flags per result.
    if (detail::is_view(op) || detail::is_attention(op) || detail::is_attention_grad(op) || detail::is_row_grad(op)) {
      std::vector<const uint8_t*> flags;
      for (auto& r : op.results) flags.push_back(need.count(r.get()) ? need.at(r.get()).data() : nullptr);
      if (std::all_of(flags.begin(), flags.end(), [](const uint8_t* f) { return f == nullptr; })) continue;
      const size_t grad_operands = op.name == "tessera.softmax_grad" || op.name == "tessera.log_softmax_grad" ? 2u : 3u;
      const size_t operands = detail::is_view(op)             ? 1u
                              : detail::is_attention(op)      ? 3u
                              : detail::is_attention_grad(op) ? 6u
                                                              : grad_operands;
      if (op.operands.size() != operands) continue;  // evaluation refuses it with E802
      std::vector<std::vector<uint8_t>> in_need;
      for (const ir::Value* v : op.operands) in_need.emplace_back(static_cast<size_t>(product(v->type.shape)), 0);
      if (detail::is_view(op)) detail::demand_view(op, flags, in_need[0]);
      else if (detail::is_attention(op)) detail::demand_attention(op, flags, in_need);
      else if (detail::is_attention_grad(op)) detail::demand_attention_grad(op, flags, in_need);
      else detail::demand_row_grad(op, flags, in_need);
      for (size_t o = 0; o < op.operands.size(); ++o) {
        std::vector<uint8_t>& f = flags_of(op.operands[o]);
        for (size_t i = 0; i < f.size(); ++i) f[i] |= in_need[o][i];
      }
      continue;
    }
    if (op.results.size() != 1) continue;  // evaluation refuses it with E802
    auto it = need.find(op.result());
    if (it == need.end()) continue;
    std::vector<std::vector<int64_t>> shapes;
    std::vector<std::vector<uint8_t>> in_need;
    for (const ir::Value* v : op.operands) {
      shapes.push_back(v->type.shape);
      in_need.emplace_back(static_cast<size_t>(product(v->type.shape)), 0);
    }
    const uint8_t* out = it->second.data();
    if (op.name == "tessera.reduce") {
      demand_reduce(op, shapes[0], out, in_need[0]);
    } else if (!detail::demand_concat(op, out, in_need) && !detail::demand_index(op, out, in_need) &&
               !detail::demand_pointwise(op, shapes, out, in_need) &&
               !detail::demand_row_op(op, shapes, out, in_need) && !detail::demand_matmul(op, shapes, out, in_need) &&
               !detail::demand_arg_reduce(op, shapes, out, in_need)) {
      continue;  // evaluation refuses the op with E802
    }
    for (size_t o = 0; o < op.operands.size(); ++o) {
      std::vector<uint8_t>& f = flags_of(op.operands[o]);
      for (size_t i = 0; i < f.size(); ++i) f[i] |= in_need[o][i];
    }
  }
  return need;
}

Expected from_tensor(const Tensor& t) {
  Expected e;
  e.shape = t.shape();
  e.dtype = t.dtype();
  const int64_t n = t.numel();
  e.value.resize(n);
  e.tolerance.assign(n, 0.0);
  for (int64_t i = 0; i < n; ++i) e.value[i] = t.get(i);
  return e;
}

std::string fmt(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string multi_index(int64_t i, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? "," : "") + std::to_string(idx[d]);
  return s + "]";
}

// One element of compare(); sets err (0 for matching NaN/inf).
bool element_ok(double v, double tol, double g, DType dt, double& err) {
  if (std::isnan(v) || std::isnan(g)) {
    bool ok = std::isnan(v) && std::isnan(g);
    err = ok ? 0 : kInf;
    return ok;
  }
  if (std::isinf(g)) {
    // Overflow is fine if some value within tolerance rounds to this infinity.
    bool ok = round_to_dtype(v + std::copysign(tol, g), dt) == g;
    err = ok ? 0 : kInf;
    return ok;
  }
  err = std::fabs(g - v);  // inf if v is infinite: a finite result never matches it
  return err <= tol;
}

}  // namespace

namespace detail {

std::vector<Expected> evaluate_ops(const std::vector<const ir::Op*>& ops,
                                   const std::unordered_map<const ir::Value*, const Tensor*>& args,
                                   const std::vector<const ir::Value*>& results,
                                   const std::vector<std::vector<uint8_t>>* sample) {
  std::unordered_map<const ir::Value*, Expected> computed;
  auto source = [&](const ir::Value* v, const SourceLoc& where) {
    Source s;
    if (auto it = args.find(v); it != args.end()) s.tensor = it->second;
    else if (auto jt = computed.find(v); jt != computed.end()) s.computed = &jt->second;
    else fail("E802", "oracle: operand %" + v->name + " has no value", where);
    return s;
  };
  // Sampled: only what the sampled results depend on (nullptr: everything).
  std::unordered_map<const ir::Value*, std::vector<uint8_t>> need;
  if (sample) need = demand(ops, results, *sample);
  // Each value is freed after its last reader (results are kept), so a deep
  // graph needs memory for a few values at a time.
  std::unordered_map<const ir::Value*, size_t> last_use;
  for (size_t k = 0; k < ops.size(); ++k)
    for (const ir::Value* v : ops[k]->operands) last_use[v] = k;
  for (const ir::Value* r : results) last_use[r] = ops.size();
  for (size_t k = 0; k < ops.size(); ++k) {
    const ir::Op* op = ops[k];
    // Ops with several results (views, attention and its gradient, row gradients): what is wanted of each.
    if (detail::is_view(*op) || detail::is_attention(*op) || detail::is_attention_grad(*op) ||
        detail::is_row_grad(*op)) {
      std::vector<Need> wanted;
      for (auto& r : op->results) {
        auto it = need.find(r.get());
        wanted.push_back(!sample ? nullptr : it == need.end() ? detail::kNothing : it->second.data());
      }
      if (sample && std::all_of(wanted.begin(), wanted.end(), [](Need w) { return w == detail::kNothing; })) continue;
      if (detail::is_view(*op) && op->operands.size() != 1)
        fail("E802", "oracle: " + op->name + ": takes one operand", op->loc);
      std::vector<Source> in;
      for (const ir::Value* v : op->operands) in.push_back(source(v, op->loc));
      std::vector<Expected> results = detail::is_view(*op)        ? detail::evaluate_view(*op, in[0], wanted)
                                      : detail::is_attention(*op) ? detail::evaluate_attention(*op, in, wanted)
                                      : detail::is_attention_grad(*op)
                                          ? detail::evaluate_attention_grad(*op, in, wanted)
                                          : detail::evaluate_row_grad(*op, in, wanted);
      for (const ir::Value* v : op->operands)
        if (last_use[v] == k) computed.erase(v);
      for (size_t r = 0; r < results.size(); ++r) computed[op->results[r].get()] = std::move(results[r]);
      continue;
    }
    Need wanted = nullptr;
    if (sample) {
      auto it = op->results.size() == 1 ? need.find(op->result()) : need.end();
      if (it == need.end()) continue;  // nothing sampled depends on it
      wanted = it->second.data();
    }
    std::vector<Source> in;
    for (const ir::Value* v : op->operands) in.push_back(source(v, op->loc));
    Expected result;
    if (op->name == "tessera.reduce") {
      expect_arity(*op, 1);
      result = reduce(*op, in[0], wanted);
    } else if (!evaluate_concat(*op, in, wanted, result) && !evaluate_index(*op, in, wanted, result) &&
               !evaluate_pointwise(*op, in, wanted, result) && !evaluate_row_op(*op, in, wanted, result) &&
               !evaluate_matmul(*op, in, wanted, result) && !evaluate_arg_reduce(*op, in, wanted, result)) {
      fail("E802",
           "oracle: cannot evaluate op '" + op->name +
               "' (it knows tessera.reduce, argmax, argmin, gather, take_along, the pointwise ops, softmax, "
               "log_softmax, layer_norm, rms_norm, their gradient ops, matmul, attention)",
           op->loc);
    }
    for (const ir::Value* v : op->operands)
      if (last_use[v] == k) computed.erase(v);
    computed[op->result()] = std::move(result);
  }
  std::vector<Expected> out;
  for (size_t r = 0; r < results.size(); ++r) {
    Source s = source(results[r], {});
    const bool again = std::find(results.begin() + static_cast<std::ptrdiff_t>(r) + 1, results.end(), results[r]) !=
                       results.end();
    // A result returned twice is copied; the last (or only) return takes it.
    if (s.tensor) out.push_back(from_tensor(*s.tensor));
    else if (again) out.push_back(*s.computed);
    else out.push_back(std::move(computed[results[r]]));
    if (sample) out.back().sampled = (*sample)[r];
  }
  return out;
}

}  // namespace detail

std::vector<Expected> evaluate(const ir::Module& graph, const std::string& func, const std::vector<Tensor>& inputs,
                               const std::vector<std::vector<uint8_t>>* sample) {
  const ir::Op& f = detail::pick_func(graph, func);
  const ir::Region& body = *f.regions[0];

  if (inputs.size() != body.args.size())
    fail("E801", "oracle: @" + f.sym + " takes " + std::to_string(body.args.size()) + " inputs, got " +
                     std::to_string(inputs.size()));
  std::unordered_map<const ir::Value*, const Tensor*> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Type& t = body.args[i]->type;
    if (!t.is_tensor()) fail("E802", "oracle: argument %" + body.args[i]->name + " is not a tensor", f.loc);
    const Tensor& in = inputs[i];
    if (in.shape() != t.shape || in.dtype() != t.dtype || !in.valid())
      fail("E801", "oracle: input " + std::to_string(i) + " (%" + body.args[i]->name + ") is " +
                       (in.valid() ? in.type_string() : std::string("an unallocated tensor")) + " but @" + f.sym +
                       " takes " + t.str());
    args[body.args[i].get()] = &in;
  }
  std::vector<const ir::Op*> ops;
  for (const auto& op : body.ops) {
    if (op->name != "return") {
      ops.push_back(op.get());
      continue;
    }
    const std::vector<const ir::Value*> results(op->operands.begin(), op->operands.end());
    return detail::evaluate_ops(ops, args, results, sample);
  }
  fail("E802", "oracle: func @" + f.sym + " has no return", f.loc);
}

Comparison compare(const Expected& e, const Tensor& got) {
  Comparison c;
  const int64_t n = static_cast<int64_t>(e.value.size());
  if (got.shape() != e.shape || got.dtype() != e.dtype || !got.valid()) {
    c.pass = false;
    c.failures = std::max<int64_t>(n, 1);
    c.max_abs_err = c.worst_ratio = kInf;
    c.first_failure = "got " + (got.valid() ? got.type_string() : std::string("an unallocated tensor")) +
                      ", expected " + type_string(e.shape, e.dtype);
    return c;
  }
  if (!e.sampled.empty() && static_cast<int64_t>(e.sampled.size()) != n)
    fail("E802", "oracle: the sample does not match the result's size");
  for (int64_t i = 0; i < n; ++i) {
    if (!e.sampled.empty() && !e.sampled[i]) continue;
    ++c.compared;
    const double v = e.value[i], tol = e.tolerance[i], g = got.get(i);
    c.unbounded += std::isinf(tol);
    double err = 0;
    const bool ok = element_ok(v, tol, g, e.dtype, err);
    double ratio = err == 0 ? 0 : (tol > 0 ? err / tol : kInf);
    if (std::isnan(ratio)) ratio = ok ? 0 : kInf;  // inf/inf
    c.max_abs_err = std::max(c.max_abs_err, err);
    if (c.worst_index < 0 || ratio > c.worst_ratio) {
      c.worst_index = i;
      c.worst_ratio = ratio;
      c.tol_at_worst = tol;
    }
    if (!ok) {
      if (c.failures == 0)
        c.first_failure = "index " + std::to_string(i) + " " + multi_index(i, e.shape) + ": got " + fmt(g) +
                          ", expected " + fmt(v) + ", tol " + fmt(tol);
      ++c.failures;
    }
  }
  c.pass = c.failures == 0;
  return c;
}

Tensor to_tensor(const Expected& e) {
  Tensor t = Tensor::empty(e.dtype, e.shape);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) t.set(i, round_to_dtype(e.value[i], e.dtype));
  return t;
}

}  // namespace tessera::oracle
