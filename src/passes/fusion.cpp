#include "passes/fusion.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_set>

#include "families/attention/attention_schedule.hpp"
#include "families/fused/leaf_map.hpp"
#include "families/fused/region.hpp"
#include "families/reduce/reduce_schedule.hpp"
#include "ir/graph_dialect.hpp"

namespace tessera::passes {

using namespace tessera::ir;

namespace {

// The groups a reduce or row op iterates over: [before, axes, after] dims of
// its input; the leaves of its region must be linear in each.
std::vector<int> view_groups(const Op& core) {
  if (core.name == "tessera.reduce") return families::reduce::prologue_groups(core).value_or(std::vector<int>{});
  const int64_t axis = row_op_axis(core), rank = core.operands[0]->type.rank();
  return {static_cast<int>(axis), 1, static_cast<int>(rank - 1 - axis)};
}

// A row kernel over `core` can read view v from its base's buffer: linear in
// the [outer, extent, inner] groups, with lanes (along the extent for rows,
// inner for columns) contiguous or broadcast.
bool row_reads_view(const Op& core, const Value* v, const std::function<bool(const Value*)>& has_buffer) {
  const std::vector<int> groups = view_groups(core);
  const auto read = families::fused::leaf_read(v, core.operands[0]->type.shape, groups, has_buffer);
  if (!read) return false;
  const std::vector<int64_t>& shape = core.operands[0]->type.shape;
  int64_t inner = 1;
  for (size_t d = shape.size() - groups[2]; d < shape.size(); ++d) inner *= shape[d];
  const int64_t lane = inner == 1 ? read->strides[1] : read->strides[2];
  return lane == 0 || lane == 1;
}

// View v is its base's buffer reshaped: row-major from the buffer's start,
// every element of it (a matmul then reads that buffer as v).
bool reshaped_buffer(const Value* v, const std::function<bool(const Value*)>& has_buffer) {
  bool linear = true;
  const ViewRead r = read_through_views(v, has_buffer, [&](const Value*) { linear = false; });
  if (!linear || r.base == v || r.layout.offset != 0 || r.base->type.numel() != v->type.numel()) return false;
  int64_t step = 1;
  for (size_t d = v->type.shape.size(); d-- > 0;) {
    if (v->type.shape[d] != 1 && r.layout.strides[d] != step) return false;
    step *= v->type.shape[d];
  }
  return true;
}

// Ops that read an operand from memory where each element points (concat
// its operands, gather and take_along their first): that operand is always a
// leaf, never fused into them.
bool reads_memory(const Op& op) { return op.name == "tessera.concat" || is_index_op(op.name); }

// A gather reads its indices at its own coordinates (not the region's):
// region r must not read them otherwise. True if `op` joining r would break that.
bool index_conflict(const std::vector<const Op*>& r, const Op& op) {
  auto reads = [](const Op& o, const Value* v) {
    return std::find(o.operands.begin(), o.operands.end(), v) != o.operands.end();
  };
  for (const Op* other : r) {
    if (op.name == "tessera.gather" && reads(*other, op.operands[1])) return true;
    if (other->name == "tessera.gather" && reads(op, other->operands[1])) return true;
  }
  return false;
}

struct State {
  std::vector<FusedRegion> regions;
  std::map<const Op*, int> region_of;
  std::map<const Value*, int> uses;
  std::set<const Value*> returned;

