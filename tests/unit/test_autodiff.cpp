// tessera grad (passes/autodiff): every rule against central finite
// differences of the loss, both evaluated by the oracle in double, so what is
// checked is the calculus and not the kernels (tests/ir/grad.test runs the
// gradient programs' kernels against the oracle). Then the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "error_code.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/parser.hpp"
#include "oracle/reference.hpp"
#include "passes/autodiff.hpp"

namespace tessera {
namespace {

struct GradCase {
  const char* name;
  const char* program;  // a func whose first result is a rank-0 loss; %t is never differentiated
};

// Inputs: deterministic, |x| in [0.25, 1.25] (away from the kinks of relu,
// abs, max and clamp at 0, and from ties).
std::vector<Tensor> inputs_for(const ir::Op& f, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.25, 1.25);
  std::vector<Tensor> in;
  for (const auto& a : f.regions[0]->args) {
    Tensor t = Tensor::empty(a->type.dtype, a->type.shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, (rng() & 1 ? 1 : -1) * u(rng));
    in.push_back(std::move(t));
  }
  return in;
}

double loss_at(const ir::Module& m, const std::vector<Tensor>& in) { return oracle::evaluate(m, "", in)[0].value[0]; }

void check_gradients(const GradCase& c) {
  auto m = ir::parse(c.program, c.name);
  const ir::Op& f = *m->funcs()[0];
  std::vector<std::string> wrt;
  for (const auto& a : f.regions[0]->args)
    if (a->name != "t") wrt.push_back(a->name);
  auto g = passes::differentiate(*m, "", wrt);
  std::vector<Tensor> in = inputs_for(f, 7);
  const auto grads = oracle::evaluate(*g, "", in);
  EXPECT_NEAR(grads[0].value[0], loss_at(*m, in), 1e-12 * (1 + std::abs(grads[0].value[0]))) << "the loss itself";
  size_t out = 1;
  for (size_t p = 0; p < f.regions[0]->args.size(); ++p) {
    if (f.regions[0]->args[p]->name == "t") continue;
    const oracle::Expected& grad = grads[out++];
    ASSERT_EQ(grad.shape, in[p].shape());
    for (int64_t i = 0; i < in[p].numel(); ++i) {
      // The step as the input's dtype holds it: the quotient uses the real delta.
      const double x = in[p].get(i), h = 1e-3 * std::max(1.0, std::abs(x));
      in[p].set(i, x + h);
      const double xp = in[p].get(i), lp = loss_at(*m, in);
      in[p].set(i, x - h);
      const double xm = in[p].get(i), lm = loss_at(*m, in);
      in[p].set(i, x);
      const double fd = (lp - lm) / (xp - xm), got = grad.value[i];
      EXPECT_NEAR(got, fd, 2e-5 * (1 + std::abs(fd)))
          << c.name << ": d loss / d %" << f.regions[0]->args[p]->name << "[" << i << "]";
    }
  }
}

class Gradients : public ::testing::TestWithParam<GradCase> {};
TEST_P(Gradients, MatchCentralDifferences) { check_gradients(GetParam()); }

// sum(f(x) * t): t weighs the elements so that no gradient is uniform.
#define UNARY(NAME, BODY)                                                                               \
  GradCase {                                                                                            \
    NAME, "func @f(%x: tensor<3x4xf32>, %t: tensor<3x4xf32>) -> tensor<f32> {\n" BODY                   \
          "  %w = tessera.mul %y, %t : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>\n"         \
          "  %l = tessera.reduce %w {kind = \"sum\", axes = [0, 1]} : tensor<3x4xf32> -> tensor<f32>\n" \
          "  return %l : tensor<f32>\n}\n"                                                              \
  }
#define POSITIVE                                                                        \
  "  %s = tessera.mul %x, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>\n" \
  "  %p = tessera.add %s, 0.5 : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>\n"
#define FN(F, ARG) "  %y = tessera." F " %" ARG " : tensor<3x4xf32> -> tensor<3x4xf32>\n"

INSTANTIATE_TEST_SUITE_P(
    Unary, Gradients,
    ::testing::Values(UNARY("neg", FN("neg", "x")), UNARY("exp", FN("exp", "x")), UNARY("exp2", FN("exp2", "x")),
                      UNARY("log", POSITIVE FN("log", "p")), UNARY("log2", POSITIVE FN("log2", "p")),
                      UNARY("sqrt", POSITIVE FN("sqrt", "p")), UNARY("rsqrt", POSITIVE FN("rsqrt", "p")),
                      UNARY("tanh", FN("tanh", "x")), UNARY("sigmoid", FN("sigmoid", "x")),
                      UNARY("relu", FN("relu", "x")), UNARY("silu", FN("silu", "x")), UNARY("sin", FN("sin", "x")),
                      UNARY("cos", FN("cos", "x")), UNARY("erf", FN("erf", "x")), UNARY("abs", FN("abs", "x")),
                      UNARY("gelu", FN("gelu", "x")),
                      UNARY("gelu_tanh",
                            "  %y = tessera.gelu %x {approximate = \"tanh\"} : tensor<3x4xf32> -> tensor<3x4xf32>\n"),
                      UNARY("clamp",
                            "  %y = tessera.clamp %x {min = -0.7, max = 0.9} : tensor<3x4xf32> -> "
                            "tensor<3x4xf32>\n"),
                      UNARY("clamp_above",
                            "  %y = tessera.clamp %x {max = 0.6} : tensor<3x4xf32> -> "
                            "tensor<3x4xf32>\n"),
                      UNARY("cast_f64",
                            "  %d = tessera.cast %x : tensor<3x4xf32> -> tensor<3x4xf64>\n"
                            "  %e = tessera.exp %d : tensor<3x4xf64> -> tensor<3x4xf64>\n"
                            "  %y = tessera.cast %e : tensor<3x4xf64> -> tensor<3x4xf32>\n"),
                      UNARY("used_twice",
                            "  %y = tessera.mul %x, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> "
                            "tensor<3x4xf32>\n")),
    [](const auto& info) { return std::string(info.param.name); });

// sum(op(a, b) * t) with b broadcast from [4] and from [3x1].
#define BINARY(NAME, OP, BSHAPE)                                                                        \
  GradCase {                                                                                            \
    NAME, "func @f(%a: tensor<3x4xf32>, %b: tensor<" BSHAPE                                             \
          "xf32>, %t: tensor<3x4xf32>) -> tensor<f32> {\n"                                              \
          "  %y = tessera." OP " %a, %b : (tensor<3x4xf32>, tensor<" BSHAPE                             \
          "xf32>) -> tensor<3x4xf32>\n"                                                                 \
          "  %w = tessera.mul %y, %t : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>\n"         \
          "  %l = tessera.reduce %w {kind = \"sum\", axes = [0, 1]} : tensor<3x4xf32> -> tensor<f32>\n" \
          "  return %l : tensor<f32>\n}\n"                                                              \
  }
INSTANTIATE_TEST_SUITE_P(Binary, Gradients,
                         ::testing::Values(BINARY("add_row", "add", "4"), BINARY("sub_col", "sub", "3x1"),
                                           BINARY("mul_row", "mul", "4"), BINARY("div_col", "div", "3x1"),
                                           BINARY("max_row", "max", "4"), BINARY("min_col", "min", "3x1"),
                                           BINARY("mul_same", "mul", "3x4"),
                                           // a positive base: p = a * a + 0.5
                                           GradCase{"pow",
                                                    "func @f(%a: tensor<3x4xf32>, %b: tensor<4xf32>, "
                                                    "%t: tensor<3x4xf32>) -> tensor<f32> {\n"
                                                    "  %s = tessera.mul %a, %a : (tensor<3x4xf32>, "
                                                    "tensor<3x4xf32>) -> tensor<3x4xf32>\n"
                                                    "  %p = tessera.add %s, 0.5 : (tensor<3x4xf32>, "
                                                    "tensor<f32>) -> tensor<3x4xf32>\n"
                                                    "  %y = tessera.pow %p, %b : (tensor<3x4xf32>, "
                                                    "tensor<4xf32>) -> tensor<3x4xf32>\n"
                                                    "  %w = tessera.mul %y, %t : (tensor<3x4xf32>, "
                                                    "tensor<3x4xf32>) -> tensor<3x4xf32>\n"
                                                    "  %l = tessera.reduce %w {kind = \"sum\", axes = [0, 1]} "
                                                    ": tensor<3x4xf32> -> tensor<f32>\n"
                                                    "  return %l : tensor<f32>\n}\n"}),
                         [](const auto& info) { return std::string(info.param.name); });

#define LOSS(NAME, ARGS, BODY, LAST) \
  GradCase { NAME, "func @f(" ARGS ") -> tensor<f32> {\n" BODY "  return %" LAST " : tensor<f32>\n}\n" }

INSTANTIATE_TEST_SUITE_P(
    Reductions, Gradients,
    ::testing::Values(
        LOSS("sum_keepdims", "%x: tensor<3x4xf32>, %t: tensor<3x1xf32>",
             "  %r = tessera.reduce %x {kind = \"sum\", axes = [1], keepdims = true} : tensor<3x4xf32> -> "
             "tensor<3x1xf32>\n"
             "  %w = tessera.mul %r, %t : (tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<3x1xf32>\n"
             "  %l = tessera.reduce %w {kind = \"sum\", axes = [0, 1]} : tensor<3x1xf32> -> tensor<f32>\n",
             "l"),
        LOSS("mean_then_square", "%x: tensor<3x4xf32>",
             "  %r = tessera.reduce %x {kind = \"mean\", axes = [0]} : tensor<3x4xf32> -> tensor<4xf32>\n"
             "  %s = tessera.mul %r, %r : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
             "  %l = tessera.reduce %s {kind = \"sum\", axes = [0]} : tensor<4xf32> -> tensor<f32>\n",
             "l"),
        LOSS("max_rows", "%x: tensor<3x4xf32>, %t: tensor<3xf32>",
             "  %r = tessera.reduce %x {kind = \"max\", axes = [1]} : tensor<3x4xf32> -> tensor<3xf32>\n"
             "  %w = tessera.mul %r, %t : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>\n"
             "  %l = tessera.reduce %w {kind = \"sum\", axes = [0]} : tensor<3xf32> -> tensor<f32>\n",
             "l"),
        LOSS("min_all", "%x: tensor<3x4xf32>",
             "  %l = tessera.reduce %x {kind = \"min\", axes = [0, 1]} : tensor<3x4xf32> -> tensor<f32>\n", "l")),
    [](const auto& info) { return std::string(info.param.name); });

// sum(matmul(a, b) * t) for each layout, batched and shared operands.
#define MATMUL(NAME, A, B, C, ATTRS)                                                                    \
  LOSS(NAME, "%a: tensor<" A "xf32>, %b: tensor<" B "xf32>, %t: tensor<" C "xf32>",                     \
       "  %c = tessera.matmul %a, %b " ATTRS ": (tensor<" A "xf32>, tensor<" B "xf32>) -> tensor<" C    \
       "xf32>\n"                                                                                        \
       "  %w = tessera.mul %c, %t : (tensor<" C "xf32>, tensor<" C "xf32>) -> tensor<" C                \
       "xf32>\n"                                                                                        \
       "  %l = tessera.reduce %w {kind = \"sum\", axes = [0, 1]} : tensor<" C "xf32> -> tensor<f32>\n", \
       "l")
INSTANTIATE_TEST_SUITE_P(
    Matmul, Gradients,
    ::testing::Values(MATMUL("nn", "3x5", "5x4", "3x4", ""), MATMUL("tn", "5x3", "5x4", "3x4", "{transpose_a = true} "),
                      MATMUL("nt", "3x5", "4x5", "3x4", "{transpose_b = true} "),
                      MATMUL("tt", "5x3", "4x5", "3x4", "{transpose_a = true, transpose_b = true} ")),
    [](const auto& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    BatchedMatmul, Gradients,
    ::testing::Values(
        LOSS("shared_b", "%a: tensor<2x3x5xf32>, %b: tensor<5x4xf32>, %t: tensor<2x3x4xf32>",
             "  %c = tessera.matmul %a, %b : (tensor<2x3x5xf32>, tensor<5x4xf32>) -> tensor<2x3x4xf32>\n"
             "  %w = tessera.mul %c, %t : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>\n"
             "  %l = tessera.reduce %w {kind = \"sum\", axes = [0, 1, 2]} : tensor<2x3x4xf32> -> tensor<f32>\n",
             "l"),
        LOSS("both_batched_tb", "%a: tensor<2x3x5xf32>, %b: tensor<2x4x5xf32>, %t: tensor<2x3x4xf32>",
             "  %c = tessera.matmul %a, %b {transpose_b = true} : (tensor<2x3x5xf32>, tensor<2x4x5xf32>) -> "
             "tensor<2x3x4xf32>\n"
             "  %w = tessera.mul %c, %t : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>\n"
             "  %l = tessera.reduce %w {kind = \"sum\", axes = [0, 1, 2]} : tensor<2x3x4xf32> -> tensor<f32>\n",
             "l")),
    [](const auto& info) { return std::string(info.param.name); });

#define WEIGHTED(X)                                                \
  "  %w = tessera.mul %" X                                         \
  ", %t : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>\n" \
  "  %l = tessera.reduce %w {kind = \"sum\", axes = [0, 1]} : tensor<3x4xf32> -> tensor<f32>\n"
INSTANTIATE_TEST_SUITE_P(
    ViewsAndRows, Gradients,
    ::testing::Values(
        LOSS("reshape_transpose", "%x: tensor<4x3xf32>, %t: tensor<3x4xf32>",
             "  %r = tessera.reshape %x : tensor<4x3xf32> -> tensor<2x6xf32>\n"
             "  %s = tessera.reshape %r : tensor<2x6xf32> -> tensor<4x3xf32>\n"
             "  %y = tessera.transpose %s {perm = [1, 0]} : tensor<4x3xf32> -> tensor<3x4xf32>\n" WEIGHTED("y"),
             "l"),
        LOSS("broadcast_to", "%x: tensor<1x4xf32>, %t: tensor<3x4xf32>",
             "  %y = tessera.broadcast_to %x : tensor<1x4xf32> -> tensor<3x4xf32>\n"
             "  %z = tessera.mul %y, %y : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>\n" WEIGHTED("z"),
             "l"),
        LOSS("split_concat", "%x: tensor<3x4xf32>, %t: tensor<3x4xf32>",
             "  %p, %q = tessera.split %x {axis = 1, sizes = [1, 3]} : tensor<3x4xf32> -> (tensor<3x1xf32>, "
             "tensor<3x3xf32>)\n"
             "  %e = tessera.exp %q : tensor<3x3xf32> -> tensor<3x3xf32>\n"
             "  %y = tessera.concat %e, %p {axis = -1} : (tensor<3x3xf32>, tensor<3x1xf32>) -> "
             "tensor<3x4xf32>\n" WEIGHTED("y"),
             "l"),
        LOSS("split_part_unused", "%x: tensor<3x4xf32>, %t: tensor<3x2xf32>",
             "  %p, %q = tessera.split %x {axis = 1, sizes = [2, 2]} : tensor<3x4xf32> -> (tensor<3x2xf32>, "
             "tensor<3x2xf32>)\n"
             "  %w = tessera.mul %q, %t : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>\n"
             "  %l = tessera.reduce %w {kind = \"sum\", axes = [0, 1]} : tensor<3x2xf32> -> tensor<f32>\n",
             "l"),
        LOSS("where", "%x: tensor<3x4xf32>, %z: tensor<4xf32>, %t: tensor<3x4xf32>",
             "  %c = tessera.gt %x, 0.0 : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xi1>\n"
             "  %y = tessera.where %c, %x, %z : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<4xf32>) -> "
             "tensor<3x4xf32>\n" WEIGHTED("y"),
             "l"),
        LOSS("softmax_axis0", "%x: tensor<3x4xf32>, %t: tensor<3x4xf32>",
             "  %y = tessera.softmax %x {axis = 0} : tensor<3x4xf32> -> tensor<3x4xf32>\n" WEIGHTED("y"), "l"),
        LOSS("log_softmax", "%x: tensor<3x4xf32>, %t: tensor<3x4xf32>",
             "  %y = tessera.log_softmax %x {axis = -1} : tensor<3x4xf32> -> tensor<3x4xf32>\n" WEIGHTED("y"), "l"),
        LOSS("rms_norm", "%x: tensor<3x4xf32>, %g: tensor<4xf32>, %t: tensor<3x4xf32>",
             "  %y = tessera.rms_norm %x, %g {eps = 1e-05} : (tensor<3x4xf32>, tensor<4xf32>) -> "
             "tensor<3x4xf32>\n" WEIGHTED("y"),
             "l"),
        LOSS("layer_norm", "%x: tensor<3x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %t: tensor<3x4xf32>",
             "  %y = tessera.layer_norm %x, %g, %b {eps = 1e-05} : (tensor<3x4xf32>, tensor<4xf32>, tensor<4xf32>) "
             "-> tensor<3x4xf32>\n" WEIGHTED("y"),
             "l")),
    [](const auto& info) { return std::string(info.param.name); });

// The indices (%t) hold -1, 0 and 1 (inputs_for's values truncated): some
// repeat, so gradients that land on one element add up.
#define SQUARED_SUM(Y, TYPE, AXES)                                    \
  "  %z = tessera.mul %" Y ", %" Y " : (" TYPE ", " TYPE ") -> " TYPE \
  "\n"                                                                \
  "  %l = tessera.reduce %z {kind = \"sum\", axes = " AXES "} : " TYPE " -> tensor<f32>\n"
INSTANTIATE_TEST_SUITE_P(
    Indexing, Gradients,
    ::testing::Values(
        LOSS("gather_rows", "%x: tensor<5x3xf32>, %t: tensor<2x4xi64>",
             "  %y = tessera.gather %x, %t {axis = 0} : (tensor<5x3xf32>, tensor<2x4xi64>) -> "
             "tensor<2x4x3xf32>\n" SQUARED_SUM("y", "tensor<2x4x3xf32>", "[0, 1, 2]"),
             "l"),
        LOSS("gather_middle_axis", "%x: tensor<2x4x3xf32>, %t: tensor<3xi32>",
             "  %y = tessera.gather %x, %t {axis = 1} : (tensor<2x4x3xf32>, tensor<3xi32>) -> "
             "tensor<2x3x3xf32>\n" SQUARED_SUM("y", "tensor<2x3x3xf32>", "[0, 1, 2]"),
             "l"),
        LOSS("gather_rank0_index", "%x: tensor<3x4xf32>, %t: tensor<i64>",
             "  %y = tessera.gather %x, %t {axis = -1} : (tensor<3x4xf32>, tensor<i64>) -> tensor<3xf32>\n" SQUARED_SUM(
                 "y", "tensor<3xf32>", "[0]"),
             "l"),
        LOSS("take_along_broadcast", "%x: tensor<1x6xf32>, %t: tensor<3x2xi64>",
             "  %y = tessera.take_along %x, %t {axis = 1} : (tensor<1x6xf32>, tensor<3x2xi64>) -> "
             "tensor<3x2xf32>\n" SQUARED_SUM("y", "tensor<3x2xf32>", "[0, 1]"),
             "l"),
        LOSS("cross_entropy", "%x: tensor<4x5xf32>, %t: tensor<4x1xi64>",
             "  %p = tessera.log_softmax %x {axis = -1} : tensor<4x5xf32> -> tensor<4x5xf32>\n"
             "  %y = tessera.take_along %p, %t {axis = -1} : (tensor<4x5xf32>, tensor<4x1xi64>) -> tensor<4x1xf32>\n"
             "  %l = tessera.reduce %y {kind = \"mean\", axes = [0, 1]} : tensor<4x1xf32> -> tensor<f32>\n",
             "l")),
    [](const auto& info) { return std::string(info.param.name); });

// Attention through tessera.attention_grad: grouped-query heads with causal
// aligned to the end (Sq != Sk), full attention with its own scale, and one
// tensor as q, k and v (its three gradients add up).
#define ATTN_TYPES(Q, KV) "(tensor<" Q "xf32>, tensor<" KV "xf32>, tensor<" KV "xf32>) -> tensor<" Q "xf32>\n"
#define WEIGHTED_O(Q)                                                               \
  "  %w = tessera.mul %o, %t : (tensor<" Q "xf32>, tensor<" Q "xf32>) -> tensor<" Q \
  "xf32>\n"                                                                         \
  "  %l = tessera.reduce %w {kind = \"sum\", axes = [0, 1, 2, 3]} : tensor<" Q "xf32> -> tensor<f32>\n"
INSTANTIATE_TEST_SUITE_P(
    Attention, Gradients,
    ::testing::Values(
        LOSS("attention_causal_gqa",
             "%q: tensor<1x4x3x2xf32>, %k: tensor<1x2x5x2xf32>, %v: tensor<1x2x5x2xf32>, %t: tensor<1x4x3x2xf32>",
             "  %o = tessera.attention %q, %k, %v {causal = true} : " ATTN_TYPES("1x4x3x2", "1x2x5x2")
                 WEIGHTED_O("1x4x3x2"),
             "l"),
        LOSS("attention_full_scaled",
             "%q: tensor<2x2x4x3xf32>, %k: tensor<2x1x3x3xf32>, %v: tensor<2x1x3x3xf32>, %t: tensor<2x2x4x3xf32>",
             "  %o = tessera.attention %q, %k, %v {scale = 0.7} : " ATTN_TYPES("2x2x4x3", "2x1x3x3")
                 WEIGHTED_O("2x2x4x3"),
             "l"),
        LOSS("attention_self", "%x: tensor<1x1x4x2xf32>, %t: tensor<1x1x4x2xf32>",
             "  %o = tessera.attention %x, %x, %x {causal = true} : " ATTN_TYPES("1x1x4x2", "1x1x4x2")
                 WEIGHTED_O("1x1x4x2"),
             "l")),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Gradients, AnArgumentTheLossDoesNotReadHasAZeroGradient) {
  auto m = ir::parse(
      "func @f(%x: tensor<3xf32>, %u: tensor<2x2xf32>) -> tensor<f32> {\n"
      "  %l = tessera.reduce %x {kind = \"sum\", axes = [0]} : tensor<3xf32> -> tensor<f32>\n"
      "  return %l : tensor<f32>\n}\n");
  auto g = passes::differentiate(*m, "", {"u", "x"});
  EXPECT_EQ(g->funcs()[0]->sym, "f_grad");
  const auto out = oracle::evaluate(*g, "", inputs_for(*m->funcs()[0], 3));
  ASSERT_EQ(out.size(), 3u);
  for (double v : out[1].value) EXPECT_EQ(v, 0);  // %u, in the order asked
  for (double v : out[2].value) EXPECT_EQ(v, 1);  // %x
}

TEST(GradErrors, RefusalsAreStableCodes) {
  auto diff = [](const std::string& program, std::vector<std::string> wrt) {
    return code_of([&] { passes::differentiate(*ir::parse(program), "", wrt); });
  };
  // A func of %x (and %k) whose loss is the sum of the tensor<3xf32> `body` leaves in %y.
  auto summed = [](const char* x_type, const std::string& body) {
    return std::string("func @f(%x: ") + x_type + ", %k: tensor<3xi32>) -> tensor<f32> {\n" + body +
           "  %l = tessera.reduce %y {kind = \"sum\", axes = [0]} : tensor<3xf32> -> tensor<f32>\n"
           "  return %l : tensor<f32>\n}\n";
  };
  const char* vector_loss =
      "func @f(%x: tensor<3xf32>) -> tensor<3xf32> {\n  %y = tessera.exp %x : tensor<3xf32> -> tensor<3xf32>\n"
      "  return %y : tensor<3xf32>\n}\n";
  EXPECT_EQ(diff(vector_loss, {}), "E260");
  const std::string scalar = summed("tensor<3xf32>", "  %y = tessera.neg %x : tensor<3xf32> -> tensor<3xf32>\n");
  EXPECT_EQ(diff(scalar, {"x"}), "none");
  EXPECT_EQ(diff(scalar, {"nope"}), "E261");
  EXPECT_EQ(diff(scalar, {"k"}), "E261");
  EXPECT_EQ(diff(scalar, {"x", "x"}), "E261");
  EXPECT_EQ(diff(summed("tensor<3x4xf32>",
                        "  %i = tessera.argmax %x {axis = 1} : tensor<3x4xf32> -> tensor<3xi64>\n"
                        "  %y = tessera.cast %i : tensor<3xi64> -> tensor<3xf32>\n"),
                 {"x"}),
            "E262");
  EXPECT_EQ(diff(summed("tensor<3xf32>", "  %y = tessera.floor %x : tensor<3xf32> -> tensor<3xf32>\n"), {"x"}), "E262");
  EXPECT_EQ(diff(summed("tensor<3xf32>",
                        "  %r = tessera.reduce %x {kind = \"prod\", axes = [0], keepdims = true} : tensor<3xf32> -> "
                        "tensor<1xf32>\n"
                        "  %y = tessera.mul %x, %r : (tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>\n"),
                 {"x"}),
            "E263");
  // Through attention's o, not (yet) its lse.
  EXPECT_EQ(diff("func @f(%q: tensor<1x1x2x2xf32>) -> tensor<f32> {\n"
                 "  %o, %s = tessera.attention %q, %q, %q : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, "
                 "tensor<1x1x2x2xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2xf32>)\n"
                 "  %l = tessera.reduce %s {kind = \"sum\", axes = [0, 1, 2]} : tensor<1x1x2xf32> -> tensor<f32>\n"
                 "  return %l : tensor<f32>\n}\n",
                 {"q"}),
            "E263");
  // A comparison that only picks a branch of where is no gradient path.
  EXPECT_EQ(diff(summed("tensor<3xf32>",
                        "  %c = tessera.gt %x, 0.0 : (tensor<3xf32>, tensor<f32>) -> tensor<3xi1>\n"
                        "  %y = tessera.where %c, %x, 0.0 : (tensor<3xi1>, tensor<3xf32>, tensor<f32>) -> "
                        "tensor<3xf32>\n"),
                 {"x"}),
            "none");
}

}  // namespace
}  // namespace tessera
