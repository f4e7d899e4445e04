// Graph IR's view ops (reshape, transpose, slice, broadcast_to, split): their
// attributes, result types, and the affine layouts of their results.
#include <algorithm>
#include <numeric>

#include "ir/graph_dialect.hpp"

namespace tessera::ir {

namespace {

[[noreturn]] void bad(const Op& op, const char* code, const std::string& msg) {
  fail(code, op.name + ": " + msg, op.loc);
}

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::vector<int64_t> ints_attr(const Op& op, const char* key, bool required, size_t count,
                               std::vector<int64_t> fallback = {}) {
  const Attr* a = op.attr(key);
  if (!a) {
    if (required) bad(op, "E211", std::string("needs an integer list '") + key + "'");
    return fallback;
  }
  const auto v = a->as_ints();
  if (!v || (count != SIZE_MAX && v->size() != count))
    bad(op, "E211",
        std::string("'") + key + "' must be a list of " + (count == SIZE_MAX ? "" : std::to_string(count) + " ") +
            "integers");
  return *v;
}

void allow_attrs(const Op& op, std::initializer_list<const char*> keys) {
  for (auto& [k, _] : op.attrs)
    if (std::none_of(keys.begin(), keys.end(), [&](const char* a) { return k == a; }))
      bad(op, "E205", "unknown attribute '" + k + "'");
}

int64_t numel(const std::vector<int64_t>& s) {
  return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<int64_t>());
}

int64_t normalized_axis(const Op& op, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) bad(op, "E203", "axis " + std::to_string(axis) + " is out of range");
  return axis < 0 ? axis + rank : axis;
}

// The permutation of a transpose (E216 unless one of 0..rank-1).
std::vector<int64_t> perm_of(const Op& op, int64_t rank) {
  std::vector<int64_t> perm = ints_attr(op, "perm", true, static_cast<size_t>(rank));
  std::vector<int64_t> sorted = perm;
  for (int64_t& p : sorted) p = p < 0 ? p + rank : p;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < rank; ++i)
    if (sorted[i] != i) bad(op, "E216", "'perm' " + list_str(perm) + " is not a permutation of the operand's axes");
  for (int64_t& p : perm) p = p < 0 ? p + rank : p;
  return perm;
}

struct SliceSpec {
  std::vector<int64_t> start, stride, shape;
};

SliceSpec slice_of(const Op& op, const std::vector<int64_t>& in) {
  const size_t rank = in.size();
  SliceSpec s;
  s.start = ints_attr(op, "start", true, rank);
  std::vector<int64_t> limit = ints_attr(op, "limit", true, rank);
  s.stride = ints_attr(op, "stride", false, rank, std::vector<int64_t>(rank, 1));
  for (size_t d = 0; d < rank; ++d) {
    if (s.stride[d] < 1) bad(op, "E216", "'stride' entries must be >= 1");
    if (s.start[d] < 0 || s.start[d] > limit[d] || limit[d] > in[d])
      bad(op, "E216",
          "dimension " + std::to_string(d) + ": needs 0 <= start <= limit <= " + std::to_string(in[d]) +
              ", got start " + std::to_string(s.start[d]) + ", limit " + std::to_string(limit[d]));
    s.shape.push_back((limit[d] - s.start[d] + s.stride[d] - 1) / s.stride[d]);
  }
  return s;
}

std::vector<int64_t> split_sizes(const Op& op, int64_t& axis) {
  const std::vector<int64_t>& in = op.operands[0]->type.shape;
  const Attr* a = op.attr("axis");
  if (!a || !a->as_int()) bad(op, "E211", "needs an integer 'axis'");
  axis = normalized_axis(op, *a->as_int(), static_cast<int64_t>(in.size()));
  std::vector<int64_t> sizes = ints_attr(op, "sizes", true, SIZE_MAX);
  if (sizes.empty() || sizes.size() != op.results.size())
    bad(op, "E216", "'sizes' has one entry per result (" + std::to_string(op.results.size()) + ")");
  int64_t total = 0;
  for (int64_t n : sizes) {
    if (n < 0) bad(op, "E216", "'sizes' entries must be >= 0");
    total += n;
  }
  if (total != in[axis])
    bad(op, "E216",
        "'sizes' " + list_str(sizes) + " add up to " + std::to_string(total) + ", not the axis' extent " +
            std::to_string(in[axis]));
  return sizes;
}

