"""Just enough Markdown for the knowledge base: headings, sections, inline code and tables.

Lines inside fenced code blocks (``` or ~~~) are never headings, citations or table rows:
a ``# comment`` in a Python snippet must not open a section.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE_RE = re.compile(r"^\s*(```+|~~~+)")
INLINE_CODE_RE = re.compile(r"`([^`\n]+)`")
# A line that only holds a template placeholder such as "- [Metric 1]" or "[How it works]".
PLACEHOLDER_RE = re.compile(r"^\s*(?:[-*+]\s+)?\[[^\]]*\]\s*$")
TABLE_SEPARATOR_RE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def normalise_title(title: str) -> str:
    """Case-folded heading text with runs of spaces collapsed (for matching section names)."""
    return " ".join(title.replace("*", "").split()).casefold()


@dataclass(frozen=True)
class Section:
    level: int
    title: str
    line: int  # 1-based line of the heading
    start: int  # 0-based index of the first body line
    own_end: int  # exclusive index: the next heading of any level
    end: int  # exclusive index: the next heading of the same or a higher level


@dataclass
class Doc:
    path: Path
    rel: str  # path relative to the repository root, with forward slashes
    lines: list[str]
    in_code: list[bool]  # True for lines inside a fenced block, fences included
    sections: list[Section]

    @classmethod
    def read(cls, path: Path, rel: str) -> Doc:
        return cls.parse(path.read_text(encoding="utf-8"), path, rel)

    @classmethod
    def parse(cls, text: str, path: Path, rel: str) -> Doc:
        lines = text.splitlines()
        in_code: list[bool] = []
        closer: re.Pattern[str] | None = None  # what ends the open fence, if one is open
        for line in lines:
            m = FENCE_RE.match(line)
            if closer is None and m:
                mark = m.group(1)
                closer = re.compile(f"{re.escape(mark[0])}{{{len(mark)},}}")
                in_code.append(True)
            elif closer is not None:
                in_code.append(True)
                if closer.fullmatch(line.strip()):
                    closer = None
            else:
                in_code.append(False)
        heads: list[tuple[int, int, str]] = []
        for i, line in enumerate(lines):
            if in_code[i]:
                continue
            m = HEADING_RE.match(line)
            if m:
                heads.append((i, len(m.group(1)), m.group(2).strip()))
        sections = []
        for k, (i, level, title) in enumerate(heads):
            own_end = heads[k + 1][0] if k + 1 < len(heads) else len(lines)
            end = len(lines)
            for j, lvl, _ in heads[k + 1 :]:
                if lvl <= level:
                    end = j
                    break
            sections.append(Section(level, title, i + 1, i + 1, own_end, end))
        return cls(path, rel, lines, in_code, sections)

    # ---- navigation -------------------------------------------------------------------------

    @property
    def title(self) -> Section | None:
        for s in self.sections:
            if s.level == 1:
                return s
        return None

    def find(self, title: str, level: int | None = None) -> list[Section]:
        want = normalise_title(title)
        return [
            s
            for s in self.sections
            if normalise_title(s.title) == want and (level is None or s.level == level)
        ]

    def parent(self, section: Section) -> Section | None:
        """The nearest heading above `section` with a lower level."""
        best = None
        for s in self.sections:
            if s.line >= section.line:
                break
            if s.level < section.level:
                best = s
        return best

    def preamble(self) -> list[tuple[int, str]]:
        """(line number, text) of the lines after the title and before the first section."""
        start = self.title.start if self.title else 0
        end = len(self.lines)
        for s in self.sections:
            if s.level >= 2 and s.line - 1 >= start:
                end = s.line - 1
                break
        return [(i + 1, self.lines[i]) for i in range(start, end) if not self.in_code[i]]

    def body(self, section: Section, own: bool = False) -> list[tuple[int, str, bool]]:
        """(line number, text, inside code) for the section's body lines."""
        stop = section.own_end if own else section.end
        return [(i + 1, self.lines[i], self.in_code[i]) for i in range(section.start, stop)]

    def prose(self, start: int = 0, end: int | None = None) -> list[tuple[int, str]]:
        """(line number, text) of the lines outside code fences in [start, end)."""
        stop = len(self.lines) if end is None else end
        return [(i + 1, self.lines[i]) for i in range(start, stop) if not self.in_code[i]]

    # ---- content tests ----------------------------------------------------------------------

    def meaningful(self, section: Section, own: bool = False) -> list[tuple[int, str]]:
        """Body lines that carry content: not blank, not an HTML comment, not a placeholder,
        not a sub-heading, not a bare code fence."""
        out = []
        in_comment = False
        for lineno, text, code in self.body(section, own):
            stripped = text.strip()
            if code:
                if stripped and not FENCE_RE.match(text):
                    out.append((lineno, text))
                continue
            if in_comment:
                if "-->" in stripped:
                    in_comment = False
                    stripped = stripped.split("-->", 1)[1].strip()
                else:
                    continue
            while "<!--" in stripped:
                before, _, after = stripped.partition("<!--")
                if "-->" in after:
                    stripped = (before + after.split("-->", 1)[1]).strip()
                else:
                    in_comment = True
                    stripped = before.strip()
                    break
            if not stripped or HEADING_RE.match(stripped) or PLACEHOLDER_RE.match(stripped):
                continue
            out.append((lineno, text))
        return out

    def is_pending(self, section: Section) -> bool:
        """True when the section's content starts with the word 'pending'."""
        lines = self.meaningful(section)
        if not lines:
            return False
        first = lines[0][1].strip().lstrip("-*+ >|").strip("`*_ ").casefold()
        return first.startswith("pending")


def inline_code(text: str) -> list[str]:
    """The contents of the backticked spans in one line."""
    return INLINE_CODE_RE.findall(text)


def split_row(line: str) -> list[str]:
    """Cells of one Markdown table row; a backslash-escaped pipe stays inside its cell."""
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    cells, cur, i = [], [], 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s) and s[i + 1] == "|":
            cur.append("|")
            i += 2
            continue
        if ch == "|":
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    cells.append("".join(cur).strip())
    return cells


@dataclass(frozen=True)
class Table:
    header_line: int
    header: list[str]
    rows: list[tuple[int, list[str]]]  # (line number, cells)

    def column(self, name: str) -> int | None:
        want = normalise_title(name)
        for i, h in enumerate(self.header):
            if normalise_title(h) == want:
                return i
        return None


def tables(lines: list[tuple[int, str, bool]]) -> list[Table]:
    """The pipe tables among (line number, text, inside code) lines."""
    out: list[Table] = []
    i = 0
    while i < len(lines):
        lineno, text, code = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        if (
            not code
            and text.lstrip().startswith("|")
            and nxt is not None
            and not nxt[2]
            and TABLE_SEPARATOR_RE.match(nxt[1])
        ):
            header = split_row(text)
            rows = []
            j = i + 2
            while j < len(lines) and not lines[j][2] and lines[j][1].lstrip().startswith("|"):
                rows.append((lines[j][0], split_row(lines[j][1])))
                j += 1
            out.append(Table(lineno, header, rows))
            i = j
        else:
            i += 1
    return out


def escape_cell(text: str) -> str:
    """Text made safe for one Markdown table cell."""
    return " ".join(text.replace("|", "\\|").split())
