// The oracle's view ops (reshape, transpose, slice, broadcast_to, split):
// each result element is one operand element, found by the oracle's own
// index arithmetic (it shares none with the compiler's layouts); values and
// tolerances are carried unchanged.
#include <cmath>

#include "oracle/ops.hpp"

namespace tessera::oracle::detail {

namespace {

std::vector<int64_t> ints(const ir::Op& op, const char* key, size_t count, int64_t fallback, bool required) {
  const ir::Attr* a = op.attr(key);
  if (!a) {
    if (required) bad_op(op, std::string("needs '") + key + "'");
    return std::vector<int64_t>(count, fallback);
  }
  auto v = a->as_ints();
  if (!v || (count && v->size() != count)) bad_op(op, std::string("'") + key + "' has the wrong form");
  return *v;
}

// For result `r` of a view op: the operand's flat index of each result element.
class SourceIndex {
 public:
  SourceIndex(const ir::Op& op, size_t r)
      : op_(op), in_(op.operands.at(0)->type.shape), out_(op.results.at(r)->type.shape) {
    const size_t rank = in_.size();
    const std::string& n = op.name;
    if (n == "tessera.reshape") {
      only_attrs(op, {});
      if (product(in_) != product(out_)) bad_op(op, "changes the element count");
      kind_ = Kind::Same;
    } else if (n == "tessera.transpose") {
      only_attrs(op, {"perm"});
      perm_ = ints(op, "perm", rank, 0, true);
      for (int64_t& p : perm_) p = p < 0 ? p + static_cast<int64_t>(rank) : p;
      kind_ = Kind::Permute;
    } else if (n == "tessera.slice") {
      only_attrs(op, {"start", "limit", "stride"});
      start_ = ints(op, "start", rank, 0, true);
      step_ = ints(op, "stride", rank, 1, false);
      kind_ = Kind::Strided;
    } else if (n == "tessera.broadcast_to") {
      only_attrs(op, {});
      kind_ = Kind::Broadcast;
    } else if (n == "tessera.split") {
      only_attrs(op, {"axis", "sizes"});
      const ir::Attr* a = op.attr("axis");
      if (!a || !a->as_int()) bad_op(op, "needs an integer 'axis'");
      int64_t axis = *a->as_int();
      axis = axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
      const std::vector<int64_t> sizes = ints(op, "sizes", op.results.size(), 0, true);
      start_.assign(rank, 0);
      step_.assign(rank, 1);
      for (size_t i = 0; i < r; ++i) start_[axis] += sizes[i];
      kind_ = Kind::Strided;
    } else {
      bad_op(op, "is not a view op");
    }
    if (kind_ == Kind::Permute)
      for (size_t d = 0; d < rank; ++d)
        if (perm_[d] < 0 || perm_[d] >= static_cast<int64_t>(rank) || out_[d] != in_[perm_[d]])
          bad_op(op, "result shape does not follow from 'perm'");
  }

  int64_t operator()(int64_t flat) const {
    if (kind_ == Kind::Same) return flat;
    // the result's multi-index, then the operand's
    std::vector<int64_t> j(out_.size());
    for (size_t d = out_.size(); d-- > 0;) {
      j[d] = flat % out_[d];
      flat /= out_[d];
    }
    std::vector<int64_t> i(in_.size());
    for (size_t d = 0; d < in_.size(); ++d) {
      if (kind_ == Kind::Permute) i[perm_[d]] = j[d];
      else if (kind_ == Kind::Strided) i[d] = start_[d] + j[d] * step_[d];
      else i[d] = in_[d] == 1 ? 0 : j[d + out_.size() - in_.size()];
      if (i[d] < 0 || i[d] >= in_[d]) bad_op(op_, "addresses outside its operand");
    }
    int64_t at = 0;
    for (size_t d = 0; d < in_.size(); ++d) at = at * in_[d] + i[d];
    return at;
  }

 private:
  enum class Kind { Same, Permute, Strided, Broadcast };
  const ir::Op& op_;
  std::vector<int64_t> in_, out_, perm_, start_, step_;
  Kind kind_ = Kind::Same;
};

}  // namespace

namespace {

// tessera.concat: for result element k, which operand and which of its elements.
struct ConcatIndex {
  int64_t axis = 0;
  std::vector<int64_t> out, starts;

