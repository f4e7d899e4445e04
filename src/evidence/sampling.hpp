// Sampling for evidence: warm-up, then S samples of I iterations each, taken
// in C interleaved cohorts (sample 0 of every cohort, then sample 1, ...), so
// drift in the machine moves every cohort alike. Per timing domain: median,
// min, max, p90 and each cohort's median; stable when the spread between
// cohort medians is within the bar. An unstable measurement is repeated with
// more samples (the bar is never raised), and the packet records what was used.
#pragma once
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tessera::evidence {

struct SamplingPlan {
  int warmup = 3, samples = 15, iterations = 10, cohorts = 2;
  double stability_pct = 4.0;
  int max_samples = 120;
  static SamplingPlan from_json(const nlohmann::json& j);  // missing keys keep defaults
  nlohmann::json to_json() const;
};

struct DomainStats {
  std::vector<double> samples_ns;  // every sample (mean over its iterations)
  std::vector<double> cohort_medians_ns;
  double median_ns = 0, min_ns = 0, max_ns = 0, p90_ns = 0, spread_pct = 0;
  bool stable = false;
  nlohmann::json to_json() const;
};

// One iteration: domain name -> nanoseconds. A domain missing from an
// iteration's map is not measured in that run (and must be missing always).
using Iteration = std::function<std::map<std::string, double>()>;

struct Sampled {
  std::map<std::string, DomainStats> domains;
  SamplingPlan used;                // after any raise
  std::vector<std::string> raised;  // why sampling was raised, in order
};

Sampled sample(const Iteration& run_once, SamplingPlan plan);

}  // namespace tessera::evidence
