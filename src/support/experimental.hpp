// Opt-in schedule features that have not yet run on the hardware they are
// for. A default schedule never takes one: a user (or the next measurement)
// asks for it by name in TESSERA_EXPERIMENTAL, a comma-separated list. The
// decision a feature changes is recorded in Schedule IR like any other (and
// covered by the artifact hash), so a program compiled with a feature says so.
//   rows_cluster       CUDA rows of 16K-256K lanes held on chip across a
//                      thread-block cluster (docs/architecture.md)
//   rows_narrow_128x4  CUDA rows of 4096 16-bit lanes as 128 threads x 4
//                      loads a thread instead of 256 x 2
//   matmul_f32_stage_a CUDA f32 matmuls with row-major A: A staged through
//                      registers and stored transposed in shared memory
//                      (schedule stage_a = true, tessera_matmul_simt_stage_a.cuh)
// An unknown name is an error (E305), never ignored.
#pragma once
#include <string>

namespace tessera {

bool experimental(const std::string& feature);

}  // namespace tessera
