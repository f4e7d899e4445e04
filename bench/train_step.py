#!/usr/bin/env python3
"""One training step of examples/train_mlp.py's model (tanh MLP, softmax cross-entropy on integer labels,
AdamW), side by side in one run, as an evidence packet.

  tessera        the example's jitted step: loss, gradients and the in-place AdamW update as one program
  CPU anchor     numpy: the example's hand-written step
  CUDA anchors   torch eager (autograd, F.cross_entropy, torch.optim.AdamW) and torch.compile of that
                 same step function

Before timing, each path trains 5 steps from the same start and its losses are compared with numpy's
(the packet's check). A step is timed as rounds of STEPS consecutive steps on the host clock, each
round ending in a synchronize (CUDA), so the GPU's work is in the time; rounds of all paths are
interleaved. --size picks the model: "example" is the example's (256 points, 16 -> 32 -> 4), "wide"
a larger one (8192 points, 1024 -> 4096 -> 1024), where the kernels, not the launches, dominate.

  PYTHONPATH=build/python python3 bench/train_step.py [--size example|wide] [--packet FILE
      [--commit SHA --fingerprint FP | --unsealed]]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, "..", "examples"), here]
import train_mlp as ex  # noqa: E402
from python_overhead import COHORTS, ROUNDS, STABILITY_PCT  # noqa: E402
from python_overhead import domain as stats  # noqa: E402

from tessera import _core  # noqa: E402

SIZES = {"example": dict(n=256, features=16, hidden=32, classes=4),
         "wide": dict(n=8192, features=1024, hidden=4096, classes=1024)}


def model(size, seed=0):
    """Points around random centres, their labels, and the initial parameters (the example's data())."""
    s = SIZES[size]
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((s["classes"], s["features"])) * 0.5
    labels = rng.integers(0, s["classes"], s["n"])
    x = (centres[labels] + rng.standard_normal((s["n"], s["features"]))).astype(np.float32)
    params = [(rng.standard_normal((s["features"], s["hidden"])) / np.sqrt(s["features"])).astype(np.float32),
              np.zeros(s["hidden"], np.float32),
              (rng.standard_normal((s["hidden"], s["classes"])) / np.sqrt(s["hidden"])).astype(np.float32),
              np.zeros(s["classes"], np.float32)]
    return x, labels, params


def tessera_path(x, labels, params, to, back):
    """A step function (t -> loss) over arrays `to` made, updating them in place."""
    ours = [to(p.copy()) for p in params]
    state = [to(np.zeros_like(p)) for _ in range(2) for p in params]
    xs, ls = to(x), to(labels)

    def step(t):
        c1, c2 = (to(np.array(1 / (1 - b**t), np.float32)) for b in (ex.BETA1, ex.BETA2))
        value, *_ = ex.adamw_step(*ours, *state, xs, ls, c1, c2)
        return value
    return step, lambda v: float(back(v))


def numpy_path(x, labels, params):
    state = {"p": [p.copy() for p in params], "s": [np.zeros_like(p) for _ in range(2) for p in params]}

    def step(t):
        value, state["p"], state["s"] = ex.numpy_adamw(state["p"], state["s"], x, labels, t)
        return value
    return step, float


def torch_path(x, labels, params, compiled):
    import torch
    import torch.nn.functional as F
    ps = [torch.from_numpy(p.copy()).cuda().requires_grad_() for p in params]
    xs, ls = torch.from_numpy(x).cuda(), torch.from_numpy(labels).cuda()
    opt = torch.optim.AdamW(ps, lr=ex.ADAM_LR, betas=(ex.BETA1, ex.BETA2), eps=ex.EPS,
                            weight_decay=ex.WEIGHT_DECAY)
    w1, b1, w2, b2 = ps

    def train_step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(torch.tanh(xs @ w1 + b1) @ w2 + b2, ls)
        loss.backward()
        opt.step()
        return loss.detach()
    fn = torch.compile(train_step) if compiled else train_step
    return (lambda t: fn()), lambda v: float(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=sorted(SIZES), default="example")
    ap.add_argument("--steps", type=int, default=20, help="steps a timed round")
    ap.add_argument("--packet", help="write the evidence packet here")
    ap.add_argument("--commit", default="", help="the commit measured, where the tree has no git")
    ap.add_argument("--fingerprint", default="", help="that commit's source fingerprint")
    ap.add_argument("--unsealed", action="store_true", help="write an explicitly unsealed packet (dirty tree)")
    args = ap.parse_args()
    x, labels, params = model(args.size)
    tools = {"numpy": np.__version__}
    try:
        import torch
        cuda = torch.cuda.is_available()
    except ImportError:
        torch, cuda = None, False
    target, sync = "cpu", (lambda: None)
    paths = {}
    if cuda:
        target, sync, tools["torch"] = "cuda", torch.cuda.synchronize, torch.__version__
        paths["tessera"] = tessera_path(x, labels, params, lambda a: torch.from_numpy(a).cuda(),
                                        lambda v: v.cpu().numpy())
        paths["torch eager"] = torch_path(x, labels, params, compiled=False)
        paths["torch.compile"] = torch_path(x, labels, params, compiled=True)
    else:
        paths["tessera"] = tessera_path(x, labels, params, lambda a: a, lambda v: v)
        paths["numpy"] = numpy_path(x, labels, params)

    # The check: 5 steps from the same start, every path's losses against numpy's.
    ref_step, _ = numpy_path(x, labels, params)
    ref = [float(ref_step(t)) for t in range(1, 6)]
    checks, clocks = {}, {name: 5 for name in paths}
    for name, (step, value) in paths.items():
        try:
            got = [value(step(t)) for t in range(1, 6)]
            sync()
            err = max(abs(g - r) for g, r in zip(got, ref))
            checks[name] = {"check": "the first 5 losses against numpy's", "max_abs_err": err,
                            "pass": bool(err <= 1e-3 * max(1.0, abs(ref[0])))}
        except Exception as e:  # noqa: BLE001 - e.g. torch.compile unavailable: that path drops out
            print(f"{name}: not measured: {type(e).__name__}: {e}", file=sys.stderr)
    paths = {n: p for n, p in paths.items() if n in checks}

    samples = {name: [] for name in paths}
    for r in range(ROUNDS + 1):  # round 0 warms up
        for name, (step, _) in paths.items():
            t0 = time.perf_counter_ns()
            for _ in range(args.steps):
                clocks[name] += 1
                step(clocks[name])
            sync()
            if r:
                samples[name].append((time.perf_counter_ns() - t0) / args.steps)
    domains = {name: stats(s) for name, s in samples.items()}
    ours = domains["tessera"]["median_ns"]
    anchors = [{"anchor": name, "median_ns": d["median_ns"], "stats": d, "ratio_anchor_over_tessera":
                d["median_ns"] / ours} for name, d in domains.items() if name != "tessera"]
    for name, d in domains.items():
        ratio = "" if name == "tessera" else f"  ({d['median_ns'] / ours:.2f}x tessera's time)"
        print(f"{args.size} {name}: {d['median_ns'] / 1e3:.1f} us a step{ratio}"
              f"{'' if d['stable'] else '  (unstable)'}")
    if args.packet:
        s = SIZES[args.size]
        case = {"name": f"train_step_adamw_mlp_{args.size}", "lane": target, "model": s,
                "primary_domain": "step", "domains": {"step": domains["tessera"]},
                "stable": domains["tessera"]["stable"], "anchors": anchors,
                "oracle": [dict(checks[n], path=n) for n in checks],
                "sampling_used": {"rounds": ROUNDS, "steps_per_round": args.steps, "cohorts": COHORTS,
                                  "stability_pct": STABILITY_PCT}}
        body = {"kind": "train_step", "spec": {"path": "bench/train_step.py", "size": args.size},
                "anchor_tools": tools,
                "timing_domains": {"step": f"host clock around rounds of {args.steps} steps, each round ending "
                                           "in a synchronize, per step"},
                "all_checks_pass": all(c["pass"] for c in checks.values()), "cases": [case]}
        # sealed before the file is opened: opening it in the tree would make the tree dirty
        sealed = _core.seal_packet(json.dumps(body), target, args.commit, args.fingerprint, args.unsealed)
        with open(args.packet, "w") as f:
            f.write(sealed)
        print(f"packet: {args.packet}")


if __name__ == "__main__":
    main()
