"""Every executable snippet of the knowledge base compiles on the CPU for its own SM.

Each non-pending file under knowledge/snippets/ runs its compile_snippet() in a subprocess
with CUTE_DSL_ARCH set to its SM (fake tensors; no GPU). Running the checks needs the H200:
`python -m kernelplan.kb snippets run` (see knowledge/README.md).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from kernelplan.kb.layout import Layout
from kernelplan.kb.snippets import all_snippets, run_one

REPO = Path(__file__).resolve().parents[1]
LAYOUT = Layout(REPO)
SNIPPETS = [s for s in all_snippets(LAYOUT) if s.compiles]


def test_there_are_snippets_to_compile() -> None:
    assert len(SNIPPETS) >= 10
    assert any(s.is_bad and s.expect == "timeout" for s in SNIPPETS)


@pytest.mark.skipif(
    importlib.util.find_spec("cutlass") is None, reason="the CuTe DSL is not installed"
)
@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.rel.split("snippets/")[1] for s in SNIPPETS])
def test_snippet_compiles_for_its_sm(snippet) -> None:
    outcome = run_one(snippet, "compile", 600, REPO)
    assert outcome.status == "pass", f"{snippet.rel} for {snippet.compile_arch}:\n{outcome.tail}"


# ---- a K loop that restarts its accumulator: read from the PTX ------------------------------
#
# The sm_90a GEMM snippets built on _hopper_tile.TmaGemm compute one C tile = sum over every K
# tile. A WGMMA whose scale-d (ACCUMULATE) is the constant 0 inside a loop zeroes C on every
# iteration: C is then the last K tile's product alone, which only the H200 check saw
# (2026-12-01, stmatrix-accumulator-tile-to-smem and tma-load-l2-cache-hint, max abs error
# 119.5: the flag was set to False before a dynamic loop and to True only inside a helper, so
# the loop did not carry it). Other kernels (an attention S = Q K^T per tile) restart on
# purpose, so the rule holds for the TmaGemm snippets only.

TMA_GEMM_RE = re.compile(r"^class \w+\([\w.]*TmaGemm\):", re.M)
LABEL_RE = re.compile(r"^(\$L__\w+):")
BRANCH_RE = re.compile(r"\bbra(?:\.uni)?\s+(\$L__\w+);")
WGMMA_RE = re.compile(r"\bwgmma\.mma_async\.\S+\s+\{[^}]*\},\s*([^;]*);")
SETP_P_RE = re.compile(r"setp\.ne\.b32\s+p,\s*(%r\d+),\s*0;")


def wgmma_zeroing_in_loops(ptx: str) -> list[int]:
    """1-based PTX lines of the WGMMAs inside a loop (a label .. a later branch back to it)
    whose scale-d is the constant 0: the immediate 0, or the inline-asm predicate p set from a
    register whose every definition is `mov.b32 %r, 0`."""
    lines = ptx.splitlines()
    labels = {m.group(1): i for i, ln in enumerate(lines) if (m := LABEL_RE.match(ln.strip()))}
    loops = []
    for j, ln in enumerate(lines):
        m = BRANCH_RE.search(ln)
        if m and m.group(1) in labels and labels[m.group(1)] < j:
            loops.append((labels[m.group(1)], j))
    defs: dict[str, list[str]] = {}
    for ln in lines:
        m = re.match(r"\s*[a-z][\w.]*\s+(%r\d+)\s*,", ln)  # instruction DEST, ...
        if m:
            defs.setdefault(m.group(1), []).append(ln.strip())
    bad = []
    for i, ln in enumerate(lines):
        m = WGMMA_RE.search(ln)
        if not m:
            continue
        scale_d = m.group(1).split(",")[2].strip()  # desc-a, desc-b, scale-d, ...
        if scale_d == "p":
            setp = next(
                (s for s in reversed(lines[max(0, i - 4) : i]) if SETP_P_RE.search(s)), None
            )
            assert setp is not None, f"line {i + 1}: no `setp.ne.b32 p, %r, 0` before it"
            reg = SETP_P_RE.search(setp).group(1)
            zero = bool(defs.get(reg)) and all(
                re.fullmatch(rf"mov\.b32\s+{re.escape(reg)},\s*0;", d) for d in defs[reg]
            )
        else:
            zero = scale_d == "0"
        if zero and any(lo < i < hi for lo, hi in loops):
            bad.append(i + 1)
    return bad


def test_ptx_reader_finds_a_zeroing_wgmma_in_a_loop() -> None:
    body = (
        "\tmov.b32 \t%r9, 1;\n$L__BB0_7:\n\tmov.b32 \t%r32, 0;\n{\n.reg .pred p;\n"
        "setp.ne.b32 p, %r32, 0;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
        "{%r33, %r34}, %rd14, %rd15, p, 1,  1, 0, 0;\n}\n{\n.reg .pred p;\n"
        "setp.ne.b32 p, %r9, 0;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
        "{%r33, %r34}, %rd16, %rd17, p, 1,  1, 0, 0;\n}\n\t@%p15 bra \t$L__BB0_7;\n"
    )
    assert wgmma_zeroing_in_loops(body) == [7]
    fixed = body.replace("mov.b32 \t%r32, 0;", "selp.b32 \t%r32, 1, 0, %p15;")
    assert wgmma_zeroing_in_loops(fixed) == []
    outside = body.replace("\t@%p15 bra \t$L__BB0_7;\n", "")  # no loop: a first batch
    assert wgmma_zeroing_in_loops(outside) == []


TMA_GEMMS = [
    s for s in SNIPPETS if s.sm == "sm_90a" and TMA_GEMM_RE.search(s.path.read_text("utf-8"))
]


def test_the_tma_gemm_snippets_are_found() -> None:
    names = {s.rel.split("snippets/")[1] for s in TMA_GEMMS}
    assert {
        "stmatrix-accumulator-tile-to-smem.py",
        "tma-load-l2-cache-hint.py",
        "tma-multistage-mbarrier-pipeline.py",
    } <= names, names


@pytest.mark.skipif(
    importlib.util.find_spec("cutlass") is None, reason="the CuTe DSL is not installed"
)
@pytest.mark.parametrize("snippet", TMA_GEMMS, ids=[s.rel.split("snippets/")[1] for s in TMA_GEMMS])
def test_tma_gemm_k_loop_never_restarts_its_accumulator(snippet, tmp_path, monkeypatch) -> None:
    """Compiled with the PTX kept (the last kernel of each name: a snippet that compiles two
    variants of one class leaves the second), no WGMMA in a loop starts from zero."""
    monkeypatch.setenv("CUTE_DSL_KEEP", "ptx")
    monkeypatch.setenv("CUTE_DSL_DUMP_DIR", str(tmp_path))
    outcome = run_one(snippet, "compile", 600, REPO)
    assert outcome.status == "pass", f"{snippet.rel}:\n{outcome.tail}"
    ptx_files = sorted(tmp_path.rglob("*.ptx"))
    assert ptx_files, f"{snippet.rel}: no PTX kept under {tmp_path}"
    found = {p.name: wgmma_zeroing_in_loops(p.read_text("utf-8")) for p in ptx_files}
    assert sum("wgmma.mma_async" in p.read_text("utf-8") for p in ptx_files), "no WGMMA in the PTX"
    bad = {name: lines for name, lines in found.items() if lines}
    assert not bad, (
        f"{snippet.rel}: WGMMA with scale-d = 0 inside a loop (C restarts every iteration; "
        f"set ACCUMULATE in the loop body or issue the first batch before it): {bad}"
    )
