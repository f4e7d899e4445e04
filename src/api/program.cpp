#include "tessera/tessera.hpp"

#include <cmath>
#include <unordered_map>

#include "ir/graph_dialect.hpp"
#include "ir/ir.hpp"
#include "ir/parser.hpp"
#include "ir/printer.hpp"
#include "ir/target_dialect.hpp"
#include "ir/verify.hpp"
#include "passes/pipeline.hpp"
#include "runtime/executable.hpp"
#include "runtime/tensor.hpp"
#include "targets/device_query.hpp"
#include "targets/lane.hpp"

namespace tessera {

using namespace tessera::ir;

GraphBuilder::GraphBuilder(const std::string& func_name) : m_(std::make_unique<Module>()) {
  func_ = &add_func(*m_, func_name, {}, {});
}

// Out of line: ir::Module is incomplete in the public header.
GraphBuilder::GraphBuilder(GraphBuilder&&) noexcept = default;
GraphBuilder& GraphBuilder::operator=(GraphBuilder&&) noexcept = default;
GraphBuilder::~GraphBuilder() = default;

Value* GraphBuilder::input(const std::string& name, const Type& type) {
  if (finished_) fail("E130", "GraphBuilder: module() was already called");
  if (!type.is_tensor()) fail("E207", "func inputs must be tensors, got " + type.str());
  for (auto& a : func_->regions[0]->args)
    if (a->name == name) fail("E102", "GraphBuilder: input '" + name + "' defined twice");
  return func_->regions[0]->add_arg(name, type);
}

Value* GraphBuilder::reduce(Value* x, const std::string& kind, std::vector<int64_t> axes, bool keepdims) {
  if (finished_) fail("E130", "GraphBuilder: module() was already called");
  ReduceSpec spec = make_reduce_spec(kind, axes, keepdims, x->type);
  Builder b(*func_->regions[0]);
  AttrDict attrs{{"kind", Attr(kind)}, {"axes", Attr::ints(axes)}};
  if (keepdims) attrs["keepdims"] = Attr(true);
  Op& op = b.create("tessera.reduce", {x}, attrs);
  return op.add_result("r" + std::to_string(next_++), reduce_result_type(x->type, spec));
}

Value* GraphBuilder::arg_reduce(Value* x, bool max, int64_t axis, bool keepdims) {
  if (finished_) fail("E130", "GraphBuilder: module() was already called");
  std::vector<int64_t> shape;
  const int64_t a = axis < 0 ? axis + x->type.rank() : axis;
  for (int64_t d = 0; d < x->type.rank(); ++d)
    if (d != a) shape.push_back(x->type.shape[d]);
    else if (keepdims) shape.push_back(1);
  AttrDict attrs{{"axis", Attr(axis)}};
  if (keepdims) attrs["keepdims"] = Attr(true);
  Builder b(*func_->regions[0]);
  Op& op = b.create(max ? "tessera.argmax" : "tessera.argmin", {x}, attrs);
  op.add_result("r" + std::to_string(next_++), Type::tensor(DType::I64, shape));
  try {
    arg_reduce_spec(op);
  } catch (...) {
    func_->regions[0]->ops.pop_back();  // leave the func as it was
    throw;
  }
  return op.result();
}

Value* GraphBuilder::reduce_all(Value* x, const std::string& kind, bool keepdims) {
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < x->type.rank(); ++i) axes.push_back(i);
  return reduce(x, kind, axes, keepdims);
}

Value* GraphBuilder::add(const std::string& name, std::vector<Value*> operands, AttrDict attrs, const Type& result) {
  return add_n(name, std::move(operands), std::move(attrs), {result})[0];
}

std::vector<Value*> GraphBuilder::add_n(const std::string& name, std::vector<Value*> operands, AttrDict attrs,
                                        const std::vector<Type>& results) {
  if (finished_) fail("E130", "GraphBuilder: module() was already called");
  Builder b(*func_->regions[0]);
  Op& op = b.create(name, std::move(operands), std::move(attrs));
  std::vector<Value*> v;
  for (const Type& t : results) v.push_back(op.add_result("r" + std::to_string(next_++), t));
  try {
    if (name == "tessera.matmul") matmul_spec(op);
    else if (is_view_op(name)) verify_view_op(op);
    else if (is_scatter_op(name)) scatter_spec(op);
    else verify_pointwise_or_row_op(op);
  } catch (...) {
    func_->regions[0]->ops.pop_back();  // leave the func as it was
    throw;
  }
  return v;
}

