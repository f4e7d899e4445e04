#include "runtime/metal/msl_emulation.hpp"

#include "ir/kernel_abi.hpp"
#include "support/sha256.hpp"

namespace tessera::runtime::metal {

namespace {

const char* kEmulationHeader =
#include "msl_host_emulation.inc"
    ;

// MSL storage spellings of the kernel's buffers (render/msl_renderer.cpp).
const char* msl_storage(DType d) {
  switch (d) {
    case DType::F16: return "half";
    case DType::BF16: return "ushort";
    case DType::F32: return "float";
    case DType::I1: return "uchar";
    case DType::I32: return "int";
    case DType::I64: return "long";  // 64-bit in MSL, and on the Linux hosts that emulate it
    case DType::F64: break;          // never rendered for Metal
  }
  fail("E712", "an " + std::string(dtype_name(d)) + " buffer cannot belong to a Metal kernel");
}

}  // namespace

std::string emulated_symbol(const std::string& sym) { return "tsr_emulated_" + sym; }

ir::KernelDesc emulated_host_kernel(const ir::KernelDesc& msl) {
  if (msl.target != "metal")
    fail("E712", "kernel @" + msl.sym + " is for target '" + msl.target + "', not metal: nothing to emulate");
  if (sha256_hex(msl.source) != msl.sha256)
    fail("E701", "kernel @" + msl.sym + " refused: its source does not match its recorded sha256 " + msl.sha256);
  if (msl.entry.empty()) fail("E712", "kernel @" + msl.sym + " names no entry symbol: nothing to emulate");
  std::string args;
  for (size_t i = 0; i < msl.buffers.size(); ++i)
    args += std::string(i ? ", " : "") + "static_cast<" + msl_storage(msl.buffers[i].dtype) + "*>(b[" +
            std::to_string(i) + "])";
  ir::KernelDesc k = msl;
  k.target = "cpu";
  k.abi = ir::kCpuKernelAbi;
  k.sym = emulated_symbol(msl.sym);
  k.entry = emulated_symbol(msl.entry);
  k.source = std::string("// Tessera: host emulation of Metal kernel ") + msl.entry + " (sha256 " + msl.sha256 +
             "), placement emulated_msl. Not Metal.\n" + kEmulationHeader + "\n// ---- the MSL kernel, unchanged\n" +
             msl.source + "\n// ---- CPU entry: program g is threadgroup g of TSR_THREADS emulated threads\n" +
             "extern \"C\" void " + k.entry + "(void* const* b, int64_t begin, int64_t end) {\n" +
             "  for (int64_t g = begin; g < end; ++g)\n" +
             "    msl_emu::run_threadgroup(TSR_THREADS, [&](const msl_emu::ThreadIds& id) {\n" + "      " + msl.entry +
             "(" + args + (args.empty() ? "" : ", ") + "id.tid, uint(g), id.simd_lane, id.simd);\n    });\n}\n";
  k.sha256 = sha256_hex(k.source);
  return k;
}

}  // namespace tessera::runtime::metal
