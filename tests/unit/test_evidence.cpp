// Evidence sampling and sealing: stability is judged on cohort medians, an
// unstable measurement is re-sampled (never judged with a looser bar), and a
// sealed packet detects any edit.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

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

TEST(Packet, SealDetectsAnyEdit) {
  nlohmann::json p = {{"format", kPacketFormat},
                      {"sealed", false},
                      {"cases", {{{"name", "a"}, {"gbs", 1.5}}}},
                      {"source", {{"fingerprint", "x"}, {"commit", "c"}}}};
  seal(p);
  const std::string path = ::testing::TempDir() + "/packet-test.json";
  std::ofstream(path) << p.dump(1);
  EXPECT_EQ(verify_packet(path, ".").verdict, Verdict::Unsealed);
  p["cases"][0]["gbs"] = 1.6;
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
