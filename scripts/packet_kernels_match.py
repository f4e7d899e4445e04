#!/usr/bin/env python3
"""Whether a packet's kernels are the ones this tree builds.

A packet goes stale when any source under the fingerprint changes, even a
line no measured kernel contains. This compiles every case's program (with
its candidate) to Target IR with this tree's build and compares the kernels'
sha256 with the ones the packet recorded: a stale packet whose kernels all
match measured exactly the code this tree would run (the host runtime
around them may still differ). Exit status 1 if any case differs.

  python3 scripts/packet_kernels_match.py [--build build] PACKET...
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile


def kernels_now(tessera, program, target, candidate, device):
    with tempfile.NamedTemporaryFile("w", suffix=".tsr") as f:
        f.write(program)
        f.flush()
        args = [tessera, "compile", f.name, "--target", target, "--emit", "target"]
        if device:  # the device the packet ran on, as its driver described it (schedules record it)
            args += ["--device", device]
        if candidate and candidate != "default":  # "default": the planner chooses, as without --candidate
            args += ["--candidate", candidate]
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return sorted(re.findall(r'sha256 = "([0-9a-f]{64})"', out))


def candidate_of(case):
    """The --candidate that lowers a case as it ran: a tuned case's per-region decisions."""
    if case.get("candidate") == "tuned":  # no decisions: its matmuls all became reductions, as by default
        return ",".join(f"{d['region']}={d['candidate']}" for d in case.get("arbiter", [])) or None
    return case.get("candidate")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("packets", nargs="+")
    a = ap.parse_args()
    differ = 0
    for path in a.packets:
        packet = json.load(open(path))
        if packet.get("kind") in ("call_overhead", "train_step"):  # no programs: it measures a Python path
            print(f"{path}: a {packet['kind']} packet measures a path from Python, not kernels: re-record it")
            continue
        cases = packet["cases"]
        bad = [c["name"] for c in cases
               if kernels_now(f"{a.build}/tessera", c["program"], packet["target"], candidate_of(c),
                              packet.get("device_descriptor"))
               != sorted(k["sha256"] for k in c["kernels"])]
        differ += len(bad)
        print(f"{path}: {len(cases) - len(bad)}/{len(cases)} cases build the kernels the packet measured"
              + (f"; differ: {', '.join(bad)}" if bad else ""))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
