#include "runtime/inputs.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <string_view>
#include <thread>

#include "support/diagnostic.hpp"
#include "support/half.hpp"

namespace tessera {
namespace {

struct Spec {
  enum class Kind { Random, Special, Const, Iota } kind = Kind::Const;
  uint64_t seed = 0;
  uint64_t special_key = 0;  // RNG key that picks the NaN/inf positions
  double lo = -1, hi = 1, rate = 0.01;
  double value = 0;  // Const
};

[[noreturn]] void bad_spec(const std::string& spec, const std::string& why) {
  fail("E420", "bad input spec '" + spec + "': " + why);
}

// Whole-string number: decimal/exponent forms, nan, inf, -inf (and a leading '+').
bool parse_double(std::string_view s, double& out) {
  if (!s.empty() && s[0] == '+') {
    s.remove_prefix(1);
    if (!s.empty() && s[0] == '-') return false;
  }
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool parse_u64(std::string_view s, uint64_t& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

uint64_t mix64(uint64_t z) {  // splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The i-th output of a splitmix64 generator seeded with `key`, computed
// directly: element i needs no state from elements before it, which is what
// makes the output independent of how the index range is split.
uint64_t counter_random(uint64_t key, uint64_t i) { return mix64(key + (i + 1) * 0x9E3779B97F4A7C15ull); }

double unit_interval(uint64_t r) { return static_cast<double>(r >> 11) * 0x1p-53; }  // [0, 1)

Spec parse_spec(const std::string& spec) {
  const std::string_view text = spec;
  const std::size_t colon = text.find(':');
  const std::string_view kind = text.substr(0, colon);
  const bool has_args = colon != std::string_view::npos;
  const std::string_view args = has_args ? text.substr(colon + 1) : std::string_view{};
  Spec s;

  if (kind == "nan" || kind == "inf" || kind == "-inf" || kind == "iota") {
    if (has_args) bad_spec(spec, "'" + std::string(kind) + "' takes no parameters");
    if (kind == "iota") {
      s.kind = Spec::Kind::Iota;
    } else {
      s.kind = Spec::Kind::Const;
      s.value = kind == "nan"   ? std::numeric_limits<double>::quiet_NaN()
                : kind == "inf" ? std::numeric_limits<double>::infinity()
                                : -std::numeric_limits<double>::infinity();
    }
    return s;
  }
  if (kind == "const") {
    s.kind = Spec::Kind::Const;
    if (!has_args || !parse_double(args, s.value)) bad_spec(spec, "expected const:V with V a number, nan, inf or -inf");
    return s;
  }
  if (kind != "random" && kind != "special")
    bad_spec(spec,
             "unknown kind '" + std::string(kind) + "' (expected random, special, nan, inf, -inf, const or iota)");

  s.kind = kind == "random" ? Spec::Kind::Random : Spec::Kind::Special;
  bool have_seed = false, have_lo = false, have_hi = false, have_rate = false;
  std::string_view rest = args;
  while (has_args) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) bad_spec(spec, "expected key=value, got '" + std::string(item) + "'");
    const std::string_view key = item.substr(0, eq), val = item.substr(eq + 1);
    const std::string k(key);
    auto once = [&](bool& seen) {
      if (seen) bad_spec(spec, "parameter '" + k + "' given twice");
      seen = true;
    };
    if (key == "seed") {
      once(have_seed);
      if (!parse_u64(val, s.seed)) bad_spec(spec, "seed must be a decimal integer in [0, 2^64)");
    } else if (key == "lo" || key == "hi") {
      once(key == "lo" ? have_lo : have_hi);
      double& bound = key == "lo" ? s.lo : s.hi;
      if (!parse_double(val, bound) || !std::isfinite(bound)) bad_spec(spec, k + " must be a finite number");
    } else if (key == "rate" && s.kind == Spec::Kind::Special) {
      once(have_rate);
      // Three kinds (NaN, +inf, -inf) share the elements, so each gets at most a third.
      if (!parse_double(val, s.rate) || !(s.rate >= 0 && s.rate <= 1.0 / 3))
        bad_spec(spec, "rate must be a number in [0, 1/3]");
    } else {
      bad_spec(spec, "unknown parameter '" + k + "' for " + std::string(kind));
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (!have_seed) bad_spec(spec, "missing seed=N");
  if (!(s.lo < s.hi)) bad_spec(spec, "lo must be less than hi");
  if (!std::isfinite(s.hi - s.lo)) bad_spec(spec, "hi - lo overflows");
  s.special_key = mix64(s.seed ^ 0x5350454349414cull);  // "SPECIAL": a stream unrelated to the values
  return s;
}

double value_at(const Spec& s, uint64_t i) {
  switch (s.kind) {
    case Spec::Kind::Const: return s.value;
    case Spec::Kind::Iota: return static_cast<double>(i);
    case Spec::Kind::Special: {
      const double pick = unit_interval(counter_random(s.special_key, i));
      if (pick < s.rate) return std::numeric_limits<double>::quiet_NaN();
      if (pick < 2 * s.rate) return std::numeric_limits<double>::infinity();
      if (pick < 3 * s.rate) return -std::numeric_limits<double>::infinity();
      [[fallthrough]];
    }
    case Spec::Kind::Random: return s.lo + (s.hi - s.lo) * unit_interval(counter_random(s.seed, i));
  }
  return 0;
}

template <typename T, typename Convert>
void fill_as(void* data, const Spec& s, int64_t begin, int64_t end, Convert convert) {
  T* out = static_cast<T*>(data);
  for (int64_t i = begin; i < end; ++i) out[i] = convert(value_at(s, static_cast<uint64_t>(i)));
}

// Writes elements [begin, end) straight in the storage type.
void fill_range(void* data, DType dtype, const Spec& s, int64_t begin, int64_t end) {
  switch (dtype) {
    case DType::F16: fill_as<uint16_t>(data, s, begin, end, [](double v) { return double_to_f16(v); }); break;
    case DType::BF16: fill_as<uint16_t>(data, s, begin, end, [](double v) { return double_to_bf16(v); }); break;
    case DType::F32: fill_as<float>(data, s, begin, end, [](double v) { return static_cast<float>(v); }); break;
    case DType::F64: fill_as<double>(data, s, begin, end, [](double v) { return v; }); break;
    // Integers take the value's integer part (docs/semantics.md's cast), so
    // random:lo=-5,hi=5 gives integers in [-4, 4] and iota counts. i1 takes
    // floor(v) != 0: random (in [-1, 1)) is then true and false alike, and
    // iota false then true.
    case DType::I1:
      fill_as<uint8_t>(data, s, begin, end, [](double v) { return to_integer(std::floor(v), DType::I1); });
      break;
    case DType::I32: fill_as<int32_t>(data, s, begin, end, [](double v) { return to_integer(v, DType::I32); }); break;
    case DType::I64: fill_as<int64_t>(data, s, begin, end, [](double v) { return to_integer(v, DType::I64); }); break;
  }
}

// Tensor::numel()/nbytes() do not check for overflow; a shape whose byte size
// does not fit int64 would allocate a wrapped-around size and overrun it.
void check_shape_size(const std::vector<int64_t>& shape, DType dtype) {
  int64_t n = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t d : shape) {
    if (d <= 0) continue;  // zero is fine; Tensor::empty reports negative extents (E401)
    if (n > std::numeric_limits<int64_t>::max() / d)
      fail("E601", "tensor shape is too large: byte size overflows int64");
    n *= d;
  }
}

}  // namespace

Tensor generate_input(const std::string& spec, DType dtype, const std::vector<int64_t>& shape) {
  return generate_input(spec, dtype, shape, 0);
}

Tensor generate_input(const std::string& spec, DType dtype, const std::vector<int64_t>& shape, unsigned num_threads) {
  const Spec s = parse_spec(spec);  // before allocating: a typo should not cost a 4 GB allocation
  check_shape_size(shape, dtype);
  Tensor t = Tensor::empty(dtype, shape);
  const int64_t n = t.numel();

  int64_t threads = num_threads;
  if (threads == 0) {
    // Below ~64K elements per thread, starting threads costs more than it saves.
    constexpr int64_t kMinPerThread = 1 << 16;
    threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
    threads = std::min(threads, std::max<int64_t>(1, n / kMinPerThread));
  }
  threads = std::max<int64_t>(1, std::min(threads, n));
  if (threads == 1) {
    fill_range(t.data(), dtype, s, 0, n);
    return t;
  }
  // Contiguous ranges, the first n % threads of them one element longer.
  const int64_t chunk = n / threads, extra = n % threads;
  std::vector<std::jthread> workers;  // jthread joins on destruction, also if a later start throws
  workers.reserve(static_cast<std::size_t>(threads));
  for (int64_t k = 0; k < threads; ++k) {
    const int64_t begin = k * chunk + std::min(k, extra);
    const int64_t end = begin + chunk + (k < extra ? 1 : 0);
    workers.emplace_back(fill_range, t.data(), dtype, std::cref(s), begin, end);
  }
  for (std::jthread& w : workers) w.join();
  return t;
}

}  // namespace tessera
