"""The knowledge-base lint, catalogs and manifest (kernelplan.kb), on tiny trees in tmp_path.

Each defect is planted in a copy of a small tree that lints clean, and the lint must name it
at the right file and line. CPU only; the CUTLASS sources are not needed (a fake example tree
stands in for them where the manifest builder is under test).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelplan.kb import catalog, manifest
from kernelplan.kb.citations import figures
from kernelplan.kb.cli import main
from kernelplan.kb.layout import Layout
from kernelplan.kb.lint import lint
from kernelplan.kb.snippets import read_snippet
from kernelplan.kb.templates import DEVLOG_TEMPLATE, PATTERN_TEMPLATE, READING_TEMPLATE

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = "cute/demo/gemm.py"
PATTERN = "knowledge/languages/cute-dsl/optimizations/demo-ring.md"
READING = "knowledge/reading/demo-gemm.md"
DEVLOG = "knowledge/kernels/demo-gemm.md"
SNIPPET = "knowledge/snippets/demo-ring.py"
SNIPPET_TEXT = """\
SM = "generic"

# snippet:begin
# a comment in a snippet is not a heading
slots = 4
# snippet:end


def compile_snippet():
    return f"{slots} slots"


def check():
    return compile_snippet()
"""
RECORD = "results/demo/gemm/2026-11-29T14-00-00Z-h200-benchmark-ab12cd.json"

PATTERN_TEXT = """\
# Demo ring pipeline

Relation: new

## When to Apply
- A demo mainloop.

## Mechanism
Slots are filled by one thread and released by the consumers.

## Affected Metrics
- Duration

## Implementation
<!-- snippet: knowledge/snippets/demo-ring.py -->
```python
# a comment in a snippet is not a heading
slots = 4
```

## Source
- `cute/demo/gemm.py:L10-L20`: the loop.

## Performance Evidence
Source: demo, H200, defaults

| Config | Metric | Value | Context | Record |
|---|---|---|---|---|
| defaults | registers per thread | 154 | compile for sm_90a | `{record}` |
| defaults | median time (us) | 12.3 | H200 | `{record}` |

## Generalization
Any ring of slots.

## Pitfalls
- Releasing too early.

## Interactions
- None known.
"""

READING_TEXT = """\
# Reading notes: demo GEMM

Example: `cute/demo/gemm.py`

## Questions
- Who loads?

## Host side

### TMA descriptors
A and B (`cute/demo/gemm.py:L5-L6`).

### Grid and cluster
One CTA per tile.

### SMEM budget
Four slots.

### Launch parameters
Defaults.

## Device side

### Roles
Warp 0 loads.

### Pipeline
A ring (`cute/demo/gemm.py:L10-L20`).

### TMA
One copy per slot.

### MMA
Warpgroup MMA.

### Synchronization
Full and empty barriers.

### SMEM layout
Swizzled.

## Pattern checklist
| Pattern | Present | Where / notes |
|---|---|---|
| TMA multi-stage pipeline | yes | above |
| Warpgroup specialization | no | |
| Persistent main loop | no | |
| Online softmax or streaming accumulation | no | |
| Register-level accumulator management | yes | |
| SMEM swizzle | yes | |
| Cluster communication (DSMEM) | no | |
| Epilogue | yes | |
| Boundary handling | no | |
| Pipeline drain | yes | |

## Cross-reference
- new: first note.
"""

DEVLOG_TEXT = """\
# Demo GEMM (imported from CUTLASS)

## Overview
A demo.

## Source
Original: `third_party/cutlass/examples/python/CuTeDSL/cute/demo/gemm.py`
Imported: `packages/demo/src/demo_pkg/gemm/`

## Performance
| Config | Metric | Value | Context | Record |
|---|---|---|---|---|
| defaults | median time (us) | 12.34 | H200 | `{record}` |

## Patterns Extracted
- Demo ring -> `knowledge/languages/cute-dsl/optimizations/demo-ring.md`

## Insights
- Rings work.
"""

ADAPTER_TEXT = """\
class DemoGemm:
    source = "cute/demo/gemm.py"
