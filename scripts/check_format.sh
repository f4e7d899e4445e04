#!/usr/bin/env bash
# Checks that every tracked C/C++ file under src/ tools/ include/ tests/ bench/
# matches .clang-format. device/ is excluded: its headers are embedded into
# every kernel, so reformatting them would change every kernel's digest.
#   scripts/check_format.sh          check (exit 1 listing the files that differ)
#   scripts/check_format.sh --fix    reformat those files in place
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
mapfile -t files < <(git ls-files -- src tools include tests bench python | grep -E '\.(c|cc|cpp|h|hpp|cuh)$' || true)
if [[ ${1:-} == --fix ]]; then
  "$CLANG_FORMAT" -i "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! "$CLANG_FORMAT" --dry-run --Werror "$f" >/dev/null 2>&1; then
    n=$("$CLANG_FORMAT" "$f" | diff "$f" - | grep -c '^[<>]' || true)
    echo "$f: $n lines differ"
    bad=$((bad + 1))
  fi
done
if ((bad)); then
  echo "check_format: $bad of ${#files[@]} files differ from .clang-format (scripts/check_format.sh --fix)"
  exit 1
fi
echo "check_format: ${#files[@]} files match .clang-format"
