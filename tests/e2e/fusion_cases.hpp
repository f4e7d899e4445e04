// The pointwise, fused-reduction and row-op (softmax, log_softmax, layer_norm,
// rms_norm) test matrix, shared by the CPU (tests/e2e) and CUDA (tests/gpu)
// end-to-end suites. Each case builds a Graph IR program and names its inputs.
#pragma once
#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ir/graph_dialect.hpp"
#include "ir/ir.hpp"
#include "ir/verify.hpp"
#include "runtime/executable.hpp"
#include "runtime/inputs.hpp"
#include "runtime/tensor.hpp"
#include "sampling.hpp"
#include "tessera/tessera.hpp"

namespace tessera::test {
namespace {

struct FusionCase {
  std::string name;
  std::vector<std::string> inputs;  // generator spec per func input, in order
  std::function<void(GraphBuilder&)> build;
};

inline std::string shape_name(const std::vector<int64_t>& s) {
  std::string out;
  for (int64_t d : s) out += (out.empty() ? "" : "x") + std::to_string(d);
  return out.empty() ? "scalar" : out;
}

inline ir::Type T(DType dt, std::vector<int64_t> s) { return ir::Type::tensor(dt, std::move(s)); }

// The inputs of a case's program, generated from its specs in argument order.
inline std::vector<Tensor> inputs_for(const FusionCase& c, const ir::Module& m) {
  std::vector<Tensor> xs;
  const ir::Region& body = *m.funcs()[0]->regions[0];
  for (size_t i = 0; i < body.args.size(); ++i)
    xs.push_back(generate_input(c.inputs.at(i), body.args[i]->type.dtype, body.args[i]->type.shape));
  return xs;
}

std::vector<FusionCase> row_op_cases() {
  struct ShapeAxis {
    std::vector<int64_t> shape;
    int64_t axis;
  };
  const std::vector<ShapeAxis> shapes = {
      {{37, 129}, -1},   // odd rows, a tail tile
      {{16, 4096}, 1},   // a row that fills whole tiles (resident on CUDA)
      {{3, 70000}, -1},  // long rows: streamed (cluster-resident on CUDA with rows_cluster)
      {{1000}, 0},       // rank 1
      {{64, 100}, 0},    // a leading axis: columns
      {{3, 5, 7}, 1},    // an interior axis: columns with a ragged tile
      {{6, 0}, -1},      // empty rows
      {{0, 6}, -1},      // no rows
      {{2, 0, 3}, -1},   // no rows, a zero extent between
  };
  const std::vector<std::string> ops = {"softmax", "log_softmax", "layer_norm", "rms_norm"};
  const std::vector<DType> dtypes = {DType::F32, DType::BF16, DType::F16, DType::F64};
  std::vector<FusionCase> out;
  int seed = 100;
  for (const auto& sa : shapes)
    for (const auto& op : ops)
      for (DType dt : dtypes) {
        const bool norm = op == "layer_norm" || op == "rms_norm";
        const int64_t rank = static_cast<int64_t>(sa.shape.size());
        if (norm && sa.axis != -1 && sa.axis != rank - 1) continue;  // norms are over the last axis
        for (bool special : {false, true}) {
          if (special && dt != DType::F32 && dt != DType::BF16) continue;
          ++seed;
          FusionCase c;
          c.name = op + "_" + std::string(dtype_name(dt)) + "_" + shape_name(sa.shape) + "_a" +
                   std::to_string(sa.axis < 0 ? sa.axis + rank : sa.axis) + (special ? "_special" : "_random");
          c.inputs.push_back((special ? "special:seed=" : "random:seed=") + std::to_string(seed) +
                             (special ? ",rate=0.01" : ",lo=-4,hi=4"));
          const int64_t n = sa.shape.back();
          if (norm) c.inputs.push_back("random:seed=" + std::to_string(seed + 1000) + ",lo=0.5,hi=1.5");
          if (op == "layer_norm") c.inputs.push_back("random:seed=" + std::to_string(seed + 2000));
          const std::vector<int64_t> shape = sa.shape;
          const int64_t axis = sa.axis;
          c.build = [=](GraphBuilder& g) {
            ir::Value* x = g.input("x", T(dt, shape));
            if (op == "softmax") g.output(g.softmax(x, axis));
            if (op == "log_softmax") g.output(g.log_softmax(x, axis));
            if (op == "rms_norm") g.output(g.rms_norm(x, g.input("w", T(dt, {n}))));
            if (op == "layer_norm") {
              ir::Value* w = g.input("w", T(dt, {n}));
              g.output(g.layer_norm(x, w, g.input("b", T(dt, {n}))));
            }
          };
          out.push_back(std::move(c));
        }
      }
  return out;
}

std::vector<FusionCase> pointwise_cases() {
  std::vector<FusionCase> out;
  int seed = 5000;
  const std::vector<std::string> unary = {"neg",     "abs",  "exp",  "log",       "sqrt", "rsqrt", "tanh",
                                          "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "sin",   "cos",
                                          "exp2",    "log2", "erf",  "floor",     "ceil", "round"};
  for (const auto& fn : unary)
    for (DType dt : {DType::F32, DType::BF16, DType::F64})
      for (bool special : {false, true}) {
        if (special && dt == DType::F64) continue;
        ++seed;
        out.push_back({fn + "_" + std::string(dtype_name(dt)) + (special ? "_special" : "_random"),
                       {(special ? "special:seed=" : "random:seed=") + std::to_string(seed) +
                        (special ? ",rate=0.02" : ",lo=-30,hi=30")},
                       [=](GraphBuilder& g) {
                         g.output(g.unary(fn, g.input("x", T(dt, {37, 129}))));
                       }});
      }
  // clamp: both bounds, one, and min > max (every element is max)
  struct Bounds {
    const char* name;
    double lo, hi;
  };
  const double inf = std::numeric_limits<double>::infinity();
  for (const Bounds& b :
       {Bounds{"both", -1.5, 0.3}, Bounds{"min", -0.25, inf}, Bounds{"max", -inf, 2.0}, Bounds{"crossed", 1.0, -1.0}})
    for (DType dt : {DType::F32, DType::BF16, DType::F64}) {
      ++seed;
      out.push_back({"clamp_" + std::string(dtype_name(dt)) + "_" + b.name,
                     {"special:seed=" + std::to_string(seed) + ",rate=0.02,lo=-3,hi=3"},
                     [=](GraphBuilder& g) {
                       g.output(g.clamp(g.input("x", T(dt, {37, 129})), b.lo, b.hi));
                     }});
    }
  // binary ops over several broadcasts
  struct Pair {
    std::vector<int64_t> a, b;
  };
  const std::vector<Pair> pairs = {{{4, 1, 8}, {3, 1}}, {{2, 3, 40}, {3, 40}}, {{37, 129}, {}}, {{5, 1}, {1, 300}}};
  for (const auto& fn : {"add", "sub", "mul", "div", "max", "min", "pow"})
    for (const auto& pr : pairs)
      for (DType dt : {DType::F32, DType::F16}) {
        ++seed;
        const std::string f = fn;
        const std::string range = f == "pow" ? ",lo=0.1,hi=3" : ",lo=-5,hi=5";
        out.push_back({f + "_" + std::string(dtype_name(dt)) + "_" + shape_name(pr.a) + "_" + shape_name(pr.b),
                       {"special:seed=" + std::to_string(seed) + ",rate=0.01" + range,
                        "random:seed=" + std::to_string(seed + 1) + range},
                       [=](GraphBuilder& g) {
                         ir::Value* a = g.input("a", T(dt, pr.a));
                         g.output(g.binary(f, a, g.input("b", T(dt, pr.b))));
                       }});
      }
  // chains, casts and constants: one kernel each
  out.push_back({"chain_bias_scale_f32", {"random:seed=1", "random:seed=2", "random:seed=3"}, [](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::F32, {64, 300}));
                   ir::Value* b = g.input("b", T(DType::F32, {300}));
                   ir::Value* s = g.input("s", T(DType::F32, {64, 1}));
                   g.output(g.unary("gelu", g.binary("mul", g.binary("add", x, b), s)));
                 }});
  out.push_back({"batch_broadcast_bf16", {"random:seed=4", "random:seed=5"}, [](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::BF16, {3, 17, 33}));
                   ir::Value* y = g.input("y", T(DType::BF16, {17, 33}));
                   g.output(g.unary("tanh", g.binary("sub", x, y)));
                 }});
  out.push_back({"cast_chain_f32_bf16", {"random:seed=6,lo=-3,hi=3"}, [](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::F32, {37, 129}));
                   ir::Value* h = g.cast(x, DType::BF16);
                   g.output(g.cast(g.unary("exp", h), DType::F32));
                 }});
  out.push_back({"cast_f32_to_f16_overflow", {"random:seed=7,lo=-1e5,hi=1e5"}, [](GraphBuilder& g) {
                   g.output(g.cast(g.input("x", T(DType::F32, {1000})), DType::F16));
                 }});
  // between compute types: f32 <-> f64 (computed in f64), f64 -> bf16 (rounded once)
  out.push_back({"cast_f32_to_f64_after_exp", {"special:seed=12,rate=0.02"}, [](GraphBuilder& g) {
                   g.output(g.cast(g.unary("exp", g.input("x", T(DType::F32, {37, 5}))), DType::F64));
                 }});
  out.push_back({"cast_f64_to_f32_and_bf16", {"special:seed=13,rate=0.02,lo=-1e39,hi=1e39"}, [](GraphBuilder& g) {
                   ir::Value* d = g.input("d", T(DType::F64, {300}));
                   g.output(g.cast(d, DType::F32));
                   g.output(g.cast(d, DType::BF16));
                 }});
  out.push_back({"cast_bf16_to_f64_sum", {"special:seed=14,rate=0.01"}, [](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::BF16, {40, 70}));
                   g.output(g.reduce(g.cast(x, DType::F64), "sum", {1}));
                 }});
  out.push_back({"f64_exp_cast_f32_sum", {"random:seed=15"}, [](GraphBuilder& g) {
                   ir::Value* d = g.input("d", T(DType::F64, {40, 70}));
                   g.output(g.reduce(g.cast(g.unary("exp", d), DType::F32), "max", {1}));
                 }});
  out.push_back({"f16_constant_overflows_to_inf", {"random:seed=16,lo=100,hi=1000"}, [](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::F16, {50}));
                   g.output(g.binary("div", x, g.constant(70000.0, T(DType::F16, {}))));  // x / inf = 0
                 }});
  out.push_back({"constant_scale_f32", {"random:seed=8"}, [](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::F32, {37, 129}));
                   g.output(g.binary("mul", x, g.constant(0.125, T(DType::F32, {}))));
                 }});
  out.push_back({"returned_twice_materialized", {"random:seed=9"}, [](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::F32, {100, 33}));
                   ir::Value* sq = g.binary("mul", x, x);  // used twice: computed once, in memory
                   g.output(g.reduce(sq, "sum", {1}));
                   g.output(g.unary("sqrt", sq));
                 }});
  out.push_back({"rank0_all", {"random:seed=10"}, [](GraphBuilder& g) {
                   g.output(g.unary("exp", g.input("x", T(DType::F32, {}))));
                 }});
  out.push_back({"empty_pointwise", {"random:seed=11"}, [](GraphBuilder& g) {
                   g.output(g.unary("exp", g.input("x", T(DType::F32, {0, 7}))));
                 }});
  return out;
}

