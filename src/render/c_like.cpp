#include "render/c_like.hpp"

#include <cmath>
#include <functional>
#include <optional>
#include <string_view>

#include "ir/tile_ops.hpp"

namespace tessera::render {

using namespace tessera::ir;

std::string CLikeRenderer::name(const Value* v) {
  auto it = names_.find(v);
  if (it != names_.end()) return it->second;
  std::string n = "v_" + v->name;
  names_[v] = n;
  return n;
}

std::string CLikeRenderer::storage(DType d) const {
  const Spelling& s = spelling();
  switch (d) {
    case DType::F16: return s.f16;
    case DType::BF16: return s.bf16;
    case DType::F32: return s.f32;
    case DType::F64: return s.f64;
    case DType::I1: return s.i1;
    case DType::I32: return s.i32;
    case DType::I64: return s.i64;
  }
  return "?";
}

std::string CLikeRenderer::type(const Type& t) const {
  switch (t.kind) {
    case TypeKind::Index: return spelling().index;
    case TypeKind::Scalar: return storage(t.dtype);
    case TypeKind::Tile: return "tsr::tile<" + storage(t.dtype) + ", " + std::to_string(t.numel()) + ">";
    case TypeKind::Ptr: return storage(t.dtype) + "*";
    case TypeKind::Tensor: break;
  }
  fail("E501", "a tensor type cannot appear inside a kernel");
}

std::string CLikeRenderer::number_literal(double v, DType d) const {
  std::string t = storage(d);
  // A C cast reads the same in C++, CUDA and MSL, and spells two-word types.
  if (!is_float(d))
    return "((" + t + ")" + std::to_string(to_integer(v, d)) +
           (d == DType::I64 ? i64_suffix() + ")" : std::string(")"));
  if (std::isnan(v)) return "tsr::nan<" + t + ">()";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + "tsr::inf<" + t + ">()";
  std::string s = format_double(v);
  return d == DType::F32 ? s + "f" : s;
}

bool CLikeRenderer::contains(const Op& kernel, const std::string& op_name) {
  bool found = false;
  std::function<void(const Region&)> walk = [&](const Region& r) {
    for (auto& op : r.ops) {
      if (op->name == op_name) found = true;
      for (auto& inner : op->regions) walk(*inner);
    }
  };
  walk(*kernel.regions[0]);
  return found;
}

std::string CLikeRenderer::lane_call(const std::string& fn, const std::string& args) const {
  return "tsr::" + fn + "(" + args + ")";
}

std::string CLikeRenderer::attention_library(const Op&) const {
  fail("E502", "this lane has no attention block library yet (tile.attention)");
}

std::string CLikeRenderer::workspace_decl(const std::string&, const std::string&) const {
  fail("E502", "this lane keeps no kernel workspace (tile.workspace)");
}

bool CLikeRenderer::is_written(const Op& kernel, const Value* ptr) const {
  bool written = false;
  std::function<void(const Region&)> walk = [&](const Region& r) {
    for (auto& op : r.ops) {
      if ((op->name == "tile.store" || op->name == "tile.store_masked" || op->name == "tile.store2d") &&
          op->operands[0] == ptr)
        written = true;
      if (op->name == "tile.transpose" && op->operands[1] == ptr) written = true;
      // o, and lse when it has one
      if (op->name == "tile.attention" && (op->operands[3] == ptr || (tile_bool(*op, "lse") && op->operands[7] == ptr)))
        written = true;
      if (op->name == "tile.attention_decode" &&
          (op->operands[3] == ptr || (tile_bool(*op, "lse") && op->operands[7] == ptr)))
        written = true;
      if (op->name == "tile.attention_grad" &&
          (op->operands[6] == ptr || op->operands[7] == ptr || op->operands[8] == ptr))  // dq, dk, dv
        written = true;
      for (auto& inner : op->regions) walk(*inner);
    }
  };
  walk(*kernel.regions[0]);
  return written;
}

std::string CLikeRenderer::render_kernel(const Op& kernel) {
  names_.clear();
  const bool slabs = contains(kernel, "tile.load2d") || contains(kernel, "tile.load2d_piece") ||
                     contains(kernel, "tile.store2d") || contains(kernel, "tile.fold_rows");
  out_ = prelude() +
         (contains(kernel, "tile.matmul") ? matmul_library(kernel)
          : slabs                         ? slab_library(kernel)
                                          : "") +
         (contains(kernel, "tile.attention") || contains(kernel, "tile.attention_grad") ||
                  contains(kernel, "tile.attention_decode")
              ? attention_library(kernel)
              : "") +
         "\n" + kernel_open(kernel);
  render_ops(*kernel.regions[0], 4);
  out_ += kernel_close(kernel);
  return out_;
}

void CLikeRenderer::render_ops(const Region& r, int indent) {
  for (auto& op : r.ops) render_op(*op, indent);
}

// One member function per Tile IR op. Ops reach it verified (tile_to_target
// runs verify_tile first), so attributes are read with the table's typed
// accessors; what a target cannot print is refused through its hooks (E502).
struct CLikeRenderer::OpEmitter {
  CLikeRenderer& r;
  const Op& op;
  int indent;

