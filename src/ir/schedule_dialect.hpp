// Schedule IR: the decisions. Each "schedule.*" op keeps the semantic facts of
// the graph op it came from plus every decision (strategy, vector width, work
// split, accumulation dtype, nan_mode) and an artifact_hash: the SHA-256 of a
// canonical string of all of them. Whoever consumes Schedule IR re-derives the
// hash and refuses an op whose attributes changed after hashing.
#pragma once
#include <string>
#include <vector>

#include "ir/ir.hpp"

namespace tessera::ir {

// "family=reduce;accum=\"f32\";...;input=tensor<..>;output=tensor<..>"
std::string semantic_contract(const Op& op);
std::string compute_artifact_hash(const Op& op);
void stamp_artifact_hash(Op& op);
// Throws E301 "schedule altered after hashing" on mismatch, E302 if missing.
void check_artifact_hash(const Op& op);

void verify_schedule(const Module& m);

// Attribute accessors that fail with E302 naming the op and key.
int64_t int_attr(const Op& op, const std::string& key);
bool bool_attr(const Op& op, const std::string& key);
std::vector<int64_t> ints_attr(const Op& op, const std::string& key, size_t count);  // exactly `count` integers
std::string string_attr(const Op& op, const std::string& key);

}  // namespace tessera::ir
