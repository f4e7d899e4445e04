#include "evidence/report.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "evidence/packet.hpp"
#include "support/atomic_file.hpp"
#include "support/diagnostic.hpp"
#include "support/file_read.hpp"
#include "targets/lane.hpp"

namespace tessera::evidence {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct Row {
  std::string packet, target, device, name, verdict, anchors;
  double gbs = 0, ceiling = 0, tflops = -1;  // tflops: matmul and attention programs only
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

// Three significant figures without exponents: 4.02, 33.4, 156.
std::string three_figures(double v) { return fmt::format("{:.{}f}", v, v >= 100 ? 0 : v >= 10 ? 1 : 2); }

std::string duration(double ns) {
  if (ns >= 1e6) return three_figures(ns / 1e6) + " ms";
  return three_figures(ns / 1e3) + " us";
}

double primary_median_ns(const json& c) {
  const std::string domain = c.value("primary_domain", "");
  if (!c.contains("domains") || !c["domains"].contains(domain)) return 0;
  return c["domains"][domain].value("median_ns", 0.0);
}

struct LoadedPacket {
  std::string path, relative;  // relative: to the report's directory
  json body;
};

// Every evidence packet under `dir` (other JSON files, such as headlines.json, are skipped), sorted by path.
std::vector<LoadedPacket> load_packets(const std::string& dir) {
  std::vector<std::string> paths;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  std::vector<LoadedPacket> packets;
  for (const std::string& path : paths) {
    json p;
    try {
      std::ifstream in(path);
      p = json::parse(in);
    } catch (...) {
      continue;
    }
    if (!p.is_object() || p.value("format", "") != kPacketFormat) continue;
    packets.push_back({path, fs::relative(path, dir).generic_string(), std::move(p)});
  }
  if (packets.empty()) fail("E856", "no evidence packets under '" + dir + "'");
  return packets;
}

}  // namespace

int write_report(const std::string& dir, const std::string& root) {
  std::vector<Row> rows;
  std::string overhead_rows;  // call-overhead cases (bench/python_overhead.py) have a table of their own
  std::string step_rows;      // and training steps (bench/train_step.py)
  const std::vector<LoadedPacket> loaded = load_packets(dir);
  const int packets = static_cast<int>(loaded.size());
  for (const LoadedPacket& lp : loaded) {
    const std::string& path = lp.path;
    const json& p = lp.body;
    Verification v = verify_packet(path, root);
    const json& env = p["environment"];
    const bool gpu = on_gpu(p.value("target", std::string()));
    std::string device = gpu ? env["gpu"].value("name", "?") : env["cpu"].value("model", "?");
    for (const json& c : p["cases"]) {
      if (p.value("kind", "") == "train_step") {
        std::string anchors;
        for (const json& a : c["anchors"])
          anchors += fmt::format("{}{}: {} ({:.2f}x)", anchors.empty() ? "" : ", ", a.value("anchor", "?"),
                                 duration(a.value("median_ns", 0.0)), a.value("ratio_anchor_over_tessera", 0.0));
        step_rows += fmt::format("| {} | {} | {} | {} | {} | {} |\n", lp.relative, device, c.value("name", "?"),
                                 duration(primary_median_ns(c)), anchors.empty() ? "-" : anchors,
                                 verdict_name(v.verdict));
        continue;
      }
      if (c.contains("overhead_ns")) {
        const json d = c.value("domains", json::object());
        auto median = [&](const std::string& domain) {
          return d.value(domain, json::object()).value("median_ns", 0.0);
        };
        // A call case on the host CPU of a CUDA packet names that CPU.
        const std::string where = c.value("lane", "") == "cpu" ? env["cpu"].value("model", "?") : device;
        overhead_rows += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", lp.relative, where,
                                     c.value("name", "?"), duration(median(c.value("primary_domain", ""))),
                                     duration(median("native_call")), duration(c.value("overhead_ns", 0.0)),
                                     c.contains("meets_target")
                                         ? duration(c.value("target_overhead_ns", 0.0)) +
                                               (c.value("meets_target", false) ? " (met)" : " (not met)")
                                         : std::string("-"),
                                     verdict_name(v.verdict));
        continue;
      }
      Row r;
      r.packet = lp.relative;
      r.target = p["target"];
      r.gpu = gpu;
      r.device = device;
      r.name = c["name"];
      r.verdict = verdict_name(v.verdict);
      r.gbs = c.value("achieved_gbs", 0.0);
      r.tflops = c.value("achieved_tflops", -1.0);
      if (c.contains("candidate") && c["candidate"] != "tessera")
        r.name += " [" + c["candidate"].get<std::string>() + "]";
      r.ceiling = c.value("ceiling_gbs", p["ceiling"].value("gbs", 0.0));
      r.stable = c.value("stable", false);
      // The tolerance is per element (it scales with each reference value), so
      // the figure that says how close to failing a run came is the worst
      // ratio err/tol over elements; the largest absolute error (often at
      // another element, under a larger tolerance) is shown beside it.
      double err = 0, ratio = 0;
      bool pass = true;
      int64_t unbounded = 0;
      for (const json& o : c["oracle"]) {
        err = std::max(err, o.value("max_abs_err", 0.0));
        unbounded += o.value("unbounded", int64_t{0});
        ratio = std::max(ratio, o.value("worst_ratio", 0.0));
        pass = pass && o.value("pass", false);
      }
      // Per-kernel checks (programs of several kernels) count like the rest.
      int64_t kernels = 0;
      for (const json& o : c.value("kernel_checks", json::array())) {
        ratio = std::max(ratio, o.value("worst_ratio", 0.0));
        pass = pass && o.value("pass", false);
        kernels += o.value("what", std::string()).rfind("kernel", 0) == 0;
      }
      r.oracle = fmt::format("{:.2g} (max err {:.2g}){}", ratio, err, pass ? "" : " FAIL");
      if (kernels > 0) r.oracle += fmt::format(" ({} kernel checks)", kernels);
      if (unbounded > 0) r.oracle += fmt::format(" (end-to-end bound infinite at {} elements)", unbounded);
      const std::string scope = c.value("oracle_scope", "full");
      if (scope.rfind("proxy", 0) == 0) r.oracle += " (proxy M,N<=256)";  // packets before the sampled check
      if (scope.rfind("sampled", 0) == 0) r.oracle += " (sampled " + scope.substr(8, scope.find(' ', 8) - 8) + ")";
      for (const json& a : c["anchors"])
        r.anchors += fmt::format("{}{}: {:.2f}x", r.anchors.empty() ? "" : ", ", a.value("anchor", "?"),
                                 a.value("ratio_anchor_over_tessera", 0.0));
      rows.push_back(r);
    }
  }

