#!/usr/bin/env bash
# Every commit subject after BASE is at most 72 characters (details go in the
# body or in bench/evidence). BASE defaults to the commit before the
# convention was adopted. In a shallow clone without BASE: skipped, said so.
#   scripts/check_commits.sh [BASE] [HEAD]
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-607abcb38bda84a21f479b6629f69148b7770cf9}
head=${2:-HEAD}
if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  echo "check_commits: base $base is not in this clone (shallow?); skipped"
  exit 0
fi
bad=0
while IFS=$'\t' read -r sha subject; do
  if ((${#subject} > 72)); then
    echo "$sha: subject is ${#subject} characters (at most 72): $subject"
    bad=$((bad + 1))
  fi
done < <(git log --format='%h%x09%s' "$base..$head")
if ((bad)); then
  echo "check_commits: $bad commit subjects over 72 characters"
  exit 1
fi
echo "check_commits: every subject after ${base:0:12} is at most 72 characters"