  using Fn = void (OpEmitter::*)();
  static const std::unordered_map<std::string_view, Fn>& table();

  std::string pad() const { return std::string(indent, ' '); }
  std::string arg(size_t i) const { return r.name(op.operands[i]); }
  // The op's one result, defined as `expr`.
  void def(const std::string& expr) const {
    const Value* v = op.result(0);
    r.out_ += pad() + "const " + r.type(v->type) + " " + r.name(v) + " = " + expr + ";\n";
  }
  void statement(const std::string& s) const { r.out_ += pad() + s + ";\n"; }
  std::string value_literal(const char* key, const Type& t) const {
    return r.number_literal(tile_number(op, key), t.dtype);
  }
  std::string tile_targs(const Type& t) const {
    return "<" + r.storage(t.dtype) + ", " + std::to_string(t.numel()) + ">";
  }
  void require_persistent_programs(const std::string& what) const {
    if (r.num_programs_expr().empty()) fail("E502", "this renderer has no " + what, op.loc);
  }

  void program_id() { def(r.program_id_expr()); }
  void num_programs() {
    require_persistent_programs("persistent programs ('" + op.name + "')");
    def(r.num_programs_expr());
  }
  void load_staged() {
    require_persistent_programs("persistent programs ('" + op.name + "')");
    const Type& t = op.result(0)->type;
    def("tsr::load_staged<" + r.storage(t.dtype) + ", " + std::to_string(t.numel()) + ">(" + arg(1) + ", " + arg(0) +
        ", " + arg(2) + ", " + arg(3) + ", " + std::to_string(tile_int(op, "row_stride")) + r.i64_suffix() + ", " +
        arg(4) + ")");
  }
  void constant() {
    const Type& t = op.result(0)->type;
    if (t.kind == TypeKind::Index) def(std::to_string(tile_int(op, "value")));
    else def(value_literal("value", t));
  }
  void arith() {
    static const std::unordered_map<std::string, std::string> sym = {
        {"tile.add", "+"}, {"tile.sub", "-"}, {"tile.mul", "*"}, {"tile.div", "/"}, {"tile.rem", "%"}};
    def(arg(0) + " " + sym.at(op.name) + " " + arg(1));
  }
  void min() { def("tsr::imin(" + arg(0) + ", " + arg(1) + ")"); }
  void to_index() { def(arg(0)); }  // (the declaration converts)
  void full() {
    const Type& t = op.result(0)->type;
    if (t.kind == TypeKind::Scalar) def(value_literal("value", t));
    else def("tsr::full" + tile_targs(t) + "(" + value_literal("value", t) + ")");
  }
  void scratch() {
    const Value* v = op.result(0);
    r.out_ += pad() + r.alloca_decl(r.name(v), r.storage(v->type.dtype), tile_int(op, "size"));
  }
  void workspace() {
    const Value* v = op.result(0);
    r.out_ += pad() + r.workspace_decl(r.name(v), r.storage(v->type.dtype));
  }
  void load() {
    const Type& t = op.result(0)->type;
    const std::string ptr = arg(0) + " + " + arg(1);
    if (t.kind == TypeKind::Scalar) def("tsr::load1<" + r.storage(t.dtype) + ">(" + ptr + ")");
    else def(r.lane_call(r.load_fn(op.operands[0]) + tile_targs(t), ptr));
  }
  void load_masked() {
    const Type& t = op.result(0)->type;
    def(r.lane_call("load_masked" + tile_targs(t),
                    arg(0) + " + " + arg(1) + ", " + arg(2) + ", " + value_literal("other", t)));
  }
  void gather() { def(r.lane_call("gather" + tile_targs(op.result(0)->type), arg(0) + ", " + arg(1))); }
  void load_strided() {
    const Type& t = op.result(0)->type;
    const std::string count = op.operands.size() > 2 ? arg(2) : std::to_string(t.numel()) + r.i64_suffix();
    def(r.lane_call(
        "load_strided" + tile_targs(t),
        arg(0) + " + " + arg(1) + ", " + std::to_string(tile_int(op, "stride")) + r.i64_suffix() + ", " + count));
  }
  void store() { statement(r.lane_call("store", arg(0) + " + " + arg(1) + ", " + arg(2))); }
  void store_masked() {
    statement(r.lane_call("store_masked", arg(0) + " + " + arg(1) + ", " + arg(2) + ", " + arg(3)));
  }
  void prefetch() { statement(r.lane_call("prefetch", arg(0) + " + " + arg(1) + ", " + arg(2))); }
  void combine() { def("tsr::combine_" + tile_string(op, "kind") + "(" + arg(0) + ", " + arg(1) + ")"); }
  void reduce_lanes() {
    const bool block = op.attr("scope") && tile_string(op, "scope") == "block";
    if (block) require_persistent_programs("block-scope lane reductions (cluster programs)");
    def(r.lane_call(std::string(block ? "reduce_block_lanes_" : "reduce_lanes_") + tile_string(op, "kind"), arg(0)));
  }
  void fold_rows() {
    const Type& t = op.result(0)->type;
    def(r.lane_call("fold_rows_" + tile_string(op, "kind") + "<" + std::to_string(t.shape[0]) + ", " +
                        std::to_string(t.shape[1]) + ">",
                    arg(0)));
  }
  void softmax_stats() {
    require_persistent_programs("cluster programs ('" + op.name + "')");
    const std::string t = r.type(op.result(0)->type), big_m = r.name(op.result(0)), big_s = r.name(op.result(1));
    r.out_ += pad() + t + " " + big_m + ", " + big_s + ";\n";
    statement("tsr::softmax_stats(" + arg(0) + ", " + arg(1) + ", " + big_m + ", " + big_s + ")");
  }
  void divf() { def("tsr::divf(" + arg(0) + ", " + arg(1) + ")"); }
  void map() {
    const std::string& fn = tile_string(op, "fn");
    if (fn.rfind("round_", 0) == 0) {
      const std::optional<DType> to = parse_dtype(fn.substr(6));
      TESSERA_ASSERT(to, "tile.map fn '" + fn + "' names no dtype");
      def("tsr::round_to<" + r.storage(*to) + ">(" + arg(0) + ")");
    } else if (fn.rfind("cvt_", 0) == 0) {
      def("tsr::cvt<" + r.storage(op.result(0)->type.dtype) + ">(" + arg(0) + ")");
    } else {
      std::string args;
      for (size_t i = 0; i < op.operands.size(); ++i) args += (i ? ", " : "") + arg(i);
      def("tsr::fn_" + fn + "(" + args + ")");
    }
  }
  void iota() {
    const Type& t = op.result(0)->type;
    def(r.lane_call("iota" + tile_targs(t), arg(0) + ", " + std::to_string(tile_int(op, "inner")) + r.i64_suffix() +
                                                ", " + std::to_string(tile_int(op, "extent")) + r.i64_suffix()));
  }
  void splat() { def("tsr::full" + tile_targs(op.result(0)->type) + "(" + arg(0) + ")"); }
  void mask() {
    def(r.lane_call("mask_lanes", arg(0) + ", " + arg(1) + ", " + value_literal("other", op.result(0)->type)));
  }
  void matmul();
  void attention();
  void attention_grad();
  void attention_decode();
  void transpose() {
    if (!r.has_transpose_block())
      fail("E502", "this target's tile library has no transpose block (tile.transpose)", op.loc);
    const std::vector<int64_t> blk = tile_ints(op, "block");
    statement("tsr::transpose_block<" + r.storage(op.operands[0]->type.dtype) + ", " + std::to_string(blk[0]) + ", " +
              std::to_string(blk[1]) + ">(" + arg(0) + " + " + arg(2) + ", " + arg(1) + " + " + arg(3) + ", " +
              std::to_string(tile_int(op, "rows")) + r.i64_suffix() + ", " + std::to_string(tile_int(op, "cols")) +
              r.i64_suffix() + ", " + arg(4) + ", " + arg(5) + ")");
  }
  void load2d() {
    const Type& t = op.result(0)->type;
    // From the scratch (shared memory on GPUs): plain loads, not __ldg.
    const bool shared = op.operands[0]->def && op.operands[0]->def->name == "tile.alloca";
    def(r.lane_call(std::string(shared ? "load2d_shared<" : "load2d<") + r.storage(t.dtype) + ", " +
                        std::to_string(t.shape[0]) + ", " + std::to_string(t.shape[1]) + ", " +
                        std::to_string(tile_int(op, "row_stride")) + ", " + std::to_string(tile_int(op, "col_stride")) +
                        ", " + (tile_bool(op, "aligned") ? "true" : "false") + ">",
                    arg(0) + " + " + arg(1) + ", " + arg(2) + ", " + arg(3)));
  }
  void load2d_piece() {
    const Type& t = op.result(0)->type;
    def(r.lane_call("load2d_piece<" + std::to_string(t.shape[0]) + ", " + std::to_string(t.shape[1]) + ", " +
                        std::to_string(tile_int(op, "row_stride")) + ", " + std::to_string(tile_int(op, "lo")) + ", " +
                        std::to_string(tile_int(op, "hi")) + ", " + (tile_bool(op, "aligned") ? "true" : "false") + ">",
                    arg(0) + ", " + arg(1) + " + " + arg(2) + ", " + arg(3)));
  }
  void store2d() {
    const Type& t = op.operands[4]->type;
    statement(r.lane_call("store2d<" + std::to_string(t.shape[0]) + ", " + std::to_string(t.shape[1]) + ", " +
                              std::to_string(tile_int(op, "row_stride")) + ", " +
                              (tile_bool(op, "aligned") ? "true" : "false") + ">",
                          arg(0) + " + " + arg(1) + ", " + arg(2) + ", " + arg(3) + ", " + arg(4)));
  }
  void for_loop();
  void yield() {}  // printed by the enclosing tile.for, which knows the carried variables
};

void CLikeRenderer::OpEmitter::matmul() {
  const auto blk = tile_ints(op, "block"), warps = tile_ints(op, "warps"), sa = tile_ints(op, "a_strides"),
             sb = tile_ints(op, "b_strides"), vec = tile_ints(op, "vec");
  const int64_t stages = tile_int(op, "stages"), k = tile_int(op, "k");
  const int64_t scratch_bytes = tile_int(*op.operands[2]->def, "size") * 4;
  std::string targs = r.storage(op.operands[0]->type.dtype);
  for (int64_t v : {blk[0], blk[1], blk[2], warps[0], warps[1], stages}) targs += ", " + std::to_string(v);
  for (int64_t v : {k, sa[0], sa[1], sb[0], sb[1]}) targs += ", " + std::to_string(v) + r.i64_suffix();
  if (op.attr("tma")) {
    // The TMA form: A and B are the kernel's tensor maps 0 and 1; the copy
    // producer's threads get false and leave the kernel (no epilogue).
    if (!r.has_tensor_maps()) fail("E502", "this renderer has no tensor maps (the TMA form of tile.matmul)", op.loc);
    std::string t = r.storage(op.operands[0]->type.dtype);
    for (int64_t v : {blk[0], blk[1], blk[2], stages}) t += ", " + std::to_string(v);
    t += ", " + std::to_string(k) + r.i64_suffix();
    // tile_ints returns a vector by value (a range-for over Attr::as_ints()'s
    // optional temporary would dangle before C++23 and read freed flags).
    for (int64_t f : tile_ints(op, "tma")) t += f ? ", true" : ", false";
    t += ", " + std::to_string(scratch_bytes);
    if (op.attr("b_half")) t += ", " + std::to_string(tile_int(op, "b_half")) + r.i64_suffix();
    r.out_ += pad() + "if (!tsr::matmul_block_tma<" + t + ">(reinterpret_cast<unsigned char*>(" + arg(2) + "), &" +
              tensor_map_param(0) + ", &" + tensor_map_param(1) + ", " + arg(3) + ", " + arg(4) + ", " + arg(5) +
              ")) return;\n";
    return;
  }
  targs += std::string(", ") + (vec[0] ? "true" : "false") + ", " + (vec[1] ? "true" : "false") + ", " +
           std::to_string(scratch_bytes);
  // norm_eps: the block with an RMSNorm prologue, its weight and eps last.
  std::string norm_args;
  if (op.attr("norm_eps")) {
    if (!r.has_matmul_norm())
      fail("E502", "this lane's matmul block takes no RMSNorm prologue (tile.matmul norm_eps)", op.loc);
    targs += ", true";
    norm_args = ", " + arg(7) + ", " + r.number_literal(tile_number(op, "norm_eps"), DType::F32);
  }
  // stage_a: the f32 block that stages row-major A through registers
  // (tessera_matmul_simt_stage_a.cuh), same parameters.
  const bool staged = op.attr("stage_a") && tile_bool(op, "stage_a");
  statement(r.lane_call(std::string(staged ? "matmul_block_stage_a<" : "matmul_block<") + targs + ">",
                        r.scratch_bytes(arg(2)) + ", " + arg(0) + ", " + arg(3) + ", " + arg(1) + ", " + arg(4) + ", " +
                            arg(5) + ", " + arg(6) + norm_args));
}

void CLikeRenderer::OpEmitter::attention() {
  const auto blk = tile_ints(op, "block");
  const bool lse = tile_bool(op, "lse"), tma = op.attr("tma") && tile_bool(op, "tma");
  std::string t = r.storage(op.operands[0]->type.dtype) + ", " + std::to_string(tile_int(op, "head_dim")) + ", " +
                  std::to_string(blk[0]) + ", " + std::to_string(blk[1]);
  if (tma) t += ", " + std::to_string(tile_int(op, "stages"));
  t += std::string(tile_bool(op, "causal") ? ", true" : ", false") + (lse ? ", true" : ", false");
  // the lse pointer, or a null one of the accumulation type's
  const std::string lse_arg = lse ? arg(7) : "nullptr";
  const std::string tail = ", " + lse_arg + ", " + arg(4) + ", " + arg(5) + ", " + arg(6) + ", " +
                           std::to_string(tile_int(op, "sq")) + r.i64_suffix() + ", " +
                           std::to_string(tile_int(op, "sk")) + r.i64_suffix() + ", " +
                           format_double(tile_number(op, "scale")) + ")";
  // The masked forms take the mask's pointer, its strides over [batch, heads,
  // sq, sk] and heads after o.
  // (the TMA form takes the heads from its layout, which comes after o)
  std::string mask_args;
  if (op.attr("mask")) {
    t += tile_string(op, "mask") == "bias" ? ", true" : ", false";
    mask_args = ", " + arg(7 + lse);
    for (int64_t st : tile_ints(op, "mask_strides")) mask_args += ", " + std::to_string(st) + r.i64_suffix();
    if (!tma) mask_args += ", " + std::to_string(tile_int(op, "heads")) + r.i64_suffix();
  }
  const std::string masked = mask_args.empty() ? "" : "_masked";
  if (tma) {
    if (!r.has_tensor_maps()) fail("E502", "this renderer has no tensor maps (the TMA form of tile.attention)", op.loc);
    const int64_t smem = tile_int(*op.operands.back()->def, "size") * 4;
    std::string layout = "tsr::attn_layout{" + std::to_string(tile_int(op, "heads")) + r.i64_suffix() + ", " +
                         std::to_string(tile_int(op, "kv_heads")) + r.i64_suffix();
    for (int64_t st : tile_ints(op, "o_strides")) layout += ", " + std::to_string(st) + r.i64_suffix();
    statement("tsr::attention_fwd_tma" + masked + "<" + t + ", " + std::to_string(smem) +
              ">(reinterpret_cast<unsigned char*>(" + arg(op.operands.size() - 1) + "), &" + tensor_map_param(0) +
              ", &" + tensor_map_param(1) + ", &" + tensor_map_param(2) + ", " + arg(3) + ", " + layout + "}" +
              mask_args + tail);
    return;
  }
  statement("tsr::attention_block" + masked + "<" + t + ">(" + arg(0) + ", " + arg(1) + ", " + arg(2) + ", " + arg(3) +
            mask_args + tail);
}

namespace {
// Bytes of a tile.alloca or tile.workspace operand.
int64_t allocated_bytes(const Value* v) {
  const Op& alloc = *v->def;
  return tile_int(alloc, "size") * int64_t(dtype_size(alloc.result()->type.dtype));
}
}  // namespace

void CLikeRenderer::OpEmitter::attention_grad() {
  const auto blk = tile_ints(op, "block");
  const std::string t = r.storage(op.operands[0]->type.dtype), d = std::to_string(tile_int(op, "head_dim"));
  const std::string causal = tile_bool(op, "causal") ? "true" : "false";
  std::string call;
  const bool wgmma = op.attr("wgmma") && tile_bool(op, "wgmma");
  if (wgmma || (op.attr("mma") && tile_bool(op, "mma"))) {
    // The schedule sized the scratch by its own copy of the block's formula.
    const std::string block = wgmma ? "wgmma" : "mma";
    statement("static_assert(tsr::attention_grad_" + block + "_smem_bytes(" + d +
              ") <= " + std::to_string(allocated_bytes(op.operands[10])) + ", \"the " +
              (wgmma ? "warpgroup" : "tensor-core") + " backward block's shared memory\")");
    call = "tsr::attention_grad_" + block + "_program<" + t + ", " + d + ", " + causal + ">(";
  } else {
    call = "tsr::attention_grad_program<" + t + ", " + d + ", " + std::to_string(blk[0]) + ", " +
           std::to_string(blk[1]) + ", " + causal +
           (op.attr("one_pass") && tile_bool(op, "one_pass") ? ", true>(" : ", false>(");
  }
  if (op.operands.size() == 11) call += "reinterpret_cast<unsigned char*>(" + arg(10) + "), ";  // a GPU block's smem
  for (int i = 0; i < 10; ++i) call += arg(i) + ", ";
  for (const char* n : {"batch", "heads", "kv_heads", "sq", "sk"})
    call += std::to_string(tile_int(op, n)) + r.i64_suffix() + ", ";
  statement(call + format_double(tile_number(op, "scale")) + ")");
}

void CLikeRenderer::OpEmitter::attention_decode() {
  const auto blk = tile_ints(op, "block");
  const std::string l = r.i64_suffix();
  auto i64 = [&](int64_t x) { return std::to_string(x) + l; };
  std::string layout = "tsr::decode_layout{" + i64(tile_int(op, "heads")) + ", " + i64(tile_int(op, "kv_heads"));
  for (const char* key : {"q_strides", "k_strides", "v_strides", "o_strides"}) {
    const auto st = tile_ints(op, key);
    layout += ", {" + i64(st[0]) + ", " + i64(st[1]) + ", " + i64(st[2]) + "}";
  }
  for (int64_t off : tile_ints(op, "offsets")) layout += ", " + i64(off);
  const int64_t sk = tile_int(op, "sk"), chunk = tile_int(op, "chunk"), d = tile_int(op, "head_dim");
  const int64_t chunks = std::max<int64_t>(1, (sk + chunk - 1) / chunk);
  const int64_t planes = tile_int(op, "batch") * tile_int(op, "kv_heads");
  // The schedule sized the scratch and the workspace by its own copies of
  // the block's formulas: the block's compiler checks them.
  statement("static_assert(tsr::attention_decode_smem_bytes(" + std::to_string(d) + ", " + std::to_string(blk[0]) +
            ", " + std::to_string(blk[1]) + ") <= " + std::to_string(allocated_bytes(op.operands[5])) +
            " && tsr::attention_decode_workspace_bytes(" + i64(planes) + ", " + i64(planes * chunks) + ", " +
            std::to_string(blk[0]) + ", " + std::to_string(d) + ") <= " + i64(allocated_bytes(op.operands[4])) +
            ", \"the split-KV block's shared memory and workspace\")");
  statement("tsr::attention_decode<" + r.storage(op.operands[0]->type.dtype) + ", " + std::to_string(d) + ", " +
            std::to_string(blk[0]) + ", " + std::to_string(blk[1]) + (tile_bool(op, "causal") ? ", true" : ", false") +
            (tile_bool(op, "lse") ? ", true" : ", false") + ">(reinterpret_cast<unsigned char*>(" + arg(5) + "), " +
            arg(0) + ", " + arg(1) + ", " + arg(2) + ", " + arg(3) + ", " +
            (tile_bool(op, "lse") ? arg(7) : "nullptr") + ", reinterpret_cast<unsigned char*>(" + arg(4) + "), " +
            layout + "}, " + arg(6) + ", " + i64(tile_int(op, "batch")) + ", " + i64(tile_int(op, "sq")) + ", " +
            i64(sk) + ", " + i64(chunk) + ", " + i64(chunks) + ", " + format_double(tile_number(op, "scale")) + ")");
}

void CLikeRenderer::OpEmitter::for_loop() {
  const std::string p = pad();
  const Region& body = *op.regions[0];
  // carried values live in mutable variables named after the region args
  for (size_t i = 1; i < body.args.size(); ++i)
    r.out_ += p + r.type(body.args[i]->type) + " " + r.name(body.args[i].get()) + " = " + arg(i + 2) + ";\n";
  std::string iv = r.name(body.args[0].get());
  r.out_ += p + "for (" + r.spelling().index + " " + iv + " = " + arg(0) + "; " + iv + " < " + arg(1) + "; " + iv +
            " += " + arg(2) + ") {\n";
  r.render_ops(body, indent + 2);
  // Assign through temporaries so a yield that permutes carried values is right.
  const Op& yield = *body.ops.back();
  const std::string inner(indent + 2, ' ');
  for (size_t i = 0; i < yield.operands.size(); ++i)
    r.out_ += inner + "const auto tsr_next" + std::to_string(i) + " = " + r.name(yield.operands[i]) + ";\n";
  for (size_t i = 0; i < yield.operands.size(); ++i)
    r.out_ += inner + r.name(body.args[i + 1].get()) + " = tsr_next" + std::to_string(i) + ";\n";
  r.out_ += p + "}\n";
  for (size_t i = 0; i < op.results.size(); ++i)
    r.out_ += p + "const " + r.type(op.results[i]->type) + " " + r.name(op.results[i].get()) + " = " +
              r.name(body.args[i + 1].get()) + ";\n";
}

const std::unordered_map<std::string_view, CLikeRenderer::OpEmitter::Fn>& CLikeRenderer::OpEmitter::table() {
  static const std::unordered_map<std::string_view, Fn> emitters = {
      {"tile.program_id", &OpEmitter::program_id},
      {"tile.num_programs", &OpEmitter::num_programs},
      {"tile.constant", &OpEmitter::constant},
      {"tile.add", &OpEmitter::arith},
      {"tile.sub", &OpEmitter::arith},
      {"tile.mul", &OpEmitter::arith},
      {"tile.div", &OpEmitter::arith},
      {"tile.rem", &OpEmitter::arith},
      {"tile.min", &OpEmitter::min},
      {"tile.to_index", &OpEmitter::to_index},
      {"tile.full", &OpEmitter::full},
      {"tile.alloca", &OpEmitter::scratch},
      {"tile.load", &OpEmitter::load},
      {"tile.load_masked", &OpEmitter::load_masked},
      {"tile.store", &OpEmitter::store},
      {"tile.store_masked", &OpEmitter::store_masked},
      {"tile.prefetch", &OpEmitter::prefetch},
      {"tile.load_staged", &OpEmitter::load_staged},
      {"tile.transpose", &OpEmitter::transpose},
      {"tile.combine", &OpEmitter::combine},
      {"tile.reduce_lanes", &OpEmitter::reduce_lanes},
      {"tile.fold_rows", &OpEmitter::fold_rows},
      {"tile.softmax_stats", &OpEmitter::softmax_stats},
      {"tile.divf", &OpEmitter::divf},
      {"tile.map", &OpEmitter::map},
      {"tile.load_strided", &OpEmitter::load_strided},
      {"tile.gather", &OpEmitter::gather},
      {"tile.iota", &OpEmitter::iota},
      {"tile.splat", &OpEmitter::splat},
      {"tile.mask", &OpEmitter::mask},
      {"tile.matmul", &OpEmitter::matmul},
      {"tile.attention", &OpEmitter::attention},
      {"tile.attention_grad", &OpEmitter::attention_grad},
      {"tile.attention_decode", &OpEmitter::attention_decode},
      {"tile.workspace", &OpEmitter::workspace},
      {"tile.load2d", &OpEmitter::load2d},
      {"tile.load2d_piece", &OpEmitter::load2d_piece},
      {"tile.store2d", &OpEmitter::store2d},
      {"tile.for", &OpEmitter::for_loop},
      {"tile.yield", &OpEmitter::yield},
  };
  return emitters;
}

bool CLikeRenderer::has_emitter(const std::string& op_name) { return OpEmitter::table().count(op_name) > 0; }

void CLikeRenderer::render_op(const Op& op, int indent) {
  const auto& emitters = OpEmitter::table();
  auto it = emitters.find(op.name);
  TESSERA_ASSERT(it != emitters.end(), "the C-like renderer has no emitter for '" + op.name + "' (is it verified?)");
  OpEmitter emitter{*this, op, indent};
  (emitter.*(it->second))();
}

}  // namespace tessera::render
