// The CUDA device's descriptor, read from the driver: its numbers are the
// driver's attributes; its capabilities follow from the compute capability
// (what Tessera's CUDA tile library uses on it).
#include <algorithm>

#include "runtime/cuda/cuda_api.hpp"
#include "runtime/cuda/cuda_device.hpp"
#include "support/diagnostic.hpp"

namespace tessera::runtime::cuda {

namespace {

int attribute(CUdevice_attribute a) {
  int v = 0;
  check(driver().cuDeviceGetAttribute(&v, a, device()), "cuDeviceGetAttribute");
  return v;
}

}  // namespace

machine::Descriptor describe_device() {
  using machine::Cap;
  const DeviceInfo& info = device_info();
  machine::Descriptor d;
  d.kind = machine::Kind::Cuda;
  d.name = info.name;
  std::replace(d.name.begin(), d.name.end(), ' ', '-');  // one word in the descriptor's text
  d.origin = "driver";
  d.arch = info.arch();
  d.compute_units = info.multiprocessors;
  d.simd_width = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  d.vector_bytes = 16;  // ld.global.v4 of 32-bit words, on every CUDA device
  d.max_threads = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  d.shared_bytes = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  d.l2_bytes = attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  d.registers = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  const int cc = info.sm_major * 10 + info.sm_minor;
  const bool clusters = attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH) != 0;
  // Hopper allows 16 blocks a cluster when a kernel opts in; 8 is portable.
  d.max_cluster = !clusters ? 1 : cc >= 90 ? 16 : 8;
  auto add = [&](Cap c) { d.caps |= static_cast<uint32_t>(c); };
  add(Cap::ThreadBlocks);
  add(Cap::L2Prefetch);
  add(Cap::TransposeBlock);
  add(Cap::AttentionGradBlock);
  add(Cap::AttentionDecodeBlock);
  // The block library's cp.async pipelines and bf16 mma.sync need sm_80.
  if (cc >= 80) add(Cap::BlockMatmul), add(Cap::TensorCores);
  if (cc >= 90) add(Cap::BulkCopy), add(Cap::Tma);
  if (clusters) add(Cap::Clusters);
  // wgmma is sm_90a only: later architectures dropped it.
  if (cc == 90) add(Cap::Wgmma);
  d.blas = "cublaslt";
  return d;
}

bool device_present() {
  try {
    driver();
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace tessera::runtime::cuda