Value* GraphBuilder::unary(const std::string& fn, Value* x) {
  if (fn == "gelu_tanh") return add("tessera.gelu", {x}, {{"approximate", Attr("tanh")}}, x->type);
  return add("tessera." + fn, {x}, {}, x->type);
}

Value* GraphBuilder::binary(const std::string& fn, Value* a, Value* b) {
  if (!a->type.is_tensor() || !b->type.is_tensor()) fail("E207", "tessera." + fn + " takes tensors");
  const DType result = is_comparison_op("tessera." + fn) ? DType::I1 : a->type.dtype;
  return add("tessera." + fn, {a, b}, {}, Type::tensor(result, broadcast_shapes(a->type.shape, b->type.shape)));
}

Value* GraphBuilder::where(Value* c, Value* a, Value* b) {
  for (Value* v : {c, a, b})
    if (!v->type.is_tensor()) fail("E207", "tessera.where takes tensors");
  const std::vector<int64_t> shape = broadcast_shapes(broadcast_shapes(c->type.shape, a->type.shape), b->type.shape);
  return add("tessera.where", {c, a, b}, {}, Type::tensor(a->type.dtype, shape));
}

Value* GraphBuilder::reshape(Value* x, std::vector<int64_t> shape) {
  return add("tessera.reshape", {x}, {}, Type::tensor(x->type.dtype, std::move(shape)));
}

Value* GraphBuilder::transpose(Value* x, std::vector<int64_t> perm) {
  std::vector<int64_t> shape;
  const int64_t rank = x->type.rank();
  for (int64_t p : perm) {
    const int64_t d = p < 0 ? p + rank : p;
    if (d < 0 || d >= rank)
      fail("E216", "tessera.transpose: 'perm' " + std::to_string(p) + " is not an axis of " + x->type.str());
    shape.push_back(x->type.shape[d]);
  }
  return add("tessera.transpose", {x}, {{"perm", Attr::ints(perm)}}, Type::tensor(x->type.dtype, shape));
}

Value* GraphBuilder::slice(Value* x, std::vector<int64_t> start, std::vector<int64_t> limit,
                           std::vector<int64_t> stride) {
  if (start.size() != limit.size() || start.size() != stride.size())
    fail("E211", "tessera.slice: start, limit and stride have one entry per axis");
  std::vector<int64_t> shape;
  for (size_t d = 0; d < start.size(); ++d)
    shape.push_back(stride[d] > 0 && limit[d] > start[d] ? (limit[d] - start[d] + stride[d] - 1) / stride[d] : 0);
  return add("tessera.slice", {x},
             {{"start", Attr::ints(start)}, {"limit", Attr::ints(limit)}, {"stride", Attr::ints(stride)}},
             Type::tensor(x->type.dtype, shape));
}

Value* GraphBuilder::broadcast_to(Value* x, std::vector<int64_t> shape) {
  return add("tessera.broadcast_to", {x}, {}, Type::tensor(x->type.dtype, std::move(shape)));
}

std::vector<Value*> GraphBuilder::split(Value* x, int64_t axis, std::vector<int64_t> sizes) {
  if (finished_) fail("E130", "GraphBuilder: module() was already called");
  const int64_t rank = x->type.rank(), a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    fail("E203", "tessera.split: axis " + std::to_string(axis) + " is out of range for " + x->type.str());
  Builder b(*func_->regions[0]);
  Op& op = b.create("tessera.split", {x}, {{"axis", Attr(axis)}, {"sizes", Attr::ints(sizes)}});
  std::vector<Value*> parts;
  for (int64_t n : sizes) {
    std::vector<int64_t> shape = x->type.shape;
    shape[a] = n;
    parts.push_back(op.add_result("r" + std::to_string(next_++), Type::tensor(x->type.dtype, shape)));
  }
  try {
    verify_view_op(op);
  } catch (...) {
    func_->regions[0]->ops.pop_back();
    throw;
  }
  return parts;
}

