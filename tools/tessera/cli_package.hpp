#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace tessera::cli {
struct PackageOptions {
  std::string file, target = "cpu", device, func, out, verify_dir, public_key, sign_dir, private_key;
};
// `tessera package FILE --target T --out DIR` and `tessera package verify DIR`.
CLI::App* add_package_command(CLI::App& app, PackageOptions& o);
int package_cmd(const CLI::App& cmd, const PackageOptions& o);
}  // namespace tessera::cli
