"""Shared fixtures. Tests run on the CPU; those that need the CUTLASS sources skip with the
reason when neither third_party/cutlass nor $CUTLASS_DIR holds them."""

from __future__ import annotations

import pytest

from kernelplan.cutlass_src import have_sources

needs_sources = pytest.mark.skipif(
    not have_sources(),
    reason="CUTLASS sources absent: git submodule update --init third_party/cutlass "
    "(or set CUTLASS_DIR)",
)


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    """An empty results folder that records go to for the duration of a test."""
    d = tmp_path / "results"
    monkeypatch.setenv("KERNELPLAN_RESULTS", str(d))
    return d
