#include "render/c_like.hpp"

#include <cmath>
#include <functional>

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

std::string CLikeRenderer::float_literal(double v, DType d) const {
  std::string t = storage(d);
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

bool CLikeRenderer::is_written(const Op& kernel, const Value* ptr) const {
  bool written = false;
  std::function<void(const Region&)> walk = [&](const Region& r) {
    for (auto& op : r.ops) {
      if ((op->name == "tile.store" || op->name == "tile.store_masked" || op->name == "tile.store2d") &&
          op->operands[0] == ptr)
        written = true;
      if (op->name == "tile.transpose" && op->operands[1] == ptr) written = true;
      for (auto& inner : op->regions) walk(*inner);
    }
  };
  walk(*kernel.regions[0]);
  return written;
}

std::string CLikeRenderer::render_kernel(const Op& kernel) {
  names_.clear();
  out_ = prelude() + (contains(kernel, "tile.matmul") ? matmul_library(kernel) : "") + "\n" + kernel_open(kernel);
  render_ops(*kernel.regions[0], 4);
  out_ += kernel_close(kernel);
  return out_;
}

void CLikeRenderer::render_ops(const Region& r, int indent) {
  for (auto& op : r.ops) render_op(*op, indent);
}

void CLikeRenderer::render_op(const Op& op, int indent) {
  const std::string pad(indent, ' ');
  const std::string& n = op.name;
  auto arg = [&](size_t i) { return name(op.operands[i]); };
  auto def = [&](const std::string& expr) {
    const Value* r = op.result(0);
    out_ += pad + "const " + type(r->type) + " " + name(r) + " = " + expr + ";\n";
  };
  auto kind = [&]() { return *op.attr("kind")->as_string(); };
  auto value_attr = [&](const char* key, const Type& t) {
    const Attr* a = op.attr(key);
    double v = a->as_float() ? *a->as_float() : static_cast<double>(a->as_int() ? *a->as_int() : 0);
    return float_literal(v, t.dtype);
  };

  if (n == "tile.program_id") {
    def(program_id_expr());
  } else if (n == "tile.num_programs" || n == "tile.load_staged") {
    if (num_programs_expr().empty()) fail("E502", "this renderer has no persistent programs ('" + n + "')", op.loc);
    if (n == "tile.num_programs") {
      def(num_programs_expr());
    } else {
      const Type& t = op.result(0)->type;
      def("tsr::load_staged<" + storage(t.dtype) + ", " + std::to_string(t.numel()) + ">(" + arg(1) + ", " + arg(0) +
          ", " + arg(2) + ", " + arg(3) + ", " + std::to_string(*op.attr("row_stride")->as_int()) + "LL, " + arg(4) +
          ")");
    }
  } else if (n == "tile.constant") {
    const Type& t = op.result(0)->type;
    if (t.kind == TypeKind::Index) def(std::to_string(*op.attr("value")->as_int()));
    else def(value_attr("value", t));
  } else if (n == "tile.add" || n == "tile.sub" || n == "tile.mul" || n == "tile.div" || n == "tile.rem") {
    static const std::unordered_map<std::string, std::string> sym = {
        {"tile.add", "+"}, {"tile.sub", "-"}, {"tile.mul", "*"}, {"tile.div", "/"}, {"tile.rem", "%"}};
    def(arg(0) + " " + sym.at(n) + " " + arg(1));
  } else if (n == "tile.min") {
    def("tsr::imin(" + arg(0) + ", " + arg(1) + ")");
  } else if (n == "tile.full") {
    const Type& t = op.result(0)->type;
    std::string elem = storage(t.dtype);
    if (t.kind == TypeKind::Scalar) def(value_attr("value", t));
    else def("tsr::full<" + elem + ", " + std::to_string(t.numel()) + ">(" + value_attr("value", t) + ")");
  } else if (n == "tile.alloca") {
    const Value* r = op.result(0);
    out_ += pad + alloca_decl(name(r), storage(r->type.dtype), *op.attr("size")->as_int());
  } else if (n == "tile.load" || n == "tile.load_masked") {
    const Type& t = op.result(0)->type;
    std::string ptr = arg(0) + " + " + arg(1);
    if (t.kind == TypeKind::Scalar && n == "tile.load") {
      def("tsr::load1<" + storage(t.dtype) + ">(" + ptr + ")");
    } else {
      std::string targs = "<" + storage(t.dtype) + ", " + std::to_string(t.numel()) + ">";
      if (n == "tile.load") def(lane_call(load_fn(op.operands[0]) + targs, ptr));
      else def(lane_call("load_masked" + targs, ptr + ", " + arg(2) + ", " + value_attr("other", t)));
    }
  } else if (n == "tile.store") {
    out_ += pad + lane_call("store", arg(0) + " + " + arg(1) + ", " + arg(2)) + ";\n";
  } else if (n == "tile.store_masked") {
    out_ += pad + lane_call("store_masked", arg(0) + " + " + arg(1) + ", " + arg(2) + ", " + arg(3)) + ";\n";
  } else if (n == "tile.prefetch") {
    out_ += pad + lane_call("prefetch", arg(0) + " + " + arg(1) + ", " + arg(2)) + ";\n";
  } else if (n == "tile.combine") {
    def("tsr::combine_" + kind() + "(" + arg(0) + ", " + arg(1) + ")");
  } else if (n == "tile.reduce_lanes") {
    const Attr* scope = op.attr("scope");
    const bool block = scope && *scope->as_string() == "block";
    if (block && num_programs_expr().empty())
      fail("E502", "this renderer has no block-scope lane reductions (cluster programs)", op.loc);
    def(lane_call(std::string(block ? "reduce_block_lanes_" : "reduce_lanes_") + kind(), arg(0)));
  } else if (n == "tile.softmax_stats") {
    if (num_programs_expr().empty()) fail("E502", "this renderer has no cluster programs ('" + n + "')", op.loc);
    const std::string t = type(op.result(0)->type), big_m = name(op.result(0)), big_s = name(op.result(1));
    out_ += pad + t + " " + big_m + ", " + big_s + ";\n";
    out_ += pad + "tsr::softmax_stats(" + arg(0) + ", " + arg(1) + ", " + big_m + ", " + big_s + ");\n";
  } else if (n == "tile.divf") {
    def("tsr::divf(" + arg(0) + ", " + arg(1) + ")");
  } else if (n == "tile.map") {
    const std::string fn = *op.attr("fn")->as_string();
    if (fn.rfind("round_", 0) == 0) {
      auto to = parse_dtype(fn.substr(6));
      def("tsr::round_to<" + storage(*to) + ">(" + arg(0) + ")");
    } else {
      def("tsr::fn_" + fn + "(" + arg(0) + (op.operands.size() > 1 ? ", " + arg(1) : "") + ")");
    }
  } else if (n == "tile.splat") {
    const Type& t = op.result(0)->type;
    def("tsr::full<" + storage(t.dtype) + ", " + std::to_string(t.numel()) + ">(" + arg(0) + ")");
  } else if (n == "tile.mask") {
    def(lane_call("mask_lanes", arg(0) + ", " + arg(1) + ", " + value_attr("other", op.result(0)->type)));
  } else if (n == "tile.matmul") {
    auto ints = [&](const char* key) { return *op.attr(key)->as_ints(); };
    const auto blk = ints("block"), warps = ints("warps"), sa = ints("a_strides"), sb = ints("b_strides"),
               vec = ints("vec");
    const int64_t scratch_bytes = *op.operands[2]->def->attr("size")->as_int() * 4;
    std::string targs = storage(op.operands[0]->type.dtype);
    for (int64_t v : {blk[0], blk[1], blk[2], warps[0], warps[1], *op.attr("stages")->as_int()})
      targs += ", " + std::to_string(v);
    for (int64_t v : {*op.attr("k")->as_int(), sa[0], sa[1], sb[0], sb[1]}) targs += ", " + std::to_string(v) + "LL";
    if (const Attr* tma = op.attr("tma")) {
      // The TMA form: A and B are the kernel's tensor maps 0 and 1; the copy
      // producer's threads get false and leave the kernel (no epilogue).
      if (!has_tensor_maps()) fail("E502", "this renderer has no tensor maps (the TMA form of tile.matmul)", op.loc);
      std::string t = storage(op.operands[0]->type.dtype);
      for (int64_t v : {blk[0], blk[1], blk[2], *op.attr("stages")->as_int()}) t += ", " + std::to_string(v);
      t += ", " + std::to_string(*op.attr("k")->as_int()) + "LL";
      // as_ints() returns an optional by value: copy the flags out of it. A
      // range-for over `*tma->as_ints()` iterates a destroyed temporary
      // (dangling before C++23): A_KC and B_KC came out "true" from freed
      // memory for NN ([1, 0, 0, 0]) and TN ([0, 0, 0, 0]) alike, i.e. one
      // K-major box over an MN-major map, too few bytes for the expect_tx: a hang.
      const std::vector<int64_t> flags = *tma->as_ints();
      for (int64_t f : flags) t += f ? ", true" : ", false";
      t += ", " + std::to_string(scratch_bytes);
      out_ += pad + "if (!tsr::matmul_block_tma<" + t + ">(reinterpret_cast<unsigned char*>(" + arg(2) + "), &" +
              tensor_map_param(0) + ", &" + tensor_map_param(1) + ", " + arg(3) + ", " + arg(4) + ", " + arg(5) +
              ")) return;\n";
      return;
    }
    targs += std::string(", ") + (vec[0] ? "true" : "false") + ", " + (vec[1] ? "true" : "false") + ", " +
             std::to_string(scratch_bytes);
    // stage_a: the f32 block that stages row-major A through registers
    // (tessera_matmul_simt_stage_a.cuh), same parameters.
    const Attr* stage_a = op.attr("stage_a");
    const bool staged = stage_a && stage_a->as_bool() && *stage_a->as_bool();
    out_ += pad + (staged ? "tsr::matmul_block_stage_a<" : "tsr::matmul_block<") + targs + ">(reinterpret_cast<unsigned char*>(" + arg(2) + "), " + arg(0) +
            ", " + arg(3) + ", " + arg(1) + ", " + arg(4) + ", " + arg(5) + ", " + arg(6) + ");\n";
  } else if (n == "tile.transpose") {
    if (!has_transpose_block()) fail("E502", "this target's tile library has no transpose block (tile.transpose)", op.loc);
    const std::vector<int64_t> blk = *op.attr("block")->as_ints();
    out_ += pad + "tsr::transpose_block<" + storage(op.operands[0]->type.dtype) + ", " + std::to_string(blk[0]) +
            ", " + std::to_string(blk[1]) + ">(" + arg(0) + " + " + arg(2) + ", " + arg(1) + " + " + arg(3) + ", " +
            std::to_string(*op.attr("rows")->as_int()) + "LL, " + std::to_string(*op.attr("cols")->as_int()) +
            "LL, " + arg(4) + ", " + arg(5) + ");\n";
  } else if (n == "tile.load2d") {
    const Type& t = op.result(0)->type;
    // From the scratch (shared memory on GPUs): plain loads, not __ldg.
    const bool shared = op.operands[0]->def && op.operands[0]->def->name == "tile.alloca";
    def(std::string(shared ? "tsr::load2d_shared<" : "tsr::load2d<") + storage(t.dtype) + ", " +
        std::to_string(t.shape[0]) + ", " + std::to_string(t.shape[1]) +
        ", " + std::to_string(*op.attr("row_stride")->as_int()) + ", " +
        std::to_string(*op.attr("col_stride")->as_int()) + ", " + (*op.attr("aligned")->as_bool() ? "true" : "false") +
        ">(" + arg(0) + " + " + arg(1) + ", " + arg(2) + ", " + arg(3) + ")");
  } else if (n == "tile.store2d") {
    const Type& t = op.operands[4]->type;
    out_ += pad + "tsr::store2d<" + std::to_string(t.shape[0]) + ", " + std::to_string(t.shape[1]) + ", " +
            std::to_string(*op.attr("row_stride")->as_int()) + ", " +
            (*op.attr("aligned")->as_bool() ? "true" : "false") + ">(" + arg(0) + " + " + arg(1) + ", " + arg(2) +
            ", " + arg(3) + ", " + arg(4) + ");\n";
  } else if (n == "tile.for") {
    const Region& body = *op.regions[0];
    // carried values live in mutable variables named after the region args
    for (size_t i = 1; i < body.args.size(); ++i)
      out_ += pad + type(body.args[i]->type) + " " + name(body.args[i].get()) + " = " + arg(i + 2) + ";\n";
    std::string iv = name(body.args[0].get());
    out_ += pad + "for (" + spelling().index + " " + iv + " = " + arg(0) + "; " + iv + " < " + arg(1) + "; " + iv +
            " += " + arg(2) + ") {\n";
    render_ops(body, indent + 2);
    // Assign through temporaries so a yield that permutes carried values is right.
    const Op& yield = *body.ops.back();
    const std::string inner(indent + 2, ' ');
    for (size_t i = 0; i < yield.operands.size(); ++i)
      out_ += inner + "const auto tsr_next" + std::to_string(i) + " = " + name(yield.operands[i]) + ";\n";
    for (size_t i = 0; i < yield.operands.size(); ++i)
      out_ += inner + name(body.args[i + 1].get()) + " = tsr_next" + std::to_string(i) + ";\n";
    out_ += pad + "}\n";
    for (size_t i = 0; i < op.results.size(); ++i)
      out_ += pad + "const " + type(op.results[i]->type) + " " + name(op.results[i].get()) + " = " +
              name(body.args[i + 1].get()) + ";\n";
  } else if (n == "tile.yield") {
    // printed by the enclosing tile.for, which knows the carried variables
  } else {
    fail("E502", "the C-like renderer cannot print '" + n + "'", op.loc);
  }
}

}  // namespace tessera::render