// Pointwise prologues fused into reductions, and epilogues into row ops.
std::vector<FusionCase> fused_cases() {
  std::vector<FusionCase> out;
  for (DType dt : {DType::F32, DType::BF16}) {
    const std::string d(dtype_name(dt));
    out.push_back({"sum_of_squares_rows_" + d, {"special:seed=20,rate=0.001"}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {37, 1290}));
                     g.output(g.reduce(g.binary("mul", x, x), "sum", {1}));
                   }});
    out.push_back({"max_abs_columns_" + d, {"special:seed=21,rate=0.001"}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {640, 100}));
                     g.output(g.reduce(g.unary("abs", x), "max", {0}));
                   }});
    out.push_back({"mean_exp_shifted_all_" + d, {"random:seed=22", "const:0.5"}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {37, 129}));
                     ir::Value* c = g.input("c", T(dt, {}));
                     g.output(g.reduce(g.unary("exp", g.binary("sub", x, c)), "mean", {0, 1}));
                   }});
    out.push_back({"weighted_row_sum_" + d, {"random:seed=23", "random:seed=24"}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {300, 70}));
                     g.output(g.reduce(g.binary("mul", x, g.input("w", T(dt, {70}))), "sum", {-1}));
                   }});
    out.push_back({"centered_var_keepdims_" + d, {"random:seed=25", "random:seed=26"}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {50, 333}));
                     ir::Value* m = g.input("m", T(dt, {50, 1}));
                     ir::Value* d0 = g.binary("sub", x, m);
                     g.output(g.reduce(g.binary("mul", d0, d0), "mean", {1}, true));
                   }});
    out.push_back({"interior_axis_scaled_" + d, {"random:seed=27", "random:seed=28"}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {4, 5, 600}));
                     ir::Value* s = g.input("s", T(dt, {5, 1}));
                     g.output(g.reduce(g.binary("mul", x, s), "sum", {1}));
                   }});
    out.push_back({"unit_axis_prologue_" + d, {"random:seed=40", "random:seed=41"}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {1, 8}));
                     ir::Value* y = g.input("y", T(dt, {4, 1, 8}));
                     g.output(g.reduce(g.unary("exp", x), "sum", {0}));
                     g.output(g.reduce(g.unary("abs", y), "max", {1}));
                   }});
    out.push_back({"long_split_sum_sq_" + d, {"random:seed=29"}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {2, 400000}));
                     g.output(g.reduce(g.binary("mul", x, x), "sum", {1}));
                   }});
    out.push_back({"rms_norm_scale_silu_" + d,
                   {"special:seed=30,rate=0.001", "random:seed=31,lo=0.5,hi=1.5", "random:seed=32"},
                   [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {33, 1000}));
                     ir::Value* w = g.input("w", T(dt, {1000}));
                     ir::Value* gate = g.input("g", T(dt, {33, 1000}));
                     g.output(g.unary("silu", g.binary("mul", g.rms_norm(x, w), gate)));
                   }});
    out.push_back({"softmax_of_scaled_" + d, {"random:seed=33,lo=-20,hi=20"}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {40, 777}));
                     g.output(g.softmax(g.binary("mul", x, g.constant(0.125, T(dt, {}))), -1));
                   }});
    out.push_back({"layer_norm_residual_" + d,
                   {"random:seed=34", "random:seed=35", "random:seed=36", "random:seed=37"},
                   [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {24, 520}));
                     ir::Value* r = g.input("r", T(dt, {24, 520}));
                     ir::Value* w = g.input("w", T(dt, {520}));
                     ir::Value* b = g.input("b", T(dt, {520}));
                     g.output(g.layer_norm(g.binary("add", x, r), w, b));
                   }});
    out.push_back({"softmax_columns_prologue_" + d, {"random:seed=38", "random:seed=39"}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {200, 30}));
                     ir::Value* bias = g.input("bias", T(dt, {200, 1}));
                     g.output(g.unary("neg", g.softmax(g.binary("add", x, bias), 0)));
                   }});
  }
  return out;
}

