#include "passes/autodiff.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ir/graph_dialect.hpp"
#include "passes/simplify.hpp"

namespace tessera::passes {

using namespace ir;

namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // the normal density's 1/sqrt(2 pi)
constexpr double kSqrtTwoOverPi = 0.79788456080286535588;

// Appends typed Graph IR ops to the grad func. Each carries the location of
// the forward op it differentiates, so an error in a backward op points at
// the program.
class Emitter {
 public:
  Emitter(Region& body, std::set<std::string> taken) : body_(body), taken_(std::move(taken)) {}
  SourceLoc loc;

  Value* op(const std::string& name, std::vector<Value*> operands, AttrDict attrs, Type type) {
    return op_n(name, std::move(operands), std::move(attrs), {std::move(type)})[0];
  }
  std::vector<Value*> op_n(const std::string& name, std::vector<Value*> operands, AttrDict attrs,
                           const std::vector<Type>& types) {
    Builder b(body_);
    Op& o = b.create(name, std::move(operands), std::move(attrs));
    o.loc = loc;
    std::vector<Value*> results;
    for (const Type& t : types) results.push_back(o.add_result(fresh_name(), t));
    return results;
  }
  // A result added to a forward op (a value the backward needs saved).
  Value* add_result(Op& o, Type t) { return o.add_result(fresh_name(), std::move(t)); }
  Value* constant(double value, DType d) {
    return op("tessera.constant", {}, {{"value", Attr(value)}}, Type::tensor(d, {}));
  }
  Value* zeros(const Type& t) { return broadcast_to(constant(0, t.dtype), t.shape); }
  Value* unary(const std::string& fn, Value* x) { return op("tessera." + fn, {x}, {}, x->type); }
  Value* binary(const std::string& fn, Value* a, Value* b) {
    const DType d = is_comparison_op("tessera." + fn) ? DType::I1 : a->type.dtype;
    return op("tessera." + fn, {a, b}, {}, Type::tensor(d, broadcast_shapes(a->type.shape, b->type.shape, loc)));
  }
  Value* scaled(Value* x, double c) { return binary("mul", x, constant(c, x->type.dtype)); }
  Value* where(Value* c, Value* a, Value* b) {
    const auto shape = broadcast_shapes(broadcast_shapes(c->type.shape, a->type.shape, loc), b->type.shape, loc);
    return op("tessera.where", {c, a, b}, {}, Type::tensor(a->type.dtype, shape));
  }
  // g where c holds, else 0 (or the reverse with `keep` false)
  Value* masked(Value* c, Value* g, bool keep = true) {
    Value* zero = constant(0, g->type.dtype);
    return keep ? where(c, g, zero) : where(c, zero, g);
  }
  Value* cast(Value* x, DType d) {
    return x->type.dtype == d ? x : op("tessera.cast", {x}, {}, Type::tensor(d, x->type.shape));
  }
  Value* reshape(Value* x, const std::vector<int64_t>& shape) {
    return x->type.shape == shape ? x : op("tessera.reshape", {x}, {}, Type::tensor(x->type.dtype, shape));
  }
  Value* broadcast_to(Value* x, const std::vector<int64_t>& shape) {
    return x->type.shape == shape ? x : op("tessera.broadcast_to", {x}, {}, Type::tensor(x->type.dtype, shape));
  }
  Value* transpose(Value* x, const std::vector<int64_t>& perm) {
    std::vector<int64_t> shape;
    for (int64_t p : perm) shape.push_back(x->type.shape[p]);
    return op("tessera.transpose", {x}, {{"perm", Attr::ints(perm)}}, Type::tensor(x->type.dtype, shape));
  }
  Value* reduce(Value* x, const std::string& kind, const std::vector<int64_t>& axes, bool keepdims) {
    const ReduceSpec s = make_reduce_spec(kind, axes, keepdims, x->type, loc);
    AttrDict attrs{{"kind", Attr(kind)}, {"axes", Attr::ints(s.axes)}};
    if (keepdims) attrs["keepdims"] = Attr(true);
    return op("tessera.reduce", {x}, std::move(attrs), reduce_result_type(x->type, s));
  }
  Value* matmul(Value* a, Value* b, bool ta, bool tb) {
    const auto &sa = a->type.shape, &sb = b->type.shape;
    std::vector<int64_t> shape = broadcast_shapes({sa.begin(), sa.end() - 2}, {sb.begin(), sb.end() - 2}, loc);
    shape.push_back(sa[sa.size() - (ta ? 1 : 2)]);
    shape.push_back(sb[sb.size() - (tb ? 2 : 1)]);
    AttrDict attrs;
    if (ta) attrs["transpose_a"] = Attr(true);
    if (tb) attrs["transpose_b"] = Attr(true);
    return op("tessera.matmul", {a, b}, std::move(attrs), Type::tensor(a->type.dtype, shape));
  }
  Value* slice_axis(Value* x, int64_t axis, int64_t begin, int64_t end) {
    std::vector<int64_t> start(x->type.rank(), 0), limit = x->type.shape, stride(x->type.rank(), 1);
    start[axis] = begin, limit[axis] = end;
    std::vector<int64_t> shape = x->type.shape;
    shape[axis] = end - begin;
    return op("tessera.slice", {x},
              {{"start", Attr::ints(start)}, {"limit", Attr::ints(limit)}, {"stride", Attr::ints(stride)}},
              Type::tensor(x->type.dtype, shape));
  }
  Value* concat(std::vector<Value*> parts, int64_t axis) {
    std::vector<int64_t> shape = parts[0]->type.shape;
    shape[axis] = 0;
    for (Value* p : parts) shape[axis] += p->type.shape[axis];
    const DType d = parts[0]->type.dtype;
    return op("tessera.concat", std::move(parts), {{"axis", Attr(axis)}}, Type::tensor(d, shape));
  }
  Value* iota(const std::vector<int64_t>& shape, int64_t axis, DType d) {
    return op("tessera.iota", {}, {{"axis", Attr(axis)}}, Type::tensor(d, shape));
  }
  // g summed over the axes numpy broadcasting added or stretched to reach
  // g's shape from `shape` (the gradient of a broadcast).
  Value* unbroadcast(Value* g, const std::vector<int64_t>& shape) {
    const auto& gs = g->type.shape;
    if (gs == shape) return g;
    const size_t lead = gs.size() - shape.size();
    std::vector<int64_t> axes;
    for (size_t d = 0; d < gs.size(); ++d)
      if (d < lead || (shape[d - lead] == 1 && gs[d] != 1)) axes.push_back(static_cast<int64_t>(d));
    return reshape(axes.empty() ? g : reduce(g, "sum", axes, true), shape);
  }
  // A reduction's result gradient spread back over its operand's shape.
  Value* spread(Value* g, const Type& x, const ReduceSpec& s) {
    std::vector<int64_t> kept = x.shape;
    for (int64_t a : s.axes) kept[a] = 1;
    return broadcast_to(reshape(g, kept), x.shape);
  }