  explicit ConcatIndex(const ir::Op& op) : out(op.results.at(0)->type.shape) {
    only_attrs(op, {"axis"});
    const int64_t rank = static_cast<int64_t>(out.size());
    const double a = float_attr(op, "axis", std::nan(""));
    if (!(a >= -rank && a < rank) || a != std::trunc(a)) bad_op(op, "needs an integer 'axis' within the rank");
    axis = static_cast<int64_t>(a) + (a < 0 ? rank : 0);
    int64_t at = 0;
    for (const ir::Value* v : op.operands) {
      if (v->type.shape.size() != out.size()) bad_op(op, "operands must have the result's rank");
      starts.push_back(at);
      at += v->type.shape[axis];
    }
    if (at != out[axis]) bad_op(op, "the operands' extents along the axis do not add up to the result's");
  }

  // (operand, its flat index) of result element `flat`
  std::pair<size_t, int64_t> operator()(const ir::Op& op, int64_t flat) const {
    std::vector<int64_t> j(out.size());
    for (size_t d = out.size(); d-- > 0;) {
      j[d] = flat % out[d];
      flat /= out[d];
    }
    size_t i = starts.size() - 1;
    while (i > 0 && (j[axis] < starts[i] || op.operands[i]->type.shape[axis] == 0)) --i;
    j[axis] -= starts[i];
    const std::vector<int64_t>& s = op.operands[i]->type.shape;
    int64_t at = 0;
    for (size_t d = 0; d < s.size(); ++d) at = at * s[d] + j[d];
    return {i, at};
  }
};

}  // namespace

bool evaluate_concat(const ir::Op& op, const std::vector<Source>& in, Need need, Expected& e) {
  if (op.name != "tessera.concat") return false;
  if (op.results.size() != 1 || in.empty()) bad_op(op, "takes one or more operands and has one result");
  for (const Source& s : in)
    if (s.dtype() != op.results[0]->type.dtype) bad_op(op, "operands must have the result's dtype");
  const ConcatIndex index(op);
  e = result_like(op);
  for (int64_t k = 0; k < static_cast<int64_t>(e.value.size()); ++k) {
    if (!needed(need, k)) continue;
    const auto [i, at] = index(op, k);
    e.value[k] = in[i].at(at);
    e.tolerance[k] = in[i].tol(at);
  }
  return true;
}

bool demand_concat(const ir::Op& op, const uint8_t* need, std::vector<std::vector<uint8_t>>& in_need) {
  if (op.name != "tessera.concat") return false;
  const ConcatIndex index(op);
  const int64_t n = product(op.results.at(0)->type.shape);
  for (int64_t k = 0; k < n; ++k)
    if (need[k]) {
      const auto [i, at] = index(op, k);
      in_need[i][at] = 1;
    }
  return true;
}

bool is_view(const ir::Op& op) {
  return op.name == "tessera.reshape" || op.name == "tessera.transpose" || op.name == "tessera.slice" ||
         op.name == "tessera.broadcast_to" || op.name == "tessera.split";
}

std::vector<Expected> evaluate_view(const ir::Op& op, const Source& x, const std::vector<Need>& need) {
  if (op.operands.size() != 1 || op.results.empty()) bad_op(op, "takes one operand");
  std::vector<Expected> out;
  for (size_t r = 0; r < op.results.size(); ++r) {
    if (op.results[r]->type.dtype != x.dtype()) bad_op(op, "changes the dtype");
    const SourceIndex source(op, r);
    Expected e = result_like(op, r);
    const int64_t n = static_cast<int64_t>(e.value.size());
    if (need[r] != kNothing)
      for (int64_t k = 0; k < n; ++k) {
        if (!needed(need[r], k)) continue;
        const int64_t i = source(k);
        e.value[k] = x.at(i);
        e.tolerance[k] = x.tol(i);
      }
    out.push_back(std::move(e));
  }
  return out;
}

void demand_view(const ir::Op& op, const std::vector<const uint8_t*>& need, std::vector<uint8_t>& in_need) {
  for (size_t r = 0; r < op.results.size(); ++r) {
    if (!need[r]) continue;
    const SourceIndex source(op, r);
    const int64_t n = product(op.results[r]->type.shape);
    for (int64_t k = 0; k < n; ++k)
      if (need[r][k]) in_need[source(k)] = 1;
  }
}

}  // namespace tessera::oracle::detail
