"""One implementation's check repeated in ONE process, on a GPU: whether a check that passes in
a fresh process fails once the process has run other kernels (the caching allocator hands out
memory that still holds earlier values; SMEM and L2 hold what earlier kernels left).

    python scripts/experiments/check_repeat.py mla/mla_decode_sm90 b=32,t=4096 \\
        [--config step=62] [--before b=128,t=16384 ...] [--repeats 20] [--launches 3]

``--before`` problems are run first (one checked run each, their results printed), as
``kernelplan.alternate`` runs a table's earlier rows in the same process; then the check of
the problem is repeated ``--repeats`` times, each on fresh inputs with a new seed and
``--launches`` launches (outputs and scratch poisoned before the last). Prints one line per
check (seed, PASS/FAIL and the first failing output's summary) and a count. Exit 1 when any
repeat failed, 2 on bad input. Written in session 29, when the 16-bit default (step 62) at
h=128 (32, 4096) failed its check inside one alternated run (every element of O and LSE
non-finite) after passing in every fresh process before.
"""

from __future__ import annotations

import argparse
import sys

from kernelplan.alternate import parse_items, parse_problems
from kernelplan.errors import KernelPlanError, first_line
from kernelplan.registry import load_plan_class
from kernelplan.report import resolve_implementation


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="check_repeat.py")
    ap.add_argument("impl", help="package/kernel, e.g. mla/mla_decode_sm90")
    ap.add_argument("problem", help="KEY=VALUE,... of the problem to check, e.g. b=32,t=4096")
    ap.add_argument("--config", default="", help="config items, e.g. step=62")
    ap.add_argument("--before", action="append", default=[], metavar="KEY=VALUE,...")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--launches", type=int, default=3)
    a = ap.parse_args(argv)
    if a.repeats < 1 or a.launches < 1:
        print("error: --repeats and --launches take a whole number of at least 1", file=sys.stderr)
        return 2
    # every argument is checked before the GPU is looked for (a typo is one line anywhere)
    try:
        pkg, kernel = resolve_implementation(a.impl, None)
        plan = load_plan_class(pkg, kernel)()
        wl = plan.workload
        overrides = parse_items(a.config, a.config, "--config items") if a.config else {}
        (prob,) = parse_problems(wl, [a.problem])
        before = parse_problems(wl, a.before)
        cases = []
        for p in (*before, prob):
            p = plan.problem(p.to_dict())
            cases.append((p, plan.config(p, overrides)))
    except (KernelPlanError, ValueError) as e:
        print(f"error: {first_line(e)}", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("error: the check runs on a CUDA GPU; none is visible", file=sys.stderr)
        return 2

    def one(p, cfg, tag: str) -> bool:
        ok, results, info = plan.run_check(p, cfg, launches=a.launches)
        bad = [r.line() for r in results if not r.passed]
        seed = info.get("seed") if isinstance(info, dict) else None
        print(
            f"{tag} {p.label()} [{plan.build_label(p, cfg)}] seed={seed}: "
            + ("PASS" if ok else (bad[0][:240] if bad else "FAIL")),
            flush=True,
        )
        return ok

    for p, cfg in cases[:-1]:
        one(p, cfg, "before")
    p, cfg = cases[-1]
    failed = sum(not one(p, cfg, f"repeat {i + 1}/{a.repeats}") for i in range(a.repeats))
    print(f"{failed} of {a.repeats} repeat(s) failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
