#include "passes/pipeline.hpp"

#include "passes/check_in_place.hpp"
#include "passes/fold_batch_sums.hpp"
#include "passes/fold_matmul_transposes.hpp"
#include "passes/graph_to_schedule.hpp"
#include "passes/index_guards.hpp"
#include "passes/matvecs_as_reductions.hpp"
#include "passes/schedule_to_tile.hpp"
#include "passes/simplify.hpp"
#include "passes/tile_to_target.hpp"

namespace tessera::passes {

using namespace tessera::ir;

void rewrite_graph(Module& graph, bool keep_matmuls) {
  simplify(graph);
  fold_batch_sums(graph);
  fold_matmul_transposes(graph);
  if (!keep_matmuls) matvecs_as_reductions(graph);
}

std::unique_ptr<Module> lower(const Module& in, Layer to, const machine::Descriptor& device,
                              const std::map<std::string, std::string>& candidates) {
  const std::string target = device.target();
  Layer at = detect_layer(in);
  verify(in, at);
  if (static_cast<int>(to) < static_cast<int>(at))
    fail("E111", std::string("cannot raise ") + layer_name(at) + " IR to " + layer_name(to) + " IR");
  std::unique_ptr<Module> m = clone(in);
  if (at == Layer::Graph && to != Layer::Graph) {
    rewrite_graph(*m, candidates.count("*") > 0);
    add_index_guards(*m);
    m = graph_to_schedule(*m, device, candidates);
    at = Layer::Schedule;
  }
  if (at == Layer::Schedule) check_in_place(*m);
  if (at == Layer::Schedule && to != Layer::Schedule) {
    m = schedule_to_tile(*m);
    at = Layer::Tile;
  }
  if (at == Layer::Tile && to != Layer::Tile) {
    m = tile_to_target(*m, target);
    at = Layer::Target;
  }
  verify(*m, to);
  return m;
}

std::unique_ptr<Module> lower(const Module& in, Layer to, const std::string& target,
                              const std::map<std::string, std::string>& candidates) {
  return lower(in, to, machine::default_for_target(target), candidates);
}

}  // namespace tessera::passes
