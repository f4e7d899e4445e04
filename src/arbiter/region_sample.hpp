// The oracle check of a big matmul region's timed run: a spread sample of
// its output (rows I of M, columns J of N, every batch) against the oracle
// of the small program that computes exactly those outputs, fed the same
// rows of A, columns of B and elements of the epilogue's leaves, cut from
// the full-size inputs. So the gate checks the very kernels it times, at
// their full-size blocking, tails and copies, for batch * |I| * |J| * K
// multiply-adds of oracle work instead of batch * M * N * K.
#pragma once
#include <memory>
#include <vector>

#include "families/fused/region.hpp"
#include "ir/ir.hpp"
#include "runtime/tensor.hpp"

namespace tessera::arbiter {

class RegionSample {
 public:
  // Rows and columns such that batch * |I| * |J| * K stays near max_macs
  // (at least 16 of each, or all there are): the first and last quarter-count
  // of each (tails and the first block), the rest spread with varying offsets
  // within a block. E770 when an operand has two roles (region_program).
  // The region's graph must outlive the sample.
  RegionSample(const families::fused::FusedRegion& r, double max_macs);

  const ir::Module& program() const { return *program_; }
  const std::vector<int64_t>& rows() const { return rows_; }
  const std::vector<int64_t>& cols() const { return cols_; }
  // The program's inputs, from the full-size region's (in leaf order).
  std::vector<Tensor> inputs(const std::vector<Tensor>& full) const;
  // The sampled outputs of a full-size result.
  Tensor output(const Tensor& full) const;

 private:
  Tensor cut(const ir::Value* v, const Tensor& full) const;

  families::fused::FusedRegion region_;  // a copy: its pointers are into the graph, which must outlive this
  std::unique_ptr<ir::Module> program_;
  std::vector<int64_t> rows_, cols_;  // of the result
  std::vector<int64_t> b_cols_;       // of B: cols_, and with halves cols_ + n/2 too
};

}  // namespace tessera::arbiter