  bool single_use(const Value* v) const { return uses.count(v) && uses.at(v) == 1 && !returned.count(v); }
};

// The values `op` would add as leaves of region r if it joined it.
bool leaves_fit(const State& s, const FusedRegion& r, const Op& op) {
  if (r.kind == FusedRegion::Kind::Pointwise) return true;   // pointwise kernels address any broadcast
  if (r.kind == FusedRegion::Kind::Attention) return false;  // its block reads q, k and v from memory
  if (r.kind == FusedRegion::Kind::ArgReduce) return false;  // it reads its operand from memory
  if (r.kind == FusedRegion::Kind::Scatter) return false;    // it reads its values from memory
  // Reduce, row and matmul kernels compute on float tiles and know no
  // element positions: integer and boolean values and iota stay outside.
  if (op.name == "tessera.iota" || reads_memory(op) || !is_float(op.result()->type.dtype)) return false;
  for (Value* v : op.operands)
    if (!is_float(v->type.dtype)) return false;
  const bool matmul = r.kind == FusedRegion::Kind::Matmul;
  // A matmul epilogue runs on [batch, M, N] tiles of the f32 accumulator.
  const int rank = static_cast<int>(r.core->result()->type.rank());
  std::vector<int> groups = matmul ? std::vector<int>{rank - 2, 1, 1} : view_groups(*r.core);
  if (groups.empty()) return false;
  const Type& space = matmul ? r.core->result()->type : r.core->operands[0]->type;
  // A reduction accumulates in its input's type, a matmul epilogue in f32:
  // f64 values join only an f64 reduction.
  if (matmul || (r.kind == FusedRegion::Kind::Reduce && space.dtype != DType::F64)) {
    for (Value* v : op.operands)
      if (v->type.dtype == DType::F64) return false;
    if (op.result()->type.dtype == DType::F64) return false;
  }
  for (Value* v : op.operands) {
    const bool internal = v->def && s.region_of.count(v->def) && s.region_of.at(v->def) == s.region_of.at(r.ops[0]);
    if (internal) continue;
    if (!families::fused::group_strides(v->type.shape, space.shape, groups)) return false;
  }
  return true;
}

// take_along(log_softmax(x), idx) along the softmax's (innermost) axis with
// one index a row, the log_softmax used only there: cross-entropy's label
// logit, which the row kernel writes without storing the log-probabilities.
bool picks_a_row(const State& s, const Op& take) {
  const Value* ls = take.operands[0];
  if (!ls->def || ls->def->name != "tessera.log_softmax" || !s.region_of.count(ls->def) || !s.single_use(ls))
    return false;
  const FusedRegion& reg = s.regions[s.region_of.at(ls->def)];
  if (reg.kind != FusedRegion::Kind::Row || reg.result != ls) return false;
  const Type& x = ls->type;
  const int64_t axis = index_spec(take).axis;
  if (axis != row_op_axis(*ls->def)) return false;
  for (int64_t d = axis + 1; d < x.rank(); ++d)
    if (x.shape[d] != 1) return false;  // rows: the axis is the innermost
  std::vector<int64_t> row = x.shape;
  row[axis] = 1;
  // one element a row (indices may broadcast, x may not), the indices read linearly by rows
  return take.result()->type.shape == row &&
         families::fused::group_strides(take.operands[1]->type.shape, x.shape, view_groups(*ls->def));
}

// Region p as the epilogue of matmul region mm whose result a split cuts into
// two column halves that only p reads (SwiGLU: silu(gate) * up of one
// [gate | up] projection). The TMA block takes a block's columns from both
// halves (families/matmul, Plan::halves), so neither half reaches memory.
// p must compute elementwise in the halves' shape, on what a matmul epilogue
// takes (floats, no f64, no memory reads), and its other leaves must be
// linear in [batch, m, n] of that shape.
bool pairs_halves(const State& s, const FusedRegion& mm, const FusedRegion& p, const Op& split) {
  if (mm.kind != FusedRegion::Kind::Matmul || mm.ops.size() != 1 || p.kind != FusedRegion::Kind::Pointwise ||
      !p.copies_because.empty() || split.name != "tessera.split" || split.results.size() != 2 ||
      split.operands[0] != mm.result || !s.single_use(mm.result))
    return false;
  const Type& c = mm.result->type;
  std::vector<int64_t> half = c.shape;
  if (half.size() < 2 || half.back() < 2 || half.back() % 2 != 0) return false;
  half.back() /= 2;
  const Value *lo = split.result(0), *hi = split.result(1);
  if (lo->type.shape != half || hi->type.shape != half || s.returned.count(lo) || s.returned.count(hi)) return false;
  // Every use of either half is in p.
  int in_p = 0;
  for (const Op* op : p.ops)
    in_p += static_cast<int>(std::count(op->operands.begin(), op->operands.end(), lo) +
                             std::count(op->operands.begin(), op->operands.end(), hi));
  auto uses = [&](const Value* v) { return s.uses.count(v) ? s.uses.at(v) : 0; };
  if (in_p == 0 || in_p != uses(lo) + uses(hi)) return false;
  auto epilogue_value = [](const Value* v) { return is_float(v->type.dtype) && v->type.dtype != DType::F64; };
  for (const Op* op : p.ops) {
    if (op->name == "tessera.iota" || reads_memory(*op) || op->results.size() != 1 ||
        op->result()->type.shape != half || !epilogue_value(op->result()))
      return false;
    for (const Value* v : op->operands)
      if (!epilogue_value(v)) return false;
  }
  const int rank = static_cast<int>(half.size());
  for (const Value* v : p.leaves)
    if (v != lo && v != hi && !families::fused::group_strides(v->type.shape, half, {rank - 2, 1, 1})) return false;
  return true;
}

// Row region n (an rms_norm alone) as the prologue of matmul region mm, whose
// A it is and only it reads: on a device whose matmul block scales B's rows
// by the weight and sums A's rows' squares (Cap::MatmulNorm), the normalized
// rows never reach memory (families/matmul, Plan::norm_leaf).
bool norms_rows(const State& s, const FusedRegion& n, const FusedRegion& mm) {
  if (n.kind != FusedRegion::Kind::Row || n.ops.size() != 1 || n.core->name != "tessera.rms_norm" ||
      mm.kind != FusedRegion::Kind::Matmul || n.result != mm.core->operands[0] || !s.single_use(n.result))
    return false;
  const Type& x = n.core->operands[0]->type;
  const bool block_dtype = x.dtype == DType::F32 || x.dtype == DType::F16 || x.dtype == DType::BF16;
  return block_dtype && x.shape.back() >= 1 && !matmul_spec(*mm.core).transpose_a;
}

// The value whose buffer view v reshapes (reshaped_buffer), where that value
// and every view between it and v is read only on the way to v; or null.
const Value* reshaped_source(const State& s, const Value* v, const std::function<bool(const Value*)>& has_buffer) {
  if (!reshaped_buffer(v, has_buffer)) return nullptr;
  const Value* u = v->def->operands[0];
  for (; u->def && is_view_op(u->def->name) && !has_buffer(u); u = u->def->operands[0])
    if (!s.single_use(u)) return nullptr;
  return s.single_use(u) ? u : nullptr;
}

// The matmul, pointwise or attention region whose result returned view v
// reshapes (reshaped_source), where the region writes no other view already;
// or the attention region that writes the view v reshapes; or null. (These
// kernels write their result row-major.)
FusedRegion* reshape_written(State& s, const Value* v, const std::function<bool(const Value*)>& has_buffer) {
  const Value* u = reshaped_source(s, v, has_buffer);
  if (!u) return nullptr;
  for (FusedRegion& r : s.regions) {
    const bool row_major = r.kind == FusedRegion::Kind::Matmul || r.kind == FusedRegion::Kind::Attention ||
                           (r.kind == FusedRegion::Kind::Pointwise && !r.ops.empty());
    if ((row_major && r.result == u && !r.written_as) || (r.kind == FusedRegion::Kind::Attention && r.written_as == u))
      return &r;
  }
  return nullptr;
}

}  // namespace

std::vector<FusedRegion> partition(const Op& func, const machine::Descriptor* device) {
  const Region& body = *func.regions[0];
  State s;
  std::vector<const Op*> ops;
  std::vector<const Value*> returns;  // in order (s.returned is a set)
  for (auto& op : body.ops) {
    for (Value* v : op->operands) ++s.uses[v];
    if (op->name == "return") returns.assign(op->operands.begin(), op->operands.end());
    else ops.push_back(op.get());
  }
  s.returned.insert(returns.begin(), returns.end());
  auto join = [&](const Op* op, int r) {
    s.region_of[op] = r;
    s.regions[r].ops.push_back(op);
  };
  auto open = [&](const Op* op, FusedRegion::Kind kind) {
    FusedRegion r;
    r.kind = kind;
    if (kind != FusedRegion::Kind::Pointwise) r.core = op;
    r.result = op->result();
    s.regions.push_back(r);
    join(op, static_cast<int>(s.regions.size()) - 1);
  };
  for (const Op* op : ops)
    if (!is_pointwise_op(op->name) && !is_view_op(op->name))
      open(op, is_row_op(op->name)            ? FusedRegion::Kind::Row
               : op->name == "tessera.matmul" ? FusedRegion::Kind::Matmul
               : is_attention_op(op->name)    ? FusedRegion::Kind::Attention
               : is_arg_reduce_op(op->name)   ? FusedRegion::Kind::ArgReduce
               : is_scatter_op(op->name)      ? FusedRegion::Kind::Scatter
                                              : FusedRegion::Kind::Reduce);

  // Epilogues, in program order: a pointwise op joins the row or matmul region
  // whose result it consumes, if that result has no other use and keeps its shape.
  // A take_along of one element a row of a log_softmax ends its region (a pick).
  for (const Op* op : ops) {
    if (op->name == "tessera.take_along" && picks_a_row(s, *op)) {
      const int r = s.region_of.at(op->operands[0]->def);
      s.region_of[op] = r;
      s.regions[r].ops.push_back(op);
      s.regions[r].result = op->result();
      continue;
    }
    if (!is_pointwise_op(op->name) || reads_memory(*op)) continue;
    for (Value* v : op->operands) {
      if (!v->def || !s.region_of.count(v->def)) continue;
      int r = s.region_of.at(v->def);
      FusedRegion& reg = s.regions[r];
      if (reg.kind != FusedRegion::Kind::Row && reg.kind != FusedRegion::Kind::Matmul) continue;
      if (reg.result != v || !s.single_use(v) || is_index_op(reg.result->def->name)) continue;
      if (op->result()->type.shape != v->type.shape) continue;
      // the other operands become leaves (or are absorbed below)
      s.region_of[op] = r;  // provisional, so leaves_fit sees v as internal
      if (!leaves_fit(s, reg, *op)) {
        s.region_of.erase(op);
        continue;
      }
      reg.ops.push_back(op);
      reg.result = op->result();
      break;
    }
  }

  // Prologues and pointwise chains, users before producers: a single-use
  // pointwise op joins its user's region.
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    const Op* op = *it;
    if (s.region_of.count(op) || is_view_op(op->name)) continue;  // views: below
    const Value* v = op->result();
    const Op* user = nullptr;
    if (s.single_use(v))
      for (const Op* u : ops)
        if (std::find(u->operands.begin(), u->operands.end(), v) != u->operands.end()) user = u;
    int r = user && s.region_of.count(user) && !reads_memory(*user) ? s.region_of.at(user) : -1;
    if (r >= 0 && index_conflict(s.regions[r].ops, *op)) r = -1;
    if (r >= 0) {
      const FusedRegion& reg = s.regions[r];
      // into a core only as its input x (or a row gradient's dy; not a norm's
      // weight or bias); never into a matmul's operands, which its kernel
      // streams from memory as they are
      const bool input = user->operands[0] == v || (is_row_grad_op(user->name) && user->operands.back() == v);
      const bool ok_slot = user != reg.core || (reg.kind != FusedRegion::Kind::Matmul && input);
      s.region_of[op] = r;
      if (ok_slot && leaves_fit(s, reg, *op)) {
        s.regions[r].ops.push_back(op);
        continue;
      }
      s.region_of.erase(op);
    }
    open(op, FusedRegion::Kind::Pointwise);
  }

