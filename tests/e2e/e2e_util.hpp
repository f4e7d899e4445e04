// Helpers for end-to-end tests: build a one-reduce program, run it natively,
// check every result against the oracle and every launch's placement.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ir/graph_dialect.hpp"
#include "ir/ir.hpp"
#include "ir/verify.hpp"
#include "oracle/reference.hpp"
#include "runtime/executable.hpp"
#include "runtime/inputs.hpp"
#include "runtime/tensor.hpp"
#include "runtime/thread_pool.hpp"
#include "tessera/tessera.hpp"

namespace tessera::test {

inline Program reduce_program(const std::vector<int64_t>& shape, DType dtype, const std::string& kind,
                              const std::vector<int64_t>& axes, bool keepdims) {
  GraphBuilder g("e2e");
  ir::Value* x = g.input("x", ir::Type::tensor(dtype, shape));
  g.output(g.reduce(x, kind, axes, keepdims));
  return Program::compile(g.module(), "cpu");
}

inline bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// Runs natively, asserts placement, compares with the oracle; returns outputs.
inline std::vector<Tensor> run_and_check(const Program& p, const std::vector<Tensor>& inputs) {
  runtime::RunResult r = p.run(inputs);
  for (const auto& l : r.launches) {
    EXPECT_EQ(l.placement, "native_cpu") << l.kernel;
    EXPECT_EQ(l.sha256.size(), 64u);
  }
  auto expected = oracle::evaluate(*p.graph(), "", inputs);
  EXPECT_EQ(expected.size(), r.outputs.size());
  for (size_t i = 0; i < expected.size() && i < r.outputs.size(); ++i) {
    oracle::Comparison c = oracle::compare(expected[i], r.outputs[i]);
    EXPECT_TRUE(c.pass) << c.failures << " elements out of tolerance; first: " << c.first_failure << "\n"
                        << p.emit("schedule");
  }
  return r.outputs;
}

// run_and_check, then the same bytes again on 1 and on 3 threads.
inline std::vector<Tensor> run_and_check_deterministic(const Program& p, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> first = run_and_check(p, inputs);
  runtime::ThreadPool one(1), three(3);
  for (runtime::ThreadPool* pool : {&one, &three}) {
    auto again = p.run(inputs, pool).outputs;
    for (size_t i = 0; i < again.size(); ++i) EXPECT_TRUE(same_bytes(again[i], first.at(i))) << "output " << i;
  }
  return first;
}

}  // namespace tessera::test
