// A target lane: what Tessera knows about one target (cpu, cuda, hip, metal),
// each in one definition (src/targets/<lane>.cpp): how its kernels are
// rendered, what a package of it proves, whether and how it executes here,
// how it is measured. Passes, the packager, the CLI, the bench runner and the
// arbiter ask the lane instead of comparing target names. Looking up a lane
// that does not exist fails closed: E506 where a kernel is to be rendered,
// E721 where one is to run.
//
// Layering: targets sits on render and runtime; passes, package, arbiter,
// evidence, api and the tools sit on it; nothing below includes it.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/ir.hpp"
#include "ir/target_dialect.hpp"
#include "runtime/executable.hpp"

namespace tessera::targets {

// Where a lane's kernels can run in this build.
enum class Execution {
  kNativeCpu,         // on this host's cores (placement native_cpu)
  kNativeGpu,         // on a GPU this build drives (placement native_gpu)
  kEmulatedOnly,      // only under a host emulation, asked for with --emulate (placement emulated_msl)
  kCompileCheckOnly,  // never: its kernels are compiled for an arch, not run
};

// A stable diagnostic (docs/errors.md): the code and its message.
struct Refusal {
  std::string code, message;
};

// What a measurement on a lane depends on; the arbiter's tuning ledger keys on it.
struct MeasuringIdentity {
  std::string device;     // exact device identity
  std::string toolchain;  // compilers and library versions that candidates depend on
};

struct Lane {
  std::string name;

  // Rendering (passes/tile_to_target.cpp).
  std::function<std::string(const ir::Op& tile_kernel)> render;
  const char* kernel_abi = nullptr;  // the abi of its synthesized kernels
  bool shared_memory = false;        // a kernel's one tile.alloca is dynamic shared memory (GPU lanes)
  bool workspace = false;            // its runtime keeps a kernel's tile.workspace from launch to launch

  // Packaging (package/aot_package.cpp).
  std::string source_extension;  // of kernels/<sym><ext>
  std::string package_proves;    // the manifest's "proves"
  // What the lane adds to a kernel's manifest entry: what its loader needs,
  // or a compile check and its product (written under `dir`). Returns the
  // compile check done ("" for none). Null: nothing beyond the common fields.
  std::function<std::string(const ir::KernelDesc& k, const std::filesystem::path& dir, nlohmann::json& entry)>
      package_kernel;

  // Execution (`tessera run`, `tessera bench`, the API).
  Execution execution = Execution::kCompileCheckOnly;
  Refusal refusal;  // why it does not run as asked (kEmulatedOnly without --emulate; kCompileCheckOnly)
  // Loads a Target IR func (`func` empty: the first) for this lane; null where it does not execute.
  std::function<std::unique_ptr<runtime::Executable>(const ir::Module& target_ir, const std::string& func)> load;
  bool device_clock = false;  // launches carry device_event times (the primary timing domain)
  // `tessera run`'s first line, without the newline: "run @f on target ...".
  std::function<std::string(const std::string& func)> banner;

  // Measuring (arbiter, evidence).
  std::string arbiter_lane;  // the lane whose runner measures this lane's matmul candidates; "" for none
  std::function<MeasuringIdentity()> identity;  // null where nothing is measured
  std::function<nlohmann::json()> environment;  // provenance beyond the host's (a GPU's name, arch, driver) or null
  std::function<double(size_t bytes)> device_copy_gbs;  // a device lane's bandwidth ceiling; null: the host's read
  // Enqueues, ahead of the executable's next launch, a write over the
  // device's last-level cache (a bench case's cold_l2 samples); null where
  // the lane has none.
  std::function<void(runtime::Executable& exe)> evict_cache;

  bool native() const { return execution == Execution::kNativeCpu || execution == Execution::kNativeGpu; }
  const char* primary_timing_domain() const { return device_clock ? "device_event" : "kernel_wall"; }
};

// Every lane, in order: cpu, cuda, hip, metal.
const std::vector<const Lane*>& lanes();
// The lane named `name`, or null.
const Lane* find(const std::string& name);
// For rendering kernels: E506 unless the lane exists.
const Lane& renderable(const std::string& name);
// For `tessera run`: E723 for --emulate on a lane without an emulation, the
// lane's refusal (E720, E722) where it does not run as asked, E721 for no lane.
const Lane& runnable(const std::string& name, bool emulate);
// For native execution only (bench, arbiter runners): E721 unless the lane
// runs natively here.
const Lane& native(const std::string& name);

// The definitions (one file each).
const Lane& cpu_lane();
const Lane& cuda_lane();
const Lane& hip_lane();
const Lane& metal_lane();

}  // namespace tessera::targets
