"""Figures half of the audit (share C): every number in an entry's claims against the records
the claim cites.

    uv run python scripts/audit/figures.py knowledge/kernels/mla-decode.md [--out DIR]

For each claim (bullet, paragraph or table row, as `claims.py` splits them) the records it
cites are loaded; if it cites none, the records cited anywhere in the same section (a table
whose records are listed above it) and then in the whole entry are used. Every number in the
claim (outside citations, paths, commits and link targets) is looked up among all numeric
leaves of those records, matched at the precision it is written with (97.4 matches
97.424...; 43.1 matches a fraction 0.431 read as a percentage; 225 KB matches 230400 B when
the claim says KB). Each number is printed as

    <number>  <record-suffix>:<json.path>     (found)
    <number>  weak <record>:<path>            (only a list element or a digit run
                                               inside a string: read by hand)
    <number>  source <file>:L<n>              (written in the claim's cited source lines)
    <number>  UNMATCHED                       (not a record field: derived, a source fact,
                                               a problem size, or wrong)

UNMATCHED numbers are the ones the audit then recomputes by hand (ratios, sums, products)
or reads in a source line; the entry's audit log records the verdict. Small integers
(< 10) and numbers inside `path:Lnn`, record paths, commits and dates are skipped.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from claims import blocks, source_lines  # noqa: E402

CITE_RE = re.compile(r"`?([\w.][\w./+-]*\.py):L(\d+)(?:-L(\d+))?`?")

RECORD_RE = re.compile(r"results/[\w./+:@=-]+\.json")
NUM_RE = re.compile(r"(?<![\w.])[-+]?\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")
# Spans that are not figures: code spans with a path or a line citation, link targets,
# commits, dates and times, ISO stamps, versions.
DROP_RES = [
    re.compile(r"`[^`]*(?:/|:L\d)[^`]*`"),
    re.compile(r"\]\([^)]*\)"),
    re.compile(r"\b[0-9a-f]{7,40}\b"),
    re.compile(r"\d{4}-\d{2}-\d{2}(?:T[\d:.-]+Z?)?"),
    re.compile(r"\d{2}:\d{2}(?::\d{2})?Z?"),
    re.compile(r"\b\d+\.\d+\.\d+(?:\.\w+)?\b"),
    re.compile(
        r"[\w./-]+\.(?:py|cuh|cu|h|md|log|json|png|cpp):?L?\d*(?:-L\d+)?(?:,\s*L\d+(?:-L\d+)?)*"
    ),
    re.compile(r"\bL\d+(?:-L\d+)?\b"),
    re.compile(r"\bsm_\d+a?\b|\bSM\d+\b|\bsm\d+\b"),
    re.compile(r"\b(?:fp|bf|int|e4m|e5m|uint|float)\d+\w*\b", re.IGNORECASE),
]


WEAK_RE = re.compile(r"samples|busy_sm_mhz|~str|\[\d+\]$")


@cache
def leaves(record: str) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []

    def walk(x, path):
        if isinstance(x, bool):
            return
        if isinstance(x, (int, float)):
            out.append((path, float(x)))
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{path}.{k}" if path else k)
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")
        elif isinstance(x, str):
            # numbers inside strings (kernel names, notes) count too
            for m in re.finditer(r"\d+(?:\.\d+)?", x):
                out.append((path + "~str", float(m.group())))

    p = ROOT / record
    if p.exists():
        walk(json.loads(p.read_text(encoding="utf-8")), "")
    return out


def matches(token: str, value: float, context: str) -> bool:
    x = float(token.replace(",", ""))
    dec = len(token.split(".")[1]) if "." in token else 0
    tol = 0.5 * 10 ** (-dec) + 1e-9
    cands = [value, value * 100]
    if re.search(r"\b(?:KB|KiB|kB)\b", context):
        cands += [value / 1024, value / 1000]
    if re.search(r"\b(?:MB|MiB)\b", context):
        cands += [value / 2**20, value / 1e6]
    if re.search(r"\bk cycles\b|\bk\b", context):
        cands += [value / 1000]
    if re.search(r"\bms\b", context):
        cands += [value / 1000]
    return any(abs(c - x) <= tol * max(1.0, 1e-12) for c in cands)


def numbers(body: str) -> list[str]:
    text = body
    for r in DROP_RES:
        text = r.sub(" ", text)
    out = []
    for m in NUM_RE.finditer(text):
        tok = m.group().lstrip("+")
        try:
            v = float(tok.replace(",", ""))
        except ValueError:
            continue
        if "." not in tok and abs(v) < 10:
            continue
        out.append(tok)
    return out


def in_source(tok: str, cites) -> str | None:
    """The number written literally in one of the claim's cited source ranges (at the pin),
    or in the cited ranges of its section when the claim cites none."""
    pat = re.compile(r"(?<![\w.])" + re.escape(tok.replace(",", "")) + r"(?![\w])")
    for path, a, b in cites:
        src = source_lines(path)
        if not src:
            continue
        lo, hi = int(a), int(b or a)
        for n in range(max(1, lo), min(len(src), hi) + 1):
            if pat.search(src[n - 1]):
                return f"source {path.rsplit('/', 1)[-1]}:L{n}"
    return None


def audit(md: Path) -> tuple[str, dict]:
    text = md.read_text(encoding="utf-8")
    rel = md.resolve().relative_to(ROOT)
    all_records = sorted(set(RECORD_RE.findall(text)))
    section_records: dict[str, set[str]] = {}
    for _, section, body in blocks(text):
        section_records.setdefault(section, set()).update(RECORD_RE.findall(body))
    section_cites: dict[str, list] = {}
    for _, section, body in blocks(text):
        section_cites.setdefault(section, []).extend(CITE_RE.findall(body))
    lines = [f"# figures of {rel}: every number against the records its claim cites", ""]
    stats = {"claims": 0, "numbers": 0, "matched": 0, "weak": 0, "unmatched": 0}
    for lineno, section, body in blocks(text):
        own = sorted(set(RECORD_RE.findall(body)))
        scope = own or sorted(section_records.get(section, ())) or all_records
        cites = CITE_RE.findall(body) or section_cites.get(section, [])
        nums = numbers(body)
        if not nums:
            continue
        stats["claims"] += 1
        where = "own" if own else ("section" if section_records.get(section) else "entry")
        lines.append(f"L{lineno} [{section}] ({len(scope)} records, {where}) {body[:140]}")
        for tok in nums:
            stats["numbers"] += 1
            hit = None
            # named fields first; list samples and numbers inside strings only after
            for weak in (False, True):
                for r in scope:
                    for path, v in leaves(r):
                        if (WEAK_RE.search(path) is not None) != weak:
                            continue
                        if matches(tok, v, body):
                            hit = ("weak " if weak else "") + f"{r.rsplit('-', 1)[-1][:-5]}:{path}"
                            break
                    if hit:
                        break
                if hit:
                    break
            if not hit:
                hit = in_source(tok, cites)
            if hit and hit.startswith("weak "):
                stats["weak"] += 1
            elif hit:
                stats["matched"] += 1
            else:
                stats["unmatched"] += 1
            lines.append(f"  {tok:>12}  {hit or 'UNMATCHED'}")
    lines += ["", "summary: " + ", ".join(f"{k}={v}" for k, v in stats.items())]
    return "\n".join(lines) + "\n", stats


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("entries", nargs="+")
    p.add_argument("--out", help="write <out>/<name>.figures.txt per entry")
    p.add_argument("--prefix", default="", help="prefix of the output name (kernels-, reading-)")
    a = p.parse_args()
    for e in a.entries:
        report, stats = audit(Path(e))
        if a.out:
            Path(a.out).mkdir(parents=True, exist_ok=True)
            (Path(a.out) / f"{a.prefix}{Path(e).stem}.figures.txt").write_text(
                report, encoding="utf-8"
            )
            print(f"{e}: {stats}")
        else:
            sys.stdout.write(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
