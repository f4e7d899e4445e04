#!/usr/bin/env bash
# Verifies every recorded evidence packet against the sources in this tree.
# Stale packets are reported, not fatal (the fix is a fresh measurement);
# a tampered or invalid packet fails.
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
done
exit $status
