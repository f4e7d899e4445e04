// The Metal lane: MSL kernels, emitted and digested; never compiled by Apple's
// compiler nor run on an Apple GPU here (E720). With --emulate they run on the
// CPU under the host emulation (emulated_msl), which checks their semantics.
#include <fmt/core.h>

#include "render/msl_renderer.hpp"
#include "runtime/cpu_executable.hpp"
#include "runtime/thread_pool.hpp"
#include "targets/lane.hpp"

namespace tessera::targets {

namespace {

Lane make_metal_lane() {
  Lane l;
  l.name = "metal";
  l.render = render::render_msl_kernel;
  l.kernel_abi = render::kMetalKernelAbi;
  l.shared_memory = true;
  l.source_extension = ".metal";
  l.package_proves =
      "emitted and digested; never compiled by Apple's compiler nor run on an Apple GPU (the MSL's semantics are "
      "checked under host emulation, docs/status.md)";
  l.package_kernel = [](const ir::KernelDesc& k, const std::filesystem::path&, nlohmann::json& entry) {
    entry["metal"] = {{"function", k.entry},  // what a Darwin loader needs to dispatch it
                      {"threads_per_threadgroup", {k.threads, 1, 1}},
                      {"threadgroups_per_grid", {k.grid, 1, 1}},
                      {"simdgroup_width", 32},
                      {"compile_options", render::kMetalCompileOptions}};
    return std::string();
  };
  l.execution = Execution::kEmulatedOnly;
  l.refusal = {"E720",
               "native Metal execution needs a Darwin host with an Apple GPU; this is Linux (--emulate runs "
               "the MSL on the CPU under the host emulation, labelled emulated_msl)"};
  l.load = [](const ir::Module& m, const std::string& func) -> std::unique_ptr<runtime::Executable> {
    return std::make_unique<runtime::CpuExecutable>(runtime::CpuExecutable::load_emulated_msl(m, func));
  };
  l.banner = [](const std::string& func) {
    return fmt::format(
        "run @{} on target metal, EMULATED: MSL compiled as C++ by the host compiler, {} CPU threads; "
        "not an Apple GPU",
        func, runtime::ThreadPool::global().size());
  };
  // Matmul candidates of an emulated run are measured by the CPU's runner, as `tessera run` always has.
  l.arbiter_lane = "cpu";
  return l;
}

}  // namespace

const Lane& metal_lane() {
  static const Lane lane = make_metal_lane();
  return lane;
}

}  // namespace tessera::targets
