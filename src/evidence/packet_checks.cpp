#include "evidence/packet_checks.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "evidence/program_work.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/parser.hpp"
#include "support/diagnostic.hpp"
#include "support/dtype.hpp"

namespace tessera::evidence {

using json = nlohmann::json;

namespace {

// Derived values are computed from the recorded ones in the same doubles and
// printed round-trip exact, so only the last bits may differ.
bool same(double recorded, double derived) {
  return std::fabs(recorded - derived) <= 1e-9 * std::max(std::fabs(recorded), std::fabs(derived));
}

std::string num(double v) { return fmt::format("{:.6g}", v); }

// Bytes read and written once, and flops (program_work.hpp), of the measured
// program (as bench_runner computes them).
struct ProgramWork {
  double bytes = 0, flops = 0;
  bool counted = false;
};
ProgramWork program_work(const std::string& text) {
  ProgramWork w;
  const auto m = ir::parse(text, "<packet program>");
  if (m->funcs().empty()) fail("E860", "its program has no func");
  const ir::Op* f = m->funcs()[0];
  for (auto& a : f->regions[0]->args) w.bytes += double(a->type.numel() * dtype_size(a->type.dtype));
  for (const ir::Type& t : ir::func_result_types(*f)) w.bytes += double(t.numel() * dtype_size(t.dtype));
  const ProgramFlops pf = program_flops(*m);
  w.flops = pf.flops;
  w.counted = pf.counted;
  return w;
}

std::string domain_contradiction(const std::string& name, const json& st, double stability_pct) {
  const double median = st.at("median_ns"), lo = st.at("min_ns"), hi = st.at("max_ns");
  if (!(lo <= median && median <= hi) ||
      (st.contains("p90_ns") && !(median <= st["p90_ns"].get<double>() && st["p90_ns"].get<double>() <= hi)))
    return name + ": its median and p90 are not between its min and max";
  if (!st.contains("cohort_medians_ns") || st["cohort_medians_ns"].empty()) return "";
  const auto cohorts = st["cohort_medians_ns"].get<std::vector<double>>();
  const auto [clo, chi] = std::minmax_element(cohorts.begin(), cohorts.end());
  const double spread = *clo > 0 ? (*chi - *clo) / *clo * 100 : 0;
  if (st.contains("spread_pct") && !same(st["spread_pct"].get<double>(), spread))
    return fmt::format("{}: spread_pct {} is not its cohort medians' spread {}", name, num(st["spread_pct"]),
                       num(spread));
  if (stability_pct >= 0 && st.contains("stable") && st["stable"].get<bool>() != (spread <= stability_pct))
    return fmt::format("{}: stable is {}, but its spread {}% is {} the bar of {}%", name, st["stable"].dump(),
                       num(spread), spread <= stability_pct ? "within" : "above", num(stability_pct));
  return "";
}

std::string case_contradiction(const json& c) {
  const std::string name = c.value("name", "?");
  auto in_case = [&](const std::string& why) { return "case " + name + ": " + why; };
  const json none = json::array(), oracle = c.value("oracle", none), anchors = c.value("anchors", none);
  const json domains = c.value("domains", json::object());  // named: items() would dangle on a temporary
  for (const json& o : oracle)
    if (!o.value("pass", false)) return in_case("an oracle check failed (no packet is written for wrong results)");
  for (const json& o : c.value("kernel_checks", none))
    if (!o.value("pass", false))
      return in_case("the check of " + o.value("what", std::string("?")) +
                     " failed (no packet is written for wrong results)");
  const double stability_pct = c.contains("sampling_used") ? c["sampling_used"].value("stability_pct", -1.0) : -1.0;
  for (auto& [d, st] : domains.items())
    if (std::string why = domain_contradiction(d, st, stability_pct); !why.empty()) return in_case(why);
  const std::string primary = c.value("primary_domain", "");
  if (!c.contains("domains") || !c["domains"].contains(primary))
    return in_case("its primary timing domain '" + primary + "' was not measured");
  const json& p = c["domains"][primary];
  const double median = p.at("median_ns");
  if (!(median > 0)) return in_case("its primary median is not positive");
  if (c.contains("stable") && c["stable"] != p.value("stable", json()))
    return in_case("stable is " + c["stable"].dump() + ", its primary domain says " + p.value("stable", json()).dump());

  if (c.contains("program")) {
    ProgramWork w;
    try {
      w = program_work(c["program"].get<std::string>());
    } catch (const Error& e) {
      return in_case(std::string("its program does not parse: ") + e.what());
    }
    if (c.contains("bytes_moved") && !same(c["bytes_moved"], w.bytes))
      return in_case(fmt::format("bytes_moved {} is not its program's {}", num(c["bytes_moved"]), num(w.bytes)));
    if (c.contains("flops") != w.counted || (w.counted && !same(c["flops"], w.flops)))
      return in_case(fmt::format("flops {} are not its program's {}", c.value("flops", json()).dump(), num(w.flops)));
  }
  if (c.contains("achieved_gbs") && !same(c["achieved_gbs"], c.at("bytes_moved").get<double>() / median))
    return in_case(fmt::format("achieved_gbs {} is not bytes_moved / median ({})", num(c["achieved_gbs"]),
                               num(c["bytes_moved"].get<double>() / median)));
  if (c.contains("achieved_tflops") && !same(c["achieved_tflops"], c.at("flops").get<double>() / median / 1e3))
    return in_case(fmt::format("achieved_tflops {} is not flops / median ({})", num(c["achieved_tflops"]),
                               num(c["flops"].get<double>() / median / 1e3)));
  // A call-overhead case (bench/python_overhead.py): the Python call's median
  // minus the same run's native (C++ API) median, against its target.
  if (c.contains("overhead_ns")) {
    const double overhead = median - c.at("domains").at("native_call").at("median_ns").get<double>();
    if (!same(c["overhead_ns"], overhead))
      return in_case(fmt::format("overhead_ns {} is not its call's median minus the native call's ({})",
                                 num(c["overhead_ns"]), num(overhead)));
    if (c.contains("meets_target") && c["meets_target"].get<bool>() != (overhead <= c.at("target_overhead_ns")))
      return in_case("meets_target is " + c["meets_target"].dump() + ", but its overhead " + num(overhead) + " ns is " +
                     (overhead <= c.at("target_overhead_ns").get<double>() ? "within" : "above") + " the target of " +
                     num(c["target_overhead_ns"]) + " ns");
  }
  for (const json& a : anchors)
    if (a.contains("ratio_anchor_over_tessera") &&
        !same(a["ratio_anchor_over_tessera"], a.at("median_ns").get<double>() / median))
      return in_case(fmt::format("anchor {}: ratio {} is not its median / Tessera's ({})", a.value("anchor", "?"),
                                 num(a["ratio_anchor_over_tessera"]), num(a["median_ns"].get<double>() / median)));
  return "";
}

std::string first_contradiction(const json& p) {
  const json& src = p.at("source");
  if (p.value("sealed", false)) {
    if (src.value("dirty", true)) return "sealed, but its source says the tree was dirty";
    const std::string commit = src.value("commit", "");
    if (commit.size() != 40 || commit.find_first_not_of("0123456789abcdef") != std::string::npos)
      return "sealed, but it names no commit (\"" + commit + "\")";
    if (!src.value("git", false) && !src.contains("commit_proof"))
      return "sealed without git, but it records no proof of the commit it names";
  }
  if (!p.value("all_checks_pass", false)) return "all_checks_pass is not true (no packet is written for wrong results)";
  if (!p.contains("cases") || !p["cases"].is_array() || p["cases"].empty()) return "it has no cases";
  for (const json& c : p["cases"])
    if (std::string why = case_contradiction(c); !why.empty()) return why;
  return "";
}

}  // namespace

std::optional<Verification> contradiction(const json& packet) {
  try {
    if (std::string why = first_contradiction(packet); !why.empty())
      return Verification{Verdict::Tampered, "[E860] " + why};
  } catch (const json::exception& e) {
    return Verification{Verdict::Invalid, std::string("a field is missing or has the wrong type: ") + e.what()};
  }
  return std::nullopt;
}

}  // namespace tessera::evidence