 private:
  std::string fresh_name() {
    std::string n;
    do n = "grad" + std::to_string(next_++);
    while (taken_.count(n));
    return n;
  }

  Region& body_;
  std::set<std::string> taken_;
  int next_ = 0;
};

// Applies the vector-Jacobian rule of one forward op: adds to the adjoint of
// each operand that needs a gradient.
class Rules {
 public:
  Rules(Emitter& e, std::map<const Value*, Value*>& adj, const std::set<const Value*>& depends)
      : e_(e), adj_(adj), depends_(depends) {}

  void apply(Op& op) {
    const std::string fn = op.name.substr(op.name.find('.') + 1);
    for (Value* v : op.operands)
      if (depends_.count(v) && !is_float(v->type.dtype) && !(op.name == "tessera.where" && v == op.operands[0]))
        fail("E262",
             "tessera grad: " + op.name + " reads %" + v->name + " (" + std::string(dtype_name(v->type.dtype)) +
                 "), which depends on a differentiated argument; integer and boolean values carry no gradient "
                 "(comparisons, argmax/argmin, iota and integer casts are not differentiable)",
             op.loc);
    if (is_unary_op(op.name) || op.name == "tessera.cast") return unary(op, fn);
    if (is_binary_op(op.name)) return binary(op, fn);
    if (op.name == "tessera.where") {
      Value* g = gy(op);
      if (needs(op.operands[1])) add(op.operands[1], e_.masked(op.operands[0], g));
      if (needs(op.operands[2])) add(op.operands[2], e_.masked(op.operands[0], g, false));
      return;
    }
    if (op.name == "tessera.reduce") return reduce(op);
    if (op.name == "tessera.matmul") return matmul(op);
    if (is_row_op(op.name)) return row(op);
    if (op.name == "tessera.attention") return attention(op);
    if (op.name == "tessera.reshape") return add(op.operands[0], e_.reshape(gy(op), op.operands[0]->type.shape));
    if (op.name == "tessera.broadcast_to") return add(op.operands[0], gy(op));
    if (op.name == "tessera.transpose") {
      const std::vector<int64_t> perm = *op.attr("perm")->as_ints();
      std::vector<int64_t> inverse(perm.size());
      const int64_t rank = static_cast<int64_t>(perm.size());
      for (int64_t i = 0; i < rank; ++i) inverse[perm[i] < 0 ? perm[i] + rank : perm[i]] = i;
      return add(op.operands[0], e_.transpose(gy(op), inverse));
    }
    if (op.name == "tessera.concat") {
      const int64_t axis = concat_axis(op);
      int64_t at = 0;
      for (Value* v : op.operands) {
        const int64_t n = v->type.shape[axis];
        if (needs(v)) add(v, e_.slice_axis(gy(op), axis, at, at + n));
        at += n;
      }
      return;
    }
    if (is_index_op(op.name) || is_scatter_op(op.name)) return indexed(op);
    if (op.name == "tessera.split") {
      std::vector<Value*> parts;
      for (const auto& r : op.results) parts.push_back(adj_.count(r.get()) ? adj_.at(r.get()) : e_.zeros(r->type));
      const int64_t rank = op.operands[0]->type.rank(), axis = *op.attr("axis")->as_int();
      return add(op.operands[0], e_.concat(parts, axis < 0 ? axis + rank : axis));
    }
    not_written(op);
  }

