// Scalar f16 / bf16 <-> f32 conversions (round to nearest even, NaN kept NaN).
// Host-side only: used by inputs, .npy I/O and the oracle, never by kernels.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace tessera {

inline float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

inline float bf16_to_float(uint16_t h) { return bits_to_float(uint32_t(h) << 16); }
inline uint16_t float_to_bf16(float f) {
  uint32_t b = float_to_bits(f);
  if ((b & 0x7fffffffu) > 0x7f800000u) return uint16_t((b >> 16) | 0x40);  // quiet NaN
  b += 0x7fffu + ((b >> 16) & 1u);
  return uint16_t(b >> 16);
}

inline float f16_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return bits_to_float(sign);
    float v = float(man) * 0x1p-24f;  // subnormal: exact in f32
    return sign ? -v : v;
  }
  return bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t float_to_f16(float f) {
  uint32_t b = float_to_bits(f);
  uint16_t sign = uint16_t((b >> 16) & 0x8000);
  uint32_t abs = b & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00);   // NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to inf
  if (abs < 0x38800000u) {                                 // result is subnormal or zero: scale, round as integer
    float a = bits_to_float(abs) * 0x1p24f;                // exact
    uint32_t q = uint32_t(a);
    float rem = a - float(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
    return uint16_t(sign | q);
  }
  uint32_t mant = abs & 0x7fffffu, exp = (abs >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  h += uint32_t(rest > 0x1000u) | (uint32_t(rest == 0x1000u) & h & 1u);  // branch-free RNE
  return uint16_t(sign | h);
}

// double -> float with round-to-odd: exact values stay, others take the
// neighbour whose last bit is odd. Rounding that float on to f16/bf16 then
// equals rounding the double directly (float keeps 2+ extra bits), which
// plain double -> float -> f16 does not guarantee (double rounding).
// Branch-free on purpose: for random data the "even, so step" case is a coin
// flip, and a mispredicted branch there doubled the cost per element.
inline float to_float_round_odd(double d) {
  const float f = static_cast<float>(d);
  uint32_t b = float_to_bits(f);
  const uint32_t inexact = static_cast<double>(f) != d && d == d;  // NaN stays as is
  const uint32_t away = std::fabs(d) > std::fabs(static_cast<double>(f));
  const uint32_t step = inexact & ~b & 1u;  // 1 when inexact and f's last bit is even
  b += step * (2 * away - 1);               // +1 or -1 (mod 2^32) in magnitude: the neighbour towards d
  return bits_to_float(b);
}

// Correctly rounded double -> f16 / bf16 (one rounding, never two).
inline uint16_t double_to_f16(double d) { return float_to_f16(to_float_round_odd(d)); }
inline uint16_t double_to_bf16(double d) { return float_to_bf16(to_float_round_odd(d)); }

}  // namespace tessera
