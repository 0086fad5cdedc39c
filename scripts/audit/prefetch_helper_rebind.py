"""Audit experiment for the pitfall of
knowledge/languages/cute-dsl/optimizations/tma-l2-prefetch-in-persistent-producer.md that says
the per-tile prefetch helper must hand the producer back and the tile loop must rebind it, or
the DSL rejects the kernel. Compiles, on the CPU for sm_100a (CUTE_DSL_ARCH, set here before
cutlass is imported), nvidia-cutlass-dsl as locked:

  1. the snippet as committed (helper returns the producer, the loop rebinds it);
  2. the same kernel with `return producer` dropped from the helper and `return` from the
     snippet's PrefetchGemm.load_tile, and the skeleton's tile loop calling load_tile without
     rebinding ab_producer (`self.load_tile(...)` instead of `ab_producer = self.load_tile(...)`);
  3. case 1 with the helper's `@cute.jit` removed (its dynamic loops and branch then reach
     the DSL without the AST preprocessor).

The snippet and _sm100_gemm.py are copied to a temporary `snippets/` folder with only those
lines changed.

    uv run python scripts/audit/prefetch_helper_rebind.py \
        > knowledge/audit/checks/prefetch-helper-rebind.log

Prints `case: outcome` (the exception's type and first 400 characters when it fails) and the
loop-carried values of the TMA warp's tile loop in the kernel's MLIR (each case compiled in a
subprocess with CUTE_DSL_KEEP=ir; compile_snippet compiles PF_DIST then 0, and the dump kept is
the last, whose tile loop is the same but for the prefetches). Case 2 compiles: the DSL does not
reject it, and its tile loop carries no pipeline state (every tile restarts the ring at slot 0
with the initial phase).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("CUTE_DSL_ARCH", "sm_100a")
ROOT = Path(__file__).resolve().parents[2]
SNIPPETS = ROOT / "knowledge" / "snippets"
NAME = "tma-l2-prefetch-in-persistent-producer"


def outcome(fn) -> str:
    try:
        fn()
        return "compiled"
    except BaseException as exc:  # noqa: BLE001 - the DSL raises several kinds
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
        text = " ".join(text.split())
        return f"FAILED {type(exc).__name__}: {text[:400]}"


def replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"expected one {old!r}"
    return text.replace(old, new)


def variant(folder: Path, rebind: bool, jit: bool = True) -> Path:
    snip = (SNIPPETS / f"{NAME}.py").read_text()
    skel = (SNIPPETS / "_sm100_gemm.py").read_text()
    if not jit:
        snip = replace_once(
            snip, "@cute.jit\ndef load_tile_with_prefetch(", "def load_tile_with_prefetch("
        )
    if not rebind:
        snip = replace_once(
            snip,
            "    return producer  # rebind it in the caller's tile loop, so that its state is"
            " carried\n",
            "",
        )
        snip = replace_once(
            snip, "        return load_tile_with_prefetch(", "        load_tile_with_prefetch("
        )
        skel = replace_once(
            skel,
            "ab_producer = self.load_tile(ab_producer, g, a_tiles, b_tiles)",
            "self.load_tile(ab_producer, g, a_tiles, b_tiles)",
        )
    sub = folder / f"snippets_{int(rebind)}{int(jit)}" / "snippets"
    sub.mkdir(parents=True)
    (sub / f"{NAME}.py").write_text(snip)
    (sub / "_sm100_gemm.py").write_text(skel)
    return sub / f"{NAME}.py"


def carried(dump: Path) -> str:
    """The loop-carried values of the first scf.for of the kernel's clean MLIR: the TMA warp's
    tile loop (it comes first in roles())."""
    mlir = next(dump.glob("*_clean.mlir")).read_text()
    first = next(line for line in mlir.splitlines() if "scf.for" in line)
    m = re.search(r"-> \(([^)]*)\)", first)
    return f"tile loop carries ({m.group(1)})" if m else "tile loop carries nothing"


def main() -> int:
    cases = (
        ("1 returned and rebound", True, True),
        ("2 not returned, not rebound", False, True),
        ("3 as 1 without @cute.jit on the helper", True, False),
    )
    if len(sys.argv) == 3:  # child: compile one case (its DSL reads the dump settings at import)
        from kernelplan.kb.snippets import load_module

        label, rebind, jit = cases[int(sys.argv[1]) - 1]
        module = load_module(variant(Path(sys.argv[2]), rebind, jit))
        print(f"{label}: {outcome(module.compile_snippet)}", flush=True)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 2, 3):
            dump = Path(tmp) / f"dump{n}"
            env = dict(os.environ, CUTE_DSL_KEEP="ir", CUTE_DSL_DUMP_DIR=str(dump))
            out = subprocess.run(
                [sys.executable, __file__, str(n), tmp], env=env, capture_output=True, text=True
            ).stdout.strip()
            kept = carried(dump) if any(dump.glob("*_clean.mlir")) else "no MLIR"
            print(f"{out}; {kept}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
