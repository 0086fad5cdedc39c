"""Every executable snippet of the knowledge base compiles on the CPU for its own SM.

Each non-pending file under knowledge/snippets/ runs its compile_snippet() in a subprocess
with CUTE_DSL_ARCH set to its SM (fake tensors; no GPU). Running the checks needs the H200:
`python -m kernelplan.kb snippets run` (see knowledge/README.md).
"""

from __future__ import annotations

import importlib.util
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
