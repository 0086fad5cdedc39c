"""Adapter: the CUTLASS Blackwell dense GEMM with a software-pipelined main loop (the TMA loads
of later k-tiles are issued ahead of the MMAs of the current one, from the same warp).

Upstream (under ``examples/python/CuTeDSL``):
``cute/blackwell/kernel/dense_gemm/dense_gemm_software_pipeline.py``,
class ``DenseGemmKernel`` (same constructor and call as ``dense_gemm.py``). Shared parts:
:mod:`..blackwell_common`.
"""

from __future__ import annotations

from typing import ClassVar

from ..blackwell_common import BlackwellDenseGemmPlan


class BlackwellDenseGemmSoftwarePipeline(BlackwellDenseGemmPlan):
    """See the module docstring; config and its constraints in
    :class:`~..blackwell_common.BlackwellGemmConfig`."""

    name: ClassVar[str] = "dense_gemm_software_pipeline"
    source: ClassVar[str] = "cute/blackwell/kernel/dense_gemm/dense_gemm_software_pipeline.py"
    upstream_class: ClassVar[str] = "DenseGemmKernel"
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell dense GEMM with a software-pipelined main loop, sm_100a"
    )