  std::ostringstream md;
  md << "# Evidence report\n\nRendered by `tessera evidence report` from " << packets
     << " packet(s). GB/s counts bytes read and written once, over the median of the packet's primary timing "
        "domain (device_event on CUDA, device_span for a CUDA program of several kernels, kernel_wall on the CPU). "
        "\"vs anchor\" is anchor time / Tessera time "
        "(above 1: Tessera is faster). TFLOP/s (matmul and attention programs) counts 2*batch*m*n*k (attention: "
        "4*B*H*D a visible (query, key) pair; causal with Sq = Sk: half the square) over the same median; a "
        "[candidate] after a case name is the matmul candidate the case forced (a library's, run through Tessera's "
        "runtime, or a synthesized block), [default] the planner's own choice per region; an oracle marked "
        "(sampled RxC) checked R rows by C columns of the measured run's output (every batch) against the oracle "
        "of the same region cut to those rows and columns, the full size being beyond the oracle (older packets: "
        "(proxy M,N<=256), the same candidate lowered again at M, N <= 256); (sampled N) checked N output elements "
        "of the measured run spread over the output (attention: each against every key it sees); (K kernel checks): "
        "a program of several kernels also had each kernel checked against the oracle of its own region, on the "
        "values it received, and those checks count in the column; (end-to-end bound infinite at U elements): "
        "the error bound propagated through the whole program grew without limit there, so only per-kernel "
        "checks (a program of several kernels has them) hold for those elements. \"oracle worst "
        "err/tol\" is the largest "
        "ratio of an element's error to "
        "that element's tolerance (1 or more fails), with the largest absolute error beside it. A stale packet "
        "measured sources that have changed since.\n\n"
     << "| packet | target | device | case | GB/s | ceiling GB/s | of ceiling | TFLOP/s | vs anchors | stable "
        "| oracle worst err/tol | status |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows)
    md << fmt::format("| {} | {} | {} | {} | {:.1f} | {:.1f} | {:.0f}% | {} | {} | {} | {} | {} |\n", r.packet,
                      r.target, r.device, r.name, r.gbs, r.ceiling, r.ceiling > 0 ? 100 * r.gbs / r.ceiling : 0.0,
                      r.tflops >= 0 ? fmt::format("{:.2f}", r.tflops) : "-", r.anchors.empty() ? "-" : r.anchors,
                      r.stable ? "yes" : "no", r.oracle, r.verdict);
  if (!overhead_rows.empty())
    md << "\n## Call overhead\n\nA cached call from Python against the same run looped in C++ (the C++ API's "
          "call), medians of the same run:\n\n| packet | device | case | Python call | C++ call | overhead | "
          "target | status |\n|---|---|---|---|---|---|---|---|\n"
       << overhead_rows;
  if (!step_rows.empty())
    md << "\n## Training step\n\nOne optimizer step (loss, gradients and update) of the same model, from "
          "Python, medians of the same run; an anchor's ratio is its time over Tessera's:\n\n| packet | device | "
          "case | Tessera a step | anchors | status |\n|---|---|---|---|---|---|\n"
       << step_rows;
  md << "\n![achieved bandwidth against the ceiling](report.svg)\n";
  write_file_atomic((fs::path(dir) / "report.md").string(), md.str());

