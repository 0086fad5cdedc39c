"""List the CuTe DSL example files that call setmaxregister_{increase,decrease} (or the older
warpgroup_reg_alloc/dealloc names), read from the pinned CUTLASS commit with `git show`, not
from the working tree, so the answer is the pinned tree's.

    python scripts/enumerate_setmaxregister.py [--under cute/blackwell] [--commit <sha>]

Prints one line per file, `<path>: <calls>` with the line numbers of each call, then a count.
Cited by knowledge/languages/cute-dsl/optimizations/setmaxnreg-producer-consumer-rebalance.md.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CUTLASS = ROOT / "third_party" / "cutlass"
EXAMPLES = "examples/python/CuTeDSL"
CALL_RE = re.compile(r"\b(setmaxregister_(?:increase|decrease)|warpgroup_reg_(?:alloc|dealloc))\(")


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(CUTLASS), *args], check=True, capture_output=True, text=True
    ).stdout


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--under", default="cute/blackwell", help="folder under examples/python/CuTeDSL")
    p.add_argument("--commit", default=None, help="CUTLASS commit (default: the pinned HEAD)")
    args = p.parse_args()
    commit = args.commit or git("rev-parse", "HEAD").strip()
    prefix = f"{EXAMPLES}/{args.under.strip('/')}/"
    files = [f for f in git("ls-tree", "-r", "--name-only", commit, prefix).splitlines()]
    hits = 0
    for f in sorted(x for x in files if x.endswith(".py")):
        calls = [
            f"{m.group(1)}@L{n}"
            for n, line in enumerate(git("show", f"{commit}:{f}").splitlines(), 1)
            for m in CALL_RE.finditer(line)
        ]
        if calls:
            hits += 1
            print(f"{f[len(EXAMPLES) + 1 :]}: {', '.join(calls)}")
    print(f"{hits} files under {args.under} call setmaxregister at CUTLASS {commit[:9]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