Value* GraphBuilder::concat(std::vector<Value*> parts, int64_t axis) {
  if (parts.empty()) fail("E205", "tessera.concat takes one or more operands");
  const int64_t rank = parts[0]->type.rank(), a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) fail("E203", "tessera.concat: axis " + std::to_string(axis) + " is out of range");
  std::vector<int64_t> shape = parts[0]->type.shape;
  shape[a] = 0;
  for (Value* v : parts) shape[a] += v->type.rank() == rank ? v->type.shape[a] : 0;
  const DType dtype = parts[0]->type.dtype;
  return add("tessera.concat", std::move(parts), {{"axis", Attr(axis)}}, Type::tensor(dtype, shape));
}

namespace {
std::pair<std::string, int64_t> index_op(bool along, const Value* x, const Value* idx, int64_t axis) {
  const std::string name = along ? "tessera.take_along" : "tessera.gather";
  if (!x->type.is_tensor() || !idx->type.is_tensor()) fail("E207", name + " takes tensors");
  const int64_t rank = x->type.rank(), a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    fail("E203", name + ": axis " + std::to_string(axis) + " is out of range for " + x->type.str());
  return {name, a};
}
}  // namespace

Value* GraphBuilder::gather(Value* x, Value* indices, int64_t axis) {
  const auto [name, a] = index_op(false, x, indices, axis);
  return add(name, {x, indices}, {{"axis", Attr(axis)}}, index_result_type(false, x->type, indices->type, a));
}

Value* GraphBuilder::take_along(Value* x, Value* indices, int64_t axis) {
  const auto [name, a] = index_op(true, x, indices, axis);
  return add(name, {x, indices}, {{"axis", Attr(axis)}}, index_result_type(true, x->type, indices->type, a));
}
Value* GraphBuilder::scatter_add(Value* g, Value* indices, int64_t axis, const Type& result) {
  return add("tessera.scatter_add", {g, indices}, {{"axis", Attr(axis)}}, result);
}

Value* GraphBuilder::iota(const Type& type, int64_t axis) {
  return add("tessera.iota", {}, {{"axis", Attr(axis)}}, type);
}

Value* GraphBuilder::clamp(Value* x, double lo, double hi) {
  AttrDict attrs;
  if (!std::isinf(lo) || lo > 0) attrs["min"] = Attr(lo);  // -inf: no lower bound
  if (!std::isinf(hi) || hi < 0) attrs["max"] = Attr(hi);
  if (attrs.empty()) attrs["min"] = Attr(lo);  // (-inf, inf): the op still needs a bound; x comes back
  return add("tessera.clamp", {x}, std::move(attrs), x->type);
}

Value* GraphBuilder::cast(Value* x, DType to) { return add("tessera.cast", {x}, {}, Type::tensor(to, x->type.shape)); }

Value* GraphBuilder::constant(double value, const Type& type) {
  return add("tessera.constant", {}, {{"value", Attr(value)}}, type);
}

