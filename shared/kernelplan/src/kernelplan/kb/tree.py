"""Reading the repository for the knowledge base: its Markdown files, the result records
under results/, and the package adapters that declare which example they import."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .citations import strip_prefix
from .layout import CATALOG_NAME, EXAMPLES_NAME, Layout
from .markdown import Doc
from .questions import QUESTIONS_NAME
from .templates import DEVLOG_FOLDER, PATTERN_FOLDERS, READING_FOLDER

GENERATED = {CATALOG_NAME, EXAMPLES_NAME}
AUDIT_FOLDER = "audit"  # knowledge/audit/: one audit log per entry (issue 14)
LANGUAGE_FOLDER_RE = re.compile(r"^languages/[\w.-]+/(optimizations|anti-patterns)$")


@dataclass
class Entry:
    kind: str  # "pattern", "reading", "devlog", "readme", "questions", "audit", "other"
    folder: str  # folder relative to knowledge/ ("" for the top)
    doc: Doc

    @property
    def rel(self) -> str:
        return self.doc.rel

    @property
    def title(self) -> str:
        t = self.doc.title
        return t.title if t else Path(self.doc.rel).stem

    @property
    def is_anti_pattern(self) -> bool:
        return self.folder.endswith("anti-patterns")


def classify(rel_k: str) -> tuple[str, str]:
    """(kind, folder) for a Markdown file's path relative to knowledge/."""
    folder, _, name = rel_k.rpartition("/")
    if rel_k == QUESTIONS_NAME:
        return "questions", folder
    if name == "README.md":
        return "readme", folder
    if folder in PATTERN_FOLDERS or LANGUAGE_FOLDER_RE.match(folder):
        return "pattern", folder
    if folder == READING_FOLDER:
        return "reading", folder
    if folder == DEVLOG_FOLDER:
        return "devlog", folder
    if folder == AUDIT_FOLDER:  # audit logs: common checks (links, citations) only
        return "audit", folder
    return "other", folder


def scan_knowledge(layout: Layout) -> list[Entry]:
    """Every hand-written Markdown file under knowledge/ (generated catalogs excluded)."""
    out = []
    if not layout.knowledge.is_dir():
        return out
    for path in sorted(layout.knowledge.rglob("*.md")):
        rel_k = path.relative_to(layout.knowledge).as_posix()
        if rel_k in GENERATED:
            continue
        kind, folder = classify(rel_k)
        out.append(Entry(kind, folder, Doc.read(path, layout.rel(path))))
    return out


# ---- result records ----------------------------------------------------------------------


@dataclass
class Record:
    rel: str  # results/<package>/<kernel>/<file>.json
    data: dict | None
    error: str | None = None

    def get(self, *keys: str) -> object:
        cur: object = self.data
        for k in keys:
            if not isinstance(cur, dict):
                return None
            cur = cur.get(k)
        return cur


def load_record(layout: Layout, rel: str) -> Record:
    path = layout.root / rel
    if not path.is_file():
        return Record(rel, None, "no such file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return Record(rel, None, f"not valid JSON ({exc})")
    if not isinstance(data, dict):
        return Record(rel, None, "not a JSON object")
    return Record(rel, data)


def scan_records(layout: Layout) -> list[Record]:
    if not layout.results.is_dir():
        return []
    return [load_record(layout, layout.rel(p)) for p in sorted(layout.results.rglob("*.json"))]


# ---- package adapters --------------------------------------------------------------------

SOURCE_ATTR_RE = re.compile(
    r"""^[ \t]+source\s*(?::\s*[\w.\[\]]+\s*)?=\s*(["'])(?P<src>[^"']+)\1"""
)
# The same declaration with the string on the next line, in parentheses (long paths).
SOURCE_OPEN_RE = re.compile(r"""^[ \t]+source\s*(?::\s*[\w.\[\]]+\s*)?=\s*\(\s*$""")
SOURCE_CONT_RE = re.compile(r"""^\s*(["'])(?P<src>[^"']+)\1\s*,?\s*$""")


@dataclass(frozen=True)
class Adapter:
    package: str  # folder under packages/
    kernel: str  # the adapter's own folder name
    rel: str  # file path relative to the repository root
    line: int
    source: str  # example path relative to examples/python/CuTeDSL


def scan_adapters(layout: Layout) -> list[Adapter]:
    """Package adapters that declare `source = "<example path>"` as a class attribute."""
    out = []
    if not layout.packages.is_dir():
        return out
    for pkg in sorted(p for p in layout.packages.iterdir() if p.is_dir()):
        src = pkg / "src"
        if not src.is_dir():
            continue
        for path in sorted(src.rglob("*.py")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            lines = text.splitlines()
            for i, line in enumerate(lines, 1):
                m = SOURCE_ATTR_RE.match(line)
                if not m and SOURCE_OPEN_RE.match(line) and i < len(lines):
                    m = SOURCE_CONT_RE.match(lines[i])
                if m:
                    out.append(
                        Adapter(
                            pkg.name,
                            path.parent.name,
                            layout.rel(path),
                            i,
                            strip_prefix(m.group("src").strip()),
                        )
                    )
    return out


@dataclass
class RecordIndex:
    """Records grouped by the example they measure."""

    by_example: dict[str, list[Record]] = field(default_factory=dict)
    unmatched: list[Record] = field(default_factory=list)


def slug(text: str) -> str:
    """Folder names compared loosely: hopper_dense_gemm and hopper-dense-gemm are one."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def index_records(records: list[Record], adapters: list[Adapter]) -> RecordIndex:
    """Match each record to its example: its `source`, else the adapter whose package and
    kernel folder match the record's folder (or its `package`/`kernel`). A record whose
    `source` is present and null measures no example (a peer such as torch) and is skipped."""
    by_key: dict[tuple[str, str], str] = {}
    for a in adapters:
        by_key[(slug(a.package), slug(a.kernel))] = a.source
    idx = RecordIndex()
    for r in records:
        if r.data is None or ("source" in r.data and r.data["source"] is None):
            continue
        example = None
        src = r.get("source")
        if isinstance(src, str) and src:
            example = strip_prefix(src)
        else:
            parts = r.rel.split("/")
            keys = []
            if len(parts) >= 4:
                keys.append((slug(parts[1]), slug(parts[2])))
            pkg, kern = r.get("package"), r.get("kernel")
            if isinstance(pkg, str) and isinstance(kern, str):
                keys.append((slug(pkg), slug(kern)))
            for k in keys:
                if k in by_key:
                    example = by_key[k]
                    break
        if example:
            idx.by_example.setdefault(example, []).append(r)
        else:
            idx.unmatched.append(r)
    return idx
