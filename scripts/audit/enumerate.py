"""Enumerations over the pinned CUTLASS tree that back (or correct) the universal claims of the
knowledge base ("the examples use ...", "every example calls ..."). Read with `git ls-tree` and
`git show` at the pinned commit, not the (sparse) working tree, so the answer is the pin's.

    uv run python scripts/audit/enumerate.py            # every query
    uv run python scripts/audit/enumerate.py tmem-relinquish

Output: per query, one line per matching file with the line numbers of the matches, then a
count. The committed output is knowledge/audit/checks/enumerations.txt; the audit logs under
knowledge/audit/ cite it by query name.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CUTLASS = ROOT / "third_party" / "cutlass"
EXAMPLES = "examples/python/CuTeDSL"
PIN = "7107b0553"


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(CUTLASS), *args], check=True, capture_output=True, text=True
    ).stdout


def files(under: str) -> list[str]:
    out = git("ls-tree", "-r", "--name-only", "HEAD", f"{EXAMPLES}/{under}").splitlines()
    return sorted(f for f in out if f.endswith(".py"))


def hits(path: str, pattern: str) -> list[int]:
    rx = re.compile(pattern)
    return [
        n for n, line in enumerate(git("show", f"HEAD:{path}").splitlines(), 1) if rx.search(line)
    ]


def rel(path: str) -> str:
    return path[len(EXAMPLES) + 1 :]


def q_prefetch_stages() -> list[str]:
    """Every `prefetch_stages=` argument in the example .py files, with its value."""
    out = []
    for f in files("."):
        text = git("show", f"HEAD:{f}").splitlines()
        for n, line in enumerate(text, 1):
            m = re.search(r"prefetch_stages\s*=\s*([^),]+)", line)
            if m:
                out.append(f"{rel(f)}:L{n}: prefetch_stages={m.group(1).strip()}")
    out.append(f"{len(out)} uses")
    return out


def q_tmem_relinquish() -> list[str]:
    """Files under cute/blackwell that allocate TMEM (TmemAllocator.allocate or
    cute.arch.alloc_tmem), and whether they call relinquish_alloc_permit."""
    out, n_alloc, n_rel = [], 0, 0
    for f in files("cute/blackwell"):
        alloc = hits(f, r"\b(tmem\w*\.allocate\(|alloc_tmem\()")
        if not alloc:
            continue
        n_alloc += 1
        rel_lines = hits(f, r"relinquish")
        n_rel += bool(rel_lines)
        out.append(
            f"{rel(f)}: allocate@L{','.join(map(str, alloc))}; relinquish@"
            + (",".join(f"L{x}" for x in rel_lines) if rel_lines else "NONE")
        )
    out.append(f"{n_alloc} files allocate TMEM, {n_rel} of them call relinquish_alloc_permit")
    return out


def q_setmaxregister() -> list[str]:
    """Files calling setmaxregister_{increase,decrease} or warpgroup_reg_{alloc,dealloc}, per
    architecture folder (scripts/enumerate_setmaxregister.py lists the lines)."""
    out = []
    for under in ("cute/hopper", "cute/blackwell"):
        fs = [
            f
            for f in files(under)
            if hits(f, r"\b(setmaxregister_(increase|decrease)|warpgroup_reg_(alloc|dealloc))\(")
        ]
        out += [rel(f) for f in fs]
        out.append(f"{len(fs)} files under {under}")
    return out


def q_help_prefix_flags() -> list[str]:
    """argparse options in the example .py files that are a prefix of --help (--h, --he, --hel):
    a user passing one would have the DSL's own argparse read it as --help."""
    out = []
    for f in files("."):
        for n in hits(f, r"""["']--h(e(l)?)?["']"""):
            out.append(f"{rel(f)}:L{n}")
    out.append(f"{len(out)} option strings")
    return out


QUERIES = {
    "prefetch-stages": q_prefetch_stages,
    "tmem-relinquish": q_tmem_relinquish,
    "setmaxregister": q_setmaxregister,
    "help-prefix-flags": q_help_prefix_flags,
}


def main() -> int:
    sha = git("rev-parse", "HEAD").strip()
    if not sha.startswith(PIN):
        sys.exit(f"third_party/cutlass is at {sha[:9]}, the audit is for {PIN}")
    names = sys.argv[1:] or list(QUERIES)
    for name in names:
        fn = QUERIES[name]
        print(f"## {name} (CUTLASS {sha[:9]}): {' '.join(fn.__doc__.split())}")
        for line in fn():
            print(line)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