// inline: a test file that includes this header may not use it.
// Integers, booleans, comparisons, logic, where, iota and the casts between
// every pair of types (docs/semantics.md), in fused pointwise kernels.
std::vector<FusionCase> integer_cases() {
  std::vector<FusionCase> out;
  int seed = 9000;
  auto next = [&](const std::string& spec) {
    return spec + (spec.find(':') == spec.npos ? ":" : ",") + "seed=" + std::to_string(++seed);
  };
  const std::string wide = "random:lo=-3e9,hi=3e9";  // i32 saturates at both ends; i64 wraps in mul
  // comparisons: floats with NaN/inf, integers near their ends, booleans
  for (const char* fn : {"eq", "ne", "lt", "le", "gt", "ge"})
    for (DType dt : {DType::F32, DType::BF16, DType::I32, DType::I64, DType::I1}) {
      const bool f = is_float(dt);
      const std::string range = dt == DType::I1 ? "random:lo=0,hi=2"
                                : f             ? "special:rate=0.05,lo=-3,hi=3"
                                                : "random:lo=-4,hi=4";
      const std::string f_name = fn;
      out.push_back({f_name + "_" + std::string(dtype_name(dt)) + "_37x129_1x129",
                     {next(range), next(range)},
                     [=](GraphBuilder& g) {
                       ir::Value* a = g.input("a", T(dt, {37, 129}));
                       g.output(g.binary(f_name, a, g.input("b", T(dt, {1, 129}))));
                     }});
    }
  // integer arithmetic wraps; max/min; neg/abs of the most negative value
  for (const char* fn : {"add", "sub", "mul", "max", "min"})
    for (DType dt : {DType::I32, DType::I64}) {
      const std::string f_name = fn;
      out.push_back(
          {f_name + "_" + std::string(dtype_name(dt)) + "_4x1x8_3x1", {next(wide), next(wide)}, [=](GraphBuilder& g) {
             ir::Value* a = g.input("a", T(dt, {4, 1, 8}));
             g.output(g.binary(f_name, a, g.input("b", T(dt, {3, 1}))));
           }});
    }
  for (const char* fn : {"neg", "abs"})
    for (DType dt : {DType::I32, DType::I64}) {
      const std::string f_name = fn;
      out.push_back({f_name + "_" + std::string(dtype_name(dt)) + "_1000", {next(wide)}, [=](GraphBuilder& g) {
                       g.output(g.unary(f_name, g.input("x", T(dt, {1000}))));
                     }});
    }
  // logic over comparisons, where with three-way broadcasting
  out.push_back({"logic_and_or_not_f32", {next("special:rate=0.05"), next("random")}, [](GraphBuilder& g) {
                   ir::Value* a = g.input("a", T(DType::F32, {37, 129}));
                   ir::Value* b = g.input("b", T(DType::F32, {37, 129}));
                   ir::Value* lt = g.binary("lt", a, b);
                   ir::Value* ne = g.binary("ne", a, a);  // NaN
                   g.output(g.binary("or", g.binary("and", lt, g.unary("not", ne)), ne));
                 }});
  for (DType dt : {DType::F32, DType::BF16, DType::I32, DType::I64}) {
    out.push_back({"where_" + std::string(dtype_name(dt)) + "_5x1x7_3x1_7",
                   {next("random:lo=0,hi=2"), next("special:rate=0.05,lo=-9,hi=9"), next("random:lo=-9,hi=9")},
                   [=](GraphBuilder& g) {
                     ir::Value* c = g.input("c", T(DType::I1, {5, 1, 7}));
                     ir::Value* a = g.input("a", T(dt, {3, 1}));
                     g.output(g.where(c, a, g.input("b", T(dt, {7}))));
                   }});
  }
  // iota along each axis, in every result type, and the causal mask
  for (DType dt : {DType::I32, DType::I64, DType::F32, DType::BF16})
    for (int64_t axis : {0, 1, 2}) {
      out.push_back(
          {"iota_" + std::string(dtype_name(dt)) + "_3x300x7_a" + std::to_string(axis), {}, [=](GraphBuilder& g) {
             g.output(g.iota(T(dt, {3, 300, 7}), axis));
           }});
    }
  for (DType dt : {DType::F32, DType::BF16})
    out.push_back(
        {"causal_mask_" + std::string(dtype_name(dt)) + "_37x129", {next("special:rate=0.02")}, [=](GraphBuilder& g) {
           ir::Value* s = g.input("s", T(dt, {37, 129}));
           ir::Value* row = g.iota(T(DType::I32, {37, 1}), 0);
           ir::Value* col = g.iota(T(DType::I32, {129}), 0);
           const double inf = std::numeric_limits<double>::infinity();
           g.output(g.where(g.binary("ge", row, col), s, g.constant(-inf, T(dt, {}))));
         }});
  // casts between every pair of types
  const std::vector<DType> all = {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I1, DType::I32, DType::I64};
  for (DType from : all)
    for (DType to : all) {
      if (from == to || (is_float(from) && is_float(to))) continue;  // float pairs: pointwise_cases
      const std::string range = from == DType::I1 ? "random:lo=0,hi=2"
                                : is_float(from)  ? (from == DType::F16 ? "special:rate=0.05,lo=-7e4,hi=7e4"
                                                                        : "special:rate=0.05,lo=-1e19,hi=1e19")
                                                  : "random:lo=-3e9,hi=3e9";
      out.push_back({"cast_" + std::string(dtype_name(from)) + "_to_" + std::string(dtype_name(to)) + "_1000",
                     {next(range)},
                     [=](GraphBuilder& g) { g.output(g.cast(g.input("x", T(from, {1000})), to)); }});
    }
  // small values: float -> integer truncation and i1 of zero
  out.push_back({"cast_f32_small_to_i32_and_i1", {next("random:lo=-3,hi=3")}, [](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::F32, {1000}));
                   g.output(g.cast(x, DType::I32));
                   g.output(g.cast(g.cast(x, DType::I32), DType::I1));
                 }});
  // integer results computed from floats and fed back: one kernel
  out.push_back({"float_to_int_roundtrip_f32", {next("random:lo=-100,hi=100")}, [](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::F32, {37, 129}));
                   ir::Value* k = g.cast(g.unary("floor", x), DType::I32);
                   ir::Value* k2 = g.binary("mul", k, g.constant(3, T(DType::I32, {})));
                   g.output(g.binary("sub", x, g.cast(k2, DType::F32)));
                 }});
  return out;
}