  // RMSNorms that only feed a matmul's A join it as its prologue (region_of
  // is not kept past this point).
  if (device && device->has(machine::Cap::MatmulNorm)) {
    std::vector<size_t> joined;
    for (FusedRegion& mm : s.regions) {
      if (mm.kind != FusedRegion::Kind::Matmul || !mm.core->operands[0]->def) continue;
      auto n = s.region_of.find(mm.core->operands[0]->def);
      if (n == s.region_of.end() || !norms_rows(s, s.regions[n->second], mm)) continue;
      mm.ops.push_back(n->first);
      joined.push_back(static_cast<size_t>(n->second));
    }
    std::sort(joined.rbegin(), joined.rend());
    for (size_t i : joined) s.regions.erase(s.regions.begin() + static_cast<std::ptrdiff_t>(i));
  }

  // Program order inside each region; leaves; regions in dependency order
  // (a region's result is its last op, after every op it reads).
  std::map<const Op*, size_t> position;
  for (size_t i = 0; i < ops.size(); ++i) position[ops[i]] = i;
  for (FusedRegion& r : s.regions) {
    std::sort(r.ops.begin(), r.ops.end(), [&](const Op* a, const Op* b) { return position[a] < position[b]; });
    std::set<const Op*> inside(r.ops.begin(), r.ops.end());
    for (const Op* op : r.ops)
      for (const Value* v : op->operands)
        if ((!v->def || !inside.count(v->def)) && std::find(r.leaves.begin(), r.leaves.end(), v) == r.leaves.end())
          r.leaves.push_back(v);
  }

