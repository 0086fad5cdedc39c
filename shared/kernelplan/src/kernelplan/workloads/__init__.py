"""The workloads, one module each; ``WORKLOADS`` maps a workload's name to its instance's
import path (imported lazily: listing needs neither torch nor the DSL)."""

from __future__ import annotations

import importlib

from ..errors import KernelPlanError

WORKLOADS = {
    "add_chain": "kernelplan.workloads.add_chain:ADD_CHAIN",
    "gemm": "kernelplan.workloads.gemm:GEMM",
    "mla_decode": "kernelplan.workloads.mla_decode:MLA_DECODE",
    "attention_fwd": "kernelplan.workloads.attention:ATTENTION_FWD",
    "ssd": "kernelplan.workloads.ssd:SSD",
    "rmsnorm": "kernelplan.workloads.rmsnorm:RMSNORM",
    "attention_bwd": "kernelplan.workloads.attention:ATTENTION_BWD",
}


def get(name: str):
    """The workload instance called ``name``.

    Raises:
        KernelPlanError: no such workload (the message lists the known ones).
    """
    target = WORKLOADS.get(name)
    if target is None:
        raise KernelPlanError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)})")
    mod, _, attr = target.partition(":")
    return getattr(importlib.import_module(mod), attr)
