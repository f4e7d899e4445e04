// Bandwidth ceilings measured in the same process as the kernels they judge.
#pragma once
#include <cstdint>

namespace tessera::evidence {

// Seconds for one pass that reads n floats once on every core of the global
// thread pool, each core walking `streams` parts of its range at once.
double cpu_read_pass_seconds(const float* data, int64_t n, int streams);
// The faster of one and eight streams per core: the best read we could find.
double cpu_read_ceiling_seconds(const float* data, int64_t n);

}  // namespace tessera::evidence