// Strides of a reshape of `in` (shape, layout) to `out`, torch's rule: the
// dims split into runs whose extents multiply alike; a run of the input must
// be contiguous within itself (size-1 dims aside), and the output's dims of
// that run take its innermost stride times their inner extents.
std::optional<std::vector<int64_t>> reshape_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& st,
                                                    const std::vector<int64_t>& out) {
  std::vector<int64_t> res(out.size(), 0);
  if (numel(in) == 0) return res;  // nothing is read
  size_t i = 0, o = 0;
  while (i < in.size() || o < out.size()) {
    // the next run: a dim from each side, then more from the smaller side until the products match
    const size_t i0 = i, o0 = o;
    int64_t pi = i < in.size() ? in[i++] : 1, po = o < out.size() ? out[o++] : 1;
    while (pi != po) {
      if (pi < po && i < in.size()) pi *= in[i++];
      else if (po < pi && o < out.size()) po *= out[o++];
      else return std::nullopt;
    }
    int64_t inner = -1, expect = -1;  // the run's input: contiguous among its non-unit dims
    for (size_t d = i; d-- > i0;) {
      if (in[d] == 1) continue;
      if (expect >= 0 && st[d] != expect) return std::nullopt;
      if (inner < 0) inner = st[d];
      expect = st[d] * in[d];
    }
    int64_t s = inner < 0 ? 0 : inner;
    for (size_t d = o; d-- > o0;) {
      res[d] = out[d] == 1 ? 0 : s;
      s *= out[d];
    }
  }
  return res;
}

}  // namespace

bool is_view_op(const std::string& name) {
  return name == "tessera.reshape" || name == "tessera.transpose" || name == "tessera.slice" ||
         name == "tessera.broadcast_to" || name == "tessera.split";
}

Layout Layout::contiguous(const std::vector<int64_t>& shape) {
  Layout l;
  l.strides.assign(shape.size(), 0);
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    l.strides[d] = shape[d] == 1 ? 0 : s;
    s *= std::max<int64_t>(shape[d], 1);
  }
  return l;
}

void verify_view_op(const Op& op) {
  const bool split = op.name == "tessera.split";
  if (op.operands.size() != 1 || op.results.empty() || (!split && op.results.size() != 1))
    bad(op, "E205", split ? "takes one operand and has a result per part" : "takes one operand and has one result");
  const Type& x = op.operands[0]->type;
  if (!x.is_tensor()) bad(op, "E207", "takes a tensor, got " + x.str());
  for (auto& r : op.results)
    if (!r->type.is_tensor() || r->type.dtype != x.dtype)
      bad(op, "E205", "results are tensors of the operand's dtype " + std::string(dtype_name(x.dtype)));
  const std::vector<int64_t>& in = x.shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  for (auto& r : op.results)
    for (int64_t d : r->type.shape)
      if (d < 0) bad(op, "E216", "result extents must be >= 0, got " + r->type.str());
  auto expect_shape = [&](const std::vector<int64_t>& want, size_t i = 0) {
    if (op.results[i]->type.shape != want)
      bad(op, "E205",
          "result type is " + op.results[i]->type.str() + " but " + Type::tensor(x.dtype, want).str() +
              " follows from the operand and attributes");
  };
  if (op.name == "tessera.reshape") {
    allow_attrs(op, {});
    if (numel(op.results[0]->type.shape) != numel(in))
      bad(op, "E216",
          "cannot reshape " + x.str() + " (" + std::to_string(numel(in)) + " elements) to " +
              op.results[0]->type.str());
  } else if (op.name == "tessera.transpose") {
    allow_attrs(op, {"perm"});
    const std::vector<int64_t> perm = perm_of(op, rank);
    std::vector<int64_t> want;
    for (int64_t p : perm) want.push_back(in[p]);
    expect_shape(want);
  } else if (op.name == "tessera.slice") {
    allow_attrs(op, {"start", "limit", "stride"});
    expect_shape(slice_of(op, in).shape);
  } else if (op.name == "tessera.broadcast_to") {
    allow_attrs(op, {});
    const std::vector<int64_t>& out = op.results[0]->type.shape;
    if (broadcast_shapes(in, out, op.loc) != out)
      bad(op, "E216", "cannot broadcast " + x.str() + " to " + op.results[0]->type.str() + " (numpy rules)");
  } else {
    allow_attrs(op, {"axis", "sizes"});
    int64_t axis = 0;
    const std::vector<int64_t> sizes = split_sizes(op, axis);
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::vector<int64_t> want = in;
      want[axis] = sizes[i];
      expect_shape(want, i);
    }
  }
}