// Views (transpose, slice, reshape, broadcast_to, split): read in place by
// pointwise kernels (strided lanes for a transposed leaf), copied for the
// kernels that need their own buffer (test_fusion.cpp: a matmul's flags).
std::vector<FusionCase> view_cases() {
  std::vector<FusionCase> out;
  int seed = 9500;
  auto spec = [&](const char* kind) { return std::string(kind) + "seed=" + std::to_string(++seed); };
  for (DType dt : {DType::F32, DType::BF16, DType::I32}) {
    const std::string d(dtype_name(dt));
    const std::string in = is_float(dt) ? spec("special:rate=0.02,") : spec("random:lo=-1e6,hi=1e6,");
    out.push_back({"transpose_add_" + d + "_37x129", {in, spec("random:")}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {37, 129}));
                     ir::Value* y = g.input("y", T(dt, {129, 37}));
                     g.output(g.binary("add", g.transpose(x, {1, 0}), y));
                   }});
    out.push_back({"slice_strided_" + d + "_3x40x33", {in}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {3, 40, 33}));
                     ir::Value* s = g.slice(x, {1, 3, 0}, {3, 40, 33}, {1, 2, 3});
                     g.output(g.binary("max", s, g.constant(0, T(dt, {}))));
                   }});
    out.push_back({"permute_3d_" + d + "_5x7x9", {in}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {5, 7, 9}));
                     g.output(g.unary("neg", g.transpose(x, {2, 0, 1})));
                   }});
    out.push_back({"split_broadcast_" + d + "_8x30", {in}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {8, 30}));
                     std::vector<ir::Value*> parts = g.split(x, 1, {10, 0, 20});
                     g.output(g.binary("sub", g.slice(parts[2], {0, 0}, {8, 20}, {1, 2}), parts[0]));
                     g.output(g.broadcast_to(g.slice(x, {2, 0}, {3, 30}, {1, 1}), {4, 8, 30}));  // returned: copied
                     g.output(parts[1]);                                                         // an empty part
                   }});
  }
  out.push_back({"reshape_of_transposed_f32_12x10", {spec("random:")}, [=](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::F32, {12, 10}));
                   ir::Value* r = g.reshape(g.transpose(x, {1, 0}), {5, 24});  // no view of a view: one copy
                   g.output(g.unary("exp", r));
                 }});
  out.push_back({"reshape_split_heads_bf16_4x96", {spec("random:")}, [=](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::BF16, {4, 96}));
                   ir::Value* h = g.transpose(g.reshape(x, {4, 3, 32}), {1, 0, 2});  // [heads, tokens, dim]
                   g.output(g.unary("silu", h));
                 }});
  for (DType dt : {DType::F32, DType::BF16, DType::I64}) {
    const std::string d(dtype_name(dt));
    out.push_back({"concat_" + d + "_3x5x7",
                   {spec("random:lo=-9,hi=9,"), spec("random:lo=-9,hi=9,"), spec("random:")},
                   [=](GraphBuilder& g) {
                     ir::Value* a = g.input("a", T(dt, {3, 2, 7}));
                     ir::Value* b = g.input("b", T(dt, {3, 3, 7}));
                     ir::Value* c = g.input("c", T(dt, {3, 0, 7}));
                     g.output(g.binary("mul", g.concat({a, c, b}, 1), g.constant(3, T(dt, {}))));  // axis in the middle
                     g.output(g.concat({b, a}, -2));                                               // returned as is
                   }});
  }
  out.push_back(
      {"concat_rope_f32_4x16x64", {spec("special:rate=0.01,"), spec("random:"), spec("random:")}, [=](GraphBuilder& g) {
         ir::Value* x = g.input("x", T(DType::F32, {4, 16, 64}));
         ir::Value* cos = g.input("cos", T(DType::F32, {16, 64}));
         ir::Value* sin = g.input("sin", T(DType::F32, {16, 64}));
         std::vector<ir::Value*> h = g.split(x, -1, {32, 32});
         ir::Value* rot = g.concat({h[1], h[0]}, -1);  // the lane axis
         g.output(g.binary("add", g.binary("mul", x, cos), g.binary("mul", rot, sin)));
       }});
  // Short rows of heads, several a tile on GPUs (tile_rows): a head
  // transpose, RoPE over [tokens, heads, dim] with a broadcast table, and a
  // slice whose rows start off a 16-byte boundary.
  for (DType dt : {DType::F32, DType::BF16}) {
    const std::string d(dtype_name(dt));
    out.push_back({"head_transpose_" + d + "_64x12x128", {spec("special:rate=0.01,")}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {64, 12, 128}));
                     g.output(g.unary("neg", g.transpose(x, {1, 0, 2})));
                   }});
    out.push_back({"rope_heads_" + d + "_24x8x128",
                   {spec("special:rate=0.01,"), spec("random:"), spec("random:")},
                   [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {24, 8, 128}));
                     ir::Value* cos = g.input("cos", T(dt, {24, 1, 128}));
                     ir::Value* sin = g.input("sin", T(dt, {24, 1, 128}));
                     std::vector<ir::Value*> h = g.split(x, -1, {64, 64});
                     ir::Value* rot = g.concat({h[1], h[0]}, -1);
                     ir::Value* y = g.binary("add", g.binary("mul", x, cos), g.binary("mul", rot, sin));
                     g.output(g.transpose(y, {1, 0, 2}));  // [heads, tokens, dim], copied
                   }});
    // RoPE on the q part of a fused QKV buffer: rows of heads 1024 apart, the
    // rotate-half concat read by pieces (tile.load2d_piece) on GPUs.
    out.push_back({"rope_qkv_" + d + "_32x1024",
                   {spec("special:rate=0.01,"), spec("random:"), spec("random:")},
                   [=](GraphBuilder& g) {
                     ir::Value* qkv = g.input("qkv", T(dt, {32, 1024}));
                     ir::Value* cos = g.input("cos", T(dt, {32, 1, 128}));
                     ir::Value* sin = g.input("sin", T(dt, {32, 1, 128}));
                     ir::Value* q = g.reshape(g.split(qkv, 1, {512, 256, 256})[0], {32, 4, 128});
                     std::vector<ir::Value*> h = g.split(q, -1, {64, 64});
                     ir::Value* rot = g.concat({h[1], h[0]}, -1);
                     g.output(g.binary("add", g.binary("mul", q, cos), g.binary("mul", rot, sin)));
                   }});
    out.push_back({"sliced_heads_" + d + "_16x8x136", {spec("special:rate=0.01,")}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {16, 8, 136}));
                     g.output(g.unary("exp", g.slice(x, {0, 0, 4}, {16, 8, 132}, {1, 1, 1})));
                   }});
  }
  // Matmuls read reshaped buffers in place; a sum over a batched matmul's
  // batch axis is one matmul over the batches' concatenated contraction
  // (passes/fold_batch_sums.hpp); a NaN in one head reaches its rows.
  for (DType dt : {DType::F32, DType::BF16}) {
    const std::string d(dtype_name(dt));
    out.push_back({"head_sum_matmul_" + d + "_8x40x32",
                   {spec("special:rate=0.002,"), spec("random:lo=-1,hi=1,")},
                   [=](GraphBuilder& g) {
                     ir::Value* o = g.input("o", T(dt, {8, 40, 32}));
                     ir::Value* w = g.input("w", T(dt, {8, 32, 24}));
                     g.output(g.reduce(g.matmul(o, w, dt), "sum", {0}));
                   }});
    out.push_back({"reshape_into_matmul_" + d + "_4x6x16", {spec("random:"), spec("random:")}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {4, 6, 16}));
                     ir::Value* w = g.input("w", T(dt, {2, 8, 8}));
                     g.output(g.matmul(g.reshape(g.unary("exp", x), {24, 16}), g.reshape(w, {16, 8}), DType::F32));
                   }});
    // A returned reshape of a matmul's result is written by its kernel (no
    // copy; passes/fusion.cpp, written_as): through an epilogue with NaN/inf
    // rows, a transpose pair that is the identity, a flattening; and copied
    // where the result is read again.
    out.push_back({"matmul_returned_reshape_" + d + "_3x5x40x24",
                   {spec("special:rate=0.01,"), spec("random:"), spec("random:")},
                   [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {3, 5, 40}));
                     ir::Value* w = g.input("w", T(dt, {40, 24}));
                     ir::Value* bias = g.input("bias", T(dt, {24}));
                     ir::Value* c = g.binary("add", g.matmul(g.reshape(x, {15, 40}), w, dt), bias);
                     g.output(g.reshape(c, {3, 5, 24}));
                     ir::Value* c2 = g.matmul(g.reshape(x, {15, 40}), w, DType::F32);
                     g.output(g.reshape(g.transpose(g.transpose(c2, {1, 0}), {1, 0}), {360}));
                     ir::Value* c3 = g.matmul(g.reshape(x, {15, 40}), w, dt);
                     g.output(g.reshape(c3, {5, 3, 24}));
                     g.output(g.unary("exp", c3));
                   }});
    // So is a pointwise kernel's: a concat (its coordinates are the
    // yielded shape's, not the returned view's) with NaN/inf, and a product.
    out.push_back({"pointwise_returned_reshape_" + d + "_6x10",
                   {spec("special:rate=0.05,"), spec("random:")},
                   [=](GraphBuilder& g) {
                     ir::Value* a = g.input("a", T(dt, {6, 10}));
                     ir::Value* b = g.input("b", T(dt, {6, 7}));
                     g.output(g.reshape(g.binary("mul", g.concat({a, b}, 1), g.constant(2, T(dt, {}))), {3, 34}));
                     g.output(g.reshape(g.binary("mul", a, a), {60}));
                   }});
  }
  // RMSNorm feeding a matmul's A: its prologue where the block takes one
  // (the CPU; passes/fusion.cpp): NaN/inf rows, K across chunks with a ragged
  // tail, a reshaped x, a batched x, an epilogue beside it; K = 1; no rows.
  for (DType dt : {DType::F32, DType::BF16}) {
    const std::string d(dtype_name(dt));
    struct NormMatmul {
      std::string name;
      std::vector<int64_t> x;  // its last dim is K
      int64_t n;
    };
    for (const NormMatmul& c : {NormMatmul{"37x300x130", {37, 300}, 130}, NormMatmul{"3x13x1030x40", {3, 13, 1030}, 40},
                                NormMatmul{"5x1x7", {5, 1}, 7}, NormMatmul{"0x64x9", {0, 64}, 9}})
      out.push_back({"rms_norm_matmul_" + d + "_" + c.name,
                     {spec("special:rate=0.01,"), spec("random:"), spec("random:lo=-0.2,hi=0.2,"), spec("random:")},
                     [=](GraphBuilder& g) {
                       const int64_t k = c.x.back();
                       ir::Value* x = g.input("x", T(dt, c.x));
                       ir::Value* w = g.input("w", T(dt, {k}));
                       ir::Value* b = g.input("b", T(dt, {k, c.n}));
                       ir::Value* bias = g.input("bias", T(dt, {c.n}));
                       g.output(g.binary("add", g.matmul(g.rms_norm(x, w, 1e-5), b, dt), bias));
                     }});
    out.push_back({"rms_norm_matmul_reshaped_" + d + "_4x9x256",
                   {spec("special:rate=0.01,"), spec("random:"), spec("random:lo=-0.2,hi=0.2,")},
                   [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {4, 9, 256}));
                     ir::Value* w = g.input("w", T(dt, {256}));
                     ir::Value* b = g.input("b", T(dt, {256, 48}));
                     g.output(g.matmul(g.rms_norm(g.reshape(x, {36, 256}), w), b, DType::F32));
                   }});
  }
  out.push_back({"concat_and_read_f32_33x33", {spec("random:"), spec("random:lo=0,hi=2,")}, [=](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::F32, {33, 33}));
                   ir::Value* t = g.transpose(x, {1, 0});  // a leaf a concat and an add both read
                   g.output(g.binary("add", g.concat({t}, 0), t));
                   ir::Value* b = g.input("b", T(DType::I1, {4, 3}));
                   g.output(g.unary("not", g.binary("and", b, b)));  // i1 bytes
                 }});
  out.push_back({"softmax_of_transposed_f32_33x70", {spec("special:rate=0.01,")}, [=](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::F32, {33, 70}));
                   g.output(g.softmax(g.transpose(x, {1, 0}), -1));
                 }});
  // Reductions read a view in place where its layout is linear in their
  // [outer, extent, inner] dims (a transposed extent: strided lanes) and
  // copy it where not (views.test checks which).
  for (DType dt : {DType::F32, DType::BF16}) {
    const std::string d(dtype_name(dt));
    out.push_back({"reduce_of_transposed_" + d + "_33x70", {spec("special:rate=0.01,")}, [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {33, 70}));
                     g.output(g.reduce(g.transpose(x, {1, 0}), "sum", {1}, false));  // rows along a strided extent
                     g.output(g.reduce(g.transpose(x, {1, 0}), "max", {0}, true));   // columns
                   }});
  }
  out.push_back({"reduce_of_slices_f32_6x40x9", {spec("random:")}, [=](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::F32, {6, 40, 9}));
                   ir::Value* s = g.slice(x, {1, 2, 0}, {6, 40, 9}, {2, 3, 1});  // [3, 13, 9] at offset 378
                   g.output(g.reduce(g.unary("exp", s), "mean", {1}, false));    // in place, a prologue
                   g.output(g.reduce(s, "sum", {1, 2}, false));                  // not linear over [13, 9]: copied
                   g.output(g.reduce(g.transpose(x, {2, 0, 1}), "min", {0, 1, 2}, false));
                   g.output(g.reduce(g.transpose(x, {2, 0, 1}), "sum", {0, 2}, false));  // two passes: copied
                   g.output(g.reduce(s, "max", {0}, true));  // a slice with a unit-free outer
                 }});
  return out;
}

