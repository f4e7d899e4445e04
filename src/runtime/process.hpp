// Running the toolchains Tessera drives (the host C++ compiler, clang for HIP):
// without a shell, output captured to a log.
#pragma once
#include <string>
#include <vector>

namespace tessera::runtime {

// Runs argv (argv[0] looked up in PATH); stdout and stderr go to `log`.
// Returns the exit status, or -1 if it could not be started.
int run_process(const std::vector<std::string>& argv, const std::string& log);

// Everything argv prints, or "" if it fails.
std::string output_of(const std::vector<std::string>& argv);
// The first line argv prints, or "" if it fails (e.g. `g++ --version`).
std::string first_line_of_output(const std::vector<std::string>& argv);

// "a b  c" -> {"a", "b", "c"}
std::vector<std::string> split_flags(const std::string& s);

}  // namespace tessera::runtime