Value* GraphBuilder::softmax(Value* x, int64_t axis) {
  return add("tessera.softmax", {x}, {{"axis", Attr(axis)}}, x->type);
}
Value* GraphBuilder::log_softmax(Value* x, int64_t axis) {
  return add("tessera.log_softmax", {x}, {{"axis", Attr(axis)}}, x->type);
}
Value* GraphBuilder::layer_norm(Value* x, Value* w, Value* b, double eps) {
  return add("tessera.layer_norm", {x, w, b}, {{"eps", Attr(eps)}}, x->type);
}
Value* GraphBuilder::rms_norm(Value* x, Value* w, double eps) {
  return add("tessera.rms_norm", {x, w}, {{"eps", Attr(eps)}}, x->type);
}
Value* GraphBuilder::softmax_grad(Value* y, Value* dy, int64_t axis) {
  return add("tessera.softmax_grad", {y, dy}, {{"axis", Attr(axis)}}, y->type);
}
Value* GraphBuilder::log_softmax_grad(Value* y, Value* dy, int64_t axis) {
  return add("tessera.log_softmax_grad", {y, dy}, {{"axis", Attr(axis)}}, y->type);
}
std::vector<Value*> GraphBuilder::layer_norm_grad(Value* x, Value* w, Value* dy, double eps) {
  return add_n("tessera.layer_norm_grad", {x, w, dy}, {{"eps", Attr(eps)}}, {x->type, w->type, w->type});
}
std::vector<Value*> GraphBuilder::rms_norm_grad(Value* x, Value* w, Value* dy, double eps) {
  return add_n("tessera.rms_norm_grad", {x, w, dy}, {{"eps", Attr(eps)}}, {x->type, w->type});
}
Value* GraphBuilder::matmul(Value* a, Value* b, DType out, bool transpose_a, bool transpose_b) {
  // The result type follows from the operands; add() verifies everything else.
  const auto &sa = a->type.shape, &sb = b->type.shape;
  if (sa.size() < 2 || sb.size() < 2) fail("E213", "tessera.matmul: operands need rank 2 or more");
  std::vector<int64_t> shape = broadcast_shapes({sa.begin(), sa.end() - 2}, {sb.begin(), sb.end() - 2});
  shape.push_back(sa[sa.size() - (transpose_a ? 1 : 2)]);
  shape.push_back(sb[sb.size() - (transpose_b ? 2 : 1)]);
  AttrDict attrs;
  if (transpose_a) attrs["transpose_a"] = true;
  if (transpose_b) attrs["transpose_b"] = true;
  return add("tessera.matmul", {a, b}, attrs, Type::tensor(out, shape));
}

std::vector<Value*> GraphBuilder::attention(Value* q, Value* k, Value* v, bool causal, double scale, bool lse,
                                            Value* mask) {
  if (finished_) fail("E130", "GraphBuilder: module() was already called");
  // q's shape gives lse's; attention_spec checks the rest
  if (!q->type.is_tensor() || q->type.rank() != 4)
    fail("E217", "tessera.attention: q, k and v are [batch, heads, sequence, head_dim] (rank 4), got " + q->type.str());
  AttrDict attrs;
  if (causal) attrs["causal"] = true;
  if (!std::isnan(scale)) attrs["scale"] = Attr(scale);
  Builder b(*func_->regions[0]);
  std::vector<Value*> operands = {q, k, v};
  if (mask) operands.push_back(mask);
  Op& op = b.create("tessera.attention", operands, attrs);
  std::vector<Value*> out = {op.add_result("r" + std::to_string(next_++), q->type)};
  if (lse) {
    const std::vector<int64_t> rows(q->type.shape.begin(), q->type.shape.end() - 1);
    out.push_back(op.add_result("r" + std::to_string(next_++), Type::tensor(attention_lse_dtype(q->type.dtype), rows)));
  }
  try {
    attention_spec(op);
  } catch (...) {
    func_->regions[0]->ops.pop_back();  // leave the func as it was
    throw;
  }
  return out;
}

std::vector<Value*> GraphBuilder::attention_grad(Value* q, Value* k, Value* v, Value* o, Value* dout, Value* lse,
                                                 bool causal, double scale) {
  if (finished_) fail("E130", "GraphBuilder: module() was already called");
  AttrDict attrs;
  if (causal) attrs["causal"] = true;
  if (!std::isnan(scale)) attrs["scale"] = Attr(scale);
  Builder b(*func_->regions[0]);
  Op& op = b.create("tessera.attention_grad", {q, k, v, o, dout, lse}, attrs);
  std::vector<Value*> out;
  for (Value* like : {q, k, k}) out.push_back(op.add_result("r" + std::to_string(next_++), like->type));
  try {
    attention_grad_spec(op);
  } catch (...) {
    func_->regions[0]->ops.pop_back();  // leave the func as it was
    throw;
  }
  return out;
}