// argmax / argmin: rows (the axis innermost) and columns, ties (integers, few
// distinct bf16 values), NaN and infinities, i1, a computed operand, an axis
// of one, and no results at all.
std::vector<FusionCase> arg_reduce_cases() {
  std::vector<FusionCase> out;
  auto one = [&](const std::string& name, std::vector<std::string> inputs, DType dt, std::vector<int64_t> shape,
                 bool max, int64_t axis, bool keepdims) {
    out.push_back({name, std::move(inputs),
                   [=](GraphBuilder& g) { g.output(g.arg_reduce(g.input("x", T(dt, shape)), max, axis, keepdims)); }});
  };
  one("argmax_f32_37x129_a1_special", {"special:seed=9701,rate=0.02"}, DType::F32, {37, 129}, true, 1, false);
  one("argmin_f32_37x129_a1_special", {"special:seed=9702,rate=0.02"}, DType::F32, {37, 129}, false, -1, false);
  one("argmin_bf16_33x70_a0_ties", {"random:seed=9703,lo=1,hi=1.03"}, DType::BF16, {33, 70}, false, 0, true);
  one("argmax_f16_6x300x5_a1_ties", {"random:seed=9704,lo=1,hi=1.004"}, DType::F16, {6, 300, 5}, true, 1, false);
  one("argmax_i32_5x300x7_a1_ties", {"random:seed=9705,lo=-3,hi=3"}, DType::I32, {5, 300, 7}, true, 1, false);
  one("argmin_i64_9x40_a1_ties", {"random:seed=9706,lo=-2,hi=2"}, DType::I64, {9, 40}, false, 1, true);
  one("argmax_f64_5000_a0_special", {"special:seed=9707,rate=0.001"}, DType::F64, {5000}, true, 0, false);
  one("argmax_i1_64x9_a1", {"random:seed=9708,lo=0,hi=2"}, DType::I1, {64, 9}, true, 1, false);
  one("argmin_f32_8x1x3_a1_unit", {"random:seed=9709"}, DType::F32, {8, 1, 3}, false, 1, false);
  one("argmax_f32_0x5_a1_empty", {"random:seed=9710"}, DType::F32, {0, 5}, true, 1, false);
  out.push_back({"argmax_f32_48x96_computed", {"random:seed=9711"}, [](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::F32, {48, 96}));
                   g.output(g.arg_reduce(g.unary("tanh", x), true, 1, false));  // a kernel's result, in memory
                 }});
  return out;
}

