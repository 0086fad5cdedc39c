"""The static path plans a kernel for its target's arch, not the GPU's.

Upstream kernel classes may read the DSL's arch when they are built, before ``cute.compile``
(``fmha.py`` L286: ``BaseDSL._get_dsl().get_arch_enum()`` in the constructor, then a
tcgen05.ld code path chosen by it at L2264). With no ``CUTE_DSL_ARCH`` the DSL detects the
arch from the GPU (``env_manager.detect_gpu_arch``; no GPU: sm_100a), so on an sm_90 host a
kernel planned for sm_100a saw sm_90a and its compile failed in NVVM (gpu-ci on the H200,
2026-12-01, blackwell_fmha). These tests simulate that host by setting the arch the DSL
would have detected.
"""

from __future__ import annotations

from typing import ClassVar

import pytest

from kernelplan import static

from .inhouse_axpby import AxpbyPlan

pytest.importorskip("cutlass")


def _dsl_arch() -> str:
    from cutlass.base_dsl.dsl import BaseDSL

    return BaseDSL._get_dsl().get_arch_enum().to_string()


@pytest.fixture
def gpu_host_sm90(monkeypatch):
    """Every live DSL singleton answers sm_90a, as after detection on an H200."""
    for dsl in static._dsl_instances():
        monkeypatch.setattr(dsl.envar, "_arch", "sm_90a")
    monkeypatch.delenv("CUTE_DSL_ARCH", raising=False)
    assert _dsl_arch() == "sm_90a"


class _ArchReadingPlan(AxpbyPlan):
    """Reads the DSL's arch in plan(), as an upstream constructor does."""

    seen: ClassVar[list[str]] = []

    def plan(self, problem, config, target):
        type(self).seen.append(_dsl_arch())
        return super().plan(problem, config, target)


def test_run_static_plans_under_the_target_arch_on_a_gpu_host(gpu_host_sm90, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELPLAN_CACHE", str(tmp_path / "cache"))
    plan = _ArchReadingPlan()
    _ArchReadingPlan.seen.clear()
    prob = plan.problem(n=1000)
    st = plan.run_static(prob, plan.default_config(prob), plan.target("sm_80"), use_cache=False)
    assert st["arch"] == "sm_80"
    assert _ArchReadingPlan.seen == ["sm_80"], "plan() saw the GPU's arch, not the target's"
    assert _dsl_arch() == "sm_90a", "the target arch leaked out of the static step"


def test_target_arch_sets_and_restores(gpu_host_sm90):
    import os

    with static.target_arch("sm_100a"):
        assert _dsl_arch() == "sm_100a" and os.environ["CUTE_DSL_ARCH"] == "sm_100a"
    assert _dsl_arch() == "sm_90a" and "CUTE_DSL_ARCH" not in os.environ
    with pytest.raises(static.UnknownArchError), static.target_arch("sm_42"):
        pass