 private:
  bool needs(const Value* v) const { return depends_.count(v) && is_float(v->type.dtype); }
  // The adjoint of the op's (first) result; rules run only for ops that have one.
  Value* gy(const Op& op) const { return adj_.at(op.result()); }
  // Accumulates g (of the op's result shape, or v's) into v's adjoint.
  void add(Value* v, Value* g) {
    if (!needs(v)) return;
    g = e_.cast(e_.unbroadcast(g, v->type.shape), v->type.dtype);
    auto [it, fresh] = adj_.emplace(v, g);
    if (!fresh) it->second = e_.binary("add", it->second, g);
  }
  [[noreturn]] static void not_written(const Op& op) {
    fail("E263",
         "tessera grad: no gradient rule for " + op.name + " yet (docs/semantics.md, \"Gradients\", lists them)",
         op.loc);
  }

  // gather / take_along: each element of g goes back to where its index
  // points. gather's is its transpose, scatter_add (one pass over g); and
  // scatter_add's is a gather. take_along's (a label's logit: one index a
  // row) is dense: with a new axis J of x's extent n beside the index dims K,
  // dx = sum over K of where(index == iota along J, g, 0), which costs the
  // result's size times n.
  void indexed(const Op& op) {
    Value *x = op.operands[0], *idx = op.operands[1];
    if (!needs(x)) return;
    if (is_scatter_op(op.name)) {
      const IndexSpec s = scatter_spec(op);
      return add(x, e_.op("tessera.gather", {gy(op), idx}, {{"axis", Attr(s.axis)}}, x->type));
    }
    const IndexSpec s = index_spec(op);
    if (!s.along) return add(x, e_.op("tessera.scatter_add", {gy(op), idx}, {{"axis", Attr(s.axis)}}, x->type));
    const int64_t q = s.along ? 1 : idx->type.rank();  // the index dims K in the result: [axis, axis + q)
    const int64_t j = s.axis + q;                      // where J goes
    auto with_j = [&](std::vector<int64_t> shape, int64_t extent) {
      shape.insert(shape.begin() + j, extent);
      return shape;
    };
    Value* g = e_.reshape(gy(op), with_j(op.result()->type.shape, 1));
    // the indices placed at K (take: between x's leading and trailing dims), wrapped into [0, n)
    std::vector<int64_t> ishape(op.result()->type.rank(), 1);
    if (s.along) ishape = idx->type.shape;
    else std::copy(idx->type.shape.begin(), idx->type.shape.end(), ishape.begin() + s.axis);
    Value* i = e_.reshape(idx, with_j(ishape, 1));
    const DType d = idx->type.dtype;
    i = e_.where(e_.binary("lt", i, e_.constant(0, d)), e_.binary("add", i, e_.constant(s.extent, d)), i);
    Value* at = e_.iota(with_j(std::vector<int64_t>(op.result()->type.rank(), 1), s.extent), j, d);
    Value* hits = e_.masked(e_.binary("eq", i, at), g);
    std::vector<int64_t> k;
    for (int64_t a = s.axis; a < s.axis + q; ++a) k.push_back(a);
    add(x, k.empty() ? hits : e_.reduce(hits, "sum", k, false));  // (a rank-0 index: hits has x's shape)
  }

