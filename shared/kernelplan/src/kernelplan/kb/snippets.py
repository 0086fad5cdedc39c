"""Executable snippets: every Implementation snippet of the knowledge base is a Python file
under knowledge/snippets/, shown in its entry from there.

The file (``knowledge/snippets/<entry-name>.py``; known-bad versions kept on purpose under
``knowledge/snippets/bad/``) declares, as plain module-level assignments read without
importing it:

- ``SM``: ``"generic"`` (no arch-specific instruction, or host code) or the target it is
  compiled for (``"sm_90a"``, ``"sm_100a"``, ...);
- ``EXPECT``: what its check does on a GPU of its SM, ``"pass"`` (default) or ``"timeout"``
  (a known-bad snippet that deadlocks);
- ``TIMEOUT_S`` (optional): the time limit of its check, in seconds;
- ``PENDING`` (only while it is not yet real code): why. The lint fails on it when the
  project's GPU runs ``SM`` (generic, sm_90), and on any SM when the file defines no
  ``compile_snippet()`` (a bare fragment); for another SM a file that does compile only
  warns, and it is compiled in CI like any other.

and defines ``compile_snippet()`` (CPU: compiles its kernels for ``SM`` with fake tensors, or
exercises its host code) and, when ``SM`` is generic or sm_90, ``check()`` (GPU: runs it and
compares with torch; returns a one-line summary or raises).

In the entry, a marker line ``<!-- snippet: knowledge/snippets/<name>.py -->`` is followed by
a fenced block that holds the file's shown part: the lines between ``# snippet:begin`` and
``# snippet:end`` (dedented; several regions are joined by a ``# ...`` line), or the whole
file when it has no such markers. ``python -m kernelplan.kb catalog`` rewrites the block from
the file; the lint fails when they differ.

``python -m kernelplan.kb snippets list|compile|run`` lists them, compiles each in a
subprocess with ``CUTE_DSL_ARCH`` set to its SM, and runs each runnable check in a
subprocess under a time limit (so a deadlock is reported as a timeout, not a hang).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from kernelplan.errors import KernelPlanError

from .layout import Layout
from .markdown import FENCE_RE

SNIPPET_FOLDER = "knowledge/snippets"
MARKER_RE = re.compile(r"^\s*<!--\s*snippet:\s*(?P<path>\S+)\s*-->\s*$")
BEGIN_RE = re.compile(r"^\s*# snippet:begin\s*$")
END_RE = re.compile(r"^\s*# snippet:end\s*$")
SM_RE = re.compile(r"^(generic|sm_\d+[af]?)$")
EXPECTS = ("pass", "timeout")
#: SMs whose snippets run on the project's GPU (an H200, sm_90).
RUNNABLE_SMS = ("generic", "sm_90", "sm_90a")
#: The arch a generic snippet is compiled for in CI.
GENERIC_COMPILE_ARCH = "sm_90a"
DEFAULT_TIMEOUT_S = 120
REGION_JOIN = "# ..."


@dataclass(frozen=True)
class Snippet:
    rel: str  # knowledge/snippets/...py
    path: Path
    sm: str | None
    expect: str
    timeout_s: float | None
    pending: str | None
    has_compile: bool
    has_check: bool
    problems: tuple[str, ...]  # what keeps it from being a valid snippet file

    @property
    def is_bad(self) -> bool:
        return "/bad/" in self.rel

    @property
    def compiles(self) -> bool:
        """Compiled in CI: real code, or PENDING for an SM the project's GPU lacks while it
        still defines compile_snippet() (the lint fails any PENDING for the GPU's own SMs,
        and a PENDING fragment without compile_snippet() on any SM)."""
        if self.problems or not self.has_compile:
            return False
        return self.pending is None or self.sm not in RUNNABLE_SMS

    @property
    def runnable(self) -> bool:
        return self.compiles and self.has_check and self.sm in RUNNABLE_SMS

    @property
    def compile_arch(self) -> str:
        return GENERIC_COMPILE_ARCH if self.sm in (None, "generic") else str(self.sm)


def read_snippet(layout: Layout, rel: str) -> Snippet:
    path = layout.root / rel
    problems: list[str] = []
    meta: dict[str, object] = {}
    funcs: set[str] = set()
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
    except (OSError, UnicodeDecodeError) as exc:
        tree = None
        problems.append(f"cannot read it ({exc})")
    except SyntaxError as exc:
        tree = None
        problems.append(f"not valid Python (line {exc.lineno}: {exc.msg})")
    if tree is not None:
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name) and target.id in (
                    "SM",
                    "EXPECT",
                    "TIMEOUT_S",
                    "PENDING",
                ):
                    try:
                        meta[target.id] = ast.literal_eval(node.value)
                    except ValueError:
                        problems.append(f"{target.id} must be a literal")
            elif isinstance(node, ast.FunctionDef):
                funcs.add(node.name)
    sm = meta.get("SM")
    if not isinstance(sm, str) or not SM_RE.match(sm):
        problems.append("declares no SM = 'generic' | 'sm_90a' | 'sm_100a' | ...")
        sm = None
    expect = meta.get("EXPECT", "pass")
    if expect not in EXPECTS:
        problems.append(f"EXPECT must be one of {', '.join(EXPECTS)}")
        expect = "pass"
    timeout = meta.get("TIMEOUT_S")
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
        problems.append("TIMEOUT_S must be a positive number")
        timeout = None
    pending = meta.get("PENDING")
    if pending is not None and not (isinstance(pending, str) and pending.strip()):
        problems.append("PENDING must say why, as a string")
        pending = "no reason given"
    has_compile, has_check = "compile_snippet" in funcs, "check" in funcs
    if tree is not None and pending is None:
        if not has_compile:
            problems.append("defines no compile_snippet() (or declare PENDING = '<why>')")
        if sm in RUNNABLE_SMS and not has_check:
            problems.append(f"SM {sm} runs on the project's H200 but it defines no check()")
    if "/bad/" in rel and expect == "pass":
        problems.append("a known-bad snippet (under bad/) must declare EXPECT = 'timeout'")
    return Snippet(
        rel,
        path,
        sm,
        str(expect),
        float(timeout) if timeout else None,
        pending if isinstance(pending, str) else None,
        has_compile,
        has_check,
        tuple(problems),
    )


def all_snippets(layout: Layout) -> list[Snippet]:
    folder = layout.root / SNIPPET_FOLDER
    if not folder.is_dir():
        return []
    return [
        read_snippet(layout, layout.rel(p))
        for p in sorted(folder.rglob("*.py"))
        if not p.name.startswith("_") and "__pycache__" not in p.parts
    ]


# ---- what the entry shows ------------------------------------------------------------------


def shown_text(source: str) -> str:
    """The part of a snippet file that its entry shows (see the module docstring)."""
    lines = source.splitlines()
    regions: list[list[str]] = []
    cur: list[str] | None = None
    for line in lines:
        if BEGIN_RE.match(line):
            if cur is not None:
                raise KernelPlanError("'# snippet:begin' inside an open region")
            cur = []
        elif END_RE.match(line):
            if cur is None:
                raise KernelPlanError("'# snippet:end' without '# snippet:begin'")
            regions.append(cur)
            cur = None
        elif cur is not None:
            cur.append(line)
    if cur is not None:
        raise KernelPlanError("'# snippet:begin' never closed by '# snippet:end'")
    if not regions:
        return source.rstrip("\n")
    parts = [textwrap.dedent("\n".join(r)).strip("\n") for r in regions]
    return f"\n{REGION_JOIN}\n".join(parts)


@dataclass(frozen=True)
class Block:
    marker: int  # 0-based index of the marker line
    rel: str  # the snippet path the marker names
    open: int | None  # 0-based index of the opening fence (None: no fence follows)
    close: int | None  # 0-based index of the closing fence

    def body(self, lines: list[str]) -> str:
        if self.open is None or self.close is None:
            return ""
        return "\n".join(lines[self.open + 1 : self.close])


def fence_openings(lines: list[str]) -> list[int]:
    """0-based indices of the lines that open a fenced block (as markdown.Doc reads them)."""
    out = []
    closer: re.Pattern[str] | None = None
    for i, line in enumerate(lines):
        if closer is None:
            m = FENCE_RE.match(line)
            if m:
                mark = m.group(1)
                closer = re.compile(f"{re.escape(mark[0])}{{{len(mark)},}}")
                out.append(i)
        elif closer.fullmatch(line.strip()):
            closer = None
    return out


def blocks(lines: list[str], in_code: list[bool]) -> list[Block]:
    """The snippet markers of one Markdown file, each with the fenced block right after it."""
    out = []
    for i, line in enumerate(lines):
        if in_code[i]:
            continue
        m = MARKER_RE.match(line)
        if not m:
            continue
        j = i + 1
        opened = j if j < len(lines) and FENCE_RE.match(lines[j]) else None
        close = None
        if opened is not None:
            mark = FENCE_RE.match(lines[opened]).group(1)
            closer = re.compile(f"{re.escape(mark[0])}{{{len(mark)},}}")
            for k in range(opened + 1, len(lines)):
                if closer.fullmatch(lines[k].strip()):
                    close = k
                    break
        out.append(Block(i, m.group("path"), opened, close))
    return out


def expected_body(layout: Layout, rel: str) -> str:
    path = layout.root / rel
    if not rel.startswith(SNIPPET_FOLDER + "/") or not rel.endswith(".py"):
        raise KernelPlanError(f"a snippet lives under {SNIPPET_FOLDER}/ and ends in .py")
    if not path.is_file():
        raise KernelPlanError("no such file")
    return shown_text(path.read_text(encoding="utf-8"))


def refresh_text(layout: Layout, text: str) -> str:
    """The Markdown text with every snippet block rewritten from its file (a marker with no
    fence after it gets one). Markers naming a missing file are left alone (the lint says so)."""
    from .markdown import Doc

    doc = Doc.parse(text, Path("x.md"), "x.md")
    lines = list(doc.lines)
    for b in reversed(blocks(doc.lines, doc.in_code)):
        try:
            body = expected_body(layout, b.rel)
        except KernelPlanError:
            continue
        new = ["```python", *body.splitlines(), "```"]
        if b.open is None:
            lines[b.marker + 1 : b.marker + 1] = new
        elif b.close is not None:
            lines[b.open : b.close + 1] = new
    out = "\n".join(lines)
    return out + "\n" if text.endswith("\n") else out


def refresh(layout: Layout, check_only: bool = False) -> list[str]:
    """Rewrite (or, with check_only, list) the knowledge files whose snippet blocks are stale."""
    changed = []
    for path in sorted(layout.knowledge.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        if "snippet:" not in text:
            continue
        new = refresh_text(layout, text)
        if new != text:
            changed.append(layout.rel(path))
            if not check_only:
                path.write_text(new, encoding="utf-8")
    return changed


# ---- running them --------------------------------------------------------------------------


def load_module(path: Path):
    name = "kb_snippet_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise KernelPlanError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def sibling(here: str, name: str):
    """Another file of the snippets folder, imported once (helpers such as ``_axpy``)."""
    folder = Path(here).resolve().parent
    while folder.name != "snippets" and folder.parent != folder:
        folder = folder.parent
    key = "kb_snippet_" + re.sub(r"\W", "_", name)
    if key in sys.modules:
        return sys.modules[key]
    return load_module(folder / f"{name}.py")


def exec_in_process(path: Path, what: str) -> int:
    """`snippets exec PATH compile|check`: what the subprocesses run."""
    import warnings

    module_name = "kb_snippet_" + re.sub(r"\W", "_", path.stem)
    # a deprecated DSL API called from the snippet itself fails it
    warnings.filterwarnings("error", category=DeprecationWarning, module=re.escape(module_name))
    warnings.filterwarnings("error", category=FutureWarning, module=re.escape(module_name))
    module = load_module(path)
    fn = getattr(module, "compile_snippet" if what == "compile" else "check")
    result = fn()
    summary = result if isinstance(result, str) else ""
    print(f"{what} ok{': ' + summary if summary else ''}", flush=True)
    return 0


@dataclass(frozen=True)
class Outcome:
    snippet: Snippet
    what: str  # compile | check
    status: str  # pass | fail | timeout
    seconds: float
    tail: str

    @property
    def as_expected(self) -> bool:
        want = self.snippet.expect if self.what == "check" else "pass"
        return self.status == want


def run_one(snippet: Snippet, what: str, timeout_s: float, root: Path) -> Outcome:
    env = dict(os.environ)
    if what == "compile":
        env["CUTE_DSL_ARCH"] = snippet.compile_arch
    cmd = [sys.executable, "-m", "kernelplan.kb", "snippets", "exec", snippet.rel, what]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: a timeout kills all of it
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        status = "pass" if proc.returncode == 0 else "fail"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        status = "timeout"
    seconds = time.monotonic() - t0
    tail = "\n".join((out or "").strip().splitlines()[-15:])
    return Outcome(snippet, what, status, seconds, tail)
