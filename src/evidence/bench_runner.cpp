#include "evidence/bench_runner.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <fmt/format.h>

#include "arbiter/arbiter.hpp"
#include "arbiter/region_program.hpp"
#include "arbiter/region_sample.hpp"
#include "evidence/ceiling.hpp"
#include "evidence/packet.hpp"
#include "evidence/program_work.hpp"
#include "evidence/provenance.hpp"
#include "evidence/sampling.hpp"
#include "families/matmul/matmul_schedule.hpp"
#include "ir/graph_dialect.hpp"
#include "ir/ir.hpp"
#include "ir/parser.hpp"
#include "ir/printer.hpp"
#include "ir/target_dialect.hpp"
#include "ir/verify.hpp"
#include "oracle/reference.hpp"
#include "oracle/run_check.hpp"
#include "oracle/sample.hpp"
#include "passes/fusion.hpp"
#include "passes/graph_to_schedule.hpp"
#include "passes/pipeline.hpp"
#include "runtime/executable.hpp"
#include "runtime/inputs.hpp"
#include "runtime/tensor.hpp"
#include "support/file_read.hpp"
#include "support/sha256.hpp"
#include "targets/device_query.hpp"
#include "targets/lane.hpp"
#include "tessera/tessera.hpp"

namespace tessera::evidence {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {

std::string read_file_or(const std::string& path, const char* code, const std::string& what) {
  std::string why;  // never a FIFO or device: it could block
  auto text = read_regular_file(path, why);
  if (!text) fail(code, "cannot read " + what + " '" + path + "': " + why);
  return *text;
}

// A "tuned" case: the arbiter measures every matmul region's candidates now,
// in a ledger of its own (a decision from another run is not this packet's
// evidence), as a plain `tessera run` would; each decision goes in the packet.
passes::Candidates arbiter_decisions(const ir::Module& graph, const targets::Lane& lane,
                                     const machine::Descriptor& machine, json& rows) {
  if (lane.arbiter_lane.empty())
    fail("E850", "candidate 'tuned': the " + lane.name + " lane has no arbiter to measure matmul candidates");
  arbiter::Runner runner = arbiter::runner(lane.arbiter_lane);
  if (lane.arbiter_lane == lane.name) runner.machine = machine;
  arbiter::Options o;
  // One ledger a case (a packet may hold several tuned cases), gone when the
  // case is measured or fails.
  static int cases = 0;
  struct TempLedger {
    fs::path path;
    ~TempLedger() {
      std::error_code ec;
      fs::remove(path, ec);
    }
  } ledger{fs::temp_directory_path() / fmt::format("tessera-bench-ledger-{}-{}.json", ::getpid(), cases++)};
  o.ledger_path = ledger.path.string();
  std::vector<arbiter::Decision> decisions = arbiter::arbitrate(graph, runner, o);
  for (const arbiter::Decision& d : decisions) {
    json measured = json::array();
    for (const arbiter::Row& r : d.rows)
      measured.push_back({{"candidate", r.candidate},
                          {"status", r.status},
                          {"median_ns", r.median_ns},
                          {"worst_ratio", r.worst_ratio},
                          {"detail", r.detail}});
    rows.push_back({{"region", d.region},
                    {"signature", d.signature},
                    {"candidate", d.candidate},
                    {"why", d.why},
                    {"rows", measured}});
  }
  return arbiter::choices(decisions);
}

// A kernel of the measured program: its symbol, digest and what ran it
// ("tessera", or the library of a library candidate with its version).
json kernel_row(const std::string& sym, const std::string& sha, const std::vector<runtime::LaunchRecord>& launches) {
  json k = {{"sym", sym}, {"sha256", sha}};
  for (const auto& l : launches)
    if (l.kernel == sym) {
      k["implementation"] = l.implementation;
      break;
    }
  return k;
}

double ns_since(Clock::time_point t0) { return std::chrono::duration<double, std::nano>(Clock::now() - t0).count(); }

// The Graph IR and input specs of one case.
struct CaseProgram {
  std::unique_ptr<ir::Module> graph;
  std::vector<std::string> input_specs;  // in func-argument order
};

CaseProgram case_program(const json& c, const std::string& root) {
  CaseProgram p;
  const std::string name = c.value("name", "?");
  if (c.contains("program")) {
    std::string path = (fs::path(root) / c["program"].get<std::string>()).string();
    p.graph = ir::parse(read_file_or(path, "E852", "program"), path);
    const json inputs = c.value("inputs", json::object());
    const ir::Op* f = p.graph->funcs().empty() ? nullptr : p.graph->funcs()[0];
    if (!f) fail("E852", "case " + name + ": the program has no func");
    for (auto& a : f->regions[0]->args) {
      if (!inputs.contains(a->name)) fail("E850", "case " + name + ": no input spec for %" + a->name);
      p.input_specs.push_back(inputs[a->name].get<std::string>());
    }
    return p;
  }
  for (const char* key : {"kind", "shape", "dtype"})
    if (!c.contains(key)) fail("E850", "case " + name + " needs '" + key + "' (or a 'program')");
  auto dt = parse_dtype(c["dtype"].get<std::string>());
  if (!dt) fail("E850", "case " + name + ": unknown dtype " + c["dtype"].dump());
  GraphBuilder g("bench");
  ir::Value* x = g.input("x", ir::Type::tensor(*dt, c["shape"].get<std::vector<int64_t>>()));
  std::vector<int64_t> axes = c.value("axes", std::vector<int64_t>{});
  g.output(c.contains("axes") ? g.reduce(x, c["kind"], axes, c.value("keepdims", false))
                              : g.reduce_all(x, c["kind"], c.value("keepdims", false)));
  p.graph = ir::clone(g.module());
  p.input_specs.push_back(c.value("input", "random:seed=7"));
  return p;
}

json schedule_summary(const ir::Module& schedule) {
  json passes = json::array();
  for (ir::Op* f : schedule.funcs())
    for (auto& op : f->regions[0]->ops) {
      if (op->name == "return") continue;
      json p;
      p["op"] = op->name;
      for (const char* k : {"family", "strategy", "threads", "vector_width", "unroll", "chunks", "chunk", "programs",
                            "accumulator", "resident"})
        if (const ir::Attr* a = op->attr(k))
          p[k] = a->as_int() ? json(*a->as_int()) : a->as_bool() ? json(*a->as_bool()) : json(*a->as_string());
      if (!op->regions.empty()) {  // what was fused into this kernel
        json fused = json::array();
        for (auto& inner : op->regions[0]->ops)
          if (inner->name != "schedule.yield") fused.push_back(inner->name);
        p["fused_ops"] = fused;
      }
      p["artifact_hash"] = *op->attr("artifact_hash")->as_string();
      passes.push_back(p);
    }
  return passes;
}

// Whether a program has an op `name` (with a tessera.matmul, its cases may name a candidate).
bool has_op(const ir::Module& graph, const std::string& name) {
  for (ir::Op* f : graph.funcs())
    for (auto& op : f->regions[0]->ops)
      if (op->name == name) return true;
  return false;
}

// The sampled oracle check of a program that is one matmul region (with its
// fused epilogue), as the arbiter gates big matmuls (arbiter/region_sample.hpp):
// the region and its arguments' positions among the program's.
struct SampledRegion {
  std::unique_ptr<arbiter::RegionSample> sample;
  std::vector<size_t> arg_of_leaf;
};

SampledRegion sampled_region(const CaseProgram& p, const std::string& name, double max_macs) {
  const ir::Op& f = *p.graph->funcs()[0];
  const std::vector<families::fused::FusedRegion> regions = passes::partition(f);
  size_t body_ops = 0;
  const ir::Value* returned = nullptr;
  for (auto& op : f.regions[0]->ops) {
    if (op->name == "return") {
      if (op->operands.size() == 1) returned = op->operands[0];
    } else {
      ++body_ops;
    }
  }
  if (regions.size() != 1 || regions[0].kind != families::fused::FusedRegion::Kind::Matmul ||
      regions[0].ops.size() != body_ops || regions[0].result != returned)
    fail("E850", "case " + name +
                     ": too big for the full oracle, and the sampled oracle needs a program that is "
                     "one matmul region (a matmul and its fused epilogue, one result); raise oracle_full_limit_macs or "
                     "split the program");
  SampledRegion out;
  out.sample = std::make_unique<arbiter::RegionSample>(regions[0], max_macs);
  for (const ir::Value* leaf : regions[0].leaves) {
    size_t i = 0;
    while (i < f.regions[0]->args.size() && f.regions[0]->args[i].get() != leaf) ++i;
    if (i == f.regions[0]->args.size())
      fail("E850", "case " + name + ": the region reads %" + leaf->name + ", which is not an argument of the program");
    out.arg_of_leaf.push_back(i);
  }
  return out;
}

}  // namespace

json run_bench(const BenchOptions& o) {
  const std::string root = source_root();
  const std::string spec_text = read_file_or(o.spec_path, "E850", "bench spec");
  json spec;
  try {
    spec = json::parse(spec_text);
  } catch (const std::exception& e) {
    fail("E850", "bench spec '" + o.spec_path + "' is not valid JSON: " + e.what());
  }
  if (!spec.is_object() || !spec.contains("cases") || !spec["cases"].is_array() || spec["cases"].empty())
    fail("E850", "bench spec '" + o.spec_path + "' needs a non-empty \"cases\" list");
  const targets::Lane& lane = targets::native(o.target);  // E721 unless it runs natively here
  const machine::Descriptor machine = targets::describe_target(o.target);
  const SamplingPlan plan = SamplingPlan::from_json(spec.value("sampling", json::object()));
  json anchors = json::object();
  if (!o.anchors_path.empty()) {
    try {
      anchors = json::parse(read_file_or(o.anchors_path, "E850", "anchors file"));
    } catch (const json::exception& e) {
      fail("E850", "anchors file '" + o.anchors_path + "' is not valid JSON: " + e.what());
    }
  }

  json packet;
  packet["format"] = kPacketFormat;
  packet["spec"] = {{"name", spec.value("name", "")}, {"path", o.spec_path}, {"sha256", sha256_hex(spec_text)}};
  packet["target"] = o.target;
  packet["device_descriptor"] = machine.str();  // what every case was compiled for
  packet["date"] = utc_now_iso();
  packet["environment"] = environment(o.target);
  packet["sampling_requested"] = plan.to_json();
  packet["timing_domains"] = {
      {"device_event", "GPU events around the program's kernels (sum over kernels)"},
      {"kernel_wall", "host clock around the native submit only (CPU: the kernels; GPU: the enqueue)"},
      {"device_span",
       "GPU events around one launch of the whole run as one CUDA graph, gaps included (several kernels only)"},
      {"end_to_end",
       "host clock around the whole run call (GPU: launch + synchronize, inputs resident; several kernels: the "
       "graph launch)"}};

  // The ceiling the cases are judged against, measured in this process.
  Tensor ceiling_buffer;
  auto ceiling_gbs = [&]() -> double {
    if (lane.device_copy_gbs) return lane.device_copy_gbs(size_t{1} << 30);
    if (!ceiling_buffer.valid()) ceiling_buffer = generate_input("const:1", DType::F32, {int64_t{1} << 26});
    std::vector<double> secs;
    for (int i = 0; i < 5; ++i)
      secs.push_back(
          cpu_read_ceiling_seconds(static_cast<const float*>(ceiling_buffer.data()), ceiling_buffer.numel()));
    std::sort(secs.begin(), secs.end());
    return static_cast<double>(ceiling_buffer.nbytes()) / secs[2] / 1e9;
  };
  json cases = json::array();
  bool all_pass = true;
  for (const json& c : spec["cases"]) {
    const std::string name = c.value("name", "case" + std::to_string(cases.size()));
    if (!o.only.empty() && name != o.only) continue;
    CaseProgram prog = case_program(c, root);
    // Matmul cases name the candidate that implements their matmuls (forced,
    // as `--candidate` does; the arbiter does not measure here), or
    // "default": the planner's choice per region without measuring, what
    // `tessera run --no-tune` gets (it may make a matrix-vector product a
    // reduction), or "tuned": what a plain `tessera run` gets, the arbiter's
    // pick per region, measured now (arbiter_decisions below).
    const bool matmul = has_op(*prog.graph, "tessera.matmul");
    const std::string candidate = c.value("candidate", "tessera");
    if (c.contains("candidate") && !matmul)
      fail("E850", "case " + name + ": 'candidate' applies to matmul programs only");
    if (candidate != "default" && candidate != "tuned" && candidate != "openblas" && candidate != "cublaslt" &&
        !families::matmul::is_synthesized(candidate))
      fail("E850", "case " + name + ": unknown candidate '" + candidate + "' (default, tuned, " +
                       families::matmul::candidate_names() + ")");
    json arbiter_rows = json::array();
    passes::Candidates chosen;
    if (matmul && candidate == "tuned") chosen = arbiter_decisions(*prog.graph, lane, machine, arbiter_rows);
    else if (matmul && candidate != "default") chosen = {{"*", candidate}};
    auto schedule = passes::lower(*prog.graph, ir::Layer::Schedule, machine, chosen);
    auto target_ir = passes::lower(*schedule, ir::Layer::Target, machine, chosen);
    const ir::Op* f = prog.graph->funcs()[0];
    std::vector<Tensor> inputs;
    double bytes = 0;
    for (size_t i = 0; i < prog.input_specs.size(); ++i) {
      const ir::Type& t = f->regions[0]->args[i]->type;
      inputs.push_back(generate_input(prog.input_specs[i], t.dtype, t.shape));
      bytes += static_cast<double>(inputs.back().nbytes());
    }
    for (const ir::Type& t : ir::func_result_types(*f)) bytes += static_cast<double>(t.numel() * dtype_size(t.dtype));

    json row;
    row["name"] = name;
    std::string families;  // of the schedule ops, in order: "rowwise", "pointwise+reduce", ...
    for (ir::Op* sf : schedule->funcs())
      for (auto& op : sf->regions[0]->ops)
        if (const ir::Attr* fam = op->attr("family"))
          if (families.find(*fam->as_string()) == std::string::npos)
            families += (families.empty() ? "" : "+") + *fam->as_string();
    row["family"] = families;
    row["program"] = ir::print(*prog.graph);
    row["inputs"] = prog.input_specs;
    row["schedule"] = schedule_summary(*schedule);
    row["bytes_moved"] = bytes;
    const ProgramFlops work = program_flops(*prog.graph);
    if (matmul) row["candidate"] = candidate;
    if (!arbiter_rows.empty()) row["arbiter"] = arbiter_rows;
    if (work.counted) row["flops"] = work.flops;

    std::vector<Tensor> outputs;
    json kernels = json::array();
    Sampled sampled;
    std::string placement;
    const std::unique_ptr<runtime::Executable> exe = lane.load(*target_ir, "");
    runtime::RunResult first = exe->run(inputs);
    for (auto& k : exe->kernels()) kernels.push_back(kernel_row(k.sym, k.sha256, first.launches));
    outputs = first.outputs;
    placement = first.launches.empty() ? "none" : first.launches[0].placement;
    const bool several_kernels = first.launches.size() > 1;
    // Inputs bound once (resident on a device); each sample one clocked launch (two for several kernels on a
    // device: below).
    std::unique_ptr<runtime::Binding> binding = exe->bind(inputs);
    // cold_l2: every sample's inputs come from device memory, not from the
    // cache the previous sample left them in (a working set the L2 holds).
    const bool cold = c.value("cold_l2", false);
    if (cold && !lane.evict_cache) fail("E850", "bench case '" + name + "': cold_l2 needs a lane with a device cache");
    if (cold)
      row["cache"] = "cold: the L2 written over, on the launch's stream, before every launch (end_to_end includes it)";
    sampled = sample(
        [&] {
          if (cold) lane.evict_cache(*exe);
          auto t0 = Clock::now();
          exe->launch(*binding, runtime::Timing::each_kernel);
          auto recs = exe->finish(*binding);
          double e2e = ns_since(t0), dev_ns = 0, wall = 0;
          for (auto& l : recs) {
            dev_ns += std::max(0.0, l.device_event_ns);
            wall += std::max(0.0, l.kernel_wall_ns);
          }
          std::map<std::string, double> times{{"kernel_wall", wall}, {"end_to_end", e2e}};
          if (lane.device_clock) times["device_event"] = dev_ns;
          // Several kernels: kernel by kernel, one shorter than a host launch
          // waits for the next launch inside its events. So the run is also
          // launched as it normally goes (one CUDA graph) and clocked whole,
          // the gaps between kernels included (an anchor timed around a
          // whole call has them too); end_to_end is then that launch's.
          if (lane.device_clock && several_kernels) {
            if (cold) lane.evict_cache(*exe);
            t0 = Clock::now();
            exe->launch(*binding, runtime::Timing::whole_run);
            recs = exe->finish(*binding);
            times["end_to_end"] = ns_since(t0);
            if (!recs.empty() && recs[0].device_span_ns >= 0) times["device_span"] = recs[0].device_span_ns;
          }
          return times;
        },
        plan);
    if (!lane.device_clock) row["absent_domains"] = {{"device_event", "the CPU target has no device clock"}};
    row["placement"] = placement;
    row["kernels"] = kernels;

    // The oracle check of the measured program: no number for wrong code.
    // The oracle's double loops cannot do a big matmul (8192^3: hours), so
    // above the limit a spread sample of the measured run's outputs is
    // checked (rows of M, columns of N, every batch: the same kernels at full
    // size), as the arbiter gates, and the row says so.
    const double full_limit = c.value("oracle_full_limit_macs", spec.value("oracle_full_limit_macs", double(1 << 27)));
    std::vector<oracle::Expected> expected;
    std::vector<Tensor> checked;
    // (the region cut is for a program that is one matmul region; others are sampled by output elements)
    if (matmul && work.flops / 2 > full_limit && !has_op(*prog.graph, "tessera.attention")) {
      SampledRegion sr = sampled_region(prog, name, full_limit);
      std::vector<Tensor> full;
      for (size_t i : sr.arg_of_leaf) full.push_back(inputs.at(i));
      row["oracle_scope"] = fmt::format("sampled {}x{} outputs of the measured run (every batch; same kernels)",
                                        sr.sample->rows().size(), sr.sample->cols().size());
      row["oracle_sample"] = {{"program", ir::print(sr.sample->program())},
                              {"rows", sr.sample->rows()},
                              {"cols", sr.sample->cols()},
                              {"full_limit_macs", full_limit}};
      expected = oracle::evaluate(sr.sample->program(), "", sr.sample->inputs(full));
      checked = {sr.sample->output(outputs.at(0))};
    } else if (work.flops / 2 > full_limit) {
      // Attention: a spread sample of each output's elements; the oracle
      // evaluates only what they read (their rows against every key).
      std::vector<std::vector<uint8_t>> sample;
      int64_t picked = 0;
      for (const ir::Type& t : ir::func_result_types(*f)) {
        sample.push_back(oracle::sample_elements(t.shape, 64, 64));
        picked += std::count(sample.back().begin(), sample.back().end(), uint8_t{1});
      }
      row["oracle_scope"] = picked == 0
                                ? std::string("full")  // small outputs: sample_elements takes them whole
                                : fmt::format("sampled {} output elements of the measured run (same kernels)", picked);
      expected = oracle::evaluate(*prog.graph, "", inputs, &sample);
      checked = outputs;
    } else {
      row["oracle_scope"] = "full";
      expected = oracle::evaluate(*prog.graph, "", inputs);
      checked = outputs;
    }
    json checks = json::array();
    for (size_t i = 0; i < expected.size(); ++i) {
      oracle::Comparison cmp = oracle::compare(expected[i], checked.at(i));
      checks.push_back({{"compared", cmp.compared},
                        {"max_abs_err", cmp.max_abs_err},
                        {"tolerance", cmp.tol_at_worst},
                        {"worst_ratio", cmp.worst_ratio},
                        {"unbounded", cmp.unbounded},
                        {"pass", cmp.pass}});
      all_pass = all_pass && cmp.pass;
    }
    row["oracle"] = checks;
    // A program of several kernels: each kernel also against the oracle of
    // its own region, on the values it received (oracle/kernel_check.hpp).
    // The end-to-end bounds compound through a deep graph (four matmuls in a
    // row: loose enough to hide a dropped residual); each kernel's own does not.
    if (several_kernels) {
      const runtime::RunResult kept = exe->run(inputs, nullptr, true);
      const oracle::RunCheck report = oracle::check_run(*prog.graph, exe->schedule(), kept.values);
      json per = json::array();
      for (const oracle::CheckedValue& v : report.values)
        per.push_back({{"what", v.what},
                       {"elements", v.elements},
                       {"compared", v.comparison.compared},
                       {"max_abs_err", v.comparison.max_abs_err},
                       {"tolerance", v.comparison.tol_at_worst},
                       {"worst_ratio", v.comparison.worst_ratio},
                       {"unbounded", v.comparison.unbounded},
                       {"pass", v.comparison.pass}});
      row["kernel_checks"] = per;
      row["oracle_scope"] = row["oracle_scope"].get<std::string>() +
                            fmt::format("; each of {} kernels on its own inputs", report.kernels);
      all_pass = all_pass && report.ok;
    }

    json domains;
    for (auto& [d, st] : sampled.domains) domains[d] = st.to_json();
    row["domains"] = domains;
    row["sampling_used"] = sampled.used.to_json();
    row["sampling_raised"] = sampled.raised;
    const std::string primary = sampled.domains.count("device_span") ? "device_span" : lane.primary_timing_domain();
    row["primary_domain"] = primary;
    row["achieved_gbs"] = bytes / sampled.domains.at(primary).median_ns;
    if (work.counted) row["achieved_tflops"] = work.flops / sampled.domains.at(primary).median_ns / 1e3;
    row["stable"] = sampled.domains.at(primary).stable;

    // The ceiling right after the case, so drift in the machine moves both.
    row["ceiling_gbs"] = ceiling_gbs();

    json rows = json::array();
    if (anchors.contains("rows") && anchors["rows"].contains(name))
      for (json a : anchors["rows"][name]) {
        a["ratio_anchor_over_tessera"] = a.value("median_ns", 0.0) / sampled.domains.at(primary).median_ns;
        rows.push_back(a);
      }
    row["anchors"] = rows;
    cases.push_back(row);
  }
  if (cases.empty()) fail("E850", "no case named '" + o.only + "' in " + o.spec_path);
  packet["cases"] = cases;
  if (anchors.contains("tools")) packet["anchor_tools"] = anchors["tools"];

  packet["ceiling"] = {{"kind", lane.device_copy_gbs ? "device-to-device copy of 1 GiB, read + write, per case"
                                                     : "read of 256 MiB (STREAM-like, every core), per case"}};
  packet["all_checks_pass"] = all_pass;
  if (!all_pass) fail("E854", "a case failed its oracle check: no packet is written for wrong results");
  stamp_source(packet, root, {o.allow_dirty, o.expect_commit, o.expect_fingerprint});
  seal(packet);
  return packet;
}

}  // namespace tessera::evidence
