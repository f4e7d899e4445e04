// The Tile IR op table: one entry per op that may appear in a tile.kernel's
// body (plus one for tile.kernel itself) with its operands, results, typed
// attributes, regions, a doc line and the rules the table cannot state. It
// drives
//   - the verifier (verify_tile_op): every op is checked against its entry, so
//     hand-edited IR gets a file:line:col diagnostic (E403/E404), never a crash;
//   - the builder (TileBuilder): a family building an op its entry rejects is
//     a compiler bug (TESSERA_ASSERT);
//   - the renderers: render/c_like.cpp dispatches by name and reads attributes
//     through the typed accessors below, which cannot fail on verified IR.
// Adding an op: an entry in tile_ops.cpp, a TileBuilder method, an emitter in
// render/c_like.cpp (tests/unit/test_tile_ops.cpp checks that every entry has one).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.hpp"

namespace tessera::ir {

enum class AttrKind {
  Int,     // 64-bit integer
  Ints,    // list of integers (of `count` entries where count > 0)
  Number,  // integer or float (a float constant's value, a masked lane's fill)
  String,
  Strings,  // list of strings
  Bool,
};

struct TileAttrSpec {
  const char* name;
  AttrKind kind;
  bool required;
  size_t count = 0;  // Ints only: exactly this many (0: any)
};

// Operand and result kinds, one letter per value: P ptr, I index, S scalar,
// T tile, D data (scalar or tile), N number (index or scalar), A any. A
// letter followed by '?' may be absent, by '*' repeats (zero or more; last).
struct TileOpSpec {
  const char* name;
  const char* operands;
  const char* results;
  const char* signature;  // the operands in words for diagnostics: "(ptr, index offset)"
  std::vector<TileAttrSpec> attrs;
  size_t regions = 0;
  const char* doc;
  // The op's rules beyond the table (value ranges, types that must agree),
  // run by the verifier after the table's checks pass; nullptr if none. It
  // reports with fail(E40x, ..., op.loc).
  void (*check)(const Op&) = nullptr;
};

// The ops of a kernel body, in the order of the table.
const std::vector<TileOpSpec>& tile_ops();
const TileOpSpec* find_tile_op(std::string_view name);  // nullptr: not a kernel body op
const TileOpSpec& tile_kernel_spec();                   // tile.kernel

// What `op` does not have of its entry (operand and result counts and kinds,
// regions, a missing, unknown or mistyped attribute), or nullopt.
std::optional<std::string> table_violation(const Op& op, const TileOpSpec& spec);

// Verifies one kernel body op and the ops of its regions: E404 for an op the
// table lacks, E403 for one its entry (or its check) rejects, at op.loc.
void verify_tile_op(const Op& op);

// Typed reads of a verified tile op's (or tile.kernel's) attributes. The key
// must be declared in the op's entry with a kind that admits the read (an Int
// read of a Number attribute admits an integer value), and be present: the
// verifier has checked that, so a failure here is a compiler bug
// (TESSERA_ASSERT), never a user error. Optional attributes: test op.attr(key).
int64_t tile_int(const Op& op, const char* key);
std::vector<int64_t> tile_ints(const Op& op, const char* key);
double tile_number(const Op& op, const char* key);  // an integer read as a double
const std::string& tile_string(const Op& op, const char* key);
std::vector<std::string> tile_strings(const Op& op, const char* key);
bool tile_bool(const Op& op, const char* key);

}  // namespace tessera::ir
