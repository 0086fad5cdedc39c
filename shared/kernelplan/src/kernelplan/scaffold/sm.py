"""Stage 3, the target SM: the newest instruction family that the example and the local modules
it imports use (tcgen05 > WGMMA > TMA/cluster > warp MMA/cp.async), else sm_80."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from .astutil import READ_ERRORS, aliases, dotted, local_modules, parse

_TMEM = {"alloc_tmem", "dealloc_tmem", "retrieve_tmem_ptr", "relinquish_tmem_alloc_permit"}
_HOPPER_RE = re.compile(
    r"CopyBulk|(^|_)tma(_|$)|Tma[A-Z]|^TMA|setmaxregister|setmaxnreg|griddepcontrol|"
    r"^cluster_(arrive|wait)|block_in_cluster|elect_one|fence_proxy|^mapa|StMatrix"
)
_AMPERE_RE = re.compile(r"^Mma.*Op$|LdMatrix|CopyG2SOp|^cp_async")
#: family -> (SM, what it is), newest first
FAMILIES = {
    "tcgen05": ("sm_100a", "Blackwell tcgen05 MMA / TMEM (SM100 only)"),
    "wgmma": ("sm_90a", "Hopper warpgroup MMA (WGMMA, cute.nvgpu.warpgroup)"),
    "hopper": ("sm_90a", "Hopper TMA / cluster / mbarrier-async instructions, no WGMMA"),
    "ampere": ("sm_80", "warp-level MMA / cp.async / ldmatrix (Ampere and newer)"),
}
_FOLDER_SM = {"ampere": "sm_80", "hopper": "sm_90a", "blackwell": "sm_100a"}


def _family(chain: str) -> str | None:
    parts = chain.split(".")
    if "tcgen05" in parts or "blackwell_helpers" in parts:
        return "tcgen05"
    if any(p.startswith("Tmem") or p in _TMEM for p in parts):
        return "tcgen05"
    if "warpgroup" in parts or "hopper_helpers" in parts:
        return "wgmma"
    if _HOPPER_RE.search(parts[-1]):
        return "hopper"
    if ("warp" in parts or "cpasync" in parts) and _AMPERE_RE.search(parts[-1]):
        return "ampere"
    return None


def _instructions(tree: ast.Module, where: str) -> dict[str, list[tuple[str, str]]]:
    """family -> [(name, "file Lnn")] for one module."""
    names = aliases(tree)
    found: dict[str, list[tuple[str, str]]] = {}

    def add(fam: str | None, name: str, line: int) -> None:
        if fam:
            found.setdefault(fam, []).append((name, f"{where} L{line}"))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                add(_family(a.name), a.name, node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                add(_family(f"{node.module}.{a.name}"), f"{node.module}.{a.name}", node.lineno)
        elif isinstance(node, ast.Attribute) and not isinstance(
            getattr(node, "_parent", None), ast.Attribute
        ):
            chain = dotted(node)
            if chain:
                head, _, rest = chain.partition(".")
                full = names.get(head, head) + ("." + rest if rest else "")
                add(_family(full), chain, node.lineno)
        elif isinstance(node, ast.Call):
            fn = dotted(node.func) or ""
            if fn.endswith(".launch") and any(k.arg == "cluster" for k in node.keywords):
                add("hopper", f"{fn}(..., cluster=...)", node.lineno)
        elif isinstance(node, ast.Constant) and re.fullmatch(r"sm_103[af]?", str(node.value)):
            add("sm103", node.value, node.lineno)
    return found


def derive_sm(path: Path, relpath: str, root: Path) -> tuple[str, str, list[str], list[str]]:
    """(sm, what decided it, evidence ["`name` (file Lnn)"], notes)."""
    files, todo, found = [path], [path], {}  # type: ignore[var-annotated]
    while todo:
        p = todo.pop()
        try:
            tree = parse(p)
        except READ_ERRORS:
            continue
        where = p.name if p == path else p.relative_to(root).as_posix()
        for fam, hits in _instructions(tree, where).items():
            found.setdefault(fam, []).extend(hits)
        for q in local_modules(tree, p, root):
            if q not in files and len(files) < 12:
                files.append(q)
                todo.append(q)
    parts = relpath.split("/")
    folder = parts[1] if len(parts) > 2 and parts[0] in ("cute", "cute_ext") else None
    if folder == "blackwell_geforce":
        ev = found.get("ampere", []) + found.get("hopper", [])
        why = "the example lives under cute/blackwell_geforce/ (SM120: warp-level MMA, no tcgen05)"
        return "sm_120a", why, _evidence(ev), []
    for fam, (sm, what) in FAMILIES.items():
        hits = found.get(fam)
        if not hits:
            continue
        if fam == "tcgen05" and found.get("sm103"):
            sm, what = "sm_103a", what + "; the code names sm_103 (B300)"
            hits = hits + found["sm103"][:1]
        expected = _FOLDER_SM.get(folder or "")
        notes = []
        if expected and expected != sm:
            notes.append(
                f"the example sits under cute/{folder}/ but uses no instruction newer than {sm}: "
                f"built for {sm}; add {expected} to target_sm to build it for that SM too"
            )
        return sm, what, _evidence(hits), notes
    why = "no tensor-core, TMA or cp.async instruction found: sm_80, the oldest SM built for"
    return "sm_80", why, [], []


def _evidence(hits: list[tuple[str, str]], n: int = 3) -> list[str]:
    out, seen = [], set()
    for name, where in hits:
        if name.split(".")[-1] not in seen:
            seen.add(name.split(".")[-1])
            out.append(f"`{name}` ({where})")
        if len(out) == n:
            break
    return out