"""


def fake_manifest() -> dict:
    files = {EXAMPLE: {"lines": 40, "blob": "0" * 40}}
    for path in catalog.learning_goal_paths():
        files[path] = {"lines": 100, "blob": "1" * 40}
    python = {
        p: {
            "main": True,
            "kernel_classes": [],
            "sm": "sm_100a",
            "sm_rule": "tcgen05/TMEM",
            "summary": "A goal example.",
        }
        for p in files
    }
    python[EXAMPLE] = {
        "main": True,
        "kernel_classes": ["DemoGemm"],
        "kernel_functions": [],
        "sm": "sm_90a",
        "sm_rule": "warpgroup MMA (wgmma)",
        "summary": "A demo GEMM.",
    }
    return {
        "generator": manifest.GENERATOR,
        "commit": "c" * 40,
        "root": "examples/python/CuTeDSL",
        "files": files,
        "python": python,
    }


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Layout:
    """A tiny knowledge tree that lints clean: one pattern, one reading note, one devlog,
    one record, one adapter, and catalogs generated from them."""
    root = tmp_path / "repo"
    write(root, "pyproject.toml", "[project]\nname = 'demo'\n")
    layout = Layout(root)
    write(root, "knowledge/cutlass-manifest.json", manifest.dumps(fake_manifest()))
    write(root, PATTERN, PATTERN_TEXT.format(record=RECORD))
    write(root, SNIPPET, SNIPPET_TEXT)
    write(root, READING, READING_TEXT)
    write(root, DEVLOG, DEVLOG_TEXT.format(record=RECORD))
    record = {
        "kind": "benchmark",
        "package": "demo",
        "kernel": "gemm",
        "source": EXAMPLE,
        "device": {"name": "NVIDIA H200", "sm": "sm_90"},
        "static": {"registers": 154},
        "timing": {"median_us": 12.34},
    }
    write(root, RECORD, json.dumps(record))
    write(root, "packages/demo/src/demo_pkg/gemm/gemm.py", ADAPTER_TEXT)
    catalog.write(layout, manifest.load(layout))
    return layout


def edit(layout: Layout, rel: str, old: str, new: str) -> None:
    path = layout.root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, f"test setup: {old!r} not in {rel}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    if rel.startswith("knowledge/"):
        # Keep the catalogs current so that only the planted defect is reported.
        catalog.write(layout, manifest.load(layout))


def errors(layout: Layout) -> list[str]:
    return [str(d) for d in lint(layout) if d.severity == "error"]


def line_of(layout: Layout, rel: str, needle: str) -> int:
    lines = (layout.root / rel).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def only_error(layout: Layout) -> str:
    errs = errors(layout)
    assert len(errs) == 1, errs
    return errs[0]


# ---- the good tree ---------------------------------------------------------------------------


def test_good_tree_passes(tree: Layout, capsys: pytest.CaptureFixture[str]) -> None:
    assert lint(tree) == []
    assert main(["lint", "--root", str(tree.root)]) == 0
    assert "0 errors, 0 warnings" in capsys.readouterr().err


def test_cli_exits_nonzero_and_prints_file_line_message(
    tree: Layout, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(tree, PATTERN, "## Pitfalls\n- Releasing too early.\n", "")
    assert main(["lint", "--root", str(tree.root)]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [f"{PATTERN}:1: missing section '## Pitfalls' (pattern template)"]


def test_python_dash_m_entry_point(tree: Layout) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kernelplan.kb", "lint", "--root", str(tree.root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---- planted defects: patterns ------------------------------------------------------------------


def test_missing_section(tree: Layout) -> None:
    edit(tree, PATTERN, "## Interactions\n- None known.\n", "")
    assert only_error(tree) == f"{PATTERN}:1: missing section '## Interactions' (pattern template)"


def test_empty_section(tree: Layout) -> None:
    edit(tree, PATTERN, "Slots are filled by one thread and released by the consumers.\n", "")
    line = line_of(tree, PATTERN, "## Mechanism")
    assert only_error(tree) == f"{PATTERN}:{line}: empty section '## Mechanism'"


def test_section_with_only_template_placeholders_is_empty(tree: Layout) -> None:
    edit(tree, PATTERN, "- Duration\n", "- [Metric 1]\n<!-- to do -->\n")
    line = line_of(tree, PATTERN, "## Affected Metrics")
    assert only_error(tree) == f"{PATTERN}:{line}: empty section '## Affected Metrics'"


def test_duplicate_section(tree: Layout) -> None:
    edit(tree, PATTERN, "## Interactions\n", "## Pitfalls\n- again\n\n## Interactions\n")
    line = line_of(tree, PATTERN, "- again") - 1
    assert only_error(tree) == f"{PATTERN}:{line}: section '## Pitfalls' appears twice"


def test_dangling_line_range(tree: Layout) -> None:
    edit(tree, PATTERN, "gemm.py:L10-L20`: the loop", "gemm.py:L10-L41`: the loop")
    line = line_of(tree, PATTERN, "L10-L41")
    assert only_error(tree) == (
        f"{PATTERN}:{line}: dangling line range in `cute/demo/gemm.py:L10-L41`: "
        "cute/demo/gemm.py has 40 lines"
    )


def test_reversed_line_range(tree: Layout) -> None:
    edit(tree, PATTERN, "gemm.py:L10-L20`: the loop", "gemm.py:L20-L10`: the loop")
    assert "bad line range in `cute/demo/gemm.py:L20-L10`" in only_error(tree)


def test_unknown_path(tree: Layout) -> None:
    edit(tree, PATTERN, "`cute/demo/gemm.py:L10-L20`", "`cute/demo/gemm2.py:L10-L20`")
    line = line_of(tree, PATTERN, "gemm2.py")
    assert only_error(tree).startswith(
        f"{PATTERN}:{line}: unknown path in citation `cute/demo/gemm2.py:L10-L20`"
    )


def test_citation_with_long_prefix(tree: Layout) -> None:
    edit(
        tree,
        PATTERN,
        "`cute/demo/gemm.py:L10-L20`",
        "`third_party/cutlass/examples/python/CuTeDSL/cute/demo/gemm.py:L10-L20`",
    )
    line = line_of(tree, PATTERN, "third_party/cutlass")
    assert only_error(tree).startswith(
        f"{PATTERN}:{line}: citation `third_party/cutlass/examples/python/CuTeDSL/"
        "cute/demo/gemm.py:L10-L20` must be relative to examples/python/CuTeDSL"
    )


def test_figure_with_no_record(tree: Layout) -> None:
    edit(
        tree,
        PATTERN,
        f"| 154 | compile for sm_90a | `{RECORD}` |",
        "| 154 | compile for sm_90a | |",
    )
    line = line_of(tree, PATTERN, "| 154 |")
    assert only_error(tree).startswith(f"{PATTERN}:{line}: figure 154 has no record")


def test_figure_not_in_record(tree: Layout) -> None:
    edit(tree, PATTERN, "| 154 |", "| 155 |")
    line = line_of(tree, PATTERN, "| 155 |")
    assert only_error(tree) == f"{PATTERN}:{line}: figure 155 is not in `{RECORD}`"


def test_figure_matches_after_rounding_to_shown_precision(tree: Layout) -> None:
    # The record holds 12.34: "12.3" and "12" match, "12.4" does not.
    edit(tree, PATTERN, "| 12.3 |", "| 12 |")
    assert errors(tree) == []
    edit(tree, PATTERN, "| 12 |", "| 12.4 |")
    assert "figure 12.4 is not in" in only_error(tree)


def test_record_that_does_not_exist(tree: Layout) -> None:
    missing = "results/demo/gemm/missing.json"
    edit(
        tree,
        PATTERN,
        f"| 154 | compile for sm_90a | `{RECORD}` |",
        f"| 154 | compile for sm_90a | `{missing}` |",
    )
    line = line_of(tree, PATTERN, "missing.json")
    assert only_error(tree) == f"{PATTERN}:{line}: cited record `{missing}`: no such file"


def test_record_that_is_not_an_object(tree: Layout) -> None:
    bad = "results/demo/gemm/list.json"
    write(tree.root, bad, "[1, 2]")
    catalog.write(tree, manifest.load(tree))
    edit(
        tree,
        PATTERN,
        f"| 154 | compile for sm_90a | `{RECORD}` |",
        f"| 154 | compile for sm_90a | `{bad}` |",
    )
    assert only_error(tree).endswith(f"cited record `{bad}`: not a JSON object")


def test_pending_evidence_is_a_warning(tree: Layout, capsys: pytest.CaptureFixture[str]) -> None:
    edit(tree, PATTERN, f"| 12.3 | H200 | `{RECORD}` |", "| pending | H200 | pending |")
    line = line_of(tree, PATTERN, "| pending |")
    defects = lint(tree)
    assert [str(d) for d in defects] == [
        f"{PATTERN}:{line}: warning: pending evidence: this row has no record yet"
    ]
    assert main(["lint", "--root", str(tree.root)]) == 0
    assert main(["lint", "--root", str(tree.root), "--strict"]) == 1
    capsys.readouterr()


def test_evidence_section_without_a_table(tree: Layout) -> None:
    text = (tree.root / PATTERN).read_text(encoding="utf-8")
    start = text.index("| Config |")
    end = text.index("## Generalization")
    edit(tree, PATTERN, text[start:end], "Faster, trust me.\n\n")
    line = line_of(tree, PATTERN, "## Performance Evidence")
    assert only_error(tree).startswith(f"{PATTERN}:{line}: no evidence table")


def test_missing_relation(tree: Layout) -> None:
    edit(tree, PATTERN, "Relation: new\n", "")
    assert only_error(tree).startswith(f"{PATTERN}:1: no Relation line")


def test_relation_to_an_entry_that_does_not_exist(tree: Layout) -> None:
    edit(tree, PATTERN, "Relation: new", "Relation: refines `optimizations/nothing.md`")
    line = line_of(tree, PATTERN, "Relation:")
    assert only_error(tree) == (
        f"{PATTERN}:{line}: Relation names `knowledge/optimizations/nothing.md`, "
        "which does not exist"
    )


def test_relation_with_an_unknown_verb(tree: Layout) -> None:
    edit(tree, PATTERN, "Relation: new", f"Relation: extends `{PATTERN[len('knowledge/') :]}`")
    assert "cannot read relation" in only_error(tree)


def test_relation_to_an_existing_entry(tree: Layout) -> None:
    write(
        tree.root,
        "knowledge/optimizations/ring.md",
        (tree.root / PATTERN).read_text(encoding="utf-8").replace("Demo ring", "Ring"),
    )
    edit(tree, PATTERN, "Relation: new", "Relation: refines `optimizations/ring.md`")
    assert errors(tree) == []


def test_code_fence_lines_are_not_headings(tree: Layout) -> None:
    # The pattern's snippet holds "# a comment ...": it must not become the title.
    assert all("no title" not in e for e in errors(tree))
    edit(tree, PATTERN, "# Demo ring pipeline\n", "")
    assert any(
        e == f"{PATTERN}:1: no title: the file must start with a '# Title' line"
        for e in errors(tree)
    )


# ---- planted defects: reading notes and devlogs -----------------------------------------------


def test_reading_note_missing_checklist_section(tree: Layout) -> None:
    edit(tree, READING, "### SMEM layout\nSwizzled.\n", "")
    assert only_error(tree) == (
        f"{READING}:1: missing section '### SMEM layout' under '## Device side' (READ checklist)"
    )


def test_reading_note_subsection_under_the_wrong_parent(tree: Layout) -> None:
    edit(tree, READING, "### Launch parameters\nDefaults.\n", "")
    edit(tree, READING, "### Roles\n", "### Launch parameters\nDefaults.\n\n### Roles\n")
    line = line_of(tree, READING, "### Launch parameters")
    assert only_error(tree) == (
        f"{READING}:{line}: section '### Launch parameters' belongs under '## Host side'"
    )


def test_reading_note_empty_subsection(tree: Layout) -> None:
    edit(tree, READING, "Warp 0 loads.\n", "")
    line = line_of(tree, READING, "### Roles")
    assert only_error(tree) == f"{READING}:{line}: empty section '### Roles'"


def test_reading_note_without_citations_or_header(tree: Layout) -> None:
    edit(tree, READING, "A and B (`cute/demo/gemm.py:L5-L6`).", "A and B.")
    edit(tree, READING, "A ring (`cute/demo/gemm.py:L10-L20`).", "A ring.")
    edit(tree, READING, "Example: `cute/demo/gemm.py`\n", "")
    errs = errors(tree)
    assert any("header cites no example" in e for e in errs), errs
    assert any("no source citation" in e for e in errs), errs


def test_reading_note_checklist_item_missing(tree: Layout) -> None:
    edit(tree, READING, "| Pipeline drain | yes | |\n", "")
    assert "pattern checklist lacks 'Pipeline drain'" in only_error(tree)


def test_devlog_missing_imported_path(tree: Layout) -> None:
    shutil.rmtree(tree.root / "packages/demo/src/demo_pkg/gemm")
    catalog.write(tree, manifest.load(tree))  # the adapter went too
    line = line_of(tree, DEVLOG, "Imported:")
    assert only_error(tree) == (
        f"{DEVLOG}:{line}: imported path `packages/demo/src/demo_pkg/gemm/` does not exist"
    )


def test_devlog_figure_not_in_record(tree: Layout) -> None:
    edit(tree, DEVLOG, "| 12.34 |", "| 99 |")
    assert "figure 99 is not in" in only_error(tree)


def test_dangling_knowledge_reference(tree: Layout) -> None:
    edit(tree, DEVLOG, "optimizations/demo-ring.md`", "optimizations/demo-rung.md`")
    assert "names `knowledge/languages/cute-dsl/optimizations/demo-rung.md`" in only_error(tree)


# ---- catalogs ------------------------------------------------------------------------------


def test_stale_catalog_after_a_new_pattern(tree: Layout) -> None:
    text = (tree.root / PATTERN).read_text(encoding="utf-8").replace("Demo ring", "Other ring")
    write(tree.root, "knowledge/languages/cute-dsl/optimizations/other.md", text)
    errs = errors(tree)
    assert any(
        e.startswith("knowledge/CATALOG.md:")
        and "stale catalog (first difference here): run `python -m kernelplan.kb catalog`" in e
        for e in errs
    ), errs
    assert main(["catalog", "--root", str(tree.root)]) == 0
    assert errors(tree) == []


def test_stale_examples_catalog_after_a_new_record(tree: Layout) -> None:
    rec = {
        "kind": "static",
        "package": "demo",
        "kernel": "gemm",
        "source": EXAMPLE,
        "target_sm": ["sm_90a"],
    }
    write(tree.root, "results/demo/gemm/static.json", json.dumps(rec))
    errs = errors(tree)
    assert len(errs) == 1 and errs[0].startswith("knowledge/EXAMPLES.md:"), errs
    assert "stale catalog" in errs[0]
    assert main(["catalog", "--root", str(tree.root), "--check"]) == 1


def test_missing_catalog(tree: Layout) -> None:
    (tree.root / "knowledge/CATALOG.md").unlink()
    assert only_error(tree) == (
        "knowledge/CATALOG.md:1: catalog missing: run `python -m kernelplan.kb catalog`"
    )


def test_examples_catalog_shows_status(tree: Layout) -> None:
    text = (tree.root / "knowledge/EXAMPLES.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `gemm.py` |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # Example, Lines, Goal, SM, Workload, Imported, Static, Ran on, Notes, Patterns
    assert cells[1] == "40"
    assert cells[3] == "sm_90a"
    assert cells[4] == "A demo GEMM."
    assert cells[5] == "demo/gemm"
    assert cells[6] == "-"
    assert cells[7] == "NVIDIA H200 (sm_90): benchmark"
    assert cells[8] == "[notes](reading/demo-gemm.md)"
    assert cells[9] == "[Demo ring pipeline](languages/cute-dsl/optimizations/demo-ring.md)"
    cat = (tree.root / "knowledge/CATALOG.md").read_text(encoding="utf-8")
    assert "1 reading note, 1 pattern, 0 anti-patterns, 1 kernel devlog" in cat


def test_record_without_source_is_matched_through_the_adapter_folder(tree: Layout) -> None:
    write(tree.root, "results/demo/gemm/old.json", json.dumps({"kind": "static"}))
    c = catalog.Catalogs(tree, manifest.load(tree))
    assert [r.rel for r in c.status(EXAMPLE).static] == ["results/demo/gemm/old.json"]
    assert c.index.unmatched == []


# ---- manifest ------------------------------------------------------------------------------

FAKE_SOURCES = {
    "cute/blackwell/kernel/k.py": '"""A tcgen05 GEMM."""\nfrom x import tcgen05\n\n\n'
    "class K:\n    @cute.kernel\n    def kernel(self):\n        pass\n",
    "cute/hopper/kernel/h.py": "import cutlass.cute as cute\n"
    '"""A Hopper GEMM example using CuTe DSL."""\n'
    'x = cute.nvgpu.warpgroup.fence\nif __name__ == "__main__":\n    pass',
    "cute/ampere/kernel/a.py": "# tcgen05 only in a comment\ny = cpasync.CopyG2SOp()\n",
    "dsl_tutorials/t.py": 's = "tcgen05 only in a string"\n',
    "cute/notes.md": "one\ntwo\n",
}


def make_sources(base: Path) -> Path:
    for rel, text in FAKE_SOURCES.items():
        write(base / "examples/python/CuTeDSL", rel, text)
    return base


def test_manifest_from_a_folder(tree: Layout, tmp_path: Path, monkeypatch) -> None:
    src = make_sources(tmp_path / "cutlass")
    monkeypatch.setenv("CUTLASS_DIR", str(src))
    man = manifest.build(tree, commit="d" * 40)
    assert man["commit"] == "d" * 40
    assert set(man["files"]) == set(FAKE_SOURCES)
    assert man["files"]["cute/hopper/kernel/h.py"]["lines"] == 5  # no final newline
    assert man["files"]["cute/notes.md"]["lines"] == 2
    py = man["python"]
    assert (
        py["cute/blackwell/kernel/k.py"]["sm"],
        py["cute/blackwell/kernel/k.py"]["kernel_classes"],
    ) == ("sm_100a", ["K"])
    assert py["cute/hopper/kernel/h.py"]["sm"] == "sm_90a"
    assert py["cute/hopper/kernel/h.py"]["main"] is True
    assert py["cute/hopper/kernel/h.py"]["summary"] == "A Hopper GEMM example."
    assert py["cute/ampere/kernel/a.py"]["sm"] == "sm_80"  # the comment does not count
    assert py["dsl_tutorials/t.py"]["sm"] == "any"  # nor does the string


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_manifest_reads_the_commit_not_the_working_tree(
    tree: Layout, tmp_path: Path, monkeypatch
) -> None:
    src = make_sources(tmp_path / "cutlass")

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(src), *args], check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
    sha = git("rev-parse", "HEAD")
    write(src / "examples/python/CuTeDSL", "cute/notes.md", "changed\nafter\nthe commit\n")
    monkeypatch.setenv("CUTLASS_DIR", str(src))
    man = manifest.build(tree, commit=sha)
    assert man["_read_from"] == "git"
    assert man["files"]["cute/notes.md"]["lines"] == 2


def test_verify_sources_reports_a_changed_file(tree: Layout, tmp_path: Path, monkeypatch) -> None:
    src = make_sources(tmp_path / "cutlass")
    monkeypatch.setenv("CUTLASS_DIR", str(src))
    man = manifest.build(tree, commit="c" * 40)
    man["files"][EXAMPLE] = {"lines": 40, "blob": "0" * 40}  # what the tree's citations need
    manifest.write(tree, man)
    catalog.write(tree, manifest.load(tree))
    msgs = [d.message for d in lint(tree, verify_sources=True)]
    assert any(f"{EXAMPLE}: in the manifest, not in the sources" in m for m in msgs), msgs
    write(src / "examples/python/CuTeDSL", "cute/notes.md", "three\nlines\nnow\n")
    msgs = [d.message for d in lint(tree, verify_sources=True)]
    assert any("cute/notes.md: 2 lines in the manifest, 3 in the sources" in m for m in msgs), msgs


def test_verify_sources_without_sources_is_a_warning(
    tree: Layout, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("CUTLASS_DIR", str(tmp_path / "nowhere"))
    defects = lint(tree, verify_sources=True)
    assert [d.severity for d in defects] == ["warning"]
    assert "--verify-sources skipped" in defects[0].message


def test_missing_manifest(tree: Layout) -> None:
    (tree.root / "knowledge/cutlass-manifest.json").unlink()
    assert (
        "knowledge/cutlass-manifest.json:1: no manifest of the CUTLASS examples: "
        "run `python -m kernelplan.kb manifest`"
    ) in errors(tree)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_manifest_commit_must_match_the_submodule_pin(tree: Layout) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tree.root), *args], check=True, capture_output=True)

    git("init", "-q")
    git("update-index", "--add", "--cacheinfo", f"160000,{'e' * 40},third_party/cutlass")
    errs = errors(tree)
    assert len(errs) == 1 and "is pinned at " + "e" * 40 in errs[0], errs


# ---- parsing and templates -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("154", [154.0]),
        ("61.3%", [61.3]),
        ("230,400 B", [230400.0]),
        ("41/56", [41.0, 56.0]),
        ("-3.2", [-3.2]),
        ("1e-3 s", [0.001]),
        ("128x128", []),
        ("sm_90, fp16", []),
        ("1.5x", []),
        ("pending", []),
    ],
)
def test_figures_in_a_value_cell(cell: str, expected: list[float]) -> None:
    assert [f.value for f in figures(cell)] == expected


def test_new_entry_starts_from_the_template(tree: Layout, capsys) -> None:
    assert main(["new", "pattern", "Cluster multicast", "--root", str(tree.root)]) == 0
    path = tree.root / "knowledge/languages/cute-dsl/optimizations/cluster-multicast.md"
    assert path.read_text(encoding="utf-8").startswith("# Cluster multicast\n")
    catalog.write(tree, manifest.load(tree))
    errs = [e for e in errors(tree) if e.startswith(str(path.relative_to(tree.root)))]
    # the placeholders leave the sections empty; evidence is pending
    assert any("empty section '## When to Apply'" in e for e in errs), errs
    assert any("empty section '## Source'" in e for e in errs), errs
    assert main(["new", "pattern", "Cluster multicast", "--root", str(tree.root)]) == 2
    capsys.readouterr()


def test_readme_holds_the_exact_templates() -> None:
    readme = (REPO / "knowledge/README.md").read_text(encoding="utf-8")
    assert PATTERN_TEMPLATE in readme
    assert (
        READING_TEMPLATE.format(
            example="[path under examples/python/CuTeDSL]",
            commit="[first 9 hex digits of the pinned commit]",
        )
        in readme
    )
    assert (
        DEVLOG_TEMPLATE.format(
            kernel="[Kernel name]",
            example="[path under examples/python/CuTeDSL]",
            imported="packages/[package]/src/[module]/[kernel]/",
        )
        in readme
    )


def test_records_of_peers_and_slugged_folders(tree: Layout) -> None:
    # A peer (torch) declares "source": null: it measures no example and is not listed.
    write(
        tree.root, "results/demo/torch-mm/peer.json", json.dumps({"kind": "check", "source": None})
    )
    # The records module slugs folder names: demo_gemm's records live under demo-gemm/.
    write(tree.root, "packages/demo/src/demo_pkg/demo_gemm/demo_gemm.py", ADAPTER_TEXT)
    write(tree.root, "results/demo/demo-gemm/s.json", json.dumps({"kind": "static"}))
    c = catalog.Catalogs(tree, manifest.load(tree))
    assert "results/demo/demo-gemm/s.json" in [r.rel for r in c.status(EXAMPLE).static]
    assert c.index.unmatched == []


def test_raw_timing_samples_cannot_back_a_figure():
    from kernelplan.kb.citations import numeric_leaves

    rec = {"timing": {"median_us": 186.1, "samples_us": [183.3, 324.2, 186.0]}, "n": 3}
    leaves = numeric_leaves(rec)
    assert 186.1 in leaves and 3 in leaves
    assert 324.2 not in leaves and 183.3 not in leaves


# ---- knowledge/QUESTIONS.md: links resolve, answers within two hops, source lines cited --------

QUESTIONS = "knowledge/QUESTIONS.md"
QUESTIONS_TEXT = """\
# Questions

