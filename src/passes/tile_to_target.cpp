#include "passes/tile_to_target.hpp"

#include <map>

#include "ir/ir_hash.hpp"
#include "ir/library_call.hpp"
#include "ir/target_dialect.hpp"
#include "ir/tile_dialect.hpp"
#include "ir/tile_ops.hpp"
#include "render/cuda_renderer.hpp"
#include "support/sha256.hpp"
#include "targets/lane.hpp"

namespace tessera::passes {

using namespace tessera::ir;

namespace {

// Buffer sizes come from the launches of the kernel (kernels are launched on
// tensors of one static type each).
AttrList buffer_descs(const Op& kernel, const Op& launch) {
  std::vector<Value*> vals(launch.operands.begin(), launch.operands.end());
  for (auto& r : launch.results) vals.push_back(r.get());
  AttrList out;
  const Region& body = *kernel.regions[0];
  for (size_t i = 0; i < body.args.size(); ++i) {
    bool written = i >= launch.operands.size();
    BufferDesc d{body.args[i]->name, body.args[i]->type.dtype, vals.at(i)->type.numel(), written};
    out.emplace_back(d.str());
  }
  return out;
}

}  // namespace

std::unique_ptr<Module> tile_to_target(const Module& tile, const std::string& target) {
  verify_tile(tile);
  const targets::Lane& lane = targets::renderable(target);  // E506 for none
  auto out = clone(tile);
  // The host schedule: tile.launch -> target.launch, keyed by kernel.
  std::map<std::string, const Op*> launch_of;
  for (Op* f : out->funcs())
    for (auto& op : f->regions[0]->ops)
      if (op->name == "tile.launch") {
        op->name = "target.launch";
        launch_of.emplace(op->sym, op.get());
      }
  for (auto& op : out->ops) {
    if (op->name != "tile.kernel" && op->name != "tile.extern_kernel") continue;
    const bool library = op->name == "tile.extern_kernel";
    std::string source = library ? LibraryMatmul::from_kernel(*op).to_text() : lane.render(*op);
    auto k = std::make_unique<Op>();
    k->name = "target.kernel";
    k->sym = op->sym;
    k->loc = op->loc;
    k->attrs["target"] = target;
    k->attrs["abi"] = library ? kLibraryAbi : lane.kernel_abi;
    if (library) k->attrs["library"] = *op->attr("library");
    k->attrs["grid"] = library ? Attr::ints({1}) : *op->attr("grid");
    if (const Attr* t = op->attr("threads")) k->attrs["threads"] = *t;
    // A TMA matmul's copy producer is launched beyond the program's threads,
    // and its tensor maps follow the buffers as parameters.
    if (op->attr("producer_threads"))
      k->attrs["threads"] = tile_int(*op, "threads") + tile_int(*op, "producer_threads");
    if (const Attr* maps = op->attr("tensor_maps")) k->attrs["tensor_maps"] = *maps;
    if (const Attr* pe = op->attr("persistent")) k->attrs["persistent"] = *pe;
    if (const Attr* d = op->attr("device")) k->attrs["device"] = *d;
    // A cluster of C blocks a program (CUDA; the other renderers refused it
    // above): the launch is programs * C blocks.
    if (const Attr* c = op->attr("cluster"); c && tile_int(*op, "cluster") > 1) {
      k->attrs["abi"] = render::kCudaClusterKernelAbi;
      k->attrs["cluster"] = *c;
      k->attrs["grid"] = Attr::ints({tile_ints(*op, "grid")[0] * tile_int(*op, "cluster")});
    }
    for (auto& inner : op->regions[0]->ops) {
      const int64_t bytes = inner->name == "tile.alloca" || inner->name == "tile.workspace"
                                ? tile_int(*inner, "size") * int64_t(dtype_size(inner->result()->type.dtype))
                                : 0;
      // GPU kernels: the one tile.alloca is dynamic shared memory
      if (inner->name == "tile.alloca" && lane.shared_memory) k->attrs["shared_bytes"] = bytes;
      if (inner->name == "tile.workspace") {
        if (!lane.workspace)
          fail("E502", "target " + target + " keeps no kernel workspace (tile.workspace)", inner->loc);
        k->attrs["workspace_bytes"] = bytes;
      }
    }
    k->attrs["artifact_hash"] = *op->attr("artifact_hash");
    auto it = launch_of.find(op->sym);
    if (it == launch_of.end()) fail("E505", "kernel @" + op->sym + " is never launched", op->loc);
    k->attrs["buffers"] = Attr(buffer_descs(*op, *it->second));
    k->attrs["sha256"] = sha256_hex(source);
    k->attrs["source"] = std::move(source);
    op = std::move(k);
  }
  stamp_ir_hashes(*out);
  verify_target(*out);
  return out;
}

}  // namespace tessera::passes
