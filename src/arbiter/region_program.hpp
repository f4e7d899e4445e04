// A matmul region of a program as a program of its own: the func the arbiter
// measures candidates on. Its arguments are the region's leaves, its body the
// region's Graph IR ops, its result the region's. M and N may be resized
// (K, batches, dtypes, layouts and the epilogue stay as they are).
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "families/fused/region.hpp"
#include "ir/ir.hpp"
#include "machine/descriptor.hpp"

namespace tessera::arbiter {

struct MatmulRegion {
  std::string id;  // passes::matmul_region_id: "<func>#<i>"
  families::fused::FusedRegion region;
};

// Every matmul region of every func, in program order (as graph_to_schedule
// numbers them), as fusion forms them for `device` (null: any device).
std::vector<MatmulRegion> matmul_regions(const ir::Module& graph, const machine::Descriptor* device = nullptr);

// rows / cols > 0: M and N become them (the gate's sample of the outputs,
// region_sample.hpp; with an epilogue on column halves cols is C's, even,
// and each half gets cols / 2); E770 if a value has two roles (A is B, or an
// operand the epilogue also reads), which no consistent resize exists for.
std::unique_ptr<ir::Module> region_program(const families::fused::FusedRegion& r, int64_t rows = 0, int64_t cols = 0);

// The dims of `v` (a value of region r) that run along M and along N (-1:
// none; a dim of extent 1 broadcasts and runs along neither), and whether its
// N is that of a column half (Plan::halves: the epilogue's values) or C's.
struct MnDims {
  int64_t m = -1, n = -1;
  bool half = false;
};
MnDims mn_dims(const families::fused::FusedRegion& r, const ir::Value* v);

// batch * m * n * k of the region's matmul (its multiply-adds).
double region_macs(const families::fused::FusedRegion& r);

}  // namespace tessera::arbiter