  void unary(const Op& op, const std::string& fn) {
    Value *x = op.operands[0], *y = op.result(), *g = gy(op);
    auto c = [&](double v) { return e_.constant(v, x->type.dtype); };
    auto mul = [&](Value* a, Value* b) { return e_.binary("mul", a, b); };
    Value* dx = nullptr;
    if (fn == "neg") dx = e_.unary("neg", g);
    else if (fn == "exp") dx = mul(g, y);
    else if (fn == "exp2") dx = mul(mul(g, y), c(kLn2));
    else if (fn == "log") dx = e_.binary("div", g, x);
    else if (fn == "log2") dx = e_.binary("div", g, mul(x, c(kLn2)));
    else if (fn == "sqrt") dx = e_.binary("div", mul(g, c(0.5)), y);
    else if (fn == "rsqrt") dx = mul(mul(g, c(-0.5)), e_.binary("div", y, x));
    else if (fn == "tanh") dx = mul(g, e_.binary("sub", c(1), mul(y, y)));
    else if (fn == "sigmoid") dx = mul(g, mul(y, e_.binary("sub", c(1), y)));
    else if (fn == "relu") dx = e_.masked(e_.binary("gt", x, c(0)), g);
    else if (fn == "silu") {
      Value* s = e_.unary("sigmoid", x);
      dx = mul(g, mul(s, e_.binary("add", c(1), mul(x, e_.binary("sub", c(1), s)))));
    } else if (fn == "gelu") {
      const Attr* form = op.attr("approximate");
      if (form && form->as_string() && *form->as_string() == "tanh") {
        // y = x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3):
        // y' = (1 + t)/2 + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
        Value* x2 = mul(x, x);
        Value* t = e_.unary("tanh", mul(c(kSqrtTwoOverPi), mul(x, e_.binary("add", c(1), mul(c(0.044715), x2)))));
        Value* du = mul(c(kSqrtTwoOverPi), e_.binary("add", c(1), mul(c(3 * 0.044715), x2)));
        Value* dt = mul(mul(c(0.5), x), mul(e_.binary("sub", c(1), mul(t, t)), du));
        dx = mul(g, e_.binary("add", mul(c(0.5), e_.binary("add", c(1), t)), dt));
      } else {  // y = x Phi(x): y' = Phi(x) + x phi(x)
        Value* cdf = mul(c(0.5), e_.binary("add", c(1), e_.unary("erf", mul(x, c(kSqrtHalf)))));
        Value* pdf = mul(c(kInvSqrt2Pi), e_.unary("exp", mul(c(-0.5), mul(x, x))));
        dx = mul(g, e_.binary("add", cdf, mul(x, pdf)));
      }
    } else if (fn == "sin") dx = mul(g, e_.unary("cos", x));
    else if (fn == "cos") dx = e_.unary("neg", mul(g, e_.unary("sin", x)));
    else if (fn == "erf") dx = mul(g, mul(c(kTwoOverSqrtPi), e_.unary("exp", e_.unary("neg", mul(x, x)))));
    else if (fn == "abs")
      dx = e_.where(e_.binary("gt", x, c(0)), g, e_.masked(e_.binary("lt", x, c(0)), e_.unary("neg", g)));
    else if (fn == "clamp") {
      // The gradient passes where x is within the bounds (NaN: nowhere).
      const ClampBounds b = clamp_bounds(op);
      Value* inside = std::isinf(b.lo) ? e_.binary("eq", x, x) : e_.binary("ge", x, c(b.lo));
      if (!std::isinf(b.hi)) inside = e_.binary("and", inside, e_.binary("le", x, c(b.hi)));
      dx = e_.masked(inside, g);
    } else if (fn == "cast") dx = g;  // float to float (integers were refused above)
    else if (fn == "floor" || fn == "ceil" || fn == "round")
      fail("E262", "tessera grad: " + op.name + " is piecewise constant: it has no gradient", op.loc);
    else not_written(op);
    add(x, dx);
  }

