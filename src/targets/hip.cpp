// The HIP lane: kernels rendered for AMD GPUs and compile-checked by clang-19
// for the arch of the device they were scheduled for (gfx90a, gfx1100,
// gfx1151); there is no AMD GPU here and no HIP runtime in this build, so
// nothing runs (E722).

#include "render/cuda_renderer.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/hip/hip_toolchain.hpp"
#include "support/atomic_file.hpp"
#include "support/sha256.hpp"
#include "targets/lane.hpp"

namespace tessera::targets {

namespace {

// The compile check, and its product: the code object beside the source.
std::string package_code_object(const ir::KernelDesc& k, const std::filesystem::path& dir, nlohmann::json& entry) {
  runtime::hip::CodeObject co = runtime::hip::compile(k);
  const std::string co_file = "kernels/" + k.sym + "." + co.arch + ".co";
  const std::string& bytes = co.image;
  write_file_atomic((dir / co_file).string(), bytes);
  entry["code_object"] = {
      {"file", co_file}, {"arch", co.arch}, {"toolchain", co.toolchain}, {"sha256", sha256_hex(bytes)}};
  return "clang (" + co.toolchain + ") " + co.arch;
}

Lane make_hip_lane() {
  Lane l;
  l.name = "hip";
  l.render = render::render_hip_kernel;
  l.kernel_abi = render::kHipKernelAbi;
  l.shared_memory = true;
  l.source_extension = ".hip";
  l.package_proves = "compiles for the arch named; not executed";
  l.package_kernel = package_code_object;
  l.execution = Execution::kCompileCheckOnly;
  l.refusal = {"E722",
               "the HIP lane is compile-checked only (clang-19; gfx90a, gfx1100, gfx1151): there is no AMD GPU "
               "here and no HIP "
               "runtime in this build (see `tessera package --target hip`)"};
  return l;
}

}  // namespace

const Lane& hip_lane() {
  static const Lane lane = make_hip_lane();
  return lane;
}

}  // namespace tessera::targets
