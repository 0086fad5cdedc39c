"""Shared fixtures. Tests run on the CPU; those that need the CUTLASS sources skip with the
reason when neither third_party/cutlass nor $CUTLASS_DIR holds them."""

from __future__ import annotations

import pytest

from kernelplan.testing import needs_sources

__all__ = ["needs_sources"]


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    """An empty results folder that records go to for the duration of a test."""
    d = tmp_path / "results"
    monkeypatch.setenv("KERNELPLAN_RESULTS", str(d))
    return d
