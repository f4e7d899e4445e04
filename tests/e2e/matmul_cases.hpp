// The matmul test matrix, shared by the CPU (tests/e2e) and CUDA (tests/gpu)
// suites: shapes around block edges (odd, exact, several K chunks, K = 0,
// empty), all four transpose layouts, batches (shared or per-batch operands),
// f32/f16/bf16 operands with f32 or narrow results, fused epilogues, and
// NaN/inf inputs. Each case is a FusionCase (fusion_cases.hpp).
#pragma once
#include "fusion_cases.hpp"

namespace tessera::test {
namespace {

struct MatmulShape {
  std::vector<int64_t> a, b;  // operand shapes as stored
  bool ta = false, tb = false;
};

// The epilogue applied to c (and its name); extra inputs come after a and b.
struct Epilogue {
  std::string name;
  std::function<ir::Value*(GraphBuilder&, ir::Value* c, const std::vector<int64_t>& shape)> apply;
  int extra_inputs = 0;
};

std::vector<Epilogue> matmul_epilogues() {
  return {
      {"plain", [](GraphBuilder&, ir::Value* c, const std::vector<int64_t>&) { return c; }, 0},
      {"bias_gelu",
       [](GraphBuilder& g, ir::Value* c, const std::vector<int64_t>& s) {
         ir::Value* bias = g.input("bias", T(c->type.dtype, {s.back()}));
         return g.unary("gelu", g.binary("add", c, bias));
       },
       1},
      {"scale_residual_silu",
       [](GraphBuilder& g, ir::Value* c, const std::vector<int64_t>& s) {
         ir::Value* res = g.input("res", T(c->type.dtype, s));
         ir::Value* scaled = g.binary("mul", c, g.constant(0.125, T(c->type.dtype, {})));
         return g.unary("silu", g.binary("add", scaled, res));
       },
       1},
      {"residual",  // C's own shape added: what a library adds in its call (beta = 1)
       [](GraphBuilder& g, ir::Value* c, const std::vector<int64_t>& s) {
         return g.binary("add", g.input("res", T(c->type.dtype, s)), c);
       },
       1},
      {"rowscale_relu",  // a per-row factor: broadcast along N
       [](GraphBuilder& g, ir::Value* c, const std::vector<int64_t>& s) {
         std::vector<int64_t> col = s;
         col.back() = 1;
         return g.unary("relu", g.binary("mul", c, g.input("rs", T(c->type.dtype, col))));
       },
       1},
  };
}

// Every shape with each dtype pair, epilogues and NaN/inf inputs rotating;
// seeds from `seed` up.
std::vector<FusionCase> matmul_cases_of(const std::vector<MatmulShape>& shapes, int seed) {
  const std::vector<std::pair<DType, DType>> dtypes = {
      {DType::F32, DType::F32}, {DType::BF16, DType::F32}, {DType::BF16, DType::BF16}, {DType::F16, DType::F16}};
  std::vector<FusionCase> out;
  int variant = 0;
  for (const MatmulShape& s : shapes)
    for (auto [in, res] : dtypes) {
      // Epilogues and NaN/inf inputs rotate over the cases, so that each shows
      // up with every dtype without multiplying the matrix.
      // (the residual epilogue, index 3, every shape once, below)
      const Epilogue e = matmul_epilogues()[std::vector<int>{0, 1, 2, 4}[variant % 4]];
      const bool special = variant % 5 == 4;
      ++variant;
      ++seed;
      FusionCase c;
      auto sname = [](const std::vector<int64_t>& v) { return shape_name(v); };
      c.name = "matmul_" + std::string(dtype_name(in)) + "_to_" + std::string(dtype_name(res)) + "_" + sname(s.a) +
               (s.ta ? "T" : "") + "_x_" + sname(s.b) + (s.tb ? "T" : "") + "_" + e.name + (special ? "_special" : "");
      const std::string gen = special ? ",rate=0.002" : ",lo=-2,hi=2";
      c.inputs = {(special ? "special:seed=" : "random:seed=") + std::to_string(seed) + gen,
                  "random:seed=" + std::to_string(seed + 1) + ",lo=-2,hi=2"};
      for (int i = 0; i < e.extra_inputs; ++i) c.inputs.push_back("random:seed=" + std::to_string(seed + 2 + i));
      c.build = [=](GraphBuilder& g) {
        ir::Value* a = g.input("a", T(in, s.a));
        ir::Value* b = g.input("b", T(in, s.b));
        ir::Value* mm = g.matmul(a, b, res, s.ta, s.tb);
        g.output(e.apply(g, mm, mm->type.shape));
      };
      out.push_back(std::move(c));
    }
  // A residual added to C, each shape once with the dtype pairs rotating and
  // NaN/inf in C's addend every third shape.
  const Epilogue residual = matmul_epilogues()[3];
  for (size_t i = 0; i < shapes.size(); ++i) {
    const MatmulShape& s = shapes[i];
    auto [in, res] = dtypes[i % dtypes.size()];
    const bool special = i % 3 == 2;
    seed += 3;
    FusionCase c;
    c.name = "matmul_" + std::string(dtype_name(in)) + "_to_" + std::string(dtype_name(res)) + "_" + shape_name(s.a) +
             (s.ta ? "T" : "") + "_x_" + shape_name(s.b) + (s.tb ? "T" : "") + "_residual" +
             (special ? "_special" : "");
    c.inputs = {
        "random:seed=" + std::to_string(seed) + ",lo=-2,hi=2",
        "random:seed=" + std::to_string(seed + 1) + ",lo=-2,hi=2",
        (special ? "special:seed=" : "random:seed=") + std::to_string(seed + 2) + (special ? ",rate=0.01" : "")};
    c.build = [=](GraphBuilder& g) {
      ir::Value* mm = g.matmul(g.input("a", T(in, s.a)), g.input("b", T(in, s.b)), res, s.ta, s.tb);
      g.output(residual.apply(g, mm, mm->type.shape));
    };
    out.push_back(std::move(c));
  }
  return out;
}

// Matmul kernels (a 2-D matmul with one row or column is a reduction:
// matvec_cases below).
std::vector<FusionCase> matmul_cases() {
  const std::vector<MatmulShape> shapes = {
      {{2, 1, 1}, {2, 1, 1}},  // the smallest blocks (batched: 2-D would be a matvec)
      {{5, 7}, {7, 3}},
      {{100, 70}, {70, 50}},
      {{127, 33}, {33, 255}},
      {{96, 256}, {256, 256}},   // one exact CPU block
      {{130, 600}, {600, 300}},  // several K chunks, ragged blocks
      {{64, 0}, {0, 64}},        // K = 0: zeros
      {{0, 8}, {8, 4}},          // no rows
      {{3, 4}, {4, 0}},          // no columns
      {{40, 33}, {50, 33}, false, true},
      {{33, 40}, {33, 50}, true, false},
      {{33, 40}, {50, 33}, true, true},
      {{129, 64}, {136, 64}, false, true},  // aligned transposed B
      {{3, 20, 32}, {3, 32, 40}},           // batched
      {{4, 17, 9}, {9, 13}},                // a shared B (weights)
      {{24, 16}, {2, 3, 16, 8}},            // a shared A, two batch dims
  };
  return matmul_cases_of(shapes, 5000);
}

// Matrix-vector products (M == 1 or N == 1, 2-D), which lowering turns into a
// broadcast product summed over K (passes/matvecs_as_reductions.hpp): every
// layout of the matrix, K = 1, K = 0, no columns, a long K, with the same
// dtypes, epilogues and NaN/inf inputs as the matmul matrix.
inline std::vector<FusionCase> matvec_cases() {
  const std::vector<MatmulShape> shapes = {
      {{1, 1}, {1, 1}},
      {{1, 300}, {300, 77}},
      {{1, 300}, {77, 300}, false, true},
      {{300, 1}, {300, 77}, true, false},
      {{1, 1}, {1, 130}},  // K = 1
      {{1, 0}, {0, 9}},    // K = 0: zeros
      {{1, 5}, {5, 0}},    // no columns
      {{77, 300}, {300, 1}},
      {{300, 77}, {300, 1}, true, false},
      {{77, 300}, {1, 300}, false, true},
      {{1, 4099}, {4099, 33}},  // a long K
  };
  return matmul_cases_of(shapes, 7000);
}

// What a sample of the matrix keeps (sampling.hpp): every shape with its
// transposes, every dtype pair, every epilogue, NaN/inf-laced inputs. Read from
// the name: "matmul_bf16_to_f32_127x33_x_33x255T_bias_gelu_special".
inline std::vector<CaseKey<FusionCase>> matmul_coverage() {
  struct Parts {
    std::string dtypes, shape, epilogue, input;
  };
  auto parts = [](const FusionCase& c) {
    Parts p;
    std::string rest = c.name.substr(std::string("matmul_").size());
    const std::string special = "_special";
    p.input = rest.size() > special.size() && rest.ends_with(special) ? "special" : "random";
    if (p.input == "special") rest.resize(rest.size() - special.size());
    size_t at = 0;
    for (int i = 0; i < 3; ++i) at = rest.find('_', at) + 1;  // "bf16_to_f32_"
    p.dtypes = rest.substr(0, at - 1);
    for (const Epilogue& e : matmul_epilogues())
      if (rest.ends_with("_" + e.name)) p.epilogue = e.name;
    p.shape = rest.substr(at, rest.size() - at - p.epilogue.size() - 1);
    return p;
  };
  return {
      [=](const FusionCase& c) { return parts(c).shape; },
      [=](const FusionCase& c) { return parts(c).dtypes; },
      [=](const FusionCase& c) { return parts(c).epilogue; },
      [=](const FusionCase& c) { return parts(c).input; },
  };
}

}  // namespace
}  // namespace tessera::test
