"""The request's examples in knowledge/EXAMPLES.md: every empty status cell says why, and an
adapter may declare its example on the line after `source = (`."""

from __future__ import annotations

from pathlib import Path

from kernelplan.kb import catalog, manifest
from kernelplan.kb.layout import Layout
from kernelplan.kb.tree import scan_adapters

REPO = Path(__file__).resolve().parents[1]


def test_parenthesised_source_declaration_is_found(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "packages/demo/src/demo_pkg/k").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (root / "packages/demo/src/demo_pkg/k/k.py").write_text(
        "class K:\n    source: ClassVar[str] = (\n"
        '        "cute/blackwell/kernel/blockscaled_gemm/long_name.py"\n    )\n'
    )
    [a] = scan_adapters(Layout(root))
    assert (a.package, a.kernel, a.line) == ("demo", "k", 2)
    assert a.source == "cute/blackwell/kernel/blockscaled_gemm/long_name.py"


def test_every_blank_cell_of_the_request_examples_has_a_reason() -> None:
    layout = Layout(REPO)
    c = catalog.Catalogs(layout, manifest.load(layout))
    examples = c.request_examples()
    assert len(examples) >= 30
    assert "cute/blackwell/kernel/reduce/reduce.py" in catalog.catalog_examples(c.manifest)
    missing = {
        p: cols
        for p in examples
        if (cols := [k for k, why in c.blank_reasons(p).items() if why == "no reason given"])
    }
    assert missing == {}
