#!/usr/bin/env bash
# The CPU demo: one program through every layer, then several reductions and a
# fused program run natively with placement, kernel digest, oracle check and time.
set -euo pipefail
build=${1:-build}
tsr=$build/tessera
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "Graph IR: what the user wrote (examples/row_sum.tsr)"
$tsr compile examples/row_sum.tsr --emit graph
say "Schedule IR: the decisions, sealed by artifact_hash"
$tsr compile examples/row_sum.tsr --emit schedule
say "Tile IR: the target-neutral tile program (first 24 lines)"
# (through a file: with pipefail, head closing the pipe early would fail the demo)
$tsr compile examples/row_sum.tsr --emit tile -o "$out/tile.txt"
head -24 "$out/tile.txt"
say "Target IR: source, SHA-256, ABI, launch descriptor (source elided)"
$tsr compile examples/row_sum.tsr --emit target | sed -E 's/source = "([^"\\]|\\.)*"/source = "..."/'
say "Rendered C++ kernel (after the embedded tile library)"
$tsr compile examples/row_sum.tsr --emit source | sed -n '/^\/\/ artifact/,$p'

say "Run natively on the CPU, checked against the oracle"
$tsr run examples/row_sum.tsr --input x=random:seed=7 --check --repeat 20 --output y="$out/y.npy"
say "Several reductions, with NaN and inf mixed into x"
$tsr run examples/reductions.tsr --input x=special:seed=3,rate=0.0002 --input h=random:seed=4 \
  --input d=random:seed=5 --check --repeat 10
say "Fusion: three kernels (schedule.*) for the nine ops of examples/fused.tsr, each with its region"
$tsr compile examples/fused.tsr --emit schedule | grep -E '= (schedule|tessera)\.' | sed -E 's/ (\{|: ).*$//'
say "...run natively, checked against the unfused graph by the oracle"
$tsr run examples/fused.tsr --input x=special:seed=3,rate=0.0002 --input w=random:seed=4,lo=0.5,hi=1.5 \
  --input g=random:seed=5 --check --repeat 10
say "Matmul with a fused bias + gelu epilogue (examples/matmul.tsr): one schedule.matmul"
$tsr compile examples/matmul.tsr --emit schedule | grep -E '= (schedule|tessera)\.' | sed -E 's/ (\{|: ).*$//'
say "...the arbiter gates each candidate with the oracle, times it, and picks (then the ledger answers)"
$tsr run examples/matmul.tsr --input x=random:seed=1 --input w=random:seed=2 --input bias=random:seed=3 --check --repeat 5
say "From Python: ts.jit on numpy arrays (examples/python_block.py)"
PYTHONPATH=$build/python python3 examples/python_block.py
say "Tampering with a schedule is refused"
$tsr compile examples/row_sum.tsr --emit schedule | sed 's/vector_width = 16/vector_width = 8/' > "$out/edited.sched"
$tsr compile "$out/edited.sched" --emit tile || true
