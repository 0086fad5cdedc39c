"""Test helpers shared by the core's and the packages' tests (imported by tests only: it
imports pytest).

``needs_sources`` skips a test, with the reason, where the pinned CUTLASS sources are absent;
``compile_params`` parametrises a compile test over kernels, compiling ``default`` ones always
and the rest only with ``KERNELPLAN_TEST_ALL_KERNELS=1`` (compiles cost seconds on 2 cores).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import pytest

from .cutlass_src import have_sources

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
