// Tessera's public C++ API: build or parse a program, lower it through the
// four layers, load it for a target and run it. The C ABI (tessera.h) wraps
// exactly this.
//
//   tessera::GraphBuilder g("row_sum");
//   auto* x = g.input("x", tessera::ir::Type::tensor(tessera::DType::F32, {4096, 1024}));
//   g.output(g.reduce(x, "sum", {1}));
//   tessera::Program p = tessera::Program::compile(g.module(), "cpu");
//   tessera::runtime::RunResult r = p.run({input});   // r.launches[i].placement == "native_cpu"
//
// This header includes no internal header (the layers are in
// docs/architecture.md): the IR, tensor and result types it names are declared
// here and defined in "ir/ir.hpp", "runtime/tensor.hpp" and
// "runtime/executable.hpp", which the tessera_core target puts on the include path.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessera {

enum class DType : uint8_t;
class Tensor;
namespace ir {
struct Attr;
struct Module;
struct Op;
struct Type;
struct Value;
}  // namespace ir
namespace runtime {
class Executable;
class ThreadPool;
struct RunResult;
}  // namespace runtime

// Builds a Graph IR func op by op; results are type-checked as they are added.
class GraphBuilder {
 public:
  explicit GraphBuilder(const std::string& func_name);
  GraphBuilder(GraphBuilder&&) noexcept;
  GraphBuilder& operator=(GraphBuilder&&) noexcept;
  ~GraphBuilder();
  ir::Value* input(const std::string& name, const ir::Type& type);
  // axes may be negative; an empty list with all_axes reduces everything.
  ir::Value* reduce(ir::Value* x, const std::string& kind, std::vector<int64_t> axes, bool keepdims = false);
  ir::Value* reduce_all(ir::Value* x, const std::string& kind, bool keepdims = false);
  // tessera.argmax / argmin (max = false): positions along `axis` (i64).
  ir::Value* arg_reduce(ir::Value* x, bool max, int64_t axis, bool keepdims = false);
  // Pointwise: fn is a unary ("exp", "gelu", ...: gelu_tanh for the tanh form)
  // or binary ("add", "max", ...; numpy broadcasting) op name without "tessera.".
  ir::Value* unary(const std::string& fn, ir::Value* x);
  ir::Value* binary(const std::string& fn, ir::Value* a, ir::Value* b);
  // min(max(x, lo), hi), NaN kept; an infinite bound is left out of the op.
  ir::Value* clamp(ir::Value* x, double lo, double hi);
  // tessera.where: c (i1) picks a, else b; the three broadcast.
  ir::Value* where(ir::Value* c, ir::Value* a, ir::Value* b);
  // tessera.iota: a tensor of `type` whose elements count along `axis`.
  ir::Value* iota(const ir::Type& type, int64_t axis);
  // Views (no copy where a pointwise kernel reads them): reshape, transpose
  // by `perm`, slice [start, limit) by stride per axis, broadcast_to, and
  // split along `axis` into parts of `sizes`.
  ir::Value* reshape(ir::Value* x, std::vector<int64_t> shape);
  ir::Value* transpose(ir::Value* x, std::vector<int64_t> perm);
  ir::Value* slice(ir::Value* x, std::vector<int64_t> start, std::vector<int64_t> limit, std::vector<int64_t> stride);
  ir::Value* broadcast_to(ir::Value* x, std::vector<int64_t> shape);
  std::vector<ir::Value*> split(ir::Value* x, int64_t axis, std::vector<int64_t> sizes);
  // tessera.concat: the parts joined along `axis`.
  ir::Value* concat(std::vector<ir::Value*> parts, int64_t axis);
  // tessera.gather (numpy take: an embedding lookup) and tessera.take_along
  // (numpy take_along_axis) of x by i32/i64 indices along `axis`.
  ir::Value* gather(ir::Value* x, ir::Value* indices, int64_t axis);
  ir::Value* take_along(ir::Value* x, ir::Value* indices, int64_t axis);
  // tessera.scatter_add, gather's transpose (np.add.at into zeros of `result`):
  // the slices of g summed where the indices point along `axis`.
  ir::Value* scatter_add(ir::Value* g, ir::Value* indices, int64_t axis, const ir::Type& result);
  ir::Value* cast(ir::Value* x, DType to);
  ir::Value* constant(double value, const ir::Type& type);
  // Row ops: softmax/log_softmax over `axis`; the norms over the last axis.
  ir::Value* softmax(ir::Value* x, int64_t axis = -1);
  ir::Value* log_softmax(ir::Value* x, int64_t axis = -1);
  ir::Value* layer_norm(ir::Value* x, ir::Value* w, ir::Value* b, double eps = 1e-5);
  ir::Value* rms_norm(ir::Value* x, ir::Value* w, double eps = 1e-6);
  // Their gradients (what `tessera grad` writes): softmax_grad and
  // log_softmax_grad from the forward result y and dy; the norms' from x, w
  // and dy, returning dx, dw (and db).
  ir::Value* softmax_grad(ir::Value* y, ir::Value* dy, int64_t axis = -1);
  ir::Value* log_softmax_grad(ir::Value* y, ir::Value* dy, int64_t axis = -1);
  std::vector<ir::Value*> layer_norm_grad(ir::Value* x, ir::Value* w, ir::Value* dy, double eps = 1e-5);
  std::vector<ir::Value*> rms_norm_grad(ir::Value* x, ir::Value* w, ir::Value* dy, double eps = 1e-6);
  // C = op(A) x op(B), batched over leading dims; f32 accumulation, result in `out`.
  ir::Value* matmul(ir::Value* a, ir::Value* b, DType out, bool transpose_a = false, bool transpose_b = false);
  // tessera.attention: softmax(scale * q k^T [causal] [mask]) v per (batch,
  // head), q [B, H, Sq, D], k and v [B, Hkv, Sk, D]; scale NaN: 1/sqrt(D).
  // With `lse`, the second value is each row's log-sum-exp [B, H, Sq]. A
  // mask broadcasts to [B, H, Sq, Sk]: i1 (false hides a key) or a bias.
  std::vector<ir::Value*> attention(ir::Value* q, ir::Value* k, ir::Value* v, bool causal, double scale, bool lse,
                                    ir::Value* mask = nullptr);
  // tessera.attention_grad: {dq, dk, dv} from the forward's q, k, v, o, its
  // lse, and do (the gradient of o); causal and scale as the forward's.
  std::vector<ir::Value*> attention_grad(ir::Value* q, ir::Value* k, ir::Value* v, ir::Value* o, ir::Value* dout,
                                         ir::Value* lse, bool causal, double scale);
  // Appends the ops of func `func` (empty: the first) of Graph IR module `m`
  // on `args` (its arguments' types, in order); returns the values it returns.
  std::vector<ir::Value*> call(const ir::Module& m, const std::string& func, std::vector<ir::Value*> args);
  void output(ir::Value* v);
  // Output r is written into the buffer of input into[r] (-1: a new buffer):
  // the func's in_place (docs/semantics.md, "In-place results").
  void in_place(std::vector<int64_t> into);
  // Finishes the func (adds the return) and verifies the module.
  const ir::Module& module();

