// Opt-in schedule features that no default schedule takes (yet): a user (or
// the next measurement) asks for one by name in TESSERA_EXPERIMENTAL, a
// comma-separated list. None has measured a win broad enough to be a
// default (docs/journal.md says what was measured, and what has not yet run). The
// decision a feature changes is recorded in Schedule IR like any other (and
// covered by the artifact hash), so a program compiled with a feature says so.
//   rows_cluster       CUDA rows of 16K-256K lanes held on chip across a
//                      thread-block cluster (docs/architecture.md)
//   matmul_f32_stage_a CUDA f32 matmuls with row-major A: A staged through
//                      registers and stored transposed in shared memory
//                      (schedule stage_a = true, tessera_matmul_simt_stage_a.cuh)
// An unknown name is an error (E305), never ignored.
#pragma once
#include <string>

namespace tessera {

bool experimental(const std::string& feature);

}  // namespace tessera
