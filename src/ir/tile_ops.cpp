#include "ir/tile_ops.hpp"

#include <unordered_map>

#include "ir/tile_dialect.hpp"

namespace tessera::ir {

namespace {

[[noreturn]] void bad(const Op& op, const std::string& msg) { fail("E403", "'" + echo(op.name) + "': " + msg, op.loc); }

bool is_index(const Value* v) { return v->type.kind == TypeKind::Index; }
bool is_alloca(const Value* v) { return v->def && v->def->name == "tile.alloca"; }
bool is_workspace(const Value* v) { return v->def && v->def->name == "tile.workspace"; }

// ---- the rules beyond the table, one function per op that has any ----------

void check_constant(const Op& op) {
  // An index constant is printed as an integer literal: a float value (1.5,
  // or 1e309, which reads as inf) has no index meaning.
  if (is_index(op.result()) && !op.attr("value")->as_int()) bad(op, "an index constant's 'value' must be an integer");
}

void check_to_index(const Op& op) {
  const DType d = op.operands[0]->type.dtype;
  if (d != DType::I32 && d != DType::I64) bad(op, "takes an i32 or i64 scalar");
}

void check_alloca(const Op& op) {
  const int64_t size = tile_int(op, "size");
  if (size <= 0 || size > (1 << 20)) bad(op, "needs 1 <= size <= 2^20");
}

void check_workspace(const Op& op) {
  const int64_t size = tile_int(op, "size");
  if (size <= 0 || size > (int64_t{1} << 32)) bad(op, "needs 1 <= size <= 2^32");
}

void check_load_staged(const Op& op) {
  if (!is_alloca(op.operands[1]) || op.operands[1]->type.dtype != op.operands[0]->type.dtype)
    bad(op, "stages through a tile.alloca of the loaded pointer's dtype");
  if (tile_int(op, "row_stride") < 1) bad(op, "needs an integer 'row_stride' >= 1");
}

void check_load_strided(const Op& op) {
  if (is_float(op.result()->type.dtype) != is_float(op.operands[0]->type.dtype) ||
      (!is_float(op.result()->type.dtype) && op.result()->type.dtype != op.operands[0]->type.dtype))
    bad(op, "loads a tile of the pointer's dtype (floats may widen)");
}

void check_gather(const Op& op) {
  check_load_strided(op);
  const Type& a = op.operands[1]->type;
  if (a.dtype != DType::I64 || a.shape != op.result()->type.shape) bad(op, "gathers by an i64 tile of its lanes");
}

void check_transpose(const Op& op) {
  if (op.operands[0]->type.dtype != op.operands[1]->type.dtype) bad(op, "copies between buffers of one dtype");
  for (const char* key : {"rows", "cols"}) {
    const int64_t v = tile_int(op, key);
    if (v < 0 || v >= (int64_t{1} << 40)) bad(op, std::string("needs an integer '") + key + "' in [0, 2^40)");
  }
  for (int64_t v : tile_ints(op, "block"))
    if (v < 1 || v > 128 || (v & (v - 1)) != 0) bad(op, "'block' sizes must be powers of two in [1, 128]");
}

// A combine kind combine_identity knows (E402 at the op).
void check_kind(const Op& op) {
  const std::string& kind = tile_string(op, "kind");
  if (kind != "sum" && kind != "prod" && kind != "max" && kind != "min")
    fail("E402", "unknown combine kind '" + echo(kind) + "'", op.loc);
}

void check_combine(const Op& op) {
  check_kind(op);
  if (!(op.operands[0]->type == op.operands[1]->type)) bad(op, "combines two values of the same type");
}

void check_reduce_lanes(const Op& op) {
  check_kind(op);
  if (op.attr("scope") && tile_string(op, "scope") != "block" && tile_string(op, "scope") != "program")
    bad(op, "'scope' is \"block\" or \"program\" (reduce_lanes only)");
}

void check_fold_rows(const Op& op) {
  check_kind(op);
  const Type& t = op.operands[0]->type;
  if (t.shape.size() != 2) bad(op, "works on 2-D tiles [rows, cols]");
  if (!(op.result()->type == t)) bad(op, "yields its operand's type");
}

void check_softmax_stats(const Op& op) {
  const Type& t = op.operands[0]->type;
  if (!(op.operands[1]->type == t) || !(op.results[0]->type == t) || !(op.results[1]->type == t))
    bad(op, "takes two scalars of one float type and yields two");
}

void check_map(const Op& op) {
  std::vector<const Type*> types;
  for (const Value* v : op.operands) types.push_back(&v->type);
  const auto t = map_result(tile_string(op, "fn"), types);
  if (const std::string* why = std::get_if<std::string>(&t)) bad(op, *why);
  if (!(op.result()->type == std::get<Type>(t)))
    bad(op, "yields " + std::get<Type>(t).str() + ", not " + op.result()->type.str());
}

void check_attention_grad(const Op& op) {
  const DType t = op.operands[0]->type.dtype;
  for (int i : {0, 1, 2, 3, 4, 6, 7, 8})
    if (op.operands[i]->type.dtype != t || !is_float(t))
      bad(op, "q, k, v, o, do, dq, dk and dv are pointers of one float dtype");
  if (!is_float(op.operands[5]->type.dtype)) bad(op, "lse is a float pointer");
  if (op.operands.size() > 11 || (op.operands.size() == 11 && !is_alloca(op.operands[10])))
    bad(op, "takes at most one operand after program: the tile.alloca scratch (GPU blocks)");
  for (int64_t v : tile_ints(op, "block"))
    if (v < 1 || v > 1024) bad(op, "'block' sizes must be in [1, 1024]");
  const int64_t d = tile_int(op, "head_dim"), heads = tile_int(op, "heads"), kv = tile_int(op, "kv_heads");
  if (d < 1 || d > 256) bad(op, "'head_dim' must be in [1, 256]");
  if (tile_int(op, "batch") < 0 || heads < 0 || kv < 0 || (kv == 0 ? heads != 0 : heads % kv != 0))
    bad(op, "'heads' must be a multiple of 'kv_heads' (both >= 0), 'batch' >= 0");
  const int64_t sq = tile_int(op, "sq"), sk = tile_int(op, "sk");
  if (sq < 0 || sk < 0 || sq > (int64_t{1} << 40) || sk > (int64_t{1} << 40)) bad(op, "'sq' and 'sk' out of range");
  for (const char* block : {"mma", "wgmma"})
    if (op.attr(block) && tile_bool(op, block) &&
        ((t != DType::F16 && t != DType::BF16) || (d != 64 && d != 128) ||
         tile_ints(op, "block") != std::vector<int64_t>{128, 128} ||
         (op.attr("one_pass") && tile_bool(op, "one_pass")) || op.operands.size() != 11))
      bad(op, std::string("'") + block +
                  "' takes f16 or bf16, head dims 64 and 128, block [128, 128], its scratch, and no one_pass");
  if (op.attr("mma") && tile_bool(op, "mma") && op.attr("wgmma") && tile_bool(op, "wgmma"))
    bad(op, "takes one of 'mma' and 'wgmma'");
}

void check_attention_decode(const Op& op) {
  const DType t = op.operands[0]->type.dtype;
  for (int i = 0; i < 4; ++i)
    if (op.operands[i]->type.dtype != t || !is_float(t)) bad(op, "q, k, v and o are pointers of one float dtype");
  if (!is_workspace(op.operands[4]) || !is_alloca(op.operands[5])) bad(op, "takes a tile.workspace and a tile.alloca");
  const bool lse = tile_bool(op, "lse");
  if (op.operands.size() != (lse ? 8u : 7u) || (lse && op.operands[7]->type.dtype != DType::F32))
    bad(op, "takes an f32 lse pointer last exactly when 'lse'");
  const auto blk = tile_ints(op, "block");
  const int64_t d = tile_int(op, "head_dim"), heads = tile_int(op, "heads"), kv = tile_int(op, "kv_heads");
  if (blk[0] < 1 || blk[0] > 8 || blk[1] < 1 || blk[1] > 1024) bad(op, "'block' is [rows in 1..8, keys in 1..1024]");
  if (d != 16 && d != 32 && d != 64 && d != 128 && d != 256) bad(op, "'head_dim' is 16, 32, 64, 128 or 256");
  if (tile_int(op, "batch") < 0 || heads < 1 || kv < 1 || heads % kv != 0)
    bad(op, "'heads' must be a multiple of 'kv_heads' (both >= 1), 'batch' >= 0");
  const int64_t sq = tile_int(op, "sq"), sk = tile_int(op, "sk"), chunk = tile_int(op, "chunk");
  if (sq < 1 || sk < 0 || sq > (int64_t{1} << 40) || sk > (int64_t{1} << 40)) bad(op, "'sq' and 'sk' out of range");
  if (heads / kv * sq != blk[0]) bad(op, "block rows are a kv head's query rows (heads / kv_heads * sq)");
  if (chunk < 1 || chunk % blk[1] != 0 || (sk + chunk - 1) / chunk > blk[1])
    bad(op, "'chunk' is a multiple of the block's keys, with at most that many chunks");
  for (const char* key : {"q_strides", "k_strides", "v_strides", "o_strides", "offsets"})
    for (int64_t st : tile_ints(op, key))
      if (st < 0) bad(op, std::string("'") + key + "' are not negative");
}

void check_iota(const Op& op) {
  if (op.result()->type.dtype != DType::I64) bad(op, "yields an i64 tile");
  if (tile_int(op, "inner") < 1 || tile_int(op, "extent") < 1) bad(op, "needs 'inner' and 'extent' >= 1");
}

void check_splat(const Op& op) {
  if (op.result()->type.dtype != op.operands[0]->type.dtype) bad(op, "splats a scalar into a tile of its dtype");
}

void check_attention(const Op& op) {
  // (q, k, v, o, bh, bkv, m0), then lse when 'lse', then the mask with
  // 'mask', then the shared-memory scratch with tma (q, k and v from the
  // kernel's tensor maps 0, 1, 2).
  const bool lse = tile_bool(op, "lse"), tma = op.attr("tma") && tile_bool(op, "tma");
  const bool mask = op.attr("mask") != nullptr;
  if (op.operands.size() != 7u + lse + mask + tma)
    bad(op,
        "takes (ptr q, ptr k, ptr v, ptr o, index bh, index bkv, index m0), then ptr lse with lse, then ptr mask "
        "with mask, then the scratch with tma");
  if (mask) {
    const std::string kind = tile_string(op, "mask");
    const Type& m = op.operands[7 + lse]->type;
    if (m.kind != TypeKind::Ptr || (kind == "bool") != (m.dtype == DType::I1) || (kind != "bool" && kind != "bias") ||
        (kind == "bias" && !is_float(m.dtype)))
      bad(op, "'mask' is \"bool\" (an i1 pointer) or \"bias\" (a float pointer)");
    if (!op.attr("mask_strides") || tile_ints(op, "mask_strides").size() != 4 || !op.attr("heads") ||
        tile_int(op, "heads") < 1)
      bad(op, "a mask needs 'mask_strides' (4, over [batch, heads, sq, sk]) and 'heads'");
  }
  const DType t = op.operands[0]->type.dtype;
  for (int i = 0; i < 4; ++i) {
    if (op.operands[i]->type.kind != TypeKind::Ptr || op.operands[i]->type.dtype != t)
      bad(op, "q, k, v and o are pointers of one float dtype");
  }
  if (!is_float(t)) bad(op, "q, k, v and o are pointers of one float dtype");
  for (int i = 4; i < 7; ++i)
    if (!is_index(op.operands[i])) bad(op, "bh, bkv and m0 are indices");
  if (lse && (op.operands[7]->type.kind != TypeKind::Ptr || !is_float(op.operands[7]->type.dtype)))
    bad(op, "lse is a float pointer");
  if (tma && !is_alloca(op.operands.back())) bad(op, "with tma, the last operand is the tile.alloca scratch");
  if (tma && (!op.attr("heads") || !op.attr("kv_heads") || !op.attr("o_strides") || tile_int(op, "heads") < 1 ||
              tile_int(op, "kv_heads") < 1))
    bad(op, "with tma, needs 'heads' and 'kv_heads' (>= 1) and 'o_strides' (3, over [batch, heads, sq])");
  if (op.attr("o_strides"))
    for (int64_t st : tile_ints(op, "o_strides"))
      if (st < 0) bad(op, "'o_strides' are not negative");
  for (int64_t v : tile_ints(op, "block"))
    if (v < 1 || v > 1024) bad(op, "'block' sizes must be in [1, 1024]");
  const int64_t d = tile_int(op, "head_dim"), sq = tile_int(op, "sq"), sk = tile_int(op, "sk");
  if (d < 1 || d > 256) bad(op, "'head_dim' must be in [1, 256]");
  if (sq < 0 || sk < 0 || sq > (int64_t{1} << 40) || sk > (int64_t{1} << 40)) bad(op, "'sq' and 'sk' out of range");
  if (tile_int(op, "stages") < 1) bad(op, "needs 'stages' >= 1");
}

void check_matmul(const Op& op) {
  // The TMA form (attribute tma = [a_k_major, b_k_major, a_batched,
  // b_batched]) reads A and B through the kernel's tensor maps 0 and 1 and
  // takes the block's coordinates instead of bases and extents.
  // The norm form (norm_eps) takes one more: the RMSNorm weight w.
  const bool tma = op.attr("tma") != nullptr, norm = op.attr("norm_eps") != nullptr;
  if (tma && norm) bad(op, "the tma form takes no 'norm_eps'");
  if (op.operands.size() != (tma ? 6u : norm ? 8u : 7u))
    bad(op, tma    ? "(tma) takes (ptr a, ptr b, ptr scratch, index batch, index m0, index n0)"
            : norm ? "(norm_eps) takes (ptr a, ptr b, ptr scratch, index a_base, index b_base, index mrows, index "
                     "ncols, ptr w)"
                   : "takes (ptr a, ptr b, ptr scratch, index a_base, index b_base, index mrows, index ncols)");
  if (norm && op.operands[7]->type.dtype != op.operands[0]->type.dtype) bad(op, "(norm_eps) takes w in A's dtype");
  if (norm && !(tile_number(op, "norm_eps") >= 0)) bad(op, "'norm_eps' must be a number >= 0");
  if (op.operands[2]->type.dtype != DType::F32 || !is_alloca(op.operands[2]))
    bad(op, "accumulates into f32 scratch from tile.alloca");
  if (op.operands[0]->type.dtype != op.operands[1]->type.dtype) bad(op, "a and b must have one dtype");
  auto ints = [&](const char* key) {
    const std::vector<int64_t> values = tile_ints(op, key);
    for (int64_t v : values)
      if (v < 0 || v > (int64_t{1} << 40)) bad(op, std::string("'") + key + "' out of range");
    return values;
  };
  const std::vector<int64_t> blk = ints("block");
  for (int64_t v : blk)
    if (v < 1 || v > 1024) bad(op, "'block' sizes must be in [1, 1024]");
  for (const char* key : {"warps", "a_strides", "b_strides", "vec"}) ints(key);
  if (tma)
    for (int64_t v : ints("tma"))
      if (v > 1) bad(op, "'tma' holds four flags (0 or 1)");
  // b_half: B's block columns in two halves, the second from n0 + b_half.
  if (op.attr("b_half") && (!tma || tile_int(op, "b_half") < 1 || blk[1] % 128 != 0))
    bad(op, "'b_half' (a column offset >= 1) is for the tma form with 128-column multiples of blocks");
  // stage_a: the f32 block that stages row-major A through registers.
  if (const Attr* s = op.attr("stage_a");
      s && tile_bool(op, "stage_a") && (tma || op.operands[0]->type.dtype != DType::F32 || ints("a_strides")[1] != 1))
    bad(op, "'stage_a' is for f32 operands with row-major A (a_strides [*, 1]), without tma");
  for (const char* key : {"k", "stages"})
    if (tile_int(op, key) < 0) bad(op, std::string("needs '") + key + "'");
  // The scratch is a verified tile.alloca (the ops before this one are).
  if (tile_int(*op.operands[2]->def, "size") < blk[0] * blk[1]) bad(op, "scratch is smaller than the block");
}

void check_load2d(const Op& op) {
  if (op.result()->type.shape.size() != 2) bad(op, "works on 2-D tiles [rows, cols]");
  for (const char* key : {"row_stride", "col_stride"})
    if (tile_int(op, key) < 0) bad(op, std::string("needs an integer '") + key + "' >= 0");
}

void check_load2d_piece(const Op& op) {
  const Type& t = op.result()->type;
  if (t.shape.size() != 2 || op.operands[0]->type != t) bad(op, "works on 2-D tiles [rows, cols], the result's type");
  const int64_t lo = tile_int(op, "lo"), hi = tile_int(op, "hi");
  if (tile_int(op, "row_stride") < 0 || lo < 0 || lo >= hi || hi > t.shape[1])
    bad(op, "needs 'row_stride' >= 0 and columns 0 <= lo < hi <= the tile's");
}

void check_store2d(const Op& op) {
  if (op.operands[4]->type.shape.size() != 2) bad(op, "works on 2-D tiles [rows, cols]");
  if (tile_int(op, "row_stride") < 0) bad(op, "needs an integer 'row_stride' >= 0");
}

void check_for(const Op& op) {
  const Region& r = *op.regions[0];
  const size_t carried = op.operands.size() - 3;
  if (r.args.size() != carried + 1 || r.ops.empty() || r.ops.back()->name != "tile.yield")
    bad(op, "region must take the induction variable and carried values and end in tile.yield");
  if (op.results.size() != carried) bad(op, "yields one result per carried value");
  if (r.ops.back()->operands.size() != op.results.size()) bad(op, "yields the wrong number of values");
}

// ---- the table -------------------------------------------------------------

using K = AttrKind;
constexpr bool kRequired = true, kOptional = false;

const std::vector<TileOpSpec>& table() {
  static const std::vector<TileOpSpec> ops = {
      {"tile.program_id", "", "I", "()", {}, 0, "this program's id in [0, grid)"},
      {"tile.num_programs",
       "",
       "I",
       "()",
       {},
       0,
       "how many programs run: a persistent kernel's stride over its work (the runtime may launch fewer programs "
       "than grid, as many as fit the device at once; CUDA clusters only)"},
      {"tile.constant",
       "",
       "N",
       "()",
       {{"value", K::Number, kRequired}},
       0,
       "an index (integer value) or float scalar constant",
       check_constant},
      {"tile.add", "II", "I", "(index, index)", {}, 0, "index addition"},
      {"tile.sub", "II", "I", "(index, index)", {}, 0, "index subtraction"},
      {"tile.mul", "II", "I", "(index, index)", {}, 0, "index multiplication"},
      {"tile.div", "II", "I", "(index, index)", {}, 0, "index division (C: truncating)"},
      {"tile.rem", "II", "I", "(index, index)", {}, 0, "index remainder (C: sign of the dividend)"},
      {"tile.min", "II", "I", "(index, index)", {}, 0, "index minimum"},
      {"tile.to_index",
       "S",
       "I",
       "(scalar)",
       {},
       0,
       "an i32 or i64 scalar (a value read from memory: a gather's index) as an index",
       check_to_index},
      {"tile.full", "", "D", "()", {{"value", K::Number, kRequired}}, 0, "a tile (or scalar) of one value"},
      {"tile.alloca",
       "",
       "P",
       "()",
       {{"size", K::Int, kRequired}},
       0,
       "scratch of `size` elements (on GPUs the block's shared memory; one per kernel there)",
       check_alloca},
      {"tile.workspace",
       "",
       "P",
       "()",
       {{"size", K::Int, kRequired}},
       0,
       "device memory of `size` elements the kernel keeps from launch to launch, zero before its first (GPU "
       "lanes; one per kernel): a kernel leaves any counters in it as it found them",
       check_workspace},
      {"tile.load",
       "PI",
       "D",
       "(ptr, index offset)",
       {},
       0,
       "the lanes p[offset ...] widened from storage to the compute dtype"},
      {"tile.load_masked",
       "PII",
       "D",
       "(ptr, index offset, index count)",
       {{"other", K::Number, kRequired}},
       0,
       "tile.load of the lanes below count, `other` in the rest"},
      {"tile.gather",
       "PT",
       "T",
       "(ptr, tile<i64> addr)",
       {},
       0,
       "lane i reads ptr[addr[i]], widened (the caller keeps every address in bounds)",
       check_gather},
      {"tile.load_strided",
       "PII?",
       "T",
       "(ptr, index offset[, index count])",
       {{"stride", K::Int, kRequired}},
       0,
       "lane i reads ptr[offset + i * stride], widened (lanes from count on: 0)",
       check_load_strided},
      {"tile.store", "PID", "", "(ptr, index offset, value)", {}, 0, "the inverse of tile.load (narrows)"},
      {"tile.store_masked",
       "PIID",
       "",
       "(ptr, index offset, index count, value)",
       {},
       0,
       "tile.store of the lanes below count"},
      {"tile.prefetch",
       "PII",
       "",
       "(ptr, index offset, index count)",
       {},
       0,
       "a hint that p[offset, offset+count) is read soon (CUDA: a bulk copy of it into L2; elsewhere nothing)"},
      {"tile.load_staged",
       "PPIII",
       "T",
       "(ptr, ptr stage, index row, index rows, index iter)",
       {{"row_stride", K::Int, kRequired}},
       0,
       "lanes of row %row (p[row*row_stride ...]) of a persistent program's rows %row, %row + num_programs, ... "
       "(%iter counts them from 0), copied by the bulk copy engine through %stage (a tile.alloca of p's dtype "
       "holding the block's share of a row); row %row + num_programs, if below %rows, is fetched meanwhile "
       "(CUDA clusters only)",
       check_load_staged},
      {"tile.transpose",
       "PPIIII",
       "",
       "(ptr in, ptr out, index in_base, index out_base, index r0, index c0)",
       {{"rows", K::Int, kRequired}, {"cols", K::Int, kRequired}, {"block", K::Ints, kRequired, 2}},
       0,
       "out[out_base + c*R + r] = in[in_base + r*C + c] for the rows r in [r0, r0+TR) and columns c in "
       "[c0, c0+TC) of the R x C matrix (rows = R, cols = C, block = [TR, TC])",
       check_transpose},
      {"tile.combine",
       "AA",
       "A",
       "(value, value)",
       {{"kind", K::String, kRequired}},
       0,
       "elementwise combine of two values of one type; kind: sum, prod, max, min (max/min propagate NaN whatever "
       "the target's native max does)",
       check_combine},
      {"tile.fold_rows",
       "T",
       "T",
       "(tile)",
       {{"kind", K::String, kRequired}},
       0,
       "an [R, C] tile whose every row is the combine of its rows: lane (r, c) = lane (0, c) combined with lanes "
       "(1, c), ..., (R-1, c) in that order (a GPU program goes through its shared memory)",
       check_fold_rows},
      {"tile.reduce_lanes",
       "T",
       "S",
       "(tile)",
       {{"kind", K::String, kRequired}, {"scope", K::String, kOptional}},
       0,
       "a combine kind over the lanes of a tile (fixed pairwise tree); scope = \"block\": over the lanes of this "
       "block of a cluster program only (CUDA clusters only)",
       check_reduce_lanes},
      {"tile.softmax_stats",
       "SS",
       "SS",
       "(scalar max, scalar sum)",
       {},
       0,
       "a cluster program's softmax statistics (M, S) from each block's max m and sum s of exp(x - max(m, lowest)): "
       "M = max of the m (NaN propagates), S = sum of s * exp(max(m, lowest) - max(M, lowest)), in block order "
       "(one exchange; CUDA clusters only)",
       check_softmax_stats},
      {"tile.divf", "AA", "A", "(value, value)", {}, 0, "float division"},
      {"tile.map",
       "DD*",
       "D",
       "(value, ...)",
       {{"fn", K::String, kRequired}},
       0,
       "a pointwise function (see map_result) on tiles or scalars",
       check_map},
      {"tile.iota",
       "I",
       "T",
       "(index base)",
       {{"inner", K::Int, kRequired}, {"extent", K::Int, kRequired}},
       0,
       "lane i holds ((base + i) / inner) % extent: a coordinate of the element at flat index base + i",
       check_iota},
      {"tile.splat", "S", "T", "(scalar)", {}, 0, "a scalar to every lane of a tile of its dtype", check_splat},
      {"tile.mask",
       "TI",
       "T",
       "(tile, index count)",
       {{"other", K::Number, kRequired}},
       0,
       "lanes at or past count replaced by `other`"},
      {"tile.matmul",
       "PPPIIII?P?",
       "",
       "(ptr a, ptr b, ptr scratch, index a_base, index b_base, index mrows, index ncols[, ptr w])",
       {{"k", K::Int, kRequired},
        {"block", K::Ints, kRequired, 3},
        {"warps", K::Ints, kRequired, 2},
        {"stages", K::Int, kRequired},
        {"a_strides", K::Ints, kRequired, 2},
        {"b_strides", K::Ints, kRequired, 2},
        {"vec", K::Ints, kRequired, 2},
        {"tma", K::Ints, kOptional, 4},
        {"b_half", K::Int, kOptional},
        {"stage_a", K::Bool, kOptional},
        {"norm_eps", K::Number, kOptional}},
       0,
       "the [BM, BN] f32 block (block = [BM, BN, BK]) of A x B over all of k, left row-major in %scratch (a "
       "tile.alloca; on GPUs the block's shared memory); element (r, k) of A is a[a_base + r*SAM + k*SAK] "
       "(a_strides = [SAM, SAK]), (k, c) of B b[b_base + k*SBK + c*SBN] (b_strides = [SBK, SBN]); with tma, A and "
       "B come from the kernel's tensor maps 0 and 1 and the operands after scratch are (batch, m0, n0); with b_half, "
       "the block's columns are BN/2 of B's from n0 and BN/2 from n0 + b_half; with norm_eps, the block is "
       "rms_norm(A, w) x B: B's row k scaled by w[k] and C's row r by rsqrt(mean_k A(r, k)^2 + norm_eps)",
       check_matmul},
      {"tile.attention",
       "PPPPIIIP*",
       "",
       "(ptr q, ptr k, ptr v, ptr o, index bh, index bkv, index m0[, ptr lse][, ptr scratch])",
       {{"head_dim", K::Int, kRequired},
        {"block", K::Ints, kRequired, 2},
        {"stages", K::Int, kRequired},
        {"sq", K::Int, kRequired},
        {"sk", K::Int, kRequired},
        {"causal", K::Bool, kRequired},
        {"lse", K::Bool, kRequired},
        {"scale", K::Number, kRequired},
        {"tma", K::Bool, kOptional},
        {"mask", K::String, kOptional},
        {"mask_strides", K::Ints, kOptional, 4},
        {"heads", K::Int, kOptional},
        {"kv_heads", K::Int, kOptional},
        {"o_strides", K::Ints, kOptional, 3}},
       0,
       "rows [m0, m0 + BM) of o = softmax(scale * q k^T [causal] [mask]) v for query plane bh (q, o: [planes, sq, "
       "head_dim]) against kv plane bkv (k, v: [planes, sk, head_dim]), online over key tiles of BN (block = "
       "[BM, BN]); with lse, each row's natural-log log-sum-exp to lse[bh * sq + row]; with mask (\"bool\": "
       "false hides a key; \"bias\": added to the scaled score), element (b, h, i, j) of the scores reads "
       "mask[b*s0 + h*s1 + i*s2 + j*s3] (mask_strides, bh = b*heads + h); with tma, q, k and v come from the "
       "kernel's tensor maps 0, 1 and 2 (dims [head_dim, rows, heads, batch]; bkv = b*kv_heads + h'), element "
       "(b, h, i, d) of o is o[b*o0 + h*o1 + i*o2 + d] (o_strides) and the last operand is the block's shared "
       "memory",
       check_attention},
      {"tile.attention_decode",
       "PPPPPPIP*",
       "",
       "(ptr q, ptr k, ptr v, ptr o, ptr workspace, ptr scratch, index program[, ptr lse])",
       {{"head_dim", K::Int, kRequired},
        {"block", K::Ints, kRequired, 2},
        {"chunk", K::Int, kRequired},
        {"batch", K::Int, kRequired},
        {"heads", K::Int, kRequired},
        {"kv_heads", K::Int, kRequired},
        {"sq", K::Int, kRequired},
        {"sk", K::Int, kRequired},
        {"causal", K::Bool, kRequired},
        {"lse", K::Bool, kRequired},
        {"scale", K::Number, kRequired},
        {"q_strides", K::Ints, kRequired, 3},
        {"k_strides", K::Ints, kRequired, 3},
        {"v_strides", K::Ints, kRequired, 3},
        {"o_strides", K::Ints, kRequired, 3},
        {"offsets", K::Ints, kRequired, 3}},
       0,
       "one split-KV program: the BM = heads / kv_heads * sq query rows of kv plane program / chunks (b * "
       "kv_heads + g) against keys [c * chunk, (c + 1) * chunk) (c = program % chunks, chunks = max(1, ceil(sk / "
       "chunk))) in tiles of BN (block = [BM, BN]); element (b, h, i, d) of q is q[offsets[0] + b*q0 + h*q1 + "
       "i*q2 + d] (q_strides; k, v: k_strides, v_strides, offsets[1], offsets[2]; o: o_strides), the last program "
       "of a kv plane to finish combines the chunks' partials kept in the workspace; with lse, each row's "
       "natural-log log-sum-exp to lse[(b*heads + h) * sq + i]",
       check_attention_decode},
      {"tile.attention_grad",
       "PPPPPPPPPIP*",
       "",
       "(ptr q, ptr k, ptr v, ptr o, ptr do, ptr lse, ptr dq, ptr dk, ptr dv, index program[, ptr scratch])",
       {{"head_dim", K::Int, kRequired},
        {"block", K::Ints, kRequired, 2},
        {"batch", K::Int, kRequired},
        {"heads", K::Int, kRequired},
        {"kv_heads", K::Int, kRequired},
        {"sq", K::Int, kRequired},
        {"sk", K::Int, kRequired},
        {"causal", K::Bool, kRequired},
        {"scale", K::Number, kRequired},
        {"one_pass", K::Bool, kOptional},
        {"mma", K::Bool, kOptional},
        {"wgmma", K::Bool, kOptional}},
       0,
       "one program of attention's backward pass (block = [BM, BN]; q, o, do: [batch * heads, sq, head_dim], k, "
       "v: [batch * kv_heads, sk, head_dim], lse: [batch * heads, sq]): programs below batch * kv_heads * "
       "ceil(sk / BN) write dk and dv of BN keys of one kv head (kv plane program / ceil(sk / BN), block "
       "program % ceil(sk / BN)) over every query row of its heads that sees them; the rest, in order of (query "
       "plane, block of BM rows), write dq of BM rows; with one_pass, program p is kv plane p: its dk, dv and the "
       "dq of its heads' rows; with mma (CUDA, f16/bf16, head dims 64 and 128, BM = BN = 128), the tensor-core "
       "block, whose query programs take a plane's row blocks from the last; with wgmma (CUDA sm_90a, the "
       "same shapes), the same programs on warpgroup MMA; a GPU block takes its shared memory "
       "as the scratch",
       check_attention_grad},
      {"tile.load2d",
       "PIII",
       "T",
       "(ptr, index base, index rows, index cols)",
       {{"row_stride", K::Int, kRequired}, {"col_stride", K::Int, kRequired}, {"aligned", K::Bool, kRequired}},
       0,
       "an [R, C] tile, lane (r, c) = p[base + r*row_stride + c*col_stride] (0 past rows/cols)",
       check_load2d},
      {"tile.load2d_piece",
       "TPII",
       "T",
       "(tile into, ptr, index base, index rows)",
       {{"row_stride", K::Int, kRequired},
        {"lo", K::Int, kRequired},
        {"hi", K::Int, kRequired},
        {"aligned", K::Bool, kRequired}},
       0,
       "`into` with lanes (r, c), lo <= c < hi, r < rows, replaced by p[base + r*row_stride + c - lo] (one "
       "operand of a concat along the columns; lo and hi are whole vectors of lanes)",
       check_load2d_piece},
      {"tile.store2d",
       "PIIIT",
       "",
       "(ptr, index base, index rows, index cols, tile)",
       {{"row_stride", K::Int, kRequired}, {"aligned", K::Bool, kRequired}},
       0,
       "the inverse of tile.load2d",
       check_store2d},
      {"tile.for",
       "IIIA*",
       "A*",
       "(index lo, index hi, index step, carried values...)",
       {},
       1,
       "for iv = lo; iv < hi; iv += step over its region (iv, carried values...), which ends in tile.yield of the "
       "next carried values; the results are the last ones",
       check_for},
      {"tile.yield", "A*", "", "(values...)", {}, 0, "ends a tile.for region with the next carried values"},
  };
  return ops;
}

struct Slot {
  char kind;
  char repeat;  // 0, '?' or '*'
};

std::vector<Slot> slots(const char* kinds) {
  std::vector<Slot> out;
  for (const char* c = kinds; *c; ++c) {
    if (*c == '?' || *c == '*') out.back().repeat = *c;
    else out.push_back({*c, 0});
  }
  return out;
}

bool fits(char kind, const Type& t) {
  switch (kind) {
    case 'P': return t.kind == TypeKind::Ptr;
    case 'I': return t.kind == TypeKind::Index;
    case 'S': return t.kind == TypeKind::Scalar;
    case 'T': return t.kind == TypeKind::Tile;
    case 'D': return t.kind == TypeKind::Tile || t.kind == TypeKind::Scalar;
    case 'N': return t.kind == TypeKind::Index || t.kind == TypeKind::Scalar;
    case 'A': return true;
  }
  internal_error(__FILE__, __LINE__, std::string("unknown kind letter '") + kind + "' in the Tile IR op table");
}

const char* kind_words(char kind) {
  switch (kind) {
    case 'P': return "a ptr";
    case 'I': return "an index";
    case 'S': return "a scalar";
    case 'T': return "a tile";
    case 'D': return "a tile or scalar";
    case 'N': return "an index or scalar";
  }
  return "a value";
}

// Checks `values` against `kinds`; `what` is "operands" or "results".
std::optional<std::string> values_violation(const std::vector<const Value*>& values, const char* kinds,
                                            const char* what, const std::string& signature) {
  const std::vector<Slot> s = slots(kinds);
  size_t min = 0, max = 0;
  bool unbounded = false;
  for (const Slot& slot : s) {
    if (slot.repeat == '*') unbounded = true;
    else ++max;
    if (!slot.repeat) ++min;
  }
  const size_t n = values.size();
  if (n < min || (!unbounded && n > max)) {
    std::string expected = unbounded    ? "at least " + std::to_string(min)
                           : min == max ? std::to_string(min)
                                        : std::to_string(min) + " to " + std::to_string(max);
    if (std::string(what) == "operands") return "expects " + expected + " operands, has " + std::to_string(n);
    return "has " + std::to_string(n) + " results, expects " + expected;
  }
  for (size_t i = 0; i < n; ++i) {
    const Slot& slot = i < s.size() ? s[i] : s.back();  // past the end: the '*' slot
    if (fits(slot.kind, values[i]->type)) continue;
    if (!signature.empty()) return "takes " + signature;
    return "result " + std::to_string(i) + " must be " + kind_words(slot.kind);
  }
  return std::nullopt;
}

bool attr_fits(const Attr& a, const TileAttrSpec& s) {
  switch (s.kind) {
    case AttrKind::Int: return a.as_int() != nullptr;
    case AttrKind::Ints: {
      auto v = a.as_ints();
      return v && (s.count == 0 || v->size() == s.count);
    }
    case AttrKind::Number: return a.as_int() || a.as_float();
    case AttrKind::String: return a.as_string() != nullptr;
    case AttrKind::Strings:
      if (!a.as_list()) return false;
      for (const Attr& e : *a.as_list())
        if (!e.as_string()) return false;
      return true;
    case AttrKind::Bool: return a.as_bool() != nullptr;
  }
  return false;
}

std::string attr_words(const TileAttrSpec& s) {
  switch (s.kind) {
    case AttrKind::Int: return "an integer";
    case AttrKind::Ints: return s.count ? "a list of " + std::to_string(s.count) + " integers" : "a list of integers";
    case AttrKind::Number: return "a number";
    case AttrKind::String: return "a string";
    case AttrKind::Strings: return "a list of strings";
    case AttrKind::Bool: return "a boolean";
  }
  return "?";
}

const TileAttrSpec* find_attr(const TileOpSpec& spec, std::string_view key) {
  for (const TileAttrSpec& a : spec.attrs)
    if (key == a.name) return &a;
  return nullptr;
}

const TileOpSpec* spec_of(const Op& op) {
  return op.name == "tile.kernel" ? &tile_kernel_spec() : find_tile_op(op.name);
}

// The attribute `key` of a verified op, asserted to be declared with a kind
// that admits a `kind` read and to hold one.
const Attr& declared(const Op& op, const char* key, AttrKind kind) {
  const TileOpSpec* spec = spec_of(op);
  TESSERA_ASSERT(spec, "'" + echo(op.name) + "' has no entry in the Tile IR op table");
  const TileAttrSpec* a = find_attr(*spec, key);
  TESSERA_ASSERT(a && (a->kind == kind || (a->kind == AttrKind::Number && kind == AttrKind::Int)),
                 "'" + echo(op.name) + "' declares no attribute '" + key + "' of that kind in the Tile IR op table");
  const Attr* v = op.attr(key);
  TESSERA_ASSERT(v && attr_fits(*v, TileAttrSpec{key, kind, true, 0}),
                 "'" + echo(op.name) + "' reached a read of '" + key + "' without one of its kind (unverified IR)");
  return *v;
}

}  // namespace

const std::vector<TileOpSpec>& tile_ops() { return table(); }

const TileOpSpec* find_tile_op(std::string_view name) {
  static const std::unordered_map<std::string_view, const TileOpSpec*> index = [] {
    std::unordered_map<std::string_view, const TileOpSpec*> m;
    for (const TileOpSpec& s : table()) m.emplace(s.name, &s);
    return m;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

const TileOpSpec& tile_kernel_spec() {
  // Its ranges and the tensor maps' syntax are checked in verify_tile.
  static const TileOpSpec kernel = {
      "tile.kernel",
      "",
      "",
      "()",
      {{"grid", K::Ints, kRequired, 1},
       {"artifact_hash", K::String, kRequired},
       {"ir_hash", K::String, kOptional},  // required by verify_tile, absent while a family builds the kernel
       {"threads", K::Int, kOptional},
       {"vector_width", K::Int, kOptional},
       {"min_blocks", K::Int, kOptional},
       {"cluster", K::Int, kOptional},
       {"producer_threads", K::Int, kOptional},
       {"tensor_maps", K::Strings, kOptional},
       {"persistent", K::Bool, kOptional},
       // the canonical descriptor of the device the schedule was made for
       // (machine/descriptor.hpp); absent in hand-written Tile IR
       {"device", K::String, kOptional}},
      1,
      "a kernel: its region (buffers as ptr arguments) runs once per program id in [0, grid[0])"};
  return kernel;
}

std::optional<std::string> table_violation(const Op& op, const TileOpSpec& spec) {
  std::vector<const Value*> operands(op.operands.begin(), op.operands.end()), results;
  for (auto& r : op.results) results.push_back(r.get());
  if (auto v = values_violation(operands, spec.operands, "operands", spec.signature)) return v;
  if (auto v = values_violation(results, spec.results, "results", "")) return v;
  if (op.regions.size() != spec.regions)
    return "has " + std::to_string(op.regions.size()) + " regions, expects " + std::to_string(spec.regions);
  for (const TileAttrSpec& a : spec.attrs) {
    const Attr* v = op.attr(a.name);
    if (!v && a.required) return std::string("needs '") + a.name + "' (" + attr_words(a) + ")";
    if (v && !attr_fits(*v, a)) return std::string("'") + a.name + "' must be " + attr_words(a);
  }
  for (auto& [key, value] : op.attrs)
    if (!find_attr(spec, key)) return "has no attribute '" + key + "'";
  return std::nullopt;
}

void verify_tile_op(const Op& op) {
  const TileOpSpec* spec = find_tile_op(op.name);
  if (!spec) fail("E404", "'" + echo(op.name) + "' is not a Tile IR kernel op", op.loc);
  if (auto v = table_violation(op, *spec)) bad(op, *v);
  if (spec->check) spec->check(op);
  for (auto& region : op.regions)
    for (auto& inner : region->ops) verify_tile_op(*inner);
}

int64_t tile_int(const Op& op, const char* key) {
  const Attr& a = declared(op, key, AttrKind::Int);
  return *a.as_int();
}

std::vector<int64_t> tile_ints(const Op& op, const char* key) { return *declared(op, key, AttrKind::Ints).as_ints(); }

double tile_number(const Op& op, const char* key) {
  const Attr& a = declared(op, key, AttrKind::Number);
  return a.as_float() ? *a.as_float() : static_cast<double>(*a.as_int());
}

const std::string& tile_string(const Op& op, const char* key) {
  return *declared(op, key, AttrKind::String).as_string();
}

std::vector<std::string> tile_strings(const Op& op, const char* key) {
  std::vector<std::string> out;
  for (const Attr& a : *declared(op, key, AttrKind::Strings).as_list()) out.push_back(*a.as_string());
  return out;
}

bool tile_bool(const Op& op, const char* key) { return *declared(op, key, AttrKind::Bool).as_bool(); }

}  // namespace tessera::ir
