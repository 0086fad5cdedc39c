"""Sphinx configuration of the knowledge-base site (`nox -s docs`, docs/build.py).

Sphinx with MyST reads the Markdown as GitHub shows it (CUTLASS's own docs are Sphinx-built);
the furo theme gives the sidebar navigation and Sphinx's client-side search. While each page
is read (`source-read`), and only in the site:

- a source citation `path:L<a>-L<b>` links to those lines of the pinned CUTLASS tree on GitHub;
- a backticked repository path (`knowledge/...md`, `results/...md|json|png`) that exists links
  to that page or file;
- a kernel devlog gets the plots of its package's report (`results/<package>/report/*.png`);
- the results page gets every report plot.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

SRC = Path()  # the staging folder Sphinx reads (set from app.srcdir in setup)
ROOT = Path(__file__).resolve().parent.parent

project = "learn-cute-dsl"
author = "learn-cute-dsl"
copyright = "learn-cute-dsl contributors"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
include_patterns = ["index.md", "results.md", "README.md", "knowledge/**", "results/**.md"]
exclude_patterns = ["_build", "**/.ipynb_checkpoints"]
myst_heading_anchors = 6
myst_enable_extensions = ["colon_fence"]
suppress_warnings = ["myst.header"]  # entries may step from ## to #### (GitHub renders it)
html_theme = "furo"
html_title = "learn-cute-dsl knowledge base"
html_copy_source = False
html_show_sourcelink = False

_manifest = ROOT / "knowledge" / "cutlass-manifest.json"
try:
    _man = json.loads(_manifest.read_text(encoding="utf-8"))
except (OSError, ValueError):
    _man = {}
CUTLASS_COMMIT = _man.get("commit", "main")
CUTLASS_FILES = set(_man.get("files", {}))
CUTLASS_URL = f"https://github.com/NVIDIA/cutlass/blob/{CUTLASS_COMMIT}/examples/python/CuTeDSL/"

FENCE_RE = re.compile(r"^\s*(```+|~~~+)")
# A backticked span not already the text of a link: `...` not preceded by '[' .
CITE_RE = re.compile(r"(?<!\[)`(?P<path>[\w.][\w./+-]*):L(?P<a>\d+)(?:-L(?P<b>\d+))?`(?!\])")
PATH_RE = re.compile(
    r"(?<!\[)`(?P<path>(?:knowledge/[\w./-]+\.md)|(?:results/[\w./@=+-]+\.(?:md|json|png)))`(?!\])"
)
IMPORTED_RE = re.compile(r"^Imported:\s*`packages/(?P<pkg>[\w.-]+)/")
PLOTS_MARKER = "<!-- plots:"


def _rel(docname: str, repo_path: str) -> str:
    """A repository path relative to the page `docname` (both under the staging root)."""
    return posixpath.relpath(repo_path, posixpath.dirname(docname) or ".")


def _link_line(line: str, docname: str) -> str:
    def cite(m: re.Match[str]) -> str:
        path = m.group("path")
        if path not in CUTLASS_FILES:
            return m.group(0)
        a, b = m.group("a"), m.group("b")
        anchor = f"#L{a}-L{b}" if b else f"#L{a}"
        return f"[{m.group(0)}]({CUTLASS_URL}{path}{anchor})"

    def local(m: re.Match[str]) -> str:
        path = m.group("path")
        if not (SRC / path).exists():
            return m.group(0)
        return f"[{m.group(0)}]({_rel(docname, path)})"

    return PATH_RE.sub(local, CITE_RE.sub(cite, line))


def _plots(docname: str, package: str) -> list[str]:
    pngs = sorted((SRC / "results" / package / "report").glob("*.png"))
    if not pngs:
        return []
    out = ["", f"## Plots: {package}", ""]
    report = SRC / "results" / package / "report" / "report.md"
    if report.is_file():
        where = _rel(docname, f"results/{package}/report/report.md")
        out += [f"From the package's [report]({where}) (`nox -s report -- {package}`).", ""]
    for png in pngs:
        rel = _rel(docname, f"results/{package}/report/{png.name}")
        out += [f"![{package}: {png.stem}]({rel})", ""]
    return out


def _on_source_read(app, docname: str, source: list[str]) -> None:
    lines = source[0].split("\n")
    out: list[str] = []
    closer: str | None = None
    package = None
    for line in lines:
        m = FENCE_RE.match(line)
        if closer is None and m:
            closer = m.group(1)[0] * len(m.group(1))
            out.append(line)
            continue
        if closer is not None:
            if line.strip().startswith(closer) and not line.strip().strip(closer[0]):
                closer = None
            out.append(line)
            continue
        mi = IMPORTED_RE.match(line)
        if mi and package is None:
            package = mi.group("pkg")
        if line.startswith(PLOTS_MARKER) and docname == "results":
            for pkg_dir in sorted((SRC / "results").iterdir()):
                out += _plots(docname, pkg_dir.name)
            continue
        out.append(_link_line(line, docname))
    if docname.startswith("knowledge/kernels/") and package:
        out += _plots(docname, package)
    source[0] = _title_if_missing(docname, "\n".join(out))


def _title_if_missing(docname: str, text: str) -> str:
    """A report page without a '# ' title gets its file name as one (for the navigation)."""
    if docname.startswith("results/") and not re.search(r"^# ", text, re.M):
        return f"# {docname}\n\n{text}"
    return text


def setup(app):
    global SRC
    SRC = Path(app.srcdir)
    app.connect("source-read", _on_source_read)
    return {"parallel_read_safe": True}
