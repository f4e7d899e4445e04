#include "evidence/sampling.hpp"

#include <algorithm>
#include <cmath>

#include "support/diagnostic.hpp"

namespace tessera::evidence {

namespace {
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
}  // namespace

SamplingPlan SamplingPlan::from_json(const nlohmann::json& j) {
  SamplingPlan p;
  p.warmup = j.value("warmup", p.warmup);
  p.samples = j.value("samples", p.samples);
  p.iterations = j.value("iterations", p.iterations);
  p.cohorts = j.value("cohorts", p.cohorts);
  p.stability_pct = j.value("stability_pct", p.stability_pct);
  p.max_samples = j.value("max_samples", p.max_samples);
  if (p.warmup < 0 || p.samples < 1 || p.iterations < 1 || p.cohorts < 1 || p.stability_pct <= 0 ||
      p.max_samples < p.samples)
    fail("E851", "bad sampling plan: " + j.dump());
  return p;
}

nlohmann::json SamplingPlan::to_json() const {
  return {{"warmup", warmup},
          {"samples", samples},
          {"iterations", iterations},
          {"cohorts", cohorts},
          {"stability_pct", stability_pct},
          {"max_samples", max_samples}};
}

nlohmann::json DomainStats::to_json() const {
  return {{"median_ns", median_ns},
          {"min_ns", min_ns},
          {"max_ns", max_ns},
          {"p90_ns", p90_ns},
          {"stable", stable},
          {"spread_pct", spread_pct},
          {"cohort_medians_ns", cohort_medians_ns},
          {"samples", samples_ns.size()}};
}

Sampled sample(const Iteration& run_once, SamplingPlan plan) {
  Sampled out;
  for (int w = 0; w < plan.warmup; ++w) run_once();
  while (true) {
    // cohort -> domain -> samples
    std::vector<std::map<std::string, std::vector<double>>> cohorts(plan.cohorts);
    for (int s = 0; s < plan.samples; ++s)
      for (int c = 0; c < plan.cohorts; ++c) {
        std::map<std::string, double> sum;
        for (int i = 0; i < plan.iterations; ++i)
          for (auto& [d, ns] : run_once()) sum[d] += ns;
        for (auto& [d, total] : sum) cohorts[c][d].push_back(total / plan.iterations);
      }
    out.domains.clear();
    bool all_stable = true;
    for (auto& [domain, _] : cohorts[0]) {
      DomainStats st;
      for (auto& co : cohorts) {
        const auto& xs = co.at(domain);
        st.samples_ns.insert(st.samples_ns.end(), xs.begin(), xs.end());
        st.cohort_medians_ns.push_back(median(xs));
      }
      st.median_ns = median(st.samples_ns);
      st.min_ns = *std::min_element(st.samples_ns.begin(), st.samples_ns.end());
      st.max_ns = *std::max_element(st.samples_ns.begin(), st.samples_ns.end());
      st.p90_ns = quantile(st.samples_ns, 0.9);
      auto [lo, hi] = std::minmax_element(st.cohort_medians_ns.begin(), st.cohort_medians_ns.end());
      st.spread_pct = *lo > 0 ? (*hi - *lo) / *lo * 100 : 0;
      st.stable = st.spread_pct <= plan.stability_pct;
      all_stable = all_stable && st.stable;
      out.domains[domain] = std::move(st);
    }
    out.used = plan;
    if (all_stable || plan.samples * 2 > plan.max_samples) break;
    out.raised.push_back("cohort spread above " + std::to_string(plan.stability_pct) + "% with " +
                         std::to_string(plan.samples) + " samples: doubled the samples");
    plan.samples *= 2;
  }
  return out;
}

}  // namespace tessera::evidence
