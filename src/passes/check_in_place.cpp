#include "passes/check_in_place.hpp"

#include <algorithm>

#include "families/pointwise/pointwise_schedule.hpp"

namespace tessera::passes {

using namespace tessera::ir;

namespace {

// Leaf k of a pointwise kernel is read at the element the kernel writes: no
// offset, not gathered, and the result's own (contiguous) strides.
bool reads_where_it_writes(const families::pointwise::Plan& p, size_t k) {
  if (p.leaf_offsets[k] != 0 || !p.gather_strides[k].empty()) return false;
  int64_t stride = 1;
  for (size_t g = p.view.size(); g-- > 0;) {
    if (p.view[g] > 1 && p.leaf_strides[k][g] != stride) return false;
    stride *= p.view[g];
  }
  return true;
}

// The reason `producer` may not write into `arg`, or "".
std::string in_place_refusal(const Region& body, const Op& producer, const Value* arg) {
  if (producer.name != "schedule.pointwise")
    return "a " + producer.name + " kernel computes it (only a pointwise kernel reads each element where it writes it)";
  const families::pointwise::Plan p = families::pointwise::read_plan(producer);
  for (size_t k = 0; k < producer.operands.size(); ++k)
    if (producer.operands[k] == arg && !reads_where_it_writes(p, k))
      return "its kernel reads %" + arg->name + " at other elements than it writes (a view, broadcast or gather)";
  const auto at = std::find_if(body.ops.begin(), body.ops.end(), [&](const auto& op) { return op.get() == &producer; });
  for (auto later = at + 1; later < body.ops.end(); ++later)
    if ((*later)->name != "return" && std::count((*later)->operands.begin(), (*later)->operands.end(), arg))
      return "a later kernel (" + (*later)->name + ") still reads it";
  return "";
}

}  // namespace

bool writes_in_place(const Region& body, const Op& producer, const Value* arg) {
  return in_place_refusal(body, producer, arg).empty();
}

void check_in_place(const Module& schedule) {
  for (const Op* f : schedule.funcs()) {
    const Attr* attr = f->attr("in_place");
    if (!attr) continue;
    const Region& body = *f->regions[0];
    const Op& ret = *body.ops.back();
    const std::vector<int64_t> into = *attr->as_ints();  // verify_func_return checked its form
    for (size_t r = 0; r < into.size(); ++r) {
      if (into[r] < 0) continue;
      const Value* arg = body.args[into[r]].get();
      const Value* v = ret.operands[r];
      auto refuse = [&](const std::string& why) {
        fail("E221",
             "func @" + f->sym + ": result " + std::to_string(r) + " (%" + v->name + ") cannot be written into %" +
                 arg->name + ": " + why,
             f->loc);
      };
      if (!v->def && v != arg) refuse("it is another argument, which no kernel writes");
      if (!v->def) continue;  // the argument itself: nothing to write
      if (std::count(ret.operands.begin(), ret.operands.end(), v) > 1) refuse("the value is returned twice");
      if (const std::string why = in_place_refusal(body, *v->def, arg); !why.empty()) refuse(why);
    }
  }
}

}  // namespace tessera::passes
