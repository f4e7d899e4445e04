// `tessera run`: lower, load (digests verified once), run natively, report
// placement/digest/time per launch, and with --check compare to the oracle.
#include "cli_run.hpp"

#include "cli_device.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <memory>

#include "arbiter/arbiter.hpp"
#include "arbiter/region_program.hpp"
#include "ir/parser.hpp"
#include "ir/verify.hpp"
#include "oracle/reference.hpp"
#include "passes/pipeline.hpp"
#include "runtime/executable.hpp"
#include "runtime/inputs.hpp"
#include "runtime/npy.hpp"
#include "targets/device_query.hpp"
#include "targets/lane.hpp"

namespace tessera::cli {

namespace {

std::map<std::string, std::string> parse_bindings(const std::vector<std::string>& xs, const char* what) {
  std::map<std::string, std::string> out;
  for (const std::string& x : xs) {
    auto eq = x.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == x.size())
      fail("E122", std::string("--") + what + " takes NAME=VALUE, got '" + x + "'");
    std::string name = x.substr(0, eq);
    if (name[0] == '%') name = name.substr(1);
    if (!out.emplace(name, x.substr(eq + 1)).second)
      fail("E122", std::string("--") + what + " " + name + " given twice");
  }
  return out;
}

bool is_generator(const std::string& spec) {
  static const char* prefixes[] = {"random:", "special:", "const:"};
  if (spec == "nan" || spec == "inf" || spec == "-inf" || spec == "iota") return true;
  for (const char* p : prefixes)
    if (spec.rfind(p, 0) == 0) return true;
  return false;
}

std::string shape_str(const ir::Type& t) { return t.str(); }

std::vector<std::string> lane_names() {
  std::vector<std::string> names;
  for (const targets::Lane* l : targets::lanes()) names.push_back(l->name);
  return names;
}

}  // namespace

void add_run_options(CLI::App& run, RunOptions& o) {
  run.add_option("file", o.file, "program (.tsr) or lowered IR")->required();
  run.add_option("--target", o.target, "cpu | cuda (metal only with --emulate; hip: see README)")
      ->check(CLI::IsMember(lane_names()));
  run.add_option("--device", o.device, device_help());
  run.add_option("--func", o.func, "func to run (default: the first)");
  run.add_option("--input", o.inputs,
                 "NAME=file.npy or NAME=random:seed=N | special:seed=N | const:V | iota | nan | inf");
  run.add_option("--output", o.outputs, "NAME=file.npy: write a result");
  run.add_flag("--check", o.check, "compare every result with the oracle");
  run.add_flag("--reference", o.reference, "run the oracle instead of kernels (labelled as such)");
  run.add_option("--candidate", o.candidate,
                 "implement every matmul with this candidate (tessera, tessera_tma, openblas, cublaslt)");
  run.add_flag("--no-tune", o.no_tune, "matmuls: run the synthesized candidate without consulting the arbiter");
  run.add_flag("--emulate", o.emulate,
               "--target metal: run the MSL kernels on the CPU under the host emulation (placement emulated_msl)");
  run.add_option("--repeat", o.repeat, "launch N times; times are the median")->check(CLI::Range(1, 100000));
}

