// Where a measurement came from: the source fingerprint (SHA-256 over every
// file that produces kernels and runs them), the git commit and whether the
// tree was clean, the toolchain, the machine and the date.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "support/utc_time.hpp"

namespace tessera::evidence {

// The repository root: $TESSERA_SOURCE_ROOT, else the nearest ancestor of the
// working directory holding src/ir and CMakeLists.txt. E853 if none.
std::string source_root();
// What a fingerprint covers: the paths (folders, or the one file
// CMakeLists.txt) whose files it hashes. Packets record their scope; one
// without it was recorded under the first, which left out python/.
using FingerprintScope = std::vector<std::string>;
const FingerprintScope& fingerprint_scope();         // today's: src include device tools cmake python CMakeLists.txt
const FingerprintScope& legacy_fingerprint_scope();  // before python/ was covered
// The scope a packet's "source" names (fingerprint_covers; absent: the
// legacy one), or nullopt when it names another: no packet may choose what
// its own freshness depends on.
std::optional<FingerprintScope> recorded_scope(const nlohmann::json& source);

// SHA-256 over "path\0sha256(content)\n" for the sorted files of the scope
// (Python's __pycache__ folders skipped: git never has them).
std::string source_fingerprint(const std::string& root, const FingerprintScope& scope = fingerprint_scope());

// The same fingerprint of the sources at `commit` in the git checkout at
// `root` (from git's objects, not the working tree); nullopt where `root` is
// not a checkout's top level or the commit is not in it. `commit` must be 40
// hex digits (anything else is nullopt: it comes from a packet).
std::optional<std::string> source_fingerprint_at(const std::string& root, const std::string& commit,
                                                 const FingerprintScope& scope = fingerprint_scope());

struct GitState {
  bool available = false;
  std::string commit;
  bool dirty = false;
  std::string dirty_files;  // `git status --porcelain`, abridged
};
GitState git_state(const std::string& root);

// Which commit a packet may claim. Where the tree has no git (a copy sent to
// a GPU machine): the commit the caller vouches for and that commit's source
// fingerprint; the packet is sealed only if this tree's fingerprint matches.
struct SealOptions {
  bool allow_dirty = false;  // write an explicitly unsealed packet instead of refusing (E855)
  std::string expect_commit, expect_fingerprint;
};
// packet["source"] (fingerprint, commit, git, dirty, commit_proof) and
// packet["sealed"]. E855 when the tree cannot be sealed and allow_dirty is
// false: a dirty tree, ignored files under the fingerprinted directories, no
// git and no commit given, or a given commit whose fingerprint is not this
// tree's.
void stamp_source(nlohmann::json& packet, const std::string& root, const SealOptions& o);

// cpu: model, feature digest, host compiler; cuda adds device, driver, NVRTC.
nlohmann::json environment(const std::string& target);

using tessera::utc_now_iso;

}  // namespace tessera::evidence
