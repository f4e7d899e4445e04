// The tessera command line: compile (print any layer), run (execute natively,
// check against the oracle), verify (parse + verify any layer's text),
// package (AOT packages), bench and evidence.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <map>
#include <sstream>

#include "cli_cache.hpp"
#include "cli_device.hpp"
#include "cli_evidence.hpp"
#include "cli_package.hpp"
#include "cli_run.hpp"
#include "ir/parser.hpp"
#include "ir/printer.hpp"
#include "ir/target_dialect.hpp"
#include "ir/verify.hpp"
#include "passes/autodiff.hpp"
#include "passes/graph_to_schedule.hpp"
#include "passes/pipeline.hpp"
#include "support/atomic_file.hpp"
#include "targets/device_query.hpp"

using namespace tessera;

namespace {

int compile_cmd(const std::string& file, const std::string& target, const std::string& device, const std::string& emit,
                const std::string& out, const std::string& candidate) {
  auto m = ir::parse_file(file);
  const machine::Descriptor machine = targets::describe_target(target, device);
  // One candidate for every region, or region=candidate pairs (what a tuned
  // run's decisions name: `mm#0=cublaslt,mm#1=tessera_tma`).
  passes::Candidates candidates;
  std::stringstream list(candidate);
  for (std::string item; std::getline(list, item, ',');) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) candidates["*"] = item;
    else candidates[item.substr(0, eq)] = item.substr(eq + 1);
  }
  std::string text;
  if (emit == "source") {
    auto t = passes::lower(*m, ir::Layer::Target, machine, candidates);
    for (auto& op : t->ops)
      if (op->name == "target.kernel") {
        ir::KernelDesc k = ir::read_kernel_desc(*op);
        text += fmt::format("// ===== kernel @{} sha256={} abi={}\n", k.sym, k.sha256, k.abi);
        text += k.source;
      }
  } else {
    static const std::map<std::string, ir::Layer> layers = {{"graph", ir::Layer::Graph},
                                                            {"schedule", ir::Layer::Schedule},
                                                            {"tile", ir::Layer::Tile},
                                                            {"target", ir::Layer::Target}};
    text = ir::print(*passes::lower(*m, layers.at(emit), machine, candidates));
  }
  if (out.empty() || out == "-") {
    std::cout << text;
  } else {
    write_file_atomic(out, text);  // E120 (exit 1) on a full disk; the previous file survives
  }
  return 0;
}

int grad_cmd(const std::string& file, const std::string& func, const std::vector<std::string>& wrt,
             const std::string& out) {
  auto m = ir::parse_file(file);
  if (ir::detect_layer(*m) != ir::Layer::Graph) fail("E124", "tessera grad differentiates Graph IR");
  const std::string text = ir::print(*passes::differentiate(*m, func, wrt));
  if (out.empty() || out == "-") std::cout << text;
  else write_file_atomic(out, text);
  return 0;
}

int verify_cmd(const std::string& file) {
  auto m = ir::parse_file(file);
  ir::Layer l = ir::detect_layer(*m);
  ir::verify(*m, l);
  fmt::print("ok: {} IR, {} top-level ops\n", ir::layer_name(l), m->ops.size());
  return 0;
}

}  // namespace

// A crash is a bug in Tessera: say so, with the frames (offsets into this
// binary: `addr2line -e tessera` names them), and exit 70 like any internal
// error, instead of dying silently.
void on_fatal_signal(int sig) {
  const char msg[] = "error[E999]: internal error: Tessera crashed (a bug in Tessera); frames:\n";
  [[maybe_unused]] ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  std::signal(sig, SIG_DFL);
  _exit(70);
}

int main(int argc, char** argv) {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, on_fatal_signal);
  CLI::App app{"tessera: a tile-centric kernel compiler and runtime"};
  app.require_subcommand(1);

  std::string file, target = "cpu", device, emit = "target", out, candidate;
  auto* compile = app.add_subcommand("compile", "lower a program and print one layer");
  compile->add_option("file", file, "program (.tsr), or any layer's IR text")->required();
  compile->add_option("--target", target, "cpu | cuda | hip | metal")
      ->check(CLI::IsMember({"cpu", "cuda", "metal", "hip"}));
  compile->add_option("--device", device, cli::device_help());
  compile->add_option("--emit", emit, "graph|schedule|tile|target|source")
      ->check(CLI::IsMember({"graph", "schedule", "tile", "target", "source"}));
  compile->add_option("-o,--output", out, "write to a file instead of stdout");
  compile->add_option("--candidate", candidate,
                      "implement every matmul with this candidate (tessera, tessera_tma, openblas, cublaslt), or "
                      "per region: mm#0=cublaslt,mm#1=tessera_tma");

  std::string grad_func;
  std::vector<std::string> wrt;
  auto* grad = app.add_subcommand("grad",
                                  "differentiate a func: a program whose @<func>_grad returns the loss and "
                                  "its gradients");
  grad->add_option("file", file, "program (.tsr) whose func returns a rank-0 loss first")->required();
  grad->add_option("--func", grad_func, "the loss func (default: the first)");
  grad->add_option("--wrt", wrt, "the arguments to differentiate, comma-separated (default: every float argument)")
      ->delimiter(',');
  grad->add_option("-o,--output", out, "write to a file instead of stdout");

  auto* verify = app.add_subcommand("verify", "parse and verify IR text of any layer");
  verify->add_option("file", file, "IR text")->required();

  cli::RunOptions ro;
  auto* run = app.add_subcommand("run", "run a program natively; --check compares with the oracle");
  cli::add_run_options(*run, ro);

  cli::PackageOptions po;
  auto* package = cli::add_package_command(app, po);

  cli::EvidenceCommands evidence = cli::add_evidence_commands(app);
  cli::CacheCommands cache = cli::add_cache_commands(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (compile->parsed()) return compile_cmd(file, target, device, emit, out, candidate);
    if (verify->parsed()) return verify_cmd(file);
    if (grad->parsed()) return grad_cmd(file, grad_func, wrt, out);
    if (run->parsed()) return cli::run_cmd(ro);
    if (package->parsed()) return cli::package_cmd(*package, po);
    if (int rc = cli::run_cache_commands(cache); rc >= 0) return rc;
    return cli::run_evidence_commands(evidence);
  } catch (const Error& e) {
    std::cerr << e.what() << "\n";
    static const std::map<std::string, int> bench_exit = {{"E850", 5}, {"E851", 5}, {"E852", 6}, {"E854", 7},
                                                          {"E855", 8}, {"E853", 5}, {"E856", 5}};
    if (auto it = bench_exit.find(e.code()); it != bench_exit.end()) return it->second;
    return e.code()[1] == '6' || e.code()[1] == '7' ? 4 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error[E999]: internal error: " << e.what() << "\n";
    return 70;
  }
  return 0;
}