int run_cmd(const RunOptions& o) {
  // E723/E720/E722/E721 where the lane does not run as asked; nothing runs instead.
  const targets::Lane& lane = targets::runnable(o.target, o.emulate);
  auto m = ir::parse_file(o.file);
  const machine::Descriptor machine = targets::describe_target(o.target, o.device);
  const bool graph = ir::detect_layer(*m) == ir::Layer::Graph;
  if ((o.check || o.reference) && !graph)
    fail("E124", "--check and --reference need the program as Graph IR (the oracle reads what the user meant)");
  // Matmuls: the arbiter's pick (the tuning ledger, or measured now), a forced
  // candidate, or with --no-tune the synthesized kernel; each says why.
  passes::Candidates candidates;
  if (graph && !arbiter::matmul_regions(*m).empty()) {
    if (o.no_tune && o.candidate.empty()) {
      fmt::print("matmul: candidate tessera (--no-tune: not measured against the libraries)\n");
    } else {
      arbiter::Options ao;
      ao.forced = o.candidate;
      arbiter::Runner runner = arbiter::runner(lane.arbiter_lane);
      if (lane.arbiter_lane == lane.name) runner.machine = machine;  // it measures the kernels this run loads
      auto decisions = arbiter::arbitrate(*m, runner, ao);
      for (const auto& d : decisions) fmt::print("{}", arbiter::describe(d));
      candidates = arbiter::choices(decisions);
    }
  } else if (!o.candidate.empty()) {
    fail("E304", "--candidate applies to matmuls, and the program has none");
  }
  auto target_ir = passes::lower(*m, ir::Layer::Target, machine, candidates);
  // Exactly one lane runs; none can stand in for another.
  const std::unique_ptr<runtime::Executable> exe = lane.load(*target_ir, o.func);
  const runtime::HostSchedule& h = exe->schedule();

  auto bound = parse_bindings(o.inputs, "input");
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < h.input_names.size(); ++i) {
    const std::string& name = h.input_names[i];
    const ir::Type& t = h.input_types[i];
    auto it = bound.find(name);
    if (it == bound.end())
      fail("E123", "no --input for %" + name + " (" + shape_str(t) + "); e.g. --input " + name + "=random:seed=1");
    inputs.push_back(is_generator(it->second) ? generate_input(it->second, t.dtype, t.shape)
                                              : read_npy(it->second, t.dtype, t.shape));
    bound.erase(it);
  }
  if (!bound.empty()) fail("E123", "@" + h.func + " has no input named %" + bound.begin()->first);
  auto wanted = parse_bindings(o.outputs, "output");
  for (auto& [name, _] : wanted)
    if (std::find(h.output_names.begin(), h.output_names.end(), name) == h.output_names.end())
      fail("E123", "@" + h.func + " has no result named %" + name);

  fmt::print("{}\n", lane.banner(h.func));
  std::vector<Tensor> outputs;
  std::vector<oracle::Expected> expected;
  if (o.check || o.reference) expected = oracle::evaluate(*m, h.func, inputs);
  if (o.reference) {
    for (auto& e : expected) outputs.push_back(oracle::to_tensor(e));
    fmt::print(
        "placement=reference: results come from the oracle (plain loops, double accumulation), not from "
        "kernels\n");
  } else {
    std::vector<std::vector<runtime::LaunchRecord>> runs;
    runtime::RunResult r;
    for (int i = 0; i < o.repeat; ++i) {
      r = exe->run(inputs);
      runs.push_back(r.launches);
    }
    auto median = [&](size_t l, auto field) {
      std::vector<double> xs;
      for (auto& run : runs) xs.push_back(run[l].*field);
      std::sort(xs.begin(), xs.end());
      return xs[xs.size() / 2];
    };
    const std::string of = o.repeat > 1 ? fmt::format(" (median of {})", o.repeat) : "";
    for (size_t l = 0; l < r.launches.size(); ++l) {
      const auto& rec = r.launches[l];
      std::string times = lane.device_clock ? fmt::format("device_event={:.2f} us  enqueue={:.2f} us{}",
                                                          median(l, &runtime::LaunchRecord::device_event_ns) / 1e3,
                                                          median(l, &runtime::LaunchRecord::kernel_wall_ns) / 1e3, of)
                                            : fmt::format("kernel_wall={:.3f} ms{}",
                                                          median(l, &runtime::LaunchRecord::kernel_wall_ns) / 1e6, of);
      fmt::print("kernel @{}  placement={}  sha256={}  grid={}  {}{}\n", rec.kernel, rec.placement, rec.sha256,
                 rec.programs, times, rec.implementation == "tessera" ? "" : "  library=" + rec.implementation);
    }
    outputs = r.outputs;
  }
  bool ok = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = h.output_names[i];
    if (o.check && !o.reference) {
      oracle::Comparison c = oracle::compare(expected[i], outputs[i]);
      fmt::print("check %{}  max_abs_err={:.3g}  tol={:.3g}  worst_ratio={:.3g}  {}\n", name, c.max_abs_err,
                 c.tol_at_worst, c.worst_ratio, c.pass ? "PASS" : "FAIL");
      if (!c.pass)
        fmt::print("  {} of {} elements out of tolerance; first: {}\n", c.failures, outputs[i].numel(),
                   c.first_failure);
      ok = ok && c.pass;
    }
    if (auto it = wanted.find(name); it != wanted.end()) {
      write_npy(it->second, outputs[i]);
      fmt::print("wrote %{} {} -> {}\n", name, outputs[i].type_string(), it->second);
    }
  }
  return ok ? 0 : 3;
}

}  // namespace tessera::cli