  // Horizontal bars: achieved GB/s, with the run's ceiling as a tick.
  const int bar_h = 18, gap = 6, left = 330, width = 460, top = 40;
  double max_v = 1;
  for (const Row& r : rows) max_v = std::max({max_v, r.gbs, r.ceiling});
  const int height = top + static_cast<int>(rows.size()) * (bar_h + gap) + 30;
  std::ostringstream svg;
  svg << fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
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
      svg << fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"black\" stroke-width=\"2\"/>\n", left + c,
          y - 2, left + c, y + bar_h + 2);
    svg << fmt::format("<text x=\"{:.1f}\" y=\"{}\">{:.0f}{}</text>\n", left + std::max(w, c) + 6, y + 13, r.gbs,
                       r.verdict == "fresh" ? "" : " (" + r.verdict + ")");
  }
  svg << "</svg>\n";
  write_file_atomic((fs::path(dir) / "report.svg").string(), svg.str());
  return packets;
}

namespace {

// Matmul programs by TFLOP/s, everything else by bytes read and written once; then the time.
std::string tessera_cell(const json& c) {
  if (c.contains("overhead_ns"))  // a call-overhead case: the call, and what it adds to the C++ API's
    return duration(primary_median_ns(c)) + " a call, " + duration(c["overhead_ns"]) + " over the C++ call";
  const double ns = primary_median_ns(c), tflops = c.value("achieved_tflops", -1.0), gbs = c.value("achieved_gbs", 0.0);
  std::string rate = tflops >= 0   ? three_figures(tflops) + " TFLOP/s"
                     : gbs >= 1000 ? three_figures(gbs / 1000) + " TB/s"
                                   : three_figures(gbs) + " GB/s";
  return rate + ", " + duration(ns);
}

// The recorded anchors (anchor time / Tessera time), then each library candidate measured on the same program in
// the same packet (its time / this case's time): above 1, Tessera is faster.
std::string ratios_cell(const json& packet, const json& c) {
  std::vector<std::string> parts;
  for (const json& a : c.value("anchors", json::array()))
    parts.push_back(fmt::format("{} {:.2f}x", a.value("anchor", "?"), a.value("ratio_anchor_over_tessera", 0.0)));
  const std::string own = c.value("candidate", "tessera");
  const double ns = primary_median_ns(c);
  for (const json& peer : packet["cases"]) {
    const std::string cand = peer.value("candidate", "tessera");
    if (cand == own || cand == "default" || cand.rfind("tessera", 0) == 0 ||
        peer.value("program", "") != c.value("program", ""))
      continue;
    if (ns > 0) parts.push_back(fmt::format("{} {:.2f}x", cand, primary_median_ns(peer) / ns));
  }
  if (parts.empty()) return "-";
  std::string out = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) out += ", " + parts[i];
  return out;
}

