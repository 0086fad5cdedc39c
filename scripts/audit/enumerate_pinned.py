"""Enumerations over the pinned CUTLASS tree that back (or narrow) the universal claims of
the knowledge entries under knowledge/{optimizations,anti-patterns,reading,kernels}/.

Each query is a regular expression run with `git grep` against the pinned commit (not the
working tree, which is a sparse checkout), restricted to one folder under
examples/python/CuTeDSL. The output of query NAME is written to scripts/audit/out/NAME.txt:
one `path:line: text` row per match, then a summary line with the match and file counts.

    python scripts/audit/enumerate_pinned.py              # regenerate every output
    python scripts/audit/enumerate_pinned.py --check      # fail if a committed output differs
    python scripts/audit/enumerate_pinned.py --only NAME  # one query, printed

Cited by the audit logs under knowledge/audit/ (claim -> query name -> output file).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CUTLASS = ROOT / "third_party" / "cutlass"
EXAMPLES = "examples/python/CuTeDSL"
OUT = Path(__file__).resolve().parent / "out"

# name: (folder under examples/python/CuTeDSL, extended regex, what it settles)
QUERIES: dict[str, tuple[str, str, str]] = {}


def query(name: str, under: str, regex: str, what: str) -> None:
    QUERIES[name] = (under, regex, what)


query(
    "tutorial-literal-stage-counts",
    "cute/blackwell/tutorial/tutorial_gemm",
    r"^\s*(self\.)?(num_)?ab_stages? = [0-9]+",
    "literal A/B stage counts in the Blackwell GEMM tutorials (smem-budget-to-stage-count)",
)
query(
    "compute-stages-definitions",
    "cute",
    r"def _compute_stages\(",
    "which examples derive their stage count in a _compute_stages helper",
)
query(
    "compute-stages-size-in-bytes",
    "cute",
    r"ab_bytes_per_stage = cute\.size_in_bytes|^\s*\) \+ cute\.size_in_bytes\(b_dtype",
    "which _compute_stages helpers size a stage from the one-stage SMEM layout",
)
query(
    "smem-capacity-calls",
    "cute",
    r"get_smem_capacity_in_bytes\(",
    "where the examples read the SMEM capacity, and with which arch argument",
)


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(CUTLASS), *args], check=True, capture_output=True, text=True
    ).stdout


def run(name: str, commit: str) -> str:
    under, regex, what = QUERIES[name]
    prefix = f"{EXAMPLES}/{under.strip('/')}"
    proc = subprocess.run(
        ["git", "-C", str(CUTLASS), "grep", "-n", "-E", regex, commit, "--", prefix],
        capture_output=True,
        text=True,
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr)
    rows = []
    for line in proc.stdout.splitlines():
        _, path, lineno, text = line.split(":", 3)
        rows.append(f"{path[len(EXAMPLES) + 1 :]}:L{lineno}: {text.strip()}")
    rows.sort(key=lambda r: (r.split(":L")[0], int(r.split(":L")[1].split(":")[0])))
    files = {r.split(":L")[0] for r in rows}
    head = [
        f"# {name}: {what}",
        f"# git grep -n -E '{regex}' {commit[:9]} -- {prefix}",
    ]
    tail = [f"# {len(rows)} matches in {len(files)} files under {under} at CUTLASS {commit[:9]}"]
    return "\n".join(head + rows + tail) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true")
    p.add_argument("--only", default=None)
    args = p.parse_args()
    commit = git("rev-parse", "HEAD").strip()
    names = [args.only] if args.only else sorted(QUERIES)
    bad = 0
    for name in names:
        text = run(name, commit)
        path = OUT / f"{name}.txt"
        if args.only:
            sys.stdout.write(text)
        elif args.check:
            if not path.is_file() or path.read_text() != text:
                print(f"differs: {path.relative_to(ROOT)}")
                bad += 1
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)} ({text.splitlines()[-1][2:]})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