// gather (numpy take) and take_along (take_along_axis): every index in range
// ("random:lo=-n,hi=n" gives integers in (-n, n), negatives included), fused
// with a consumer, through a view, of every dtype; the guard kernels run too.
std::vector<FusionCase> index_cases() {
  std::vector<FusionCase> out;
  out.push_back({"gather_f32_1000x96_embedding_special",
                 {"special:seed=9801,rate=0.01", "random:seed=9802,lo=-1000,hi=1000", "random:seed=9803"},
                 [](GraphBuilder& g) {
                   ir::Value* table = g.input("table", T(DType::F32, {1000, 96}));
                   ir::Value* ids = g.input("ids", T(DType::I64, {7, 33}));
                   ir::Value* scale = g.input("scale", T(DType::F32, {96}));
                   g.output(g.binary("mul", g.gather(table, ids, 0), scale));
                 }});
  out.push_back(
      {"gather_bf16_5x300x7_a1", {"random:seed=9804", "random:seed=9805,lo=-300,hi=300"}, [](GraphBuilder& g) {
         ir::Value* x = g.input("x", T(DType::BF16, {5, 300, 7}));
         g.output(g.gather(x, g.input("i", T(DType::I32, {4})), 1));
       }});
  out.push_back({"gather_i64_9x40_rank0_index",
                 {"random:seed=9806,lo=-1e12,hi=1e12", "random:seed=9807,lo=-40,hi=40"},
                 [](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::I64, {9, 40}));
                   g.output(g.gather(x, g.input("i", T(DType::I64, {})), -1));
                 }});
  out.push_back(
      {"gather_i1_64x9_a0", {"random:seed=9808,lo=0,hi=2", "random:seed=9809,lo=-64,hi=64"}, [](GraphBuilder& g) {
         ir::Value* x = g.input("x", T(DType::I1, {64, 9}));
         g.output(g.gather(x, g.input("i", T(DType::I64, {3, 2})), 0));
       }});
  out.push_back({"gather_f16_10x3_no_ids", {"random:seed=9810", "random:seed=9811"}, [](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::F16, {10, 3}));
                   g.output(g.gather(x, g.input("i", T(DType::I64, {0, 2})), 0));
                 }});
  out.push_back(
      {"gather_f32_40x70_transposed_view", {"random:seed=9812", "random:seed=9813,lo=-40,hi=40"}, [](GraphBuilder& g) {
         ir::Value* x = g.input("x", T(DType::F32, {40, 70}));
         g.output(g.gather(g.transpose(x, {1, 0}), g.input("i", T(DType::I32, {5, 3})), 1));
       }});
  out.push_back({"take_along_f32_37x129_log_softmax_special",
                 {"special:seed=9814,rate=0.02", "random:seed=9815,lo=-129,hi=129"},
                 [](GraphBuilder& g) {
                   ir::Value* x = g.input("x", T(DType::F32, {37, 129}));
                   ir::Value* labels = g.input("labels", T(DType::I64, {37, 1}));
                   g.output(g.take_along(g.log_softmax(x, -1), labels, 1));
                 }});
  out.push_back(
      {"take_along_f64_1x50x8_broadcast", {"random:seed=9816", "random:seed=9817,lo=-8,hi=8"}, [](GraphBuilder& g) {
         ir::Value* x = g.input("x", T(DType::F64, {1, 50, 8}));
         g.output(g.take_along(x, g.input("i", T(DType::I32, {3, 1, 5})), 2));
       }});
  // cross-entropy's label logit: the row kernel picks it (resident, streamed and online rows)
  auto pick = [&](const std::string& name, DType dt, std::vector<int64_t> shape, std::vector<int64_t> idx,
                  const std::string& x_spec, int seed) {
    const std::string n = std::to_string(shape.back());
    out.push_back(
        {name, {x_spec, "random:seed=" + std::to_string(seed) + ",lo=-" + n + ",hi=" + n}, [=](GraphBuilder& g) {
           ir::Value* x = g.input("x", T(dt, shape));
           ir::Value* f = dt == DType::F32 || dt == DType::F64 ? x : g.cast(x, DType::F32);
           ir::Value* t = g.take_along(g.log_softmax(f, -1), g.input("labels", T(DType::I32, idx)), -1);
           g.output(g.reduce_all(g.unary("neg", t), "sum"));
         }});
  };
  pick("pick_bf16_300x4096_cross_entropy", DType::BF16, {300, 4096}, {300, 1}, "random:seed=9818,lo=-8,hi=8", 9819);
  pick("pick_f32_3x70000_long_rows_special", DType::F32, {3, 70000}, {3, 1}, "special:seed=9820,rate=0.001", 9821);
  pick("take_along_f64_4x5x50_unpicked_broadcast_index", DType::F64, {4, 5, 50}, {1, 5, 1}, "random:seed=9822", 9823);
  pick("pick_f16_0x30_no_rows", DType::F16, {0, 30}, {0, 1}, "random:seed=9824", 9825);
  // scatter_add, gather's transpose: repeated and negative indices, slices
  // wider than a tile, a rank-0 index, no indices, NaN and inf in the values
  auto scatter = [&](const std::string& name, DType dt, std::vector<int64_t> result, int64_t axis, DType it,
                     std::vector<int64_t> ids, const std::string& g_spec, int seed) {
    const std::string n = std::to_string(result[axis]);
    out.push_back(
        {name, {g_spec, "random:seed=" + std::to_string(seed) + ",lo=-" + n + ",hi=" + n}, [=](GraphBuilder& g) {
           std::vector<int64_t> gs(result.begin(), result.begin() + axis);
           gs.insert(gs.end(), ids.begin(), ids.end());
           gs.insert(gs.end(), result.begin() + axis + 1, result.end());
           ir::Value* v = g.input("g", T(dt, gs));
           g.output(g.scatter_add(v, g.input("ids", T(it, ids)), axis, T(dt, result)));
         }});
  };
  scatter("scatter_add_f32_1000x96_embedding_grad", DType::F32, {1000, 96}, 0, DType::I64, {7, 33}, "random:seed=9826",
          9827);
  scatter("scatter_add_bf16_4x3x6_a1_repeated", DType::BF16, {4, 3, 6}, 1, DType::I32, {5, 4}, "random:seed=9828",
          9829);
  scatter("scatter_add_f64_50x8_rank0_index", DType::F64, {50, 8}, 0, DType::I64, {}, "random:seed=9830", 9831);
  scatter("scatter_add_f32_3x5000_a0_wide", DType::F32, {3, 5000}, 0, DType::I32, {9}, "random:seed=9832", 9833);
  scatter("scatter_add_f16_10x3_no_ids", DType::F16, {10, 3}, 0, DType::I64, {0, 2}, "random:seed=9834", 9835);
  scatter("scatter_add_f32_20x7_special", DType::F32, {20, 7}, 0, DType::I64, {40}, "special:seed=9836,rate=0.05",
          9837);
  return out;
}

