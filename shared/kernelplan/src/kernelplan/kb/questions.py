"""knowledge/QUESTIONS.md: questions a kernel engineer brings to the examples, each answered.

The file's format (knowledge/README.md shows it too):

    ### <number>. <the question>?
    Answer: [<entry title, section>](<path relative to knowledge/>#<section anchor>)
    <one or two sentences in the project's words>
    Source: `<example path>:L<start>-L<end>` ...

Every `###` heading is a question. The lint requires of each:

- exactly one `Answer:` line whose first link is a knowledge entry, and that entry is at most
  two hops from a catalog (`knowledge/CATALOG.md` or `knowledge/EXAMPLES.md` links to it, or
  links to an entry that links to it; a hop is a Markdown link a reader can click);
- at least one source citation (`path:L<start>-L<end>`) in its body, each one inside a range
  that the answering entry itself cites for that file, so the question points at lines its
  answer actually reads;

and of every link in the file: the target exists and, when it names an anchor (`#section`),
the target has a heading with that anchor (GitHub's and MyST's slug rule).
"""

from __future__ import annotations

import posixpath
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from .citations import SourceCitation, source_citations
from .layout import Layout
from .markdown import Doc

QUESTIONS_NAME = "QUESTIONS.md"
MAX_HOPS = 2
LINK_RE = re.compile(r"(?<!!)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")
ANSWER_RE = re.compile(r"^\s*(?:[-*+]\s+)?\**Answer:?\**:?\s")
SCHEME_RE = re.compile(r"^[a-z][a-z0-9+.-]*:")
_SLUG_DROP = re.compile(r"[^\w\- ]")

Report = Callable[[int, str], None]


def slug(title: str) -> str:
    """A heading's anchor as GitHub and MyST (`myst_heading_anchors`) make it: inline markup
    and punctuation dropped, lower case, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link keeps its text
    return _SLUG_DROP.sub("", text.strip().lower()).replace(" ", "-")


def anchors(doc: Doc) -> set[str]:
    """Every heading anchor of a document; a repeated slug gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for s in doc.sections:
        base = slug(s.title)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(doc: Doc) -> list[tuple[int, str, str]]:
    """(line, text, target) of the Markdown links outside code fences (images excluded)."""
    return [
        (lineno, m.group("text"), m.group("target"))
        for lineno, text in doc.prose()
        for m in LINK_RE.finditer(text)
    ]


def resolve(doc_rel: str, target: str) -> tuple[str, str] | None:
    """(path relative to the repository root, anchor) of a local link; None for a URL."""
    if SCHEME_RE.match(target):
        return None
    path, _, anchor = target.partition("#")
    if not path:
        return doc_rel, anchor
    return posixpath.normpath(posixpath.join(posixpath.dirname(doc_rel), path)), anchor


def hop_distances(layout: Layout, docs: dict[str, Doc]) -> dict[str, int]:
    """Fewest link hops from a catalog to each knowledge file (catalogs themselves at 0).
    QUESTIONS.md is not a way through: an answer must be reachable without it."""
    starts = [layout.rel(layout.catalog), layout.rel(layout.examples_catalog)]
    skip = layout.rel(layout.knowledge / QUESTIONS_NAME)
    dist = {s: 0 for s in starts if s in docs}
    queue = deque(dist)
    while queue:
        cur = queue.popleft()
        for _, _, target in links(docs[cur]):
            hit = resolve(cur, target)
            if hit is None:
                continue
            path = hit[0]
            if path in docs and path not in dist and path != skip:
                dist[path] = dist[cur] + 1
                queue.append(path)
    return dist


@dataclass(frozen=True)
class Question:
    line: int
    title: str
    body: list[tuple[int, str]]  # prose lines under the heading


def questions(doc: Doc) -> list[Question]:
    out = []
    for s in doc.sections:
        if s.level == 3:
            body = doc.prose(s.start, s.own_end)
            out.append(Question(s.line, s.title, body))
    return out


def _covered(c: SourceCitation, cited: list[SourceCitation]) -> bool:
    return any(c.path == e.path and e.start <= c.start and c.end <= e.end for e in cited)


def check(layout: Layout, doc: Doc, docs: dict[str, Doc], error: Report) -> list[Question]:
    """Report every defect of QUESTIONS.md through `error(line, message)`; returns the
    questions found."""
    # Anchors: a link to a section names a heading the target has.
    for lineno, _, target in links(doc):
        hit = resolve(doc.rel, target)
        if hit is None:
            continue
        path, anchor = hit  # a missing file is reported by the lint's check for every file
        if anchor and path.endswith(".md") and (layout.root / path).is_file():
            tdoc = docs.get(path) or Doc.read(layout.root / path, path)
            if anchor not in anchors(tdoc):
                error(lineno, f"link target {target}: {path} has no heading with anchor #{anchor}")
    dist = hop_distances(layout, docs)
    found = questions(doc)
    if not found:
        error(1, "no questions: write each as a '### <n>. <question>?' heading")
    for q in found:
        answers = [(n, t) for n, t in q.body if ANSWER_RE.match(t)]
        if len(answers) != 1:
            what = "no 'Answer:' line" if not answers else "more than one 'Answer:' line"
            error(q.line, f"question has {what}: link the entry that answers it")
            continue
        a_line, a_text = answers[0]
        a_links = [m.group("target") for m in LINK_RE.finditer(a_text)]
        hit = resolve(doc.rel, a_links[0]) if a_links else None
        if hit is None:
            error(a_line, "the Answer line links no knowledge entry")
            continue
        entry = hit[0]
        if entry not in docs:
            if (layout.root / entry).exists():
                error(a_line, f"answer {entry} is not a knowledge entry (knowledge/**/*.md)")
            continue  # a missing target is reported with the links above
        hops = dist.get(entry)
        if hops is None or hops > MAX_HOPS:
            far = "not reachable" if hops is None else f"{hops} hops"
            error(
                a_line,
                f"answer {entry} is {far} from the catalog (knowledge/CATALOG.md or "
                f"knowledge/EXAMPLES.md); at most {MAX_HOPS} allowed: link it from an entry "
                "the catalog lists",
            )
        cites = source_citations(q.body)
        if not cites:
            error(q.line, "question cites no source lines: add `<path>:L<start>-L<end>`")
            continue
        entry_cites = source_citations(docs[entry].prose())
        for c in cites:
            if not _covered(c, entry_cites):
                error(
                    c.line,
                    f"`{c.text}` is not among the lines {entry} cites: cite what the "
                    "answering entry reads",
                )
    return found