  // Matmuls whose column halves one pointwise region pairs, on a device with
  // the TMA block: that region becomes the matmul's epilogue.
  if (device && device->has(machine::Cap::Tma) && device->has(machine::Cap::Wgmma))
    for (size_t i = 0; i < s.regions.size(); ++i) {
      FusedRegion& mm = s.regions[i];
      if (mm.kind != FusedRegion::Kind::Matmul || !s.single_use(mm.result)) continue;
      const Op* split = nullptr;
      for (const Op* op : ops)
        if (std::find(op->operands.begin(), op->operands.end(), mm.result) != op->operands.end()) split = op;
      if (!split || split->results.size() != 2) continue;
      auto p = std::find_if(s.regions.begin(), s.regions.end(), [&](const FusedRegion& r) {
        return std::find(r.leaves.begin(), r.leaves.end(), split->result(0)) != r.leaves.end();
      });
      if (p == s.regions.end() || !pairs_halves(s, mm, *p, *split)) continue;
      mm.ops.push_back(split);
      mm.ops.insert(mm.ops.end(), p->ops.begin(), p->ops.end());
      mm.result = p->result;
      for (const Value* v : p->leaves)
        if (v != split->result(0) && v != split->result(1) &&
            std::find(mm.leaves.begin(), mm.leaves.end(), v) == mm.leaves.end())
          mm.leaves.push_back(v);
      const size_t gone = static_cast<size_t>(p - s.regions.begin());
      s.regions.erase(p);
      if (gone < i) --i;
    }