std::vector<Value*> GraphBuilder::call(const Module& m, const std::string& func, std::vector<Value*> args) {
  if (finished_) fail("E130", "GraphBuilder: module() was already called");
  verify_graph(m);
  const Op* f = func.empty() ? m.funcs().front() : m.lookup(func);
  if (!f || f->name != "func") fail("E130", "GraphBuilder::call: no func @" + func + " in the module");
  const Region& body = *f->regions[0];
  if (args.size() != body.args.size())
    fail("E130", "GraphBuilder::call: @" + f->sym + " takes " + std::to_string(body.args.size()) + " arguments, got " +
                     std::to_string(args.size()));
  std::unordered_map<const Value*, Value*> map;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!(args[i]->type == body.args[i]->type))
      fail("E130", "GraphBuilder::call: argument " + std::to_string(i) + " of @" + f->sym + " is " +
                       body.args[i]->type.str() + ", got " + args[i]->type.str());
    map[body.args[i].get()] = args[i];
  }
  // The ops are copied as they are (the module was verified: it ends in a
  // return), renamed into this func.
  Builder b(*func_->regions[0]);
  for (const auto& op : body.ops) {
    std::vector<Value*> operands;
    for (const Value* v : op->operands) operands.push_back(map.at(v));
    if (op->name == "return") return operands;
    Op& copy = b.create(op->name, std::move(operands), op->attrs);
    copy.loc = op->loc;
    for (const auto& r : op->results) map[r.get()] = copy.add_result("r" + std::to_string(next_++), r->type);
  }
  return {};
}

void GraphBuilder::output(Value* v) { outputs_.push_back(v); }

void GraphBuilder::in_place(std::vector<int64_t> into) {
  if (finished_) fail("E130", "GraphBuilder: module() was already called");
  func_->attrs["in_place"] = Attr::ints(into);
}

const Module& GraphBuilder::module() {
  if (!finished_) {
    Builder b(*func_->regions[0]);
    b.create("return", outputs_);
    AttrList results;
    for (Value* v : outputs_) results.emplace_back(v->type);
    func_->attrs["result_types"] = Attr(std::move(results));
    finished_ = true;
    verify_graph(*m_);
  }
  return *m_;
}

Program Program::compile(const Module& m, const std::string& target, const std::string& func,
                         const Candidates& matmul_candidates) {
  Program p;
  Layer at = detect_layer(m);
  std::shared_ptr<Module> current = clone(m);
  verify(*current, at);
  if (at == Layer::Graph) p.graph_ = current;
  const machine::Descriptor device = targets::describe_target(target);
  if (at <= Layer::Schedule) p.schedule_ = passes::lower(*current, Layer::Schedule, device, matmul_candidates);
  if (at <= Layer::Tile) p.tile_ = passes::lower(p.schedule_ ? *p.schedule_ : *current, Layer::Tile, device);
  p.target_ = passes::lower(p.tile_ ? *p.tile_ : *current, Layer::Target, device);
  p.exe_ = targets::runnable(target, /*emulate=*/false).load(*p.target_, func);
  return p;
}

Program Program::compile_text(const std::string& text, const std::string& target, const std::string& func,
                              const std::string& filename) {
  return compile(*parse(text, filename), target, func);
}

runtime::RunResult Program::run(const std::vector<Tensor>& inputs, runtime::ThreadPool* pool) const {
  return exe_->run(inputs, pool);
}

std::string Program::emit(const std::string& layer) const {
  auto need = [&](const std::shared_ptr<Module>& m) -> const Module& {
    if (!m) fail("E131", "layer '" + layer + "' is not available: the program was compiled from a lower layer");
    return *m;
  };
  if (layer == "graph") return print(need(graph_));
  if (layer == "schedule") return print(need(schedule_));
  if (layer == "tile") return print(need(tile_));
  if (layer == "target") return print(*target_);
  if (layer == "source") {
    std::string out;
    for (const KernelDesc& k : exe_->kernels()) out += k.source;
    return out;
  }
  fail("E132", "unknown layer '" + layer + "' (graph, schedule, tile, target, source)");
}

}  // namespace tessera
