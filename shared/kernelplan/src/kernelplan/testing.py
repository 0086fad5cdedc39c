"""Test helpers shared by the core's and the packages' tests (imported by tests only: it
imports pytest).

``needs_sources`` skips a test, with the reason, where the pinned CUTLASS sources are absent;
``compile_params`` parametrises a compile test over kernels, compiling ``default`` ones always
and the rest only with ``KERNELPLAN_TEST_ALL_KERNELS=1`` (compiles cost seconds on 2 cores).
``refused_in_one_line``, ``assert_registered`` and ``static_report`` are the checks every
package's tests make (a one-line refusal, the ``KERNELS`` entry, a static compile).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from .cutlass_src import have_sources
from .workload import ShapeError

SOURCES_ABSENT = (
    "CUTLASS sources absent: git submodule update --init third_party/cutlass (or set CUTLASS_DIR)"
)

needs_sources = pytest.mark.skipif(not have_sources(), reason=SOURCES_ABSENT)

ALL_KERNELS = os.environ.get("KERNELPLAN_TEST_ALL_KERNELS", "") not in ("", "0")


def compile_params(names: Iterable[str], default: Iterable[str]) -> list:
    """``pytest.param`` per kernel name; those not in ``default`` skip unless
    ``KERNELPLAN_TEST_ALL_KERNELS=1``."""
    default = set(default)
    skip = pytest.mark.skip(reason="set KERNELPLAN_TEST_ALL_KERNELS=1 to compile it")
    return [pytest.param(n, marks=() if ALL_KERNELS or n in default else skip) for n in names]


@contextlib.contextmanager
def refused_in_one_line(needle: str):
    """A ``with`` block that must raise :class:`~kernelplan.ShapeError` with one line holding
    ``needle``."""
    with pytest.raises(ShapeError) as e:
        yield e
    text = str(e.value)
    assert needle in text and "\n" not in text, text


def assert_registered(kernels: Mapping[str, str], plan_class: type) -> None:
    """A package's ``KERNELS`` maps the plan's name to ``module:Class`` of ``plan_class``."""
    assert kernels[plan_class.name] == f"{plan_class.__module__}:{plan_class.__qualname__}"


def static_report(plan: Any, arch: str) -> dict[str, Any]:
    """The static report of ``plan``'s default problem and config (fake tensors, no GPU, the
    persistent cache bypassed), checked to be for ``arch`` and to hold MMA instructions."""
    p = plan.default_problem()
    report = plan.run_static(p, plan.default_config(p), use_cache=False)
    assert report["arch"] == arch and report["categories"]["mma"] > 0
    return report
