// `tessera package`: write an AOT package for a target (Target IR, sources,
// digests, launch descriptors; HIP adds code objects for the device's arch; Metal
// adds threadgroup geometry and compile options) and verify one.
#include "cli_package.hpp"

#include <fmt/core.h>

#include "cli_device.hpp"
#include "ir/parser.hpp"
#include "package/aot_package.hpp"
#include "targets/device_query.hpp"

namespace tessera::cli {

CLI::App* add_package_command(CLI::App& app, PackageOptions& o) {
  auto* pkg = app.add_subcommand("package", "write an AOT package (Target IR, sources, digests) for a target");
  pkg->add_option("file", o.file, "program (.tsr) or lowered IR");
  pkg->add_option("--target", o.target, "cpu | cuda | hip | metal")
      ->check(CLI::IsMember({"cpu", "cuda", "metal", "hip"}));
  pkg->add_option("--device", o.device, device_help());
  pkg->add_option("--func", o.func, "func to package (default: the first)");
  pkg->add_option("--out", o.out, "package directory");
  auto* verify = pkg->add_subcommand("verify",
                                     "re-derive every digest of a package (exit 0 intact, 20 tampered, 21 invalid)");
  verify->add_option("dir", o.verify_dir)->required();
  verify->add_option("--pubkey", o.public_key, "require a signature by this Ed25519 public key (PEM)");
  auto* sign = pkg->add_subcommand("sign", "sign a package's manifest with an Ed25519 private key (PEM) you hold");
  sign->add_option("dir", o.sign_dir)->required();
  sign->add_option("--key", o.private_key, "Ed25519 private key (PEM)")->required();
  return pkg;
}

int package_cmd(const CLI::App& cmd, const PackageOptions& o) {
  if (cmd.got_subcommand("verify")) {
    package::Verification v = package::verify(o.verify_dir, o.public_key);
    fmt::print("{}: {}\n", o.verify_dir, v.detail);
    return static_cast<int>(v.verdict);
  }
  if (cmd.got_subcommand("sign")) {
    fmt::print("signed {} (key {})\n", o.sign_dir, package::sign(o.sign_dir, o.private_key).substr(0, 12));
    return 0;
  }
  if (o.file.empty() || o.out.empty()) fail("E125", "tessera package needs a program and --out DIR");
  auto m = ir::parse_file(o.file);
  package::WriteResult r = package::write(*m, targets::describe_target(o.target, o.device), o.func, o.out);
  fmt::print("wrote {} ({} kernel(s) for {}; compile check: {})\n", o.out, r.kernels, o.target, r.compile_check);
  return 0;
}

}  // namespace tessera::cli