ViewRead read_through_views(const Value* v, const std::function<bool(const Value*)>& has_buffer,
                            const std::function<void(const Value*)>& unviewable) {
  if (has_buffer(v) || !v->def || !is_view_op(v->def->name)) return {v, Layout::contiguous(v->type.shape)};
  const Op& op = *v->def;
  size_t result = 0;
  while (op.results[result].get() != v) ++result;
  const Value* operand = op.operands[0];
  const ViewRead in = read_through_views(operand, has_buffer, unviewable);
  if (auto l = view_layout(op, in.layout, result)) return {in.base, *l};
  unviewable(operand);
  return {operand, *view_layout(op, Layout::contiguous(operand->type.shape), result)};
}

int64_t concat_axis(const Op& op) {
  const Attr* a = op.attr("axis");
  if (!a || !a->as_int()) bad(op, "E211", "needs an integer 'axis'");
  return normalized_axis(op, *a->as_int(), op.results.at(0)->type.rank());
}

void verify_concat(const Op& op) {
  if (op.operands.empty() || op.results.size() != 1) bad(op, "E205", "takes one or more operands and has one result");
  allow_attrs(op, {"axis"});
  const Type& first = op.operands[0]->type;
  for (Value* v : op.operands) {
    if (!v->type.is_tensor()) bad(op, "E207", "operands must be tensors, got " + v->type.str());
    if (v->type.dtype != first.dtype) bad(op, "E209", "operands have different dtypes; insert a tessera.cast");
  }
  if (first.rank() == 0) bad(op, "E212", "joins tensors of rank 1 or more");
  const int64_t axis = concat_axis(op);
  std::vector<int64_t> want = first.shape;
  want[axis] = 0;
  for (Value* v : op.operands) {
    std::vector<int64_t> s = v->type.shape;
    if (static_cast<int64_t>(s.size()) != first.rank())
      bad(op, "E216", "operands must have one rank, got " + first.str() + " and " + v->type.str());
    for (int64_t d = 0; d < first.rank(); ++d)
      if (d != axis && s[d] != first.shape[d])
        bad(op, "E216",
            "operands differ in dimension " + std::to_string(d) + " (" + first.str() + " and " + v->type.str() +
                "); only the axis may");
    want[axis] += s[axis];
  }
  if (!(op.results[0]->type == Type::tensor(first.dtype, want)))
    bad(op, "E205",
        "result type is " + op.results[0]->type.str() + " but " + Type::tensor(first.dtype, want).str() +
            " follows from the operands");
}

std::optional<Layout> view_layout(const Op& op, const Layout& in, size_t result) {
  const std::vector<int64_t>& shape = op.operands[0]->type.shape;
  const std::vector<int64_t>& out = op.results.at(result)->type.shape;
  Layout l;
  l.offset = in.offset;
  if (op.name == "tessera.reshape") {
    auto st = reshape_strides(shape, in.strides, out);
    if (!st) return std::nullopt;
    l.strides = *st;
  } else if (op.name == "tessera.transpose") {
    for (int64_t p : perm_of(op, static_cast<int64_t>(shape.size()))) l.strides.push_back(in.strides[p]);
  } else if (op.name == "tessera.slice") {
    const SliceSpec s = slice_of(op, shape);
    for (size_t d = 0; d < shape.size(); ++d) {
      if (s.shape[d] > 0) l.offset += s.start[d] * in.strides[d];
      l.strides.push_back(s.shape[d] == 1 ? 0 : in.strides[d] * s.stride[d]);
    }
  } else if (op.name == "tessera.broadcast_to") {
    l.strides.assign(out.size(), 0);
    for (size_t i = 0; i < shape.size(); ++i) {
      const size_t d = out.size() - shape.size() + i;
      l.strides[d] = shape[i] == 1 ? 0 : in.strides[i];
    }
  } else if (op.name == "tessera.split") {
    int64_t axis = 0;
    const std::vector<int64_t> sizes = split_sizes(op, axis);
    int64_t start = 0;
    for (size_t i = 0; i < result; ++i) start += sizes[i];
    l.strides = in.strides;
    if (sizes[result] > 0) l.offset += start * in.strides[axis];
    if (sizes[result] == 1) l.strides[axis] = 0;
  } else {
    return std::nullopt;
  }
  if (numel(out) == 0) l.offset = in.offset;  // an empty view reads nothing: no offset past its base
  return l;
}

}  // namespace tessera::ir