  void binary(const Op& op, const std::string& fn) {
    Value *a = op.operands[0], *b = op.operands[1], *y = op.result(), *g = gy(op);
    // Each operand's term is emitted only where that operand needs it.
    if (fn == "add") add(a, g), add(b, g);
    else if (fn == "sub") add(a, g), needs(b) ? add(b, e_.unary("neg", g)) : void();
    else if (fn == "mul") {
      if (needs(a)) add(a, e_.binary("mul", g, b));
      if (needs(b)) add(b, e_.binary("mul", g, a));
    } else if (fn == "div") {
      if (needs(a)) add(a, e_.binary("div", g, b));
      if (needs(b)) add(b, e_.unary("neg", e_.binary("div", e_.binary("mul", g, y), b)));
    } else if (fn == "pow") {
      // As torch: b a^(b-1) (0 where b == 0), and a^b log(a) (0 where a == 0 and b >= 0).
      Value* zero = e_.constant(0, a->type.dtype);
      if (needs(a)) {
        Value* d = e_.binary("mul", b, e_.binary("pow", a, e_.binary("sub", b, e_.constant(1, b->type.dtype))));
        add(a, e_.masked(e_.binary("eq", b, zero), e_.binary("mul", g, d), false));
      }
      if (needs(b)) {
        Value* flat = e_.binary("and", e_.binary("eq", a, zero), e_.binary("ge", b, zero));
        add(b, e_.masked(flat, e_.binary("mul", g, e_.binary("mul", y, e_.unary("log", a))), false));
      }
    } else if (fn == "max" || fn == "min") {
      // A tie (and a NaN, which no comparison holds for) sends the gradient to a.
      Value* to_b = e_.binary(fn == "max" ? "lt" : "gt", a, b);
      if (needs(a)) add(a, e_.masked(to_b, g, false));
      if (needs(b)) add(b, e_.masked(to_b, g));
    } else not_written(op);
  }

