"""Every registered implementation's check and profile problems build (CPU, no compile).

``analyze`` and gpu-ci take a kernel's first check problem, but build the whole list; a list
that raises fails the static step of a kernel whose own tests pass (grouped_mixed_input_gemm
on the H200, 2026-12-01: a ``replace`` that kept a derived field).
"""

from __future__ import annotations

import pytest

from kernelplan import sessions
from kernelplan.registry import package_names


def _plans() -> list:
    return [
        pytest.param(plan, id=f"{pkg}/{plan.name}")
        for pkg in package_names()
        for plan in sessions._plans(pkg, None)
    ]


@pytest.mark.parametrize("plan", _plans())
def test_check_and_profile_problems_build(plan):
    if isinstance(plan, sessions._Failed):
        pytest.skip(f"not loadable here: {plan.error}")
    for p in plan.check_problems() + plan.profile_problems():
        assert p == plan.problem(p.to_dict()), f"{p.label()} does not survive its record"
