// The reduction family end to end: every kind x axis set x dtype x shape,
// random and NaN/inf-laced inputs, checked against the oracle, run twice and on
// 1 and 3 threads to prove bitwise determinism.
#include <set>

#include "e2e_util.hpp"
#include "reduce_cases.hpp"

namespace tessera::test {
namespace {

class ReduceMatrix : public ::testing::TestWithParam<Case> {};

TEST_P(ReduceMatrix, MatchesOracleDeterministically) {
  const Case& c = GetParam();
  Program p = reduce_program(c.shape, c.dtype, c.kind, c.axes, c.keepdims);
  Tensor x = generate_input(c.input, c.dtype, c.shape);
  std::vector<Tensor> first = run_and_check(p, {x});
  // bitwise the same on every run, whatever the number of threads
  runtime::ThreadPool one(1), three(3);
  for (runtime::ThreadPool* pool : {&one, &three}) {
    auto again = p.run({x}, pool).outputs;
    ASSERT_EQ(again.size(), first.size());
    for (size_t i = 0; i < again.size(); ++i) EXPECT_TRUE(same_bytes(again[i], first[i])) << "output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(All, ReduceMatrix,
                         ::testing::ValuesIn(sample_matrix<Case>("ReduceMatrix", all_cases(), name_of, 8,
                                                                 reduce_coverage())),
                         [](const ::testing::TestParamInfo<Case>& i) { return name_of(i.param); });

}  // namespace
}  // namespace tessera::test