// The row ops' gradients (tessera grad's softmax_grad, log_softmax_grad,
// layer_norm_grad, rms_norm_grad): rows with a tail, rows that fill tiles,
// long streamed rows, columns (softmax), several rows a program for the
// norms' partial sums (a ragged last program), empty extents; a fused dy
// prologue and dx epilogue.
std::vector<FusionCase> row_grad_cases() {
  struct ShapeAxis {
    std::vector<int64_t> shape;
    int64_t axis;
  };
  const std::vector<ShapeAxis> shapes = {
      {{37, 129}, -1}, {{16, 4096}, 1}, {{3, 70000}, -1}, {{1000}, 0},  {{3000, 96}, -1},
      {{64, 100}, 0},  {{3, 5, 7}, 1},  {{6, 0}, -1},     {{0, 6}, -1},
  };
  const std::vector<std::string> ops = {"softmax_grad", "log_softmax_grad", "layer_norm_grad", "rms_norm_grad"};
  std::vector<FusionCase> out;
  int seed = 9900;
  for (const auto& sa : shapes)
    for (const auto& op : ops)
      for (DType dt : {DType::F32, DType::BF16, DType::F64}) {
        const bool norm = op == "layer_norm_grad" || op == "rms_norm_grad";
        const int64_t rank = static_cast<int64_t>(sa.shape.size());
        if (norm && sa.axis != -1 && sa.axis != rank - 1) continue;
        for (bool special : {false, true}) {
          if (special && dt != DType::F32) continue;
          seed += 3;
          FusionCase c;
          c.name = op + "_" + std::string(dtype_name(dt)) + "_" + shape_name(sa.shape) + "_a" +
                   std::to_string(sa.axis < 0 ? sa.axis + rank : sa.axis) + (special ? "_special" : "_random");
          // x (norms), else y: probabilities for softmax, log-probabilities for log_softmax
          const std::string first = op == "softmax_grad"       ? ",lo=0,hi=1"
                                    : op == "log_softmax_grad" ? ",lo=-12,hi=0"
                                                               : "";
          c.inputs.push_back((special ? "special:seed=" : "random:seed=") + std::to_string(seed) +
                             (special ? ",rate=0.01" : first));
          if (norm) c.inputs.push_back("random:seed=" + std::to_string(seed + 1) + ",lo=0.5,hi=1.5");
          c.inputs.push_back("random:seed=" + std::to_string(seed + 2));
          const std::vector<int64_t> shape = sa.shape;
          const int64_t axis = sa.axis;
          const int64_t n = shape.back();
          c.build = [=](GraphBuilder& g) {
            ir::Value* x = g.input(norm ? "x" : "y", T(dt, shape));
            ir::Value* w = norm ? g.input("w", T(dt, {n})) : nullptr;
            ir::Value* dy = g.input("dy", T(dt, shape));
            if (op == "softmax_grad") g.output(g.softmax_grad(x, dy, axis));
            if (op == "log_softmax_grad") g.output(g.log_softmax_grad(x, dy, axis));
            if (norm)
              for (ir::Value* r : op == "layer_norm_grad" ? g.layer_norm_grad(x, w, dy) : g.rms_norm_grad(x, w, dy))
                g.output(r);
          };
          out.push_back(std::move(c));
        }
      }
  // dy computed in the kernel (a prologue), dx with a residual gradient added (an epilogue)
  for (DType dt : {DType::F32, DType::BF16}) {
    const std::string d(dtype_name(dt));
    out.push_back({"layer_norm_grad_" + d + "_300x384_fused",
                   {"random:seed=9990", "random:seed=9991,lo=0.5,hi=1.5", "random:seed=9992", "random:seed=9993",
                    "random:seed=9994"},
                   [=](GraphBuilder& g) {
                     ir::Value* x = g.input("x", T(dt, {300, 384}));
                     ir::Value* w = g.input("w", T(dt, {384}));
                     ir::Value* dy = g.binary("mul", g.input("g", T(dt, {300, 384})), g.input("s", T(dt, {384})));
                     std::vector<ir::Value*> d = g.layer_norm_grad(x, w, dy);
                     g.output(g.binary("add", d[0], g.input("r", T(dt, {300, 384}))));
                     g.output(d[1]);
                     g.output(d[2]);
                   }});
    out.push_back({"softmax_grad_" + d + "_64x1000_fused",
                   {"random:seed=9995,lo=0,hi=1", "random:seed=9996", "random:seed=9997"},
                   [=](GraphBuilder& g) {
                     ir::Value* y = g.input("y", T(dt, {64, 1000}));
                     ir::Value* dy = g.unary("neg", g.input("g", T(dt, {64, 1000})));
                     g.output(g.binary("mul", g.softmax_grad(y, dy, -1), g.input("m", T(dt, {64, 1}))));
                   }});
  }
  return out;
}

