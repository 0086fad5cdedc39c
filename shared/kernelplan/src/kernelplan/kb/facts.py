"""Facts read out of one knowledge-base file, shared by the lint and the catalogs."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from .citations import example_paths, result_citations, source_citations
from .markdown import PLACEHOLDER_RE, Doc, Section, inline_code, tables
from .templates import RELATION_VERBS

RELATION_RE = re.compile(r"^\s*(?:\*\*)?Relation(?:\*\*)?\s*:\s*(?:\*\*)?\s*(?P<rest>.*?)\s*$")
LINK_RE = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")
PART_RE = re.compile(r"^(?P<verb>[A-Za-z]+)\s+(?P<target>\S.*)$")


@dataclass
class Relation:
    line: int
    new: bool
    links: list[tuple[str, str]] = field(default_factory=list)  # (verb, knowledge/ path)
    problems: list[str] = field(default_factory=list)

    def text(self) -> str:
        if self.new:
            return "new"
        return "; ".join(f"{verb} {target}" for verb, target in self.links)


def _resolve_entry(doc: Doc, raw: str) -> str:
    """A relation target as a path relative to the repository root."""
    link = LINK_RE.search(raw)
    if link:
        base = posixpath.dirname(doc.rel)
        return posixpath.normpath(posixpath.join(base, link.group("target").split("#")[0]))
    spans = inline_code(raw)
    target = (spans[0] if spans else raw.split()[0]).strip().rstrip(".,;")
    if target.startswith("knowledge/"):
        return posixpath.normpath(target)
    return posixpath.normpath("knowledge/" + target)


def relation(doc: Doc) -> Relation | None:
    """The file's `Relation:` line (the first one outside code), parsed."""
    for lineno, text in doc.prose():
        m = RELATION_RE.match(text)
        if not m:
            continue
        rest = m.group("rest")
        rel = Relation(lineno, new=False)
        if re.match(r"^new\b", rest, re.IGNORECASE):
            rel.new = True
            return rel
        for part in [p.strip() for p in rest.split(";") if p.strip()]:
            pm = PART_RE.match(part)
            verb = pm.group("verb").casefold() if pm else ""
            if not pm or verb not in RELATION_VERBS:
                rel.problems.append(
                    f"cannot read relation {part!r}: write 'Relation: new' or "
                    "'Relation: confirms|refines|contradicts `<path under knowledge/>`'"
                )
                continue
            rel.links.append((verb, _resolve_entry(doc, pm.group("target"))))
        if not rel.links and not rel.problems:
            rel.problems.append(
                "empty Relation line: write 'Relation: new' or "
                "'Relation: confirms|refines|contradicts `<path under knowledge/>`'"
            )
        return rel
    return None


def section(doc: Doc, title: str, level: int = 2) -> Section | None:
    found = doc.find(title, level)
    return found[0] if found else None


def first_text(doc: Doc, title: str, limit: int = 110) -> str:
    """The first paragraph or list item of a section, on one line, shortened."""
    sec = section(doc, title)
    if sec is None:
        return ""
    words: list[str] = []
    for _, text, code in doc.body(sec):
        s = text.strip()
        if code or s.startswith(("|", "#", "<!--")) or PLACEHOLDER_RE.match(s):
            if words:
                break
            continue
        if not s:
            if words:
                break
            continue
        is_item = s[:2] in ("- ", "* ", "+ ")
        if words and is_item:
            break
        words.extend((s[2:] if is_item else s).split())
    out = " ".join(words)
    if len(out) > limit:
        out = out[: limit - 3].rsplit(" ", 1)[0] + "..."
    return out


def cited_examples(doc: Doc) -> list[str]:
    """Example paths that the file cites with a line range, in order, without repeats."""
    seen: dict[str, None] = {}
    for c in source_citations(doc.prose()):
        seen.setdefault(c.path, None)
    return list(seen)


def header_examples(doc: Doc) -> list[tuple[int, str]]:
    """Bare example paths in the header (between the title and the first section)."""
    return example_paths(doc.preamble())


def labelled_paths(doc: Doc, sec: Section | None, label: str) -> list[tuple[int, str]]:
    """Backticked spans on lines that start with `label:` inside a section."""
    if sec is None:
        return []
    out = []
    for lineno, text, code in doc.body(sec):
        if code:
            continue
        s = text.strip().lstrip("-*+ ").replace("**", "")
        if s.casefold().startswith(label.casefold() + ":"):
            out.extend((lineno, span.strip()) for span in inline_code(s))
    return out


@dataclass
class Evidence:
    records: list[str] = field(default_factory=list)
    figures: int = 0
    pending: int = 0

    def text(self) -> str:
        parts = []
        if self.records:
            n = len(self.records)
            parts.append(f"{n} record{'s' if n != 1 else ''}")
        if self.pending:
            parts.append("pending")
        return ", ".join(parts) if parts else "none"


def is_pending_cell(cell: str) -> bool:
    return cell.strip().strip("`*_ ").casefold().startswith("pending")


def evidence(doc: Doc, title: str = "Performance Evidence") -> Evidence:
    ev = Evidence()
    sec = section(doc, title)
    if sec is None:
        return ev
    if doc.is_pending(sec):
        ev.pending += 1
    for table in tables(doc.body(sec)):
        col = table.column("Value")
        for lineno, cells in table.rows:
            value = cells[col] if col is not None and col < len(cells) else ""
            if is_pending_cell(value):
                ev.pending += 1
                continue
            if value.strip():
                ev.figures += 1
            for c in result_citations([(lineno, " ".join(cells))]):
                if c.path not in ev.records:
                    ev.records.append(c.path)
    return ev