 private:
  // Appends op `name` with result type `result` and verifies it.
  ir::Value* add(const std::string& name, std::vector<ir::Value*> operands, std::map<std::string, ir::Attr> attrs,
                 const ir::Type& result);
  // The same with several results.
  std::vector<ir::Value*> add_n(const std::string& name, std::vector<ir::Value*> operands,
                                std::map<std::string, ir::Attr> attrs, const std::vector<ir::Type>& results);
  std::unique_ptr<ir::Module> m_;
  ir::Op* func_;
  std::vector<ir::Value*> outputs_;
  int next_ = 0;
  bool finished_ = false;
};

class Program {
 public:
  // Lowers a module (any layer) to Target IR for `target` and loads it on its
  // lane (cpu; cuda where a GPU is; metal and hip do not execute natively:
  // E720, E722). `matmul_candidates` maps a Graph IR matmul region to the
  // candidate that computes it (the arbiter's choices); by default each is the
  // synthesized kernel.
  using Candidates = std::map<std::string, std::string>;
  static Program compile(const ir::Module& m, const std::string& target = "cpu", const std::string& func = "",
                         const Candidates& matmul_candidates = {});
  static Program compile_text(const std::string& text, const std::string& target = "cpu", const std::string& func = "",
                              const std::string& filename = "<input>");

  // Text of one layer (graph needs a Graph IR input); "source" gives the kernels.
  std::string emit(const std::string& layer) const;
  runtime::RunResult run(const std::vector<Tensor>& inputs, runtime::ThreadPool* pool = nullptr) const;
  const runtime::Executable& executable() const { return *exe_; }
  const ir::Module* graph() const { return graph_.get(); }  // null if compiled from a lower layer

 private:
  std::shared_ptr<ir::Module> graph_, schedule_, tile_, target_;
  std::shared_ptr<runtime::Executable> exe_;
};

}  // namespace tessera
