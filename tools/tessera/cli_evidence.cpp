// Evidence on the command line. Exit codes (docs/evidence.md):
//   bench: 0 written; 5 malformed spec; 6 missing program; 7 a case failed the
//          oracle; 8 dirty tree (use --unsealed); 4 cannot execute on target
//   verify: 0 fresh; 10 stale; 11 unsealed; 20 tampered; 21 invalid
//   report --check-readme: 0 the README's table is what the packets give; 12 it differs
#include "cli_evidence.hpp"

#include <fmt/core.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "evidence/bench_runner.hpp"
#include "evidence/packet.hpp"
#include "evidence/provenance.hpp"
#include "evidence/report.hpp"
#include "support/atomic_file.hpp"
#include "support/diagnostic.hpp"
#include "support/file_read.hpp"

namespace tessera::cli {

namespace {
evidence::BenchOptions bench_opts;
std::string out_path, report_dir, readme_path, check_readme_path;
bool print_table = false;
std::vector<std::string> verify_paths;
std::string public_key, sign_path, private_key;

std::string read_text(const std::string& path) {
  std::string why;  // never a FIFO or device: it could block
  auto text = read_regular_file(path, why);
  if (!text) fail("E857", "cannot read '" + path + "': " + why);
  return *text;
}

// The headline table alone: printed, spliced into a README, or compared with the README's copy.
int run_table_modes() {
  const std::string table = evidence::headline_table(report_dir, evidence::source_root());
  if (print_table) fmt::print("{}", table);
  if (!readme_path.empty()) {
    const std::string before = read_text(readme_path), after = evidence::splice_table(before, table);
    if (after != before) write_file_atomic(readme_path, after);
    fmt::print("{} the performance table in {}\n", after != before ? "rewrote" : "unchanged:", readme_path);
  }
  if (!check_readme_path.empty()) {
    const std::string text = read_text(check_readme_path);
    if (evidence::splice_table(text, table) != text) {
      fmt::print(stderr,
                 "error[E858]: the performance table in {} is not what the packets under {} give; run `tessera "
                 "evidence report {} --readme {}`\n",
                 check_readme_path, report_dir, report_dir, check_readme_path);
      return 12;
    }
    fmt::print("{}: the performance table matches the packets\n", check_readme_path);
  }
  return 0;
}
// Signs only what verifies (fresh, stale or unsealed): a signature vouches for a packet, not for an edit.
int sign_packet_file() {
  const evidence::Verification v = evidence::verify_packet(sign_path, evidence::source_root());
  if (v.verdict == evidence::Verdict::Tampered || v.verdict == evidence::Verdict::Invalid)
    fail("E864", "will not sign '" + sign_path + "': " + evidence::verdict_name(v.verdict) + ": " + v.detail);
  nlohmann::json packet = nlohmann::json::parse(read_text(sign_path));
  evidence::sign_packet(packet, private_key);
  write_file_atomic(sign_path, packet.dump(1) + "\n");
  fmt::print("signed {} (key {})\n", sign_path,
             packet["manifest"]["signature"]["key_id"].get<std::string>().substr(0, 12));
  return 0;
}
}  // namespace

EvidenceCommands add_evidence_commands(CLI::App& app) {
  EvidenceCommands c;
  c.bench = app.add_subcommand("bench", "run a bench spec and write an evidence packet");
  c.bench->add_option("spec", bench_opts.spec_path, "bench spec (JSON), e.g. bench/reduce_cpu.json")->required();
  c.bench->add_option("--target", bench_opts.target, "cpu | cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  c.bench->add_option("--out", out_path, "packet to write")->required();
  c.bench->add_option("--anchors", bench_opts.anchors_path, "anchor rows (from bench/anchors.py) to merge");
  c.bench->add_option("--only", bench_opts.only, "run one case");
  c.bench->add_flag("--unsealed", bench_opts.allow_dirty, "write an explicitly unsealed packet from a dirty tree");
  c.bench->add_option("--commit", bench_opts.expect_commit, "without git: the commit this tree is");
  c.bench->add_option("--fingerprint", bench_opts.expect_fingerprint, "without git: that commit's source fingerprint");

  auto* ev = app.add_subcommand("evidence", "verify and render evidence packets");
  ev->require_subcommand(1);
  c.verify = ev->add_subcommand("verify", "is each packet intact, and fresh against the sources here?");
  c.verify->add_option("packets", verify_paths, "packet files")->required();
  c.verify->add_option("--pubkey", public_key, "require a signature by this Ed25519 public key (PEM)");
  c.sign = ev->add_subcommand("sign", "sign a packet's manifest with an Ed25519 private key (PEM) you hold");
  c.sign->add_option("packet", sign_path, "packet file (rewritten in place)")->required();
  c.sign->add_option("--key", private_key, "Ed25519 private key (PEM)")->required();
  c.report = ev->add_subcommand("report", "render every packet under DIR as report.md and report.svg");
  c.report->add_option("dir", report_dir, "directory of packets")->required();
  c.report->add_flag("--table", print_table, "print the headline performance table (DIR/headlines.json) instead");
  c.report->add_option("--readme", readme_path,
                       "rewrite the headline table between the perf-table markers of this file");
  c.report->add_option("--check-readme", check_readme_path, "exit 12 unless this file's headline table is current");
  c.fingerprint = ev->add_subcommand("fingerprint", "print the source fingerprint and commit of this tree");
  return c;
}

int run_evidence_commands(const EvidenceCommands& c) {
  if (c.bench->parsed()) {
    nlohmann::json packet = evidence::run_bench(bench_opts);
    write_file_atomic(out_path, packet.dump(1) + "\n");
    fmt::print("wrote {} packet {} ({} cases, commit {}, {})\n", packet.value("sealed", false) ? "sealed" : "UNSEALED",
               out_path, packet["cases"].size(), packet["source"].value("commit", "?"),
               packet["target"].get<std::string>());
    for (auto& r : packet["cases"]) {
      fmt::print("  {:<28} {:>9.1f} GB/s  {}  {}", r["name"].get<std::string>(), r.value("achieved_gbs", 0.0),
                 r.value("stable", false) ? "stable" : "UNSTABLE", r["placement"].get<std::string>());
      if (r.contains("achieved_tflops")) fmt::print("  {:.2f} TFLOP/s", r["achieved_tflops"].get<double>());
      if (r.contains("candidate")) fmt::print("  candidate={}", r["candidate"].get<std::string>());
      if (r.contains("achieved_tflops")) fmt::print("  oracle={}", r.value("oracle_scope", "?"));
      fmt::print("\n");
    }
    return 0;
  }
  if (c.verify->parsed()) {
    const std::string root = evidence::source_root();
    int worst = 0;
    for (const std::string& p : verify_paths) {
      evidence::Verification v = evidence::verify_packet(p, root, public_key);
      fmt::print("{}: {}: {}\n", p, evidence::verdict_name(v.verdict), v.detail);
      worst = std::max(worst, static_cast<int>(v.verdict));
    }
    return worst;
  }
  if (c.sign->parsed()) return sign_packet_file();
  if (c.report->parsed()) {
    if (print_table || !readme_path.empty() || !check_readme_path.empty()) return run_table_modes();
    int n = evidence::write_report(report_dir, evidence::source_root());
    fmt::print("rendered {} packet(s) into {}/report.md and {}/report.svg\n", n, report_dir, report_dir);
    return 0;
  }
  if (c.fingerprint->parsed()) {
    const std::string root = evidence::source_root();
    evidence::GitState g = evidence::git_state(root);
    fmt::print("fingerprint {}\ncommit {}{}\n", evidence::source_fingerprint(root), g.available ? g.commit : "unknown",
               g.dirty ? " (dirty)" : "");
    return 0;
  }
  return -1;
}

}  // namespace tessera::cli
