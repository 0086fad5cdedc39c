"""`python -m kernelplan.kb lint`: every defect of the knowledge base as `file:line: message`."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from kernelplan.errors import KernelPlanError

from . import catalog, facts
from . import manifest as manifest_mod
from . import questions as questions_mod
from . import snippets as snippets_mod
from .citations import (
    LONG_PREFIXES,
    SOURCE_RE,
    figures,
    numeric_leaves,
    result_citations,
    source_citations,
)
from .layout import Layout, pinned_commit, tracked_files
from .markdown import Doc, inline_code, normalise_title, tables
from .templates import (
    CHECKLIST_ITEMS,
    DEVLOG_SECTIONS,
    PATTERN_SECTIONS,
    READING_SECTIONS,
    RELATION_VERBS,
)
from .tree import Entry, Record, load_record, scan_knowledge

REGENERATE = "run `python -m kernelplan.kb catalog`"
MANIFEST_HINT = "run `python -m kernelplan.kb manifest`"
KNOWLEDGE_REF_RE = re.compile(r"^knowledge/[\w./-]+\.md$")
LINK_RE = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)")


@dataclass(frozen=True, order=True)
class Defect:
    path: str
    line: int
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        tag = "warning: " if self.severity == "warning" else ""
        return f"{self.path}:{self.line}: {tag}{self.message}"


class Linter:
    def __init__(self, layout: Layout, verify_sources: bool = False):
        self.layout = layout
        self.verify_sources = verify_sources
        self.defects: list[Defect] = []
        self.manifest: dict | None = None
        self.records: dict[str, Record] = {}
        self.tracked = tracked_files(layout.root, "results")

    def error(self, path: str, line: int, message: str) -> None:
        self.defects.append(Defect(path, line, message))

    def warn(self, path: str, line: int, message: str) -> None:
        self.defects.append(Defect(path, line, message, "warning"))

    # ---- entry point ---------------------------------------------------------------------

    def run(self) -> list[Defect]:
        self.check_manifest()
        entries = scan_knowledge(self.layout)
        self.shown_snippets: set[str] = set()
        for entry in entries:
            self.check_common(entry.doc)
            if entry.kind != "readme":  # the README shows the template's placeholder
                self.check_snippet_blocks(entry.doc)
            if entry.kind == "pattern":
                self.check_pattern(entry)
            elif entry.kind == "reading":
                self.check_reading(entry)
            elif entry.kind == "devlog":
                self.check_devlog(entry)
            elif entry.kind == "questions":
                self.check_questions(entry, entries)
            elif entry.kind == "other":
                self.warn(
                    entry.rel,
                    1,
                    "not in a known folder (optimizations/, anti-patterns/, "
                    "languages/<lang>/optimizations/, languages/<lang>/anti-patterns/, "
                    "reading/, kernels/): move it",
                )
        self.check_snippet_files()
        self.check_catalogs()
        return sorted(set(self.defects), key=lambda d: (d.path, d.line, d.message))

    # ---- manifest ------------------------------------------------------------------------

    def check_manifest(self) -> None:
        rel = self.layout.rel(self.layout.manifest)
        try:
            self.manifest = manifest_mod.load(self.layout)
        except KernelPlanError as exc:
            self.error(rel, 1, str(exc))
            return
        if self.manifest is None:
            self.error(rel, 1, f"no manifest of the CUTLASS examples: {MANIFEST_HINT}")
            return
        pin = pinned_commit(self.layout.root)
        if pin and pin != self.manifest.get("commit"):
            self.error(
                rel,
                1,
                f"manifest is for CUTLASS {self.manifest.get('commit')} but third_party/cutlass "
                f"is pinned at {pin}: {MANIFEST_HINT} (and re-check the citations)",
            )
        files = self.manifest["files"]
        for path in catalog.learning_goal_paths():
            if path not in files:
                self.error(
                    rel,
                    1,
                    f"learning-goal example {path} is not in the manifest: update "
                    "LEARNING_GOALS/LEARNING_PATHS in kernelplan/kb/catalog.py",
                )
        if self.verify_sources:
            self.check_sources(rel)

    def check_sources(self, rel: str) -> None:
        assert self.manifest is not None
        if not manifest_mod.sources_present(self.layout.cutlass):
            self.warn(
                rel,
                1,
                f"CUTLASS sources not found at {self.layout.cutlass}, --verify-sources skipped: "
                "run `git submodule update --init third_party/cutlass` or set CUTLASS_DIR",
            )
            return
        try:
            fresh = manifest_mod.build(self.layout, self.manifest.get("commit"))
        except KernelPlanError as exc:
            self.error(rel, 1, str(exc))
            return
        for diff in manifest_mod.compare(self.manifest, fresh):
            self.error(rel, 1, f"manifest does not match the sources: {diff}: {MANIFEST_HINT}")

    # ---- checks for every file -----------------------------------------------------------

    def check_common(self, doc: Doc) -> None:
        if doc.title is None:
            self.error(doc.rel, 1, "no title: the file must start with a '# Title' line")
        prose = doc.prose()
        self.check_source_citations(doc.rel, prose)
        for c in result_citations(prose):
            self.record(doc.rel, c.line, c.path)
        for lineno, text in prose:
            for span in inline_code(text):
                s = span.strip()
                if KNOWLEDGE_REF_RE.match(s) and not (self.layout.root / s).is_file():
                    self.error(doc.rel, lineno, f"names `{s}`, which does not exist")
            for m in LINK_RE.finditer(text):
                target = m.group("target").split("#")[0]
                if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue
                path = posixpath.normpath(posixpath.join(posixpath.dirname(doc.rel), target))
                if not (self.layout.root / path).exists():
                    self.error(doc.rel, lineno, f"link target {target} does not exist")

    def check_source_citations(self, rel: str, lines: list[tuple[int, str]]) -> None:
        files = self.manifest["files"] if self.manifest else None
        for lineno, text in lines:
            for span in inline_code(text):
                s = span.strip()
                for prefix in LONG_PREFIXES:
                    if s.startswith(prefix) and SOURCE_RE.match(s[len(prefix) :]):
                        self.error(
                            rel,
                            lineno,
                            f"citation `{s}` must be relative to examples/python/CuTeDSL: "
                            f"drop the prefix {prefix}",
                        )
        if files is None:
            return
        for c in source_citations(lines):
            if c.path.startswith(LONG_PREFIXES):
                continue  # reported above
            info = files.get(c.path)
            if info is None:
                self.error(
                    rel,
                    c.line,
                    f"unknown path in citation `{c.text}`: not a file under "
                    "examples/python/CuTeDSL at the pinned commit",
                )
                continue
            n = int(info.get("lines", 0))
            if c.start < 1 or c.end < c.start:
                self.error(rel, c.line, f"bad line range in `{c.text}`: write :L<start>-L<end>")
            elif c.end > n:
                self.error(
                    rel,
                    c.line,
                    f"dangling line range in `{c.text}`: {c.path} has {n} lines",
                )

    def record(self, rel: str, line: int, path: str) -> Record | None:
        """The cited record, loaded once; reports a missing or unreadable record."""
        if path not in self.records:
            self.records[path] = load_record(self.layout, path)
            rec = self.records[path]
            if rec.data is not None and self.tracked is not None and path not in self.tracked:
                self.warn(rel, line, f"record `{path}` is not tracked by git: git add it")
        rec = self.records[path]
        if rec.data is None:
            self.error(rel, line, f"cited record `{path}`: {rec.error}")
            return None
        return rec

    # ---- sections ------------------------------------------------------------------------

    def check_sections(self, doc: Doc, titles: tuple[str, ...], kind: str) -> None:
        for title in titles:
            found = doc.find(title, 2)
            if not found:
                self.error(doc.rel, 1, f"missing section '## {title}' ({kind} template)")
                continue
            for dup in found[1:]:
                self.error(doc.rel, dup.line, f"section '## {title}' appears twice")
            sec = found[0]
            if not doc.meaningful(sec):
                self.error(doc.rel, sec.line, f"empty section '## {title}'")
            elif doc.is_pending(sec) and title not in ("Performance Evidence", "Performance"):
                self.warn(doc.rel, sec.line, f"section '## {title}' is pending")

    def check_evidence(self, doc: Doc, title: str, required: bool) -> None:
        sec = facts.section(doc, title)
        if sec is None or not doc.meaningful(sec):
            return  # reported by check_sections
        found = [t for t in tables(doc.body(sec)) if t.column("Value") is not None]
        if not found:
            if doc.is_pending(sec):
                self.warn(doc.rel, sec.line, "pending evidence: no figures yet")
            elif required:
                self.error(
                    doc.rel,
                    sec.line,
                    "no evidence table: add | Config | Metric | Value | Context | Record |",
                )
            return
        for table in found:
            col = table.column("Value")
            for lineno, cells in table.rows:
                value = cells[col] if col is not None and col < len(cells) else ""
                if facts.is_pending_cell(value):
                    self.warn(doc.rel, lineno, "pending evidence: this row has no record yet")
                    continue
                cited = result_citations([(lineno, c) for c in cells])
                figs = figures(value)
                if not cited:
                    if figs:
                        for f in figs:
                            self.error(
                                doc.rel,
                                lineno,
                                f"figure {f.text} has no record: cite "
                                "`results/<package>/<kernel>/<file>.json` in this row",
                            )
                    else:
                        self.error(
                            doc.rel,
                            lineno,
                            "evidence row cites no record: cite "
                            "`results/<package>/<kernel>/<file>.json` or write pending",
                        )
                    continue
                loaded = [r for r in (self.record(doc.rel, lineno, c.path) for c in cited) if r]
                if len(loaded) < len(cited):
                    continue  # the missing record is already reported
                leaves = [x for r in loaded for x in numeric_leaves(r.data)]
                names = ", ".join(f"`{c.path}`" for c in cited)
                for f in figs:
                    if not any(f.matches(x) for x in leaves):
                        self.error(doc.rel, lineno, f"figure {f.text} is not in {names}")

    # ---- kinds ---------------------------------------------------------------------------

    def check_pattern(self, entry: Entry) -> None:
        doc = entry.doc
        self.check_sections(doc, PATTERN_SECTIONS, "pattern")
        self.check_implementation(doc)
        rel = facts.relation(doc)
        if rel is None:
            self.error(
                doc.rel,
                doc.title.line if doc.title else 1,
                "no Relation line: add 'Relation: new' or "
                "'Relation: confirms|refines|contradicts `<path under knowledge/>`' "
                "under the title",
            )
        else:
            for problem in rel.problems:
                self.error(doc.rel, rel.line, problem)
            for _verb, target in rel.links:
                if target == doc.rel:
                    self.error(doc.rel, rel.line, "Relation names the file itself")
                elif not (self.layout.root / target).is_file():
                    self.error(
                        doc.rel, rel.line, f"Relation names `{target}`, which does not exist"
                    )
        src = facts.section(doc, "Source")
        if src is not None and doc.meaningful(src):
            lines = [(n, t) for n, t, code in doc.body(src) if not code]
            if not source_citations(lines):
                self.error(
                    doc.rel,
                    src.line,
                    "Source cites no example line range: add `<path>:L<start>-L<end>`",
                )
        self.check_evidence(doc, "Performance Evidence", required=True)

    def check_reading(self, entry: Entry) -> None:
        doc = entry.doc
        for req in READING_SECTIONS:
            found = doc.find(req.title, req.level)
            hashes = "#" * req.level
            if not found:
                where = f" under '## {req.parent}'" if req.parent else ""
                self.error(
                    doc.rel, 1, f"missing section '{hashes} {req.title}'{where} (READ checklist)"
                )
                continue
            sec = found[0]
            if req.parent:
                parent = doc.parent(sec)
                if parent is None or normalise_title(parent.title) != normalise_title(req.parent):
                    self.error(
                        doc.rel,
                        sec.line,
                        f"section '{hashes} {req.title}' belongs under '## {req.parent}'",
                    )
            if not doc.meaningful(sec):  # a group heading counts its sub-sections
                self.error(doc.rel, sec.line, f"empty section '{hashes} {req.title}'")
        header = facts.header_examples(doc)
        if not header:
            self.error(
                doc.rel,
                doc.title.line if doc.title else 1,
                "header cites no example: add a line "
                "'Example: `<path under examples/python/CuTeDSL>`'",
            )
        elif self.manifest is not None:
            for lineno, path in header:
                if path not in self.manifest["files"]:
                    self.error(doc.rel, lineno, f"unknown example path `{path}` in the header")
        if not source_citations(doc.prose()):
            self.error(
                doc.rel, 1, "no source citation: answer the checklist with `<path>:L<start>-L<end>`"
            )
        checklist = facts.section(doc, "Pattern checklist")
        if checklist is not None:
            text = normalise_title(" ".join(t for _, t, _ in doc.body(checklist)))
            for item in CHECKLIST_ITEMS:
                if normalise_title(item) not in text:
                    self.error(doc.rel, checklist.line, f"pattern checklist lacks '{item}'")
            for lineno, line, _ in doc.body(checklist):
                if "[yes/no]" in line:
                    self.error(doc.rel, lineno, "pattern checklist row not answered ([yes/no])")
        xref = facts.section(doc, "Cross-reference")
        if xref is not None and doc.meaningful(xref):
            text = " ".join(t for _, t in doc.meaningful(xref)).casefold()
            if not re.search(r"\b(" + "|".join(RELATION_VERBS) + r"|new)\b", text):
                self.error(
                    doc.rel,
                    xref.line,
                    "Cross-reference says neither confirms, refines, contradicts nor new",
                )

    def check_devlog(self, entry: Entry) -> None:
        doc = entry.doc
        self.check_sections(doc, DEVLOG_SECTIONS, "devlog")
        src = facts.section(doc, "Source")
        if src is not None:
            original = facts.labelled_paths(doc, src, "Original")
            if not original:
                self.error(doc.rel, src.line, "Source has no line 'Original: `<example path>`'")
            for lineno, raw in original:
                path = raw
                for prefix in LONG_PREFIXES:
                    if path.startswith(prefix):
                        path = path[len(prefix) :]
                if self.manifest is not None and path not in self.manifest["files"]:
                    self.error(doc.rel, lineno, f"unknown example path `{raw}`")
            imported = facts.labelled_paths(doc, src, "Imported")
            if not imported:
                self.error(doc.rel, src.line, "Source has no line 'Imported: `<package path>`'")
            for lineno, raw in imported:
                if not (self.layout.root / raw).exists():
                    self.error(doc.rel, lineno, f"imported path `{raw}` does not exist")
        self.check_evidence(doc, "Performance", required=False)

    def check_questions(self, entry: Entry, entries: list[Entry]) -> None:
        """knowledge/QUESTIONS.md: anchors resolve, answers within two hops of the catalog,
        each question cites source lines its answer cites (kernelplan/kb/questions.py)."""
        docs = {e.rel: e.doc for e in entries}
        for path in (self.layout.catalog, self.layout.examples_catalog):
            if path.is_file():
                docs[self.layout.rel(path)] = Doc.read(path, self.layout.rel(path))
        doc = entry.doc
        questions_mod.check(self.layout, doc, docs, lambda n, m: self.error(doc.rel, n, m))

    # ---- executable snippets -------------------------------------------------------------

    def check_snippet_blocks(self, doc: Doc) -> None:
        """Every marker names a valid snippet file and its block shows that file as it is."""
        for b in snippets_mod.blocks(doc.lines, doc.in_code):
            line = b.marker + 1
            try:
                want = snippets_mod.expected_body(self.layout, b.rel)
            except KernelPlanError as exc:
                self.error(doc.rel, line, f"snippet `{b.rel}`: {exc}")
                continue
            self.shown_snippets.add(b.rel)
            if b.open is None or b.close is None:
                self.error(doc.rel, line, f"no fenced block after the snippet marker: {REGENERATE}")
            elif b.body(doc.lines) != want:
                self.error(
                    doc.rel,
                    b.open + 1,
                    f"the block differs from `{b.rel}` (edit the file, then {REGENERATE})",
                )
            snip = snippets_mod.read_snippet(self.layout, b.rel)
            for problem in snip.problems:
                self.error(doc.rel, line, f"snippet `{b.rel}` {problem}")
            if snip.pending is not None and not snip.problems:
                self.check_pending(doc.rel, line, snip)

    def check_pending(self, rel: str, line: int, snip: snippets_mod.Snippet) -> None:
        """PENDING is an error when the project's GPU runs the snippet's SM (it must compile
        and check), and on any SM when the file is a bare fragment (no compile_snippet()):
        only compiled snippets pass. A PENDING file for an SM the GPU lacks (sm_100a) that
        does compile is a warning (it is compiled in CI; PENDING says what is not done)."""
        what = f"snippet `{snip.rel}` is not compiled yet: {snip.pending}"
        if snip.sm is None or snip.sm in snippets_mod.RUNNABLE_SMS:
            self.error(
                rel,
                line,
                f"{what} (SM {snip.sm} runs on the project's GPU: write the kernel, "
                "compile_snippet() and check(), and drop PENDING)",
            )
        elif not snip.has_compile:
            self.error(
                rel,
                line,
                f"{what} (SM {snip.sm}: the project's GPU cannot run it, but it must still "
                "compile: write the kernel around it and compile_snippet(), and drop PENDING)",
            )
        else:
            self.warn(rel, line, what)

    def check_implementation(self, doc: Doc) -> None:
        """A pattern's Implementation shows only executable snippets: each code block in it
        comes from a file under knowledge/snippets/, and there is at least one."""
        sec = facts.section(doc, "Implementation")
        if sec is None:
            return
        marked = {
            b.open
            for b in snippets_mod.blocks(doc.lines, doc.in_code)
            if b.open is not None and sec.start <= b.marker < sec.end
        }
        fences = [i for i in snippets_mod.fence_openings(doc.lines) if sec.start <= i < sec.end]
        for i in fences:
            if i not in marked:
                self.error(
                    doc.rel,
                    i + 1,
                    "code block in Implementation is not an executable snippet: move it to "
                    f"{snippets_mod.SNIPPET_FOLDER}/<entry-name>.py and put "
                    "`<!-- snippet: knowledge/snippets/<entry-name>.py -->` before the block",
                )
        if not marked and doc.meaningful(sec):
            self.error(
                doc.rel,
                sec.line,
                "Implementation shows no executable snippet: add "
                "`<!-- snippet: knowledge/snippets/<entry-name>.py -->` and run "
                "`python -m kernelplan.kb catalog`",
            )

    def check_snippet_files(self) -> None:
        for snip in snippets_mod.all_snippets(self.layout):
            shown = snip.rel in self.shown_snippets
            if not shown:
                for problem in snip.problems:
                    self.error(snip.rel, 1, problem)
                if snip.pending is not None and not snip.problems:
                    self.check_pending(snip.rel, 1, snip)
            if not shown and not snip.is_bad:
                self.warn(snip.rel, 1, "no knowledge entry shows this snippet")

    # ---- catalogs ------------------------------------------------------------------------

    def check_catalogs(self) -> None:
        for rel, text in catalog.render(self.layout, self.manifest).items():
            path = self.layout.root / rel
            if not path.is_file():
                self.error(rel, 1, f"catalog missing: {REGENERATE}")
                continue
            have = path.read_text(encoding="utf-8").splitlines()
            want = text.splitlines()
            if have == want:
                continue
            line = next(
                (i + 1 for i, (a, b) in enumerate(zip(have, want, strict=False)) if a != b),
                min(len(have), len(want)) + 1,
            )
            self.error(rel, line, f"stale catalog (first difference here): {REGENERATE}")


def lint(layout: Layout, verify_sources: bool = False) -> list[Defect]:
    return Linter(layout, verify_sources).run()
