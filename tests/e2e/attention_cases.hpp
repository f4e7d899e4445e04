// The attention matrix, shared by the CPU suite (test_attention.cpp) and the
// GPU suite (tests/gpu/test_cuda.cpp): sequence lengths around the tile
// sizes (1, 17, 127, 128, 129), Sq != Sk both ways (decode, chunked prefill,
// causal rows that see no key), grouped-query ratios 1, 4, 8 and 32, head
// dims, dtypes, the log-sum-exp result, NaN/inf in q and k. Then the same
// ground for the backward pass (attention_grad_cases: the CPU's).
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "fusion_cases.hpp"

namespace tessera::test {

struct AttentionShape {
  int64_t b, h, hkv, sq, sk, d;
};

inline std::string attention_name(DType dt, const AttentionShape& s, bool causal, bool lse, const std::string& tag) {
  return std::string(dtype_name(dt)) + "_b" + std::to_string(s.b) + "h" + std::to_string(s.h) + "kv" +
         std::to_string(s.hkv) + "_q" + std::to_string(s.sq) + "k" + std::to_string(s.sk) + "d" + std::to_string(s.d) +
         (causal ? "_causal" : "") + (lse ? "_lse" : "") + (tag.empty() ? "" : "_" + tag);
}

// One case: q, k, v from `inputs` (generator specs), o (and lse) returned.
inline FusionCase attention_case(DType dt, AttentionShape s, bool causal, bool lse, std::vector<std::string> inputs,
                                 const std::string& tag = "") {
  return {attention_name(dt, s, causal, lse, tag), std::move(inputs), [=](GraphBuilder& g) {
            ir::Value* q = g.input("q", T(dt, {s.b, s.h, s.sq, s.d}));
            ir::Value* k = g.input("k", T(dt, {s.b, s.hkv, s.sk, s.d}));
            ir::Value* v = g.input("v", T(dt, {s.b, s.hkv, s.sk, s.d}));
            auto out = g.attention(q, k, v, causal, std::nan(""), lse);
            for (ir::Value* o : out) g.output(o);
          }};
}

// How a views case returns o.
enum class ViewsOut {
  Heads,        // as it is, [batch, heads, tokens, d]
  Transposed,   // transposed back to [batch, tokens, heads, d]
  MergedHeads,  // one sequence as the Llama example writes it: [heads, tokens, d], transposed, [tokens, heads * d]
};

// q, k and v as views: heads split from one fused [batch, tokens, (h + 2 hkv)
// * d] projection and transposed to [batch, heads, tokens, d]. On Hopper the
// block reads them in place through tensor maps with the views' strides and
// writes o in the layout a returned transposed view has (o_perm).
inline FusionCase attention_views_case(DType dt, AttentionShape s, bool causal, ViewsOut out = ViewsOut::Heads) {
  const std::string tag = out == ViewsOut::Heads        ? "views"
                          : out == ViewsOut::Transposed ? "views_out"
                                                        : "views_out_merged";
  return {attention_name(dt, s, causal, false, tag), {"random:seed=31,lo=-1,hi=1"}, [=](GraphBuilder& g) {
            ir::Value* x = g.input("x", T(dt, {s.b, s.sq, (s.h + 2 * s.hkv) * s.d}));
            std::vector<ir::Value*> parts = g.split(x, 2, {s.h * s.d, s.hkv * s.d, s.hkv * s.d});
            auto heads = [&](ir::Value* t, int64_t n) {
              return g.transpose(g.reshape(t, {s.b, s.sq, n, s.d}), {0, 2, 1, 3});
            };
            ir::Value* o = g.attention(heads(parts[0], s.h), heads(parts[1], s.hkv), heads(parts[2], s.hkv), causal,
                                       std::nan(""), false)[0];
            if (out == ViewsOut::Transposed) o = g.transpose(o, {0, 2, 1, 3});
            if (out == ViewsOut::MergedHeads)
              o = g.reshape(g.transpose(g.reshape(o, {s.b * s.h, s.sq, s.d}), {1, 0, 2}), {s.sq, s.b * s.h * s.d});
            g.output(o);
          }};
}

// A mask operand of shape `mask` (broadcast to [b, h, sq, sk]): i1 (false
// hides a key) or an additive bias (of `mask_dt`); its generator is the last
// input.
inline FusionCase attention_mask_case(DType dt, AttentionShape s, bool causal, bool lse, DType mask_dt,
                                      std::vector<int64_t> mask, std::vector<std::string> inputs,
                                      const std::string& tag) {
  return {attention_name(dt, s, causal, lse, tag), std::move(inputs), [=](GraphBuilder& g) {
            ir::Value* q = g.input("q", T(dt, {s.b, s.h, s.sq, s.d}));
            ir::Value* k = g.input("k", T(dt, {s.b, s.hkv, s.sk, s.d}));
            ir::Value* v = g.input("v", T(dt, {s.b, s.hkv, s.sk, s.d}));
            ir::Value* m = g.input("mask", T(mask_dt, mask));
            for (ir::Value* o : g.attention(q, k, v, causal, std::nan(""), lse, m)) g.output(o);
          }};
}

// The mask operand: booleans (half the keys hidden; whole rows hidden; with
// causal), biases of every broadcast shape, in f32 or q's dtype, NaN/inf in
// the bias. gpu: what the CUDA block takes (f16/bf16, head dims 64 and 128).
inline std::vector<FusionCase> attention_mask_cases(bool gpu = false) {
  auto with = [](std::vector<std::string> qkv, const std::string& mask) {
    qkv.push_back(mask);
    return qkv;
  };
  const std::vector<std::string> uniform = {"random:seed=41,lo=-1,hi=1", "random:seed=42,lo=-1,hi=1",
                                            "random:seed=43,lo=-1,hi=1"};
  std::vector<FusionCase> cases;
  const std::vector<DType> dtypes = gpu ? std::vector<DType>{DType::BF16, DType::F16}
                                        : std::vector<DType>{DType::F32, DType::BF16, DType::F64, DType::F16};
  for (DType dt : dtypes)
    for (bool causal : {false, true}) {
      const AttentionShape gqa = {2, 4, 2, 129, 150, 64};
      cases.push_back(attention_mask_case(dt, gqa, causal, true, DType::I1, {129, 150}, with(uniform, "random:seed=44"),
                                          "bool_mask"));
      // row 0 hidden whole (an iota mask: floor(i) != 0), the others all seen
      cases.push_back(attention_mask_case(dt, {1, 2, 1, 40, 70, gpu ? 128 : 32}, causal, true, DType::I1, {1, 1, 40, 1},
                                          with(uniform, "iota"), "row_mask"));
      cases.push_back(attention_mask_case(dt, gqa, causal, true, DType::F32, {2, 1, 1, 150},
                                          with(uniform, "random:seed=45,lo=-4,hi=4"), "key_bias"));
      cases.push_back(attention_mask_case(dt, gqa, causal, false, dt, {2, 4, 129, 150},
                                          with(uniform, "random:seed=46,lo=-2,hi=2"), "full_bias"));
      cases.push_back(attention_mask_case(dt, {1, 2, 1, 70, 70, 64}, causal, true, DType::F32, {70, 70},
                                          with(uniform, "special:seed=47,rate=0.01"), "special_bias"));
    }
  return cases;
}

// gpu: only what the CUDA block takes (f16/bf16, head dims 64 and 128, at
// least one key); the CPU takes everything.
inline std::vector<FusionCase> attention_cases(bool gpu) {
  const std::vector<std::string> uniform = {"random:seed=1,lo=-1,hi=1", "random:seed=2,lo=-1,hi=1",
                                            "random:seed=3,lo=-1,hi=1"};
  // wider scores: a peaked softmax, where the max matters
  const std::vector<std::string> peaked = {"random:seed=4,lo=-3,hi=3", "random:seed=5,lo=-3,hi=3",
                                           "random:seed=6,lo=-1,hi=1"};
  // NaN, +inf and -inf in q and k (not v: see docs/semantics.md on masked v)
  const std::vector<std::string> special = {"special:seed=7,rate=0.002", "special:seed=8,rate=0.002",
                                            "random:seed=9,lo=-1,hi=1"};
  std::vector<FusionCase> cases;
  const std::vector<DType> dtypes = gpu ? std::vector<DType>{DType::BF16, DType::F16}
                                        : std::vector<DType>{DType::F32, DType::BF16, DType::F64, DType::F16};
  for (DType dt : dtypes)
    for (int64_t d : {int64_t{64}, int64_t{128}})
      for (bool causal : {false, true}) {
        for (int64_t s : {1, 17, 127, 128, 129})
          cases.push_back(attention_case(dt, {1, 2, 1, s, s, d}, causal, s == 129, uniform));
        cases.push_back(attention_case(dt, {2, 8, 2, 300, 300, d}, causal, true, peaked));    // GQA 4
        cases.push_back(attention_case(dt, {1, 8, 1, 1, 1000, d}, causal, true, uniform));    // decode, MQA
        cases.push_back(attention_case(dt, {1, 4, 4, 64, 1000, d}, causal, false, uniform));  // chunked prefill
        cases.push_back(attention_case(dt, {1, 8, 1, 300, 100, d}, causal, true, uniform));   // rows with no key
        cases.push_back(attention_case(dt, {1, 32, 1, 33, 257, d}, causal, false, peaked));   // GQA 32
        cases.push_back(attention_case(dt, {1, 4, 2, 200, 200, d}, causal, true, special, "special"));
        for (int64_t b : {1, 2}) cases.push_back(attention_views_case(dt, {b, 8, 2, 200, 200, d}, causal));
        cases.push_back(attention_views_case(dt, {2, 8, 2, 200, 200, d}, causal, ViewsOut::Transposed));
        cases.push_back(attention_views_case(dt, {1, 8, 2, 200, 200, d}, causal, ViewsOut::MergedHeads));
      }
  // The CPU block takes any head dim, f32 and f64, and no keys at all.
  if (!gpu)
    for (DType dt : {DType::F32, DType::F64, DType::BF16}) {
      for (int64_t d : {1, 3, 100, 256}) cases.push_back(attention_case(dt, {1, 2, 2, 70, 90, d}, true, true, peaked));
      cases.push_back(attention_case(dt, {1, 2, 1, 5, 0, 64}, false, true, uniform));  // no keys
      cases.push_back(attention_case(dt, {0, 2, 1, 5, 5, 64}, true, true, uniform));   // empty batch
      cases.push_back(attention_case(dt, {1, 2, 1, 0, 5, 64}, false, true, uniform));  // no queries
    }
  return cases;
}

// Few query rows a kv head (heads / kv_heads * sq <= 8: decode, GQA groups,
// a short chunk of rows), which CUDA runs on its split-KV block: many chunks
// of keys (the Llama decode step, 100000 keys), odd key counts, one chunk,
// causal rows that see no key, no keys at all, an empty batch, every head dim
// the block takes, NaN/inf, and the Llama decode layer's views. gpu: its
// dtypes (f32 too); the CPU suite runs the same shapes.
inline std::vector<FusionCase> attention_decode_cases(bool gpu) {
  const std::vector<std::string> uniform = {"random:seed=51,lo=-1,hi=1", "random:seed=52,lo=-1,hi=1",
                                            "random:seed=53,lo=-1,hi=1"};
  const std::vector<std::string> peaked = {"random:seed=54,lo=-3,hi=3", "random:seed=55,lo=-3,hi=3",
                                           "random:seed=56,lo=-1,hi=1"};
  const std::vector<std::string> special = {"special:seed=57,rate=0.002", "special:seed=58,rate=0.002",
                                            "random:seed=59,lo=-1,hi=1"};
  std::vector<FusionCase> cases;
  const std::vector<DType> dtypes = gpu ? std::vector<DType>{DType::BF16, DType::F16, DType::F32}
                                        : std::vector<DType>{DType::F32, DType::BF16};
  for (DType dt : dtypes)
    for (bool causal : {false, true}) {
      cases.push_back(attention_case(dt, {1, 32, 8, 1, 8192, 128}, causal, true, uniform, "decode"));
      cases.push_back(attention_case(dt, {2, 8, 2, 2, 4097, 64}, causal, true, peaked, "decode"));
      cases.push_back(attention_case(dt, {1, 4, 4, 3, 129, 128}, causal, false, uniform, "decode"));
      cases.push_back(attention_case(dt, {1, 8, 1, 1, 100000, 64}, causal, true, peaked, "decode"));
      cases.push_back(attention_case(dt, {1, 4, 2, 4, 3, 64}, causal, true, uniform, "decode"));  // causal: no key
      cases.push_back(attention_case(dt, {1, 8, 2, 2, 1000, 128}, causal, true, special, "decode_special"));
      cases.push_back(attention_case(dt, {1, 2, 1, 1, 0, 64}, causal, true, uniform, "decode"));   // no keys
      cases.push_back(attention_case(dt, {0, 4, 2, 1, 10, 64}, causal, true, uniform, "decode"));  // empty batch
      for (int64_t d : {16, 32, 256})
        cases.push_back(attention_case(dt, {1, 4, 1, 2, 300, d}, causal, true, peaked, "decode"));
      cases.push_back(attention_views_case(dt, {1, 8, 2, 1, 1, 128}, causal, ViewsOut::MergedHeads));
      cases.push_back(attention_views_case(dt, {2, 8, 2, 1, 1, 64}, causal, ViewsOut::Transposed));
    }
  return cases;
}

// One backward case: o and lse from the forward, then dq, dk and dv of do
// (inputs: q, k, v, do); the program returns them.
inline FusionCase attention_grad_case(DType dt, AttentionShape s, bool causal, std::vector<std::string> inputs,
                                      const std::string& tag = "") {
  return {"grad_" + attention_name(dt, s, causal, false, tag), std::move(inputs), [=](GraphBuilder& g) {
            ir::Value* q = g.input("q", T(dt, {s.b, s.h, s.sq, s.d}));
            ir::Value* k = g.input("k", T(dt, {s.b, s.hkv, s.sk, s.d}));
            ir::Value* v = g.input("v", T(dt, {s.b, s.hkv, s.sk, s.d}));
            ir::Value* dout = g.input("dout", T(dt, {s.b, s.h, s.sq, s.d}));
            auto fwd = g.attention(q, k, v, causal, std::nan(""), true);
            for (ir::Value* d : g.attention_grad(q, k, v, fwd[0], dout, fwd[1], causal, std::nan(""))) g.output(d);
          }};
}

// Smaller than the forward's (the oracle walks every pair of a sampled
// row or key, step by step with tolerances).
inline std::vector<FusionCase> attention_grad_cases() {
  const std::vector<std::string> uniform = {"random:seed=11,lo=-1,hi=1", "random:seed=12,lo=-1,hi=1",
                                            "random:seed=13,lo=-1,hi=1", "random:seed=14,lo=-1,hi=1"};
  const std::vector<std::string> peaked = {"random:seed=15,lo=-3,hi=3", "random:seed=16,lo=-3,hi=3",
                                           "random:seed=17,lo=-1,hi=1", "random:seed=18,lo=-1,hi=1"};
  const std::vector<std::string> special = {"special:seed=19,rate=0.004", "special:seed=20,rate=0.004",
                                            "random:seed=21,lo=-1,hi=1", "random:seed=22,lo=-1,hi=1"};
  std::vector<FusionCase> cases;
  for (DType dt : {DType::F32, DType::BF16, DType::F64, DType::F16})
    for (int64_t d : {int64_t{64}, int64_t{128}}) {
      if (d == 128 && (dt == DType::F64 || dt == DType::F16)) continue;
      for (bool causal : {false, true}) {
        for (int64_t s : {1, 17, 127, 128, 129})
          cases.push_back(attention_grad_case(dt, {1, 2, 1, s, s, d}, causal, uniform));
        cases.push_back(attention_grad_case(dt, {2, 8, 2, 100, 100, d}, causal, peaked));  // GQA 4
        cases.push_back(attention_grad_case(dt, {1, 4, 1, 1, 300, d}, causal, uniform));   // decode, MQA
        cases.push_back(attention_grad_case(dt, {1, 2, 2, 40, 200, d}, causal, uniform));  // chunked prefill
        cases.push_back(attention_grad_case(dt, {1, 4, 1, 150, 50, d}, causal, uniform));  // rows with no key
        cases.push_back(attention_grad_case(dt, {1, 32, 1, 9, 70, d}, causal, peaked));    // GQA 32
        cases.push_back(attention_grad_case(dt, {1, 2, 1, 70, 70, d}, causal, special, "special"));
        // eight kv heads or more: one pass a kv head (dq added up in the program)
        cases.push_back(attention_grad_case(dt, {2, 8, 4, 100, 100, d}, causal, peaked));   // GQA 2
        cases.push_back(attention_grad_case(dt, {1, 16, 8, 40, 200, d}, causal, uniform));  // chunked prefill
        cases.push_back(attention_grad_case(dt, {1, 8, 8, 150, 50, d}, causal, uniform));   // rows with no key
        cases.push_back(attention_grad_case(dt, {1, 8, 8, 70, 70, d}, causal, special, "special"));
      }
    }
  for (DType dt : {DType::F32, DType::F64, DType::BF16}) {
    for (int64_t d : {1, 3, 100, 256}) cases.push_back(attention_grad_case(dt, {1, 2, 2, 30, 40, d}, true, peaked));
    cases.push_back(attention_grad_case(dt, {1, 2, 1, 5, 0, 64}, false, uniform));  // no keys
    cases.push_back(attention_grad_case(dt, {1, 8, 8, 5, 0, 64}, true, uniform));   // no keys, one pass
    cases.push_back(attention_grad_case(dt, {1, 8, 8, 0, 5, 64}, true, uniform));   // no queries, one pass
    cases.push_back(attention_grad_case(dt, {0, 2, 1, 5, 5, 64}, true, uniform));   // empty batch
    cases.push_back(attention_grad_case(dt, {1, 2, 1, 0, 5, 64}, false, uniform));  // no queries
  }
  return cases;
}

}  // namespace tessera::test
