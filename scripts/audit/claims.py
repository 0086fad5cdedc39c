"""Mechanical half of the knowledge-base audit: for each entry, every claim (a bullet, a
paragraph or a table row) with the source lines and records it cites, checked against the
pinned CUTLASS tree (read with `git show <pin>:<path>`, not the working tree) and results/.

    uv run python scripts/audit/claims.py knowledge/languages/cute-dsl/optimizations/X.md ...
    uv run python scripts/audit/claims.py --out knowledge/audit/checks <entries or folders>

For each claim it prints:
  - each source citation: whether the file exists at the pin and the range is inside it;
  - each identifier the claim names in backticks: found in the cited lines (`in-range`),
    elsewhere in a cited file (`in-file@Lnn`, the nearest line), or nowhere in them (`ABSENT`);
  - each record citation: whether the JSON record exists;
  - `UNIVERSAL` when the claim uses a universal word (never, always, all, every, none, no
    example, only, any), which the audit then either backs by an enumeration
    (scripts/audit/enumerate.py) or narrows.
`ABSENT` and `UNIVERSAL` are what a person then reads by hand; the audit log of the entry
(knowledge/audit/<entry>.md) records the verdict.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CUTLASS = ROOT / "third_party" / "cutlass"
EXAMPLES = "examples/python/CuTeDSL"
PIN = "7107b0553"

SOURCE_RE = re.compile(r"^(?P<path>[\w.][\w./+-]*):L(?P<start>\d+)(?:-L(?P<end>\d+))?$")
RESULT_RE = re.compile(r"^results/[\w./+:@=-]+\.json$")
CODE_RE = re.compile(r"`([^`]+)`")
WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
UNIVERSAL_RE = re.compile(
    r"\b(never|always|all|every|none|no example|no other|only|any)\b", re.IGNORECASE
)
# Words in code spans that are prose, Python or units, not identifiers to look for.
SKIP_WORDS = {
    "self",
    "None",
    "True",
    "False",
    "with",
    "from",
    "import",
    "return",
    "lambda",
    "range",
    "float16",
    "bfloat16",
    "float32",
    "cutlass",
    "cute",
    "torch",
    "python",
    "else",
    "elif",
}


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(CUTLASS), *args], check=True, capture_output=True, text=True
    ).stdout


@cache
def pin_commit() -> str:
    sha = git("rev-parse", "HEAD").strip()
    if not sha.startswith(PIN):
        sys.exit(f"third_party/cutlass is at {sha[:9]}, the audit is for {PIN}")
    return sha


@cache
def source_lines(path: str) -> list[str] | None:
    try:
        return git("show", f"{pin_commit()}:{EXAMPLES}/{path}").splitlines()
    except subprocess.CalledProcessError:
        return None


def blocks(text: str) -> list[tuple[int, str, str]]:
    """(first line number, section, text) of each bullet, paragraph and table row outside
    fenced code."""
    out: list[tuple[int, str, str]] = []
    cur: list[str] = []
    start = 0
    section = ""
    fenced = False

    def flush() -> None:
        nonlocal cur
        if cur:
            out.append((start, section, " ".join(s.strip() for s in cur)))
        cur = []

    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith("```"):
            flush()
            fenced = not fenced
            continue
        if fenced or s.startswith("<!--"):
            continue
        if s.startswith("#"):
            flush()
            section = s.lstrip("#").strip()
            continue
        if not s:
            flush()
            continue
        if s.startswith(("- ", "* ", "|")) or re.match(r"^\d+\. ", s):
            flush()
            start = n
            cur = [s]
            if s.startswith("|"):
                flush()
            continue
        if not cur:
            start = n
        cur.append(s)
    flush()
    return out


def nearest(lines: list[str], word: str, lo: int, hi: int) -> int | None:
    hits = [i for i, line in enumerate(lines, 1) if re.search(rf"\b{re.escape(word)}\b", line)]
    if not hits:
        return None
    return min(hits, key=lambda i: 0 if lo <= i <= hi else min(abs(i - lo), abs(i - hi)))


def audit_entry(md: Path) -> tuple[str, dict]:
    text = md.read_text(encoding="utf-8")
    rel = md.resolve().relative_to(ROOT).as_posix()
    out = [f"# {rel} (CUTLASS {pin_commit()[:9]})", ""]
    stats = dict(
        claims=0,
        source_citations=0,
        bad_ranges=0,
        records=0,
        missing_records=0,
        identifiers=0,
        absent=0,
        universal=0,
    )
    for lineno, section, body in blocks(text):
        spans = CODE_RE.findall(body)
        cites = [(m, s) for s in spans if (m := SOURCE_RE.match(s.strip()))]
        recs = [s for s in spans if RESULT_RE.match(s.strip())]
        universal = UNIVERSAL_RE.findall(body)
        if not (cites or recs or universal):
            continue
        stats["claims"] += 1
        out.append(f"L{lineno} [{section}] {body[:160]}{'...' if len(body) > 160 else ''}")
        if universal:
            stats["universal"] += 1
            out.append(f"  UNIVERSAL: {', '.join(sorted({u.lower() for u in universal}))}")
        ranges = []
        for m, s in cites:
            stats["source_citations"] += 1
            path, a = m.group("path"), int(m.group("start"))
            b = int(m.group("end") or a)
            lines = source_lines(path)
            if lines is None:
                stats["bad_ranges"] += 1
                out.append(f"  source {s}: NO SUCH FILE at the pin")
                continue
            ok = 1 <= a <= b <= len(lines)
            stats["bad_ranges"] += not ok
            out.append(f"  source {s}: {'ok' if ok else 'OUT OF RANGE'} ({len(lines)} lines)")
            ranges.append((path, a, b, lines))
        for r in recs:
            stats["records"] += 1
            exists = (ROOT / r).is_file()
            stats["missing_records"] += not exists
            if exists:
                json.loads((ROOT / r).read_text(encoding="utf-8"))
            out.append(f"  record {r}: {'exists' if exists else 'MISSING'}")
        if ranges:
            words = []
            for s in spans:
                if SOURCE_RE.match(s.strip()) or RESULT_RE.match(s.strip()) or "/" in s:
                    continue
                words += [w for w in WORD_RE.findall(s) if w not in SKIP_WORDS]
            for w in dict.fromkeys(words):
                stats["identifiers"] += 1
                where = None
                for _path, a, b, lines in ranges:
                    if any(re.search(rf"\b{re.escape(w)}\b", ln) for ln in lines[a - 1 : b]):
                        where = "in-range"
                        break
                if where is None:
                    for path, a, b, lines in ranges:
                        n = nearest(lines, w, a, b)
                        if n:
                            where = f"in-file@{path.rsplit('/', 1)[-1]}:L{n}"
                            break
                if where is None:
                    where = "ABSENT"
                    stats["absent"] += 1
                out.append(f"  `{w}`: {where}")
    out += ["", "summary: " + ", ".join(f"{k}={v}" for k, v in stats.items())]
    return "\n".join(out) + "\n", stats


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="+", help="entries or folders of entries")
    p.add_argument("--out", help="write <out>/<entry>.txt per entry instead of printing")
    args = p.parse_args()
    entries = []
    for s in args.paths:
        q = Path(s)
        entries += sorted(x for x in q.glob("*.md") if x.name != "README.md") if q.is_dir() else [q]
    for md in entries:
        report, _ = audit_entry(md)
        if args.out:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            (Path(args.out) / f"{md.stem}.txt").write_text(report, encoding="utf-8")
        else:
            print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
