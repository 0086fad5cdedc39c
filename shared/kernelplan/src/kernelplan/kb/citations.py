"""The two citation forms of the knowledge base, and the figures in evidence tables.

Source citation (one backticked span, path relative to examples/python/CuTeDSL):
    `cute/hopper/kernel/dense_gemm/dense_gemm.py:L202-L374`   a line range
    `cute/hopper/kernel/dense_gemm/dense_gemm.py:L88`         a single line

Result citation (one backticked span, path relative to the repository root):
    `results/<package>/<kernel>/<file>.json`
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .markdown import inline_code

EXAMPLES_ROOT = "examples/python/CuTeDSL"
# Prefixes that authors may be tempted to write; a citation must not carry them.
LONG_PREFIXES = (
    "third_party/cutlass/" + EXAMPLES_ROOT + "/",
    EXAMPLES_ROOT + "/",
)

SOURCE_RE = re.compile(r"^(?P<path>[\w.][\w./+-]*):L(?P<start>\d+)(?:-L(?P<end>\d+))?$")
RESULT_RE = re.compile(r"^results/[\w./+:@=-]+\.json$")
# A bare example path (used in reading-note headers and devlog Source sections).
EXAMPLE_PATH_RE = re.compile(r"^[\w.][\w./+-]*\.(?:py|ipynb|md|cpp|sh|txt)$")

# Numbers in a Value cell: a number touching a letter, digit or underscore on either side
# ("sm_90", "fp16", "128x128", "1.5x", "12us") is not a figure; thousands separators only in
# groups of three.
NUMBER_RE = re.compile(
    r"(?<![\w.])(?P<sign>-?)(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?"
    r"(?:[eE](?P<exp>[-+]?\d+))?(?![\w.,]?\w)"
)


@dataclass(frozen=True)
class SourceCitation:
    path: str
    start: int
    end: int
    line: int  # where it was written
    text: str


@dataclass(frozen=True)
class ResultCitation:
    path: str
    line: int


def source_citations(lines: list[tuple[int, str]]) -> list[SourceCitation]:
    out = []
    for lineno, text in lines:
        for span in inline_code(text):
            m = SOURCE_RE.match(span.strip())
            if m:
                start = int(m.group("start"))
                end = int(m.group("end") or start)
                out.append(SourceCitation(m.group("path"), start, end, lineno, span.strip()))
    return out


def result_citations(lines: list[tuple[int, str]]) -> list[ResultCitation]:
    out = []
    for lineno, text in lines:
        for span in inline_code(text):
            if RESULT_RE.match(span.strip()):
                out.append(ResultCitation(span.strip(), lineno))
    return out


def example_paths(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Backticked bare example paths (no line range), with the long prefixes removed."""
    out = []
    for lineno, text in lines:
        for span in inline_code(text):
            s = span.strip()
            for prefix in LONG_PREFIXES:
                if s.startswith(prefix):
                    s = s[len(prefix) :]
                    break
            if EXAMPLE_PATH_RE.match(s) and not s.startswith(("results/", "knowledge/")):
                out.append((lineno, s))
    return out


def strip_prefix(path: str) -> str:
    for prefix in LONG_PREFIXES:
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


@dataclass(frozen=True)
class Figure:
    text: str
    value: float
    decimals: int  # digits after the point that the figure shows (negative for 1e3 style)

    def matches(self, leaf: float) -> bool:
        """True when `leaf`, rounded to the figure's shown precision, equals the figure."""
        tol = 0.5 * 10.0 ** (-self.decimals)
        return abs(leaf - self.value) <= tol * (1 + 1e-9) + 1e-12 * abs(self.value)


def figures(cell: str) -> list[Figure]:
    out = []
    for m in NUMBER_RE.finditer(cell):
        digits = m.group("int").replace(",", "")
        frac = m.group("frac") or ""
        exp = int(m.group("exp") or 0)
        text = m.group(0)
        value = float(f"{m.group('sign')}{digits}{frac}e{exp}")
        decimals = max(len(frac) - 1, 0) - exp
        out.append(Figure(text, value, decimals))
    return out


#: Keys whose values are raw per-launch samples or sample series: a figure must be a summary
#: (median, p10, a count, ...), never "some sample that happens to equal it", so the figure
#: check does not look inside them.
RAW_SAMPLE_KEYS = frozenset({"samples_us", "samples", "sm_mhz_samples", "samples_mhz"})


def numeric_leaves(obj: object) -> list[float]:
    """Every number in a JSON value (booleans and NaN excluded), except inside raw-sample
    arrays (:data:`RAW_SAMPLE_KEYS`)."""
    out: list[float] = []
    stack = [obj]
    while stack:
        cur = stack.pop()
        if isinstance(cur, bool):
            continue
        if isinstance(cur, (int, float)):
            if not (isinstance(cur, float) and math.isnan(cur)):
                out.append(float(cur))
        elif isinstance(cur, dict):
            stack.extend(v for k, v in cur.items() if k not in RAW_SAMPLE_KEYS)
        elif isinstance(cur, list):
            stack.extend(cur)
    return out
