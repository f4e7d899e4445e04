// Evidence sampling and sealing: stability is judged on cohort medians, an
// unstable measurement is re-sampled (never judged with a looser bar), and a
// sealed packet detects any edit.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include "evidence/packet.hpp"
#include "evidence/sampling.hpp"
#include "support/diagnostic.hpp"

namespace tessera::evidence {
namespace {

TEST(Sampling, StatsAndCohorts) {
  SamplingPlan plan;
  plan.warmup = 2;
  plan.samples = 4;
  plan.iterations = 3;
  plan.cohorts = 2;
  int calls = 0;
  Sampled s = sample(
      [&] {
        ++calls;
        return std::map<std::string, double>{{"kernel_wall", 100.0}, {"end_to_end", 150.0}};
      },
      plan);
  EXPECT_EQ(calls, 2 + 4 * 3 * 2);
  const DomainStats& k = s.domains.at("kernel_wall");
  EXPECT_EQ(k.samples_ns.size(), 8u);
  EXPECT_EQ(k.cohort_medians_ns.size(), 2u);
  EXPECT_DOUBLE_EQ(k.median_ns, 100.0);
  EXPECT_TRUE(k.stable);
  EXPECT_TRUE(s.raised.empty());
  EXPECT_DOUBLE_EQ(s.domains.at("end_to_end").p90_ns, 150.0);
}

TEST(Sampling, UnstableRaisesSamplesNotTheBar) {
  SamplingPlan plan;
  plan.warmup = 0;
  plan.samples = 2;
  plan.iterations = 1;
  plan.cohorts = 2;
  plan.max_samples = 8;
  int i = 0;
  // Cohort 1 is always 10% slower: never stable, so sampling doubles to the cap.
  Sampled s = sample([&] { return std::map<std::string, double>{{"d", (i++ % 2) ? 110.0 : 100.0}}; }, plan);
  EXPECT_FALSE(s.domains.at("d").stable);
  EXPECT_NEAR(s.domains.at("d").spread_pct, 10.0, 1e-9);
  EXPECT_EQ(s.used.samples, 8);
  EXPECT_EQ(s.used.stability_pct, 4.0);
  EXPECT_EQ(s.raised.size(), 2u);
}

TEST(Sampling, RejectsBadPlans) {
  EXPECT_THROW(SamplingPlan::from_json({{"samples", 0}}), Error);
  EXPECT_THROW(SamplingPlan::from_json({{"stability_pct", -1}}), Error);
  EXPECT_EQ(SamplingPlan::from_json({{"samples", 7}}).samples, 7);
}

// A packet whose derived numbers follow from its times and sizes (packet_checks.hpp).
nlohmann::json consistent_packet() {
  nlohmann::json domain = {{"median_ns", 2000.0},
                           {"min_ns", 1000.0},
                           {"max_ns", 3000.0},
                           {"p90_ns", 2500.0},
                           {"cohort_medians_ns", {2000.0, 2020.0}},
                           {"spread_pct", 1.0},
                           {"stable", true}};
  nlohmann::json c = {{"name", "a"},
                      {"program",
                       "func @f(%x: tensor<2x8xf32>) -> tensor<2xf32> {\n  %r0 = tessera.reduce %x {axes = "
                       "[1], kind = \"sum\"} : tensor<2x8xf32> -> tensor<2xf32>\n  return %r0 : "
                       "tensor<2xf32>\n}\n"},
                      {"bytes_moved", 72.0},
                      {"primary_domain", "kernel_wall"},
                      {"domains", {{"kernel_wall", domain}}},
                      {"sampling_used", {{"stability_pct", 4.0}}},
                      {"achieved_gbs", 72.0 / 2000.0},
                      {"stable", true},
                      {"oracle", {{{"pass", true}}}},
                      {"anchors", {{{"anchor", "numpy"}, {"median_ns", 3000.0}, {"ratio_anchor_over_tessera", 1.5}}}}};
  return {{"format", kPacketFormat},
          {"sealed", false},
          {"all_checks_pass", true},
          {"cases", {c}},
          {"source", {{"fingerprint", "x"}, {"commit", "c"}, {"dirty", true}}}};
}

TEST(Packet, DerivedNumbersAreRederived) {
  const std::string path = ::testing::TempDir() + "/packet-derived.json";
  auto verdict_after = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json p = consistent_packet();
    edit(p);
    seal(p);  // as a forger would: the digest matches
    std::ofstream(path) << p.dump(1);
    return verify_packet(path, ".");
  };
  EXPECT_EQ(verdict_after([](nlohmann::json&) {}).verdict, Verdict::Unsealed) << verdict_after([](auto&) {}).detail;
  for (const auto& edit : std::vector<std::function<void(nlohmann::json&)>>{
           [](nlohmann::json& p) { p["cases"][0]["achieved_gbs"] = 1.0; },
           [](nlohmann::json& p) { p["cases"][0]["bytes_moved"] = 80.0; },
           [](nlohmann::json& p) { p["cases"][0]["anchors"][0]["ratio_anchor_over_tessera"] = 3.0; },
           [](nlohmann::json& p) { p["cases"][0]["domains"]["kernel_wall"]["stable"] = false; },
           [](nlohmann::json& p) { p["cases"][0]["domains"]["kernel_wall"]["min_ns"] = 2500.0; },
           [](nlohmann::json& p) { p["cases"][0]["oracle"][0]["pass"] = false; },
           [](nlohmann::json& p) { p["sealed"] = true; },
           [](nlohmann::json& p) {
             p["sealed"] = true;
             p["source"]["dirty"] = false;  // and still no commit
           },
       }) {
    const Verification v = verdict_after(edit);
    EXPECT_EQ(v.verdict, Verdict::Tampered) << v.detail;
    EXPECT_EQ(v.detail.rfind("[E860] ", 0), 0u) << v.detail;
  }
  EXPECT_EQ(verdict_after([](nlohmann::json& p) { p["cases"][0]["domains"] = 3; }).verdict, Verdict::Invalid);
}

TEST(Packet, SealDetectsAnyEdit) {
  nlohmann::json p = consistent_packet();
  seal(p);
  const std::string path = ::testing::TempDir() + "/packet-test.json";
  std::ofstream(path) << p.dump(1);
  EXPECT_EQ(verify_packet(path, ".").verdict, Verdict::Unsealed);
  p["cases"][0]["bytes_moved"] = 73.0;
  std::ofstream(path) << p.dump(1);
  EXPECT_EQ(verify_packet(path, ".").verdict, Verdict::Tampered);
  p.erase("manifest");
  std::ofstream(path) << p.dump(1);
  EXPECT_EQ(verify_packet(path, ".").verdict, Verdict::Tampered);
  std::ofstream(path) << "{";
  EXPECT_EQ(verify_packet(path, ".").verdict, Verdict::Invalid);
}

}  // namespace
}  // namespace tessera::evidence
