#include "ir/verify.hpp"

#include <set>

#include "ir/graph_dialect.hpp"
#include "ir/schedule_dialect.hpp"
#include "ir/target_dialect.hpp"
#include "ir/tile_dialect.hpp"

namespace tessera::ir {

const char* layer_name(Layer l) {
  switch (l) {
    case Layer::Graph: return "graph";
    case Layer::Schedule: return "schedule";
    case Layer::Tile: return "tile";
    case Layer::Target: return "target";
  }
  return "?";
}

Layer detect_layer(const Module& m) {
  std::set<std::string> dialects;
  for (auto& top : m.ops) {
    if (top->name != "func") dialects.insert(top->dialect());
    else
      for (auto& op : top->regions[0]->ops)
        if (op->name != "return") dialects.insert(op->dialect());
  }
  dialects.erase("");
  if (dialects.empty()) return Layer::Graph;  // a func that only returns its input
  if (dialects.size() > 1) {
    std::string all;
    for (auto& d : dialects) all += (all.empty() ? "" : ", ") + d;
    fail("E110", "the module mixes dialects of several layers (" + all + ")");
  }
  const std::string& d = *dialects.begin();
  if (d == "tessera") return Layer::Graph;
  if (d == "schedule") return Layer::Schedule;
  if (d == "tile") return Layer::Tile;
  if (d == "target") return Layer::Target;
  fail("E110", "unknown dialect '" + echo(d) + "'");
}

void verify(const Module& m, Layer l) {
  switch (l) {
    case Layer::Graph: return verify_graph(m);
    case Layer::Schedule: return verify_schedule(m);
    case Layer::Tile: return verify_tile(m);
    case Layer::Target: return verify_target(m);
  }
}

}  // namespace tessera::ir