Asked before reading; answered from the [catalog](CATALOG.md).

## Pipelines

### 1. Who releases a ring slot?
Answer: [Demo ring pipeline, Mechanism](languages/cute-dsl/optimizations/demo-ring.md#mechanism)
The consumers, after reading it.
Source: `cute/demo/gemm.py:L12-L18`

### 2. Which descriptors does the demo GEMM build?
Answer: [Reading notes: demo GEMM](reading/demo-gemm.md#tma-descriptors)
A and B.
Source: `cute/demo/gemm.py:L5-L6`
"""

MID = "knowledge/notes/mid.md"
DEEP = "knowledge/notes/deep.md"


@pytest.fixture
def qtree(tree: Layout) -> Layout:
    """The good tree plus a QUESTIONS.md that lints clean, and two notes outside the catalog:
    the pattern (one hop from the catalog) links mid.md (two hops), which links deep.md
    (three hops)."""
    write(tree.root, QUESTIONS, QUESTIONS_TEXT)
    write(tree.root, MID, "# Mid\n\nSee [deep](deep.md); `cute/demo/gemm.py:L10-L20`.\n")
    write(tree.root, DEEP, "# Deep\n\nThe loop: `cute/demo/gemm.py:L10-L20`.\n")
    edit(tree, PATTERN, "- None known.\n", "- None known; see [mid](../../../notes/mid.md).\n")
    return tree


def test_questions_good_tree_passes(qtree: Layout) -> None:
    assert errors(qtree) == []


def test_questions_broken_link_fails(qtree: Layout) -> None:
    edit(qtree, QUESTIONS, "(reading/demo-gemm.md#", "(reading/demo-gem.md#")
    line = line_of(qtree, QUESTIONS, "demo-gem.md")
    assert (
        only_error(qtree) == f"{QUESTIONS}:{line}: link target reading/demo-gem.md does not exist"
    )


def test_questions_broken_anchor_fails(qtree: Layout) -> None:
    edit(qtree, QUESTIONS, "#tma-descriptors)", "#tma-descriptor)")
    line = line_of(qtree, QUESTIONS, "#tma-descriptor)")
    assert only_error(qtree) == (
        f"{QUESTIONS}:{line}: link target reading/demo-gemm.md#tma-descriptor: "
        "knowledge/reading/demo-gemm.md has no heading with anchor #tma-descriptor"
    )


def test_questions_two_hop_answer_passes(qtree: Layout) -> None:
    edit(
        qtree,
        QUESTIONS,
        "(languages/cute-dsl/optimizations/demo-ring.md#mechanism)",
        "(notes/mid.md)",
    )
    assert errors(qtree) == []


def test_questions_three_hop_answer_fails(qtree: Layout) -> None:
    edit(
        qtree,
        QUESTIONS,
        "(languages/cute-dsl/optimizations/demo-ring.md#mechanism)",
        "(notes/deep.md)",
    )
    line = line_of(qtree, QUESTIONS, "(notes/deep.md)")
    assert only_error(qtree).startswith(
        f"{QUESTIONS}:{line}: answer {DEEP} is 3 hops from the catalog"
    )


def test_questions_unreachable_answer_fails(qtree: Layout) -> None:
    edit(qtree, PATTERN, "; see [mid](../../../notes/mid.md)", "")
    edit(
        qtree,
        QUESTIONS,
        "(languages/cute-dsl/optimizations/demo-ring.md#mechanism)",
        "(notes/mid.md)",
    )
    assert f"answer {MID} is not reachable from the catalog" in only_error(qtree)


def test_question_without_source_lines_fails(qtree: Layout) -> None:
    edit(qtree, QUESTIONS, "Source: `cute/demo/gemm.py:L12-L18`\n", "")
    line = line_of(qtree, QUESTIONS, "### 1.")
    assert only_error(qtree) == (
        f"{QUESTIONS}:{line}: question cites no source lines: add `<path>:L<start>-L<end>`"
    )


def test_question_citing_lines_its_answer_does_not_cite_fails(qtree: Layout) -> None:
    edit(qtree, QUESTIONS, "`cute/demo/gemm.py:L12-L18`", "`cute/demo/gemm.py:L12-L30`")
    assert "`cute/demo/gemm.py:L12-L30` is not among the lines" in only_error(qtree)


def test_question_without_answer_fails(qtree: Layout) -> None:
    edit(qtree, QUESTIONS, "Answer: [Reading notes: demo GEMM]", "See: [Reading notes: demo GEMM]")
    line = line_of(qtree, QUESTIONS, "### 2.")
    assert only_error(qtree) == (
        f"{QUESTIONS}:{line}: question has no 'Answer:' line: link the entry that answers it"
    )


def test_repository_questions_are_answered_within_two_hops() -> None:
    """The committed list: at least 20 questions, and none of the lint's defects in it."""
    from kernelplan.kb.markdown import Doc
    from kernelplan.kb.questions import questions

    layout = Layout(REPO)
    doc = Doc.read(REPO / QUESTIONS, QUESTIONS)
    assert len(questions(doc)) >= 20
    assert [str(d) for d in lint(layout) if d.path == QUESTIONS] == []


# ---- executable snippets -------------------------------------------------------------------


def test_snippet_block_that_differs_from_its_file(tree: Layout, capsys) -> None:
    (tree.root / SNIPPET).write_text(SNIPPET_TEXT.replace("slots = 4", "slots = 5"))
    err = only_error(tree)
    assert err.startswith(f"{PATTERN}:{line_of(tree, PATTERN, '```python')}: the block differs")
    assert main(["catalog", "--root", str(tree.root), "--check"]) == 1
    assert main(["catalog", "--root", str(tree.root)]) == 0
    assert "slots = 5" in (tree.root / PATTERN).read_text()
    assert errors(tree) == []
    capsys.readouterr()


def test_implementation_block_without_a_snippet_file(tree: Layout) -> None:
    edit(tree, PATTERN, "<!-- snippet: knowledge/snippets/demo-ring.py -->\n", "")
    errs = errors(tree)
    assert any("code block in Implementation is not an executable snippet" in e for e in errs)
    assert any("Implementation shows no executable snippet" in e for e in errs)


def test_snippet_marker_naming_a_missing_file(tree: Layout) -> None:
    edit(tree, PATTERN, "snippets/demo-ring.py", "snippets/nope.py")
    assert "snippet `knowledge/snippets/nope.py`: no such file" in only_error(tree)


def test_snippet_without_sm_or_compile(tree: Layout) -> None:
    (tree.root / SNIPPET).write_text(
        SNIPPET_TEXT.replace('SM = "generic"', "").replace("def compile_snippet", "def other")
    )
    errs = errors(tree)
    assert any("declares no SM" in e for e in errs), errs
    assert any("defines no compile_snippet()" in e for e in errs), errs


def test_pending_snippet_for_the_gpus_sm_is_an_error(tree: Layout) -> None:
    """Only compiled snippets pass: a generic (or sm_90) one runs on the H200, so it must be
    real code with a check()."""
    (tree.root / SNIPPET).write_text('PENDING = "a fragment"\n' + SNIPPET_TEXT)
    line = line_of(tree, PATTERN, "<!-- snippet:")
    err = only_error(tree)
    assert err.startswith(f"{PATTERN}:{line}: snippet `{SNIPPET}` is not compiled yet"), err
    assert "SM generic runs on the project's GPU" in err
    (tree.root / SNIPPET).write_text(
        'PENDING = "a fragment"\n' + SNIPPET_TEXT.replace('"generic"', '"sm_90a"')
    )
    assert "SM sm_90a runs on the project's GPU" in only_error(tree)


def test_pending_fragment_for_another_sm_is_an_error(tree: Layout) -> None:
    """sm_100a cannot run on the H200, but a PENDING fragment that does not compile fails the
    lint all the same: only compiled snippets pass."""
    fragment = SNIPPET_TEXT.replace('"generic"', '"sm_100a"').split("\n\n\ndef compile_snippet")[0]
    (tree.root / SNIPPET).write_text('PENDING = "a fragment"\n' + fragment + "\n")
    line = line_of(tree, PATTERN, "<!-- snippet:")
    err = only_error(tree)
    assert err.startswith(f"{PATTERN}:{line}: snippet `{SNIPPET}` is not compiled yet: a fragment")
    assert "SM sm_100a" in err and "must still compile" in err, err
    assert main(["lint", "--root", str(tree.root)]) == 1
    assert not read_snippet(tree, SNIPPET).compiles


def test_pending_snippet_for_another_sm_that_compiles_is_a_warning(tree: Layout) -> None:
    text = SNIPPET_TEXT.replace('"generic"', '"sm_100a"').split("\n\n\ndef check")[0]
    (tree.root / SNIPPET).write_text('PENDING = "not run: no sm_100 GPU"\n' + text + "\n")
    assert errors(tree) == []
    warns = [str(d) for d in lint(tree) if d.severity == "warning"]
    assert any("is not compiled yet: not run: no sm_100 GPU" in w for w in warns), warns
    snip = read_snippet(tree, SNIPPET)
    assert snip.compiles and not snip.runnable  # CI still compiles it


def test_pending_snippet_no_entry_shows_is_judged_too(tree: Layout) -> None:
    write(tree.root, "knowledge/snippets/orphan.py", 'PENDING = "a fragment"\n' + SNIPPET_TEXT)
    errs = errors(tree)
    assert any(
        e.startswith("knowledge/snippets/orphan.py:1: snippet `knowledge/snippets/orphan.py` is")
        for e in errs
    ), errs


def test_known_bad_snippet_must_expect_a_timeout(tree: Layout) -> None:
    write(tree.root, "knowledge/snippets/bad/demo-ring.py", SNIPPET_TEXT)
    assert "must declare EXPECT = 'timeout'" in only_error(tree)


def test_snippet_regions_are_dedented_and_joined() -> None:
    from kernelplan.kb.snippets import shown_text

    src = (
        "x = 1\n    # snippet:begin\n    a = 1\n    # snippet:end\n"
        "# snippet:begin\nb = 2\n# snippet:end\n"
    )
    assert shown_text(src) == "a = 1\n# ...\nb = 2"
    assert shown_text("y = 2\n") == "y = 2"


def test_snippets_compile_and_run_in_subprocesses(tree: Layout, capsys) -> None:
    root = str(tree.root)
    assert main(["snippets", "list", "--root", root]) == 0
    assert "1 compiled in CI, 1 runnable" in capsys.readouterr().out
    assert main(["snippets", "run", "--root", root, "--timeout", "120"]) == 0
    assert "4 slots" in capsys.readouterr().out
    hang = SNIPPET_TEXT.replace(
        "def check():", "def check():\n    import time\n\n    time.sleep(60)"
    )
    write(tree.root, "knowledge/snippets/bad/demo-ring.py", 'EXPECT = "timeout"\n' + hang)
    assert main(["snippets", "run", "bad/", "--root", root, "--timeout", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("timeout") and "expected timeout: ok" in out, out
