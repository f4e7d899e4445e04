#include "oracle/run_check.hpp"

#include <fmt/core.h>

#include <chrono>
#include <map>

#include "oracle/kernel_check.hpp"
#include "oracle/sample.hpp"

namespace tessera::oracle {

namespace {

std::string kernel_list(const std::vector<std::string>& kernels) {
  std::string s;
  for (const std::string& k : kernels) s += (s.empty() ? "@" : "+@") + k;
  return s;
}

}  // namespace

std::string CheckedValue::describe() const {
  const Comparison& c = comparison;
  std::string out = fmt::format(
      "check {}  max_abs_err={:.3g}  tol={:.3g}  worst_ratio={:.3g}  {}{}\n", what, c.max_abs_err, c.tol_at_worst,
      c.worst_ratio, c.pass ? "PASS" : "FAIL",
      c.compared == elements ? "" : fmt::format("  (sampled {} of {})", c.compared, elements));
  if (!c.pass)
    out += fmt::format("  {} of {} compared elements out of tolerance; first: {}\n", c.failures, c.compared,
                       c.first_failure);
  return out;
}

std::string RunCheck::summary() const {
  if (!ok) return "check FAILED: " + first_failure + "\n";
  return fmt::format("check: {} kernels and {} results within tolerance ({:.2f} s)\n", kernels, results, seconds);
}

RunCheck check_run(const ir::Module& graph, const runtime::HostSchedule& h, const std::vector<Tensor>& values) {
  const auto t0 = std::chrono::steady_clock::now();
  RunCheck report;
  auto add = [&](std::string what, int64_t elements, Comparison c, const std::string& failure) {
    if (!c.pass && report.ok) {
      report.ok = false;
      report.first_failure = failure;
    }
    report.values.push_back({std::move(what), elements, std::move(c)});
  };
  std::vector<LaunchValues> launches;
  for (const runtime::HostSchedule::Step& s : h.steps) {
    LaunchValues l;
    l.kernel = h.kernels[s.kernel].sym;
    for (size_t b = 0; b < s.buffers.size(); ++b)
      (b < s.inputs ? l.inputs : l.outputs).push_back(h.slot_names[s.buffers[b]]);
    launches.push_back(std::move(l));
  }
  std::map<std::string, Tensor> by_name;
  for (size_t i = 0; i < values.size(); ++i) by_name.emplace(h.slot_names[i], values[i]);
  for (KernelCheck& k : check_kernels(graph, h.func, launches, by_name, kCheckRows, kCheckCols))
    add("kernel " + kernel_list(k.kernels) + " -> %" + k.value, k.elements, std::move(k.comparison),
        "kernel " + kernel_list(k.kernels) + " (computing %" + k.value + ")");
  std::vector<std::vector<uint8_t>> sample;
  for (const ir::Type& t : h.output_types) sample.push_back(sample_elements(t.shape, kCheckRows, kCheckCols));
  const std::vector<Tensor> inputs(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(h.input_types.size()));
  const std::vector<Expected> expected = evaluate(graph, h.func, inputs, &sample);
  for (size_t i = 0; i < h.result_slots.size(); ++i) {
    const Tensor& got = values[h.result_slots[i]];
    add("%" + h.output_names[i] + " end to end", got.numel(), compare(expected[i], got),
        "%" + h.output_names[i] + " end to end");
  }
  report.kernels = h.steps.size();
  report.results = h.result_slots.size();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace tessera::oracle
