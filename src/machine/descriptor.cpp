#include "machine/descriptor.hpp"

#include <array>
#include <map>
#include <sstream>
#include <utility>

#include "support/diagnostic.hpp"

namespace tessera::machine {

namespace {

constexpr std::array<std::pair<Cap, const char*>, 12> kCapNames = {{
    {Cap::ThreadBlocks, "thread_blocks"},
    {Cap::BlockMatmul, "block_matmul"},
    {Cap::TensorCores, "tensor_cores"},
    {Cap::Wgmma, "wgmma"},
    {Cap::Tma, "tma"},
    {Cap::BulkCopy, "bulk_copy"},
    {Cap::Clusters, "clusters"},
    {Cap::L2Prefetch, "l2_prefetch"},
    {Cap::TransposeBlock, "transpose_block"},
    {Cap::AttentionGradBlock, "attention_grad_block"},
    {Cap::MatmulNorm, "matmul_norm"},
    {Cap::AttentionDecodeBlock, "attention_decode_block"},
}};

uint32_t caps_of(std::initializer_list<Cap> cs) {
  uint32_t out = 0;
  for (Cap c : cs) out |= static_cast<uint32_t>(c);
  return out;
}

// What each profile says is taken from its vendor's published limits; the
// driver-read descriptor of the same device must agree field for field
// (tests/gpu checks it on the H200).
const std::map<std::string, Descriptor>& profiles() {
  static const std::map<std::string, Descriptor> table = [] {
    std::map<std::string, Descriptor> t;
    Descriptor cpu;
    cpu.kind = Kind::Cpu, cpu.name = "x86-64", cpu.origin = "profile", cpu.arch = "x86-64";
    cpu.vector_bytes = 64;  // the CPU tile library's vectors (device/cpu/tessera_tile.hpp), on AVX2 as two registers
    cpu.caps = caps_of({Cap::BlockMatmul, Cap::MatmulNorm});
    cpu.blas = "openblas";
    t.emplace(cpu.name, cpu);

    Descriptor h200;
    h200.kind = Kind::Cuda, h200.name = "h200", h200.origin = "profile", h200.arch = "sm_90";
    h200.compute_units = 132, h200.simd_width = 32, h200.vector_bytes = 16, h200.max_threads = 1024;
    h200.shared_bytes = 232448, h200.registers = 65536, h200.max_cluster = 16, h200.l2_bytes = 52428800;
    h200.caps = caps_of({Cap::ThreadBlocks, Cap::BlockMatmul, Cap::TensorCores, Cap::Wgmma, Cap::Tma, Cap::BulkCopy,
                         Cap::Clusters, Cap::L2Prefetch, Cap::TransposeBlock, Cap::AttentionGradBlock,
                         Cap::AttentionDecodeBlock});
    h200.blas = "cublaslt";
    t.emplace(h200.name, h200);

    // An Ampere part: no TMA, wgmma or clusters, so the schedules that need
    // them are refused or not chosen (the unit tests compile for it).
    Descriptor a100 = h200;
    a100.name = "a100", a100.arch = "sm_80", a100.compute_units = 108, a100.shared_bytes = 166912;
    a100.l2_bytes = 41943040;
    a100.max_cluster = 1;
    a100.caps = caps_of({Cap::ThreadBlocks, Cap::BlockMatmul, Cap::TensorCores, Cap::L2Prefetch, Cap::TransposeBlock,
                         Cap::AttentionGradBlock, Cap::AttentionDecodeBlock});
    t.emplace(a100.name, a100);

    // The HIP lane's compile-check targets. CDNA2 (one MI250X die): wave64,
    // MFMA matrix cores; registers: 4 SIMDs x 512 VGPRs x 64 lanes a CU.
    Descriptor mi250x;
    mi250x.kind = Kind::Hip, mi250x.name = "mi250x", mi250x.origin = "profile", mi250x.arch = "gfx90a";
    mi250x.compute_units = 110, mi250x.simd_width = 64, mi250x.vector_bytes = 16, mi250x.max_threads = 1024;
    mi250x.shared_bytes = 65536, mi250x.registers = 131072;
    mi250x.caps = caps_of({Cap::ThreadBlocks, Cap::BlockMatmul, Cap::TensorCores, Cap::MatmulNorm});
    t.emplace(mi250x.name, mi250x);
    // RDNA3 (Radeon RX 7900 XTX, Navi 31): wave32, WMMA; 2 SIMDs x 1536
    // VGPRs x 32 lanes a CU.
    Descriptor rx7900xtx = mi250x;
    rx7900xtx.name = "rx7900xtx", rx7900xtx.arch = "gfx1100", rx7900xtx.compute_units = 96;
    rx7900xtx.simd_width = 32, rx7900xtx.registers = 98304;
    t.emplace(rx7900xtx.name, rx7900xtx);
    // RDNA3.5 (Strix Halo's Radeon 8060S, the seed's machine): wave32, WMMA;
    // 2 SIMDs x 1024 VGPRs x 32 lanes a CU.
    Descriptor strix = rx7900xtx;
    strix.name = "radeon-8060s", strix.arch = "gfx1151", strix.compute_units = 40, strix.registers = 65536;
    t.emplace(strix.name, strix);

    // The Metal lane's emitted target (the seed ran on an M1 Max).
    Descriptor m1;
    m1.kind = Kind::Metal, m1.name = "apple-m1-max", m1.origin = "profile", m1.arch = "apple7";
    m1.compute_units = 32, m1.simd_width = 32, m1.vector_bytes = 16, m1.max_threads = 1024;
    m1.shared_bytes = 32768;
    // BlockMatmul, TensorCores: simdgroup_matrix 8x8 tiles (MSL 2.3+).
    m1.caps = caps_of({Cap::ThreadBlocks, Cap::BlockMatmul, Cap::TensorCores, Cap::MatmulNorm});
    t.emplace(m1.name, m1);
    return t;
  }();
  return table;
}

}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Cpu: return "cpu";
    case Kind::Cuda: return "cuda";
    case Kind::Hip: return "hip";
    case Kind::Metal: return "metal";
  }
  return "?";
}

