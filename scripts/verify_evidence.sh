#!/usr/bin/env bash
# Verifies every recorded evidence packet against the sources in this tree.
# Stale packets are reported, not fatal (the fix is a fresh measurement),
# with whether their kernels are still the ones this tree builds
# (scripts/packet_kernels_match.py); a tampered or invalid packet fails, and
# so does a README whose performance table is not what the packets give.
set -uo pipefail
build=${1:-build}
status=0
shopt -s nullglob globstar
packets=(bench/evidence/**/*.packet.json)
if ((${#packets[@]} == 0)); then echo "evidence: no packets recorded"; exit 0; fi
for p in "${packets[@]}"; do
  "$build/tessera" evidence verify "$p"
  rc=$?
  if ((rc >= 20)); then status=1; fi
  # Stale: say whether its kernels are still the ones this tree builds.
  if ((rc == 10)); then python3 scripts/packet_kernels_match.py --build "$build" "$p" | sed 's/^/  /'; fi
done
# The cases are those bench/evidence/headlines.json names; fix with
# `tessera evidence report bench/evidence --readme README.md`.
"$build/tessera" evidence report bench/evidence --check-readme README.md || status=1
exit $status
