#!/usr/bin/env python3
"""Every kernel this tree renders for a corpus of programs, as sha256 lines.

A refactor that must not change kernels is checked by diffing this output
before and after it: each line is `program target candidate kernel sha256`.
The corpus is every .tsr under examples/, bench/programs/ and tests/ir/Inputs/,
for every target, and for matmul programs every synthesized candidate.

  python3 scripts/kernel_digests.py [--build build] > digests.txt
"""
import argparse
import pathlib
import re
import subprocess
import sys

TARGETS = ["cpu", "cuda", "hip", "metal"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    a = ap.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent
    tessera = str(pathlib.Path(a.build).resolve() / "tessera")
    programs = sorted(p for d in ("examples", "bench/programs", "tests/ir/Inputs") for p in (root / d).glob("*.tsr"))
    for program in programs:
        text = program.read_text()
        candidates = ["", "tessera_tma"] if "tessera.matmul" in text else [""]
        for target in TARGETS:
            for cand in candidates:
                args = [tessera, "compile", str(program), "--target", target, "--emit", "target"]
                if cand:
                    args += ["--candidate", cand]
                r = subprocess.run(args, capture_output=True, text=True)
                name = program.relative_to(root)
                if r.returncode != 0:
                    first = (r.stderr.strip().splitlines() or ["?"])[0]
                    code = re.search(r"E\d{3}", first)
                    print(f"{name} {target} {cand or '-'} refused {code.group(0) if code else first}")
                    continue
                for sym, sha in re.findall(r'target\.kernel @(\S+).*?sha256 = "([0-9a-f]{64})"', r.stdout, re.S):
                    print(f"{name} {target} {cand or '-'} {sym} {sha}")


if __name__ == "__main__":
    sys.exit(main())
