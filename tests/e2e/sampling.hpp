// How `make test` samples the big end-to-end matrices, and how `make test-full`
// runs all of them (tests/README.md).
//
// The rule: a case runs when the FNV-1a hash of "<matrix>/<case name>" is 0
// modulo `one_in` (the matrix in the hash gives each lane, CPU or Metal, its
// own sample); then, for every coverage key (an op and dtype pair, a shape and
// axes, ...), each value that no picked case has yet adds the first case, in
// matrix order, that has it. So every op, dtype, shape and input kind still
// runs at least once, and a case's pick depends only on names and keys, never
// on a clock, a random seed or std::hash: the sample is the same on every run
// and machine.
// `one_in` 0 picks by coverage keys alone. TESSERA_TEST_FULL=1 runs every case. Case names are the same in both modes,
// so one case runs with TESSERA_TEST_FULL=1 and --gtest_filter=<its name>.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::test {

inline bool full_matrices() {
  const char* e = std::getenv("TESSERA_TEST_FULL");
  return e && std::string_view(e) == "1";
}

// 64-bit FNV-1a: defined on bytes, so the pick is the same everywhere.
inline uint64_t fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

template <class T>
using CaseKey = std::function<std::string(const T&)>;

// The cases of `matrix` to run; says on stderr how many of how many, so a
// sampled run never passes for a full one.
template <class T>
std::vector<T> sample_matrix(const char* matrix, const std::vector<T>& all, const CaseKey<T>& name, uint64_t one_in,
                             const std::vector<CaseKey<T>>& coverage) {
  if (full_matrices()) return all;
  std::vector<bool> picked(all.size());
  for (size_t i = 0; i < all.size() && one_in > 0; ++i)
    picked[i] = fnv1a(std::string(matrix) + "/" + name(all[i])) % one_in == 0;
  for (const CaseKey<T>& key : coverage) {
    std::set<std::string> covered;
    for (size_t i = 0; i < all.size(); ++i)
      if (picked[i]) covered.insert(key(all[i]));
    for (size_t i = 0; i < all.size(); ++i) picked[i] = covered.insert(key(all[i])).second || picked[i];
  }
  std::vector<T> out;
  for (size_t i = 0; i < all.size(); ++i)
    if (picked[i]) out.push_back(all[i]);
  std::fprintf(stderr, "[ sample   ] %s: %zu of %zu cases (TESSERA_TEST_FULL=1 runs all)\n", matrix, out.size(),
               all.size());
  return out;
}

}  // namespace tessera::test