  void reduce(const Op& op) {
    const ReduceSpec s = reduce_spec(op);
    Value *x = op.operands[0], *g = gy(op);
    if (s.kind == ReduceKind::Sum) return add(x, e_.spread(g, x->type, s));
    if (s.kind == ReduceKind::Mean) {
      double n = 1;
      for (int64_t a : s.axes) n *= static_cast<double>(x->type.shape[a]);
      return add(x, e_.spread(e_.scaled(g, 1 / n), x->type, s));
    }
    if (s.kind == ReduceKind::Max || s.kind == ReduceKind::Min) {
      // Split evenly among the elements equal to the result (as torch.amax).
      Value* at = e_.binary("eq", x, e_.spread(op.result(), x->type, s));
      Value* count = e_.reduce(e_.cast(at, x->type.dtype), "sum", s.axes, s.keepdims);
      return add(x, e_.masked(at, e_.spread(e_.binary("div", g, count), x->type, s)));
    }
    fail("E263", "tessera grad: no gradient rule for a prod reduction yet (docs/semantics.md, \"Gradients\")", op.loc);
  }

  void matmul(const Op& op) {
    const MatmulSpec s = matmul_spec(op);
    Value *a = op.operands[0], *b = op.operands[1];
    Value* g = e_.cast(gy(op), a->type.dtype);  // operands share a dtype
    // d op(A) = G op(B)^T and d op(B) = op(A)^T G, transposed back where the
    // operand is stored transposed; a shared operand sums over the batch.
    if (needs(a)) add(a, s.transpose_a ? e_.matmul(b, g, s.transpose_b, true) : e_.matmul(g, b, false, !s.transpose_b));
    if (needs(b)) add(b, s.transpose_b ? e_.matmul(g, a, true, s.transpose_a) : e_.matmul(a, g, !s.transpose_a, false));
  }

  // The row ops' gradients are ops of their own (graph_row_grad.cpp), each one
  // row kernel: softmax's and log_softmax's read the saved result y; the
  // norms' recompute their statistics from x (cheaper than saving them) and
  // give dx, dw (and db) at once.
  void row(const Op& op) {
    if (is_row_grad_op(op.name)) not_written(op);  // no second derivatives yet
    Value *x = op.operands[0], *g = gy(op);
    if (op.name == "tessera.softmax" || op.name == "tessera.log_softmax") {
      AttrDict attrs{{"axis", Attr(row_op_axis(op))}};
      return add(x, e_.op(op.name + "_grad", {op.result(), g}, std::move(attrs), x->type));
    }
    const bool layer = op.name == "tessera.layer_norm";
    Value* w = op.operands[1];
    std::vector<Type> types = {x->type, w->type};
    if (layer) types.push_back(w->type);
    const std::vector<Value*> d = e_.op_n(op.name + "_grad", {x, w, g}, {{"eps", Attr(row_op_eps(op))}}, types);
    if (needs(x)) add(x, d[0]);
    if (needs(w)) add(w, d[1]);
    if (layer && needs(op.operands[2])) add(op.operands[2], d[2]);
  }

  // Attention's gradient is one op, attention_grad, which reads the forward's
  // o and the log-sum-exp of its rows: the forward is made to save that (a
  // second result of the same op) rather than run again.
  void attention(Op& op) {
    if (op.results.size() == 2 && adj_.count(op.result(1)))
      fail("E263", "tessera grad: no gradient rule through attention's lse result yet (only through o)", op.loc);
    if (op.operands.size() == 4)
      fail("E263", "tessera grad: no gradient rule for attention with a mask operand yet (attention_grad takes none)",
           op.loc);
    Value *q = op.operands[0], *k = op.operands[1], *v = op.operands[2];
    Value* lse = op.results.size() == 2
                     ? op.result(1)
                     : e_.add_result(op, Type::tensor(attention_lse_dtype(q->type.dtype),
                                                      {q->type.shape[0], q->type.shape[1], q->type.shape[2]}));
    const std::vector<Value*> d = e_.op_n("tessera.attention_grad",
                                          {q, k, v, op.result(), e_.cast(gy(op), q->type.dtype), lse}, op.attrs,
                                          {q->type, k->type, k->type});
    add(q, d[0]);
    add(k, d[1]);
    add(v, d[2]);
  }

