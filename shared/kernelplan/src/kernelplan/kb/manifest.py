"""knowledge/cutlass-manifest.json: the pinned CUTLASS example tree, as data.

For every file under examples/python/CuTeDSL at the pinned commit: its line count and git
blob id; for every .py file, the facts the SELECT catalog needs (has a __main__, kernel
classes, target SM by the instruction rule, a one-line summary from its docstring). With the
manifest committed, the lint and the catalogs need no CUTLASS sources.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import re
import tokenize
from pathlib import Path

from kernelplan.errors import KernelPlanError

from .citations import EXAMPLES_ROOT
from .layout import Layout, git, pinned_commit

GENERATOR = "python -m kernelplan.kb manifest"
SKIP_PARTS = {"__pycache__", ".git"}

# ---- target SM ---------------------------------------------------------------------------
# The rule, first match wins; it reads the code with comments and strings removed.
SM_RULES: tuple[tuple[str, str, str], ...] = (
    # (target, reason, regex over code)
    ("sm_100a", "tcgen05/TMEM", r"\btcgen05\b|(?<![A-Za-z])[Tt]mem"),
    ("sm_90a", "warpgroup MMA (wgmma)", r"\bwarpgroup\b|\bwgmma\b|\bsm90_utils\b|hopper_helpers"),
    (
        "sm_90",
        "TMA, bulk copy, cluster, elect.sync or griddepcontrol",
        r"\bmake_tiled_tma_atom\b|\bCopyBulkTensorTile\w*|\btma_partition\b|\bcp_async_bulk\w*"
        r"|\bcluster_(?:arrive|wait)\w*|\bblock_in_cluster_idx\b|\bmapa\b|\belect_sync\b"
        r"|expect_tx\b|\bgriddepcontrol_\w+",
    ),
    (
        "sm_80",
        "warp MMA or cp.async",
        r"\bwarp\s*\.\s*Mma\w*Op\b|\bMma(?:F16BF16|FP8|I8)\w*Op\b|\bCopyG2SOp\b|\bcp_async_(?!bulk)\w+",
    ),
)
# Applied before the instruction rule: folders and names that fix the target by themselves.
SM_PATH_RULES: tuple[tuple[str, str, str], ...] = (
    (
        "sm_120a",
        "folder blackwell_geforce/ (consumer Blackwell, no tcgen05)",
        r"(^|/)blackwell_geforce/",
    ),
    ("sm_103a", "file name sm103_*", r"(^|/)sm103_[^/]*$"),
)
# Applied when no instruction matched: the architecture folder, else any SM.
SM_FOLDER_FALLBACK: tuple[tuple[str, str], ...] = (
    ("cute/ampere/", "sm_80"),
    ("cute/hopper/", "sm_90"),
    ("cute/blackwell/", "sm_100a"),
)

SM_RULE_TEXT = (
    "Target SM, first match wins: the folder `blackwell_geforce/` gives sm_120a and a file "
    "name `sm103_*` gives sm_103a; then the code (comments and strings removed): tcgen05 or "
    "TMEM gives sm_100a; warpgroup/wgmma gives sm_90a; TMA, bulk copy, cluster, elect.sync "
    "or griddepcontrol gives "
    "sm_90; warp MMA or cp.async gives sm_80; otherwise the architecture folder (ampere "
    'sm_80, hopper sm_90, blackwell sm_100a, marked "(folder)"), else "any".'
)


def _code_only(text: str) -> str:
    """The source with comments and string literals removed (best effort)."""
    skip = {tokenize.COMMENT, tokenize.STRING}
    for name in ("FSTRING_MIDDLE", "FSTRING_START", "FSTRING_END"):
        if hasattr(tokenize, name):
            skip.add(getattr(tokenize, name))
    try:
        toks = tokenize.generate_tokens(io.StringIO(text).readline)
        return " ".join(t.string for t in toks if t.type not in skip)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text


def target_sm(path: str, text: str) -> tuple[str, str]:
    for sm, why, rx in SM_PATH_RULES:
        if re.search(rx, path):
            return sm, why
    code = _code_only(text)
    for sm, why, rx in SM_RULES:
        if re.search(rx, code):
            return sm, why
    for prefix, sm in SM_FOLDER_FALLBACK:
        if path.startswith(prefix):
            return sm, "folder"
    return "any", "no architecture-specific instruction"


# ---- docstring summary -------------------------------------------------------------------


def summarise(doc: str, limit: int = 120) -> str:
    """The first sentence of the first paragraph, on one line, at most `limit` characters."""
    # Drop reStructuredText underlines ("=====") before splitting into paragraphs.
    doc = re.sub(r"(?m)^\s*[=\-~^]{3,}\s*$", "", doc)
    paras = [p for p in re.split(r"\n\s*\n", doc.strip()) if p.strip()]
    if not paras:
        return ""
    para = " ".join(paras[0].split())
    m = re.search(r"(?<=[.!?])\s+(?=[A-Z(`*-])", para)
    sentence = para[: m.start()] if m else para
    # Boilerplate that every example shares says nothing about the workload.
    sentence = re.sub(r"\s+(?:using|with|in)\s+(?:the\s+)?cute\s*dsl\b", "", sentence, flags=re.I)
    sentence = re.sub(r"\s+example(?=\s+for\b)", "", sentence, flags=re.I)
    if len(sentence) > limit:
        cut = sentence[: limit - 3].rsplit(" ", 1)[0]
        sentence = cut.rstrip(",;:") + "..."
    return sentence


def _decorator_is_cute_kernel(dec: ast.expr) -> bool:
    if isinstance(dec, ast.Call):
        dec = dec.func
    if isinstance(dec, ast.Attribute) and dec.attr == "kernel":
        base = dec.value
        return (
            isinstance(base, ast.Name)
            and base.id == "cute"
            or (isinstance(base, ast.Attribute) and base.attr == "cute")
        )
    return False


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    parts = [node.test.left, *node.test.comparators]
    names = {p.id for p in parts if isinstance(p, ast.Name)}
    consts = {p.value for p in parts if isinstance(p, ast.Constant)}
    return "__name__" in names and "__main__" in consts


def analyse_python(path: str, text: str) -> dict:
    """Facts about one example .py file for the SELECT catalog."""
    sm, why = target_sm(path, text)
    facts: dict = {"sm": sm, "sm_rule": why}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        facts.update(main="__main__" in text, kernel_classes=[], summary="")
        return facts
    main = any(_is_main_guard(n) for n in tree.body)
    kernel_classes, kernel_functions, docs = [], [], []
    for node in tree.body:
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            docs.append(node.value.value)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    _decorator_is_cute_kernel(d) for d in item.decorator_list
                ):
                    kernel_classes.append(node.name)
                    break
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(
            _decorator_is_cute_kernel(d) for d in node.decorator_list
        ):
            kernel_functions.append(node.name)
    summary = summarise(docs[0]) if docs else ""
    if not summary:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name in kernel_classes:
                summary = summarise(ast.get_docstring(node) or "")
                if summary:
                    break
    facts.update(
        main=main,
        kernel_classes=sorted(set(kernel_classes)),
        kernel_functions=sorted(kernel_functions),
        summary=summary,
    )
    return facts


# ---- reading the tree --------------------------------------------------------------------


def count_lines(data: bytes) -> int:
    """Lines as an editor numbers them: a final line without a newline still counts."""
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _read_git(cutlass: Path, commit: str) -> dict[str, bytes] | None:
    listing = git(cutlass, "ls-tree", "-r", "-z", "--full-tree", commit, "--", EXAMPLES_ROOT)
    if listing is None:
        return None
    entries = []
    for item in listing.decode("utf-8", "surrogateescape").split("\0"):
        if not item:
            continue
        meta, path = item.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob" and mode != "120000":
            entries.append((path, sha))
    if not entries:
        return None
    batch = git(
        cutlass, "cat-file", "--batch", stdin="".join(s + "\n" for _, s in entries).encode()
    )
    if batch is None:
        return None
    out: dict[str, bytes] = {}
    pos = 0
    for path, sha in entries:
        nl = batch.index(b"\n", pos)
        header = batch[pos:nl].split()
        if len(header) != 3 or header[0].decode() != sha:
            raise KernelPlanError(f"git cat-file gave an unexpected answer for {path}: retry")
        size = int(header[2])
        out[path[len(EXAMPLES_ROOT) + 1 :]] = batch[nl + 1 : nl + 1 + size]
        pos = nl + 1 + size + 1
    return out


def _read_folder(cutlass: Path) -> dict[str, bytes]:
    base = cutlass / EXAMPLES_ROOT
    out = {}
    for p in sorted(base.rglob("*")):
        rel = p.relative_to(base)
        if p.is_symlink() or not p.is_file() or SKIP_PARTS & set(rel.parts):
            continue
        if p.suffix == ".pyc":
            continue
        out[rel.as_posix()] = p.read_bytes()
    return out


def sources_present(cutlass: Path) -> bool:
    return (cutlass / EXAMPLES_ROOT).is_dir()


def build(layout: Layout, commit: str | None = None) -> dict:
    """The manifest, read from the CUTLASS sources (git objects of `commit` when the CUTLASS
    folder is a git checkout that has it, else the files on disk)."""
    cutlass = layout.cutlass
    commit = commit or pinned_commit(layout.root)
    if commit is None:
        head = git(cutlass, "rev-parse", "HEAD")
        commit = head.decode().strip() if head else None
    files = _read_git(cutlass, commit) if commit else None
    read_from = "git"
    if files is None:
        if not sources_present(cutlass):
            raise KernelPlanError(
                f"CUTLASS sources not found at {cutlass}: run "
                "`git submodule update --init third_party/cutlass` or set CUTLASS_DIR"
            )
        if commit is None:
            raise KernelPlanError(
                f"cannot tell which CUTLASS commit {cutlass} holds: pass --commit <sha>"
            )
        files = _read_folder(cutlass)
        read_from = "folder"
    manifest = {
        "generator": GENERATOR,
        "commit": commit,
        "root": EXAMPLES_ROOT,
        "files": {},
        "python": {},
    }
    for path in sorted(files):
        data = files[path]
        manifest["files"][path] = {"lines": count_lines(data), "blob": blob_id(data)}
        if path.endswith(".py"):
            text = data.decode("utf-8", "replace")
            manifest["python"][path] = analyse_python(path, text)
    manifest["_read_from"] = read_from  # not written; for messages only
    return manifest


def dumps(manifest: dict) -> str:
    """Deterministic JSON: one line per file, so that a diff shows what changed."""
    lines = ["{"]
    lines.append(f'  "generator": {json.dumps(manifest["generator"])},')
    lines.append(f'  "commit": {json.dumps(manifest["commit"])},')
    lines.append(f'  "root": {json.dumps(manifest["root"])},')
    for key in ("files", "python"):
        items = sorted(manifest[key].items())
        lines.append(f'  "{key}": {{')
        for i, (path, value) in enumerate(items):
            comma = "," if i + 1 < len(items) else ""
            body = json.dumps(value, sort_keys=True, ensure_ascii=False)
            lines.append(f"    {json.dumps(path)}: {body}{comma}")
        lines.append("  }," if key == "files" else "  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write(layout: Layout, manifest: dict) -> Path:
    layout.knowledge.mkdir(parents=True, exist_ok=True)
    layout.manifest.write_text(dumps(manifest), encoding="utf-8")
    return layout.manifest


def load(layout: Layout) -> dict | None:
    """The committed manifest, or None when there is none."""
    if not layout.manifest.is_file():
        return None
    try:
        data = json.loads(layout.manifest.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise KernelPlanError(
            f"{layout.rel(layout.manifest)} is not valid JSON ({exc.msg}, line {exc.lineno}): "
            "regenerate it with python -m kernelplan.kb manifest"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise KernelPlanError(
            f"{layout.rel(layout.manifest)} has no 'files' table: "
            "regenerate it with python -m kernelplan.kb manifest"
        )
    data.setdefault("python", {})
    return data


def compare(committed: dict, fresh: dict, limit: int = 8) -> list[str]:
    """Human-readable differences between two manifests (empty when they agree)."""
    out = []
    if committed.get("commit") != fresh.get("commit"):
        out.append(f"commit {committed.get('commit')} != sources {fresh.get('commit')}")
    a, b = committed.get("files", {}), fresh.get("files", {})
    for p in sorted(set(b) - set(a))[:limit]:
        out.append(f"{p}: in the sources, not in the manifest")
    for p in sorted(set(a) - set(b))[:limit]:
        out.append(f"{p}: in the manifest, not in the sources")
    changed = [p for p in sorted(set(a) & set(b)) if a[p] != b[p]]
    for p in changed[:limit]:
        out.append(
            f"{p}: {a[p].get('lines')} lines in the manifest, {b[p].get('lines')} in the sources"
        )
    pa, pb = committed.get("python", {}), fresh.get("python", {})
    facts = [p for p in sorted(set(pa) | set(pb)) if pa.get(p) != pb.get(p) and p not in changed]
    for p in facts[:limit]:
        out.append(f"{p}: example facts differ (the manifest generator changed?)")
    return out
