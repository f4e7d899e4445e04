#!/usr/bin/env python3
"""Every kernel this tree renders for a corpus of programs, as sha256 lines.

A refactor that must not change kernels is checked by diffing this output
before and after it: each line is `program target candidate kernel sha256`.
The corpus is every .tsr under examples/, bench/programs/ and tests/ir/Inputs/,
for every target, and for matmul programs every synthesized candidate.
With --code-only a kernel's digest leaves out its `// artifact <hash>` line:
a change to Schedule IR attributes (the artifact hash) that leaves the code
the compiler sees unchanged then leaves the list unchanged.

  python3 scripts/kernel_digests.py [--build build] [--code-only] > digests.txt
"""
import argparse
import hashlib
import pathlib
import re
import subprocess
import sys

TARGETS = ["cpu", "cuda", "hip", "metal"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--code-only", action="store_true", help="digest each kernel without its artifact line")
    a = ap.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent
    tessera = str(pathlib.Path(a.build).resolve() / "tessera")
    programs = sorted(p for d in ("examples", "bench/programs", "tests/ir/Inputs") for p in (root / d).glob("*.tsr"))
    for program in programs:
        text = program.read_text()
        candidates = ["", "tessera_tma"] if "tessera.matmul" in text else [""]
        for target in TARGETS:
            for cand in candidates:
                args = [tessera, "compile", str(program), "--target", target, "--emit",
                        "source" if a.code_only else "target"]
                if cand:
                    args += ["--candidate", cand]
                r = subprocess.run(args, capture_output=True, text=True)
                name = program.relative_to(root)
                if r.returncode != 0:
                    first = (r.stderr.strip().splitlines() or ["?"])[0]
                    code = re.search(r"E\d{3}", first)
                    print(f"{name} {target} {cand or '-'} refused {code.group(0) if code else first}")
                    continue
                if a.code_only:
                    for sym, body in re.findall(r"^// ===== kernel @(\S+) [^\n]*\n(.*?)(?=^// ===== kernel @|\Z)",
                                                r.stdout, re.S | re.M):
                        code = re.sub(r"^// artifact [0-9a-f]{64}\n", "", body, flags=re.M)
                        print(f"{name} {target} {cand or '-'} {sym} {hashlib.sha256(code.encode()).hexdigest()}")
                    continue
                for sym, sha in re.findall(r'target\.kernel @(\S+).*?sha256 = "([0-9a-f]{64})"', r.stdout, re.S):
                    print(f"{name} {target} {cand or '-'} {sym} {sha}")


if __name__ == "__main__":
    sys.exit(main())
