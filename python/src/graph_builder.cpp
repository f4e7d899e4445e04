// tessera._core.GraphBuilder: what ts.jit traces into. Every op goes through
// the C++ GraphBuilder, so type rules and verification live in one place and
// the text it prints is what the parser reads.
#include "bindings.hpp"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "ir/ir.hpp"
#include "ir/parser.hpp"
#include "ir/printer.hpp"
#include "passes/autodiff.hpp"
#include "support/diagnostic.hpp"
#include "tessera/tessera.hpp"

namespace nb = nanobind;

namespace tessera::python {

namespace {

DType dtype_named(const std::string& name) {
  if (auto t = parse_dtype(name)) return *t;
  fail("E932", "unknown element type '" + echo(name) + "' (f16, bf16, f32, f64, i1, i32, i64)");
}

ir::Type tensor_type(const std::string& dtype, const std::vector<int64_t>& shape) {
  for (int64_t d : shape)
    if (d < 0) fail("E103", "negative dimension in shape");
  return ir::Type::tensor(dtype_named(dtype), shape);
}

nb::tuple shape_tuple(const ir::Value& v) {
  nb::list out;
  for (int64_t d : v.type.shape) out.append(d);
  return nb::tuple(out);
}

}  // namespace

void bind_graph_builder(nb::module_& m) {
  m.def(
      "differentiate",
      [](const std::string& text, const std::string& func, const std::vector<std::string>& wrt) {
        return ir::print(*passes::differentiate(*ir::parse(text, "<ts.grad>"), func, wrt));
      },
      nb::arg("text"), nb::arg("func"), nb::arg("wrt"),
      "Graph IR text of @<func>_grad: the loss and its gradients with respect to `wrt` (tessera grad).");

  nb::class_<ir::Value>(m, "Value", "A value of the graph being traced (an SSA value of Graph IR).")
      .def_prop_ro("dtype", [](const ir::Value& v) { return std::string(dtype_name(v.type.dtype)); })
      .def_prop_ro("shape", &shape_tuple)
      .def_prop_ro("name", [](const ir::Value& v) { return v.name; });

  using G = GraphBuilder;
  constexpr auto ref = nb::rv_policy::reference_internal;
  nb::class_<G>(m, "GraphBuilder", "Builds one Graph IR func op by op; each op is verified as it is added.")
      .def(nb::init<const std::string&>(), nb::arg("func_name"))
      .def(
          "input",
          [](G& g, const std::string& name, const std::string& dtype, const std::vector<int64_t>& shape) {
            return g.input(name, tensor_type(dtype, shape));
          },
          nb::arg("name"), nb::arg("dtype"), nb::arg("shape"), ref)
      .def("unary", &G::unary, nb::arg("fn"), nb::arg("x"), ref)
      .def("binary", &G::binary, nb::arg("fn"), nb::arg("a"), nb::arg("b"), ref)
      .def("clamp", &G::clamp, nb::arg("x"), nb::arg("lo"), nb::arg("hi"), ref)
      .def("where", &G::where, nb::arg("c"), nb::arg("a"), nb::arg("b"), ref)
      .def("reshape", &G::reshape, nb::arg("x"), nb::arg("shape"), ref)
      .def("transpose", &G::transpose, nb::arg("x"), nb::arg("perm"), ref)
      .def("slice", &G::slice, nb::arg("x"), nb::arg("start"), nb::arg("limit"), nb::arg("stride"), ref)
      .def("broadcast_to", &G::broadcast_to, nb::arg("x"), nb::arg("shape"), ref)
      .def("split", &G::split, nb::arg("x"), nb::arg("axis"), nb::arg("sizes"), ref)
      .def("concat", &G::concat, nb::arg("parts"), nb::arg("axis"), ref)
      .def("gather", &G::gather, nb::arg("x"), nb::arg("indices"), nb::arg("axis"), ref)
      .def("take_along", &G::take_along, nb::arg("x"), nb::arg("indices"), nb::arg("axis"), ref)
      .def(
          "iota",
          [](G& g, const std::string& dtype, const std::vector<int64_t>& shape, int64_t axis) {
            return g.iota(tensor_type(dtype, shape), axis);
          },
          nb::arg("dtype"), nb::arg("shape"), nb::arg("axis"), ref)
      .def(
          "cast", [](G& g, ir::Value* x, const std::string& dtype) { return g.cast(x, dtype_named(dtype)); },
          nb::arg("x"), nb::arg("dtype"), ref)
      .def(
          "constant",
          [](G& g, double value, const std::string& dtype, const std::vector<int64_t>& shape) {
            return g.constant(value, tensor_type(dtype, shape));
          },
          nb::arg("value"), nb::arg("dtype"), nb::arg("shape"), ref)
      .def("softmax", &G::softmax, nb::arg("x"), nb::arg("axis"), ref)
      .def("log_softmax", &G::log_softmax, nb::arg("x"), nb::arg("axis"), ref)
      .def("layer_norm", &G::layer_norm, nb::arg("x"), nb::arg("w"), nb::arg("b"), nb::arg("eps"), ref)
      .def("rms_norm", &G::rms_norm, nb::arg("x"), nb::arg("w"), nb::arg("eps"), ref)
      .def(
          "matmul",
          [](G& g, ir::Value* a, ir::Value* b, const std::string& out, bool ta, bool tb) {
            return g.matmul(a, b, dtype_named(out), ta, tb);
          },
          nb::arg("a"), nb::arg("b"), nb::arg("out_dtype"), nb::arg("transpose_a"), nb::arg("transpose_b"), ref)
      .def("attention", &G::attention, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("causal"), nb::arg("scale"),
           nb::arg("lse"), nb::arg("mask").none() = nb::none(), ref)
      .def(
          "reduce",
          [](G& g, ir::Value* x, const std::string& kind, const std::vector<int64_t>& axes, bool keepdims) {
            return g.reduce(x, kind, axes, keepdims);
          },
          nb::arg("x"), nb::arg("kind"), nb::arg("axes"), nb::arg("keepdims"), ref)
      .def("arg_reduce", &G::arg_reduce, nb::arg("x"), nb::arg("max"), nb::arg("axis"), nb::arg("keepdims"), ref)
      .def(
          "call_text",
          [](G& g, const std::string& text, const std::vector<ir::Value*>& args) {
            return g.call(*ir::parse(text, "<ts.grad>"), "", args);
          },
          nb::arg("text"), nb::arg("args"), ref,
          "Appends the ops of the first func of Graph IR `text` on `args`; returns the values it returns.")
      .def("output", &G::output, nb::arg("v"))
      .def("in_place", &G::in_place, nb::arg("into"))
      .def(
          "text", [](G& g) { return ir::print(g.module()); },
          "Finishes the func (adds the return, verifies the module) and prints it as Graph IR text.");
}

}  // namespace tessera::python
