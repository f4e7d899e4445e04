#include "arbiter/arbiter.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "arbiter/ledger.hpp"
#include "arbiter/region_program.hpp"
#include "arbiter/region_sample.hpp"
#include "families/matmul/matmul_schedule.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/printer.hpp"
#include "ir/target_dialect.hpp"
#include "oracle/reference.hpp"
#include "passes/pipeline.hpp"
#include "runtime/inputs.hpp"
#include "support/sha256.hpp"
#include "support/utc_time.hpp"

namespace tessera::arbiter {

using namespace tessera::ir;

namespace {

const char* const kForced = "forced by --candidate";

std::vector<Tensor> inputs_for(const Module& program) {
  std::vector<Tensor> xs;
  const Region& body = *program.funcs()[0]->regions[0];
  for (size_t i = 0; i < body.args.size(); ++i)
    xs.push_back(generate_input("random:seed=" + std::to_string(i + 1) + ",lo=-1,hi=1", body.args[i]->type.dtype,
                                body.args[i]->type.shape));
  return xs;
}

std::unique_ptr<Module> lower_with(const Module& program, const machine::Descriptor& device,
                                   const std::string& candidate) {
  return passes::lower(program, Layer::Target, device, {{"*", candidate}});
}

// The digest of what a candidate runs: its kernels' SHA-256s, in order.
std::string candidate_digest(const Module& target_ir) {
  std::string all;
  for (auto& op : target_ir.ops)
    if (op->name == "target.kernel") all += read_kernel_desc(*op).sha256;
  return sha256_hex(all);
}

// Each dim rounded up to a power of two (reported with the entry).
std::string bucket_of(const MatmulSpec& s) {
  auto p2 = [](int64_t v) {
    int64_t p = 1;
    while (p < v) p *= 2;
    return p;
  };
  return fmt::format("batch {} m {} n {} k {}", p2(s.batch), p2(s.m), p2(s.n), p2(s.k));
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

std::vector<Decision> arbitrate(const Module& graph, const Runner& runner, const Options& o) {
  std::vector<Decision> out;
  Ledger ledger(o.ledger_path.empty() ? Ledger::default_path() : o.ledger_path);
  // The regions lowering will see: after its Graph IR rewrites (a transposed
  // operand folded into the matmul's flag is timed as such). A forced
  // candidate keeps every matmul (choices() forces it for all: "*").
  const std::unique_ptr<Module> rewritten = clone(graph);
  passes::rewrite_graph(*rewritten, !o.forced.empty());
  for (const MatmulRegion& mr : matmul_regions(*rewritten, &runner.machine)) {
    Decision d;
    d.region = mr.id;
    auto program = region_program(mr.region);
    d.signature = one_line(print(*program));
    if (!o.forced.empty()) {
      d.candidate = o.forced;
      d.why = kForced;
      out.push_back(d);
      continue;
    }
    // Candidates, and the digest of each applicable one at this exact shape.
    struct Cand {
      families::matmul::Candidate c;
      std::unique_ptr<Module> target_ir;
      std::string digest;
    };
    std::vector<Cand> cands;
    // v2: gated on a sample of the timed run (v1 entries were gated on a proxy).
    std::string keytext = "tessera-ledger-v2\n" + runner.target + "\n" + runner.device + "\n" + runner.toolchain +
                          "\n" + d.signature + "\n";
    for (const auto& c : families::matmul::candidates(mr.region, runner.machine)) {
      Cand k{c, nullptr, ""};
      if (c.unsupported.empty()) {
        try {
          k.target_ir = lower_with(*program, runner.machine, c.name);
          k.digest = candidate_digest(*k.target_ir);
        } catch (const Error& e) {
          k.digest = std::string("failed to lower: ") + e.what();
        }
        keytext += c.name + "=" + k.digest + "\n";
      }
      cands.push_back(std::move(k));
    }
    d.key = sha256_hex(keytext);
    if (auto hit = ledger.lookup(d.key)) {
      d.candidate = hit->value("winner", "tessera");
      d.why = "tuning ledger entry " + d.key.substr(0, 12) + " (measured " + hit->value("recorded_at", "?") + ")";
      for (const auto& r : hit->value("rows", nlohmann::json::array()))
        d.rows.push_back({r.value("candidate", ""), r.value("tier", ""), r.value("status", ""), r.value("detail", ""),
                          r.value("median_ns", -1.0), r.value("worst_ratio", -1.0)});
      out.push_back(d);
      continue;
    }
    // Measure: gate every applicable candidate with the oracle, time the survivors.
    // Above the limit the gate checks a sample of the timed run's outputs
    // (region_sample.hpp: the same kernels at full size); a region whose
    // values cannot be resized consistently (region_program refuses) is gated
    // in full, and says so.
    std::unique_ptr<RegionSample> sample;
    if (region_macs(mr.region) > o.gate_limit_macs) {
      try {
        sample = std::make_unique<RegionSample>(mr.region, o.gate_limit_macs);
      } catch (const Error&) {
      }
    }
    const std::string scope = sample ? fmt::format(" (gated on {} x {} sampled outputs of the full-size run)",
                                                   sample->rows().size(), sample->cols().size())
                              : region_macs(mr.region) > o.gate_limit_macs ? " (gated in full: no sample)"
                                                                           : "";
    std::vector<Tensor> inputs = inputs_for(*program);
    std::vector<oracle::Expected> expected = sample ? oracle::evaluate(sample->program(), "", sample->inputs(inputs))
                                                    : oracle::evaluate(*program, "", inputs);
    for (Cand& k : cands) {
      Row r{k.c.name, k.c.tier, "", "", -1, -1};
      if (!k.c.unsupported.empty()) {
        r.status = "not applicable";
        r.detail = "it " + k.c.unsupported;
        d.rows.push_back(r);
        continue;
      }
      if (!k.target_ir) {
        r.status = "failed";
        r.detail = k.digest;
        d.rows.push_back(r);
        continue;
      }
      try {
        Runner::Measured m = runner.run(*k.target_ir, inputs, o.reps);
        const Tensor checked = sample ? sample->output(m.outputs.at(0)) : m.outputs.at(0);
        oracle::Comparison c = oracle::compare(expected.at(0), checked);
        r.worst_ratio = c.worst_ratio;
        r.median_ns = m.median_ns;
        r.status = c.pass ? "survivor" : "rejected";
        r.detail = fmt::format("oracle worst err/tol {:.3g}{}{}", c.worst_ratio, scope,
                               c.pass ? "" : ": beyond its accuracy budget; " + c.first_failure);
      } catch (const Error& e) {
        r.status = "failed";
        r.detail = e.what();
      }
      d.rows.push_back(r);
    }
    Row* best = nullptr;
    for (Row& r : d.rows)
      if (r.status == "survivor" && (!best || r.median_ns < best->median_ns)) best = &r;
    if (!best) fail("E770", "matmul " + mr.id + ": no candidate passed the oracle:\n" + describe(d, true));
    // Within the measurement's noise a library is no faster than a fused
    // kernel, and picking it would flip run to run: keep the fused one.
    if (best->tier == "library") {
      Row* fused = nullptr;
      for (Row& r : d.rows)
        if (r.status == "survivor" && r.tier != "library" && r.median_ns <= best->median_ns * (1 + kNoiseMargin) &&
            (!fused || r.median_ns < fused->median_ns))
          fused = &r;
      if (fused) {
        fused->detail += fmt::format("; within {:.0f}% of {}: the fused kernel is kept", kNoiseMargin * 100,
                                     best->candidate);
        best = fused;
      }
    }
    best->status = "winner";
    d.candidate = best->candidate;
    d.why = "measured now (" + runner.timing_domain + ", median of " + std::to_string(o.reps) + ")";
    nlohmann::json rows = nlohmann::json::array();
    for (const Row& r : d.rows)
      rows.push_back({{"candidate", r.candidate},
                      {"tier", r.tier},
                      {"status", r.status},
                      {"detail", r.detail},
                      {"median_ns", r.median_ns},
                      {"worst_ratio", r.worst_ratio}});
    ledger.record(d.key, {{"winner", d.candidate},
                          {"region", d.signature},
                          {"bucket", bucket_of(matmul_spec(*mr.region.core))},
                          {"target", runner.target},
                          {"device", runner.device},
                          {"toolchain", runner.toolchain},
                          {"timing_domain", runner.timing_domain},
                          {"recorded_at", utc_now_iso()},
                          {"rows", rows}});
    out.push_back(d);
  }
  return out;
}

passes::Candidates choices(const std::vector<Decision>& decisions) {
  passes::Candidates c;
  for (const Decision& d : decisions) c[d.region] = d.candidate;
  // Forced (every decision says so): for every matmul, as lowering keeps them all.
  if (!decisions.empty() && decisions[0].why == kForced) c = {{"*", decisions[0].candidate}};
  return c;
}

std::string describe(const Decision& d, bool table) {
  if (!table) {
    std::string s = fmt::format("matmul {}: candidate {}", d.region, d.candidate);
    for (const Row& r : d.rows)
      if (r.candidate == d.candidate && r.median_ns >= 0) s += fmt::format(" {:.3f} ms", r.median_ns / 1e6);
    const Row* next = nullptr;
    for (const Row& r : d.rows)
      if (r.candidate != d.candidate && r.median_ns >= 0 && (!next || r.median_ns < next->median_ns)) next = &r;
    if (next) s += fmt::format(", next {} {:.3f} ms", next->candidate, next->median_ns / 1e6);
    return s + " (" + d.why + ")\n";
  }
  std::string s = fmt::format("matmul {}: candidate {} ({})\n", d.region, d.candidate, d.why);
  for (const Row& r : d.rows) {
    const std::string t = r.median_ns >= 0 ? fmt::format("{:10.3f} ms", r.median_ns / 1e6) : std::string(13, ' ');
    s += fmt::format("  {:<11} {:<12} {:<14} {}  {}\n", r.candidate, r.tier, r.status, t, r.detail);
  }
  return s;
}

}  // namespace tessera::arbiter
