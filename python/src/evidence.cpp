// tessera._core's evidence functions: what `tessera evidence verify` and the
// README's performance table say, from Python (tessera.evidence wraps them).
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "evidence/packet.hpp"
#include "evidence/packet_checks.hpp"
#include "evidence/provenance.hpp"
#include "evidence/report.hpp"
#include "support/diagnostic.hpp"

namespace nb = nanobind;

namespace tessera::python {

namespace {

// The source tree packets are judged against: given, or the one around the
// working directory (E853 when there is none).
std::string root_or_here(const std::string& root) { return root.empty() ? evidence::source_root() : root; }

}  // namespace

void bind_evidence(nb::module_& m) {
  m.def(
      "verify_packet",
      [](const std::string& path, const std::string& root, const std::string& public_key) {
        const evidence::Verification v = evidence::verify_packet(path, root_or_here(root), public_key);
        return nb::make_tuple(std::string(evidence::verdict_name(v.verdict)), static_cast<int>(v.verdict), v.detail);
      },
      nb::arg("path"), nb::arg("source_root") = "", nb::arg("public_key") = "",
      "(verdict, exit code, detail) of one evidence packet, as `tessera evidence verify` gives them.");
  m.def(
      "headline_table",
      [](const std::string& dir, const std::string& root) { return evidence::headline_table(dir, root_or_here(root)); },
      nb::arg("dir"), nb::arg("source_root") = "",
      "The README's performance table (markdown) from the packets under dir.");
  m.def(
      "seal_packet",
      [](const std::string& body, const std::string& target, const std::string& commit, const std::string& fingerprint,
         bool unsealed, const std::string& root) {
        nlohmann::json p;
        try {
          p = nlohmann::json::parse(body);
        } catch (const nlohmann::json::exception& e) {
          fail("E850", std::string("the packet body is not valid JSON: ") + e.what());
        }
        if (!p.is_object()) fail("E850", "the packet body is not a JSON object");
        p["format"] = evidence::kPacketFormat;
        p["date"] = evidence::utc_now_iso();
        p["target"] = target;
        p["environment"] = evidence::environment(target);
        evidence::stamp_source(p, root_or_here(root), {unsealed, commit, fingerprint});
        evidence::seal(p);
        // What `evidence verify` would call tampered is never written.
        if (const auto v = evidence::contradiction(p)) fail("E860", v->detail);
        return p.dump(1);
      },
      nb::arg("body"), nb::arg("target"), nb::arg("commit") = "", nb::arg("fingerprint") = "",
      nb::arg("unsealed") = false, nb::arg("source_root") = "",
      "A measurement script's packet (cases, sampling...) stamped as `tessera bench` stamps its own: format, date, "
      "environment, source fingerprint and commit, sealed only from a clean tree (E855; or with commit and "
      "fingerprint where there is no git), then checked as `evidence verify` checks it (E860).");
  m.def(
      "source_fingerprint", [](const std::string& root) { return evidence::source_fingerprint(root_or_here(root)); },
      nb::arg("source_root") = "", "The fingerprint of a source tree's sources, as packets record it.");
}

}  // namespace tessera::python