std::optional<Kind> parse_kind(const std::string& name) {
  for (Kind k : {Kind::Cpu, Kind::Cuda, Kind::Hip, Kind::Metal})
    if (name == kind_name(k)) return k;
  return std::nullopt;
}

std::string Descriptor::str() const {
  std::string caps_text;
  for (auto [c, n] : kCapNames)
    if (has(c)) caps_text += (caps_text.empty() ? "" : ",") + std::string(n);
  std::ostringstream s;
  s << "kind=" << kind_name(kind) << " name=" << name << " origin=" << origin << " arch=" << arch
    << " units=" << compute_units << " simd=" << simd_width << " vector=" << vector_bytes << " threads=" << max_threads
    << " shared=" << shared_bytes << (l2_bytes > 0 ? " l2=" + std::to_string(l2_bytes) : std::string())
    << " registers=" << registers << " cluster=" << max_cluster << " blas=" << (blas.empty() ? "none" : blas)
    << " caps=" << (caps_text.empty() ? "none" : caps_text);
  return s.str();
}

Descriptor parse(const std::string& text) {
  std::map<std::string, std::string> fields;
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    auto eq = word.find('=');
    if (eq == std::string::npos || eq == 0 || !fields.emplace(word.substr(0, eq), word.substr(eq + 1)).second)
      fail("E507", "malformed device descriptor: '" + word + "' is not a new key=value");
  }
  auto field = [&](const char* key) {
    auto it = fields.find(key);
    if (it == fields.end() || it->second.empty()) fail("E507", std::string("device descriptor: no '") + key + "'");
    std::string v = it->second;
    fields.erase(it);
    return v;
  };
  auto number = [&](const char* key) {
    const std::string v = field(key);
    size_t used = 0;
    long long n = -1;
    try {
      n = std::stoll(v, &used);
    } catch (const std::exception&) {
    }
    if (used != v.size() || n < 0 || n > (int64_t{1} << 40))
      fail("E507", std::string("device descriptor: '") + key + "' is not a count: " + v);
    return static_cast<int64_t>(n);
  };
  Descriptor d;
  const std::string kind = field("kind");
  auto k = parse_kind(kind);
  if (!k) fail("E507", "device descriptor: unknown kind '" + kind + "'");
  d.kind = *k;
  d.name = field("name");
  d.origin = field("origin");
  if (d.origin != "profile" && d.origin != "driver") fail("E507", "device descriptor: origin is profile or driver");
  d.arch = field("arch");
  d.compute_units = number("units");
  d.simd_width = number("simd");
  d.vector_bytes = number("vector");
  d.max_threads = number("threads");
  d.shared_bytes = number("shared");
  d.l2_bytes = fields.count("l2") ? number("l2") : 0;  // (absent: unknown, as descriptors before it say)
  d.registers = number("registers");
  d.max_cluster = number("cluster");
  d.blas = field("blas");
  if (d.blas == "none") d.blas.clear();
  const std::string caps = field("caps");
  if (caps != "none") {
    std::istringstream cs(caps);
    for (std::string c; std::getline(cs, c, ',');) {
      bool known = false;
      for (auto [cap, n] : kCapNames)
        if (c == n) d.caps |= static_cast<uint32_t>(cap), known = true;
      if (!known) fail("E507", "device descriptor: unknown capability '" + c + "'");
    }
  }
  if (!fields.empty()) fail("E507", "device descriptor: unknown key '" + fields.begin()->first + "'");
  if (d.simd_width < 1 || d.vector_bytes < 1 || d.max_threads < 1 || d.max_cluster < 1)
    fail("E507", "device descriptor: simd, vector, threads and cluster are at least 1");
  if (d.str() != text) fail("E507", "device descriptor is not in canonical form: expected '" + d.str() + "'");
  return d;
}

const Descriptor& profile(const std::string& name) {
  auto it = profiles().find(name);
  if (it == profiles().end()) {
    std::string names;
    for (const auto& n : profile_names()) names += (names.empty() ? "" : ", ") + n;
    fail("E507", "unknown device profile '" + name + "' (profiles: " + names + ")");
  }
  return it->second;
}

std::vector<std::string> profile_names() {
  std::vector<std::string> out;
  for (const auto& [n, _] : profiles()) out.push_back(n);
  return out;
}

const Descriptor& default_profile(Kind kind) {
  switch (kind) {
    case Kind::Cpu: return profile("x86-64");
    case Kind::Cuda: return profile("h200");
    case Kind::Hip: return profile("mi250x");
    case Kind::Metal: return profile("apple-m1-max");
  }
  return profile("x86-64");
}

const Descriptor& default_for_target(const std::string& target) {
  auto k = parse_kind(target);
  if (!k) fail("E506", "target '" + target + "' has no renderer in this build (available: cpu, cuda, hip, metal)");
  return default_profile(*k);
}

}  // namespace tessera::machine