  // Views cost nothing where a pointwise kernel reads them (through their
  // layout); a view another kind of kernel reads, or a function returns, gets
  // a buffer of its own: a copy kernel, a pointwise region with no ops.
  std::vector<std::pair<const Value*, std::string>> copies;  // and why
  // An attention whose result only a chain of reshapes and transposes reads,
  // ending in heads and rows swapped, writes that view instead: it is then a
  // buffer, as a copy would be.
  std::unordered_set<const Value*> written;
  auto only_view_of = [&](const Value* v) -> const Value* {
    if (!s.single_use(v)) return nullptr;
    for (const Op* op : ops)
      if (std::find(op->operands.begin(), op->operands.end(), v) != op->operands.end())
        return (op->name == "tessera.reshape" || op->name == "tessera.transpose") ? op->result() : nullptr;
    return nullptr;
  };
  if (device)
    for (FusedRegion& r : s.regions) {
      if (r.kind != FusedRegion::Kind::Attention) continue;
      for (const Value* v = only_view_of(r.result); v; v = only_view_of(v))
        if (families::attention::writes_view(*r.core, v, *device)) {
          r.written_as = v, written.insert(v);
          break;
        }
    }
  // Whether view v has a buffer of its own: a copy's, or a kernel writes it.
  auto buffered = [&](const Value* v) {
    return written.count(v) > 0 ||
           std::any_of(copies.begin(), copies.end(), [&](const auto& c) { return c.first == v; });
  };
  std::function<void(const Value*, const std::string&)> materialize;
  auto reshaped = [&](const Value* u) { materialize(u, "reshaped, and its strided layout has no reshaped view"); };
  materialize = [&](const Value* v, const std::string& why) {
    if (buffered(v)) return;
    copies.emplace_back(v, why);  // its copy reads it through its views
    read_through_views(
        v, [&](const Value* u) { return u != v && buffered(u); }, reshaped);
  };
  // A matmul reads a reshaped buffer as it is (its kernels read row-major
  // operands): what a reshape in v's chain cannot view is copied first, so a
  // reshape of that copy needs none of its own.
  auto matmul_reads_in_place = [&](const Value* v) {
    read_through_views(v, buffered, reshaped);
    return reshaped_buffer(v, buffered);
  };
  for (const FusedRegion& r : s.regions)
    for (const Value* v : r.leaves) {
      if (!v->def || !is_view_op(v->def->name)) continue;
      if (r.kind == FusedRegion::Kind::Pointwise) read_through_views(v, buffered, reshaped);
      // A reduction reads a view through its layout where that is linear in
      // its [outer, extent, inner] dims.
      else if (r.kind == FusedRegion::Kind::Reduce && families::reduce::leaf_read(v, *r.core, buffered)) continue;
      else if (r.kind == FusedRegion::Kind::Reduce)
        materialize(v, "read by tessera.reduce, whose pass cannot address its layout linearly");
      // A row kernel reads a view through its layout where that is linear in
      // its [outer, extent, inner] dims and its lanes stay contiguous (or
      // broadcast): a transposed row is copied (coalesced) instead.
      else if (r.kind == FusedRegion::Kind::Row && row_reads_view(*r.core, v, buffered)) continue;
      else if (r.kind == FusedRegion::Kind::Matmul && matmul_reads_in_place(v)) continue;
      else if (r.kind == FusedRegion::Kind::Attention && device &&
               families::attention::reads_view(*r.core, v, *device, buffered))
        continue;
      else materialize(v, "read by " + r.core->name + ", which reads its operands contiguous");
    }
  // A returned view is a buffer of its own, copied; but a matmul or
  // pointwise region's result reshaped (row-major, every element), read by
  // nothing else, is the bytes its kernel writes: the kernel writes it as
  // that type. So is a copy's, where the view reshapes a copy (a transposed
  // view copied, then reshaped): the copy kernel writes the returned view.
  std::unordered_map<const Value*, const Value*> copy_writes;  // copied view -> the returned reshape of it
  auto reshaped_copy = [&](const Value* v) -> const Value* {
    read_through_views(v, buffered, reshaped);  // (copies what a reshape in v's chain cannot view)
    const Value* u = reshaped_source(s, v, buffered);
    const bool copy = u && std::any_of(copies.begin(), copies.end(), [&](const auto& c) { return c.first == u; });
    return copy && !copy_writes.count(u) ? u : nullptr;
  };
  for (const Value* v : returns) {
    if (!v->def || !is_view_op(v->def->name) || buffered(v)) continue;
    if (FusedRegion* r = reshape_written(s, v, buffered)) {
      r->written_as = v, written.insert(v);
      continue;
    }
    if (const Value* u = reshaped_copy(v)) {
      copy_writes[u] = v, written.insert(v);
      continue;
    }
    materialize(v, "returned");
  }
  for (const auto& [v, why] : copies) {
    FusedRegion copy{FusedRegion::Kind::Pointwise, nullptr, {}, {v}, v, why};
    if (auto w = copy_writes.find(v); w != copy_writes.end()) copy.written_as = w->second;
    s.regions.push_back(copy);
  }
  std::sort(s.regions.begin(), s.regions.end(), [&](const FusedRegion& a, const FusedRegion& b) {
    return position[a.result->def] < position[b.result->def];
  });
  return s.regions;
}

}  // namespace tessera::passes
