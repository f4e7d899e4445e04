#include "cli_run.hpp"
namespace tessera::cli {
void add_run_options(CLI::App&, RunOptions&) {}
int run_cmd(const RunOptions&) { return 0; }
}