inline std::vector<FusionCase> all_fusion_cases() {
  std::vector<FusionCase> out = row_op_cases();
  for (auto* more :
       {&pointwise_cases, &fused_cases, &integer_cases, &view_cases, &arg_reduce_cases, &index_cases, &row_grad_cases})
    for (auto& c : more()) out.push_back(std::move(c));
  return out;
}

// A case's name read as axes, split at its first dtype token:
// "log_softmax_bf16_37x129_a1_special" is op "log_softmax", dtype "bf16",
// shape "37x129_a1", input "special". A name with no dtype is an op of its own.
struct CaseAxes {
  std::string op, dtype, shape, input;
};

inline CaseAxes case_axes(const std::string& name) {
  std::vector<std::string> tokens;
  for (size_t at = 0, end; at <= name.size(); at = end + 1) {
    end = std::min(name.find('_', at), name.size());
    tokens.push_back(name.substr(at, end - at));
  }
  CaseAxes a;
  if (tokens.back() == "random" || tokens.back() == "special") {
    a.input = tokens.back();
    tokens.pop_back();
  }
  auto join = [&](size_t from, size_t to) {
    std::string s;
    for (size_t i = from; i < to; ++i) s += (i > from ? "_" : "") + tokens[i];
    return s;
  };
  size_t d = 0;
  while (d < tokens.size() && !parse_dtype(tokens[d])) ++d;
  if (d == 0 || d == tokens.size()) {
    a.op = join(0, tokens.size());
  } else {
    a.op = join(0, d), a.dtype = tokens[d], a.shape = join(d + 1, tokens.size());
  }
  return a;
}

// What a sample of the matrix keeps (sampling.hpp): every op, every dtype,
// every shape (row ops pick their strategy by shape), every op on random and on
// NaN/inf-laced inputs where it has both. Every op in every dtype is the full
// matrix's job (TESSERA_TEST_FULL=1).
inline std::vector<CaseKey<FusionCase>> fusion_coverage() {
  return {
      [](const FusionCase& c) { return case_axes(c.name).op; },
      [](const FusionCase& c) { return case_axes(c.name).dtype; },
      [](const FusionCase& c) { return case_axes(c.name).shape; },
      [](const FusionCase& c) { return case_axes(c.name).op + " " + case_axes(c.name).input; },
  };
}

inline std::string fusion_case_name(const FusionCase& c) { return c.name; }

}  // namespace
}  // namespace tessera::test