// The device a case ran on: the packet's target, or the host CPU for a call
// case measured there ("lane": "cpu").
std::string device_cell(const json& packet, const json& c) {
  const json& env = packet["environment"];
  if (packet.value("target", "") == "cuda" && c.value("lane", "cuda") != "cpu")
    return "cuda, " + env["gpu"].value("name", "?");
  return fmt::format("cpu, {} ({} threads)", env["cpu"].value("model", "?"), env["cpu"].value("threads", 0));
}

}  // namespace

std::string headline_table(const std::string& dir, const std::string& root) {
  const std::vector<LoadedPacket> packets = load_packets(dir);
  // Which cases, in which order: headlines.json, else everything.
  std::vector<std::pair<std::string, std::vector<std::string>>> wanted;
  const fs::path selection = fs::path(dir) / "headlines.json";
  if (fs::exists(selection)) {
    json h;
    try {
      std::string why;  // never a FIFO or device: it could block
      auto text = read_regular_file(selection.string(), why);
      if (!text) throw std::runtime_error(why);
      h = json::parse(*text);
    } catch (const std::exception& e) {
      fail("E857", "'" + selection.string() + "' is not valid JSON: " + e.what());
    }
    if (!h.is_object() || !h.contains("packets") || !h["packets"].is_array())
      fail("E857", "'" + selection.string() + "' needs a \"packets\" list of {\"packet\": PATH, \"cases\": [NAME...]}");
    for (const json& entry : h["packets"]) {
      if (!entry.is_object() || !entry.contains("packet") || !entry["packet"].is_string() || !entry.contains("cases") ||
          !entry["cases"].is_array())
        fail("E857", "'" + selection.string() + "': each entry needs \"packet\" and a \"cases\" list");
      std::vector<std::string> names;
      for (const json& n : entry["cases"]) {
        if (!n.is_string()) fail("E857", "'" + selection.string() + "': a case name is not a string");
        names.push_back(n);
      }
      wanted.emplace_back(entry["packet"], names);
    }
  } else {
    for (const LoadedPacket& lp : packets) {
      std::vector<std::string> names;
      for (const json& c : lp.body["cases"]) names.push_back(c.value("name", "?"));
      wanted.emplace_back(lp.relative, names);
    }
  }

  std::string md = "| case | target, device | Tessera | vs anchors and libraries | packet |\n|---|---|---|---|---|\n";
  for (const auto& [packet_name, names] : wanted) {
    auto lp = std::find_if(packets.begin(), packets.end(),
                           [&](const LoadedPacket& l) { return l.relative == packet_name; });
    if (lp == packets.end())
      fail("E857", "headlines name packet '" + packet_name + "', which is not under '" + dir + "'");
    const json& p = lp->body;
    std::string short_name = packet_name;
    if (const size_t dot = short_name.find(".packet.json"); dot != std::string::npos) short_name.resize(dot);
    // Whether the packet is sealed is a fact of the packet; whether it is
    // fresh depends on the tree, so it is left to `evidence verify` (else
    // every source change would make README's table wrong).
    const std::string freshness = fmt::format("{}, {}{}", short_name, p.value("date", "?").substr(0, 10),
                                              p.value("sealed", false) ? "" : ", unsealed");
    for (const std::string& name : names) {
      auto c = std::find_if(p["cases"].begin(), p["cases"].end(),
                            [&](const json& x) { return x.value("name", "") == name; });
      if (c == p["cases"].end()) fail("E857", "packet '" + packet_name + "' has no case '" + name + "'");
      md += fmt::format("| {} | {} | {} | {} | {} |\n", name, device_cell(p, *c), tessera_cell(*c), ratios_cell(p, *c),
                        freshness);
    }
  }
  return md;
}

std::string splice_table(const std::string& text, const std::string& table) {
  const size_t begin = text.find(kTableBegin);
  const size_t end = text.find(kTableEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin)
    fail("E857", std::string("no '") + kTableBegin + "' line followed by a '" + kTableEnd + "' line");
  const size_t body = text.find('\n', begin);
  if (body == std::string::npos || body > end)
    fail("E857", std::string("'") + kTableBegin + "' and '" + kTableEnd + "' must be on lines of their own");
  const size_t end_line = text.rfind('\n', end) + 1;  // the start of the end marker's line
  return text.substr(0, body + 1) + table + text.substr(end_line);
}

}  // namespace tessera::evidence