  Emitter& e_;
  std::map<const Value*, Value*>& adj_;
  const std::set<const Value*>& depends_;
};

}  // namespace

std::unique_ptr<Module> differentiate(const Module& graph, const std::string& func,
                                      const std::vector<std::string>& wrt) {
  verify_graph(graph);
  std::unique_ptr<Module> m = clone(graph);
  Op* f = func.empty() ? m->funcs().at(0) : m->lookup(func);
  if (!f || f->name != "func") fail("E261", "tessera grad: no func @" + func + " in the module");
  m->ops.erase(std::remove_if(m->ops.begin(), m->ops.end(), [&](const auto& op) { return op.get() != f; }),
               m->ops.end());
  Region& body = *f->regions[0];
  const std::unique_ptr<Op> ret = std::move(body.ops.back());
  body.ops.pop_back();
  if (ret->operands.empty()) fail("E260", "tessera grad: @" + f->sym + " returns nothing: there is no loss", ret->loc);
  Value* loss = ret->operands[0];
  if (loss->type.rank() != 0 || !is_float(loss->type.dtype))
    fail("E260",
         "tessera grad: the loss (the first result of @" + f->sym + ") must be a rank-0 float tensor, got " +
             loss->type.str() + " (reduce it first, e.g. tessera.reduce {kind = \"mean\"})",
         ret->loc);

  std::vector<Value*> params;
  auto arg_names = [&] {
    std::string s;
    for (const auto& a : body.args) s += (s.empty() ? "%" : ", %") + a->name;
    return s;
  };
  for (const std::string& name : wrt) {
    auto it = std::find_if(body.args.begin(), body.args.end(), [&](const auto& a) { return a->name == name; });
    if (it == body.args.end())
      fail("E261", "tessera grad: @" + f->sym + " has no argument %" + name + " (its arguments: " + arg_names() + ")");
    if (!is_float((*it)->type.dtype))
      fail("E261", "tessera grad: %" + name + " is " + (*it)->type.str() + "; gradients are for float arguments");
    if (std::find(params.begin(), params.end(), it->get()) != params.end())
      fail("E261", "tessera grad: %" + name + " is named twice");
    params.push_back(it->get());
  }
  if (wrt.empty())
    for (const auto& a : body.args)
      if (is_float(a->type.dtype)) params.push_back(a.get());

  // Values that depend on a differentiated argument (only they get adjoints).
  std::set<const Value*> depends(params.begin(), params.end());
  std::set<std::string> names;
  for (const auto& a : body.args) names.insert(a->name);
  std::vector<Op*> forward;
  for (const auto& op : body.ops) {
    forward.push_back(op.get());
    const bool reached = std::any_of(op->operands.begin(), op->operands.end(),
                                     [&](Value* v) { return depends.count(v); });
    for (const auto& r : op->results) {
      names.insert(r->name);
      if (reached) depends.insert(r.get());
    }
  }

  Emitter e(body, names);
  std::map<const Value*, Value*> adj;
  e.loc = ret->loc;
  if (depends.count(loss)) adj[loss] = e.constant(1, loss->type.dtype);
  Rules rules(e, adj, depends);
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    Op& op = **it;
    if (std::none_of(op.results.begin(), op.results.end(), [&](const auto& r) { return adj.count(r.get()); })) continue;
    e.loc = op.loc;
    rules.apply(op);
  }

  e.loc = ret->loc;
  std::vector<Value*> outs = {loss};
  for (Value* p : params) outs.push_back(adj.count(p) ? adj.at(p) : e.zeros(p->type));
  Builder(body).create("return", outs).loc = ret->loc;
  AttrList results;
  for (Value* v : outs) results.emplace_back(v->type);
  f->attrs["result_types"] = Attr(std::move(results));
  f->sym += "_grad";
  simplify(*m);  // the seed's broadcast 1 and what it multiplies
  verify_graph(*m);
  return m;
}

}  // namespace tessera::passes
