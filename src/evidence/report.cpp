#include "evidence/report.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "evidence/packet.hpp"
#include "support/diagnostic.hpp"
#include "targets/lane.hpp"

namespace tessera::evidence {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct Row {
  std::string packet, target, device, name, verdict, anchors;
  double gbs = 0, ceiling = 0, tflops = -1;  // tflops: matmul programs only
  bool stable = false;
  bool gpu = false;  // measured on a GPU lane (its packets name the GPU)
  std::string oracle;
};

// Whether a packet's device is a GPU (a GPU lane's environment names it) or the host CPU (also for a lane this
// build does not know).
bool on_gpu(const std::string& target) {
  const targets::Lane* lane = targets::find(target);
  return lane && lane->execution == targets::Execution::kNativeGpu;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return o;
}

}  // namespace

int write_report(const std::string& dir, const std::string& root) {
  std::vector<std::string> paths;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  std::vector<Row> rows;
  int packets = 0;
  for (const std::string& path : paths) {
    json p;
    try {
      std::ifstream in(path);
      p = json::parse(in);
    } catch (...) {
      continue;
    }
    if (!p.is_object() || p.value("format", "") != kPacketFormat) continue;
    ++packets;
    Verification v = verify_packet(path, root);
    const json& env = p["environment"];
    const bool gpu = on_gpu(p.value("target", std::string()));
    std::string device = gpu ? env["gpu"].value("name", "?") : env["cpu"].value("model", "?");
    for (const json& c : p["cases"]) {
      Row r;
      r.packet = fs::relative(path, dir).string();
      r.target = p["target"];
      r.gpu = gpu;
      r.device = device;
      r.name = c["name"];
      r.verdict = verdict_name(v.verdict);
      r.gbs = c.value("achieved_gbs", 0.0);
      r.tflops = c.value("achieved_tflops", -1.0);
      if (c.contains("candidate") && c["candidate"] != "tessera") r.name += " [" + c["candidate"].get<std::string>() + "]";
      r.ceiling = c.value("ceiling_gbs", p["ceiling"].value("gbs", 0.0));
      r.stable = c.value("stable", false);
      // The tolerance is per element (it scales with each reference value), so
      // the figure that says how close to failing a run came is the worst
      // ratio err/tol over elements; the largest absolute error (often at
      // another element, under a larger tolerance) is shown beside it.
      double err = 0, ratio = 0;
      bool pass = true;
      for (const json& o : c["oracle"]) {
        err = std::max(err, o.value("max_abs_err", 0.0));
        ratio = std::max(ratio, o.value("worst_ratio", 0.0));
        pass = pass && o.value("pass", false);
      }
      r.oracle = fmt::format("{:.2g} (max err {:.2g}){}", ratio, err, pass ? "" : " FAIL");
      const std::string scope = c.value("oracle_scope", "full");
      if (scope.rfind("proxy", 0) == 0) r.oracle += " (proxy M,N<=256)";  // packets before the sampled check
      if (scope.rfind("sampled", 0) == 0) r.oracle += " (sampled " + scope.substr(8, scope.find(' ', 8) - 8) + ")";
      for (const json& a : c["anchors"])
        r.anchors += fmt::format("{}{}: {:.2f}x", r.anchors.empty() ? "" : ", ", a.value("anchor", "?"),
                                 a.value("ratio_anchor_over_tessera", 0.0));
      rows.push_back(r);
    }
  }
  if (packets == 0) fail("E856", "no evidence packets under '" + dir + "'");

  std::ostringstream md;
  md << "# Evidence report\n\nRendered by `tessera evidence report` from " << packets
     << " packet(s). GB/s counts bytes read and written once, over the median of the packet's primary timing "
        "domain (device_event on CUDA, kernel_wall on the CPU). \"vs anchor\" is anchor time / Tessera time "
        "(above 1: Tessera is faster). TFLOP/s (matmul programs) counts 2*batch*m*n*k over the same median; a "
        "[candidate] after a case name is a library candidate run through Tessera's runtime; an oracle marked "
        "(sampled RxC) checked R rows by C columns of the measured run's output (every batch) against the oracle "
        "of the same region cut to those rows and columns, the full size being beyond the oracle (older packets: "
        "(proxy M,N<=256), the same candidate lowered again at M, N <= 256). \"oracle worst err/tol\" is the largest ratio of an element's error to "
        "that element's tolerance (1 or more fails), with the largest absolute error beside it. A stale packet "
        "measured sources that have changed since.\n\n"
     << "| packet | target | device | case | GB/s | ceiling GB/s | of ceiling | TFLOP/s | vs anchors | stable "
        "| oracle worst err/tol | status |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows)
    md << fmt::format("| {} | {} | {} | {} | {:.1f} | {:.1f} | {:.0f}% | {} | {} | {} | {} | {} |\n", r.packet,
                      r.target, r.device, r.name, r.gbs, r.ceiling, r.ceiling > 0 ? 100 * r.gbs / r.ceiling : 0.0,
                      r.tflops >= 0 ? fmt::format("{:.2f}", r.tflops) : "-", r.anchors.empty() ? "-" : r.anchors,
                      r.stable ? "yes" : "no", r.oracle, r.verdict);
  md << "\n![achieved bandwidth against the ceiling](report.svg)\n";
  std::ofstream(fs::path(dir) / "report.md") << md.str();

  // Horizontal bars: achieved GB/s, with the run's ceiling as a tick.
  const int bar_h = 18, gap = 6, left = 330, width = 460, top = 40;
  double max_v = 1;
  for (const Row& r : rows) max_v = std::max({max_v, r.gbs, r.ceiling});
  const int height = top + static_cast<int>(rows.size()) * (bar_h + gap) + 30;
  std::ostringstream svg;
  svg << fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
                     "font-size=\"11\">\n",
                     left + width + 90, height);
  svg << "<text x=\"10\" y=\"20\" font-size=\"14\">Achieved GB/s (bar) against the ceiling measured in the same run "
         "(tick)</text>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const int y = top + static_cast<int>(i) * (bar_h + gap);
    const double w = r.gbs / max_v * width, c = r.ceiling / max_v * width;
    const char* color = r.verdict == "fresh" ? (r.gpu ? "#4c72b0" : "#55a868") : "#bbbbbb";
    svg << fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 6, y + 13,
                       xml_escape(r.target + " " + r.name));
    svg << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>\n", left, y, w, bar_h,
                       color);
    if (r.ceiling > 0)
      svg << fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"black\" stroke-width=\"2\"/>\n",
                         left + c, y - 2, left + c, y + bar_h + 2);
    svg << fmt::format("<text x=\"{:.1f}\" y=\"{}\">{:.0f}{}</text>\n", left + std::max(w, c) + 6, y + 13, r.gbs,
                       r.verdict == "fresh" ? "" : " (" + r.verdict + ")");
  }
  svg << "</svg>\n";
  std::ofstream(fs::path(dir) / "report.svg") << svg.str();
  return packets;
}

}  // namespace tessera::evidence
